//! Static shortest-path routing, computed once before the run.
//!
//! Paths minimise total propagation delay, then hop count; ties go to the lower channel index, so
//! routes are a pure function of the spec. Tables exist only for nodes that are flow endpoints,
//! and a host hanging off the network by a single link shares the table of the node it hangs
//! off (every path to it ends with that link), so a dumbbell or a tree of thousands of hosts needs
//! a handful of tables, not one per host.

use crate::net::packet::Packet;
use crate::spec::{Direction, ScenarioSpec};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An edge of the routing graph: a channel from `from` to `to` with a cost.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub cost: u64,
}

#[derive(Debug)]
pub struct RoutingTable {
    /// For each node, the slot of its table if it is a destination with a table of its own.
    slot_of: Vec<Option<u32>>,
    /// For a destination with a single link: the node it hangs off and that link's channel into it.
    leaf_of: Vec<Option<(u32, u32)>>,
    /// `next[slot * nodes + node]`: the channel `node` forwards on toward the slot's destination.
    next: Vec<u32>,
    nodes: usize,
}

const NO_ROUTE: u32 = u32::MAX;

/// What becomes of a packet when it reaches the far end of a channel: it is forwarded on another
/// channel, or it has arrived and goes to its flow's receiver (data) or sender (acknowledgements).
///
/// Routes are static, so this is known as soon as the packet starts transmission; the packet's
/// arrival event carries it (see `Simulator::prefetch_ahead`): the channel or the flow a coming
/// arrival will touch can then be asked for before the packet itself is read. Four bytes, so that
/// it fits beside a pipe's link in the pool: the kind in the top two bits, the channel or flow
/// index below (the simulator checks that both fit in 30 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop(u32);

/// A [`Hop`] taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopKind {
    /// Onto this channel, out of the node the packet reached.
    Forward(u32),
    /// To the receiver of this flow: the packet is data at its destination.
    Receiver(u32),
    /// To the sender of this flow: the packet is an acknowledgement at its destination.
    Sender(u32),
}

impl Hop {
    /// Channel and flow indices a hop can name: below 2^30.
    pub const MAX_INDEX: u32 = (1 << 30) - 1;
    const RECEIVER: u32 = 1 << 30;
    const SENDER: u32 = 2 << 30;
    /// A placeholder where no packet follows (never the hop of a packet on the wire).
    pub const NOWHERE: Hop = Hop(u32::MAX);

    pub fn new(kind: HopKind) -> Hop {
        let (tag, index) = match kind {
            HopKind::Forward(channel) => (0, channel),
            HopKind::Receiver(flow) => (Hop::RECEIVER, flow),
            HopKind::Sender(flow) => (Hop::SENDER, flow),
        };
        debug_assert!(index <= Hop::MAX_INDEX, "hop index {index} exceeds 30 bits");
        Hop(tag | index)
    }

    #[inline]
    pub fn kind(self) -> HopKind {
        let index = self.0 & Hop::MAX_INDEX;
        match self.0 & !Hop::MAX_INDEX {
            0 => HopKind::Forward(index),
            Hop::RECEIVER => HopKind::Receiver(index),
            _ => HopKind::Sender(index),
        }
    }
}

impl RoutingTable {
    /// The routes of a spec toward every flow and generator endpoint: one edge per channel
    /// (index `2·link + direction`), costing its propagation delay in ns plus one so that
    /// zero-delay hops still count.
    pub fn of_spec(spec: &ScenarioSpec) -> RoutingTable {
        let mut edges = Vec::with_capacity(spec.links.len() * 2);
        for link in &spec.links {
            for direction in [Direction::Forward, Direction::Backward] {
                let (from, to, _) = link.channel_ends(direction);
                edges.push(Edge { from: from as u32, to: to as u32, cost: link.delay_ns + 1 });
            }
        }
        let mut endpoints: Vec<u32> = spec.flows.iter().flat_map(|f| [f.src as u32, f.dst as u32]).collect();
        endpoints.extend(spec.generators.iter().flat_map(|g| [g.src as u32, g.dst as u32]));
        endpoints.sort_unstable();
        endpoints.dedup();
        RoutingTable::build(spec.nodes.len(), &edges, &endpoints)
    }

    /// Build next-hop tables toward every node in `destinations` (channel index = edge index).
    pub fn build(nodes: usize, edges: &[Edge], destinations: &[u32]) -> RoutingTable {
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for (i, e) in edges.iter().enumerate() {
            incoming[e.to as usize].push(i as u32);
        }
        let mut leaf_of = vec![None; nodes];
        let mut anchors = Vec::with_capacity(destinations.len());
        for &dst in destinations {
            match incoming[dst as usize][..] {
                // One way in: its neighbour's table serves it, unless that neighbour is a leaf too.
                [ch] if incoming[edges[ch as usize].from as usize].len() > 1 => {
                    leaf_of[dst as usize] = Some((edges[ch as usize].from, ch));
                    anchors.push(edges[ch as usize].from);
                }
                _ => anchors.push(dst),
            }
        }
        anchors.sort_unstable();
        anchors.dedup();
        let mut slot_of = vec![None; nodes];
        let mut next = Vec::with_capacity(anchors.len() * nodes);
        for (slot, &anchor) in anchors.iter().enumerate() {
            slot_of[anchor as usize] = Some(slot as u32);
            next.extend(Self::toward(nodes, edges, &incoming, anchor));
        }
        RoutingTable { slot_of, leaf_of, next, nodes }
    }

    /// Dijkstra on the reversed graph from `dst`: every node's best first channel toward `dst`.
    fn toward(nodes: usize, edges: &[Edge], incoming: &[Vec<u32>], dst: u32) -> Vec<u32> {
        // (cost, hops, channel) — compared lexicographically.
        let mut best: Vec<(u64, u32, u32)> = vec![(u64::MAX, u32::MAX, NO_ROUTE); nodes];
        best[dst as usize] = (0, 0, NO_ROUTE);
        let mut heap = BinaryHeap::new();
        heap.push(Reverse((0u64, 0u32, dst)));
        while let Some(Reverse((cost, hops, node))) = heap.pop() {
            let (c, h, _) = best[node as usize];
            if (cost, hops) > (c, h) {
                continue;
            }
            for &ch in &incoming[node as usize] {
                let e = edges[ch as usize];
                let candidate = (cost + e.cost, hops + 1, ch);
                if candidate < best[e.from as usize] {
                    best[e.from as usize] = candidate;
                    heap.push(Reverse((candidate.0, candidate.1, e.from)));
                }
            }
        }
        best.into_iter().map(|(_, _, ch)| ch).collect()
    }

    /// What becomes of `packet` when it reaches `node` (validated: every flow endpoint is
    /// reachable from every node a flow's packets pass).
    #[inline]
    pub fn hop(&self, node: u32, packet: &Packet) -> Hop {
        Hop::new(if packet.dst != node {
            HopKind::Forward(self.next_channel(node, packet.dst).expect("validated: every flow endpoint is reachable"))
        } else if packet.is_data {
            HopKind::Receiver(packet.flow)
        } else {
            HopKind::Sender(packet.flow)
        })
    }

    /// Ask for the line [`RoutingTable::next_channel`] reads first for a packet to `dst`,
    /// ahead of its transmission (see `Simulator::prefetch_event`): with thousands of hosts the
    /// table is out of the first caches, and the packets of a bottleneck go to hosts in turn.
    #[inline]
    pub fn prefetch_toward(&self, dst: u32) {
        if let Some(entry) = self.leaf_of.get(dst as usize) {
            crate::memory::prefetch(entry);
        }
    }

    /// The channel `node` forwards on toward `dst`, if there is a path.
    #[inline]
    pub fn next_channel(&self, node: u32, mut dst: u32) -> Option<u32> {
        if let Some((via, last)) = self.leaf_of[dst as usize] {
            if node == via {
                return Some(last);
            }
            if node == dst {
                return None;
            }
            dst = via;
        }
        let slot = self.slot_of[dst as usize]? as usize;
        let ch = self.next[slot * self.nodes + node as usize];
        (ch != NO_ROUTE).then_some(ch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: u32, to: u32, cost: u64) -> Edge {
        Edge { from, to, cost }
    }

    #[test]
    fn picks_the_lower_delay_path() {
        // 0 -> 1 -> 3 costs 2; 0 -> 2 -> 3 costs 10.
        let edges = [edge(0, 1, 1), edge(1, 3, 1), edge(0, 2, 5), edge(2, 3, 5)];
        let t = RoutingTable::build(4, &edges, &[3]);
        assert_eq!(t.next_channel(0, 3), Some(0));
        assert_eq!(t.next_channel(2, 3), Some(3));
    }

    #[test]
    fn equal_cost_ties_prefer_fewer_hops() {
        let edges = [edge(0, 1, 1), edge(1, 2, 1), edge(0, 2, 2)];
        let t = RoutingTable::build(3, &edges, &[2]);
        assert_eq!(t.next_channel(0, 2), Some(2));
    }

    #[test]
    fn hosts_on_a_single_link_share_their_router_s_table() {
        // Hosts 2, 3, 4 hang off router 0; host 5 off router 1; routers 0 and 1 are joined.
        let mut edges = vec![edge(0, 1, 5), edge(1, 0, 5)];
        for (host, router) in [(2, 0), (3, 0), (4, 0), (5, 1)] {
            edges.push(edge(host, router, 1));
            edges.push(edge(router, host, 1));
        }
        let t = RoutingTable::build(6, &edges, &[2, 3, 4, 5]);
        assert_eq!(t.next.len(), 2 * 6, "two tables (routers 0 and 1), not four");
        assert_eq!(t.next_channel(2, 5), Some(2), "host 2's only link");
        assert_eq!(t.next_channel(0, 5), Some(0), "router 0 toward router 1");
        assert_eq!(t.next_channel(1, 5), Some(9), "router 1's link into host 5");
        assert_eq!(t.next_channel(1, 3), Some(1));
        assert_eq!(t.next_channel(0, 3), Some(5), "router 0's link into host 3");
        assert_eq!(t.next_channel(3, 3), None);
    }

    #[test]
    fn two_hosts_joined_directly_route_to_each_other() {
        let edges = [edge(0, 1, 1), edge(1, 0, 1)];
        let t = RoutingTable::build(2, &edges, &[0, 1]);
        assert_eq!((t.next_channel(0, 1), t.next_channel(1, 0)), (Some(0), Some(1)));
    }

    #[test]
    fn a_hop_gives_back_what_it_was_made_of() {
        for kind in [
            HopKind::Forward(0),
            HopKind::Forward(Hop::MAX_INDEX),
            HopKind::Receiver(7),
            HopKind::Receiver(Hop::MAX_INDEX),
            HopKind::Sender(0),
            HopKind::Sender(123_456_789),
        ] {
            assert_eq!(Hop::new(kind).kind(), kind);
        }
    }

    #[test]
    fn a_packet_at_its_destination_goes_to_its_flow_s_endpoint_else_onward() {
        use crate::units::SimTime;
        // Host 2 hangs off router 0, host 3 off router 1.
        let edges = [edge(0, 1, 5), edge(1, 0, 5), edge(2, 0, 1), edge(0, 2, 1), edge(3, 1, 1), edge(1, 3, 1)];
        let t = RoutingTable::build(4, &edges, &[2, 3]);
        let data = Packet::segment(9, 3, 0, 1, 1000, 1052, SimTime::ZERO);
        let ack = Packet::acknowledgement(9, 2, 0, 1001, 52, SimTime::ZERO);
        assert_eq!(t.hop(0, &data).kind(), HopKind::Forward(0));
        assert_eq!(t.hop(1, &data).kind(), HopKind::Forward(5));
        assert_eq!(t.hop(3, &data).kind(), HopKind::Receiver(9));
        assert_eq!(t.hop(0, &ack).kind(), HopKind::Forward(3));
        assert_eq!(t.hop(2, &ack).kind(), HopKind::Sender(9));
    }

    #[test]
    fn unreachable_destination_has_no_route() {
        let edges = [edge(0, 1, 1)];
        let t = RoutingTable::build(3, &edges, &[2, 1]);
        assert_eq!(t.next_channel(0, 2), None);
        assert_eq!(t.next_channel(0, 1), Some(0));
        assert_eq!(t.next_channel(1, 0), None, "0 is not a destination");
    }
}
