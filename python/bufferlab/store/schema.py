"""The bottom of the store: which schema version this bufferlab writes, where a store is unless
told, what a run id looks like, the store's error, and the version a store file records.

Everything here is shared by the store's other modules and imports none of them. It is light
(no DuckDB, polars or numpy, nor the engine): the command line's options read `DEFAULT_DB`, and a
stored run's look-up (`counters`) reads `SCHEMA_VERSION`, before anything heavy is loaded. The
tables themselves are `tables`, which needs the engine's columns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

__all__ = ["DEFAULT_DB", "SCHEMA_VERSION", "StoreError", "check_run_id", "check_schema_version",
           "stored_schema_version"]

# Where results go unless --db (or a `db` argument) says otherwise.
DEFAULT_DB = Path("results") / "bufferlab.duckdb"
# 1: runs, flows, channels, series, captures. 2: studies, spec hash, metric tables, new series
# and counters (one-way delay, IDT EWMA, min RTT, sojourn/busy per channel, recovery episodes).
# 3: sweeps: study kind, sweep spec and axes; study_points.
# 4: the sub-buffers of split queues (SplitBuff): queue_classes, class_timeseries.
# 5: runs.run, a run's number in its store; the run tables keyed by it (`<table>_data`) and read
#    through views that join the run id back.
# 6: the engine's input under the scenario's keys (`runs.spec_json`: `duration`, not `duration_ns`);
#    channels.dropped_aqm_packets/_bytes, the drops of an AQM apart from the tail drops (NULL in
#    the runs of older stores, which had no AQM).
# 7: ECN (RFC 3168): channels.ce_marked_packets/_bytes, the AQM's CE marks instead of drops;
#    flows.ce_received and flows.ecn_responses; the metrics total_ce_marks_l2,
#    total_ce_received_l4 and total_ecn_responses_l4 (NULL in the runs of older stores, which had
#    no ECN: the rebuild copies the older columns by name).
# 8: delay distributions: the table delay_histograms (a channel's sojourn times, a datagram flow's
#    one-way delays, as non-empty buckets) and the metrics p50/p95/p99_qdisc_delay_l2 and
#    p50/p95/p99_one_way_delay_l3 (the runs of older stores have no rows and NULL metrics: their
#    engine kept no distribution).
# 9: what the AQMs and ECN controllers do over time: channel_timeseries.aqm_probability,
#    aqm_signal, aqm_state, aqm_count (the queue discipline's controller, NULL where it keeps no
#    such quantity), ce_marks and aqm_drops (cumulative); flow_timeseries.ecn_alpha (DCTCP's α,
#    NULL for a controller without one); queue_classes.ce_marked_packets/_bytes and
#    class_timeseries.ce_marked_packets (DualPI2's marks per queue). NULL in the runs of older
#    stores, whose engine sampled none of them.
# 10: the engine's input lists each distinct TCP option set, QUIC option set and queue once
#    (`runs.spec_json`: `tcp_options`, `quic_options`, `queues`), and flows and links refer to
#    them by index; the older runs' specs are rewritten so, under the ids they were stored with.
# 11: flows.raising_reductions, the fast recoveries whose reduction left ssthresh above the
#    window the flow had at the loss (RFC 5681's FlightSize counting SACKed data); NULL in the runs
#    of older stores, whose engine did not count them.
SCHEMA_VERSION = 11


class StoreError(SpecError):
    """A store this bufferlab cannot use (newer schema, unknown run): ``--db: reason``."""


# A run id: sha256 in hex (`pipeline.plan.run_identity`).
_RUN_ID = re.compile(r"[0-9a-f]{64}")


def check_run_id(run_id: str) -> str:
    """`run_id` if it is one (64 hex digits), safe to write into SQL as a literal: DuckDB's Python
    client imports pandas to convert any bound parameter, which costs more than a whole look-up."""
    if not _RUN_ID.fullmatch(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    return run_id


def check_schema_version(version: int | None, path: Path) -> None:
    """Refuse a store written by a newer bufferlab."""
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError("--db", f"{path} has store schema version {version}, newer than this bufferlab's "
                                 f"({SCHEMA_VERSION}): upgrade bufferlab to read it")


def _existing_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The tables of the store `con` is using (its current database)."""
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
    is slow, so a new store is recognised by its file holding nothing (`_holds_nothing`),
    any other by reading `meta`; only a file that has something but no `meta` lists the tables."""
    import duckdb  # loaded already: `con` is its connection

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
