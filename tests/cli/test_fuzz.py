"""The spec fuzzer (tests/cli/fuzz_specs.py) in the test suite: at least 2000 mutated scenarios and
sweep specs through the real command, with a fixed budget so that `make test` stays quick; `make
fuzz` sets BUFFERLAB_FUZZ_EXAMPLES for a longer search.

- in this process (`bufferlab.cli.main`): every scenario through `bufferlab check` (all the checks
  `run` makes, the memory budget included), and the small valid ones also through `run`;
- sweep specs through `bufferlab sweep` (their points simulated: 100 ms each);
- a subset through a subprocess under an address-space limit: nothing the fuzzer builds may
  exhaust memory or abort the interpreter.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from fuzz_specs import (DUMBBELL, SCENARIO_KEYS, SWEEP_KEYS, check_outcome, run_cli, scenario_specs,
                        small_enough_to_simulate, sweep_specs, to_toml)

pytestmark = pytest.mark.engine

SCALE = int(os.environ.get("BUFFERLAB_FUZZ_EXAMPLES") or "1")
CHECKED = 1800 * SCALE
SWEEPS = 150 * SCALE
LIMITED = 60 * SCALE
MEMORY_LIMIT = 3 * 2**30
# Budget of the fuzzed runs: far above what a valid small spec needs, far below the limit.
MAX_MEMORY = "512MB"

# Derandomised: the same examples on every CI run (make fuzz explores with fresh seeds).
FIXED = settings(deadline=None, derandomize=SCALE == 1, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                        HealthCheck.data_too_large])


def _write(directory: Path, spec: dict[str, Any], name: str = "spec.toml") -> Path:
    path = directory / name
    path.write_text(to_toml(spec), encoding="utf-8")
    return path


@settings(FIXED, max_examples=CHECKED)
@given(spec=scenario_specs(), simulate=st.integers(0, 9))
def test_every_mutated_scenario_is_accepted_or_refused_in_one_line(spec: dict[str, Any], simulate: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        path, db = _write(directory, spec), directory / "store" / "fuzz.duckdb"
        status, _, err = run_cli(["check", str(path), "--max-memory", MAX_MEMORY])
        check_outcome(status, err, SCENARIO_KEYS, db, spec)
        # One in ten valid, small specs is simulated and stored too.
        if status == 0 and simulate == 0 and small_enough_to_simulate(spec):
            status, _, err = run_cli(["run", str(path), "--db", str(db), "--json", "--max-memory", MAX_MEMORY])
            check_outcome(status, err, SCENARIO_KEYS, db, spec)
            assert status == 0, f"check accepted what run refused: {err}"


@settings(FIXED, max_examples=SWEEPS)
@given(data=st.data())
def test_every_mutated_sweep_is_accepted_or_refused_in_one_line(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        base = _write(directory, {**DUMBBELL, "duration": "100ms"}, "base.toml")
        spec = data.draw(sweep_specs(str(base)))
        path, db = _write(directory, spec, "sweep.toml"), directory / "store" / "fuzz.duckdb"
        status, _, err = run_cli(["sweep", str(path), "--db", str(db), "--workers", "1", "--json",
                                  "--max-memory", MAX_MEMORY])
        check_outcome(status, err, SWEEP_KEYS | SCENARIO_KEYS, db, spec)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.slow
@settings(FIXED, max_examples=LIMITED)
@seed(14)
@given(spec=scenario_specs())
def test_mutated_scenarios_run_under_a_memory_limit_without_aborting(spec: dict[str, Any]) -> None:
    """The default budget (half the address-space limit) alone keeps every run inside it."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        path, db = _write(directory, spec), directory / "store" / "fuzz.duckdb"
        status, _, err = run_cli(["check", str(path)])
        if status == 0 and not small_enough_to_simulate(spec):
            return  # valid but long: simulating it belongs to benchmarks, not to a test's budget
        done = subprocess.run([sys.executable, "-m", "bufferlab", "run", str(path), "--db", str(db), "--json"],
                              capture_output=True, text=True, timeout=300, check=False, preexec_fn=_limited)
        assert done.returncode in (0, 2), (done.returncode, done.stderr[-2000:])
        check_outcome(done.returncode, done.stderr, SCENARIO_KEYS, db, spec)
