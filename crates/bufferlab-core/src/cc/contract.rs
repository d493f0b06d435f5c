//! What a congestion controller is, below the controllers and the [`Controller`](super::Controller)
//! enum that dispatches over them: the hooks a sender drives ([`CongestionController`], in the
//! order the parent module's documentation gives), what an ACK told the sender ([`AckSample`]),
//! what a controller is built from ([`ControllerConfig`]) and what it reports
//! ([`ControllerMetrics`], the [`state`] codes).

use super::delivery_rate::RateSample;
use crate::spec::CaIncrease;
use crate::units::{BitRate, SimTime};

/// What one arriving ACK told the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckSample {
    pub now: SimTime,
    /// Bytes newly acknowledged cumulatively by this ACK.
    pub bytes_acked: u64,
    /// Bytes newly delivered by this ACK: cumulatively acknowledged or SACKed, not counted before
    /// (RFC 6937 DeliveredData).
    pub delivered: u64,
    /// Bytes newly marked lost while processing this ACK.
    pub lost: u64,
    /// Send time of the newest segment this ACK acknowledged.
    pub sent_time: SimTime,
    /// RTT sample taken from this ACK, if one was allowed (RFC 7323 timestamps or Karn's rule).
    pub rtt: Option<SimTime>,
    /// The sender's smoothed RTT (RFC 6298 SRTT) after this ACK, once known.
    pub srtt: Option<SimTime>,
    /// The smallest RTT sample the sender has seen.
    pub min_rtt: Option<SimTime>,
    /// Bytes in flight (RFC 6675 pipe) before and after processing the ACK.
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// The sender is in a loss-recovery episode (fast recovery or after a timeout) after this ACK.
    pub in_recovery: bool,
    /// Every byte delivered over the connection so far (the delivery-rate estimator's C.delivered).
    pub total_delivered: u64,
    /// The rate sample of this ACK, if it delivered anything.
    pub rate: Option<RateSample>,
    /// The ACK carried ECN feedback of congestion: TCP's ECN-Echo flag (RFC 3168 §6.1.2), or a
    /// CE count in a QUIC ACK frame higher than before (RFC 9002 §7.1).
    pub ecn_echo: bool,
    /// Of `bytes_acked`, the bytes the receiver reported CE-marked: all of them when a TCP ACK
    /// carries ECE (RFC 8257 §3.3's bytes_marked; exact with the accurate, per-packet echo of
    /// `tcp.ecn = "dctcp"`), none otherwise. For QUIC, whose ACK frames count CE packets, the
    /// count's rise times the mean size of the packets newly acknowledged (`quic/ecn.rs`).
    pub ce_marked_bytes: u64,
}

/// The controller's state, for the time series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerMetrics {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub pacing_rate: Option<BitRate>,
    /// A small code for the controller's state; see [`state`].
    pub state: u8,
}

/// Controller state codes recorded in the time series (`cc_state`). The meaning of a code
/// depends on the flow's controller.
pub mod state {
    /// Window-based controllers (Reno, CUBIC, HighSpeed, DCTCP, Prague, Vegas). DCTCP's and
    /// Prague's ECN reduction leaves them in congestion avoidance (no recovery episode follows
    /// it); Vegas is in slow start until its Diff exceeds γ, whether the round grows or holds.
    pub const SLOW_START: u8 = 0;
    pub const CONGESTION_AVOIDANCE: u8 = 1;
    /// Fast recovery, from the congestion event to the end of the episode.
    pub const RECOVERY: u8 = 2;
    /// HyStart++ conservative slow start (RFC 9406 §4.2), CUBIC only.
    pub const CONSERVATIVE_SLOW_START: u8 = 3;

    /// The state of a window-based controller: recovery, else slow start below ssthresh.
    pub fn window_based(in_recovery: bool, cwnd: u64, ssthresh: u64) -> u8 {
        if in_recovery {
            RECOVERY
        } else if cwnd < ssthresh {
            SLOW_START
        } else {
            CONGESTION_AVOIDANCE
        }
    }

    /// BBR modes (draft-cardwell-iccrg-bbr-congestion-control-00 §3.4).
    pub const BBR_STARTUP: u8 = 0;
    pub const BBR_DRAIN: u8 = 1;
    pub const BBR_PROBE_BW: u8 = 2;
    pub const BBR_PROBE_RTT: u8 = 3;

    /// BBRv3 states (draft-ietf-ccwg-bbr-06 §5.1.1). Startup, Drain and ProbeRTT keep BBR v1's
    /// codes; the four ProbeBW phases have their own, so that every code from 2 up means the
    /// flow has left Startup and Drain.
    pub const BBR3_STARTUP: u8 = 0;
    pub const BBR3_DRAIN: u8 = 1;
    pub const BBR3_PROBE_RTT: u8 = 3;
    pub const BBR3_PROBE_BW_DOWN: u8 = 4;
    pub const BBR3_PROBE_BW_CRUISE: u8 = 5;
    pub const BBR3_PROBE_BW_REFILL: u8 = 6;
    pub const BBR3_PROBE_BW_UP: u8 = 7;
}

pub trait CongestionController {
    /// Congestion window in bytes: the one required method.
    fn window(&self) -> u64;

    /// Slow-start threshold in bytes (`u64::MAX` until the first congestion event).
    fn ssthresh(&self) -> u64 {
        u64::MAX
    }

    /// An ACK that acknowledged new data outside fast recovery: where window-based controllers
    /// grow the window.
    fn on_ack(&mut self, _ack: &AckSample) {}

    /// Every ACK, after loss detection and `on_ack`, in or out of recovery.
    fn on_ack_processed(&mut self, _ack: &AckSample) {}

    /// Loss detected by duplicate ACKs or SACK: the start of a fast-recovery episode.
    /// `flight_size` is the data outstanding when the loss was detected (RFC 5681 FlightSize).
    fn on_congestion_event(&mut self, now: SimTime, flight_size: u64);

    /// The fast-recovery episode ended (its RecoveryPoint was cumulatively acknowledged).
    fn on_recovery_exit(&mut self, _now: SimTime) {}

    /// ECN feedback of congestion (TCP's ECN-Echo, RFC 3168 §6.1.2; QUIC's increased CE count,
    /// RFC 9002 §7.1), at most once per round trip (the sender decides when): the response to a
    /// loss without the retransmission, nothing being lost. By default the congestion event's
    /// multiplicative decrease, with no recovery episode after it (RFC 3168 §6.1.2 halves cwnd
    /// and ssthresh; CUBIC, RFC 9438 §4.6, reduces by β_cubic as on a loss). `flight_size` as for
    /// [`CongestionController::on_congestion_event`]. A controller that reads the CE marks
    /// itself ([`AckSample::ce_marked_bytes`]: DCTCP's α) overrides it. Returns whether the
    /// controller responded (one that takes no signal from ECN returns false).
    fn on_ecn_congestion_event(&mut self, now: SimTime, flight_size: u64) -> bool {
        self.on_congestion_event(now, flight_size);
        self.on_recovery_exit(now);
        true
    }

    /// The retransmission timer expired. `window` is what the reduction applies to: the window
    /// the sender had (the controller's own window, already reduced if a fast recovery was under
    /// way, or the flight when that was smaller), as Linux and ns-3 do; not a FlightSize that
    /// still counts the flight of a recovery whose retransmission was lost.
    fn on_retransmission_timeout(&mut self, now: SimTime, window: u64);

    /// The timer expired again before anything new was acknowledged: the same segment goes out
    /// once more. RFC 5681 §3.1 holds ssthresh; the window is still one segment.
    fn on_repeated_timeout(&mut self, _now: SimTime) {}

    /// True if `window()` also bounds sending during fast recovery (the controller has its own
    /// recovery rule); false if the sender's recovery procedure (PRR or classic) decides.
    fn governs_recovery(&self) -> bool {
        false
    }

    /// Pacing rate, for controllers that pace: the sender releases packets no faster.
    fn pacing_rate(&self) -> Option<BitRate> {
        None
    }

    /// The controller's estimate of the fraction of its bytes that met ECN congestion marks,
    /// for controllers that keep one (DCTCP's α, RFC 8257 §3.3); `None` for the others.
    fn ecn_alpha(&self) -> Option<f64> {
        None
    }

    /// The state code recorded in the time series (see [`state`]).
    fn state(&self) -> u8 {
        state::SLOW_START
    }

    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics {
            cwnd: self.window(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.pacing_rate(),
            state: self.state(),
        }
    }
}

/// TCP Prague's options (cc/prague.rs), chosen per flow (`tcp.prague_rtt_independence`,
/// `tcp.prague_classic_fallback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PragueOptions {
    /// The Prague draft's §2.4.4 reduced RTT-dependence (on).
    pub rtt_independence: bool,
    /// Fall-back to a Reno-friendly response on detecting a classic ECN AQM (off).
    pub classic_fallback: bool,
}

impl Default for PragueOptions {
    fn default() -> Self {
        PragueOptions { rtt_independence: true, classic_fallback: false }
    }
}

/// What a controller is built from: transport-neutral, so TCP and QUIC senders share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerConfig {
    /// Bytes of payload in a full-sized packet (TCP SMSS, QUIC max datagram payload).
    pub mss: u32,
    pub initial_window_segments: u32,
    /// HyStart++ (RFC 9406) in CUBIC's initial slow start.
    pub hystart: bool,
    /// Seed of the controller's own random stream (BBR's ProbeBW phase choice).
    pub seed: u64,
    /// How Reno counts acknowledgements (bytes, RFC 3465; or per ACK, RFC 5681).
    pub ca_increase: CaIncrease,
    /// TCP Prague's options (reduced RTT-dependence, classic ECN AQM fall-back).
    pub prague: PragueOptions,
}

impl ControllerConfig {
    pub fn new(mss: u32, initial_window_segments: u32) -> Self {
        ControllerConfig {
            mss,
            initial_window_segments,
            hystart: true,
            seed: 0,
            ca_increase: CaIncrease::Bytes,
            prague: PragueOptions::default(),
        }
    }
}
