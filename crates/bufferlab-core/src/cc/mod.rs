//! Congestion controllers.
//!
//! A controller owns no clock and no I/O: every hook receives `now` and what the sender measured.
//! The sender keeps loss detection, recovery (PRR or classic), RTT estimation and the RTO; the
//! controller decides only the congestion window (and, for controllers that pace, a rate).
//! [`Controller`] dispatches over the implementations with a `match`, keeping the per-ACK path
//! free of virtual calls.

pub mod reno;

use crate::spec::CcaKind;
use crate::units::{BitRate, SimTime};

pub use reno::Reno;

/// What one arriving ACK told the sender, handed to the controller outside loss recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckSample {
    pub now: SimTime,
    /// Bytes newly acknowledged cumulatively by this ACK.
    pub bytes_acked: u64,
    /// Send time of the newest segment this ACK acknowledged.
    pub sent_time: SimTime,
    /// RTT sample taken from this ACK, if Karn's rule allowed one.
    pub rtt: Option<SimTime>,
    /// Bytes in flight (RFC 6675 pipe) after processing the ACK.
    pub in_flight: u64,
}

/// The controller's state, for the time series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerMetrics {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub pacing_rate: Option<BitRate>,
}

pub trait CongestionController {
    /// Congestion window in bytes: the one required method.
    fn window(&self) -> u64;

    /// Slow-start threshold in bytes (`u64::MAX` until the first congestion event).
    fn ssthresh(&self) -> u64 {
        u64::MAX
    }

    /// An ACK that acknowledged new data outside loss recovery.
    fn on_ack(&mut self, _ack: &AckSample) {}

    /// Loss detected by duplicate ACKs or SACK: the start of a fast-recovery episode.
    /// `flight_size` is the data outstanding when the loss was detected (RFC 5681 FlightSize).
    fn on_congestion_event(&mut self, now: SimTime, flight_size: u64);

    /// The recovery episode ended (its RecoveryPoint was cumulatively acknowledged).
    fn on_recovery_exit(&mut self, _now: SimTime) {}

    /// The retransmission timer expired.
    fn on_retransmission_timeout(&mut self, now: SimTime, flight_size: u64);

    /// Pacing rate, for controllers that pace (none yet: room for BBR).
    fn pacing_rate(&self) -> Option<BitRate> {
        None
    }

    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics { cwnd: self.window(), ssthresh: self.ssthresh(), pacing_rate: self.pacing_rate() }
    }
}

/// Every controller the engine knows, chosen per flow by the spec.
#[derive(Debug, Clone)]
pub enum Controller {
    Reno(Reno),
}

impl Controller {
    pub fn new(kind: CcaKind, mss: u32, initial_window_segments: u32) -> Controller {
        match kind {
            CcaKind::Reno => Controller::Reno(Reno::new(mss, initial_window_segments)),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $body:expr) => {
        match $self {
            Controller::Reno($c) => $body,
        }
    };
}

impl CongestionController for Controller {
    #[inline]
    fn window(&self) -> u64 {
        dispatch!(self, c => c.window())
    }
    #[inline]
    fn ssthresh(&self) -> u64 {
        dispatch!(self, c => c.ssthresh())
    }
    #[inline]
    fn on_ack(&mut self, ack: &AckSample) {
        dispatch!(self, c => c.on_ack(ack))
    }
    fn on_congestion_event(&mut self, now: SimTime, flight_size: u64) {
        dispatch!(self, c => c.on_congestion_event(now, flight_size))
    }
    fn on_recovery_exit(&mut self, now: SimTime) {
        dispatch!(self, c => c.on_recovery_exit(now))
    }
    fn on_retransmission_timeout(&mut self, now: SimTime, flight_size: u64) {
        dispatch!(self, c => c.on_retransmission_timeout(now, flight_size))
    }
    #[inline]
    fn pacing_rate(&self) -> Option<BitRate> {
        dispatch!(self, c => c.pacing_rate())
    }
}
