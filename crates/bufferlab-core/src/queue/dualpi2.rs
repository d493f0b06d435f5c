//! DualPI2, the Dual-Queue Coupled AQM of RFC 9332 (De Schepper, Briscoe & White 2023) with the
//! PI2 base AQM of its Appendix A, as Linux's `sch_dualpi2` runs it by default.
//!
//! Two FIFOs share one buffer: the L queue for L4S traffic and the C queue for Classic traffic.
//! A packet goes by its ECN field alone (RFC 9331's identifier, RFC 9332 §2.3): ECT(1) and CE to
//! the L queue, Not-ECT and ECT(0) to the C queue. One PI controller, updated every Tupdate from
//! the queueing delay, drives a base probability p'; the two queues read it through the coupling
//! (RFC 9332 §2.1):
//!
//! ```text
//! p' += α·(curq − target) + β·(curq − prevq)    every Tupdate (Appendix A's PI2 update; α, β in
//!                                                Hz, delays in s); p' kept within [0, 1]
//! curq = the larger sojourn of the two head packets; prevq = curq of the last update
//! p_C  = p'²                                     Classic drop or mark probability (squared)
//! p_CL = k·p'                                    the coupled L4S mark probability (k = 2)
//! p_L  = max(p'_L, p_CL)                         p'_L the L queue's native AQM: a step, 1 when
//!                                                a packet's sojourn exceeds step_thresh (1 ms)
//! ```
//!
//! The decisions are taken at dequeue, as in Appendix A's pseudo-code and Linux's default: a C
//! packet is dropped with probability p_C if Not-ECT and marked CE if ECT(0) (classic ECN); an L
//! packet is marked CE with probability p_L. Marks and drops are counted per queue.
//!
//! Overload (RFC 9332 §4.2.3): once p_CL would exceed 1, i.e. p_C would exceed its maximum
//! p_Cmax = 1/k², marking alone cannot hold the L queue, which is then treated as Classic: with
//! `drop_on_overload` (Linux's default) every L packet is marked and also dropped with
//! probability p_C, and C packets are dropped whatever their ECN field, so that unresponsive
//! traffic cannot take the buffer; without it p' is held at 1/k and the L queue keeps marking
//! (100 %), leaving the tail drop at the limit to bound it.
//!
//! No probabilistic drop or mark while the two queues hold less than two of the largest packets
//! seen after the dequeue (Linux's safeguard, as PIE's of RFC 8033 §4.1); the step still marks.
//!
//! The scheduler between the two queues is either the time-shifted FIFO of Appendix A (the head
//! of the L queue goes first unless the C head has waited more than `tshift` longer) or Linux's
//! default, a weighted round robin by bytes that gives the C queue `classic_protection` % of the
//! link while both are backlogged (Linux's `classic_protection`, default 10 %). Either keeps the
//! C queue from starvation (RFC 9332 §4.2.2).
//!
//! The two queues share a limit in packets (Linux's default 10,000); an arrival beyond it is a
//! tail drop ([`DropReason::QueueFull`]). Drops by the AQM at dequeue are [`DropReason::Aqm`].
//!
//! The PI controller's timer is not an event of its own: the updates due by an arrival or a
//! departure are taken then, each with the head sojourns at its own due time. Nothing arrives or
//! leaves between the due time and the event that takes the update, so the queues it reads are
//! those of the due time and the update is exact. While both queues stay empty the state reached
//! (p' = 0, prevq = 0) is kept by every further update, and those are skipped.

use super::discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::{Ecn, Packet};
use crate::record::result::QueueClassRecord;
use crate::units::SimTime;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// Index of the L4S queue among the two (its class record's `sub_buffer`).
pub const L: usize = 0;
/// Index of the Classic queue.
pub const C: usize = 1;

/// How the link is shared between the two queues.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheduler {
    /// RFC 9332 Appendix A's time-shifted FIFO: the L head goes first unless the C head has
    /// waited more than this much longer.
    TimeShifted(SimTime),
    /// Weighted round robin by bytes (Linux's default): the C queue's share, in percent, while
    /// both queues are backlogged.
    Wrr { classic_percent: u8 },
}

/// A DualPI2 queue's parameters (RFC 9332 Appendix A and Linux's defaults in the spec layer:
/// target 15 ms, Tupdate 16 ms, α 0.16 Hz, β 3.2 Hz, k 2, step 1 ms, limit 10,000 packets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DualPi2Config {
    /// Packets the two queues hold together.
    pub limit_packets: u64,
    /// The Classic queueing delay the PI controller holds.
    pub target: SimTime,
    /// Period of p''s update.
    pub t_update: SimTime,
    /// Integral gain α and proportional gain β, Hz.
    pub alpha: f64,
    pub beta: f64,
    /// The coupling factor k (p_CL = k·p').
    pub coupling: f64,
    /// The L queue's step: a packet that waited longer is marked.
    pub step_thresh: SimTime,
    pub scheduler: Scheduler,
    /// On overload drop L packets with p_C (true) or hold p' at 1/k and keep marking (false).
    pub drop_on_overload: bool,
}

/// RFC 9331's classifier as RFC 9332 §2.3 applies it: ECT(1) and CE go to the L queue, Not-ECT
/// and ECT(0) to the C queue (the ECN field's low bit).
#[inline]
pub fn classify(ecn: Ecn) -> usize {
    if (ecn as u8) & 1 == 1 {
        L
    } else {
        C
    }
}

/// p_C = p'² (RFC 9332 §2.1: the Classic probability is the square of the base probability).
#[inline]
pub fn classic_probability(p: f64) -> f64 {
    p * p
}

/// p_CL = k·p' (RFC 9332 §2.1: the coupled L4S probability), at most 1.
#[inline]
pub fn coupled_probability(p: f64, k: f64) -> f64 {
    (k * p).min(1.0)
}

/// Overload (RFC 9332 §4.2.3): k·p' above 1, where p_C = p'² passes p_Cmax = 1/k².
#[inline]
pub fn overloaded(p: f64, k: f64) -> bool {
    k * p > 1.0
}

/// The time-shifted FIFO's choice (Appendix A): serve the L queue when its head's sojourn plus
/// tshift is at least the C head's.
#[inline]
pub fn time_shift_serves_l(l_sojourn: SimTime, c_sojourn: SimTime, tshift: SimTime) -> bool {
    l_sojourn + tshift >= c_sojourn
}

/// One of the two FIFOs with its counters.
#[derive(Debug, Default)]
struct SubQueue {
    packets: VecDeque<Packet>,
    bytes: u64,
    record: QueueClassRecord,
    marks: CeMarks,
}

impl SubQueue {
    fn head_sojourn(&self, now: SimTime) -> Option<SimTime> {
        self.packets.front().map(|p| now.saturating_sub(p.enqueued_at))
    }

    fn pop(&mut self) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        Some(p)
    }

    fn count_drop(&mut self, p: &Packet) {
        self.record.dropped_packets += 1;
        self.record.dropped_bytes += p.wire_bytes as u64;
    }
}

/// A DualPI2 queue: the L and C FIFOs, the PI2 controller and the scheduler.
#[derive(Debug)]
pub struct DualPi2 {
    config: DualPi2Config,
    queues: [SubQueue; 2],
    /// p', the base probability.
    p: f64,
    /// prevq: the queueing delay at the last update.
    prev_q: SimTime,
    next_update: SimTime,
    /// The WRR's credit in byte·percent: the L queue is served while it is not positive.
    credit: i64,
    /// The largest packet seen, for the two-packet safeguard and the WRR's initial credit.
    mtu: u64,
    rng: Xoshiro256PlusPlus,
    marks: CeMarks,
}

impl DualPi2 {
    /// A DualPI2 queue; `seed` keys its drop and mark draws.
    pub fn new(config: DualPi2Config, seed: u64) -> DualPi2 {
        let mut q = DualPi2 {
            config,
            queues: [SubQueue::default(), SubQueue::default()],
            p: 0.0,
            prev_q: SimTime::ZERO,
            next_update: config.t_update,
            credit: 0,
            mtu: 1500,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            marks: CeMarks::default(),
        };
        q.reset_credit();
        q
    }

    /// p', the base probability now.
    pub fn base_probability(&self) -> f64 {
        self.p
    }

    /// Packets queued in the L (`L`) or C (`C`) queue.
    pub fn class_len(&self, class: usize) -> u64 {
        self.queues[class].packets.len() as u64
    }

    /// The CE marks queue `class` made.
    pub fn class_ce_marks(&self, class: usize) -> CeMarks {
        self.queues[class].marks
    }

    /// Queue `class`'s counters and state (`L` = 0, `C` = 1); its limit is the shared one.
    pub fn class_record(&self, class: usize) -> QueueClassRecord {
        let s = &self.queues[class];
        QueueClassRecord {
            queued_packets: s.packets.len() as u64,
            queued_bytes: s.bytes,
            limit: self.config.limit_packets,
            ce_marked_packets: s.marks.packets,
            ce_marked_bytes: s.marks.bytes,
            ..s.record
        }
    }

    /// Both queues' records, L first.
    pub fn class_records(&self) -> Vec<QueueClassRecord> {
        vec![self.class_record(L), self.class_record(C)]
    }

    /// The WRR's credit when the queues empty: C's weight less L's, in MTUs (Linux's reset value);
    /// negative, so that the L queue goes first.
    fn reset_credit(&mut self) {
        if let Scheduler::Wrr { classic_percent } = self.config.scheduler {
            let wc = classic_percent as i64;
            self.credit = self.mtu as i64 * (wc - (100 - wc));
        }
    }

    /// One update of p' at time `due` (Appendix A's PI2 update, with the larger head sojourn of
    /// the two queues as the queueing delay).
    fn update(&mut self, due: SimTime) {
        let curq = self.queues.iter().filter_map(|q| q.head_sojourn(due)).max().unwrap_or(SimTime::ZERO);
        let (target, cur, prev) = (self.config.target.as_secs_f64(), curq.as_secs_f64(), self.prev_q.as_secs_f64());
        // p' = p' + alpha·(curq − target) + beta·(curq − prevq)   (Appendix A)
        self.p += self.config.alpha * (cur - target) + self.config.beta * (cur - prev);
        // p' is a probability, kept within [0, 1]; without drop on overload it stops
        // at 1/k, where the L queue marks every packet (RFC 9332 §4.2.3).
        let max = if self.config.drop_on_overload { 1.0 } else { (1.0 / self.config.coupling).min(1.0) };
        self.p = self.p.clamp(0.0, max);
        self.prev_q = curq;
    }

    /// Take the updates due by `now` (see the module comment).
    fn catch_up(&mut self, now: SimTime) {
        while now >= self.next_update {
            let due = self.next_update;
            self.update(due);
            self.next_update += self.config.t_update;
            let idle = self.queues.iter().all(|q| q.packets.is_empty()) && self.p == 0.0 && self.prev_q.as_ps() == 0;
            if idle && now >= self.next_update {
                // Every further update leaves this state as it is: skip to the next one due.
                let periods = (now - self.next_update).as_ps() / self.config.t_update.as_ps() + 1;
                self.next_update += self.config.t_update.mul(periods);
            }
        }
    }

    /// A uniform draw in (0, 1): 53 random bits, offset by half a step.
    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// A Bernoulli draw of probability `p` (none for p = 0, so that an idle controller draws no
    /// numbers).
    fn roll(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }

    /// The scheduler's choice among non-empty queues.
    fn choose(&self, now: SimTime) -> Option<usize> {
        let (l, c) = (self.queues[L].head_sojourn(now), self.queues[C].head_sojourn(now));
        match (l, c) {
            (None, None) => None,
            (Some(_), None) => Some(L),
            (None, Some(_)) => Some(C),
            (Some(l), Some(c)) => Some(match self.config.scheduler {
                Scheduler::TimeShifted(tshift) => {
                    if time_shift_serves_l(l, c, tshift) {
                        L
                    } else {
                        C
                    }
                }
                Scheduler::Wrr { .. } => {
                    if self.credit <= 0 {
                        L
                    } else {
                        C
                    }
                }
            }),
        }
    }

    /// The WRR's credit after `class` sent `bytes` while the other queue was backlogged: L's
    /// service moves it by C's weight, C's by L's, so that C takes its share of the bytes.
    fn charge(&mut self, class: usize, bytes: u64, other_backlogged: bool) {
        if let Scheduler::Wrr { classic_percent } = self.config.scheduler {
            if other_backlogged {
                let wc = classic_percent as i64;
                self.credit += if class == L { wc * bytes as i64 } else { -(100 - wc) * bytes as i64 };
            }
        }
    }

    /// The AQM's verdict on a packet leaving queue `class`: true to drop it (it may be marked CE
    /// in place).
    fn drops(&mut self, class: usize, packet: &mut Packet, now: SimTime) -> bool {
        let k = self.config.coupling;
        let queued: u64 = self.queues.iter().map(|q| q.bytes).sum();
        // Linux's safeguard: no probabilistic action on less than two full packets queued.
        let controlled = queued >= 2 * self.mtu;
        let overload = overloaded(self.p, k);
        let p_c = classic_probability(self.p);
        if class == C {
            // p_C = p'²: a Not-ECT packet is dropped, an ECT(0) one marked CE (classic ECN,
            // RFC 3168 §5); on overload every one is dropped (RFC 9332 §4.2.3).
            if controlled && self.roll(p_c) {
                if overload || packet.ecn == Ecn::NotEct {
                    return true;
                }
                self.mark(C, packet);
            }
            return false;
        }
        if controlled && overload {
            // RFC 9332 §4.2.3: the L queue is saturated with marks (p_L = 1); with drop on
            // overload it is also dropped from as Classic traffic would be, with p_C.
            if self.config.drop_on_overload && self.roll(p_c) {
                return true;
            }
            self.mark(L, packet);
            return false;
        }
        // p_L = max(p'_L, p_CL) (RFC 9332 §2.1; Appendix A): the step p'_L is 1 when
        // the packet waited longer than step_thresh, else 0, so p_L is 1 or p_CL.
        let step = now.saturating_sub(packet.enqueued_at) > self.config.step_thresh;
        let coupled = controlled && self.roll(coupled_probability(self.p, k));
        if step || coupled {
            self.mark(L, packet);
        }
        false
    }

    fn mark(&mut self, class: usize, packet: &mut Packet) {
        let before = self.marks;
        self.marks.mark_instead_of_drop(true, packet);
        let q = &mut self.queues[class].marks;
        q.packets += self.marks.packets - before.packets;
        q.bytes += self.marks.bytes - before.bytes;
    }
}

impl QueueDiscipline for DualPi2 {
    fn enqueue(
        &mut self,
        packet: Packet,
        now: SimTime,
        _drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        self.catch_up(now);
        let class = classify(packet.ecn);
        self.mtu = self.mtu.max(packet.wire_bytes as u64);
        // A limit shared by the two queues, tail drop (Appendix A's enqueue).
        if self.len_packets() >= self.config.limit_packets {
            self.queues[class].count_drop(&packet);
            return Err((packet, DropReason::QueueFull));
        }
        let q = &mut self.queues[class];
        q.record.enqueued_packets += 1;
        q.record.enqueued_bytes += packet.wire_bytes as u64;
        q.bytes += packet.wire_bytes as u64;
        q.packets.push_back(packet);
        q.record.max_packets = q.record.max_packets.max(q.packets.len() as u64);
        Ok(())
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        self.catch_up(now);
        while let Some(class) = self.choose(now) {
            let other_backlogged = !self.queues[1 - class].packets.is_empty();
            let mut packet = self.queues[class].pop().expect("the scheduler chose a non-empty queue");
            if self.drops(class, &mut packet, now) {
                self.queues[class].count_drop(&packet);
                drops.dropped(packet, DropReason::Aqm);
                continue;
            }
            self.charge(class, packet.wire_bytes as u64, other_backlogged);
            let r = &mut self.queues[class].record;
            r.sent_packets += 1;
            r.sent_bytes += packet.wire_bytes as u64;
            r.sojourn_sum_ns += now.saturating_sub(packet.enqueued_at).as_ns();
            return Dequeue::Packet(packet);
        }
        self.reset_credit();
        Dequeue::Empty
    }

    fn len_packets(&self) -> u64 {
        self.queues.iter().map(|q| q.packets.len() as u64).sum()
    }

    fn len_bytes(&self) -> u64 {
        self.queues.iter().map(|q| q.bytes).sum()
    }

    fn ce_marks(&self) -> CeMarks {
        self.marks
    }

    fn aqm_state(&self) -> AqmState {
        AqmState { probability: Some(self.p), signal: Some(self.prev_q.as_ns() as f64), state: None, count: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::discipline::NoDrops;

    fn packet(ecn: Ecn, enqueued_at: SimTime) -> Packet {
        Packet { ecn, enqueued_at, ..Packet::segment(0, 0, 0, 0, 1448, 1500, SimTime::ZERO) }
    }

    fn config() -> DualPi2Config {
        DualPi2Config {
            limit_packets: 10_000,
            target: SimTime::from_ms(15),
            t_update: SimTime::from_ms(16),
            alpha: 0.16,
            beta: 3.2,
            coupling: 2.0,
            step_thresh: SimTime::from_ms(1),
            scheduler: Scheduler::TimeShifted(SimTime::from_ms(30)),
            drop_on_overload: true,
        }
    }

    /// Collects the packets dropped at dequeue.
    struct Dropped(Vec<Packet>);
    impl DropSink for Dropped {
        fn dropped(&mut self, packet: Packet, reason: DropReason) {
            assert_eq!(reason, DropReason::Aqm);
            self.0.push(packet);
        }
    }

    #[test]
    fn the_four_codepoints_are_classified_by_the_low_bit() {
        // RFC 9332 §2.3 with RFC 9331's identifier: ECT(1) and CE to L; Not-ECT and ECT(0) to C.
        assert_eq!([Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].map(classify), [C, L, C, L]);
        let mut q = DualPi2::new(config(), 1);
        for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            q.enqueue(packet(ecn, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        assert_eq!((q.class_len(L), q.class_len(C)), (2, 2));
    }

    #[test]
    fn the_coupled_probabilities_are_the_square_and_k_times_the_base() {
        for (p, p_c, p_cl) in [(0.0, 0.0, 0.0), (0.1, 0.01, 0.2), (0.3, 0.09, 0.6), (0.5, 0.25, 1.0)] {
            assert!((classic_probability(p) - p_c).abs() < 1e-15, "{p}");
            assert!((coupled_probability(p, 2.0) - p_cl).abs() < 1e-15, "{p}");
        }
        assert!((coupled_probability(0.1, 3.0) - 0.3).abs() < 1e-15);
        // p_CL never exceeds 1.
        assert_eq!(coupled_probability(0.8, 2.0), 1.0);
    }

    #[test]
    fn overload_begins_where_p_c_passes_one_over_k_squared() {
        // k = 2: p_Cmax = 1/4, reached at p' = 1/2 where p_CL = 1; overload strictly above it.
        assert!(!overloaded(0.5, 2.0));
        assert!(overloaded(0.500_000_001, 2.0));
        assert!(classic_probability(0.5) == 0.25 && coupled_probability(0.5, 2.0) == 1.0);
        // k = 4: p' = 1/4, p_Cmax = 1/16.
        assert!(!overloaded(0.25, 4.0) && overloaded(0.250_000_001, 4.0));
    }

    #[test]
    fn the_base_probability_follows_the_pi_update() {
        // The head sojourn at each update 20, 30, 30, 10 ms (α = 0.16 Hz, β = 3.2 Hz, target
        // 15 ms), by hand:
        //   1. 0.16·0.005 + 3.2·0.020 = 0.0008 + 0.064 = 0.0648
        //   2. 0.16·0.015 + 3.2·0.010 = 0.0024 + 0.032 = 0.0344   → 0.0992
        //   3. 0.16·0.015 + 3.2·0     = 0.0024                    → 0.1016
        //   4. 0.16·(−0.005) + 3.2·(−0.020) = −0.0648             → 0.0368
        //   5. an empty queue: 0.16·(−0.015) + 3.2·(−0.010) = −0.0344 → 0.0024
        //   6. empty again: 0.16·(−0.015) + 0 = −0.0024 → 0 (bounded below by 0 after rounding)
        let mut q = DualPi2::new(config(), 1);
        let mut expected = [0.0648, 0.0992, 0.1016, 0.0368].into_iter();
        for (k, sojourn_ms) in [20u64, 30, 30, 10].into_iter().enumerate() {
            let due = SimTime::from_ms(100 + 16 * k as u64);
            q.queues[C].packets.clear();
            q.queues[C].packets.push_back(packet(Ecn::NotEct, due - SimTime::from_ms(sojourn_ms)));
            q.update(due);
            let want = expected.next().unwrap();
            assert!((q.base_probability() - want).abs() < 1e-12, "{} vs {want}", q.base_probability());
        }
        q.queues[C].packets.clear();
        q.update(SimTime::from_ms(164));
        assert!((q.base_probability() - 0.0024).abs() < 1e-12, "{}", q.base_probability());
        q.update(SimTime::from_ms(180));
        assert!(q.base_probability() < 1e-15);
        q.update(SimTime::from_ms(196));
        assert_eq!(q.base_probability(), 0.0);
    }

    #[test]
    fn the_delay_is_the_larger_head_sojourn_taken_at_each_due_time() {
        let mut q = DualPi2::new(config(), 1);
        // An L head from t = 0 and a C head from t = 10 ms: at the 16 ms update curq is 16 ms,
        // the L head's: p' = 0.16·0.001 + 3.2·0.016 = 0.05136.
        q.enqueue(packet(Ecn::Ect1, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        q.enqueue(packet(Ecn::NotEct, SimTime::from_ms(10)), SimTime::from_ms(10), &mut NoDrops).unwrap();
        // The update is taken by an event at 20 ms, with the sojourns at 16 ms.
        q.enqueue(packet(Ecn::NotEct, SimTime::from_ms(20)), SimTime::from_ms(20), &mut NoDrops).unwrap();
        assert!((q.base_probability() - 0.05136).abs() < 1e-12, "{}", q.base_probability());
        assert_eq!(q.prev_q, SimTime::from_ms(16));
        assert_eq!(q.next_update, SimTime::from_ms(32));
    }

    #[test]
    fn an_idle_queue_decays_to_zero_and_then_skips_its_updates() {
        let mut q = DualPi2::new(config(), 1);
        q.p = 0.01;
        // Empty from the start: −0.16·0.015 = −0.0024 per update: 0.0076, 0.0052, 0.0028, 0.0004, 0.
        q.enqueue(packet(Ecn::NotEct, SimTime::from_secs(100)), SimTime::from_secs(100), &mut NoDrops).unwrap();
        assert_eq!(q.base_probability(), 0.0);
        let t = SimTime::from_secs(100);
        assert!(q.next_update > t && q.next_update <= t + SimTime::from_ms(16));
    }

    #[test]
    fn the_step_marks_an_l_packet_that_waited_longer_than_the_threshold() {
        // p' = 0: only the step marks. At exactly 1 ms no mark, 1 ns more a mark (Linux marks
        // above the threshold).
        let mut q = DualPi2::new(config(), 1);
        for (waited, marked) in [(SimTime::from_ms(1), false), (SimTime::from_ns(1_000_001), true)] {
            let now = SimTime::from_ms(5);
            q.enqueue(packet(Ecn::Ect1, now - waited), now, &mut NoDrops).unwrap();
            let Dequeue::Packet(p) = q.dequeue(now, &mut Dropped(vec![])) else { panic!("queued") };
            assert_eq!(p.ecn == Ecn::Ce, marked, "{waited:?}");
        }
        assert_eq!(q.class_ce_marks(L), CeMarks { packets: 1, bytes: 1500 });
        // A C packet is never step-marked.
        q.enqueue(packet(Ecn::Ect0, SimTime::ZERO), SimTime::from_ms(5), &mut NoDrops).unwrap();
        let Dequeue::Packet(p) = q.dequeue(SimTime::from_ms(5), &mut Dropped(vec![])) else { panic!() };
        assert_eq!(p.ecn, Ecn::Ect0);
    }

    #[test]
    fn the_time_shifted_fifo_serves_l_unless_c_waited_tshift_longer() {
        let ms = SimTime::from_ms;
        assert!(time_shift_serves_l(ms(0), ms(30), ms(30)), "C ahead by exactly tshift: L");
        assert!(!time_shift_serves_l(ms(0), ms(30) + SimTime::from_ns(1), ms(30)));
        assert!(time_shift_serves_l(ms(5), ms(20), ms(30)));
        assert!(!time_shift_serves_l(ms(5), ms(40), ms(30)));
        // In the queue: an L head of 1 ms and a C head of 40 ms at tshift 30 ms: C first.
        let mut q = DualPi2::new(config(), 1);
        let now = ms(100);
        q.enqueue(packet(Ecn::Ect1, now - ms(1)), now, &mut NoDrops).unwrap();
        q.enqueue(packet(Ecn::NotEct, now - ms(40)), now, &mut NoDrops).unwrap();
        let Dequeue::Packet(first) = q.dequeue(now, &mut Dropped(vec![])) else { panic!() };
        assert_eq!(first.ecn, Ecn::NotEct);
    }

    #[test]
    fn the_wrr_gives_the_classic_queue_its_share_of_the_bytes() {
        let mut q = DualPi2::new(DualPi2Config { scheduler: Scheduler::Wrr { classic_percent: 10 }, ..config() }, 1);
        for _ in 0..1000 {
            q.enqueue(packet(Ecn::Ect1, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
            q.enqueue(packet(Ecn::NotEct, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        // Both backlogged for 500 departures (no step: sojourn 0): 10 % of them from C.
        let mut from_c = 0;
        for _ in 0..500 {
            let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO, &mut Dropped(vec![])) else { panic!() };
            from_c += (classify(p.ecn) == C) as u32;
        }
        assert!((49..=51).contains(&from_c), "{from_c}");
    }

    /// `n` departures of `ecn` packets at base probability `p` from a queue kept 20 packets deep,
    /// each packet having waited 0 (no step): (dropped, marked CE).
    fn departures(p: f64, ecn: Ecn, drop_on_overload: bool, n: u32) -> (u32, u32) {
        let mut q = DualPi2::new(DualPi2Config { t_update: SimTime::from_secs(1000), drop_on_overload, ..config() }, 7);
        q.p = p;
        let (mut dropped, mut marked) = (0, 0);
        for _ in 0..n {
            while q.len_packets() < 20 {
                q.queues[classify(ecn)].packets.push_back(packet(ecn, SimTime::ZERO));
                q.queues[classify(ecn)].bytes += 1500;
            }
            let mut sink = Dropped(vec![]);
            if let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO, &mut sink) {
                marked += (p.ecn == Ecn::Ce) as u32;
            }
            dropped += sink.0.len() as u32;
        }
        (dropped, marked)
    }

    #[test]
    fn a_classic_packet_is_dropped_or_marked_with_p_squared() {
        // p' = 0.3: p_C = 0.09. Not-ECT dropped, ECT(0) marked; ±5σ of 20,000 draws is ±0.01.
        let (dropped, marked) = departures(0.3, Ecn::NotEct, true, 20_000);
        let rate = dropped as f64 / (dropped + 20_000) as f64;
        assert!((rate - 0.09).abs() < 0.01 && marked == 0, "{rate}");
        let (dropped, marked) = departures(0.3, Ecn::Ect0, true, 20_000);
        assert!(dropped == 0 && (marked as f64 / 20_000.0 - 0.09).abs() < 0.01, "{marked}");
    }

    #[test]
    fn an_l4s_packet_is_marked_with_k_times_p() {
        // p' = 0.3: p_CL = 0.6, and never a drop.
        let (dropped, marked) = departures(0.3, Ecn::Ect1, true, 20_000);
        assert!(dropped == 0 && (marked as f64 / 20_000.0 - 0.6).abs() < 0.02, "{marked}");
    }

    #[test]
    fn on_overload_the_l_queue_drops_with_p_c_and_marks_the_rest() {
        // p' = 0.6 > 1/k: L packets dropped with p_C = 0.36, every other one marked.
        let (dropped, marked) = departures(0.6, Ecn::Ect1, true, 20_000);
        let rate = dropped as f64 / (dropped + 20_000) as f64;
        assert!((rate - 0.36).abs() < 0.02 && marked == 20_000, "{rate} {marked}");
        // ECT(0) C packets are dropped too, not marked.
        let (dropped, marked) = departures(0.6, Ecn::Ect0, true, 20_000);
        assert!(dropped > 0 && marked == 0);
        // Without drop on overload: every L packet marked, none dropped.
        assert_eq!(departures(0.6, Ecn::Ect1, false, 1000), (0, 1000));
    }

    #[test]
    fn without_drop_on_overload_p_stops_at_one_over_k() {
        let mut q = DualPi2::new(DualPi2Config { drop_on_overload: false, ..config() }, 1);
        q.queues[C].packets.push_back(packet(Ecn::NotEct, SimTime::ZERO));
        q.update(SimTime::from_secs(1));
        assert_eq!(q.base_probability(), 0.5);
        let mut q = DualPi2::new(config(), 1);
        q.queues[C].packets.push_back(packet(Ecn::NotEct, SimTime::ZERO));
        q.update(SimTime::from_secs(1));
        assert_eq!(q.base_probability(), 1.0);
    }

    #[test]
    fn no_probabilistic_action_below_two_packets_queued() {
        let mut q = DualPi2::new(DualPi2Config { t_update: SimTime::from_secs(1000), ..config() }, 1);
        q.p = 1.0;
        q.enqueue(packet(Ecn::NotEct, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        q.enqueue(packet(Ecn::NotEct, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        // One packet left behind the departing one: under two MTUs, no drop at p_C = 1.
        assert!(matches!(q.dequeue(SimTime::ZERO, &mut Dropped(vec![])), Dequeue::Packet(_)));
    }

    #[test]
    fn the_shared_limit_tail_drops_and_every_packet_is_accounted_per_queue() {
        let mut q = DualPi2::new(DualPi2Config { limit_packets: 3, ..config() }, 1);
        for ecn in [Ecn::Ect1, Ecn::NotEct, Ecn::NotEct] {
            q.enqueue(packet(ecn, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (_, reason) = q.enqueue(packet(Ecn::Ect1, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(reason, DropReason::QueueFull);
        let (l, c) = (q.class_record(L), q.class_record(C));
        assert_eq!((l.enqueued_packets, l.dropped_packets, l.queued_packets, l.limit), (1, 1, 1, 3));
        assert_eq!((c.enqueued_packets, c.dropped_packets, c.queued_packets), (2, 0, 2));
        let now = SimTime::from_us(500);
        while let Dequeue::Packet(_) = q.dequeue(now, &mut Dropped(vec![])) {}
        let (l, c) = (q.class_record(L), q.class_record(C));
        assert_eq!((l.sent_packets, c.sent_packets, l.sojourn_sum_ns, c.sojourn_sum_ns), (1, 2, 500_000, 1_000_000));
    }

    #[test]
    fn the_same_seed_draws_the_same_marks() {
        let run = |seed| {
            let mut q = DualPi2::new(DualPi2Config { t_update: SimTime::from_secs(1000), ..config() }, seed);
            q.p = 0.2;
            (0..2000)
                .map(|_| {
                    q.queues[L].packets.push_back(packet(Ecn::Ect1, SimTime::ZERO));
                    q.queues[L].packets.push_back(packet(Ecn::Ect1, SimTime::ZERO));
                    q.queues[L].bytes += 3000;
                    let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO, &mut Dropped(vec![])) else { panic!() };
                    p.ecn == Ecn::Ce
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }
}
