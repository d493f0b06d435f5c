//! PIE, Proportional Integral controller Enhanced (RFC 8033, Pan, Natarajan, Baker & White 2017).
//!
//! PIE drops arrivals at random with a probability `drop_prob` that a PI controller moves every
//! T_UPDATE toward holding the queueing delay at a target (QDELAY_REF):
//!
//! ```text
//! p = α·(qdelay − QDELAY_REF) + β·(qdelay − qdelay_old)        (§4.2; α, β in 1/s, delays in s)
//! p scaled down while drop_prob is small (auto-tuning, §4.2):
//!     drop_prob < 0.000001: p /= 2048     < 0.00001: p /= 512     < 0.0001: p /= 128
//!     drop_prob < 0.001:    p /= 32       < 0.01:    p /= 8       < 0.1:    p /= 2
//! p capped at 0.02 once drop_prob ≥ 0.1 (cap drop adjustment, §5.5)
//! drop_prob += p
//! drop_prob *= 0.98 when qdelay = qdelay_old = 0 (decay when the queue stays empty, §4.2)
//! drop_prob bounded to [0, 1]; qdelay_old = qdelay
//! ```
//!
//! The queueing delay is measured one of two ways ([`PieEstimator`], §4.3):
//!
//! - by timestamps (the default, as Linux's `pie` and ns-3's `PieQueueDisc`): the sojourn of the
//!   packet dequeued last, and 0 once a dequeue leaves the queue empty;
//! - by the departure rate (§4.3's Little's law with §5.2's and Appendix B's estimator,
//!   [`DepartureRate`]): qdelay = queue length in bytes / departure rate, taken at each update.
//!   The rate is measured in cycles: a cycle starts at a departure that leaves at least
//!   DQ_THRESHOLD bytes (2¹⁴ = 16 KiB) queued and ends at the departure that brings the bytes sent
//!   since (the starting packet's included) to DQ_THRESHOLD; its duration dq_int is averaged
//!   into avg_dq_time, the time DQ_THRESHOLD bytes take to leave, with weight DQ_THRESHOLD/2¹⁶ =
//!   1/4 (the first cycle's duration taken as it is), and qdelay = qlen · avg_dq_time /
//!   DQ_THRESHOLD. Until a first cycle has ended there is no estimate and qdelay is 0. A cycle
//!   runs on across an idle spell, which then lengthens it, as in the RFC's pseudocode. The
//!   arithmetic is integer picoseconds, so the estimate is the same on every machine.
//!
//! An arrival is dropped early (§4.1) with probability drop_prob unless the burst allowance
//! (§4.4: MAX_BURST at the start and whenever drop_prob is 0 and both delays are below
//! QDELAY_REF/2; less T_UPDATE at every update) is left, or one of §4.1's safeguards holds:
//! qdelay_old < QDELAY_REF/2 and drop_prob < 0.2, or the queue holds at most two mean-sized
//! packets. With `derandomize` (§5.4) the drop probabilities of the arrivals since the last drop
//! are summed (accu_prob): none is dropped while the sum is below 0.85, one always once it reaches
//! 8.5, and in between with probability drop_prob. An early drop is [`DropReason::Aqm`], an
//! arrival over the hard limit a tail drop, [`DropReason::QueueFull`].
//!
//! With `ecn` on, an early drop of an ECN-capable arrival becomes a CE mark while drop_prob is at
//! most 10 % (RFC 8033 §5.1, Linux's `mark_ecn_th`); above it PIE drops whatever the packet, so
//! that flows that ignore marks cannot fill the queue. The marked arrival is queued; marks are
//! counted by the queue ([`CeMarks`]).
//!
//! The controller's timer is not an event of its own: the updates due by an arrival or a
//! departure are taken then, with the delay of that moment. While the queue is busy packets come
//! and go every transmission time, so an update is late by at most one of them; while it is idle
//! the state it would reach (drop_prob 0, full burst allowance) is reached in a few updates, and
//! the rest are skipped.
//!
//! The controller ([`PieControl`]) is kept apart from the FIFO it guards and is told the
//! queue's backlog at each step, so that FQ-PIE runs one per flow queue (queue/fq_pie.rs).

use super::discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
use super::fifo::DropTailFifo;
use crate::net::packet::Packet;
pub use crate::spec::PieEstimator;
use crate::units::SimTime;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A PIE queue's parameters (RFC 8033 §4's defaults in the spec layer: QDELAY_REF = 15 ms,
/// T_UPDATE = 15 ms, α = 0.125, β = 1.25, MAX_BURST = 150 ms).
#[derive(Debug, Clone, Copy)]
pub struct PieConfig {
    pub limit_packets: Option<u64>,
    pub limit_bytes: Option<u64>,
    /// QDELAY_REF, the target queueing delay.
    pub target: SimTime,
    /// T_UPDATE, the period of the drop probability's update.
    pub t_update: SimTime,
    /// α and β, per second.
    pub alpha: f64,
    pub beta: f64,
    /// MAX_BURST, the burst allowance.
    pub max_burst: SimTime,
    /// §5.4's de-randomisation.
    pub derandomize: bool,
    /// MEAN_PKTSIZE (bytes), for the safeguard of a nearly empty queue.
    pub mean_packet_bytes: u32,
    /// Mark ECN-capable arrivals CE instead of dropping them early (§5.1).
    pub ecn: bool,
    /// How the queueing delay is measured (§4.3).
    pub estimator: PieEstimator,
}

/// RFC 8033 §5.1: ECN-capable packets are marked rather than dropped only while the drop
/// probability is at most this (Linux `mark_ecn_th`, 0.1).
pub const MARK_ECN_THRESHOLD: f64 = 0.1;

/// DQ_THRESHOLD (RFC 8033 §5.2, Appendix B): the bytes a departure-rate measurement cycle
/// counts, 2¹⁴ (16 KiB), and the backlog a cycle needs to start.
pub const DQ_THRESHOLD: u64 = 1 << 14;

/// The departure-rate estimator of RFC 8033 §5.2 (its Appendix B's pseudocode): the average time
/// DQ_THRESHOLD bytes take to leave the queue, measured in cycles of DQ_THRESHOLD bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DepartureRate {
    in_measurement: bool,
    measurement_start: SimTime,
    /// Bytes sent since the cycle started (dq_count).
    dq_count: u64,
    /// The averaged duration of a cycle (avg_dq_time); zero until the first cycle ends.
    avg_dq_time: SimTime,
}

impl DepartureRate {
    /// A packet of `bytes` left at `now`, leaving `backlog` bytes queued.
    #[inline]
    pub fn departed(&mut self, bytes: u64, backlog: u64, now: SimTime) {
        // A cycle starts when enough is queued for it to be measured at the link's pace.
        if !self.in_measurement && backlog >= DQ_THRESHOLD {
            self.in_measurement = true;
            self.measurement_start = now;
            self.dq_count = 0;
        }
        if self.in_measurement {
            self.dq_count += bytes;
            if self.dq_count >= DQ_THRESHOLD {
                let dq_int = now - self.measurement_start;
                // avg_dq_time = dq_int·w + avg_dq_time·(1 − w), w = DQ_THRESHOLD/2¹⁶ = 1/4.
                self.avg_dq_time = if self.avg_dq_time == SimTime::ZERO {
                    dq_int
                } else {
                    SimTime((dq_int.as_ps() + 3 * self.avg_dq_time.as_ps()) / 4)
                };
                self.in_measurement = false;
            }
        }
    }

    /// The queueing delay of `backlog` bytes at the estimated rate: backlog · avg_dq_time /
    /// DQ_THRESHOLD (Little's law, §4.3); zero before the first estimate.
    #[inline]
    pub fn delay(&self, backlog: u64) -> SimTime {
        SimTime((backlog as u128 * self.avg_dq_time.as_ps() as u128 / DQ_THRESHOLD as u128) as u64)
    }

    /// The estimated departure rate in bytes per second, DQ_THRESHOLD / avg_dq_time (`None`
    /// before the first estimate).
    pub fn bytes_per_sec(&self) -> Option<f64> {
        (self.avg_dq_time > SimTime::ZERO).then(|| DQ_THRESHOLD as f64 / self.avg_dq_time.as_secs_f64())
    }
}

/// A uniform draw in (0, 1): 53 random bits, offset by half a step.
#[inline]
fn uniform(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// PIE's controller for one queue: everything RFC 8033's pseudocode keeps between packets. The
/// queue it controls tells it its backlog (bytes) at each step.
#[derive(Debug, Clone, Copy)]
pub struct PieControl {
    drop_prob: f64,
    /// The queueing delay now (§4.3), and at the last update.
    qdelay: SimTime,
    qdelay_old: SimTime,
    burst_allowance: SimTime,
    /// §5.4's accumulated probability.
    accu_prob: f64,
    /// When the next update of drop_prob is due.
    next_update: SimTime,
    /// The departure-rate estimator's state ([`PieEstimator::DepartureRate`] only).
    rate: DepartureRate,
}

impl PieControl {
    /// The state before the first packet: no drops, the full burst allowance, the first update
    /// due at T_UPDATE.
    pub fn new(config: &PieConfig) -> PieControl {
        PieControl {
            drop_prob: 0.0,
            qdelay: SimTime::ZERO,
            qdelay_old: SimTime::ZERO,
            burst_allowance: config.max_burst,
            accu_prob: 0.0,
            next_update: config.t_update,
            rate: DepartureRate::default(),
        }
    }

    /// The drop probability now.
    pub fn drop_probability(&self) -> f64 {
        self.drop_prob
    }

    /// The burst allowance left.
    pub fn burst_allowance(&self) -> SimTime {
        self.burst_allowance
    }

    /// The queueing delay as last measured.
    pub fn qdelay(&self) -> SimTime {
        self.qdelay
    }

    /// The departure-rate estimator.
    pub fn departure_rate(&self) -> &DepartureRate {
        &self.rate
    }

    /// §4.2's auto-tuning: the factor p is scaled by while drop_prob is small, so that the
    /// controller moves a small probability in steps of its own size.
    fn auto_tuning_scale(drop_prob: f64) -> f64 {
        if drop_prob < 0.000_001 {
            1.0 / 2048.0
        } else if drop_prob < 0.000_01 {
            1.0 / 512.0
        } else if drop_prob < 0.000_1 {
            1.0 / 128.0
        } else if drop_prob < 0.001 {
            1.0 / 32.0
        } else if drop_prob < 0.01 {
            1.0 / 8.0
        } else if drop_prob < 0.1 {
            1.0 / 2.0
        } else {
            1.0
        }
    }

    /// One update of the drop probability and the burst allowance (§4.2, §4.4, §5.5), with
    /// `backlog` bytes queued.
    fn update(&mut self, config: &PieConfig, backlog: u64) {
        if config.estimator == PieEstimator::DepartureRate {
            // §4.3: current_qdelay = queue length / departure rate, at the update.
            self.qdelay = self.rate.delay(backlog);
        }
        let target = config.target.as_secs_f64();
        let (qdelay, qdelay_old) = (self.qdelay.as_secs_f64(), self.qdelay_old.as_secs_f64());
        // p = α·(qdelay − QDELAY_REF) + β·(qdelay − qdelay_old)  (§4.2)
        let mut p = config.alpha * (qdelay - target) + config.beta * (qdelay - qdelay_old);
        p *= Self::auto_tuning_scale(self.drop_prob);
        // Cap drop adjustment (§5.5): at most 2 % more at a time once drop_prob ≥ 10 %.
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        // Exponential decay while the queue stays empty (§4.2).
        if self.qdelay.as_ps() == 0 && self.qdelay_old.as_ps() == 0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        // Burst tolerance (§4.4): the allowance runs down by T_UPDATE per update, and is given
        // back in full once the queue is calm (no drops, both delays below half the target).
        self.burst_allowance = self.burst_allowance.saturating_sub(config.t_update);
        let half_target = config.target.div(2);
        if self.drop_prob == 0.0 && self.qdelay < half_target && self.qdelay_old < half_target {
            self.burst_allowance = config.max_burst;
        }
        self.qdelay_old = self.qdelay;
    }

    /// Take the updates due by `now` (see the module comment), `backlog` bytes queued
    /// throughout (the queue changes only by the arrival or departure that calls this, after).
    #[inline]
    pub fn catch_up(&mut self, config: &PieConfig, now: SimTime, backlog: u64) {
        while now >= self.next_update {
            self.update(config, backlog);
            self.next_update += config.t_update;
            let calm = self.drop_prob == 0.0
                && self.qdelay.as_ps() == 0
                && self.qdelay_old.as_ps() == 0
                && self.burst_allowance == config.max_burst;
            if calm && now >= self.next_update {
                // Every further update leaves this state as it is: skip to the next one due.
                let periods = (now - self.next_update).as_ps() / config.t_update.as_ps() + 1;
                self.next_update += config.t_update.mul(periods);
            }
        }
    }

    /// §4.1's early-drop decision for an arrival at a queue of `backlog` bytes (with §5.4's
    /// de-randomisation when configured), drawing from `rng`.
    fn drops_early(&mut self, config: &PieConfig, backlog: u64, rng: &mut Xoshiro256PlusPlus) -> bool {
        if self.burst_allowance.as_ps() > 0 {
            return false;
        }
        // Safeguards (§4.1): a queue PIE is not controlling, or one of at most two packets.
        let calm = self.qdelay_old < config.target.div(2) && self.drop_prob < 0.2;
        if calm || backlog <= 2 * config.mean_packet_bytes as u64 {
            return false;
        }
        let drop = if config.derandomize {
            // §5.4: accu_prob restarts when drop_prob is 0 and sums drop_prob over the arrivals.
            if self.drop_prob == 0.0 {
                self.accu_prob = 0.0;
            }
            self.accu_prob += self.drop_prob;
            if self.accu_prob < 0.85 {
                false
            } else {
                self.accu_prob >= 8.5 || uniform(rng) < self.drop_prob
            }
        } else {
            uniform(rng) < self.drop_prob
        };
        if drop {
            self.accu_prob = 0.0;
        }
        drop
    }

    /// An arrival at `now` to a queue of `backlog` bytes: the updates due, then §4.1's decision.
    /// `Some(Aqm)` if it is dropped early; `None` if it may be queued, marked CE instead of
    /// dropped (§5.1, counted in `marks`) when `ecn` is on, it is ECN-capable and drop_prob is at
    /// most 10 %.
    #[inline]
    pub fn on_arrival(
        &mut self,
        config: &PieConfig,
        packet: &mut Packet,
        now: SimTime,
        backlog: u64,
        rng: &mut Xoshiro256PlusPlus,
        marks: &mut CeMarks,
    ) -> Option<DropReason> {
        self.catch_up(config, now, backlog);
        if !self.drops_early(config, backlog, rng) {
            return None;
        }
        // RFC 8033 §5.1: mark an ECN-capable packet instead while drop_prob ≤ 10 %.
        let mark = config.ecn && self.drop_prob <= MARK_ECN_THRESHOLD;
        if marks.mark_instead_of_drop(mark, packet) {
            None
        } else {
            Some(DropReason::Aqm)
        }
    }

    /// `packet` left at `now`, `backlog` bytes still queued: the delay measured by timestamps
    /// (§4.3: its sojourn; 0 when the queue empties), or a step of the departure-rate estimator.
    #[inline]
    pub fn on_departure(&mut self, config: &PieConfig, packet: &Packet, now: SimTime, backlog: u64) {
        match config.estimator {
            PieEstimator::Timestamp => {
                self.qdelay = if backlog == 0 { SimTime::ZERO } else { now - packet.enqueued_at };
            }
            PieEstimator::DepartureRate => self.rate.departed(packet.wire_bytes as u64, backlog, now),
        }
    }
}

/// A PIE queue: a drop-tail FIFO behind PIE's early-drop decision.
#[derive(Debug)]
pub struct Pie {
    fifo: DropTailFifo,
    config: PieConfig,
    control: PieControl,
    rng: Xoshiro256PlusPlus,
    marks: CeMarks,
}

impl Pie {
    /// A PIE queue; `seed` keys its early-drop draws.
    pub fn new(config: PieConfig, seed: u64) -> Pie {
        Pie {
            fifo: DropTailFifo::new(config.limit_packets, config.limit_bytes),
            config,
            control: PieControl::new(&config),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            marks: CeMarks::default(),
        }
    }

    /// The drop probability now.
    pub fn drop_probability(&self) -> f64 {
        self.control.drop_probability()
    }

    /// The burst allowance left.
    pub fn burst_allowance(&self) -> SimTime {
        self.control.burst_allowance()
    }

    /// The controller's state (for tests and inspection).
    pub fn control(&self) -> &PieControl {
        &self.control
    }
}

impl QueueDiscipline for Pie {
    fn enqueue(
        &mut self,
        mut packet: Packet,
        now: SimTime,
        drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        let backlog = self.fifo.len_bytes();
        self.control.catch_up(&self.config, now, backlog);
        // RFC 8033 Appendix A: a full queue drops first (tail drop), then the early-drop decision.
        if !self.fifo.fits(packet.wire_bytes) {
            return Err((packet, DropReason::QueueFull));
        }
        let control = &mut self.control;
        if let Some(reason) =
            control.on_arrival(&self.config, &mut packet, now, backlog, &mut self.rng, &mut self.marks)
        {
            return Err((packet, reason));
        }
        self.fifo.enqueue(packet, now, drops)
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        self.control.catch_up(&self.config, now, self.fifo.len_bytes());
        let out = self.fifo.dequeue(now, drops);
        if let Dequeue::Packet(p) = out {
            self.control.on_departure(&self.config, &p, now, self.fifo.len_bytes());
        }
        out
    }

    fn len_packets(&self) -> u64 {
        self.fifo.len_packets()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }

    fn ce_marks(&self) -> CeMarks {
        self.marks
    }

    fn aqm_state(&self) -> AqmState {
        AqmState {
            probability: Some(self.control.drop_probability()),
            signal: Some(self.control.qdelay().as_ns() as f64),
            state: None,
            count: None,
        }
    }
}

/// The controller's steps on the queue's own backlog, for the tests.
#[cfg(test)]
impl Pie {
    fn update(&mut self) {
        self.control.update(&self.config, self.fifo.len_bytes());
    }

    fn drops_early(&mut self) -> bool {
        self.control.drops_early(&self.config, self.fifo.len_bytes(), &mut self.rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;
    use crate::queue::discipline::NoDrops;

    fn packet(bytes: u32, enqueued_at: SimTime) -> Packet {
        Packet { enqueued_at, ..Packet::segment(0, 0, 0, 0, bytes - 52, bytes, SimTime::ZERO) }
    }

    fn config() -> PieConfig {
        PieConfig {
            limit_packets: Some(1000),
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

    #[test]
    fn the_probability_follows_the_pi_update_with_its_auto_tuning() {
        // A qdelay sequence 30, 45, 45, 20 ms, by hand (§4.2, α = 0.125/s, β = 1.25/s):
        //  1. p = 0.125·0.015 + 1.25·0.030 = 0.039375; drop_prob 0 < 1e-6: /2048 → 1.922607e-5
        //  2. p = 0.125·0.030 + 1.25·0.015 = 0.0225;   drop_prob < 1e-4: /128 → + 1.7578125e-4
        //  3. p = 0.125·0.030 + 0 = 0.00375;            drop_prob < 1e-3: /32 → + 1.171875e-4
        //  4. p = 0.125·0.005 − 1.25·0.025 = −0.030625; drop_prob < 1e-3: /32 → − 9.5703125e-4
        //     → below 0: bounded to 0.
        let mut q = Pie::new(config(), 1);
        let mut hand = 0.0;
        for (qdelay_ms, step) in [(30, 0.039375 / 2048.0), (45, 0.0225 / 128.0), (45, 0.00375 / 32.0)] {
            q.control.qdelay = SimTime::from_ms(qdelay_ms);
            q.update();
            hand += step;
            assert!((q.drop_probability() - hand).abs() < 1e-15, "{} vs {hand}", q.drop_probability());
        }
        assert!((hand - (1.922607421875e-5 + 1.7578125e-4 + 1.171875e-4)).abs() < 1e-15);
        q.control.qdelay = SimTime::from_ms(20);
        q.update();
        assert_eq!(q.drop_probability(), 0.0);
    }

    #[test]
    fn large_probabilities_move_unscaled_but_by_at_most_two_percent() {
        let mut q = Pie::new(config(), 1);
        // drop_prob 0.05 (< 0.1: p/2): qdelay 25 ms steady: p = 0.125·0.010 = 0.00125 → +0.000625.
        q.control.drop_prob = 0.05;
        q.control.qdelay = SimTime::from_ms(25);
        q.control.qdelay_old = SimTime::from_ms(25);
        q.update();
        assert!((q.drop_probability() - 0.050625).abs() < 1e-15);
        // drop_prob 0.3: unscaled, and a jump of qdelay 25 → 100 ms would add 0.103: capped (§5.5).
        q.control.drop_prob = 0.3;
        q.control.qdelay = SimTime::from_ms(100);
        q.update();
        assert!((q.drop_probability() - 0.32).abs() < 1e-15);
        // Decreases are not capped: 100 → 15 ms gives −0.10625.
        q.control.qdelay = SimTime::from_ms(15);
        q.update();
        assert!((q.drop_probability() - (0.32 - 0.10625)).abs() < 1e-15);
    }

    #[test]
    fn the_probability_decays_while_the_queue_stays_empty() {
        // qdelay = qdelay_old = 0 at drop_prob 0.5: p = −0.125·0.015 = −0.001875, then ·0.98.
        let mut q = Pie::new(config(), 1);
        q.control.drop_prob = 0.5;
        q.update();
        assert!((q.drop_probability() - (0.5 - 0.001875) * 0.98).abs() < 1e-15);
    }

    /// Keep the queue `depth` packets deep, each having waited `sojourn`, through `until`, one
    /// arrival and one departure per ms; returns the early drops.
    fn congest(q: &mut Pie, from: SimTime, until: SimTime, sojourn: SimTime, depth: u64) -> u64 {
        let mut drops = 0;
        let mut t = from;
        while t < until {
            while q.len_packets() < depth {
                q.fifo.enqueue(packet(1500, t.saturating_sub(sojourn)), t, &mut NoDrops).unwrap();
            }
            if let Err((_, reason)) = q.enqueue(packet(1500, t.saturating_sub(sojourn)), t, &mut NoDrops) {
                assert_eq!(reason, DropReason::Aqm);
                drops += 1;
            }
            q.dequeue(t, &mut NoDrops);
            t += SimTime::from_ms(1);
        }
        drops
    }

    #[test]
    fn no_early_drop_within_the_burst_allowance() {
        // Congestion at 100 ms of delay from t = 0: the probability rises from the first update,
        // but nothing is dropped in the first 150 ms; then drops begin.
        let mut q = Pie::new(config(), 1);
        let drops = congest(&mut q, SimTime::ZERO, SimTime::from_ms(150), SimTime::from_ms(100), 50);
        assert_eq!(drops, 0);
        assert!(q.drop_probability() > 0.005, "{}", q.drop_probability());
        assert_eq!(q.burst_allowance(), SimTime::from_ms(15), "the update at 150 ms takes the last 15 ms");
        let drops = congest(&mut q, SimTime::from_ms(150), SimTime::from_ms(1000), SimTime::from_ms(100), 50);
        assert!(drops > 10, "{drops}");
    }

    #[test]
    fn the_safeguards_exempt_a_calm_or_nearly_empty_queue() {
        let mut q = Pie::new(config(), 1);
        q.control.burst_allowance = SimTime::ZERO;
        q.control.drop_prob = 0.15;
        q.control.qdelay_old = SimTime::from_ms(7);
        for _ in 0..10 {
            q.fifo.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        // qdelay_old 7 ms < 7.5 ms and drop_prob 0.15 < 0.2: never dropped.
        assert!((0..1000).all(|_| !q.drops_early()));
        // At drop_prob 0.2 the first safeguard no longer holds.
        q.control.drop_prob = 0.2;
        assert!((0..1000).any(|_| q.drops_early()));
        // With at most two mean-sized packets queued, never dropped whatever drop_prob.
        q.control.drop_prob = 1.0;
        q.control.qdelay_old = SimTime::from_ms(100);
        while q.len_packets() > 2 {
            q.fifo.dequeue(SimTime::ZERO, &mut NoDrops);
        }
        assert!((0..1000).all(|_| !q.drops_early()));
        q.fifo.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        assert!(q.drops_early());
    }

    #[test]
    fn derandomisation_spaces_drops_by_the_accumulated_probability() {
        // §5.4 at drop_prob 0.1: no drop while accu_prob < 0.85 (the first 8 arrivals), a drop
        // with probability 0.1 from the 9th on, a certain one once accu_prob ≥ 8.5 (the 85th,
        // or the 86th as the sum of 85 tenths rounds below 8.5).
        let mut q = Pie::new(PieConfig { derandomize: true, ..config() }, 3);
        q.control.burst_allowance = SimTime::ZERO;
        q.control.drop_prob = 0.1;
        q.control.qdelay_old = SimTime::from_ms(100);
        for _ in 0..10 {
            q.fifo.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let mut gaps = Vec::new();
        let mut since = 0;
        for _ in 0..100_000 {
            since += 1;
            if q.drops_early() {
                gaps.push(since);
                since = 0;
            }
        }
        assert!(gaps.iter().all(|&g| (9..=86).contains(&g)), "{:?}", gaps.iter().min());
        // The gap is 8 + a geometric number of trials of p = 0.1 (truncated far out): mean ≈ 18,
        // σ ≈ 9.5 per gap, ≈ 0.13 over ~5,500 gaps.
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((mean - 18.0).abs() < 0.5, "{mean}");
    }

    #[test]
    fn the_delay_is_the_departing_packets_sojourn_and_updates_are_taken_when_due() {
        let mut q = Pie::new(config(), 1);
        for k in 0..3 {
            q.enqueue(packet(1500, SimTime::from_ms(k)), SimTime::from_ms(k), &mut NoDrops).unwrap();
        }
        q.dequeue(SimTime::from_ms(10), &mut NoDrops);
        assert_eq!(q.control.qdelay, SimTime::from_ms(10));
        assert_eq!(q.control.qdelay_old, SimTime::ZERO, "no update before 15 ms");
        q.dequeue(SimTime::from_ms(16), &mut NoDrops);
        assert_eq!(q.control.qdelay_old, SimTime::from_ms(10), "the 15 ms update took the delay then");
        assert_eq!(q.control.qdelay, SimTime::from_ms(15));
        q.dequeue(SimTime::from_ms(17), &mut NoDrops);
        assert_eq!(q.control.qdelay, SimTime::ZERO, "the queue emptied");
        // A long idle time: the state settles and the updates after it are skipped.
        q.enqueue(packet(1500, SimTime::from_secs(1000)), SimTime::from_secs(1000), &mut NoDrops).unwrap();
        assert_eq!((q.drop_probability(), q.burst_allowance()), (0.0, SimTime::from_ms(150)));
        let idle_end = SimTime::from_secs(1000);
        assert!(q.control.next_update > idle_end && q.control.next_update <= idle_end + SimTime::from_ms(15));
    }

    #[test]
    fn a_full_queue_is_a_tail_drop_before_any_early_drop() {
        let mut q = Pie::new(PieConfig { limit_packets: Some(4), ..config() }, 1);
        q.control.burst_allowance = SimTime::ZERO;
        q.control.drop_prob = 1.0;
        q.control.qdelay_old = SimTime::from_ms(100);
        for _ in 0..4 {
            q.fifo.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (_, reason) = q.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(reason, DropReason::QueueFull);
        q.fifo.dequeue(SimTime::ZERO, &mut NoDrops);
        let (_, reason) = q.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(reason, DropReason::Aqm);
    }

    #[test]
    fn the_same_seed_drops_the_same_packets() {
        let run = |seed| {
            let mut q = Pie::new(config(), seed);
            q.control.burst_allowance = SimTime::ZERO;
            q.control.drop_prob = 0.3;
            q.control.qdelay_old = SimTime::from_ms(100);
            for _ in 0..10 {
                q.fifo.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
            }
            (0..2000).map(|_| q.drops_early()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    /// `n` ECN-capable (`ecn`) arrivals at a PIE with `ecn` on, under control (no burst
    /// allowance left, a long queue) at drop probability `drop_prob`, each dequeued before the
    /// next: (arrivals dropped early, arrivals queued marked CE).
    fn arrivals_at(drop_prob: f64, ecn: Ecn, n: u32) -> (u64, u64, Pie) {
        let mut q = Pie::new(PieConfig { ecn: true, t_update: SimTime::from_secs(1000), ..config() }, 1);
        (q.control.drop_prob, q.control.burst_allowance, q.control.qdelay_old) =
            (drop_prob, SimTime::ZERO, SimTime::from_ms(30));
        for _ in 0..10 {
            q.fifo.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (mut dropped, mut marked) = (0, 0);
        for _ in 0..n {
            match q.enqueue(Packet { ecn, ..packet(1500, SimTime::ZERO) }, SimTime::ZERO, &mut NoDrops) {
                Err((_, reason)) => {
                    assert_eq!(reason, DropReason::Aqm);
                    dropped += 1;
                }
                Ok(()) => {
                    // The ten packets ahead keep the queue long (§4.1's safeguard stays off).
                    let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO, &mut NoDrops) else { panic!("queued") };
                    marked += (p.ecn == Ecn::Ce) as u64;
                }
            }
        }
        while let Dequeue::Packet(p) = q.fifo.dequeue(SimTime::ZERO, &mut NoDrops) {
            marked += (p.ecn == Ecn::Ce) as u64;
        }
        (dropped, marked, q)
    }

    #[test]
    fn with_ecn_ect_arrivals_are_marked_while_the_probability_is_at_most_ten_percent() {
        // RFC 8033 §5.1: at drop_prob 0.05, about 5 % of the arrivals are marked, none dropped.
        let (dropped, marked, q) = arrivals_at(0.05, Ecn::Ect0, 10_000);
        assert_eq!(dropped, 0);
        assert!((400..600).contains(&marked), "{marked} marks");
        assert_eq!(q.ce_marks(), CeMarks { packets: marked, bytes: 1500 * marked });
        // Not-ECT arrivals are dropped as without ECN.
        let (dropped, marked, _) = arrivals_at(0.05, Ecn::NotEct, 10_000);
        assert!((400..600).contains(&dropped) && marked == 0, "{dropped} drops");
    }

    #[test]
    fn with_ecn_pie_drops_above_ten_percent() {
        let (dropped, marked, q) = arrivals_at(0.2, Ecn::Ect0, 10_000);
        assert!((1800..2200).contains(&dropped), "{dropped} drops");
        assert_eq!((marked, q.ce_marks()), (0, CeMarks::default()));
    }

    #[test]
    fn the_departure_rate_is_averaged_over_cycles_of_dq_threshold_bytes() {
        // RFC 8033 Appendix B's estimator on 1500-byte departures with 40 kB queued throughout.
        // Cycle 1, one every 120 µs from t0 = 1 ms: dq_count reaches 16,500 ≥ 16,384 at the
        // 11th, 1.2 ms after the first (the first counted): avg_dq_time = 1.2 ms.
        let mut rate = DepartureRate::default();
        let us = SimTime::from_us;
        assert_eq!(rate.delay(40_000), SimTime::ZERO, "no estimate before a cycle ends");
        for k in 0..11 {
            rate.departed(1500, 40_000, SimTime::from_ms(1) + us(120 * k));
        }
        assert!(!rate.in_measurement);
        assert_eq!(rate.avg_dq_time, SimTime::from_us(1200));
        // The rate is DQ_THRESHOLD / avg_dq_time = 16384 B / 1.2 ms, and the delay of a 30,000
        // byte queue 30000 · 1.2 ms / 16384 = 2.197265625 ms, exactly.
        assert!((rate.bytes_per_sec().unwrap() - 16384.0 / 1.2e-3).abs() < 1e-6);
        assert_eq!(rate.delay(30_000), SimTime(2_197_265_625));
        // Cycle 2 at half the pace (240 µs): dq_int = 2.4 ms, averaged with weight 1/4:
        // 2.4/4 + 1.2·3/4 = 1.5 ms.
        let start = SimTime::from_ms(10);
        for k in 0..11 {
            rate.departed(1500, 40_000, start + us(240 * k));
        }
        assert_eq!(rate.avg_dq_time, SimTime::from_us(1500));
        assert_eq!(rate.delay(DQ_THRESHOLD), SimTime::from_us(1500));
    }

    #[test]
    fn a_measurement_cycle_starts_only_with_dq_threshold_bytes_queued() {
        let mut rate = DepartureRate::default();
        // 16,383 bytes left behind: no cycle starts, however many departures.
        for k in 0..100 {
            rate.departed(1500, DQ_THRESHOLD - 1, SimTime::from_us(k));
        }
        assert_eq!(rate, DepartureRate::default());
        // Once a cycle has started it runs to DQ_THRESHOLD bytes even as the queue drains,
        // across the idle time between (as the pseudocode): 1 ms + 10 s later, 11 departures.
        rate.departed(1500, DQ_THRESHOLD, SimTime::from_ms(1));
        for k in 1..11 {
            rate.departed(1500, 0, SimTime::from_secs(10) + SimTime::from_ms(k));
        }
        assert_eq!(rate.avg_dq_time, SimTime::from_secs(10) + SimTime::from_ms(9));
    }

    #[test]
    fn with_the_rate_estimator_the_delay_is_the_queue_over_the_rate_at_each_update() {
        // 40 packets at time zero, one dequeued every 120 µs from t = 0: the first cycle ends at
        // the 11th departure (1.2 ms), avg_dq_time = 1.2 ms. The update due at 15 ms, taken at
        // the next dequeue, reads 60,000 − 11·1500 = 43,500 bytes queued:
        // qdelay = 43500 · 1.2 ms / 16384 = 3.18603515625 ms (to the picosecond, rounded down).
        let config = PieConfig { estimator: PieEstimator::DepartureRate, ..config() };
        let mut q = Pie::new(config, 1);
        for _ in 0..40 {
            q.enqueue(packet(1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        for k in 0..11 {
            q.dequeue(SimTime::from_us(120 * k), &mut NoDrops);
        }
        assert_eq!(q.control().departure_rate().avg_dq_time, SimTime::from_us(1200));
        assert_eq!(q.control().qdelay(), SimTime::ZERO, "no update before 15 ms");
        q.dequeue(SimTime::from_ms(15), &mut NoDrops);
        assert_eq!(q.control.qdelay_old, SimTime(3_186_035_156));
        // The probability moved by the PI law on that delay (§4.2, /2048 at drop_prob 0).
        let d: f64 = 3_186_035_156e-12;
        let p = (0.125 * (d - 0.015) + 1.25 * d) / 2048.0;
        assert!((q.drop_probability() - p).abs() < 1e-15, "{} vs {p}", q.drop_probability());
    }
}
