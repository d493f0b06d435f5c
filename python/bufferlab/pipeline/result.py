"""A run's result in Python: the engine's Arrow tables as polars DataFrames.

The engine hands its result over as Arrow tables through the Arrow C stream interface
(crates/bufferlab-py/src/tables.rs names and types every column, once); polars takes each one
without copying a column. The tables, one row per ...:

    flows               flow: the engine's FlowRecord, with its index `flow`
    channels            link direction: ChannelRecord, with its index `channel`
    queue_classes       sub-buffer of a split queue (channel, sub_buffer): QueueClassRecord
    flow_timeseries     sampled flow x sample (flow, time_ns): cwnd, srtt, cumulative bytes, ...
    channel_timeseries  sampled channel x sample (channel, time_ns): queue length, drops, ...
    class_timeseries    sub-buffer x sample (channel, sub_buffer, time_ns)
    captures            captured packet (capture, channel, packet): time, flow, flags, seq, ...

and the run's scalars (engine version, simulated end, events, sampling interval). Rows come in
the engine's order: by index, then by sample time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .engine import core

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["EngineResult", "ENGINE_TABLES", "engine_schemas"]

# The engine's tables besides `run`, in the order the store writes them.
ENGINE_TABLES = ("flows", "channels", "queue_classes", "flow_timeseries", "channel_timeseries", "class_timeseries",
                 "captures")


@dataclass(frozen=True)
class EngineResult:
    """What the engine computed in one run (see the module docstring)."""

    engine_version: str
    end_ns: int
    # Scheduler events processed: the work done, not part of the result's content.
    events: int
    # The sampling interval; None when nothing was sampled (every time-series table is empty).
    sample_interval_ns: int | None
    flows: pl.DataFrame
    channels: pl.DataFrame
    queue_classes: pl.DataFrame
    flow_timeseries: pl.DataFrame
    channel_timeseries: pl.DataFrame
    class_timeseries: pl.DataFrame
    captures: pl.DataFrame

    @classmethod
    def from_engine(cls, tables: Mapping[str, Any]) -> EngineResult:
        """The result of `_core.run` (or `Run.finish`): Arrow tables by name, read by polars in place."""
        import polars as pl

        run = pl.DataFrame(tables["run"]).row(0, named=True)
        frames = {name: pl.DataFrame(tables[name]) for name in ENGINE_TABLES}
        return cls(engine_version=str(run["engine_version"]), end_ns=int(run["end_ns"]), events=int(run["events"]),
                   sample_interval_ns=run["sample_interval_ns"], **frames)

    def table(self, name: str) -> pl.DataFrame:
        """One of `ENGINE_TABLES` by name."""
        if name not in ENGINE_TABLES:
            raise KeyError(f"no engine table {name!r} (known: {', '.join(ENGINE_TABLES)})")
        frame: pl.DataFrame = getattr(self, name)
        return frame

    def equals(self, other: EngineResult) -> bool:
        """Whether `other` holds the same facts: every table and the scalars but the work done (events)."""
        return (self.engine_version, self.end_ns, self.sample_interval_ns) == (
            other.engine_version, other.end_ns, other.sample_interval_ns) and all(
            self.table(name).equals(other.table(name)) for name in ENGINE_TABLES)

    def counters(self) -> dict[str, Any]:
        """The run's counters as plain records, the shape the run summary reads (`analysis.summary`):
        engine_version, end_ns, events, and one dict per flow and per channel."""
        return {"engine_version": self.engine_version, "end_ns": self.end_ns, "events": self.events,
                "flows": self.flows.to_dicts(), "channels": self.channels.to_dicts()}


def engine_schemas() -> dict[str, pl.Schema]:
    """Every engine table's columns and types (the engine's definition), without running it."""
    import polars as pl

    empty = core().result_schemas()
    return {name: pl.DataFrame(empty[name]).schema for name in ENGINE_TABLES}

