"""The result store: a run is simulated once, served from the store after, replaced with --force,
and written atomically."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from bufferlab import runner
from bufferlab.analysis.derive import derive
from bufferlab.analysis.record import DerivedRun
from bufferlab.pipeline.plan import plan, run_identity
from bufferlab.pipeline.simulate import simulate
from bufferlab.store import schema
from bufferlab.store import writer as store
from bufferlab.store.schema import SCHEMA_VERSION, StoreError, stored_schema_version
from bufferlab.store.tables import NUMBERED_TABLES, RUN_LENGTH_COLUMNS, stored_table
from bufferlab.store.tables import TABLES as STORE_TABLES
from bufferlab.store.connection import NEW_STORE_BLOCK_SIZE, ROW_GROUP_SIZE
from bufferlab.spec import Scenario
from conftest import LOSSY_LINE, REPO, SMALL_DUMBBELL, bufferlab, store_block_size

TABLES = ("runs", "flows", "channels", "flow_metrics", "link_metrics", "network_metrics", "flow_timeseries",
          "channel_timeseries", "captures")


def count_rows(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def run_json(*args: str) -> dict:
    result = bufferlab(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_identical_spec_is_served_from_the_store(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    first = run_json("run", str(path), "--db", str(db))
    second = run_json("run", str(path), "--db", str(db))
    assert first["from_store"] is False and second["from_store"] is True
    assert first["run_id"] == second["run_id"]
    assert second["flows"] == first["flows"] and second["bottleneck"] == first["bottleneck"]
    assert second["wall_time_s"] == pytest.approx(first["wall_time_s"])
    assert count_rows(db)["runs"] == 1


def test_human_output_says_where_the_run_came_from(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    first = bufferlab("run", str(path), "--db", str(db))
    second = bufferlab("run", str(path), "--db", str(db))
    assert first.returncode == second.returncode == 0
    assert "simulated and stored" in first.stdout and "served from the store" in second.stdout
    for text in ("goodput", "loss rate", "retrans", "mean srtt", "completion", "utilisation", "drops",
                 "mean queue", "btl_forward", "flow_0", "flow_1"):
        assert text in first.stdout
    assert first.stderr == ""


def test_force_simulates_again_and_replaces_the_run(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    run_json("run", str(path), "--db", str(db))
    before = count_rows(db)
    forced = run_json("run", str(path), "--db", str(db), "--force")
    assert forced["from_store"] is False
    assert count_rows(db) == before  # replaced, not duplicated


def test_different_seed_is_a_different_run_when_the_scenario_is_random(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL + 'loss = "0.5%"\n')
    a = run_json("run", str(path), "--db", str(db))
    b = run_json("run", str(path), "--db", str(db), "--seed", "4")
    assert a["run_id"] != b["run_id"] and b["from_store"] is False and b["seed"] == 4
    assert count_rows(db)["runs"] == 2


def test_a_seed_of_a_scenario_without_random_element_is_said_and_stores_nothing_new(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    a = run_json("run", str(path), "--db", str(db))
    seeded = bufferlab("run", str(path), "--db", str(db), "--seed", "4", "--json")
    assert seeded.returncode == 0
    note = seeded.stderr.strip().splitlines()
    assert len(note) == 1 and note[0].startswith("note: --seed: small has no random element")
    b = json.loads(seeded.stdout)
    assert b["run_id"] == a["run_id"] and b["from_store"] is True
    assert count_rows(db)["runs"] == 1


def test_run_holds_specs_counters_and_series(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    summary = run_json("run", str(path), "--db", str(db))
    with store.Store(db) as s:
        row = s.run_row(summary["run_id"])
        assert row is not None and row["status"] == "complete" and row["seed"] == 3
        engine_spec = json.loads(row["spec_json"])
        assert engine_spec["links"][0]["name"] == "btl"
        assert json.loads(row["user_spec_json"])["topology"]["queue"] == "20p"
        assert row["engine_version"] == runner.engine_version()
        assert run_identity(row["spec_json"], row["engine_version"]) == summary["run_id"]
        counts = count_rows_con(s.con, summary["run_id"])
    assert counts["flows"] == 2 and counts["channels"] == 2 * 5  # btl + 4 access links
    assert counts["flow_timeseries"] == 2 * 10  # 1 s sampled every 100 ms
    assert counts["channel_timeseries"] == 10 * 10
    # The metric tables: one row per flow, per link direction that carried traffic, per run.
    assert (counts["flow_metrics"], counts["network_metrics"]) == (2, 1)
    assert counts["link_metrics"] == 10  # every direction of a dumbbell carries data or ACKs



def test_a_run_that_keeps_no_series_stores_its_metrics_and_no_series(write_scenario, db: Path) -> None:
    # `[record] store_series = false`: the series are still sampled (the flow means are taken over
    # them), so every metric and summary equals the run that stores its series; only the three
    # time-series tables are left empty, and the run is a stored result of its own.
    path = write_scenario(SMALL_DUMBBELL)
    kept = run_json("run", str(path), "--db", str(db))
    bare = run_json("run", str(path), "--db", str(db), "--set", "record.store_series=false")
    again = run_json("run", str(path), "--db", str(db), "--set", "record.store_series=false")
    assert bare["run_id"] != kept["run_id"] and not bare["from_store"] and again["from_store"]
    assert bare["flows"] == kept["flows"] and bare["bottleneck"] == kept["bottleneck"]
    con = duckdb.connect(str(db), read_only=True)
    try:
        with_series, without = count_rows_con(con, kept["run_id"]), count_rows_con(con, bare["run_id"])
        assert with_series["flow_timeseries"] > 0 and with_series["channel_timeseries"] > 0
        assert without["flow_timeseries"] == without["channel_timeseries"] == 0
        assert {t: n for t, n in without.items() if "timeseries" not in t} == \
            {t: n for t, n in with_series.items() if "timeseries" not in t}
        for table, order in (("flow_metrics", "flow"), ("link_metrics", "channel"), ("network_metrics", "run_id"),
                             ("flows", "flow"), ("channels", "channel")):
            rows = [con.execute(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? ORDER BY {order}",
                                [run_id]).fetchall() for run_id in (kept["run_id"], bare["run_id"])]
            assert rows[0] == rows[1], table
        spec_json, version = con.execute("SELECT spec_json, engine_version FROM runs WHERE run_id = ?",
                                         [bare["run_id"]]).fetchone()
    finally:
        con.close()
    # The same simulation (engine spec), another stored result: the id says what was kept.
    assert run_identity(spec_json, version) == kept["run_id"]
    assert run_identity(spec_json, version, store_series=False) == bare["run_id"]


@pytest.mark.parametrize("name", ["dumbbell.toml", "tree_mice.toml", "splitbuff_fig1.toml"])
def test_a_plan_carries_the_spec_hash_and_the_run_id_by_their_definitions(name: str) -> None:
    # The plan computes both in one pass over the spec's bytes; each must still be its definition:
    # the store's spec_hash, and sha256 of the spec, a newline and the engine version.
    import hashlib

    from conftest import SCENARIOS

    from bufferlab.spec import load_scenario

    planned = plan(load_scenario(SCENARIOS / name))
    assert planned.spec_hash == store.spec_hash(planned.spec_json)
    identity = f"{planned.spec_json}\n{planned.engine_version}".encode()
    assert planned.run_id == hashlib.sha256(identity).hexdigest() == run_identity(planned.spec_json,
                                                                                     planned.engine_version)

def count_rows_con(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchone()[0] for t in TABLES}


def test_every_channel_conserves_packets_and_bytes(write_scenario, db: Path) -> None:
    # offered = delivered + dropped (queue full, AQM, loss) + still queued / transmitting / propagating.
    path = write_scenario(LOSSY_LINE.format(seed=5))
    run_json("run", str(path), "--db", str(db))
    con = duckdb.connect(str(db), read_only=True)
    for unit in ("packets", "bytes"):
        bad = con.execute(f"""
            SELECT name FROM channels WHERE offered_{unit} != delivered_{unit} + dropped_queue_{unit} + dropped_aqm_{unit}
                + dropped_loss_{unit} + queued_end_{unit} + transmitting_end_{unit} + propagating_end_{unit}
        """).fetchall()
        assert bad == []
    assert con.execute("SELECT sum(dropped_loss_packets) FROM channels").fetchone()[0] > 0
    con.close()


# --- atomicity -----------------------------------------------------------------------------------

class Injected(RuntimeError):
    pass


def small_run(seed: int = 3) -> tuple[Scenario, DerivedRun]:
    scenario = Scenario.from_toml_text(SMALL_DUMBBELL.replace("seed = 3", f"seed = {seed}"))
    planned = plan(scenario)
    return scenario, derive(planned, simulate(planned))


@pytest.mark.parametrize("table", ["channels", "flow_metrics", "flow_timeseries", "channel_timeseries"])
def test_failure_mid_insert_leaves_no_rows(table: str, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, run = small_run()
    insert = store.Store._insert_frame

    def explode(self: store.Store, name: str, *args: Any) -> None:
        if name == table:
            raise Injected(table)
        insert(self, name, *args)

    monkeypatch.setattr(store.Store, "_insert_frame", explode)
    with store.Store(db) as s, pytest.raises(Injected):
        s.save(run)
    assert count_rows(db) == dict.fromkeys(TABLES, 0)


def test_failure_during_force_replace_keeps_the_old_run(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, run = small_run()
    with store.Store(db) as s:
        s.save(run)
    before = count_rows(db)
    assert before["runs"] == 1 and before["flow_timeseries"] > 0

    insert = store.Store._insert_frame

    def explode(self: store.Store, name: str, *args: Any) -> None:
        if name == "flow_timeseries":
            raise Injected(name)
        insert(self, name, *args)

    monkeypatch.setattr(store.Store, "_insert_frame", explode)
    with store.Store(db) as s, pytest.raises(Injected):
        s.save(run, replace=True)
    assert count_rows(db) == before
    with store.Store(db) as s:
        assert s.has_run(run.run_id)


def test_saving_the_same_run_twice_without_replace_keeps_the_first(db: Path) -> None:
    """A second save of a stored run (another process stored it meanwhile) keeps the stored one."""
    _, run = small_run()
    with store.Store(db) as s:
        s.save(run)
    before = count_rows(db)
    with store.Store(db) as s:
        s.save(run)
    assert count_rows(db) == before and before["runs"] == 1


# --- run numbers --------------------------------------------------------------------------------------

def run_numbers(db: Path) -> dict[str, Any]:
    """Each run's number, and the numbers under which each numbered table holds rows."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {"runs": dict(con.execute("SELECT run_id, run FROM runs").fetchall()),
                **{t: {n for (n,) in con.execute(f"SELECT DISTINCT run FROM {stored_table(t)}").fetchall()}
                   for t in ("flow_timeseries", "channel_timeseries")}}
    finally:
        con.close()


def test_a_replaced_run_takes_a_new_number_and_leaves_no_rows_under_its_old_one(db: Path) -> None:
    _, run = small_run()
    other = dataclasses.replace(run, run_id="a" * 64)
    for written in (run, other):
        store.persist(written, db)
    store.persist(run, db, replace=True)
    numbers = run_numbers(db)
    assert numbers["runs"] == {other.run_id: 2, run.run_id: 3}
    for table in ("flow_timeseries", "channel_timeseries"):
        assert numbers[table] == {2, 3}, table
    with store.Store(db) as s:
        assert len(s.table_rows("flow_timeseries", run.run_id)) == run.result.flow_timeseries.height


# Writes `count` copies of the small dumbbell's run, each under its own run id, into the store
# sys.argv[1], as writer number sys.argv[2], starting when the file sys.argv[3] appears.
CONCURRENT_WRITER = """
import dataclasses, os, sys, time
from bufferlab.analysis.derive import derive
from bufferlab.pipeline.plan import plan
from bufferlab.pipeline.simulate import simulate
from bufferlab.spec import Scenario
from bufferlab.store.writer import persist

db, writer, go, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
planned = plan(Scenario.from_toml_text(sys.stdin.read()))
run = derive(planned, simulate(planned))
while not os.path.exists(go):
    time.sleep(0.005)
for k in range(count):
    persist(dataclasses.replace(run, run_id=f"{writer:032x}{k:032x}"), db)
"""


def test_runs_written_by_concurrent_processes_get_numbers_of_their_own(db: Path, tmp_path: Path) -> None:
    writers, each = 4, 3
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, str(db), str(w), str(go), str(each)],
                              stdin=subprocess.PIPE, text=True, cwd=REPO) for w in range(writers)]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(SMALL_DUMBBELL)
        proc.stdin.close()
    go.touch()
    assert [proc.wait(timeout=300) for proc in procs] == [0] * writers
    numbers = run_numbers(db)
    assert sorted(numbers["runs"].values()) == list(range(1, writers * each + 1))
    for table in ("flow_timeseries", "channel_timeseries"):
        assert numbers[table] == set(numbers["runs"].values()), table
    # Through the views, each run reads back its own rows, under its own id.
    _, run = small_run()
    per_run = count_rows(db)
    assert per_run["flow_timeseries"] == writers * each * run.result.flow_timeseries.height
    with store.Store(db) as s:
        for run_id in numbers["runs"]:
            rows = s.table_rows("channel_timeseries", run_id)
            assert len(rows) == run.result.channel_timeseries.height and {r[0] for r in rows} == {run_id}


# --- writing into an existing store ------------------------------------------------------------------

def dense_run(queue: str) -> DerivedRun:
    """The small dumbbell sampled every 50 us: 20,000 samples per flow and channel, so its series
    fill whole row groups."""
    text = SMALL_DUMBBELL.replace('sample_interval = "100ms"', 'sample_interval = "50us"') \
        .replace('queue = "20p"', f'queue = "{queue}"')
    planned = plan(Scenario.from_toml_text(text))
    return derive(planned, simulate(planned))


def row_group_layout(db: Path, table: str) -> dict[int, list[tuple[Any, ...]]]:
    """Where each row group of the run table `table` lies in the file (its data table's): its
    column segments with their rows and blocks, by row group."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT row_group_id, column_name, segment_id, count, block_id, block_offset "
                           f"FROM pragma_storage_info('{stored_table(table)}') ORDER BY ALL").fetchall()
    finally:
        con.close()
    layout: dict[int, list[tuple[Any, ...]]] = {}
    for group, *segment in rows:
        layout.setdefault(group, []).append(tuple(segment))
    return layout


def test_a_later_write_leaves_the_row_groups_of_earlier_runs_where_they_are(db: Path) -> None:
    first, second = dense_run("20p"), dense_run("30p")
    store.persist(first, db)
    before = {table: row_group_layout(db, table) for table in ("flow_timeseries", "channel_timeseries")}
    store.persist(second, db)
    for table, groups in before.items():
        after = row_group_layout(db, table)
        # The writer's row groups hold ROW_GROUP_SIZE rows; the first run's full groups were
        # neither merged with the second run's rows nor written again.
        full = {g: segments for g, segments in groups.items()
                if max(count for _, _, count, _, _ in segments) == ROW_GROUP_SIZE}
        assert full, f"{table}: no full row group of {ROW_GROUP_SIZE} rows"
        assert {g: after[g] for g in full} == full, f"{table}: the first run's row groups were rewritten"
        assert len(after) > len(groups)
    with store.Store(db) as s:
        for run in (first, second):
            assert len(s.table_rows("channel_timeseries", run.run_id)) == run.result.channel_timeseries.height


def test_a_new_store_keeps_keys_and_slowly_changing_series_run_length_encoded(db: Path) -> None:
    # `tables.RUN_LENGTH_COLUMNS`: told to DuckDB when the tables are made, so that its checkpoint
    # does not weigh every other encoding over them; a constant segment stays a constant.
    run = dense_run("20p")
    store.persist(run, db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        for table, columns in RUN_LENGTH_COLUMNS.items():
            data = stored_table(table)
            assert con.execute(f"SELECT count(*) FROM {data}").fetchone()[0] == \
                (len(getattr(run.result, table)) if table != "captures" else 0)
            encodings = dict(con.execute(
                f"SELECT column_name, list(DISTINCT compression) FROM pragma_storage_info('{data}') "
                "WHERE segment_type <> 'VALIDITY' GROUP BY column_name").fetchall())
            declared = con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = ?", [data]).fetchone()[0]
            for column in columns:
                assert f"{column} {'UINTEGER' if column in ('run', 'flow', 'channel', 'capture', 'sub_buffer', 'id') else 'UBIGINT'}" \
                    " USING COMPRESSION RLE" in declared, (table, column)
                assert set(encodings.get(column, ["RLE"])) <= {"RLE", "Constant"}, (table, column, encodings[column])
            # Told only for these: the counters and times are DuckDB's choice (bit-packed here).
            assert "BitPacking" in encodings.get("time_ns", ["BitPacking"])
        # Read back through the views as written.
        assert sorted(con.execute("SELECT flow, time_ns, ssthresh_bytes, min_rtt_ns FROM flow_timeseries").fetchall()) \
            == sorted(zip(*(run.result.flow_timeseries[c].to_list()
                            for c in ("flow", "time_ns", "ssthresh_bytes", "min_rtt_ns"))))
    finally:
        con.close()


def test_every_write_lands_in_the_file_and_leaves_no_log_for_readers_to_replay(db: Path) -> None:
    # A commit is its checkpoint (`store.connection`): a run left in the write-ahead log instead
    # would be replayed, uncompressed, by every later open of the store, read-only ones included.
    log = Path(f"{db}.wal")
    _, first = small_run()
    for run in (first, dataclasses.replace(first, run_id="0" * 64)):
        store.persist(run, db)
        assert not log.exists()
        con = duckdb.connect(str(db), read_only=True)
        try:
            blocks, wal_size = con.execute("SELECT total_blocks, wal_size FROM pragma_database_size() "
                                           "WHERE database_name = current_database()").fetchone()
            assert con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run.run_id]).fetchone() == (1,)
        finally:
            con.close()
        assert blocks > 0 and wal_size == "0 bytes"


def test_a_new_store_gets_small_blocks_and_an_older_store_keeps_its_own(tmp_path: Path) -> None:
    # A writer makes a store with blocks of NEW_STORE_BLOCK_SIZE (`store.connection`); a store
    # made with DuckDB's default blocks, as earlier bufferlabs made them, takes runs as it is
    # (DuckDB refuses an ATTACH that names another block size than the file's).
    _, run = small_run()
    new, old = tmp_path / "new.duckdb", tmp_path / "old.duckdb"
    store.persist(run, new)
    duckdb.connect(str(old)).close()  # DuckDB's default blocks, no tables yet
    default = store_block_size(old)
    assert NEW_STORE_BLOCK_SIZE < default
    store.persist(run, old)
    store.persist(dataclasses.replace(run, run_id="e" * 64), new)
    assert (store_block_size(new), store_block_size(old)) == (NEW_STORE_BLOCK_SIZE, default)
    assert count_rows(new)["channel_timeseries"] == 2 * count_rows(old)["channel_timeseries"] > 0


def test_a_store_made_meanwhile_with_other_blocks_is_attached_as_it_is(tmp_path: Path, monkeypatch) -> None:
    # Another process may make the store between the writer's look at the file and its ATTACH;
    # a store made with other blocks (an earlier bufferlab's) is then attached without naming any.
    from bufferlab.store import connection

    _, run = small_run()
    db = tmp_path / "made-meanwhile.duckdb"
    duckdb.connect(str(db)).close()
    monkeypatch.setattr(connection, "_is_new", lambda path: True)
    store.persist(run, db)
    assert store_block_size(db) != NEW_STORE_BLOCK_SIZE
    assert count_rows(db)["runs"] == 1


def test_a_duckdb_file_without_meta_is_refused_and_left_as_it_was(db: Path) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE notes (x INTEGER)")
    con.close()
    with pytest.raises(StoreError, match=r"not a bufferlab store \(no meta table\)"):
        store.Store(db)
    done = bufferlab("results", "list", "--db", str(db))
    assert done.returncode == 2 and done.stderr.startswith("error: --db: not a bufferlab store")
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == [("notes",)]
    finally:
        con.close()


def test_an_empty_duckdb_file_becomes_a_store_of_the_current_schema(db: Path) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    duckdb.connect(str(db)).close()
    with store.Store(db):
        pass
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert stored_schema_version(con) == SCHEMA_VERSION
    finally:
        con.close()


def test_a_file_whose_tables_are_only_in_its_log_is_not_taken_for_empty(tmp_path: Path) -> None:
    # A file with no block written yet can still hold tables: in a write-ahead log that no
    # checkpoint has folded in (a process killed before one). Such a file is read, not created anew.
    import subprocess
    import sys

    for name, statement in (("notes", "CREATE TABLE notes (x INTEGER)"),
                            ("old_store", "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR); "
                                          f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION + 1}')")):
        path = tmp_path / f"{name}.duckdb"
        subprocess.run([sys.executable, "-c", "import duckdb, os, sys\n"
                        "con = duckdb.connect(sys.argv[1], config={'checkpoint_threshold': '1GB'})\n"
                        "con.execute(sys.argv[2])\nos._exit(0)", str(path), statement], check=True, timeout=60)
        assert Path(f"{path}.wal").stat().st_size > 0
    with pytest.raises(StoreError, match=r"not a bufferlab store \(no meta table\)"):
        store.Store(tmp_path / "notes.duckdb")
    with pytest.raises(StoreError, match="newer than this bufferlab"):
        store.Store(tmp_path / "old_store.duckdb")


def test_a_new_file_is_known_empty_without_listing_the_catalogue(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[bool] = []
    real_list = schema._existing_tables
    monkeypatch.setattr(schema, "_existing_tables", lambda con: listed.append(True) or real_list(con))
    with store.Store(db):
        pass
    assert listed == []
    with store.Store(db) as s:  # now a store of the current schema: its version is read from meta
        assert s.run_ids() == []
    assert listed == []
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert stored_schema_version(con) == SCHEMA_VERSION
        assert {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()} == {
            *STORE_TABLES, *map(stored_table, NUMBERED_TABLES)}
    finally:
        con.close()


def test_a_writer_waits_for_the_lock_on_the_database_the_last_writer_left(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys
    import threading

    from bufferlab.store import connection

    with store.Store(db):
        pass
    # Another process holds the store's lock until told to let go (a line on its stdin).
    with subprocess.Popen([sys.executable, "-c", "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\n"
                           "print('locked', flush=True)\nsys.stdin.readline()\ncon.close()", str(db)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "locked\n"
            monkeypatch.setenv("BUFFERLAB_DB_WAIT", "0.3")
            left_behind = connection._prepared[-1]
            with pytest.raises(connection.StoreBusy, match="stayed locked by another process for 0.3 s"):
                connection.connect(db, read_only=False)
            assert not connection._prepared  # taken, tried, and closed with the failure
            with pytest.raises(duckdb.ConnectionException):
                left_behind.execute("SELECT 1")
            monkeypatch.setenv("BUFFERLAB_DB_WAIT", "60")
            with store.Store(db.with_name("other.duckdb")):  # a writer that leaves its database
                pass
            left_behind = connection._prepared[-1]

            def let_go() -> None:
                holder.stdin.write("\n")  # type: ignore[union-attr]
                holder.stdin.flush()  # type: ignore[union-attr]

            threading.Timer(0.5, let_go).start()
            con = connection.connect(db, read_only=False)  # waits for the other process, then attaches
            try:
                assert con is left_behind and con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
            finally:
                con.close()
        finally:
            holder.kill()


def test_a_writer_lets_go_of_the_store_and_keeps_its_database_for_the_next(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from bufferlab.store import connection

    _, run = small_run()
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    store.persist(run, first)
    # The file is closed and unlocked at once: another process opens it for writing.
    other = subprocess.run([sys.executable, "-c", "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\n"
                            "print(con.execute('SELECT count(*) FROM runs').fetchone()[0])", str(first)],
                           capture_output=True, text=True, timeout=60, check=False)
    assert (other.returncode, other.stdout) == (0, "1\n"), other.stderr
    # What waits for the next writer is the in-memory database alone, with the writer's settings.
    kept = connection._prepared[-1]
    assert kept.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal").fetchall() == [("memory",)]
    assert kept.execute("SELECT current_setting('threads')").fetchone() == (1,)

    def no_new_database() -> duckdb.DuckDBPyConnection:
        raise AssertionError("the next writer made a database of its own")

    monkeypatch.setattr(connection, "_new_writer_database", no_new_database)
    store.persist(run, second)
    assert count_rows(second) == count_rows(first)
    assert connection._prepared == [kept]


def test_a_forked_child_does_not_take_its_parents_writer_database(db: Path) -> None:
    import os

    from bufferlab.store import connection

    with store.Store(db):  # a writer that leaves its database for the next
        pass
    made = list(connection._prepared)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        os._exit(0 if not connection._prepared else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert connection._prepared == made  # the parent's is still there for its next writer
