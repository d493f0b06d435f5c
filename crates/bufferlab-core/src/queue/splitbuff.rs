//! SplitBuff and Blind-SplitBuff (Jabeen, Zafar, Qazi & Uzmi, seed 002): one buffer split into
//! sub-buffers served by byte-fair round robin.
//!
//! SplitBuff maps each packet by the RTT its sender wrote into it (active RTT estimation, §III.A:
//! the packet's `sender_srtt`). The default estimator is the paper's Fig. 2 as published
//! (`SplitBuffEstimator::Paper`). On every packet arrival in the period T_u:
//!
//! ```text
//! RTT_s += p->rtt
//! if (p->rtt − T_q) < thresh:  RTT_x += p->rtt; T_qx sampled from x's occupancy; append p to x
//! else:                        RTT_y += p->rtt; T_qy sampled from y's occupancy; append p to y
//! ```
//!
//! and after every period:
//!
//! ```text
//! (T_q, T_qx, T_qy) = update(T_q, T_qx, T_qy, α)      exponential smoothing with gain α
//! B = (average(RTT_s) − T_q) · C                       the BDP rule at the RTTP estimate
//! thresh = average(RTT_s) − T_q                        the RTTP estimate (§III.B)
//! T_Bx = average(RTT_x) − T_qx,  T_By = average(RTT_y) − T_qy
//! B_x = T_Bx·B / (T_Bx + T_By),  B_y = T_By·B / (T_Bx + T_By)     eq. (4)
//! ```
//!
//! With three sub-buffers the thresholds are RTTP − σ/2 and RTTP + σ/2, σ the standard deviation
//! of the period's RTTs (§IV.C), and eq. (4) weighs each of the three by its T_B.
//!
//! What Fig. 2 leaves open, and how it is read here (docs/engine/index.md): a queueing-delay sample is
//! the sub-buffer's bytes (for T_q: the whole backlog's) over C when a packet arrives, the
//! "current number of packets" as a delay; until the first period ends there is no threshold and
//! every packet goes to x, which holds all of B; a packet without an RTT (a SYN, a window sent
//! before the first RTT sample) is mapped by the rule with p->rtt = 0 and adds nothing to the RTT
//! sums; a sub-buffer that saw no RTT in a period keeps its T_B, and one that never saw any is
//! weighted by the RTTP estimate in eq. (4); sizes are whole packets (bytes for a byte-limited
//! queue), at least one packet each; B in packets divides the estimate by the period's mean
//! packet size. A packet enters only if its sub-buffer has room and the whole queue stays within
//! B: "the cumulative size of all sub-buffers should not exceed the BDP" (§III.C), also while a
//! sub-buffer shrunk by eq. (4) still holds more than its new size.
//!
//! `SplitBuffEstimator::Refined` is an estimator of this engine's own, an option with its measured
//! effect in docs/engine/index.md: T_q of a packet is the queueing its RTT holds, its sub-buffer's delay
//! (bytes over service share) one RTT before it arrives, from a fixed-size history; with two
//! sub-buffers a packet goes to the one whose T_B best explains RTT − that sub-buffer's T_q (the
//! mean-of-T_B threshold when queueing is equal); the period's (average(RTT) − T_q) is smoothed
//! with α; one group of flows is not split (the first sub-buffer holds all of B) until keys show
//! two groups a factor 2 apart, at once for a packet that far from the group's RTTP; a packet
//! without an RTT goes to the last sub-buffer (within B while unsplit) and adds nothing to the
//! sums. `SplitBuffTotal::Fixed` keeps B at the configured limit instead of re-estimating it.
//! Either estimator's update is taken at the first packet event after the period ends, over
//! exactly the packets of the period.
//!
//! Blind-SplitBuff (§IV.B.2) maps each flow to a sub-buffer at random (a hash of the flow under a
//! key drawn from the run's seed, so no per-flow state) and gives every sub-buffer B / k.

use super::discipline::{Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::Packet;
use crate::record::result::QueueClassRecord;
use crate::spec::{SplitBuffEstimator, SplitBuffTotal};
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
    /// Fig. 2's RTT_x of the current period: the RTTs mapped here.
    rtts: RttSums,
    /// Refined estimator: Σ of the queueing delay the RTTs mapped here in the current period
    /// hold (ns).
    queueing_sum_ns: f64,
    /// Fig. 2: Σ and count of the period's T_qx samples, this sub-buffer's occupancy over C at
    /// each arrival here (ns).
    occupancy_sum_ns: f64,
    occupancy_samples: u64,
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
            rtts: RttSums::default(),
            queueing_sum_ns: 0.0,
            occupancy_sum_ns: 0.0,
            occupancy_samples: 0,
            sent_at_period_start: 0,
            service_bps: 0.0,
            t_q_ns: None,
            rttp_ns: None,
            record: QueueClassRecord::default(),
        }
    }
}

/// Fig. 2's update period T_u: when the current one ends, and the smoothing gain α.
#[derive(Debug, Clone, Copy)]
struct Period {
    length: SimTime,
    next_end: SimTime,
    alpha: f64,
}

impl Period {
    fn new(length: SimTime, alpha: f64) -> Period {
        Period { length, next_end: length, alpha }
    }

    /// When the current period began.
    fn start(&self) -> SimTime {
        self.next_end.saturating_sub(self.length)
    }

    /// Whether the current period is over by `now`; if so the next ends at the first period
    /// boundary after `now` (idle periods end together).
    fn end_by(&mut self, now: SimTime) -> bool {
        if now < self.next_end {
            return false;
        }
        let periods = (now - self.next_end).as_ps() / self.length.as_ps() + 1;
        self.next_end += self.length.mul(periods);
        true
    }
}

/// Fig. 2's RTT sums over a period (RTT_s, or RTT_x of one sub-buffer): Σ RTT, Σ RTT² (for σ)
/// and how many, in ns.
#[derive(Debug, Clone, Copy, Default)]
struct RttSums {
    sum_ns: u128,
    sq_sum_ns2: u128,
    count: u64,
}

impl RttSums {
    /// RTT_s = RTT_s + (p->rtt)
    fn add(&mut self, rtt_ns: u128) {
        self.sum_ns += rtt_ns;
        self.sq_sum_ns2 += rtt_ns * rtt_ns;
        self.count += 1;
    }

    /// average(RTT_s) (0 without a sample).
    fn mean_ns(&self) -> f64 {
        self.sum_ns as f64 / self.count.max(1) as f64
    }

    /// σ of the RTTs (0 without a sample).
    fn sigma_ns(&self) -> f64 {
        let mean = self.mean_ns();
        (self.sq_sum_ns2 as f64 / self.count.max(1) as f64 - mean * mean).max(0.0).sqrt()
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
/// arrives, so the key (RTT − T_q) subtracts the delay of then, not of now (docs/engine/index.md).
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

/// Fig. 2 as published: the period's sums and the router's estimates.
#[derive(Debug)]
struct PaperEstimator {
    period: Period,
    /// RTT_s of the period.
    rtts: RttSums,
    /// Σ and count of the period's T_q samples: the backlog over C at each arrival (ns).
    occupancy_sum_ns: f64,
    occupancy_samples: u64,
    /// T_q, smoothed (ns); `None` before the first period ends.
    t_q_ns: Option<f64>,
    /// RTTP = average(RTT_s) − T_q (ns), the threshold with two sub-buffers.
    rttp_ns: Option<f64>,
    /// Thresholds on (rtt − T_q): `thresholds_ns[..n_thresholds]`; none before the first update.
    thresholds_ns: [f64; 2],
    n_thresholds: usize,
}

/// The refined estimator (`SplitBuffEstimator::Refined`): Fig. 2's sums over the current period,
/// with the history and the group rule of the module documentation.
#[derive(Debug)]
struct RttEstimator {
    period: Period,
    /// RTT_s of the period.
    rtts: RttSums,
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
        let floor = self.period.length.as_ns() as f64;
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
        let floor = self.period.length.as_ns() as f64;
        let (lower, upper) = if key < rttp { (key, rttp) } else { (rttp, key) };
        (upper > SEPARATION_FACTOR * lower.max(floor)).then_some((lower.max(KEY_BIN_FLOOR_NS), upper))
    }
}

/// How packets find their sub-buffer.
#[derive(Debug)]
enum Mapping {
    /// SplitBuff as published: by the RTT the packet carries against Fig. 2's threshold.
    Paper(Box<PaperEstimator>),
    /// SplitBuff, refined: by the RTT the packet carries, corrected by the queueing it holds.
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
    /// Fig. 2 as published, or the refined estimator.
    pub estimator: SplitBuffEstimator,
    /// B re-estimated every T_u (Fig. 2), or the configured limit throughout.
    pub total: SplitBuffTotal,
}

#[derive(Debug)]
pub struct SplitBuff {
    subs: Vec<SubBuffer>,
    /// B: the configured limit, or Fig. 2's estimate once there is one.
    total: u64,
    estimate_total: bool,
    /// Wire bytes and packets that arrived in the current period: B in packets divides the
    /// estimate (in bytes) by their mean size.
    period_bytes: u64,
    period_packets: u64,
    /// The largest packet seen (bytes): a byte-limited sub-buffer holds at least one.
    largest_packet: u64,
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
        if config.estimator == SplitBuffEstimator::Paper {
            let estimator = PaperEstimator {
                period: Period::new(config.update_interval, config.alpha),
                rtts: RttSums::default(),
                occupancy_sum_ns: 0.0,
                occupancy_samples: 0,
                t_q_ns: None,
                rttp_ns: None,
                thresholds_ns: [0.0; 2],
                n_thresholds: 0,
            };
            return SplitBuff::with(subs, config, Mapping::Paper(Box::new(estimator)));
        }
        let estimator = RttEstimator {
            period: Period::new(config.update_interval, config.alpha),
            rtts: RttSums::default(),
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
            estimate_total: config.total == SplitBuffTotal::Estimated && !matches!(mapping, Mapping::Random { .. }),
            period_bytes: 0,
            period_packets: 0,
            largest_packet: 0,
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
        let (rttp, thresholds) = match &self.mapping {
            Mapping::Paper(e) => (e.rttp_ns, &e.thresholds_ns[..e.n_thresholds]),
            Mapping::Rtt(e) => (e.rttp_ns, &e.thresholds_ns[..e.n_thresholds]),
            Mapping::Random { .. } => return r,
        };
        r.estimate_rttp_ns = rttp.map_or(0, |v| v as u64);
        // The upper threshold of sub-buffer i; the last one has none.
        r.threshold_ns = thresholds.get(i).map_or(0, |t| t.max(0.0) as u64);
        r
    }

    /// B now: the configured limit, or Fig. 2's last estimate (packets, or bytes).
    pub fn total(&self) -> u64 {
        self.total
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
            Mapping::Paper(e) => {
                // Fig. 2: "if ((p->rtt) − T_q) < thresh" to x, else to y; with three sub-buffers
                // the first threshold above the key (§IV.C). No threshold before the first
                // period ends: every packet to x, which holds B.
                let key = packet.sender_srtt.as_ns() as f64 - e.t_q_ns.unwrap_or(0.0);
                let i = e.thresholds_ns[..e.n_thresholds].iter().position(|&t| key < t).unwrap_or(e.n_thresholds);
                (i, (packet.sender_srtt != SimTime::ZERO).then_some(key))
            }
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

    /// eq. (4): B_i = T_Bi · B / Σ T_B, rounded down (so that Σ B_i ≤ B) to at least one packet
    /// (a sub-buffer of none could never carry, nor be measured, again); a sub-buffer without an
    /// estimate yet is weighted by the overall RTTP.
    fn resize(&mut self) {
        let rttp = match &self.mapping {
            Mapping::Paper(e) => e.rttp_ns,
            Mapping::Rtt(e) => e.rttp_ns,
            Mapping::Random { .. } => return,
        };
        let fallback = rttp.unwrap_or(KEY_BIN_FLOOR_NS).max(1.0);
        let mut weights = [0.0f64; MAX_SUB_BUFFERS];
        for (w, s) in weights.iter_mut().zip(&self.subs) {
            *w = s.rttp_ns.unwrap_or(fallback);
        }
        let sum: f64 = weights[..self.subs.len()].iter().sum();
        let least = if self.in_bytes { self.largest_packet.max(1) } else { 1 };
        for (s, w) in self.subs.iter_mut().zip(&weights) {
            s.limit = ((self.total as f64 * w / sum).floor() as u64).max(least);
        }
    }

    /// Fig. 2: B = (average(RTT_s) − T_q) · C, in bytes, or in packets of the period's mean size
    /// (the whole queue at least one packet per sub-buffer). Only with `SplitBuffTotal::Estimated`.
    fn estimate_total(&mut self, rttp_ns: f64) {
        if !self.estimate_total || self.rate_bps == 0 || self.period_packets == 0 {
            return;
        }
        let bytes = rttp_ns * 1e-9 * self.rate_bps as f64 / 8.0;
        let mean_packet = self.period_bytes as f64 / self.period_packets as f64;
        let (b, least) = if self.in_bytes {
            (bytes, self.largest_packet.max(1) * self.subs.len() as u64)
        } else {
            (bytes / mean_packet, self.subs.len() as u64)
        };
        self.total = (b.round() as u64).max(least);
    }

    /// End every update period that is over by `now`.
    fn catch_up(&mut self, now: SimTime) {
        match self.mapping {
            Mapping::Paper(_) => self.catch_up_paper(now),
            Mapping::Rtt(_) => self.catch_up_refined(now),
            Mapping::Random { .. } => {}
        }
    }

    /// A packet's arrival in Fig. 2's period: its sub-buffer, and the period's sums (RTT_s and
    /// the RTT_x of its sub-buffer if it carries an RTT; the T_q and T_qx occupancy samples).
    fn arrive_paper(&mut self, packet: &Packet, now: SimTime) -> usize {
        let (i, _) = self.classify(packet, now);
        let c = self.rate_bps as f64;
        let as_delay = |bytes: u64| if c > 0.0 { bytes as f64 * 8e9 / c } else { 0.0 };
        let (backlog, occupancy) = (as_delay(self.len_bytes), as_delay(self.subs[i].bytes));
        let Mapping::Paper(e) = &mut self.mapping else { unreachable!("the paper's estimator") };
        let s = &mut self.subs[i];
        e.occupancy_sum_ns += backlog;
        e.occupancy_samples += 1;
        s.occupancy_sum_ns += occupancy;
        s.occupancy_samples += 1;
        if packet.sender_srtt != SimTime::ZERO {
            // RTT_s = RTT_s + (p->rtt); RTT_x = RTT_x + (p->rtt)
            let rtt = packet.sender_srtt.as_ns() as u128;
            e.rtts.add(rtt);
            s.rtts.add(rtt);
        }
        i
    }

    /// Fig. 2, "after every time period T_u".
    fn catch_up_paper(&mut self, now: SimTime) {
        let Mapping::Paper(e) = &mut self.mapping else { return };
        if !e.period.end_by(now) {
            return;
        }
        let alpha = e.period.alpha;
        // (T_q, T_qx, T_qy) = update(T_q, T_qx, T_qy, α): the period's mean occupancy delay,
        // smoothed.
        if e.occupancy_samples > 0 {
            e.t_q_ns = Some(smooth(e.t_q_ns, e.occupancy_sum_ns / e.occupancy_samples as f64, alpha));
        }
        for s in &mut self.subs {
            if s.occupancy_samples > 0 {
                s.t_q_ns = Some(smooth(s.t_q_ns, s.occupancy_sum_ns / s.occupancy_samples as f64, alpha));
            }
        }
        let t_q = e.t_q_ns.unwrap_or(0.0);
        if e.rtts.count > 0 {
            let mean = e.rtts.mean_ns();
            // thresh = average(RTT_s) − T_q: the RTTP estimate (a period whose estimate is not
            // positive gives none; the last one stands).
            if mean - t_q > 0.0 {
                e.rttp_ns = Some(mean - t_q);
            }
            if let Some(rttp) = e.rttp_ns {
                if self.subs.len() == 2 {
                    e.thresholds_ns[0] = rttp;
                    e.n_thresholds = 1;
                } else {
                    // §IV.C: thresholds at RTTP − σ/2 and RTTP + σ/2.
                    let sigma = e.rtts.sigma_ns();
                    e.thresholds_ns = [rttp - sigma / 2.0, rttp + sigma / 2.0];
                    e.n_thresholds = 2;
                }
            }
        }
        // T_Bx = average(RTT_x) − T_qx (a sub-buffer without RTTs this period, or with an
        // estimate that is not positive, keeps its last).
        for s in &mut self.subs {
            if s.rtts.count > 0 {
                let t_b = s.rtts.mean_ns() - s.t_q_ns.unwrap_or(0.0);
                if t_b > 0.0 {
                    s.rttp_ns = Some(t_b);
                }
            }
            s.rtts = RttSums::default();
            s.occupancy_sum_ns = 0.0;
            s.occupancy_samples = 0;
        }
        let rttp = e.rttp_ns;
        e.rtts = RttSums::default();
        e.occupancy_sum_ns = 0.0;
        e.occupancy_samples = 0;
        if let Some(rttp) = rttp {
            // B = (average(RTT_s) − T_q) · C; B_x, B_y by eq. (4).
            self.estimate_total(rttp);
            self.resize();
        }
        self.period_bytes = 0;
        self.period_packets = 0;
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

    /// The refined estimator's end of every update period that is over by `now`.
    fn catch_up_refined(&mut self, now: SimTime) {
        let Mapping::Rtt(e) = &mut self.mapping else { return };
        let period_start = e.period.start();
        if !e.period.end_by(now) {
            return;
        }
        // The sub-buffers' service rates over the period that ends (from its start to now).
        let elapsed_s = (now - period_start).as_ps() as f64 * 1e-12;
        for s in &mut self.subs {
            s.service_bps = (s.record.sent_bytes - s.sent_at_period_start) as f64 * 8.0 / elapsed_s.max(1e-9);
            s.sent_at_period_start = s.record.sent_bytes;
        }
        let alpha = e.period.alpha;
        // (T_q, T_qx, T_qy) = update(T_q, T_qx, T_qy, α): the period's mean of the queueing
        // delay each RTT holds (the occupancy one RTT before its packet arrived), smoothed; and
        // RTTP = average(RTT_s) − T_q, T_Bx = average(RTT_x) − T_qx. The smoothing is applied to
        // the RTTP estimates (the period's average(RTT) less the period's T_q): smoothing T_q
        // alone would subtract a lagging queueing delay from the period's fresh RTTs. A period
        // whose estimate is not positive gives none (the last one stands).
        for s in &mut self.subs {
            if s.rtts.count > 0 {
                let t_q = s.queueing_sum_ns / s.rtts.count as f64;
                s.t_q_ns = Some(smooth(s.t_q_ns, t_q, alpha));
                let rttp = s.rtts.mean_ns() - t_q;
                if rttp > 0.0 {
                    s.rttp_ns = Some(smooth(s.rttp_ns, rttp, alpha));
                }
            }
        }
        let mean = e.rtts.mean_ns();
        if e.rtts.count > 0 {
            let t_q = e.queueing_sum_ns / e.rtts.count as f64;
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
            if y <= SEPARATION_FACTOR * x.max(e.period.length.as_ns() as f64) {
                e.split = false;
            }
        }
        let Mapping::Rtt(e) = &mut self.mapping else { return };
        let split = e.split;
        if split {
            if self.subs.len() == 2 {
                // thresh: the average RTTP of the flows (§III.B), the mean of the sub-buffers'
                // T_B (Fig. 2's packet average weighs each flow by its packet rate and would put
                // the threshold next to the fastest flow's RTT; see docs/engine/index.md).
                let (x, y) = (self.subs[0].rttp_ns.unwrap_or(0.0), self.subs[1].rttp_ns.unwrap_or(0.0));
                e.thresholds_ns[0] = (x + y) / 2.0;
                e.n_thresholds = 1;
            } else if let Some(rttp) = e.rttp_ns {
                // Three sub-buffers (§IV.C): thresholds at RTTP − σ/2 and RTTP + σ/2.
                let sigma = e.rtts.sigma_ns();
                if e.rtts.count > 0 {
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
        e.rtts = RttSums::default();
        e.queueing_sum_ns = 0.0;
        e.keys = [KeyBin::EMPTY; KEY_BINS];
        for s in &mut self.subs {
            s.rtts = RttSums::default();
            s.queueing_sum_ns = 0.0;
        }
        if split {
            if let Mapping::Rtt(e) = &self.mapping {
                if let Some(rttp) = e.rttp_ns {
                    self.estimate_total(rttp);
                }
            }
            self.resize();
        }
        self.period_bytes = 0;
        self.period_packets = 0;
    }

    /// Whether a packet of `size` bytes fits in sub-buffer `i`. While the flows are one group the
    /// last sub-buffer, which then takes only packets without an RTT, has no limit of its own:
    /// it fits while the whole queue stays within B.
    fn fits(&self, i: usize, size: u64) -> bool {
        let s = &self.subs[i];
        let within_b = if self.in_bytes { self.len_bytes + size <= self.total } else { self.len_packets < self.total };
        let within_sub_buffer =
            if self.in_bytes { s.bytes + size <= s.limit } else { (s.packets.len() as u64) < s.limit };
        match &self.mapping {
            // "The cumulative size of all sub-buffers should not exceed the BDP" (§III.C): the
            // whole queue within B, also while a sub-buffer that eq. (4) shrank still holds more
            // than its size.
            Mapping::Paper(_) => within_b && within_sub_buffer,
            // The refined estimator lets a shrunk sub-buffer drain while the others fill to their
            // sizes (the queue then transiently above B): a long-RTT flow's first windows, mapped
            // to y as the split begins, are not lost behind x's backlog (docs/engine/index.md).
            Mapping::Rtt(e) if !e.split && i == self.subs.len() - 1 => within_b,
            _ => within_sub_buffer,
        }
    }

    /// Appends a packet to sub-buffer `i` if it fits, else drops it.
    fn admit(&mut self, i: usize, packet: Packet) -> Result<(), (Packet, DropReason)> {
        let size = packet.wire_bytes as u64;
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
    fn enqueue(
        &mut self,
        packet: Packet,
        now: SimTime,
        _drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        self.catch_up(now);
        self.period_bytes += packet.wire_bytes as u64;
        self.period_packets += 1;
        self.largest_packet = self.largest_packet.max(packet.wire_bytes as u64);
        if let Mapping::Paper(_) = self.mapping {
            let i = self.arrive_paper(&packet, now);
            return self.admit(i, packet);
        }
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
        if let Some(key) = key {
            if let Mapping::Rtt(e) = &mut self.mapping {
                // RTT_s = RTT_s + (p->rtt); RTT_x = RTT_x + (p->rtt)
                let rtt = packet.sender_srtt.as_ns() as u128;
                e.rtts.add(rtt);
                e.queueing_sum_ns += rtt as f64 - key;
                let bin = &mut e.keys[KeyBin::index(key)];
                bin.count += 1;
                bin.sum_ns += key;
                bin.min_ns = bin.min_ns.min(key);
                bin.max_ns = bin.max_ns.max(key);
                self.subs[i].rtts.add(rtt);
                self.subs[i].queueing_sum_ns += rtt as f64 - key;
            }
        }
        self.admit(i, packet)
    }

    /// Deficit round robin (byte-fair): each non-empty sub-buffer in turn gets `quantum` bytes of
    /// credit and sends head packets while they fit in it.
    fn dequeue(&mut self, now: SimTime, _drops: &mut impl DropSink) -> Dequeue {
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
    use crate::queue::discipline::NoDrops;

    const MS: u64 = 1_000_000;

    fn packet(flow: u32, srtt_ms: u64, bytes: u32, now: SimTime) -> Packet {
        let mut p = Packet::segment(flow, 0, 0, 0, bytes - 52, bytes, now);
        p.sender_srtt = SimTime::from_ms(srtt_ms);
        p
    }

    /// The refined estimator with B fixed at `limit` (the tests below the paper's are its).
    fn config(limit: u64, sub_buffers: usize) -> SplitBuffConfig {
        SplitBuffConfig {
            limit,
            in_bytes: false,
            sub_buffers,
            update_interval: SimTime::from_ms(100),
            alpha: 0.5,
            quantum: 1500,
            rate: None,
            estimator: SplitBuffEstimator::Refined,
            total: SplitBuffTotal::Fixed,
        }
    }

    /// Fig. 2 as published.
    fn paper(limit: u64, sub_buffers: usize, total: SplitBuffTotal) -> SplitBuffConfig {
        SplitBuffConfig { estimator: SplitBuffEstimator::Paper, total, ..config(limit, sub_buffers) }
    }

    /// Enqueues a packet and sends it at once: it meets, and leaves, an empty queue.
    fn pass(q: &mut SplitBuff, flow: u32, srtt_ms: u64, t: SimTime) {
        q.enqueue(packet(flow, srtt_ms, 1000, t), t, &mut NoDrops).unwrap();
        assert!(matches!(q.dequeue(t, &mut NoDrops), Dequeue::Packet(_)));
    }

    #[test]
    fn fig2_maps_by_the_last_periods_mean_rtt_less_t_q_and_sizes_by_eq4() {
        // One period of 10 ms and 990 ms packets in equal numbers into an idle link (T_q = 0):
        // everything goes to x before the first update; then thresh = average(RTT_s) − T_q =
        // 500 ms sends the 10 ms packets to x and the 990 ms ones to y, and after the next period
        // eq. (4) gives B_x = 10/1000 · 6250 = 62, B_y = 6187 (seed 002 §III.C).
        let mut q = SplitBuff::new(paper(6250, 2, SplitBuffTotal::Fixed));
        let t = SimTime::from_ms(50);
        for _ in 0..10 {
            q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        }
        assert_eq!(q.class_record(0).enqueued_packets, 20, "no threshold before the first update");
        let t = SimTime::from_ms(150);
        q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!(q.class_record(0).threshold_ns, 500 * MS);
        assert_eq!(q.class_record(1).enqueued_packets, 1, "990 ms is above the 500 ms threshold");
        for _ in 0..9 {
            q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        }
        q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!(q.class_record(0).enqueued_packets, 30, "10 ms is below it");
        let t = SimTime::from_ms(250);
        q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!((q.class_record(0).rttp_ns, q.class_record(1).rttp_ns), (10 * MS, 990 * MS));
        assert_eq!((q.class_record(0).limit, q.class_record(1).limit), (62, 6187));
    }

    #[test]
    fn fig2_re_estimates_b_as_the_rttp_times_the_link_rate() {
        // 100 Mb/s, 1000-byte packets, each sent before the next arrives (T_q = 0): RTTP 100 ms,
        // so B = 0.1 s × 100 Mb/s = 1.25 MB = 1250 packets, split by eq. (4).
        let rate = Some(BitRate(100_000_000));
        let mut q = SplitBuff::new(SplitBuffConfig { rate, ..paper(6250, 2, SplitBuffTotal::Estimated) });
        for k in 0..10 {
            pass(&mut q, k % 2, 80 + 40 * (k as u64 % 2), SimTime::from_ms(50));
        }
        assert_eq!(q.total(), 6250, "the limit until the first estimate");
        pass(&mut q, 0, 80, SimTime::from_ms(150));
        assert_eq!(q.class_record(0).estimate_rttp_ns, 100 * MS);
        assert_eq!(q.total(), 1250);
        // A fixed total stays the limit.
        let mut q = SplitBuff::new(SplitBuffConfig { rate, ..paper(6250, 2, SplitBuffTotal::Fixed) });
        for k in 0..10 {
            pass(&mut q, 0, 100, SimTime::from_ms(50 + k));
        }
        pass(&mut q, 0, 100, SimTime::from_ms(150));
        assert_eq!(q.total(), 6250);
    }

    #[test]
    fn fig2_t_q_is_the_smoothed_mean_occupancy_over_c_at_arrivals() {
        // 8 Mb/s: 1000 bytes take 1 ms. Four packets arrive together and stay: they find 0, 1, 2
        // and 3 ms of queue, so the period's T_q sample is 1.5 ms (the first is taken as it is)
        // and RTTP = 50 − 1.5 ms. The next period's four find 4 to 7 ms (mean 5.5): with α = 0.5,
        // T_q = 0.5 · 1.5 + 0.5 · 5.5 = 3.5 ms and RTTP = 50 − 3.5 ms.
        let rate = Some(BitRate(8_000_000));
        let mut q = SplitBuff::new(SplitBuffConfig { rate, ..paper(100, 2, SplitBuffTotal::Fixed) });
        let t = SimTime::from_ms(50);
        for _ in 0..4 {
            q.enqueue(packet(0, 50, 1000, t), t, &mut NoDrops).unwrap();
        }
        let t = SimTime::from_ms(150);
        for _ in 0..4 {
            q.enqueue(packet(0, 50, 1000, t), t, &mut NoDrops).unwrap();
        }
        assert_eq!(q.class_record(0).estimate_rttp_ns, 48_500_000);
        let t = SimTime::from_ms(250);
        q.enqueue(packet(0, 50, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!(q.class_record(0).estimate_rttp_ns, 46_500_000);
    }

    #[test]
    fn fig2_with_three_sub_buffers_thresholds_at_rttp_plus_and_minus_half_sigma() {
        // §IV.C: RTTs of 20, 60 and 100 ms in equal numbers, T_q = 0: RTTP 60 ms, σ = 32.66 ms,
        // thresholds 43.67 and 76.33 ms; each RTT then goes to its own sub-buffer.
        let mut q = SplitBuff::new(paper(300, 3, SplitBuffTotal::Fixed));
        let t = SimTime::from_ms(50);
        for k in 0..30u32 {
            pass(&mut q, k % 3, 20 + 40 * (k as u64 % 3), t);
        }
        let t = SimTime::from_ms(150);
        for k in 0..3u32 {
            pass(&mut q, k, 20 + 40 * k as u64, t);
        }
        let sigma = (3200.0f64 / 3.0).sqrt() * 1e6;
        assert_eq!(q.class_record(0).threshold_ns, (60e6 - sigma / 2.0) as u64);
        assert_eq!(q.class_record(1).threshold_ns, (60e6 + sigma / 2.0) as u64);
        let sent: Vec<u64> = q.class_records().iter().map(|r| r.enqueued_packets).collect();
        assert_eq!(sent, vec![30 + 1, 1, 1]);
    }

    #[test]
    fn the_whole_queue_never_exceeds_b_while_a_shrunk_sub_buffer_drains() {
        // B = 10. Five 10 ms and five 990 ms packets fill x before the first update; then eq. (4)
        // gives x and y 5 each while x still holds 10: a 990 ms packet for y finds the queue at B
        // and is dropped (§III.C: the sub-buffers together hold at most B).
        let mut q = SplitBuff::new(paper(10, 2, SplitBuffTotal::Fixed));
        let t = SimTime::from_ms(50);
        for k in 0..10u32 {
            q.enqueue(packet(k % 2, 10 + 980 * (k as u64 % 2), 1000, t), t, &mut NoDrops).unwrap();
        }
        let t = SimTime::from_ms(150);
        assert!(q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).is_err());
        assert_eq!((q.class_record(0).limit, q.class_record(1).limit), (5, 5));
        assert_eq!(q.len_packets(), 10);
    }

    #[test]
    fn under_any_arrivals_the_queue_stays_within_b_and_every_packet_is_counted() {
        // Pseudo-random RTTs, sizes and service over 40 periods: every packet admitted leaves the
        // queue within B (B fixed, or re-estimated: a B that shrinks below the queue drops what
        // arrives until the queue is back within it), and per sub-buffer enqueued = sent + queued.
        let rate = Some(BitRate(10_000_000));
        for sub_buffers in [2, 3] {
            for total in [SplitBuffTotal::Fixed, SplitBuffTotal::Estimated] {
                let mut q = SplitBuff::new(SplitBuffConfig { rate, ..paper(400, sub_buffers, total) });
                let mut z = 7u64;
                let mut totals = std::collections::BTreeSet::new();
                for step in 0..40_000u64 {
                    z = mix(z.wrapping_add(step));
                    let t = SimTime::from_us(step * 100);
                    if z.is_multiple_of(3) {
                        let _ = q.dequeue(t, &mut NoDrops);
                        continue;
                    }
                    let srtt = [0, 12, 45, 130, 400][(z >> 8) as usize % 5];
                    let admitted = q
                        .enqueue(packet((z >> 16) as u32 % 8, srtt, 200 + (z >> 24) as u32 % 1300, t), t, &mut NoDrops)
                        .is_ok();
                    totals.insert(q.total());
                    if admitted {
                        assert!(q.len_packets() <= q.total(), "step {step}: {} > B = {}", q.len_packets(), q.total());
                    }
                    if total == SplitBuffTotal::Fixed {
                        assert!(q.len_packets() <= 400, "step {step}");
                    }
                }
                assert!(q.class_records().iter().all(|r| r.enqueued_packets == r.sent_packets + r.queued_packets));
                assert!(q.class_records().iter().all(|r| r.enqueued_packets > 0), "every sub-buffer carried packets");
                assert_eq!(totals.len() > 1, total == SplitBuffTotal::Estimated, "B moves only when estimated");
            }
        }
    }

    #[test]
    fn before_the_first_update_one_sub_buffer_holds_the_whole_buffer() {
        let mut q = SplitBuff::new(config(4, 2));
        for k in 0..4 {
            assert!(q
                .enqueue(packet(k % 2, 10 + 980 * (k as u64 % 2), 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops)
                .is_ok());
        }
        assert!(q.enqueue(packet(0, 10, 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).is_err());
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
            q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        }
        // The first period mapped everything to x: the update sees one class only.
        let t = SimTime::from_ms(150);
        q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!(q.class_record(0).estimate_rttp_ns, 500 * MS);
        q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!(q.class_record(1).enqueued_packets, 1, "990 ms is above the 500 ms threshold");
        for _ in 0..9 {
            q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        }
        let t = SimTime::from_ms(250);
        q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
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
                q.enqueue(packet(0, 1 + (k % 19), 1000, t), t, &mut NoDrops).unwrap();
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
            q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
        }
        q.enqueue(packet(2, 0, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!((q.class_record(0).queued_packets, q.class_record(1).queued_packets), (3, 1));
        assert!(q.enqueue(packet(2, 0, 1000, t), t, &mut NoDrops).is_err(), "B = 4 packets in all");
        // Split at 10 ms / 990 ms: packets without an RTT still go to y.
        let mut q = SplitBuff::new(config(6250, 2));
        for _ in 0..10 {
            q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
            q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        }
        let t = SimTime::from_ms(150);
        q.enqueue(packet(2, 0, 1000, t), t, &mut NoDrops).unwrap();
        assert_eq!((q.class_record(0).enqueued_packets, q.class_record(1).enqueued_packets), (20, 1));
        q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
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
        q.enqueue(packet(0, 10, 1000, t), t, &mut NoDrops).unwrap();
        q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        let t = SimTime::from_ms(150);
        while let Dequeue::Packet(_) = q.dequeue(t, &mut NoDrops) {}
        for _ in 0..1125 {
            q.enqueue(packet(1, 990, 1000, t), t, &mut NoDrops).unwrap();
        }
        assert_eq!(q.class_record(1).queued_packets, 1125, "the long flow in y");
        let t = SimTime::from_ms(1060);
        q.enqueue(packet(0, 910, 1000, t), t, &mut NoDrops).unwrap();
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
            q.enqueue(packet(f0, 0, 1500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
            for _ in 0..3 {
                q.enqueue(packet(f1, 0, 500, SimTime::ZERO), SimTime::ZERO, &mut NoDrops).unwrap();
            }
        }
        let mut bytes = [0u64; 2];
        for _ in 0..400 {
            let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO, &mut NoDrops) else { panic!("backlogged") };
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
                let _ = q.enqueue(packet(flow, 10, 1000, SimTime::ZERO), SimTime::ZERO, &mut NoDrops);
            }
        }
        let total: u64 = q.class_records().iter().map(|r| r.enqueued_packets).sum();
        assert_eq!(total, 80);
        // Every flow's two packets went to the same sub-buffer: each count is even.
        assert!(q.class_records().iter().all(|r| r.enqueued_packets % 2 == 0));
        assert!(q.class_records().iter().all(|r| r.enqueued_packets > 0), "40 flows use both");
    }
}
