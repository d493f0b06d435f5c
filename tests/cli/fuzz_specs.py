"""The spec fuzzer (Hypothesis): valid scenarios and sweep specs, mutated field by
field and structurally, through the real command. Used by tests/cli/test_fuzz.py; `make fuzz` runs it
with a larger budget (BUFFERLAB_FUZZ_EXAMPLES).

Properties of every example: exit 0, or exit 2 with exactly one line ``error: <field>: <reason>``
whose field starts with a real key of the spec (or a flag); never a traceback or any other exit
status; nothing stored on error.
"""

from __future__ import annotations

import copy
import io
import math
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# Valid starting points: small and fast (a few hundred simulated milliseconds at most).
DUMBBELL: dict[str, Any] = {
    "name": "fuzz_dumbbell", "seed": 3, "duration": "200ms", "sample_interval": "50ms",
    "topology": {"kind": "dumbbell", "flows": 2, "bottleneck_rate": "10Mbps", "bottleneck_delay": "5ms",
                 "queue": "20p", "rtt": "20ms"},
    "flow_defaults": {"cca": "cubic", "traffic": "greedy"},
}
GRAPH: dict[str, Any] = {
    "duration": "200ms", "seed": 1,
    "nodes": [{"name": "h1", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "h2", "kind": "host"}],
    "links": [{"a": "h1", "b": "r", "rate": "100Mbps", "delay": "2ms"},
              {"a": "r", "b": "h2", "rate": "10Mbps", "delay": "3ms", "queue": "30p", "loss": 0.001}],
    "flows": [{"src": "h1", "dst": "h2", "cca": "bbr"},
              {"src": "h1", "dst": "h2", "traffic": {"kind": "finite", "bytes": "100kB"}, "start": "10ms"}],
    "captures": [{"link": "r_h2", "direction": "forward"}],
}
GENERATORS: dict[str, Any] = {
    "duration": "300ms", "seed": 7,
    "topology": {"kind": "dumbbell", "flows": 2, "bottleneck_rate": "20Mbps", "bottleneck_delay": "5ms",
                 "queue": "50p", "rtt": "30ms"},
    "generators": [{"kind": "poisson", "dst": "dst_0", "arrivals_per_s": 20,
                    "size": {"dist": "exponential", "mean": "20kB"}}],
    "record": {"interval": "100ms", "flows": "all", "links": "all"},
}
SCENARIOS = (DUMBBELL, GRAPH, GENERATORS)

# Top-level keys (and flags) an error may name.
SCENARIO_KEYS = {"name", "description", "seed", "duration", "sample_interval", "bottleneck", "topology", "nodes",
                 "links", "flows", "flow_defaults", "generators", "captures", "record"}
SWEEP_KEYS = {"name", "description", "base", "seeds", "set", "axes"}
ERROR_LINE = re.compile(r"^error: (?P<field>[^:]+): (?P<reason>.+)$")

WRONG_VALUES: list[Any] = [
    -1, 0, 1, 2**64, 10**39, -(10**30), 1e39, -1e-9, math.nan, math.inf, -math.inf, 0.5, True, "", "x",
    "-5ms", "10furlongs", "1e39bps", "1ns", "NaNs", "inf", "1e400p", "0p", "0B", [], [1, 2], {}, {"kind": "nope"},
    "unlimited", "1000000000p", "100Tbps", "99999d",
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a nested dict/list (the root excluded)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*prefix, i))
            out += _paths(v, (*prefix, i))
    return out


def _parent(spec: Any, path: tuple[Any, ...]) -> Any:
    node = spec
    for part in path[:-1]:
        node = node[part]
    return node


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """`base` with one to three mutations: a value replaced (wrong type, unit, sign, magnitude,
    NaN/inf), a key removed or unknown, a list element duplicated or removed, a list emptied."""
    spec = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(spec)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _parent(spec, path), path[-1]
        kind = draw(st.sampled_from(["replace", "replace", "replace", "delete", "unknown", "duplicate", "empty",
                                     "scale"]))
        if kind == "replace":
            parent[key] = draw(st.one_of(st.sampled_from(WRONG_VALUES), st.integers(), st.floats(),
                                         st.text(max_size=8)))
        elif kind == "delete":
            del parent[key]
        elif kind == "unknown" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "rate_bps", "queue_size", "Duration"]))] = 1
        elif kind == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))  # parallel links, twice the same flow name
        elif kind == "empty" and isinstance(parent[key], list | dict):
            parent[key] = type(parent[key])()
        elif kind == "scale" and isinstance(parent[key], str):
            match = re.match(r"^([0-9.]+)(.*)$", parent[key])
            if match:
                factor = draw(st.sampled_from(["e9", "e-9", "e30", "000000", "e-3"]))
                parent[key] = f"{match.group(1)}{factor}{match.group(2)}"
    return spec


def scenario_specs() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(SCENARIOS).flatmap(mutated)


def sweep_specs(base_path: str) -> st.SearchStrategy[dict[str, Any]]:
    sweep = {"name": "fuzz", "base": base_path, "seeds": 2, "set": {"duration": "100ms"},
             "axes": [{"key": "topology.queue", "values": ["10p", "40p"]},
                      {"key": "flow_defaults.cca", "values": ["reno", "cubic"]}]}
    return mutated(sweep)


# --- TOML text -----------------------------------------------------------------------------------

def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(c if " " <= c <= "~" and c not in '"\\' else f"\\U{ord(c):08x}" for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def to_toml(spec: dict[str, Any]) -> str:
    """A spec as TOML (every table inline: valid TOML 1.0 for any nesting)."""
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in spec.items())


# --- running the command in this process ---------------------------------------------------------

def run_cli(args: list[str]) -> tuple[int, str, str]:
    """`bufferlab ARGS` in this process: (exit status, stdout, stderr)."""
    from bufferlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def check_outcome(status: int, stderr: str, known_keys: set[str], db: Path, spec: dict[str, Any]) -> None:
    """The fuzzer's properties (module docstring). The field's first part is a key of the spec's
    schema, or one the spec holds (an unknown key is named as written)."""
    known_keys = known_keys | set(spec)
    assert "Traceback" not in stderr, stderr
    if status == 0:
        return
    assert status == 2, (status, stderr)
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    match = ERROR_LINE.match(lines[0])
    assert match, lines[0]
    field = match.group("field")
    root = re.split(r"[.\[]", field, maxsplit=1)[0]
    assert root in known_keys or field.startswith("-") or field in {"SCENARIO", "SWEEP.toml"}, field
    assert not db.exists(), f"stored although refused: {lines[0]}"


def small_enough_to_simulate(spec: dict[str, Any]) -> bool:
    """A valid spec the fuzzer also simulates: short, and its links no faster than 1 Gb/s."""
    from bufferlab.spec import Scenario

    scenario = Scenario.from_dict(spec)
    if scenario.duration > 500_000_000:
        return False
    engine = scenario.resolve().engine
    fast = [link["rate"] for link in engine["links"] if (link["rate"] or 0) > 1_000_000_000]
    busy = [g for g in engine.get("generators", []) if g["model"].get("arrivals_per_s", 0) > 1000
            or g["model"].get("users", 0) > 100]
    return not fast and not busy and len(engine["flows"]) <= 50
