//! TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8), 1995; SIGCOMM 1994): the sender compares the rate its window
//! would give on an empty path with the rate it gets, and keeps the difference, the data it has
//! queued in the network, between two small thresholds.
//!
//! Congestion avoidance, once per round trip:
//! - BaseRTT is the smallest RTT measured over the connection: the path's propagation delay
//!   when the flow once found the queues empty;
//! - Expected = WindowSize / BaseRTT, the rate without queueing; Actual = WindowSize / RTT with
//!   RTT the smallest sample of the last round trip (its packets' queueing, not one packet's);
//! - Diff = Expected − Actual, taken here in segments: Diff·BaseRTT = cwnd·(RTT − BaseRTT)/RTT,
//!   the segments the flow keeps in queues;
//! - if Diff < α the window grows by one segment over the next round trip, if Diff > β it
//!   shrinks by one, in between it stays. α = 2 and β = 4 segments (the paper's Vegas-2,4 and
//!   Linux's `tcp_vegas` defaults): N flows sharing a bottleneck queue 2N to 4N packets.
//!
//! Slow start grows the window exponentially only every other round trip, holding it in between
//! so that a valid comparison can be made: the flight sent in a held round leaves at the ACK
//! rate, at one window, and the RTTs of its ACKs (in the round after, which grows again) measure
//! the queue that window keeps. (The flight of a growing round leaves two segments per ACK, and
//! its first segments find the queue empty: the minimum RTT of its ACKs says nothing.) Slow
//! start ends when the held window's Diff exceeds γ = 1 segment, the window set to what the
//! measured rate carries over BaseRTT plus one segment, min(cwnd, W·BaseRTT/RTT + 1), as
//! Linux's `tcp_vegas` leaves slow start. The paper compares once per round trip; here the
//! comparison is made as each ACK of the growing round arrives (from its third RTT sample on),
//! since by the round's end its growth has already sent half again or twice the held window,
//! which through a buffer of about a BDP overflows it when flows start together.
//!
//! Loss is answered as Reno (RFC 5681: halve on fast retransmit, one segment after a timeout),
//! as the paper's Vegas keeps Reno's decrease. A round with fewer than three RTT samples (a
//! window of a segment or two, or delayed ACKs at a tiny window) gives no trustworthy minimum;
//! the window then grows as Reno's would over it (one segment in congestion avoidance, doubling
//! in slow start), as Linux's `tcp_vegas` falls back to Reno.

use super::contract::{AckSample, CongestionController, ControllerConfig};
use super::delivery_rate::RoundCounter;
use super::reno::Reno;
use crate::units::SimTime;

/// Diff thresholds in segments: grow below α, shrink above β, leave slow start above γ.
pub const ALPHA: f64 = 2.0;
pub const BETA: f64 = 4.0;
pub const GAMMA: f64 = 1.0;

/// The fewest RTT samples in a round for its minimum to be used.
const MIN_SAMPLES: u32 = 3;

#[derive(Debug, Clone)]
pub struct Vegas {
    /// Slow-start growth, the loss response and the recovery state (Reno's).
    reno: Reno,
    /// BaseRTT: the smallest RTT sample of the connection.
    base_rtt: Option<SimTime>,
    /// The smallest RTT sample of the current round, and how many samples it had.
    round_min_rtt: Option<SimTime>,
    round_samples: u32,
    rounds: RoundCounter,
    /// Slow start grows in this round (every other round).
    growing_round: bool,
    /// The window when the current round began.
    round_start_window: u64,
    /// The sender let the window grow on the ACK being processed (`on_ack` was called for it).
    may_grow: bool,
    /// Diff of the last round evaluated, segments (for the tests and the curious).
    last_diff: Option<f64>,
}

impl Vegas {
    pub fn new(mss: u32, initial_window_segments: u32) -> Self {
        Self::with_reno(Reno::new(mss, initial_window_segments))
    }

    /// Built from the flow's configuration: Reno's growth counts acknowledgements as
    /// `ca_increase` says (RFC 3465 bytes by default).
    pub fn from_config(config: &ControllerConfig) -> Self {
        Self::with_reno(Reno::new(config.mss, config.initial_window_segments).counting(config.ca_increase))
    }

    fn with_reno(reno: Reno) -> Self {
        Vegas {
            round_start_window: reno.window(),
            reno,
            base_rtt: None,
            round_min_rtt: None,
            round_samples: 0,
            rounds: RoundCounter::default(),
            growing_round: true,
            may_grow: false,
            last_diff: None,
        }
    }

    /// Diff (segments queued by this flow) at the last round's end, if it had enough samples.
    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }

    pub fn base_rtt(&self) -> Option<SimTime> {
        self.base_rtt
    }

    fn in_slow_start(&self) -> bool {
        self.reno.window() < self.reno.ssthresh()
    }

    /// The round's measurement so far: (BaseRTT, the round's smallest RTT), once it has
    /// enough samples.
    fn measured(&self) -> Option<(f64, f64)> {
        match (self.base_rtt, self.round_min_rtt) {
            (Some(base), Some(rtt)) if self.round_samples >= MIN_SAMPLES => {
                Some((base.as_ns() as f64, rtt.as_ns() as f64))
            }
            _ => None,
        }
    }

    /// Diff in segments for a window of `window` bytes:
    /// Diff·BaseRTT = (WindowSize/BaseRTT − WindowSize/RTT)·BaseRTT = cwnd·(RTT − BaseRTT)/RTT.
    fn diff(&self, window: u64, base: f64, rtt: f64) -> f64 {
        window as f64 / self.reno.mss() as f64 * (rtt - base) / rtt
    }

    /// Slow start ends: the window becomes what the measured rate sustains over BaseRTT
    /// (Actual·BaseRTT = window·BaseRTT/RTT) plus one segment, ssthresh below it.
    fn leave_slow_start(&mut self, window: u64, base: f64, rtt: f64) {
        let mss = self.reno.mss();
        let target = (window as f64 / mss as f64 * base / rtt) as u64 * mss + mss;
        let cwnd = self.reno.window().min(target).max(2 * mss);
        self.reno.set_window(cwnd, self.reno.ssthresh().min(cwnd - mss));
    }

    /// The round trip that just ended, measured: Vegas's decision for the next one.
    fn end_of_round(&mut self) {
        let mss = self.reno.mss();
        let cwnd = self.reno.window();
        let ssthresh = self.reno.ssthresh();
        // The round's ACKs acknowledged the flight sent in the round before, under that round's
        // window (the window when this round began).
        let flight_window = std::mem::replace(&mut self.round_start_window, cwnd);
        let measured = self.measured();
        self.round_min_rtt = None;
        self.round_samples = 0;
        let Some((base, rtt)) = measured else {
            // Too few samples: Reno's growth for the next round.
            self.last_diff = None;
            if self.in_slow_start() {
                self.growing_round = true;
            } else {
                self.reno.set_window(cwnd + mss, ssthresh);
            }
            return;
        };
        if self.in_slow_start() {
            if self.growing_round {
                // The held flight's Diff stayed within γ through the round (`on_ack_processed`
                // checks it as its ACKs arrive): hold the window through the next round.
                self.last_diff = Some(self.diff(flight_window, base, rtt));
                self.growing_round = false;
            } else {
                // A held round acknowledged the burst of the round that grew, whose queue builds
                // as it goes: its RTTs are not compared. The next round grows, and acknowledges
                // this round's flight, sent at the steady window.
                self.growing_round = true;
            }
            return;
        }
        let diff = self.diff(cwnd, base, rtt);
        self.last_diff = Some(diff);
        if diff > BETA {
            let cwnd = cwnd.saturating_sub(mss).max(2 * mss);
            self.reno.set_window(cwnd, ssthresh.min(cwnd - mss));
        } else if diff < ALPHA {
            self.reno.set_window(cwnd + mss, ssthresh);
        }
    }
}

impl CongestionController for Vegas {
    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, _ack: &AckSample) {
        // Growth waits for `on_ack_processed`, which sees this ACK's RTT sample and whether it
        // ends a round first.
        self.may_grow = true;
    }

    fn on_ack_processed(&mut self, ack: &AckSample) {
        let may_grow = std::mem::take(&mut self.may_grow);
        if let Some(rtt) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
        }
        let round_ends = self.rounds.on_ack(ack.rate.as_ref(), ack.total_delivered);
        if round_ends {
            if may_grow {
                self.end_of_round();
            } else {
                // In recovery, or on the ACK of an ECN response: the round measured a window in
                // the middle of a reduction; start measuring afresh.
                self.round_min_rtt = None;
                self.round_samples = 0;
            }
        }
        // The sample of the ACK that ended a round measures a segment sent in the new one.
        if let Some(rtt) = ack.rtt {
            self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.round_samples += 1;
        }
        if !round_ends && may_grow && self.in_slow_start() && self.growing_round {
            // The ACKs of a growing round measure the held window's flight: slow start ends as
            // soon as they show its Diff above γ, before the round's growth overshoots.
            if let Some((base, rtt)) = self.measured() {
                let diff = self.diff(self.round_start_window, base, rtt);
                if diff > GAMMA {
                    self.last_diff = Some(diff);
                    self.leave_slow_start(self.round_start_window, base, rtt);
                    return;
                }
            }
            // RFC 5681 slow start (RFC 3465 byte counting), in the rounds that grow.
            self.reno.on_ack(ack);
        }
    }

    fn on_congestion_event(&mut self, now: SimTime, flight_size: u64) {
        self.reno.on_congestion_event(now, flight_size);
    }

    fn on_recovery_exit(&mut self, now: SimTime) {
        self.reno.on_recovery_exit(now);
    }

    fn on_retransmission_timeout(&mut self, now: SimTime, window: u64) {
        self.reno.on_retransmission_timeout(now, window);
        self.growing_round = true;
    }

    fn on_repeated_timeout(&mut self, now: SimTime) {
        self.reno.on_repeated_timeout(now);
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

    /// A sender whose segments all see the same RTT within a round: `round(rtt)` sends a window
    /// and acknowledges it segment by segment with that RTT (the first ACK of a round closes the
    /// previous one, as a round ends with the ACK of the first segment sent after it began).
    struct Flow {
        vegas: Vegas,
        delivered: u64,
    }

    impl Flow {
        fn new(initial_window: u32) -> Self {
            Flow { vegas: Vegas::new(MSS as u32, initial_window), delivered: 0 }
        }

        fn round(&mut self, rtt_ms: u64) {
            let sent_with = self.delivered;
            let segments = self.vegas.window() / MSS;
            for _ in 0..segments {
                self.delivered += MSS;
                let rate = RateSample {
                    prior_delivered: sent_with,
                    delivered: MSS,
                    interval: SimTime::from_ms(1),
                    is_app_limited: false,
                    rtt: None,
                    delivery_rate: None,
                };
                let ack = AckSample {
                    bytes_acked: MSS,
                    delivered: MSS,
                    rtt: Some(SimTime::from_ms(rtt_ms)),
                    total_delivered: self.delivered,
                    rate: Some(rate),
                    ..AckSample::default()
                };
                self.vegas.on_ack(&ack);
                self.vegas.on_ack_processed(&ack);
            }
        }

        fn segments(&self) -> u64 {
            self.vegas.window() / MSS
        }
    }

    #[test]
    fn slow_start_doubles_every_other_round_trip() {
        let mut f = Flow::new(4);
        let mut windows = vec![f.segments()];
        for _ in 0..6 {
            f.round(100); // no queueing: Diff = 0
            windows.push(f.segments());
        }
        // A round's first ACK ends the previous round and does not grow the window, so a growing
        // round of w segments ends at 2w − 1; a held round keeps its window.
        assert_eq!(windows, [4, 7, 7, 13, 13, 25, 25]);
        assert_eq!(f.vegas.state(), state::SLOW_START);
    }

    #[test]
    fn slow_start_ends_when_the_held_windows_diff_exceeds_gamma() {
        let mut f = Flow::new(10);
        f.round(100); // BaseRTT 100 ms; the window grows to 19
        f.round(100); // its first ACK judges the first round's flight of 10 (Diff 0); held at 19
        assert_eq!(f.vegas.last_diff(), Some(0.0));
        assert_eq!((f.segments(), f.vegas.state()), (19, state::SLOW_START));
        // The next round's ACKs acknowledge the held flight of 19 segments at 125 ms. Its first
        // ACK ends the held round; the second grows the window to 20; the third brings the
        // round's samples to three, Diff = 19·25/125 = 3.8 > γ: the window becomes what the path
        // carries at the measured rate, 19·100/125 = 15.2 → 15 segments, plus one, and
        // congestion avoidance begins at once.
        f.round(125);
        assert!((f.vegas.last_diff().unwrap() - 3.8).abs() < 1e-9);
        assert_eq!(f.segments(), 16);
        assert_eq!(f.vegas.state(), state::CONGESTION_AVOIDANCE);
    }

    /// A flow in congestion avoidance after a round at BaseRTT = 100 ms, which the next round's
    /// first ACK judges (Diff = 0 < α: one segment more), so that the window is `w` through the
    /// next round and its RTTs are judged at `w`.
    fn avoiding(w: u64) -> Flow {
        let mut f = Flow::new(w as u32 - 1);
        f.round(100);
        f.vegas.reno.set_window((w - 1) * MSS, (w - 2) * MSS);
        f
    }

    #[test]
    fn congestion_avoidance_adds_a_segment_per_rtt_below_alpha() {
        // 20 segments at RTT 105 ms: Diff = 20·5/105 = 0.95 < α = 2.
        let mut f = avoiding(20);
        f.round(105);
        f.round(105);
        assert!(f.vegas.last_diff().unwrap() < ALPHA);
        assert_eq!(f.segments(), 21);
    }

    #[test]
    fn congestion_avoidance_holds_between_alpha_and_beta() {
        // 20 segments at RTT 115 ms: Diff = 20·15/115 = 2.6.
        let mut f = avoiding(20);
        f.round(115);
        f.round(115);
        let diff = f.vegas.last_diff().unwrap();
        assert!((ALPHA..=BETA).contains(&diff), "{diff}");
        assert_eq!(f.segments(), 20);
    }

    #[test]
    fn congestion_avoidance_removes_a_segment_per_rtt_above_beta() {
        // 20 segments at RTT 130 ms: Diff = 20·30/130 = 4.6 > β = 4.
        let mut f = avoiding(20);
        f.round(130);
        f.round(130);
        assert!((f.vegas.last_diff().unwrap() - 20.0 * 30.0 / 130.0).abs() < 1e-9);
        assert_eq!(f.segments(), 19);
        assert_eq!(f.vegas.state(), state::CONGESTION_AVOIDANCE);
    }

    #[test]
    fn base_rtt_is_the_smallest_sample_ever() {
        let mut f = avoiding(20);
        f.round(90);
        f.round(120);
        assert_eq!(f.vegas.base_rtt(), Some(SimTime::from_ms(90)));
    }

    #[test]
    fn a_loss_halves_as_reno() {
        let mut f = avoiding(40);
        f.vegas.on_congestion_event(SimTime::ZERO, 40 * MSS);
        assert_eq!((f.vegas.window(), f.vegas.state()), (20 * MSS, state::RECOVERY));
        f.vegas.on_recovery_exit(SimTime::ZERO);
        assert_eq!(f.vegas.state(), state::CONGESTION_AVOIDANCE);
    }
}
