//! The flow-queue scheduler of FQ-CoDel (RFC 8290) and FQ-PIE (Linux `fq_pie`): hashed flow
//! queues served by DRR++, each under an AQM of its own. The AQM is a type parameter
//! ([`FlowAqm`]): CoDel for FQ-CoDel (queue/fq_codel.rs), PIE for FQ-PIE (queue/fq_pie.rs). The
//! scheduler is compiled once for each, so the per-packet path makes static calls only.
//!
//! Packets are classified into `flows` flow queues by their flow: queue `flow mod flows`. A plain
//! modulo, not a keyed hash: the engine's flow ids are dense indices (0, 1, 2, ...), so the modulo
//! gives up to `flows` flows a queue each (the collision-free case that RFC 8290 §4.1's hash
//! approximates with high probability) and, beyond, shares queues the same way in every run, with
//! no seed to draw. The queues are served by DRR++ (RFC 8290 §3, §4.2): a queue that becomes
//! active joins the list of new flows with a deficit of one `quantum` and is served before the old
//! flows; a queue whose deficit is spent gets another quantum and moves to the end of the old
//! flows; a new queue found empty moves to the old flows (so that it cannot come back as new at
//! once and starve them), an old one found empty leaves the lists.
//!
//! The AQM sees each arrival first (PIE drops or marks there, §4.1 of RFC 8033; CoDel admits
//! every packet) and each departure (CoDel drops at the head there, RFC 8289 §5.5; PIE measures
//! the delay). When the packets queued in all flow queues exceed `limit_packets`, or their bytes
//! `memory_limit`, the arrival is queued and the queue holding the most bytes loses packets from
//! its head (RFC 8290 §4.1): up to `drop_batch` of them, stopping once half its bytes are gone, as
//! Linux's `fq_codel_drop` does to amortise the search over the queues (its drop_batch_size, 64);
//! with a batch of 1, one packet per arrival. The first packet dropped is handed back as the
//! refused packet ([`DropReason::QueueFull`]), the others go to the caller's [`DropSink`].
//!
//! The packets of all flow queues share one slab ([`Slab`]): a flow queue is a linked list of its
//! slots (head, tail, each slot naming the next), as Linux's flow queues are lists of packets. The
//! slab holds as many slots as the backlog was ever deep (at most the limit), so with 10,000 flows
//! the packets stay in one small, cache-warm array instead of 10,000 buffers of their own, and a
//! flow queue is its list ends, deficit, AQM state and place in its list (with CoDel, 64 bytes: a
//! cache line). The two lists of flows ([`FlowList`]) are rings preallocated for every queue, and
//! each holds beside every listed queue that queue's bytes, in list order: the search for the
//! fattest queue at the limit reads two short contiguous arrays instead of one random line per
//! backlogged queue. Nothing is allocated per packet once the slab has grown to the backlog's
//! working depth.

use super::codel::HeadQueue;
use super::discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::Packet;
use crate::units::SimTime;
use mem_prefetch::prefetch_read_data;

/// The end of a list of slots.
const NIL: u32 = u32::MAX;

/// A packet in the slab, and the slot after it in its flow queue (or in the free list).
#[derive(Debug)]
struct Slot {
    packet: Packet,
    next: u32,
}

/// The packets of every flow queue, in slots linked into one list per flow queue; freed slots
/// are linked into a free list and taken again before the slab grows.
#[derive(Debug, Default)]
pub(super) struct Slab {
    slots: Vec<Slot>,
    free: Option<u32>,
}

impl Slab {
    /// Store `packet` in a slot of its own, linked to nothing.
    #[inline]
    fn insert(&mut self, packet: Packet) -> u32 {
        match self.free {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                self.free = if s.next == NIL { None } else { Some(s.next) };
                s.packet = packet;
                s.next = NIL;
                slot
            }
            None => {
                self.slots.push(Slot { packet, next: NIL });
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Take the packet out of `slot` and return the slot to the free list.
    #[inline]
    fn remove(&mut self, slot: u32) -> Packet {
        let s = &mut self.slots[slot as usize];
        s.next = self.free.unwrap_or(NIL);
        self.free = Some(slot);
        s.packet
    }

    /// Slots ever used (for tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }
}

/// The scheduler's parameters, whatever the AQM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Packets queued in all flow queues together before the fattest is dropped from.
    pub limit_packets: u64,
    /// Bytes queued in all flow queues together before the fattest is dropped from (`u64::MAX`:
    /// no byte limit).
    pub memory_limit: u64,
    /// Number of flow queues (RFC 8290 §5.2.5; at least 1).
    pub flows: u32,
    /// DRR++'s quantum in bytes (§3, §5.2.4).
    pub quantum: u32,
    /// The most packets dropped from the fattest queue at a limit (at least 1).
    pub drop_batch: u32,
}

/// The AQM each flow queue runs: its per-queue state, and its decisions at an arrival and at a
/// departure. The implementing value holds the parameters and anything the queues share (PIE's
/// random stream).
pub trait FlowAqm {
    /// What the AQM remembers for one flow queue.
    type State: Copy + std::fmt::Debug;

    /// The state of a flow queue before its first packet.
    fn initial_state(&self) -> Self::State;

    /// An arrival at `now` for a flow queue of `backlog` bytes: `None` to queue it (marked CE,
    /// counted in `marks`, or not), or the reason it is dropped.
    fn on_arrival(
        &mut self,
        state: &mut Self::State,
        packet: &mut Packet,
        now: SimTime,
        backlog: u64,
        marks: &mut CeMarks,
    ) -> Option<DropReason>;

    /// The flow queue's next packet through its AQM, which may drop head packets on the way
    /// (into `drops`) or mark the packet it yields; `None` when the flow queue is empty.
    fn dequeue(
        &mut self,
        state: &mut Self::State,
        flow: &mut FlowView<'_>,
        now: SimTime,
        drops: &mut impl DropSink,
        marks: &mut CeMarks,
    ) -> Option<Packet>;

    /// The flow queues' states summed up for the time series (`QueueDiscipline::aqm_state`).
    fn summary<'a>(states: impl Iterator<Item = &'a Self::State>) -> AqmState
    where
        Self::State: 'a;
}

/// Where a flow queue is in the scheduler (RFC 8290 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum List {
    None,
    New,
    Old,
}

/// The first and last of a flow queue's slots in the slab (`NIL` when empty).
#[derive(Debug)]
pub(super) struct Ends {
    head: u32,
    tail: u32,
}

impl Ends {
    /// Link `slot` at the tail.
    #[inline]
    fn push_back(&mut self, slab: &mut Slab, slot: u32) {
        if self.tail == NIL {
            self.head = slot;
        } else {
            slab.slots[self.tail as usize].next = slot;
        }
        self.tail = slot;
    }

    /// Unlink the head packet and free its slot.
    #[inline]
    fn pop_front(&mut self, slab: &mut Slab) -> Option<Packet> {
        if self.head == NIL {
            return None;
        }
        let slot = self.head;
        self.head = slab.slots[slot as usize].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        Some(slab.remove(slot))
    }
}

/// How far behind the old flows' front DRR++ asks for a queue's line (see
/// [`FlowQueues::prefetch_along_old_flows`]).
const OLD_FLOWS_AHEAD: u32 = 8;

/// Entries per block of a [`FlowList`]'s bytes (fewer when the whole ring is smaller).
const BLOCK: usize = 64;

/// A list of flow queues in DRR++ order (the new or the old flows), first in first out: a queue
/// joins at the back and leaves from the front. A ring of a power-of-two size, at least the
/// number of flow queues (a queue is in one list at most), so it never fills. Positions are
/// absolute (they count every queue that ever joined, wrapping at 2^32); a listed queue remembers
/// its own, and its entry is at `position & mask`.
///
/// Beside each listed queue the ring holds that queue's bytes (a place no queue is listed at
/// holds zero), so that the search for the fattest queue at the limit need not visit every
/// listed queue: at the limit of a large run most of a few thousand listed queues are empty or
/// hold a packet, and a search per drop over all of them was a twentieth of the run. The ring is
/// cut into blocks of [`BLOCK`] places, and each block keeps its largest count and how many of
/// its places hold it, updated as a count changes. A block whose last place at its largest count
/// goes down is marked stale and counted again at the next search. A search then reads the
/// blocks' largest counts, recounts the few stale blocks, and scans one block in list order.
#[derive(Debug)]
pub(super) struct FlowList {
    ids: Box<[u32]>,
    bytes: Box<[u64]>,
    /// Per block: its largest count and the number of its places holding it (exact unless the
    /// block is stale).
    block_max: Box<[(u64, u32)]>,
    /// Bit `b` of word `b / 64`: block `b` is stale.
    stale: Box<[u64]>,
    block_shift: u32,
    /// The position of the front.
    start: u32,
    len: u32,
    mask: u32,
}

impl FlowList {
    fn with_room_for(queues: usize) -> Self {
        let size = queues.max(1).next_power_of_two();
        let block = BLOCK.min(size);
        let blocks = size / block;
        FlowList {
            ids: vec![0; size].into_boxed_slice(),
            bytes: vec![0; size].into_boxed_slice(),
            block_max: vec![(0, block as u32); blocks].into_boxed_slice(),
            stale: vec![0; blocks.div_ceil(64)].into_boxed_slice(),
            block_shift: block.trailing_zeros(),
            start: 0,
            len: 0,
            mask: (size - 1) as u32,
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The queue at the front.
    #[inline]
    fn front(&self) -> Option<u32> {
        (self.len > 0).then(|| self.ids[(self.start & self.mask) as usize])
    }

    /// The queue `k` places behind the front (DRR++ visits it after those before it leave).
    #[inline]
    fn behind_front(&self, k: u32) -> Option<u32> {
        (self.len > k).then(|| self.ids[(self.start.wrapping_add(k) & self.mask) as usize])
    }

    /// Queue `id`, holding `bytes`, joins at the back; returns its position.
    #[inline]
    fn push_back(&mut self, id: u32, bytes: u64) -> u32 {
        let position = self.start.wrapping_add(self.len);
        let at = (position & self.mask) as usize;
        self.ids[at] = id;
        self.write(at, bytes);
        self.len += 1;
        position
    }

    /// The front leaves; its place holds zero again.
    #[inline]
    fn pop_front(&mut self) {
        debug_assert!(self.len > 0);
        self.write((self.start & self.mask) as usize, 0);
        self.start = self.start.wrapping_add(1);
        self.len -= 1;
    }

    /// The bytes of the queue listed at `position`.
    #[inline]
    fn get(&self, position: u32) -> u64 {
        self.bytes[(position & self.mask) as usize]
    }

    /// Set the bytes of the queue listed at `position`.
    #[inline]
    fn set(&mut self, position: u32, bytes: u64) {
        self.write((position & self.mask) as usize, bytes);
    }

    /// The queue listed at `position` lost a packet of `size` bytes.
    #[inline]
    fn remove(&mut self, position: u32, size: u64) {
        self.set(position, self.get(position) - size);
    }

    /// Write a place's count and keep its block's largest count and its multiplicity.
    #[inline]
    fn write(&mut self, at: usize, new: u64) {
        let old = std::mem::replace(&mut self.bytes[at], new);
        let b = at >> self.block_shift;
        if new == old || self.stale[b / 64] & (1 << (b % 64)) != 0 {
            return; // nothing moved, or the block is counted again at the next search anyway
        }
        let (max, count) = &mut self.block_max[b];
        if new > *max {
            (*max, *count) = (new, 1);
        } else if new == *max {
            *count += 1;
        } else if old == *max {
            *count -= 1;
            if *count == 0 {
                self.stale[b / 64] |= 1 << (b % 64);
            }
        }
    }

    /// Count the stale blocks' largest counts again.
    fn refresh(&mut self) {
        let block = 1usize << self.block_shift;
        for w in 0..self.stale.len() {
            while self.stale[w] != 0 {
                let b = w * 64 + self.stale[w].trailing_zeros() as usize;
                self.stale[w] &= self.stale[w] - 1;
                let places = &self.bytes[b * block..(b + 1) * block];
                let max = places.iter().copied().fold(0, u64::max);
                self.block_max[b] = (max, places.iter().filter(|&&n| n == max).count() as u32);
            }
        }
    }

    /// The listed queue holding the most bytes, the first in list order among equals, with its
    /// bytes (`(0, None)` when no listed queue holds any).
    fn fattest(&mut self) -> (u64, Option<u32>) {
        if self.len == 0 {
            return (0, None);
        }
        self.refresh();
        // Only the blocks the list spans, from the front's: a block wholly outside the list
        // holds zeros (its largest count, counted again if stale, is zero), and a large run's
        // list spans a few of the ring's blocks (the new flows a handful of places).
        let block = 1usize << self.block_shift;
        let blocks = self.block_max.len();
        let front = (self.start & self.mask) as usize;
        let first_block = front / block;
        let spanned = (front % block + self.len as usize).div_ceil(block).min(blocks);
        let most = (0..spanned).map(|k| self.block_max[(first_block + k) % blocks].0).fold(0, u64::max);
        if most == 0 {
            return (0, None);
        }
        // List order from the front: the rest of the front's block, the blocks after it round
        // the ring, then the front's block up to the front (reached only when the list wraps
        // all the way round). A place outside the list holds zero, so any place holding `most`
        // is a listed queue's.
        let first_in = |lo: usize, hi: usize| (lo..hi).find(|&at| self.bytes[at] == most);
        let found = first_in(front, (first_block + 1) * block)
            .or_else(|| {
                (1..spanned)
                    .map(|k| (first_block + k) % blocks)
                    .filter(|&b| self.block_max[b].0 == most)
                    .find_map(|b| first_in(b * block, (b + 1) * block))
            })
            .or_else(|| first_in(first_block * block, front));
        (most, found.map(|at| self.ids[at]))
    }

    /// The listed queues, front first (for tests).
    #[cfg(test)]
    pub(super) fn ids(&self) -> Vec<u32> {
        (0..self.len).map(|k| self.ids[(self.start.wrapping_add(k) & self.mask) as usize]).collect()
    }
}

/// Aligned to a cache line: with CoDel a flow queue is 64 bytes, and unaligned (a large `Vec`'s
/// buffer starts 16 bytes into a line) every queue would straddle two lines, the second never
/// asked for by the prefetches that name the queue.
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct FlowQueue<S> {
    ends: Ends,
    /// DRR++ credit in bytes; may go negative by up to a packet (§4.2).
    pub(super) deficit: i64,
    aqm: S,
    pub(super) list: List,
    /// Its position in its list (see [`FlowList`]), while it is in one.
    position: u32,
}

/// One flow queue as its AQM sees it: its head, its bytes, and the whole backlog for CoDel's MTU
/// rule (RFC 8289 §4.2), as Linux's `fq_codel` gives each flow's CoDel the qdisc's backlog.
#[derive(Debug)]
pub struct FlowView<'a> {
    ends: &'a mut Ends,
    /// The list the flow queue is in, and its position there, where its bytes are counted.
    list: &'a mut FlowList,
    position: u32,
    slab: &'a mut Slab,
    total_packets: &'a mut u64,
    total_bytes: &'a mut u64,
    max_packet: u64,
}

impl FlowView<'_> {
    /// Bytes still queued in this flow queue (after the last `pop_head`).
    #[inline]
    pub fn flow_bytes(&self) -> u64 {
        self.list.get(self.position)
    }
}

impl HeadQueue for FlowView<'_> {
    #[inline]
    fn pop_head(&mut self) -> Option<Packet> {
        let packet = self.ends.pop_front(self.slab)?;
        let size = packet.wire_bytes as u64;
        self.list.remove(self.position, size);
        *self.total_packets -= 1;
        *self.total_bytes -= size;
        Some(packet)
    }

    #[inline]
    fn bytes(&self) -> u64 {
        *self.total_bytes
    }

    #[inline]
    fn max_packet(&self) -> u64 {
        self.max_packet
    }
}

/// Flow queues under DRR++, each with an AQM `A`.
#[derive(Debug)]
pub struct FlowQueues<A: FlowAqm> {
    aqm: A,
    config: SchedulerConfig,
    pub(super) queues: Vec<FlowQueue<A::State>>,
    pub(super) slab: Slab,
    /// The new and the old flows, each listed queue with its bytes (a queue in neither holds none).
    pub(super) new_flows: FlowList,
    pub(super) old_flows: FlowList,
    packets: u64,
    bytes: u64,
    /// The largest packet seen: the MTU for CoDel's non-starvation rule.
    max_packet: u64,
    /// Packets the flow queues' AQMs marked CE instead of dropping.
    marks: CeMarks,
}

impl<A: FlowAqm> FlowQueues<A> {
    /// `config.flows` empty flow queues (at least one), each under `aqm`.
    pub fn with_aqm(config: SchedulerConfig, aqm: A) -> Self {
        let n = config.flows.max(1) as usize;
        let queues = (0..n)
            .map(|_| FlowQueue {
                ends: Ends { head: NIL, tail: NIL },
                deficit: 0,
                aqm: aqm.initial_state(),
                list: List::None,
                position: 0,
            })
            .collect();
        FlowQueues {
            aqm,
            config,
            queues,
            slab: Slab::default(),
            new_flows: FlowList::with_room_for(n),
            old_flows: FlowList::with_room_for(n),
            packets: 0,
            bytes: 0,
            max_packet: 0,
            marks: CeMarks::default(),
        }
    }

    /// The flow queue of a packet (see the module comment: a modulo of the flow id).
    #[inline]
    fn classify(&self, packet: &Packet) -> usize {
        (packet.flow % self.queues.len() as u32) as usize
    }

    /// Ask for the line of the flow queue `flow`'s packets go to (see `Channel::prefetch_queue_for`).
    #[inline]
    pub fn prefetch_for(&self, flow: u32) {
        prefetch_read_data::<_, 3>(&self.queues[(flow % self.queues.len() as u32) as usize]);
    }

    /// The backlogged queue holding the most bytes, the first listed among equals (every
    /// backlogged queue is in one of the two lists; the new flows are listed before the old).
    fn fattest(&mut self) -> usize {
        let (in_new, i_new) = self.new_flows.fattest();
        let (in_old, i_old) = self.old_flows.fattest();
        let i = if in_old > in_new { i_old } else { i_new.or(i_old) };
        i.map_or(usize::MAX, |i| i as usize)
    }

    /// The list a flow queue in `list` is in (none for `List::None`).
    #[inline]
    fn list_mut(&mut self, list: List) -> Option<&mut FlowList> {
        match list {
            List::None => None,
            List::New => Some(&mut self.new_flows),
            List::Old => Some(&mut self.old_flows),
        }
    }

    /// Ask for the line of the old flow [`OLD_FLOWS_AHEAD`] places behind the front, as DRR++
    /// visits the front. Turns go round the old flows in list order, about one a transmission
    /// on a large run, and most find their queue empty (it left the new flows after one
    /// packet) and only take it off the list: each such turn read a line last touched a whole
    /// round earlier, out of the caches, and several came in a row, one miss waiting for the
    /// other. Asked for this far ahead, the line is in the caches by its turn.
    #[inline]
    fn prefetch_along_old_flows(&self) {
        if let Some(ahead) = self.old_flows.behind_front(OLD_FLOWS_AHEAD) {
            prefetch_read_data::<_, 3>(&self.queues[ahead as usize]);
        }
    }

    /// Ask for what DRR++ reads at its next turns, on a large run far from the caches and needed
    /// within a transmission or two: the line of the queue after the one served (asked for at
    /// the turn before, and so readable now) and its head packet's slot, and the line of the
    /// queue after that. The order of turns is a guess (the served queue may keep its turn, a
    /// new flow may come first); a prefetch changes nothing but the time.
    #[inline]
    fn prefetch_next_turns(&self, from_new: bool) {
        let list = if from_new { &self.new_flows } else { &self.old_flows };
        if let Some(next) = list.behind_front(1).or(self.old_flows.front()) {
            let q = &self.queues[next as usize];
            prefetch_read_data::<_, 3>(q);
            if let Some(slot) = self.slab.slots.get(q.ends.head as usize) {
                prefetch_read_data::<_, 3>(slot);
            }
        }
        if let Some(after) = list.behind_front(2) {
            prefetch_read_data::<_, 3>(&self.queues[after as usize]);
        }
    }

    /// The bytes queued in flow queue `i` (none when it is in no list).
    #[inline]
    fn backlog(&self, i: usize) -> u64 {
        let q = &self.queues[i];
        let list = match q.list {
            List::None => return 0,
            List::New => &self.new_flows,
            List::Old => &self.old_flows,
        };
        list.get(q.position)
    }

    /// Unlink the head packet of flow queue `i`, counted out of the backlog.
    #[inline]
    fn drop_head(&mut self, i: usize) -> Option<Packet> {
        let q = &mut self.queues[i];
        let packet = q.ends.pop_front(&mut self.slab)?;
        let size = packet.wire_bytes as u64;
        let (list, position) = (q.list, q.position);
        if let Some(list) = self.list_mut(list) {
            list.remove(position, size);
        }
        self.packets -= 1;
        self.bytes -= size;
        Some(packet)
    }

    /// Over a limit: the fattest queue loses its head packet, and more (into `drops`) up to
    /// the drop batch while less than half its bytes are gone. It stays in its list, even
    /// emptied: DRR++ then finds it empty and moves on.
    fn drop_from_fattest(&mut self, drops: &mut impl DropSink) -> (Packet, DropReason) {
        let fattest = self.fattest();
        let half = self.backlog(fattest) / 2;
        let first = self.drop_head(fattest).expect("the fattest queue holds packets");
        let (mut count, mut dropped) = (1, first.wire_bytes as u64);
        while count < self.config.drop_batch && dropped < half {
            let Some(victim) = self.drop_head(fattest) else { break };
            dropped += victim.wire_bytes as u64;
            count += 1;
            drops.dropped(victim, DropReason::QueueFull);
        }
        (first, DropReason::QueueFull)
    }

    /// Bytes queued in flow queue `i` (for tests and inspection).
    pub fn flow_bytes(&self, i: usize) -> u64 {
        self.backlog(i)
    }

    /// Flow queue `i`'s AQM state (for tests and inspection).
    pub fn flow_aqm_state(&self, i: usize) -> &A::State {
        &self.queues[i].aqm
    }
}

impl<A: FlowAqm> QueueDiscipline for FlowQueues<A> {
    /// RFC 8290 §4.1: classify, let the flow queue's AQM judge the arrival, queue it and
    /// activate the flow queue as a new flow; over a limit, drop from the head of the fattest
    /// queue (§4.1).
    #[inline]
    fn enqueue(
        &mut self,
        mut packet: Packet,
        now: SimTime,
        drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        let i = self.classify(&packet);
        let backlog = self.backlog(i);
        if let Some(reason) = self.aqm.on_arrival(&mut self.queues[i].aqm, &mut packet, now, backlog, &mut self.marks) {
            return Err((packet, reason));
        }
        let size = packet.wire_bytes as u64;
        self.max_packet = self.max_packet.max(size);
        let slot = self.slab.insert(packet);
        let q = &mut self.queues[i];
        q.ends.push_back(&mut self.slab, slot);
        match q.list {
            List::New => self.new_flows.set(q.position, backlog + size),
            List::Old => self.old_flows.set(q.position, backlog + size),
            List::None => {
                // §4.1: a queue that becomes active is a new flow, with one quantum of credit.
                q.list = List::New;
                q.deficit = self.config.quantum as i64;
                q.position = self.new_flows.push_back(i as u32, size);
            }
        }
        self.packets += 1;
        self.bytes += size;
        if self.packets <= self.config.limit_packets && self.bytes <= self.config.memory_limit {
            return Ok(());
        }
        Err(self.drop_from_fattest(drops))
    }

    /// RFC 8290 §4.2: DRR++ over the new flows, then the old ones, each flow queue dequeued
    /// through its AQM (§4.2).
    #[inline]
    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        loop {
            let (from_new, i) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(i), _) => (true, i as usize),
                (None, Some(i)) => (false, i as usize),
                (None, None) => return Dequeue::Empty,
            };
            if !from_new {
                self.prefetch_along_old_flows();
            }
            let q = &mut self.queues[i];
            let list = if from_new { &mut self.new_flows } else { &mut self.old_flows };
            if q.deficit <= 0 {
                // Its credit spent: another quantum, and to the end of the old flows.
                let bytes = list.get(q.position);
                q.deficit += self.config.quantum as i64;
                q.list = List::Old;
                list.pop_front();
                q.position = self.old_flows.push_back(i as u32, bytes);
                continue;
            }
            let mut state = q.aqm;
            let mut view = FlowView {
                ends: &mut q.ends,
                list,
                position: q.position,
                slab: &mut self.slab,
                total_packets: &mut self.packets,
                total_bytes: &mut self.bytes,
                max_packet: self.max_packet,
            };
            let sent = self.aqm.dequeue(&mut state, &mut view, now, drops, &mut self.marks);
            let q = &mut self.queues[i];
            q.aqm = state;
            match sent {
                Some(packet) => {
                    q.deficit -= packet.wire_bytes as i64;
                    self.prefetch_next_turns(from_new);
                    return Dequeue::Packet(packet);
                }
                None => {
                    // Empty: a new flow goes to the end of the old flows (so that it cannot
                    // return as new at once and starve them); an old one leaves the lists.
                    q.list = if from_new { List::Old } else { List::None };
                    if from_new {
                        self.new_flows.pop_front();
                        q.position = self.old_flows.push_back(i as u32, 0);
                    } else {
                        self.old_flows.pop_front();
                    }
                }
            }
        }
    }

    fn len_packets(&self) -> u64 {
        self.packets
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn ce_marks(&self) -> CeMarks {
        self.marks
    }

    fn aqm_state(&self) -> AqmState {
        A::summary(self.queues.iter().map(|q| &q.aqm))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A list operation: a queue joins with some bytes, the front leaves, or a listed queue's
    /// count changes (an arrival, a departure, a drop).
    #[derive(Debug, Clone)]
    enum Op {
        Join(u64),
        Leave,
        Change { which: usize, bytes: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct counts, so that ties (the case list order decides) are common.
        let bytes = prop_oneof![Just(0u64), Just(1500), Just(3000), Just(4500), 0..10_000u64];
        prop_oneof![
            bytes.clone().prop_map(Op::Join),
            Just(Op::Leave),
            (any::<usize>(), bytes).prop_map(|(which, bytes)| Op::Change { which, bytes }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// The blocks' largest counts find what a scan of every listed queue in order finds:
        /// the most bytes, and the first listed queue holding them, through joins and leaves
        /// that carry the list round its ring many times.
        #[test]
        fn the_fattest_is_the_first_listed_among_the_largest_as_a_scan_finds_it(
            queues in prop_oneof![Just(1usize), Just(5), Just(64), Just(200)],
            ops in proptest::collection::vec(op(), 0..3_000),
        ) {
            let mut list = FlowList::with_room_for(queues);
            // The listed queues in order, with their positions and bytes, as a scan sees them.
            let mut listed: std::collections::VecDeque<(u32, u32, u64)> = Default::default();
            let mut next_id = 0u32;
            for op in ops {
                match op {
                    Op::Join(bytes) if listed.len() < queues => {
                        let position = list.push_back(next_id, bytes);
                        listed.push_back((next_id, position, bytes));
                        next_id += 1;
                    }
                    Op::Join(_) => {}
                    Op::Leave => {
                        if listed.pop_front().is_some() {
                            list.pop_front();
                        }
                    }
                    Op::Change { which, bytes } => {
                        if !listed.is_empty() {
                            let k = which % listed.len();
                            let entry = &mut listed[k];
                            list.set(entry.1, bytes);
                            entry.2 = bytes;
                        }
                    }
                }
                let mut expected = (0u64, None);
                for &(id, _, bytes) in &listed {
                    if bytes > expected.0 {
                        expected = (bytes, Some(id));
                    }
                }
                prop_assert_eq!(list.fattest(), expected);
                prop_assert_eq!(list.ids(), listed.iter().map(|e| e.0).collect::<Vec<_>>());
            }
        }
    }
}
