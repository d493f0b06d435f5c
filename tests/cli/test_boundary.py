"""The error boundary every command goes through: a stream or file the command cannot use, a store
whose metadata is damaged, a query that reaches outside the store, a sweep or an advice that would
fail at every point: one line ``error: <what>: <reason>``, exit 2, no traceback, and nothing left
in the store that success would not have left."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import SMALL_DUMBBELL, bufferlab
from fuzz_specs import run_cli

pytestmark = pytest.mark.engine


def assert_one_line(done: subprocess.CompletedProcess[str], field: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A spec and a store holding its run."""
    folder = tmp_path_factory.mktemp("boundary")
    spec = folder / "small.toml"
    spec.write_text(SMALL_DUMBBELL.replace("\n    ", "\n"), encoding="utf-8")
    db = folder / "store.duckdb"
    status, _, err = run_cli(["run", str(spec), "--db", str(db), "--json"])
    assert status == 0, err
    return spec, db


# --- stdout that refuses writes ------------------------------------------------------------------

@pytest.mark.parametrize("args", [["results", "list"], ["size", "--rate", "10Mbps", "--rtt", "10ms"],
                                  ["size", "--rate", "10Mbps", "--rtt", "10ms", "--json"], ["--help"], ["--version"],
                                  ["results", "query", "SELECT 1 AS one", "--format", "csv"], ["reproduce", "--list"]])
def test_a_stdout_that_refuses_writes_is_one_line(store: tuple[Path, Path], args: list[str]) -> None:
    _, db = store
    full_args = [*args, "--db", str(db)] if args[0] == "results" else args
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "bufferlab", *full_args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: stdout: cannot write: No space left on device\n"


def test_a_run_whose_summary_cannot_be_printed_is_still_stored(store: tuple[Path, Path], tmp_path: Path) -> None:
    spec, _ = store
    db = tmp_path / "new.duckdb"
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "bufferlab", "run", str(spec), "--db", str(db)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    assert done.returncode == 2 and done.stderr == "error: stdout: cannot write: No space left on device\n"
    assert bufferlab("results", "list", "--db", str(db)).stdout.count("small") == 1


def test_an_output_file_that_refuses_writes_is_one_line_naming_the_option(store: tuple[Path, Path]) -> None:
    _, db = store
    done = bufferlab("results", "export", "--table", "runs", "--format", "csv", "-o", "/dev/full", "--db", str(db))
    assert assert_one_line(done, "--output") == "error: --output: cannot write /dev/full: No space left on device"


# --- damaged metadata -----------------------------------------------------------------------------

@pytest.mark.parametrize(("damage", "reason"), [
    ("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'", "its meta table records no schema version"),
    ("UPDATE meta SET value = '-1' WHERE key = 'schema_version'", "records schema version -1, which no bufferlab"),
    ("UPDATE meta SET value = '0' WHERE key = 'schema_version'", "records schema version 0, which no bufferlab"),
    ("UPDATE meta SET value = NULL WHERE key = 'schema_version'", "its meta table records no schema version"),
    ("DROP TABLE meta; CREATE TABLE meta (x INTEGER)", "meta"),
])
def test_a_store_with_damaged_metadata_is_refused_in_one_line(store: tuple[Path, Path], tmp_path: Path,
                                                               damage: str, reason: str) -> None:
    spec, db = store
    damaged = tmp_path / "damaged.duckdb"
    shutil.copy(db, damaged)
    con = duckdb.connect(str(damaged))
    con.execute(damage)
    con.close()
    before = damaged.read_bytes()
    for args in (["results", "list", "--db", str(damaged)], ["run", str(spec), "--db", str(damaged)],
                 ["results", "study", "x", "--db", str(damaged)]):
        status, _, err = run_cli(args)
        assert status == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("error: --db: ") and reason in err, err
    assert damaged.read_bytes() == before


# --- results query: the store, and nothing else ---------------------------------------------------

def test_query_cannot_write_or_read_files(store: tuple[Path, Path], tmp_path: Path) -> None:
    _, db = store
    target = tmp_path / "out.csv"
    for sql in (f"COPY (SELECT 1) TO '{target}'", "SELECT * FROM read_csv('/etc/passwd')",
                f"ATTACH '{tmp_path / 'other.duckdb'}' AS other", "INSTALL httpfs",
                f"EXPORT DATABASE '{tmp_path / 'export'}'"):
        status, _, err = run_cli(["results", "query", sql, "--db", str(db)])
        assert status == 2 and len(err.splitlines()) == 1 and err.startswith("error: SQL: "), (sql, err)
    assert list(tmp_path.iterdir()) == []
    status, _, err = run_cli(["results", "query", "SET enable_external_access = true", "--db", str(db)])
    assert status == 2 and "locked" in err


def test_a_query_of_more_rows_than_a_result_may_hold_is_refused_before_it_fills_memory(
        store: tuple[Path, Path]) -> None:
    """Before: `SELECT * FROM range(1e12)` materialised its result until the machine ran out of memory."""
    from bufferlab.store.reader import MAX_QUERY_ROWS

    _, db = store
    status, _, err = run_cli(["results", "query", "SELECT * FROM range(1000000000000)", "--db", str(db)])
    assert status == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("error: SQL: the result has more than ") and "LIMIT" in err, err
    # The bound is on the rows returned, not on those the query reads.
    status, out, err = run_cli(["results", "query", f"SELECT count(*) AS n FROM (SELECT * FROM range({MAX_QUERY_ROWS}))",
                                "--db", str(db), "--format", "csv"])
    assert status == 0 and out.split() == ["n", str(MAX_QUERY_ROWS)], err


def test_query_as_json_is_valid_json_with_non_finite_numbers_as_null(store: tuple[Path, Path]) -> None:
    _, db = store
    status, out, err = run_cli(["results", "query", "SELECT 'nan'::DOUBLE AS x, 'inf'::DOUBLE AS y, "
                                "['-inf'::DOUBLE, 1.5] AS z, 2 AS n", "--db", str(db), "--format", "json"])
    assert status == 0, err
    assert json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}")) == \
        [{"x": None, "y": None, "z": [None, 1.5], "n": 2}]
    assert "null" in bufferlab("results", "query", "--help").stdout


# --- nothing partial: refused before anything is stored --------------------------------------------

def test_a_sweep_whose_axis_key_has_a_typo_is_refused_before_it_starts(store: tuple[Path, Path],
                                                                       tmp_path: Path) -> None:
    """Before: every point was stored as failed and the sweep exited 0."""
    spec, _ = store
    sweep = tmp_path / "typo.toml"
    sweep.write_text(f'base = "{spec}"\n[[axes]]\nkey = "topology.qeueu"\nvalues = ["10p", "20p"]\n',
                     encoding="utf-8")
    db = tmp_path / "store.duckdb"
    status, _, err = run_cli(["sweep", str(sweep), "--db", str(db), "--workers", "1"])
    assert status == 2 and err == ('error: axes[0].key: "topology.qeueu" names no field of the scenario '
                                   "(topology.qeueu: unknown key)\n")
    assert not db.exists()
    sweep.write_text(sweep.read_text().replace("qeueu", "queue") + '[[axes]]\nzip = [{ key = "topology.rtt", '
                     'values = ["10ms", "20ms"] }, { key = "flows[7].cca", values = ["cubic", "bbr"] }]\n',
                     encoding="utf-8")
    status, _, err = run_cli(["sweep", str(sweep), "--db", str(db), "--workers", "1"])
    assert status == 2 and err.startswith('error: axes[1].zip[1].key: "flows[7].cca" names no field'), err
    assert not db.exists()


def test_a_sweep_whose_axis_key_is_no_key_of_a_queue_table_is_refused_too(store: tuple[Path, Path],
                                                                          tmp_path: Path) -> None:
    """A key inside a table the spec parses itself (a CoDel queue's `targte`) is as unknown as a
    key of the scenario's own models: the error's type says so, not its wording."""
    spec, _ = store
    sweep = tmp_path / "queue_typo.toml"
    sweep.write_text(f'base = "{spec}"\n[set]\n"topology.queue" = {{ kind = "codel" }}\n[[axes]]\n'
                     'key = "topology.queue.targte"\nvalues = ["5ms", "10ms"]\n', encoding="utf-8")
    db = tmp_path / "store.duckdb"
    status, _, err = run_cli(["sweep", str(sweep), "--db", str(db), "--workers", "1"])
    assert status == 2 and err.startswith('error: axes[0].key: "topology.queue.targte" names no field'), err
    assert not db.exists()


def test_a_sweep_value_that_fails_at_some_points_fails_them_alone(store: tuple[Path, Path], tmp_path: Path) -> None:
    spec, _ = store
    sweep = tmp_path / "partial.toml"
    sweep.write_text(f'base = "{spec}"\n[set]\nduration = "200ms"\n[[axes]]\nkey = "topology.queue"\n'
                     'values = ["10p", "0p"]\n', encoding="utf-8")
    status, out, err = run_cli(["sweep", str(sweep), "--db", str(tmp_path / "s.duckdb"), "--workers", "1",
                                "--json"])
    assert status == 0, err
    report = json.loads(out)
    assert report["simulated"] == 1 and [f["values"] for f in report["failed"]] == [{"topology.queue": "0p"}]


def test_advise_with_a_bad_queue_key_stores_nothing(store: tuple[Path, Path], tmp_path: Path) -> None:
    """Before: it exited 2 but left a study and its failed points."""
    spec, _ = store
    db = tmp_path / "store.duckdb"
    status, _, err = run_cli(["advise", "--scenario", str(spec), "--queue-key", "topology.qeueu",
                              "--target", "utilisation>=0.9", "--seeds", "1", "--db", str(db)])
    assert status == 2 and err == ('error: --queue-key: "topology.qeueu" is no queue of the scenario: '
                                   "topology.qeueu: unknown key\n")
    assert not db.exists()
