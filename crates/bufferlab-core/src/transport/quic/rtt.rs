//! RTT estimation for QUIC, RFC 9002 §5, and the probe timeout it yields (§6.2.1).

use super::config::{GRANULARITY, TIME_THRESHOLD};
use crate::transport::rtt::{RttEstimate, SmoothedRtt};
use crate::units::SimTime;

#[derive(Debug, Clone)]
pub struct QuicRtt {
    latest_rtt: SimTime,
    /// smoothed_rtt and rttvar, smoothed as TCP does (RFC 9002 §5.3 takes RFC 6298's gains).
    smoothed: SmoothedRtt,
    /// Set by the first sample.
    min_rtt: Option<SimTime>,
}

impl QuicRtt {
    /// RFC 9002 §5.3: before any sample, smoothed_rtt = kInitialRtt and rttvar = kInitialRtt / 2.
    pub fn new(initial_rtt: SimTime) -> Self {
        QuicRtt { latest_rtt: SimTime::ZERO, smoothed: SmoothedRtt::first(initial_rtt), min_rtt: None }
    }

    /// A sample `latest_rtt` from an ACK whose largest acknowledged packet was newly acknowledged,
    /// with the ACK Delay it reported, already capped at max_ack_delay by the caller (§5.3).
    pub fn on_sample(&mut self, latest_rtt: SimTime, ack_delay: SimTime) {
        self.latest_rtt = latest_rtt;
        let Some(min_rtt) = self.min_rtt else {
            // §5.3: the first sample sets min_rtt = smoothed_rtt = latest_rtt, rttvar = latest_rtt / 2.
            self.min_rtt = Some(latest_rtt);
            self.smoothed = SmoothedRtt::first(latest_rtt);
            return;
        };
        // §5.2: min_rtt ignores ACK delay.
        let min_rtt = min_rtt.min(latest_rtt);
        self.min_rtt = Some(min_rtt);
        // §5.3: subtract the ACK delay only if the result is not below min_rtt.
        let adjusted = if latest_rtt >= min_rtt + ack_delay { latest_rtt - ack_delay } else { latest_rtt };
        // rttvar = 3/4 · rttvar + 1/4 · |smoothed_rtt − adjusted_rtt|;
        // smoothed_rtt = 7/8 · smoothed_rtt + 1/8 · adjusted_rtt.
        self.smoothed.update(adjusted);
    }

    pub fn has_sample(&self) -> bool {
        self.min_rtt.is_some()
    }
    pub fn latest(&self) -> SimTime {
        self.latest_rtt
    }
    pub fn smoothed(&self) -> SimTime {
        self.smoothed.srtt
    }

    /// §6.1.2: loss_delay = max(kTimeThreshold · max(smoothed_rtt, latest_rtt), kGranularity).
    pub fn loss_delay(&self) -> SimTime {
        let (num, den) = TIME_THRESHOLD;
        let base = self.smoothed.srtt.max(self.latest_rtt);
        SimTime(base.0 / den * num + base.0 % den * num / den).max(GRANULARITY)
    }

    /// §6.2.1: PTO = smoothed_rtt + max(4 · rttvar, kGranularity) + max_ack_delay, before backoff.
    pub fn pto(&self, max_ack_delay: SimTime) -> SimTime {
        self.smoothed.srtt + self.smoothed.rttvar.mul(4).max(GRANULARITY) + max_ack_delay
    }
}

impl RttEstimate for QuicRtt {
    /// smoothed_rtt once a sample was taken (before it, kInitialRtt serves only the probe timeout).
    fn srtt(&self) -> Option<SimTime> {
        self.has_sample().then_some(self.smoothed.srtt)
    }

    fn min_rtt(&self) -> Option<SimTime> {
        self.min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_smoothed_rtt_and_half_of_it_as_variation() {
        let mut r = QuicRtt::new(SimTime::from_ms(333));
        // §6.2.2: before any sample the PTO is 333 + 4 · 166.5 = 999 ms (plus max_ack_delay).
        assert_eq!(r.pto(SimTime::ZERO), SimTime::from_ms(999));
        r.on_sample(SimTime::from_ms(100), SimTime::from_ms(5));
        assert_eq!(r.smoothed(), SimTime::from_ms(100));
        assert_eq!(r.pto(SimTime::from_ms(25)), SimTime::from_ms(100 + 200 + 25));
    }

    #[test]
    fn ack_delay_is_subtracted_unless_that_would_go_below_min_rtt() {
        let mut r = QuicRtt::new(SimTime::from_ms(333));
        r.on_sample(SimTime::from_ms(100), SimTime::ZERO);
        // 120 − 10 = 110 >= min_rtt 100: adjusted_rtt = 110, smoothed = (7·100 + 110)/8.
        r.on_sample(SimTime::from_ms(120), SimTime::from_ms(10));
        assert_eq!(r.smoothed(), SimTime::from_us(101_250));
        // 105 − 10 < 100: the delay is not subtracted, adjusted_rtt = 105.
        let before = r.smoothed();
        r.on_sample(SimTime::from_ms(105), SimTime::from_ms(10));
        assert_eq!(r.smoothed(), SimTime((7 * before.0 + SimTime::from_ms(105).0) / 8));
        assert_eq!(r.min_rtt(), Some(SimTime::from_ms(100)));
    }

    #[test]
    fn loss_delay_is_nine_eighths_of_the_larger_rtt_and_at_least_the_granularity() {
        let mut r = QuicRtt::new(SimTime::from_ms(333));
        r.on_sample(SimTime::from_ms(80), SimTime::ZERO);
        assert_eq!(r.loss_delay(), SimTime::from_ms(90));
        let mut tiny = QuicRtt::new(SimTime::from_ms(333));
        tiny.on_sample(SimTime::from_us(100), SimTime::ZERO);
        assert_eq!(tiny.loss_delay(), GRANULARITY);
    }
}
