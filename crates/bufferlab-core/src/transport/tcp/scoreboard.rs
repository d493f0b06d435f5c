//! The sender's scoreboard of outstanding segments (RFC 6675 §3), kept so that no ACK walks the
//! window: every operation costs O(log n) or, amortised, O(1) per segment it changes.
//!
//! Segments are kept in sequence order from SND.UNA to SND.NXT. Every segment starts on a multiple
//! of the MSS from sequence number 1 (only the last segment of a stream may be short), so a
//! sequence number maps to its segment by division: no search per ACK. What RFC 6675's SetPipe()
//! and the loss rules recount from the whole scoreboard is kept incrementally instead:
//!
//! - `pipe` comes from byte counters (outstanding, SACKed, lost, retransmitted in flight).
//! - A SACK block skips the segments SACKed before: each SACKed segment links to a later segment
//!   where the next unSACKed one may be (a disjoint-set forest with path halving, as in Tarjan &
//!   van Leeuwen 1984), so a block that grows by one segment per ACK costs O(1), not its length.
//! - Loss marking follows RFC 6675's IsLost(): a segment is lost once DupThresh segments above it
//!   have been SACKed. The number of SACKed segments above a segment never decreases while it is
//!   outstanding, so the lost segments always form a prefix below a boundary: the DupThresh-th
//!   highest SACKed segment, read from the DupThresh highest SACKed segments kept in order.
//!   Moving that boundary marks each segment at most once.
//! - RACK (RFC 8985) marks by time instead, and keeps the same prefix: never-retransmitted
//!   segments leave in sequence order, so those a delivery proves lost form a prefix of the ones
//!   above the boundary. Retransmissions, which RACK can also find lost, are kept in the order
//!   they left (RFC 8985 §6.2 keeps segments in transmission order for the same reason).
//! - NextSeg() rule 1 (the lowest lost segment not yet retransmitted) reads a cursor that only
//!   moves forward between timeouts, plus a min-heap of the retransmissions RACK found lost below
//!   the cursor.

use super::rack::{sent_after, RackReference};
use crate::cc::delivery_rate::TxSnapshot;
use crate::memory::HeapBytes;
use crate::net::packet::SackBlock;
use crate::units::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
    /// distance is relative, so it survives the removal of segments at the front.
    skip: u32,
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
    /// RFC 6675 DupThresh: SACKed segments above a segment that make it lost.
    dupthresh: usize,
    outstanding_bytes: u64,
    sacked_bytes: u64,
    lost_bytes: u64,
    retransmitted_bytes: u64,
    sacked_segments: u64,
    /// Starts of the DupThresh highest SACKed segments (all of them when fewer are SACKed), in
    /// ascending order: the first is the IsLost() boundary once there are DupThresh of them.
    highest_sacked: VecDeque<u64>,
    /// Unsacked segments starting below this sequence number are lost.
    lost_boundary: u64,
    /// The retransmission cursor: no lost, unretransmitted segment starts below this sequence
    /// number except those in `relost`.
    retransmit_hint: u64,
    /// Starts of segments whose retransmission RACK deemed lost while they lay below the cursor,
    /// lowest first; entries sent again (or delivered) since are skipped when met.
    relost: BinaryHeap<Reverse<u64>>,
    /// With RACK: retransmissions in the order they were sent, (segment start, send time);
    /// entries whose segment was acknowledged or sent again since are skipped when met.
    retransmissions: Option<VecDeque<(u64, SimTime)>>,
}

/// What RACK's loss rule found in one pass over the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RackLosses {
    /// Bytes newly deemed lost, lost retransmissions included.
    pub bytes: u64,
    /// When the earliest segment sent before the reference, not yet deemed lost, will be.
    pub next_deadline: Option<SimTime>,
}

impl Scoreboard {
    /// Give back the memory of an empty scoreboard.
    pub fn shrink_to_fit(&mut self) {
        self.segments.shrink_to_fit();
        self.highest_sacked.shrink_to_fit();
        self.relost.shrink_to_fit();
        if let Some(r) = &mut self.retransmissions {
            r.shrink_to_fit();
        }
    }

    /// Heap held by the window's segments, the loss bookkeeping and the retransmission order.
    pub fn heap_bytes(&self) -> usize {
        self.segments.heap_bytes()
            + self.highest_sacked.heap_bytes()
            + self.relost.heap_bytes()
            + self.retransmissions.heap_bytes()
    }

    /// `dupthresh`: RFC 6675 DupThresh. `rack`: keep the order of retransmissions, for RACK's
    /// detection of lost retransmissions.
    pub fn new(mss: u32, dupthresh: u32, rack: bool) -> Self {
        Scoreboard {
            retransmissions: rack.then(VecDeque::new),
            // Grows with the window, from nothing: a flow not started yet holds no segment buffer,
            // a mouse of a few segments never pays for a large one.
            segments: VecDeque::new(),
            mss: mss as u64,
            dupthresh: dupthresh.max(1) as usize,
            outstanding_bytes: 0,
            sacked_bytes: 0,
            lost_bytes: 0,
            retransmitted_bytes: 0,
            sacked_segments: 0,
            highest_sacked: VecDeque::new(),
            lost_boundary: 0,
            retransmit_hint: 0,
            relost: BinaryHeap::new(),
        }
    }

    /// The counters agree with the segments (checked in debug builds after every change; tests
    /// call [`Scoreboard::check_against_recount`], which checks the rest of the bookkeeping).
    pub fn assert_consistent(&self) {
        if cfg!(debug_assertions) {
            self.check_counters();
        }
    }

    fn check_counters(&self) {
        let sum = |f: fn(&Segment) -> bool| self.segments.iter().filter(|s| f(s)).map(|s| s.len as u64).sum::<u64>();
        assert_eq!(self.outstanding_bytes, sum(|_| true), "outstanding");
        assert_eq!(self.sacked_bytes, sum(|s| s.sacked), "sacked");
        assert_eq!(self.lost_bytes, sum(|s| s.lost), "lost");
        assert_eq!(self.retransmitted_bytes, sum(|s| s.retransmitted), "retransmitted");
        assert_eq!(self.sacked_segments, self.segments.iter().filter(|s| s.sacked).count() as u64, "SACKed segments");
        assert_eq!(sum(|s| s.sacked && (s.lost || s.retransmitted)), 0, "SACKed and lost");
    }

    /// Every incremental quantity against a recount from the segments, walking the whole window:
    /// the counters, the highest SACKed segments, the SACK skip links, the loss boundary and the
    /// retransmission cursor.
    #[cfg(test)]
    pub fn check_against_recount(&self) {
        self.check_counters();
        let sacked: Vec<u64> = self.segments.iter().filter(|s| s.sacked).map(|s| s.start).collect();
        let highest = &sacked[sacked.len().saturating_sub(self.dupthresh)..];
        assert!(self.highest_sacked.iter().eq(highest.iter()), "highest SACKed segments");
        for (i, seg) in self.segments.iter().enumerate() {
            if seg.sacked {
                // A skip link never jumps over an unSACKed segment.
                let to = (i + seg.skip as usize).min(self.segments.len());
                assert!(seg.skip >= 1 && self.segments.range(i..to).all(|s| s.sacked), "skip link at {}", seg.start);
            }
            if !seg.sacked && seg.start < self.lost_boundary {
                assert!(seg.lost, "unsacked segment {} below the loss boundary", seg.start);
            }
            let waiting = seg.lost && !seg.retransmitted && !seg.sacked;
            if waiting && seg.start < self.retransmit_hint {
                assert!(self.relost.iter().any(|r| r.0 == seg.start), "lost segment {} behind the cursor", seg.start);
            }
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

    pub fn sacked_segments(&self) -> u64 {
        self.sacked_segments
    }

    /// Some outstanding segment is deemed lost and not yet retransmitted, or its retransmission
    /// is deemed lost too.
    pub fn has_lost(&self) -> bool {
        self.lost_bytes > 0
    }

    pub fn last_index(&self) -> Option<usize> {
        self.segments.len().checked_sub(1)
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
        self.segments.push_back(Segment::new(start, len, now, tx));
    }

    /// Remove every segment wholly below `ack` (a cumulative acknowledgement); segments not
    /// SACKed before are delivered now and handed to `delivered`.
    pub fn ack_up_to(&mut self, ack: u64, delivered: &mut impl FnMut(&Segment)) -> CumulativeAck {
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
                delivered(&seg);
            }
            if seg.retransmitted {
                self.retransmitted_bytes -= len;
            }
            result.bytes += len;
            result.segments += 1;
            result.newest = Some(seg);
        }
        // The highest SACKed segments acknowledged now were the lowest of them: every SACKed
        // segment left lies above them and is among the ones kept.
        let front = self.segments.front().map_or(u64::MAX, |s| s.start);
        while self.highest_sacked.front().is_some_and(|&start| start < front) {
            self.highest_sacked.pop_front();
        }
        if self.segments.is_empty() {
            self.relost.clear();
            if let Some(order) = self.retransmissions.as_mut() {
                order.clear();
            }
        }
        result
    }

    /// The first segment at or after index `i` that is not SACKed (`segments.len()` if none),
    /// following the skip links and halving the path as it goes.
    fn next_unsacked(&mut self, mut i: usize) -> usize {
        let n = self.segments.len();
        while i < n && self.segments[i].sacked {
            let next = i + self.segments[i].skip as usize;
            if next < n && self.segments[next].sacked {
                // Path halving: link to the grandparent and go there.
                self.segments[i].skip += self.segments[next].skip;
                i += self.segments[i].skip as usize;
            } else {
                i = next;
            }
        }
        i
    }

    /// Keep the DupThresh highest SACKed segments as segment `start` is newly SACKed.
    fn remember_sacked(&mut self, start: u64) {
        let highest = &mut self.highest_sacked;
        if highest.len() == self.dupthresh {
            if highest.front().is_some_and(|&lowest| start < lowest) {
                return;
            }
            highest.pop_front();
        }
        // Usually the newest SACK is the highest: the insertion is a push at the back.
        let at = highest.partition_point(|&s| s < start);
        highest.insert(at, start);
    }

    /// Mark the segments wholly inside a SACK block, handing each newly SACKed one to
    /// `delivered`; returns the bytes newly SACKed. Segments SACKed before are skipped, not
    /// walked: the cost is the segments newly SACKed plus an amortised O(log n).
    pub fn sack(&mut self, block: SackBlock, delivered: &mut impl FnMut(&Segment)) -> u64 {
        let Some(front) = self.segments.front() else { return 0 };
        let start = block.start.max(front.start);
        let end = block.end.min(self.segments.back().expect("non-empty").end());
        if start >= end {
            return 0;
        }
        let mut newly = 0;
        let mut i = self.index_of(start);
        if self.segments[i].start < start {
            i += 1; // begins below the block: not wholly inside
        }
        loop {
            i = self.next_unsacked(i);
            let Some(seg) = self.segments.get_mut(i).filter(|s| s.end() <= end) else { break };
            seg.sacked = true;
            seg.skip = 1;
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
            let seg = *seg;
            self.remember_sacked(seg.start);
            delivered(&seg);
            i += 1;
        }
        newly
    }

    /// RFC 6675 IsLost() applied to the whole scoreboard: move the loss boundary up to the
    /// DupThresh-th highest SACKed segment and mark every unsacked segment below it as lost.
    /// Returns the bytes newly marked lost.
    pub fn mark_losses(&mut self) -> u64 {
        if self.highest_sacked.len() < self.dupthresh {
            return 0; // fewer than DupThresh segments SACKed
        }
        let boundary = self.highest_sacked[0];
        if boundary < self.lost_boundary {
            return 0; // the boundary cannot move below where it already is
        }
        self.mark_lost_below(boundary)
    }

    /// Mark every unsacked segment starting below `boundary` as lost; returns the bytes newly lost.
    /// The boundary only moves up, so each segment is passed once.
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
    /// Returns the bytes newly marked lost. (This one walks the window, once per timeout.)
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
        self.relost.clear();
        self.lost_boundary = self.segments.back().map_or(0, |s| s.end());
        if let Some(order) = self.retransmissions.as_mut() {
            order.clear();
        }
        self.lost_bytes - before
    }

    /// RFC 8985 §6.2 step 5, RACK_detect_loss: every outstanding transmission sent before the
    /// `reference` segment is lost once `reference.rtt + reo_wnd` has passed since it left.
    /// Original transmissions above the loss boundary are met in the order they left, and so are
    /// retransmissions in their queue: each walk stops at the first one not yet lost, whose
    /// deadline is the next to watch (the RFC arms its timer at the latest pending deadline and
    /// marks them together; marking each at its own deadline applies the same rule on time).
    pub fn rack_detect_losses(&mut self, reference: RackReference, reo_wnd: SimTime, now: SimTime) -> RackLosses {
        let mut found = RackLosses::default();
        let wait = reference.rtt + reo_wnd;
        let sent_before_reference =
            |seg: &Segment| sent_after(reference.xmit_ts, reference.end_seq, seg.sent_time, seg.end());
        let watch = |deadline: SimTime, found: &mut RackLosses| {
            found.next_deadline = Some(found.next_deadline.map_or(deadline, |d| d.min(deadline)));
        };
        // Original transmissions (and a tail loss probe, which left after every segment below it).
        let end = self.segments.back().map_or(0, Segment::end);
        if let Some(front) = self.segments.front().filter(|_| self.lost_boundary < end) {
            // (A boundary at the end of a short last segment would map to that segment.)
            let mut i = self.index_of(self.lost_boundary.max(front.start));
            while i < self.segments.len() {
                let seg = &mut self.segments[i];
                if !seg.sacked {
                    if !sent_before_reference(seg) {
                        break;
                    }
                    let deadline = seg.sent_time + wait;
                    if deadline > now {
                        watch(deadline, &mut found);
                        break;
                    }
                    seg.lost = true;
                    let len = seg.len as u64;
                    self.lost_bytes += len;
                    found.bytes += len;
                    if seg.retransmitted {
                        // A loss probe's copy went the same way.
                        seg.retransmitted = false;
                        self.retransmitted_bytes -= len;
                    }
                }
                // Every unsacked segment below the boundary is lost; SACKed ones may lie there.
                self.lost_boundary = seg.end();
                i += 1;
            }
        }
        // Retransmissions, in the order they left.
        let Some(mut order) = self.retransmissions.take() else { return found };
        while let Some(&(start, sent)) = order.front() {
            let Some(front) = self.segments.front() else { break };
            if start < front.start {
                order.pop_front(); // cumulatively acknowledged
                continue;
            }
            let i = self.index_of(start);
            let seg = &mut self.segments[i];
            if seg.sacked || !seg.retransmitted || seg.sent_time != sent {
                order.pop_front(); // delivered, or deemed lost and sent again since
                continue;
            }
            if !sent_before_reference(seg) {
                break;
            }
            let deadline = seg.sent_time + wait;
            if deadline > now {
                watch(deadline, &mut found);
                break;
            }
            // The retransmission is lost: the segment waits to be sent again, before the cursor
            // if it lies behind it.
            seg.retransmitted = false;
            let len = seg.len as u64;
            self.retransmitted_bytes -= len;
            found.bytes += len;
            if start < self.retransmit_hint {
                self.relost.push(Reverse(start));
            }
            order.pop_front();
        }
        self.retransmissions = Some(order);
        found
    }

    /// RFC 6675 NextSeg() rule 1: the first lost segment not yet retransmitted. Lost
    /// retransmissions behind the cursor come first (they lie below it); then the cursor moves
    /// forward to the next lost segment, passing each segment once between timeouts.
    pub fn next_retransmission(&mut self) -> Option<usize> {
        let front = self.segments.front()?.start;
        while let Some(&Reverse(start)) = self.relost.peek() {
            if start >= front {
                let i = self.index_of(start);
                let seg = &self.segments[i];
                if seg.lost && !seg.retransmitted && !seg.sacked {
                    return Some(i);
                }
            }
            self.relost.pop(); // acknowledged, SACKed or sent again since
        }
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
        let seg = *seg;
        if let Some(order) = self.retransmissions.as_mut() {
            order.push_back((seg.start, now));
        }
        seg
    }

    /// A tail loss probe (RFC 8985 §7.3) sends segment `index` again, which is not deemed lost:
    /// both copies count in flight until one is delivered or RACK deems the probe lost.
    pub fn probe(&mut self, index: usize, now: SimTime, tx: TxSnapshot) -> Segment {
        let seg = &mut self.segments[index];
        debug_assert!(!seg.lost && !seg.sacked && !seg.retransmitted);
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

    fn ignore(_: &Segment) {}

    /// A scoreboard with `n` full segments outstanding, starting at sequence number 1.
    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::new(MSS, 3, false);
        for k in 0..n {
            sb.push(1 + k * MSS as u64, MSS, SimTime::ZERO, TxSnapshot::default());
        }
        sb
    }

    fn sack_segments(sb: &mut Scoreboard, from: u64, to: u64) -> u64 {
        sb.sack(SackBlock { start: 1 + from * MSS as u64, end: 1 + to * MSS as u64 }, &mut ignore)
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
        sb.mark_losses();
        assert!(!sb.first_is_lost(), "two SACKed segments above are not enough");
        sack_segments(&mut sb, 3, 4);
        sb.mark_losses();
        assert!(sb.first_is_lost());
        // 10 outstanding - 3 SACKed - 1 lost.
        assert_eq!(sb.pipe(), 600);
    }

    #[test]
    fn retransmission_in_flight_counts_back_into_pipe() {
        let mut sb = board(10);
        sack_segments(&mut sb, 1, 4);
        sb.mark_losses();
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
        sb.mark_losses();
        // Third-highest SACKed is segment 5: segments 0, 1, 3, 4 are lost; 6 and 7 are not.
        let lost: Vec<bool> = (0..10).map(|k| sb.get(k).lost).collect();
        assert_eq!(lost, [true, true, false, true, true, false, false, false, false, false]);
    }

    #[test]
    fn cumulative_ack_removes_segments_and_their_counts() {
        let mut sb = board(10);
        sack_segments(&mut sb, 2, 5);
        sb.mark_losses();
        let ack = sb.ack_up_to(1 + 5 * MSS as u64, &mut ignore);
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

    fn reference(k: u64, sent_ms: u64, rtt_ms: u64) -> RackReference {
        RackReference {
            xmit_ts: SimTime::from_ms(sent_ms),
            end_seq: 1 + (k + 1) * MSS as u64,
            rtt: SimTime::from_ms(rtt_ms),
        }
    }

    #[test]
    fn rack_deems_lost_what_left_before_a_delivered_segment_once_rtt_and_window_have_passed() {
        let mut sb = Scoreboard::new(MSS, 3, true);
        for k in 0..6 {
            sb.push(1 + k * MSS as u64, MSS, SimTime::from_ms(k), TxSnapshot::default());
        }
        sack_segments(&mut sb, 4, 5);
        // Segment 4 (sent at 4 ms) delivered with RTT 50 ms, window 10 ms: a segment sent before
        // it at t is lost at t + 60 ms. At 61 ms that is segments 0 and 1.
        let found = sb.rack_detect_losses(reference(4, 4, 50), SimTime::from_ms(10), SimTime::from_ms(61));
        assert_eq!(found.bytes, 2 * MSS as u64, "segments 0 and 1 (sent at 0 and 1 ms)");
        assert_eq!(found.next_deadline, Some(SimTime::from_ms(62)), "segment 2 is next");
        assert_eq!(sb.pipe(), 2 * MSS as u64 + MSS as u64, "segments 2, 3 and 5 in flight");
        // Segment 5 left after the reference: never deemed lost by it.
        let found = sb.rack_detect_losses(reference(4, 4, 50), SimTime::from_ms(10), SimTime::from_ms(500));
        assert_eq!((found.bytes, found.next_deadline), (2 * MSS as u64, None));
    }

    #[test]
    fn rack_deems_a_retransmission_lost_and_offers_the_segment_again() {
        let mut sb = Scoreboard::new(MSS, 3, true);
        for k in 0..4 {
            sb.push(1 + k * MSS as u64, MSS, SimTime::ZERO, TxSnapshot::default());
        }
        sack_segments(&mut sb, 1, 4);
        sb.mark_losses();
        let i = sb.next_retransmission().unwrap();
        sb.retransmit(i, SimTime::from_ms(100), TxSnapshot::default());
        // Segment 3, sent at 0 ms before the retransmission at 100 ms, cannot judge it...
        let early = sb.rack_detect_losses(reference(3, 0, 50), SimTime::ZERO, SimTime::from_ms(300));
        assert_eq!(early.bytes, 0);
        // ... new data sent at 110 ms and delivered at 160 ms can: 100 + 50 <= 160.
        sb.push(1 + 4 * MSS as u64, MSS, SimTime::from_ms(110), TxSnapshot::default());
        sack_segments(&mut sb, 4, 5);
        let found = sb.rack_detect_losses(reference(4, 110, 50), SimTime::ZERO, SimTime::from_ms(160));
        assert_eq!(found.bytes, MSS as u64);
        assert_eq!(sb.next_retransmission(), Some(0), "segment 0 goes out a third time");
    }

    #[test]
    fn rack_after_a_timeout_leaves_a_short_last_segment_counted_once() {
        let mut sb = Scoreboard::new(MSS, 3, true);
        sb.push(1, MSS, SimTime::ZERO, TxSnapshot::default());
        sb.push(1 + MSS as u64, 40, SimTime::ZERO, TxSnapshot::default());
        assert_eq!(sb.mark_all_lost(), MSS as u64 + 40);
        let found = sb.rack_detect_losses(reference(9, 100, 10), SimTime::ZERO, SimTime::from_secs(1));
        assert_eq!(found.bytes, 0);
        sb.assert_consistent();
        assert_eq!(sb.pipe(), 0);
    }

    #[test]
    fn sack_of_partial_segment_marks_nothing() {
        let mut sb = board(3);
        assert_eq!(sb.sack(SackBlock { start: 150, end: 250 }, &mut ignore), 0);
    }
}
