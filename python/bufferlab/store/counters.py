"""The raw counters of a run as stored (tables `flows` and `channels`), and the one look-up a
stored run's summary needs: light (DuckDB only, no polars or numpy), so that `bufferlab run` of a
run the store already has answers at once. DuckDB itself is imported only when there is a store
file to read: a run into a new store needs it only once simulated."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import SCHEMA_VERSION

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

__all__ = ["stored_counters", "check_run_id"]

# A run id: sha256 in hex (`pipeline.plan.run_identity`).
_RUN_ID = re.compile(r"[0-9a-f]{64}")


def check_run_id(run_id: str) -> str:
    """`run_id` if it is one (64 hex digits), safe to write into SQL as a literal: DuckDB's Python
    client imports pandas to convert any bound parameter, which costs more than a whole look-up."""
    if not _RUN_ID.fullmatch(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    return run_id


def _records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def stored_counters(db: str | Path, run_id: str) -> dict[str, Any] | None:
    """The stored counters of a complete run in the shape of the engine's RunResult (without
    series): the rows of the `flows` and `channels` tables (the engine's columns, flows with their
    endpoints' names, and the summary columns). None if the store does not have it. A store of
    another schema version goes through `Results`, which migrates an older one and refuses a
    newer one."""
    import duckdb

    from .connection import connect

    where = f"WHERE run_id = '{check_run_id(run_id)}'"
    con = connect(Path(db), read_only=True)
    try:
        try:
            version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.CatalogException:  # an empty file, or not a store: `Results` says which
            version = None
        if version is None or int(version[0]) != SCHEMA_VERSION:
            con.close()
            from .reader import Results

            return Results(db).counters(run_id)
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
