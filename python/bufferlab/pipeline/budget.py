"""Memory budget of a run, checked while planning: a run that could not fit is refused before it
starts, with the usual one-line error naming the field that drives its size.

What grows with the spec, and what one unit of it costs from the engine to the store (the engine's
buffers, the copy handed to Python, the copies made while deriving metrics and inserting rows):

- recording: samples (duration / sample interval) x series (15 per recorded flow, 13 per recorded
  link direction, plus the time column), 8 bytes each, 4.5 copies at the peak (the peak RSS over
  the series' bytes, which `benchmarks/bench_pipeline.py --memory` measures, with half a copy of
  margin that keeps the estimate a bound): the engine's samples, handed over as the Arrow tables'
  columns with new key columns beside them, about 1.2 while the result crosses the binding; then,
  while the store writes the run, the Arrow tables with their key columns (about 1.4, read in
  place by numpy and DuckDB) and DuckDB's rows of the uncommitted transaction (about 2.3: without
  optimistic writes they stay in memory until the commit, see `store.connection`); derive's float
  series of the flows come and go in between;
- captures: one row of 104 bytes per captured packet, about 3 copies; a link direction carries at
  most 2 x rate x time / (8 x smallest data packet) packets (each data packet and one ACK);
- generated flows: expected Poisson arrivals, or closed-loop users x time / mean think time,
  about 8 kB each (sender, receiver and record, then a row of every table). A think time without
  a finite mean (a Pareto of shape <= 1), or of mean 0, counts the most transfers a user can make:
  one per shortest cycle, its shortest think plus the round trip of its path (a transfer takes at
  least that); with no such cycle (think times of 0 over a path without delay) the run is refused;
- queues: a FIFO full to its limit holds packets of at most 128 bytes each in the engine;
- initial windows: a TCP or QUIC flow sends its initial window (``tcp.initial_window`` segments,
  or fewer if the flow has fewer to send) in one burst when its handshake completes, so that many
  segments exist at once, each a packet of the burst (128 bytes) and an entry of the sender's
  record of what is in flight: 256 bytes a segment, summed over the flows (a spec's default of 10
  costs nothing; four billion would abort the engine).

The estimates are upper bounds of the order of magnitude, not predictions: they refuse runs that
could never finish (a 1 ns sample interval over seconds, a billion-packet queue), not large
runs that fit. The default budget is half of the machine's memory (or of the process's address
space limit, if lower); ``--max-memory`` changes it.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from ..spec.resolved import flow_quic, flow_tcp

if TYPE_CHECKING:  # pragma: no cover - `parse_budget` (the --max-memory flag) needs no spec models
    from ..spec import Resolved, Scenario

__all__ = ["approx_bytes", "Demand", "memory_demands", "check_memory", "default_budget", "parse_budget"]

SERIES_PER_FLOW = 15
SERIES_PER_CHANNEL = 13
SERIES_COPIES = 4.5
CAPTURE_ROW_BYTES = 104
CAPTURE_COPIES = 3
GENERATED_FLOW_BYTES = 8_000
PACKET_BYTES = 128
# A byte-limited queue holds at most limit / SMALLEST_PACKET packets (an ACK with headers).
SMALLEST_PACKET = 52
# A segment of an initial window: its packet and its entry in the sender's scoreboard.
WINDOW_SEGMENT_BYTES = 2 * PACKET_BYTES


@dataclass(frozen=True)
class Demand:
    """Memory one part of a spec may need: the user's field that drives it, bytes, and what."""

    field: str
    bytes: int
    what: str


def default_budget() -> int:
    """Half of the machine's physical memory, or of the address space limit if that is lower."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    limit = physical if soft == resource.RLIM_INFINITY else min(physical, soft)
    return limit // 2


def parse_budget(text: str | None) -> int | None:
    """`--max-memory` ("8GB", "500MB"); None keeps the default."""
    if text is None:
        return None
    from .. import units  # (decimal: not loaded by a run without the flag before its engine)

    try:
        return units.parse_bytes(text)
    except ValueError as e:
        raise SpecError("--max-memory", str(e)) from None


def approx_bytes(n: float) -> str:
    """A memory size to three significant figures: 4.18e+05 GB reads worse than 418 TB."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def _active_s(start_ns: int, stop_ns: int | None, duration_ns: int) -> float:
    end = duration_ns if stop_ns is None else min(stop_ns, duration_ns)
    return max(0, end - start_ns) / 1e9


def _recording(s: Scenario, engine: dict[str, Any]) -> list[Demand]:
    interval = engine.get("sample_interval")
    record = engine.get("record") or {}
    flows = len(engine["flows"]) if record.get("flows") is None else len(record["flows"])
    channels = 2 * len(engine["links"]) if record.get("channels") is None else len(record["channels"])
    if not interval or (flows == 0 and channels == 0):
        return []
    samples = engine["duration"] // interval + 1
    series = SERIES_PER_FLOW * flows + SERIES_PER_CHANNEL * channels + 1
    field = "record.interval" if s.record is not None and s.record.interval is not None else "sample_interval"
    from .. import units

    return [Demand(field, math.ceil(samples * series * 8 * SERIES_COPIES),
                   f"{samples} samples x {series} series of {units.format_time(interval)} recording")]


def _smallest_data_packet(engine: dict[str, Any]) -> int:
    sizes = []
    for f in engine["flows"]:
        traffic = f["traffic"]
        if "packet" in traffic:
            sizes.append(traffic["packet"])
        elif f.get("transport") == "quic":
            sizes.append(flow_quic(engine, f)["max_datagram"])
        else:
            tcp = flow_tcp(engine, f)
            sizes.append(tcp["mss"] + tcp["header_bytes"])
    for g in engine.get("generators", []):
        tcp = flow_tcp(engine, g)
        sizes.append(tcp["mss"] + tcp["header_bytes"])
    return max(1, min(sizes, default=1500))


def _captures(s: Scenario, engine: dict[str, Any]) -> list[Demand]:
    if not engine["captures"]:  # no need to look through the links and flows
        return []
    finite = [link["rate"] for link in engine["links"] if link["rate"]]
    fastest = max(finite, default=0)
    data_packet = _smallest_data_packet(engine)
    seconds = engine["duration"] / 1e9
    out, seen = [], set()
    for i, cap in enumerate(engine["captures"]):
        channel = (cap["link"], cap["direction"])
        if channel in seen:
            continue
        seen.add(channel)
        rate = engine["links"][cap["link"]]["rate"] or fastest
        packets = int(2 * rate * seconds / (8 * data_packet))
        field = f"captures[{i}]" if i < len(s.captures) else f"record.captures[{i - len(s.captures)}]"
        out.append(Demand(field, packets * CAPTURE_ROW_BYTES * CAPTURE_COPIES, f"capturing up to {packets} packets"))
    return out


def _generators(s: Scenario, resolved: Resolved) -> list[Demand]:
    engine = resolved.engine
    out = []
    for k, g in enumerate(engine.get("generators", [])):
        model = g["model"]
        active = _active_s(g["start"], g["stop"], engine["duration"])
        user = resolved.user_field(f"generators[{k}]")
        if model["kind"] == "poisson":
            flows = model["arrivals_per_s"] * active
            out.append(Demand(f"{user}.arrivals_per_s", int(flows * GENERATED_FLOW_BYTES),
                              f"about {flows:.3g} generated flows"))
        else:
            out.append(_closed_loop(engine, g, active, user))
    return out


def _closed_loop(engine: dict[str, Any], generator: dict[str, Any], active_s: float, user: str) -> Demand:
    """Transfers of closed-loop users: one per mean think time each (expected), or, without a
    positive finite mean, one per shortest cycle each (at most; see the module docstring)."""
    from ..spec.queue_sizes import round_trip_ns
    from ..spec.distributions import Dist

    users = generator["model"]["users"]
    think = Dist(engine=generator["model"]["think"], written={})
    mean = think.mean()
    if mean is not None and mean > 0:
        flows = users * active_s * 1e9 / mean
        return Demand(f"{user}.users", int(flows * GENERATED_FLOW_BYTES), f"about {flows:.3g} generated flows")
    cycle_ns = think.minimum() + round_trip_ns(len(engine["nodes"]), engine["links"], generator["src"],
                                               generator["dst"])
    why = "has no finite mean" if mean is None else "is always 0"
    if cycle_ns <= 0:
        raise SpecError(f"{user}.think", f"the think time {why} and the path has no delay: nothing bounds how "
                                         "many transfers its users make")
    flows = users * (math.floor(active_s * 1e9 / cycle_ns) + 1)
    from .. import units

    return Demand(f"{user}.think", int(flows * GENERATED_FLOW_BYTES),
                  f"up to {flows:.3g} generated flows, one per user every {units.format_time(round(cycle_ns))} "
                  f"at most as the think time {why}")


def _packets(queue: dict[str, Any]) -> int:
    """The most packets `queue` (an engine queue table) can hold; 0 without a limit. A token
    bucket's `limit` is in bytes; other queues give theirs in packets or in bytes."""
    limit_bytes = queue.get("limit") if queue["kind"] == "tbf" else queue.get("limit_bytes")
    return int(queue.get("limit_packets") or (limit_bytes or 0) // SMALLEST_PACKET)


def _queue_packets(resolved: Resolved) -> list[tuple[int, str, int]]:
    """(link, side, packets) of every queue with a limit: the most packets it can hold."""
    packets_of = list(map(_packets, resolved.engine["queues"]))
    out = []
    for i, link in enumerate(resolved.engine["links"]):
        for side in ("forward", "backward"):
            packets = packets_of[link[f"queue_{side}"]]
            if packets:
                out.append((i, side, packets))
    return out


def _all_queue_packets(resolved: Resolved) -> int:
    """The sum of `_queue_packets`, without listing them (a 10,000-flow dumbbell has 40,002)."""
    links = resolved.engine["links"]
    packets_of = list(map(_packets, resolved.engine["queues"]))
    return (sum(map(packets_of.__getitem__, map(itemgetter("queue_forward"), links)))
            + sum(map(packets_of.__getitem__, map(itemgetter("queue_backward"), links))))


def _queue_demand(resolved: Resolved, link: int, side: str, packets: int) -> Demand:
    return Demand(resolved.user_field(f"links[{link}].queue_{side}"), packets * PACKET_BYTES,
                  f"a queue of up to {packets} packets")


def _queues(resolved: Resolved) -> list[Demand]:
    return [_queue_demand(resolved, *queue) for queue in _queue_packets(resolved)]


def _window_segments(engine: dict[str, Any], flow: dict[str, Any]) -> int:
    """The segments of `flow`'s (a flow of `engine`'s) first burst: its initial window, or the
    segments of its transfer if that is smaller."""
    transport = flow.get("transport") or "tcp"
    config = flow_quic(engine, flow) if transport == "quic" else flow_tcp(engine, flow)
    segments = int(config.get("initial_window") or 0)
    size = (flow.get("traffic") or {}).get("bytes")
    segment = config.get("mss") or config.get("max_datagram") or 1
    if isinstance(size, int) and size >= 0:
        segments = min(segments, size // segment + 1)
    return segments


def _initial_windows(resolved: Resolved) -> list[Demand]:
    """The initial windows of every flow as one demand, named by the flow with the largest."""
    engine = resolved.engine
    flows = engine["flows"]
    if not flows:
        return []
    segments = [_window_segments(engine, f) for f in flows]
    largest = max(range(len(flows)), key=segments.__getitem__)
    transport = flows[largest].get("transport") or "tcp"
    field = resolved.user_field(f"flows[{largest}].{transport}.initial_window")
    return [Demand(field, sum(segments) * WINDOW_SEGMENT_BYTES,
                   f"initial windows of {sum(segments)} segments, each sent in one burst")]


def _other_demands(s: Scenario, resolved: Resolved) -> list[Demand]:
    """The demands of everything but the queues (a few per spec, where queues are one per channel)."""
    engine = resolved.engine
    return [*_recording(s, engine), *_captures(s, engine), *_generators(s, resolved), *_initial_windows(resolved)]


def memory_demands(s: Scenario, resolved: Resolved) -> list[Demand]:
    """Every part of the run whose memory grows with the spec, with its upper estimate."""
    return [*_other_demands(s, resolved), *_queues(resolved)]


def check_memory(s: Scenario, resolved: Resolved, budget: int | None = None) -> int:
    """Refuse a run whose estimated memory exceeds `budget` (default: `default_budget()`), naming
    the field of its largest demand (the first of `memory_demands` with the most bytes); else
    return the estimate (bytes). The queues' demands are summed from their sizes, and only the
    largest is described: a 10,000-flow dumbbell has 40,002."""
    limit = default_budget() if budget is None else budget
    demands = _other_demands(s, resolved)
    total = sum(d.bytes for d in demands) + PACKET_BYTES * _all_queue_packets(resolved)
    if total <= limit:
        return total
    queues = _queue_packets(resolved)
    largest = max(demands, key=lambda d: d.bytes, default=None)
    if queues:
        fullest = max(queues, key=lambda queue: queue[2])
        if largest is None or fullest[2] * PACKET_BYTES > largest.bytes:
            largest = _queue_demand(resolved, *fullest)
    assert largest is not None  # a total above a budget (>= 0) has a demand
    raise SpecError(largest.field, f"the run could need {approx_bytes(total)} of memory ({largest.what}: "
                                   f"{approx_bytes(largest.bytes)}), more than the budget of {approx_bytes(limit)} "
                                   "(--max-memory)")
