//! Data Center TCP, RFC 8257 (Alizadeh et al., SIGCOMM 2010): the sender estimates the fraction
//! of its bytes that met congestion from ECN marks and backs off in proportion to it, instead of
//! halving whatever the extent of the congestion.
//!
//! - §3.3: the sender counts the bytes acknowledged and, of those, the bytes the receiver echoed
//!   as CE-marked ([`AckSample::ce_marked_bytes`], exact with the per-packet echo of RFC 8257
//!   §3.2, `tcp.ecn = "dctcp"`), over an observation window of about one round trip: from the
//!   ACK of the first byte sent after the previous window ended. When a window ends,
//!   F = BytesMarked / BytesAcked and α ← (1 − g)·α + g·F, with g = 1/16 (the RFC's suggested
//!   value; Linux's `dctcp_shift_g` = 4) and α = 1 initially (RFC 8257 §3.3 and Linux's
//!   `dctcp_alpha_on_init`: a new flow backs off as standard TCP would until it has measured).
//! - §3.3 step 8: on ECN feedback, at most once per window of data as RFC 3168 §6.1.2 (the
//!   sender decides when), cwnd ← cwnd·(1 − α/2), and ssthresh with it. The window falls at
//!   once, as the default ECN response does for the other controllers, rather than over a round
//!   trip as Linux's CWR state lets it.
//! - §3.4: a loss is answered as standard TCP does (Reno's halving, RFC 5681); growth is Reno's
//!   (slow start and congestion avoidance with RFC 3465 byte counting).
//!
//! The RFC processes each ACK in order: count, close the window and update α, then respond to
//! its ECN-Echo. The sender reports the ECN-Echo ([`CongestionController::on_ecn_congestion_event`])
//! before it hands the ACK's sample over ([`CongestionController::on_ack_processed`]), so the
//! reduction is held until the sample has been counted, and applied with the α of a window that
//! this very ACK may have closed; no data leaves in between.
//!
//! DCTCP needs accurate feedback: with RFC 3168's echo (ECE on every ACK from a CE arrival until
//! CWR) BytesMarked counts whole windows, which the spec's checks refuse (`validate.rs`); over
//! QUIC the ACK frames' CE counts serve, turned into bytes (`quic.ecn = "l4s"`, `quic/ecn.rs`).

use super::contract::{AckSample, CongestionController, ControllerConfig};
use super::delivery_rate::RoundCounter;
use super::reno::Reno;
use crate::units::SimTime;

/// RFC 8257 §3.3: the estimation gain g = 1/16.
pub const G: f64 = 1.0 / 16.0;

/// RFC 8257 §3.3: α before the first window has been measured.
pub const INITIAL_ALPHA: f64 = 1.0;

/// RFC 8257 §3.3's estimate of the fraction of bytes that met congestion, DCTCP.Alpha: the
/// bytes acknowledged and, of them, the bytes echoed CE-marked, counted over observation windows
/// of about one round trip; at each window's end α ← (1 − g)·α + g·F. DCTCP and Prague (whose
/// draft, §2.3.2, takes the estimator over from DCTCP) share it.
#[derive(Debug, Clone)]
pub struct MarkedFraction {
    /// DCTCP.Alpha.
    pub(super) alpha: f64,
    /// BytesAcked and BytesMarked of the current observation window.
    window_acked: u64,
    window_marked: u64,
    /// Observation windows: one ends at the ACK of the first byte sent after the last one ended
    /// (RFC 8257's WindowEnd = SND.NXT, counted in delivered bytes).
    rounds: RoundCounter,
    /// The round trip of the current window is over; the window closes as soon as the owner
    /// lets it (Prague's reduced RTT-dependence holds it open for its reference RTT).
    round_over: bool,
    /// Windows closed so far.
    closed: u64,
    /// α is held at its initial value until the first CE mark is counted (Prague).
    hold_until_marked: bool,
    marked_ever: bool,
}

impl Default for MarkedFraction {
    fn default() -> Self {
        MarkedFraction {
            alpha: INITIAL_ALPHA,
            window_acked: 0,
            window_marked: 0,
            rounds: RoundCounter::default(),
            round_over: false,
            closed: 0,
            hold_until_marked: false,
            marked_ever: false,
        }
    }
}

impl MarkedFraction {
    /// The estimator with α held at 1 until the first CE mark: a flow whose path has shown no
    /// ECN-capable AQM yet answers its first mark as a classic flow would.
    pub fn held_until_first_mark() -> Self {
        MarkedFraction { hold_until_marked: true, ..Self::default() }
    }

    /// DCTCP.Alpha now.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Observation windows closed so far.
    pub fn windows_observed(&self) -> u64 {
        self.closed
    }

    /// Whether any CE-marked byte has been counted.
    pub fn marked(&self) -> bool {
        self.marked_ever
    }

    /// Count one ACK's sample (RFC 8257 §3.3 steps 1 and 2; SACKed bytes are not counted) and
    /// close the window if its round trip is over and `may_close` (step 3: the window ends with
    /// the ACK of data sent after it began). Returns whether the window closed.
    pub fn on_ack(&mut self, ack: &AckSample, may_close: bool) -> bool {
        self.window_acked += ack.bytes_acked;
        self.window_marked += ack.ce_marked_bytes;
        self.marked_ever |= ack.ce_marked_bytes > 0;
        if self.rounds.on_ack(ack.rate.as_ref(), ack.total_delivered) {
            self.round_over = true;
        }
        if !(self.round_over && may_close) {
            return false;
        }
        // Steps 6 and 7: the next window ends with the ACK of data sent from now on.
        self.rounds.restart(ack.total_delivered);
        self.round_over = false;
        self.closed += 1;
        if self.window_acked > 0 && (self.marked_ever || !self.hold_until_marked) {
            // Steps 4 and 5: F = BytesMarked / BytesAcked; α = α·(1 − g) + g·F.
            let fraction = self.window_marked as f64 / self.window_acked as f64;
            self.alpha = self.alpha * (1.0 - G) + G * fraction;
        }
        self.window_acked = 0;
        self.window_marked = 0;
        true
    }
}

#[derive(Debug, Clone)]
pub struct Dctcp {
    /// Slow start, congestion avoidance and the loss response (RFC 8257 §3.4: standard TCP's).
    reno: Reno,
    /// DCTCP.Alpha and its observation windows.
    marks: MarkedFraction,
    /// ECN feedback arrived on the ACK being processed: reduce once its sample is counted.
    reduction_due: bool,
}

impl Dctcp {
    pub fn new(mss: u32, initial_window_segments: u32) -> Self {
        Self::with_reno(Reno::new(mss, initial_window_segments))
    }

    /// Built from the flow's configuration: Reno's growth counts acknowledgements as
    /// `ca_increase` says (RFC 3465 bytes by default).
    pub fn from_config(config: &ControllerConfig) -> Self {
        Self::with_reno(Reno::new(config.mss, config.initial_window_segments).counting(config.ca_increase))
    }

    fn with_reno(reno: Reno) -> Self {
        Dctcp { reno, marks: MarkedFraction::default(), reduction_due: false }
    }

    /// DCTCP.Alpha now.
    pub fn alpha(&self) -> f64 {
        self.marks.alpha()
    }

    /// Observation windows closed so far.
    pub fn windows_observed(&self) -> u64 {
        self.marks.windows_observed()
    }

    /// RFC 8257 §3.3 step 8: cwnd = cwnd·(1 − DCTCP.Alpha/2), not below two segments (as
    /// RFC 5681's ssthresh floor), and ssthresh = cwnd (RFC 3168 §6.1.2's reduction of both).
    fn reduce(&mut self) {
        let mss = self.reno.mss();
        let cwnd = ((self.reno.window() as f64 * (1.0 - self.alpha() / 2.0)) as u64).max(2 * mss);
        self.reno.set_window(cwnd, cwnd);
    }
}

impl CongestionController for Dctcp {
    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, ack: &AckSample) {
        self.reno.on_ack(ack);
    }

    fn on_ack_processed(&mut self, ack: &AckSample) {
        // RFC 8257 §3.3 steps 1 to 7: count, and close the window at the end of its round trip.
        self.marks.on_ack(ack, true);
        if self.reduction_due {
            self.reduction_due = false;
            self.reduce();
        }
    }

    fn on_congestion_event(&mut self, now: SimTime, flight_size: u64) {
        // A loss supersedes an ECN reduction not yet applied: one response per window.
        self.reduction_due = false;
        self.reno.on_congestion_event(now, flight_size);
    }

    fn on_recovery_exit(&mut self, now: SimTime) {
        self.reno.on_recovery_exit(now);
    }

    fn on_ecn_congestion_event(&mut self, _now: SimTime, _flight_size: u64) -> bool {
        self.reduction_due = true;
        true
    }

    fn on_retransmission_timeout(&mut self, now: SimTime, window: u64) {
        self.reduction_due = false;
        self.reno.on_retransmission_timeout(now, window);
    }

    fn on_repeated_timeout(&mut self, now: SimTime) {
        self.reno.on_repeated_timeout(now);
    }

    fn ecn_alpha(&self) -> Option<f64> {
        Some(self.alpha())
    }

    fn state(&self) -> u8 {
        self.reno.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::contract::state;
    use crate::cc::RateSample;

    const MSS: u64 = 1000;

    /// A test sender: segments numbered from 0, each of one MSS, ACKed one at a time, with the
    /// delivery-rate bookkeeping a real sender does (C.delivered; P.delivered at send).
    struct Flow {
        dctcp: Dctcp,
        delivered: u64,
        /// C.delivered at the send of each segment.
        sent_with: Vec<u64>,
    }

    impl Flow {
        fn new(initial_window: u32) -> Self {
            Flow { dctcp: Dctcp::new(MSS as u32, initial_window), delivered: 0, sent_with: Vec::new() }
        }

        fn send(&mut self, segments: usize) {
            for _ in 0..segments {
                self.sent_with.push(self.delivered);
            }
        }

        /// The ACK of segment `k`, CE-marked or not; `ece_response` if the sender calls it a
        /// congestion signal to respond to (first ECE of its window).
        fn ack(&mut self, k: usize, marked: bool, ece_response: bool) {
            if ece_response {
                assert!(self.dctcp.on_ecn_congestion_event(SimTime::ZERO, 0));
            }
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
                bytes_acked: MSS,
                delivered: MSS,
                total_delivered: self.delivered,
                rate: Some(rate),
                ecn_echo: marked,
                ce_marked_bytes: if marked { MSS } else { 0 },
                ..AckSample::default()
            };
            if !ece_response {
                self.dctcp.on_ack(&sample);
            }
            self.dctcp.on_ack_processed(&sample);
        }
    }

    /// Rounds of `n` segments, each sent once the previous round is all acknowledged; round r
    /// has `marks[r]` CE-marked segments among its 2nd to nth (its first never), and one more
    /// round's first ACK closes the last window. A window ends at the ACK of the first segment
    /// sent after the previous window ended, that ACK counted in it (RFC 8257 §3.3 steps 1 to 3):
    /// the first window is round 0's first ACK alone (nothing was in flight before), and window
    /// r + 1 is round r's last n − 1 ACKs with round r + 1's first: n segments, marks[r] marked.
    fn rounds(n: usize, marks: &[usize]) -> Flow {
        let mut f = Flow::new(n as u32);
        let mut k = 0;
        for &m in marks {
            f.send(n);
            for i in 0..n {
                f.ack(k + i, i >= 1 && i <= m, false);
            }
            k += n;
        }
        f.send(1);
        f.ack(k, false, false);
        f
    }

    #[test]
    fn alpha_is_the_ewma_of_the_marked_fraction_by_hand() {
        // Windows: {1 ACK, unmarked}, then 10 ACKs with 0, 9, 5 and 2 marked.
        // α0 = 1 (RFC 8257 §3.3's initial value); α ← 15/16·α + F/16 per window:
        let a1: f64 = 15.0 / 16.0; // F = 0
        let a2 = a1 * 15.0 / 16.0; // F = 0
        let a3 = a2 * 15.0 / 16.0 + 0.9 / 16.0; // F = 9/10
        let a4 = a3 * 15.0 / 16.0 + 0.5 / 16.0; // F = 5/10
        let a5 = a4 * 15.0 / 16.0 + 0.2 / 16.0; // F = 2/10
                                                // 0.9375, 0.87890625, 0.880224609375, 0.856460571289, 0.815431785583
        assert!((a5 - 0.815_431_785_583).abs() < 1e-12);
        let f = rounds(10, &[0, 9, 5, 2]);
        assert_eq!(f.dctcp.windows_observed(), 5);
        assert!((f.dctcp.alpha() - a5).abs() < 1e-15, "α = {}, by hand {a5}", f.dctcp.alpha());
    }

    #[test]
    fn marked_windows_pull_alpha_toward_one_and_unmarked_ones_decay_it() {
        // Windows: {1 ACK, unmarked}, then three of 2 ACKs, 1 marked: F = 1/2.
        let f = rounds(2, &[1, 1, 1]);
        let mut alpha = 15.0 / 16.0;
        for _ in 0..3 {
            alpha = alpha * 15.0 / 16.0 + 0.5 / 16.0;
        }
        assert!((f.dctcp.alpha() - alpha).abs() < 1e-15);
        // Sixteen windows without a mark: α = (15/16)^16.
        let f = rounds(4, &[0; 15]);
        assert_eq!(f.dctcp.windows_observed(), 16);
        assert!((f.dctcp.alpha() - (15.0f64 / 16.0).powi(16)).abs() < 1e-15);
    }

    #[test]
    fn an_ecn_response_scales_the_window_by_one_minus_alpha_over_two() {
        // α = 1 before anything is measured: the first response halves (as RFC 3168 would).
        let mut d = Dctcp::new(MSS as u32, 40);
        assert!(d.on_ecn_congestion_event(SimTime::ZERO, 40 * MSS));
        d.on_ack_processed(&AckSample::default());
        assert_eq!((d.window(), d.ssthresh()), (20 * MSS, 20 * MSS));
        assert_eq!(d.state(), state::CONGESTION_AVOIDANCE);
        // With α = 1/4 the window loses an eighth.
        let mut d = Dctcp::new(MSS as u32, 80);
        d.marks.alpha = 0.25;
        assert_eq!(d.ecn_alpha(), Some(0.25), "the α the time series records");
        d.on_ecn_congestion_event(SimTime::ZERO, 80 * MSS);
        d.on_ack_processed(&AckSample::default());
        assert_eq!(d.window(), 70 * MSS);
        // And never below two segments.
        let mut d = Dctcp::new(MSS as u32, 2);
        d.on_ecn_congestion_event(SimTime::ZERO, 2 * MSS);
        d.on_ack_processed(&AckSample::default());
        assert_eq!(d.window(), 2 * MSS);
    }

    #[test]
    fn the_reduction_uses_the_alpha_of_the_window_its_ack_closes() {
        // Round 0: 20 segments, none marked. Round 1's first ACK closes the window of round 0's
        // last 19 ACKs and itself; it is marked and carries the ECN-Echo the sender responds to.
        // The window it closes has F = 1/20, and the response applies that α, not the one
        // before: α = (15/16)² + 1/16·1/20 (the first window, round 0's first ACK, had F = 0).
        let mut f = Flow::new(20);
        f.send(20);
        for i in 0..20 {
            f.ack(i, false, false);
        }
        let before = f.dctcp.window();
        f.send(1);
        f.ack(20, true, true);
        let alpha = (15.0f64 / 16.0) * (15.0 / 16.0) + (1.0 / 20.0) / 16.0;
        assert!((f.dctcp.alpha() - alpha).abs() < 1e-15);
        assert_eq!(f.dctcp.window(), (before as f64 * (1.0 - alpha / 2.0)) as u64);
        assert_eq!(f.dctcp.ssthresh(), f.dctcp.window());
    }

    #[test]
    fn a_loss_halves_as_reno_whatever_alpha_is() {
        let mut d = Dctcp::new(MSS as u32, 40);
        d.marks.alpha = 0.1;
        d.on_congestion_event(SimTime::ZERO, 40 * MSS);
        assert_eq!((d.window(), d.ssthresh(), d.state()), (20 * MSS, 20 * MSS, state::RECOVERY));
        d.on_recovery_exit(SimTime::ZERO);
        assert_eq!(d.state(), state::CONGESTION_AVOIDANCE);
        d.on_retransmission_timeout(SimTime::ZERO, 20 * MSS);
        assert_eq!((d.window(), d.ssthresh()), (MSS, 10 * MSS));
    }

    #[test]
    fn growth_is_renos() {
        let mut d = Dctcp::new(MSS as u32, 10);
        let mut r = Reno::new(MSS as u32, 10);
        for _ in 0..100 {
            let ack = AckSample { bytes_acked: MSS, delivered: MSS, ..AckSample::default() };
            d.on_ack(&ack);
            r.on_ack(&ack);
        }
        assert_eq!(d.window(), r.window());
    }
}
