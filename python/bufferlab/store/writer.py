"""The result store: one DuckDB file (default ``results/bufferlab.duckdb``).

A run is identified by ``sha256(canonical engine-spec JSON + "\\n" + engine version)``
(`pipeline.plan.run_identity`), so the same scenario on the same engine is simulated once and then
served from the store. A run is written in one transaction, exactly as `analysis.derive` made it
(nothing is computed here): it is there completely, or not at all (a process killed mid-write
leaves nothing of it; DuckDB's write-ahead log replays only committed transactions).

Many processes share one store: each opens it for one write or one query and closes it again
(`store.connection`), and one that meets another's lock waits and retries.

Tables (one row per ...):
  meta                 setting: schema_version
  studies              study: a named group of runs (``bufferlab run --study NAME``, a sweep)
  study_points         (study, point, seed) of a sweep: its axis values, run id, status and error
  runs                 run: identity, study, status, specs (engine and user level), spec hash, seed,
                       engine version, simulated and wall time, and its number in this store
  flows                flow of a run: the engine's raw per-flow counters + summary columns
  channels             link direction of a run: raw counters + summary columns
  flow_metrics         flow of a run: the metric catalogue's flow table (`metrics.FLOW_METRICS`)
  link_metrics         link direction that carried traffic: the link table (`metrics.LINK_METRICS`)
  network_metrics      run: the network table (`metrics.NETWORK_METRICS`)
  flow_timeseries      flow x sample: cwnd, ssthresh, in flight, srtt, min RTT, IDT EWMA, cumulative
                       bytes and one-way delay, pacing rate, controller state, delivery rate
  channel_timeseries   channel x sample: queue length, cumulative bytes/packets sent, drops, sojourn, busy
  captures             captured packet (only for runs with captures in their spec)
  queue_classes        sub-buffer of a split queue (SplitBuff): enqueued, dropped, sent, sojourn, limit, RTTP
  class_timeseries     sub-buffer x sample: length, limit, cumulative counts, T_B, RTTP estimate, threshold

The tables of many rows per run, a row per sample or captured packet (`NUMBERED_TABLES`), are
stored as ``<table>_data`` (`stored_table`), which keys its rows by the run's number (`runs.run`,
a UINTEGER the writer allocates) instead of its 64-character id, and are read through a view of
the table's own name that joins the run id back (schema version 5, issue 15): every query, the
`Results` API's, the report's and a user's SQL alike, reads ``flow_timeseries`` with its
``run_id`` as before, and the write no longer copies the id into each of a run's rows (the
reference dumbbell's 156,000 series rows: 10 MB of its 25 MB of transaction storage). Run
numbers are unique because a store has one writer at a time (the file's lock,
`store.connection`): the writer takes the next one, ``max(run) + 1``, inside the transaction that
writes the run. A run replaced with ``--force`` gets a new number.

What it saved, each step of the write timed in a fresh process (CPU ms, best of 7, 2026-11-24,
against main at a0cad28 on the same machine): the
reference dumbbell into a new store 70.3 -> 60.6 (the channel series' insert 11.1 -> 7.1, the
flow series' 4.3 -> 3.2, the commit's checkpoint 39.0 -> 34.1), into stores of 10 and 50 runs
70.4 -> 60.1 and 70.6 -> 63.7; 1000 flows sampled every 10 ms for 5 s (2.5 million series rows)
714 -> 587 (against b6a5bae); one flow for 10 s about the same, 22-25 (its series are small, and
the four views cost a new store's schema ~1.2 ms). Reads: `Results._rows_of_run`.

The schema version is kept in ``meta``. A store of an older version is rebuilt in the current
schema (`store.migration`: a copy that replaces the file once complete, so that a migration
killed midway leaves the older store as it was); a store written by a newer bufferlab is
refused with a clear error.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from ..analysis import catalogue
from ..errors import SpecError
from ..interrupts import deferred
from ..pipeline.columns import stored_column_types
from ..pipeline.engine import core
from . import DEFAULT_DB, SCHEMA_VERSION
from .connection import connect, release_writer, store_error
from .counters import check_run_id

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

    from ..analysis.derive import DerivedRun

__all__ = ["Store", "StoreError", "spec_hash", "DEFAULT_DB", "SCHEMA_VERSION", "TABLES", "RUN_TABLES", "KEYS",
           "NUMBERED_TABLES", "NEW_STORE_SCHEMA", "check_schema_version", "duckdb_type", "run_key", "stored_table",
           "StudyPoint", "persist", "RunToStore"]


class StoreError(SpecError):
    """A store this bufferlab cannot use (newer schema, unknown run): ``--db: reason``."""


def spec_hash(engine_spec_json: str) -> str:
    """What ran, whatever the engine: sha256 of the canonical engine spec."""
    return hashlib.sha256(engine_spec_json.encode()).hexdigest()


# The columns that identify a row of a run's table (after its run_id): never null, and the
# order rows are read back in.
KEYS: dict[str, tuple[str, ...]] = {
    "flows": ("flow",), "channels": ("channel",), "queue_classes": ("channel", "sub_buffer"),
    "flow_timeseries": ("flow", "time_ns"), "channel_timeseries": ("channel", "time_ns"),
    "class_timeseries": ("channel", "sub_buffer", "time_ns"), "captures": ("capture", "channel", "packet"),
    "flow_metrics": ("flow",), "link_metrics": ("channel",),
}

# Arrow's types (`_core.Table.column_types`) as DuckDB's.
_DUCKDB_TYPES: dict[str, str] = {
    "Boolean": "BOOLEAN", "UInt8": "UTINYINT", "UInt32": "UINTEGER", "UInt64": "UBIGINT", "Float64": "DOUBLE",
    "Utf8": "VARCHAR", "Timestamp(us)": "TIMESTAMP",
    # Decimal128(38, 0): Arrow's carrier of the engine's 128-bit integers.
    "Decimal128": "HUGEINT",
}


def duckdb_type(arrow_type: str) -> str:
    """The DuckDB column type of an Arrow type (by its `_core.Table.column_types` name); a list is
    an array of its item type."""
    if arrow_type.startswith("List(") and arrow_type.endswith(")"):
        return f"{duckdb_type(arrow_type[5:-1])}[]"
    return _DUCKDB_TYPES[arrow_type]


def _engine_tables() -> dict[str, dict[str, str]]:
    """The tables of the engine's facts: columns and types as `derive` hands them on (the engine's
    own tables, flows and channels with their summary columns), keys not null."""
    out = {}
    for table, schema in stored_column_types().items():
        keys = KEYS[table]
        out[table] = {"run_id": "VARCHAR NOT NULL",
                      **{c: duckdb_type(t) + (" NOT NULL" if c in keys else "") for c, t in schema.items()}}
    return out


def _utc_now() -> _dt.datetime:
    """Naive UTC (a TIMESTAMP column; TIMESTAMPTZ would make DuckDB's Python client need pytz)."""
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)


def _study_row(study: str, kind: str, sweep_json: str | None, axes_json: str | None,
               description: str | None) -> pl.DataFrame:
    import polars as pl

    schema = {"study_id": pl.String(), "created_at": pl.Datetime("us"), "description": pl.String(),
              "kind": pl.String(), "sweep_json": pl.String(), "axes_json": pl.String()}
    return pl.DataFrame([{"study_id": study, "created_at": _utc_now(), "description": description, "kind": kind,
                          "sweep_json": sweep_json, "axes_json": axes_json}], schema=schema)


def _microseconds(moment: _dt.datetime) -> int:
    """A naive UTC time as microseconds since the epoch (a TIMESTAMP's Arrow value), exactly."""
    delta = moment - _dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _metric_columns(names: Mapping[str, Any]) -> dict[str, str]:
    return dict.fromkeys(names, "DOUBLE")


_ENGINE = _engine_tables()
# Every table as it is read: column -> type (with its constraints), in order. New columns may be
# appended in a later schema version (migration adds them); none is ever renamed or dropped. The
# tables of `NUMBERED_TABLES` are stored keyed by the run's number (`stored_table`).
TABLES: dict[str, dict[str, str]] = {
    "meta": {"key": "VARCHAR PRIMARY KEY", "value": "VARCHAR"},
    "studies": {"study_id": "VARCHAR PRIMARY KEY", "created_at": "TIMESTAMP NOT NULL", "description": "VARCHAR",
                "kind": "VARCHAR", "sweep_json": "VARCHAR", "axes_json": "VARCHAR"},
    # One row per (study, point, seed); written with its run in one transaction.
    "study_points": {"study_id": "VARCHAR NOT NULL", "point": "UINTEGER NOT NULL", "seed": "UBIGINT NOT NULL",
                     "point_json": "VARCHAR NOT NULL", "run_id": "VARCHAR", "status": "VARCHAR NOT NULL",
                     "error": "VARCHAR", "updated_at": "TIMESTAMP NOT NULL"},
    "runs": {
        "run_id": "VARCHAR PRIMARY KEY", "status": "VARCHAR NOT NULL", "created_at": "TIMESTAMP NOT NULL",
        "name": "VARCHAR", "engine_version": "VARCHAR NOT NULL", "seed": "UBIGINT NOT NULL",
        "duration_ns": "UBIGINT NOT NULL", "end_ns": "UBIGINT NOT NULL", "events": "UBIGINT NOT NULL",
        "wall_time_s": "DOUBLE NOT NULL", "spec_json": "VARCHAR NOT NULL", "user_spec_json": "VARCHAR NOT NULL",
        "study_id": "VARCHAR", "spec_hash": "VARCHAR",
        # Version 5: the run's number in this store, the key of its rows in the numbered tables.
        "run": "UINTEGER NOT NULL",
    },
    "flows": _ENGINE["flows"],
    "channels": _ENGINE["channels"],
    "flow_metrics": {"run_id": "VARCHAR NOT NULL", "flow": "UINTEGER NOT NULL", "name": "VARCHAR",
                     "src": "VARCHAR", "dst": "VARCHAR", **_metric_columns(catalogue.FLOW_METRICS),
                     "delivery_rate_source": "VARCHAR"},
    "link_metrics": {"run_id": "VARCHAR NOT NULL", "channel": "UINTEGER NOT NULL", "name": "VARCHAR",
                     "rate_mbps": "DOUBLE", "bottleneck": "BOOLEAN", **_metric_columns(catalogue.LINK_METRICS)},
    "network_metrics": {"run_id": "VARCHAR NOT NULL", "name": "VARCHAR",
                        **_metric_columns(catalogue.NETWORK_METRICS)},
    "flow_timeseries": _ENGINE["flow_timeseries"],
    "channel_timeseries": _ENGINE["channel_timeseries"],
    # Version 3: the sub-buffers (classes) of split queues (SplitBuff), counters and series.
    "queue_classes": _ENGINE["queue_classes"],
    "class_timeseries": _ENGINE["class_timeseries"],
    "captures": _ENGINE["captures"],
}

# Child tables of a run, in the order they are written (and emptied on --force).
RUN_TABLES = ("flows", "channels", "flow_metrics", "link_metrics", "network_metrics", "flow_timeseries",
              "channel_timeseries", "captures", "queue_classes", "class_timeseries")
# The run tables of many rows per run, stored keyed by the run's number and read through a view
# (see the module docstring). The others hold a row per flow or link direction: keyed by number
# too, even 10,000 flows' (100,000 rows in four tables of 20-35 columns) were inserted only ~2 ms
# faster (29.6 -> 27.2 ms of CPU time, the commit the same), less than their six views cost a new
# store's schema (0.3-0.4 ms each).
NUMBERED_TABLES = ("flow_timeseries", "channel_timeseries", "captures", "class_timeseries")
# The columns of the numbered tables whose values come in long runs, stored run-length encoded
# (DuckDB's ``USING COMPRESSION rle``; a column that is constant over a segment is still stored
# as one constant): a run's keys, sorted, in runs of a flow's or channel's samples; the run's
# number; a flow's minimum RTT, which only falls, and its ssthresh, which changes at a loss; a
# channel's drop count, which changes only while the channel drops. DuckDB otherwise weighs every
# encoding for every column at each commit's checkpoint, bit-packing included, by running each
# over the column's values (`ColumnDataCheckpointer::DetectBestCompressionMethod`), and chose RLE
# or a constant for these in every scenario but one column of one (ssthresh in
# shallow_buffers.toml, of the same store size at 64 kB blocks). Told the encoding, it runs that
# one alone: the reference dumbbell's commit 36.0 -> 32.6 ms of CPU time, 100 flows of
# bimodal_rtts.toml 63.0 -> 55.9, tree_mice.toml 46.7 -> 42.6, every store the same size (issue
# 15; `bench_pipeline.py --write-steps`). Telling bit-packing for the other columns as well was
# slower and larger (tree_mice's store 4.6 -> 6.0 MB): their queue lengths and states are
# constant or in runs on some links and not on others, which DuckDB's choice per segment follows.
# The values read back are the same whatever the encoding; a store made before keeps DuckDB's
# choice (a table's encodings are fixed when it is created).
RUN_LENGTH_COLUMNS: dict[str, tuple[str, ...]] = {
    "flow_timeseries": ("run", "flow", "min_rtt_ns", "ssthresh_bytes"),
    "channel_timeseries": ("run", "channel", "drops"),
    "captures": ("run", "capture", "channel"),
    "class_timeseries": ("run", "channel", "sub_buffer"),
}


def stored_table(table: str) -> str:
    """The table that holds the rows of `table`: itself, or for a numbered table (keyed by the
    run's number, `NUMBERED_TABLES`) ``<table>_data``."""
    return f"{table}_data" if table in NUMBERED_TABLES else table


def run_key(table: str) -> str:
    """The column of `stored_table(table)` that names a row's run: ``run`` or ``run_id``."""
    return "run" if table in NUMBERED_TABLES else "run_id"


def _create_statements(table: str) -> list[str]:
    """`table` as a new store has it: a table, or a numbered table's data table and its view."""
    columns = TABLES[table]
    if table in NUMBERED_TABLES:
        columns = {"run": "UINTEGER NOT NULL", **{c: kind for c, kind in columns.items() if c != "run_id"}}
        columns = {c: kind + (" USING COMPRESSION rle" if c in RUN_LENGTH_COLUMNS[table] else "")
                   for c, kind in columns.items()}
    statements = [f"CREATE TABLE {stored_table(table)} ({', '.join(f'{c} {kind}' for c, kind in columns.items())})"]
    if table in NUMBERED_TABLES:
        statements.append(f"CREATE VIEW {table} AS SELECT r.run_id, d.* EXCLUDE (run) FROM {stored_table(table)} d "
                          "JOIN runs r ON r.run = d.run")
    return statements


# A new store's tables, views and schema version as one script, run by one `execute`: DuckDB's
# Python client takes the GIL back after every statement it runs (and between the steps of one),
# so a thread running Python meanwhile (the summary's rendering) delays each call; one call
# instead of sixteen, and `meta`'s first row a plain INSERT (INSERT OR REPLACE checks the key: 2
# of the 6 ms of CPU time the schema took).
NEW_STORE_SCHEMA = ";\n".join([*(statement for table in TABLES for statement in _create_statements(table)),
                                f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}')"])


def _existing_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
                       "AND table_schema = 'main'").fetchall()
    return {r[0] for r in rows}


def _holds_nothing(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the attached store's file holds nothing: no block written and no write-ahead log
    to replay, as DuckDB reports it (`pragma_database_size`, under a millisecond). A file that
    holds nothing has no tables; the lock the writer's ATTACH took keeps it so until it closes."""
    row = con.execute("SELECT total_blocks, wal_size FROM pragma_database_size() "
                      "WHERE database_name = current_database()").fetchone()
    # The log's size is text ("0 bytes"); anything but that exact text reads the catalogue.
    return row is not None and row[0] == 0 and row[1] == "0 bytes"


def stored_schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version recorded in a store; None for an empty file (no tables yet).

    The first look at DuckDB's catalogue that does not name an existing table (listing it, or
    reading a `meta` that is not there: a CatalogException, with its "did you mean" search)
    costs ~5 ms, so a new store is recognised by its file holding nothing (`_holds_nothing`),
    any other by reading `meta`; only a file that has something but no `meta` lists the tables."""
    if _holds_nothing(con):
        return None
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except duckdb.CatalogException:  # no meta table: an empty file, or not a store
        if not _existing_tables(con):
            return None
        raise StoreError("--db", "not a bufferlab store (no meta table)") from None
    if row is None:
        raise StoreError("--db", "not a bufferlab store (no schema_version in meta)")
    return int(row[0])


def check_schema_version(version: int | None, path: Path) -> None:
    """Refuse a store written by a newer bufferlab."""
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError("--db", f"{path} has store schema version {version}, newer than this bufferlab's "
                                 f"({SCHEMA_VERSION}): upgrade bufferlab to read it")


class RunScalars(Protocol):
    """The engine's scalars of a run that its `runs` row holds (`EngineResult` has them)."""

    @property
    def engine_version(self) -> str: ...
    @property
    def end_ns(self) -> int: ...
    @property
    def events(self) -> int: ...


class RunTables(Protocol):
    """A run's tables by name, in the order they are written."""

    def items(self) -> Iterable[tuple[str, Any]]: ...


class RunToStore(Protocol):
    """What `Store.save` writes of a run (`analysis.derive.DerivedRun`)."""

    @property
    def run_id(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def duration_ns(self) -> int: ...
    @property
    def wall_time_s(self) -> float: ...
    @property
    def spec_json(self) -> str: ...
    @property
    def spec_hash(self) -> str: ...
    @property
    def user_spec_json(self) -> str: ...
    @property
    def study(self) -> str | None: ...
    @property
    def result(self) -> RunScalars: ...
    def stored_tables(self) -> RunTables: ...


@dataclass(frozen=True)
class StudyPoint:
    """Where a run stands in a sweep: its point (index and axis values) and seed; `error` is the
    one-line reason of a point that failed (then it has no run)."""

    study: str
    point: int
    seed: int
    values: Mapping[str, Any]
    error: str | None = None


class Store:
    """A DuckDB result store opened for writing. Use as a context manager and keep it open only
    for the writes at hand: while it is open, no other process can read or write the file."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise StoreError("--db", f"cannot create {self.path}: a part of its directory is a file") from None
        except OSError as e:
            raise store_error(self.path, e) from None
        self.con, version = self._open()
        # A new store gets its tables in the first transaction, with the first write: every
        # commit is a checkpoint (`store.connection`), so a new store is written once. An empty
        # file has no tables to list (listing them is the catalogue's costly first look).
        self._empty = version is None

    def _open(self) -> tuple[duckdb.DuckDBPyConnection, int | None]:
        """A writer's connection to the store and its schema version: None for a new store, else
        the current one (an older store is migrated first, `store.migration`)."""
        con = connect(self.path, read_only=False)
        try:
            version = stored_schema_version(con)
            check_schema_version(version, self.path)
        except duckdb.Error as e:  # a damaged file that DuckDB opened but cannot read
            con.close()
            raise store_error(self.path, e) from None
        except BaseException:
            con.close()
            raise
        if version is None or version == SCHEMA_VERSION:
            return con, version
        from .migration import migrate

        release_writer(con)
        migrate(self.path)
        return self._open()

    def _ready(self) -> None:
        """The tables exist (a new store's made in a transaction of their own when nothing was
        written yet)."""
        if self._empty:
            with self._transaction():
                pass

    def close(self) -> None:
        try:
            self._ready()  # a store opened and closed without a write still gets its tables
        except BaseException:
            self.con.close()
            raise
        release_writer(self.con)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:  # a failed write creates nothing either
            self.con.close()

    # --- reading --------------------------------------------------------------------------

    def has_run(self, run_id: str) -> bool:
        self._ready()
        row = self.con.execute("SELECT count(*) FROM runs WHERE run_id = ? AND status = 'complete'",
                               [run_id]).fetchone()
        return bool(row and row[0])

    def run_row(self, run_id: str) -> dict[str, Any] | None:
        self._ready()
        cursor = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cursor.description], row))

    # --- writing --------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            if self._empty:
                self.con.execute(NEW_STORE_SCHEMA)
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")
        self._empty = False

    def save(self, run: RunToStore, *, replace: bool = False, point: StudyPoint | None = None) -> None:
        """Write one run atomically, with its place in a study if given; with `replace`, an
        existing run of that id is replaced in the same transaction (so a failure keeps the old one)."""
        with self._transaction():
            if replace:
                self._delete(run.run_id)
            if run.study is not None:
                self._ensure_study(run.study)
            number = self._next_run_number()
            self._insert_run(run, number)
            self._insert_tables(run, number)
            if point is not None:
                self._put_points([(point, run.run_id)])

    # --- studies --------------------------------------------------------------------------

    def _ensure_study(self, study: str, kind: str = "runs", sweep_json: str | None = None,
                      axes_json: str | None = None, description: str | None = None) -> None:
        self._on_frame(_study_row(study, kind, sweep_json, axes_json, description),
                       "INSERT OR IGNORE INTO studies BY NAME SELECT * FROM _frame")

    def begin_study(self, study: str, *, sweep_json: str, axes: Sequence[str], description: str | None) -> None:
        """Create or update a sweep's study row (its spec and axes: the latest sweep of that name)."""
        row = _study_row(study, "sweep", sweep_json, json.dumps(list(axes)), description)
        with self._transaction():
            self._on_frame(row, "INSERT OR IGNORE INTO studies BY NAME SELECT * FROM _frame",
                           "UPDATE studies SET kind = f.kind, sweep_json = f.sweep_json, axes_json = f.axes_json, "
                           "description = f.description FROM _frame f WHERE studies.study_id = f.study_id")

    def _put_points(self, points: Sequence[tuple[StudyPoint, str | None]]) -> None:
        """Write where runs stand in their sweeps, replacing an earlier row of the same (study, point, seed)."""
        import polars as pl

        schema = {"study_id": pl.String(), "point": pl.UInt32(), "seed": pl.UInt64(), "point_json": pl.String(),
                  "run_id": pl.String(), "status": pl.String(), "error": pl.String(), "updated_at": pl.Datetime("us")}
        rows = pl.DataFrame([{
            "study_id": point.study, "point": point.point, "seed": point.seed,
            "point_json": json.dumps(dict(point.values), sort_keys=True), "run_id": run_id,
            "status": "failed" if point.error is not None else "complete", "error": point.error,
            "updated_at": _utc_now()} for point, run_id in points], schema=schema)
        self._on_frame(rows, "DELETE FROM study_points USING _frame f WHERE study_points.study_id = f.study_id "
                             "AND study_points.point = f.point AND study_points.seed = f.seed",
                       "INSERT INTO study_points BY NAME SELECT * FROM _frame")

    def record_points(self, points: Sequence[tuple[StudyPoint, str | None]]) -> None:
        """Record points whose runs are already stored (with their run ids), or that failed
        (`point.error`, run id None), in one transaction."""
        if not points:
            return
        with self._transaction():
            self._put_points(points)

    def _delete(self, run_id: str) -> None:
        where = f"WHERE run_id = '{check_run_id(run_id)}'"
        for table in RUN_TABLES:
            key = run_key(table)
            self.con.execute(f"DELETE FROM {stored_table(table)} WHERE {key} IN (SELECT {key} FROM runs {where})")
        self.con.execute(f"DELETE FROM runs {where}")

    def _next_run_number(self) -> int:
        """The number of the run being written: 1 in a new store, else one more than the largest
        (the only writer holds the store's lock until its commit, so no other can take it)."""
        if self._empty:
            return 1
        row = self.con.execute("SELECT coalesce(max(run), 0) + 1 FROM runs").fetchone()
        assert row is not None
        return int(row[0])

    def _insert_run(self, run: RunToStore, number: int) -> None:
        r = run.result
        row: list[tuple[str, str, Any]] = [
            ("run_id", "Utf8", run.run_id), ("status", "Utf8", "complete"),
            ("created_at", "Timestamp(us)", _microseconds(_utc_now())), ("name", "Utf8", run.name),
            ("engine_version", "Utf8", r.engine_version), ("seed", "UInt64", run.seed),
            ("duration_ns", "UInt64", run.duration_ns), ("end_ns", "UInt64", r.end_ns), ("events", "UInt64", r.events),
            ("wall_time_s", "Float64", run.wall_time_s), ("spec_json", "Utf8", run.spec_json),
            ("user_spec_json", "Utf8", run.user_spec_json), ("study_id", "Utf8", run.study),
            ("spec_hash", "Utf8", run.spec_hash), ("run", "UInt32", number)]
        self._insert_frame("runs", None, core().Table.from_columns("runs", [(n, kind, [v]) for n, kind, v in row]))

    def _insert_frame(self, table: str, run: tuple[str, int] | None, frame: Any) -> None:
        """Insert a table's rows (columns by name), with their run in front unless they have it
        (`runs`, `run` None): its number in a numbered table's, its id in another's."""
        if run is None:
            key = ""
        elif table in NUMBERED_TABLES:
            key = f"CAST({int(run[1])} AS UINTEGER) AS run, "
        else:
            key = f"'{check_run_id(run[0])}' AS run_id, "
        self._on_frame(frame, f"INSERT INTO {stored_table(table)} BY NAME SELECT {key}* FROM _frame")

    def _on_frame(self, frame: Any, *statements: str) -> None:
        """Run `statements` over `frame` (an Arrow table: `_core.Table` or a polars DataFrame),
        known to them as `_frame`: DuckDB reads the frame's Arrow C stream in place (one stream per
        statement: a stream is read once).

        `_frame` is this function's local variable, which DuckDB's Python client finds by name
        when a statement reads a table the store does not have (its replacement scan), as it
        finds any Python variable holding an Arrow stream. Registering the stream as a view
        instead (`register`/`unregister`, a catalogue entry made and dropped per table) cost 0.3
        ms of CPU time per table, 3.5 of the 34 ms a one-flow run's write took.

        Nothing is bound as a parameter: DuckDB's Python client imports pandas and pyarrow to
        convert one (half a second of a fresh run); run ids are checked hex digests."""
        if not len(frame):
            return
        for statement in statements:
            _frame = frame.__arrow_c_stream__()  # noqa: F841 - read by DuckDB by its name (see above)
            self.con.execute(statement)

    def _insert_tables(self, run: RunToStore, number: int) -> None:
        """Every table of the run but `runs`, as `derive` made them; the run's `number` keys the
        numbered ones."""
        for table, frame in run.stored_tables().items():
            self._insert_frame(table, (run.run_id, number), frame)

    # --- comparing ------------------------------------------------------------------------

    def table_rows(self, table: str, run_id: str) -> list[tuple[Any, ...]]:
        self._ready()
        """Every row of `table` for a run, in a stable order (for determinism checks)."""
        cursor = self.con.execute(f"SELECT * FROM {table} WHERE run_id = ?", [run_id])
        return sorted(cursor.fetchall(), key=repr)

    def run_ids(self) -> list[str]:
        self._ready()
        return [r[0] for r in self.con.execute("SELECT run_id FROM runs ORDER BY created_at").fetchall()]


def persist(run: DerivedRun, db: str | Path = DEFAULT_DB, *, replace: bool = False,
            point: StudyPoint | None = None) -> None:
    """Step 4, persist: open the store, write one run (and its study point) in one transaction,
    close it again, so the lock is held for that write only. Ctrl-C waits for the write."""
    with deferred(), Store(db) as store:
        store.save(run, replace=replace, point=point)
