"""Reading a result store: `bufferlab.load(db)` and what `bufferlab results` prints.

    >>> import bufferlab
    >>> res = bufferlab.load("results/bufferlab.duckdb")
    >>> res.runs                                   # polars DataFrame, one row per run
    >>> res.flow_metrics.filter(pl.col("run_id") == res.run_id("3fa2"))
    >>> res.timeseries("3fa2", flows=["flow_0"]).to_pandas()
    >>> res.monitor("3fa2", link="btl")            # seed 000's middlebox table
    >>> res.write_pcap("3fa2", "x.pcap", link="btl")

Every table is a polars DataFrame (``.to_pandas()`` converts). The store is opened read-only, so
any number of readers may look at it while no run is being written; a store of an older schema
is migrated first (see `store`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

from ..analysis import monitor, pcap
from .writer import (CAPTURE_COLUMNS, DEFAULT_DB, SCHEMA_VERSION, TABLES, Store, StoreError,
                    check_schema_version, stored_schema_version)

__all__ = ["Results", "load"]

# Tables a user may read or export by name.
PUBLIC_TABLES = tuple(t for t in TABLES if t != "meta")


class Results:
    """A read-only view of a result store. Use as a context manager, or call `close()`."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError("--db", f"no store at {self.path}")
        self.con = duckdb.connect(str(self.path), read_only=True)
        version = stored_schema_version(self.con)
        check_schema_version(version, self.path)
        if version != SCHEMA_VERSION:
            # An older store: migrate it once (read-write), then read it.
            self.con.close()
            Store(self.path).close()
            self.con = duckdb.connect(str(self.path), read_only=True)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tables ---------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Any SQL over the store's tables, as a DataFrame."""
        return self.con.execute(sql, list(params or [])).pl()

    def table(self, name: str, run: str | None = None) -> pl.DataFrame:
        """A whole table, or its rows of one run (a run id or a unique prefix of one)."""
        if name not in PUBLIC_TABLES:
            raise StoreError("--table", f'unknown table "{name}" (known: {", ".join(PUBLIC_TABLES)})')
        if run is None or name == "studies":
            return self.query(f"SELECT * FROM {name}")
        order = {"flows": "flow", "flow_metrics": "flow", "channels": "channel", "link_metrics": "channel",
                 "flow_timeseries": "flow, time_ns", "channel_timeseries": "channel, time_ns",
                 "captures": "capture, packet"}.get(name)
        suffix = f" ORDER BY {order}" if order else ""
        return self.query(f"SELECT * FROM {name} WHERE run_id = ?{suffix}", [self.run_id(run)])

    @property
    def runs(self) -> pl.DataFrame:
        return self.query("SELECT * FROM runs ORDER BY created_at, run_id")

    @property
    def studies(self) -> pl.DataFrame:
        return self.table("studies")

    @property
    def flows(self) -> pl.DataFrame:
        return self.query("SELECT * FROM flows ORDER BY run_id, flow")

    @property
    def channels(self) -> pl.DataFrame:
        return self.query("SELECT * FROM channels ORDER BY run_id, channel")

    @property
    def flow_metrics(self) -> pl.DataFrame:
        return self.query("SELECT * FROM flow_metrics ORDER BY run_id, flow")

    @property
    def link_metrics(self) -> pl.DataFrame:
        return self.query("SELECT * FROM link_metrics ORDER BY run_id, channel")

    @property
    def network_metrics(self) -> pl.DataFrame:
        return self.query("SELECT * FROM network_metrics ORDER BY run_id")

    def timeseries(self, run: str, *, kind: str = "flow", names: Sequence[str] | None = None,
                   flows: Sequence[str] | None = None) -> pl.DataFrame:
        """The time series of one run: ``kind="flow"`` (one row per flow and sample, with the flow's
        name) or ``kind="channel"``; `names` (or `flows`) keeps only those flows or channels."""
        if kind not in ("flow", "channel"):
            raise StoreError("--kind", f'unknown kind "{kind}" (known: flow, channel)')
        run_id = self.run_id(run)
        entity = "flows" if kind == "flow" else "channels"
        frame = self.query(
            f"SELECT e.name, t.* FROM {kind}_timeseries t JOIN {entity} e ON e.run_id = t.run_id "
            f"AND e.{kind} = t.{kind} WHERE t.run_id = ? ORDER BY t.{kind}, t.time_ns", [run_id])
        wanted = names if names is not None else flows
        if wanted is not None:
            frame = frame.filter(pl.col("name").is_in(list(wanted)))
        return frame

    # --- runs -----------------------------------------------------------------------------

    def run_id(self, prefix: str) -> str:
        """The full id of the run whose id starts with `prefix`; an error if none or several do."""
        rows = self.con.execute("SELECT run_id FROM runs WHERE starts_with(run_id, ?) ORDER BY run_id",
                                [prefix]).fetchall()
        if not rows:
            raise StoreError("RUN", f'no run "{prefix}" in {self.path}')
        if len(rows) > 1:
            raise StoreError("RUN", f'"{prefix}" is the start of {len(rows)} run ids; give more of it')
        return str(rows[0][0])

    def spec(self, run: str) -> dict[str, Any]:
        """The engine spec a run ran (nodes, links, flows by index)."""
        row = self.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [self.run_id(run)]).fetchone()
        assert row is not None
        spec: dict[str, Any] = json.loads(row[0])
        return spec

    def user_spec(self, run: str) -> dict[str, Any]:
        """The spec of a run as its user wrote it (units as text), e.g. ``{"topology": {"queue": "18p"}}``."""
        row = self.con.execute("SELECT user_spec_json FROM runs WHERE run_id = ?", [self.run_id(run)]).fetchone()
        assert row is not None
        spec: dict[str, Any] = json.loads(row[0]) if row[0] else {}
        return spec

    def bottleneck(self, run: str) -> str | None:
        """The channel name of a run's bottleneck (the link metrics' `bottleneck` row), or None."""
        row = self.con.execute("SELECT name FROM link_metrics WHERE run_id = ? AND bottleneck",
                               [self.run_id(run)]).fetchone()
        return None if row is None else str(row[0])

    def capture(self, run: str, *, link: str, direction: str = "forward") -> dict[str, Any]:
        """The packets captured on `<link>_<direction>` of a run, as numpy columns."""
        run_id = self.run_id(run)
        channel = f"{link}_{direction}"
        row = self.con.execute("SELECT channel FROM channels WHERE run_id = ? AND name = ?",
                               [run_id, channel]).fetchone()
        if row is None:
            raise StoreError("--link", f'run {run_id[:12]} has no link direction "{channel}"')
        captured = self.con.execute(
            "SELECT DISTINCT c.name FROM captures p JOIN channels c ON c.run_id = p.run_id AND c.channel = p.channel "
            "WHERE p.run_id = ? ORDER BY 1", [run_id]).fetchall()
        if channel not in {name for (name,) in captured}:
            known = ", ".join(name for (name,) in captured) or "none"
            raise StoreError("--link", f'run {run_id[:12]} has no capture of "{channel}" (captured: {known}); '
                                       'add [[captures]] to the spec')
        columns = ", ".join(CAPTURE_COLUMNS)
        arrays = self.con.execute(f"SELECT {columns} FROM captures WHERE run_id = ? AND channel = ? ORDER BY packet",
                                  [run_id, row[0]]).fetchnumpy()
        capture: dict[str, Any] = {name: np.asarray(arrays[name]) for name in CAPTURE_COLUMNS}
        capture["sack"] = np.stack([capture.pop(f"sack{k}_{edge}") for k in (1, 2, 3) for edge in ("start", "end")],
                                   axis=1) if len(capture["time_ns"]) else np.zeros((0, 6), dtype=np.uint64)
        capture["channel"] = int(row[0])
        return capture

    def flow_names(self, run: str) -> list[str]:
        """Names of every flow of a run, listed and generated, by index."""
        return [str(name) for (name,) in self.con.execute(
            "SELECT name FROM flows WHERE run_id = ? ORDER BY flow", [self.run_id(run)]).fetchall()]

    def packet_flows(self, run: str) -> list[dict[str, Any]]:
        """Every flow of a run as packet export needs it (`pcap.flow_descriptions`)."""
        run_id = self.run_id(run)
        cursor = self.con.execute("SELECT src_node, dst_node, generator FROM flows WHERE run_id = ? ORDER BY flow",
                                  [run_id])
        names = [d[0] for d in cursor.description]
        records = [dict(zip(names, row)) for row in cursor.fetchall()]
        return pcap.flow_descriptions(self.spec(run_id), records)

    def monitor(self, run: str, *, link: str, direction: str = "forward",
                split_bytes: int = monitor.DEFAULT_SPLIT_BYTES) -> pl.DataFrame:
        """Seed 000's middlebox table for the captured link direction (see `monitor`)."""
        return monitor.middlebox_flows(self.capture(run, link=link, direction=direction), self.flow_names(run),
                                       split_bytes=split_bytes)

    def write_pcap(self, run: str, path: str | Path, *, link: str, direction: str = "forward",
                   full_payload: bool = False) -> int:
        """Write the captured link direction as a pcap file; returns the packets written."""
        capture = self.capture(run, link=link, direction=direction)
        return pcap.write_pcap(path, capture, self.packet_flows(run), full_payload=full_payload)

    def write_capture_csv(self, run: str, path: str | Path, *, link: str, direction: str = "forward",
                          header: bool = True) -> int:
        """Write the captured link direction as CSV with seed 000's tshark fields."""
        capture = self.capture(run, link=link, direction=direction)
        return monitor.capture_csv(path, capture, self.packet_flows(run), header=header)


def load(db: str | Path = DEFAULT_DB) -> Results:
    """Open a result store for reading: tables as polars DataFrames (see `Results`)."""
    return Results(db)


def export_frame(frame: pl.DataFrame, path: str | Path, fmt: str) -> None:
    """Write a DataFrame as Parquet or CSV."""
    if fmt == "parquet":
        frame.write_parquet(path)
    elif fmt == "csv":
        frame.write_csv(path)
    else:
        raise StoreError("--format", f'unknown format "{fmt}" (known: parquet, csv)')
