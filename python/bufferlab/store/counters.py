"""The raw counters of a run as stored (tables `flows` and `channels`), and the one look-up a
stored run's summary needs: light (DuckDB only, no polars or numpy), so that `bufferlab run` of a
run the store already has answers at once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from . import SCHEMA_VERSION
from .connection import connect

__all__ = ["FLOW_COUNTERS", "FLOW_DERIVED", "CHANNEL_COUNTERS", "CHANNEL_DERIVED", "RENAMED_COLUMNS",
           "stored_counters"]

# Raw counters, in the order and with the names of result.rs (FlowRecord, ChannelRecord).
FLOW_COUNTERS: dict[str, str] = {
    "name": "VARCHAR", "start_ns": "UBIGINT", "established_ns": "UBIGINT", "completed_ns": "UBIGINT",
    "app_bytes_written": "UBIGINT", "bytes_acked": "UBIGINT", "bytes_delivered": "UBIGINT",
    "segments_sent": "UBIGINT", "payload_bytes_sent": "UBIGINT", "segments_retransmitted": "UBIGINT",
    "rtos": "UBIGINT", "recoveries": "UBIGINT", "recovery_episodes": "UBIGINT", "recovery_time_ns": "UBIGINT",
    "acks_sent": "UBIGINT", "rtt_samples": "UBIGINT", "rtt_sum_ns": "UBIGINT", "min_rtt_ns": "UBIGINT",
    "final_srtt_ns": "UBIGINT", "final_cwnd_bytes": "UBIGINT", "delivery_delay_byte_ns": "HUGEINT",
    "path": "UINTEGER[]",
    # End hosts by node index; for a flow a traffic generator created, the generator's index in the
    # engine spec and, for a closed-loop user's transfer, the user.
    "src_node": "UINTEGER", "dst_node": "UINTEGER", "generator": "UINTEGER", "user": "UINTEGER",
}
FLOW_DERIVED: dict[str, str] = {
    "src": "VARCHAR", "dst": "VARCHAR", "goodput_bps": "DOUBLE", "loss_rate": "DOUBLE",
    "mean_srtt_ns": "DOUBLE", "completion_time_ns": "UBIGINT",
}
# `from`/`to` are SQL keywords: stored as from_node/to_node.
CHANNEL_COUNTERS: dict[str, str] = {
    "name": "VARCHAR", "link": "UINTEGER", "from_node": "UINTEGER", "to_node": "UINTEGER",
    "rate_bps": "UBIGINT", "shaping_rate_bps": "UBIGINT", "delay_ns": "UBIGINT",
    "offered_packets": "UBIGINT", "offered_bytes": "UBIGINT", "sent_packets": "UBIGINT",
    "sent_bytes": "UBIGINT", "delivered_packets": "UBIGINT", "delivered_bytes": "UBIGINT",
    "dropped_queue_packets": "UBIGINT", "dropped_queue_bytes": "UBIGINT",
    "dropped_loss_packets": "UBIGINT", "dropped_loss_bytes": "UBIGINT",
    "queued_end_packets": "UBIGINT", "queued_end_bytes": "UBIGINT",
    "transmitting_end_packets": "UBIGINT", "transmitting_end_bytes": "UBIGINT",
    "propagating_end_packets": "UBIGINT", "propagating_end_bytes": "UBIGINT",
    "busy_ns": "UBIGINT", "sojourn_sum_ns": "UBIGINT", "max_queue_packets": "UBIGINT",
    "max_queue_bytes": "UBIGINT", "queue_packet_ns": "HUGEINT", "queue_byte_ns": "HUGEINT",
}
CHANNEL_DERIVED: dict[str, str] = {
    "direction": "VARCHAR", "utilisation": "DOUBLE", "mean_queue_packets": "DOUBLE", "mean_sojourn_ns": "DOUBLE",
}
RENAMED_COLUMNS = {"from_node": "from", "to_node": "to"}

# A run id: sha256 in hex (`pipeline.plan.run_identity`).
_RUN_ID = re.compile(r"[0-9a-f]{64}")


def stored_counters(db: str | Path, run_id: str) -> dict[str, Any] | None:
    """The stored counters of a complete run in the shape of the engine's RunResult (without
    series); None if the store does not have it. A store of another schema version goes through
    `Results`, which migrates an older one and refuses a newer one.

    The run id is checked to be hex and written into the SQL: DuckDB's Python client imports
    pandas to convert any bound parameter, which would cost more than the whole look-up."""
    if not _RUN_ID.fullmatch(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    flow_cols = [*FLOW_COUNTERS, "src", "dst"]
    chan_cols = list(CHANNEL_COUNTERS)
    where = f"WHERE run_id = '{run_id}'"
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
        flows = con.execute(f"SELECT {', '.join(flow_cols)} FROM flows {where} ORDER BY flow").fetchall()
        channels = con.execute(f"SELECT {', '.join(chan_cols)} FROM channels {where} ORDER BY channel").fetchall()
    finally:
        con.close()
    return {
        **dict(zip(("engine_version", "end_ns", "events", "wall_time_s", "seed"), run)),
        "flows": [dict(zip(flow_cols, row)) for row in flows],
        "channels": [{RENAMED_COLUMNS.get(c, c): v for c, v in zip(chan_cols, row)} for row in channels],
    }
