"""The run summary: a few textbook metrics computed from the engine's raw counters.

The engine records facts only (`RunResult`, crates/bufferlab-core/src/record/result.rs); every
derived number is computed here, one small function per metric, so the full metric catalogue
(shared metrics.md) can grow beside them. Inputs are the JSON dicts of `FlowRecord` and
`ChannelRecord`; outputs are plain numbers in SI-ish display units (Mb/s, ms, s) or None when a
metric is undefined (e.g. no RTT sample yet, a flow that never completed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .metrics import FlowFigures

__all__ = [
    "FlowSummary",
    "BottleneckSummary",
    "RunSummary",
    "goodput_bps",
    "loss_rate",
    "mean_srtt_ns",
    "completion_time_ns",
    "utilisation",
    "mean_queue_packets",
    "mean_sojourn_ns",
    "pick_bottleneck",
    "summarise",
]

Record = Mapping[str, Any]


# --- per flow -----------------------------------------------------------------------------------

def goodput_bps(flow: Record, end_ns: int) -> float | None:
    """Application bytes delivered in order, in bits, over the flow's lifetime: from its SYN to its
    completion (every byte and the FIN acknowledged) or, if it did not complete, to the run's end."""
    until = flow["completed_ns"] if flow.get("completed_ns") is not None else end_ns
    lifetime = int(until) - int(flow["start_ns"])
    if lifetime <= 0:
        return None
    return int(flow["bytes_delivered"]) * 8 * 1e9 / lifetime


def loss_rate(flow: Record) -> float | None:
    """Retransmitted over transmitted data segments (the per-flow "loss" of seed 000 / metrics.md
    loss_rate_l4); None if the flow sent nothing."""
    if flow["segments_sent"] == 0:
        return None
    return int(flow["segments_retransmitted"]) / int(flow["segments_sent"])


def mean_srtt_ns(flow: Record) -> float | None:
    """Mean of the RTT samples that feed the smoothed RTT (rtt_sum / rtt_samples; the engine takes
    them from echoed timestamps, RFC 7323, or under Karn's rule with `tcp.timestamps = false`).
    The time-average of srtt itself comes with the metric catalogue."""
    if flow["rtt_samples"] == 0:
        return None
    return int(flow["rtt_sum_ns"]) / int(flow["rtt_samples"])


def completion_time_ns(flow: Record) -> int | None:
    """From the first SYN to the last byte and FIN acknowledged; None if it never completed."""
    if flow.get("completed_ns") is None:
        return None
    return int(flow["completed_ns"] - flow["start_ns"])


# --- per channel (one direction of a link) ------------------------------------------------------

def service_rate_bps(channel: Record) -> int | None:
    """The rate a channel can send at in the long run: its line rate, or a shaper's token rate
    below it (a tbf queue); None for an unlimited, unshaped channel."""
    return service_rate_of(channel.get("rate_bps"), channel.get("shaping_rate_bps"))


def service_rate_of(rate_bps: int | None, shaping_rate_bps: int | None) -> int | None:
    """`service_rate_bps` of a channel's line rate and shaper's token rate (None: none)."""
    rates = [r for r in (rate_bps, shaping_rate_bps) if r is not None]
    return min(rates) if rates else None


def utilisation(channel: Record, end_ns: int) -> float | None:
    """Fraction of the channel's service rate used over the run: the transmitter's busy time at
    line rate, scaled to a shaper's token rate when one limits the channel (busy time alone would
    say 10 % for a 1 Gb/s link shaped to a full 100 Mb/s)."""
    rate, line = service_rate_bps(channel), channel.get("rate_bps")
    if end_ns <= 0 or rate is None or line is None:
        return None
    return int(channel["busy_ns"]) / end_ns * int(line) / rate


def mean_queue_packets(channel: Record, end_ns: int) -> float | None:
    """Time-average queue length in packets: the queue-length integral over the run's length."""
    if end_ns <= 0:
        return None
    return int(channel["queue_packet_ns"]) / end_ns


def mean_sojourn_ns(channel: Record) -> float | None:
    """Mean time a packet spent queued before its transmission started."""
    if channel["sent_packets"] == 0:
        return None
    return int(channel["sojourn_sum_ns"]) / int(channel["sent_packets"])


def pick_bottleneck(channels: Sequence[Record], named: int | None = None) -> int | None:
    """The channel to report as the bottleneck: the one named by the spec, else the slowest
    rate-limited channel that sent something, ties broken by the longest busy time (so a link's
    data direction wins over its ACK direction). None if every link is unlimited or idle."""
    if named is not None:
        return named
    candidates = [i for i, c in enumerate(channels) if service_rate_bps(c) is not None and c["sent_packets"] > 0]
    if not candidates:
        return None
    return min(candidates, key=lambda i: (service_rate_bps(channels[i]), -channels[i]["busy_ns"], i))


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

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarise_flow(flow: Record, end_ns: int, src: str, dst: str) -> FlowSummary:
    return _flow_summary(flow, src, dst, goodput_bps(flow, end_ns), loss_rate(flow), mean_srtt_ns(flow),
                         completion_time_ns(flow))


def _flow_summary(flow: Record, src: str, dst: str, goodput: float | None, loss: float | None,
                  srtt_ns: float | None, completion_ns: int | None) -> FlowSummary:
    """A flow's summary from its counters and its figures (goodput, loss rate, mean srtt and
    completion time), however they were taken."""
    return FlowSummary(
        name=flow["name"],
        src=src,
        dst=dst,
        goodput_mbps=_mbps(goodput),
        loss_rate=loss,
        retransmissions=int(flow["segments_retransmitted"]),
        rtos=int(flow["rtos"]),
        mean_srtt_ms=_ms(srtt_ns),
        completion_time_s=_s(completion_ns),
        bytes_delivered=int(flow["bytes_delivered"]),
    )


def summarise_channel(channel: Record, end_ns: int, queue: str | None = None) -> BottleneckSummary:
    return BottleneckSummary(
        channel=channel["name"],
        rate_mbps=_mbps(service_rate_bps(channel)),
        utilisation=utilisation(channel, end_ns),
        drops=int(channel["dropped_queue_packets"]),
        random_losses=int(channel["dropped_loss_packets"]),
        mean_queue_packets=mean_queue_packets(channel, end_ns),
        max_queue_packets=int(channel["max_queue_packets"]),
        mean_sojourn_ms=_ms(mean_sojourn_ns(channel)),
        queue=queue,
    )


def _flow_summaries(flows: Sequence[Record], endpoints: Sequence[tuple[str, str]],
                    figures: FlowFigures) -> list[FlowSummary]:
    """`summarise_flow` of every flow, its figures taken from `figures` (the same numbers, computed
    once for all flows by the metric catalogue; issue 15)."""
    return [_flow_summary(flow, src, dst, goodput, loss, srtt, completion)
            for flow, (src, dst), goodput, loss, srtt, completion in zip(
                flows, endpoints, figures.goodput_bps, figures.loss_rate, figures.mean_srtt_ns,
                figures.completion_time_ns)]


def summarise(result: Record, *, endpoints: Sequence[tuple[str, str]], bottleneck: int | None,
              run_id: str, from_store: bool, seed: int, wall_time_s: float,
              queues: Sequence[str] = (), flow_figures: FlowFigures | None = None) -> RunSummary:
    """The summary of one run from its counters (`result` holds end_ns, events, flows, channels);
    `queues` describes each channel's queue as resolved from the spec; `flow_figures`, the flows'
    figures (`metrics.FlowFigures`) if taken already."""
    end_ns = int(result["end_ns"])
    if flow_figures is None:
        flows = [summarise_flow(f, end_ns, *endpoints[i]) for i, f in enumerate(result["flows"])]
    else:
        flows = _flow_summaries(result["flows"], endpoints, flow_figures)
    channels = result["channels"]
    chosen = pick_bottleneck(channels, bottleneck)
    return RunSummary(
        run_id=run_id,
        from_store=from_store,
        engine_version=result["engine_version"],
        seed=seed,
        simulated_s=end_ns / 1e9,
        wall_time_s=wall_time_s,
        events=int(result["events"]),
        flows=flows,
        bottleneck=None if chosen is None else summarise_channel(
            channels[chosen], end_ns, queues[chosen] if chosen < len(queues) else None),
    )
