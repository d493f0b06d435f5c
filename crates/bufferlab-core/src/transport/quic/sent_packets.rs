//! RFC 9002 Appendix A.1 `sent_packets`: what a QUIC sender remembers of the packets it sent, the
//! bytes in flight, and the two walks an ACK frame asks for: crediting the packets it newly
//! acknowledges (A.7 OnAckReceived) and declaring packets lost (A.10 DetectAndRemoveLostPackets).
//!
//! Neither walk costs in proportion to the window:
//! - ACK frames repeat their ranges (RFC 9000 §13.2.3), so a range above a hole grows by a packet
//!   or two per ACK while it spans the window. The packet numbers acknowledged so far are kept as
//!   ranges; only the parts of an ACK range not yet in them are visited (O(log n) per part).
//! - Packets leave in packet-number order and never earlier than the one before (A.5 records the
//!   send time), and both of RFC 9002's thresholds (§6.1.1 packets, §6.1.2 time) hold for a packet
//!   if they hold for a later one. So the packets declared lost are always the oldest outstanding
//!   ones at or below the largest acknowledged: the walk from the oldest packet kept stops at the
//!   first outstanding packet not lost, whose send time is the earliest of the rest (A.10's
//!   loss_time). Everything it passes on the way is acknowledged or lost, and is forgotten after.

use std::collections::VecDeque;

use crate::cc::delivery_rate::TxSnapshot;
use crate::net::packet::SackBlock;
use crate::transport::ranges::RangeSet;
use crate::units::SimTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Outstanding,
    Acked,
    Lost,
}

/// Stream data: a range of the stream and whether it ends with the FIN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub start: u64,
    pub end: u64,
    pub fin: bool,
}

impl Chunk {
    /// A packet without stream data (the Initial, a PING).
    pub const NONE: Chunk = Chunk { start: 0, end: 0, fin: false };
}

/// RFC 9002 Appendix A.1.1: what the sender remembers of a sent packet.
#[derive(Debug, Clone, Copy)]
pub struct SentPacket {
    pub pn: u64,
    pub time_sent: SimTime,
    /// Bytes it counts in flight (the whole QUIC packet).
    pub size: u32,
    /// Stream bytes `[stream_start, stream_end)` it carried (none for the Initial and for PINGs)
    /// and the FIN, kept apart rather than as a [`Chunk`] to keep the record at 72 bytes.
    pub stream_start: u64,
    pub stream_end: u64,
    pub fin: bool,
    pub initial: bool,
    /// Sent with an ECT codepoint (RFC 9000 §13.4.2.1 validates the counts against these).
    pub ect: bool,
    pub fate: Fate,
    /// Delivery-rate state at send time (draft-cheng-iccrg-delivery-rate-estimation §3.2).
    pub tx: TxSnapshot,
}

impl SentPacket {
    pub fn chunk(&self) -> Chunk {
        Chunk { start: self.stream_start, end: self.stream_end, fin: self.fin }
    }
}

/// The thresholds of RFC 9002 §6.1 and §7.6 as they stand when loss detection runs.
#[derive(Debug, Clone, Copy)]
pub struct LossRule {
    /// §6.1.2: max(kTimeThreshold · max(smoothed_rtt, latest_rtt), kGranularity).
    pub loss_delay: SimTime,
    /// §6.1.1: kPacketThreshold.
    pub packet_threshold: u64,
    /// §7.6.1: the persistent-congestion duration; `None` before the first RTT sample (§7.6.2).
    pub persistent_duration: Option<SimTime>,
}

/// What one run of loss detection found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Bytes newly declared lost.
    pub bytes: u64,
    /// When the most recently sent of them left (B.6 compares it with the recovery period's start).
    pub newest_lost_sent: Option<SimTime>,
    /// §7.6.2: two of them with no acknowledged packet between were sent more than the
    /// persistent-congestion duration apart.
    pub persistent: bool,
    /// A.10 loss_time: when the earliest outstanding packet below the largest acknowledged would
    /// be deemed lost by time.
    pub loss_time: Option<SimTime>,
}

#[derive(Debug, Default)]
pub struct SentPackets {
    /// From the oldest packet not yet acknowledged or declared lost on, in packet-number order:
    /// `packets[i].pn == packets[0].pn + i`.
    packets: VecDeque<SentPacket>,
    next_pn: u64,
    /// The packet numbers acknowledged, from `packets[0].pn` on (older ones are forgotten).
    acked: RangeSet,
    bytes_in_flight: u64,
    largest_acked: Option<u64>,
}

impl crate::memory::HeapBytes for SentPackets {
    fn heap_bytes(&self) -> usize {
        self.packets.heap_bytes() + self.acked.heap_bytes()
    }
}

impl SentPackets {
    #[cfg(test)]
    pub fn next_pn(&self) -> u64 {
        self.next_pn
    }

    pub fn in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    /// The largest packet number an ACK frame acknowledged so far.
    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// RFC 9002 A.5 OnPacketSent: every packet this sender sends is ack-eliciting and in flight;
    /// `ect`: it carries an ECT codepoint. Returns its packet number.
    pub fn push(
        &mut self,
        time_sent: SimTime,
        size: u32,
        chunk: Chunk,
        (initial, ect): (bool, bool),
        tx: TxSnapshot,
    ) -> u64 {
        let pn = self.next_pn;
        debug_assert!(self.packets.back().is_none_or(|p| p.time_sent <= time_sent), "sent in time order");
        self.next_pn += 1;
        self.packets.push_back(SentPacket {
            pn,
            time_sent,
            size,
            stream_start: chunk.start,
            stream_end: chunk.end,
            fin: chunk.fin,
            initial,
            ect,
            fate: Fate::Outstanding,
            tx,
        });
        self.bytes_in_flight += size as u64;
        pn
    }

    /// RFC 9002 A.7 OnAckReceived, its bookkeeping: raise the largest acknowledged to `largest` and
    /// mark the packets of `ranges` acknowledged. `newly_acked` sees each packet not acknowledged
    /// before, with the fate it had (a packet declared lost may still arrive: it is no longer in
    /// flight), in the frame's order of ranges and upwards within each.
    pub fn on_ack_frame(&mut self, largest: u64, ranges: &[SackBlock], mut newly_acked: impl FnMut(&SentPacket, Fate)) {
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
        let Some(first_pn) = self.packets.front().map(|p| p.pn) else { return };
        for range in ranges {
            let (from, to) = (range.start.max(first_pn), range.end.min(self.next_pn));
            if from >= to {
                continue;
            }
            // RFC 9000 §13.2.3: the frame repeats what earlier frames acknowledged; skip that.
            let mut at = from;
            while let Some((start, end)) = self.acked.first_gap(at, to) {
                for pn in start..end {
                    let p = &mut self.packets[(pn - first_pn) as usize];
                    let was = p.fate;
                    p.fate = Fate::Acked;
                    if was == Fate::Outstanding {
                        self.bytes_in_flight -= p.size as u64;
                    }
                    newly_acked(p, was);
                }
                at = end;
            }
            self.acked.insert(from, to);
        }
    }

    /// RFC 9002 A.10 DetectAndRemoveLostPackets: declare lost each outstanding packet at or below
    /// the largest acknowledged that `rule`'s packet threshold (§6.1.1) or time threshold (§6.1.2)
    /// condemns at `now`; `on_lost` sees each (B.8 OnPacketsLost), oldest first.
    pub fn detect_lost(&mut self, now: SimTime, rule: &LossRule, mut on_lost: impl FnMut(&SentPacket)) -> Losses {
        let mut losses = Losses::default();
        let Some(largest_acked) = self.largest_acked else { return losses };
        let lost_send_time = now.saturating_sub(rule.loss_delay);
        // §7.6.2: persistent congestion is a run of lost packets with no acknowledged packet
        // between them (packets declared lost before do not break it) spanning more than the
        // persistent-congestion duration. The run starts at its oldest packet.
        let mut run_start: Option<SimTime> = None;
        for p in self.packets.iter_mut() {
            if p.pn > largest_acked {
                break;
            }
            match p.fate {
                Fate::Acked => {
                    run_start = None;
                    continue;
                }
                Fate::Lost => continue,
                Fate::Outstanding => {}
            }
            // §6.1.2 time threshold, §6.1.1 packet threshold.
            if p.time_sent > lost_send_time && largest_acked < p.pn + rule.packet_threshold {
                // Not lost, and (sent no earlier, numbered higher) neither is any later packet:
                // the earliest time-threshold deadline is this packet's.
                losses.loss_time = Some(p.time_sent + rule.loss_delay);
                break;
            }
            p.fate = Fate::Lost;
            self.bytes_in_flight -= p.size as u64;
            on_lost(p);
            losses.bytes += p.size as u64;
            losses.newest_lost_sent = Some(p.time_sent);
            let start = *run_start.get_or_insert(p.time_sent);
            losses.persistent |= rule.persistent_duration.is_some_and(|d| p.time_sent - start > d);
        }
        if losses.newest_lost_sent.is_some() {
            self.forget_resolved();
        }
        losses
    }

    /// The oldest packet in flight that carries stream data or a PING (not an Initial), for a
    /// probe to repeat (RFC 9002 §6.2.4). The oldest packet kept is outstanding, so this is it
    /// unless Initials sent during the handshake still wait in front; acknowledged stretches
    /// behind them are skipped by range.
    pub fn oldest_outstanding_data(&self) -> Option<&SentPacket> {
        let first_pn = self.packets.front()?.pn;
        let mut at = first_pn;
        while let Some((start, end)) = self.acked.first_gap(at, self.next_pn) {
            let mut gap = self.packets.range((start - first_pn) as usize..(end - first_pn) as usize);
            if let Some(p) = gap.find(|p| p.fate == Fate::Outstanding && !p.initial) {
                return Some(p);
            }
            at = end;
        }
        None
    }

    /// Forget the packets at the front that are acknowledged or lost.
    pub fn forget_resolved(&mut self) {
        while self.packets.front().is_some_and(|p| p.fate != Fate::Outstanding) {
            self.packets.pop_front();
        }
        self.acked.forget_below(self.packets.front().map_or(self.next_pn, |p| p.pn));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bookkeeping as it was before: every packet number of every ACK range visited, and loss
    /// detection walking every packet up to the largest acknowledged (RFC 9002 A.7 and A.10 read
    /// literally). The model the incremental walks must agree with.
    #[derive(Default)]
    struct Reference {
        packets: VecDeque<(u64, SimTime, u32, bool, Fate)>,
        next_pn: u64,
        bytes_in_flight: u64,
        largest_acked: Option<u64>,
    }

    impl Reference {
        fn push(&mut self, time_sent: SimTime, size: u32, initial: bool) {
            self.packets.push_back((self.next_pn, time_sent, size, initial, Fate::Outstanding));
            self.next_pn += 1;
            self.bytes_in_flight += size as u64;
        }

        fn on_ack_frame(&mut self, largest: u64, ranges: &[SackBlock]) -> Vec<(u64, Fate)> {
            self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
            let mut newly = Vec::new();
            let Some(first_pn) = self.packets.front().map(|p| p.0) else { return newly };
            for range in ranges {
                for pn in range.start.max(first_pn)..range.end.min(self.next_pn) {
                    let p = &mut self.packets[(pn - first_pn) as usize];
                    if p.4 == Fate::Acked {
                        continue;
                    }
                    newly.push((pn, p.4));
                    if p.4 == Fate::Outstanding {
                        self.bytes_in_flight -= p.2 as u64;
                    }
                    p.4 = Fate::Acked;
                }
            }
            newly
        }

        fn detect_lost(&mut self, now: SimTime, rule: &LossRule) -> (Losses, Vec<u64>) {
            let (mut losses, mut lost) = (Losses::default(), Vec::new());
            let Some(largest_acked) = self.largest_acked else { return (losses, lost) };
            let lost_send_time = now.saturating_sub(rule.loss_delay);
            let mut run_start: Option<SimTime> = None;
            for p in self.packets.iter_mut().take_while(|p| p.0 <= largest_acked) {
                match p.4 {
                    Fate::Acked => run_start = None,
                    Fate::Lost => {}
                    Fate::Outstanding if p.1 <= lost_send_time || largest_acked >= p.0 + rule.packet_threshold => {
                        p.4 = Fate::Lost;
                        self.bytes_in_flight -= p.2 as u64;
                        lost.push(p.0);
                        losses.bytes += p.2 as u64;
                        losses.newest_lost_sent = Some(p.1);
                        let start = *run_start.get_or_insert(p.1);
                        losses.persistent |= rule.persistent_duration.is_some_and(|d| p.1 - start > d);
                    }
                    Fate::Outstanding => {
                        let when = p.1 + rule.loss_delay;
                        losses.loss_time = Some(losses.loss_time.map_or(when, |t| t.min(when)));
                        run_start = None;
                    }
                }
            }
            if !lost.is_empty() {
                self.forget_resolved();
            }
            (losses, lost)
        }

        fn forget_resolved(&mut self) {
            while self.packets.front().is_some_and(|p| p.4 != Fate::Outstanding) {
                self.packets.pop_front();
            }
        }

        fn oldest_outstanding_data(&self) -> Option<u64> {
            self.packets.iter().find(|p| p.4 == Fate::Outstanding && !p.3).map(|p| p.0)
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// Packets sent back to back, Initials if none with data was sent yet and the flag says so.
        Send(u8, bool),
        Wait(u8),
        /// Up to three ranges (start picked among the packet numbers sent, length), and whether
        /// the largest acknowledged is the top of the first range or another packet number.
        Ack(Vec<(u16, u8)>, bool, u16),
        Detect,
        Forget,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (1u8..20, proptest::bool::weighted(0.1)).prop_map(|(n, i)| Step::Send(n, i)),
            3 => (0u8..60).prop_map(Step::Wait),
            6 => (proptest::collection::vec((any::<u16>(), 0u8..40), 0..4), proptest::bool::weighted(0.8), any::<u16>())
                .prop_map(|(r, top, l)| Step::Ack(r, top, l)),
            2 => Just(Step::Detect),
            2 => Just(Step::Forget),
        ]
    }

    fn fates(s: &SentPackets) -> Vec<(u64, Fate)> {
        s.packets.iter().map(|p| (p.pn, p.fate)).collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512, failure_persistence: None, ..proptest::prelude::ProptestConfig::default()
        })]

        /// Whatever the sends, ACK frames (repeating, overlapping, out of order, beyond what was
        /// sent), waits and loss detections, the walks that skip acknowledged ranges and stop at
        /// the first packet not lost find what the literal walks find: the same packets newly
        /// acknowledged in the same order with the same prior fate, the same packets lost in the
        /// same order, bytes, loss_time and persistent-congestion verdict, the same bytes in
        /// flight, fates and probe candidate.
        #[test]
        fn incremental_walks_match_the_literal_ones(
            loss_delay_ms in 1u64..80,
            packet_threshold in proptest::prop_oneof![1u64..6, 1_000u64..1_001],
            persistent_ms in proptest::option::of(0u64..200),
            steps in proptest::collection::vec(step(), 1..120),
        ) {
            let rule = LossRule {
                loss_delay: SimTime::from_ms(loss_delay_ms),
                packet_threshold,
                persistent_duration: persistent_ms.map(SimTime::from_ms),
            };
            let (mut new, mut old) = (SentPackets::default(), Reference::default());
            let mut now = SimTime::ZERO;
            for step in steps {
                match step {
                    Step::Send(n, initial) => {
                        let initial = initial && old.packets.iter().all(|p| p.3) && new.next_pn() == old.packets.len() as u64;
                        for k in 0..n as u32 {
                            let size = 1000 + 7 * k;
                            let chunk = if initial { Chunk::NONE } else { Chunk { start: 0, end: size as u64, fin: false } };
                            new.push(now, size, chunk, (initial, false), TxSnapshot::default());
                            old.push(now, size, initial);
                        }
                    }
                    Step::Wait(ms) => now += SimTime::from_ms(ms as u64),
                    Step::Ack(picks, top, other) => {
                        let span = old.next_pn + 2;
                        let ranges: Vec<SackBlock> = picks
                            .iter()
                            .map(|&(k, len)| {
                                let start = k as u64 % span;
                                SackBlock { start, end: start + len as u64 }
                            })
                            .collect();
                        let largest = match ranges.first() {
                            Some(r) if top && r.end > r.start => r.end - 1,
                            _ => other as u64 % span,
                        };
                        let mut seen = Vec::new();
                        new.on_ack_frame(largest, &ranges, |p, was| seen.push((p.pn, was)));
                        assert_eq!(seen, old.on_ack_frame(largest, &ranges), "{ranges:?}");
                    }
                    Step::Detect => {
                        let mut lost = Vec::new();
                        let losses = new.detect_lost(now, &rule, |p| lost.push(p.pn));
                        assert_eq!((losses, lost), old.detect_lost(now, &rule));
                    }
                    Step::Forget => {
                        new.forget_resolved();
                        old.forget_resolved();
                    }
                }
                assert_eq!(new.in_flight(), old.bytes_in_flight);
                assert_eq!(new.largest_acked, old.largest_acked);
                assert_eq!(fates(&new), old.packets.iter().map(|p| (p.0, p.4)).collect::<Vec<_>>());
                assert_eq!(new.oldest_outstanding_data().map(|p| p.pn), old.oldest_outstanding_data());
            }
        }
    }

    #[test]
    fn a_sent_packet_record_takes_72_bytes() {
        // One per packet in flight: 10^5 of them for a window of 10^5 packets.
        assert_eq!(std::mem::size_of::<SentPacket>(), 72);
    }

    #[test]
    fn a_repeated_range_is_credited_once_and_lost_packets_are_removed() {
        let mut s = SentPackets::default();
        for k in 0..10 {
            s.push(
                SimTime::from_ms(k),
                100,
                Chunk { start: 100 * k, end: 100 * (k + 1), fin: false },
                (false, false),
                TxSnapshot::default(),
            );
        }
        let mut seen = Vec::new();
        s.on_ack_frame(4, &[SackBlock { start: 1, end: 5 }], |p, was| seen.push((p.pn, was)));
        s.on_ack_frame(6, &[SackBlock { start: 6, end: 7 }, SackBlock { start: 1, end: 5 }], |p, was| {
            seen.push((p.pn, was))
        });
        let expected: Vec<(u64, Fate)> = [1, 2, 3, 4, 6].iter().map(|&pn| (pn, Fate::Outstanding)).collect();
        assert_eq!(seen, expected, "the repeated range 1..5 is not credited again");
        // pn 0 and pn 5 are lost by the packet threshold (§6.1.1); the acknowledged 1..5 between
        // them means no persistent congestion (§7.6.2), however far apart they were sent.
        let rule = LossRule {
            loss_delay: SimTime::from_ms(100),
            packet_threshold: 1,
            persistent_duration: Some(SimTime::ZERO),
        };
        let mut lost = Vec::new();
        let losses = s.detect_lost(SimTime::from_ms(20), &rule, |p| lost.push(p.pn));
        assert_eq!(lost, vec![0, 5]);
        assert!(!losses.persistent, "an acknowledged packet lies between the two lost ones");
        assert_eq!(losses.loss_time, None, "no outstanding packet at or below the largest acknowledged");
        assert_eq!(s.in_flight(), 3 * 100, "7, 8 and 9");
        // A.10 removes lost packets: a late ACK of pn 5 credits nothing (the oldest packet kept is
        // the outstanding pn 7, everything before it was forgotten).
        seen.clear();
        s.on_ack_frame(9, &[SackBlock { start: 5, end: 10 }], |p, was| seen.push((p.pn, was)));
        assert_eq!(seen, vec![(7, Fate::Outstanding), (8, Fate::Outstanding), (9, Fate::Outstanding)]);
        assert_eq!(s.in_flight(), 0);
    }
}
