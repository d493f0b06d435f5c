"""What a buffer's limit means under the queue discipline that manages it.

The sizing rules (`sizing.rules`) and the advisor (`sizing.advisor`) give a number of packets. On a
drop-tail FIFO that number is the queue the flows can build: a full FIFO of B packets adds B/C of
queueing delay. Under an active queue management the same number is only the hard limit: the AQM
drops (or marks) long before it, from its own signal, so the standing queue no longer grows with
the limit, and the limit bounds only the bursts the AQM lets in. `limit_meaning` says which, for
the queue at hand, with the AQM's own operating point in packets at the link's rate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import units

if TYPE_CHECKING:  # pragma: no cover
    from ..queues import Queue

__all__ = ["SIZED_KINDS", "limit_meaning", "delay_in_packets"]

# The queue kinds whose limit the advisor can search in packets.
SIZED_KINDS = ("fifo", "red", "pie", "codel", "fq_codel", "fq_pie")


def delay_in_packets(delay_ns: int, rate_bps: int, packet_bytes: int) -> float:
    """The packets a queue holds when it takes `delay_ns` to drain at `rate_bps`."""
    return delay_ns * rate_bps / 8 / packet_bytes / 1e9


def limit_meaning(queue: Queue, rate_bps: int | None, packet_bytes: int) -> str:
    """One sentence: what the size of `queue`'s limit decides, at a link of `rate_bps` (None:
    unknown) carrying `packet_bytes` packets."""
    # Here, not at the top: the command line lists SIZED_KINDS without loading the queue models.
    from ..queues import CoDelQueue, FifoQueue, FqCodelQueue, FqPieQueue, PieQueue, RedQueue

    def at_rate(delay_ns: int) -> str:
        if rate_bps is None:
            return units.format_time(delay_ns)
        return f"{units.format_time(delay_ns)} ({delay_in_packets(delay_ns, rate_bps, packet_bytes):.0f} packets here)"

    if isinstance(queue, FifoQueue):
        return ("a drop-tail FIFO's size: the flows can fill it, so it is the standing queue they may build and "
                "its drain time the queueing delay they may add")
    if isinstance(queue, CoDelQueue):
        return (f"CoDel's hard limit (RFC 8289): CoDel drops at the head to hold the standing queue's sojourn time "
                f"near its target of {at_rate(queue.target)}, whatever the limit; the limit only bounds the bursts "
                "CoDel lets in before its interval has passed")
    if isinstance(queue, FqCodelQueue):
        return (f"FQ-CoDel's limit over all {queue.flows} flow queues (RFC 8290): each flow queue's CoDel holds its "
                f"sojourn time near {at_rate(queue.target)}; at the limit the fattest flow queue loses its head, so "
                "the limit bounds the bursts of all flows together")
    if isinstance(queue, FqPieQueue):
        return (f"FQ-PIE's limit over all {queue.flows} flow queues (Linux fq_pie): each flow queue's PIE (RFC 8033) "
                f"drops early to hold that queue's delay near {at_rate(queue.target)}, whatever the limit; at the "
                "limit the fattest flow queue loses its head, so the limit bounds the bursts of all flows together")
    if isinstance(queue, PieQueue):
        return (f"PIE's hard limit (RFC 8033): PIE's early drops hold the mean queueing delay near its target of "
                f"{at_rate(queue.target)}, whatever the limit; the limit bounds the bursts PIE's burst allowance "
                "and its 2-packet safeguard let in")
    if isinstance(queue, RedQueue):
        if queue.min_th is not None and queue.max_th is not None:
            thresholds = f"between {queue.min_th} and {queue.max_th}"
        elif queue.adaptive:
            thresholds = "between its automatic thresholds (target delay " + units.format_time(queue.target_delay) + ")"
        else:
            thresholds = "between 5 and 15 packets"
        return (f"RED's hard limit: RED's early drops act on the average queue, {thresholds}; the instantaneous "
                "queue may reach the limit in a burst, and a limit below the upper threshold leaves RED no room "
                "to act")
    return f"the total size of {queue.kind}: every packet it holds counts against it"
