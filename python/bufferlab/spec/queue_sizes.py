"""Queue sizes given by time or by rule, resolved once the topology is expanded.

A queue written as a time ("25ms") holds that much at its link's rate: rate · t / 8 bytes. A
queue written as a rule ({rule = "bdp"} / {rule = "stanford"}) takes the link's rate and the
long-lived (greedy) flows whose data crosses the link: their round-trip propagation delays and
their number. A flow's RTT is the propagation delay of its data path plus that of its ACK path,
on the routes the engine takes (crates/bufferlab-core/src/net/routing.rs: least total delay, then
fewest hops, then the lowest channel index), so a dumbbell flow's RTT is exactly the one it asked
for. A rule gives packets of the largest data packet among those flows, unless it names `packet`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any

from .. import units
from ..errors import SpecError
from ..queues import FifoQueue, Queue, QueueSize, SizeRule
from ..units import QueueLimit
from ..sizing import rules

__all__ = ["LinkLoad", "resolve_queue", "link_loads", "loads_of_links", "round_trip_ns", "DEFAULT_PACKET"]

# The packet of a rule with no flow to take it from: a full Ethernet frame's IP packet.
DEFAULT_PACKET = 1500


@dataclass
class LinkLoad:
    """What a sizing rule knows about a link: its rate and the long-lived flows crossing it (their
    RTTs and controllers, the engine's names, in the flows' order)."""

    rate_bps: int | None
    rtts_ns: list[int]
    packet_bytes: int | None
    controllers: list[str] = field(default_factory=list)


def _incoming(nodes: int, channels: list[tuple[int, int, int]]) -> list[list[int]]:
    """Each node's channels in, by channel index (made once per spec for every search, not by
    each search)."""
    incoming: list[list[int]] = [[] for _ in range(nodes)]
    for ch, (_, to, _) in enumerate(channels):
        incoming[to].append(ch)
    return incoming


def _routes_toward(dst: int, nodes: int, channels: list[tuple[int, int, int]],
                   incoming: list[list[int]]) -> list[int | None]:
    """Each node's first channel toward `dst`: Dijkstra on the reversed graph, comparing
    (delay + 1 per hop, hops, channel) as the engine's routing table does. `incoming` is
    `_incoming(nodes, channels)`."""
    best: list[tuple[float, int, int]] = [(float("inf"), 0, -1)] * nodes
    best[dst] = (0, 0, -1)
    heap = [(0, 0, dst)]
    while heap:
        cost, hops, node = heapq.heappop(heap)
        if (cost, hops) > best[node][:2]:
            continue
        for ch in incoming[node]:
            frm, _, delay = channels[ch]
            candidate = (cost + delay + 1, hops + 1, ch)
            if candidate < best[frm]:
                best[frm] = candidate
                # A node with one link (a host on its access link) ends every route through it:
                # its only way on is back, never shorter, so it is not expanded (a 10,000-flow
                # dumbbell's 20,000 hosts would be half of each search's heap work).
                if len(incoming[frm]) > 1:
                    heapq.heappush(heap, (candidate[0], candidate[1], frm))
    return [None if b[2] < 0 else b[2] for b in best]


def _leaves(channels: list[tuple[int, int, int]], incoming: list[list[int]]) -> list[tuple[int, int] | None]:
    """For each node with one way in whose neighbour has more: that neighbour and the channel
    into the node. Every route to such a node (a host on its access link) ends with that channel,
    so the neighbour's routes serve it, as the engine's routing table shares them: one Dijkstra
    per router instead of one per host keeps planning linear in the number of hosts. `incoming`
    is `_incoming(nodes, channels)`."""
    return [(channels[ins[0]][0], ins[0]) if len(ins) == 1 and len(incoming[channels[ins[0]][0]]) > 1 else None
            for ins in incoming]


def _path(src: int, dst: int, toward: list[int | None], channels: list[tuple[int, int, int]]) -> list[int]:
    path, node = [], src
    while node != dst:
        ch = toward[node]
        if ch is None:
            return []  # no route: the engine's validation names the flow
        path.append(ch)
        node = channels[ch][1]
    return path


def _largest_data_packet(flow: dict[str, Any], tcp_options: list[dict[str, Any]],
                         quic_options: list[dict[str, Any]]) -> int:
    """A flow's largest data packet on the wire, from its entry in the options tables."""
    if flow["transport"] == "quic":
        quic = quic_options[flow["quic"]]
        return int(quic["max_datagram"] + quic["lower_layer"])
    tcp = tcp_options[flow["tcp"]]
    return int(tcp["mss"] + tcp["header_bytes"])


def _channels(engine_links: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """Both directions of every link as (from, to, delay ns): channel 2k is link k's forward."""
    channels: list[tuple[int, int, int]] = []
    for link in engine_links:
        channels += [(link["a"], link["b"], link["delay"]), (link["b"], link["a"], link["delay"])]
    return channels


def round_trip_ns(nodes: int, engine_links: list[dict[str, Any]], src: int, dst: int) -> int:
    """Propagation delay of the engine's route from node `src` to `dst` plus that of the route
    back, in ns (what a transfer takes at least: its data one way, their acknowledgment back)."""
    channels = _channels(engine_links)
    incoming = _incoming(nodes, channels)
    there = _path(src, dst, _routes_toward(dst, nodes, channels, incoming), channels)
    back = _path(dst, src, _routes_toward(src, nodes, channels, incoming), channels)
    return sum(channels[ch][2] for ch in there + back)


def link_loads(engine: dict[str, Any]) -> list[LinkLoad]:
    """Per link of an engine spec: its rate, and the RTTs and largest data packet of the greedy
    flows crossing it."""
    links = engine["links"]
    loads = loads_of_links(len(engine["nodes"]), links, engine["flows"], range(len(links)),
                           engine.get("tcp_options", []), engine.get("quic_options", []))
    return [loads[k] for k in range(len(links))]


def loads_of_links(nodes: int, engine_links: list[dict[str, Any]], engine_flows: list[dict[str, Any]],
                   wanted: Iterable[int], tcp_options: list[dict[str, Any]],
                   quic_options: list[dict[str, Any]]) -> dict[int, LinkLoad]:
    """`link_loads` of the `wanted` links only, by link index: a flow's way back and its RTT are
    found only if its data crosses one of them (a queue sized by rule needs the loads of its own
    link, not of a 10,000-flow dumbbell's 20,000 access links). The flows' options are entries of
    `tcp_options` and `quic_options` (the engine spec's tables)."""
    channels = _channels(engine_links)
    loads = {k: LinkLoad(engine_links[k]["rate"], [], None) for k in sorted(wanted)}
    routes: dict[int, list[int | None]] = {}
    incoming = _incoming(nodes, channels)
    leaf_of = _leaves(channels, incoming)

    def path(src: int, dst: int) -> list[int]:
        via, last = leaf_of[dst] or (dst, None)
        if via not in routes:
            routes[via] = _routes_toward(via, nodes, channels, incoming)
        head = _path(src, via, routes[via], channels)
        if last is None or src == dst:
            return head
        return head + [last] if head or src == via else []  # no route: the engine's validation names it

    for flow in engine_flows:
        if flow["traffic"]["kind"] != "greedy":
            continue
        data = path(flow["src"], flow["dst"])
        crossed = sorted({ch // 2 for ch in data if ch // 2 in loads})
        if not crossed:
            continue
        acks = path(flow["dst"], flow["src"])
        rtt = sum(channels[ch][2] for ch in data + acks)
        packet = _largest_data_packet(flow, tcp_options, quic_options)
        for link_index in crossed:
            load = loads[link_index]
            load.rtts_ns.append(rtt)
            load.controllers.append(flow["cca"])
            load.packet_bytes = max(load.packet_bytes or 0, packet)
    return loads


def _rule_size(rule: SizeRule, load: LinkLoad, rate_bps: int) -> tuple[QueueLimit, str]:
    packet = rule.packet or load.packet_bytes or DEFAULT_PACKET
    if isinstance(rule.rtt, int):
        rtts, rtt_text = [rule.rtt], units.format_time(rule.rtt)
    else:
        if not load.rtts_ns:
            raise SpecError("rule", "no long-lived (greedy) flow crosses this link: give rtt = \"<time>\""
                                    + (" and flows = N" if rule.rule == "stanford" else ""))
        rtts = load.rtts_ns
        rtt_text = f"{rule.rtt} RTT {units.format_time(round(rules.average_rtt(rtts, rule.rtt)))}"
    average = "mean" if isinstance(rule.rtt, int) else rule.rtt
    if rule.rule == "bdp":
        size = rules.bdp(rate_bps, rtts, packet, average)
        how = f"bdp rule: {units.format_rate(rate_bps)} x {rtt_text}"
    else:
        n = rule.flows if rule.flows is not None else len(load.rtts_ns)
        if n == 0:
            raise SpecError("flows", "no long-lived (greedy) flow crosses this link: give flows = N")
        size = rules.stanford(rate_bps, rtts, n, packet, average)
        how = f"stanford rule: {units.format_rate(rate_bps)} x {rtt_text} / sqrt({n})"
    return QueueLimit(packets=size.packets), f"{how}, {units.format_bytes(packet)} packets"


def resolve_queue(queue: Queue, load: LinkLoad, where: str) -> tuple[Queue, str]:
    """The queue with its size in packets or bytes, and how that size came about (one line, for
    the run summary). Errors name `where` (the user's field of the queue)."""
    size: QueueSize | None = getattr(queue, "limit", None)
    if not isinstance(size, QueueSize) or size.resolved:
        return queue, str(queue)
    if load.rate_bps is None:
        raise SpecError(where, f'a queue of "{size}" needs the link\'s rate, but the link is unlimited')
    if size.time_ns is not None:
        limit = QueueLimit(bytes=load.rate_bps * size.time_ns // 8_000_000_000)
        if limit.bytes == 0:
            raise SpecError(where, f"{units.format_time(size.time_ns)} at {units.format_rate(load.rate_bps)} "
                                   "is less than a byte")
        how = f"{units.format_time(size.time_ns)} at {units.format_rate(load.rate_bps)}"
    else:
        assert size.rule is not None
        try:
            limit, how = _rule_size(size.rule, load, load.rate_bps)
        except SpecError as e:
            raise SpecError(f"{where}.{e.field}" if isinstance(queue, FifoQueue) else f"{where}.limit.{e.field}",
                            e.reason) from None
    resolved = queue.sized(limit)
    return resolved, f"{resolved} ({how})"
