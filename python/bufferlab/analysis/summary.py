"""The run summary: a few textbook figures of each flow and of the bottleneck channel.

The engine records facts only (`RunResult`, crates/bufferlab-core/src/record/result.rs); the
figures are taken from its counters by bufferlab-core's `metrics::figures` (`analysis.figures`),
the same numbers as the metric catalogue's and derive's summary columns: a fresh run's summary
reads the figures derive took for the catalogue, a stored run's takes them from its stored
counters. Inputs are the JSON dicts of `FlowRecord` and `ChannelRecord`; outputs are plain
numbers in SI-ish display units (Mb/s, ms, s) or None when a figure is undefined (e.g. no RTT
sample yet, a flow that never completed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .figures import ChannelFigures, FlowFigures, figures_of, slowest_busy_channel

__all__ = [
    "FlowSummary",
    "BottleneckSummary",
    "RunSummary",
    "pick_bottleneck",
    "summarise_channel",
    "summarise",
    "notes_of",
    "notes_of_counts",
    "raising_reductions_note",
]

Record = Mapping[str, Any]


# --- the bottleneck ---------------------------------------------------------------------------------

def pick_bottleneck(channels: Sequence[Record], named: int | None = None, table: Any = None) -> int | None:
    """The channel to report as the bottleneck: the one named by the spec, else the slowest
    rate-limited channel that sent something, ties broken by the longest busy time (so a link's
    data direction wins over its ACK direction). None if every link is unlimited or idle.
    `table`: the same channels as an engine table, whose counters are read in place."""
    return named if named is not None else slowest_busy_channel(channels, table)


# --- the summary ----------------------------------------------------------------------------------

def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def _s(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def _mbps(bps: float | None) -> float | None:
    return None if bps is None else bps / 1e6


@dataclass
class FlowSummary:
    name: str
    src: str
    dst: str
    goodput_mbps: float | None
    loss_rate: float | None
    retransmissions: int
    rtos: int
    mean_srtt_ms: float | None
    completion_time_s: float | None
    bytes_delivered: int
    # Fast recoveries, and those whose reduction left ssthresh above the window in use (absent
    # from the flows of results stored before schema version 11: 0).
    recoveries: int = 0
    raising_reductions: int = 0


@dataclass
class BottleneckSummary:
    channel: str
    rate_mbps: float | None
    utilisation: float | None
    drops: int
    random_losses: int
    mean_queue_packets: float | None
    max_queue_packets: int
    mean_sojourn_ms: float | None
    # The queue as resolved from the spec, and how its size came about (a rule, a time).
    queue: str | None = None
    # Drops by the queue's AQM (CoDel), apart from `drops`, the tail drops of a full queue.
    aqm_drops: int = 0
    # Packets the AQM marked CE instead of dropping them (RFC 3168), not counted in the drops.
    ce_marks: int = 0


@dataclass
class RunSummary:
    run_id: str
    from_store: bool
    engine_version: str
    seed: int
    simulated_s: float
    wall_time_s: float
    events: int
    flows: list[FlowSummary]
    bottleneck: BottleneckSummary | None
    # What the reader should know to trust the figures (`notes_of`), one sentence each.
    notes: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


def raising_reductions_note(raised: int, recoveries: int, where: str) -> str:
    """The note on `raised` of `recoveries` fast recoveries (`where`: in which flows or runs) that
    set ssthresh above the window in use, raising it instead of reducing it. RFC 5681's FlightSize
    (SND.NXT − SND.UNA, `tcp.ssthresh_from`'s default) counts SACKed data: when an AQM drops
    retransmissions too, recoveries last several round trips and chain, and β·FlightSize exceeds
    the window (docs: engine, "The reduction's basis")."""
    return (f"{raised} of {recoveries} fast recoveries ({where}) set ssthresh above the window in use, raising it: "
            "RFC 5681's FlightSize (tcp.ssthresh_from = \"flight_size\", the default) counts SACKed data, and "
            "chained recoveries reduce from more than the window; tcp.ssthresh_from = \"cwnd\" (as Linux) reduces "
            "from the window itself (docs: engine, \"The reduction's basis\")")


def notes_of(flows: Sequence[FlowSummary]) -> list[str]:
    """What a run's counters say the reader should know before trusting its figures: the fast
    recoveries that raised a window (`raising_reductions_note`)."""
    return notes_of_counts(len(flows), sum(f.raising_reductions > 0 for f in flows), sum(f.recoveries for f in flows),
                           sum(f.raising_reductions for f in flows))


def notes_of_counts(flows: int, raising_flows: int, recoveries: int, raised: int) -> list[str]:
    """`notes_of` from a run's counts (`Results.recovery_counts` of a stored run): its flows,
    those whose recoveries raised a window, its fast recoveries, and those that raised one."""
    if not raised:
        return []
    return [raising_reductions_note(raised, recoveries, f"{raising_flows} of {flows} flows")]


def _flow_summaries(flows: Sequence[Record], endpoints: Sequence[tuple[str, str]],
                    figures: FlowFigures) -> list[FlowSummary]:
    """Each flow's summary from its counters and its figures (goodput, loss rate, mean srtt and
    completion time)."""
    return [FlowSummary(name=flow["name"], src=src, dst=dst, goodput_mbps=_mbps(goodput), loss_rate=loss,
                        retransmissions=int(flow["segments_retransmitted"]), rtos=int(flow["rtos"]),
                        mean_srtt_ms=_ms(srtt_ns), completion_time_s=_s(completion_ns),
                        bytes_delivered=int(flow["bytes_delivered"]), recoveries=int(flow.get("recoveries") or 0),
                        raising_reductions=int(flow.get("raising_reductions") or 0))
            for flow, (src, dst), goodput, loss, srtt_ns, completion_ns in zip(
                flows, endpoints, figures.goodput_bps, figures.loss_rate, figures.mean_srtt_ns,
                figures.completion_time_ns)]


def _channel_summary(channel: Record, figures: ChannelFigures, index: int, queue: str | None) -> BottleneckSummary:
    """A channel's summary from its counters and its figures (`figures`' channel `index`)."""
    return BottleneckSummary(
        channel=channel["name"],
        rate_mbps=_mbps(figures.service_rate_bps[index]),
        utilisation=figures.utilisation[index],
        drops=int(channel["dropped_queue_packets"]),
        random_losses=int(channel["dropped_loss_packets"]),
        mean_queue_packets=figures.mean_queue_packets[index],
        max_queue_packets=int(channel["max_queue_packets"]),
        mean_sojourn_ms=_ms(figures.mean_sojourn_ns[index]),
        queue=queue,
        # Absent from the channels of results stored before schema version 6.
        aqm_drops=int(channel.get("dropped_aqm_packets") or 0),
        # Absent from the channels of results stored before schema version 7.
        ce_marks=int(channel.get("ce_marked_packets") or 0),
    )


def summarise_channel(channel: Record, end_ns: int, queue: str | None = None) -> BottleneckSummary:
    """One channel's summary over a run of `end_ns` (its figures taken for it alone)."""
    return _channel_summary(channel, ChannelFigures.of([channel], end_ns), 0, queue)


def summarise(result: Record, *, endpoints: Sequence[tuple[str, str]], bottleneck: int | None,
              run_id: str, from_store: bool, seed: int, wall_time_s: float, queues: Sequence[str] = (),
              flow_figures: FlowFigures | None = None, channel_figures: ChannelFigures | None = None) -> RunSummary:
    """The summary of one run from its counters (`result` holds end_ns, events, flows, channels);
    `queues` describes each channel's queue as resolved from the spec; `flow_figures` and
    `channel_figures`, the figures of every flow and channel if taken already (derive's, for the
    catalogue), else they are taken here from the counters (of the bottleneck channel alone)."""
    end_ns = int(result["end_ns"])
    flows, channels = result["flows"], result["channels"]
    chosen = pick_bottleneck(channels, bottleneck)
    btl = None
    if chosen is not None:
        queue = queues[chosen] if chosen < len(queues) else None
        if channel_figures is not None:
            btl = _channel_summary(channels[chosen], channel_figures, chosen, queue)
        elif flow_figures is None:
            # A stored run: the flows' figures and the bottleneck's (alone) in one call.
            flow_figures, bottleneck_figures = figures_of(flows, [channels[chosen]], end_ns)
            btl = _channel_summary(channels[chosen], bottleneck_figures, 0, queue)
        else:
            btl = summarise_channel(channels[chosen], end_ns, queue)
    if flow_figures is None:
        flow_figures = FlowFigures.of(flows, end_ns)
    return RunSummary(
        run_id=run_id,
        from_store=from_store,
        engine_version=result["engine_version"],
        seed=seed,
        simulated_s=end_ns / 1e9,
        wall_time_s=wall_time_s,
        events=int(result["events"]),
        flows=(flow_summaries := _flow_summaries(flows, endpoints, flow_figures)),
        bottleneck=btl,
        notes=notes_of(flow_summaries),
    )
