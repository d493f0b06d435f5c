//! FQ-CoDel, the Flow Queue CoDel packet scheduler and AQM (RFC 8290; Linux `fq_codel`).
//!
//! Packets are classified into `flows` flow queues (default 1024) by their flow id modulo
//! `flows`, served by DRR++ with a quantum of `quantum` bytes (default 1514, §4.1), new flows
//! first: the scheduler of queue/flow_queues.rs. Each flow queue is a FIFO under its own CoDel
//! ([`CodelControl`], RFC 8290 §2), whose head drops at dequeue go to the caller's [`DropSink`]
//! ([`DropReason::Aqm`](super::DropReason::Aqm)); it admits every arrival.
//!
//! At the limit (packets, default 10240 as Linux; or `memory_limit` bytes), the arrival is
//! queued and packets are dropped from the head of the queue holding the most bytes (§4.1,
//! §5.2.3; Linux's `fq_codel_drop`): one per arrival, or with `drop_batch` a batch of up to that
//! many, stopping once half that queue's bytes are gone.

use super::codel::{CodelControl, CodelParams};
use super::discipline::{AqmState, CeMarks, DropReason, DropSink};
use super::flow_queues::{FlowAqm, FlowQueues, FlowView, SchedulerConfig};
use crate::net::packet::Packet;
use crate::units::SimTime;

/// The parameters of an FQ-CoDel queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FqCodelConfig {
    pub codel: CodelParams,
    /// The flow queues, their DRR++ quantum and the limits.
    pub scheduler: SchedulerConfig,
}

/// CoDel as each flow queue's AQM (RFC 8290 §4.2): nothing at arrival, its control law at
/// dequeue.
#[derive(Debug, Clone, Copy)]
pub struct CodelAqm(pub CodelParams);

impl FlowAqm for CodelAqm {
    type State = CodelControl;

    fn initial_state(&self) -> CodelControl {
        CodelControl::default()
    }

    #[inline(always)]
    fn on_arrival(
        &mut self,
        _: &mut CodelControl,
        _: &mut Packet,
        _: SimTime,
        _: u64,
        _: &mut CeMarks,
    ) -> Option<DropReason> {
        None
    }

    #[inline(always)]
    fn dequeue(
        &mut self,
        state: &mut CodelControl,
        flow: &mut FlowView<'_>,
        now: SimTime,
        drops: &mut impl DropSink,
        marks: &mut CeMarks,
    ) -> Option<Packet> {
        state.dequeue(&self.0, flow, now, drops, marks)
    }

    /// The flow queues in CoDel's dropping state, and the largest count among them.
    fn summary<'a>(states: impl Iterator<Item = &'a CodelControl>) -> AqmState {
        let (queues, count) =
            states.filter(|c| c.dropping()).fold((0, 0), |(n, most), c| (n + 1, most.max(c.count() as u64)));
        AqmState { probability: None, signal: None, state: Some(queues), count: Some(count) }
    }
}

/// FQ-CoDel (RFC 8290): the flow-queue scheduler with CoDel on each queue.
pub type FqCodel = FlowQueues<CodelAqm>;

impl FlowQueues<CodelAqm> {
    pub fn new(config: FqCodelConfig) -> Self {
        FlowQueues::with_aqm(config.scheduler, CodelAqm(config.codel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;
    use crate::queue::discipline::{Dequeue, NoDrops, QueueDiscipline};
    use crate::queue::flow_queues::{FlowQueue, List};

    const MS: SimTime = SimTime::from_ms(1);

    fn packet(flow: u32, seq: u64, bytes: u32, at: SimTime) -> Packet {
        Packet { enqueued_at: at, ..Packet::segment(flow, 0, 0, seq, bytes - 52, bytes, at) }
    }

    fn scheduler(flows: u32, limit: u64) -> SchedulerConfig {
        SchedulerConfig { limit_packets: limit, memory_limit: u64::MAX, flows, quantum: 1514, drop_batch: 1 }
    }

    fn fq(flows: u32, limit: u64) -> FqCodel {
        FqCodel::new(FqCodelConfig { codel: CodelParams::default(), scheduler: scheduler(flows, limit) })
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
                q.enqueue(packet(flow, round, 1500, now), now, &mut NoDrops).unwrap();
            }
            for _ in 0..50 {
                assert!(dequeue(&mut q, now).0.is_some());
                now += SimTime::from_us(1);
            }
            assert_eq!(q.len_packets(), 0);
        }
        assert_eq!(q.slab.len(), 50);
        assert!(std::mem::size_of::<FlowQueue<CodelControl>>() <= 64, "a flow queue's state fits a cache line");
        assert_eq!(std::mem::align_of::<FlowQueue<CodelControl>>(), 64, "and starts one");
    }

    #[test]
    fn flows_map_to_queues_by_their_id_modulo_the_number_of_queues() {
        let mut q = fq(4, 100);
        for flow in [0, 1, 5, 4] {
            q.enqueue(packet(flow, 0, 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        assert_eq!((0..4).map(|i| q.flow_bytes(i)).collect::<Vec<_>>(), vec![2000, 2000, 0, 0]);
    }

    #[test]
    fn a_sparse_flow_is_served_before_a_backlogged_one() {
        // Flow 0 has 20 packets queued and has been served; flow 1 sends one packet: as a new
        // flow it goes next (RFC 8290 §4.2, DRR++), not after flow 0's backlog.
        let mut q = fq(16, 1000);
        for seq in 0..20 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((0, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((0, 1)));
        q.enqueue(packet(1, 0, 100, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((1, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((0, 2)));
    }

    #[test]
    fn backlogged_flows_share_bytes_equally_whatever_their_packet_sizes() {
        // Flow 0 sends 1500-byte packets, flow 1 300-byte ones: each gets the same bytes.
        let mut q = fq(16, 10_000);
        for seq in 0..500 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        for seq in 0..2500 {
            q.enqueue(packet(1, seq, 300, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
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
            q.enqueue(packet(2, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        q.enqueue(packet(3, 0, 100, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        q.enqueue(packet(4, 0, 100, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        // The sixth packet, of the thin flow 4: flow 2 (4500 bytes) loses its head instead.
        let (victim, reason) = q.enqueue(packet(4, 1, 100, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(((victim.flow, victim.seq), reason), ((2, 0), DropReason::QueueFull));
        assert_eq!((q.len_packets(), q.len_bytes(), q.flow_bytes(4)), (5, 3000 + 300, 200));
    }

    #[test]
    fn a_batch_drop_takes_up_to_half_the_fattest_queue_and_the_rest_go_to_the_sink() {
        // Limit 25 packets, batches of up to 64: flow 2 holds 20 packets (30,000 bytes), flow 3
        // five. The 26th arrival: flow 2 loses its head and more until 15,000 bytes (half) are
        // gone, ten packets: the first handed back, nine to the sink, all tail drops.
        let mut q = FqCodel::new(FqCodelConfig {
            codel: CodelParams::default(),
            scheduler: SchedulerConfig { drop_batch: 64, ..scheduler(16, 25) },
        });
        for seq in 0..20 {
            q.enqueue(packet(2, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        for seq in 0..5 {
            q.enqueue(packet(3, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let mut sunk = Vec::new();
        let arrival = packet(3, 5, 1500, SimTime::ZERO);
        let (first, reason) = q
            .enqueue(arrival, SimTime::ZERO, &mut |p: Packet, r| {
                assert_eq!(r, DropReason::QueueFull);
                sunk.push(p.seq);
            })
            .unwrap_err();
        assert_eq!(((first.flow, first.seq), reason), ((2, 0), DropReason::QueueFull));
        assert_eq!(sunk, (1..10).collect::<Vec<_>>());
        assert_eq!((q.len_packets(), q.flow_bytes(2), q.flow_bytes(3)), (16, 15_000, 9000));
    }

    #[test]
    fn the_memory_limit_drops_from_the_fattest_queue_as_the_packet_limit_does() {
        // 10,000 bytes at most: the seventh 1500-byte packet (10,500 bytes) costs the fattest
        // queue (flow 1's four packets against flow 2's three) its head.
        let mut q = FqCodel::new(FqCodelConfig {
            codel: CodelParams::default(),
            scheduler: SchedulerConfig { memory_limit: 10_000, ..scheduler(16, 1000) },
        });
        for (flow, seq) in [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)] {
            q.enqueue(packet(flow, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (victim, _) = q.enqueue(packet(2, 2, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!((victim.flow, victim.seq), (1, 0));
        assert_eq!(q.len_bytes(), 9000);
    }

    #[test]
    fn codel_drops_only_from_the_flow_that_keeps_a_standing_queue() {
        // Flow 0 keeps a standing queue (all its packets arrived at time zero); flow 1 sends a
        // packet every millisecond and never waits long. Each flow's CoDel judges its own
        // sojourn times: only flow 0 is dropped from.
        let mut q = fq(16, 100_000);
        for seq in 0..5000 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (mut dropped, mut sent) = (Vec::new(), 0);
        let mut seq1 = 0;
        let mut now = SimTime::ZERO;
        while now < SimTime::from_ms(400) {
            if now.0.is_multiple_of(MS.0) {
                q.enqueue(packet(1, seq1, 1500, now), now, &mut NoDrops).unwrap();
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
        q.enqueue(packet(1, 0, 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        assert_eq!(dequeue(&mut q, SimTime::ZERO).0, Some((1, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO), (None, vec![]));
        assert!(q.new_flows.is_empty() && q.old_flows.is_empty());
        assert_eq!(q.queues[1].list, List::None);
        // Back as a new flow with a fresh quantum.
        q.enqueue(packet(1, 1, 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        assert_eq!((q.new_flows.len(), q.queues[1].deficit), (1, 1514));
    }

    #[test]
    fn with_ecn_each_flow_queues_codel_marks_ect_packets_and_drops_the_others() {
        // Two standing flow queues, flow 0 ECN-capable, flow 1 not, served alternately every
        // 10 µs: RFC 8290 §5.2.6: the per-queue CoDel marks flow 0's packets where it drops flow 1's.
        let codel = CodelParams { ecn: true, ..CodelParams::default() };
        let mut q = FqCodel::new(FqCodelConfig { codel, scheduler: scheduler(4, 100_000) });
        for seq in 0..20_000 {
            let ect = Packet { ecn: Ecn::Ect0, ..packet(0, seq, 1500, SimTime::ZERO) };
            q.enqueue(ect, SimTime::ZERO, &mut NoDrops).unwrap();
            q.enqueue(packet(1, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
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
