//! Packets on the wire, kept in one shared pool while they propagate, and each channel's
//! propagation pipe as a queue threaded through the pool.
//!
//! Why a pool: a ring of packets by value per channel cycles through its whole capacity, which
//! grows to the largest window the channel ever carried (slow start) and never shrinks, so that
//! a large run's pipes would hold many times more slots than packets in flight, all touched in
//! turn. The pool's size follows the packets in flight across all channels, and free
//! slots are reused last-in first-out, so a packet that starts transmission is written into the
//! slot that the packet arriving just before it vacated: memory still in cache. A packet that a
//! router forwards onto an idle link does not move at all: it is unlinked from the pipe it
//! arrived by and linked to the next one in its slot ([`PacketPool::link_back`]).
//!
//! Why the pipe lives in the pool too: on a large run a packet's arrival is the costliest moment
//! of the loop. The packet was written one propagation delay earlier (milliseconds, tens of
//! thousands of events ago) and is long out of the caches. With a ring of (arrival, slot) per
//! channel, an arrival would read the channel, then the ring, then the packet: three cache misses one
//! after the other. Here the arrival event names the packet's slot, and the slot's [`Link`] (in
//! an array of its own, at the same index) names the packet behind it in the pipe and when that
//! one arrives, so the channel, the packet and its link are three loads the processor issues at
//! once. Slots are not padded to cache lines: an 80-byte packet (its SACK blocks in a slab)
//! spans two lines either way, and the smaller pool is what a large run gains.
//! The link also says what becomes of the packet behind it when it arrives (its [`Hop`]), so the
//! arrival event can name the channel or flow it will touch next as well.
//!
//! The pool never decides anything observable: which slot holds a packet does not affect the
//! run, so results are the same as with packets stored in the pipes.

use crate::net::packet::{AckFrame, Packet};
use crate::net::routing::Hop;
use crate::net::sack_slab::SackSlab;
use crate::units::SimTime;
use mem_prefetch::prefetch_read_data;

/// Slot index meaning "no packet" (an empty pipe's head and tail, the last packet's successor).
const NONE: u32 = u32::MAX;

/// A packet in the pool: 80 bytes, not padded to a cache-line multiple (128 bytes): the
/// smaller footprint gains more than the alignment (docs/development/speed.md, "The packet pool").
#[derive(Debug, Clone, Copy)]
struct Stored(Packet);

/// Where a stored packet is in its pipe: 16 bytes, four to a cache line.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// When the packet behind it arrives (valid when `next` is not `NONE`).
    next_arrival: SimTime,
    /// The slot of the packet behind it in the same pipe, or `NONE`.
    next: u32,
    /// What becomes of the packet behind it when it arrives (valid when `next` is not `NONE`).
    next_hop: Hop,
}

const UNLINKED: Link = Link { next_arrival: SimTime::ZERO, next: NONE, next_hop: Hop::NOWHERE };

/// A packet's coming arrival at the far end of its channel: when, the pool slot it waits in, and
/// what becomes of it then (what an arrival event carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub at: SimTime,
    pub slot: u32,
    pub then: Hop,
}

/// One channel's packets on the wire, oldest first, as a list through the pool. Arrival times
/// never decrease along it (the delay is constant), so the head is always the next to arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pipe {
    head: u32,
    tail: u32,
}

impl Default for Pipe {
    fn default() -> Self {
        Pipe { head: NONE, tail: NONE }
    }
}

impl Pipe {
    pub fn is_empty(&self) -> bool {
        self.head == NONE
    }
}

#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Stored>,
    /// `links[s]` places the packet in `slots[s]` in its pipe.
    links: Vec<Link>,
    /// Vacant slots, the most recently vacated last (reused first).
    free: Vec<u32>,
    /// The SACK blocks of the ACKs on the network: a packet with `sack_len > 0`
    /// names its entry by `Packet::sack`.
    sacks: SackSlab,
    /// The pool's slots have outgrown `prefetch_above_bytes`, or prefetching was asked for from
    /// the start: the simulator then asks for each coming arrival's lines ahead of it. One flag,
    /// set when the pool grows, so that each event reads one byte to know.
    prefetch: bool,
    prefetch_above_bytes: usize,
}

impl PacketPool {
    /// A pool that never asks for prefetching.
    pub fn new() -> Self {
        Self::prefetching(false, usize::MAX)
    }

    /// A pool that says to prefetch ([`PacketPool::prefetch_wanted`]) once its slots take more
    /// than `above_bytes`, or always.
    pub fn prefetching(always: bool, above_bytes: usize) -> Self {
        PacketPool { prefetch: always, prefetch_above_bytes: above_bytes, ..Self::default() }
    }

    /// See [`PacketPool::prefetching`].
    #[inline]
    pub fn prefetch_wanted(&self) -> bool {
        self.prefetch
    }

    /// Store `packet` and append it to the back of `pipe` ([`PacketPool::store`], then
    /// [`PacketPool::link_back`]).
    #[cfg(test)]
    pub fn push_back(&mut self, pipe: &mut Pipe, packet: &Packet, arrival: SimTime, then: Hop) -> Option<Arrival> {
        let slot = self.store(packet);
        self.link_back(pipe, slot, arrival, then)
    }

    /// Put a copy of `packet` in a vacant slot (the one vacated last), in no pipe yet: a channel
    /// about to transmit it links it to its pipe ([`PacketPool::link_back`]) or, if the link
    /// loses it, retires it.
    #[inline]
    pub fn store(&mut self, packet: &Packet) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Stored(*packet);
                slot
            }
            None => {
                self.slots.push(Stored(*packet));
                self.links.push(UNLINKED);
                self.prefetch |= self.slots_bytes() > self.prefetch_above_bytes;
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Append the packet in `slot` (stored, or unlinked from the pipe it arrived by: a packet
    /// forwarded stays where it is), arriving at `arrival` (no earlier than the pipe's last
    /// packet) and then going on as `then` says, to the back of `pipe`. Returns its arrival if
    /// it became the pipe's head (that arrival must then be scheduled).
    #[inline]
    pub fn link_back(&mut self, pipe: &mut Pipe, slot: u32, arrival: SimTime, then: Hop) -> Option<Arrival> {
        // Nothing is behind it in its new pipe (a forwarded packet's link still names its old one).
        self.links[slot as usize] = UNLINKED;
        let tail = std::mem::replace(&mut pipe.tail, slot);
        if tail == NONE {
            pipe.head = slot;
            return Some(Arrival { at: arrival, slot, then });
        }
        self.links[tail as usize] = Link { next_arrival: arrival, next: slot, next_hop: then };
        None
    }

    /// Remove the head of `pipe`, in `slot`, from the pipe, leaving the packet in its slot until
    /// [`PacketPool::vacate`] (an endpoint reads it there: [`PacketPool::packet`]). Returns the
    /// next head's arrival if the pipe is not empty now.
    #[inline]
    pub fn unlink_front(&mut self, pipe: &mut Pipe, slot: u32) -> Option<Arrival> {
        debug_assert_eq!(pipe.head, slot, "an arrival names its pipe's head");
        let Link { next, next_arrival, next_hop } = self.links[slot as usize];
        pipe.head = next;
        if next == NONE {
            pipe.tail = NONE;
            return None;
        }
        Some(Arrival { at: next_arrival, slot: next, then: next_hop })
    }

    /// The packet in `slot`.
    #[inline]
    pub fn packet(&self, slot: u32) -> &Packet {
        &self.slots[slot as usize].0
    }

    /// The packet in `slot`, to change as the link carrying it does (a bleached ECN field).
    #[inline]
    pub fn packet_mut(&mut self, slot: u32) -> &mut Packet {
        &mut self.slots[slot as usize].0
    }

    /// The packet in `slot` is no longer needed: the slot is the next one reused.
    #[inline]
    pub fn vacate(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// The packet in `slot` has reached its endpoint: the slot and its SACK entry (if any) are
    /// the next ones reused.
    #[inline]
    pub fn retire(&mut self, slot: u32) {
        self.sacks.release(&self.slots[slot as usize].0);
        self.vacate(slot);
    }

    /// A copy of the packet in `slot`, which is vacated.
    #[inline]
    pub fn take(&mut self, slot: u32) -> Packet {
        let packet = self.slots[slot as usize].0;
        self.vacate(slot);
        packet
    }

    /// Ask for the cache lines of the packet in `slot` and of its link, so that they are on
    /// their way (or there) when the packet's arrival reads them: see
    /// `Simulator::prefetch_ahead`. A hint only; a vacant or unknown slot is harmless.
    #[inline]
    pub fn prefetch(&self, slot: u32) {
        if let (Some(stored), Some(link)) = (self.slots.get(slot as usize), self.links.get(slot as usize)) {
            // An 80-byte slot starts at a multiple of 16 in its line and spans two lines: its
            // first byte names one, a field at its end the other.
            prefetch_read_data::<_, 3>(stored);
            prefetch_read_data::<_, 3>(&stored.0.retransmission);
            prefetch_read_data::<_, 3>(link);
        }
    }

    /// The SACK slab, where a receiver stores the blocks of the ACKs it sends.
    #[inline]
    pub fn sacks_mut(&mut self) -> &mut SackSlab {
        &mut self.sacks
    }

    /// The packet in `slot`, for its receiver to read where it lies, and the SACK slab its
    /// answer's blocks go into.
    #[inline]
    pub fn packet_and_sacks(&mut self, slot: u32) -> (&Packet, &mut SackSlab) {
        (&self.slots[slot as usize].0, &mut self.sacks)
    }

    /// The SACK blocks and ACK Delay of `packet` (none unless it is an ACK that carries some).
    #[inline]
    pub fn ack_frame(&self, packet: &Packet) -> AckFrame<'_> {
        self.sacks.frame(packet)
    }

    /// `packet` leaves the network, dropped: its SACK entry (if any) is the next one reused.
    #[inline]
    pub fn release_sack(&mut self, packet: &Packet) {
        self.sacks.release(packet);
    }

    /// Ask for the SACK blocks of the packet in `slot`, whose lines were asked for an event
    /// earlier ([`PacketPool::prefetch`]) and so can be read now without waiting long.
    #[inline]
    pub fn prefetch_sack(&self, slot: u32) {
        if let Some(stored) = self.slots.get(slot as usize) {
            self.sacks.prefetch(&stored.0);
        }
    }

    /// SACK entries held by packets on the network (stored and not yet released).
    pub fn sacks_held(&self) -> usize {
        self.sacks.held()
    }

    /// The packets of `pipe`, oldest first (for the end of the run).
    pub fn iter<'a>(&'a self, pipe: &Pipe) -> impl Iterator<Item = &'a Packet> + 'a {
        let mut slot = pipe.head;
        std::iter::from_fn(move || {
            if slot == NONE {
                return None;
            }
            let item = &self.slots[slot as usize].0;
            slot = self.links[slot as usize].next;
            Some(item)
        })
    }

    /// Bytes of the pool's packet slots, vacant ones included (its high-water mark).
    #[inline]
    pub fn slots_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Stored>()
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
    use crate::net::routing::HopKind;

    fn packet(seq: u64) -> Packet {
        Packet::segment(0, 1, 0, seq, 1000, 1052, SimTime::ZERO)
    }

    /// A hop telling the packets apart: each goes to the receiver of a flow named after its `seq`.
    fn hop(seq: u64) -> Hop {
        Hop::new(HopKind::Receiver(seq as u32))
    }

    /// Take the head of `pipe`, in `slot`, as a channel forwarding it does: unlink it, copy it
    /// out, vacate its slot. The packet, and the next head's arrival if the pipe is not empty.
    fn pop_front(pool: &mut PacketPool, pipe: &mut Pipe, slot: u32) -> (Packet, Option<Arrival>) {
        let next = pool.unlink_front(pipe, slot);
        (pool.take(slot), next)
    }

    #[test]
    fn a_stored_packet_is_not_padded() {
        assert_eq!(std::mem::size_of::<Stored>(), std::mem::size_of::<Packet>());
        assert_eq!(std::mem::size_of::<Link>(), 16, "links never straddle two cache lines");
    }

    #[test]
    fn prefetch_names_every_cache_line_of_every_slot() {
        // `PacketPool::prefetch` names a slot's first byte and its `retransmission` field: for
        // each place a slot can start in a line, those two must fall on every line it spans.
        let size = std::mem::size_of::<Stored>();
        let named = [0, std::mem::offset_of!(Packet, retransmission)];
        for slot in 0..64 {
            let start = slot * size;
            let spanned: Vec<usize> = (start / 64..=(start + size - 1) / 64).collect();
            let mut asked: Vec<usize> = named.iter().map(|&offset| (start + offset) / 64).collect();
            asked.dedup();
            assert_eq!(asked, spanned, "slot {slot} at byte {start}");
        }
    }

    #[test]
    fn a_pipe_gives_its_packets_back_in_order_with_each_next_arrival() {
        let mut pool = PacketPool::new();
        let mut pipe = Pipe::default();
        let mut head = None;
        for i in 0..10 {
            let became_head = pool.push_back(&mut pipe, &packet(i), SimTime(100 + i), hop(i));
            assert_eq!(became_head.is_some(), i == 0, "only the first packet finds the pipe empty");
            head = head.or(became_head);
        }
        let seen: Vec<u64> = pool.iter(&pipe).map(|p| p.seq).collect();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        let head = head.unwrap();
        assert_eq!((head.at, head.then), (SimTime(100), hop(0)));
        let mut slot = head.slot;
        for i in 0..10 {
            let (p, next) = pop_front(&mut pool, &mut pipe, slot);
            assert_eq!(p, packet(i));
            match next {
                Some(next) => {
                    assert_eq!((next.at, next.then), (SimTime(101 + i), hop(i + 1)));
                    slot = next.slot;
                }
                None => assert_eq!(i, 9),
            }
        }
        assert!(pipe.is_empty() && pool.is_empty());
    }

    #[test]
    fn pipes_share_the_pool_without_mixing() {
        let mut pool = PacketPool::new();
        let (mut a, mut b) = (Pipe::default(), Pipe::default());
        let ha = pool.push_back(&mut a, &packet(1), SimTime(10), hop(1)).unwrap().slot;
        let hb = pool.push_back(&mut b, &packet(2), SimTime(5), hop(2)).unwrap().slot;
        pool.push_back(&mut a, &packet(3), SimTime(20), hop(3));
        let (p, next) = pop_front(&mut pool, &mut b, hb);
        assert_eq!((p.seq, next), (2, None));
        assert!(b.is_empty());
        let (p, next) = pop_front(&mut pool, &mut a, ha);
        assert_eq!(p.seq, 1);
        let next = next.unwrap();
        assert_eq!((next.at, next.then), (SimTime(20), hop(3)));
        assert_eq!(pop_front(&mut pool, &mut a, next.slot).0.seq, 3);
        assert!(a.is_empty() && pool.is_empty());
    }

    #[test]
    fn an_unlinked_head_stays_readable_in_its_slot_until_vacated() {
        let mut pool = PacketPool::new();
        let mut pipe = Pipe::default();
        let head = pool.push_back(&mut pipe, &packet(1), SimTime(1), hop(1)).unwrap().slot;
        pool.push_back(&mut pipe, &packet(2), SimTime(2), hop(2));
        let next = pool.unlink_front(&mut pipe, head).expect("a packet behind it");
        assert_eq!((next.at, next.then), (SimTime(2), hop(2)));
        assert_eq!((pool.packet(head).seq, pool.len()), (1, 2), "still held while the endpoint reads it");
        assert_eq!(pool.iter(&pipe).map(|p| p.seq).collect::<Vec<_>>(), [2], "but no longer in the pipe");
        pool.vacate(head);
        assert_eq!(pool.len(), 1);
        let reused = pool.push_back(&mut Pipe::default(), &packet(3), SimTime(3), hop(3)).unwrap().slot;
        assert_eq!(reused, head, "the vacated slot is the next one taken");
    }

    #[test]
    fn the_most_recently_vacated_slot_is_reused_first_and_the_pool_does_not_grow() {
        let mut pool = PacketPool::new();
        let mut pipe = Pipe::default();
        let a = pool.push_back(&mut pipe, &packet(1), SimTime(1), hop(1)).unwrap().slot;
        pool.push_back(&mut pipe, &packet(2), SimTime(2), hop(2));
        let (_, next) = pop_front(&mut pool, &mut pipe, a);
        let b = next.unwrap().slot;
        pop_front(&mut pool, &mut pipe, b);
        let reused = pool.push_back(&mut pipe, &packet(3), SimTime(3), hop(3)).map(|h| h.slot);
        assert_eq!(reused, Some(b), "last vacated, first reused");
        for round in 0..1000 {
            let s = pool.push_back(&mut Pipe::default(), &packet(round), SimTime(4), hop(round)).unwrap().slot;
            pop_front(&mut pool, &mut Pipe { head: s, tail: s }, s);
        }
        assert_eq!((pool.len(), pool.slots.len()), (1, 2));
    }

    #[test]
    fn a_forwarded_packet_moves_to_the_next_pipe_in_its_slot_and_leaves_the_first_pipe_whole() {
        // A router forwards the head of pipe `a` onto pipe `b`, behind b's packet, without a
        // copy: the slot is the same, b ends with it, and a still holds the packets behind it.
        let mut pool = PacketPool::new();
        let (mut a, mut b) = (Pipe::default(), Pipe::default());
        let head = pool.push_back(&mut a, &packet(1), SimTime(10), hop(1)).unwrap().slot;
        pool.push_back(&mut a, &packet(2), SimTime(20), hop(2));
        pool.push_back(&mut a, &packet(3), SimTime(30), hop(3));
        let b_head = pool.push_back(&mut b, &packet(9), SimTime(5), hop(9)).unwrap().slot;
        let next_in_a = pool.unlink_front(&mut a, head).expect("two packets behind it");
        assert_eq!(pool.link_back(&mut b, head, SimTime(40), hop(7)), None, "b has a head already");
        assert_eq!(pool.len(), 4, "moved, not copied");
        assert_eq!(pool.iter(&a).map(|p| p.seq).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(pool.iter(&b).map(|p| p.seq).collect::<Vec<_>>(), [9, 1]);
        // b's head names the moved packet's arrival and hop; nothing follows it in b, though its
        // link named packet 2 while it was in a.
        let (_, moved) = pop_front(&mut pool, &mut b, b_head);
        let moved = moved.expect("the forwarded packet");
        assert_eq!((moved.slot, moved.at, moved.then), (head, SimTime(40), hop(7)));
        assert_eq!(pop_front(&mut pool, &mut b, head), (packet(1), None));
        assert!(b.is_empty());
        let (_, third) = pop_front(&mut pool, &mut a, next_in_a.slot);
        assert_eq!(pop_front(&mut pool, &mut a, third.unwrap().slot), (packet(3), None));
        assert!(a.is_empty() && pool.is_empty());
    }

    #[test]
    fn a_pool_asks_for_prefetching_once_its_slots_outgrow_the_bound_and_keeps_asking() {
        let bound = 3 * std::mem::size_of::<Stored>();
        let mut pool = PacketPool::prefetching(false, bound);
        let mut pipe = Pipe::default();
        let mut heads = Vec::new();
        for i in 0..3 {
            heads.extend(pool.push_back(&mut pipe, &packet(i), SimTime(i), hop(i)));
            assert!(!pool.prefetch_wanted(), "{} slots fit the bound", i + 1);
        }
        pool.push_back(&mut pipe, &packet(3), SimTime(3), hop(3));
        assert!(pool.prefetch_wanted(), "a fourth slot does not");
        // Emptied, the pool keeps its slots (its high-water mark), and the answer.
        let mut slot = heads[0].slot;
        while let Some(next) = pool.unlink_front(&mut pipe, slot) {
            pool.vacate(slot);
            slot = next.slot;
        }
        pool.vacate(slot);
        assert!(pool.is_empty() && pool.prefetch_wanted());
        assert!(PacketPool::prefetching(true, usize::MAX).prefetch_wanted(), "asked for from the start");
        assert!(!PacketPool::new().prefetch_wanted());
    }
}
