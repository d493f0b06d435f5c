"""Buffer-sizing rules: how big a router buffer should be, from the link rate, the flows' RTTs and
their number. One small function per rule, each citing the equation it implements.

Inputs are integers in base units (bit/s, ns, bytes), as everywhere in bufferlab; a rule returns a
`BufferSize`: the exact size in bytes the equation gives, and what it means in packets (rounded
as the rule says), bytes and milliseconds of queueing at the link rate.

* `bdp`: the rule of thumb, B = C · RTT (Villamizar & Song 1994, ref. [1] of seeds 000 and 002),
  with RTT the mean, the harmonic mean or the largest of the flows' round-trip propagation delays.
* `stanford`: B = C · RTT / √N for N long-lived flows (Appenzeller, Keslassy & McKeown 2004, ref.
  [2] of seeds 000 and 002; seed 000's B_s).
* `beta_rule`: B = (1 − β)/β · C · RTT / √N for N desynchronised flows of a loss-based controller
  that cuts its window to β of itself at a loss (Spang, Arslan & McKeown 2021): the BDP and
  Stanford rules for Reno's β = 1/2, 3/7 of them for CUBIC's β = 0.7.
* `single_flow`: seed 003's bound for one saturated flow, B ≥ (2Tp + Tt + Tt') · C with the data
  and ACK transmission delays Tt, Tt', plus one packet because arrivals and departures at the
  router are not in step.
* `splitbuff_split`: seed 002's eq. (4), the BDP total shared between sub-buffers in proportion to
  the mean RTTP of the flows each one carries; `splitbuff_classes` maps RTTs to sub-buffers by
  seed 002's thresholds (the mean RTTP, or RTTP ± σ/2 with three sub-buffers).

`size_rows` lists every rule the inputs allow (`bufferlab size`, the advisor's rules of thumb).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["BufferSize", "Average", "AVERAGES", "MULTIPLICATIVE_DECREASE", "average_rtt", "bdp", "stanford",
           "beta_rule_multiple", "beta_rule", "single_flow",
           "splitbuff_thresholds", "splitbuff_classes", "splitbuff_split", "size_rows"]

Average = Literal["mean", "harmonic", "max"]
AVERAGES: tuple[Average, ...] = ("mean", "harmonic", "max")

NS_PER_S = 1_000_000_000

# The multiplicative decrease β of the loss-based controllers whose cut is a constant, by the
# engine's controller (`spec.fields.engine_controller`): at a loss, ssthresh = β · cwnd. Reno, and
# NewReno with it, halves (RFC 5681 eq. (4)); CUBIC's β_cubic is 0.7 (RFC 9438 §4.6). HighSpeed
# TCP's β falls with the window (RFC 3649 §5); BBR, DCTCP, Prague and Vegas do not cut a window
# by a constant at a loss: the rule below is not theirs.
MULTIPLICATIVE_DECREASE: dict[str, float] = {"reno": 0.5, "cubic": 0.7}


@dataclass(frozen=True)
class BufferSize:
    """A buffer size from a rule: `exact_bytes` as the equation gives it, `packets` as the rule
    rounds it (at least one), on a link of `rate_bps` with packets of `packet_bytes`."""

    rule: str
    exact_bytes: float
    packets: int
    packet_bytes: int
    rate_bps: int

    @property
    def exact_packets(self) -> float:
        return self.exact_bytes / self.packet_bytes

    @property
    def bytes(self) -> int:
        """The size in bytes of `packets` full packets."""
        return self.packets * self.packet_bytes

    @property
    def ms(self) -> float:
        """Queueing delay of a full buffer of `packets` at the link rate, ms."""
        return self.bytes * 8 / self.rate_bps * 1e3


def _check(rate_bps: int, packet_bytes: int) -> None:
    if rate_bps <= 0:
        raise ValueError(f"the link rate must be positive, got {rate_bps} bit/s")
    if packet_bytes <= 0:
        raise ValueError(f"the packet size must be positive, got {packet_bytes} B")


def _at_least_ceil(packets: float) -> int:
    """Packets a rule that states a lower bound asks for: the next whole packet, at least one.
    (A float product such as 500.0000001 is not taken for 501: 1e-9 packet of slack.)"""
    return max(1, math.ceil(packets - 1e-9))


def average_rtt(rtts_ns: Sequence[int], average: Average = "mean") -> float:
    """The RTT a rule uses when flows' RTTs differ: their arithmetic mean (the BDP rule as seed
    002 states it), harmonic mean (the RTT at which N flows' windows sum as their rates do) or the
    largest (the classic rule of thumb for the longest RTT)."""
    if not rtts_ns:
        raise ValueError("no RTTs: a rule needs at least one flow's RTT")
    if any(r <= 0 for r in rtts_ns):
        raise ValueError("RTTs must be positive")
    import statistics  # here, not at the top: the spec imports this module, few specs size by rule

    if average == "mean":
        return statistics.fmean(rtts_ns)
    if average == "harmonic":
        return statistics.harmonic_mean(rtts_ns)
    if average == "max":
        return float(max(rtts_ns))
    raise ValueError(f'unknown average "{average}" (known: {", ".join(AVERAGES)})')


def _bdp_bytes(rate_bps: int, rtts_ns: Sequence[int], average: Average) -> float:
    """C · RTT in bytes, RTT the flows' `average` (the product every rule below scales)."""
    return rate_bps / 8 * average_rtt(rtts_ns, average) / NS_PER_S


def bdp(rate_bps: int, rtts_ns: Sequence[int], packet_bytes: int, average: Average = "mean") -> BufferSize:
    """The bandwidth-delay product rule, B = C · RTT (Villamizar & Song 1994; seed 002 §I: "a
    router needs buffer of size equal to the average round-trip time ... multiplied by the
    bottleneck link capacity")."""
    _check(rate_bps, packet_bytes)
    exact = _bdp_bytes(rate_bps, rtts_ns, average)
    return BufferSize(f"bdp ({average} RTT)", exact, _at_least_ceil(exact / packet_bytes), packet_bytes, rate_bps)


def stanford(rate_bps: int, rtts_ns: Sequence[int], flows: int, packet_bytes: int,
             average: Average = "mean") -> BufferSize:
    """The Stanford model for N desynchronised long-lived flows, B = C · RTT / √N (Appenzeller,
    Keslassy & McKeown 2004; seed 000's B_s)."""
    _check(rate_bps, packet_bytes)
    if flows <= 0:
        raise ValueError(f"the Stanford rule needs at least one long-lived flow, got N = {flows}")
    exact = _bdp_bytes(rate_bps, rtts_ns, average) / math.sqrt(flows)
    return BufferSize(f"stanford (N = {flows})", exact, _at_least_ceil(exact / packet_bytes), packet_bytes,
                      rate_bps)


def beta_rule_multiple(beta: float, flows: int = 1) -> float:
    """The buffer of `beta_rule` in BDPs: (1 − β)/β / √N. The window that overflows a buffer B
    holds the pipe and the buffer, W_max = BDP + B; cut to β of itself it still fills the pipe
    when β · (BDP + B) ≥ BDP, that is B ≥ (1 − β)/β · BDP (Spang, Arslan & McKeown 2021, one flow),
    and N desynchronised flows need 1/√N of it (their Stanford-model generalisation)."""
    if not 0 < beta < 1:
        raise ValueError(f"the multiplicative decrease β must lie in (0, 1), got {beta}")
    if flows <= 0:
        raise ValueError(f"the rule needs at least one long-lived flow, got N = {flows}")
    return (1 - beta) / beta / math.sqrt(flows)


def beta_rule(rate_bps: int, rtts_ns: Sequence[int], flows: int, beta: float, packet_bytes: int,
              controller: str, average: Average = "mean") -> BufferSize:
    """The buffer that keeps the link busy under N desynchronised flows of a loss-based
    controller cutting its window to β at a loss, B = (1 − β)/β · C · RTT / √N (Spang, Arslan &
    McKeown, "Updating the theory of buffer sizing", 2021): one BDP over √N for Reno (β = 1/2,
    the Stanford rule), 3/7 of it for CUBIC (β = 0.7)."""
    _check(rate_bps, packet_bytes)
    exact = _bdp_bytes(rate_bps, rtts_ns, average) * beta_rule_multiple(beta, flows)
    return BufferSize(f"(1 − β)/β ({controller}, β = {beta:g}, N = {flows})", exact,
                      _at_least_ceil(exact / packet_bytes), packet_bytes, rate_bps)


def single_flow(rate_bps: int, propagation_delay_ns: int, data_bytes: int, ack_bytes: int) -> BufferSize:
    """Seed 003's buffer for one saturated flow: B ≥ (2Tp + Tt + Tt') · C, C in packets per second,
    Tp the bottleneck's one-way propagation delay, Tt = data packet / rate and Tt' = ACK / rate;
    the next whole packet, plus one "because the rate of incoming and outgoing packets in the
    router buffer might not be in sync"."""
    _check(rate_bps, data_bytes)
    if ack_bytes <= 0 or propagation_delay_ns < 0:
        raise ValueError("the ACK size must be positive and the propagation delay not negative")
    tt = data_bytes * 8 / rate_bps  # Tt, s
    tt_ack = ack_bytes * 8 / rate_bps  # Tt', s
    rtt_s = 2 * propagation_delay_ns / NS_PER_S + tt + tt_ack  # RTT = 2Tp + Tt + Tt' (empty queue)
    exact_packets = rtt_s * rate_bps / (8 * data_bytes)  # B >= RTT · C
    return BufferSize("single flow (seed 003)", exact_packets * data_bytes, _at_least_ceil(exact_packets) + 1,
                      data_bytes, rate_bps)


def splitbuff_thresholds(rtts_ns: Sequence[float], sub_buffers: int) -> list[float]:
    """Seed 002 §III.B / §IV.C: with two sub-buffers one threshold at the mean RTTP; with three,
    two at RTTP − σ/2 and RTTP + σ/2 (σ the standard deviation of the RTTs)."""
    import statistics

    mean = statistics.fmean(rtts_ns)
    if sub_buffers == 2:
        return [mean]
    if sub_buffers == 3:
        sigma = statistics.pstdev(rtts_ns)
        return [mean - sigma / 2, mean + sigma / 2]
    raise ValueError(f"SplitBuff has 2 or 3 sub-buffers, not {sub_buffers}")


def splitbuff_classes(rtts_ns: Sequence[float], sub_buffers: int = 2) -> list[list[float]]:
    """The RTTs each sub-buffer carries: a flow goes to the first sub-buffer whose threshold its
    RTTP is below (seed 002 Fig. 2: "if (p->rtt - T_q) < thresh then ... sub-buffer x")."""
    thresholds = splitbuff_thresholds(rtts_ns, sub_buffers)
    classes: list[list[float]] = [[] for _ in range(sub_buffers)]
    for rtt in rtts_ns:
        k = next((i for i, t in enumerate(thresholds) if rtt < t), sub_buffers - 1)
        classes[k].append(rtt)
    return classes


def splitbuff_split(rate_bps: int, rtts_ns: Sequence[int], packet_bytes: int,
                    sub_buffers: int = 2) -> tuple[BufferSize, list[BufferSize]]:
    """Seed 002's eq. (4): the total B is the BDP at the mean RTTP of all flows, and sub-buffer i
    gets B_i = T_Bi · B / Σ T_B, T_Bi the mean RTTP of the flows it carries. Each is rounded down
    so that the sub-buffers never exceed B ("the cumulative size of all sub-buffers should not
    exceed the BDP"). Returns the total and the sub-buffers; an empty sub-buffer gets nothing."""
    import statistics

    total = bdp(rate_bps, rtts_ns, packet_bytes, "mean")
    classes = splitbuff_classes([float(r) for r in rtts_ns], sub_buffers)
    class_rttp = [statistics.fmean(c) if c else 0.0 for c in classes]
    weight = sum(class_rttp)
    parts = []
    for i, t_b in enumerate(class_rttp):
        exact = total.exact_bytes * t_b / weight  # B_i = T_Bi · B / Σ T_B, eq. (4)
        parts.append(BufferSize(f"splitbuff sub-buffer {i}", exact, math.floor(exact / packet_bytes + 1e-9),
                                packet_bytes, rate_bps))
    return total, parts


def size_rows(rate_bps: int, rtts_ns: list[int], packet_bytes: int, *, flows: int | None = None,
              tp_ns: int | None = None, ack_bytes: int | None = None, sub_buffers: int = 2,
              controllers: Sequence[str] = ()) -> list[tuple[BufferSize, str]]:
    """(size, where the rule comes from) for every rule the inputs allow: the BDP by each
    average, Stanford's, the (1 − β)/β rule of each of `controllers` (keys of
    `MULTIPLICATIVE_DECREASE`), SplitBuff's sub-buffers when the RTTs differ, seed 003's with
    `tp_ns`."""
    rows: list[tuple[BufferSize, str]] = []
    if rtts_ns:
        for average in AVERAGES:
            rows.append((bdp(rate_bps, rtts_ns, packet_bytes, average), "C·RTT, Villamizar & Song 1994"))
        n = flows if flows is not None else len(rtts_ns)
        rows.append((stanford(rate_bps, rtts_ns, n, packet_bytes), "C·RTT/√N, Appenzeller et al. 2004"))
        for controller in controllers:
            rows.append((beta_rule(rate_bps, rtts_ns, n, MULTIPLICATIVE_DECREASE[controller], packet_bytes,
                                   controller), "(1 − β)/β · C·RTT/√N, Spang et al. 2021"))
        if len(set(rtts_ns)) > 1:
            _, parts = splitbuff_split(rate_bps, rtts_ns, packet_bytes, sub_buffers)
            thresholds = splitbuff_thresholds([float(r) for r in rtts_ns], sub_buffers)
            for i, part in enumerate(parts):
                low = "" if i == 0 else f"{thresholds[i - 1] / 1e6:.4g} ms ≤ "
                high = f" < {thresholds[i] / 1e6:.4g} ms" if i < len(thresholds) else ""
                rows.append((part, f"seed 002 eq. (4), {low}RTTP{high}"))
    if tp_ns is not None:
        if ack_bytes is None:
            raise ValueError("seed 003's rule needs the ACK size with the propagation delay")
        rows.append((single_flow(rate_bps, tp_ns, packet_bytes, ack_bytes), "(2Tp + Tt + Tt')·C + 1, seed 003"))
    return rows
