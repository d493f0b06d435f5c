"""Limits that keep a valid-looking spec from aborting the engine, and errors that name the field
the user wrote: the memory budget counts the initial windows a flow sends in one burst; two
generators of one name, and a list too long for its field, are named where the spec gives them."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_DUMBBELL
from fuzz_specs import run_cli

pytestmark = pytest.mark.engine

MEMORY_LIMIT = 3 * 2**30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_a_huge_initial_window_is_refused_by_the_budget_not_aborted(write_scenario, tmp_path: Path) -> None:
    """Before: check passed and the engine aborted (SIGABRT) sending the window in one burst."""
    spec = write_scenario(SMALL_DUMBBELL)
    status, _, err = run_cli(["check", str(spec), "--set", "flow_defaults.tcp.initial_window=4000000000"])
    assert status == 2 and err.startswith("error: flow_defaults.tcp.initial_window: the run could need "), err
    assert "initial windows of 8000000000 segments" in err
    db = tmp_path / "store.duckdb"
    done = subprocess.run([sys.executable, "-m", "bufferlab", "run", str(spec), "--db", str(db), "--set",
                           "flow_defaults.tcp.initial_window=4000000000"], capture_output=True, text=True,
                          timeout=300, check=False, preexec_fn=_limited)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert not db.exists()
    # An ordinary window costs nothing worth refusing.
    assert run_cli(["check", str(spec), "--set", "flow_defaults.tcp.initial_window=100"])[0] == 0


def test_two_generators_of_one_name_are_named_where_the_spec_gives_them(write_scenario) -> None:
    """Before: the error named generators[3] (the engine's expanded list), which the spec lacks."""
    generator = """
        [[generators]]
        name = "mice"
        kind = "poisson"
        dst = "dst_0"
        arrivals_per_s = 20
        size = { dist = "exponential", mean = "20kB" }
    """
    spec = write_scenario(SMALL_DUMBBELL + generator + generator)
    status, _, err = run_cli(["check", str(spec)])
    assert status == 2 and err == 'error: generators[1].name: duplicate name "mice_src_0" (also generators[0])\n'


def test_a_list_too_large_for_its_field_names_the_entry(write_scenario) -> None:
    """Before: ``topology.fanout.constrained-int: input should be a valid integer``."""
    spec = write_scenario("""
        duration = "300ms"
        [topology]
        kind = "tree"
        queue = "10p"
        fanout = [2, 100]
    """)
    status, _, err = run_cli(["check", str(spec)])
    assert status == 2 and err == "error: topology.fanout[1]: input should be less than or equal to 64 (got 100)\n"
    spec.write_text(spec.read_text().replace("[2, 100]", '"x"'), encoding="utf-8")
    status, _, err = run_cli(["check", str(spec)])
    assert status == 2 and err.startswith("error: topology.fanout: input should be a valid integer"), err
