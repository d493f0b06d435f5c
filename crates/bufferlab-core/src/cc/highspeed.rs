//! HighSpeed TCP, RFC 3649: AIMD whose increase a(w) and decrease b(w) depend on the window w
//! (segments). At or below Low_Window it is Reno (a = 1, b = 1/2); above, the response function
//! w = 0.12/p^0.835 lets large windows grow faster and back off less.
//!
//! Slow start, loss recovery and the timeout are Reno's (RFC 3649 changes congestion avoidance
//! and the decrease only). The decrease uses b(w) of the window last reached in congestion
//! avoidance: the response function describes congestion avoidance, and a window that slow start
//! doubled past the path's capacity says nothing about the path. So a loss that ends the first
//! slow start halves the window, as in Linux's tcp_highspeed (seed 004's testbed), which moves
//! along the RFC's table only in congestion avoidance. Backing off by b(w) of an overshoot
//! instead (0.28 at 2400 segments) leaves the window above capacity: every retransmission meets a
//! full queue, and timeouts follow one another.

use super::contract::{state, AckSample, CongestionController};
use crate::units::SimTime;

/// RFC 3649 §5 parameters.
pub const LOW_WINDOW: f64 = 38.0;
pub const HIGH_WINDOW: f64 = 83_000.0;
pub const HIGH_P: f64 = 1e-7;
pub const HIGH_DECREASE: f64 = 0.1;

/// Decrease factor b(w) (RFC 3649 §5): 1/2 at Low_Window falling linearly in log w to
/// High_Decrease at High_Window,
/// b(w) = (High_Decrease − 0.5)·(log w − log Low_Window)/(log High_Window − log Low_Window) + 0.5.
pub fn b(w: f64) -> f64 {
    if w <= LOW_WINDOW {
        return 0.5;
    }
    (HIGH_DECREASE - 0.5) * (w.ln() - LOW_WINDOW.ln()) / (HIGH_WINDOW.ln() - LOW_WINDOW.ln()) + 0.5
}

/// The loss rate at which the response function gives window w: p(w) = 0.078/w^1.2 (RFC 3649
/// §5, inverting w = 0.12/p^0.835; the RFC's table in Appendix B is computed with it).
pub fn p(w: f64) -> f64 {
    0.078 / w.powf(1.2)
}

/// Increase a(w) in segments per RTT (RFC 3649 §5): a(w) = w²·p(w)·2·b(w)/(2 − b(w)), the AIMD
/// increase that, with decrease b(w), keeps the average window at w under loss rate p(w). At or
/// below Low_Window it is Reno's 1; just above, where the formula dips below 1, it stays 1 as in
/// the RFC's table.
pub fn a(w: f64) -> f64 {
    if w <= LOW_WINDOW {
        return 1.0;
    }
    let b = b(w);
    (w * w * p(w) * 2.0 * b / (2.0 - b)).max(1.0)
}

#[derive(Debug, Clone)]
pub struct HighSpeed {
    mss: f64,
    /// Congestion window, bytes (fractional growth kept).
    cwnd: f64,
    ssthresh: u64,
    in_recovery: bool,
    /// The window (segments) last reached in congestion avoidance: the w of the decrease b(w).
    /// Zero before congestion avoidance first runs (b = 1/2).
    avoidance_window: u64,
    /// a(w) and b(w) for the whole-segment window they were computed at.
    cached: (u64, f64, f64),
}

impl HighSpeed {
    /// RFC 3465 §2.2: during slow start, at most L = 2 SMSS of growth per ACK.
    const ABC_LIMIT_SEGMENTS: f64 = 2.0;

    pub fn new(mss: u32, initial_window_segments: u32) -> Self {
        let mss = mss as f64;
        HighSpeed {
            mss,
            cwnd: initial_window_segments as f64 * mss,
            ssthresh: u64::MAX,
            in_recovery: false,
            avoidance_window: 0,
            cached: (0, 1.0, 0.5),
        }
    }

    /// a(w) at the current window, recomputed only when its whole segments change.
    fn increase(&mut self) -> f64 {
        let w = (self.cwnd / self.mss) as u64;
        if self.cached.0 != w {
            self.cached = (w, a(w as f64), b(w as f64));
        }
        self.cached.1
    }

    /// ssthresh = (1 − b(w))·FlightSize, at least 2 segments (b(w) = 1/2 is RFC 5681 eq. (4)),
    /// with w the window last reached in congestion avoidance.
    fn reduced(&self, flight_size: u64) -> u64 {
        let b = b(self.avoidance_window as f64);
        (((1.0 - b) * flight_size as f64) as u64).max(2 * self.mss as u64)
    }
}

impl CongestionController for HighSpeed {
    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        // Growth per segment newly delivered (cumulatively acked or SACKed), not per byte the
        // cumulative point advanced: the ACK that ends a recovery covers every byte SACKed during
        // it, which would otherwise give a(w) segments of growth at once.
        let acked = ack.delivered as f64;
        if (self.cwnd as u64) < self.ssthresh {
            // RFC 5681 slow start with appropriate byte counting (RFC 3465).
            self.cwnd += acked.min(Self::ABC_LIMIT_SEGMENTS * self.mss);
            return;
        }
        // RFC 3649 §5: w += a(w)/w per segment acknowledged, i.e. a(w) segments per RTT.
        let a = self.increase();
        self.cwnd += a * self.mss * acked / self.cwnd;
        self.avoidance_window = (self.cwnd / self.mss) as u64;
    }

    fn on_congestion_event(&mut self, _now: SimTime, flight_size: u64) {
        // RFC 3649 §5: w = (1 − b(w))·w on a congestion event.
        self.ssthresh = self.reduced(flight_size);
        self.cwnd = self.ssthresh as f64;
        self.in_recovery = true;
    }

    fn on_recovery_exit(&mut self, _now: SimTime) {
        self.cwnd = self.ssthresh as f64;
        self.in_recovery = false;
    }

    fn on_retransmission_timeout(&mut self, _now: SimTime, window: u64) {
        self.ssthresh = self.reduced(window);
        self.cwnd = self.mss;
        self.in_recovery = false;
    }

    fn state(&self) -> u8 {
        state::window_based(self.in_recovery, self.cwnd as u64, self.ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of RFC 3649 Appendix B: the window w at which a(w) reaches each whole value, and b(w)
    /// there, to two decimals.
    const RFC_TABLE: [(f64, f64, f64); 12] = [
        (38.0, 1.0, 0.50),
        (118.0, 2.0, 0.44),
        (221.0, 3.0, 0.41),
        (347.0, 4.0, 0.38),
        (495.0, 5.0, 0.37),
        (1058.0, 8.0, 0.33),
        (1529.0, 10.0, 0.31),
        (5036.0, 20.0, 0.25),
        (10661.0, 30.0, 0.21),
        (79517.0, 70.0, 0.10),
        (84035.0, 71.0, 0.10),
        (89053.0, 72.0, 0.10),
    ];

    #[test]
    fn a_and_b_match_the_rfc_table() {
        for (w, a_rfc, b_rfc) in RFC_TABLE {
            let (a_w, b_w) = (a(w), b(w));
            println!("w = {w}: a = {a_w:.3} (RFC {a_rfc}), b = {b_w:.4} (RFC {b_rfc})");
            assert!((a_w - a_rfc).abs() < 0.1, "a({w}) = {a_w}, RFC table {a_rfc}");
            assert!((b_w - b_rfc).abs() <= 0.005 + 1e-9, "b({w}) = {b_w}, RFC table {b_rfc}");
        }
    }

    #[test]
    fn boundaries_are_reno_at_low_window_and_high_decrease_at_high_window() {
        assert_eq!((a(LOW_WINDOW), b(LOW_WINDOW)), (1.0, 0.5));
        assert_eq!((a(10.0), b(10.0)), (1.0, 0.5));
        assert!((b(HIGH_WINDOW) - HIGH_DECREASE).abs() < 1e-12);
        // Between the table's rows for a = 70 (w = 79517) and a = 71 (w = 84035).
        assert!((70.0..71.0).contains(&a(HIGH_WINDOW)), "a(83000) = {}", a(HIGH_WINDOW));
        // p(w) is the response function w = 0.12/p^0.835 inverted: at High_Window it gives
        // High_P within the rounding of the RFC's constants.
        assert!((p(HIGH_WINDOW) / HIGH_P - 1.0).abs() < 0.03);
    }

    #[test]
    fn below_low_window_a_loss_halves_the_window() {
        let mut h = HighSpeed::new(1000, 30);
        h.on_congestion_event(SimTime::ZERO, 30_000);
        assert_eq!(h.ssthresh(), 15_000);
        h.on_recovery_exit(SimTime::ZERO);
        assert_eq!(h.window(), 15_000);
    }

    #[test]
    fn large_window_backs_off_by_b_and_grows_by_a_per_rtt() {
        let mut h = HighSpeed::new(1000, 10);
        // w = 10661 segments reached in congestion avoidance: a = 30, b = 0.21.
        h.cwnd = 10_661_000.0;
        h.avoidance_window = 10_661;
        h.on_congestion_event(SimTime::ZERO, 10_661_000);
        let expected = (1.0 - b(10661.0)) * 10_661_000.0;
        assert!((h.ssthresh() as f64 - expected).abs() <= 1.0);
        h.on_recovery_exit(SimTime::ZERO);
        let w0 = h.window() as f64 / 1000.0;
        // One RTT: w ACKs of one segment each.
        for _ in 0..w0 as u64 {
            h.on_ack(&AckSample { bytes_acked: 1000, delivered: 1000, ..AckSample::default() });
        }
        let grown = h.window() as f64 / 1000.0 - w0;
        assert!((grown - a(w0)).abs() < 0.05 * a(w0), "grew {grown}, a(w) = {}", a(w0));
    }

    #[test]
    fn a_loss_that_ends_slow_start_halves_however_large_the_window() {
        let mut h = HighSpeed::new(1000, 10);
        for _ in 0..2390 {
            h.on_ack(&AckSample { bytes_acked: 1000, delivered: 1000, ..AckSample::default() });
        }
        assert_eq!(h.window(), 2_400_000, "slow start");
        // b(2400) would be 0.28; the overshoot of slow start is no window of the path: b = 1/2.
        h.on_congestion_event(SimTime::ZERO, 2_400_000);
        assert_eq!(h.ssthresh(), 1_200_000);
        h.on_recovery_exit(SimTime::ZERO);
        h.on_ack(&AckSample { bytes_acked: 1000, delivered: 1000, ..AckSample::default() });
        // Now in congestion avoidance at 1200 segments: the next loss backs off by b(1200) only.
        let w = h.window();
        h.on_congestion_event(SimTime::ZERO, w);
        let expected = (1.0 - b((w / 1000) as f64)) * w as f64;
        assert!((h.ssthresh() as f64 - expected).abs() <= 1.0, "{} vs {expected}", h.ssthresh());
    }

    #[test]
    fn the_ack_that_ends_a_recovery_grows_the_window_by_what_it_newly_delivered() {
        // At w = 10661 segments a(w) = 30 segments per RTT: the exit ACK of a recovery that
        // SACKed the whole window advances the cumulative point by w segments but delivers one;
        // it earns a(w)/w of a segment (RFC 3649 §5), not a whole RTT's a(w).
        let mut h = HighSpeed::new(1000, 10);
        h.cwnd = 10_661_000.0;
        h.avoidance_window = 10_661;
        h.on_congestion_event(SimTime::ZERO, 10_661_000);
        h.on_recovery_exit(SimTime::ZERO);
        let w0 = h.window();
        h.on_ack(&AckSample { bytes_acked: 10_661_000, delivered: 1000, ..AckSample::default() });
        assert!(h.window() - w0 < 1000, "grew {} bytes on one ACK", h.window() - w0);
    }

    #[test]
    fn below_low_window_growth_is_one_segment_per_rtt() {
        let mut h = HighSpeed::new(1000, 10);
        h.on_congestion_event(SimTime::ZERO, 40_000);
        h.on_recovery_exit(SimTime::ZERO);
        for _ in 0..20 {
            h.on_ack(&AckSample { bytes_acked: 1000, delivered: 1000, ..AckSample::default() });
        }
        assert!((h.window() as f64 - 21_000.0).abs() < 50.0, "{}", h.window());
    }
}
