//! What TCP's and QUIC's RTT estimators have in common: the smoothing of RFC 6298 §2.2–2.3, which
//! RFC 9002 §5.3 takes over unchanged, and the view a sender's core needs of either estimator.
//!
//! Where they differ stays with each transport: TCP's retransmission timeout (RFC 6298 §2.4 or as
//! Linux computes it, `tcp/rtt.rs`) and QUIC's ACK-delay adjustment, loss delay and probe timeout
//! (RFC 9002 §5.3, §6.1.2, §6.2.1, `quic/rtt.rs`).

use crate::units::SimTime;

/// SRTT and RTTVAR, smoothed with gains 1/8 and 1/4 (RFC 6298 §2.3 alpha and beta; RFC 9002 §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmoothedRtt {
    pub srtt: SimTime,
    pub rttvar: SimTime,
}

impl SmoothedRtt {
    /// The first measurement R: SRTT <- R, RTTVAR <- R/2 (RFC 6298 §2.2; RFC 9002 §5.3, which
    /// also starts from kInitialRtt this way before any sample).
    pub fn first(r: SimTime) -> Self {
        SmoothedRtt { srtt: r, rttvar: r.div(2) }
    }

    /// A later measurement R' (RFC 6298 §2.3):
    /// RTTVAR <- 3/4 · RTTVAR + 1/4 · |SRTT − R'|, then SRTT <- 7/8 · SRTT + 1/8 · R'.
    pub fn update(&mut self, r: SimTime) {
        let deviation = if self.srtt > r { self.srtt - r } else { r - self.srtt };
        self.rttvar = SimTime((3 * self.rttvar.0 + deviation.0) / 4);
        self.srtt = SimTime((7 * self.srtt.0 + r.0) / 8);
    }
}

/// What a sender's core reads from its transport's RTT estimator: for the controller's samples,
/// the recorder and the SRTT every data packet carries.
pub trait RttEstimate {
    /// The smoothed RTT, once a sample has been taken.
    fn srtt(&self) -> Option<SimTime>;
    /// The smallest RTT sample so far.
    fn min_rtt(&self) -> Option<SimTime>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sample_sets_srtt_and_half_of_it_as_rttvar() {
        let s = SmoothedRtt::first(SimTime::from_ms(100));
        assert_eq!((s.srtt, s.rttvar), (SimTime::from_ms(100), SimTime::from_ms(50)));
    }

    #[test]
    fn later_samples_move_rttvar_by_a_quarter_and_srtt_by_an_eighth() {
        let mut s = SmoothedRtt::first(SimTime::from_ms(100));
        s.update(SimTime::from_ms(200));
        // RTTVAR = 3/4·50 + 1/4·|100 − 200| = 62.5 ms (from the old SRTT); SRTT = 7/8·100 + 1/8·200.
        assert_eq!((s.srtt, s.rttvar), (SimTime::from_us(112_500), SimTime::from_us(62_500)));
        s.update(SimTime::from_us(112_500));
        assert_eq!((s.srtt, s.rttvar), (SimTime::from_us(112_500), SimTime::from_us(46_875)));
    }
}
