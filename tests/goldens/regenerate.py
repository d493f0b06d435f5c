"""Golden scenarios (issue 15): a fixed set of short runs covering every controller, both
transports, every queue kind and every traffic generator, and the content hash of each one's
result. An optimisation of the engine must leave every hash unchanged (tests/test_goldens.py).

    python tests/goldens/regenerate.py          # rewrite tests/goldens/hashes.json

Regenerate only when results are meant to change (a model fix, a new default): say why in the
commit. The hash covers what the engine computed (every counter of every flow and channel, every
time series and capture column), not how much work it took: the event count, the engine version
and wall times are left out, so that a faster scheduler keeps its goldens.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HASHES = Path(__file__).resolve().parent / "hashes.json"
# Not part of a result's content: how the engine got there.
NOT_CONTENT = ("events", "engine_version")


def _dumbbell(name: str, *, flows: int = 4, cca: str = "newreno", queue: Any = "60p", seconds: int = 3,
              **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name, "seed": 7, "duration": f"{seconds}s", "sample_interval": "50ms",
        "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "20Mbps", "queue": queue,
                     "rtt": "60ms"},
        "flow_defaults": {"cca": cca, "traffic": "greedy"},
    }
    for key, value in extra.items():  # tables are merged one level deep: topology={"loss": ...}
        spec[key] = {**spec[key], **value} if isinstance(spec.get(key), dict) else value
    return spec


def _generators(name: str, generators: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "seed": 7, "duration": "4s", "sample_interval": "100ms",
            "topology": {"kind": "tree", "fanout": [2, 2, 1], "queue": "30p"},
            "flow_defaults": {"cca": "reno"}, "generators": generators,
            "record": {"captures": [{"link": "btl", "direction": "forward"}]}}


# name -> scenario (the TOML form as a mapping). Fixed: add a golden, never change one silently.
GOLDENS: dict[str, dict[str, Any]] = {
    "reno": _dumbbell("reno", cca="reno"),
    "newreno_lossy": _dumbbell("newreno_lossy", topology={"loss": 0.002}),
    "cubic": _dumbbell("cubic", cca="cubic"),
    "highspeed": _dumbbell("highspeed", cca="highspeed", queue="200p"),
    "bbr": _dumbbell("bbr", cca="bbr", queue="200p"),
    "rack_tlp": _dumbbell("rack_tlp", flow_defaults={"tcp": {"rack": True}}),
    "finite_rtt_mix": _dumbbell("finite_rtt_mix", flows=6, flow_defaults={"traffic": {"kind": "finite",
                                                                                      "bytes": 300_000}},
                                topology={"rtt": {"dist": "uniform", "low": "20ms", "high": "200ms"}}),
    "quic": _dumbbell("quic", flows=2, flow_defaults={"transport": "quic", "cca": "newreno"}),
    "quic_cubic": _dumbbell("quic_cubic", flows=2, flow_defaults={"transport": "quic", "cca": "cubic"}),
    "tbf": _dumbbell("tbf", flows=2, cca="highspeed",
                     queue={"kind": "tbf", "rate": "10mbit", "burst": "16KiB", "limit": "100kB"}),
    "splitbuff": _dumbbell("splitbuff", flows=4, queue={"kind": "splitbuff", "sub_buffers": 2},
                           topology={"rtt": {"dist": "uniform", "low": "10ms", "high": "300ms"}}),
    "blind_splitbuff": _dumbbell("blind_splitbuff", flows=4,
                                 queue={"kind": "blind_splitbuff", "limit": "120p", "sub_buffers": 3}),
    "bytes_queue_gilbert": _dumbbell("bytes_queue_gilbert", queue="90kB",
                                     topology={"loss_model": {"kind": "gilbert_elliott", "p": 0.001, "r": 0.3,
                                                              "loss_good": 0.0, "loss_bad": 0.5}}),
    "persistent_and_poisson": _generators("persistent_and_poisson", [
        {"name": "pers", "kind": "persistent", "dst": "sink", "flows": 1},
        {"name": "mice", "kind": "poisson", "dst": "sink", "arrivals_per_s": 4.0,
         "size": {"dist": "pareto", "shape": 1.2, "mean": "20kB"}}]),
    "closed_loop": _generators("closed_loop", [
        {"name": "cl", "kind": "closed_loop", "dst": "sink", "users": 2,
         "size": {"dist": "lognormal", "median": "30kB", "sigma": 1.0},
         "think": {"dist": "exponential", "mean": "300ms"}}]),
    "cbr_and_onoff": _generators("cbr_and_onoff", [
        {"name": "pers", "kind": "persistent", "dst": "sink", "flows": 1, "sources": "h*_0"},
        {"name": "cbr", "kind": "cbr", "dst": "sink", "rate": "2Mbps", "sources": "h*_1"},
        {"name": "onoff", "kind": "onoff", "dst": "sink", "rate": "5Mbps", "sources": "h*_2",
         "on": {"dist": "exponential", "mean": "200ms"}, "off": {"dist": "exponential", "mean": "300ms"}}]),
}


def content_hash(result: Mapping[str, Any]) -> str:
    """sha256 of a decoded engine result (`pipeline.result.decode`): its counters as canonical
    JSON, then every column's name, dtype, shape and little-endian bytes, in name order."""
    import numpy as np

    counters: dict[str, Any] = {}
    columns: dict[str, np.ndarray] = {}
    for key, value in result.items():
        if key in NOT_CONTENT:
            continue
        if key == "timeseries" and value is not None:
            counters[key] = {k: v for k, v in value.items() if not isinstance(v, np.ndarray)}
            columns.update({f"timeseries.{k}": v for k, v in value.items() if isinstance(v, np.ndarray)})
        elif key == "captures":
            counters[key] = [{k: v for k, v in c.items() if not isinstance(v, np.ndarray)} for c in value]
            for i, c in enumerate(value):
                columns.update({f"captures.{i}.{k}": v for k, v in c.items() if isinstance(v, np.ndarray)})
        else:
            counters[key] = value
    digest = hashlib.sha256(json.dumps(counters, sort_keys=True, separators=(",", ":")).encode())
    for name in sorted(columns):
        array = np.ascontiguousarray(columns[name])
        digest.update(f"\n{name} {array.dtype.str} {array.shape}\n".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def golden_hash(name: str) -> str:
    """Plan and simulate golden `name`; the content hash of its result."""
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import Scenario

    return content_hash(simulate(plan(Scenario.from_dict(GOLDENS[name]))).result)


def main() -> int:
    hashes = {}
    for name in GOLDENS:
        hashes[name] = golden_hash(name)
        print(f"{name:<24} {hashes[name][:16]}", flush=True)
    HASHES.write_text(json.dumps(hashes, indent=2) + "\n")
    print(f"{len(hashes)} goldens -> {HASHES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
