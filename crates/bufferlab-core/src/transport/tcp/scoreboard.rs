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
//! - After a retransmission timeout without RACK every unSACKed segment is deemed lost, but with
//!   SACK only the holes the receiver reports (below the highest SACKed sequence number) and the
//!   oldest segment are sent again while there is new data to send instead (RFC 6675 §5.1): the
//!   segments above the highest SACK may still be queued in the network. With RACK the timeout
//!   deems lost the oldest segment and those sent at least RACK.rtt + RACK.reo_wnd ago (RFC 8985
//!   §6.3); the rest stays in flight.

use super::segment::{sent_after, RackReference};
// The segment's type lives in its own module, shared with RACK; its old path stays.
pub use super::segment::Segment;
use crate::cc::delivery_rate::TxSnapshot;
use crate::memory::prefetch;
use crate::memory::HeapBytes;
use crate::net::packet::{SackBlock, MAX_SACK_BLOCKS};
use crate::units::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What the sender needs of the highest segment a cumulative acknowledgement removed: when it
/// was last sent and whether Karn's rule (RFC 6298 §3) withholds its RTT sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckedSegment {
    pub sent_time: SimTime,
    pub ever_retransmitted: bool,
}

/// What a cumulative acknowledgement removed from the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CumulativeAck {
    pub bytes: u64,
    pub segments: u64,
    /// The highest segment acknowledged, if any.
    pub newest: Option<AckedSegment>,
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
    /// The end of the highest segment ever SACKed (0 before any SACK): RFC 6675's "highest
    /// octet covered by any received SACK".
    sack_high: u64,
    /// After a timeout with SACK: the end of the segment that was oldest then. Until the sender
    /// releases it, lost segments are retransmitted only below the highest SACK or this end
    /// ([`Scoreboard::retransmission_limit`]).
    timeout_hold: Option<u64>,
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
    /// The SACK blocks of the latest ACK that carried any, as applied (clamped to the
    /// scoreboard): every segment wholly inside one of them is SACKed, or acknowledged since.
    applied_sacks: [(u64, u64); MAX_SACK_BLOCKS],
    applied_sacks_len: usize,
}

/// [`Scoreboard::index_of`] on the segments alone (for a caller holding other fields borrowed).
fn index_in(segments: &VecDeque<Segment>, mss: u64, seq: u64) -> usize {
    let front = segments.front().expect("index into an empty scoreboard").start;
    debug_assert!(seq >= front && (front - 1).is_multiple_of(mss), "segments start on MSS multiples");
    ((seq - front) / mss) as usize
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
            sack_high: 0,
            timeout_hold: None,
            lost_boundary: 0,
            retransmit_hint: 0,
            relost: BinaryHeap::new(),
            applied_sacks: [(0, 0); MAX_SACK_BLOCKS],
            applied_sacks_len: 0,
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

    /// Ask for the scoreboard's own lines (its buffers' headers and counters).
    #[inline]
    pub fn prefetch(&self) {
        prefetch(&self.segments);
        prefetch(&self.retransmissions);
        prefetch(&self.outstanding_bytes);
        prefetch(&self.retransmit_hint);
    }

    /// Ask for the oldest segment (a cumulative ACK removes it) and the newest (the next one
    /// sent goes behind it).
    #[inline]
    pub fn prefetch_ends(&self) {
        if let (Some(oldest), Some(newest)) = (self.segments.front(), self.segments.back()) {
            prefetch(oldest);
            prefetch(newest);
        }
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

    /// The index of the segment holding `seq` (at or above the oldest segment's start). Every
    /// segment starts a whole number of MSS after the oldest one, so one division finds it.
    fn index_of(&self, seq: u64) -> usize {
        index_in(&self.segments, self.mss, seq)
    }

    /// Record a new segment sent at SND.NXT.
    pub fn push(&mut self, start: u64, len: u32, now: SimTime, tx: TxSnapshot) {
        debug_assert!(self.segments.back().is_none_or(|s| s.end() == start));
        self.outstanding_bytes += len as u64;
        self.segments.push_back(Segment::new(start, len, now, tx));
    }

    /// Remove every segment wholly below `ack` (a cumulative acknowledgement); segments not
    /// SACKed before are delivered now and handed to `delivered`.
    ///
    /// Each segment is read where it lies before it is dropped: a 64-byte segment is not copied
    /// out (nor again as the newest one).
    pub fn ack_up_to(&mut self, ack: u64, delivered: &mut impl FnMut(&Segment)) -> CumulativeAck {
        let mut result = CumulativeAck::default();
        while let Some(seg) = self.segments.front() {
            if seg.end() > ack {
                break;
            }
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
                delivered(seg);
            }
            if seg.retransmitted {
                self.retransmitted_bytes -= len;
            }
            result.bytes += len;
            result.segments += 1;
            result.newest = Some(AckedSegment { sent_time: seg.sent_time, ever_retransmitted: seg.ever_retransmitted });
            self.segments.pop_front();
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
        // Usually the newest SACK is the highest: a push at the back, without a search.
        if highest.back().is_none_or(|&highest_start| highest_start < start) {
            highest.push_back(start);
        } else {
            let at = highest.partition_point(|&s| s < start);
            highest.insert(at, start);
        }
    }

    /// Mark the segments wholly inside a SACK block, handing each newly SACKed one to
    /// `delivered`; returns the bytes newly SACKed. Segments SACKed before are skipped, not
    /// walked: the cost is the segments newly SACKed plus an amortised O(log n).
    pub fn sack(&mut self, block: SackBlock, delivered: &mut impl FnMut(&Segment)) -> u64 {
        match self.clamped(block) {
            Some(extent) => self.sack_extent(extent, delivered),
            None => 0,
        }
    }

    /// The SACK blocks of one ACK, each as [`Scoreboard::sack`] applies it, except a block that
    /// lies inside one of the previous ACK's: its segments are all SACKed already. A receiver
    /// repeats its most recent blocks in every ACK (RFC 2018 §4), so in a long recovery most
    /// blocks are such repeats, and each would cost a division and a walk of the skip links.
    /// Returns the bytes newly SACKed.
    pub fn sack_all(&mut self, blocks: &[SackBlock], delivered: &mut impl FnMut(&Segment)) -> u64 {
        if blocks.is_empty() {
            return 0;
        }
        let (previous, previous_len) = (self.applied_sacks, self.applied_sacks_len);
        let mut applied = [(0, 0); MAX_SACK_BLOCKS];
        let mut applied_len = 0;
        let mut newly = 0;
        for &block in blocks {
            let Some((start, end)) = self.clamped(block) else { continue };
            if applied_len < MAX_SACK_BLOCKS {
                applied[applied_len] = (start, end);
                applied_len += 1;
            }
            if previous[..previous_len].iter().any(|&(s, e)| s <= start && end <= e) {
                continue;
            }
            newly += self.sack_extent((start, end), delivered);
        }
        if applied_len > 0 {
            (self.applied_sacks, self.applied_sacks_len) = (applied, applied_len);
        }
        newly
    }

    /// A SACK block clipped to the outstanding segments, if any of it lies there.
    fn clamped(&self, block: SackBlock) -> Option<(u64, u64)> {
        let front = self.segments.front()?;
        let start = block.start.max(front.start);
        let end = block.end.min(self.segments.back().expect("non-empty").end());
        (start < end).then_some((start, end))
    }

    /// [`Scoreboard::sack`] on a block already clipped to the outstanding segments.
    fn sack_extent(&mut self, (start, end): (u64, u64), delivered: &mut impl FnMut(&Segment)) -> u64 {
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
            self.sack_high = self.sack_high.max(seg.end());
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

    /// After a retransmission timeout without RACK every unsacked segment is presumed lost and no
    /// retransmission is any longer counted in flight (RFC 6675 §5.1; RFC 5681 §3.1); with RACK
    /// see [`Scoreboard::mark_losses_on_rto`].
    /// Returns the bytes newly marked lost. (This one walks the window, once per timeout.)
    ///
    /// `sack`: the receiver reports what it holds, and RFC 6675 §5.1 asks the sender to use that
    /// in choosing what to send after the timeout, by filling in the sequence space reported
    /// missing. The oldest segment is sent again at once (RFC 6298 §5.4), and then only the
    /// lost segments below the highest SACKed sequence number, until the sender lifts the hold
    /// ([`Scoreboard::release_timeout_hold`]) when it has no new data to send. A segment above
    /// the highest SACK was sent after every segment the receiver has reported: behind a deep
    /// queue it is still on its way, and so is every retransmission of the recovery the timeout
    /// ended. Sending them all again (go-back-N) duplicates what the queue is about to deliver;
    /// new data sent instead is SACKed above any of them that was in fact lost, which then is
    /// a reported hole.
    pub fn mark_all_lost(&mut self, sack: bool) -> u64 {
        self.timeout_hold = if sack { self.segments.front().map(Segment::end) } else { None };
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

    /// RFC 8985 §6.3, RACK_mark_losses_on_RTO(): at a retransmission timeout with RACK, the
    /// oldest outstanding segment is lost (it was sent an RTO ago), and so is every other
    /// unSACKed segment whose latest transmission left at least `wait` = RACK.rtt +
    /// RACK.reo_wnd before `now`. A segment sent more recently is still in flight: it stays
    /// counted in pipe (RFC 6675 §4), its retransmission included, and RACK's own rule judges
    /// it when ACKs come (§6.2). Returns the bytes newly marked lost.
    ///
    /// No hold follows (unlike [`Scoreboard::mark_all_lost`] with SACK): the time test already
    /// leaves in flight what a deep queue may still be delivering, as a segment sent within the
    /// latest delivered segment's RTT has not had the time to arrive. What it marks has had that
    /// time, and RACK-TLP sends it again at once, lost segments before new data (RFC 6675
    /// NextSeg()). Holding those above the highest SACK as well would be a second filter over
    /// RACK's verdict that neither RFC 8985 nor Linux applies: what it would spare are segments
    /// sent after the reference whose queueing delay grew by more than RACK.reo_wnd (zero in
    /// recovery) meanwhile, which RACK, as published, sends again. (Walks the window, once per
    /// timeout.)
    pub fn mark_losses_on_rto(&mut self, wait: SimTime, now: SimTime) -> u64 {
        self.timeout_hold = None;
        let Some(front) = self.segments.front() else { return 0 };
        let front_start = front.start;
        let overdue = |seg: &Segment| seg.start == front_start || seg.sent_time + wait <= now;
        let before = self.lost_bytes;
        // (A boundary at the end of a short last segment would map to that segment.)
        let end = self.segments.back().expect("non-empty").end();
        let boundary_index = if self.lost_boundary >= end {
            self.segments.len()
        } else {
            self.index_of(self.lost_boundary.max(front_start))
        };
        // Below the loss boundary every unSACKed segment is lost already; a retransmission of one
        // that has been out for `wait` is lost too and the segment waits to be sent again.
        for seg in self.segments.range_mut(..boundary_index) {
            if seg.retransmitted && overdue(seg) {
                seg.retransmitted = false;
                self.retransmitted_bytes -= seg.len as u64;
            }
        }
        // Above it only original transmissions lie (and a loss probe's copy of the last segment,
        // which left after every segment below it): they left in sequence order, so those the
        // rule marks form a prefix, which moves the boundary.
        let mut i = boundary_index;
        while i < self.segments.len() {
            let seg = &mut self.segments[i];
            if !seg.sacked {
                if !overdue(seg) {
                    break;
                }
                seg.lost = true;
                self.lost_bytes += seg.len as u64;
                if seg.retransmitted {
                    seg.retransmitted = false;
                    self.retransmitted_bytes -= seg.len as u64;
                }
            }
            self.lost_boundary = seg.end();
            i += 1;
        }
        // NextSeg() searches again from the oldest segment; retransmissions deemed lost leave
        // the order RACK keeps when its walk meets them (they are no longer in flight).
        self.retransmit_hint = 0;
        self.relost.clear();
        self.lost_bytes - before
    }

    /// RFC 8985 §6.2 step 5, RACK_detect_loss: every outstanding transmission sent before the
    /// `reference` segment is lost once `reference.rtt + reo_wnd` has passed since it left.
    /// Original transmissions above the loss boundary are met in the order they left, and so are
    /// retransmissions in their queue: each walk stops at the first one not yet lost, whose
    /// deadline is the next to watch (the RFC arms its timer at the latest pending deadline and
    /// marks them together; marking each at its own deadline applies the same rule on time).
    ///
    /// Asked on every ACK, and usually with nothing to find: no retransmission is outstanding and
    /// the oldest segment, at the loss boundary and not SACKed, left after the reference (so does
    /// every segment above it). That answer is given here, inline; the walk is a call.
    #[inline]
    pub fn rack_detect_losses(&mut self, reference: RackReference, reo_wnd: SimTime, now: SimTime) -> RackLosses {
        let no_retransmission = self.retransmissions.as_ref().is_none_or(VecDeque::is_empty);
        if let Some(front) = self.segments.front() {
            if no_retransmission
                && self.lost_boundary <= front.start
                && !front.sacked
                && !sent_after(reference.xmit_ts, reference.end_seq, front.sent_time, front.end())
            {
                return RackLosses::default();
            }
        }
        self.rack_walk(reference, reo_wnd, now)
    }

    /// [`Scoreboard::rack_detect_losses`]'s walks over original transmissions and retransmissions.
    fn rack_walk(&mut self, reference: RackReference, reo_wnd: SimTime, now: SimTime) -> RackLosses {
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
            // The retransmission cursor at the boundary (no lost segment waits between) follows
            // it over SACKed segments until one is deemed lost: NextSeg() then has nothing to
            // search (in a long recovery the boundary moves over new SACKs on most ACKs).
            let mut cursor_follows = self.retransmit_hint.max(front.start) >= self.lost_boundary;
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
                    cursor_follows = false;
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
            if cursor_follows {
                self.retransmit_hint = self.retransmit_hint.max(self.lost_boundary);
            }
        }
        // Retransmissions, in the order they left, walked in place.
        let Some(order) = self.retransmissions.as_mut() else { return found };
        while let Some(&(start, sent)) = order.front() {
            let Some(front) = self.segments.front() else { break };
            if start < front.start {
                order.pop_front(); // cumulatively acknowledged
                continue;
            }
            let i = index_in(&self.segments, self.mss, start);
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
        found
    }

    /// RFC 6675 NextSeg() rule 1: the first lost segment not yet retransmitted. Lost
    /// retransmissions behind the cursor come first (they lie below it); then the cursor moves
    /// forward to the next lost segment, passing each segment once between timeouts.
    ///
    /// Asked before every segment the sender sends, and almost always with nothing to find: no
    /// lost retransmission waits and the cursor is at the loss boundary. That answer is given
    /// here, inline; the search is a call.
    #[inline]
    pub fn next_retransmission(&mut self) -> Option<usize> {
        let front = self.segments.front()?.start;
        let limit = self.retransmission_limit();
        if self.relost.is_empty() && self.retransmit_hint.max(front) >= limit {
            return None;
        }
        self.find_retransmission(front, limit)
    }

    /// Where the search for a lost segment stops: the loss boundary, or while a timeout's hold
    /// lasts, the highest SACKed sequence number or the end of the segment that was oldest at
    /// the timeout, whichever is higher (RFC 6675 §5.1, [`Scoreboard::mark_all_lost`]).
    #[inline]
    fn retransmission_limit(&self) -> u64 {
        match self.timeout_hold {
            Some(oldest_end) => self.lost_boundary.min(oldest_end.max(self.sack_high)),
            None => self.lost_boundary,
        }
    }

    /// A timeout's hold keeps lost segments above the highest SACK from being sent again.
    pub fn holds_unreported_losses(&self) -> bool {
        self.timeout_hold.is_some_and(|_| self.retransmission_limit() < self.lost_boundary)
    }

    /// Lift a timeout's hold: every lost segment may be sent again (go-back-N over the rest).
    /// The sender does so when it has no new data to send, and when the recovery ends.
    pub fn release_timeout_hold(&mut self) {
        self.timeout_hold = None;
    }

    /// [`Scoreboard::next_retransmission`]'s search, from the cursor or a lost retransmission,
    /// up to `limit`.
    fn find_retransmission(&mut self, front: u64, limit: u64) -> Option<usize> {
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
        if from >= limit {
            return None;
        }
        let mut i = self.index_of(from);
        while i < self.segments.len() {
            let seg = &self.segments[i];
            if seg.start >= limit {
                break;
            }
            if seg.lost && !seg.retransmitted && !seg.sacked {
                self.retransmit_hint = seg.start;
                return Some(i);
            }
            i += 1;
        }
        self.retransmit_hint = limit;
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
        sb.mark_all_lost(false);
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
        assert_eq!(sb.mark_all_lost(false), MSS as u64 + 40);
        let found = sb.rack_detect_losses(reference(9, 100, 10), SimTime::ZERO, SimTime::from_secs(1));
        assert_eq!(found.bytes, 0);
        sb.assert_consistent();
        assert_eq!(sb.pipe(), 0);
    }

    #[test]
    fn after_a_timeout_only_the_holes_below_the_highest_sack_are_sent_again_until_released() {
        // Twenty segments out; the receiver holds 2, 3, 6, 7 and 10: 0, 1, 4, 5, 8 and 9 are
        // reported missing. 11..=19 lie above everything reported: still queued, perhaps.
        let mut sb = board(20);
        for k in [2, 6, 10] {
            sack_segments(&mut sb, k, k + 1 + (k < 10) as u64);
        }
        assert_eq!(sb.mark_all_lost(true), 15 * MSS as u64, "every unSACKed segment is deemed lost");
        assert_eq!(sb.pipe(), 0);
        let mut sent = Vec::new();
        while let Some(i) = sb.next_retransmission() {
            sent.push((sb.retransmit(i, SimTime::from_ms(1), TxSnapshot::default()).start - 1) / MSS as u64);
        }
        assert_eq!(sent, [0, 1, 4, 5, 8, 9], "the oldest segment and the reported holes");
        assert!(sb.holds_unreported_losses());
        // New data sent meanwhile is SACKed above segment 11, which is reported missing now.
        sb.push(1 + 20 * MSS as u64, MSS, SimTime::from_ms(1), TxSnapshot::default());
        sack_segments(&mut sb, 12, 21);
        let i = sb.next_retransmission().unwrap();
        assert_eq!((sb.get(i).start - 1) / MSS as u64, 11);
        sb.retransmit(i, SimTime::from_ms(2), TxSnapshot::default());
        assert_eq!(sb.next_retransmission(), None);
        sb.check_against_recount();

        // Without SACK information to go by, and once released, it is go-back-N over the rest.
        let mut plain = board(5);
        plain.mark_all_lost(false);
        assert!(!plain.holds_unreported_losses());
        let mut sb = board(6);
        sack_segments(&mut sb, 1, 2);
        sb.mark_all_lost(true);
        let mut sent = Vec::new();
        while let Some(i) = sb.next_retransmission() {
            sent.push(sb.retransmit(i, SimTime::from_ms(1), TxSnapshot::default()).start);
        }
        assert_eq!(sent, [1]);
        sb.release_timeout_hold();
        while let Some(i) = sb.next_retransmission() {
            sent.push(sb.retransmit(i, SimTime::from_ms(1), TxSnapshot::default()).start);
        }
        let starts: Vec<u64> = [0, 2, 3, 4, 5].iter().map(|k| 1 + k * MSS as u64).collect();
        assert_eq!(sent, starts);
        sb.check_against_recount();
    }

    #[test]
    fn at_a_timeout_rack_marks_the_oldest_and_the_segments_sent_rtt_plus_reo_wnd_ago() {
        // RFC 8985 §6.3. Segment k left at 10·k ms; 3, 4 and 5 are SACKed, so 0, 1 and 2 are
        // lost; 0 was sent again at 50 ms, 1 at 95 ms. The timeout comes at T = 100 ms with
        // RACK.rtt = 25 ms and RACK.reo_wnd = 10 ms: what left at or before 65 ms is lost.
        let mut sb = Scoreboard::new(MSS, 3, true);
        for k in 0..10 {
            sb.push(1 + k * MSS as u64, MSS, SimTime::from_ms(10 * k), TxSnapshot::default());
        }
        sack_segments(&mut sb, 3, 6);
        sb.mark_losses();
        for t in [50, 95] {
            let i = sb.next_retransmission().unwrap();
            sb.retransmit(i, SimTime::from_ms(t), TxSnapshot::default());
        }
        let (rtt, reo_wnd, now) = (SimTime::from_ms(25), SimTime::from_ms(10), SimTime::from_ms(100));
        // Segment 6 (60 ms) is newly lost; segment 0's retransmission (50 ms) is lost too.
        assert_eq!(sb.mark_losses_on_rto(rtt + reo_wnd, now), MSS as u64);
        let lost: Vec<bool> = (0..10).map(|k| sb.get(k).lost).collect();
        assert_eq!(lost, [true, true, true, false, false, false, true, false, false, false]);
        assert!(!sb.get(0).retransmitted && sb.get(1).retransmitted, "the 95 ms retransmission is in flight");
        // Pipe: segment 1's retransmission and segments 7, 8 and 9, still in flight.
        assert_eq!(sb.pipe(), 4 * MSS as u64);
        sb.check_against_recount();
        let mut order = Vec::new();
        while let Some(i) = sb.next_retransmission() {
            sb.retransmit(i, now, TxSnapshot::default());
            order.push(i);
        }
        assert_eq!(order, [0, 2, 6], "the lost segments from the oldest, no hold");
        // RACK's timer watches segment 7 (sent before the reference, segment 9 delivered at
        // 90 ms) and takes it at 70 + 35 ms.
        sack_segments(&mut sb, 9, 10);
        let found = sb.rack_detect_losses(reference(9, 90, 25), reo_wnd, now);
        assert_eq!((found.bytes, found.next_deadline), (0, Some(SimTime::from_ms(105))));
        sb.check_against_recount();

        // The oldest segment is lost even if it left less than RACK.rtt + RACK.reo_wnd ago.
        let mut sb = Scoreboard::new(MSS, 3, true);
        for k in 0..4 {
            sb.push(1 + k * MSS as u64, MSS, SimTime::from_ms(90), TxSnapshot::default());
        }
        assert_eq!(sb.mark_losses_on_rto(rtt + reo_wnd, now), MSS as u64);
        assert_eq!(sb.pipe(), 3 * MSS as u64);
        assert_eq!(sb.next_retransmission(), Some(0));
        sb.check_against_recount();
    }

    #[test]
    fn sack_of_partial_segment_marks_nothing() {
        let mut sb = board(3);
        assert_eq!(sb.sack(SackBlock { start: 150, end: 250 }, &mut ignore), 0);
    }

    #[test]
    fn a_block_that_grows_by_one_segment_per_ack_sacks_only_the_new_segment() {
        let mut sb = board(1000);
        let mut handed = Vec::new();
        for k in 2..1000 {
            let block = SackBlock { start: 1 + MSS as u64, end: 1 + k * MSS as u64 };
            let newly = sb.sack(block, &mut |seg: &Segment| handed.push(seg.start));
            assert_eq!(newly, MSS as u64, "only segment {} is new", k - 1);
        }
        let expected: Vec<u64> = (1..999).map(|k| 1 + k * MSS as u64).collect();
        assert_eq!(handed, expected, "each SACKed segment handed over once, in sequence order");
        sb.check_against_recount();
    }

    #[test]
    fn an_ack_repeating_the_previous_acks_blocks_sacks_only_what_grew() {
        let mut sb = board(20);
        let block = |from: u64, to: u64| SackBlock { start: 1 + from * MSS as u64, end: 1 + to * MSS as u64 };
        assert_eq!(sb.sack_all(&[block(10, 12), block(4, 6)], &mut ignore), 400);
        // RFC 2018 §4: the newest range first (grown by one segment), then the others again.
        let mut handed = Vec::new();
        let newly = sb.sack_all(&[block(10, 13), block(4, 6)], &mut |s: &Segment| handed.push(s.start));
        assert_eq!((newly, handed), (100, vec![1 + 12 * MSS as u64]));
        // A new range; then that range grown downwards (not inside the previous block: applied)
        // and a block only an older ACK reported (applied again, nothing new in it).
        assert_eq!(sb.sack_all(&[block(1, 3), block(10, 13)], &mut ignore), 200);
        assert_eq!(sb.sack_all(&[block(0, 3), block(4, 6)], &mut ignore), 100);
        sb.check_against_recount();
    }

    #[test]
    fn a_block_spanning_earlier_blocks_sacks_only_the_holes_between_them() {
        let mut sb = board(20);
        for k in [3, 6, 7, 12] {
            sack_segments(&mut sb, k, k + 1);
        }
        let mut handed = Vec::new();
        let newly = sb.sack(SackBlock { start: 1 + 2 * MSS as u64, end: 1 + 14 * MSS as u64 }, &mut |s: &Segment| {
            handed.push((s.start - 1) / MSS as u64)
        });
        assert_eq!(newly, 8 * MSS as u64);
        assert_eq!(handed, [2, 4, 5, 8, 9, 10, 11, 13]);
        sb.check_against_recount();
    }

    #[test]
    fn the_loss_boundary_follows_the_dupthresh_highest_sack_after_a_cumulative_ack() {
        let mut sb = board(20);
        for k in [2, 4, 6, 8] {
            sack_segments(&mut sb, k, k + 1);
        }
        sb.mark_losses();
        // Third-highest SACKed is segment 4: segments 0, 1 and 3 are lost.
        let lost = |sb: &Scoreboard| (0..sb.segments.len()).filter(|&k| sb.get(k).lost).count();
        assert_eq!(lost(&sb), 3);
        // The ACK of segments 0..=4 leaves two SACKed segments: no more than DupThresh - 1.
        sb.ack_up_to(1 + 5 * MSS as u64, &mut ignore);
        sack_segments(&mut sb, 10, 11);
        // SACKed now: 6, 8 and 10. Segment 5 lies below the third highest; segment 7 has two
        // SACKed segments above it.
        assert_eq!(sb.mark_losses(), MSS as u64);
        assert!(sb.get(0).lost && !sb.get(2).lost);
        sb.check_against_recount();
    }

    #[test]
    fn a_lost_retransmission_behind_the_cursor_is_resent_before_the_cursor_moves_on() {
        let mut sb = Scoreboard::new(MSS, 3, true);
        for k in 0..10 {
            sb.push(1 + k * MSS as u64, MSS, SimTime::ZERO, TxSnapshot::default());
        }
        // Segments 0..=4 lost (SACKs above them), retransmitted at 10, 11 and 12 ms (0, 1, 2).
        sack_segments(&mut sb, 5, 10);
        sb.mark_losses();
        for t in 10..13 {
            let i = sb.next_retransmission().unwrap();
            sb.retransmit(i, SimTime::from_ms(t), TxSnapshot::default());
        }
        // New data sent at 20 ms and delivered at 70 ms proves the retransmission of 0 and 1
        // lost; segment 2's left at 12 ms and is not overdue: 12 + 50 + 9 > 70.
        sb.push(1 + 10 * MSS as u64, MSS, SimTime::from_ms(20), TxSnapshot::default());
        sack_segments(&mut sb, 10, 11);
        let found = sb.rack_detect_losses(reference(10, 20, 50), SimTime::from_ms(9), SimTime::from_ms(70));
        assert_eq!(found.bytes, 2 * MSS as u64);
        sb.check_against_recount();
        let mut order = Vec::new();
        while let Some(i) = sb.next_retransmission() {
            sb.retransmit(i, SimTime::from_ms(80), TxSnapshot::default());
            order.push(i);
        }
        assert_eq!(order, [0, 1, 3, 4], "the lost retransmissions first, then the cursor");
        sb.check_against_recount();
    }

    /// One step of a random sender's life, for the model check below. Segment positions are
    /// taken modulo the window.
    #[derive(Debug, Clone)]
    enum Step {
        Send(u8),
        SendShortLast(u16),
        Ack(u16),
        Sack(u16, u16, u8),
        /// An ACK's blocks, applied together (`sack_all`).
        SackAll(Vec<(u16, u16, u8)>),
        /// The previous ACK's blocks again, the first grown by 0 to 2 segments (RFC 2018 §4).
        SackAgain(u8),
        MarkLosses,
        MarkFirstLost,
        Timeout,
        /// A timeout with RACK (RFC 8985 §6.3), RACK.rtt + RACK.reo_wnd in ms.
        RackTimeout(u8),
        Retransmit(u8),
        Probe,
        Rack(u16, u8, u8),
        Wait(u8),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (1u8..30).prop_map(Step::Send),
            1 => (1u16..MSS as u16).prop_map(Step::SendShortLast),
            2 => any::<u16>().prop_map(Step::Ack),
            6 => (any::<u16>(), 1u16..12, 0u8..3).prop_map(|(a, n, unaligned)| Step::Sack(a, n, unaligned)),
            3 => proptest::collection::vec((any::<u16>(), 1u16..12, 0u8..3), 0..=MAX_SACK_BLOCKS).prop_map(Step::SackAll),
            4 => (0u8..3).prop_map(Step::SackAgain),
            2 => Just(Step::MarkLosses),
            1 => Just(Step::MarkFirstLost),
            1 => Just(Step::Timeout),
            1 => (0u8..80).prop_map(Step::RackTimeout),
            3 => (1u8..8).prop_map(Step::Retransmit),
            1 => Just(Step::Probe),
            3 => (any::<u16>(), 1u8..60, 0u8..20).prop_map(|(k, rtt, reo)| Step::Rack(k, rtt, reo)),
            3 => (1u8..40).prop_map(Step::Wait),
        ]
    }

    /// The bytes of the segments that satisfy `f`.
    fn bytes(sb: &Scoreboard, f: impl Fn(&Segment) -> bool) -> u64 {
        sb.segments.iter().filter(|s| f(s)).map(|s| s.len as u64).sum()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512, failure_persistence: None, ..proptest::prelude::ProptestConfig::default()
        })]

        /// Whatever the sequence of sends, ACKs, SACKs, loss marks, retransmissions, probes and
        /// timeouts, the incremental bookkeeping agrees with a recount from the segments, and each
        /// operation returns what a naive walk over the window finds.
        #[test]
        fn incremental_bookkeeping_matches_a_recount_of_the_window(
            dupthresh in 1u32..5,
            rack in proptest::prelude::any::<bool>(),
            steps in proptest::collection::vec(step(), 1..150),
        ) {
            let mss = MSS as u64;
            let mut sb = Scoreboard::new(MSS, dupthresh, rack);
            let (mut now, mut next_seq, mut stream_ended) = (SimTime::ZERO, 1u64, false);
            let mut last_blocks: Vec<SackBlock> = Vec::new();
            let at = |sb: &Scoreboard, k: u16| sb.first().map(|f| f.start + (k as u64 % (sb.segments.len() as u64 + 1)) * mss);
            for step in steps {
                match step {
                    Step::Send(n) => {
                        for _ in 0..n {
                            if !stream_ended {
                                sb.push(next_seq, MSS, now, TxSnapshot::default());
                                next_seq += mss;
                            }
                        }
                    }
                    Step::SendShortLast(len) => {
                        if !stream_ended {
                            sb.push(next_seq, len as u32, now, TxSnapshot::default());
                            next_seq += len as u64;
                            stream_ended = true;
                        }
                    }
                    Step::Ack(k) => {
                        let Some(ack) = at(&sb, k) else { continue };
                        let ack = ack.min(next_seq);
                        let gone = |s: &Segment| s.end() <= ack;
                        let expected = (bytes(&sb, gone), bytes(&sb, |s| gone(s) && s.sacked));
                        let delivered_expected = bytes(&sb, |s| gone(s) && !s.sacked);
                        let mut delivered = 0;
                        let result = sb.ack_up_to(ack, &mut |s: &Segment| delivered += s.len as u64);
                        assert_eq!((result.bytes, result.previously_sacked_bytes), expected);
                        assert_eq!(delivered, delivered_expected);
                    }
                    Step::Sack(k, n, unaligned) => {
                        let Some(start) = at(&sb, k) else { continue };
                        // An unaligned edge covers a segment only partly: it is not SACKed.
                        let block = SackBlock { start: start + unaligned as u64, end: start + n as u64 * mss };
                        let inside = |s: &Segment| s.start >= block.start && s.end() <= block.end && !s.sacked;
                        let expected = bytes(&sb, inside);
                        let mut handed = Vec::new();
                        assert_eq!(sb.sack(block, &mut |s: &Segment| handed.push(s.start)), expected);
                        assert!(handed.windows(2).all(|w| w[0] < w[1]), "handed over in sequence order");
                    }
                    Step::SackAll(_) | Step::SackAgain(_) => {
                        let blocks: Vec<SackBlock> = match step {
                            Step::SackAll(params) => params
                                .iter()
                                .filter_map(|&(k, n, unaligned)| {
                                    let start = at(&sb, k)?;
                                    Some(SackBlock { start: start + unaligned as u64, end: start + n as u64 * mss })
                                })
                                .collect(),
                            Step::SackAgain(grow) => {
                                let mut again = last_blocks.clone();
                                if let Some(first) = again.first_mut() {
                                    first.end += grow as u64 * mss;
                                }
                                again
                            }
                            _ => unreachable!(),
                        };
                        // Every segment not SACKed before that lies wholly inside one of the blocks.
                        let inside_any = |s: &Segment| {
                            !s.sacked && blocks.iter().any(|b| s.start >= b.start && s.end() <= b.end)
                        };
                        let expected = bytes(&sb, inside_any);
                        let mut handed = 0;
                        assert_eq!(sb.sack_all(&blocks, &mut |s: &Segment| handed += s.len as u64), expected);
                        assert_eq!(handed, expected);
                        if !blocks.is_empty() {
                            last_blocks = blocks;
                        }
                    }
                    Step::MarkLosses => {
                        // RFC 6675 IsLost(), naively: the DupThresh-th highest SACKed segment.
                        let sacked: Vec<u64> = sb.segments.iter().filter(|s| s.sacked).map(|s| s.start).collect();
                        let boundary = sacked.len().checked_sub(dupthresh as usize).map(|i| sacked[i]);
                        let expected = match boundary {
                            Some(b) if b >= sb.lost_boundary => bytes(&sb, |s| s.start < b && !s.sacked && !s.lost),
                            _ => 0,
                        };
                        assert_eq!(sb.mark_losses(), expected);
                    }
                    Step::MarkFirstLost => {
                        sb.mark_first_lost();
                    }
                    Step::Timeout => {
                        let expected = bytes(&sb, |s| !s.sacked && !s.lost);
                        assert_eq!(sb.mark_all_lost(false), expected);
                    }
                    Step::RackTimeout(ms) => {
                        // RFC 8985 §6.3 naively: the oldest segment and every one sent `wait` ago.
                        let wait = SimTime::from_ms(ms as u64);
                        let front = sb.first().map(|s| s.start);
                        let overdue = |s: &Segment| Some(s.start) == front || s.sent_time + wait <= now;
                        let expected = bytes(&sb, |s| !s.sacked && !s.lost && overdue(s));
                        let in_flight_again = bytes(&sb, |s| s.retransmitted && !overdue(s));
                        assert_eq!(sb.mark_losses_on_rto(wait, now), expected);
                        assert_eq!(bytes(&sb, |s| s.retransmitted), in_flight_again);
                    }
                    Step::Retransmit(n) => {
                        for _ in 0..n {
                            // NextSeg() rule 1, naively: the lowest lost segment not in flight again.
                            let expected = sb.segments.iter().position(|s| s.lost && !s.retransmitted && !s.sacked);
                            let found = sb.next_retransmission();
                            assert_eq!(found, expected);
                            let Some(i) = found else { break };
                            sb.retransmit(i, now, TxSnapshot::default());
                            now += SimTime::from_us(100);
                        }
                    }
                    Step::Probe => {
                        if let Some(i) = sb.last_index() {
                            let last = *sb.get(i);
                            if !last.sacked && !last.lost && !last.retransmitted {
                                sb.probe(i, now, TxSnapshot::default());
                            }
                        }
                    }
                    Step::Rack(k, rtt, reo) => {
                        let Some(start) = at(&sb, k) else { continue };
                        let Some(i) = (start < next_seq).then(|| sb.index_of(start)) else { continue };
                        let seg = *sb.get(i);
                        let reference = RackReference { xmit_ts: seg.sent_time, end_seq: seg.end(), rtt: SimTime::from_ms(rtt as u64) };
                        let before: Vec<Segment> = sb.segments.iter().copied().collect();
                        let found = sb.rack_detect_losses(reference, SimTime::from_ms(reo as u64), now);
                        // A segment newly deemed lost counts once (with a loss probe's copy), and so
                        // does a retransmission deemed lost.
                        let expected: u64 = before
                            .iter()
                            .zip(&sb.segments)
                            .filter(|(b, a)| (!b.lost && a.lost) || (b.retransmitted && !a.retransmitted))
                            .map(|(b, _)| b.len as u64)
                            .sum();
                        assert_eq!(found.bytes, expected);
                    }
                    Step::Wait(ms) => now += SimTime::from_ms(ms as u64),
                }
                sb.check_against_recount();
            }
        }
    }
}
