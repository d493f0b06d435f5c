"""The store's tables: their columns and types, how a run's rows are keyed, and the script that
makes a new store (`NEW_STORE_SCHEMA`). The engine's tables take their columns from the engine
(`pipeline.columns`), the metric tables theirs from the metric catalogue (`analysis.catalogue`),
both data only: no DuckDB, polars or numpy is imported here.

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
                       bytes and one-way delay, pacing rate, controller state, delivery rate, and
                       ecn_alpha (DCTCP's α, the fraction of bytes it estimates marked; NULL for a
                       controller that keeps none)
  channel_timeseries   channel x sample: queue length, cumulative bytes/packets sent, drops, sojourn,
                       busy, CE marks (ce_marks) and AQM drops (aqm_drops; drops − aqm_drops are
                       tail drops and the link's random losses), and the AQM's controller
                       (aqm_probability, aqm_signal, aqm_state, aqm_count: what each holds for
                       each queue discipline is in its notes; NULL where the discipline keeps no
                       such quantity)
  captures             captured packet (only for runs with captures in their spec)
  queue_classes        sub-buffer of a split queue (SplitBuff; DualPI2's L and C queues): enqueued,
                       dropped, sent, sojourn, limit, RTTP, CE marks
  class_timeseries     sub-buffer x sample: length, limit, cumulative counts (CE marks among them),
                       T_B, RTTP estimate, threshold
  delay_histograms     non-empty bucket of a delay distribution: subject ('channel': the sojourn times
                       of the packets a link direction sent; 'flow': a datagram flow's one-way delays,
                       send to arrival), id (the channel or flow), the values it holds [lower_ns,
                       upper_ns] (inclusive; log-linear buckets at most 1/32 of lower_ns wide, the
                       first and last narrowed to the exact smallest and largest value) and count

The tables of many rows per run, a row per sample, captured packet or bucket (`NUMBERED_TABLES`), are
stored as ``<table>_data`` (`stored_table`), which keys its rows by the run's number (`runs.run`,
a UINTEGER the writer allocates) instead of its 64-character id, and are read through a view of
the table's own name that joins the run id back (schema version 5): every query, the `Results`
API's, the report's and a user's SQL alike, reads ``flow_timeseries`` with its ``run_id``, and
the write does not copy the id into each of a run's rows (for a run's series, the id would be
most of its transaction's storage). Run
numbers are unique because a store has one writer at a time (the file's lock,
`store.connection`): the writer takes the next one, ``max(run) + 1``, inside the transaction that
writes the run. A run replaced with ``--force`` gets a new number.

Reads: `Results._rows_of_run`.

The schema version (`schema.SCHEMA_VERSION`) is kept in ``meta``. A store of an older version is
rebuilt in the current schema (`store.migration`: a copy that replaces the file once complete, so
that a migration killed midway leaves the older store as it was); a store written by a newer
bufferlab is refused with a clear error (`schema.check_schema_version`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis import catalogue
from ..pipeline.columns import stored_column_types
from .schema import SCHEMA_VERSION

__all__ = ["AQM_COLUMNS", "KEYS", "TABLES", "RUN_TABLES", "NUMBERED_TABLES", "RUN_LENGTH_COLUMNS", "NEW_STORE_SCHEMA", "duckdb_type",
           "stored_table", "run_key"]

# The columns that identify a row of a run's table (after its run_id): never null, and the
# order rows are read back in.
KEYS: dict[str, tuple[str, ...]] = {
    "flows": ("flow",), "channels": ("channel",), "queue_classes": ("channel", "sub_buffer"),
    "flow_timeseries": ("flow", "time_ns"), "channel_timeseries": ("channel", "time_ns"),
    "class_timeseries": ("channel", "sub_buffer", "time_ns"), "captures": ("capture", "channel", "packet"),
    "flow_metrics": ("flow",), "link_metrics": ("channel",), "delay_histograms": ("subject", "id", "lower_ns"),
}

# What each column of the AQM's controller in channel_timeseries holds, by queue discipline (the
# engine's `queue::AqmState`); a discipline not listed (FIFO, TBF, SplitBuff) has NULL in all four.
AQM_COLUMNS: dict[str, dict[str, str]] = {
    "aqm_probability": {
        "red": "p_b at the average queue for a packet of the mean size (Floyd and Jacobson's eq. 2; gentle above "
               "max_th)",
        "pie": "drop_prob (RFC 8033 §4.2)",
        "dualpi2": "p', the base probability (RFC 9332: p_C = p'², p_L = min(k·p', 1) besides the L queue's step)",
        "fq_pie": "the largest drop_prob among the flow queues",
    },
    "aqm_signal": {
        "red": "the average queue, in the thresholds' unit (packets, or bytes in byte mode)",
        "pie": "the queueing-delay estimate, ns",
        "dualpi2": "the queueing delay at the last update, ns",
        "fq_pie": "the largest queueing-delay estimate among the flow queues, ns",
    },
    "aqm_state": {
        "codel": "1 in the dropping state, else 0 (RFC 8289 §5.5)",
        "fq_codel": "flow queues in the dropping state",
    },
    "aqm_count": {
        "red": "packets admitted since the last early drop or mark (count)",
        "codel": "the control law's count (kept after the dropping state ends)",
        "fq_codel": "the largest count among the flow queues in the dropping state (0 when none)",
    },
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
    # Version 8: the delay distributions (the percentile metrics' buckets).
    "delay_histograms": _ENGINE["delay_histograms"],
    # Version 9 appended the AQM's controller, CE marks and AQM drops to channel_timeseries,
    # DCTCP's α to flow_timeseries and CE marks to queue_classes and class_timeseries.
}

# Child tables of a run, in the order they are written (and emptied on --force).
RUN_TABLES = ("flows", "channels", "flow_metrics", "link_metrics", "network_metrics", "flow_timeseries",
              "channel_timeseries", "captures", "queue_classes", "class_timeseries", "delay_histograms")
# The run tables of many rows per run, stored keyed by the run's number and read through a view
# (see the module docstring). The others hold a row per flow or link direction: keyed by number
# too, even 10,000 flows' would be inserted barely faster, for less than their six views would
# cost a new store's schema.
NUMBERED_TABLES = ("flow_timeseries", "channel_timeseries", "captures", "class_timeseries", "delay_histograms")
# The columns of the numbered tables whose values come in long runs, stored run-length encoded
# (DuckDB's ``USING COMPRESSION rle``; a column that is constant over a segment is still stored
# as one constant): a run's keys, sorted, in runs of a flow's or channel's samples; the run's
# number; a flow's minimum RTT, which only falls, and its ssthresh, which changes at a loss; a
# channel's drop count, which changes only while the channel drops. DuckDB otherwise weighs every
# encoding for every column at each commit's checkpoint, bit-packing included, by running each
# over the column's values (`ColumnDataCheckpointer::DetectBestCompressionMethod`), and chose RLE
# or a constant for these in every scenario but one column of one (ssthresh in
# shallow_buffers.toml, of the same store size at 64 kB blocks). Told the encoding, it runs that
# one alone, a shorter commit for the same store size (`bench_pipeline.py --write-steps` times
# it). The other columns are left to DuckDB: their queue lengths and states are constant or in
# runs on some links and not on others, which DuckDB's choice per segment follows (bit-packing
# told for all of them makes a slower write and a larger store).
# The values read back are the same whatever the encoding; a store made before keeps DuckDB's
# choice (a table's encodings are fixed when it is created).
RUN_LENGTH_COLUMNS: dict[str, tuple[str, ...]] = {
    "flow_timeseries": ("run", "flow", "min_rtt_ns", "ssthresh_bytes"),
    "channel_timeseries": ("run", "channel", "drops"),
    "captures": ("run", "capture", "channel"),
    "class_timeseries": ("run", "channel", "sub_buffer"),
    "delay_histograms": ("run", "id"),
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
# instead of sixteen, and `meta`'s first row a plain INSERT (INSERT OR REPLACE would check the
# key).
NEW_STORE_SCHEMA = ";\n".join([*(statement for table in TABLES for statement in _create_statements(table)),
                                f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}')"])
