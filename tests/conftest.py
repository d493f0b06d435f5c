"""Shared helpers: run the real `bufferlab` command in a subprocess, write scenario files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"


# A tree whose mice draw their sizes from a table in sizes.cdf, next to the scenario's file.
EMPIRICAL_SIZES_SCENARIO = """
    name = "emp"
    duration = "1s"
    [topology]
    kind = "tree"
    queue = "10p"
    [[generators]]
    kind = "poisson"
    sources = "h1_0"
    dst = "sink"
    arrivals_per_s = 5
    size = { dist = "empirical", file = "sizes.cdf" }
"""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A run that collected no test is a failure, never pytest's "no tests ran" (exit 5): CI must
    # not pass on an empty selection.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def bufferlab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m bufferlab ARGS` (the same entry point as the console script)."""
    return subprocess.run([sys.executable, "-m", "bufferlab", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, check=False)


# Stored columns that differ between two writes of one run (when, and how long the engine took).
VARYING = frozenset({"created_at", "wall_time_s", "updated_at"})


def stored_tables(db: Path) -> dict[str, Any]:
    """Every table of the store at `db`: its columns and types, and its rows (but the `VARYING`
    columns) in order, to compare two stores."""
    import duckdb

    from bufferlab.store.tables import TABLES

    con = duckdb.connect(str(db), read_only=True)
    try:
        out: dict[str, Any] = {}
        for table in TABLES:
            columns = con.execute(f"SELECT column_name, data_type FROM information_schema.columns "
                                  f"WHERE table_name = '{table}' ORDER BY ordinal_position").fetchall()
            kept = ", ".join(name for name, _ in columns if name not in VARYING)
            out[table] = (columns, con.execute(f"SELECT {kept} FROM {table} ORDER BY ALL").fetchall())
        return out
    finally:
        con.close()


def store_block_size(db: Path) -> int:
    """The block size of the DuckDB file at `db`."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT block_size FROM pragma_database_size() WHERE database_name = current_database()"
                           ).fetchone()[0]
    finally:
        con.close()


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has spent so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def engine_loaded(pid: int) -> bool:
    """Whether process `pid` has loaded the compiled engine (bufferlab._core)."""
    return "_core.abi3.so" in Path(f"/proc/{pid}/maps").read_text()


def start_long_run(scenario: Path, db: Path, *sets: str, ignore_sigint: bool = False,
                   new_session: bool = False) -> subprocess.Popen[str]:
    """`bufferlab run` of `scenario` for many simulated minutes (25,000 s, sampled every second,
    and `sets`: more `--set` assignments), started without a terminal (pipes), as a script or a
    notebook would; `ignore_sigint` starts it as a shell's background job does, `new_session`
    in a process group of its own (so that a signal can reach the whole group, as a terminal's
    Ctrl-C does)."""
    def setup() -> None:
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    assignments = [arg for assignment in ("duration=25000s", "sample_interval=1s", *sets)
                   for arg in ("--set", assignment)]
    return subprocess.Popen([sys.executable, "-m", "bufferlab", "run", str(scenario), "--db", str(db), *assignments],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=setup, start_new_session=new_session, cwd=REPO)


def wait_until_simulating(proc: subprocess.Popen[str], after_cpu_s: float) -> None:
    """Until `proc` (a `bufferlab run`) has spent `after_cpu_s` of CPU with the engine loaded:
    past its imports, it is inside the engine."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if cpu_seconds(proc.pid) > after_cpu_s and engine_loaded(proc.pid):
            return
        time.sleep(0.05)
    raise AssertionError("the run never started simulating")


@pytest.fixture(autouse=True)
def plan_cache_of_the_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's commands keep their plans (`pipeline.plan_cache`) in a directory of the test's
    own, never in the user's cache: a test sees only the plans its own runs made."""
    folder = tmp_path_factory.mktemp("plans")
    monkeypatch.setenv("BUFFERLAB_PLAN_CACHE", str(folder))
    return folder


@pytest.fixture
def write_scenario(tmp_path: Path):
    """Write TOML text (dedented) to a file and return its path."""

    def write(text: str, name: str = "scenario.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "results" / "test.duckdb"


@pytest.fixture
def store_opens(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the store's opens for reading (`store.reader`'s connections): one entry each, from
    the test's start (module fixtures are made before it)."""
    from bufferlab.store import reader

    opened: list[int] = []
    real_connect = reader.connect
    monkeypatch.setattr(reader, "connect", lambda *a, **k: opened.append(1) or real_connect(*a, **k))
    return opened


# A small, fast dumbbell: 2 flows, 10 Mb/s, 1 simulated second.
SMALL_DUMBBELL = """
    name = "small"
    seed = 3
    duration = "1s"
    sample_interval = "100ms"

    [topology]
    kind = "dumbbell"
    flows = 2
    bottleneck_rate = "10Mbps"
    bottleneck_delay = "5ms"
    queue = "20p"
    rtt = "20ms"
"""

# A two-host line with random loss, so the seed matters.
LOSSY_LINE = """
    name = "lossy"
    seed = {seed}
    duration = "1s"
    sample_interval = "100ms"

    [[nodes]]
    name = "a"
    kind = "host"
    [[nodes]]
    name = "r"
    kind = "router"
    [[nodes]]
    name = "b"
    kind = "host"

    [[links]]
    name = "ar"
    a = "a"
    b = "r"
    rate = "100Mbps"
    delay = "1ms"
    [[links]]
    name = "rb"
    a = "r"
    b = "b"
    rate = "20Mbps"
    delay = "4ms"
    loss = 0.01
    queue = "50p"

    [[flows]]
    src = "a"
    dst = "b"
"""
