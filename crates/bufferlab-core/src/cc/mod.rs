//! Congestion controllers.
//!
//! A controller owns no clock and no I/O: every hook receives `now` and what the sender measured.
//! The sender keeps loss detection, recovery (PRR or classic), RTT estimation, delivery-rate
//! estimation, pacing and the RTO; the controller decides the congestion window and, for
//! controllers that pace, a rate. Nothing here knows about TCP: a QUIC sender drives the same
//! hooks with the same samples. [`Controller`] dispatches over the implementations with a
//! `match`, keeping the per-ACK path free of virtual calls.
//!
//! The contract, per ACK, in order:
//! 1. loss detection may call [`CongestionController::on_congestion_event`] (entering fast
//!    recovery) or, when the episode's RecoveryPoint is acknowledged, `on_recovery_exit`;
//! 2. [`CongestionController::on_ack`] if the ACK acknowledged new data and the sender is not in
//!    fast recovery (where window-based controllers grow, RFC 5681 §3.2);
//! 3. [`CongestionController::on_ack_processed`] for every ACK, in or out of recovery, with the
//!    same [`AckSample`]: where model-based controllers (BBR) update their path model.
//!
//! During fast recovery the sender's recovery procedure (PRR or classic) decides how much to
//! send, unless the controller [governs recovery](CongestionController::governs_recovery), in
//! which case the sender sends while pipe < `window()` (BBR's packet conservation).

pub mod bbr;
pub mod bbr3;
pub mod contract;
pub mod cubic;
pub mod dctcp;
pub mod delivery_rate;
pub mod highspeed;
pub mod prague;
pub mod reno;
pub mod vegas;

use crate::spec::CcaKind;
use crate::units::{BitRate, SimTime};

pub use bbr::Bbr;
pub use bbr3::Bbr3;
pub use contract::{state, AckSample, CongestionController, ControllerConfig, ControllerMetrics, PragueOptions};
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use delivery_rate::{DeliveryRateEstimator, RateSample};
pub use highspeed::HighSpeed;
pub use prague::Prague;
pub use reno::Reno;
pub use vegas::Vegas;

/// Every controller the engine knows, chosen per flow by the spec.
// BBR's model and RNG make it the largest variant; it lives inside its sender, so boxing it would
// only add a pointer chase to every ACK of every flow.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Controller {
    Reno(Reno),
    Cubic(Cubic),
    HighSpeed(HighSpeed),
    Bbr(Bbr),
    /// Boxed: BBRv3's model is about 600 bytes, and inline it would grow every flow's sender,
    /// whatever its controller, by the difference.
    Bbr3(Box<Bbr3>),
    Dctcp(Dctcp),
    Prague(Prague),
    Vegas(Vegas),
}

impl Controller {
    pub fn new(kind: CcaKind, config: &ControllerConfig) -> Controller {
        match kind {
            CcaKind::Reno => {
                Controller::Reno(Reno::new(config.mss, config.initial_window_segments).counting(config.ca_increase))
            }
            CcaKind::Cubic => Controller::Cubic(Cubic::new(config)),
            CcaKind::HighSpeed => Controller::HighSpeed(HighSpeed::new(config.mss, config.initial_window_segments)),
            CcaKind::Bbr => Controller::Bbr(Bbr::new(config)),
            CcaKind::Bbr3 => Controller::Bbr3(Box::new(Bbr3::new(config))),
            CcaKind::Dctcp => Controller::Dctcp(Dctcp::from_config(config)),
            CcaKind::Prague => Controller::Prague(Prague::from_config(config)),
            CcaKind::Vegas => Controller::Vegas(Vegas::from_config(config)),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $body:expr) => {
        match $self {
            Controller::Reno($c) => $body,
            Controller::Cubic($c) => $body,
            Controller::HighSpeed($c) => $body,
            Controller::Bbr($c) => $body,
            Controller::Bbr3($c) => $body,
            Controller::Dctcp($c) => $body,
            Controller::Prague($c) => $body,
            Controller::Vegas($c) => $body,
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
    #[inline]
    fn on_ack_processed(&mut self, ack: &AckSample) {
        dispatch!(self, c => c.on_ack_processed(ack))
    }
    fn on_congestion_event(&mut self, now: SimTime, flight_size: u64) {
        dispatch!(self, c => c.on_congestion_event(now, flight_size))
    }
    fn on_recovery_exit(&mut self, now: SimTime) {
        dispatch!(self, c => c.on_recovery_exit(now))
    }
    fn on_ecn_congestion_event(&mut self, now: SimTime, flight_size: u64) -> bool {
        dispatch!(self, c => c.on_ecn_congestion_event(now, flight_size))
    }
    fn on_retransmission_timeout(&mut self, now: SimTime, window: u64) {
        dispatch!(self, c => c.on_retransmission_timeout(now, window))
    }
    fn on_repeated_timeout(&mut self, now: SimTime) {
        dispatch!(self, c => c.on_repeated_timeout(now))
    }
    #[inline]
    fn governs_recovery(&self) -> bool {
        dispatch!(self, c => c.governs_recovery())
    }
    #[inline]
    fn pacing_rate(&self) -> Option<BitRate> {
        dispatch!(self, c => c.pacing_rate())
    }
    fn ecn_alpha(&self) -> Option<f64> {
        dispatch!(self, c => c.ecn_alpha())
    }
    #[inline]
    fn state(&self) -> u8 {
        dispatch!(self, c => c.state())
    }
}
