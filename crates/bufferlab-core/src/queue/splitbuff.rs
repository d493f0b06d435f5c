//! SplitBuff and Blind-SplitBuff (Jabeen, Zafar, Qazi & Uzmi, seed 002): one buffer split into
//! sub-buffers served by byte-fair round robin.
//!
//! SplitBuff maps each packet by the RTT its sender wrote into it (active RTT estimation, the
//! packet's `sender_srtt`): with two sub-buffers, to sub-buffer x when (rtt − T_q) < thresh and
//! to y otherwise (thresh the mean of T_Bx and T_By); with three, against the thresholds RTTP − σ/2 and RTTP + σ/2 (§IV.C). The
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
//! Choices the paper leaves open (docs/engine.md lists them and why): T_q of a packet is the
//! queueing its RTT holds, its sub-buffer's delay (bytes over service share) one RTT before it
//! arrives, from a fixed-size history; with two sub-buffers a packet goes to the one whose T_B
//! best explains RTT − that sub-buffer's T_q (the mean-of-T_B threshold when queueing is equal);
//! the period's (average(RTT) − T_q) is smoothed with α; one group of flows is not split (the
//! first sub-buffer holds all of B) until keys show two groups a factor 2 apart, at once for a
//! packet that far from the group's RTTP; a packet without an RTT (a SYN, a first window after
//! Karn's rule, pure ACKs) goes to the last sub-buffer (within B while unsplit) and adds nothing
//! to the sums; the total B is the configured limit (the spec layer's BDP); a sub-buffer with no
//! RTT seen yet is weighted by the RTTP estimate in eq. (4), and one with none in a period keeps
//! its previous T_B. The update is taken at the first packet event after the period ends, over
//! exactly the packets of the period.
//!
//! Blind-SplitBuff (§IV.B.2) maps each flow to a sub-buffer at random (a hash of the flow under a
//! key drawn from the run's seed, so no per-flow state) and gives every sub-buffer B / k.

use super::{Dequeue, DropReason, QueueDiscipline};
use crate::net::packet::Packet;
use crate::record::result::QueueClassRecord;
use crate::units::{BitRate, SimTime};
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
    /// Σ of the queueing delay the RTTs mapped here in the current period hold (ns).
    queueing_sum_ns: f64,
    /// Bytes sent when the current period began, and the rate the last period sent at (bit/s;
    /// 0: none yet): the service share the round robin gives this sub-buffer.
    sent_at_period_start: u64,
    service_bps: f64,
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
            queueing_sum_ns: 0.0,
            sent_at_period_start: 0,
            service_bps: 0.0,
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

/// Slots of the queueing-delay history: 5 ms each, 1024 of them (5.12 s, longer than the RTT any
/// sender reports in the settings SplitBuff is for).
const HISTORY_SLOT: SimTime = SimTime::from_ms(5);
const HISTORY_SLOTS: usize = 1024;

/// Sub-buffers whose queueing delay the history keeps (SplitBuff has 2 or 3); then the backlog's.
const RTT_SUB_BUFFERS: usize = 3;
type Delays = [f64; RTT_SUB_BUFFERS + 1];

/// The queueing delay of each sub-buffer and of the channel's backlog (backlog / C, the fullest
/// sub-buffer's) over the last `HISTORY_SLOTS` slots: what a packet enqueued then met. A sender's
/// RTT sample holds the queueing its packet met about one RTT before the packet carrying it
/// arrives, so the key (RTT − T_q) subtracts the delay of then, not of now (docs/engine.md).
/// Allocated once.
#[derive(Debug)]
struct DelayHistory {
    /// Per slot: the delays at the last event in it (ns).
    delays_ns: Vec<Delays>,
    /// The slot written last (absolute index); idle slots since then take its value.
    last_slot: u64,
}

impl DelayHistory {
    fn new() -> DelayHistory {
        DelayHistory { delays_ns: vec![[0.0; RTT_SUB_BUFFERS + 1]; HISTORY_SLOTS], last_slot: 0 }
    }

    fn slot(t: SimTime) -> u64 {
        t.as_ps() / HISTORY_SLOT.as_ps()
    }

    fn index(k: u64) -> usize {
        (k % HISTORY_SLOTS as u64) as usize
    }

    /// The delay now is `delay_ns`: slots since the last write keep the last value (the queue did
    /// not change in them), the current slot takes the new one.
    fn record(&mut self, now: SimTime, delay_ns: Delays) {
        let k = Self::slot(now);
        let carried = self.delays_ns[Self::index(self.last_slot)];
        for j in (self.last_slot + 1).max(k.saturating_sub(HISTORY_SLOTS as u64))..k {
            self.delays_ns[Self::index(j)] = carried;
        }
        self.delays_ns[Self::index(k)] = delay_ns;
        self.last_slot = k;
    }

    /// The delay `ago` before `now`; `None` past the horizon.
    fn at(&self, now: SimTime, ago: SimTime) -> Option<Delays> {
        if ago > now {
            return Some([0.0; RTT_SUB_BUFFERS + 1]); // before the run began: an empty queue
        }
        let k = Self::slot(now - ago);
        if k + (HISTORY_SLOTS as u64) <= self.last_slot {
            return None;
        }
        Some(self.delays_ns[Self::index(k.min(self.last_slot))])
    }
}

/// Bins of the period's histogram of (RTT − T_q): quarter octaves from 1 ms (bin 0 holds
/// everything below 1 ms, the last everything above 2^15.5 ms).
const KEY_BINS: usize = 64;
const KEY_BIN_FLOOR_NS: f64 = 1e6;

/// The (RTT − T_q) keys of one bin: how many, their sum, smallest and largest (ns).
#[derive(Debug, Clone, Copy)]
struct KeyBin {
    count: u64,
    sum_ns: f64,
    min_ns: f64,
    max_ns: f64,
}

impl KeyBin {
    const EMPTY: KeyBin = KeyBin { count: 0, sum_ns: 0.0, min_ns: f64::INFINITY, max_ns: f64::NEG_INFINITY };

    fn index(key_ns: f64) -> usize {
        if key_ns < KEY_BIN_FLOOR_NS {
            0
        } else {
            (1 + (4.0 * (key_ns / KEY_BIN_FLOOR_NS).log2()) as usize).min(KEY_BINS - 1)
        }
    }
}

/// Two groups of RTTP are "clearly separated" when the smallest key of the upper group exceeds
/// this factor times the largest of the lower, or T_u if that is larger (RTTPs within a few
/// update periods of each other are one group: a sender's srtt, smoothed and a round trip old,
/// does not resolve them against a queue that moves by that much in a round trip)...
const SEPARATION_FACTOR: f64 = 2.0;
/// ... and the upper group has at least this many packets (one stray key is no group).
const MIN_GROUP_PACKETS: u64 = 2;

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
    /// Σ of the queueing delay the period's RTTs hold (ns).
    queueing_sum_ns: f64,
    /// The period's (RTT − T_q) keys, for the separation test.
    keys: [KeyBin; KEY_BINS],
    history: DelayHistory,
    /// T_q, smoothed (ns).
    t_q_ns: Option<f64>,
    /// RTTP = average(RTT_s) − T_q (ns).
    rttp_ns: Option<f64>,
    /// Whether the flows are split: false until a period shows two clearly separated groups of
    /// RTTP (every packet then goes to the first sub-buffer, which holds all of B).
    split: bool,
    /// Mapping thresholds on (rtt − T_q): one or two (RTTP ± σ/2) while split.
    /// `thresholds[..n]` are in use.
    thresholds_ns: [f64; 2],
    n_thresholds: usize,
}

impl RttEstimator {
    /// The two groups of the period's keys split at their widest gap, if that gap separates
    /// them clearly: (mean key below, mean key above).
    fn separated_groups(&self) -> Option<(f64, f64)> {
        let floor = self.update_interval.as_ns() as f64;
        let total: u64 = self.keys.iter().map(|b| b.count).sum();
        let (mut below_count, mut below_sum, mut below_max) = (0u64, 0.0f64, f64::NEG_INFINITY);
        let mut best: Option<(f64, f64, f64)> = None; // (ratio, mean below, mean above)
        let total_sum: f64 = self.keys.iter().map(|b| b.sum_ns).sum();
        for bin in self.keys.iter().filter(|b| b.count > 0) {
            let above_count = total - below_count;
            if below_count > 0 && above_count >= MIN_GROUP_PACKETS {
                let ratio = bin.min_ns / below_max.max(floor);
                if ratio > SEPARATION_FACTOR && best.is_none_or(|(r, _, _)| ratio > r) {
                    let above = (total_sum - below_sum) / above_count as f64;
                    best = Some((ratio, below_sum / below_count as f64, above));
                }
            }
            below_count += bin.count;
            below_sum += bin.sum_ns;
            below_max = below_max.max(bin.max_ns);
        }
        best.map(|(_, lo, hi)| (lo, hi))
    }

    /// Whether a packet keyed `key` is clearly apart from the lone group of RTTP `rttp`: the
    /// groups' RTTP (lower, upper) if so.
    fn apart_from_the_group(&self, key: f64, rttp: f64) -> Option<(f64, f64)> {
        let floor = self.update_interval.as_ns() as f64;
        let (lower, upper) = if key < rttp { (key, rttp) } else { (rttp, key) };
        (upper > SEPARATION_FACTOR * lower.max(floor)).then_some((lower.max(KEY_BIN_FLOOR_NS), upper))
    }
}

/// How packets find their sub-buffer.
#[derive(Debug)]
enum Mapping {
    /// SplitBuff: by the RTT the packet carries.
    Rtt(Box<RttEstimator>),
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
    /// The rate of the link the queue feeds (`None`: unlimited, nothing ever waits), to turn the
    /// bytes a packet finds ahead of it into the queueing delay it will meet.
    pub rate: Option<BitRate>,
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
    /// Link rate in bits per second (0: unlimited).
    rate_bps: u64,
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
            queueing_sum_ns: 0.0,
            keys: [KeyBin::EMPTY; KEY_BINS],
            history: DelayHistory::new(),
            t_q_ns: None,
            rttp_ns: None,
            split: false,
            thresholds_ns: [0.0; 2],
            n_thresholds: 0,
        };
        SplitBuff::with(subs, config, Mapping::Rtt(Box::new(estimator)))
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
            rate_bps: config.rate.map_or(0, |r| r.bps()),
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

    /// The queueing delays now: of each sub-buffer (up to three), then of the backlog.
    fn delays_now(&self) -> Delays {
        let mut delays = [0.0; RTT_SUB_BUFFERS + 1];
        for (i, d) in delays.iter_mut().enumerate().take(self.subs.len().min(RTT_SUB_BUFFERS)) {
            *d = self.queueing_delay_ns(i);
        }
        delays[RTT_SUB_BUFFERS] = self.backlog_delay_ns();
        delays
    }

    /// Writes the queueing delays now into SplitBuff's history.
    fn record_delays(&mut self, now: SimTime) {
        if !matches!(self.mapping, Mapping::Rtt(_)) {
            return;
        }
        let delays = self.delays_now();
        if let Mapping::Rtt(e) = &mut self.mapping {
            e.history.record(now, delays);
        }
    }

    /// The queueing delay (ns) a packet joining sub-buffer `i` now meets: its bytes ahead over
    /// its service share, the rate the round robin served it at in the last period. Bounded by
    /// what byte-fair round robin allows: at least Σ_j min(b_j, b_i) · 8 / C (every other
    /// sub-buffer sends at most as much as `i` holds before `i` drains, and less if it empties),
    /// at most b_i · 8 · k / C (all k sub-buffers busy throughout). A sub-buffer not served in
    /// the last period takes the lower bound.
    fn queueing_delay_ns(&self, i: usize) -> f64 {
        if self.rate_bps == 0 {
            return 0.0;
        }
        let c = self.rate_bps as f64;
        let bi = self.subs[i].bytes;
        let ahead: u64 = self.subs.iter().map(|s| s.bytes.min(bi)).sum();
        let lower = ahead as f64 * 8e9 / c;
        let upper = bi as f64 * 8e9 * self.subs.len() as f64 / c;
        let share = self.subs[i].service_bps;
        if share > 0.0 {
            (bi as f64 * 8e9 / share).clamp(lower, upper.max(lower))
        } else {
            lower
        }
    }

    /// The channel's backlog / C (ns): the queueing delay in the fullest sub-buffer.
    fn backlog_delay_ns(&self) -> f64 {
        if self.rate_bps == 0 {
            return 0.0;
        }
        self.len_bytes as f64 * 8e9 / self.rate_bps as f64
    }

    /// The sub-buffer of a packet arriving now, and its key (RTT − T_q) if it carries an RTT.
    fn classify(&self, packet: &Packet, now: SimTime) -> (usize, Option<f64>) {
        match &self.mapping {
            Mapping::Random { key } => ((mix(key ^ packet.flow as u64) % self.subs.len() as u64) as usize, None),
            Mapping::Rtt(e) => {
                let last = self.subs.len() - 1;
                if packet.sender_srtt == SimTime::ZERO {
                    // No RTT (a SYN, a first window after a SYN retransmitted under Karn's rule,
                    // pure ACKs): to the longest RTTs' sub-buffer, where a long-RTT flow's
                    // handshake and first window do not wait behind a short flow's backlog (whose
                    // wait, added to a long RTT, exceeds the 1 s initial RTO and costs the flow
                    // its slow start), and a short flow's first packets wait once (the key below
                    // brings it back).
                    return (last, None);
                }
                // (RTT − T_q) with T_q the queueing delay the packet's RTT holds: that of one RTT
                // ago, in the sub-buffer its flow then used. With no per-flow state that is
                // unknown, so each sub-buffer is a hypothesis.
                let srtt = packet.sender_srtt.as_ns() as f64;
                let then = e.history.at(now, packet.sender_srtt).unwrap_or_else(|| self.delays_now());
                if !e.split {
                    return (0, Some(srtt - then[RTT_SUB_BUFFERS]));
                }
                if self.subs.len() == 2 {
                    // Two sub-buffers: the one whose flows' RTTP T_B best explains this RTT given
                    // its own queueing then, argmin_j |RTT − T_qj − T_Bj|. With equal queueing
                    // that is Fig. 2's "(p->rtt) − T_q < thresh" at thresh = (T_Bx + T_By)/2; it
                    // keeps a long-RTT flow in an empty y while x is full, and lets a short-RTT
                    // flow whose RTT came through y's queue back to x.
                    let (tx, ty) = (self.subs[0].rttp_ns.unwrap_or(0.0), self.subs[1].rttp_ns.unwrap_or(0.0));
                    let (kx, ky) = (srtt - then[0], srtt - then[1]);
                    return if (kx - tx).abs() <= (ky - ty).abs() { (0, Some(kx)) } else { (1, Some(ky)) };
                }
                // Three sub-buffers: the thresholds RTTP ± σ/2 (§IV.C) on RTT − the backlog's
                // queueing then (the most any sub-buffer's flows met).
                let key = srtt - then[RTT_SUB_BUFFERS];
                let i = e.thresholds_ns[..e.n_thresholds].iter().position(|&t| key < t).unwrap_or(e.n_thresholds);
                (i, Some(key))
            }
        }
    }

    /// eq. (4): B_i = T_Bi · B / Σ T_B, rounded down so that Σ B_i ≤ B; a sub-buffer without an
    /// estimate yet is weighted by the overall RTTP.
    fn resize(&mut self) {
        let Mapping::Rtt(e) = &self.mapping else { return };
        let fallback = e.rttp_ns.unwrap_or(KEY_BIN_FLOOR_NS).max(1.0);
        let mut weights = [0.0f64; MAX_SUB_BUFFERS];
        for (w, s) in weights.iter_mut().zip(&self.subs) {
            *w = s.rttp_ns.unwrap_or(fallback);
        }
        let sum: f64 = weights[..self.subs.len()].iter().sum();
        for (s, w) in self.subs.iter_mut().zip(&weights) {
            s.limit = (self.total as f64 * w / sum).floor() as u64;
        }
    }

    /// Splits the one group into two at once: the first sub-buffer's T_B starts at `lower`, the
    /// last's at `upper`; the thresholds lie between them (with three sub-buffers RTTP ± σ/2 of
    /// two equal groups: (l + u)/2 ∓ (u − l)/4) until the next update; eq. (4) sizes them.
    fn split_groups(&mut self, lower: f64, upper: f64) {
        let last = self.subs.len() - 1;
        for (i, s) in self.subs.iter_mut().enumerate() {
            s.rttp_ns = if i == 0 {
                Some(lower)
            } else if i == last {
                Some(upper)
            } else {
                None
            };
        }
        let Mapping::Rtt(e) = &mut self.mapping else { return };
        e.split = true;
        let (mid, half_sigma) = ((lower + upper) / 2.0, (upper - lower) / 4.0);
        if self.subs.len() == 2 {
            e.thresholds_ns[0] = mid;
            e.n_thresholds = 1;
        } else {
            e.thresholds_ns = [mid - half_sigma, mid + half_sigma];
            e.n_thresholds = 2;
        }
        self.resize();
    }

    /// End every update period that is over by `now` (Fig. 2, "after every time period T_u").
    fn catch_up(&mut self, now: SimTime) {
        let Mapping::Rtt(e) = &mut self.mapping else { return };
        if now < e.next_update {
            return;
        }
        let periods = (now - e.next_update).as_ps() / e.update_interval.as_ps() + 1;
        // The sub-buffers' service rates over the period that ends (from its start to now).
        let elapsed_s = (now - e.next_update.saturating_sub(e.update_interval)).as_ps() as f64 * 1e-12;
        for s in &mut self.subs {
            s.service_bps = (s.record.sent_bytes - s.sent_at_period_start) as f64 * 8.0 / elapsed_s.max(1e-9);
            s.sent_at_period_start = s.record.sent_bytes;
        }
        e.next_update += e.update_interval.mul(periods);
        let alpha = e.alpha;
        // (T_q, T_qx, T_qy) = update(T_q, T_qx, T_qy, α): the period's mean of the queueing
        // delay each RTT holds (the occupancy one RTT before its packet arrived), smoothed; and
        // RTTP = average(RTT_s) − T_q, T_Bx = average(RTT_x) − T_qx. The smoothing is applied to
        // the RTTP estimates (the period's average(RTT) less the period's T_q): smoothing T_q
        // alone would subtract a lagging queueing delay from the period's fresh RTTs. A period
        // whose estimate is not positive gives none (the last one stands).
        for s in &mut self.subs {
            if s.rtt_count > 0 {
                let t_q = s.queueing_sum_ns / s.rtt_count as f64;
                s.t_q_ns = Some(smooth(s.t_q_ns, t_q, alpha));
                let rttp = s.rtt_sum_ns as f64 / s.rtt_count as f64 - t_q;
                if rttp > 0.0 {
                    s.rttp_ns = Some(smooth(s.rttp_ns, rttp, alpha));
                }
            }
        }
        let mean = e.rtt_sum_ns as f64 / e.rtt_count.max(1) as f64;
        if e.rtt_count > 0 {
            let t_q = e.queueing_sum_ns / e.rtt_count as f64;
            e.t_q_ns = Some(smooth(e.t_q_ns, t_q, alpha));
            let rttp = mean - t_q;
            if rttp > 0.0 {
                e.rttp_ns = Some(smooth(e.rttp_ns, rttp, alpha));
            }
        }
        let last = self.subs.len() - 1;
        if !e.split {
            // One group until a period shows two clearly separated ones; then the sub-buffers'
            // T_B start from the two groups' mean keys.
            if let Some((below, above)) = e.separated_groups() {
                self.split_groups(below.max(KEY_BIN_FLOOR_NS), above);
            }
        } else if let (Some(x), Some(y)) = (self.subs[0].rttp_ns, self.subs[last].rttp_ns) {
            // Back to one group when the extreme sub-buffers' RTTP are no longer apart.
            if y <= SEPARATION_FACTOR * x.max(e.update_interval.as_ns() as f64) {
                e.split = false;
            }
        }
        let Mapping::Rtt(e) = &mut self.mapping else { return };
        let split = e.split;
        if split {
            if self.subs.len() == 2 {
                // thresh: the average RTTP of the flows (§III.B), the mean of the sub-buffers'
                // T_B (Fig. 2's packet average weighs each flow by its packet rate and would put
                // the threshold next to the fastest flow's RTT; see docs/engine.md).
                let (x, y) = (self.subs[0].rttp_ns.unwrap_or(0.0), self.subs[1].rttp_ns.unwrap_or(0.0));
                e.thresholds_ns[0] = (x + y) / 2.0;
                e.n_thresholds = 1;
            } else if let Some(rttp) = e.rttp_ns {
                // Three sub-buffers (§IV.C): thresholds at RTTP − σ/2 and RTTP + σ/2.
                let n = e.rtt_count.max(1) as f64;
                let sigma = (e.rtt_sq_sum_ns2 as f64 / n - mean * mean).max(0.0).sqrt();
                if e.rtt_count > 0 {
                    e.thresholds_ns = [rttp - sigma / 2.0, rttp + sigma / 2.0];
                }
                e.n_thresholds = 2;
            }
        } else {
            // One group: the first sub-buffer holds all of B (the others keep what they hold and
            // take nothing).
            e.n_thresholds = 0;
            for (i, s) in self.subs.iter_mut().enumerate() {
                s.limit = if i == 0 { self.total } else { 0 };
            }
        }
        e.rtt_sum_ns = 0;
        e.rtt_sq_sum_ns2 = 0;
        e.rtt_count = 0;
        e.queueing_sum_ns = 0.0;
        e.keys = [KeyBin::EMPTY; KEY_BINS];
        for s in &mut self.subs {
            s.rtt_sum_ns = 0;
            s.rtt_count = 0;
            s.queueing_sum_ns = 0.0;
        }
        if split {
            self.resize();
        }
    }

    /// Whether a packet of `size` bytes fits in sub-buffer `i`. While the flows are one group the
    /// last sub-buffer, which then takes only packets without an RTT, has no limit of its own:
    /// it fits while the whole queue stays within B.
    fn fits(&self, i: usize, size: u64) -> bool {
        let s = &self.subs[i];
        if let Mapping::Rtt(e) = &self.mapping {
            if !e.split && i == self.subs.len() - 1 {
                return if self.in_bytes { self.len_bytes + size <= self.total } else { self.len_packets < self.total };
            }
        }
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
        s.record.sent_packets += 1;
        s.record.sent_bytes += size;
        s.record.sojourn_sum_ns += sojourn;
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
        self.record_delays(now);
        let (mut i, mut key) = self.classify(&packet, now);
        if let (Some(backlog_key), Mapping::Rtt(e)) = (key, &self.mapping) {
            // A packet clearly apart from the lone group's RTTP is a second group: split now,
            // before its first windows meet the one sub-buffer the first group fills.
            if let (false, Some(rttp)) = (e.split, e.rttp_ns) {
                if let Some((lower, upper)) = e.apart_from_the_group(backlog_key, rttp) {
                    // The key subtracts the backlog's queueing (the lone group's); a new flow's
                    // first RTT sample came through the last sub-buffer (its SYN carries no RTT),
                    // so the upper group's RTTP is its RTT less that sub-buffer's queueing then.
                    let last = self.subs.len() - 1;
                    let then = e.history.at(now, packet.sender_srtt).unwrap_or_else(|| self.delays_now());
                    let via_last = packet.sender_srtt.as_ns() as f64 - then[last.min(RTT_SUB_BUFFERS - 1)];
                    let upper = if backlog_key > rttp { upper.max(via_last) } else { upper };
                    self.split_groups(lower, upper);
                    (i, key) = self.classify(&packet, now);
                }
            }
        }
        let size = packet.wire_bytes as u64;
        if let Some(key) = key {
            if let Mapping::Rtt(e) = &mut self.mapping {
                // RTT_s = RTT_s + (p->rtt); RTT_x = RTT_x + (p->rtt)
                let rtt = packet.sender_srtt.as_ns() as u128;
                e.rtt_sum_ns += rtt;
                e.queueing_sum_ns += rtt as f64 - key;
                e.rtt_sq_sum_ns2 += rtt * rtt;
                e.rtt_count += 1;
                let bin = &mut e.keys[KeyBin::index(key)];
                bin.count += 1;
                bin.sum_ns += key;
                bin.min_ns = bin.min_ns.min(key);
                bin.max_ns = bin.max_ns.max(key);
                self.subs[i].rtt_sum_ns += rtt;
                self.subs[i].queueing_sum_ns += rtt as f64 - key;
                self.subs[i].rtt_count += 1;
            }
        }
        if !self.fits(i, size) {
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
                self.record_delays(now);
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
            rate: None,
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
    fn a_lone_group_stays_in_one_sub_buffer_however_its_rtts_scatter() {
        // One group of RTTP 10 ms whose packets' (RTT − T_q) scatter over 1–19 ms (a sender's
        // srtt and the queue disagreeing): no split, everything in the first sub-buffer with B.
        let mut q = SplitBuff::new(config(6250, 2));
        for period in 0..5u64 {
            let t = SimTime::from_ms(100 * period + 50);
            for k in 0..50 {
                q.enqueue(packet(0, 1 + (k % 19), 1000, t), t).unwrap();
            }
        }
        assert_eq!((q.class_record(0).limit, q.class_record(1).limit), (6250, 0));
        assert_eq!(q.class_record(1).enqueued_packets, 0);
    }

    #[test]
    fn a_packet_without_an_rtt_goes_to_the_long_rtt_sub_buffer_within_the_total() {
        // A SYN, or a first window after a SYN retransmitted under Karn's rule, carries no RTT:
        // it goes to the last sub-buffer, where it does not wait behind the short flows' queue.
        // Before any split that sub-buffer has no limit of its own: the whole queue stays ≤ B.
        let mut q = SplitBuff::new(config(4, 2));
        let t = SimTime::from_ms(50);
        for _ in 0..3 {
            q.enqueue(packet(0, 10, 1000, t), t).unwrap();
        }
        q.enqueue(packet(2, 0, 1000, t), t).unwrap();
        assert_eq!((q.class_record(0).queued_packets, q.class_record(1).queued_packets), (3, 1));
        assert!(q.enqueue(packet(2, 0, 1000, t), t).is_err(), "B = 4 packets in all");
        // Split at 10 ms / 990 ms: packets without an RTT still go to y.
        let mut q = SplitBuff::new(config(6250, 2));
        for _ in 0..10 {
            q.enqueue(packet(0, 10, 1000, t), t).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        }
        let t = SimTime::from_ms(150);
        q.enqueue(packet(2, 0, 1000, t), t).unwrap();
        assert_eq!((q.class_record(0).enqueued_packets, q.class_record(1).enqueued_packets), (20, 1));
        q.enqueue(packet(0, 10, 1000, t), t).unwrap();
        assert_eq!(q.class_record(0).enqueued_packets, 21, "10 ms is below the 500 ms threshold");
    }

    #[test]
    fn a_short_rtt_that_came_through_the_long_sub_buffers_queue_goes_back_to_the_short_one() {
        // 10 Mb/s: 1000 bytes take 0.8 ms. Split at 10 ms / 990 ms; at 150 ms the long flow puts
        // 1125 packets (≥ 900 ms of queueing) into y. A 10 ms flow whose first RTT sample came
        // through that queue (its SYN carried no RTT) reports srtt 910 ms at 1060 ms, above the
        // 500 ms threshold: less y's queueing one RTT earlier it is a 10 ms RTTP, and it goes to
        // x, not held in y.
        let mut q = SplitBuff::new(SplitBuffConfig { rate: Some(BitRate(10_000_000)), ..config(6250, 2) });
        let t = SimTime::from_ms(50);
        q.enqueue(packet(0, 10, 1000, t), t).unwrap();
        q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        let t = SimTime::from_ms(150);
        while let Dequeue::Packet(_) = q.dequeue(t) {}
        for _ in 0..1125 {
            q.enqueue(packet(1, 990, 1000, t), t).unwrap();
        }
        assert_eq!(q.class_record(1).queued_packets, 1125, "the long flow in y");
        let t = SimTime::from_ms(1060);
        q.enqueue(packet(0, 910, 1000, t), t).unwrap();
        assert_eq!(q.class_record(0).queued_packets, 1, "910 ms less ~900 ms of y's queueing then");
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
