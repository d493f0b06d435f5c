//! Round-trip time estimation and the retransmission timeout, RFC 6298.

use crate::units::SimTime;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<SimTime>,
    rttvar: SimTime,
    /// RTO before backoff.
    base_rto: SimTime,
    min_rto: SimTime,
    max_rto: SimTime,
    /// Number of consecutive timeouts: the RTO is doubled this many times (RFC 6298 §5.5).
    backoffs: u32,
    min_rtt: Option<SimTime>,
}

impl RttEstimator {
    /// RFC 6298 §2: K = 4.
    const K: u64 = 4;

    pub fn new(initial_rto: SimTime, min_rto: SimTime, max_rto: SimTime) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: SimTime::ZERO,
            base_rto: initial_rto,
            min_rto,
            max_rto,
            backoffs: 0,
            min_rtt: None,
        }
    }

    pub fn on_sample(&mut self, r: SimTime) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                // RFC 6298 §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = r.div(2);
            }
            Some(srtt) => {
                // RFC 6298 §2.3 with alpha = 1/8, beta = 1/4:
                // RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'.
                let deviation = if srtt > r { srtt - r } else { r - srtt };
                self.rttvar = SimTime((3 * self.rttvar.0 + deviation.0) / 4);
                self.srtt = Some(SimTime((7 * srtt.0 + r.0) / 8));
            }
        }
        // RFC 6298 §2.2/2.3: RTO <- SRTT + max(G, K*RTTVAR); the simulated clock has G -> 0.
        let srtt = self.srtt.expect("set above");
        let rto = srtt + self.rttvar.mul(Self::K);
        // §2.4: RTO below the minimum is rounded up; §2.5: a maximum may be placed on it.
        self.base_rto = rto.max(self.min_rto).min(self.max_rto);
    }

    /// The timeout to arm now, including exponential backoff.
    pub fn rto(&self) -> SimTime {
        let mut rto = self.base_rto;
        for _ in 0..self.backoffs {
            rto = rto.doubled();
            if rto >= self.max_rto {
                return self.max_rto;
            }
        }
        rto
    }

    /// RFC 6298 §5.5: "set RTO <- RTO * 2 (back off the timer)".
    pub fn back_off(&mut self) {
        self.backoffs = self.backoffs.saturating_add(1);
    }

    /// New data was acknowledged: the backoff is collapsed (RFC 6298 §5.7 note, as in Linux).
    pub fn reset_backoff(&mut self) {
        self.backoffs = 0;
    }

    pub fn srtt(&self) -> Option<SimTime> {
        self.srtt
    }

    pub fn min_rtt(&self) -> Option<SimTime> {
        self.min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimator() -> RttEstimator {
        RttEstimator::new(SimTime::from_secs(1), SimTime::from_ms(200), SimTime::from_secs(60))
    }

    #[test]
    fn initial_rto_is_one_second_before_any_sample() {
        assert_eq!(estimator().rto(), SimTime::from_secs(1));
    }

    #[test]
    fn first_sample_sets_rto_to_three_rtts() {
        // SRTT = R, RTTVAR = R/2 -> RTO = R + 4 R/2 = 3R.
        let mut e = estimator();
        e.on_sample(SimTime::from_ms(100));
        assert_eq!(e.rto(), SimTime::from_ms(300));
    }

    #[test]
    fn steady_samples_converge_to_min_rto_floor() {
        let mut e = estimator();
        for _ in 0..200 {
            e.on_sample(SimTime::from_ms(10));
        }
        assert_eq!(e.srtt(), Some(SimTime::from_ms(10)));
        assert_eq!(e.rto(), SimTime::from_ms(200));
    }

    #[test]
    fn smoothing_follows_rfc6298_gains() {
        let mut e = estimator();
        e.on_sample(SimTime::from_ms(100));
        e.on_sample(SimTime::from_ms(200));
        // RTTVAR = 3/4·50 + 1/4·100 = 62.5 ms; SRTT = 7/8·100 + 1/8·200 = 112.5 ms.
        assert_eq!(e.srtt(), Some(SimTime::from_us(112_500)));
        assert_eq!(e.rto(), SimTime::from_us(112_500 + 4 * 62_500));
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let mut e = estimator();
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), SimTime::from_secs(4));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), SimTime::from_secs(60));
        e.reset_backoff();
        assert_eq!(e.rto(), SimTime::from_secs(1));
    }
}
