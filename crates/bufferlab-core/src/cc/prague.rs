//! TCP Prague, draft-briscoe-iccrg-prague-congestion-control-04 (De Schepper, Tilmans, Briscoe
//! and Goel): DCTCP's scalable response adapted to the public Internet under the Prague L4S
//! requirements (RFC 9331 §4, Appendix A). Section numbers below are the draft's.
//!
//! - §2.2: data is sent ECT(1), the L4S identifier, with accurate ECN feedback (§2.3.1); the
//!   engine's `tcp.ecn = "l4s"` does both (ECT(1) data, the per-packet echo standing in for
//!   AccECN), and the spec's checks refuse Prague without it (`validate.rs`).
//! - §2.3.2: α, the moving average of the fraction of bytes CE-marked, is DCTCP's estimator
//!   ([`MarkedFraction`]: g = 1/16, one update per round trip), α = 1 to begin with and held
//!   there until the first CE mark arrives, as the reference implementation does: until the path
//!   has shown an L4S AQM, the first response is a classic halving.
//! - §2.4.1: on ECN feedback, at most once per round trip (the sender decides when), cwnd ←
//!   cwnd·(1 − α/2), ssthresh with it; no recovery episode follows.
//! - §2.4.2: a loss is answered as Reno does (RFC 5681: ssthresh = max(FlightSize/2, 2 SMSS),
//!   cwnd = ssthresh after fast recovery, one segment after a timeout).
//! - §2.4.3: additive increase of one segment per round trip, counting only the bytes not
//!   CE-marked: over a round with a fraction p marked, (1 − p) segments, so that the increase does
//!   not stall where marking saturates. The window is kept in fractions of a byte, as the
//!   reference implementation keeps its cwnd in fixed point, so the small per-ACK increments and
//!   α-scaled reductions do not round away.
//! - §2.4.4, reduced RTT-dependence (an option, on by default as in the reference
//!   implementation: [`PragueOptions::rtt_independence`]): once a flow has spent
//!   [`RTT_TRANSITION_ROUNDS`] round trips out of slow start, a flow whose smoothed RTT R is
//!   below the reference RTT [`REFERENCE_RTT`] (25 ms) grows by (R/25 ms)² segments a round,
//!   one segment every 25 ms in rate terms, as a 25 ms flow would; and it updates α and reduces
//!   at most once per 25 ms. Flows of 25 ms and more are unaffected.
//! - §2.5: Prague paces always: at cwnd/SRTT (100 %) in congestion avoidance and twice that
//!   while cwnd < ssthresh/2 (slow start sends two segments per segment acknowledged), whatever
//!   `tcp.pacing` says; before the first RTT sample nothing is paced.
//! - Fall-back on a classic ECN AQM (an option, off by default as in the reference
//!   implementation: [`PragueOptions::classic_fallback`]): Prague's requirement (RFC 9331 §4.3)
//!   to detect a bottleneck that marks as RFC 3168 says and to respond there as a Reno flow
//!   would. The draft defers to Briscoe and Ahmed's heuristic ("TCP Prague Fall-back on
//!   Detection of a Classic ECN AQM", arXiv:1911.00710, v2), a score that classic AQMs' delay
//!   variation and standing queue drive up and an L4S queue's shallow one drives down; once the
//!   score passes its sticky L4S region, α in a reduction is no lower than about 0.6 times the
//!   score's progress toward classic, so a flow deep in the classic region reduces by at least
//!   30 %. [`ClassicEcnDetector`] has the details.

use super::contract::{state, AckSample, CongestionController, ControllerConfig, PragueOptions};
use super::dctcp::MarkedFraction;
use crate::units::{BitRate, SimTime};

/// §2.4.4: the reference RTT of reduced RTT-dependence, the reference implementation's default.
pub const REFERENCE_RTT: SimTime = SimTime::from_ms(25);

/// §2.4.4: round trips out of slow start before a flow becomes RTT-independent (the reference
/// implementation's `prague_rtt_transition`): short flows keep the responsiveness of their RTT.
pub const RTT_TRANSITION_ROUNDS: u64 = 500;

/// Briscoe and Ahmed's classic ECN AQM detection (arXiv:1911.00710 v2), in the form the
/// reference implementation runs it, with real logarithms for its integer ones. Each round trip
/// after the first CE mark, a score moves by
///
/// ½·log2(σ/V0) + ½·log2(max(d/D0, 1))
///
/// where σ is the mean deviation of the RTT and d = SRTT − min RTT the queueing delay, both from
/// a slow moving average (gains 2^−k per ACK, k growing with the window so that it averages over
/// more than a round of ACKs), V0 = 750 µs and D0 = 2 ms the reference variation and depth. An
/// L4S queue (a 1 ms marking step) varies well under V0, and its score falls to 0; a classic
/// AQM's queue (5 to 20 ms) varies more and stands deeper, and its score climbs. The score is
/// held in [0, 17]: up to 8 it is sticky L4S, from 9 on the flow responds as classic, between
/// the two α is raised toward classic by 0.625 times the progress.
#[derive(Debug, Clone, Default)]
pub struct ClassicEcnDetector {
    score: f64,
    /// Slow SRTT and mean deviation of the RTT samples, seconds.
    srtt: Option<f64>,
    mdev: f64,
}

impl ClassicEcnDetector {
    /// Reference variation V0 and depth D0 of the score, seconds.
    const V0: f64 = 750e-6;
    const D0: f64 = 2e-3;
    /// Weights V and D of the two terms.
    const WEIGHT: f64 = 0.5;
    /// The score's sticky L4S region ends here; one unit later the response is fully classic;
    /// the sticky classic region above is as wide as the L4S one.
    const L_STICKY: f64 = 8.0;
    const CLASSIC: f64 = Self::L_STICKY + 1.0;
    const C_STICKY: f64 = Self::CLASSIC + Self::L_STICKY;
    /// The α floor at a fully classic score (the reference implementation's c/2 + c/8).
    const FLOOR: f64 = 0.625;

    /// An RTT sample, with the window in segments (which sets the averaging gain).
    fn on_rtt(&mut self, rtt: SimTime, window_segments: f64) {
        let m = rtt.as_secs_f64();
        // Gain 2^−k with k = 1.5·log2(W) + 1, at most 18.
        let k = (1.5 * window_segments.max(1.0).log2() + 1.0).min(18.0);
        let g = 2f64.powf(-k);
        match self.srtt {
            None => self.srtt = Some(m),
            Some(s) => {
                let error = m - s;
                self.srtt = Some(s + g * error);
                self.mdev += g / 2.0 * (error.abs() - self.mdev);
            }
        }
    }

    /// The score's step at the end of a round trip, with the path's minimum RTT.
    fn on_round(&mut self, min_rtt: Option<SimTime>) {
        let Some(srtt) = self.srtt else { return };
        let mut step = Self::WEIGHT * (self.mdev.max(1e-9) / Self::V0).log2();
        if let Some(min_rtt) = min_rtt {
            let depth = srtt - min_rtt.as_secs_f64();
            if depth > Self::D0 {
                // A standing queue can only move the score toward classic.
                step += Self::WEIGHT * (depth / Self::D0).log2();
            }
        }
        self.score = (self.score + step).clamp(0.0, Self::C_STICKY);
    }

    /// The score now.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// The least α a reduction uses: 0 in the L4S region, up to 0.625 at a classic score.
    pub fn alpha_floor(&self) -> f64 {
        let progress = (self.score.min(Self::CLASSIC) - Self::L_STICKY).max(0.0);
        Self::FLOOR * progress
    }
}

#[derive(Debug, Clone)]
pub struct Prague {
    mss: u64,
    /// The congestion window in bytes, fractional (§2.4.3).
    cwnd: f64,
    ssthresh: u64,
    /// Between a loss and the end of its fast-recovery episode.
    in_recovery: bool,
    /// α (§2.3.2), held at 1 until the first mark.
    marks: MarkedFraction,
    /// ECN feedback arrived on the ACK being processed: reduce once its sample is counted.
    reduction_due: bool,
    /// Round trips ended while out of slow start (§2.4.4's transition).
    rounds_after_slow_start: u64,
    /// When α was last updated and the window last reduced on ECN feedback.
    last_alpha_update: SimTime,
    last_ecn_reduction: Option<SimTime>,
    /// The sender's smoothed and minimum RTT, from the latest ACK.
    srtt: Option<SimTime>,
    min_rtt: Option<SimTime>,
    options: PragueOptions,
    classic: ClassicEcnDetector,
}

impl Prague {
    pub fn new(mss: u32, initial_window_segments: u32, options: PragueOptions) -> Self {
        let mss = mss as u64;
        Prague {
            mss,
            cwnd: (initial_window_segments as u64 * mss) as f64,
            ssthresh: u64::MAX,
            in_recovery: false,
            marks: MarkedFraction::held_until_first_mark(),
            reduction_due: false,
            rounds_after_slow_start: 0,
            last_alpha_update: SimTime::ZERO,
            last_ecn_reduction: None,
            srtt: None,
            min_rtt: None,
            options,
            classic: ClassicEcnDetector::default(),
        }
    }

    pub fn from_config(config: &ControllerConfig) -> Self {
        Self::new(config.mss, config.initial_window_segments, config.prague)
    }

    /// α now.
    pub fn alpha(&self) -> f64 {
        self.marks.alpha()
    }

    /// The classic ECN AQM detector's score (moves only with the fall-back on).
    pub fn classic_score(&self) -> f64 {
        self.classic.score()
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh as f64
    }

    /// §2.4.4: the flow is past its transition and out of slow start.
    fn rtt_independent(&self) -> bool {
        self.options.rtt_independence && !self.in_slow_start() && self.rounds_after_slow_start >= RTT_TRANSITION_ROUNDS
    }

    /// §2.4.3–2.4.4: the additive increase per round trip, in segments: 1, or (R/25 ms)² for an
    /// RTT-independent flow with an RTT R below the reference.
    fn increase_per_round(&self) -> f64 {
        match self.srtt {
            Some(srtt) if self.rtt_independent() && srtt < REFERENCE_RTT => {
                let ratio = srtt.as_secs_f64() / REFERENCE_RTT.as_secs_f64();
                ratio * ratio
            }
            _ => 1.0,
        }
    }

    /// §2.4.1: cwnd·(1 − α/2), not below two segments, and ssthresh with it; α at least the
    /// classic detector's floor when the fall-back is on.
    fn reduce(&mut self) {
        let mut alpha = self.alpha();
        if self.options.classic_fallback {
            alpha = alpha.max(self.classic.alpha_floor());
        }
        self.cwnd = (self.cwnd * (1.0 - alpha / 2.0)).max((2 * self.mss) as f64);
        self.ssthresh = self.cwnd as u64;
    }

    /// RFC 5681 eq. (4): max(FlightSize / 2, 2·SMSS).
    fn halved(&self, flight_size: u64) -> u64 {
        (flight_size / 2).max(2 * self.mss)
    }
}

impl CongestionController for Prague {
    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        // §2.4.3: only bytes not CE-marked grow the window.
        let mut unmarked = ack.bytes_acked.saturating_sub(ack.ce_marked_bytes) as f64;
        if unmarked <= 0.0 {
            return;
        }
        if self.in_slow_start() {
            // Slow start (§2.4.5): a byte of window per byte acknowledged, up to ssthresh; the
            // rest of the ACK counts toward congestion avoidance.
            let room = self.ssthresh as f64 - self.cwnd;
            let growth = unmarked.min(room);
            self.cwnd += growth;
            unmarked -= growth;
            if unmarked <= 0.0 {
                return;
            }
        }
        // One MSS (scaled, §2.4.4) per cwnd of unmarked bytes acknowledged.
        self.cwnd += self.increase_per_round() * self.mss as f64 * unmarked / self.cwnd;
    }

    fn on_ack_processed(&mut self, ack: &AckSample) {
        if ack.srtt.is_some() {
            self.srtt = ack.srtt;
        }
        if ack.min_rtt.is_some() {
            self.min_rtt = ack.min_rtt;
        }
        if self.options.classic_fallback {
            if let Some(rtt) = ack.rtt {
                self.classic.on_rtt(rtt, self.cwnd / self.mss as f64);
            }
        }
        // §2.4.4: an RTT-independent flow updates α no more often than once per reference RTT.
        let may_close = !self.rtt_independent() || ack.now.saturating_sub(self.last_alpha_update) >= REFERENCE_RTT;
        let slow_start = self.in_slow_start();
        if self.marks.on_ack(ack, may_close) {
            self.last_alpha_update = ack.now;
            if !slow_start {
                self.rounds_after_slow_start += 1;
            }
            // The detection runs from the first CE mark, as α's updates do.
            if self.options.classic_fallback && self.marks.marked() {
                self.classic.on_round(self.min_rtt);
            }
        }
        if self.reduction_due {
            self.reduction_due = false;
            self.reduce();
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, flight_size: u64) {
        // §2.4.2: Reno's halving; a loss supersedes an ECN reduction not yet applied.
        self.reduction_due = false;
        self.ssthresh = self.halved(flight_size);
        self.cwnd = self.ssthresh as f64;
        self.in_recovery = true;
    }

    fn on_recovery_exit(&mut self, _now: SimTime) {
        self.cwnd = self.ssthresh as f64;
        self.in_recovery = false;
    }

    fn on_ecn_congestion_event(&mut self, now: SimTime, _flight_size: u64) -> bool {
        // §2.4.4: an RTT-independent flow reduces at most once per reference RTT.
        if self.rtt_independent() {
            if let Some(last) = self.last_ecn_reduction {
                if now.saturating_sub(last) < REFERENCE_RTT {
                    return false;
                }
            }
        }
        self.last_ecn_reduction = Some(now);
        self.reduction_due = true;
        true
    }

    fn on_retransmission_timeout(&mut self, _now: SimTime, window: u64) {
        // §2.4.2 with RFC 5681 §3.1: ssthresh from the window, cwnd one segment.
        self.reduction_due = false;
        self.ssthresh = self.halved(window);
        self.cwnd = self.mss as f64;
        self.in_recovery = false;
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        // §2.5: 100 % of cwnd/SRTT, 200 % while cwnd < ssthresh/2.
        let srtt = self.srtt?;
        let ratio = if self.cwnd < (self.ssthresh / 2) as f64 { 2.0 } else { 1.0 };
        let bps = ratio * self.cwnd * 8.0 / srtt.as_secs_f64().max(1e-12);
        Some(BitRate((bps as u64).max(1)))
    }

    fn ecn_alpha(&self) -> Option<f64> {
        Some(self.alpha())
    }

    fn state(&self) -> u8 {
        state::window_based(self.in_recovery, self.window(), self.ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{Cubic, RateSample, Reno};

    const MSS: u64 = 1000;

    fn prague(initial_window: u32) -> Prague {
        Prague::new(MSS as u32, initial_window, PragueOptions::default())
    }

    /// A test sender: segments of one MSS numbered from 0, each ACKed alone, with the
    /// delivery-rate bookkeeping a real sender does (C.delivered; P.delivered at send).
    struct Flow {
        prague: Prague,
        delivered: u64,
        sent_with: Vec<u64>,
        now: SimTime,
    }

    impl Flow {
        fn new(prague: Prague) -> Self {
            Flow { prague, delivered: 0, sent_with: Vec::new(), now: SimTime::ZERO }
        }

        fn send(&mut self, segments: usize) {
            for _ in 0..segments {
                self.sent_with.push(self.delivered);
            }
        }

        /// The ACK of segment `k`, CE-marked or not, with an SRTT of `srtt`.
        fn ack(&mut self, k: usize, marked: bool, srtt: SimTime) {
            self.delivered += MSS;
            let rate = RateSample {
                prior_delivered: self.sent_with[k],
                delivered: MSS,
                interval: SimTime::from_ms(1),
                is_app_limited: false,
                rtt: None,
                delivery_rate: None,
            };
            let sample = AckSample {
                now: self.now,
                bytes_acked: MSS,
                delivered: MSS,
                total_delivered: self.delivered,
                rate: Some(rate),
                srtt: Some(srtt),
                ecn_echo: marked,
                ce_marked_bytes: if marked { MSS } else { 0 },
                ..AckSample::default()
            };
            self.prague.on_ack(&sample);
            self.prague.on_ack_processed(&sample);
        }

        /// Rounds of `n` segments, each sent when the last is all acknowledged, `marks[r]` of
        /// round r's ACKs (its 2nd to its (m+1)th) CE-marked; one more round's first ACK closes
        /// the last window. The time advances by `rtt` a round.
        fn rounds(&mut self, n: usize, marks: &[usize], rtt: SimTime) {
            let mut k = self.sent_with.len();
            for &m in marks {
                self.send(n);
                for i in 0..n {
                    self.ack(k + i, i >= 1 && i <= m, rtt);
                }
                k += n;
                self.now += rtt;
            }
            self.send(1);
            self.ack(k, false, rtt);
        }
    }

    #[test]
    fn one_ce_mark_reduces_by_alpha_over_two_where_a_classic_flow_halves() {
        // With α = 1/8 (a path marking an eighth of the bytes), one round trip's ECN feedback
        // takes a sixteenth off Prague's window (§2.4.1); Reno (RFC 3168 §6.1.2) and CUBIC
        // (RFC 9438 §4.6) answer the same feedback by halving and by 30 %.
        let mut p = prague(80);
        p.marks.alpha = 0.125;
        assert!(p.on_ecn_congestion_event(SimTime::ZERO, 80 * MSS));
        p.on_ack_processed(&AckSample::default());
        assert_eq!((p.window(), p.ssthresh()), (75 * MSS, 75 * MSS));
        assert_eq!(p.state(), state::CONGESTION_AVOIDANCE, "no recovery episode follows");
        let mut reno = Reno::new(MSS as u32, 80);
        assert!(reno.on_ecn_congestion_event(SimTime::ZERO, 80 * MSS));
        assert_eq!(reno.window(), 40 * MSS);
        let mut cubic = Cubic::new(&ControllerConfig::new(MSS as u32, 80));
        assert!(cubic.on_ecn_congestion_event(SimTime::ZERO, 80 * MSS));
        assert_eq!(cubic.window(), 56 * MSS);
    }

    #[test]
    fn the_first_mark_halves_alpha_being_held_at_one_until_then() {
        // Rounds without a mark leave α at 1 (the estimator's hold), so the first ECN response
        // is a classic halving; DCTCP's α would have decayed to (15/16)^4 meanwhile.
        let mut f = Flow::new(prague(20));
        f.rounds(20, &[0, 0, 0], SimTime::from_ms(100));
        assert_eq!(f.prague.alpha(), 1.0);
        let before = f.prague.window();
        assert!(f.prague.on_ecn_congestion_event(f.now, before));
        f.prague.on_ack_processed(&AckSample::default());
        assert_eq!(f.prague.window(), before / 2);
    }

    #[test]
    fn alpha_after_a_mark_sequence_is_the_ewma_by_hand() {
        // Windows: {round 0's first ACK: unmarked, α held}, then 10 ACKs per window with 0
        // (held still), 4, 0 and 2 marked: α = 1 until the window with the first mark closes,
        // then α ← 15/16·α + F/16 (g = 1/16, §2.3.2).
        let mut f = Flow::new(prague(10));
        f.rounds(10, &[0, 4, 0, 2], SimTime::from_ms(100));
        let a1: f64 = 15.0 / 16.0 + 0.4 / 16.0; // F = 4/10
        let a2 = a1 * 15.0 / 16.0; // F = 0
        let a3 = a2 * 15.0 / 16.0 + 0.2 / 16.0; // F = 2/10
        assert!((a3 - 0.858_447_265_625).abs() < 1e-12);
        assert!((f.prague.alpha() - a3).abs() < 1e-15, "α = {}, by hand {a3}", f.prague.alpha());
        assert_eq!(f.prague.ecn_alpha(), Some(f.prague.alpha()), "the α the time series records");
    }

    #[test]
    fn pacing_is_always_on_at_cwnd_over_srtt() {
        // §2.5: no rate before an RTT is known; then 200 % of cwnd/SRTT in slow start (cwnd
        // below ssthresh/2) and 100 % after.
        let mut p = prague(10);
        assert_eq!(p.pacing_rate(), None);
        let ack = AckSample { srtt: Some(SimTime::from_ms(10)), ..AckSample::default() };
        p.on_ack_processed(&ack);
        assert_eq!(p.pacing_rate(), Some(BitRate(2 * 10 * MSS * 8 * 100)));
        p.on_congestion_event(SimTime::ZERO, 10 * MSS);
        p.on_recovery_exit(SimTime::ZERO);
        assert_eq!(p.window(), 5 * MSS);
        assert_eq!(p.pacing_rate(), Some(BitRate(5 * MSS * 8 * 100)));
    }

    #[test]
    fn a_loss_halves_as_reno_whatever_alpha_is() {
        // §2.4.2.
        let mut p = prague(40);
        p.marks.alpha = 0.1;
        p.on_congestion_event(SimTime::ZERO, 40 * MSS);
        assert_eq!((p.window(), p.ssthresh(), p.state()), (20 * MSS, 20 * MSS, state::RECOVERY));
        p.on_recovery_exit(SimTime::ZERO);
        assert_eq!(p.state(), state::CONGESTION_AVOIDANCE);
        p.on_retransmission_timeout(SimTime::ZERO, 20 * MSS);
        assert_eq!((p.window(), p.ssthresh()), (MSS, 10 * MSS));
    }

    #[test]
    fn additive_increase_counts_only_unmarked_bytes() {
        // §2.4.3: a window of W acknowledged with a fraction p marked grows by (1 − p) segments.
        let mut p = prague(100);
        p.ssthresh = 100 * MSS;
        for k in 0..100 {
            let marked = k % 4 == 0;
            let ack =
                AckSample { bytes_acked: MSS, ce_marked_bytes: if marked { MSS } else { 0 }, ..AckSample::default() };
            p.on_ack(&ack);
        }
        // 75 unmarked segments, each adding MSS²/cwnd with cwnd from 100 segments up.
        let growth = p.cwnd - (100 * MSS) as f64;
        assert!((growth - 0.75 * MSS as f64).abs() < 0.01 * MSS as f64, "growth {growth}");
    }

    #[test]
    fn a_short_rtt_flow_grows_as_a_25_ms_flow_once_rtt_independent() {
        // §2.4.4: past the transition, a 5 ms flow grows by (5/25)² = 1/25 segment per window
        // acknowledged, one segment per 25 ms as a 25 ms flow would; before it, or without the
        // option, or at 25 ms and more, by one.
        let growth = |options: PragueOptions, rounds: u64, srtt_ms: u64| {
            let mut p = Prague::new(MSS as u32, 100, options);
            p.ssthresh = 100 * MSS;
            p.rounds_after_slow_start = rounds;
            p.srtt = Some(SimTime::from_ms(srtt_ms));
            for _ in 0..100 {
                p.on_ack(&AckSample { bytes_acked: MSS, ..AckSample::default() });
            }
            (p.cwnd - (100 * MSS) as f64) / MSS as f64
        };
        let on = PragueOptions::default();
        let off = PragueOptions { rtt_independence: false, ..on };
        let independent = growth(on, RTT_TRANSITION_ROUNDS, 5);
        assert!((independent - 1.0 / 25.0).abs() < 1e-3, "{independent} segments");
        for (options, rounds, srtt_ms) in [(on, RTT_TRANSITION_ROUNDS - 1, 5), (off, 10_000, 5), (on, 10_000, 25)] {
            let g = growth(options, rounds, srtt_ms);
            assert!((g - 1.0).abs() < 0.01, "{g} segments ({options:?}, round {rounds}, {srtt_ms} ms)");
        }
    }

    #[test]
    fn an_rtt_independent_flow_answers_ecn_at_most_once_per_reference_rtt() {
        let mut p = prague(100);
        p.ssthresh = 50 * MSS;
        p.rounds_after_slow_start = RTT_TRANSITION_ROUNDS;
        assert!(p.on_ecn_congestion_event(SimTime::from_ms(100), 0));
        assert!(!p.on_ecn_congestion_event(SimTime::from_ms(110), 0), "10 ms later");
        assert!(p.on_ecn_congestion_event(SimTime::from_ms(125), 0), "25 ms later");
    }

    #[test]
    fn the_classic_detector_stays_l4s_on_a_shallow_queue_and_turns_classic_on_a_deep_one() {
        let run = |rtts: &dyn Fn(u64) -> SimTime| {
            let mut d = ClassicEcnDetector::default();
            for round in 0..200 {
                for k in 0..50 {
                    d.on_rtt(rtts(round * 50 + k), 50.0);
                }
                d.on_round(Some(SimTime::from_ms(20)));
            }
            d
        };
        // An L4S queue: the RTT within 1 ms of its minimum.
        let l4s = run(&|k| SimTime::from_us(20_000 + (k % 7) * 150));
        assert_eq!(l4s.score(), 0.0);
        assert_eq!(l4s.alpha_floor(), 0.0);
        // A classic AQM: 5 to 25 ms of queue, swinging over a few rounds.
        let classic = run(&|k| SimTime::from_us(25_000 + ((k / 100) % 5) * 5_000));
        assert_eq!(classic.score(), ClassicEcnDetector::C_STICKY);
        assert_eq!(classic.alpha_floor(), 0.625);
    }
}
