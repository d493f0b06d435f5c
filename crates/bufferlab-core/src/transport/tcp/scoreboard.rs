//! The sender's scoreboard of outstanding segments (RFC 6675 §3), with the counters that make
//! `pipe` an O(1) quantity.
//!
//! Segments are kept in sequence order from SND.UNA to SND.NXT. Every segment starts on a multiple
//! of the MSS from sequence number 1 (only the last segment of a stream may be short), so a
//! sequence number maps to its segment by division: no search per ACK.
//!
//! Loss marking follows RFC 6675's IsLost(): a segment is lost once DupThresh segments above it
//! have been SACKed. The number of SACKed segments above a segment never decreases while it is
//! outstanding, so the lost segments always form a prefix below a boundary: the DupThresh-th
//! highest SACKed segment. Moving that boundary marks each segment at most once.

use crate::cc::delivery_rate::{DeliveryRateEstimator, TxSnapshot};
use crate::net::packet::SackBlock;
use crate::units::SimTime;
use std::collections::VecDeque;

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
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.start + self.len as u64
    }
}

/// What a cumulative acknowledgement removed from the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CumulativeAck {
    pub bytes: u64,
    pub segments: u64,
    /// The highest segment acknowledged, if any.
    pub newest: Option<Segment>,
    /// Bytes acknowledged that had already been SACKed (delivered earlier).
    pub previously_sacked_bytes: u64,
}

#[derive(Debug)]
pub struct Scoreboard {
    segments: VecDeque<Segment>,
    mss: u64,
    outstanding_bytes: u64,
    sacked_bytes: u64,
    lost_bytes: u64,
    retransmitted_bytes: u64,
    sacked_segments: u64,
    /// End of the highest SACKed byte (0 when nothing above SND.UNA is SACKed).
    highest_sacked_end: u64,
    /// Unsacked segments starting below this sequence number are lost.
    lost_boundary: u64,
    /// No lost, unretransmitted segment starts below this sequence number.
    retransmit_hint: u64,
}

impl Scoreboard {
    /// Give back the memory of an empty scoreboard.
    pub fn shrink_to_fit(&mut self) {
        self.segments.shrink_to_fit();
    }

    pub fn new(mss: u32) -> Self {
        Scoreboard {
            // Grows with the window; a mouse of a few segments never pays for a large one.
            segments: VecDeque::with_capacity(16),
            mss: mss as u64,
            outstanding_bytes: 0,
            sacked_bytes: 0,
            lost_bytes: 0,
            retransmitted_bytes: 0,
            sacked_segments: 0,
            highest_sacked_end: 0,
            lost_boundary: 0,
            retransmit_hint: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn outstanding_bytes(&self) -> u64 {
        self.outstanding_bytes
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// RFC 6675 §4 SetPipe(), kept incrementally: every outstanding segment that is neither SACKed
    /// nor lost counts once, and every retransmission in flight counts once more.
    pub fn pipe(&self) -> u64 {
        self.outstanding_bytes - self.sacked_bytes - self.lost_bytes + self.retransmitted_bytes
    }

    pub fn first(&self) -> Option<&Segment> {
        self.segments.front()
    }

    pub fn get(&self, index: usize) -> &Segment {
        &self.segments[index]
    }

    fn index_of(&self, seq: u64) -> usize {
        let front = self.segments.front().expect("index into an empty scoreboard").start;
        ((seq - 1) / self.mss - (front - 1) / self.mss) as usize
    }

    /// Record a new segment sent at SND.NXT.
    pub fn push(&mut self, start: u64, len: u32, now: SimTime, tx: TxSnapshot) {
        debug_assert!(self.segments.back().is_none_or(|s| s.end() == start));
        self.outstanding_bytes += len as u64;
        self.segments.push_back(Segment {
            start,
            len,
            sent_time: now,
            sacked: false,
            lost: false,
            retransmitted: false,
            ever_retransmitted: false,
            tx,
        });
    }

    /// Remove every segment wholly below `ack` (a cumulative acknowledgement); segments not
    /// SACKed before are delivered now, at `now`, to the rate estimator.
    pub fn ack_up_to(&mut self, ack: u64, now: SimTime, rate: &mut DeliveryRateEstimator) -> CumulativeAck {
        let mut result = CumulativeAck::default();
        while let Some(seg) = self.segments.front() {
            if seg.end() > ack {
                break;
            }
            let seg = self.segments.pop_front().expect("front exists");
            let len = seg.len as u64;
            self.outstanding_bytes -= len;
            if seg.sacked {
                self.sacked_bytes -= len;
                self.sacked_segments -= 1;
                result.previously_sacked_bytes += len;
            } else {
                if seg.lost {
                    self.lost_bytes -= len;
                }
                rate.on_delivered(now, &seg.tx, seg.sent_time, seg.ever_retransmitted, len);
            }
            if seg.retransmitted {
                self.retransmitted_bytes -= len;
            }
            result.bytes += len;
            result.segments += 1;
            result.newest = Some(seg);
        }
        if self.segments.is_empty() {
            self.highest_sacked_end = 0;
        }
        result
    }

    /// Mark the segments wholly inside a SACK block, delivering them at `now` to the rate
    /// estimator; returns the bytes newly SACKed.
    pub fn sack(&mut self, block: SackBlock, now: SimTime, rate: &mut DeliveryRateEstimator) -> u64 {
        let Some(front) = self.segments.front() else { return 0 };
        let start = block.start.max(front.start);
        let end = block.end.min(self.segments.back().expect("non-empty").end());
        if start >= end {
            return 0;
        }
        let mut newly = 0;
        let mut i = self.index_of(start);
        while i < self.segments.len() {
            let seg = &mut self.segments[i];
            if seg.end() > end {
                break;
            }
            if seg.start >= start && !seg.sacked {
                seg.sacked = true;
                let len = seg.len as u64;
                newly += len;
                self.sacked_bytes += len;
                self.sacked_segments += 1;
                if seg.lost {
                    seg.lost = false;
                    self.lost_bytes -= len;
                }
                if seg.retransmitted {
                    seg.retransmitted = false;
                    self.retransmitted_bytes -= len;
                }
                self.highest_sacked_end = self.highest_sacked_end.max(seg.end());
                rate.on_delivered(now, &seg.tx, seg.sent_time, seg.ever_retransmitted, len);
            }
            i += 1;
        }
        newly
    }

    /// RFC 6675 IsLost() applied to the whole scoreboard: move the loss boundary up to the
    /// `dupthresh`-th highest SACKed segment and mark every unsacked segment below it as lost.
    /// Returns the bytes newly marked lost.
    pub fn mark_losses(&mut self, dupthresh: u32) -> u64 {
        if self.sacked_segments < dupthresh as u64 || self.highest_sacked_end == 0 {
            return 0;
        }
        let mut i = self.index_of(self.highest_sacked_end - 1);
        let mut found = 0;
        let boundary = loop {
            let seg = &self.segments[i];
            if seg.start < self.lost_boundary {
                return 0; // the boundary cannot move below where it already is
            }
            if seg.sacked {
                found += 1;
                if found == dupthresh {
                    break seg.start;
                }
            }
            if i == 0 {
                return 0;
            }
            i -= 1;
        };
        self.mark_lost_below(boundary)
    }

    /// Mark every unsacked segment starting below `boundary` as lost; returns the bytes newly lost.
    fn mark_lost_below(&mut self, boundary: u64) -> u64 {
        let Some(front) = self.segments.front() else { return 0 };
        let from = self.lost_boundary.max(front.start);
        if boundary <= from {
            return 0;
        }
        let before = self.lost_bytes;
        let mut i = self.index_of(from);
        while i < self.segments.len() && self.segments[i].start < boundary {
            let seg = &mut self.segments[i];
            if !seg.sacked && !seg.lost {
                seg.lost = true;
                self.lost_bytes += seg.len as u64;
            }
            i += 1;
        }
        self.lost_boundary = boundary;
        self.lost_bytes - before
    }

    /// Without SACK (RFC 6582), loss is inferred for the first unacknowledged segment only.
    pub fn mark_first_lost(&mut self) -> u64 {
        match self.segments.front() {
            Some(front) => {
                let end = front.end();
                self.mark_lost_below(end)
            }
            None => 0,
        }
    }

    pub fn first_is_lost(&self) -> bool {
        self.segments.front().is_some_and(|s| s.lost)
    }

    /// After a retransmission timeout every unsacked segment is presumed lost and no
    /// retransmission is any longer counted in flight (RFC 6675 §5.1; RFC 5681 §3.1).
    /// Returns the bytes newly marked lost.
    pub fn mark_all_lost(&mut self) -> u64 {
        let before = self.lost_bytes;
        for seg in self.segments.iter_mut() {
            if !seg.sacked && !seg.lost {
                seg.lost = true;
                self.lost_bytes += seg.len as u64;
            }
            seg.retransmitted = false;
        }
        self.retransmitted_bytes = 0;
        self.retransmit_hint = 0;
        self.lost_boundary = self.segments.back().map_or(0, |s| s.end());
        self.lost_bytes - before
    }

    /// RFC 6675 NextSeg() rule 1: the first lost segment not yet retransmitted.
    pub fn next_retransmission(&mut self) -> Option<usize> {
        let front = self.segments.front()?.start;
        let from = self.retransmit_hint.max(front);
        if from >= self.lost_boundary {
            return None;
        }
        let mut i = self.index_of(from);
        while i < self.segments.len() {
            let seg = &self.segments[i];
            if seg.start >= self.lost_boundary {
                break;
            }
            if seg.lost && !seg.retransmitted && !seg.sacked {
                self.retransmit_hint = seg.start;
                return Some(i);
            }
            i += 1;
        }
        self.retransmit_hint = self.lost_boundary;
        None
    }

    /// Record the retransmission of segment `index`.
    pub fn retransmit(&mut self, index: usize, now: SimTime, tx: TxSnapshot) -> Segment {
        let seg = &mut self.segments[index];
        debug_assert!(seg.lost && !seg.retransmitted);
        seg.retransmitted = true;
        seg.ever_retransmitted = true;
        seg.sent_time = now;
        seg.tx = tx;
        self.retransmitted_bytes += seg.len as u64;
        *seg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 100;

    fn rate() -> DeliveryRateEstimator {
        DeliveryRateEstimator::new()
    }

    /// A scoreboard with `n` full segments outstanding, starting at sequence number 1.
    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::new(MSS);
        for k in 0..n {
            sb.push(1 + k * MSS as u64, MSS, SimTime::ZERO, TxSnapshot::default());
        }
        sb
    }

    fn sack_segments(sb: &mut Scoreboard, from: u64, to: u64) -> u64 {
        sb.sack(SackBlock { start: 1 + from * MSS as u64, end: 1 + to * MSS as u64 }, SimTime::ZERO, &mut rate())
    }

    #[test]
    fn pipe_counts_every_unsacked_segment_before_loss() {
        let sb = board(10);
        assert_eq!(sb.pipe(), 1000);
    }

    #[test]
    fn a_segment_is_lost_once_dupthresh_segments_above_it_are_sacked() {
        let mut sb = board(10);
        sack_segments(&mut sb, 1, 3);
        sb.mark_losses(3);
        assert!(!sb.first_is_lost(), "two SACKed segments above are not enough");
        sack_segments(&mut sb, 3, 4);
        sb.mark_losses(3);
        assert!(sb.first_is_lost());
        // 10 outstanding - 3 SACKed - 1 lost.
        assert_eq!(sb.pipe(), 600);
    }

    #[test]
    fn retransmission_in_flight_counts_back_into_pipe() {
        let mut sb = board(10);
        sack_segments(&mut sb, 1, 4);
        sb.mark_losses(3);
        let i = sb.next_retransmission().expect("segment 0 is lost");
        assert_eq!(i, 0);
        sb.retransmit(i, SimTime::ZERO, TxSnapshot::default());
        assert_eq!(sb.pipe(), 700);
        assert_eq!(sb.next_retransmission(), None);
    }

    #[test]
    fn holes_below_the_third_highest_sack_are_all_lost() {
        let mut sb = board(20);
        // SACK segments 2, 5, 8, 9: holes at 0, 1, 3, 4, 6, 7.
        for k in [2, 5, 8, 9] {
            sack_segments(&mut sb, k, k + 1);
        }
        sb.mark_losses(3);
        // Third-highest SACKed is segment 5: segments 0, 1, 3, 4 are lost; 6 and 7 are not.
        let lost: Vec<bool> = (0..10).map(|k| sb.get(k).lost).collect();
        assert_eq!(lost, [true, true, false, true, true, false, false, false, false, false]);
    }

    #[test]
    fn cumulative_ack_removes_segments_and_their_counts() {
        let mut sb = board(10);
        sack_segments(&mut sb, 2, 5);
        sb.mark_losses(3);
        let ack = sb.ack_up_to(1 + 5 * MSS as u64, SimTime::ZERO, &mut rate());
        assert_eq!((ack.bytes, ack.segments, ack.previously_sacked_bytes), (500, 5, 300));
        assert_eq!(sb.pipe(), 500);
        assert_eq!(sb.sacked_bytes(), 0);
    }

    #[test]
    fn timeout_marks_every_unsacked_segment_lost() {
        let mut sb = board(5);
        sack_segments(&mut sb, 3, 4);
        sb.mark_all_lost();
        assert_eq!(sb.pipe(), 0);
        let order: Vec<usize> = std::iter::from_fn(|| {
            let i = sb.next_retransmission()?;
            sb.retransmit(i, SimTime::ZERO, TxSnapshot::default());
            Some(i)
        })
        .collect();
        assert_eq!(order, vec![0, 1, 2, 4]);
    }

    #[test]
    fn sack_of_partial_segment_marks_nothing() {
        let mut sb = board(3);
        assert_eq!(sb.sack(SackBlock { start: 150, end: 250 }, SimTime::ZERO, &mut rate()), 0);
    }
}
