"""The result store: one DuckDB file (default ``results/bufferlab.duckdb``).

A run is identified by ``sha256(canonical engine-spec JSON + "\\n" + engine version)``
(`pipeline.plan.run_identity`), so the same scenario on the same engine is simulated once and then
served from the store. A run is written in one transaction, exactly as `analysis.derive` made it
(its record, `analysis.record.DerivedRun`: nothing is computed here): it is there completely, or
not at all (a process killed mid-write leaves nothing of it; DuckDB's write-ahead log replays
only committed transactions).

Many processes share one store: each opens it for one write or one query and closes it again
(`store.connection`), and one that meets another's lock waits and retries.

The tables, and how a run's rows of many-row tables are keyed by its number, are `store.tables`;
the schema version and the store's error are `store.schema`. A store of an older version is
rebuilt in the current schema before it is written (`store.migration`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..interrupts import deferred
from ..pipeline.engine import core
from ..errors import SpecError
from .connection import StoreUnusable, connect, release_writer, store_error
from .schema import (DEFAULT_DB, SCHEMA_VERSION, StoreError, check_run_id, check_schema_version,
                     stored_schema_version)
from .tables import NEW_STORE_SCHEMA, NUMBERED_TABLES, RUN_TABLES, run_key, stored_table

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

    from ..analysis.record import DerivedRun

__all__ = ["Store", "StudyPoint", "persist", "spec_hash", "schema_version_of"]


def spec_hash(engine_spec_json: str) -> str:
    """What ran, whatever the engine: sha256 of the canonical engine spec."""
    return hashlib.sha256(engine_spec_json.encode()).hexdigest()


def schema_version_of(con: duckdb.DuckDBPyConnection, path: Path) -> int | None:
    """The schema version the store at `path` records (None for a new store), refused as one
    line when the store is of a newer bufferlab, or when what it records is no version at all (a
    damaged `meta`: text, a number below 1, a table of other columns)."""
    try:
        version = stored_schema_version(con)
    except (ValueError, TypeError, OverflowError) as e:
        if isinstance(e, SpecError):
            raise
        raise StoreUnusable("--db", f"cannot use {path}: its meta table records no schema version ({e})") from None
    except duckdb.Error as e:  # a damaged file that DuckDB opened but cannot read
        raise store_error(path, e) from None
    if version is not None and version < 1:
        raise StoreUnusable("--db", f"cannot use {path}: its meta table records schema version {version}, "
                                    "which no bufferlab wrote")
    check_schema_version(version, path)
    return version


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
            version = schema_version_of(con, self.path)
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

    def save(self, run: DerivedRun, *, replace: bool = False, point: StudyPoint | None = None) -> None:
        """Write one run atomically, with its place in a study if given; with `replace`, an
        existing run of that id is replaced in the same transaction (so a failure keeps the old one).
        Without it, a run the store has already (stored meanwhile by another process) is kept,
        and only its place in the study is written (`_stored_already`)."""
        with self._transaction():
            if replace:
                self._delete(run.run_id)
            if run.study is not None:
                self._ensure_study(run.study)
            if not replace and self._stored_already(run.run_id):
                if point is not None:
                    self._put_points([(point, run.run_id)])
                return
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

    def _stored_already(self, run_id: str) -> bool:
        """Whether the run is in the store already: stored by another process since this one
        looked (the same spec and seed run twice at once). A run id is the run's identity (the
        engine's spec and version), and the engine is deterministic, so the stored run is this
        one, and it is kept as it is. The check and the insert that would follow are one
        transaction under the store's lock, so no other writer comes between them."""
        if self._empty:
            return False
        row = self.con.execute(f"SELECT count(*) FROM runs WHERE run_id = '{check_run_id(run_id)}'").fetchone()
        return bool(row and row[0])

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

    def _insert_run(self, run: DerivedRun, number: int) -> None:
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
        instead (`register`/`unregister`) would make and drop a catalogue entry per table.

        Nothing is bound as a parameter: DuckDB's Python client imports pandas and pyarrow to
        convert one; run ids are checked hex digests."""
        if not len(frame):
            return
        for statement in statements:
            _frame = frame.__arrow_c_stream__()  # noqa: F841 - read by DuckDB by its name (see above)
            self.con.execute(statement)

    def _insert_tables(self, run: DerivedRun, number: int) -> None:
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
