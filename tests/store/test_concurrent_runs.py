"""The same run asked for at once by several processes on one store: every process exits 0 and the
store holds the run once (the first writer stores it; a later one finds it stored in its own
transaction and keeps it); two sweeps of one study at once share their points without error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from conftest import SMALL_DUMBBELL

pytestmark = pytest.mark.engine


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bufferlab", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_four_processes_running_the_same_spec_and_seed_store_one_run(write_scenario, db: Path) -> None:
    """Before: all but one failed with 'Constraint Error: Duplicate key "run_id: ..."'."""
    spec = write_scenario(SMALL_DUMBBELL)
    processes = [_start("run", str(spec), "--seed", "7", "--db", str(db), "--json") for _ in range(4)]
    outcomes = [p.communicate(timeout=300) + (p.returncode,) for p in processes]
    for _out, err, status in outcomes:
        assert status == 0, err
        assert "error" not in err
    run_ids = {json.loads(out)["run_id"] for out, _, _ in outcomes}
    assert len(run_ids) == 1
    assert _rows(db, "SELECT run_id, count(*) FROM runs GROUP BY run_id") == [(run_ids.pop(), 1)]
    assert _rows(db, "SELECT count(DISTINCT run_id), count(*) FROM flows") == [(1, 2)]


def test_two_sweeps_of_one_study_at_once_share_their_points(write_scenario, tmp_path: Path, db: Path) -> None:
    spec = write_scenario(SMALL_DUMBBELL)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(textwrap.dedent(f"""
        name = "shared"
        base = "{spec}"
        [set]
        duration = "300ms"
        [[axes]]
        key = "topology.queue"
        values = ["5p", "10p", "20p", "40p"]
    """), encoding="utf-8")
    processes = [_start("sweep", str(sweep), "--db", str(db), "--workers", "1", "--json") for _ in range(2)]
    for p in processes:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads(out)["failed"] == []
    assert _rows(db, "SELECT count(*), count(DISTINCT run_id) FROM runs") == [(4, 4)]
    assert _rows(db, "SELECT count(*), count(*) FILTER (WHERE status = 'complete') FROM study_points "
                     "WHERE study_id = 'shared'") == [(4, 4)]
