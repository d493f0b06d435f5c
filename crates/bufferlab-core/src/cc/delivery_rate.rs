//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-00), shared by every
//! controller that wants it (BBR uses it for its bandwidth model, HyStart++ for round counting).
//!
//! The transport keeps a [`TxSnapshot`] with every packet it sends (TCP in its scoreboard
//! segments, QUIC in its sent-packet records), hands each newly delivered packet (cumulatively
//! acknowledged or SACKed, once) to [`DeliveryRateEstimator::on_delivered`], and closes every ACK
//! with [`DeliveryRateEstimator::generate`], which yields the ACK's [`RateSample`].
//!
//! A sample measures the data delivered between the send of the newest delivered packet and its
//! acknowledgement, over the longer of the send interval and the ACK interval (draft §3.3), so
//! neither ACK compression nor send bursts inflate it.

use crate::units::{BitRate, SimTime};

/// Connection state copied into a packet when it is sent (draft §3.2, P.delivered etc.).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxSnapshot {
    /// C.delivered at send time.
    pub delivered: u64,
    /// C.delivered_time at send time: when the latest delivery before this send was learnt.
    pub delivered_time: SimTime,
    /// C.first_sent_time at send time: send time of the first packet of the current flight.
    pub first_sent_time: SimTime,
    /// The connection was application-limited when the packet was sent.
    pub is_app_limited: bool,
}

/// What one ACK says about the delivery rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSample {
    /// C.delivered when the newest packet delivered by this ACK was sent (rs.prior_delivered):
    /// packet-timed rounds are counted with it.
    pub prior_delivered: u64,
    /// Bytes delivered over the sample's interval (rs.delivered).
    pub delivered: u64,
    /// max(send interval, ACK interval) (rs.interval).
    pub interval: SimTime,
    /// The newest delivered packet was sent while application-limited.
    pub is_app_limited: bool,
    /// RTT of the newest delivered packet, unless it was retransmitted (ambiguous).
    pub rtt: Option<SimTime>,
    /// delivered / interval; `None` when the interval is zero or shorter than the minimum RTT
    /// (draft §3.3: such samples come from ACK compression and are discarded).
    pub delivery_rate: Option<BitRate>,
}

/// The newest packet delivered by the ACK being processed.
#[derive(Debug, Clone, Copy)]
struct Newest {
    tx: TxSnapshot,
    sent_time: SimTime,
    ambiguous: bool,
}

#[derive(Debug, Clone)]
pub struct DeliveryRateEstimator {
    /// C.delivered: bytes delivered so far.
    delivered: u64,
    /// C.delivered_time: when C.delivered last grew.
    delivered_time: SimTime,
    /// C.first_sent_time.
    first_sent_time: SimTime,
    /// C.app_limited: 0, or the C.delivered value that ends the application-limited bubble.
    app_limited_until: u64,
    newest: Option<Newest>,
    /// The delivery rate of the latest sample that had one (for the time series).
    latest_rate: Option<BitRate>,
}

impl Default for DeliveryRateEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl DeliveryRateEstimator {
    pub fn new() -> Self {
        DeliveryRateEstimator {
            delivered: 0,
            delivered_time: SimTime::ZERO,
            first_sent_time: SimTime::ZERO,
            app_limited_until: 0,
            newest: None,
            latest_rate: None,
        }
    }

    /// C.delivered.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// A packet is sent at `now` (a first transmission or a retransmission); `nothing_in_flight`
    /// says whether the flight was empty. Returns what the packet must remember (draft §3.2).
    pub fn on_send(&mut self, now: SimTime, nothing_in_flight: bool) -> TxSnapshot {
        if nothing_in_flight {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited_until != 0,
        }
    }

    /// A packet of `bytes`, sent at `sent_time` with snapshot `tx`, is delivered (draft §3.3
    /// UpdateRateSample). `ambiguous`: it was retransmitted, so its RTT is unknown.
    pub fn on_delivered(&mut self, now: SimTime, tx: &TxSnapshot, sent_time: SimTime, ambiguous: bool, bytes: u64) {
        self.delivered += bytes;
        self.delivered_time = now;
        // The sample follows the newest packet: the one sent last among those delivered.
        let newer = match &self.newest {
            None => true,
            Some(n) => (tx.delivered, sent_time) >= (n.tx.delivered, n.sent_time),
        };
        if newer {
            self.newest = Some(Newest { tx: *tx, sent_time, ambiguous });
            self.first_sent_time = sent_time;
        }
    }

    /// The ACK has been processed: its rate sample, if it delivered anything (draft §3.3
    /// GenerateRateSample). `min_rtt` guards against ACK compression.
    pub fn generate(&mut self, now: SimTime, min_rtt: Option<SimTime>) -> Option<RateSample> {
        // The application-limited bubble is gone once its last byte is delivered.
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let newest = self.newest.take()?;
        let send_elapsed = sent_span(newest.tx.first_sent_time, newest.sent_time);
        let ack_elapsed = sent_span(newest.tx.delivered_time, now);
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - newest.tx.delivered;
        let too_short = interval == SimTime::ZERO || min_rtt.is_some_and(|m| interval < m);
        let delivery_rate = (!too_short).then(|| BitRate(bits_per_second(delivered, interval)));
        self.latest_rate = delivery_rate.or(self.latest_rate);
        Some(RateSample {
            prior_delivered: newest.tx.delivered,
            delivered,
            interval,
            is_app_limited: newest.tx.is_app_limited,
            rtt: (!newest.ambiguous).then(|| now - newest.sent_time),
            delivery_rate,
        })
    }

    /// Delivery rate of the latest valid sample, bit/s (0 before the first).
    pub fn latest_rate_bps(&self) -> u64 {
        self.latest_rate.map_or(0, |r| r.bps())
    }

    /// The sender had a transmission opportunity but nothing to send (draft §3.4
    /// CheckIfApplicationLimited): samples until the current flight is delivered are marked.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }
}

/// `bytes` over `interval` in bit/s (the interval in picoseconds). Below ~2.3 MB the product
/// fits 64 bits and the 64-bit division gives the same quotient as the 128-bit one, without
/// its library call.
fn bits_per_second(bytes: u64, interval: SimTime) -> u64 {
    const BIT_PS_PER_BYTE_S: u64 = 8 * 1_000_000_000_000;
    match bytes.checked_mul(BIT_PS_PER_BYTE_S) {
        Some(bit_ps) => bit_ps / interval.as_ps(),
        None => (bytes as u128 * BIT_PS_PER_BYTE_S as u128 / interval.as_ps() as u128) as u64,
    }
}

fn sent_span(from: SimTime, to: SimTime) -> SimTime {
    to.saturating_sub(from)
}

/// Packet-timed round trips (draft-cardwell-iccrg-bbr-congestion-control-00 §4.1.1.3): a round
/// ends when a packet sent after the round began is delivered. Equivalent to RFC 9406's
/// windowEnd = SND.NXT, but transport-neutral.
#[derive(Debug, Clone, Default)]
pub struct RoundCounter {
    next_round_delivered: u64,
    /// Rounds started so far.
    pub count: u64,
}

impl RoundCounter {
    /// Whether this ACK starts a new round (BBRUpdateRound).
    pub fn on_ack(&mut self, rate: Option<&RateSample>, total_delivered: u64) -> bool {
        match rate {
            Some(rs) if rs.prior_delivered >= self.next_round_delivered => {
                self.next_round_delivered = total_delivered;
                self.count += 1;
                true
            }
            _ => false,
        }
    }

    /// Start a new round now (packets sent from here on end it).
    pub fn restart(&mut self, total_delivered: u64) {
        self.next_round_delivered = total_delivered;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1;

    fn t(ms: u64) -> SimTime {
        SimTime::from_ms(ms * MS)
    }

    /// ACK-clocked steady state: packet k (1000 bytes) is sent at k ms and delivered at k + rtt.
    /// Deliveries at each instant are processed before the send. Returns the samples.
    fn ack_clocked(rtt: u64, packets: u64, ack_at: impl Fn(u64) -> u64) -> Vec<RateSample> {
        let mut est = DeliveryRateEstimator::new();
        let mut sent = Vec::new();
        let mut samples = Vec::new();
        let mut next = 0;
        for now in 0..packets + rtt + 10 {
            while next < sent.len() && ack_at(next as u64) <= now {
                let (tx, at): (TxSnapshot, u64) = sent[next];
                est.on_delivered(t(now), &tx, t(at), false, 1000);
                next += 1;
                samples.extend(est.generate(t(now), Some(t(rtt))));
            }
            if now < packets {
                let tx = est.on_send(t(now), next == sent.len());
                sent.push((tx, now));
            }
        }
        samples
    }

    #[test]
    fn ack_clocked_flow_measures_its_sending_rate() {
        // 1000 bytes per ms is 8 Mb/s; the first flight underestimates (it spans the first RTT).
        let samples = ack_clocked(50, 200, |k| k + 50);
        let last = samples.last().unwrap();
        assert_eq!(last.delivery_rate, Some(BitRate(8_000_000)));
        assert_eq!(last.rtt, Some(t(50)));
        assert!(samples[5].delivery_rate.unwrap() < BitRate(8_000_000));
    }

    #[test]
    fn ack_compression_cannot_inflate_the_rate() {
        // From packet 100 on, ACKs arrive in bunches of ten: the ACK interval of a bunch is
        // short, but the send interval bounds every sample to the 8 Mb/s sending rate.
        let samples = ack_clocked(50, 300, |k| if k < 100 { k + 50 } else { (k / 10) * 10 + 59 });
        assert!(samples.iter().all(|s| s.delivery_rate.is_none_or(|r| r <= BitRate(8_000_000))));
        assert!(samples.iter().rev().take(50).all(|s| s.delivery_rate.is_some()));
    }

    #[test]
    fn sample_shorter_than_min_rtt_is_invalid() {
        let mut est = DeliveryRateEstimator::new();
        let tx = est.on_send(t(0), true);
        est.on_delivered(t(5), &tx, t(0), false, 1000);
        let rs = est.generate(t(5), Some(t(10))).unwrap();
        assert_eq!(rs.delivery_rate, None);
    }

    #[test]
    fn retransmitted_packet_gives_no_rtt() {
        let mut est = DeliveryRateEstimator::new();
        let tx = est.on_send(t(0), true);
        est.on_delivered(t(30), &tx, t(10), true, 1000);
        assert_eq!(est.generate(t(30), None).unwrap().rtt, None);
    }

    #[test]
    fn application_limited_marks_samples_until_the_bubble_is_delivered() {
        let mut est = DeliveryRateEstimator::new();
        let a = est.on_send(t(0), true);
        est.mark_app_limited(1000);
        let b = est.on_send(t(1), false);
        assert!(!a.is_app_limited && b.is_app_limited);
        est.on_delivered(t(20), &a, t(0), false, 1000);
        assert!(!est.generate(t(20), None).unwrap().is_app_limited);
        assert!(est.is_app_limited(), "the bubble lasts until more than its 1000 bytes are delivered");
        est.on_delivered(t(21), &b, t(1), false, 1000);
        assert!(est.generate(t(21), None).unwrap().is_app_limited);
        assert!(!est.is_app_limited());
    }

    #[test]
    fn an_ack_that_delivers_nothing_has_no_sample() {
        let mut est = DeliveryRateEstimator::new();
        est.on_send(t(0), true);
        assert_eq!(est.generate(t(10), None), None);
    }

    #[test]
    fn a_round_ends_when_a_packet_sent_after_it_began_is_delivered() {
        let mut est = DeliveryRateEstimator::new();
        let mut rounds = RoundCounter::default();
        let first = est.on_send(t(0), true);
        let second = est.on_send(t(1), false);
        est.on_delivered(t(10), &first, t(0), false, 1000);
        let rs = est.generate(t(10), None);
        assert!(rounds.on_ack(rs.as_ref(), est.delivered()), "the first ACK starts round 1");
        // `second` was sent before round 1 began (delivered = 0 < 1000): same round.
        est.on_delivered(t(11), &second, t(1), false, 1000);
        let rs = est.generate(t(11), None);
        assert!(!rounds.on_ack(rs.as_ref(), est.delivered()));
        let third = est.on_send(t(11), true);
        est.on_delivered(t(21), &third, t(11), false, 1000);
        let rs = est.generate(t(21), None);
        assert!(rounds.on_ack(rs.as_ref(), est.delivered()));
        assert_eq!(rounds.count, 2);
    }
}
