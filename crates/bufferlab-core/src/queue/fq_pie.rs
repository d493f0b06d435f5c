//! FQ-PIE: FQ-CoDel's flow queues and DRR++ scheduler with a PIE (RFC 8033) on each flow queue
//! instead of CoDel, as Linux's `fq_pie` and ns-3's `FqPieQueueDisc` (Ramakrishnan, Bhasin,
//! Tahiliani et al., "FQ-PIE Queue Discipline in the Linux Kernel", 2020).
//!
//! The scheduler is queue/flow_queues.rs's: `flows` flow queues (a flow's by its id modulo
//! `flows`), DRR++ with a `quantum`, new flows first, and at the limit (packets, or bytes with a
//! memory limit) drops from the head of the fattest queue. Each flow queue has its own PIE
//! controller ([`PieControl`]) with RFC 8033's parameters, judging that queue alone:
//!
//! - at an arrival, the updates of its drop probability due by then (every T_UPDATE from time
//!   zero, as one timer for all the queues would take them), then §4.1's early-drop decision with
//!   the queue's own backlog for the safeguard of a nearly empty queue; with `ecn` an
//!   ECN-capable arrival is marked instead while the queue's probability is at most 10 % (§5.1).
//!   An early drop is [`DropReason::Aqm`](super::DropReason::Aqm) and the flow queue stays as it
//!   was (an idle one does not become a new flow);
//! - at a departure, the queue's delay: the departing packet's sojourn (timestamps) or a step of
//!   the departure-rate estimator over the flow queue's own departures (§5.2), the delay then
//!   being the flow queue's bytes over its own rate.
//!
//! A flow queue's controller is brought up to date only when its queue is touched; between two
//! touches its backlog does not change, so the updates it takes late are those a timer would have
//! taken, and an idle queue settles (drop_prob 0, full burst allowance) and skips the rest, as
//! PIE's own queue does (queue/pie.rs). All flow queues draw from one random stream, keyed by the
//! run's seed, as Linux's queues share one generator.

use super::discipline::{AqmState, CeMarks, DropReason, DropSink};
use super::flow_queues::{FlowAqm, FlowQueues, FlowView, SchedulerConfig};
use super::pie::{PieConfig, PieControl};
use crate::net::packet::Packet;
use crate::queue::codel::HeadQueue;
use crate::units::SimTime;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The parameters of an FQ-PIE queue.
#[derive(Debug, Clone, Copy)]
pub struct FqPieConfig {
    /// Each flow queue's PIE (its limits unused: the scheduler's limits bound the queue).
    pub pie: PieConfig,
    /// The flow queues, their DRR++ quantum and the limits.
    pub scheduler: SchedulerConfig,
}

/// PIE as each flow queue's AQM: the early drop at arrival, the delay measured at departure.
#[derive(Debug)]
pub struct PieAqm {
    config: PieConfig,
    rng: Xoshiro256PlusPlus,
}

impl FlowAqm for PieAqm {
    type State = PieControl;

    fn initial_state(&self) -> PieControl {
        PieControl::new(&self.config)
    }

    #[inline]
    fn on_arrival(
        &mut self,
        state: &mut PieControl,
        packet: &mut Packet,
        now: SimTime,
        backlog: u64,
        marks: &mut CeMarks,
    ) -> Option<DropReason> {
        state.on_arrival(&self.config, packet, now, backlog, &mut self.rng, marks)
    }

    #[inline]
    fn dequeue(
        &mut self,
        state: &mut PieControl,
        flow: &mut FlowView<'_>,
        now: SimTime,
        _drops: &mut impl DropSink,
        _marks: &mut CeMarks,
    ) -> Option<Packet> {
        state.catch_up(&self.config, now, flow.flow_bytes());
        let packet = flow.pop_head()?;
        state.on_departure(&self.config, &packet, now, flow.flow_bytes());
        Some(packet)
    }

    /// The largest drop probability among the flow queues and the largest delay estimate (ns),
    /// as of each queue's last update.
    fn summary<'a>(states: impl Iterator<Item = &'a PieControl>) -> AqmState {
        let (p, delay) =
            states.fold((0.0f64, 0.0f64), |(p, d), c| (p.max(c.drop_probability()), d.max(c.qdelay().as_ns() as f64)));
        AqmState { probability: Some(p), signal: Some(delay), state: None, count: None }
    }
}

/// FQ-PIE: the flow-queue scheduler with PIE on each queue.
pub type FqPie = FlowQueues<PieAqm>;

impl FlowQueues<PieAqm> {
    /// An FQ-PIE queue; `seed` keys its early-drop draws.
    pub fn new(config: FqPieConfig, seed: u64) -> Self {
        let aqm = PieAqm { config: config.pie, rng: Xoshiro256PlusPlus::seed_from_u64(seed) };
        FlowQueues::with_aqm(config.scheduler, aqm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;
    use crate::queue::discipline::{Dequeue, NoDrops, QueueDiscipline};
    use crate::queue::pie::PieEstimator;

    const MS: SimTime = SimTime::from_ms(1);

    fn packet(flow: u32, seq: u64, bytes: u32, at: SimTime) -> Packet {
        Packet { enqueued_at: at, ..Packet::segment(flow, 0, 0, seq, bytes - 52, bytes, at) }
    }

    fn pie() -> PieConfig {
        PieConfig {
            limit_packets: None,
            limit_bytes: None,
            target: SimTime::from_ms(15),
            t_update: SimTime::from_ms(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: SimTime::from_ms(150),
            derandomize: false,
            mean_packet_bytes: 1500,
            ecn: false,
            estimator: PieEstimator::Timestamp,
        }
    }

    fn fq(flows: u32, limit: u64, pie: PieConfig) -> FqPie {
        let scheduler =
            SchedulerConfig { limit_packets: limit, memory_limit: u64::MAX, flows, quantum: 1514, drop_batch: 1 };
        FqPie::new(FqPieConfig { pie, scheduler }, 7)
    }

    /// A packet by its flow and sequence number.
    type Id = (u32, u64);

    fn dequeue(q: &mut FqPie, now: SimTime) -> Option<Id> {
        match q.dequeue(now, &mut |p: Packet, r| panic!("PIE drops at arrival, not at dequeue: {p:?} {r:?}")) {
            Dequeue::Packet(p) => Some((p.flow, p.seq)),
            _ => None,
        }
    }

    #[test]
    fn drr_serves_backlogged_flows_a_quantum_each_in_turn() {
        // Three flows of 1000-byte packets, all queued at time zero: DRR++ with a 1514-byte
        // quantum sends two packets of each flow per turn, in the order the flows became active
        // (the second of a turn overdraws the deficit, RFC 8290 §4.2).
        let mut q = fq(16, 1000, pie());
        for seq in 0..6 {
            for flow in [3, 1, 2] {
                q.enqueue(packet(flow, seq, 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
            }
        }
        let order: Vec<u32> = (0..12).map(|_| dequeue(&mut q, SimTime::ZERO).unwrap().0).collect();
        assert_eq!(order, [3, 3, 1, 1, 2, 2, 3, 3, 1, 1, 2, 2]);
    }

    #[test]
    fn a_sparse_flow_is_served_before_a_backlogged_one() {
        let mut q = fq(16, 1000, pie());
        for seq in 0..20 {
            q.enqueue(packet(0, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        assert_eq!(dequeue(&mut q, SimTime::ZERO), Some((0, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO), Some((0, 1)));
        q.enqueue(packet(1, 0, 100, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        assert_eq!(dequeue(&mut q, SimTime::ZERO), Some((1, 0)));
        assert_eq!(dequeue(&mut q, SimTime::ZERO), Some((0, 2)));
    }

    #[test]
    fn at_the_limit_the_fattest_queue_loses_its_head() {
        let mut q = fq(16, 3, pie());
        for seq in 0..3 {
            q.enqueue(packet(2, seq, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (victim, reason) = q.enqueue(packet(5, 0, 100, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(((victim.flow, victim.seq), reason), ((2, 0), DropReason::QueueFull));
        assert_eq!((q.len_packets(), q.flow_bytes(5)), (3, 100));
    }

    /// What [`two_overloading_flows`] saw of each flow.
    #[derive(Debug, Default)]
    struct Seen {
        /// Mean sojourn (ms) of the packets sent after the settling time.
        sojourn_ms: [f64; 2],
        early_drops: [u64; 2],
        marks: [u64; 2],
        /// The flow queue's drop probability at each of flow 0's early drops, the largest less.
        min_prob_at_drop: [f64; 2],
    }

    /// Two open-loop flows of 1500-byte packets, `pps` per second each, through FQ-PIE in front
    /// of a link of 1000 packets per second (12 Mb/s), whose share is 500 each. Flow 0's
    /// packets are ECT(0) when `ect0`. Every arrival not dropped early is queued.
    fn two_overloading_flows(pie: PieConfig, pps: u64, ect0: bool, seconds: u64, settle: SimTime) -> (Seen, FqPie) {
        let mut q = fq(16, 100_000, pie);
        let (arrival_gap, service_gap) = (SimTime::from_us(1_000_000 / pps), MS);
        let (mut next_arrival, mut next_service) = (SimTime::ZERO, SimTime::ZERO);
        let mut seen = Seen { min_prob_at_drop: [1.0; 2], ..Seen::default() };
        let (mut sojourn_sum, mut sent) = ([0.0; 2], [0u64; 2]);
        let mut seq = 0;
        let end = SimTime::from_secs(seconds);
        while next_arrival.min(next_service) < end {
            if next_arrival <= next_service {
                let now = next_arrival;
                for flow in 0..2u32 {
                    let ecn = if flow == 0 && ect0 { Ecn::Ect0 } else { Ecn::NotEct };
                    if let Err((_, reason)) =
                        q.enqueue(Packet { ecn, ..packet(flow, seq, 1500, now) }, now, &mut NoDrops)
                    {
                        assert_eq!(reason, DropReason::Aqm);
                        let f = flow as usize;
                        seen.early_drops[f] += 1;
                        seen.min_prob_at_drop[f] = seen.min_prob_at_drop[f].min(q.flow_aqm_state(f).drop_probability());
                    }
                }
                seq += 1;
                next_arrival += arrival_gap;
            } else {
                let now = next_service;
                if let Dequeue::Packet(p) = q.dequeue(now, &mut |_: Packet, _| unreachable!()) {
                    let f = p.flow as usize;
                    seen.marks[f] += (p.ecn == Ecn::Ce) as u64;
                    if now >= settle {
                        sojourn_sum[f] += (now - p.enqueued_at).as_secs_f64() * 1e3;
                        sent[f] += 1;
                    }
                }
                next_service += service_gap;
            }
        }
        seen.sojourn_ms = [sojourn_sum[0] / sent[0] as f64, sojourn_sum[1] / sent[1] as f64];
        (seen, q)
    }

    #[test]
    fn pie_per_queue_holds_each_backlogged_flows_delay_near_the_target() {
        // Each flow offers 40 % more than its share: without an AQM its queue would grow by 200
        // packets a second. Each flow queue's
        // PIE drops early until the flow's own delay sits near QDELAY_REF = 15 ms, whichever way
        // the delay is measured.
        for estimator in [PieEstimator::Timestamp, PieEstimator::DepartureRate] {
            let (seen, q) =
                two_overloading_flows(PieConfig { estimator, ..pie() }, 700, false, 60, SimTime::from_secs(20));
            for flow in 0..2 {
                let ms = seen.sojourn_ms[flow];
                assert!((12.0..18.0).contains(&ms), "{estimator:?}: flow {flow}: {ms} ms");
                assert!(seen.early_drops[flow] > 1000, "{estimator:?}: {seen:?}");
                assert!(q.flow_aqm_state(flow).drop_probability() > 0.1, "{estimator:?}");
            }
        }
    }

    #[test]
    fn with_ecn_a_queues_pie_marks_ect_arrivals_while_its_probability_is_at_most_ten_percent() {
        // Each flow offers 10 % more than its share. Flow 1 (Not-ECT) is held by drops at a
        // probability near 9 %. Flow 0 is ECN-capable, and marks do not slow an open-loop flow:
        // its probability climbs past 10 %, where PIE drops whatever the packet (RFC 8033
        // §5.1). So flow 0 is marked first and dropped only above 10 %; flow 1 never marked.
        let (seen, _) = two_overloading_flows(PieConfig { ecn: true, ..pie() }, 550, true, 30, SimTime::ZERO);
        assert!(seen.marks[0] > 100 && seen.marks[1] == 0, "{seen:?}");
        assert!(seen.early_drops[0] > 0 && seen.min_prob_at_drop[0] > 0.1, "{seen:?}");
        assert!(seen.early_drops[1] > 1000 && seen.min_prob_at_drop[1] <= 0.1, "{seen:?}");
    }

    #[test]
    fn the_same_seed_drops_the_same_packets() {
        let drops = |seed| {
            let scheduler = SchedulerConfig {
                limit_packets: 10_000,
                memory_limit: u64::MAX,
                flows: 4,
                quantum: 1514,
                drop_batch: 1,
            };
            let mut q = FqPie::new(FqPieConfig { pie: pie(), scheduler }, seed);
            let mut dropped = Vec::new();
            for k in 0..20_000u64 {
                let now = SimTime::from_us(700 * k);
                if q.enqueue(packet((k % 2) as u32, k, 1500, now), now, &mut NoDrops).is_err() {
                    dropped.push(k);
                }
                if k % 10 < 7 {
                    q.dequeue(now, &mut |_: Packet, _| unreachable!());
                }
            }
            dropped
        };
        assert!(drops(1).len() > 100);
        assert_eq!(drops(1), drops(1));
        assert_ne!(drops(1), drops(2));
    }
}
