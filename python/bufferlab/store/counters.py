"""The raw counters of a run as stored (tables `flows` and `channels`), and the one look-up a
stored run's summary needs: light (DuckDB only, no polars or numpy), so that `bufferlab run` of a
run the store already has answers at once. DuckDB itself is imported only when there is a store
file to read: a run into a new store needs it only once simulated."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema import SCHEMA_VERSION, check_run_id

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

__all__ = ["stored_counters"]


def _records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def stored_counters(db: str | Path, run_id: str) -> dict[str, Any] | None:
    """The stored counters of a complete run in the shape of the engine's RunResult (without
    series): the rows of the `flows` and `channels` tables (the engine's columns, flows with their
    endpoints' names, and the summary columns). None if the store does not have it. A store of
    another schema version is opened for writing first, which migrates an older one, refuses a
    newer one and gives an empty file its tables, as `Results` does; then it is read again."""
    import duckdb

    from .connection import connect

    where = f"WHERE run_id = '{check_run_id(run_id)}'"
    con = connect(Path(db), read_only=True)
    try:
        try:
            version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.CatalogException:  # an empty file, or not a store: the writer says which
            version = None
        if version is None or version[0] != str(SCHEMA_VERSION):  # (the writer refuses a damaged one)
            con.close()
            from .writer import Store

            Store(db).close()
            return stored_counters(db, run_id)
        run = con.execute(f"SELECT engine_version, end_ns, events, wall_time_s, seed FROM runs {where} "
                          "AND status = 'complete'").fetchone()
        if run is None:
            return None
        flows = _records(con.execute(f"SELECT * EXCLUDE (run_id) FROM flows {where} ORDER BY flow"))
        channels = _records(con.execute(f"SELECT * EXCLUDE (run_id) FROM channels {where} ORDER BY channel"))
    finally:
        con.close()
    return {
        **dict(zip(("engine_version", "end_ns", "events", "wall_time_s", "seed"), run)),
        "flows": flows,
        "channels": channels,
    }
