"""The result store: one DuckDB file (default ``results/bufferlab.duckdb``).

A run is identified by ``sha256(canonical engine-spec JSON + "\\n" + engine version)``, so the same
scenario on the same engine is simulated once and then served from the store. A run is written in
one transaction: it is there completely, or not at all.

Tables (one row per ...):
  runs                 run: identity, specs (engine and user level), seed, engine version, timing
  flows                flow of a run: the engine's raw per-flow counters + summary columns
  channels             link direction of a run: raw counters + summary columns
  flow_timeseries      flow x sample: cwnd, ssthresh, in flight, srtt, cumulative bytes, pacing
                       rate, controller state, delivery rate
  channel_timeseries   channel x sample: queue length, cumulative bytes sent and drops
  captures             captured packet (only for runs with captures in their spec)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from . import summary as metrics

__all__ = ["Store", "StoredRun", "run_identity", "DEFAULT_DB", "SCHEMA_VERSION"]

DEFAULT_DB = Path("results") / "bufferlab.duckdb"
SCHEMA_VERSION = 1


def run_identity(engine_spec_json: str, engine_version: str) -> str:
    """The run id: what ran (canonical engine spec) on which engine."""
    return hashlib.sha256(f"{engine_spec_json}\n{engine_version}".encode()).hexdigest()


# Raw counters, in the order and with the names of result.rs (FlowRecord, ChannelRecord).
FLOW_COUNTERS: dict[str, str] = {
    "name": "VARCHAR", "start_ns": "UBIGINT", "established_ns": "UBIGINT", "completed_ns": "UBIGINT",
    "app_bytes_written": "UBIGINT", "bytes_acked": "UBIGINT", "bytes_delivered": "UBIGINT",
    "segments_sent": "UBIGINT", "payload_bytes_sent": "UBIGINT", "segments_retransmitted": "UBIGINT",
    "rtos": "UBIGINT", "recoveries": "UBIGINT", "recovery_time_ns": "UBIGINT", "acks_sent": "UBIGINT",
    "rtt_samples": "UBIGINT", "rtt_sum_ns": "UBIGINT", "min_rtt_ns": "UBIGINT",
    "final_srtt_ns": "UBIGINT", "final_cwnd_bytes": "UBIGINT",
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
    "rate_bps": "UBIGINT", "delay_ns": "UBIGINT",
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
_RENAMED = {"from_node": "from", "to_node": "to"}

FLOW_SERIES = ("cwnd_bytes", "ssthresh_bytes", "in_flight_bytes", "srtt_ns", "acked_bytes",
               "delivered_bytes", "sent_bytes", "pacing_rate_bps", "cc_state", "delivery_rate_bps")
# Channel series as named in TimeSeries -> column name.
CHANNEL_SERIES = {"queue_packets": "queue_packets", "queue_bytes": "queue_bytes",
                  "channel_sent_bytes": "sent_bytes", "channel_drops": "drops"}
CAPTURE_COLUMNS = {"time_ns": "UBIGINT", "flow": "UINTEGER", "is_data": "BOOLEAN", "flags": "UTINYINT",
                   "seq": "UBIGINT", "ack": "UBIGINT", "payload_bytes": "UINTEGER", "wire_bytes": "UINTEGER",
                   "retransmission": "BOOLEAN"}


def _utc_now() -> _dt.datetime:
    """Naive UTC (a TIMESTAMP column; TIMESTAMPTZ would make DuckDB's Python client need pytz)."""
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


def _columns(*groups: Mapping[str, str]) -> str:
    return ", ".join(f"{name} {kind}" for group in groups for name, kind in group.items())


SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, status VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
    name VARCHAR, engine_version VARCHAR NOT NULL, seed UBIGINT NOT NULL, duration_ns UBIGINT NOT NULL,
    end_ns UBIGINT NOT NULL, events UBIGINT NOT NULL, wall_time_s DOUBLE NOT NULL,
    spec_json VARCHAR NOT NULL, user_spec_json VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS flows (run_id VARCHAR NOT NULL, flow UINTEGER NOT NULL,
    {_columns(FLOW_COUNTERS, FLOW_DERIVED)});
CREATE TABLE IF NOT EXISTS channels (run_id VARCHAR NOT NULL, channel UINTEGER NOT NULL,
    {_columns(CHANNEL_COUNTERS, CHANNEL_DERIVED)});
CREATE TABLE IF NOT EXISTS flow_timeseries (run_id VARCHAR NOT NULL, flow UINTEGER NOT NULL,
    time_ns UBIGINT NOT NULL, {_columns({s: "UBIGINT" for s in FLOW_SERIES})});
CREATE TABLE IF NOT EXISTS channel_timeseries (run_id VARCHAR NOT NULL, channel UINTEGER NOT NULL,
    time_ns UBIGINT NOT NULL, {_columns({c: "UBIGINT" for c in CHANNEL_SERIES.values()})});
CREATE TABLE IF NOT EXISTS captures (run_id VARCHAR NOT NULL, capture UINTEGER NOT NULL,
    channel UINTEGER NOT NULL, packet UBIGINT NOT NULL, {_columns(CAPTURE_COLUMNS)});
"""

# Child tables, in the order they are written (and emptied on --force).
RUN_TABLES = ("flows", "channels", "flow_timeseries", "channel_timeseries", "captures")


@dataclass
class StoredRun:
    """Everything `Store.save` writes about one run."""

    run_id: str
    name: str | None
    seed: int
    duration_ns: int
    wall_time_s: float
    spec_json: str
    user_spec_json: str
    endpoints: Sequence[tuple[str, str]]
    result: Mapping[str, Any]


class Store:
    """A DuckDB result store. Use as a context manager; one writer process at a time."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = duckdb.connect(str(self.path))
        self.con.execute(SCHEMA)
        self.con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading --------------------------------------------------------------------------

    def has_run(self, run_id: str) -> bool:
        row = self.con.execute("SELECT count(*) FROM runs WHERE run_id = ? AND status = 'complete'",
                               [run_id]).fetchone()
        return bool(row and row[0])

    def run_row(self, run_id: str) -> dict[str, Any] | None:
        cursor = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cursor.description], row))

    def load_counters(self, run_id: str) -> dict[str, Any] | None:
        """The stored counters of a run in the shape of the engine's RunResult (without series)."""
        run = self.run_row(run_id)
        if run is None:
            return None
        flow_cols = [*FLOW_COUNTERS, "src", "dst"]
        chan_cols = list(CHANNEL_COUNTERS)
        flows = self.con.execute(f"SELECT {', '.join(flow_cols)} FROM flows WHERE run_id = ? ORDER BY flow",
                                 [run_id]).fetchall()
        channels = self.con.execute(
            f"SELECT {', '.join(chan_cols)} FROM channels WHERE run_id = ? ORDER BY channel", [run_id]).fetchall()
        return {
            "engine_version": run["engine_version"],
            "end_ns": run["end_ns"],
            "events": run["events"],
            "wall_time_s": run["wall_time_s"],
            "seed": run["seed"],
            "flows": [dict(zip(flow_cols, row)) for row in flows],
            "channels": [{_RENAMED.get(c, c): v for c, v in zip(chan_cols, row)} for row in channels],
        }

    # --- writing --------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def save(self, run: StoredRun, *, replace: bool = False) -> None:
        """Write one run atomically; with `replace`, an existing run of that id is replaced in
        the same transaction (so a failure keeps the old one)."""
        with self._transaction():
            if replace:
                self._delete(run.run_id)
            self._insert_run(run)
            self._insert_flows(run)
            self._insert_channels(run)
            self._insert_timeseries(run)
            self._insert_captures(run)

    def _delete(self, run_id: str) -> None:
        for table in (*RUN_TABLES, "runs"):
            self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    def _insert_run(self, run: StoredRun) -> None:
        r = run.result
        self.con.execute(
            "INSERT INTO runs VALUES (?, 'complete', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run.run_id, _utc_now(), run.name, r["engine_version"], run.seed,
             run.duration_ns, r["end_ns"], r["events"], run.wall_time_s, run.spec_json, run.user_spec_json])

    def _insert_rows(self, table: str, run_id: str, rows: list[list[Any]], types: list[str]) -> None:
        if rows:
            self._insert_columns(table, [run_id], [list(col) for col in zip(*rows)], types)

    def _insert_flows(self, run: StoredRun) -> None:
        end_ns = run.result["end_ns"]
        rows = []
        for i, flow in enumerate(run.result["flows"]):
            src, dst = run.endpoints[i]
            derived = [src, dst, metrics.goodput_bps(flow, end_ns), metrics.loss_rate(flow),
                       metrics.mean_srtt_ns(flow), metrics.completion_time_ns(flow)]
            rows.append([i, *(flow[c] for c in FLOW_COUNTERS), *derived])
        self._insert_rows("flows", run.run_id, rows,
                          ["UINTEGER", *FLOW_COUNTERS.values(), *FLOW_DERIVED.values()])

    def _insert_channels(self, run: StoredRun) -> None:
        end_ns = run.result["end_ns"]
        rows = []
        for i, ch in enumerate(run.result["channels"]):
            direction = "forward" if ch["name"].endswith("_forward") else "backward"
            derived = [direction, metrics.utilisation(ch, end_ns), metrics.mean_queue_packets(ch, end_ns),
                       metrics.mean_sojourn_ns(ch)]
            rows.append([i, *(ch[_RENAMED.get(c, c)] for c in CHANNEL_COUNTERS), *derived])
        self._insert_rows("channels", run.run_id, rows,
                          ["UINTEGER", *CHANNEL_COUNTERS.values(), *CHANNEL_DERIVED.values()])

    def _insert_columns(self, table: str, key: list[Any], columns: list[list[Any]], types: list[str]) -> None:
        """Insert equally long columns as rows, in one statement (DuckDB zips parallel unnests).

        Each column travels as one JSON text cast to a typed list inside DuckDB: handing DuckDB a
        Python list makes its client inspect every element. (Long columns arrive as numpy arrays
        and go through `_insert_frame` instead.)
        """
        if not columns or not columns[0]:
            return
        keys = ", ".join("?" * len(key))
        unnests = ", ".join(f"unnest(CAST(?::VARCHAR AS {t}[]))" for t in types)
        texts = [json.dumps(list(column), separators=(",", ":")) for column in columns]
        self.con.execute(f"INSERT INTO {table} SELECT {keys}, {unnests}", [*key, *texts])

    def _insert_frame(self, table: str, run_id: str, columns: dict[str, np.ndarray]) -> None:
        """Insert equally long numpy columns as rows of `table` (after its run_id), in one
        statement: DuckDB scans the arrays in place."""
        if not len(next(iter(columns.values()))):
            return
        self.con.register("_frame", columns)
        try:
            names = ", ".join(columns)
            self.con.execute(f"INSERT INTO {table} (run_id, {names}) SELECT ?, {names} FROM _frame", [run_id])
        finally:
            self.con.unregister("_frame")

    def _insert_timeseries(self, run: StoredRun) -> None:
        ts = run.result.get("timeseries")
        if not ts:
            return
        time = ts["time_ns"]
        for table, key, series in (("flow_timeseries", "flow", dict(zip(FLOW_SERIES, FLOW_SERIES))),
                                   ("channel_timeseries", "channel", CHANNEL_SERIES)):
            entities = ts[next(iter(series))].shape[0]
            columns = {key: np.repeat(np.arange(entities, dtype=np.uint32), len(time)),
                       "time_ns": np.tile(time, entities)}
            columns.update({column: ts[name].ravel() for name, column in series.items()})
            self._insert_frame(table, run.run_id, columns)

    def _insert_captures(self, run: StoredRun) -> None:
        for i, cap in enumerate(run.result.get("captures") or []):
            n = len(cap["time_ns"])
            columns = {"capture": np.full(n, i, dtype=np.uint32), "channel": np.full(n, cap["channel"], dtype=np.uint32),
                       "packet": np.arange(n, dtype=np.uint64)}
            columns.update({c: cap[c] for c in CAPTURE_COLUMNS})
            self._insert_frame("captures", run.run_id, columns)

    # --- comparing ------------------------------------------------------------------------

    def table_rows(self, table: str, run_id: str) -> list[tuple[Any, ...]]:
        """Every row of `table` for a run, in a stable order (for determinism checks)."""
        cursor = self.con.execute(f"SELECT * FROM {table} WHERE run_id = ?", [run_id])
        return sorted(cursor.fetchall(), key=repr)

    def run_ids(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT run_id FROM runs ORDER BY created_at").fetchall()]

