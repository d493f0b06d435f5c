//! SplitBuff and Blind-SplitBuff (Jabeen, Zafar, Qazi & Uzmi, seed 002): one buffer split into
//! sub-buffers served by byte-fair round robin.
//!
//! SplitBuff maps each packet by the RTT its sender wrote into it (active RTT estimation, the
//! packet's `sender_srtt`): with two sub-buffers, to sub-buffer x when (rtt − T_q) < thresh and
//! to y otherwise; with three, against the thresholds RTTP − σ/2 and RTTP + σ/2 (§IV.C). The
//! router keeps the running sums of Fig. 2 over each update period T_u (the RTTs of all packets
//! and of each sub-buffer's), and at the end of the period:
//!
//! ```text
//! (T_q, T_qx, T_qy) = update(T_q, T_qx, T_qy, α)      smoothed queueing delays
//! thresh = average(RTT_s) − T_q                        the RTTP estimate
//! T_Bx = average(RTT_x) − T_qx,  T_By = average(RTT_y) − T_qy
//! B_x = T_Bx·B / (T_Bx + T_By),  B_y = T_By·B / (T_Bx + T_By)     eq. (4)
//! ```
//!
//! Choices the paper leaves open (docs/engine.md lists them): T_q of a period is the mean sojourn
//! of the packets dequeued in it (of all, or of one sub-buffer's), smoothed as
//! T_q ← (1 − α)·T_q + α·sample; the total B is the configured limit (the spec layer's BDP); a
//! packet without an RTT (before its sender's first sample, pure ACKs) goes to the first
//! sub-buffer and adds nothing to the sums; before the first update every packet goes to the
//! first sub-buffer, which holds all of B; a sub-buffer with no RTT seen yet is weighted by the
//! RTTP estimate in eq. (4), and one with none in a period keeps its previous T_B. The update is
//! taken at the first packet event after the period ends, over exactly the packets of the period.
//!
//! Blind-SplitBuff (§IV.B.2) maps each flow to a sub-buffer at random (a hash of the flow under a
//! key drawn from the run's seed, so no per-flow state) and gives every sub-buffer B / k.

use super::{Dequeue, DropReason, QueueDiscipline};
use crate::net::packet::Packet;
use crate::record::result::QueueClassRecord;
use crate::units::SimTime;
use std::collections::VecDeque;

/// Most sub-buffers a split queue has (SplitBuff: 3; Blind-SplitBuff: up to this).
pub const MAX_SUB_BUFFERS: usize = 16;

/// One sub-buffer: a drop-tail FIFO whose limit the estimator moves.
#[derive(Debug)]
struct SubBuffer {
    packets: VecDeque<Packet>,
    bytes: u64,
    /// In packets, or in bytes when the queue's limit is in bytes.
    limit: u64,
    /// Deficit round robin: bytes this sub-buffer may still send in its turn.
    deficit: u64,
    /// Fig. 2's RTT_x of the current period: sum and count of the RTTs mapped here (ns).
    rtt_sum_ns: u128,
    rtt_count: u64,
    /// Sojourn of the packets dequeued from here in the current period (ns).
    sojourn_sum_ns: u128,
    sojourn_count: u64,
    /// T_qx: smoothed queueing delay (ns); `None` before the first sample.
    t_q_ns: Option<f64>,
    /// T_Bx: RTTP of the flows mapped here (ns); `None` before the first estimate.
    rttp_ns: Option<f64>,
    record: QueueClassRecord,
}

impl SubBuffer {
    fn new(limit: u64) -> SubBuffer {
        SubBuffer {
            packets: VecDeque::new(),
            bytes: 0,
            limit,
            deficit: 0,
            rtt_sum_ns: 0,
            rtt_count: 0,
            sojourn_sum_ns: 0,
            sojourn_count: 0,
            t_q_ns: None,
            rttp_ns: None,
            record: QueueClassRecord::default(),
        }
    }
}

/// Exponential smoothing with gain α: the first sample is taken as it is.
fn smooth(old: Option<f64>, sample: f64, alpha: f64) -> f64 {
    match old {
        Some(v) => (1.0 - alpha) * v + alpha * sample,
        None => sample,
    }
}

/// SplitBuff's estimator: Fig. 2's sums over the current period and its estimates.
#[derive(Debug)]
struct RttEstimator {
    update_interval: SimTime,
    next_update: SimTime,
    alpha: f64,
    /// RTT_s of the period (and its square, for σ with three sub-buffers), ns.
    rtt_sum_ns: u128,
    rtt_sq_sum_ns2: u128,
    rtt_count: u64,
    sojourn_sum_ns: u128,
    sojourn_count: u64,
    /// T_q, smoothed (ns).
    t_q_ns: Option<f64>,
    /// RTTP = average(RTT_s) − T_q (ns), the two-sub-buffer threshold.
    rttp_ns: Option<f64>,
    /// Mapping thresholds on (rtt − T_q): one (RTTP) or two (RTTP ± σ/2); none before the first
    /// update. `thresholds[..n]` are in use.
    thresholds_ns: [f64; 2],
    n_thresholds: usize,
}

/// How packets find their sub-buffer.
#[derive(Debug)]
enum Mapping {
    /// SplitBuff: by the RTT the packet carries.
    Rtt(RttEstimator),
    /// Blind-SplitBuff: by a keyed hash of the flow.
    Random { key: u64 },
}

/// SplitBuff's options (the engine spec's `splitbuff` queue).
#[derive(Debug, Clone, Copy)]
pub struct SplitBuffConfig {
    /// Total buffer B, in packets, or in bytes if `in_bytes`.
    pub limit: u64,
    pub in_bytes: bool,
    /// 2 or 3.
    pub sub_buffers: usize,
    /// T_u.
    pub update_interval: SimTime,
    /// α, the gain of the queueing-delay smoothing.
    pub alpha: f64,
    /// Bytes a sub-buffer may send per round-robin turn.
    pub quantum: u64,
}

#[derive(Debug)]
pub struct SplitBuff {
    subs: Vec<SubBuffer>,
    total: u64,
    in_bytes: bool,
    quantum: u64,
    /// The sub-buffer whose round-robin turn it is, and whether it has had its quantum this turn.
    turn: usize,
    turn_started: bool,
    mapping: Mapping,
    len_packets: u64,
    len_bytes: u64,
}

/// SplitMix64's finaliser: a keyed hash of a flow for Blind-SplitBuff's random mapping.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SplitBuff {
    /// SplitBuff: until the first update every packet goes to the first sub-buffer, which holds B.
    pub fn new(config: SplitBuffConfig) -> SplitBuff {
        let mut subs: Vec<SubBuffer> = (0..config.sub_buffers).map(|_| SubBuffer::new(0)).collect();
        subs[0].limit = config.limit;
        let estimator = RttEstimator {
            update_interval: config.update_interval,
            next_update: config.update_interval,
            alpha: config.alpha,
            rtt_sum_ns: 0,
            rtt_sq_sum_ns2: 0,
            rtt_count: 0,
            sojourn_sum_ns: 0,
            sojourn_count: 0,
            t_q_ns: None,
            rttp_ns: None,
            thresholds_ns: [0.0; 2],
            n_thresholds: 0,
        };
        SplitBuff::with(subs, config, Mapping::Rtt(estimator))
    }

    /// Blind-SplitBuff: `sub_buffers` sub-buffers of B / k each, flows mapped by a hash keyed
    /// with `key` (from the run's seed).
    pub fn blind(config: SplitBuffConfig, key: u64) -> SplitBuff {
        let share = config.limit / config.sub_buffers as u64;
        let subs = (0..config.sub_buffers).map(|_| SubBuffer::new(share)).collect();
        SplitBuff::with(subs, config, Mapping::Random { key })
    }

    fn with(subs: Vec<SubBuffer>, config: SplitBuffConfig, mapping: Mapping) -> SplitBuff {
        assert!((2..=MAX_SUB_BUFFERS).contains(&subs.len()), "validated: 2 to {MAX_SUB_BUFFERS} sub-buffers");
        SplitBuff {
            subs,
            total: config.limit,
            in_bytes: config.in_bytes,
            quantum: config.quantum.max(1),
            turn: 0,
            turn_started: false,
            mapping,
            len_packets: 0,
            len_bytes: 0,
        }
    }

    /// The sub-buffers' counters, with their current limits and estimates.
    pub fn class_records(&self) -> Vec<QueueClassRecord> {
        self.subs.iter().enumerate().map(|(i, _)| self.class_record(i)).collect()
    }

    /// Sub-buffer `i`'s counters and current state.
    pub fn class_record(&self, i: usize) -> QueueClassRecord {
        let s = &self.subs[i];
        let mut r = s.record;
        r.queued_packets = s.packets.len() as u64;
        r.queued_bytes = s.bytes;
        r.limit = s.limit;
        r.rttp_ns = s.rttp_ns.map_or(0, |v| v as u64);
        if let Mapping::Rtt(e) = &self.mapping {
            r.estimate_rttp_ns = e.rttp_ns.map_or(0, |v| v as u64);
            // The upper threshold of sub-buffer i; the last one has none.
            r.threshold_ns = if i < e.n_thresholds { e.thresholds_ns[i].max(0.0) as u64 } else { 0 };
        }
        r
    }

    pub fn sub_buffers(&self) -> usize {
        self.subs.len()
    }

    /// The sub-buffer of a packet arriving now.
    fn classify(&self, packet: &Packet) -> usize {
        match &self.mapping {
            Mapping::Random { key } => (mix(key ^ packet.flow as u64) % self.subs.len() as u64) as usize,
            Mapping::Rtt(e) => {
                let rtt = packet.sender_srtt.as_ns() as f64;
                if packet.sender_srtt == SimTime::ZERO || e.n_thresholds == 0 {
                    return 0;
                }
                // Fig. 2: "if ((p->rtt) - T_q) < thresh then ... sub-buffer x".
                let key = rtt - e.t_q_ns.unwrap_or(0.0);
                e.thresholds_ns[..e.n_thresholds].iter().position(|&t| key < t).unwrap_or(e.n_thresholds)
            }
        }
    }

    /// End every update period that is over by `now` (Fig. 2, "after every time period T_u").
    fn catch_up(&mut self, now: SimTime) {
        let Mapping::Rtt(e) = &mut self.mapping else { return };
        if now < e.next_update {
            return;
        }
        let periods = (now - e.next_update).as_ps() / e.update_interval.as_ps() + 1;
        e.next_update += e.update_interval.mul(periods);
        let alpha = e.alpha;
        // (T_q, T_qx, T_qy) = update(T_q, T_qx, T_qy, α)
        if e.sojourn_count > 0 {
            e.t_q_ns = Some(smooth(e.t_q_ns, e.sojourn_sum_ns as f64 / e.sojourn_count as f64, alpha));
        }
        for s in &mut self.subs {
            if s.sojourn_count > 0 {
                s.t_q_ns = Some(smooth(s.t_q_ns, s.sojourn_sum_ns as f64 / s.sojourn_count as f64, alpha));
            }
        }
        // T_Bx = average(RTT_x) − T_qx. An RTT the sender measured before the queueing it now
        // sees can fall below T_q: such a period gives no estimate (the last one stands).
        for s in &mut self.subs {
            if s.rtt_count > 0 {
                let rttp = s.rtt_sum_ns as f64 / s.rtt_count as f64 - s.t_q_ns.unwrap_or(0.0);
                if rttp > 0.0 {
                    s.rttp_ns = Some(rttp);
                }
            }
        }
        let mean = e.rtt_sum_ns as f64 / e.rtt_count.max(1) as f64;
        let rttp = mean - e.t_q_ns.unwrap_or(0.0);
        if e.rtt_count > 0 && rttp > 0.0 {
            // RTTP = average(RTT_s) − T_q
            e.rttp_ns = Some(rttp);
            if self.subs.len() == 2 {
                // thresh: the average RTTP of the flows (§III.B). Fig. 2's packet average weighs
                // each flow by its packet rate, which puts the threshold next to the fastest
                // flow's RTT and splits that flow over both sub-buffers; once both sub-buffers
                // have estimates, the threshold is the mean of their T_B instead (see
                // docs/engine.md).
                e.thresholds_ns[0] = match (self.subs[0].rttp_ns, self.subs[1].rttp_ns) {
                    (Some(x), Some(y)) => (x + y) / 2.0,
                    _ => rttp,
                };
                e.n_thresholds = 1;
            } else {
                // Three sub-buffers (§IV.C): thresholds at RTTP − σ/2 and RTTP + σ/2.
                let n = e.rtt_count as f64;
                let sigma = (e.rtt_sq_sum_ns2 as f64 / n - mean * mean).max(0.0).sqrt();
                e.thresholds_ns = [rttp - sigma / 2.0, rttp + sigma / 2.0];
                e.n_thresholds = 2;
            }
        }
        if let Some(rttp) = e.rttp_ns {
            // eq. (4): B_i = T_Bi · B / Σ T_B, rounded down so that Σ B_i ≤ B.
            let weights: Vec<f64> = self.subs.iter().map(|s| s.rttp_ns.unwrap_or(rttp.max(1.0))).collect();
            let sum: f64 = weights.iter().sum();
            for (s, w) in self.subs.iter_mut().zip(&weights) {
                s.limit = (self.total as f64 * w / sum).floor() as u64;
            }
        }
        e.rtt_sum_ns = 0;
        e.rtt_sq_sum_ns2 = 0;
        e.rtt_count = 0;
        e.sojourn_sum_ns = 0;
        e.sojourn_count = 0;
        for s in &mut self.subs {
            s.rtt_sum_ns = 0;
            s.rtt_count = 0;
            s.sojourn_sum_ns = 0;
            s.sojourn_count = 0;
        }
    }

    fn fits(&self, s: &SubBuffer, size: u64) -> bool {
        if self.in_bytes {
            s.bytes + size <= s.limit
        } else {
            (s.packets.len() as u64) < s.limit
        }
    }

    fn take(&mut self, i: usize, now: SimTime) -> Packet {
        let s = &mut self.subs[i];
        let p = s.packets.pop_front().expect("a non-empty sub-buffer");
        let size = p.wire_bytes as u64;
        let sojourn = (now - p.enqueued_at).as_ns();
        s.bytes -= size;
        s.deficit -= size;
        s.sojourn_sum_ns += sojourn as u128;
        s.sojourn_count += 1;
        s.record.sent_packets += 1;
        s.record.sent_bytes += size;
        s.record.sojourn_sum_ns += sojourn;
        if let Mapping::Rtt(e) = &mut self.mapping {
            e.sojourn_sum_ns += sojourn as u128;
            e.sojourn_count += 1;
        }
        self.len_packets -= 1;
        self.len_bytes -= size;
        p
    }

    fn next_turn(&mut self) {
        self.turn = (self.turn + 1) % self.subs.len();
        self.turn_started = false;
    }
}

impl QueueDiscipline for SplitBuff {
    fn enqueue(&mut self, packet: Packet, now: SimTime) -> Result<(), (Packet, DropReason)> {
        self.catch_up(now);
        let i = self.classify(&packet);
        let size = packet.wire_bytes as u64;
        if let Mapping::Rtt(e) = &mut self.mapping {
            if packet.sender_srtt > SimTime::ZERO {
                // RTT_s = RTT_s + (p->rtt); RTT_x = RTT_x + (p->rtt)
                let rtt = packet.sender_srtt.as_ns() as u128;
                e.rtt_sum_ns += rtt;
                e.rtt_sq_sum_ns2 += rtt * rtt;
                e.rtt_count += 1;
                self.subs[i].rtt_sum_ns += rtt;
                self.subs[i].rtt_count += 1;
            }
        }
        if !self.fits(&self.subs[i], size) {
            let s = &mut self.subs[i];
            s.record.dropped_packets += 1;
            s.record.dropped_bytes += size;
            return Err((packet, DropReason::QueueFull));
        }
        let s = &mut self.subs[i];
        s.packets.push_back(packet);
        s.bytes += size;
        s.record.enqueued_packets += 1;
        s.record.enqueued_bytes += size;
        s.record.max_packets = s.record.max_packets.max(s.packets.len() as u64);
        self.len_packets += 1;
        self.len_bytes += size;
        Ok(())
    }

    /// Deficit round robin (byte-fair): each non-empty sub-buffer in turn gets `quantum` bytes of
    /// credit and sends head packets while they fit in it.
    fn dequeue(&mut self, now: SimTime) -> Dequeue {
        self.catch_up(now);
        if self.len_packets == 0 {
            return Dequeue::Empty;
        }
        loop {
            let i = self.turn;
            let Some(head) = self.subs[i].packets.front() else {
                self.subs[i].deficit = 0;
                self.next_turn();
                continue;
            };
            let size = head.wire_bytes as u64;
            if !self.turn_started {
                self.subs[i].deficit += self.quantum;
                self.turn_started = true;
            }
            if size <= self.subs[i].deficit {
                let p = self.take(i, now);
                if self.subs[i].packets.is_empty() {
                    self.subs[i].deficit = 0;
                    self.next_turn();
                }
                return Dequeue::Packet(p);
            }
            self.next_turn();
        }
    }

    fn len_packets(&self) -> u64 {
        self.len_packets
    }

    fn len_bytes(&self) -> u64 {
        self.len_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn packet(flow: u32, srtt_ms: u64, bytes: u32, now: SimTime) -> Packet {
        let mut p = Packet::segment(flow, 0, 0, 0, bytes - 52, bytes, now);
        p.sender_srtt = SimTime::from_ms(srtt_ms);
        p
    }

    fn config(limit: u64, sub_buffers: usize) -> SplitBuffConfig {
        SplitBuffConfig {
            limit,
            in_bytes: false,
            sub_buffers,
            update_interval: SimTime::from_ms(100),
            alpha: 0.5,
            quantum: 1500,
        }
    }

    #[test]
    fn before_the_first_update_one_sub_buffer_holds_the_whole_buffer() {
        let mut q = SplitBuff::new(config(4, 2));
        for k in 0..4 {
            assert!(q.enqueue(packet(k % 2, 10 + 980 * (k as u64 % 2), 1000, SimTime::ZERO), SimTime::ZERO).is_ok());
        }
        assert!(q.enqueue(packet(0, 10, 1000, SimTime::ZERO), SimTime::ZERO).is_err());
        assert_eq!(q.class_record(0).queued_packets, 4);
    }

    #[test]
    fn eq4_splits_the_total_in_proportion_to_each_sub_buffers_rttp() {
        // One period of 10 ms and 990 ms packets in equal numbers, nothing dequeued (T_q = 0):
        // RTTP = 500 ms, so the 10 ms flow goes to x and the 990 ms flow to y at the next update,
        // and then B_x = 10/1000 · 6250 = 62, B_y = 6187 (seed 002 §III.C).
        let mut q = SplitBuff::new(config(6250, 2));
        let t = SimTime::from_ms(50);
        for _ in 0..10 {
            q.enqueue(packet(0, 10, 1000, t), t).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        }
        // The first period mapped everything to x: the update sees one class only.
        let t = SimTime::from_ms(150);
        q.enqueue(packet(0, 10, 1000, t), t).unwrap();
        assert_eq!(q.class_record(0).estimate_rttp_ns, 500 * MS);
        q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        assert_eq!(q.class_record(1).enqueued_packets, 1, "990 ms is above the 500 ms threshold");
        for _ in 0..9 {
            q.enqueue(packet(0, 10, 1000, t), t).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        }
        let t = SimTime::from_ms(250);
        q.enqueue(packet(0, 10, 1000, t), t).unwrap();
        assert_eq!((q.class_record(0).limit, q.class_record(1).limit), (62, 6187));
        assert_eq!((q.class_record(0).rttp_ns, q.class_record(1).rttp_ns), (10 * MS, 990 * MS));
    }

    #[test]
    fn round_robin_is_byte_fair() {
        // Sub-buffer 0 holds 1500-byte packets, sub-buffer 1 500-byte ones: each turn sends a
        // quantum's worth of bytes from each, so bytes out alternate evenly.
        let mut q = SplitBuff::blind(config(2000, 2), 0);
        let flows: Vec<u32> = (0..64).collect();
        let f0 = *flows.iter().find(|&&f| mix(f as u64).is_multiple_of(2)).unwrap();
        let f1 = *flows.iter().find(|&&f| mix(f as u64) % 2 == 1).unwrap();
        for _ in 0..300 {
            q.enqueue(packet(f0, 0, 1500, SimTime::ZERO), SimTime::ZERO).unwrap();
            for _ in 0..3 {
                q.enqueue(packet(f1, 0, 500, SimTime::ZERO), SimTime::ZERO).unwrap();
            }
        }
        let mut bytes = [0u64; 2];
        for _ in 0..400 {
            let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO) else { panic!("backlogged") };
            bytes[(p.flow == f1) as usize] += p.wire_bytes as u64;
        }
        assert!(bytes[0].abs_diff(bytes[1]) <= 1500, "{bytes:?}");
    }

    #[test]
    fn blind_mapping_keeps_a_flow_in_one_sub_buffer_and_halves_the_buffer() {
        let mut q = SplitBuff::blind(config(100, 2), 42);
        assert_eq!((q.class_record(0).limit, q.class_record(1).limit), (50, 50));
        for flow in 0..40 {
            for _ in 0..2 {
                let _ = q.enqueue(packet(flow, 10, 1000, SimTime::ZERO), SimTime::ZERO);
            }
        }
        let total: u64 = q.class_records().iter().map(|r| r.enqueued_packets).sum();
        assert_eq!(total, 80);
        // Every flow's two packets went to the same sub-buffer: each count is even.
        assert!(q.class_records().iter().all(|r| r.enqueued_packets % 2 == 0));
        assert!(q.class_records().iter().all(|r| r.enqueued_packets > 0), "40 flows use both");
    }
}
