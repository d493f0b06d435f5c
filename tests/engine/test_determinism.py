"""Determinism: the same spec and seed give identical stored results; another seed changes what
is random."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from conftest import LOSSY_LINE, bufferlab

# Everything the engine produced; created_at and wall_time_s are facts about the host, not the run.
RESULT_TABLES = ("flows", "channels", "flow_timeseries", "channel_timeseries", "captures")


def stored(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in RESULT_TABLES}
        out["runs"] = con.execute(
            "SELECT run_id, engine_version, seed, duration_ns, end_ns, events, spec_json FROM runs").fetchall()
        return out
    finally:
        con.close()


def run(path: Path, db: Path, *extra: str) -> dict:
    result = bufferlab("run", str(path), "--db", str(db), "--json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_same_seed_gives_identical_stored_results(write_scenario, tmp_path: Path) -> None:
    path = write_scenario(LOSSY_LINE.format(seed=11))
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    run(path, a)
    run(path, b)
    first, second = stored(a), stored(b)
    assert first["flows"] and first["flow_timeseries"]
    assert first == second


def test_forced_rerun_reproduces_the_stored_rows(write_scenario, tmp_path: Path) -> None:
    path = write_scenario(LOSSY_LINE.format(seed=11))
    db = tmp_path / "one.duckdb"
    run(path, db)
    before = stored(db)
    run(path, db, "--force")
    assert stored(db) == before


def test_another_seed_changes_what_is_random(write_scenario, tmp_path: Path) -> None:
    path = write_scenario(LOSSY_LINE.format(seed=11))
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    run(path, a)
    run(path, b, "--seed", "12")
    first, second = stored(a), stored(b)
    # Random loss draws differ, so which packets are lost (and what follows) differs.
    loss_a = [row for row in first["channels"] if row[2] == "rb_forward"]
    loss_b = [row for row in second["channels"] if row[2] == "rb_forward"]
    assert loss_a != loss_b
    strip = lambda rows: [row[1:] for row in rows]  # noqa: E731 - drop run_id, which differs anyway
    assert strip(first["flows"]) != strip(second["flows"])
