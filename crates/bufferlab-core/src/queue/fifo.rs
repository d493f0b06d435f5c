//! Drop-tail FIFO with a limit in packets or in bytes (Linux `pfifo` / `bfifo`).

use super::discipline::{Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::Packet;
use crate::units::SimTime;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct DropTailFifo {
    packets: VecDeque<Packet>,
    bytes: u64,
    limit_packets: u64,
    limit_bytes: u64,
}

impl DropTailFifo {
    /// A FIFO bounded by either limit (an absent limit is unbounded).
    pub fn new(limit_packets: Option<u64>, limit_bytes: Option<u64>) -> Self {
        // No room up front: a queue's buffer grows with the packets it holds (and keeps its
        // working size), so the many queues a run never fills (the access links of 10,000 flows,
        // 40,000 channels) cost nothing, where room for 16 packets each would be 80 MB never touched.
        DropTailFifo {
            packets: VecDeque::new(),
            bytes: 0,
            limit_packets: limit_packets.unwrap_or(u64::MAX),
            limit_bytes: limit_bytes.unwrap_or(u64::MAX),
        }
    }
}

impl DropTailFifo {
    /// Size of the packet at the head, if any.
    pub fn peek_bytes(&self) -> Option<u64> {
        self.packets.front().map(|p| p.wire_bytes as u64)
    }

    /// Whether a packet of `wire_bytes` would be admitted now.
    #[inline]
    pub fn fits(&self, wire_bytes: u32) -> bool {
        self.admits(self.packets.len() as u64, self.bytes, wire_bytes)
    }

    /// Whether the FIFO's limits admit a packet of `wire_bytes` behind `packets` packets of
    /// `bytes` in all: the drop-tail rule, also for a FIFO whose packets wait elsewhere (a
    /// channel's departures fixed at enqueue, `net::departures`).
    #[inline]
    pub fn admits(&self, packets: u64, bytes: u64, wire_bytes: u32) -> bool {
        // A byte-limited queue admits a packet only if it fits whole (bfifo semantics).
        packets < self.limit_packets && bytes + wire_bytes as u64 <= self.limit_bytes
    }
}

impl QueueDiscipline for DropTailFifo {
    #[inline]
    fn enqueue(
        &mut self,
        packet: Packet,
        _now: SimTime,
        _drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        if !self.fits(packet.wire_bytes) {
            return Err((packet, DropReason::QueueFull));
        }
        self.bytes += packet.wire_bytes as u64;
        self.packets.push_back(packet);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, _now: SimTime, _drops: &mut impl DropSink) -> Dequeue {
        match self.packets.pop_front() {
            Some(p) => {
                self.bytes -= p.wire_bytes as u64;
                Dequeue::Packet(p)
            }
            None => Dequeue::Empty,
        }
    }

    fn len_packets(&self) -> u64 {
        self.packets.len() as u64
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::discipline::NoDrops;

    fn packet(seq: u64, wire_bytes: u32) -> Packet {
        Packet::segment(0, 0, 0, seq, wire_bytes.saturating_sub(52), wire_bytes, SimTime::ZERO)
    }

    #[test]
    fn packet_limit_drops_the_arrival_that_does_not_fit() {
        let mut q = DropTailFifo::new(Some(2), None);
        assert!(q.enqueue(packet(1, 1500), SimTime::ZERO, &mut NoDrops).is_ok());
        assert!(q.enqueue(packet(2, 1500), SimTime::ZERO, &mut NoDrops).is_ok());
        let (dropped, reason) = q.enqueue(packet(3, 1500), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!((dropped.seq, reason), (3, DropReason::QueueFull));
        assert_eq!(q.len_packets(), 2);
    }

    #[test]
    fn byte_limit_admits_only_whole_packets() {
        let mut q = DropTailFifo::new(None, Some(3000));
        assert!(q.enqueue(packet(1, 1500), SimTime::ZERO, &mut NoDrops).is_ok());
        assert!(q.enqueue(packet(2, 1000), SimTime::ZERO, &mut NoDrops).is_ok());
        assert!(q.enqueue(packet(3, 1000), SimTime::ZERO, &mut NoDrops).is_err());
        assert!(q.enqueue(packet(4, 500), SimTime::ZERO, &mut NoDrops).is_ok());
        assert_eq!(q.len_bytes(), 3000);
    }

    #[test]
    fn dequeues_in_arrival_order() {
        let mut q = DropTailFifo::new(Some(10), None);
        for seq in 0..5 {
            q.enqueue(packet(seq, 100), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        for seq in 0..5 {
            assert!(matches!(q.dequeue(SimTime::ZERO, &mut NoDrops), Dequeue::Packet(p) if p.seq == seq));
        }
        assert_eq!(q.dequeue(SimTime::ZERO, &mut NoDrops), Dequeue::Empty);
        assert_eq!(q.len_bytes(), 0);
    }
}
