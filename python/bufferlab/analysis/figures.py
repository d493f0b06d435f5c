"""The end-of-run figures of every flow and channel, taken from the engine's counters by
bufferlab-core's `metrics::figures` (through `_core.figures`): the one implementation of a flow's
goodput, loss rate, mean RTT sample, completion time and lifetime means, and of a channel's
service rate, utilisation, time-average queue and mean sojourn (as the metric catalogue,
crates/bufferlab-core/src/metrics/catalogue.rs, defines them); and the
choice of the bottleneck channel by those service rates where the spec names none.

The run summary (`analysis.summary`), derive's summary columns of the flow and channel tables
(`analysis.derive`) and the metric catalogue (`analysis.metrics`, whose `_core.catalogue` returns
the same figures with its tables) all read them from here. Loading this module loads neither
numpy nor polars: a stored run's summary is computed from its stored counters at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..pipeline.engine import core
from ..pipeline.result import column_names, record_values

__all__ = ["FlowFigures", "ChannelFigures", "slowest_busy_channel", "FLOW_FIGURE_COUNTERS", "CHANNEL_FIGURE_COUNTERS",
           "BOTTLENECK_COUNTERS", "FLOW_COUNTERS", "CHANNEL_COUNTERS", "engine_table", "figures_of"]

# The counters the figures read (`metrics::FlowFigures`, `metrics::ChannelFigures`), by table,
# with their Arrow types (the engine's), and those the catalogue reads besides. A table made
# from records for the figures alone holds only theirs: a stored run of 10,000 flows is
# summarised at start-up, and a flow's path (a list) costs as much to convert as the rest.
FLOW_FIGURE_COUNTERS: dict[str, str] = {
    **dict.fromkeys(("start_ns", "completed_ns", "app_bytes_written", "bytes_acked", "bytes_delivered",
                     "segments_sent", "payload_bytes_sent", "segments_retransmitted", "recovery_episodes",
                     "recovery_time_ns", "rtt_samples", "rtt_sum_ns"), "UInt64"),
    "delivery_delay_byte_ns": "Decimal128"}
CHANNEL_FIGURE_COUNTERS: dict[str, str] = {
    **dict.fromkeys(("rate_bps", "shaping_rate_bps", "sent_packets", "busy_ns", "sojourn_sum_ns"), "UInt64"),
    "queue_packet_ns": "Decimal128"}
# What the choice of the bottleneck reads (`slowest_busy_channel`).
BOTTLENECK_COUNTERS: dict[str, str] = dict.fromkeys(("rate_bps", "shaping_rate_bps", "sent_packets", "busy_ns"),
                                                    "UInt64")
FLOW_COUNTERS: dict[str, str] = {**FLOW_FIGURE_COUNTERS, **dict.fromkeys(("rtos", "min_rtt_ns"), "UInt64"),
                                 "path": "List(UInt32)"}
CHANNEL_COUNTERS: dict[str, str] = {
    **CHANNEL_FIGURE_COUNTERS, **dict.fromkeys(("offered_packets", "sent_bytes", "dropped_queue_packets",
                                                "dropped_aqm_packets", "ce_marked_packets", "dropped_loss_packets",
                                                "max_queue_packets"),
                                               "UInt64")}


def engine_table(name: str, table: Any, records: Sequence[Mapping[str, Any]] | None,
                 columns: Mapping[str, str]) -> Any:
    """An engine table (`_core.Table`) of what the figures and the catalogue read: `table` itself
    where it is one, a polars DataFrame of every column converted (through Arrow IPC), else the
    `records`' fields (a missing one null: the engine counts it 0)."""
    if table is not None and hasattr(table, "column_types"):
        return table
    if table is not None and set(columns) <= set(column_names(table)):
        return core().Table.from_ipc(name, table.write_ipc_stream(None).getvalue())
    records = records or []
    return core().Table.from_columns(name, [(column, kind, record_values(records, column))
                                            for column, kind in columns.items()])


def _figures(end_ns: int, *, flows: Any = None, channels: Any = None) -> dict[str, Any]:
    """`_core.figures` of the engine tables given (bufferlab-core's `metrics::figures`): the
    `flow_figures` of `flows` and the `channel_figures` of `channels`, each only if given."""
    result: dict[str, Any] = core().figures(end_ns, flows=flows, channels=channels)
    return result


def slowest_busy_channel(channels: Sequence[Mapping[str, Any]], table: Any = None) -> int | None:
    """The slowest rate-limited channel of `channels` (the engine's channel records; their
    counters read from `table` where given) that sent something, ties broken by the longest busy
    time, then the lower index; None if every channel is unlimited or idle
    (bufferlab-core's `metrics::slowest_busy_channel`)."""
    chosen: int | None = core().slowest_busy_channel(engine_table("channels", table, channels, BOTTLENECK_COUNTERS))
    return chosen


@dataclass(frozen=True)
class ChannelFigures:
    """Every channel's figures, one list each (None where the figure is undefined), taken for all
    channels at once by bufferlab-core's `metrics::ChannelFigures` (a 10,000-flow dumbbell has
    40,002 channels): the summary's bottleneck row, derive's channel table and the link table
    read the same numbers."""

    # The line rate, or a shaper's token rate below it (b/s); None for an unlimited channel.
    service_rate_bps: list[int | None]
    # Busy time over the run at line rate, scaled to the service rate.
    utilisation: list[float | None]
    # The queue's packet·ns integral over the run.
    mean_queue_packets: list[float | None]
    # Mean time a sent packet spent queued.
    mean_sojourn_ns: list[float | None]

    @classmethod
    def from_catalogue(cls, figures: Mapping[str, list[Any]]) -> ChannelFigures:
        return cls(service_rate_bps=figures["service_rate_bps"], utilisation=figures["utilisation"],
                   mean_queue_packets=figures["mean_queue_packets"], mean_sojourn_ns=figures["mean_sojourn_ns"])

    @classmethod
    def of(cls, channels: Sequence[Mapping[str, Any]], end_ns: int, table: Any = None) -> ChannelFigures:
        """The figures of `channels` (the engine's channel records) over a run of `end_ns`; its
        counters are read from `table` (the same channels as an engine table, or a DataFrame of
        every counter) where given."""
        computed = _figures(end_ns, channels=engine_table("channels", table, channels, CHANNEL_FIGURE_COUNTERS))
        return cls.from_catalogue(computed["channel_figures"])


@dataclass(frozen=True)
class FlowFigures:
    """Every flow's figures from its end-of-run counters (the summary's and the flow table's), one
    list each (None where undefined), taken for all flows at once by bufferlab-core's
    `metrics::FlowFigures`. A flow's lifetime runs from its start to its completion, or to the
    run's end."""

    lifetime_ns: list[int]
    # Bytes delivered in order × 8 over the lifetime (b/s).
    goodput_bps: list[float | None]
    # Retransmitted over transmitted segments (the catalogue's loss_rate_l4).
    loss_rate: list[float | None]
    # Mean of the RTT samples (rtt_sum / rtt_samples).
    mean_srtt_ns: list[float | None]
    # From the first SYN to the last byte and FIN acknowledged; None if the flow never completed.
    completion_time_ns: list[int | None]
    # The flow table's lifetime means (Mb/s): bytes x 8 over the lifetime in seconds.
    throughput_l4: list[float | None]
    throughput_l7: list[float | None]
    sending_rate_l4: list[float | None]
    sending_rate_l7: list[float | None]
    one_way_delay_ms: list[float | None]
    recovery_time_ms: list[float | None]
    lifetime_s: list[float]

    @classmethod
    def from_catalogue(cls, figures: Mapping[str, list[Any]]) -> FlowFigures:
        return cls(**{name: figures[name] for name in cls.__dataclass_fields__})

    @classmethod
    def of(cls, flows: Sequence[Mapping[str, Any]], end_ns: int, table: Any = None) -> FlowFigures:
        """The figures of `flows` (the engine's flow records) over a run of `end_ns`; counters are
        read from `table` (the same flows as an engine table, or a DataFrame of every counter)
        where given."""
        computed = _figures(end_ns, flows=engine_table("flows", table, flows, FLOW_FIGURE_COUNTERS))
        return cls.from_catalogue(computed["flow_figures"])


def figures_of(flows: Sequence[Mapping[str, Any]], channels: Sequence[Mapping[str, Any]],
               end_ns: int) -> tuple[FlowFigures, ChannelFigures]:
    """The figures of `flows` and of `channels` (the engine's records) over a run of `end_ns`,
    taken in one call: the same numbers as `FlowFigures.of` and `ChannelFigures.of`."""
    computed = _figures(end_ns, flows=engine_table("flows", None, flows, FLOW_FIGURE_COUNTERS),
                        channels=engine_table("channels", None, channels, CHANNEL_FIGURE_COUNTERS))
    return (FlowFigures.from_catalogue(computed["flow_figures"]),
            ChannelFigures.from_catalogue(computed["channel_figures"]))
