//! Egress queue disciplines.
//!
//! Every discipline implements [`QueueDiscipline`]; the network holds them in the [`Queue`] enum
//! so that the per-packet path is a `match`, not a virtual call.

pub mod codel;
pub mod discipline;
pub mod dualpi2;
pub mod fifo;
pub mod flow_queues;
pub mod fq_codel;
pub mod fq_pie;
pub mod pie;
pub mod red;
pub mod splitbuff;
pub mod tbf;

use crate::net::packet::Packet;
use crate::record::result::QueueClassRecord;
use crate::spec::{DualPi2Scheduler, QueueSpec, SplitBuffEstimator, SplitBuffTotal};
use crate::units::{BitRate, SimTime};

pub use codel::{CoDel, CodelParams};
pub use discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
pub use dualpi2::{DualPi2, DualPi2Config};
pub use fifo::DropTailFifo;
pub use flow_queues::SchedulerConfig;
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use fq_pie::{FqPie, FqPieConfig};
pub use pie::{Pie, PieConfig};
pub use red::{Red, RedConfig};
pub use splitbuff::{SplitBuff, SplitBuffConfig};
pub use tbf::TokenBucket;

/// A channel's egress queue, one variant per discipline, dispatched by `match` (never a trait
/// object on the per-packet path). Every discipline but the drop-tail FIFO is boxed: a queue is
/// then a FIFO's 56 bytes whatever its discipline, where inline every channel paid for the largest
/// (FQ-PIE's 400 bytes), four per flow of a dumbbell whose access links are FIFOs. A boxed
/// queue is one pointer further, a line its channel's own packets keep in the cache.
#[derive(Debug)]
pub enum Queue {
    Fifo(DropTailFifo),
    Tbf(Box<TokenBucket>),
    /// SplitBuff and Blind-SplitBuff (seed 002): sub-buffers served by byte-fair round robin.
    SplitBuff(Box<SplitBuff>),
    /// RED and Adaptive RED (Floyd & Jacobson 1993; Floyd, Gummadi & Shenker 2001).
    Red(Box<Red>),
    /// PIE (RFC 8033).
    Pie(Box<Pie>),
    /// CoDel (RFC 8289): drops at dequeue by the sojourn time.
    CoDel(Box<CoDel>),
    /// FQ-CoDel (RFC 8290): flow queues served by DRR++, CoDel on each.
    FqCodel(Box<FqCodel>),
    /// FQ-PIE (Linux fq_pie): FQ-CoDel's flow queues and DRR++, PIE (RFC 8033) on each.
    FqPie(Box<FqPie>),
    /// DualPI2 (RFC 9332): L4S and Classic queues coupled by one PI2 controller.
    DualPi2(Box<DualPi2>),
}

impl Queue {
    /// True when a packet arriving now would be dequeued at once by an idle transmitter, so the
    /// channel may skip the enqueue/dequeue pair: an empty FIFO. Disciplines that decide at dequeue
    /// time (shapers, schedulers, AQM) answer false.
    #[inline]
    pub fn passes_through_when_idle(&self) -> bool {
        match self {
            Queue::Fifo(q) => q.len_packets() == 0,
            Queue::Tbf(_)
            | Queue::SplitBuff(_)
            | Queue::Red(_)
            | Queue::Pie(_)
            | Queue::CoDel(_)
            | Queue::FqCodel(_)
            | Queue::FqPie(_)
            | Queue::DualPi2(_) => false,
        }
    }

    /// The discipline keeps state per flow that an enqueue reads ([`Queue::prefetch_for`]).
    pub fn keeps_state_per_flow(&self) -> bool {
        matches!(self, Queue::FqCodel(_) | Queue::FqPie(_))
    }

    /// Ask for the cache line of the state kept for `flow`, ahead of its packet's arrival (a
    /// hint: it changes nothing).
    #[inline]
    pub fn prefetch_for(&self, flow: u32) {
        match self {
            Queue::FqCodel(q) => q.prefetch_for(flow),
            Queue::FqPie(q) => q.prefetch_for(flow),
            _ => {}
        }
    }

    /// The sub-buffers of a split queue, if this is one.
    pub fn split(&self) -> Option<&SplitBuff> {
        match self {
            Queue::SplitBuff(q) => Some(q),
            _ => None,
        }
    }

    /// How many classes (sub-queues) the queue records apart: a split queue's sub-buffers,
    /// DualPI2's L and C queues; 0 for a queue of one class.
    pub fn classes(&self) -> usize {
        match self {
            Queue::SplitBuff(q) => q.sub_buffers(),
            Queue::DualPi2(_) => 2,
            _ => 0,
        }
    }

    /// Class `i`'s counters and state (`i < self.classes()`).
    pub fn class_record(&self, i: usize) -> QueueClassRecord {
        match self {
            Queue::SplitBuff(q) => q.class_record(i),
            Queue::DualPi2(q) => q.class_record(i),
            _ => unreachable!("a queue of one class has no class record"),
        }
    }

    /// Every class's record, in order (empty for a queue of one class).
    pub fn class_records(&self) -> Vec<QueueClassRecord> {
        (0..self.classes()).map(|i| self.class_record(i)).collect()
    }

    /// The queue a spec describes, in front of a link of `rate` (`None`: unlimited); `seed` keys
    /// its random choices (Blind-SplitBuff's mapping, RED's, PIE's and FQ-PIE's early drops).
    pub fn from_spec(spec: &QueueSpec, rate: Option<BitRate>, seed: u64) -> Queue {
        match spec {
            QueueSpec::Fifo { limit_packets, limit_bytes } => {
                Queue::Fifo(DropTailFifo::new(*limit_packets, *limit_bytes))
            }
            QueueSpec::Tbf { rate_bps, bucket_bytes, limit_bytes } => {
                Queue::Tbf(Box::new(TokenBucket::new(BitRate(*rate_bps), *bucket_bytes, *limit_bytes)))
            }
            QueueSpec::SplitBuff {
                limit_packets,
                limit_bytes,
                sub_buffers,
                update_interval_ns,
                alpha,
                quantum_bytes,
                estimator,
                total,
            } => Queue::SplitBuff(Box::new(SplitBuff::new(SplitBuffConfig {
                limit: limit_packets.or(*limit_bytes).expect("validated: a limit"),
                in_bytes: limit_packets.is_none(),
                sub_buffers: *sub_buffers as usize,
                update_interval: SimTime::from_ns(*update_interval_ns),
                alpha: *alpha,
                quantum: *quantum_bytes as u64,
                rate,
                estimator: *estimator,
                total: *total,
            }))),
            QueueSpec::BlindSplitBuff { limit_packets, limit_bytes, sub_buffers, quantum_bytes } => {
                let config = SplitBuffConfig {
                    limit: limit_packets.or(*limit_bytes).expect("validated: a limit"),
                    in_bytes: limit_packets.is_none(),
                    sub_buffers: *sub_buffers as usize,
                    update_interval: SimTime::MAX,
                    alpha: 1.0,
                    quantum: *quantum_bytes as u64,
                    rate,
                    estimator: SplitBuffEstimator::Paper,
                    total: SplitBuffTotal::Fixed,
                };
                Queue::SplitBuff(Box::new(SplitBuff::blind(config, seed)))
            }
            QueueSpec::Red { .. } => {
                Queue::Red(Box::new(Red::new(RedConfig::from_spec(spec, rate).expect("a RED spec"), seed)))
            }
            QueueSpec::Pie {
                limit_packets,
                limit_bytes,
                target_ns,
                t_update_ns,
                alpha,
                beta,
                burst_ns,
                derandomize,
                mean_packet_bytes,
                ecn,
                estimator,
            } => Queue::Pie(Box::new(Pie::new(
                PieConfig {
                    limit_packets: *limit_packets,
                    limit_bytes: *limit_bytes,
                    target: SimTime::from_ns(*target_ns),
                    t_update: SimTime::from_ns(*t_update_ns),
                    alpha: *alpha,
                    beta: *beta,
                    max_burst: SimTime::from_ns(*burst_ns),
                    derandomize: *derandomize,
                    mean_packet_bytes: *mean_packet_bytes,
                    ecn: *ecn,
                    estimator: *estimator,
                },
                seed,
            ))),
            QueueSpec::FqPie {
                limit_packets,
                memory_limit_bytes,
                drop_batch,
                flows,
                quantum_bytes,
                target_ns,
                t_update_ns,
                alpha,
                beta,
                burst_ns,
                derandomize,
                mean_packet_bytes,
                ecn,
                estimator,
                ..
            } => Queue::FqPie(Box::new(FqPie::new(
                FqPieConfig {
                    pie: PieConfig {
                        limit_packets: None,
                        limit_bytes: None,
                        target: SimTime::from_ns(*target_ns),
                        t_update: SimTime::from_ns(*t_update_ns),
                        alpha: *alpha,
                        beta: *beta,
                        max_burst: SimTime::from_ns(*burst_ns),
                        derandomize: *derandomize,
                        mean_packet_bytes: *mean_packet_bytes,
                        ecn: *ecn,
                        estimator: *estimator,
                    },
                    scheduler: SchedulerConfig {
                        limit_packets: limit_packets.expect("validated: a limit in packets"),
                        memory_limit: memory_limit_bytes.unwrap_or(u64::MAX),
                        flows: *flows,
                        quantum: *quantum_bytes,
                        drop_batch: *drop_batch,
                    },
                },
                seed,
            ))),
            QueueSpec::DualPi2 {
                limit_packets,
                target_ns,
                t_update_ns,
                alpha,
                beta,
                coupling,
                step_thresh_ns,
                scheduler,
                tshift_ns,
                classic_protection,
                drop_on_overload,
                ..
            } => Queue::DualPi2(Box::new(DualPi2::new(
                DualPi2Config {
                    limit_packets: limit_packets.expect("validated: a limit in packets"),
                    target: SimTime::from_ns(*target_ns),
                    t_update: SimTime::from_ns(*t_update_ns),
                    alpha: *alpha,
                    beta: *beta,
                    coupling: *coupling,
                    step_thresh: SimTime::from_ns(*step_thresh_ns),
                    scheduler: match scheduler {
                        DualPi2Scheduler::Tshift => dualpi2::Scheduler::TimeShifted(SimTime::from_ns(*tshift_ns)),
                        DualPi2Scheduler::Wrr => {
                            dualpi2::Scheduler::Wrr { classic_percent: (*classic_protection).min(100) as u8 }
                        }
                    },
                    drop_on_overload: *drop_on_overload,
                },
                seed,
            ))),
            QueueSpec::CoDel { limit_packets, limit_bytes, target_ns, interval_ns, ecn, control_law } => {
                let params = CodelParams {
                    target: SimTime::from_ns(*target_ns),
                    interval: SimTime::from_ns(*interval_ns),
                    ecn: *ecn,
                    control_law: *control_law,
                };
                Queue::CoDel(Box::new(CoDel::new(params, *limit_packets, *limit_bytes)))
            }
            QueueSpec::FqCodel {
                limit_packets,
                target_ns,
                interval_ns,
                flows,
                quantum_bytes,
                ecn,
                control_law,
                memory_limit_bytes,
                drop_batch,
                ..
            } => Queue::FqCodel(Box::new(FqCodel::new(FqCodelConfig {
                codel: CodelParams {
                    target: SimTime::from_ns(*target_ns),
                    interval: SimTime::from_ns(*interval_ns),
                    ecn: *ecn,
                    control_law: *control_law,
                },
                scheduler: SchedulerConfig {
                    limit_packets: limit_packets.expect("validated: a limit in packets"),
                    memory_limit: memory_limit_bytes.unwrap_or(u64::MAX),
                    flows: *flows,
                    quantum: *quantum_bytes,
                    drop_batch: *drop_batch,
                },
            }))),
        }
    }
}

impl QueueDiscipline for Queue {
    #[inline]
    fn enqueue(&mut self, packet: Packet, now: SimTime, drops: &mut impl DropSink) -> Result<(), (Packet, DropReason)> {
        match self {
            Queue::Fifo(q) => q.enqueue(packet, now, drops),
            Queue::Tbf(q) => q.enqueue(packet, now, drops),
            Queue::SplitBuff(q) => q.enqueue(packet, now, drops),
            Queue::Red(q) => q.enqueue(packet, now, drops),
            Queue::Pie(q) => q.enqueue(packet, now, drops),
            Queue::CoDel(q) => q.enqueue(packet, now, drops),
            Queue::FqCodel(q) => q.enqueue(packet, now, drops),
            Queue::FqPie(q) => q.enqueue(packet, now, drops),
            Queue::DualPi2(q) => q.enqueue(packet, now, drops),
        }
    }
    #[inline]
    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        match self {
            Queue::Fifo(q) => q.dequeue(now, drops),
            Queue::Tbf(q) => q.dequeue(now, drops),
            Queue::SplitBuff(q) => q.dequeue(now, drops),
            Queue::Red(q) => q.dequeue(now, drops),
            Queue::Pie(q) => q.dequeue(now, drops),
            Queue::CoDel(q) => q.dequeue(now, drops),
            Queue::FqCodel(q) => q.dequeue(now, drops),
            Queue::FqPie(q) => q.dequeue(now, drops),
            Queue::DualPi2(q) => q.dequeue(now, drops),
        }
    }
    #[inline]
    fn len_packets(&self) -> u64 {
        match self {
            Queue::Fifo(q) => q.len_packets(),
            Queue::Tbf(q) => q.len_packets(),
            Queue::SplitBuff(q) => q.len_packets(),
            Queue::Red(q) => q.len_packets(),
            Queue::Pie(q) => q.len_packets(),
            Queue::CoDel(q) => q.len_packets(),
            Queue::FqCodel(q) => q.len_packets(),
            Queue::FqPie(q) => q.len_packets(),
            Queue::DualPi2(q) => q.len_packets(),
        }
    }
    #[inline]
    fn len_bytes(&self) -> u64 {
        match self {
            Queue::Fifo(q) => q.len_bytes(),
            Queue::Tbf(q) => q.len_bytes(),
            Queue::SplitBuff(q) => q.len_bytes(),
            Queue::Red(q) => q.len_bytes(),
            Queue::Pie(q) => q.len_bytes(),
            Queue::CoDel(q) => q.len_bytes(),
            Queue::FqCodel(q) => q.len_bytes(),
            Queue::FqPie(q) => q.len_bytes(),
            Queue::DualPi2(q) => q.len_bytes(),
        }
    }
    fn ce_marks(&self) -> CeMarks {
        match self {
            Queue::Fifo(q) => q.ce_marks(),
            Queue::Tbf(q) => q.ce_marks(),
            Queue::SplitBuff(q) => q.ce_marks(),
            Queue::Red(q) => q.ce_marks(),
            Queue::Pie(q) => q.ce_marks(),
            Queue::CoDel(q) => q.ce_marks(),
            Queue::FqCodel(q) => q.ce_marks(),
            Queue::FqPie(q) => q.ce_marks(),
            Queue::DualPi2(q) => q.ce_marks(),
        }
    }
    fn aqm_state(&self) -> AqmState {
        match self {
            Queue::Fifo(q) => q.aqm_state(),
            Queue::Tbf(q) => q.aqm_state(),
            Queue::SplitBuff(q) => q.aqm_state(),
            Queue::Red(q) => q.aqm_state(),
            Queue::Pie(q) => q.aqm_state(),
            Queue::CoDel(q) => q.aqm_state(),
            Queue::FqCodel(q) => q.aqm_state(),
            Queue::FqPie(q) => q.aqm_state(),
            Queue::DualPi2(q) => q.aqm_state(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_takes_a_fifos_room_whatever_its_discipline() {
        // A FIFO inline and every other discipline behind a pointer: a channel pays for the
        // FIFO's 56 bytes (the tag fits in them), not for the largest discipline.
        assert_eq!(std::mem::size_of::<DropTailFifo>(), 56);
        assert_eq!(std::mem::size_of::<Queue>(), std::mem::size_of::<DropTailFifo>());
    }
}
