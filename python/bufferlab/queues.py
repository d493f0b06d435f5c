"""Queue disciplines of a link direction, as the spec writes them: one pydantic model per kind,
joined in a union discriminated by `kind`.

    queue = "100p"                                   # a FIFO of 100 packets ("1.25MB": of bytes)
    queue = "25ms"                                   # a FIFO of 25 ms at the link's rate (bytes)
    queue = { rule = "stanford" }                    # a FIFO sized by a rule (see `QueueSize`)
    queue = { kind = "tbf", rate = "100mbit", burst = "32KiB", limit = "1310720B" }
    queue = { kind = "splitbuff", limit = { rule = "bdp" }, sub_buffers = 2 }
    queue = { kind = "blind_splitbuff", limit = "6250p" }
    queue = { kind = "red", min_th = "5p", max_th = "15p", max_p = 0.1, w_q = 0.002, limit = "100p" }
    queue = { kind = "red", adaptive = true }                   # Adaptive RED ("ared" too)
    queue = { kind = "pie", target = "15ms", t_update = "15ms", alpha = 0.125, beta = 1.25 }
    queue = { kind = "codel", target = "5ms", interval = "100ms", limit = "1000p", ecn = true }
    queue = { kind = "fq_codel", flows = 1024, quantum = "1514B", limit = "10240p" }
    queue = { kind = "fq_pie", flows = 1024, target = "15ms", limit = "10240p" }
    queue = { kind = "dualpi2", target = "15ms", step_thresh = "1ms", coupling = 2 }

`ecn` (RED, PIE, CoDel, FQ-CoDel, FQ-PIE): the AQM marks an ECN-capable packet Congestion Experienced
where it would drop it (RFC 3168 §5); packets of flows without ECN (`tcp.ecn`) are dropped as
before. Off by default, as in Linux, but for FQ-CoDel, whose Linux default is on.

A size given by time or by rule is resolved once the topology is expanded
(`bufferlab.spec.queue_sizes`), from the link's rate and the flows that cross it; `to_engine` then
gives the engine's `QueueSpec` (crates/bufferlab-core/src/spec.rs). A new discipline is one model
here, one arm of `QueueSpec` in the engine and its own file in crates/bufferlab-core/src/queue/.
"""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (in `spec.scenario`, `spec.topology` and
# `queues`), a cost every fresh run would pay.

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import units
from .errors import NoSuchField, SpecError, from_validation_error
from .spec.parsed import ANY, STR, Parsed
from .units import QueueLimit

if TYPE_CHECKING:  # pragma: no cover - the sizing rules are imported with the first size by rule
    from pydantic import TypeAdapter

    from .sizing.rules import Average

__all__ = ["SizeRule", "QueueSize", "FifoQueue", "TbfQueue", "SplitBuffQueue", "BlindSplitBuffQueue", "RedQueue",
           "PieQueue", "CoDelQueue", "FqCodelQueue", "FqPieQueue", "DualPi2Queue", "Queue", "QueueField", "parse_queue", "QUEUE_KINDS", "RULES"]

RULES = ("bdp", "stanford")


@dataclass(frozen=True)
class SizeRule:
    """A buffer size by rule, resolved from the link and the long-lived flows crossing it:
    ``bdp`` (C · RTT) or ``stanford`` (C · RTT / √N). `rtt` is how the flows' propagation RTTs
    are averaged ("mean", "harmonic", "max") or a time that replaces them; `flows` replaces N, the
    number of long-lived flows; `packet` the packet size (default: the largest data packet of the
    flows crossing the link)."""

    # "bdp": C · RTT, the bandwidth-delay product; "stanford": C · RTT / √N (Appenzeller,
    # Keslassy & McKeown 2004, "Sizing Router Buffers"), N the long-lived flows.
    rule: Literal["bdp", "stanford"]
    # How the round-trip propagation delays of the long-lived (greedy) flows crossing the link
    # are averaged ("mean", "harmonic", "max"), or a time that replaces them.
    rtt: "Average | int" = "mean"
    # N of the stanford rule, in place of the number of long-lived flows crossing the link.
    flows: int | None = None
    # Packet size the size is counted in; default the largest data packet of the long-lived flows
    # crossing the link.
    packet: int | None = None

    def written(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "rtt": self.rtt if isinstance(self.rtt, str)
                               else units.format_time(self.rtt)}
        if self.flows is not None:
            out["flows"] = self.flows
        if self.packet is not None:
            out["packet"] = units.format_bytes(self.packet)
        return out


def _size_rule(value: dict[str, Any]) -> SizeRule:
    from .sizing.rules import AVERAGES  # with the first size by rule, not by every spec

    for key in value:
        if key not in ("rule", "rtt", "flows", "packet"):
            raise NoSuchField(str(key), "unknown key")
    rule = value["rule"]
    if rule not in RULES:
        raise SpecError("rule", f'unknown sizing rule "{rule}" (known: {", ".join(RULES)})')
    written = value.get("rtt", "mean")
    rtt: Average | int | None = next((a for a in AVERAGES if a == written), None)
    if rtt is None:
        try:
            rtt = units.parse_time(written, positive=True)
        except units.UnitError:
            raise SpecError("rtt", f'expected {", ".join(AVERAGES)} or a time like "120ms", got {written!r}') from None
    flows = value.get("flows")
    if flows is not None and (not isinstance(flows, int) or isinstance(flows, bool) or flows <= 0):
        raise SpecError("flows", f"the number of long-lived flows must be a positive integer, got {flows!r}")
    if flows is not None and rule != "stanford":
        raise SpecError("flows", "only the stanford rule takes the number of flows")
    packet = None
    if "packet" in value:
        try:
            packet = units.parse_bytes(value["packet"])
        except units.UnitError as e:
            raise SpecError("packet", str(e)) from None
    return SizeRule(rule=rule, rtt=rtt, flows=flows, packet=packet)


@dataclass(frozen=True)
class QueueSize:
    """A queue's size: a limit in packets or bytes, a time at the link's rate, or a rule.
    Exactly one of the three is set; `resolved` tells whether the engine can take it as it is."""

    limit: QueueLimit | None = None
    time_ns: int | None = None
    rule: SizeRule | None = None

    @property
    def resolved(self) -> bool:
        return self.limit is not None

    def __str__(self) -> str:
        if self.limit is not None:
            return str(self.limit)
        if self.time_ns is not None:
            return units.format_time(self.time_ns)
        assert self.rule is not None
        return f"rule {self.rule.rule}"


def parse_queue_size(value: Any) -> QueueSize:
    """ "100p", "1.25MB", "25ms" or {rule = "bdp", rtt = "max"}."""
    if isinstance(value, QueueSize):
        return value
    if isinstance(value, dict):
        if "rule" not in value:
            raise SpecError("rule", "missing required key (a size by rule: {rule = \"bdp\"} or \"stanford\")")
        return QueueSize(rule=_size_rule(value))
    try:
        return QueueSize(limit=units.parse_size(value))
    except units.UnitError as size_error:
        if "unknown size unit" not in str(size_error):
            raise SpecError("", str(size_error)) from None
        try:
            return QueueSize(time_ns=units.parse_time(value, positive=True))
        except units.UnitError as time_error:
            if "unknown time unit" not in str(time_error):
                raise SpecError("", str(time_error)) from None
            raise SpecError("", f"{size_error}, or a time at the link's rate such as \"25ms\"") from None


def _queue_size_out(size: QueueSize) -> Any:
    if size.rule is not None:
        return size.rule.written()
    return str(size)


QueueSizeField = Annotated[QueueSize, Parsed(parse_queue_size, _queue_size_out, returns=ANY)]
BDP = QueueSize(rule=SizeRule(rule="bdp"))


_Bytes = Annotated[int, Parsed(units.parse_bytes, units.format_bytes, returns=STR)]


# A discipline other than the FIFO is read only from a table with its kind (`parse_queue`): its
# model's validator is built at the first such table, not by every command that imports the spec.
_BUILT_ON_FIRST_USE = ConfigDict(defer_build=True)


class _Queue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def resolved(self) -> bool:
        """Its size is in packets or bytes (not yet a time or a rule to resolve)."""
        limit = getattr(self, "limit", None)
        return not isinstance(limit, QueueSize) or limit.resolved

    def sized(self, limit: QueueLimit) -> Self:
        """This queue with its size resolved to `limit`."""
        return self.model_copy(update={"limit": QueueSize(limit=limit)})

    def to_engine(self) -> dict[str, Any]:
        """The engine's `QueueSpec`: every field under its own name, but a size (`QueueSize`),
        which the engine takes as a limit in packets or in bytes, and a threshold in packets or
        bytes (`QueueLimit`, RED's `min_th`), which it takes as `<name>_packets` or `<name>_bytes`
        (both absent when it is not given)."""
        table = {name: getattr(self, name) for name in type(self).model_fields}
        size = table.get("limit")
        if isinstance(size, QueueSize):
            if size.limit is None:
                raise ValueError("queue size not resolved: call bufferlab.spec.queue_sizes first")
            del table["limit"]
            table.update(limit_packets=size.limit.packets, limit_bytes=size.limit.bytes)
        for name in getattr(type(self), "THRESHOLDS", ()):
            threshold = table.pop(name)
            table[f"{name}_packets"] = threshold.packets if threshold is not None else None
            table[f"{name}_bytes"] = threshold.bytes if threshold is not None else None
        return table


class FifoQueue(_Queue):
    """Drop-tail FIFO (Linux pfifo / bfifo)."""

    # Drop-tail FIFO; "pfifo", "droptail" and ns-3's "FifoQueueDisc" name it too.
    kind: Literal["fifo"] = "fifo"
    # Its size: packets ("100p"), bytes ("1.25MB"), a time at the link's rate ("25ms", in bytes)
    # or a size by rule; an arrival that does not fit is dropped.
    limit: QueueSizeField

    def __str__(self) -> str:
        return str(self.limit)


class TbfQueue(_Queue):
    """Token bucket filter (Linux tbf): tokens at `rate` up to `burst` bytes, at most `limit`
    bytes waiting for tokens."""

    model_config = _BUILT_ON_FIRST_USE

    # Token bucket filter, a shaper.
    kind: Literal["tbf"]
    # Rate tokens accrue at: the shaped rate, which the queue sends at in the long run.
    rate: Annotated[int, Parsed(lambda v: units.parse_rate(v), units.format_rate, returns=STR)]
    # Bucket depth, bytes: the most sent back to back at the link's rate after an idle spell (the
    # bucket starts full, as Linux's tbf).
    burst: _Bytes
    # Bytes that may wait for tokens; an arrival beyond is dropped (Linux tbf's bfifo).
    limit: _Bytes

    def sized(self, limit: QueueLimit) -> Self:
        return self

    def __str__(self) -> str:
        return f"tbf {units.format_rate(self.rate)}, burst {units.format_bytes(self.burst)}"


# The engine checks the ranges of gains, probabilities and counts (sub-buffers, flow queues) and
# names the field; a real must be finite here, as JSON, the engine's input, has no NaN nor infinity.
_Real = Annotated[float, Field(allow_inf_nan=False)]
_Count = Annotated[int, Field(strict=True)]
_Time = Annotated[int, Parsed(units.parse_time, units.format_time, returns=STR)]


class SplitBuffQueue(_Queue):
    """SplitBuff (Jabeen, Zafar, Qazi & Uzmi, "SplitBuff: Improving the Interaction of
    Heterogeneous RTT Flows on the Internet"): `sub_buffers` (2 or 3) sub-buffers, packets mapped by the RTT they
    carry against the router's RTTP estimate, sub-buffers sized by eq. (4) every
    `update_interval` (T_u) with queueing-delay smoothing gain `alpha`, served by byte-fair round
    robin (`quantum` bytes per turn).

    `estimator = "paper"` (default) is the paper's Fig. 2 as published; "refined" this engine's
    earlier estimator (queueing taken from one RTT ago, one group of flows left unsplit until two
    groups a factor 2 apart show): docs/engine/index.md, SplitBuff, measures the difference.
    `total = "estimated"` (default, Fig. 2) re-estimates B = (average RTT − T_q)·C every T_u,
    `limit` (default the BDP rule at the mean RTT) being B until the first estimate; "fixed" keeps
    B at `limit`."""

    model_config = _BUILT_ON_FIRST_USE

    # SplitBuff, RTT-aware sub-buffers.
    kind: Literal["splitbuff"]
    # The total B until the first estimate (`total = "estimated"`) or throughout ("fixed");
    # default the BDP rule at the mean RTT of the flows crossing the link.
    limit: QueueSizeField = BDP
    # Sub-buffers, 2 or 3: two split at the RTTP estimate (§III), three at RTTP ± σ/2, σ the
    # standard deviation of the period's RTTs (§IV.C).
    sub_buffers: _Count = 2
    # T_u of Fig. 2: the period after which the thresholds, B and the sub-buffers' sizes (eq. 4)
    # are estimated again. The paper leaves its value open.
    update_interval: _Time = 100_000_000
    # α of Fig. 2, the gain of the queueing delays' exponential smoothing, in (0, 1]. The paper
    # leaves its value open.
    alpha: _Real = 0.25
    # Bytes a sub-buffer may send per turn of the byte-fair (deficit) round robin.
    quantum: _Bytes = 1500
    # "paper": Fig. 2 as published; "refined": this engine's earlier estimator (the SplitBuff
    # section of docs/engine/index.md measures the difference).
    estimator: Literal["paper", "refined"] = "paper"
    # "estimated": B = (average RTT − T_q)·C, estimated again every T_u (Fig. 2); "fixed": B
    # stays `limit`.
    total: Literal["estimated", "fixed"] = "estimated"

    def __str__(self) -> str:
        return f"splitbuff {self.limit}, {self.sub_buffers} sub-buffers"


class BlindSplitBuffQueue(_Queue):
    """Blind-SplitBuff (the SplitBuff paper's §IV.B.2 baseline): each flow mapped at random onto one of `sub_buffers`
    sub-buffers of `limit` / `sub_buffers` each, served by byte-fair round robin."""

    model_config = _BUILT_ON_FIRST_USE

    # Blind-SplitBuff, sub-buffers without RTTs.
    kind: Literal["blind_splitbuff"]
    # The total, split evenly: each sub-buffer holds limit / sub_buffers (the paper: BDP/2 each
    # of two); default the BDP rule at the mean RTT of the flows crossing the link.
    limit: QueueSizeField = BDP
    # Sub-buffers, from 2 to 16; a flow's is drawn by a hash under a key from the run's seed.
    sub_buffers: _Count = 2
    # Bytes a sub-buffer may send per turn of the byte-fair (deficit) round robin.
    quantum: _Bytes = 1500

    def __str__(self) -> str:
        return f"blind_splitbuff {self.limit}, {self.sub_buffers} sub-buffers"


# A threshold on RED's average queue: packets ("5p") or bytes ("7.5kB").
_Threshold = Annotated[QueueLimit, Parsed(units.parse_size, units.format_size, returns=STR)]
_AQM_LIMIT = QueueSize(limit=QueueLimit(packets=1000))


class RedQueue(_Queue):
    """RED (Floyd & Jacobson 1993) and, with `adaptive = true` (or kind "ared"), Adaptive RED
    (Floyd, Gummadi & Shenker 2001): crates/bufferlab-core/src/queue/red.rs.

    Arrivals are dropped early with a probability that grows with the average queue (an EWMA of
    weight `w_q`): none below `min_th`, up to `max_p` at `max_th`, with `gentle` on up to 1 at
    2·`max_th` (else all from `max_th`); in `byte_mode` scaled by the packet's size over
    `mean_packet`. The thresholds are queue sizes in packets ("5p") or bytes ("7.5kB"), both in one
    unit, and the average counts that unit; `limit` is the hard limit (tail drop). Without
    thresholds: 5p and 15p (ns-3's RedQueueDisc), or with `adaptive` the paper's automatic ones
    (min_th = max(5, `target_delay`·C/2) packets, max_th = 3·min_th, C the link's rate in
    `mean_packet`s per second); without `w_q`: 0.002, or with `adaptive` 1 − exp(−1/C).
    `adaptive` moves max_p every `interval` toward an average between 40 % and 60 % of the way
    from min_th to max_th."""

    model_config = _BUILT_ON_FIRST_USE
    THRESHOLDS: ClassVar[tuple[str, ...]] = ("min_th", "max_th")

    # RED; "ared" is RED with `adaptive = true`, ns-3's "RedQueueDisc" names it too.
    kind: Literal["red"]
    # The hard limit, packets or bytes: an arrival RED admits but that does not fit is dropped
    # (a tail drop, not an early one).
    limit: QueueSizeField = _AQM_LIMIT
    # Threshold on the average queue below which nothing is dropped early, packets ("5p") or
    # bytes, in the unit of `max_th`. Default 5 packets (ns-3's RedQueueDisc); with `adaptive`,
    # max(5, target_delay·C/2) packets (Adaptive RED §4).
    min_th: _Threshold | None = None
    # Threshold on the average queue where the early-drop probability reaches `max_p`, in the
    # unit of `min_th`. Default 15 packets (ns-3's RedQueueDisc); with `adaptive`, 3·min_th.
    max_th: _Threshold | None = None
    # Early-drop probability at `max_th` (Floyd & Jacobson eq. 2): 0.1, Floyd's recommendation.
    # With `adaptive` its starting value, then kept within [0.01, 0.5].
    max_p: _Real = 0.1
    # Weight of the average queue's moving average: 0.002 (Floyd & Jacobson's simulations, ns-3's
    # QW); with `adaptive`, 1 − exp(−1/C), C the link's rate in `mean_packet`s per second.
    w_q: _Real | None = None
    # Gentle RED (Floyd 2000): from `max_th` to 2·`max_th` the probability rises from `max_p` to
    # 1 instead of every arrival being dropped from `max_th` on; true, as ns-3.
    gentle: bool = True
    # Scale the early-drop probability by the packet's size over `mean_packet` (Floyd & Jacobson
    # §4), so that large packets are dropped more often than small ones.
    byte_mode: bool = False
    # Mean packet size, bytes: byte mode's reference, the transmission time by which the average
    # decays over an idle spell, and Adaptive RED's packets per second.
    mean_packet: _Bytes = 1500
    # Adaptive RED (Floyd, Gummadi & Shenker 2001): `max_p` adapted every `interval` to keep the
    # average between 40 % and 60 % of the way from min_th to max_th, with automatic thresholds
    # and weight unless given.
    adaptive: bool = False
    # Adaptive RED's target queueing delay, from which its automatic `min_th` follows.
    target_delay: _Time = 5_000_000
    # Adaptive RED's adaptation interval: 0.5 s (the 2001 paper's Fig. 1).
    interval: _Time = 500_000_000
    # Mark ECN-capable arrivals instead of an early drop while the average is below max_th; at or
    # above it RED drops (RFC 3168 §7; Linux `harddrop`).
    ecn: bool = False

    def __str__(self) -> str:
        name = "ared" if self.adaptive else "red"
        if self.min_th is None or self.max_th is None:
            return f"{name} {self.limit}"
        return f"{name} {self.limit}, thresholds {self.min_th}-{self.max_th}"


_PieEstimator = Literal["timestamp", "departure_rate"]


class PieQueue(_Queue):
    """PIE (RFC 8033): crates/bufferlab-core/src/queue/pie.rs. Arrivals are dropped early with a
    probability a PI controller updates every `t_update` from the queueing delay (the sojourn of
    the departing packet) toward `target`, with gains `alpha` and `beta` per second (auto-tuned
    down while the probability is small), after a burst allowance of `burst`; `derandomize`
    spaces the drops as RFC 8033 §5.4 does; `mean_packet` is the packet size of the safeguard that
    never drops from a queue of two packets or less. `limit` is the hard limit (tail drop); 1000p
    as Linux's pie. `estimator = "departure_rate"` measures the delay as the queue's bytes over the
    departure rate (RFC 8033 §4.3, §5.2) instead of by timestamps."""

    model_config = _BUILT_ON_FIRST_USE

    # PIE; ns-3's "PieQueueDisc" names it too.
    kind: Literal["pie"]
    # The hard limit, packets or bytes (tail drop): 1000 packets, as Linux's pie.
    limit: QueueSizeField = _AQM_LIMIT
    # The queueing delay the controller holds the queue at, QDELAY_REF: 15 ms (RFC 8033 §4).
    target: _Time = 15_000_000
    # Period of the drop probability's update, T_UPDATE: 15 ms (RFC 8033 §4).
    t_update: _Time = 15_000_000
    # Gain α on the delay's distance from `target`, per second: 0.125 (RFC 8033 §4.2).
    alpha: _Real = 0.125
    # Gain β on the delay's change since the last update, per second: 1.25 (RFC 8033 §4.2).
    beta: _Real = 1.25
    # Burst allowance MAX_BURST, during which nothing is dropped early: 150 ms (RFC 8033 §4.4).
    burst: _Time = 150_000_000
    # RFC 8033 §5.4's derandomisation: drops spaced by the probabilities summed since the last.
    derandomize: bool = False
    # Mean packet size, bytes, of §4.1's safeguard: no early drop from a queue of at most two such
    # packets.
    mean_packet: _Bytes = 1500
    # Mark ECN-capable arrivals instead of an early drop while the drop probability is at most
    # 10 % (RFC 8033 §5.1).
    ecn: bool = False
    # How the queueing delay is measured (RFC 8033 §4.3): "timestamp", the departing packet's
    # sojourn (the default, as Linux's pie and ns-3), or "departure_rate", the queue's bytes over
    # the departure rate measured in cycles of 16 KiB (§5.2).
    estimator: _PieEstimator = "timestamp"

    def __str__(self) -> str:
        return f"pie {self.limit}, target {units.format_time(self.target)}"


class CoDelQueue(_Queue):
    """CoDel (RFC 8289): drops at the head once the sojourn time has stayed at or above `target`
    for an `interval`, then at intervals shrinking as interval/sqrt(count) until it falls below
    `target`; arrivals beyond `limit` (default 1000 packets, as Linux) are tail-dropped. The
    engine checks that `target` and `interval` are positive."""

    model_config = _BUILT_ON_FIRST_USE

    # CoDel; ns-3's "CoDelQueueDisc" names it too.
    kind: Literal["codel"]
    # The acceptable standing queueing delay, TARGET: 5 ms (RFC 8289 §4.4).
    target: _Time = 5_000_000
    # How long the sojourn time must stay at or above `target` before the first drop, and the
    # base of the drop spacing interval/√count, INTERVAL: 100 ms (RFC 8289 §4.3).
    interval: _Time = 100_000_000
    # The hard limit, packets or bytes (tail drop): 1000 packets, as Linux's codel.
    limit: QueueSizeField = _AQM_LIMIT
    # Mark ECN-capable packets CE where the control law would drop them (Linux: off by default).
    ecn: bool = False
    # How the drop spacing interval/√count is computed: "sqrt", exactly as RFC 8289's pseudocode,
    # or "newton", Linux's and ns-3's integer Newton iteration, which lags at small counts (the
    # second drop half an interval after the first, not 1/√2 of one).
    control_law: Literal["sqrt", "newton"] = "sqrt"

    def __str__(self) -> str:
        return f"codel {self.limit}, target {units.format_time(self.target)}, interval {units.format_time(self.interval)}"


class FqCodelQueue(_Queue):
    """FQ-CoDel (RFC 8290): packets in `flows` flow queues (a flow's by its index modulo
    `flows`), served by DRR++ with a `quantum` of bytes, new flows first, CoDel (`target`,
    `interval`) on each; at `limit` packets in all (default 10240, as Linux; a limit in packets)
    the queue with the most bytes loses its head. The engine checks the ranges."""

    model_config = _BUILT_ON_FIRST_USE

    # FQ-CoDel; "fqcodel" and ns-3's "FqCoDelQueueDisc" name it too.
    kind: Literal["fq_codel"]
    # CoDel's TARGET in every flow queue: 5 ms (RFC 8289 §4.4).
    target: _Time = 5_000_000
    # CoDel's INTERVAL in every flow queue: 100 ms (RFC 8289 §4.3).
    interval: _Time = 100_000_000
    # Packets in all flow queues together: at the limit the queue with the most bytes loses its
    # head (RFC 8290 §4.1). 10240, as Linux's fq_codel; in packets only.
    limit: QueueSizeField = QueueSize(limit=QueueLimit(packets=10240))
    # Flow queues, from 1 to 65536; a flow's is its index modulo `flows`. 1024, as Linux's fq_codel.
    flows: _Count = 1024
    # Bytes of DRR++'s quantum, a flow queue's credit per round (RFC 8290 §4.2): 1514, one
    # Ethernet frame, as Linux's fq_codel.
    quantum: _Bytes = 1514
    # Each flow queue's CoDel marks ECN-capable packets CE (Linux fq_codel: on by default).
    ecn: bool = True
    # Each flow queue's CoDel control law: "sqrt" (RFC 8289) or "newton" (Linux, ns-3), as codel's.
    control_law: Literal["sqrt", "newton"] = "sqrt"
    # Bytes (wire sizes) in all flow queues together beyond which the fattest is dropped from, as
    # at `limit`; none by default. Linux's memory_limit (32 MB) counts the kernel's buffers.
    memory_limit: _Bytes | None = None
    # The most packets dropped from the fattest queue at once at a limit, stopping once half its
    # bytes are gone; 1 drops one packet per arrival. Linux's drop_batch_size is 64.
    drop_batch: _Count = 1

    def __str__(self) -> str:
        return (f"fq_codel {self.limit}, {self.flows} flows, quantum {units.format_bytes(self.quantum)}, "
                f"target {units.format_time(self.target)}, interval {units.format_time(self.interval)}")


class FqPieQueue(_Queue):
    """FQ-PIE (Linux fq_pie, ns-3 FqPieQueueDisc): FQ-CoDel's flow queues and DRR++ scheduler
    (`flows`, `quantum`, `limit`, `memory_limit`, `drop_batch` as fq_codel's) with a PIE (RFC 8033)
    on each flow queue instead of CoDel: each arrival is dropped early, or with `ecn` marked, by
    its flow queue's PIE from that queue's own delay, with pie's parameters (`target`, `t_update`,
    `alpha`, `beta`, `burst`, `derandomize`, `mean_packet`, `estimator`). Defaults as Linux's
    fq_pie: 1024 flows, 10240 packets, 15 ms target. The engine checks the ranges."""

    model_config = _BUILT_ON_FIRST_USE

    # FQ-PIE; "fqpie" and ns-3's "FqPieQueueDisc" name it too.
    kind: Literal["fq_pie"]
    # Packets in all flow queues together: at the limit the queue with the most bytes loses its
    # head. 10240, as Linux's fq_pie; in packets only.
    limit: QueueSizeField = QueueSize(limit=QueueLimit(packets=10240))
    # Bytes (wire sizes) in all flow queues together beyond which the fattest is dropped from, as
    # at `limit`; none by default.
    memory_limit: _Bytes | None = None
    # The most packets dropped from the fattest queue at once at a limit, stopping once half its
    # bytes are gone; 1 drops one packet per arrival (ns-3's DropBatchSize is 64).
    drop_batch: _Count = 1
    # Flow queues, from 1 to 65536; a flow's is its index modulo `flows`. 1024, as Linux's fq_pie.
    flows: _Count = 1024
    # Bytes of DRR++'s quantum, a flow queue's credit per round: 1514, one Ethernet frame.
    quantum: _Bytes = 1514
    # The queueing delay each flow queue's PIE holds it at, QDELAY_REF: 15 ms (RFC 8033 §4).
    target: _Time = 15_000_000
    # Period of each flow queue's drop probability update, T_UPDATE: 15 ms (RFC 8033 §4).
    t_update: _Time = 15_000_000
    # Gain α on the delay's distance from `target`, per second: 0.125 (RFC 8033 §4.2).
    alpha: _Real = 0.125
    # Gain β on the delay's change since the last update, per second: 1.25 (RFC 8033 §4.2).
    beta: _Real = 1.25
    # Each flow queue's burst allowance, MAX_BURST: 150 ms (RFC 8033 §4.4).
    burst: _Time = 150_000_000
    # RFC 8033 §5.4's derandomisation in each flow queue.
    derandomize: bool = False
    # Mean packet size, bytes, of §4.1's safeguard: no early drop from a flow queue of at most two
    # such packets.
    mean_packet: _Bytes = 1500
    # Each flow queue's PIE marks ECN-capable arrivals instead of an early drop while its drop
    # probability is at most 10 % (RFC 8033 §5.1); off, as Linux's fq_pie.
    ecn: bool = False
    # How each flow queue's delay is measured: "timestamp" or "departure_rate" (see pie).
    estimator: _PieEstimator = "timestamp"

    def __str__(self) -> str:
        return (f"fq_pie {self.limit}, {self.flows} flows, quantum {units.format_bytes(self.quantum)}, "
                f"target {units.format_time(self.target)}")


class DualPi2Queue(_Queue):
    """DualPI2, the DualQ Coupled AQM of RFC 9332 with its PI2 base AQM (Appendix A):
    crates/bufferlab-core/src/queue/dualpi2.rs. ECT(1) and CE packets (L4S, RFC 9331) go to the
    L queue, Not-ECT and ECT(0) ones to the C queue. One PI controller updates a base probability
    p' every `tupdate` from the queueing delay toward `target`; the C queue drops (Not-ECT) or
    marks (ECT(0)) with p'^2, the L queue marks with `coupling`·p' or when a packet waited more
    than `step_thresh`. Defaults as RFC 9332 and Linux's dualpi2; `limit` is shared by the two
    queues, in packets."""

    model_config = _BUILT_ON_FIRST_USE

    # DualPI2 (RFC 9332's DualQ Coupled AQM with PI2); "dualq" names it too.
    kind: Literal["dualpi2"]
    # Packets the two queues hold together; an arrival beyond is tail-dropped. 10000 packets, as
    # Linux's dualpi2; in packets only.
    limit: QueueSizeField = QueueSize(limit=QueueLimit(packets=10000))
    # The queueing delay the PI controller holds the Classic queue at: 15 ms (RFC 9332 Appendix A).
    target: _Time = 15_000_000
    # Period of the base probability's update, Tupdate: 16 ms (Linux's dualpi2).
    tupdate: _Time = 16_000_000
    # Integral gain α on the delay's distance from `target`, Hz: 0.16 (Linux's dualpi2).
    alpha: _Real = 0.16
    # Proportional gain β on the delay's change since the last update, Hz: 3.2 (Linux's dualpi2).
    beta: _Real = 3.2
    # The coupling factor k: the L queue marks with k·p' while the C queue drops with p'^2 (RFC 9332
    # §2.1); 2 gives flows of equal RTTs about equal rates. From 1 to 256.
    coupling: _Real = 2.0
    # The L queue's native AQM: a packet that waited longer than this is marked: 1 ms (Linux).
    step_thresh: _Time = 1_000_000
    # How the link is shared between the queues: "tshift", the time-shifted FIFO of RFC 9332
    # Appendix A (the L head first unless the C head waited `tshift` longer), or "wrr", Linux's
    # weighted round robin giving the C queue `classic_protection` percent.
    scheduler: Literal["tshift", "wrr"] = "tshift"
    # The time-shifted FIFO's shift: 30 ms, twice `target` (with "tshift").
    tshift: _Time = 30_000_000
    # The C queue's share of the link, percent, while both queues are backlogged (with "wrr"):
    # 10, as Linux's dualpi2.
    classic_protection: _Count = 10
    # On overload (coupling·p' above 1, RFC 9332 §4.2.3), drop L packets with p'^2 besides
    # marking them all (true, as Linux); false holds p' at 1/coupling and leaves the limit to
    # bound the queue.
    drop_on_overload: bool = True

    def __str__(self) -> str:
        return (f"dualpi2 {self.limit}, target {units.format_time(self.target)}, "
                f"step {units.format_time(self.step_thresh)}, k {self.coupling:g}, {self.scheduler}")


Queue = (FifoQueue | TbfQueue | SplitBuffQueue | BlindSplitBuffQueue | RedQueue | PieQueue | CoDelQueue | FqCodelQueue
         | FqPieQueue | DualPi2Queue)
QUEUE_KINDS = ("fifo", "tbf", "splitbuff", "blind_splitbuff", "red", "pie", "codel", "fq_codel", "fq_pie", "dualpi2")
_ALIASES = {"fifoqueuedisc": "fifo", "pfifo": "fifo", "droptail": "fifo", "tokenbucket": "tbf",
            "token_bucket": "tbf", "split_buff": "splitbuff", "blind_split_buff": "blind_splitbuff",
            "redqueuedisc": "red", "piequeuedisc": "pie", "codelqueuedisc": "codel", "fqcodel": "fq_codel",
            "fq-codel": "fq_codel", "fqcodelqueuedisc": "fq_codel", "fqpie": "fq_pie", "fq-pie": "fq_pie",
            "fqpiequeuedisc": "fq_pie", "dualq": "dualpi2", "dual_pi2": "dualpi2"}


@functools.cache
def _queues() -> "TypeAdapter[Queue]":
    """The queue models as one union by `kind`, built at the first queue written as a table (with
    pydantic's `type_adapter` module), not by every spec that writes none."""
    from pydantic import TypeAdapter

    return TypeAdapter(Annotated[Queue, Field(discriminator="kind")])


def parse_queue(value: Any) -> Queue:
    """A queue from its spec form (see the module docstring); raises SpecError relative to it."""
    if isinstance(value, (FifoQueue, TbfQueue, SplitBuffQueue, BlindSplitBuffQueue, RedQueue, PieQueue, CoDelQueue,
                          FqCodelQueue, FqPieQueue, DualPi2Queue)):
        return value
    if isinstance(value, str):
        return FifoQueue(limit=parse_queue_size(value))
    if not isinstance(value, dict):
        raise SpecError("", f'expected a queue size like "100p" or "25ms", or a table {{kind, ...}}, got {value!r}')
    if "rule" in value and "kind" not in value:
        return FifoQueue(limit=parse_queue_size(value))
    data = dict(value)
    kind = data.get("kind", "fifo")
    if isinstance(kind, str):
        kind = _ALIASES.get(kind.lower(), kind.lower())
        if kind == "ared":  # Adaptive RED: RED with `adaptive = true`
            kind = "red"
            data.setdefault("adaptive", True)
    if kind not in QUEUE_KINDS:
        raise SpecError("kind", f'unknown queue discipline "{data.get("kind")}" (known: {", ".join(QUEUE_KINDS)})')
    data["kind"] = kind
    try:
        return _queues().validate_python(data)
    except ValidationError as e:
        error = from_validation_error(e)
        # The union's tag is the first part of pydantic's location: drop it.
        field = error.field.split(".", 1)[1] if error.field.startswith(kind) and "." in error.field else error.field
        raise type(error)(field, error.reason) from None


def _queue_out(queue: Queue) -> Any:
    if isinstance(queue, FifoQueue):
        return _queue_size_out(queue.limit)
    return queue.model_dump(mode="json")


QueueField = Annotated[Queue, Parsed(parse_queue, _queue_out, returns=ANY)]


def fifo(limit: QueueLimit) -> FifoQueue:
    """A FIFO of a resolved limit."""
    return FifoQueue(limit=QueueSize(limit=limit))
