//! A QUIC sender's ECN: which codepoint its packets carry, the validation of the path's ECN
//! (RFC 9000 §13.4.2) and the conversion of an ACK frame's CE count into the bytes a controller
//! reads (`AckSample::ce_marked_bytes`).
//!
//! Validation. A path may bleach the ECN field (clear it to Not-ECT), or a receiver may not
//! report the codepoints, or a network element may rewrite them. The sender cannot see this
//! from one packet; it sees it in the ACK frames' ECN counts (RFC 9000 §19.3.2), which are
//! cumulative counts of the packets received with each codepoint. For every ACK frame that
//! newly acknowledges packets and raises the largest acknowledged packet number (a reordered
//! frame must not fail validation, §13.4.2.1), the increase of the counts since the last frame
//! that passed is checked against the packets this frame newly acknowledges:
//!
//! - no count may decrease (the counts are cumulative);
//! - the increase of the sender's ECT count plus that of the CE count must be at least the
//!   number of newly acknowledged packets sent ECT: fewer means that the path cleared or
//!   rewrote the field (a bleached path, or a receiver that reports nothing, gives no increase);
//! - the count of the sender's ECT codepoint may not exceed the packets sent with it, and the
//!   other ECT codepoint, never applied, must stay at zero (the network remarked packets).
//!
//! More may be counted than acknowledged (an ACK frame reports at most three ranges, and a lost
//! ACK frame's packets may be acknowledged later or never), so only too few fail. A frame that
//! passes becomes the reference for the next one; the first that passes while newly
//! acknowledging an ECT packet makes the path ECN-capable. Before it, while testing, the sender
//! also watches for the case §13.4.2 names: every ECT packet lost, as a path that drops ECT
//! packets would have it; [`TEST_PACKETS`] of them lost with none acknowledged fail validation.
//! A failure is final for the connection (§13.4.2.2: the endpoint MUST disable ECN; it MAY try
//! again later, which this sender does not): every later packet leaves Not-ECT, and the counts
//! are no longer read, so a CE mark cannot reach the controller.
//!
//! From counts to bytes. A count says how many of the newly acknowledged packets were marked,
//! not which: the sender cannot tell CE packets' sizes from the others'. It takes each of the
//! frame's N newly acknowledged packets as marked with the same share, min(ΔCE, N)/N (ΔCE can
//! exceed N when earlier ACK frames were lost), so that of the `bytes_acked` the ACK counts,
//! `bytes_acked · min(ΔCE, N) / N` are CE-marked: ΔCE times the mean size of the packets the
//! sample counts. With full-sized packets, as a bulk transfer sends, this is exact.

use crate::net::packet::{Ecn, EcnCounts};
use crate::spec::QuicEcn;

/// ECT packets lost, with none acknowledged, that fail validation while testing (RFC 9000
/// §13.4.2: "the first ten outgoing packets on a path").
pub const TEST_PACKETS: u64 = 10;

/// RFC 9000 Appendix A.4's states, less "unknown": this sender marks every packet while it tests
/// (§13.4.2's "early outgoing packets"). A.4's sender marks only a testing period's packets (ten,
/// or three PTOs) and sends Not-ECT ("unknown") until an ACK frame validates one of them. Here that
/// state would never be entered: a connection sends its Initial alone and waits for its ACK, whose
/// counts validate the path (or fail it, on a bleaching link) before the second packet leaves. The
/// state matters on a path that drops ECT packets, which no link model here is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnState {
    /// Packets leave ECT; no ACK frame has shown yet that the path carries the codepoint.
    Testing,
    /// An ACK frame's counts validated packets sent ECT.
    Capable,
    /// Validation failed, or the connection does not use ECN: packets leave Not-ECT.
    Failed,
}

/// Why validation failed (RFC 9000 §13.4.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnFailure {
    /// A count fell below the reference.
    Decreased,
    /// Fewer ECT and CE packets counted than ECT packets newly acknowledged: the field was
    /// cleared (bleached) on the way, or the receiver does not report it.
    Missing,
    /// More packets counted with an ECT codepoint than were sent with it.
    Remarked,
    /// Every ECT packet of the test lost.
    Lost,
}

#[derive(Debug, Clone)]
pub struct EcnValidation {
    state: EcnState,
    /// The codepoint packets carry while the state allows: ECT(0), or ECT(1) for L4S.
    ect: Ecn,
    /// Packets sent with `ect`.
    sent: u64,
    /// ECT packets newly acknowledged, and declared lost, so far.
    acked: u64,
    lost: u64,
    /// The counts of the last ACK frame that passed (zero before the first).
    reference: EcnCounts,
    /// Why it failed, if it did.
    pub failure: Option<EcnFailure>,
}

/// What one ACK frame's counts told, once checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EcnFeedback {
    /// Packets newly reported CE (the CE count's increase), 0 unless the frame passed.
    pub ce_increase: u32,
}

impl EcnValidation {
    pub fn new(mode: QuicEcn) -> Self {
        let (state, ect) = match mode {
            QuicEcn::Off => (EcnState::Failed, Ecn::NotEct),
            QuicEcn::Classic => (EcnState::Testing, Ecn::Ect0),
            QuicEcn::L4s => (EcnState::Testing, Ecn::Ect1),
        };
        EcnValidation { state, ect, sent: 0, acked: 0, lost: 0, reference: EcnCounts::default(), failure: None }
    }

    pub fn state(&self) -> EcnState {
        self.state
    }

    /// The codepoint of the next packet: the connection's ECT unless validation failed
    /// (RFC 9000 §13.4: data sent again is ECT as well, a new packet carrying it).
    pub fn codepoint(&self) -> Ecn {
        if self.state == EcnState::Failed {
            Ecn::NotEct
        } else {
            self.ect
        }
    }

    /// A packet left with `codepoint`.
    pub fn on_sent(&mut self, codepoint: Ecn) {
        self.sent += (codepoint != Ecn::NotEct) as u64;
    }

    /// Loss detection declared `ect_lost` ECT packets lost.
    pub fn on_lost(&mut self, ect_lost: u64) {
        self.lost += ect_lost;
        if self.state == EcnState::Testing && self.acked == 0 && self.lost >= TEST_PACKETS {
            self.fail(EcnFailure::Lost);
        }
    }

    fn fail(&mut self, why: EcnFailure) {
        self.state = EcnState::Failed;
        self.failure = Some(why);
    }

    /// An ACK frame with `counts` newly acknowledged `newly_ect` packets sent ECT (and others);
    /// `raises_largest`: it raised the largest acknowledged packet number. RFC 9000 §13.4.2.1's
    /// checks; the CE count's increase if the frame passed.
    pub fn on_ack_frame(&mut self, counts: EcnCounts, newly_ect: u64, raises_largest: bool) -> EcnFeedback {
        if self.state == EcnState::Failed || !raises_largest {
            return EcnFeedback::default();
        }
        self.acked += newly_ect;
        // Counts are kept modulo 2³²: an increase beyond half the range is a decrease.
        let increase = |now: u32, before: u32| {
            let d = now.wrapping_sub(before);
            (d <= u32::MAX / 2).then_some(d as u64)
        };
        let r = self.reference;
        let (Some(ect0), Some(ect1), Some(ce)) =
            (increase(counts.ect0, r.ect0), increase(counts.ect1, r.ect1), increase(counts.ce, r.ce))
        else {
            self.fail(EcnFailure::Decreased);
            return EcnFeedback::default();
        };
        let (own, own_total, other_total) = match self.ect {
            Ecn::Ect1 => (ect1, counts.ect1, counts.ect0),
            _ => (ect0, counts.ect0, counts.ect1),
        };
        if own + ce < newly_ect {
            self.fail(EcnFailure::Missing);
            return EcnFeedback::default();
        }
        if own_total as u64 > self.sent || other_total > 0 {
            self.fail(EcnFailure::Remarked);
            return EcnFeedback::default();
        }
        self.reference = counts;
        if newly_ect > 0 {
            self.state = EcnState::Capable;
        }
        EcnFeedback { ce_increase: ce as u32 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(ect0: u32, ect1: u32, ce: u32) -> EcnCounts {
        EcnCounts { ect0, ect1, ce }
    }

    #[test]
    fn counts_that_keep_up_with_the_ect_packets_validate_the_path() {
        let mut v = EcnValidation::new(QuicEcn::Classic);
        assert_eq!(v.codepoint(), Ecn::Ect0);
        (0..5).for_each(|_| v.on_sent(Ecn::Ect0));
        // Three acknowledged, one of them CE.
        assert_eq!(v.on_ack_frame(counts(2, 0, 1), 3, true), EcnFeedback { ce_increase: 1 });
        assert_eq!(v.state(), EcnState::Capable);
        // A reordered frame (largest not raised) with smaller counts is ignored, not failed.
        assert_eq!(v.on_ack_frame(counts(1, 0, 0), 1, false), EcnFeedback::default());
        assert_eq!(v.state(), EcnState::Capable);
        // More counted than acknowledged (a lost ACK frame) is fine.
        assert_eq!(v.on_ack_frame(counts(3, 0, 2), 1, true), EcnFeedback { ce_increase: 1 });
        assert_eq!(v.state(), EcnState::Capable);
    }

    #[test]
    fn a_bleached_path_fails_validation_and_stops_the_marking() {
        let mut v = EcnValidation::new(QuicEcn::L4s);
        assert_eq!(v.codepoint(), Ecn::Ect1);
        (0..3).for_each(|_| v.on_sent(Ecn::Ect1));
        // The packets arrived Not-ECT: the counts stay at zero.
        assert_eq!(v.on_ack_frame(counts(0, 0, 0), 2, true), EcnFeedback::default());
        assert_eq!((v.state(), v.failure), (EcnState::Failed, Some(EcnFailure::Missing)));
        assert_eq!(v.codepoint(), Ecn::NotEct);
        // Nothing is read any more, CE or not.
        assert_eq!(v.on_ack_frame(counts(0, 3, 3), 1, true), EcnFeedback::default());
    }

    #[test]
    fn decreasing_or_remarked_counts_fail_validation() {
        let mut v = EcnValidation::new(QuicEcn::Classic);
        (0..4).for_each(|_| v.on_sent(Ecn::Ect0));
        v.on_ack_frame(counts(2, 0, 0), 2, true);
        v.on_ack_frame(counts(1, 0, 1), 1, true);
        assert_eq!(v.failure, Some(EcnFailure::Decreased));

        let mut v = EcnValidation::new(QuicEcn::Classic);
        (0..4).for_each(|_| v.on_sent(Ecn::Ect0));
        v.on_ack_frame(counts(2, 1, 0), 2, true);
        assert_eq!(v.failure, Some(EcnFailure::Remarked), "ECT(1) counted, never sent");

        let mut v = EcnValidation::new(QuicEcn::Classic);
        (0..2).for_each(|_| v.on_sent(Ecn::Ect0));
        v.on_ack_frame(counts(3, 0, 0), 2, true);
        assert_eq!(v.failure, Some(EcnFailure::Remarked), "more ECT(0) than sent");
    }

    #[test]
    fn ten_ect_packets_lost_with_none_acknowledged_fail_the_test() {
        let mut v = EcnValidation::new(QuicEcn::Classic);
        (0..12).for_each(|_| v.on_sent(Ecn::Ect0));
        v.on_lost(9);
        assert_eq!(v.state(), EcnState::Testing);
        v.on_lost(1);
        assert_eq!((v.state(), v.failure), (EcnState::Failed, Some(EcnFailure::Lost)));
        // Once one was acknowledged, losses are congestion, not a path that drops ECT.
        let mut v = EcnValidation::new(QuicEcn::Classic);
        (0..12).for_each(|_| v.on_sent(Ecn::Ect0));
        v.on_ack_frame(counts(1, 0, 0), 1, true);
        v.on_lost(11);
        assert_eq!(v.state(), EcnState::Capable);
    }

    #[test]
    fn without_ecn_nothing_is_marked_or_read() {
        let mut v = EcnValidation::new(QuicEcn::Off);
        assert_eq!(v.codepoint(), Ecn::NotEct);
        assert_eq!(v.on_ack_frame(counts(0, 0, 5), 0, true), EcnFeedback::default());
        assert_eq!(v.failure, None);
    }
}
