"""Shared helpers: run the real `bufferlab` command in a subprocess, write scenario files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A run that collected no test is a failure, never pytest's "no tests ran" (exit 5): CI must
    # not pass on an empty selection.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def bufferlab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m bufferlab ARGS` (the same entry point as the console script)."""
    return subprocess.run([sys.executable, "-m", "bufferlab", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, check=False)


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
