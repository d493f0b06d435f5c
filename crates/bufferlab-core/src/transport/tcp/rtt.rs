//! Round-trip time estimation and the retransmission timeout: RFC 6298, or as Linux computes it.
//!
//! Both smooth the RTT the same way (RFC 6298 §2.3, in `transport::rtt::SmoothedRtt`, which QUIC
//! shares). They differ in where the minimum applies: RFC 6298 §2.4 rounds the whole RTO up to it,
//! RTO = max(SRTT + 4·RTTVAR, min RTO); Linux (tcp_rtt_estimator, tcp_set_rto) floors the variance
//! term, RTO = SRTT + max(4·RTTVAR, min RTO).
//! The difference matters when the queue grows slowly: RTTVAR decays to almost nothing while SRTT
//! climbs, and under RFC 6298 a retransmission that waits behind a full buffer comes back after
//! base RTT + B/C, which exceeds the RTO whenever that is at least the minimum RTO; Linux's RTO
//! always keeps min RTO of slack above SRTT.

use crate::spec::RtoKind;
use crate::transport::rtt::{RttEstimate, SmoothedRtt};
use crate::units::SimTime;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    /// SRTT and RTTVAR, once there is a sample.
    smoothed: Option<SmoothedRtt>,
    /// RTO before backoff.
    base_rto: SimTime,
    min_rto: SimTime,
    max_rto: SimTime,
    rule: RtoKind,
    /// Number of consecutive timeouts: the RTO is doubled this many times (RFC 6298 §5.5).
    backoffs: u32,
    min_rtt: Option<SimTime>,
}

impl RttEstimator {
    /// RFC 6298 §2: K = 4.
    const K: u64 = 4;

    pub fn new(initial_rto: SimTime, min_rto: SimTime, max_rto: SimTime, rule: RtoKind) -> Self {
        RttEstimator { rule, smoothed: None, base_rto: initial_rto, min_rto, max_rto, backoffs: 0, min_rtt: None }
    }

    pub fn on_sample(&mut self, r: SimTime) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        // RFC 6298 §2.2 for the first measurement, §2.3 for the others.
        match self.smoothed.as_mut() {
            None => self.smoothed = Some(SmoothedRtt::first(r)),
            Some(s) => s.update(r),
        }
        let SmoothedRtt { srtt, rttvar } = self.smoothed.expect("set above");
        let variance = rttvar.mul(Self::K);
        let rto = match self.rule {
            // RFC 6298 §2.2/2.3: RTO <- SRTT + max(G, K*RTTVAR) (the simulated clock has G -> 0);
            // §2.4: an RTO below the minimum is rounded up.
            RtoKind::Rfc6298 => (srtt + variance).max(self.min_rto),
            // Linux: the variance term is at least the minimum RTO (rttvar >= tcp_rto_min).
            RtoKind::Linux => srtt + variance.max(self.min_rto),
        };
        // §2.5: a maximum may be placed on the RTO.
        self.base_rto = rto.min(self.max_rto);
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

    /// The timer has expired since new data was last acknowledged.
    pub fn is_backed_off(&self) -> bool {
        self.backoffs > 0
    }
}

impl RttEstimate for RttEstimator {
    fn srtt(&self) -> Option<SimTime> {
        self.smoothed.map(|s| s.srtt)
    }

    fn min_rtt(&self) -> Option<SimTime> {
        self.min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimator() -> RttEstimator {
        estimator_with(RtoKind::Rfc6298)
    }

    fn estimator_with(rule: RtoKind) -> RttEstimator {
        RttEstimator::new(SimTime::from_secs(1), SimTime::from_ms(200), SimTime::from_secs(60), rule)
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
    fn linux_rule_keeps_min_rto_of_slack_above_a_steady_srtt() {
        let mut e = estimator_with(RtoKind::Linux);
        for _ in 0..200 {
            e.on_sample(SimTime::from_ms(150));
        }
        // RTTVAR has decayed to nothing: RFC 6298 gives max(150, 200) = 200 ms, Linux 150 + 200.
        assert_eq!(e.rto(), SimTime::from_ms(350));
        let mut rfc = estimator();
        for _ in 0..200 {
            rfc.on_sample(SimTime::from_ms(150));
        }
        assert_eq!(rfc.rto(), SimTime::from_ms(200));
    }

    #[test]
    fn linux_rule_uses_the_variance_term_when_it_exceeds_min_rto() {
        let mut e = estimator_with(RtoKind::Linux);
        e.on_sample(SimTime::from_ms(100));
        // SRTT = 100 ms, 4·RTTVAR = 200 ms: equal to the floor, RTO = 300 ms either way.
        assert_eq!(e.rto(), SimTime::from_ms(300));
        e.on_sample(SimTime::from_ms(200));
        assert_eq!(e.rto(), SimTime::from_us(112_500 + 4 * 62_500));
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
