"""A store of an older schema is rebuilt in the current one (`store.migration`): every run and row
read back as before, run ids and all, and a migration that dies midway leaves the older store as
it was."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from bufferlab.analysis.derive import derive
from bufferlab.analysis.record import DerivedRun
from bufferlab.pipeline.plan import Plan, plan
from bufferlab.pipeline.simulate import simulate
from bufferlab.spec import Scenario
from bufferlab.store import migration
from bufferlab.store import writer as store
from bufferlab.store.schema import SCHEMA_VERSION
from bufferlab.store.tables import NUMBERED_TABLES, TABLES, stored_table
from conftest import REPO, SMALL_DUMBBELL, VARYING, bufferlab, stored_tables


def runs_of(count: int) -> list[DerivedRun]:
    """`count` runs of the small dumbbell with a capture (every run table has rows), each of its
    own id."""
    text = SMALL_DUMBBELL + '\n[[captures]]\nlink = "btl"\n'
    planned = plan(Scenario.from_toml_text(text))
    run = derive(planned, simulate(planned))
    return [dataclasses.replace(run, run_id=f"{k:x}" * 64) for k in range(1, count + 1)]


def version_4_store(current: Path, older: Path) -> None:
    """`older`: the rows of the store `current` as bufferlab's schema version 4 held them, before
    run numbers: every run table a table of its own with the run id in each row, `runs` without a
    number."""
    con = duckdb.connect(str(older))
    try:
        con.execute(f"ATTACH '{current}' AS current (READ_ONLY)")
        for table, columns in TABLES.items():
            kept = {name: kind for name, kind in columns.items()
                    if not (table == "runs" and name == "run") and name not in LATER_COLUMNS.get(table, ())}
            con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {kind}' for c, kind in kept.items())})")
            rows = "'4'" if table == "meta" else ", ".join(kept)
            con.execute(f"INSERT INTO {table} SELECT {'key, ' if table == 'meta' else ''}{rows} "
                        f"FROM current.{table}")
        con.execute("DETACH current")
    finally:
        con.close()


# The columns schema version 6 added (the AQM's drops): absent from stores of older versions.
VERSION_6_COLUMNS = {"channels": ("dropped_aqm_packets", "dropped_aqm_bytes")}
# The columns schema version 7 added (ECN: CE marks, marks received, the senders' answers).
VERSION_7_COLUMNS = {"channels": ("ce_marked_packets", "ce_marked_bytes"), "flows": ("ce_received", "ecn_responses"),
                     "flow_metrics": ("total_ce_received_l4", "total_ecn_responses_l4"),
                     "link_metrics": ("total_ce_marks_l2",)}
# The columns schema version 9 added (the AQM's controller, CE marks and AQM drops over time,
# DCTCP's α, CE marks per class).
VERSION_9_COLUMNS = {
    "channel_timeseries": ("aqm_probability", "aqm_signal", "aqm_state", "aqm_count", "ce_marks", "aqm_drops"),
    "flow_timeseries": ("ecn_alpha",), "queue_classes": ("ce_marked_packets", "ce_marked_bytes"),
    "class_timeseries": ("ce_marked_packets",)}
# Every column added since version 5 (the percentiles of version 8 aside, which the version 4
# store keeps as every metric column): absent from the stores of versions 4 and 5.
LATER_COLUMNS = {table: VERSION_6_COLUMNS.get(table, ()) + VERSION_7_COLUMNS.get(table, ())
                 + VERSION_9_COLUMNS.get(table, ())
                 for table in VERSION_6_COLUMNS | VERSION_7_COLUMNS | VERSION_9_COLUMNS}


def schema_version(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        con.close()


def without_columns(tables: dict, dropped: dict[str, tuple[str, ...]]) -> dict:
    """`conftest.stored_tables` without the columns `dropped` names, table by table."""
    out = dict(tables)
    for table, names in dropped.items():
        columns, rows = tables[table]
        shown = [name for name, _ in columns if name not in VARYING]  # the columns of the rows
        keep = [i for i, name in enumerate(shown) if name not in names]
        out[table] = ([c for c in columns if c[0] not in names], [tuple(r[i] for i in keep) for r in rows])
    return out


def as_migrated(tables: dict) -> dict:
    """`conftest.stored_tables` as a store of version 4 or 5 reads once migrated: the columns of
    versions 6 and 7 NULL."""
    out = dict(tables)
    for table, names in LATER_COLUMNS.items():
        columns, rows = tables[table]
        shown = [name for name, _ in columns if name not in VARYING]
        nulled = {i for i, name in enumerate(shown) if name in names}
        out[table] = (columns, [tuple(None if i in nulled else v for i, v in enumerate(r)) for r in rows])
    return out


def as_version_4(tables: dict) -> dict:
    """`conftest.stored_tables` as schema version 4 had them: without `meta` (the version),
    `runs.run` and the columns of versions 6 and 7."""
    tables = without_columns(tables, LATER_COLUMNS)
    columns, rows = tables["runs"]
    names = [name for name, _ in columns if name not in VARYING]  # the columns of the rows
    if "run" in names:
        at = names.index("run")
        columns, rows = [c for c in columns if c[0] != "run"], [r[:at] + r[at + 1:] for r in rows]
    return {table: content for table, content in tables.items() if table != "meta"} | {"runs": (columns, sorted(rows))}


@pytest.fixture
def older_store(tmp_path: Path) -> tuple[Path, dict]:
    """A version 4 store of three runs, and its tables as the current schema reads them (once
    migrated: the columns of version 6 NULL)."""
    current, older = tmp_path / "current.duckdb", tmp_path / "results" / "older.duckdb"
    older.parent.mkdir()
    for run in runs_of(3):
        store.persist(run, current)
    version_4_store(current, older)
    return older, as_migrated(stored_tables(current))


def test_a_version_4_store_is_rebuilt_with_run_numbers_and_reads_the_same(older_store: tuple[Path, dict]) -> None:
    older, expected = older_store
    assert schema_version(older) == 4
    assert as_version_4(stored_tables(older)) == as_version_4(expected)
    with store.Store(older):
        pass
    assert schema_version(older) == SCHEMA_VERSION
    assert stored_tables(older) == expected  # run numbers in the order the runs were stored
    assert aqm_drops(older) == {None}
    assert not migration.migrating_path(older).exists() and not Path(f"{older}.wal").exists()
    con = duckdb.connect(str(older), read_only=True)
    try:
        for table in NUMBERED_TABLES:
            columns = {c for (c,) in con.execute("SELECT column_name FROM information_schema.columns "
                                                 f"WHERE table_name = '{stored_table(table)}'").fetchall()}
            assert "run" in columns and "run_id" not in columns, table
    finally:
        con.close()


def aqm_drops(db: Path) -> set:
    """The values of the channels' AQM drop counters in the store at `db`."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {v for row in con.execute("SELECT dropped_aqm_packets, dropped_aqm_bytes FROM channels").fetchall()
                for v in row}
    finally:
        con.close()


def test_a_version_5_store_gains_the_aqm_drop_counters_null(tmp_path: Path) -> None:
    """Version 6 adds the channels' AQM drops: a version 5 store is rebuilt with them NULL in its
    runs (which had no AQM), every other column and row as before."""
    current, older = tmp_path / "current.duckdb", tmp_path / "older.duckdb"
    for run in runs_of(2):
        store.persist(run, current)
    assert aqm_drops(current) == {0}
    shutil.copyfile(current, older)
    con = duckdb.connect(str(older))
    try:
        for column in VERSION_6_COLUMNS["channels"]:
            con.execute(f"ALTER TABLE channels DROP COLUMN {column}")
        con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    finally:
        con.close()
    expected = without_columns(stored_tables(current), VERSION_6_COLUMNS)
    before = without_columns(stored_tables(older), VERSION_6_COLUMNS)
    assert before["meta"] != expected["meta"] and before | {"meta": expected["meta"]} == expected
    with store.Store(older):
        pass
    assert schema_version(older) == SCHEMA_VERSION
    assert without_columns(stored_tables(older), VERSION_6_COLUMNS) == expected
    assert aqm_drops(older) == {None}
    # The columns are where a new store has them.
    assert stored_tables(older)["channels"][0] == stored_tables(current)["channels"][0]


def ecn_counters(db: Path) -> set:
    """The values of every column version 7 added, in the store at `db`."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {v for table, names in VERSION_7_COLUMNS.items()
                for row in con.execute(f"SELECT {', '.join(names)} FROM {table}").fetchall() for v in row}
    finally:
        con.close()


def test_a_version_6_store_gains_the_ecn_counters_null(tmp_path: Path) -> None:
    """Version 7 adds ECN's counters and metrics: a version 6 store is rebuilt with them NULL in
    its runs (which had no ECN), every other column and row as before."""
    current, older = tmp_path / "current.duckdb", tmp_path / "older.duckdb"
    for run in runs_of(2):
        store.persist(run, current)
    assert ecn_counters(current) == {0}
    shutil.copyfile(current, older)
    con = duckdb.connect(str(older))
    try:
        for table, names in VERSION_7_COLUMNS.items():
            for column in names:
                con.execute(f"ALTER TABLE {stored_table(table)} DROP COLUMN {column}")
        con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    finally:
        con.close()
    expected = without_columns(stored_tables(current), VERSION_7_COLUMNS)
    with store.Store(older):
        pass
    assert schema_version(older) == SCHEMA_VERSION
    assert without_columns(stored_tables(older), VERSION_7_COLUMNS) == expected
    assert ecn_counters(older) == {None}
    for table in VERSION_7_COLUMNS:  # the columns are where a new store has them
        assert stored_tables(older)[table][0] == stored_tables(current)[table][0], table


# The metric columns schema version 8 added (the delay percentiles), beside its table
# delay_histograms.
VERSION_8_COLUMNS = {"flow_metrics": ("p50_one_way_delay_l3", "p95_one_way_delay_l3", "p99_one_way_delay_l3"),
                     "link_metrics": ("p50_qdisc_delay_l2", "p95_qdisc_delay_l2", "p99_qdisc_delay_l2")}


def percentiles(db: Path) -> set:
    """The values of every metric column version 8 added, in the store at `db`."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {v for table, names in VERSION_8_COLUMNS.items()
                for row in con.execute(f"SELECT {', '.join(names)} FROM {table}").fetchall() for v in row}
    finally:
        con.close()


def test_a_version_7_store_gains_an_empty_delay_histogram_table_and_null_percentiles(tmp_path: Path) -> None:
    """Version 8 adds the delay distributions: a version 7 store (no delay_histograms table, no
    percentile columns) is rebuilt with the table empty and the percentiles NULL in its runs,
    whose engine kept no distribution, every other column and row as before; a run stored after
    the migration has both."""
    current, older = tmp_path / "current.duckdb", tmp_path / "older.duckdb"
    runs = runs_of(3)
    for run in runs[:2]:
        store.persist(run, current)
    assert stored_tables(current)["delay_histograms"][1] and len(percentiles(current)) > 2  # values, not NULL only
    shutil.copyfile(current, older)
    con = duckdb.connect(str(older))
    try:
        con.execute("DROP VIEW delay_histograms")
        con.execute(f"DROP TABLE {stored_table('delay_histograms')}")
        for table, names in VERSION_8_COLUMNS.items():
            for column in names:
                con.execute(f"ALTER TABLE {stored_table(table)} DROP COLUMN {column}")
        con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    finally:
        con.close()
    expected = without_columns(stored_tables(current), VERSION_8_COLUMNS)
    with store.Store(older):
        pass
    assert schema_version(older) == SCHEMA_VERSION
    migrated = without_columns(stored_tables(older), VERSION_8_COLUMNS)
    assert migrated.pop("delay_histograms")[1] == []
    expected.pop("delay_histograms")
    assert migrated == expected
    assert percentiles(older) == {None}
    for table in VERSION_8_COLUMNS:  # the columns are where a new store has them
        assert stored_tables(older)[table][0] == stored_tables(current)[table][0], table
    store.persist(runs[2], older)
    with duckdb.connect(str(older), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM delay_histograms WHERE run_id = ?", [runs[2].run_id]).fetchone()[0]
        assert con.execute("SELECT p99_qdisc_delay_l2 FROM link_metrics WHERE run_id = ? AND bottleneck",
                           [runs[2].run_id]).fetchone()[0] is not None


def aqm_series(db: Path) -> set:
    """The values of every column version 9 added, in the store at `db`."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {v for table, names in VERSION_9_COLUMNS.items()
                for row in con.execute(f"SELECT {', '.join(names)} FROM {table}").fetchall() for v in row}
    finally:
        con.close()


def test_a_version_8_store_gains_the_aqm_series_null(tmp_path: Path) -> None:
    """Version 9 adds the AQM's controller, CE marks and AQM drops to the channels' series, DCTCP's
    α to the flows' and CE marks to the classes': a version 8 store is rebuilt with them NULL in
    its runs (whose engine sampled none of them), every other column and row as before; a run
    stored after the migration has them."""
    current, older = tmp_path / "current.duckdb", tmp_path / "older.duckdb"
    runs = runs_of(3)
    for run in runs[:2]:
        store.persist(run, current)
    assert 0 in aqm_series(current)  # the dumbbell's FIFOs: no marks, no AQM drops
    shutil.copyfile(current, older)
    con = duckdb.connect(str(older))
    try:
        for table, names in VERSION_9_COLUMNS.items():
            if table in NUMBERED_TABLES:  # its view names every column: made again without them
                con.execute(f"DROP VIEW {table}")
            for column in names:
                con.execute(f"ALTER TABLE {stored_table(table)} DROP COLUMN {column}")
            if table in NUMBERED_TABLES:
                con.execute(f"CREATE VIEW {table} AS SELECT r.run_id, d.* EXCLUDE (run) FROM {stored_table(table)} d "
                            "JOIN runs r ON r.run = d.run")
        con.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    finally:
        con.close()
    expected = without_columns(stored_tables(current), VERSION_9_COLUMNS)
    with store.Store(older):
        pass
    assert schema_version(older) == SCHEMA_VERSION
    assert without_columns(stored_tables(older), VERSION_9_COLUMNS) == expected
    assert aqm_series(older) == {None}
    for table in VERSION_9_COLUMNS:  # the columns are where a new store has them
        assert stored_tables(older)[table][0] == stored_tables(current)[table][0], table
    store.persist(runs[2], older)
    with duckdb.connect(str(older), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM channel_timeseries WHERE run_id = ? AND ce_marks = 0",
                           [runs[2].run_id]).fetchone()[0] > 0


def test_reading_a_version_4_store_migrates_it_once(older_store: tuple[Path, dict]) -> None:
    older, expected = older_store
    listed = bufferlab("results", "list", "--db", str(older))
    assert listed.returncode == 0, listed.stderr
    assert all(f"{k:x}" * 12 in listed.stdout for k in (1, 2, 3))
    assert schema_version(older) == SCHEMA_VERSION and stored_tables(older) == expected
    # The pause is explained, in one line, the one time it happens.
    assert listed.stderr.count("\n") == 1
    assert listed.stderr.startswith(f"note: {older}: rebuilding the store of schema version 4 in version "
                                    f"{SCHEMA_VERSION}")
    inode = older.stat().st_ino
    again = bufferlab("results", "list", "--db", str(older))
    assert again.returncode == 0 and again.stderr == ""
    assert older.stat().st_ino == inode  # a current store is not rebuilt again


def test_a_run_into_a_version_4_store_finds_the_runs_it_holds(older_store: tuple[Path, dict],
                                                             write_scenario) -> None:
    older, _ = older_store
    path = write_scenario(SMALL_DUMBBELL)
    first = json.loads(bufferlab("run", str(path), "--db", str(older), "--json").stdout)
    again = json.loads(bufferlab("run", str(path), "--db", str(older), "--json").stdout)
    assert (first["from_store"], again["from_store"]) == (False, True)
    con = duckdb.connect(str(older), read_only=True)
    try:
        assert con.execute("SELECT run FROM runs WHERE run_id = ?", [first["run_id"]]).fetchone() == (4,)
    finally:
        con.close()


def test_a_migration_that_fails_leaves_the_older_store_as_it_was(older_store: tuple[Path, dict],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    older, _ = older_store
    before = stored_tables(older)

    def fail(con: duckdb.DuckDBPyConnection, version: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(migration, "_copy_rows", fail)
    with pytest.raises(OSError, match="No space left"):
        store.Store(older)
    assert schema_version(older) == 4 and stored_tables(older) == before
    assert not migration.migrating_path(older).exists()
    monkeypatch.undo()
    with store.Store(older):  # and a later writer migrates it
        pass
    assert schema_version(older) == SCHEMA_VERSION


# A process that migrates the store at sys.argv[1] and is killed (SIGKILL) at sys.argv[2]: "copy"
# once the run tables' copy has begun, "rename" with the rebuilt store complete, before it
# replaces the older one.
KILLED_MIGRATION = textwrap.dedent("""
    import os, signal, sys
    from bufferlab.store import migration, writer

    where = sys.argv[2]
    copy, replace = migration._copy_rows, os.replace

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def copy_then_die(con, version):
        statements = con.execute
        class Dying:
            def execute(self, sql, *args):
                if "_data" in sql and where == "copy":
                    statements(sql, *args)
                    die()
                return statements(sql, *args)
        copy(Dying(), version)

    def replace_then_die(src, dst):
        die()

    migration._copy_rows = copy_then_die
    migration.os.replace = replace_then_die
    writer.Store(sys.argv[1])
""")


@pytest.mark.parametrize("where", ["copy", "rename"])
def test_a_migration_killed_midway_leaves_the_older_store_usable(older_store: tuple[Path, dict], where: str) -> None:
    older, expected = older_store
    before = stored_tables(older)
    killed = subprocess.run([sys.executable, "-c", KILLED_MIGRATION, str(older), where], cwd=REPO, timeout=120,
                            check=False)
    assert killed.returncode == -signal.SIGKILL
    # The older store is untouched (an earlier bufferlab still reads it); the rebuilt file, if any,
    # lies beside it unused.
    assert schema_version(older) == 4 and stored_tables(older) == before
    assert not Path(f"{older}.wal").exists()
    if where == "rename":
        assert migration.migrating_path(older).exists()
    # The next opening migrates it, whatever the killed one left.
    listed = bufferlab("results", "list", "--db", str(older))
    assert listed.returncode == 0, listed.stderr
    assert stored_tables(older) == expected
    assert not migration.migrating_path(older).exists()
    assert sorted(os.listdir(older.parent)) == [older.name]


def test_a_store_migrated_by_another_process_meanwhile_is_not_migrated_again_over_it(
        older_store: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # This writer opens the older file; before it has the lock, another migrator puts the rebuilt
    # store in its place and a third process stores a run there. The writer must not copy the older
    # file over that store.
    older, _ = older_store
    elsewhere = tmp_path / "other" / "older.duckdb"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(older.read_bytes())
    with store.Store(elsewhere):  # the other migrator's work
        pass
    (extra,) = runs_of(4)[3:]
    store.persist(extra, elsewhere)  # the third process's run
    real_connect = migration.connect
    opened: list[Path] = []

    def open_then_replaced(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        con = real_connect(path, read_only=read_only)
        if not opened:
            os.replace(elsewhere, path)
        opened.append(path)
        return con

    monkeypatch.setattr(migration, "connect", open_then_replaced)
    with store.Store(older) as s:
        assert s.has_run(extra.run_id)
    assert len(opened) == 2  # the first attach was of a file the path no longer named
    assert schema_version(older) == SCHEMA_VERSION


# --- version 5: the engine's input named its fields by their unit ----------------------------------

RICH_SCENARIO = """
    name = "rich"
    duration = "2s"
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
    a = "a"
    b = "r"
    rate = "100Mbps"
    delay = "5ms"
    queue = { kind = "tbf", rate = "20Mbps", burst = "30kB", limit = "60kB" }
    [[links]]
    a = "r"
    b = "b"
    rate = "10Mbps"
    delay = "10ms"
    queue_forward = { kind = "splitbuff", limit = "100p", sub_buffers = 2 }
    queue_backward = { kind = "blind_splitbuff", limit = "100p", sub_buffers = 2 }
    [[flows]]
    src = "a"
    dst = "b"
    start = "10ms"
    stop = "1s"
    tcp = { min_rto = "300ms", rwnd = "1MB", delayed_ack_timeout = "30ms" }
    [[flows]]
    src = "a"
    dst = "b"
    transport = "quic"
    quic = { max_ack_delay = "20ms", initial_rtt = "100ms" }
    [[flows]]
    src = "a"
    dst = "b"
    traffic = { kind = "cbr", rate = "1Mbps", packet = "1000B" }
    [[generators]]
    kind = "poisson"
    sources = "a"
    dst = "b"
    arrivals_per_s = 5
    size = { dist = "exponential", mean = "20kB" }
    start = "100ms"
"""


def _as_version_5(table: dict, where: str) -> None:
    for old, new in migration._VERSION_5_KEYS.get(where, {}).items():
        if new in table:
            table[old] = table.pop(new)


def _migrated_rich_run(tmp_path: Path, version: int,
                       older_form: Callable[[dict], dict]) -> tuple[Plan, str, tuple[str, str]]:
    """A store of one run of RICH_SCENARIO whose engine spec is rewritten into `older_form` and
    marked as schema `version`, then migrated: (its plan, the older spec's JSON, the migrated
    store's (run id, spec JSON))."""
    planned = plan(Scenario.from_toml_text(textwrap.dedent(RICH_SCENARIO)))
    db = tmp_path / f"v{version}.duckdb"
    store.persist(derive(planned, simulate(planned)), db)
    older = json.dumps(older_form(json.loads(planned.resolved.to_json())), sort_keys=True, separators=(",", ":"))
    con = duckdb.connect(str(db))
    try:
        con.execute("UPDATE runs SET spec_json = ?", [older])
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    finally:
        con.close()
    migration.migrate(db)
    assert schema_version(db) == SCHEMA_VERSION
    con = duckdb.connect(str(db), read_only=True)
    try:
        (run_id, stored) = con.execute("SELECT run_id, spec_json FROM runs").fetchone()
    finally:
        con.close()
    return planned, older, (run_id, stored)


def version_9_spec(spec: dict) -> dict:
    """An engine spec as versions 6 to 9 stored it: each flow, generator and link with its own
    options and queues (the inverse of the migration's listing of them)."""
    spec = json.loads(json.dumps(spec))
    tcp, quic, queues = spec.pop("tcp_options"), spec.pop("quic_options", []), spec.pop("queues")
    for flow in spec["flows"]:
        flow["tcp"] = tcp[flow["tcp"]]
        if "quic" in flow:
            flow["quic"] = quic[flow["quic"]]
    for generator in spec.get("generators", []):
        generator["tcp"] = tcp[generator["tcp"]]
    for link in spec["links"]:
        for side in ("queue_forward", "queue_backward"):
            link[side] = queues[link[side]]
    return spec


def version_5_spec(spec: dict) -> dict:
    """An engine spec as version 5's engine read it (the inverse of the migration's renames)."""
    spec = version_9_spec(spec)
    _as_version_5(spec, "spec")
    for link in spec["links"]:
        _as_version_5(link, "link")
        for side in ("queue_forward", "queue_backward"):
            _as_version_5(link[side], link[side]["kind"])
    for flow in spec["flows"]:
        _as_version_5(flow, "flow")
        if flow["traffic"]["kind"] in ("cbr", "on_off"):
            _as_version_5(flow["traffic"], "datagram")
        for options in ("tcp", "quic"):
            if options in flow:
                _as_version_5(flow[options], options)
    for generator in spec["generators"]:
        _as_version_5(generator, "flow")
        _as_version_5(generator["tcp"], "tcp")
        _as_version_5(generator["model"], generator["model"]["kind"])
    return spec


def test_every_field_the_engine_renamed_on_the_wire_has_its_version_5_name_in_the_migration() -> None:
    # spec.rs names each renamed field with `#[serde(..., rename = "<scenario key>")]` above it.
    import re

    source = (REPO / "crates" / "bufferlab-core" / "src" / "spec.rs").read_text()
    # The queues added in version 6 (RED, PIE, CoDel, FQ-CoDel) and later (DualPI2, FQ-PIE) had no
    # version 5 names to migrate.
    source = re.sub(r"\n    (Red|Pie|CoDel|FqCodel|FqPie|DualPi2) \{[^}]*\}", "", source)
    renamed = set(re.findall(r'#\[serde\([^\]]*rename = "(\w+)"\)\]\s*(?:pub )?(\w+):', source))
    known = {(new, old) for table in migration._VERSION_5_KEYS.values() for old, new in table.items()}
    assert renamed and renamed <= known, renamed - known


def test_a_version_5_store_has_its_stored_specs_under_the_scenario_keys_after_migration(tmp_path: Path) -> None:
    from bufferlab import _core

    planned, older, (_, stored) = _migrated_rich_run(tmp_path, 5, version_5_spec)
    assert older != planned.resolved.to_json()
    assert stored == planned.resolved.to_json()
    _core.plan(stored)  # the engine reads it (unknown keys are refused): none of version 5's is left


def test_a_version_9_store_has_its_stored_specs_with_shared_tables_after_migration(tmp_path: Path) -> None:
    """Version 10 lists each distinct TCP option set, QUIC option set and queue once and has flows
    and links refer to them: a version 9 store's specs, each flow and link with its own, are
    rewritten so (the engine reads them), under the run ids they were stored with."""
    from bufferlab import _core

    planned, older, (run_id, stored) = _migrated_rich_run(tmp_path, 9, version_9_spec)
    assert '"queue_forward":{' in older and '"tcp_options"' not in older
    assert run_id == planned.run_id
    assert stored == planned.resolved.to_json()
    _core.plan(stored)
