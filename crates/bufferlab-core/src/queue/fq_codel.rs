//! FQ-CoDel, the Flow Queue CoDel packet scheduler and AQM (RFC 8290; Linux `fq_codel`).
//!
//! Packets are classified into `flows` flow queues (default 1024) by their flow: queue
//! `flow mod flows`. A plain modulo, not a keyed hash: the engine's flow ids are dense indices
//! (0, 1, 2, ...), so the modulo gives up to `flows` flows a queue each (the collision-free case
//! that RFC 8290 §4.1's hash approximates with high probability) and, beyond, shares queues
//! the same way in every run, with no seed to draw. Each flow queue is a FIFO under its own CoDel
//! ([`CodelControl`], RFC 8290 §2). The queues are served by DRR++ (§3, §4.2): a queue that
//! becomes active joins the list of new flows with a deficit of one `quantum` (default 1514 bytes,
//! §4.1) and is served before the old flows; a queue whose deficit is spent gets another quantum
//! and moves to the end of the old flows; a new queue found empty moves to the old flows (so that
//! it cannot come back as new at once and starve them), an old one found empty leaves the lists.
//!
//! At the limit (packets, default 10240 as Linux), the arrival is queued and a packet is dropped
//! from the head of the queue holding the most bytes (§4.1, §5.2.3; Linux's `fq_codel_drop`, one packet
//! per arrival here), handed back as the refused packet ([`DropReason::QueueFull`]): one in, one
//! out. CoDel's head drops at dequeue go to the caller's [`DropSink`] ([`DropReason::Aqm`]).
//!
//! The packets of all flow queues share one slab ([`Slab`]): a flow queue is a linked list of its
//! slots (head, tail, each slot naming the next), as Linux's flow queues are lists of packets. The
//! slab holds as many slots as the backlog was ever deep (at most the limit), so with 10,000 flows
//! the packets stay in one small, cache-warm array instead of 10,000 buffers of their own, and a
//! flow queue is its list ends, deficit and CoDel's state (64 bytes, a cache line) and its byte
//! count, kept in a dense array of its own for the search of the fattest queue at the limit. The
//! two lists of flows are preallocated for every queue: nothing is allocated per packet once the
//! slab has grown to the backlog's working depth.

use super::codel::{CodelControl, CodelParams, HeadQueue};
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
struct Slab {
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
}

/// The parameters of an FQ-CoDel queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FqCodelConfig {
    pub codel: CodelParams,
    /// Packets queued in all flow queues together before the fattest is dropped from.
    pub limit_packets: u64,
    /// Number of flow queues (RFC 8290 §5.2.5; at least 1).
    pub flows: u32,
    /// DRR++'s quantum in bytes (§3, §5.2.4).
    pub quantum: u32,
}

/// Where a flow queue is in the scheduler (RFC 8290 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug)]
struct FlowQueue {
    /// The first and last of its slots in the slab (`NIL` when empty).
    head: u32,
    tail: u32,
    /// DRR++ credit in bytes; may go negative by up to a packet (§4.2).
    deficit: i64,
    codel: CodelControl,
    list: List,
}

impl FlowQueue {
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

/// One flow queue as CoDel sees it: its head, and the whole FQ-CoDel backlog for the MTU rule
/// (RFC 8289 §4.2), as Linux's `fq_codel` gives each flow's CoDel the qdisc's backlog.
struct FlowView<'a> {
    flow: &'a mut FlowQueue,
    flow_bytes: &'a mut u64,
    slab: &'a mut Slab,
    total_packets: &'a mut u64,
    total_bytes: &'a mut u64,
    max_packet: u64,
}

impl HeadQueue for FlowView<'_> {
    #[inline]
    fn pop_head(&mut self) -> Option<Packet> {
        let packet = self.flow.pop_front(self.slab)?;
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

/// FQ-CoDel (RFC 8290).
#[derive(Debug)]
pub struct FqCodel {
    config: FqCodelConfig,
    queues: Vec<FlowQueue>,
    /// The bytes in each flow queue, apart from the rest of its state: the search for the
    /// fattest queue at the limit reads this dense array alone.
    backlogs: Vec<u64>,
    slab: Slab,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    packets: u64,
    bytes: u64,
    /// The largest packet seen: the MTU for CoDel's non-starvation rule.
    max_packet: u64,
    /// Packets the flow queues' CoDels marked CE instead of dropping (RFC 8290 §5.2.6 with `ecn`).
    marks: CeMarks,
}

impl FqCodel {
    pub fn new(config: FqCodelConfig) -> Self {
        let n = config.flows.max(1) as usize;
        let queues = (0..n)
            .map(|_| FlowQueue { head: NIL, tail: NIL, deficit: 0, codel: CodelControl::default(), list: List::None })
            .collect();
        FqCodel {
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

    /// Bytes queued in flow queue `i` (for tests and inspection).
    pub fn flow_bytes(&self, i: usize) -> u64 {
        self.backlogs[i]
    }
}

impl QueueDiscipline for FqCodel {
    /// RFC 8290 §4.1: classify, queue, and activate the flow queue as a new flow; at the limit,
    /// drop from the head of the fattest queue (§4.1).
    #[inline]
    fn enqueue(&mut self, packet: Packet, _now: SimTime) -> Result<(), (Packet, DropReason)> {
        let i = self.classify(&packet);
        let size = packet.wire_bytes as u64;
        self.max_packet = self.max_packet.max(size);
        let slot = self.slab.insert(packet);
        let q = &mut self.queues[i];
        q.push_back(&mut self.slab, slot);
        self.backlogs[i] += size;
        if q.list == List::None {
            // §4.1: a queue that becomes active is a new flow, with one quantum of credit.
            q.list = List::New;
            q.deficit = self.config.quantum as i64;
            self.new_flows.push_back(i as u32);
        }
        self.packets += 1;
        self.bytes += size;
        if self.packets <= self.config.limit_packets {
            return Ok(());
        }
        // §4.1: over the limit, the queue with the largest backlog loses its head packet. It
        // stays in its list (it holds the arrival or is the fattest: never left empty unless
        // it held a single packet, which DRR++ then finds empty and moves on).
        let fattest = self.fattest();
        let q = &mut self.queues[fattest];
        let victim = q.pop_front(&mut self.slab).expect("the fattest queue holds packets");
        let victim_size = victim.wire_bytes as u64;
        self.backlogs[fattest] -= victim_size;
        self.packets -= 1;
        self.bytes -= victim_size;
        Err((victim, DropReason::QueueFull))
    }

    /// RFC 8290 §4.2: DRR++ over the new flows, then the old ones, each flow queue dequeued
    /// through its CoDel (§4.2).
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
            let mut codel = q.codel;
            let mut view = FlowView {
                flow: q,
                flow_bytes: &mut self.backlogs[i],
                slab: &mut self.slab,
                total_packets: &mut self.packets,
                total_bytes: &mut self.bytes,
                max_packet: self.max_packet,
            };
            let sent = codel.dequeue(&self.config.codel, &mut view, now, drops, &mut self.marks);
            let q = &mut self.queues[i];
            q.codel = codel;
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

    /// The flow queues in CoDel's dropping state, and the largest count among them.
    fn aqm_state(&self) -> AqmState {
        let dropping = self.queues.iter().filter(|q| q.codel.dropping());
        let (queues, count) = dropping.fold((0, 0), |(n, c), q| (n + 1, c.max(q.codel.count() as u64)));
        AqmState { probability: None, signal: None, state: Some(queues), count: Some(count) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;

    const MS: SimTime = SimTime::from_ms(1);

    fn packet(flow: u32, seq: u64, bytes: u32, at: SimTime) -> Packet {
        Packet { enqueued_at: at, ..Packet::segment(flow, 0, 0, seq, bytes - 52, bytes, at) }
    }

    fn fq(flows: u32, limit: u64) -> FqCodel {
        FqCodel::new(FqCodelConfig { codel: CodelParams::default(), limit_packets: limit, flows, quantum: 1514 })
    }

    /// A packet by its flow and sequence number.
    type Id = (u32, u64);

    /// Dequeue at `now`: the packet sent, and those CoDel dropped.
    fn dequeue(q: &mut FqCodel, now: SimTime) -> (Option<Id>, Vec<Id>) {
        let mut dropped = Vec::new();
        let sent = q.dequeue(now, &mut |p: Packet, reason| {
            assert_eq!(reason, DropReason::Aqm);
            dropped.push((p.flow, p.seq));
        });
        (if let Dequeue::Packet(p) = sent { Some((p.flow, p.seq)) } else { None }, dropped)
    }

    #[test]
    fn the_slab_grows_to_the_deepest_backlog_and_reuses_its_slots() {
        // 100 rounds of 50 packets in and out over 1000 flows: 50 slots, whatever the churn.
        let mut q = fq(1024, 10_000);
        let mut now = SimTime::ZERO;
        for round in 0..100u64 {
            for k in 0..50u64 {
                let flow = ((round * 50 + k) % 1000) as u32;
                q.enqueue(packet(flow, round, 1500, now), now).unwrap();
            }
            for _ in 0..50 {
                assert!(dequeue(&mut q, now).0.is_some());
                now += SimTime::from_us(1);
            }
            assert_eq!(q.len_packets(), 0);
        }
        assert_eq!(q.slab.slots.len(), 50);
        assert!(std::mem::size_of::<FlowQueue>() <= 64, "a flow queue's state fits a cache line");
    }

    #[test]
    fn flows_map_to_queues_by_their_id_modulo_the_number_of_queues() {
        let mut q = fq(4, 100);
        for flow in [0, 1, 5, 4] {
            q.enqueue(packet(flow, 0, 1000, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        assert_eq!((0..4).map(|i| q.flow_bytes(i)).collect::<Vec<_>>(), vec![2000, 2000, 0, 0]);
    }

    #[test]
    fn a_sparse_flow_is_served_before_a_backlogged_one() {
        // Flow 0 has 20 packets queued and has been served; flow 1 sends one packet: as a new
        // flow it goes next (RFC 8290 §4.2, DRR++), not after flow 0's backlog.
        let mut q = fq(16, 1000);
        for seq in 0..20 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((0, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((0, 1)));
        q.enqueue(packet(1, 0, 100, SimTime::ZERO), SimTime::ZERO).unwrap();
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((1, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((0, 2)));
    }

    #[test]
    fn backlogged_flows_share_bytes_equally_whatever_their_packet_sizes() {
        // Flow 0 sends 1500-byte packets, flow 1 300-byte ones: each gets the same bytes.
        let mut q = fq(16, 10_000);
        for seq in 0..500 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        for seq in 0..2500 {
            q.enqueue(packet(1, seq, 300, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        let mut bytes = [0u64; 2];
        // Dequeued at time zero: nothing waits, CoDel never drops.
        for _ in 0..1200 {
            let (Some((flow, _)), dropped) = dequeue(&mut q, SimTime::ZERO) else { panic!("backlogged") };
            assert!(dropped.is_empty());
            bytes[flow as usize] += if flow == 0 { 1500 } else { 300 };
        }
        let (a, b) = (bytes[0] as f64, bytes[1] as f64);
        assert!((a / b - 1.0).abs() < 0.01, "bytes {bytes:?}");
    }

    #[test]
    fn at_the_limit_the_fattest_queue_loses_its_head() {
        let mut q = fq(16, 5);
        for seq in 0..3 {
            q.enqueue(packet(2, seq, 1500, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        q.enqueue(packet(3, 0, 100, SimTime::ZERO), SimTime::ZERO).unwrap();
        q.enqueue(packet(4, 0, 100, SimTime::ZERO), SimTime::ZERO).unwrap();
        // The sixth packet, of the thin flow 4: flow 2 (4500 bytes) loses its head instead.
        let (victim, reason) = q.enqueue(packet(4, 1, 100, SimTime::ZERO), SimTime::ZERO).unwrap_err();
        assert_eq!(((victim.flow, victim.seq), reason), ((2, 0), DropReason::QueueFull));
        assert_eq!((q.len_packets(), q.len_bytes(), q.flow_bytes(4)), (5, 3000 + 300, 200));
    }

    #[test]
    fn codel_drops_only_from_the_flow_that_keeps_a_standing_queue() {
        // Flow 0 keeps a standing queue (all its packets arrived at time zero); flow 1 sends a
        // packet every millisecond and never waits long. Each flow's CoDel judges its own
        // sojourn times: only flow 0 is dropped from.
        let mut q = fq(16, 100_000);
        for seq in 0..5000 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        let (mut dropped, mut sent) = (Vec::new(), 0);
        let mut seq1 = 0;
        let mut now = SimTime::ZERO;
        while now < SimTime::from_ms(400) {
            if now.0.is_multiple_of(MS.0) {
                q.enqueue(packet(1, seq1, 1500, now), now).unwrap();
                seq1 += 1;
            }
            let (packet, drops) = dequeue(&mut q, now);
            sent += packet.is_some() as u64;
            dropped.extend(drops);
            now += SimTime::from_us(100);
        }
        assert!(dropped.len() > 2, "{dropped:?}");
        assert!(dropped.iter().all(|&(flow, _)| flow == 0), "{dropped:?}");
        assert_eq!(q.len_packets(), 5000 + seq1 - dropped.len() as u64 - sent);
    }

    #[test]
    fn an_emptied_new_flow_goes_to_the_old_list_then_leaves() {
        let mut q = fq(16, 100);
        q.enqueue(packet(1, 0, 1000, SimTime::ZERO), SimTime::ZERO).unwrap();
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((1, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO), (None, vec![]));
        assert!(q.new_flows.is_empty() && q.old_flows.is_empty());
        assert_eq!(q.queues[1].list, List::None);
        // Back as a new flow with a fresh quantum.
        q.enqueue(packet(1, 1, 1000, SimTime::ZERO), SimTime::ZERO).unwrap();
        assert_eq!((q.new_flows.len(), q.queues[1].deficit), (1, 1514));
    }

    #[test]
    fn with_ecn_each_flow_queues_codel_marks_ect_packets_and_drops_the_others() {
        // Two standing flow queues, flow 0 ECN-capable, flow 1 not, served alternately every
        // 10 µs: RFC 8290 §5.2.6: the per-queue CoDel marks flow 0's packets where it drops flow 1's.
        let codel = CodelParams { ecn: true, ..CodelParams::default() };
        let mut q = FqCodel::new(FqCodelConfig { codel, limit_packets: 100_000, flows: 4, quantum: 1514 });
        for seq in 0..20_000 {
            let ect = Packet { ecn: Ecn::Ect0, ..packet(0, seq, 1500, SimTime::ZERO) };
            q.enqueue(ect, SimTime::ZERO).unwrap();
            q.enqueue(packet(1, seq, 1500, SimTime::ZERO), SimTime::ZERO).unwrap();
        }
        let (mut marked, mut dropped) = ([0u64; 2], [0u64; 2]);
        let mut now = SimTime::from_ms(10);
        while now < SimTime::from_ms(400) {
            let sent = q.dequeue(now, &mut |p: Packet, _| dropped[p.flow as usize] += 1);
            if let Dequeue::Packet(p) = sent {
                marked[p.flow as usize] += (p.ecn == Ecn::Ce) as u64;
            }
            now += SimTime::from_us(10);
        }
        assert!(marked[0] >= 3 && dropped[0] == 0, "ECT flow: {} marks, {} drops", marked[0], dropped[0]);
        assert!(dropped[1] >= 3 && marked[1] == 0, "Not-ECT flow: {} marks, {} drops", marked[1], dropped[1]);
        assert_eq!(q.ce_marks(), CeMarks { packets: marked[0], bytes: 1500 * marked[0] });
    }
}
