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
//! flow queue is its list ends, deficit and AQM state (with CoDel, 64 bytes: a cache line) and its
//! byte count, kept in a dense array of its own for the search of the fattest queue at the limit.
//! The two lists of flows are preallocated for every queue: nothing is allocated per packet once
//! the slab has grown to the backlog's working depth.

use super::codel::HeadQueue;
use super::discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::Packet;
use crate::units::SimTime;
use std::collections::VecDeque;

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

#[derive(Debug)]
pub(super) struct FlowQueue<S> {
    ends: Ends,
    /// DRR++ credit in bytes; may go negative by up to a packet (§4.2).
    pub(super) deficit: i64,
    aqm: S,
    pub(super) list: List,
}

/// One flow queue as its AQM sees it: its head, its bytes, and the whole backlog for CoDel's MTU
/// rule (RFC 8289 §4.2), as Linux's `fq_codel` gives each flow's CoDel the qdisc's backlog.
#[derive(Debug)]
pub struct FlowView<'a> {
    ends: &'a mut Ends,
    flow_bytes: &'a mut u64,
    slab: &'a mut Slab,
    total_packets: &'a mut u64,
    total_bytes: &'a mut u64,
    max_packet: u64,
}

impl FlowView<'_> {
    /// Bytes still queued in this flow queue (after the last `pop_head`).
    #[inline]
    pub fn flow_bytes(&self) -> u64 {
        *self.flow_bytes
    }
}

impl HeadQueue for FlowView<'_> {
    #[inline]
    fn pop_head(&mut self) -> Option<Packet> {
        let packet = self.ends.pop_front(self.slab)?;
        let size = packet.wire_bytes as u64;
        *self.flow_bytes -= size;
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
    /// The bytes in each flow queue, apart from the rest of its state: the search for the
    /// fattest queue at the limit reads this dense array alone.
    backlogs: Vec<u64>,
    pub(super) slab: Slab,
    pub(super) new_flows: VecDeque<u32>,
    pub(super) old_flows: VecDeque<u32>,
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
            })
            .collect();
        FlowQueues {
            aqm,
            config,
            queues,
            backlogs: vec![0; n],
            slab: Slab::default(),
            new_flows: VecDeque::with_capacity(n),
            old_flows: VecDeque::with_capacity(n),
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

    /// The backlogged queue holding the most bytes, the first listed among equals (every
    /// backlogged queue is in one of the two lists).
    fn fattest(&self) -> usize {
        let mut best = (0u64, usize::MAX);
        for &i in self.new_flows.iter().chain(self.old_flows.iter()) {
            let bytes = self.backlogs[i as usize];
            if bytes > best.0 {
                best = (bytes, i as usize);
            }
        }
        best.1
    }

    /// Take the flow queue at the front of the new (or the old) flows off that list.
    #[inline]
    fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// Unlink the head packet of flow queue `i`, counted out of the backlog.
    #[inline]
    fn drop_head(&mut self, i: usize) -> Option<Packet> {
        let packet = self.queues[i].ends.pop_front(&mut self.slab)?;
        let size = packet.wire_bytes as u64;
        self.backlogs[i] -= size;
        self.packets -= 1;
        self.bytes -= size;
        Some(packet)
    }

    /// Over a limit: the fattest queue loses its head packet, and more (into `drops`) up to
    /// the drop batch while less than half its bytes are gone. It stays in its list, even
    /// emptied: DRR++ then finds it empty and moves on.
    fn drop_from_fattest(&mut self, drops: &mut impl DropSink) -> (Packet, DropReason) {
        let fattest = self.fattest();
        let half = self.backlogs[fattest] / 2;
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
        self.backlogs[i]
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
        let backlog = self.backlogs[i];
        if let Some(reason) = self.aqm.on_arrival(&mut self.queues[i].aqm, &mut packet, now, backlog, &mut self.marks) {
            return Err((packet, reason));
        }
        let size = packet.wire_bytes as u64;
        self.max_packet = self.max_packet.max(size);
        let slot = self.slab.insert(packet);
        let q = &mut self.queues[i];
        q.ends.push_back(&mut self.slab, slot);
        self.backlogs[i] += size;
        if q.list == List::None {
            // §4.1: a queue that becomes active is a new flow, with one quantum of credit.
            q.list = List::New;
            q.deficit = self.config.quantum as i64;
            self.new_flows.push_back(i as u32);
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
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return Dequeue::Empty,
            };
            let q = &mut self.queues[i];
            if q.deficit <= 0 {
                // Its credit spent: another quantum, and to the end of the old flows.
                q.deficit += self.config.quantum as i64;
                q.list = List::Old;
                self.pop_front(from_new);
                self.old_flows.push_back(i as u32);
                continue;
            }
            let mut state = q.aqm;
            let mut view = FlowView {
                ends: &mut q.ends,
                flow_bytes: &mut self.backlogs[i],
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
                    return Dequeue::Packet(packet);
                }
                None => {
                    // Empty: a new flow goes to the end of the old flows (so that it cannot
                    // return as new at once and starve them); an old one leaves the lists.
                    q.list = if from_new { List::Old } else { List::None };
                    self.pop_front(from_new);
                    if from_new {
                        self.old_flows.push_back(i as u32);
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
