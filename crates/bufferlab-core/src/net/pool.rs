//! Packets on the wire, kept in one shared pool while they propagate.
//!
//! Each channel's propagation pipe is a ring of (arrival time, pool slot); the packets
//! themselves (128 bytes each) live here. Two reasons, both about memory traffic on large runs:
//!
//! - A ring of packets by value cycles through its whole capacity, which grows to the largest
//!   window the channel ever carried (slow start) and never shrinks: on 10,000 flows at 10 Gb/s
//!   the pipes held ~770,000 packet slots for ~56,000 packets in flight, ~105 MB touched in
//!   turn. The pool's size follows the packets in flight across all channels.
//! - Free slots are reused last-in first-out, so a packet that starts transmission is written
//!   into the slot that the packet arriving just before it vacated: memory still in cache.
//!
//! The pool never decides anything observable: which slot holds a packet does not affect the
//! run, so results are the same as with packets stored in the pipes.

use crate::net::packet::Packet;

#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    /// Vacant slots, the most recently vacated last (reused first).
    free: Vec<u32>,
}

impl PacketPool {
    pub fn new() -> Self {
        Self::default()
    }

    /// Store `packet`; returns its slot.
    #[inline]
    pub fn insert(&mut self, packet: Packet) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = packet;
                slot
            }
            None => {
                self.slots.push(packet);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Take the packet out of `slot`, which becomes vacant.
    #[inline]
    pub fn remove(&mut self, slot: u32) -> Packet {
        self.free.push(slot);
        self.slots[slot as usize]
    }

    /// The packet in an occupied `slot`.
    #[inline]
    pub fn get(&self, slot: u32) -> &Packet {
        &self.slots[slot as usize]
    }

    /// Packets held now.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::SimTime;

    fn packet(seq: u64) -> Packet {
        Packet::segment(0, 1, 0, seq, 1000, 1052, SimTime::ZERO)
    }

    #[test]
    fn a_packet_comes_back_as_it_was_stored() {
        let mut pool = PacketPool::new();
        let slots: Vec<u32> = (0..10).map(|i| pool.insert(packet(i))).collect();
        for (i, &slot) in slots.iter().enumerate().rev() {
            assert_eq!(pool.get(slot).seq, i as u64);
            assert_eq!(pool.remove(slot), packet(i as u64));
        }
        assert!(pool.is_empty());
    }

    #[test]
    fn the_most_recently_vacated_slot_is_reused_first_and_the_pool_does_not_grow() {
        let mut pool = PacketPool::new();
        let a = pool.insert(packet(1));
        let b = pool.insert(packet(2));
        pool.remove(a);
        pool.remove(b);
        assert_eq!(pool.insert(packet(3)), b, "last vacated, first reused");
        assert_eq!(pool.insert(packet(4)), a);
        for round in 0..1000 {
            let s = pool.insert(packet(round));
            pool.remove(s);
        }
        assert_eq!((pool.len(), pool.slots.len()), (2, 3));
    }
}
