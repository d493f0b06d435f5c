//! CoDel, Controlled Delay active queue management (RFC 8289), in front of a FIFO bounded by a
//! packet or byte limit (Linux `codel`, default 1000 packets).
//!
//! CoDel watches the sojourn time of the packets it dequeues, measured from the time each entered
//! the queue (`Packet::enqueued_at`, stamped by the channel: RFC 8289 §5.4). When the sojourn time
//! has stayed at or above `target` for a whole `interval` it enters the dropping state and drops
//! head packets at times t, t + interval/√2, t + interval/√3, … (the control law, §3.3 and
//! §5.6) until a packet's sojourn time falls below `target` again. Drops happen at dequeue and are
//! handed to the caller's [`DropSink`] with [`DropReason::Aqm`]; an arrival that finds the queue
//! at its limit is tail-dropped ([`DropReason::QueueFull`]) as in a FIFO.
//!
//! With `ecn` on, a packet the control law would drop is marked Congestion Experienced instead
//! if it is ECN-capable (RFC 3168 §5) and sent on, as Linux `codel` does: the mark takes the
//! drop's place in the count and the schedule (the next drop or mark is due at the control law's
//! next time), so an ECN-capable flow sees the signals a dropping CoDel would give it, without
//! the losses. Not-ECT packets are dropped as without `ecn`.
//!
//! The control state ([`CodelControl`]) runs over any queue that can hand over its head packet
//! ([`HeadQueue`]), so that FQ-CoDel (RFC 8290 §4.2) can run one per flow queue.
//!
//! Everything is integer arithmetic on picoseconds: the control law takes an exact integer square
//! root (`interval / √count` rounded down, [`control_law`]) once per drop, not per packet, so the
//! same spec and seed give bit-identical results on every machine.

use super::discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::Packet;
use crate::spec::CodelControlLaw;
use crate::units::SimTime;
use std::collections::VecDeque;

/// CoDel's two parameters (RFC 8289 §4.3, §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodelParams {
    /// The acceptable standing queue delay, TARGET (default 5 ms, §4.4).
    pub target: SimTime,
    /// The window over which the minimum sojourn time must exceed `target` before dropping, and
    /// the base of the control law, INTERVAL (default 100 ms, §4.3).
    pub interval: SimTime,
    /// Mark ECN-capable packets CE instead of dropping them (RFC 3168 §5; Linux `codel ecn`, off
    /// by default there and here).
    pub ecn: bool,
    /// How interval/√count is computed: exactly (the RFC's pseudocode) or by Linux's and ns-3's
    /// integer Newton iteration.
    pub control_law: CodelControlLaw,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: SimTime::from_ms(5),
            interval: SimTime::from_ms(100),
            ecn: false,
            control_law: CodelControlLaw::Sqrt,
        }
    }
}

/// A queue CoDel controls: it hands over its head packet and tells how many bytes remain.
pub trait HeadQueue {
    fn pop_head(&mut self) -> Option<Packet>;
    /// Bytes still queued (after the last `pop_head`).
    fn bytes(&self) -> u64;
    /// The largest packet the queue may hold back without being dropped from: the MTU (RFC 8289
    /// §4.2, MAXPACKET).
    fn max_packet(&self) -> u64;
}

/// The time of the next drop: `t + interval / √count` (RFC 8289 §5.6, `control_law`), the
/// quotient rounded down to a whole picosecond, computed exactly in integers:
/// ⌊interval/√count⌋ = ⌊√(interval²/count)⌋ = isqrt(⌊interval²/count⌋). interval² fits in 128 bits
/// for any interval the engine accepts (below 2⁶⁴ ps).
#[inline]
pub fn control_law(t: SimTime, interval: SimTime, count: u32) -> SimTime {
    let squared = interval.0 as u128 * interval.0 as u128;
    let step = (squared / count.max(1) as u128).isqrt();
    t + SimTime(step as u64)
}

/// Linux's and ns-3's approximation of 1/√count, in 16-bit fixed point (0xFFFF ≈ 1): one Newton
/// step x ← x·(3 − count·x²)/2 each time `count` changes, from the value for the previous count;
/// 1 when the count starts over. The iteration converges quadratically but lags at small counts:
/// at count 2 it gives 1/2 (a 50 ms spacing at the default interval) where the RFC's law gives
/// 1/√2 (70.7 ms), so the first drops of a dropping state come sooner.
#[inline]
pub fn newton_step(rec_inv_sqrt: u16, count: u32) -> u16 {
    // The fixed-point arithmetic of the Linux and ns-3 implementations, with their 32-bit
    // intermediate scaling (x in Q0.32, x² truncated to 32 bits, the factor (3 − count·x²)/4).
    let x = (rec_inv_sqrt as u64) << 16;
    let x_squared = (x * x) >> 32;
    let factor = ((3u64 << 32).wrapping_sub(count as u64 * x_squared)) >> 2;
    let next = (factor.wrapping_mul(x)) >> (32 - 2 + 1);
    (next >> 16) as u16
}

/// The fixed-point 1/√count a count that starts over begins from (`newton_step`'s 1).
pub const NEWTON_ONE: u16 = u16::MAX;

/// The Newton control law's next drop: `t + interval · rec_inv_sqrt` (the fixed-point product
/// truncated, as Linux's `reciprocal_scale`).
#[inline]
pub fn newton_control_law(t: SimTime, interval: SimTime, rec_inv_sqrt: u16) -> SimTime {
    t + SimTime(((interval.0 as u128 * ((rec_inv_sqrt as u128) << 16)) >> 32) as u64)
}

/// The state of RFC 8289's `codel_queue_t` (§5.2): everything CoDel remembers between dequeues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodelControl {
    /// When the sojourn time will have been above target for a whole interval (`None`: it is
    /// below target, the pseudocode's 0).
    first_above_time: Option<SimTime>,
    /// When the next drop is due in the dropping state.
    drop_next: SimTime,
    /// Packets dropped since entering the dropping state (the control law's count).
    count: u32,
    /// `count` when the dropping state was last entered (§5.5).
    lastcount: u32,
    dropping: bool,
    /// 1/√count in fixed point, for [`CodelControlLaw::Newton`] only.
    rec_inv_sqrt: u16,
}

impl CodelControl {
    /// The dropping state is on.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// The control law's count.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The next drop after `t` under the control law `params` choose, for the current count.
    #[inline]
    fn control_law(&self, params: &CodelParams, t: SimTime) -> SimTime {
        match params.control_law {
            CodelControlLaw::Sqrt => control_law(t, params.interval, self.count),
            CodelControlLaw::Newton => newton_control_law(t, params.interval, self.rec_inv_sqrt),
        }
    }

    /// `count` went up by one in the dropping state.
    #[inline]
    fn count_one_more(&mut self, params: &CodelParams) {
        self.count = self.count.saturating_add(1);
        if params.control_law == CodelControlLaw::Newton {
            self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
        }
    }

    /// `dodequeue` (RFC 8289 §5.6): the head packet, and whether it may be dropped, i.e. whether
    /// the sojourn time has been at or above target for at least an interval.
    #[inline]
    fn do_dequeue(&mut self, params: &CodelParams, queue: &mut impl HeadQueue, now: SimTime) -> Option<(Packet, bool)> {
        let Some(packet) = queue.pop_head() else {
            // An empty queue is below target (§5.6).
            self.first_above_time = None;
            return None;
        };
        // The estimator: the sojourn time of the packet leaving (§3.1).
        let sojourn = now - packet.enqueued_at;
        // Below target, or no more than one MTU left to send: not a standing queue (§4.2, the
        // non-starvation rule: a link that would go idle must not be starved further).
        if sojourn < params.target || queue.bytes() <= queue.max_packet() {
            self.first_above_time = None;
            return Some((packet, false));
        }
        match self.first_above_time {
            // Above target for the first time: it must stay so for an interval (§3.2).
            None => {
                self.first_above_time = Some(now + params.interval);
                Some((packet, false))
            }
            Some(deadline) => Some((packet, now >= deadline)),
        }
    }

    /// CoDel's dequeue (RFC 8289 §5.5): the packet to send, after dropping (into `drops`) the
    /// head packets the control law calls for; with `params.ecn`, an ECN-capable packet due to
    /// be dropped is marked CE (counted in `marks`) and sent instead.
    #[inline]
    pub fn dequeue(
        &mut self,
        params: &CodelParams,
        queue: &mut impl HeadQueue,
        now: SimTime,
        drops: &mut impl DropSink,
        marks: &mut CeMarks,
    ) -> Option<Packet> {
        let Some((mut packet, mut ok_to_drop)) = self.do_dequeue(params, queue, now) else {
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok_to_drop {
                // The sojourn time went below target: leave the dropping state (§5.5).
                self.dropping = false;
            }
            // Drop at the times the control law sets, as many as are due now (§5.5).
            while self.dropping && now >= self.drop_next {
                self.count_one_more(params);
                if marks.mark_instead_of_drop(params.ecn, &mut packet) {
                    // RFC 3168 §5: marked instead of dropped, the packet is sent; the next signal
                    // is due at the control law's next time (RFC 8289 §5.5).
                    self.drop_next = self.control_law(params, self.drop_next);
                    return Some(packet);
                }
                drops.dropped(packet, DropReason::Aqm);
                match self.do_dequeue(params, queue, now) {
                    Some((next, next_ok)) => (packet, ok_to_drop) = (next, next_ok),
                    None => {
                        self.dropping = false;
                        return None;
                    }
                }
                if ok_to_drop {
                    self.drop_next = self.control_law(params, self.drop_next);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            // Enter the dropping state: drop this packet, send the next (§5.5); or mark this
            // packet CE and send it (RFC 3168 §5).
            let next = if marks.mark_instead_of_drop(params.ecn, &mut packet) {
                Some((packet, false))
            } else {
                drops.dropped(packet, DropReason::Aqm);
                self.do_dequeue(params, queue, now)
            };
            self.dropping = true;
            // If the queue went back above target soon (within 16 intervals of the last drop)
            // after leaving the dropping state, the drop rate that controlled it then is a good
            // start: resume from the drops made since (§5.5; §3.3).
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1 && now.saturating_sub(self.drop_next) < params.interval.mul(16) {
                self.count = delta;
                // Newton: one step from the 1/√count of the count left behind.
                self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, delta);
            } else {
                self.count = 1;
                self.rec_inv_sqrt = NEWTON_ONE;
            }
            self.drop_next = self.control_law(params, now);
            self.lastcount = self.count;
            (packet, _) = next?;
        }
        Some(packet)
    }
}

/// The FIFO CoDel controls, bounded by a packet or a byte limit.
#[derive(Debug)]
struct Fifo {
    packets: VecDeque<Packet>,
    bytes: u64,
    /// The largest packet seen so far: the link's MTU as far as the traffic shows it (RFC 8289
    /// §4.2 asks for the MTU; Linux `codel` tracks the largest packet the same way).
    max_packet: u64,
}

impl HeadQueue for Fifo {
    #[inline]
    fn pop_head(&mut self) -> Option<Packet> {
        let packet = self.packets.pop_front()?;
        self.bytes -= packet.wire_bytes as u64;
        Some(packet)
    }

    #[inline]
    fn bytes(&self) -> u64 {
        self.bytes
    }

    #[inline]
    fn max_packet(&self) -> u64 {
        self.max_packet
    }
}

/// CoDel (RFC 8289) on a FIFO with a tail-drop limit.
#[derive(Debug)]
pub struct CoDel {
    fifo: Fifo,
    limit_packets: u64,
    limit_bytes: u64,
    params: CodelParams,
    control: CodelControl,
    marks: CeMarks,
}

impl CoDel {
    /// CoDel with `params` on a FIFO bounded by either limit (an absent limit is unbounded).
    pub fn new(params: CodelParams, limit_packets: Option<u64>, limit_bytes: Option<u64>) -> Self {
        CoDel {
            // No room up front, as the drop-tail FIFO (see `DropTailFifo::new`).
            fifo: Fifo { packets: VecDeque::new(), bytes: 0, max_packet: 0 },
            limit_packets: limit_packets.unwrap_or(u64::MAX),
            limit_bytes: limit_bytes.unwrap_or(u64::MAX),
            params,
            control: CodelControl::default(),
            marks: CeMarks::default(),
        }
    }

    /// The control state (for tests and inspection).
    pub fn control(&self) -> &CodelControl {
        &self.control
    }
}

impl QueueDiscipline for CoDel {
    /// RFC 8289 §5.4: the arrival is stamped (by the channel, `enqueued_at`) and queued; at the
    /// limit it is tail-dropped, as Linux `codel` does.
    #[inline]
    fn enqueue(
        &mut self,
        packet: Packet,
        _now: SimTime,
        _drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        let size = packet.wire_bytes as u64;
        let fifo = &mut self.fifo;
        if fifo.packets.len() as u64 >= self.limit_packets || fifo.bytes + size > self.limit_bytes {
            return Err((packet, DropReason::QueueFull));
        }
        fifo.max_packet = fifo.max_packet.max(size);
        fifo.bytes += size;
        fifo.packets.push_back(packet);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        match self.control.dequeue(&self.params, &mut self.fifo, now, drops, &mut self.marks) {
            Some(packet) => Dequeue::Packet(packet),
            None => Dequeue::Empty,
        }
    }

    fn len_packets(&self) -> u64 {
        self.fifo.packets.len() as u64
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.bytes
    }

    fn ce_marks(&self) -> CeMarks {
        self.marks
    }

    fn aqm_state(&self) -> AqmState {
        AqmState {
            probability: None,
            signal: None,
            state: Some(self.control.dropping() as u64),
            count: Some(self.control.count() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;
    use crate::queue::discipline::NoDrops;

    const MS: SimTime = SimTime::from_ms(1);

    fn packet(seq: u64, at: SimTime) -> Packet {
        Packet { enqueued_at: at, ..Packet::segment(0, 0, 0, seq, 1448, 1500, at) }
    }

    /// CoDel with the defaults (5 ms, 100 ms) and no limit.
    fn codel() -> CoDel {
        CoDel::new(CodelParams::default(), None, None)
    }

    /// Dequeue at `now`, returning the packet sent (if any) and the sequence numbers dropped.
    fn dequeue(q: &mut CoDel, now: SimTime) -> (Option<u64>, Vec<u64>) {
        let mut dropped = Vec::new();
        let sent = q.dequeue(now, &mut |p: Packet, reason| {
            assert_eq!(reason, DropReason::Aqm);
            dropped.push(p.seq);
        });
        (if let Dequeue::Packet(p) = sent { Some(p.seq) } else { None }, dropped)
    }

    /// A standing queue: `n` packets that all entered at time zero.
    fn standing(n: u64) -> CoDel {
        let mut q = codel();
        for seq in 0..n {
            q.enqueue(packet(seq, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        q
    }

    /// The interval over √count, rounded down to a picosecond (what the control law adds).
    fn step(count: u32) -> SimTime {
        SimTime((100e9 / (count as f64).sqrt()).floor() as u64)
    }

    #[test]
    fn the_control_law_divides_the_interval_by_the_square_root_of_count() {
        let interval = SimTime::from_ms(100);
        let t = SimTime::from_secs(1);
        assert_eq!(control_law(t, interval, 1), t + interval);
        assert_eq!(control_law(t, interval, 4), t + interval.div(2));
        assert_eq!(control_law(t, interval, 100), t + interval.div(10));
        // Exact to the picosecond where √count is irrational: ⌊10¹¹/√2⌋ = 70710678118.
        assert_eq!(control_law(SimTime::ZERO, interval, 2), SimTime(70_710_678_118));
        assert_eq!(control_law(SimTime::ZERO, interval, 3), SimTime(57_735_026_918));
        for count in 1..2000 {
            assert_eq!(control_law(SimTime::ZERO, interval, count), step(count), "count {count}");
        }
        // The largest interval the engine accepts (100 days) does not overflow.
        let days = SimTime::from_secs(100 * 86_400);
        assert_eq!(control_law(SimTime::ZERO, days, 1), days);
    }

    #[test]
    fn no_drop_while_the_sojourn_time_is_below_target() {
        // A packet a millisecond, each sent 4.9 ms after it arrived, four always queued behind
        // it (more than an MTU): two seconds without a drop.
        let mut q = codel();
        for k in 0..2000 {
            let now = MS.mul(k);
            q.enqueue(packet(k, now), now, &mut NoDrops).unwrap();
            if k >= 4 {
                let (sent, dropped) = dequeue(&mut q, now + SimTime::from_us(900));
                assert_eq!((sent, dropped), (Some(k - 4), Vec::<u64>::new()), "at {now}");
            }
        }
        assert!(!q.control().dropping());
    }

    #[test]
    fn no_drop_within_the_first_interval_above_target() {
        let mut q = standing(1000);
        // Above target from the first dequeue at 10 ms: the first drop may come at 110 ms.
        let mut now = SimTime::from_ms(10);
        while now < SimTime::from_ms(110) {
            let (sent, dropped) = dequeue(&mut q, now);
            assert!(sent.is_some() && dropped.is_empty(), "dropped at {now}");
            now += MS;
        }
        let (_, dropped) = dequeue(&mut q, SimTime::from_ms(110));
        assert_eq!(dropped.len(), 1, "the first drop, an interval after going above target");
        assert!(q.control().dropping());
    }

    #[test]
    fn a_standing_queue_is_dropped_from_at_the_times_of_the_control_law() {
        let mut q = standing(100_000);
        let start = SimTime::from_ms(10);
        // Dequeue every 10 µs (a fast link) and note when each drop happens.
        let mut drops_at = Vec::new();
        let mut now = start;
        while drops_at.len() < 6 {
            let (sent, dropped) = dequeue(&mut q, now);
            assert!(sent.is_some());
            drops_at.extend(dropped.iter().map(|_| now));
            now += SimTime::from_us(10);
        }
        // The first drop at t = start + interval; then t + interval/√1, … as the dequeues see
        // them (a dequeue every 10 µs: each drop at the first dequeue at or after its time).
        let t = start + SimTime::from_ms(100);
        assert_eq!(drops_at[0], t);
        let mut due = t;
        for (k, at) in drops_at.iter().enumerate().skip(1) {
            due += step(k as u32);
            let grid = SimTime(due.0.div_ceil(10_000_000) * 10_000_000);
            assert_eq!(*at, grid, "drop {k}: due at {due}");
        }
        assert_eq!(q.control().count(), 6);
    }

    #[test]
    fn the_newton_iteration_lags_at_small_counts_then_converges_to_the_inverse_square_root() {
        // By hand, x ← x·(3 − count·x²)/2 from x = 1: count 2 gives 1/2 (the RFC's 1/√2 ≈ 0.707),
        // count 3 gives 0.5·(3 − 3/4)/2 = 0.5625, count 4 gives 0.5625·(3 − 4·0.31640625)/2 =
        // 0.48779296875, in 16-bit fixed point (the last bit is the arithmetic's rounding).
        let mut x = NEWTON_ONE;
        let mut seen = Vec::new();
        for count in 2..=4 {
            x = newton_step(x, count);
            seen.push(x);
        }
        assert_eq!(seen, vec![0x8001, 0x9000, 0x7ce0]);
        // Then within 3 % of 1/√count from count 3 on, 0.1 % from count 20 to 1000 (step by step,
        // as a dropping state counts; beyond, the 16-bit resolution is the error).
        let mut x = NEWTON_ONE;
        for count in 2..=1000u32 {
            x = newton_step(x, count);
            let error = (x as f64 / 65536.0 * (count as f64).sqrt() - 1.0).abs();
            let bound = if count >= 20 {
                0.001
            } else if count >= 3 {
                0.03
            } else {
                0.3
            };
            assert!(error <= bound, "count {count}: 1/√count off by {error}");
        }
    }

    #[test]
    fn with_the_newton_law_the_second_drop_comes_half_an_interval_after_the_first() {
        // As Linux's and ns-3's CoDel: drops at t, t + 100 ms, then 50 ms and 56.25 ms apart
        // (the RFC's law: 70.7 and 57.7 ms).
        let params = CodelParams { control_law: CodelControlLaw::Newton, ..CodelParams::default() };
        let mut q = CoDel::new(params, None, None);
        for seq in 0..100_000 {
            q.enqueue(packet(seq, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let mut drops_at = Vec::new();
        let mut now = SimTime::from_ms(10);
        while drops_at.len() < 4 {
            let (sent, dropped) = dequeue(&mut q, now);
            assert!(sent.is_some());
            drops_at.extend(dropped.iter().map(|_| now));
            now += SimTime::from_us(10);
        }
        let gaps: Vec<f64> = drops_at.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3).collect();
        assert_eq!(drops_at[0], SimTime::from_ms(110));
        for (gap, expected) in gaps.iter().zip([100.0, 50.0, 56.25]) {
            assert!((gap - expected).abs() <= 0.011, "gaps {gaps:?} ms");
        }
    }

    #[test]
    fn drops_that_are_overdue_come_out_of_one_dequeue() {
        // A slow link: by the next dequeue several drops are due; all are made at once, each
        // scheduling the next from the one before (drop_next, not now).
        let mut q = standing(1000);
        assert!(dequeue(&mut q, SimTime::from_ms(10)).1.is_empty());
        let (_, first) = dequeue(&mut q, SimTime::from_ms(110));
        assert_eq!(first.len(), 1);
        // Due: 110 + 100 = 210 ms, + 70.7 = 280.7 ms, + 57.7 = 338.4 ms: three by 340 ms.
        let (sent, dropped) = dequeue(&mut q, SimTime::from_ms(340));
        assert_eq!(dropped.len(), 3);
        assert_eq!(q.control().count(), 4);
        assert!(sent.is_some());
    }

    #[test]
    fn the_dropping_state_ends_when_the_sojourn_time_falls_below_target() {
        let mut q = standing(10);
        assert_eq!(dequeue(&mut q, SimTime::from_ms(10)), (Some(0), Vec::<u64>::new()));
        assert_eq!(dequeue(&mut q, SimTime::from_ms(110)), (Some(2), vec![1]));
        assert!(q.control().dropping());
        // Fresh packets behind the old ones: the old ones leave in the dropping state (no drop is
        // due before 210 ms), the first fresh one, 1 ms in the queue, ends it.
        let now = SimTime::from_ms(111);
        for seq in 100..110 {
            q.enqueue(packet(seq, now), now, &mut NoDrops).unwrap();
        }
        for seq in 3..10 {
            assert_eq!(dequeue(&mut q, now + MS), (Some(seq), Vec::<u64>::new()));
            assert!(q.control().dropping());
        }
        assert_eq!(dequeue(&mut q, now + MS), (Some(100), Vec::<u64>::new()));
        assert!(!q.control().dropping());
        assert_eq!(q.control().count(), 1, "count is kept for a re-entry");
    }

    #[test]
    fn an_empty_queue_ends_the_dropping_state() {
        let mut q = codel();
        q.control.dropping = true;
        q.control.first_above_time = Some(MS);
        assert_eq!(dequeue(&mut q, SimTime::from_ms(111)), (None, Vec::<u64>::new()));
        assert_eq!((q.control().dropping(), q.control().first_above_time), (false, None));
    }

    #[test]
    fn nothing_is_dropped_while_at_most_one_mtu_remains() {
        // Two packets waiting far above target: the one left after each dequeue is no more than
        // one MTU, so CoDel never drops (RFC 8289 §4.2).
        let mut q = codel();
        let mut now = SimTime::ZERO;
        for seq in 0..500 {
            q.enqueue(packet(2 * seq, now), now, &mut NoDrops).unwrap();
            q.enqueue(packet(2 * seq + 1, now), now, &mut NoDrops).unwrap();
            now += SimTime::from_ms(50);
            assert_eq!(dequeue(&mut q, now).1, Vec::<u64>::new());
            assert_eq!(dequeue(&mut q, now).1, Vec::<u64>::new());
        }
    }

    #[test]
    fn re_entering_soon_resumes_from_the_drops_made_since_the_last_entry() {
        let mut q = standing(100_000);
        let mut now = SimTime::from_ms(10);
        while q.control().count() < 5 {
            dequeue(&mut q, now);
            now += SimTime::from_us(10);
        }
        let drop_next = q.control().drop_next;
        // Leave the dropping state: a packet below target reaches the head.
        let mut fresh = codel();
        std::mem::swap(&mut fresh.control, &mut q.control);
        fresh.enqueue(packet(1, now), now, &mut NoDrops).unwrap();
        fresh.enqueue(packet(2, now), now, &mut NoDrops).unwrap();
        dequeue(&mut fresh, now);
        assert!(!fresh.control().dropping());
        assert_eq!(fresh.control().count(), 5);
        // Above target again for an interval, well within 16 intervals of drop_next: count
        // resumes at count − lastcount = 5 − 1 = 4, and the next drop comes interval/√4 later.
        let mut q = standing(1000);
        q.control = fresh.control;
        let above = now + MS;
        dequeue(&mut q, above);
        let entry = above + SimTime::from_ms(100);
        assert!(entry.saturating_sub(drop_next) < SimTime::from_ms(1600));
        assert_eq!(dequeue(&mut q, entry).1.len(), 1);
        assert_eq!(q.control().count(), 4);
        assert_eq!(q.control().drop_next, entry + SimTime::from_ms(50));
        assert_eq!(q.control().lastcount, 4);
    }

    #[test]
    fn re_entering_late_starts_the_count_over() {
        let mut q = standing(100_000);
        let mut now = SimTime::from_ms(10);
        while q.control().count() < 5 {
            dequeue(&mut q, now);
            now += SimTime::from_us(10);
        }
        let mut control = q.control;
        control.dropping = false;
        control.first_above_time = None;
        // More than 16 intervals after the last scheduled drop: count = 1, next drop an interval on.
        let later = control.drop_next + SimTime::from_ms(1700);
        let mut q = standing(1000);
        q.control = control;
        dequeue(&mut q, later);
        let entry = later + SimTime::from_ms(100);
        assert_eq!(dequeue(&mut q, entry).1.len(), 1);
        assert_eq!(q.control().count(), 1);
        assert_eq!(q.control().drop_next, entry + SimTime::from_ms(100));
    }

    #[test]
    fn the_limit_tail_drops_arrivals() {
        let mut q = CoDel::new(CodelParams::default(), Some(2), None);
        q.enqueue(packet(1, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        q.enqueue(packet(2, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        let (refused, reason) = q.enqueue(packet(3, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!((refused.seq, reason), (3, DropReason::QueueFull));
        let mut q = CoDel::new(CodelParams::default(), None, Some(3000));
        q.enqueue(packet(1, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        q.enqueue(packet(2, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
        assert!(q.enqueue(packet(3, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).is_err());
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 3000));
    }

    /// When a standing queue of `n` packets with ECN field `ecn`, dequeued every 10 µs from
    /// 10 ms by a CoDel with `params.ecn = ecn_on`, gets its first `signals` drops or marks:
    /// (times of drops, times of marks, the marked packets' codepoints).
    fn signals(ecn_on: bool, ecn: Ecn, signals: usize) -> (Vec<SimTime>, Vec<SimTime>, CoDel) {
        let mut q = CoDel::new(CodelParams { ecn: ecn_on, ..CodelParams::default() }, None, None);
        for seq in 0..100_000 {
            q.enqueue(Packet { ecn, ..packet(seq, SimTime::ZERO) }, SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (mut drops, mut marks) = (Vec::new(), Vec::new());
        let mut now = SimTime::from_ms(10);
        while drops.len() + marks.len() < signals {
            let mut dropped = 0;
            let sent = q.dequeue(now, &mut |p: Packet, _| {
                assert_eq!(p.ecn, ecn, "a dropped packet is not marked");
                dropped += 1;
            });
            let Dequeue::Packet(sent) = sent else { panic!("a standing queue") };
            drops.extend((0..dropped).map(|_| now));
            if sent.ecn == Ecn::Ce && ecn != Ecn::Ce {
                marks.push(now);
            }
            now += SimTime::from_us(10);
        }
        (drops, marks, q)
    }

    #[test]
    fn with_ecn_an_ect_packet_due_to_be_dropped_is_marked_at_the_drop_times() {
        // RFC 3168 §5 in RFC 8289 §5.5's schedule: the marks come exactly when the drops would.
        let (drop_times, none, dropping) = signals(false, Ecn::Ect0, 6);
        assert!(none.is_empty());
        let (no_drops, mark_times, marking) = signals(true, Ecn::Ect0, 6);
        assert!(no_drops.is_empty(), "an ECN-capable packet is never dropped by the control law");
        assert_eq!(mark_times, drop_times);
        assert_eq!(marking.control().count(), dropping.control().count());
        assert_eq!(marking.ce_marks(), CeMarks { packets: 6, bytes: 6 * 1500 });
        assert_eq!(dropping.ce_marks(), CeMarks::default());
        // ECT(1) is ECN-capable too.
        assert_eq!(signals(true, Ecn::Ect1, 6).1, drop_times);
    }

    #[test]
    fn with_ecn_a_not_ect_packet_is_still_dropped() {
        let (drop_times, _, _) = signals(false, Ecn::NotEct, 6);
        let (drops, marks, q) = signals(true, Ecn::NotEct, 6);
        assert_eq!((drops, marks, q.ce_marks()), (drop_times, vec![], CeMarks::default()));
    }
}
