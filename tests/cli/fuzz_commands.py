"""The command fuzzer (Hypothesis): every command's options and arguments drawn from valid values,
boundary values and mistakes, run through the real command in this process. Used by
tests/cli/test_fuzz_commands.py; `make fuzz` runs it with a larger budget (BUFFERLAB_FUZZ_EXAMPLES).

Each example runs in a fresh copy of a small world (`build_world`): scenario and sweep files, a
store holding one run with a captured link and a study of two points, and the stores and paths a
user gets wrong (a missing store, an empty file, a text file, a truncated DuckDB file, a folder, a
read-only folder, a path under a file, a path under /proc, very long and non-ASCII names).

Properties of every example (`check_invocation`):
- exit 0, or exit 2 with exactly one line on stderr that starts ``error: `` (no traceback, no other
  status: status 1 is bufferlab's own bug, or an engine failure);
- after a refusal, the world is exactly as it was: every file's bytes unchanged (the store's too)
  and no file or folder added (nothing half-written at an output path, no store begun).

Simulations are kept tiny: every scenario simulates at most a fifth of a second (`--set
duration=0.2s`, `--duration 0.2s`, a sweep of 100 ms points), and the values drawn never ask for a
long one, so that most examples end on a validation path and the rest finish in milliseconds.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]

# --- the world ------------------------------------------------------------------------------------

SPEC = """\
name = "fuzz"
seed = 3
duration = "200ms"
sample_interval = "50ms"

[topology]
kind = "dumbbell"
flows = 2
bottleneck_rate = "10Mbps"
bottleneck_delay = "5ms"
queue = "20p"
rtt = "20ms"

[[captures]]
link = "btl"
"""

SWEEP = """\
name = "fuzzsweep"
base = "spec.toml"
seeds = 1
set = { duration = "100ms" }

[[axes]]
key = "topology.queue"
values = ["10p", "40p"]
"""

STUDY = "fuzzsweep"


def build_world(folder: Path) -> str:
    """The world every example starts from, in `folder`; returns the stored run's id."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.toml").write_text(SPEC, encoding="utf-8")
    (folder / "sweep.toml").write_text(SWEEP, encoding="utf-8")
    (folder / "bad_sweep.toml").write_text(SWEEP.replace("spec.toml", "missing.toml"), encoding="utf-8")
    (folder / "not_toml.toml").write_text("this is = = not TOML [\n", encoding="utf-8")
    (folder / "latin1.toml").write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    shutil.copytree(REPO / "scenarios", folder / "scenarios")
    status, out, err = run_cli(["run", "spec.toml", "--db", "stored.duckdb", "--json"], cwd=folder)
    assert status == 0, err
    import json

    run_id: str = json.loads(out)["run_id"]
    status, _, err = run_cli(["sweep", "sweep.toml", "--db", "stored.duckdb", "--workers", "1", "--json"], cwd=folder)
    assert status == 0, err
    data = (folder / "stored.duckdb").read_bytes()
    (folder / "truncated.duckdb").write_bytes(data[: len(data) // 3])
    (folder / "empty.duckdb").write_bytes(b"")
    (folder / "text.duckdb").write_text("not a DuckDB file\n", encoding="utf-8")
    (folder / "folder").mkdir()
    (folder / "not_a_dir").write_text("a file, not a folder\n", encoding="utf-8")
    (folder / "readonly").mkdir()
    (folder / "readonly" / "stored.duckdb").write_bytes(data)
    (folder / "readonly").chmod(0o555)
    return run_id


def copy_world(template: Path, to: Path) -> Path:
    """A fresh copy of the world (the read-only folder stays read-only)."""
    shutil.copytree(template, to, symlinks=True)
    return to


def snapshot(folder: Path) -> dict[str, Any]:
    """Every file and folder under `folder`: a folder by its mode, a file by its mode and the hash
    of its bytes."""
    out: dict[str, Any] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            path = Path(root, name)
            out[str(path.relative_to(folder))] = ("dir", stat.S_IMODE(path.lstat().st_mode))
        for name in files:
            path = Path(root, name)
            out[str(path.relative_to(folder))] = ("file", stat.S_IMODE(path.lstat().st_mode),
                                                  hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest())
    return out


# --- running a command ----------------------------------------------------------------------------

@contextmanager
def working_directory(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """`bufferlab ARGS` in this process, in folder `cwd`: (exit status, stdout, stderr)."""
    from bufferlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with working_directory(cwd), redirect_stdout(out), redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def check_invocation(args: list[str], world: Path) -> tuple[int, str, str]:
    """Run `args` in `world` and assert the fuzzer's properties (module docstring)."""
    before = snapshot(world)
    status, out, err = run_cli(args, world)
    assert "Traceback" not in err, (args, err)
    assert status in (0, 2), (args, status, err)
    if status == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, err)
        after = snapshot(world)
        added = sorted(set(after) - set(before))
        assert not added, (args, err, f"left behind: {added}")
        changed = sorted(k for k in before if before[k] != after.get(k))
        assert not changed, (args, err, f"changed by a refused command: {changed}")
    return status, out, err


# --- values ---------------------------------------------------------------------------------------

LONG = "x" * 5000
UNICODE = "résumé-✓-数据-\u202e-🙂"

NUMBERS = ["0", "1", "2", "-1", "0.5", "1.5", "nan", "NaN", "inf", "-inf", "1e309", "1e-320", "99999999999999999999999",
           "18446744073709551616", "", " ", ",", "x", "1e3", "0x10", "１", "+1", "1_000", LONG, UNICODE]
STRINGS = ["", ",", " ", ",,", "a,,b", "a\nb", LONG, UNICODE, "-", "--", "%", "'; DROP TABLE runs; --", "[red]x[/red]",
           "{}", "nope"]
TIMES = ["200ms", "0.1s", "1ns", "0s", "0", "-5ms", "NaNs", "nans", "inf", "infs", "1e39s", "10furlongs", "", "ms",
         "5", "1e-30s"]
RATES = ["10Mbps", "1Gbps", "0bps", "-10Mbps", "1e39bps", "nanbps", "infbps", "100Tbps", "1bps", "", "10", "Mbps",
         "10MBps", "10 Mbps"]
BYTES = ["1500B", "1KB", "20kB", "0B", "-1B", "1e400B", "nanB", "1B", "", "10p", "1e9B", "100000000000000000000000B"]
MEMORY = ["512MB", "512MB", "512MB", "64kB", "0", "0B", "-1GB", "nanB", "infB", "1e400B", "", "10furlongs", "1PB"]
# --set assignments: mistakes and small valid changes (never a longer simulation).
SETS = ["topology.queue=5p", "flows[0].cca=reno", "seed=4", "topology.queue=0p", "topology.queue=-1p",
        "duration=nan", "duration=-1s", "duration=", "=", "", "duration", "a=b=c", "nope=1", "topology.nope=1",
        "flows[99].cca=reno", "flows[-1].cca=reno", "flows[x].cca=reno", "topology.flows=0", "topology.flows=-1",
        "topology.flows=1e9", "topology.bottleneck_rate=0bps", "topology.bottleneck_rate=nanbps",
        "sample_interval=0s", "sample_interval=1ns", "topology=1", "topology.kind=ring", "captures=[]",
        f"name={UNICODE}", f"name={LONG}", "seed=-1", "seed=18446744073709551616", "seed=nan",
        "topology.queue=1e400p", "flow_defaults.cca=bbr", "flow_defaults.traffic=nope", "[]=1", "a..b=1",
        "topology..queue=5p"]

# Paths relative to the world (the command runs in it).
INPUTS = ["spec.toml", "scenarios/dumbbell.toml", "scenarios/parking_lot.toml", "scenarios/tree_mice.toml",
          "scenarios/quic_sizing.toml", "scenarios/splitbuff_fig1.toml", "missing.toml", "folder", "not_toml.toml",
          "latin1.toml", "stored.duckdb", "empty.duckdb", "not_a_dir/x.toml", "/dev/null", "/dev/zero",
          "readonly", "", LONG, UNICODE + ".toml", "-"]
STORES = ["stored.duckdb", "stored.duckdb", "missing.duckdb", "new/deeper/store.duckdb", "empty.duckdb",
          "text.duckdb", "truncated.duckdb", "folder", "readonly/stored.duckdb", "readonly/new.duckdb",
          "not_a_dir/store.duckdb", "/proc/bufferlab-fuzz/store.duckdb", "", LONG + ".duckdb",
          UNICODE + ".duckdb", "spec.toml"]
OUTPUTS = ["out.csv", "out.parquet", "new/deeper/out.csv", "folder", "readonly/out.csv", "not_a_dir/out.csv",
           "/proc/bufferlab-fuzz/out.csv", "/dev/full", "", LONG, UNICODE + ".csv", "spec.toml", "."]
FIGURES = ["fig.pdf", "fig.png", "fig.svg", "fig.PNG", "new/deeper/fig.pdf", "fig.txt", "fig", "folder",
           "folder.pdf", "readonly/fig.pdf", "not_a_dir/fig.pdf", "/proc/bufferlab-fuzz/fig.pdf", "", ".pdf",
           LONG + ".pdf", UNICODE + ".svg"]
FOLDERS = ["site", "new/deeper/site", "folder", "spec.toml", "readonly", "readonly/site", "not_a_dir/site",
           "/proc/bufferlab-fuzz/site", "", LONG, UNICODE, "."]


def pool(*pools: list[str]) -> st.SearchStrategy[str]:
    """A value from the given pools, or any short text."""
    values = [v for p in pools for v in p]
    return st.one_of(st.sampled_from(values), st.text(max_size=12).filter(lambda t: "\x00" not in t))


@dataclass(frozen=True)
class Part:
    """An option or a positional argument: its arguments when it is right (`valid`: [] when it may
    be left out) and when it is wrong (None: it cannot be)."""

    valid: st.SearchStrategy[list[str]]
    wrong: st.SearchStrategy[list[str]] | None = None
    positional: bool = False


def _values(values: list[str] | st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(values) if isinstance(values, list) else values


def option(name: str, valid: list[str], wrong: list[str] | st.SearchStrategy[str] | None = None, *,
           always: bool = False) -> Part:
    """`[name, value]` with a valid value (or nothing, unless `always`), or a wrong one."""
    given = st.sampled_from(valid).map(lambda v: [name, v])
    return Part(given if always else st.one_of(st.just([]), given),
                None if wrong is None else _values(wrong).map(lambda v: [name, v]))


def flag(name: str) -> Part:
    return Part(st.sampled_from([[], [name]]))


def repeated(name: str, valid: list[str], wrong: list[str] | st.SearchStrategy[str], *, least: int = 0) -> Part:
    """The option `least` to three times, or once or twice wrong among right ones."""
    def arguments(values: list[str]) -> list[str]:
        return [a for v in values for a in (name, v)]

    right = st.lists(st.sampled_from(valid), min_size=least, max_size=3)
    return Part(right.map(arguments),
                st.tuples(right, st.lists(_values(wrong), min_size=1, max_size=2)).map(lambda rw: arguments([*rw[0], *rw[1]])))


def argument(valid: list[str], wrong: list[str] | st.SearchStrategy[str] | None = None) -> Part:
    return Part(st.sampled_from(valid).map(lambda v: [v]),
                None if wrong is None else _values(wrong).map(lambda v: [v]), positional=True)


@st.composite
def command(draw: st.DrawFn, head: list[str], *parts: Part) -> list[str]:
    """`head`, the positional arguments, then the options in a drawn order; none, one or two of
    the parts wrong (so that most examples reach past the first check, and some run)."""
    can_be_wrong = [i for i, p in enumerate(parts) if p.wrong is not None]
    faults = draw(st.sampled_from([0, 0, 1, 1, 1, 2]))
    wrong = set(draw(st.permutations(can_be_wrong))[:faults])
    drawn = [draw(p.wrong if i in wrong and p.wrong is not None else p.valid) for i, p in enumerate(parts)]
    positionals = [a for p, d in zip(parts, drawn) if p.positional for a in d]
    options = [d for p, d in zip(parts, drawn) if not p.positional]
    order = draw(st.permutations(range(len(options))))
    flat = [a for i in order for a in options[i]]
    if any(a.startswith("-") for a in positionals):  # as a user writes it: after `--`
        return [*head, *flat, "--", *positionals]
    return [*head, *positionals, *flat]
