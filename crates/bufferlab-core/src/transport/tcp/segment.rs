//! A segment of the sender's window as the scoreboard (RFC 6675) keeps it and RACK (RFC 8985)
//! judges it, and RACK's order of transmissions: the vocabulary the two share, below both, so
//! that neither needs the other's module.

use crate::cc::delivery_rate::TxSnapshot;
use crate::units::SimTime;

/// A segment of the window: its sequence range, its latest transmission and what the ACKs have
/// said of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub len: u32,
    /// Time of the segment's latest transmission.
    pub sent_time: SimTime,
    pub sacked: bool,
    pub lost: bool,
    /// A retransmission of this segment is in flight (counted back into pipe).
    pub retransmitted: bool,
    /// The segment was ever retransmitted: Karn's rule forbids RTT samples from it.
    pub ever_retransmitted: bool,
    /// Delivery-rate state at the latest transmission (draft-cheng-iccrg-delivery-rate-estimation).
    pub tx: TxSnapshot,
    /// Once SACKed: how many segments ahead the next unSACKed segment may be (at least 1). The
    /// distance is relative, so it survives the removal of segments at the front. Kept by the
    /// scoreboard (its disjoint-set links); no one else reads it.
    pub(super) skip: u32,
}

impl Segment {
    /// A segment as it first leaves: neither SACKed nor lost.
    pub fn new(start: u64, len: u32, sent_time: SimTime, tx: TxSnapshot) -> Self {
        Segment {
            start,
            len,
            sent_time,
            sacked: false,
            lost: false,
            retransmitted: false,
            ever_retransmitted: false,
            tx,
            skip: 1,
        }
    }

    pub fn end(&self) -> u64 {
        self.start + self.len as u64
    }
}

/// RFC 8985 §6.2 RACK_sent_after(t1, seq1, t2, seq2): transmission 1 left after transmission 2;
/// segments sent at the same instant are ordered by sequence.
pub fn sent_after(t1: SimTime, seq1: u64, t2: SimTime, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// The most recently sent delivered segment (RFC 8985 §6.1 RACK.xmit_ts, RACK.end_seq) and the
/// RTT of its delivery (RACK.rtt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RackReference {
    pub xmit_ts: SimTime,
    pub end_seq: u64,
    pub rtt: SimTime,
}
