//! RACK, the time-based half of RACK-TLP (RFC 8985 §6): a segment is lost once a segment sent
//! after it has been delivered and it has not arrived within RACK.rtt plus a reordering window.
//!
//! This module keeps RACK's state (the most recently sent delivered segment, the forward-most
//! acknowledged sequence, whether reordering was seen) and computes the reordering window; the
//! scoreboard applies the loss rule to its segments (`Scoreboard::rack_detect_losses`) and the
//! sender runs the reordering timer and the tail loss probe (§7).

// The segment, the transmission order and the reference live in their own module, shared with
// the scoreboard; their old paths here stay.
use super::segment::Segment;
pub use super::segment::{sent_after, RackReference};
use crate::units::SimTime;

#[derive(Debug, Clone, Default)]
pub struct Rack {
    reference: Option<RackReference>,
    /// RACK.fack: the highest sequence selectively or cumulatively acknowledged.
    fack: u64,
    /// RACK.fack before the ACK being processed: the segments one ACK delivers are judged
    /// against it, not against each other.
    fack_before_ack: u64,
    /// RACK.reordering_seen: a segment never retransmitted was delivered below RACK.fack.
    reordering_seen: bool,
}

impl Rack {
    pub fn reference(&self) -> Option<RackReference> {
        self.reference
    }

    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    /// An ACK arrives: the segments it delivers follow.
    pub fn begin_ack(&mut self) {
        self.fack_before_ack = self.fack;
    }

    /// RFC 8985 §6.2 steps 2 and 3 for a segment newly delivered (SACKed or cumulatively
    /// acknowledged) by an ACK at `now`.
    pub fn on_delivered(&mut self, seg: &Segment, now: SimTime, min_rtt: Option<SimTime>) {
        // Step 3, RACK_detect_reordering. The RFC walks an ACK's segments in the order they were
        // sent; the scoreboard meets its SACK blocks before the cumulative point, so a segment
        // is compared with the forward-most delivery of earlier ACKs only (as Linux compares
        // with its prior_fack). Otherwise a delayed ACK's segment, acknowledged together with the
        // out-of-order segment that ended the delay, would count as reordered.
        self.fack = self.fack.max(seg.end());
        if seg.end() <= self.fack_before_ack && !seg.ever_retransmitted {
            self.reordering_seen = true;
        }
        // Step 2, RACK_update: an ACK for a retransmitted segment may have been caused by the
        // original; it is ignored if it came back faster than the minimum RTT. (The RFC also
        // ignores it if the echoed timestamp predates the retransmission; Linux does not, and
        // rightly for SACKed segments: an RFC 7323 receiver echoes the timestamp of the window's
        // left edge for a segment that arrives out of order, so every SACKed retransmission
        // would look older than it is.)
        let rtt = now - seg.sent_time;
        if seg.ever_retransmitted && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        let newer = self.reference.is_none_or(|r| sent_after(seg.sent_time, seg.end(), r.xmit_ts, r.end_seq));
        if newer {
            self.reference = Some(RackReference { xmit_ts: seg.sent_time, end_seq: seg.end(), rtt });
        }
    }

    /// RFC 8985 §6.2 step 4, RACK_update_reo_wnd, without DSACK (the multiplier stays 1): zero
    /// while no reordering has been seen and the sender is in recovery or DupThresh segments are
    /// SACKed (so RACK is at least as fast as RFC 6675), else min(RACK.min_RTT / 4, SRTT).
    pub fn reordering_window(
        &self,
        in_recovery: bool,
        sacked_segments: u64,
        dupthresh: u32,
        min_rtt: SimTime,
        srtt: SimTime,
    ) -> SimTime {
        if !self.reordering_seen && (in_recovery || sacked_segments >= dupthresh as u64) {
            return SimTime::ZERO;
        }
        min_rtt.div(4).min(srtt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::delivery_rate::TxSnapshot;

    fn seg(k: u64, sent_ms: u64, retransmitted: bool) -> Segment {
        let mut seg = Segment::new(1 + k * 100, 100, SimTime::from_ms(sent_ms), TxSnapshot::default());
        seg.retransmitted = retransmitted;
        seg.ever_retransmitted = retransmitted;
        seg
    }

    #[test]
    fn the_reference_is_the_most_recently_sent_delivered_segment() {
        let mut rack = Rack::default();
        rack.begin_ack();
        rack.on_delivered(&seg(5, 10, false), SimTime::from_ms(60), None);
        rack.begin_ack();
        rack.on_delivered(&seg(3, 8, false), SimTime::from_ms(61), None);
        let r = rack.reference().unwrap();
        assert_eq!((r.xmit_ts, r.end_seq, r.rtt), (SimTime::from_ms(10), 601, SimTime::from_ms(50)));
        assert!(rack.reordering_seen(), "segment 3 arrived after segment 5 and was never retransmitted");
    }

    #[test]
    fn segments_delivered_by_one_ack_are_not_reordered_among_themselves() {
        // A delayed ACK for segment 3 leaves with the SACK of segment 5 (4 was lost): the
        // scoreboard hands over the SACKed segment first, then the cumulatively acknowledged one.
        let mut rack = Rack::default();
        rack.begin_ack();
        rack.on_delivered(&seg(5, 10, false), SimTime::from_ms(60), None);
        rack.on_delivered(&seg(3, 8, false), SimTime::from_ms(60), None);
        assert!(!rack.reordering_seen());
        // Segment 4 arriving only now, never retransmitted, was overtaken: that is reordering.
        rack.begin_ack();
        rack.on_delivered(&seg(4, 9, false), SimTime::from_ms(62), None);
        assert!(rack.reordering_seen());
    }

    #[test]
    fn a_retransmission_acknowledged_faster_than_min_rtt_is_ignored() {
        let mut rack = Rack::default();
        rack.on_delivered(&seg(1, 10, false), SimTime::from_ms(60), None);
        // Retransmitted at 100 ms, acknowledged at 110 ms: the ACK was for the original.
        rack.on_delivered(&seg(0, 100, true), SimTime::from_ms(110), Some(SimTime::from_ms(50)));
        assert_eq!(rack.reference().unwrap().xmit_ts, SimTime::from_ms(10));
        assert!(!rack.reordering_seen(), "a retransmitted segment below RACK.fack is no reordering");
        // Acknowledged 50 ms after the retransmission: it counts.
        rack.on_delivered(&seg(2, 100, true), SimTime::from_ms(150), Some(SimTime::from_ms(50)));
        assert_eq!(rack.reference().unwrap().xmit_ts, SimTime::from_ms(100));
    }

    #[test]
    fn the_window_is_a_quarter_min_rtt_until_dupthresh_sacks_without_reordering() {
        let mut rack = Rack::default();
        let (min_rtt, srtt) = (SimTime::from_ms(100), SimTime::from_ms(120));
        assert_eq!(rack.reordering_window(false, 2, 3, min_rtt, srtt), SimTime::from_ms(25));
        assert_eq!(rack.reordering_window(false, 3, 3, min_rtt, srtt), SimTime::ZERO);
        assert_eq!(rack.reordering_window(true, 0, 3, min_rtt, srtt), SimTime::ZERO);
        rack.reordering_seen = true;
        assert_eq!(rack.reordering_window(true, 5, 3, min_rtt, srtt), SimTime::from_ms(25));
        assert_eq!(rack.reordering_window(false, 0, 3, min_rtt, SimTime::from_ms(10)), SimTime::from_ms(10));
    }
}
