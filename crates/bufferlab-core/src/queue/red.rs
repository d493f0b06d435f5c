//! Random Early Detection (Floyd & Jacobson 1993, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4)) and Adaptive RED (Floyd, Gummadi & Shenker 2001, "Adaptive RED:
//! An Algorithm for Increasing the Robustness of RED's Active Queue Management").
//!
//! On every arrival RED updates the average queue size `avg` (an exponentially weighted moving
//! average with weight w_q, §4 and Fig. 2), then decides from `avg` whether to drop the arrival
//! early:
//!
//! ```text
//! avg < min_th                 admit                                       (Fig. 2)
//! min_th ≤ avg < max_th        p_b = max_p·(avg − min_th)/(max_th − min_th)  (§4, eq. 2)
//!                              p_a = p_b / (1 − count·p_b)                 (§7, eq. 3)
//!                              drop with probability p_a
//! max_th ≤ avg                 drop                                        (Fig. 2)
//! ```
//!
//! `count` is the number of packets admitted since the last early drop, so the gaps between early
//! drops at a fixed p_b are uniform on {1, …, 1/p_b} (§7), not geometric: drops are spread out
//! instead of clustered. In the `gentle` variant (Floyd, "Recommendation on using the gentle_
//! variant of RED", 2000) p_b rises on from max_p to 1 while avg goes from max_th to 2·max_th, and
//! only above 2·max_th is every arrival dropped. In byte mode (§4: "p_b ← p_b·PacketSize /
//! MaximumPacketSize") p_b is scaled by the arrival's size over the mean packet size, so a large
//! packet is more likely dropped than a small one. An early drop is [`DropReason::Aqm`]; an
//! arrival RED admits but the hard limit (packets or bytes) refuses is a tail drop,
//! [`DropReason::QueueFull`].
//!
//! The average counts packets or bytes: the thresholds' unit (both share one), whatever the hard
//! limit's unit. When a packet arrives at an idle link the average decays as if m packets had
//! arrived to the empty queue while it was idle, m = idle time / typical transmission time
//! (Fig. 2: "m ← f(time − q_time); avg ← (1 − w_q)^m·avg"), the typical transmission time that of
//! a mean-sized packet at the link's rate; the arrival itself is then one more sample of the empty
//! queue, so avg ← (1 − w_q)^(m+1)·avg, as Floyd's own ns-2 code (`estimator(q, m + 1, …)`) and
//! ns-3's RedQueueDisc take it. The idle period starts when the link finishes sending the packet
//! that left the queue empty (the queue does not hold the packet being sent: an arrival while it
//! is sent finds the queue empty and is the ordinary sample q = 0). Without a rate no idle time
//! is counted.
//!
//! With `ecn` on, an early drop of an ECN-capable arrival below max_th becomes a CE mark (RFC
//! 3168 §5): the arrival is queued marked, and `count` starts over as after a drop (the mark is
//! the early signal). At or above max_th (the gentle region included) RED drops whatever the
//! packet: a queue that far above its thresholds is not controlled by marks alone (RFC 3168 §7,
//! Linux `red ecn harddrop`). Marks are counted by the queue ([`CeMarks`]).
//!
//! Adaptive RED (Fig. 1 of the 2001 paper) adapts max_p every `interval` (0.5 s) by AIMD to keep
//! avg within [min_th + 0.4·(max_th − min_th), min_th + 0.6·(max_th − min_th)]: above it max_p
//! grows by α = min(0.01, max_p/4), below it shrinks by β = 0.9; max_p stays in [0.01, 0.5]. The
//! adaptation is taken at the first arrival after an interval ends (as ns-3 does), the next
//! interval starting then. Its automatic parameters (§4) are w_q = 1 − exp(−1/C), C the link rate
//! in mean-sized packets per second (the average's time constant one second), min_th =
//! max(5, target_delay·C/2) packets and max_th = 3·min_th (see [`automatic_thresholds`]).

use super::discipline::{AqmState, CeMarks, Dequeue, DropReason, DropSink, QueueDiscipline};
use super::fifo::DropTailFifo;
use crate::net::packet::Packet;
use crate::spec::QueueSpec;
use crate::units::{BitRate, SimTime};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Thresholds when the spec gives none (plain RED): ns-3 RedQueueDisc's MinTh = 5 and MaxTh = 15
/// packets.
pub const DEFAULT_MIN_TH_PACKETS: u64 = 5;
pub const DEFAULT_MAX_TH_PACKETS: u64 = 15;
/// The averaging weight when the spec gives none (plain RED): ns-3's QW = 0.002, the value Floyd
/// & Jacobson use in their simulations (§11: w_q ≥ 0.001).
pub const DEFAULT_W_Q: f64 = 0.002;
/// Adaptive RED's bounds on max_p (2001 paper, Fig. 1 and §4).
pub const ARED_MAX_P_RANGE: (f64, f64) = (0.01, 0.5);
/// Adaptive RED's multiplicative decrease of max_p (Fig. 1).
const ARED_BETA: f64 = 0.9;

/// What the thresholds and the average queue size count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Packets,
    Bytes,
}

/// A RED queue's parameters, resolved (defaults and automatic values filled in).
#[derive(Debug, Clone, Copy)]
pub struct RedConfig {
    /// The hard limit (tail drop), in packets or bytes.
    pub limit_packets: Option<u64>,
    pub limit_bytes: Option<u64>,
    /// Thresholds on the average queue size, in `measure` units.
    pub min_th: f64,
    pub max_th: f64,
    pub measure: Measure,
    /// The early-drop probability at avg = max_th (the starting value, with `adaptive`).
    pub max_p: f64,
    /// The EWMA weight of the average queue size.
    pub w_q: f64,
    pub gentle: bool,
    /// Scale p_b by packet size / mean packet size (§4).
    pub byte_mode: bool,
    /// The mean packet size (bytes): byte mode's reference and the idle correction's packet.
    pub mean_packet_bytes: u32,
    /// Adaptive RED: adapt max_p every this long.
    pub adapt_interval: Option<SimTime>,
    /// The link's rate (idle-time correction).
    pub rate: Option<BitRate>,
    /// Mark ECN-capable arrivals CE instead of dropping them early below max_th.
    pub ecn: bool,
}

/// The link's capacity C in mean-sized packets per second (ARED §4), if it has a rate.
fn packets_per_second(rate: Option<BitRate>, mean_packet_bytes: u32) -> Option<f64> {
    rate.map(|r| r.bps() as f64 / (8.0 * mean_packet_bytes as f64))
}

/// Adaptive RED's automatic averaging weight (2001 paper, §4): w_q = 1 − exp(−1/C), C in packets
/// per second, so that the average's time constant is one second whatever the link's rate.
/// Without a rate: plain RED's default.
pub fn automatic_w_q(rate: Option<BitRate>, mean_packet_bytes: u32) -> f64 {
    match packets_per_second(rate, mean_packet_bytes) {
        Some(c) => 1.0 - (-1.0 / c).exp(),
        None => DEFAULT_W_Q,
    }
}

/// Adaptive RED's automatic thresholds in packets (2001 paper, §4): min_th = max(5, target
/// queueing delay · C / 2), max_th = 3·min_th, so the target range of avg sits around the target
/// delay. Without a rate: 5 and 15.
pub fn automatic_thresholds(rate: Option<BitRate>, mean_packet_bytes: u32, target_delay: SimTime) -> (f64, f64) {
    let c = packets_per_second(rate, mean_packet_bytes).unwrap_or(0.0);
    let min_th = (DEFAULT_MIN_TH_PACKETS as f64).max(target_delay.as_secs_f64() * c / 2.0);
    (min_th, 3.0 * min_th)
}

impl RedConfig {
    /// The configuration a `QueueSpec::Red` gives, in front of a link of `rate`: what the spec
    /// leaves out filled in (plain RED: ns-3's defaults; Adaptive RED: the 2001 paper's automatic
    /// parameters). `None` for another kind of queue.
    pub fn from_spec(spec: &QueueSpec, rate: Option<BitRate>) -> Option<RedConfig> {
        let QueueSpec::Red {
            limit_packets,
            limit_bytes,
            min_th_packets,
            min_th_bytes,
            max_th_packets,
            max_th_bytes,
            max_p,
            w_q,
            gentle,
            byte_mode,
            mean_packet_bytes,
            adaptive,
            target_delay_ns,
            interval_ns,
            ecn,
        } = *spec
        else {
            return None;
        };
        let (min_th, max_th, measure) = match (min_th_packets, max_th_packets, min_th_bytes, max_th_bytes) {
            (Some(min), Some(max), None, None) => (min as f64, max as f64, Measure::Packets),
            (None, None, Some(min), Some(max)) => (min as f64, max as f64, Measure::Bytes),
            _ if adaptive => {
                let (min, max) = automatic_thresholds(rate, mean_packet_bytes, SimTime::from_ns(target_delay_ns));
                (min, max, Measure::Packets)
            }
            _ => (DEFAULT_MIN_TH_PACKETS as f64, DEFAULT_MAX_TH_PACKETS as f64, Measure::Packets),
        };
        let w_q = w_q.unwrap_or(if adaptive { automatic_w_q(rate, mean_packet_bytes) } else { DEFAULT_W_Q });
        Some(RedConfig {
            limit_packets,
            limit_bytes,
            min_th,
            max_th,
            measure,
            max_p,
            w_q,
            gentle,
            byte_mode,
            mean_packet_bytes,
            adapt_interval: adaptive.then(|| SimTime::from_ns(interval_ns)),
            rate,
            ecn,
        })
    }
}

/// A RED (or Adaptive RED) queue: a drop-tail FIFO behind RED's early-drop decision.
#[derive(Debug)]
pub struct Red {
    fifo: DropTailFifo,
    config: RedConfig,
    /// The average queue size, in `config.measure` units.
    avg: f64,
    /// Packets admitted since the last early drop (Floyd & Jacobson's `count`, §7).
    count: u64,
    /// When the link went idle, or goes idle, having sent the packet that left the queue empty
    /// (Fig. 2's q_time).
    idle_since: SimTime,
    /// The transmission time of a mean-sized packet, ps (0: no rate).
    typical_transmission_ps: f64,
    /// max_p now (moved by Adaptive RED).
    max_p: f64,
    /// When Adaptive RED next adapts max_p.
    next_adaptation: SimTime,
    rng: Xoshiro256PlusPlus,
    marks: CeMarks,
}

impl Red {
    /// A RED queue; `seed` keys its early-drop draws.
    pub fn new(config: RedConfig, seed: u64) -> Red {
        let typical_transmission_ps =
            config.rate.map_or(0.0, |r| r.transmission_time(config.mean_packet_bytes as u64).as_ps() as f64);
        Red {
            fifo: DropTailFifo::new(config.limit_packets, config.limit_bytes),
            config,
            avg: 0.0,
            count: 0,
            idle_since: SimTime::ZERO,
            typical_transmission_ps,
            max_p: config.max_p,
            next_adaptation: config.adapt_interval.unwrap_or(SimTime::MAX),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            marks: CeMarks::default(),
        }
    }

    /// The average queue size, in the thresholds' unit.
    pub fn average(&self) -> f64 {
        self.avg
    }

    /// max_p now (Adaptive RED moves it).
    pub fn max_p(&self) -> f64 {
        self.max_p
    }

    /// The instantaneous queue size in the thresholds' unit.
    fn current(&self) -> f64 {
        match self.config.measure {
            Measure::Packets => self.fifo.len_packets() as f64,
            Measure::Bytes => self.fifo.len_bytes() as f64,
        }
    }

    /// Fig. 2's average update at an arrival.
    fn update_average(&mut self, now: SimTime) {
        let w_q = self.config.w_q;
        if self.fifo.len_packets() == 0 && now >= self.idle_since && self.typical_transmission_ps > 0.0 {
            // The link is idle since q_time: m ← f(time − q_time) idle packet times, and this
            // arrival samples the empty queue once more: avg ← (1 − w_q)^(m+1)·avg.
            let m = (now - self.idle_since).as_ps() as f64 / self.typical_transmission_ps;
            self.avg *= (1.0 - w_q).powf(m + 1.0);
            // The idle time up to now is accounted for, should this arrival be dropped too.
            self.idle_since = now;
        } else {
            // avg ← (1 − w_q)·avg + w_q·q  (§4, eq. 1)
            self.avg = (1.0 - w_q) * self.avg + w_q * self.current();
        }
    }

    /// The early-drop probability p_b at the current average for a packet of `bytes`.
    pub fn p_b(&self, bytes: u32) -> f64 {
        let (min_th, max_th, max_p, avg) = (self.config.min_th, self.config.max_th, self.max_p, self.avg);
        let p = if avg < min_th {
            0.0
        } else if avg < max_th {
            // p_b ← max_p·(avg − min_th)/(max_th − min_th)  (§4, eq. 2)
            max_p * (avg - min_th) / (max_th - min_th)
        } else if self.config.gentle && avg < 2.0 * max_th {
            // gentle_: from max_p at max_th linearly to 1 at 2·max_th (Floyd 2000)
            max_p + (1.0 - max_p) * (avg - max_th) / max_th
        } else {
            1.0
        };
        if self.config.byte_mode {
            // p_b ← p_b·PacketSize/MeanPacketSize  (§4, byte mode)
            (p * bytes as f64 / self.config.mean_packet_bytes as f64).min(1.0)
        } else {
            p
        }
    }

    /// A uniform draw in (0, 1): 53 random bits, offset by half a step.
    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// RED's early-drop decision for an arrival of `bytes` (Fig. 2 with §7's count).
    fn drops_early(&mut self, bytes: u32) -> bool {
        if self.avg < self.config.min_th {
            // Below min_th nothing is dropped and the count starts over (Fig. 2: count ← −1;
            // here count is the packets admitted since, so the first one over min_th has 0).
            self.count = 0;
            return false;
        }
        let p_b = self.p_b(bytes);
        // p_a ← p_b/(1 − count·p_b)  (§7, eq. 3); certain once count·p_b ≥ 1.
        let denominator = 1.0 - self.count as f64 * p_b;
        let drop = p_b >= 1.0 || denominator <= p_b || self.uniform() < p_b / denominator;
        if drop {
            self.count = 0;
        } else {
            self.count += 1;
        }
        drop
    }

    /// Adaptive RED's max_p adaptation (2001 paper, Fig. 1), at most once per interval.
    fn adapt(&mut self, now: SimTime) {
        let Some(interval) = self.config.adapt_interval else { return };
        if now < self.next_adaptation {
            return;
        }
        self.next_adaptation = now + interval;
        let (min_th, max_th) = (self.config.min_th, self.config.max_th);
        let (target_low, target_high) = (min_th + 0.4 * (max_th - min_th), min_th + 0.6 * (max_th - min_th));
        let (bottom, top) = ARED_MAX_P_RANGE;
        if self.avg > target_high && self.max_p <= top {
            // increase max_p: α ← min(0.01, max_p/4); max_p ← max_p + α
            let alpha = (0.01f64).min(self.max_p / 4.0);
            self.max_p = (self.max_p + alpha).min(top);
        } else if self.avg < target_low && self.max_p >= bottom {
            // decrease max_p: max_p ← max_p·β
            self.max_p = (self.max_p * ARED_BETA).max(bottom);
        }
    }
}

impl QueueDiscipline for Red {
    fn enqueue(
        &mut self,
        mut packet: Packet,
        now: SimTime,
        drops: &mut impl DropSink,
    ) -> Result<(), (Packet, DropReason)> {
        self.update_average(now);
        self.adapt(now);
        if self.drops_early(packet.wire_bytes) {
            // RFC 3168 §5: below max_th an ECN-capable arrival is marked CE instead; at or above
            // it (and in the gentle region) RED drops (RFC 3168 §7; Linux `harddrop`).
            let marks = self.config.ecn && self.avg < self.config.max_th;
            if !self.marks.mark_instead_of_drop(marks, &mut packet) {
                return Err((packet, DropReason::Aqm));
            }
        }
        self.fifo.enqueue(packet, now, drops)
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        let out = self.fifo.dequeue(now, drops);
        if let Dequeue::Packet(p) = out {
            if self.fifo.len_packets() == 0 {
                // The link goes idle once it has sent this packet, unless another arrives first.
                let sending = self.config.rate.map_or(SimTime::ZERO, |r| r.transmission_time(p.wire_bytes as u64));
                self.idle_since = now + sending;
            }
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
            probability: Some(self.p_b(self.config.mean_packet_bytes)),
            signal: Some(self.avg),
            state: None,
            count: Some(self.count),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Ecn;
    use crate::queue::discipline::NoDrops;

    fn packet(bytes: u32) -> Packet {
        Packet::segment(0, 0, 0, 0, bytes - 52, bytes, SimTime::ZERO)
    }

    fn config() -> RedConfig {
        RedConfig {
            limit_packets: Some(1000),
            limit_bytes: None,
            min_th: 5.0,
            max_th: 15.0,
            measure: Measure::Packets,
            max_p: 0.1,
            w_q: 0.002,
            gentle: false,
            byte_mode: false,
            mean_packet_bytes: 1000,
            adapt_interval: None,
            rate: Some(BitRate(8_000_000)), // a 1000-byte packet takes 1 ms
            ecn: false,
        }
    }

    #[test]
    fn the_average_is_the_ewma_of_the_queue_at_arrivals() {
        // Arrivals to a queue of 0, 1, 2, … packets (nothing dequeued; the first finds it empty
        // and idle since 0, so avg stays 0): avg_k = (1 − w)·avg_{k−1} + w·k, by hand for k = 1..4.
        let mut q = Red::new(RedConfig { w_q: 0.5, ..config() }, 1);
        let t = SimTime::ZERO;
        q.enqueue(packet(1000), t, &mut NoDrops).unwrap();
        assert_eq!(q.average(), 0.0);
        let mut hand = 0.0;
        for k in 1..=4 {
            q.enqueue(packet(1000), t, &mut NoDrops).unwrap();
            hand = 0.5 * hand + 0.5 * k as f64;
            assert_eq!(q.average(), hand);
        }
        // 0.5, 1.25, 2.125, 3.0625
        assert_eq!(q.average(), 3.0625);
    }

    #[test]
    fn an_idle_link_decays_the_average_by_the_packets_it_could_have_sent() {
        // avg = 3.0625 as above; the last packet leaves the queue at 10 ms and is sent by 11 ms
        // (1000 bytes at 8 Mb/s); a packet arriving at 14 ms finds the link idle for m = 3
        // packet times and samples the empty queue: avg ← 0.5^(3+1)·avg.
        let mut q = Red::new(RedConfig { w_q: 0.5, ..config() }, 1);
        for _ in 0..5 {
            q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let before = q.average();
        while let Dequeue::Packet(_) = q.dequeue(SimTime::from_ms(10), &mut NoDrops) {}
        q.enqueue(packet(1000), SimTime::from_ms(14), &mut NoDrops).unwrap();
        assert!((q.average() - before / 16.0).abs() < 1e-12, "{} vs {}", q.average(), before / 16.0);
    }

    #[test]
    fn an_arrival_to_an_empty_queue_of_a_busy_link_samples_an_empty_queue() {
        // As above, but the packet arrives at 10.5 ms while the last one is still being sent:
        // eq. 1 with q = 0, avg ← 0.5·avg.
        let mut q = Red::new(RedConfig { w_q: 0.5, ..config() }, 1);
        for _ in 0..5 {
            q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let before = q.average();
        while let Dequeue::Packet(_) = q.dequeue(SimTime::from_ms(10), &mut NoDrops) {}
        q.enqueue(packet(1000), SimTime::from_us(10_500), &mut NoDrops).unwrap();
        assert_eq!(q.average(), before / 2.0);
    }

    fn at_average(config: RedConfig, avg: f64) -> Red {
        let mut q = Red::new(config, 1);
        q.avg = avg;
        q
    }

    #[test]
    fn p_b_rises_linearly_from_min_th_to_max_p_at_max_th() {
        let c = config();
        assert_eq!(at_average(c, 4.99).p_b(1000), 0.0);
        assert_eq!(at_average(c, 5.0).p_b(1000), 0.0);
        assert!((at_average(c, 10.0).p_b(1000) - 0.05).abs() < 1e-15);
        assert!((at_average(c, 14.999_999).p_b(1000) - 0.1).abs() < 1e-6);
        assert_eq!(at_average(c, 15.0).p_b(1000), 1.0, "not gentle: every arrival from max_th on");
    }

    #[test]
    fn gentle_p_b_goes_from_max_p_to_one_between_max_th_and_twice_max_th() {
        let c = RedConfig { gentle: true, ..config() };
        assert!((at_average(c, 15.0).p_b(1000) - 0.1).abs() < 1e-15);
        // Half way, avg = 22.5: 0.1 + 0.9 · 7.5/15 = 0.55.
        assert!((at_average(c, 22.5).p_b(1000) - 0.55).abs() < 1e-15);
        assert_eq!(at_average(c, 30.0).p_b(1000), 1.0);
    }

    #[test]
    fn byte_mode_scales_p_b_by_the_packets_size_over_the_mean() {
        let c = RedConfig { byte_mode: true, ..config() };
        let q = at_average(c, 10.0);
        assert!((q.p_b(1000) - 0.05).abs() < 1e-15);
        assert!((q.p_b(1500) - 0.075).abs() < 1e-15);
        assert!((q.p_b(40) - 0.002).abs() < 1e-15);
    }

    #[test]
    fn early_drops_are_spaced_uniformly_between_1_and_1_over_p_b_arrivals() {
        // At a fixed p_b = 0.02 (w_q tiny: avg stays put), §7's p_a = p_b/(1 − count·p_b) makes
        // the number X of arrivals from one early drop to the next uniform on {1, …, 50}:
        // P(X = n) = Π_{i<n−1}(1 − p_b/(1 − i·p_b)) · p_b/(1 − (n−1)·p_b) = p_b, the product
        // telescoping to 1 − (n−1)·p_b. So E[X] = (1 + 1/p_b)/2 = 25.5 and no gap exceeds 50;
        // geometric gaps (p_a = p_b) would have the mean 50 and a long tail.
        let c = RedConfig { w_q: 1e-300, limit_packets: None, limit_bytes: None, rate: None, ..config() };
        let mut q = at_average(c, 7.0); // p_b = 0.1 · 2/10 = 0.02
        q.fifo.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap(); // non-empty: no idle decay
        let mut gaps = Vec::new();
        let mut since = 0u64;
        let mut histogram = [0u64; 51];
        for _ in 0..1_000_000 {
            since += 1;
            if q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).is_err() {
                gaps.push(since);
                histogram[since as usize] += 1;
                since = 0;
            } else {
                q.dequeue(SimTime::ZERO, &mut NoDrops); // back to one packet: never idle, never full
            }
        }
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        // σ(X) = √((50² − 1)/12) ≈ 14.4; over ~39,000 gaps the mean's σ is ≈ 0.07.
        assert!((mean - 25.5).abs() < 0.35, "mean gap {mean}");
        assert!(gaps.iter().all(|&g| (1..=50).contains(&g)));
        // Uniform: each of the 50 gap lengths within 20 % of the same count.
        let expected = gaps.len() as f64 / 50.0;
        assert!(histogram[1..].iter().all(|&n| (n as f64 - expected).abs() < 0.2 * expected), "{histogram:?}");
    }

    #[test]
    fn early_drops_are_aqm_drops_and_the_hard_limit_is_a_tail_drop() {
        let c = RedConfig { limit_packets: Some(3), ..config() };
        let mut q = at_average(c, 20.0);
        q.fifo.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap();
        let (_, reason) = q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(reason, DropReason::Aqm);
        let mut q = at_average(c, 0.0);
        q.config.w_q = 1e-300;
        for _ in 0..3 {
            q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        let (_, reason) = q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap_err();
        assert_eq!(reason, DropReason::QueueFull);
    }

    #[test]
    fn adaptive_red_moves_max_p_by_aimd_toward_the_target_range() {
        // min_th 5, max_th 15: target range [9, 11]. Every 0.5 s: above it max_p += min(0.01,
        // max_p/4), below it max_p ·= 0.9, within [0.01, 0.5].
        let c = RedConfig { adapt_interval: Some(SimTime::from_ms(500)), max_p: 0.02, ..config() };
        let mut q = at_average(c, 12.0);
        q.adapt(SimTime::from_ms(499));
        assert_eq!(q.max_p(), 0.02, "not before the interval ends");
        q.adapt(SimTime::from_ms(500));
        assert_eq!(q.max_p(), 0.025, "α = max_p/4 = 0.005 below 0.01");
        q.adapt(SimTime::from_ms(700));
        assert_eq!(q.max_p(), 0.025, "once per interval");
        q.max_p = 0.1;
        q.adapt(SimTime::from_ms(1000));
        assert!((q.max_p() - 0.11).abs() < 1e-15, "α = 0.01");
        q.avg = 10.0;
        q.adapt(SimTime::from_ms(1500));
        assert!((q.max_p() - 0.11).abs() < 1e-15, "within the target range: unchanged");
        q.avg = 8.0;
        q.adapt(SimTime::from_ms(2000));
        assert!((q.max_p() - 0.099).abs() < 1e-15, "β = 0.9");
        q.max_p = 0.0105;
        q.adapt(SimTime::from_ms(2500));
        assert_eq!(q.max_p(), 0.01, "bounded below by 0.01");
        q.avg = 14.0;
        q.max_p = 0.495;
        q.adapt(SimTime::from_ms(3000));
        assert_eq!(q.max_p(), 0.5, "bounded above by 0.5");
    }

    #[test]
    fn adaptive_reds_automatic_parameters_follow_the_link_rate() {
        // 100 Mb/s of 1500-byte packets: C = 8333.3 packets/s; w_q = 1 − e^(−1/C) ≈ 1.2e-4;
        // target 5 ms: min_th = max(5, 0.005·C/2) = 20.83, max_th = 62.5.
        let rate = Some(BitRate(100_000_000));
        let c: f64 = 1e8 / 12_000.0;
        assert!((automatic_w_q(rate, 1500) - (1.0 - (-1.0 / c).exp())).abs() < 1e-18);
        let (min_th, max_th) = automatic_thresholds(rate, 1500, SimTime::from_ms(5));
        assert!((min_th - 0.005 * c / 2.0).abs() < 1e-9 && (max_th - 3.0 * min_th).abs() < 1e-9);
        assert_eq!(automatic_thresholds(Some(BitRate(1_000_000)), 1500, SimTime::from_ms(5)), (5.0, 15.0));
    }

    #[test]
    fn the_same_seed_drops_the_same_packets() {
        let run = |seed| {
            let mut q = Red::new(RedConfig { w_q: 1e-300, ..config() }, seed);
            q.avg = 9.0;
            q.fifo.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).unwrap();
            (0..2000).map(|_| q.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).is_err()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    /// `n` arrivals with ECN field `ecn` at a RED with `ecn` on, its average held at `avg`, each
    /// dequeued before the next: (arrivals refused as early drops, arrivals queued marked CE).
    fn arrivals_at(avg: f64, ecn: Ecn, n: u32) -> (u64, u64, Red) {
        let mut q = at_average(RedConfig { w_q: 1e-12, ecn: true, ..config() }, avg);
        let (mut dropped, mut marked) = (0, 0);
        for _ in 0..n {
            match q.enqueue(Packet { ecn, ..packet(1000) }, SimTime::ZERO, &mut NoDrops) {
                Err((_, reason)) => {
                    assert_eq!(reason, DropReason::Aqm);
                    dropped += 1;
                }
                Ok(()) => {
                    let Dequeue::Packet(p) = q.dequeue(SimTime::ZERO, &mut NoDrops) else { panic!("queued") };
                    marked += (p.ecn == Ecn::Ce) as u64;
                }
            }
        }
        (dropped, marked, q)
    }

    #[test]
    fn with_ecn_early_drops_below_max_th_become_marks() {
        // avg 10 of [5, 15], max_p 0.1: p_b = 0.05, about one early signal in 10 (§7's spacing).
        let (dropped, marked, q) = arrivals_at(10.0, Ecn::Ect0, 10_000);
        assert_eq!(dropped, 0, "an ECN-capable arrival below max_th is marked, not dropped");
        assert!((800..1200).contains(&marked), "{marked} marks");
        assert_eq!(q.ce_marks(), CeMarks { packets: marked, bytes: 1000 * marked });
        // The same draws without ECN capability: the same number of early drops, no marks.
        let (dropped, marked, q) = arrivals_at(10.0, Ecn::NotEct, 10_000);
        assert!((800..1200).contains(&dropped) && marked == 0 && q.ce_marks() == CeMarks::default());
    }

    #[test]
    fn with_ecn_red_still_drops_at_or_above_max_th() {
        // RFC 3168 §7 (Linux `harddrop`): at avg ≥ max_th every arrival is dropped, ECT or not.
        for avg in [15.5, 20.0] {
            let (dropped, marked, q) = arrivals_at(avg, Ecn::Ect0, 100);
            assert_eq!((dropped, marked, q.ce_marks()), (100, 0, CeMarks::default()), "avg {avg}");
        }
    }
}
