//! CUBIC congestion control, RFC 9438, with HyStart++ (RFC 9406) in the initial slow start.
//!
//! Windows in the RFC's equations are in segments and time in seconds; the controller keeps
//! them as f64 and converts the window to bytes. Only IEEE-754 basic operations are used (the
//! cube root is computed by Newton's method, not by the platform's libm), so runs are
//! bit-identical on every machine.

use super::contract::{state, AckSample, CongestionController, ControllerConfig};
use super::delivery_rate::RoundCounter;
use crate::units::SimTime;

/// RFC 9438 §4.6: multiplicative decrease factor β_cubic.
pub const BETA: f64 = 0.7;
/// RFC 9438 §4.2: C, the aggressiveness of the cubic function (segments / s³).
pub const C: f64 = 0.4;
/// RFC 9438 §4.3: α_cubic = 3(1 − β_cubic)/(1 + β_cubic), Reno-friendly additive increase.
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// RFC 9438 §4.2, Figure 1: W_cubic(t) = C·(t − K)³ + W_max (segments, t in seconds).
pub fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 {
    let d = t - k;
    C * d * d * d + w_max
}

/// RFC 9438 §4.2, Figure 2: K = ∛((W_max − cwnd_epoch)/C), the time to climb back to W_max.
pub fn k_for(w_max: f64, cwnd_epoch: f64) -> f64 {
    cube_root((w_max - cwnd_epoch) / C)
}

/// Cube root by Newton's method from an exponent-based first guess: basic operations only, so
/// correctly rounded and reproducible everywhere.
pub fn cube_root(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let a = x.abs();
    // Dividing the biased exponent by three (and re-biasing) gives a guess within a factor 2.
    let mut y = f64::from_bits(a.to_bits() / 3 + (682u64 << 52));
    for _ in 0..8 {
        y = (2.0 * y + a / (y * y)) / 3.0;
    }
    if x < 0.0 {
        -y
    } else {
        y
    }
}

#[derive(Debug, Clone)]
pub struct Cubic {
    mss: f64,
    /// Congestion window, bytes (fractional growth kept).
    cwnd: f64,
    ssthresh: u64,
    /// W_max, segments: the window just before the last reduction (fast convergence aside).
    w_max: f64,
    /// cwnd_prior, segments: the window when ssthresh was last set (RFC 9438 §4.3).
    cwnd_prior: f64,
    /// K, seconds, of the current congestion-avoidance epoch.
    k: f64,
    /// W_est, segments: the window Reno would have (RFC 9438 §4.3).
    w_est: f64,
    /// t_epoch: start of the current congestion-avoidance stage; `None` until its first ACK.
    epoch_start: Option<SimTime>,
    /// The next congestion-avoidance stage follows a timeout (RFC 9438 §4.8).
    after_timeout: bool,
    in_recovery: bool,
    /// HyStart++ state while the initial slow start lasts.
    hystart: Option<HyStart>,
}

impl Cubic {
    /// RFC 3465 §2.2: at most L = 2 SMSS of growth per ACK in standard slow start.
    const ABC_LIMIT_SEGMENTS: f64 = 2.0;

    pub fn new(config: &ControllerConfig) -> Self {
        let mss = config.mss as f64;
        Cubic {
            mss,
            cwnd: config.initial_window_segments as f64 * mss,
            ssthresh: u64::MAX,
            w_max: 0.0,
            cwnd_prior: 0.0,
            k: 0.0,
            w_est: 0.0,
            epoch_start: None,
            after_timeout: false,
            in_recovery: false,
            hystart: config.hystart.then(HyStart::new),
        }
    }

    /// W_max in segments.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    /// K of the current epoch, seconds.
    pub fn k(&self) -> f64 {
        self.k
    }
    /// W_est in segments.
    pub fn w_est(&self) -> f64 {
        self.w_est
    }

    fn segments(&self) -> f64 {
        self.cwnd / self.mss
    }

    fn slow_start(&mut self, ack: &AckSample) {
        let acked = ack.delivered as f64;
        let growth = match self.hystart.as_mut() {
            None => acked.min(Self::ABC_LIMIT_SEGMENTS * self.mss),
            Some(h) => match h.on_ack(ack) {
                // RFC 9406 §4.2: cwnd += min(N, L·SMSS), divided by CSS_GROWTH_DIVISOR in CSS.
                HyStartStep::Grow { divisor } => acked.min(HyStart::L_SEGMENTS * self.mss) / divisor,
                HyStartStep::EnterCongestionAvoidance => {
                    // RFC 9406 §4.2: after CSS_ROUNDS rounds of CSS, ssthresh = cwnd.
                    self.ssthresh = self.cwnd as u64;
                    self.hystart = None;
                    return;
                }
            },
        };
        self.cwnd += growth;
    }

    fn congestion_avoidance(&mut self, ack: &AckSample) {
        let now = ack.now;
        let cwnd = self.segments();
        let start = match self.epoch_start {
            Some(t) => t,
            None => {
                // The first ACK of a congestion-avoidance stage starts the epoch.
                let cwnd_epoch = cwnd;
                if self.after_timeout || self.w_max < cwnd_epoch {
                    // RFC 9438 §4.8 (after a timeout), and when the window is already above
                    // W_max (no loss yet): the curve starts at its plateau, W_max = cwnd_epoch.
                    self.w_max = cwnd_epoch;
                    self.k = 0.0;
                } else {
                    self.k = k_for(self.w_max, cwnd_epoch);
                }
                self.after_timeout = false;
                self.w_est = cwnd_epoch; // RFC 9438 §4.3: W_est starts at cwnd_epoch
                self.epoch_start = Some(now);
                now
            }
        };
        let t = (now - start).as_secs_f64();
        let rtt = ack.srtt.or(ack.rtt).map_or(0.0, |r| r.as_secs_f64());
        // RFC 9438 §4.3's segments_acked counts what this ACK newly delivered (cumulatively acked
        // or SACKed, as Linux's acked_sacked): the ACK that ends a recovery also acknowledges
        // cumulatively every byte SACKed during it, which the window must not grow by again.
        let segments_acked = ack.delivered as f64 / self.mss;

        // RFC 9438 §4.3: W_est grows by α_cubic per window acknowledged; α_cubic becomes 1 once
        // W_est reaches cwnd_prior.
        let alpha = if self.w_est >= self.cwnd_prior { 1.0 } else { ALPHA };
        self.w_est += alpha * segments_acked / cwnd;

        if w_cubic(t, self.k, self.w_max) < self.w_est {
            // Reno-friendly region: cwnd = W_est.
            self.cwnd = self.cwnd.max(self.w_est * self.mss);
            return;
        }
        // RFC 9438 §4.2: target = W_cubic(t + RTT), clamped to [cwnd, 1.5·cwnd]; §4.4/§4.5:
        // cwnd += (target − cwnd)/cwnd per segment acknowledged.
        let target = w_cubic(t + rtt, self.k, self.w_max).clamp(cwnd, 1.5 * cwnd);
        self.cwnd += (target - cwnd) / cwnd * segments_acked * self.mss;
    }

    /// RFC 9438 §4.6 and §4.7: W_max (with fast convergence), cwnd_prior and the new ssthresh.
    fn reduce(&mut self, flight_size: u64) {
        let cwnd = self.segments();
        self.w_max = if cwnd < self.w_max {
            // Fast convergence: release bandwidth for a flow that is losing it.
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.cwnd_prior = cwnd;
        // ssthresh = flight_size · β_cubic, at least 2 segments.
        self.ssthresh = ((flight_size as f64 * BETA).round() as u64).max(2 * self.mss as u64);
        self.epoch_start = None;
        // RFC 9406 §4.2: a loss ends HyStart++ (and it is used for the initial slow start only).
        self.hystart = None;
    }
}

impl CongestionController for Cubic {
    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        if (self.cwnd as u64) < self.ssthresh {
            self.slow_start(ack);
        } else {
            self.congestion_avoidance(ack);
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, flight_size: u64) {
        self.reduce(flight_size);
        self.cwnd = self.ssthresh as f64;
        self.in_recovery = true;
    }

    fn on_recovery_exit(&mut self, _now: SimTime) {
        self.cwnd = self.ssthresh as f64;
        self.in_recovery = false;
    }

    fn on_retransmission_timeout(&mut self, _now: SimTime, window: u64) {
        // RFC 9438 §4.8: Reno's window (1 SMSS) with CUBIC's ssthresh; the next congestion
        // avoidance stage starts its curve at its own cwnd with K = 0.
        self.reduce(window);
        self.cwnd = self.mss;
        self.after_timeout = true;
        self.in_recovery = false;
    }

    fn state(&self) -> u8 {
        match state::window_based(self.in_recovery, self.cwnd as u64, self.ssthresh) {
            state::SLOW_START if self.hystart.as_ref().is_some_and(HyStart::in_css) => state::CONSERVATIVE_SLOW_START,
            s => s,
        }
    }
}

/// What HyStart++ makes of one ACK in slow start.
#[derive(Debug, Clone, Copy, PartialEq)]
enum HyStartStep {
    /// Grow by the slow-start increase divided by `divisor` (1 in slow start, 4 in CSS).
    Grow { divisor: f64 },
    /// CSS lasted CSS_ROUNDS rounds: go to congestion avoidance.
    EnterCongestionAvoidance,
}

/// HyStart++ (RFC 9406 §4): leave slow start when the RTT grows by a threshold within a round,
/// through a few rounds of conservative slow start (CSS) that can undo a spurious exit.
#[derive(Debug, Clone)]
struct HyStart {
    rounds: RoundCounter,
    last_round_min_rtt: Option<SimTime>,
    current_round_min_rtt: Option<SimTime>,
    rtt_sample_count: u32,
    /// cssBaselineMinRtt; `Some` while in CSS.
    css_baseline_min_rtt: Option<SimTime>,
    css_rounds: u32,
}

impl HyStart {
    // RFC 9406 §4.3 constants.
    const MIN_RTT_THRESH: SimTime = SimTime::from_ms(4);
    const MAX_RTT_THRESH: SimTime = SimTime::from_ms(16);
    const MIN_RTT_DIVISOR: u64 = 8;
    const N_RTT_SAMPLE: u32 = 8;
    const CSS_GROWTH_DIVISOR: f64 = 4.0;
    const CSS_ROUNDS: u32 = 5;
    /// L for a sender that does not pace.
    const L_SEGMENTS: f64 = 8.0;

    fn new() -> Self {
        HyStart {
            rounds: RoundCounter::default(),
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_sample_count: 0,
            css_baseline_min_rtt: None,
            css_rounds: 0,
        }
    }

    fn in_css(&self) -> bool {
        self.css_baseline_min_rtt.is_some()
    }

    fn on_ack(&mut self, ack: &AckSample) -> HyStartStep {
        if self.rounds.on_ack(ack.rate.as_ref(), ack.total_delivered) {
            // At the start of each round.
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
            if self.in_css() {
                self.css_rounds += 1;
                if self.css_rounds >= Self::CSS_ROUNDS {
                    return HyStartStep::EnterCongestionAvoidance;
                }
            }
        }
        let divisor = if self.in_css() { Self::CSS_GROWTH_DIVISOR } else { 1.0 };
        if let Some(rtt) = ack.rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        if self.rtt_sample_count >= Self::N_RTT_SAMPLE {
            if let (Some(current), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt) {
                match self.css_baseline_min_rtt {
                    None => {
                        // RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH))
                        let thresh = last.div(Self::MIN_RTT_DIVISOR).clamp(Self::MIN_RTT_THRESH, Self::MAX_RTT_THRESH);
                        if current >= last + thresh {
                            self.css_baseline_min_rtt = Some(current);
                            self.css_rounds = 0;
                        }
                    }
                    Some(baseline) if current < baseline => {
                        // The RTT fell back: the exit was spurious, resume slow start.
                        self.css_baseline_min_rtt = None;
                    }
                    Some(_) => {}
                }
            }
        }
        HyStartStep::Grow { divisor }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::RateSample;

    const MSS: u32 = 1000;
    const SEG: u64 = MSS as u64;

    fn cubic(hystart: bool) -> Cubic {
        Cubic::new(&ControllerConfig { hystart, ..ControllerConfig::new(MSS, 10) })
    }

    /// Drive `c` in congestion avoidance for `seconds`, one ACK per segment, cwnd segments per
    /// RTT evenly spread; returns the window (segments) sampled at each RTT boundary.
    fn run_ca(c: &mut Cubic, start: SimTime, rtt: SimTime, seconds: f64) -> Vec<(f64, f64)> {
        let mut now = start;
        let mut trace = Vec::new();
        while (now - start).as_secs_f64() < seconds {
            let acks = (c.window() / SEG).max(1);
            let gap = rtt.div(acks);
            for _ in 0..acks {
                now += gap;
                let ack = AckSample { now, bytes_acked: SEG, delivered: SEG, srtt: Some(rtt), ..AckSample::default() };
                c.on_ack(&ack);
            }
            trace.push(((now - start).as_secs_f64(), c.window() as f64 / SEG as f64));
        }
        trace
    }

    /// The window when `t` seconds have passed, from a trace.
    fn at(trace: &[(f64, f64)], t: f64) -> f64 {
        trace.iter().find(|(s, _)| *s >= t).expect("trace long enough").1
    }

    fn loss_at(c: &mut Cubic, segments: u64) {
        c.cwnd = (segments * SEG) as f64;
        c.on_congestion_event(SimTime::ZERO, segments * SEG);
        c.on_recovery_exit(SimTime::ZERO);
    }

    #[test]
    fn the_ack_that_ends_a_recovery_grows_the_window_by_what_it_newly_delivered() {
        // Loss at W = 1000 segments: cwnd = 700. During recovery the receiver SACKed the whole
        // window but the hole; the retransmission's ACK then advances the cumulative point by
        // ~1000 segments while delivering one new segment. Growth by the cumulative advance
        // would add (target − cwnd)/cwnd · 1000 segments at once; by delivered data, one
        // segment's share (RFC 9438 §4.4: well under one segment per ACK).
        let mut c = cubic(false);
        loss_at(&mut c, 1000);
        let rtt = SimTime::from_ms(100);
        let exit = AckSample {
            now: SimTime::from_ms(100),
            bytes_acked: 1000 * SEG,
            delivered: SEG,
            srtt: Some(rtt),
            ..AckSample::default()
        };
        c.on_ack(&exit);
        let grown = c.window() as f64 / SEG as f64 - 700.0;
        assert!((0.0..1.0).contains(&grown), "grew {grown} segments on one ACK");
        assert!(c.w_est() - 700.0 < 0.01, "W_est grew by {}", c.w_est() - 700.0);
    }

    #[test]
    fn cube_root_is_exact_on_cubes_and_odd() {
        for x in [1.0, 8.0, 27.0, 1e-9, 75.0, 1e12] {
            let y = cube_root(x);
            assert!((y * y * y - x).abs() <= 1e-12 * x, "{x}: {y}");
        }
        assert_eq!(cube_root(-8.0), -2.0);
    }

    #[test]
    fn window_after_loss_follows_w_cubic() {
        // Loss at W = 100 segments: cwnd = ssthresh = 70, K = ∛(100·0.3/0.4) = ∛75 = 4.217 s.
        let mut c = cubic(false);
        loss_at(&mut c, 100);
        assert_eq!(c.window(), 70 * SEG);
        // A long RTT keeps W_est (the Reno-friendly window) below W_cubic throughout.
        let rtt = SimTime::from_ms(250);
        let trace = run_ca(&mut c, SimTime::from_secs(1), rtt, 8.0);
        assert!(c.w_est() < 0.9 * w_cubic(8.0, c.k(), 100.0));
        let k = cube_root(75.0);
        assert!((c.k() - k).abs() < 1e-12 && (k - 4.2172).abs() < 1e-4, "K = {}", c.k());
        // Each ACK moves cwnd toward the target W_cubic(t + RTT): after t seconds the window lies
        // between the curve at t and one RTT ahead. Check the concave part, the plateau at
        // t = K and the convex part.
        let ahead = rtt.as_secs_f64();
        for t in [1.0, 2.0, k, 6.0, 7.5] {
            let (now, next) = (w_cubic(t, k, 100.0), w_cubic(t + ahead, k, 100.0));
            let measured = at(&trace, t);
            println!("t = {t:.3}: W_cubic(t) = {now:.2}, W_cubic(t + RTT) = {next:.2}, cwnd = {measured:.2}");
            assert!(measured >= 0.995 * now && measured <= 1.005 * next, "t = {t}: {measured}");
        }
        assert!((at(&trace, k) - 100.0).abs() < 1.0, "the window is back at W_max after K seconds");
    }

    #[test]
    fn loss_reduces_by_beta_and_fast_convergence_lowers_w_max() {
        let mut c = cubic(false);
        loss_at(&mut c, 100);
        assert_eq!((c.w_max(), c.ssthresh()), (100.0, 70 * SEG));
        // The next loss comes before the window regained W_max: fast convergence remembers
        // W_max = 90·(1 + β)/2 = 76.5, and ssthresh = 0.7 · 90.
        loss_at(&mut c, 90);
        assert_eq!(c.ssthresh(), 63 * SEG);
        assert!((c.w_max() - 76.5).abs() < 1e-9);
        // A loss above W_max sets W_max to the window itself.
        loss_at(&mut c, 120);
        assert_eq!(c.w_max(), 120.0);
        assert_eq!(c.ssthresh(), 84 * SEG);
    }

    #[test]
    fn small_bdp_runs_in_the_reno_friendly_region() {
        // W_max = 10 segments, RTT 10 ms: W_cubic barely moves in a second (K = 1.96 s), while
        // W_est grows by α_cubic = 0.53 per RTT up to cwnd_prior = 10, then by 1 per RTT.
        let mut c = cubic(false);
        loss_at(&mut c, 10);
        let rtt = SimTime::from_ms(10);
        let trace = run_ca(&mut c, SimTime::from_secs(1), rtt, 1.0);
        let (t, w) = *trace.last().unwrap();
        let rounds_to_prior = (10.0 - 7.0) / ALPHA;
        let expected = 10.0 + (t / 0.01 - rounds_to_prior);
        println!("after {t:.2} s: cwnd {w:.1}, Reno estimate {expected:.1}, W_cubic {:.2}", w_cubic(t, c.k(), 10.0));
        assert!(w > 2.0 * w_cubic(t, c.k(), 10.0));
        assert!((w - expected).abs() / expected < 0.05, "{w} vs {expected}");
        assert!((ALPHA - 0.5294).abs() < 1e-4);
    }

    #[test]
    fn timeout_sets_ssthresh_by_beta_and_restarts_the_curve_at_its_plateau() {
        let mut c = cubic(false);
        c.cwnd = 100.0 * MSS as f64;
        c.on_retransmission_timeout(SimTime::ZERO, 100 * SEG);
        assert_eq!((c.window(), c.ssthresh()), (SEG, 70 * SEG));
        c.cwnd = 70.0 * MSS as f64;
        run_ca(&mut c, SimTime::from_secs(1), SimTime::from_ms(100), 0.2);
        assert_eq!((c.k(), c.w_max()), (0.0, 70.0));
    }

    /// Slow start with HyStart++: `rounds` rounds, each a window of ACKs with the given RTT.
    fn slow_start_rounds(c: &mut Cubic, rtts_ms: &[u64]) -> Vec<u8> {
        let mut total = 0;
        let mut states = Vec::new();
        let mut now = SimTime::ZERO;
        for &rtt in rtts_ms {
            let round_start = total;
            for _ in 0..(c.window() / SEG) {
                total += SEG;
                now += SimTime::from_us(100);
                let rate = RateSample {
                    prior_delivered: round_start,
                    delivered: SEG,
                    interval: SimTime::from_ms(rtt),
                    is_app_limited: false,
                    rtt: Some(SimTime::from_ms(rtt)),
                    delivery_rate: None,
                };
                let ack = AckSample {
                    now,
                    bytes_acked: SEG,
                    delivered: SEG,
                    rtt: Some(SimTime::from_ms(rtt)),
                    total_delivered: total,
                    rate: Some(rate),
                    ..AckSample::default()
                };
                c.on_ack(&ack);
            }
            states.push(c.state());
        }
        states
    }

    #[test]
    fn hystart_leaves_slow_start_when_the_rtt_rises_then_enters_avoidance_after_css_rounds() {
        let mut c = cubic(true);
        // Three rounds at 50 ms, then the queue builds: 60 ms ≥ 50 + max(4, min(50/8, 16)) ms.
        let states = slow_start_rounds(&mut c, &[50, 50, 50, 60, 60, 60, 60, 60, 60, 60]);
        use state::*;
        assert_eq!(&states[..3], &[SLOW_START; 3]);
        assert_eq!(states[3], CONSERVATIVE_SLOW_START);
        // CSS_ROUNDS = 5 rounds later, ssthresh = cwnd: congestion avoidance.
        assert_eq!(&states[4..8], &[CONSERVATIVE_SLOW_START; 4]);
        assert_eq!(states[8], CONGESTION_AVOIDANCE);
        assert!(c.ssthresh() < u64::MAX && c.ssthresh() <= c.window());
    }

    #[test]
    fn hystart_resumes_slow_start_when_the_rtt_falls_back() {
        let mut c = cubic(true);
        let states = slow_start_rounds(&mut c, &[50, 50, 60, 45, 45]);
        assert_eq!(states[2], state::CONSERVATIVE_SLOW_START);
        assert_eq!(states[3], state::SLOW_START);
    }

    #[test]
    fn without_hystart_slow_start_ignores_the_rtt() {
        let mut c = cubic(false);
        let states = slow_start_rounds(&mut c, &[50, 50, 80, 80, 80]);
        assert!(states.iter().all(|&s| s == state::SLOW_START));
        assert_eq!(c.window(), 10 * 32 * SEG, "five doublings");
    }
}
