//! The sending side of a QUIC connection: packet numbering, RFC 9002 loss detection (§6) and
//! congestion control (§7), with the pseudocode of RFC 9002 Appendices A and B as its outline.
//!
//! What it does as TCP's sender does (the controller's hooks, delivery-rate samples, pacing, the
//! recovery period's clock, the record) is the [`SenderCore`]'s; this file keeps QUIC's own:
//! the stream's chunks, ACK frames, the recovery rules of loss detection, the probe timeout. The
//! sent packets themselves, with the walks an ACK asks for over them, are `sent_packets.rs`'s.

use std::collections::VecDeque;

use super::config::{QuicConfig, PERSISTENT_CONGESTION_THRESHOLD, PROBES_PER_TIMEOUT};
use super::ecn::EcnValidation;
use super::rtt::QuicRtt;
use super::sent_packets::{Chunk, Fate, LossRule, SentPacket, SentPackets};
use crate::cc::{CongestionController, Controller};
use crate::net::packet::{flags, AckFrame, Ecn, Packet};
use crate::spec::QuicEcn;
use crate::transport::marked_bytes::ce_marked_bytes;
use crate::transport::ranges::RangeSet;
use crate::transport::sender_core::{AckTally, Phase, SenderCore};
use crate::units::SimTime;

/// Where the next chunk of stream data comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The front of the retransmission queue.
    Lost,
    /// Bytes never sent (or the lone FIN).
    New,
    /// A copy of data in flight, sent as a probe.
    Repeat,
}

#[derive(Debug)]
pub struct QuicSender {
    /// The controller, RTT estimator (RFC 9002 §5), delivery-rate estimator, pacer and record.
    /// Every packet number is delivered at most once, so no rate sample is ambiguous.
    pub core: SenderCore<QuicRtt>,
    config: QuicConfig,
    /// Packets not yet acknowledged or declared lost, and those after them; the bytes in flight.
    sent: SentPackets,
    /// RFC 9002 A.2 loss_time: when the earliest packet not yet lost would be deemed lost by time.
    loss_time: Option<SimTime>,
    time_of_last_ack_eliciting: SimTime,
    pto_count: u32,
    /// RFC 9002 B.2 congestion_recovery_start_time (the core knows whether the period is over).
    recovery_start: Option<SimTime>,
    /// Probes still to send after a probe timeout (they may exceed the window, §7.5).
    probes_due: u32,
    /// The Initial must be sent again (it was lost, or the probe timer fired during the handshake).
    resend_initial: bool,
    /// Next new stream byte, and the end of the stream once the application closed it.
    next_offset: u64,
    stream_end: Option<u64>,
    fin_sent: bool,
    fin_acked: bool,
    /// Stream bytes the receiver acknowledged.
    acked: RangeSet,
    /// Lost stream data waiting to be sent again, oldest first.
    retransmit: VecDeque<Chunk>,
    /// The codepoint of the packets sent and the validation of the path's ECN (RFC 9000
    /// §13.4.2); the last validated counts are RFC 9002 B.2's ecn_ce_counters.
    pub ecn: EcnValidation,
    /// With `quic.ecn = "l4s"`: when the last ECN response was made (a response per round trip,
    /// as over TCP, instead of a recovery period).
    ecn_reduced_at: Option<SimTime>,
    /// Bytes handed to the controller as CE-marked (`AckSample::ce_marked_bytes`), in all.
    pub ce_marked_bytes: u64,
}

impl QuicSender {
    /// Heap held by the packets in flight, the data to retransmit and the record (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        use crate::memory::HeapBytes;
        self.sent.heap_bytes() + self.acked.heap_bytes() + self.retransmit.heap_bytes() + self.core.heap_bytes()
    }

    pub fn new(flow: u32, receiver_node: u32, config: QuicConfig, cc: Controller, bytes: Option<u64>) -> Self {
        let rtt = QuicRtt::new(config.initial_rtt);
        let ecn = EcnValidation::new(config.ecn);
        QuicSender {
            core: SenderCore::new(flow, receiver_node, cc, rtt).with_window_pacing(config.pacing),
            config,
            sent: SentPackets::default(),
            loss_time: None,
            time_of_last_ack_eliciting: SimTime::ZERO,
            pto_count: 0,
            recovery_start: None,
            probes_due: 0,
            resend_initial: false,
            next_offset: 0,
            stream_end: bytes,
            fin_sent: false,
            fin_acked: false,
            acked: RangeSet::new(),
            retransmit: VecDeque::new(),
            ecn,
            ecn_reduced_at: None,
            ce_marked_bytes: 0,
        }
    }

    // ----- observers, for the recorder (the rest are the core's) -----

    pub fn in_flight(&self) -> u64 {
        self.sent.in_flight()
    }
    /// Stream bytes acknowledged without a hole from the start.
    pub fn bytes_acked(&self) -> u64 {
        self.acked.contiguous_end(0)
    }
    pub fn bytes_written(&self) -> u64 {
        self.next_offset
    }

    /// The earliest of the loss-detection timer and the pacer's next release (when it holds a
    /// packet back).
    pub fn next_timeout(&self) -> Option<SimTime> {
        self.core.next_wakeup([self.loss_detection_timer()])
    }

    /// RFC 9002 A.8 SetLossDetectionTimer: the loss time if one is pending, else the probe timeout
    /// while ack-eliciting packets are in flight (or the handshake is unfinished).
    fn loss_detection_timer(&self) -> Option<SimTime> {
        if self.loss_time.is_some() {
            return self.loss_time;
        }
        let phase = self.core.phase();
        let waiting = phase == Phase::Handshake || (phase == Phase::Established && self.sent.in_flight() > 0);
        if !waiting {
            return None;
        }
        // §6.2.1: PTO = smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay, doubled per
        // consecutive timeout; max_ack_delay counts only once the handshake is done.
        let max_ack_delay = if phase == Phase::Established { self.config.max_ack_delay } else { SimTime::ZERO };
        let pto = self.core.rtt.pto(max_ack_delay).mul(1 << self.pto_count.min(30));
        Some(self.time_of_last_ack_eliciting + pto)
    }

    // ----- application events -----

    /// The application opens the connection: send the Initial.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.core.start(now);
        self.send_initial(now, out);
    }

    /// The application stops writing: the stream ends with what it has written.
    pub fn stop(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.core.is_closed() {
            return;
        }
        let end = self.stream_end.unwrap_or(u64::MAX).min(self.next_offset);
        self.stream_end = Some(end);
        self.transmit(now, out);
    }

    // ----- network events -----

    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, ack: AckFrame<'_>, out: &mut Vec<Packet>) {
        if matches!(self.core.phase(), Phase::Idle | Phase::Closed) || !packet.has(flags::ACK) {
            return;
        }
        self.on_ack_frame(now, packet, ack);
        if self.core.phase() == Phase::Handshake && packet.has(flags::SYN) {
            self.core.establish(now);
            self.resend_initial = false;
        }
        self.check_closed(now);
        self.transmit(now, out);
    }

    /// RFC 9002 A.9 OnLossDetectionTimeout, or the pacer's release.
    pub fn on_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let Some(_) = self.loss_detection_timer().filter(|&d| now >= d) else {
            // Not the loss-detection timer: the pacer may release what it held back.
            if self.core.held_packet_due(now) {
                self.transmit(now, out);
            }
            return;
        };
        if self.loss_time.is_some() {
            // Time-threshold loss detection.
            self.detect_lost_packets(now);
        } else {
            // The probe timeout: send probes, do not touch the window (§6.2.4).
            self.core.record.rtos += 1;
            self.pto_count += 1;
            if self.core.phase() == Phase::Handshake {
                self.resend_initial = true;
            } else {
                self.probes_due = PROBES_PER_TIMEOUT;
            }
        }
        self.transmit(now, out);
    }

    /// RFC 9002 A.7 OnAckReceived, for the single packet-number space.
    fn on_ack_frame(&mut self, now: SimTime, packet: &Packet, ack: AckFrame<'_>) {
        let largest = packet.ack;
        let raises_largest = self.sent.largest_acked().is_none_or(|l| largest > l);
        let prior_in_flight = self.sent.in_flight();
        let mut newly_acked_bytes_outside_recovery = 0;
        let mut delivered = 0;
        // Packets this frame newly acknowledges, and of them those sent ECT (RFC 9000 §13.4.2.1).
        let (mut newly_acked_packets, mut newly_acked_ect) = (0, 0);
        let mut newly_acked_any = false;
        let mut largest_newly_acked: Option<SentPacket> = None;
        let mut exits_recovery = false;
        let (core, acked, fin_acked, recovery_start) =
            (&mut self.core, &mut self.acked, &mut self.fin_acked, self.recovery_start);
        self.sent.on_ack_frame(largest, ack.blocks, |p, was| {
            // Delivered, even if declared lost before: its bytes reached the receiver.
            core.rate.on_delivered(now, &p.tx, p.time_sent, false, p.size as u64);
            delivered += p.size as u64;
            newly_acked_packets += 1;
            newly_acked_ect += p.ect as u64;
            if p.stream_end > p.stream_start {
                acked.insert(p.stream_start, p.stream_end);
            }
            if p.fin {
                *fin_acked = true;
            }
            if was == Fate::Lost {
                return; // acknowledged after being declared lost: no longer in flight
            }
            newly_acked_any = true;
            if largest_newly_acked.is_none_or(|l| p.pn > l.pn) {
                largest_newly_acked = Some(*p);
            }
            // RFC 9002 B.5 OnPacketsAcked: no window growth for packets sent before the
            // current recovery period began; one sent after it ends the period (§7.3.2).
            let in_recovery = recovery_start.is_some_and(|r| p.time_sent <= r);
            if !in_recovery {
                newly_acked_bytes_outside_recovery += p.size as u64;
                exits_recovery |= core.in_recovery();
            }
        });
        if !newly_acked_any {
            return;
        }
        self.core.acknowledged(self.bytes_acked());

        // §5.1: an RTT sample when the largest acknowledged packet is newly acknowledged.
        let mut rtt_sample = None;
        if let Some(p) = largest_newly_acked.filter(|p| p.pn == largest) {
            let latest = now - p.time_sent;
            let ack_delay = if self.core.is_established() {
                SimTime::from_us(ack.ack_delay_us as u64).min(self.config.max_ack_delay)
            } else {
                SimTime::ZERO // §5.3: ACK Delay is ignored for Initial packets
            };
            self.core.rtt.on_sample(latest, ack_delay);
            self.core.record_rtt_sample(latest);
            rtt_sample = Some(latest);
        }

        // A.7: ECN first (the counts validated, RFC 9000 §13.4.2.1, then B.7 ProcessECN), then
        // detect and remove lost packets before crediting the acknowledged ones. A recovery
        // period that begins now covers every packet this ACK acknowledges (all sent before now).
        let newest = largest_newly_acked.expect("newly acknowledged");
        let ce_increase = self.ecn.on_ack_frame(ack.ecn_counts, newly_acked_ect, raises_largest).ce_increase;
        let ecn_echo = ce_increase > 0;
        let scalable = self.config.ecn == QuicEcn::L4s;
        if ecn_echo && !scalable {
            self.classic_ecn_response(now, newest.time_sent);
        }
        let lost = self.detect_lost_packets(now);
        if self.recovery_start == Some(now) {
            newly_acked_bytes_outside_recovery = 0;
            exits_recovery = false;
        }
        if exits_recovery {
            self.core.exit_recovery(now);
        }
        // L4S: the response as over TCP, after loss detection (a loss answered now answers the
        // same round trip).
        let ecn_reduces = ecn_echo && scalable && self.scalable_ecn_response(now, newest.time_sent);
        let ce_bytes = ce_marked_bytes(ce_increase, newly_acked_packets, newly_acked_bytes_outside_recovery);
        self.ce_marked_bytes += ce_bytes;
        let tally = AckTally {
            bytes_acked: newly_acked_bytes_outside_recovery,
            delivered,
            lost,
            sent_time: newest.time_sent,
            rtt: rtt_sample,
            prior_in_flight,
            in_flight: self.sent.in_flight(),
            ecn_echo,
            ce_marked_bytes: ce_bytes,
        };
        // RFC 9002 B.5: window growth only for packets sent after the recovery period began (and,
        // as over TCP, not on the ACK whose marks reduced the window); the hook every ACK gets
        // follows (model-based controllers such as BBR learn the path there).
        self.core.conclude_ack(now, tally, newly_acked_bytes_outside_recovery > 0 && !ecn_reduces);
        // A.7: the probe count resets once an acknowledgement shows the path works.
        self.pto_count = 0;
        self.sent.forget_resolved();
    }

    /// RFC 9002 B.7 ProcessECN, for a validated CE count above the last one: a congestion event
    /// (§7.1), one per recovery period: none if the newest packet acknowledged (sent at
    /// `sent_time`) was sent before the period under way began.
    fn classic_ecn_response(&mut self, now: SimTime, sent_time: SimTime) {
        // B.6 OnCongestionEvent: no reduction within the recovery period under way.
        if self.recovery_start.is_none_or(|r| sent_time > r) {
            self.recovery_start = Some(now);
            // RFC 9002 §7.3.2: from the congestion window; the controller's ECN response (the
            // loss response without retransmission; none for BBR).
            let window = self.core.cc.window();
            self.core.ecn_congestion_event(now, window);
        }
    }

    /// With L4S, a validated CE count above the last one as a TCP sender answers an ECN-Echo
    /// (RFC 3168 §6.1.2, RFC 8257 §3.3): the controller's ECN response at most once per round
    /// trip, none if the newest packet acknowledged (sent at `sent_time`) left before the last
    /// response or before the loss-recovery period under way began, and no recovery period after
    /// it: the window keeps growing while a scalable controller counts the next round's marks
    /// (`AckSample::ce_marked_bytes`). Returns whether the window was reduced.
    fn scalable_ecn_response(&mut self, now: SimTime, sent_time: SimTime) -> bool {
        let after = |t: Option<SimTime>| t.is_none_or(|r| sent_time > r);
        if !after(self.recovery_start) || !after(self.ecn_reduced_at) {
            return false;
        }
        self.ecn_reduced_at = Some(now);
        let window = self.core.cc.window();
        self.core.ecn_congestion_event(now, window);
        true
    }

    /// RFC 9002 A.10 DetectAndRemoveLostPackets, then B.8 OnPacketsLost; returns the bytes newly
    /// declared lost.
    fn detect_lost_packets(&mut self, now: SimTime) -> u64 {
        let rule = LossRule {
            loss_delay: self.core.rtt.loss_delay(),
            packet_threshold: self.config.packet_threshold,
            // §7.6.1: (smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay) ·
            // kPersistentCongestionThreshold, once an RTT sample exists (§7.6.2).
            persistent_duration: self
                .core
                .rtt
                .has_sample()
                .then(|| self.core.rtt.pto(self.config.max_ack_delay).mul(PERSISTENT_CONGESTION_THRESHOLD)),
        };
        let handshake = self.core.phase() == Phase::Handshake;
        let (retransmit, resend_initial) = (&mut self.retransmit, &mut self.resend_initial);
        let mut ect_lost = 0;
        let losses = self.sent.detect_lost(now, &rule, |p| {
            ect_lost += p.ect as u64;
            // B.8 OnPacketsLost: the Initial is sent again while the handshake lasts; lost stream
            // data (or a lost FIN) waits for a new packet number.
            if p.initial {
                *resend_initial = handshake;
            } else if p.stream_end > p.stream_start || p.fin {
                retransmit.push_back(p.chunk());
            }
        });
        self.loss_time = losses.loss_time;
        self.ecn.on_lost(ect_lost);
        let Some(newest_lost_sent) = losses.newest_lost_sent else { return 0 };
        // B.6 OnCongestionEvent: one reduction per recovery period; a loss of a packet sent
        // before the period began does not reduce again.
        if self.recovery_start.is_none_or(|r| newest_lost_sent > r) {
            let window = self.core.cc.window();
            self.recovery_start = Some(now);
            // RFC 9002 §7.3.2 reduces from the congestion window (ssthresh = cwnd · β), not from
            // the flight size as RFC 5681 does.
            self.core.congestion_event(now, window);
            if losses.persistent {
                // §7.6.2: collapse the window. The controllers' timeout response does so (to one
                // packet; RFC 9002's kMinimumWindow is two), keeping ssthresh as set just now.
                self.core.cc.on_retransmission_timeout(now, window);
            }
        }
        losses.bytes
    }

    fn check_closed(&mut self, now: SimTime) {
        if !self.core.is_established() || !self.fin_acked {
            return;
        }
        let Some(end) = self.stream_end else { return };
        if self.acked.contiguous_end(0) >= end {
            self.core.close(now, self.bytes_acked());
            self.loss_time = None;
            self.probes_due = 0;
        }
    }

    // ----- transmission -----

    /// Send what the congestion window, pending probes and the application allow.
    pub fn transmit(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self.core.phase() {
            Phase::Handshake => {
                if self.resend_initial {
                    self.resend_initial = false;
                    self.send_initial(now, out);
                }
                return;
            }
            Phase::Established => {}
            Phase::Idle | Phase::Closed => return,
        }
        self.core.release_pacing_hold();
        loop {
            let probe = self.probes_due > 0;
            let Some((chunk, source)) = self.next_chunk(probe) else {
                if probe {
                    // Nothing to (re)send: a PING keeps the probe ack-eliciting (§6.2.4).
                    self.probes_due -= 1;
                    self.send_packet(now, Chunk::NONE, false, out);
                    continue;
                }
                // Nothing left to send although the window may have room: the application limits
                // the flow (draft-cheng-iccrg-delivery-rate-estimation §3.4).
                self.core.note_send_opportunity_unused(self.sent.in_flight());
                break;
            };
            let size = (self.config.packet_overhead as u64) + (chunk.end - chunk.start);
            // §7: a packet must not take bytes_in_flight beyond the window; probes may (§7.5),
            // and they are not paced.
            if !probe && self.sent.in_flight() + size > self.core.cc.window() {
                break;
            }
            // RFC 9002 §7.7: pacing, at the controller's rate or at N·cwnd/smoothed_rtt.
            if !probe && !self.core.pacing_allows(now, self.sent.in_flight()) {
                break;
            }
            if matches!(source, Source::New) {
                self.core.wrote(chunk.start, chunk.end, now);
            }
            let retransmission = self.take_chunk(chunk, source);
            self.probes_due = self.probes_due.saturating_sub(1);
            self.send_packet(now, chunk, retransmission, out);
        }
    }

    /// The next stream data to send and where it comes from: lost data first, then new data, then
    /// a lone FIN. A probe with none of these sends the oldest unacknowledged data again.
    fn next_chunk(&mut self, probe: bool) -> Option<(Chunk, Source)> {
        let max = self.config.max_stream_payload as u64;
        while let Some(c) = self.retransmit.front().copied() {
            let fin_pending = c.fin && !self.fin_acked;
            if self.acked.contains_range(c.start, c.end) && !fin_pending {
                self.retransmit.pop_front(); // acknowledged meanwhile (a late ACK)
                continue;
            }
            let end = c.end.min(c.start + max);
            return Some((Chunk { start: c.start, end, fin: c.fin && end == c.end }, Source::Lost));
        }
        let stream_end = self.stream_end.unwrap_or(u64::MAX);
        if self.next_offset < stream_end {
            let end = stream_end.min(self.next_offset + max);
            return Some((Chunk { start: self.next_offset, end, fin: end == stream_end }, Source::New));
        }
        if self.stream_end.is_some() && !self.fin_sent {
            return Some((Chunk { start: stream_end, end: stream_end, fin: true }, Source::New));
        }
        if probe {
            return Some((self.sent.oldest_outstanding_data()?.chunk(), Source::Repeat));
        }
        None
    }

    /// Mark `chunk` as sent from `source`; returns whether it carries data sent before.
    fn take_chunk(&mut self, chunk: Chunk, source: Source) -> bool {
        match source {
            Source::Lost => {
                let front = self.retransmit.front_mut().expect("next_chunk found it there");
                if chunk.end >= front.end {
                    self.retransmit.pop_front();
                } else {
                    front.start = chunk.end;
                }
                true
            }
            Source::New => {
                self.next_offset = chunk.end;
                false
            }
            Source::Repeat => true,
        }
    }

    fn send_initial(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        // RFC 9000 §14.1: a client's Initial is padded to a full datagram (at least 1200 bytes).
        let size = self.config.max_datagram;
        let (pn, ecn) = self.push_sent(now, size, Chunk::NONE, true);
        // No RTT sample exists before the handshake completes: the Initial carries no SRTT.
        let initial = self.core.packet(now, flags::SYN, 0, 0, size + self.config.lower_layer, pn > 0);
        out.push(Packet { pn, ecn, ..initial });
    }

    fn send_packet(&mut self, now: SimTime, chunk: Chunk, retransmission: bool, out: &mut Vec<Packet>) {
        let payload = (chunk.end - chunk.start) as u32;
        let size = self.config.packet_overhead + payload;
        let (pn, ecn) = self.push_sent(now, size, chunk, false);
        if chunk.fin {
            self.fin_sent = true;
        }
        let tcp_flags = if chunk.fin { flags::FIN } else { 0 };
        let packet =
            self.core.packet(now, tcp_flags, chunk.start, payload, size + self.config.lower_layer, retransmission);
        out.push(Packet { pn, ecn, ..packet });
    }

    /// RFC 9002 A.5 OnPacketSent; returns the packet number and the ECN field, ECT(0) or ECT(1)
    /// with ECN while validation has not failed (RFC 9000 §13.4: a QUIC packet carries new frames
    /// under a new packet number, so data sent again is ECT too), else Not-ECT.
    fn push_sent(&mut self, now: SimTime, size: u32, chunk: Chunk, initial: bool) -> (u64, Ecn) {
        let tx = self.core.snapshot_for_send(now, self.sent.in_flight() == 0);
        self.core.pace(now, (size + self.config.lower_layer) as u64, self.sent.in_flight());
        self.time_of_last_ack_eliciting = now;
        let ecn = self.ecn.codepoint();
        self.ecn.on_sent(ecn);
        (self.sent.push(now, size, chunk, (initial, ecn != Ecn::NotEct), tx), ecn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ControllerConfig;
    use crate::net::packet::{EcnCounts, SackBlock, MAX_SACK_BLOCKS};
    use crate::spec::{CcaKind, QuicSpec};
    use crate::transport::quic::ecn::{EcnFailure, EcnState};

    fn config() -> QuicConfig {
        QuicConfig::from(&QuicSpec::default())
    }

    /// Deliver to `s` at `now` an ACK frame of `largest` with packet-number ranges `ranges`
    /// (most recent first) and no ACK Delay.
    fn acknowledge(
        s: &mut QuicSender,
        now: SimTime,
        largest: u64,
        ranges: &[(u64, u64)],
        extra_flags: u8,
        out: &mut Vec<Packet>,
    ) {
        assert!(ranges.len() <= MAX_SACK_BLOCKS);
        let blocks: Vec<SackBlock> = ranges.iter().map(|&(start, end)| SackBlock { start, end }).collect();
        let packet = Packet {
            sack_len: ranges.len() as u8,
            ..Packet::acknowledgement(0, 0, flags::ACK | extra_flags, largest, 67, SimTime::ZERO)
        };
        s.on_packet(now, &packet, AckFrame::without_delay(&blocks), out);
    }

    /// As [`acknowledge`], the frame carrying the ECN counts `counts` (RFC 9000 §19.3.2).
    fn acknowledge_counting(
        s: &mut QuicSender,
        now: SimTime,
        (largest, ranges, extra_flags): (u64, &[(u64, u64)], u8),
        counts: EcnCounts,
        out: &mut Vec<Packet>,
    ) {
        let blocks: Vec<SackBlock> = ranges.iter().map(|&(start, end)| SackBlock { start, end }).collect();
        let packet = Packet {
            sack_len: ranges.len() as u8,
            ..Packet::acknowledgement(0, 0, flags::ACK | extra_flags, largest, 70, SimTime::ZERO)
        };
        s.on_packet(now, &packet, AckFrame { ecn_counts: counts, ..AckFrame::without_delay(&blocks) }, out);
    }

    #[test]
    fn ce_counts_become_marked_bytes_and_one_l4s_response_per_round_trip() {
        let c = QuicConfig { ecn: QuicEcn::L4s, ..config() };
        let cc = Controller::new(CcaKind::Dctcp, &ControllerConfig::new(c.max_datagram, c.initial_window));
        let mut s = QuicSender::new(0, 1, c, cc, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let counts = |ect1, ce| EcnCounts { ect0: 0, ect1, ce };
        // The Initial arrived ECT(1): the count rose with it, and the path is validated.
        acknowledge_counting(&mut s, SimTime::from_ms(10), (0, &[(0, 1)], flags::SYN), counts(1, 0), &mut out);
        assert_eq!(s.ecn.state(), EcnState::Capable);
        assert_eq!(out.len(), 12);
        assert!(out.iter().all(|p| p.ecn == Ecn::Ect1), "L4S sends ECT(1)");
        // pn 1..=4 (1252 bytes each), one of them CE: 1252 bytes marked, and the window reduced.
        acknowledge_counting(&mut s, SimTime::from_ms(20), (4, &[(1, 5)], 0), counts(4, 1), &mut out);
        assert_eq!(s.ce_marked_bytes, 1252);
        assert_eq!(s.core.record.ecn_responses, 1);
        // pn 5..=7, two CE: 2 × 1252 more; no second response for packets sent before the first.
        acknowledge_counting(&mut s, SimTime::from_ms(21), (7, &[(1, 8)], 0), counts(5, 3), &mut out);
        assert_eq!(s.ce_marked_bytes, 3 * 1252);
        assert_eq!(s.core.record.ecn_responses, 1);
        assert_eq!(s.core.record.recoveries, 0, "an L4S response begins no recovery period");
        // pn 8 alone, the CE count up by 3 (an ACK frame between was lost): at most the packet.
        acknowledge_counting(&mut s, SimTime::from_ms(22), (8, &[(1, 9)], 0), counts(5, 6), &mut out);
        assert_eq!(s.ce_marked_bytes, 4 * 1252);
        // A frame that does not raise the largest acknowledged is not read (RFC 9000 §13.4.2.1).
        acknowledge_counting(&mut s, SimTime::from_ms(23), (8, &[(1, 9)], 0), counts(5, 9), &mut out);
        assert_eq!(s.ce_marked_bytes, 4 * 1252);
        assert_eq!(s.ecn.state(), EcnState::Capable);
    }

    #[test]
    fn acks_without_the_ect_packets_counted_stop_the_marking() {
        let c = QuicConfig { ecn: QuicEcn::Classic, ..config() };
        let cc = Controller::new(CcaKind::Reno, &ControllerConfig::new(c.max_datagram, c.initial_window));
        let mut s = QuicSender::new(0, 1, c, cc, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(out[0].ecn, Ecn::Ect0);
        out.clear();
        // A bleached path: the Initial arrived Not-ECT and no count rose.
        acknowledge_counting(&mut s, SimTime::from_ms(10), (0, &[(0, 1)], flags::SYN), EcnCounts::default(), &mut out);
        assert_eq!(s.ecn.failure, Some(EcnFailure::Missing));
        assert!(!out.is_empty() && out.iter().all(|p| p.ecn == Ecn::NotEct));
    }

    /// A sender past its handshake (Initial pn 0 answered at 10 ms) and its initial window.
    fn established() -> (QuicSender, Vec<Packet>) {
        let c = config();
        let cc = Controller::new(CcaKind::Reno, &ControllerConfig::new(c.max_datagram, c.initial_window));
        let mut s = QuicSender::new(0, 1, c, cc, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].has(flags::SYN));
        out.clear();
        acknowledge(&mut s, SimTime::from_ms(10), 0, &[(0, 1)], flags::SYN, &mut out);
        (s, out)
    }

    #[test]
    fn handshake_then_an_initial_window_of_ten_full_packets() {
        let (s, out) = established();
        // RFC 9002 §7.2: 10 packets; the acknowledged Initial adds one in slow start (§7.3.1).
        assert_eq!(out.len(), 11);
        assert!(out.iter().all(|p| p.wire_bytes == 1252 + 28 && p.payload == 1252 - 41));
        assert_eq!(out.iter().map(|p| p.pn).collect::<Vec<_>>(), (1..=11).collect::<Vec<_>>());
        assert_eq!(out[1].seq, 1211);
        assert_eq!(s.in_flight(), 11 * 1252);
        assert_eq!(s.core.srtt(), Some(SimTime::from_ms(10)));
    }

    #[test]
    fn three_later_packets_acknowledged_declare_a_packet_lost_and_halve_the_window() {
        let (mut s, _) = established();
        let mut out = Vec::new();
        // pn 1 lost; 2, 3, 4 arrive: packet threshold 3 (RFC 9002 §6.1.1).
        acknowledge(&mut s, SimTime::from_ms(20), 3, &[(2, 4)], 0, &mut out);
        assert_eq!(s.core.record.recoveries, 0, "two later packets are not enough");
        let window = s.core.cwnd();
        acknowledge(&mut s, SimTime::from_ms(20), 4, &[(2, 5)], 0, &mut out);
        assert_eq!(s.core.record.recoveries, 1);
        // §7.3.2: ssthresh = cwnd · kLossReductionFactor (0.5), cwnd = ssthresh.
        assert_eq!(s.core.ssthresh(), window / 2);
        assert_eq!(s.core.cwnd(), window / 2);
        // In flight (9 packets) exceeds the halved window: the sender pauses (seed 003's pause).
        assert!(out.iter().all(|p| !p.retransmission));
        // Once the rest is acknowledged, the lost stream bytes 0..1211 go first, in a new packet number.
        acknowledge(&mut s, SimTime::from_ms(21), 11, &[(2, 12)], 0, &mut out);
        let again: Vec<&Packet> = out.iter().filter(|p| p.retransmission).collect();
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].seq, again[0].payload), (0, 1211));
        assert!(again[0].pn > 10);
    }

    #[test]
    fn a_loss_of_a_packet_sent_before_recovery_does_not_reduce_again() {
        let (mut s, _) = established();
        let mut out = Vec::new();
        acknowledge(&mut s, SimTime::from_ms(20), 5, &[(3, 6)], 0, &mut out); // 1 and 2 lost
        assert_eq!(s.core.record.recoveries, 1);
        let window = s.core.cwnd();
        acknowledge(&mut s, SimTime::from_ms(21), 8, &[(6, 9), (3, 6)], 0, &mut out);
        assert_eq!(s.core.cwnd(), window, "no growth and no second reduction inside the recovery period");
    }

    #[test]
    fn the_time_threshold_declares_the_last_packet_lost() {
        let (mut s, _) = established();
        let mut out = Vec::new();
        // Everything but pn 11 (the last) is acknowledged: only the time threshold can find it.
        acknowledge(&mut s, SimTime::from_ms(20), 10, &[(1, 11)], 0, &mut out);
        assert_eq!(s.core.record.recoveries, 0);
        out.clear();
        // No loss timer is armed (largest_acked < 11): the probe timer is.
        let pto_at = s.next_timeout().unwrap();
        s.on_timeout(pto_at, &mut out);
        assert_eq!(s.core.record.rtos, 1);
        assert!(!out.is_empty(), "a probe timeout sends probes");
    }

    #[test]
    fn a_flow_that_closes_while_the_pacer_holds_a_retransmission_asks_for_no_wakeup() {
        // A paced (BBR) flow of five packets, the last with the FIN.
        let c = config();
        let cc = Controller::new(CcaKind::Bbr, &ControllerConfig::new(c.max_datagram, c.initial_window));
        let mut s = QuicSender::new(0, 1, c, cc, Some(5 * 1211));
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        acknowledge(&mut s, SimTime::from_ms(10), 0, &[(0, 1)], flags::SYN, &mut out);
        while s.sent.next_pn() <= 5 {
            let release = s.next_timeout().expect("the pacer releases the next packet");
            s.on_timeout(release, &mut out);
        }
        // The probe timeout sends two copies of pn 1's data (pn 6 and 7, §6.2.4).
        let pto = s.next_timeout().expect("the probe timer");
        s.on_timeout(pto, &mut out);
        assert_eq!((s.sent.next_pn(), s.core.record.rtos), (8, 1));
        // pn 2..=5 acknowledged: pn 1 is lost (packet threshold) and the pacer holds its
        // retransmission back; then the probes' ACK delivers the same bytes.
        acknowledge(&mut s, pto, 5, &[(2, 6)], 0, &mut out);
        assert_eq!(s.core.record.recoveries, 1);
        assert!(s.next_timeout().is_some_and(|t| t > pto), "the retransmission waits for the pacer");
        acknowledge(&mut s, pto, 7, &[(2, 8)], 0, &mut out);
        assert!(s.core.is_closed());
        // A closed sender has nothing to send: a wakeup would find nothing and ask again, forever.
        assert_eq!(s.next_timeout(), None);
    }

    #[test]
    fn acknowledging_every_byte_and_the_fin_closes_a_finite_flow() {
        let c = config();
        let cc = Controller::new(CcaKind::Reno, &ControllerConfig::new(c.max_datagram, c.initial_window));
        let mut s = QuicSender::new(0, 1, c, cc, Some(2000));
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        out.clear();
        acknowledge(&mut s, SimTime::from_ms(10), 0, &[(0, 1)], flags::SYN, &mut out);
        assert_eq!(out.len(), 2);
        assert!(out[1].has(flags::FIN) && out[1].payload == 2000 - 1211);
        acknowledge(&mut s, SimTime::from_ms(20), 2, &[(0, 3)], 0, &mut out);
        assert!(s.core.is_closed());
        assert_eq!(s.bytes_acked(), 2000);
        assert_eq!(s.next_timeout(), None);
    }
}
