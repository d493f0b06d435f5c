//! The sending side of a TCP connection: handshake, segmentation, loss detection by RACK-TLP
//! (RFC 8985) or by SACK (RFC 6675) or duplicate ACKs (RFC 6582), recovery with PRR (RFC 6937)
//! or classic window reduction, the retransmission timer (RFC 6298 or as Linux runs it),
//! delivery-rate estimation and pacing for controllers that ask for them.
//!
//! What it does as QUIC's sender does (the controller's hooks, delivery-rate samples, pacing, the
//! recovery period's clock, the record) is the [`SenderCore`]'s; this file keeps TCP's own: the
//! sequence space and handshake, the SACK scoreboard, loss detection and recovery, and the timers.

use super::config::{TcpConfig, SYN_OPTION_BYTES};
use super::rack::Rack;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::segment::{RackReference, Segment};
use crate::cc::{CongestionController, Controller};
use crate::memory::prefetch;
use crate::net::packet::{flags, Ecn, Packet, SackBlock};
use crate::spec::{RecoveryKind, RtoKind, SsthreshBasis, TcpEcn};
use crate::transport::marked_bytes::ce_marked_bytes;
use crate::transport::rtt::RttEstimate;
use crate::transport::sender_core::{AckTally, Phase, SenderCore};
use crate::transport::tcp::accecn::{self, AceDecoder};
use crate::units::{BitRate, SimTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecoveryCause {
    /// Entered on DupThresh duplicate ACKs or SACK-inferred loss (fast retransmit).
    Fast,
    /// Entered on a retransmission timeout.
    Timeout,
}

/// A loss-recovery episode and, for fast recovery, the PRR state of RFC 6937 §3.
#[derive(Debug, Clone, Copy)]
struct Recovery {
    cause: RecoveryCause,
    /// RFC 6675 RecoveryPoint: HighData when the episode began.
    point: u64,
    /// RFC 6937 prr_delivered, prr_out and RecoverFS, in bytes.
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    /// Bytes PRR lets the sender transmit in response to the latest ACK (sndcnt).
    prr_allowance: u64,
}

#[derive(Debug)]
pub struct TcpSender {
    /// The controller, RTT estimator (RFC 6298), delivery-rate estimator, pacer and record.
    pub core: SenderCore<RttEstimator>,
    config: TcpConfig,
    /// Sequence number after the last application byte, once known (finite flow, or stopped).
    stream_end: Option<u64>,
    snd_una: u64,
    snd_nxt: u64,
    scoreboard: Scoreboard,
    /// Consecutive duplicate ACKs (RFC 5681 §2).
    dupacks: u32,
    /// Without SACK, segments inferred to have left the network from duplicate ACKs (the role
    /// the SACKed count plays in pipe; RFC 6937 §3 "DeliveredData" for non-SACK receivers).
    dupack_delivered_segments: u64,
    recovery: Option<Recovery>,
    rto_deadline: Option<SimTime>,
    /// Classic recovery retransmits the first lost segment at once, whatever pipe says
    /// (RFC 6675 §5 step 4.2 on entry; RFC 6582 §3.2 step 5 on a partial ACK).
    retransmit_now: bool,
    syn_retransmitted: bool,
    syn_sent_at: SimTime,
    fin_sent: bool,
    /// RACK (RFC 8985 §6) and its reordering timer (read by the connection tests in `loopback`).
    pub(super) rack: Rack,
    rack_deadline: Option<SimTime>,
    /// The tail loss probe (RFC 8985 §7): its timer, and the episode of a probe sent (TLP.end_seq
    /// and TLP.is_retrans), which ends when an ACK tells whether the probe repaired a loss.
    tlp_deadline: Option<SimTime>,
    tlp_episode: Option<LossProbe>,
    /// ECN was negotiated: the SYN-ACK answered the SYN's ECE and CWR with ECE alone (RFC 3168
    /// §6.1.1); data segments go out ECT(0).
    ecn: bool,
    /// SND.NXT when the window was last reduced: an ECN-Echo on an ACK that acknowledges no data
    /// sent after it belongs to the window already answered (RFC 3168 §6.1.2: at most one
    /// reduction per window of data).
    ecn_reduced_at: u64,
    /// SND.NXT when an ECN-Echo last halved the window (classic ECN, a controller that answers
    /// it): a loss of data sent before it belongs to the window that reduction answered (RFC 3168
    /// §6.1.2: one reduction for a window's CE marks and losses together).
    ece_reduced_at: u64,
    /// The window was reduced (ECN-Echo, fast retransmit or timeout): the next new data segment
    /// carries CWR (RFC 3168 §6.1.2).
    cwr_pending: bool,
    /// Accurate ECN feedback, once the SYN-ACK agreed to it (RFC 9768): the decoder of the ACKs'
    /// ACE field, whose count replaces the ECN-Echo flag.
    accecn: Option<AceDecoder>,
}

/// A tail loss probe in flight (RFC 8985 §7.3).
#[derive(Debug, Clone, Copy)]
struct LossProbe {
    /// SND.NXT when the probe left.
    end_seq: u64,
    /// The probe sent old data again (rather than a new segment).
    retransmission: bool,
}

/// RFC 8985 §7.2 WCDelAckT: the worst-case delayed-ACK time a probe waits for when a single
/// segment is in flight.
const WORST_CASE_DELAYED_ACK: SimTime = SimTime::from_ms(200);

impl TcpSender {
    pub fn new(flow: u32, receiver_node: u32, config: TcpConfig, cc: Controller, bytes: Option<u64>) -> Self {
        let rtt = RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto, config.rto);
        TcpSender {
            core: SenderCore::new(flow, receiver_node, cc, rtt).with_window_pacing(config.pacing),
            scoreboard: Scoreboard::new(config.mss, config.dupthresh, config.rack),
            config,
            // The first data byte is sequence number 1 (the SYN takes 0).
            stream_end: bytes.map(|b| 1 + b),
            snd_una: 0,
            snd_nxt: 0,
            dupacks: 0,
            dupack_delivered_segments: 0,
            recovery: None,
            rto_deadline: None,
            retransmit_now: false,
            syn_retransmitted: false,
            syn_sent_at: SimTime::ZERO,
            fin_sent: false,
            rack: Rack::default(),
            rack_deadline: None,
            tlp_deadline: None,
            tlp_episode: None,
            ecn: false,
            ecn_reduced_at: 0,
            ece_reduced_at: 0,
            cwr_pending: false,
            accecn: None,
        }
    }

    /// Ask for the lines of the sender that an ACK reads (`Simulator::prefetch_ahead`): in
    /// practice all of it but the handshake's fields, wherever the compiler put them.
    #[inline]
    pub fn prefetch(&self) {
        self.core.prefetch();
        prefetch(&self.config);
        prefetch(&self.config.mss);
        self.scoreboard.prefetch();
        prefetch(&self.rack);
        prefetch(&self.snd_una);
        prefetch(&self.stream_end);
        prefetch(&self.recovery);
        prefetch(&self.rto_deadline);
        prefetch(&self.rack_deadline);
        prefetch(&self.tlp_deadline);
        prefetch(&self.tlp_episode);
    }

    /// Ask for the buffer entries an ACK reads first: the ends of the scoreboard and of the
    /// write log. Finding them reads the sender itself, so call this once [`TcpSender::prefetch`]
    /// had time to bring it in.
    #[inline]
    pub fn prefetch_buffers(&self) {
        self.scoreboard.prefetch_ends();
        self.core.prefetch_buffers();
    }

    // ----- observers, for the recorder (the rest are the core's) -----

    pub fn in_flight(&self) -> u64 {
        self.pipe()
    }
    pub fn bytes_acked(&self) -> u64 {
        self.data_acked_up_to(self.snd_una)
    }
    /// Application bytes the sender has taken from its application so far.
    pub fn bytes_written(&self) -> u64 {
        self.snd_nxt.saturating_sub(1)
    }
    /// The earliest of the retransmission, reordering and loss-probe deadlines and the pacer's
    /// next release (when it holds a packet back).
    pub fn next_timeout(&self) -> Option<SimTime> {
        self.core.next_wakeup([self.rto_deadline, self.rack_deadline, self.tlp_deadline])
    }
    /// A closed connection keeps its counters but not its scoreboard's memory.
    pub fn release_buffers(&mut self) {
        debug_assert!(self.core.is_closed());
        self.scoreboard.shrink_to_fit();
        self.core.release_buffers();
    }

    /// Heap held by the sender's buffers and record (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        self.scoreboard.heap_bytes() + self.core.heap_bytes()
    }

    fn data_acked_up_to(&self, ack: u64) -> u64 {
        let data_end = self.stream_end.unwrap_or(u64::MAX);
        ack.min(data_end).saturating_sub(1)
    }

    /// RFC 6675 pipe; without SACK, duplicate ACKs stand in for SACKed segments.
    fn pipe(&self) -> u64 {
        self.scoreboard.assert_consistent();
        let inferred = self.dupack_delivered_segments * self.config.mss as u64;
        self.scoreboard.pipe().saturating_sub(inferred)
    }

    fn fin_seq(&self) -> Option<u64> {
        self.stream_end
    }

    // ----- application events -----

    /// The application opens the connection: send the SYN.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.core.start(now);
        self.syn_sent_at = now;
        self.snd_nxt = 1;
        out.push(self.segment(now, 0, 0, self.syn_flags(), false));
        self.rto_deadline = Some(now + self.core.rtt.rto());
    }

    /// The application stops writing: the stream ends with what has been sent.
    pub fn stop(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        match self.core.phase() {
            Phase::Idle | Phase::Handshake => {
                // Nothing was sent: close with an empty stream once established.
                self.stream_end = Some(1);
            }
            Phase::Established => {
                let end = self.stream_end.unwrap_or(u64::MAX).min(self.snd_nxt);
                self.stream_end = Some(end);
                self.transmit(now, out);
            }
            Phase::Closed => {}
        }
    }

    // ----- network events -----

    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, sack: &[SackBlock], out: &mut Vec<Packet>) {
        match self.core.phase() {
            Phase::Handshake if packet.has(flags::SYN) && packet.has(flags::ACK) => {
                self.core.establish(now);
                // RFC 3168 §6.1.1: an ECN-setup SYN-ACK has ECE set and CWR clear; RFC 9768
                // §3.1.1: an AccECN one sets one of Table 2's four patterns.
                let accecn = self.config.accecn && accecn::agrees(packet.flags);
                self.accecn = accecn.then(AceDecoder::default);
                self.ecn = self.config.ecn != TcpEcn::Off
                    && (accecn || (packet.has(flags::ECE) && !packet.has(flags::CWR) && !packet.has(flags::AE)));
                if !self.syn_retransmitted {
                    self.core.rtt.on_sample(now - self.syn_sent_at);
                    self.core.record_rtt_sample(now - self.syn_sent_at);
                }
                self.core.rtt.reset_backoff();
                self.snd_una = 1;
                self.rto_deadline = None;
                self.transmit(now, out);
            }
            Phase::Established if packet.has(flags::ACK) && !packet.has(flags::SYN) => {
                self.on_ack(now, packet, sack, out);
            }
            _ => {} // duplicates of the SYN-ACK, or anything after close
        }
    }

    pub fn on_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.scoreboard.assert_consistent();
        let due = |deadline: Option<SimTime>| deadline.is_some_and(|d| now >= d);
        if due(self.tlp_deadline) {
            // The probe timer stands in for the RTO it was clamped to (RFC 8985 §7.2).
            self.tlp_deadline = None;
            self.send_loss_probe(now, out);
            return;
        }
        if due(self.rack_deadline) {
            self.rack_deadline = None;
            self.on_reordering_timeout(now, out);
            return;
        }
        if !due(self.rto_deadline) {
            // Not a loss-detection timer: the pacer may release what it held back.
            if self.core.held_packet_due(now) {
                self.transmit(now, out);
            }
            return;
        }
        self.rto_deadline = None;
        match self.core.phase() {
            Phase::Handshake => {
                // RFC 6298 §5.5 applies to the SYN as well: back off and resend.
                self.core.rtt.back_off();
                self.syn_retransmitted = true;
                self.core.record.rtos += 1;
                out.push(self.segment(now, 0, 0, self.syn_flags(), true));
                self.rto_deadline = Some(now + self.core.rtt.rto());
            }
            Phase::Established => self.on_retransmission_timeout(now, out),
            Phase::Idle | Phase::Closed => {}
        }
    }

    fn on_ack(&mut self, now: SimTime, packet: &Packet, sack: &[SackBlock], out: &mut Vec<Packet>) {
        self.scoreboard.assert_consistent();
        let ack = packet.ack;
        let prior_una = self.snd_una;
        let prior_in_flight = self.pipe();

        // Every segment this ACK delivers feeds the delivery-rate estimator and RACK.
        let min_rtt = self.core.rtt.min_rtt();
        let rack_on = self.config.rack;
        self.rack.begin_ack();
        let (rate, rack) = (&mut self.core.rate, &mut self.rack);
        let mut on_delivered = |seg: &Segment| {
            rate.on_delivered(now, &seg.tx, seg.sent_time, seg.ever_retransmitted, seg.len as u64);
            if rack_on {
                rack.on_delivered(seg, now, min_rtt);
            }
        };

        // SACK blocks first: they may reveal losses below the cumulative point (RFC 6675 §5).
        let mut newly_sacked = 0;
        if self.config.sack {
            newly_sacked = self.scoreboard.sack_all(sack, &mut on_delivered);
        }

        let mut delivered = newly_sacked;
        let mut acked_bytes = 0;
        let mut newest_sent = None;
        let mut rtt_sample = None;
        if ack > self.snd_una {
            let cumulative = self.scoreboard.ack_up_to(ack, &mut on_delivered);
            acked_bytes = cumulative.bytes;
            delivered += cumulative.bytes - cumulative.previously_sacked_bytes;
            if !self.config.sack {
                // RFC 6937 §3: segments already counted via duplicate ACKs are not delivered twice.
                let counted = self.dupack_delivered_segments.min(cumulative.segments.saturating_sub(1));
                self.dupack_delivered_segments -= counted;
                delivered = delivered.saturating_sub(counted * self.config.mss as u64);
            }
            if let Some(seg) = cumulative.newest {
                newest_sent = Some(seg.sent_time);
                let sample = if self.config.timestamps {
                    // RFC 7323 §4.1: RTTM from the echoed timestamp of an ACK that acknowledges
                    // new data; it names the very transmission, so retransmissions are no problem.
                    Some(now - packet.ts_ecr)
                } else {
                    // Karn's rule (RFC 6298 §3): no sample from a retransmitted segment.
                    (!seg.ever_retransmitted).then(|| now - seg.sent_time)
                };
                if let Some(sample) = sample {
                    self.core.rtt.on_sample(sample);
                    self.core.record_rtt_sample(sample);
                    rtt_sample = Some(sample);
                }
            }
            self.snd_una = ack;
            self.dupacks = 0;
            if self.recovery.is_none() {
                self.dupack_delivered_segments = 0;
            }
            self.core.rtt.reset_backoff();
            self.core.acknowledged(self.bytes_acked());
        } else if ack == self.snd_una && !self.scoreboard.is_empty() && packet.payload == 0 {
            // A duplicate ACK: without SACK, RFC 5681 §2's. With SACK, RFC 6675 §2's: only an
            // ACK that SACKs octets not acknowledged or SACKed before counts. The immediate ACK a
            // receiver sends for a segment it already holds (a spurious retransmission, as after
            // a timeout that went back over data still in flight) brings no such news and is no
            // sign of a loss.
            if !self.config.sack || newly_sacked > 0 {
                self.dupacks += 1;
            }
            if !self.config.sack {
                let outstanding_segments = self.scoreboard.outstanding_bytes().div_ceil(self.config.mss as u64);
                if self.dupack_delivered_segments + 1 < outstanding_segments {
                    self.dupack_delivered_segments += 1;
                    delivered += self.config.mss as u64;
                }
            }
        }

        if self.fin_sent && self.fin_seq().is_some_and(|f| ack > f) {
            self.close(now);
            return;
        }

        if self.tlp_episode.is_some() {
            self.on_loss_probe_answer(now, ack, ack > prior_una || newly_sacked > 0);
        }

        // Loss detection: RACK by time (RFC 8985), else RFC 6675's DupThresh rule with SACK, else
        // duplicate ACKs (RFC 6582).
        let mut newly_lost = 0;
        if self.config.rack {
            newly_lost += self.rack_detect_losses(now);
        } else if self.config.sack {
            newly_lost += self.scoreboard.mark_losses();
        }
        match self.recovery {
            None => {
                let loss_found = if self.config.rack {
                    self.scoreboard.has_lost()
                } else {
                    self.dupacks >= self.config.dupthresh || (self.config.sack && self.scoreboard.first_is_lost())
                };
                if loss_found {
                    if !self.config.sack {
                        // RFC 6582 §3.2 step 2: fast retransmit.
                        newly_lost += self.scoreboard.mark_first_lost();
                    }
                    self.enter_fast_recovery(now);
                }
            }
            Some(r) if ack >= r.point => self.exit_recovery(now),
            Some(r) => {
                if !self.config.sack && r.cause == RecoveryCause::Fast && ack > prior_una {
                    // RFC 6582 §3.2 step 5: a partial ACK means the next segment was lost too.
                    newly_lost += self.scoreboard.mark_first_lost();
                    self.retransmit_now = self.sender_recovers_classically();
                }
            }
        }

        // RFC 3168 §6.1.2: an ECN-Echo is answered as a loss would be (the controller's
        // multiplicative decrease, no retransmission), once per window of data: not within a
        // loss recovery (its reduction answers the same window), nor for an ACK that covers no
        // data sent since the last reduction.
        let (ecn_echo, ce_marked_bytes) = self.congestion_feedback(packet, acked_bytes, delivered);
        let ecn_reduces = ecn_echo && self.recovery.is_none() && ack > self.ecn_reduced_at;
        if ecn_reduces {
            let flight_size = self.snd_nxt - self.snd_una;
            let responded = self.core.ecn_congestion_event(now, flight_size);
            self.window_reduced();
            if responded && self.config.ecn == TcpEcn::Classic {
                self.ece_reduced_at = self.snd_nxt;
            }
        }

        // In fast recovery the sender's procedure (PRR or classic) decides what this ACK lets
        // out, and the window does not grow (RFC 5681 §3.2, RFC 6937 §3).
        let in_fast_recovery = matches!(self.recovery, Some(r) if r.cause == RecoveryCause::Fast);
        if in_fast_recovery && !self.core.cc.governs_recovery() {
            // RFC 9937 §5: a safe ACK advances snd.una and indicates no further loss.
            let safe_ack = ack > prior_una && newly_lost == 0;
            self.update_prr(delivered, safe_ack);
        }
        let tally = AckTally {
            bytes_acked: acked_bytes,
            delivered,
            lost: newly_lost,
            sent_time: newest_sent.unwrap_or(now),
            rtt: rtt_sample,
            prior_in_flight,
            in_flight: self.pipe(),
            ecn_echo,
            ce_marked_bytes,
        };
        // The ACK that reduced the window does not grow it again.
        self.core.conclude_ack(now, tally, acked_bytes > 0 && !in_fast_recovery && !ecn_reduces);

        // RFC 6298 §5.2/5.3: stop the timer when nothing is outstanding, else restart it on new data.
        if self.scoreboard.is_empty() && !self.fin_outstanding() {
            self.rto_deadline = None;
        } else if ack > prior_una {
            self.rto_deadline = Some(now + self.core.rtt.rto());
        }
        self.scoreboard.assert_consistent();

        // New data acknowledged re-arms the loss probe (RFC 8985 §7.2), once the segments this
        // ACK releases are out: they would re-arm it anyway, and nothing it reads changes
        // otherwise.
        self.send_allowed(now, out, ack > prior_una);
    }

    // ----- RACK-TLP (RFC 8985) -----

    /// RFC 8985 §6.2 step 5 with the current reordering window; arms the reordering timer for
    /// the next segment that may still be deemed lost. Returns the bytes newly deemed lost.
    /// Inlined into the ACK's processing, which asks on every ACK (the usual answer, nothing
    /// lost, is the scoreboard's inline test; a call cost its frame and reloads).
    #[inline(always)]
    fn rack_detect_losses(&mut self, now: SimTime) -> u64 {
        let Some((reference, reo_wnd)) = self.rack_wait() else { return 0 };
        let found = self.scoreboard.rack_detect_losses(reference, reo_wnd, now);
        self.rack_deadline = found.next_deadline;
        found.bytes
    }

    /// RACK's reference (RACK.xmit_ts, RACK.end_seq, RACK.rtt) and its reordering window
    /// RACK.reo_wnd (RFC 8985 §6.2 step 4) now, once some segment has been delivered.
    #[inline(always)]
    fn rack_wait(&self) -> Option<(RackReference, SimTime)> {
        let (Some(reference), Some(min_rtt), Some(srtt)) =
            (self.rack.reference(), self.core.rtt.min_rtt(), self.core.rtt.srtt())
        else {
            return None;
        };
        let reo_wnd = self.rack.reordering_window(
            self.recovery.is_some(),
            self.scoreboard.sacked_segments(),
            self.config.dupthresh,
            min_rtt,
            srtt,
        );
        Some((reference, reo_wnd))
    }

    /// RFC 8985 §6.3: the reordering window has passed for a segment sent before the latest
    /// delivered one. Losses found now start fast recovery, which (as in Linux) counts one segment
    /// delivered so that PRR lets the retransmission out.
    fn on_reordering_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if !self.core.is_established() {
            return;
        }
        self.rack_detect_losses(now);
        if self.recovery.is_none() && self.scoreboard.has_lost() {
            self.enter_fast_recovery(now);
            if !self.core.cc.governs_recovery() {
                self.update_prr(self.config.mss as u64, false);
            }
        }
        self.transmit(now, out);
    }

    /// RFC 8985 §7.2: after new data is sent or acknowledged, outside recovery and with no probe
    /// outstanding, a probe is due after PTO = 2·SRTT (plus WCDelAckT with a single segment in
    /// flight), and no later than the RTO.
    fn schedule_loss_probe(&mut self, now: SimTime) {
        self.tlp_deadline = None;
        if !self.config.rack || self.recovery.is_some() || self.tlp_episode.is_some() || self.scoreboard.is_empty() {
            return;
        }
        let Some(srtt) = self.core.rtt.srtt() else { return };
        let mut pto = srtt.mul(2);
        if self.scoreboard.outstanding_bytes() <= self.config.mss as u64 {
            pto += WORST_CASE_DELAYED_ACK;
        }
        let at = now + pto;
        self.tlp_deadline = Some(self.rto_deadline.map_or(at, |rto| at.min(rto)));
    }

    /// RFC 8985 §7.3: send one new segment if there is one (whatever the window says), else the
    /// last segment again; then the RTO timer is re-armed.
    fn send_loss_probe(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if !self.core.is_established() || self.recovery.is_some() {
            return;
        }
        let data_end = self.stream_end.unwrap_or(u64::MAX);
        let len = (data_end.saturating_sub(self.snd_nxt)).min(self.config.mss as u64);
        if len > 0 && self.rwnd_allows(len) {
            let pacing_rate = self.core.pacing_rate(self.pipe());
            self.send_new_segment(now, len, pacing_rate, out);
            self.tlp_episode = Some(LossProbe { end_seq: self.snd_nxt, retransmission: false });
        } else if let Some(i) = self.scoreboard.last_index() {
            let last = *self.scoreboard.get(i);
            if !last.sacked && !last.lost && !last.retransmitted {
                let tx = self.core.snapshot_for_send(now, false);
                let seg = self.scoreboard.probe(i, now, tx);
                out.push(self.segment(now, seg.start, seg.len, flags::ACK, true));
                self.tlp_episode = Some(LossProbe { end_seq: self.snd_nxt, retransmission: true });
            }
        }
        self.rto_deadline = Some(now + self.core.rtt.rto());
        self.scoreboard.assert_consistent();
    }

    /// RFC 8985 §7.4, as Linux judges it without DSACK: a probe of new data needs no verdict; a
    /// retransmitted probe repaired a loss if the ACK moves beyond it (the congestion window is
    /// reduced once), and was not needed if a pure duplicate ACK says both copies arrived.
    fn on_loss_probe_answer(&mut self, now: SimTime, ack: u64, new_information: bool) {
        let Some(probe) = self.tlp_episode else { return };
        if ack < probe.end_seq {
            return;
        }
        if !probe.retransmission || !new_information {
            self.tlp_episode = None;
        } else if ack > probe.end_seq {
            let window = self.reduction_basis().min(self.core.cc.window());
            self.core.cc.on_congestion_event(now, window);
            self.core.cc.on_recovery_exit(now);
            self.window_reduced();
            self.tlp_episode = None;
        }
    }

    fn fin_outstanding(&self) -> bool {
        self.fin_sent && !self.core.is_closed()
    }

    fn close(&mut self, now: SimTime) {
        self.recovery = None;
        self.rto_deadline = None;
        self.rack_deadline = None;
        self.tlp_deadline = None;
        self.snd_una = self.fin_seq().map_or(self.snd_una, |f| f + 1);
        self.core.close(now, self.bytes_acked());
    }

    /// The flight a congestion event reduces from (`tcp.ssthresh_from`), read when the loss is
    /// detected (after this ACK's SACK blocks and losses are on the scoreboard):
    /// - FlightSize = SND.NXT − SND.UNA, RFC 5681 §3.1 eq. (4), which RFC 6675 §5 step (4.2) and
    ///   RFC 9438 §4.6 take over. It counts SACKed data: when CoDel drops retransmissions too, a
    ///   recovery lasts k RTTs and the next begins as it ends, with about k windows SACKed above
    ///   SND.UNA; β·FlightSize then exceeds the window being reduced (CUBIC, β = 0.7, once
    ///   k > 1/0.7; Reno once k > 2) and the window grows from one recovery to the next.
    /// - pipe, RFC 6675 §4: the data still in the network, SACKed and lost segments excluded; ns-3
    ///   gives its controllers `BytesInFlight`, which is this estimate (its NewReno halves it).
    /// - cwnd: the window itself, as Linux reduces (`tcp_reno_ssthresh`, CUBIC's
    ///   `recalc_ssthresh`); RFC 9438 §4.6 allows it where cwnd cannot grow beyond the flight
    ///   (RFC 7661's congestion-window validation), which no controller here enforces.
    fn reduction_basis(&self) -> u64 {
        match self.config.ssthresh_from {
            SsthreshBasis::FlightSize => self.snd_nxt - self.snd_una,
            SsthreshBasis::Pipe => self.pipe(),
            SsthreshBasis::Cwnd => self.core.cc.window(),
        }
    }

    fn enter_fast_recovery(&mut self, now: SimTime) {
        if self.ecn && self.snd_una < self.ece_reduced_at {
            // RFC 3168 §6.1.2: the first hole was sent before an ECN-Echo reduced the window, so
            // that reduction answers this loss too: the recovery repairs it without a second
            // reduction (as Linux enters Recovery from CWR).
            self.core.loss_in_answered_window(now);
        } else {
            self.core.congestion_event(now, self.reduction_basis());
            self.window_reduced();
        }
        // RFC 5681 FlightSize: data sent but not cumulatively acknowledged.
        let flight_size = self.snd_nxt - self.snd_una;
        // A recovery episode ends any loss-probe episode (its repair is this reduction).
        self.tlp_deadline = None;
        self.tlp_episode = None;
        self.recovery = Some(Recovery {
            cause: RecoveryCause::Fast,
            point: self.snd_nxt,
            prr_delivered: 0,
            prr_out: 0,
            // RFC 6937 §3: RecoverFS = snd.nxt - snd.una.
            recover_fs: flight_size.max(1),
            prr_allowance: 0,
        });
        self.retransmit_now = self.sender_recovers_classically();
    }

    /// The congestion window was just reduced, for any reason: with ECN, no ECN-Echo for the
    /// data sent so far reduces it again, and the next new data segment carries CWR (RFC 3168
    /// §6.1.2).
    fn window_reduced(&mut self) {
        if self.ecn {
            self.ecn_reduced_at = self.snd_nxt;
            // RFC 9768 §3.2.2: with AccECN, CWR is part of the ACE field, not a signal of its own.
            self.cwr_pending = self.accecn.is_none();
        }
    }

    /// What an ACK says of congestion: whether it reports CE marks, and the bytes taken as
    /// marked. Classic and DCTCP feedback: its ECN-Echo flag, and then every byte it acknowledges
    /// (RFC 8257 §3.3). AccECN: the CE-marked packets its ACE field adds for the `delivered`
    /// bytes it newly acknowledges, cumulatively or by SACK (RFC 9768 A.2.1's newlyAckedB, in
    /// full-sized segments), and that share of those bytes (the sender cannot tell which
    /// packets were marked; more marks than packets count whole segments).
    fn congestion_feedback(&mut self, packet: &Packet, acked_bytes: u64, delivered: u64) -> (bool, u64) {
        let Some(decoder) = self.accecn.as_mut() else {
            let echo = self.ecn && packet.has(flags::ECE);
            return (echo, if echo { acked_bytes } else { 0 });
        };
        let mss = self.config.mss as u64;
        let packets = delivered.div_ceil(mss);
        let marked = decoder.on_ack(accecn::ace(packet.flags), packets) as u64;
        let bytes = ce_marked_bytes(marked as u32, packets, delivered) + marked.saturating_sub(packets) * mss;
        (marked > 0, bytes)
    }

    /// The SYN's flags: with ECN, ECE and CWR ask for it (RFC 3168 §6.1.1, an ECN-setup SYN).
    fn syn_flags(&self) -> u8 {
        if self.config.ecn == TcpEcn::Off {
            flags::SYN
        } else if self.config.accecn {
            flags::SYN | accecn::SYN_FLAGS // RFC 9768 §3.1.1
        } else {
            flags::SYN | flags::ECE | flags::CWR
        }
    }

    /// Classic recovery run by the sender (not by a controller that governs recovery itself).
    fn sender_recovers_classically(&self) -> bool {
        self.config.recovery == RecoveryKind::Classic && !self.core.cc.governs_recovery()
    }

    fn exit_recovery(&mut self, now: SimTime) {
        let r = self.recovery.take().expect("in recovery");
        self.scoreboard.release_timeout_hold();
        self.dupack_delivered_segments = 0;
        if r.cause == RecoveryCause::Fast {
            self.core.exit_recovery(now);
        } else {
            // After a timeout the controller has nothing to restore.
            self.core.end_recovery(now);
        }
    }

    /// PRR (RFC 9937 §5, which obsoletes RFC 6937): how much may be sent in response to this ACK
    /// during fast recovery. While pipe exceeds ssthresh the sending rate is the delivery rate
    /// scaled by ssthresh/RecoverFS; below it, pipe climbs back to ssthresh by the conservative
    /// reduction bound (send what was delivered: packet conservation), with one extra segment per
    /// ACK (the slow-start reduction bound) only on safe ACKs. Slow-starting on every ACK, as RFC
    /// 6937's SSRB did, sends twice what is delivered while further losses keep pipe low: on a
    /// shallow shared buffer that sustains a retransmission storm (Linux moved to this rule in
    /// 2015 for the same reason).
    fn update_prr(&mut self, delivered: u64, safe_ack: bool) {
        let pipe = self.pipe();
        let ssthresh = self.core.cc.ssthresh();
        let mss = self.config.mss as u64;
        let classic = self.config.recovery == RecoveryKind::Classic;
        let Some(r) = self.recovery.as_mut() else { return };
        r.prr_delivered += delivered;
        if classic {
            return; // classic recovery sends while pipe < cwnd, see `may_send`
        }
        let sndcnt = if pipe > ssthresh {
            // Proportional part: SndCnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let target = (r.prr_delivered as u128 * ssthresh as u128).div_ceil(r.recover_fs as u128) as u64;
            target.saturating_sub(r.prr_out)
        } else {
            // PRR-CRB: SndCnt = MAX(prr_delivered - prr_out, DeliveredData); PRR-SSRB on a safe
            // ACK: + SMSS; then SndCnt = MIN(ssthresh - pipe, SndCnt).
            let conservative = r.prr_delivered.saturating_sub(r.prr_out).max(delivered);
            let limit = if safe_ack { conservative + mss } else { conservative };
            (ssthresh - pipe).min(limit)
        };
        r.prr_allowance = sndcnt;
    }

    fn on_retransmission_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.core.record.rtos += 1;
        if self.scoreboard.is_empty() && !self.fin_outstanding() {
            return;
        }
        if self.core.rtt.is_backed_off() {
            // The same segment times out again: RFC 5681 §3.1 holds ssthresh.
            self.core.cc.on_repeated_timeout(now);
        } else {
            // RFC 5681 §3.1: ssthresh from the window the sender had, cwnd = 1 SMSS. Inside a fast
            // recovery whose retransmission was lost, FlightSize still counts the whole pre-loss
            // flight; the controller's window is already reduced, and bounds every basis.
            let basis = self.reduction_basis();
            self.core.cc.on_retransmission_timeout(now, basis.min(self.core.cc.window()));
            self.window_reduced();
        }
        // RFC 6298 §5.5: back off the timer. The loss probe has nothing left to do.
        self.core.rtt.back_off();
        self.rack_deadline = None;
        self.tlp_deadline = None;
        self.tlp_episode = None;
        // RACK's reordering window as the ACKs left it, before the timeout's recovery begins.
        let rack_window = self.config.rack.then(|| self.rack_wait()).flatten();
        if self.config.rack {
            // RFC 8985 §6.3: the oldest segment and every segment sent at least RACK.rtt +
            // RACK.reo_wnd ago are lost; the rest stays in flight, for RACK to judge (§6.2).
            // Before any delivery RACK.rtt has no sample (zero), and every segment is lost.
            let wait = rack_window.map_or(SimTime::ZERO, |(reference, reo_wnd)| reference.rtt + reo_wnd);
            self.scoreboard.mark_losses_on_rto(wait, now);
        } else {
            // RFC 6675 §5.1 / RFC 5681 §3.1: every unSACKed segment is deemed lost. With SACK,
            // what goes out again first is what the receiver reports missing, new data before
            // the segments above the highest SACK (behind a deep queue those are still on their
            // way; `Scoreboard::mark_all_lost`).
            self.scoreboard.mark_all_lost(self.config.sack);
        }
        if let Some((reference, reo_wnd)) = rack_window {
            // RFC 8985 §6.2's timer, for the segments left in flight that were sent before the
            // latest delivered one: each is lost once its RACK.rtt + RACK.reo_wnd has passed,
            // whether or not an ACK comes by then. (Nothing more is found now: §6.3 marked every
            // segment that old.)
            let found = self.scoreboard.rack_detect_losses(reference, reo_wnd, now);
            debug_assert_eq!(found.bytes, 0, "RFC 8985 §6.3 marks what §6.2 would");
            self.rack_deadline = found.next_deadline;
        }
        self.dupacks = 0;
        self.dupack_delivered_segments = 0;
        // A timeout inside a fast recovery continues its episode.
        self.core.begin_recovery(now);
        self.recovery = Some(Recovery {
            cause: RecoveryCause::Timeout,
            point: self.snd_nxt,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 1,
            prr_allowance: 0,
        });
        // RFC 6298 §5.4: retransmit the earliest unacknowledged segment (or the lone FIN).
        if self.scoreboard.is_empty() {
            let fin = self.fin_seq().expect("FIN outstanding");
            out.push(self.segment(now, fin, 0, flags::FIN | flags::ACK, true));
        }
        // With RACK the segments still in flight count in pipe, which may exceed the loss window
        // of one segment: the earliest segment goes regardless (RFC 6298 §5.4), the rest as ACKs
        // bring pipe under cwnd (RFC 6675 §5).
        self.retransmit_now = self.config.rack;
        self.rto_deadline = Some(now + self.core.rtt.rto());
        self.transmit(now, out);
    }

    // ----- transmission -----

    /// Whether a segment of `len` bytes may go out now, under the congestion window `cwnd`.
    fn may_send(&self, len: u64, cwnd: u64) -> bool {
        // Outside recovery (the usual case) only the window is asked.
        if let Some(r) = self.recovery {
            if r.cause == RecoveryCause::Fast
                && self.config.recovery == RecoveryKind::Prr
                && !self.core.cc.governs_recovery()
            {
                return r.prr_allowance > 0;
            }
        }
        // RFC 6675 §5 / RFC 5681: transmit while cwnd - pipe >= 1 SMSS.
        self.pipe() + len <= cwnd
    }

    fn charge(&mut self, len: u64) {
        if let Some(r) = self.recovery.as_mut() {
            if r.cause == RecoveryCause::Fast {
                r.prr_out += len;
                r.prr_allowance = r.prr_allowance.saturating_sub(len);
            }
        }
    }

    /// Send what the window, the recovery procedure and the application allow.
    pub fn transmit(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.send_allowed(now, out, false);
    }

    /// [`TcpSender::transmit`]; `rearm_probe`: the loss probe is re-armed even if no new data
    /// leaves (new data was acknowledged).
    fn send_allowed(&mut self, now: SimTime, out: &mut Vec<Packet>, rearm_probe: bool) {
        self.core.release_pacing_hold();
        if !self.core.is_established() {
            return;
        }
        // No hook of the controller runs while segments leave: its window and pacing rate hold
        // for the whole call, read once rather than once per segment.
        let cwnd = self.core.cc.window();
        let pacing_rate = self.core.pacing_rate(self.pipe());
        let mut sent_new = false;
        loop {
            // NextSeg() rule 1: a lost segment; otherwise rule 2: new data.
            if let Some(i) = self.scoreboard.next_retransmission() {
                let len = self.scoreboard.get(i).len as u64;
                if !self.retransmit_now && !self.may_send(len, cwnd) {
                    break;
                }
                if !self.core.pacing_allows_at(now, pacing_rate) {
                    break;
                }
                self.retransmit_now = false;
                if i == 0 && self.config.rto == RtoKind::Linux {
                    // Linux restarts the timer when it retransmits the first outstanding segment,
                    // so a fast retransmission gets a whole RTO to come back.
                    self.rto_deadline = Some(now + self.core.rtt.rto());
                }
                let tx = self.core.snapshot_for_send(now, self.scoreboard.is_empty());
                let seg = self.scoreboard.retransmit(i, now, tx);
                self.charge(len);
                let packet = self.segment(now, seg.start, seg.len, flags::ACK, true);
                self.paced(now, &packet, pacing_rate);
                out.push(packet);
                continue;
            }
            let data_end = self.stream_end.unwrap_or(u64::MAX);
            let new_len = data_end.saturating_sub(self.snd_nxt).min(self.config.mss as u64);
            let new_data_may_go = new_len > 0 && self.rwnd_allows(new_len);
            if !new_data_may_go && self.scoreboard.holds_unreported_losses() {
                // After a timeout, the lost segments above the highest SACK come once no new
                // data can take their place (RFC 6675 §5.1, `Scoreboard::mark_all_lost`).
                self.scoreboard.release_timeout_hold();
                continue;
            }
            if new_len > 0 {
                if !new_data_may_go || !self.may_send(new_len, cwnd) || !self.core.pacing_allows_at(now, pacing_rate) {
                    break;
                }
                self.send_new_segment(now, new_len, pacing_rate, out);
                sent_new = true;
                continue;
            }
            // Nothing left to send although the window has room: the application limits the
            // flow (draft-cheng-iccrg-delivery-rate-estimation §3.4).
            self.core.note_send_opportunity_unused(self.pipe());
            if !self.fin_sent && self.stream_end.is_some() {
                // All data is out: the FIN follows (it takes no window).
                self.fin_sent = true;
                let fin = self.fin_seq().expect("stream end known");
                out.push(self.segment(now, fin, 0, flags::FIN | flags::ACK, false));
            }
            break;
        }
        // A forced retransmission is only ever for the segment at hand.
        self.retransmit_now = false;
        // RFC 6298 §5.1: start the timer when data is sent and it is not running.
        if self.rto_deadline.is_none() && (!self.scoreboard.is_empty() || self.fin_outstanding()) {
            self.rto_deadline = Some(now + self.core.rtt.rto());
        }
        if sent_new || rearm_probe {
            self.schedule_loss_probe(now);
        }
        self.scoreboard.assert_consistent();
    }

    fn rwnd_allows(&self, len: u64) -> bool {
        self.config.rwnd.is_none_or(|rwnd| self.snd_nxt + len - self.snd_una <= rwnd)
    }

    /// Send `len` new bytes from SND.NXT, paced at `pacing_rate` (the controller's).
    fn send_new_segment(&mut self, now: SimTime, len: u64, pacing_rate: Option<BitRate>, out: &mut Vec<Packet>) {
        let start = self.snd_nxt;
        let tx = self.core.snapshot_for_send(now, self.scoreboard.is_empty());
        self.scoreboard.push(start, len as u32, now, tx);
        // Application offsets start at 0 (sequence number 1).
        self.core.wrote(start - 1, start - 1 + len, now);
        self.snd_nxt += len;
        self.charge(len);
        let packet = self.segment(now, start, len as u32, flags::ACK, false);
        self.paced(now, &packet, pacing_rate);
        out.push(packet);
    }

    fn paced(&mut self, now: SimTime, packet: &Packet, pacing_rate: Option<BitRate>) {
        self.core.pace_at(now, packet.wire_bytes as u64, pacing_rate);
    }

    fn segment(&mut self, now: SimTime, seq: u64, payload: u32, tcp_flags: u8, retransmission: bool) -> Packet {
        let options = if tcp_flags & flags::SYN != 0 { SYN_OPTION_BYTES } else { 0 };
        let wire_bytes = self.config.header_bytes + payload + options;
        let mut packet = self.core.packet(now, tcp_flags, seq, payload, wire_bytes, retransmission);
        if self.accecn.is_some() {
            // RFC 9768 §3.2.2: every segment after the handshake carries the ACE field of the
            // other half-connection, whose pure ACKs are never ECT: its count stays at 5.
            packet.flags |= accecn::ace_flags(accecn::INITIAL_CEP);
        }
        // RFC 3168 §6.1.4-6.1.5: data segments are ECT(0); the SYN, pure control segments and
        // retransmissions are not. An L4S sender's are ECT(1), the L4S identifier (RFC 9331 §4.1).
        if self.ecn && payload > 0 && !retransmission {
            packet.ecn = if self.config.ecn == TcpEcn::L4s { Ecn::Ect1 } else { Ecn::Ect0 };
            if self.cwr_pending {
                // §6.1.2: CWR on the first new data segment after the reduction.
                packet.flags |= flags::CWR;
                self.cwr_pending = false;
            }
        }
        packet
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ControllerConfig;
    use crate::net::packet::{SackBlock, MAX_SACK_BLOCKS};
    use crate::spec::{CcaKind, TcpSpec};
    use crate::units::BitRate;

    const MSS: u64 = 1000;

    fn established(spec: TcpSpec) -> (TcpSender, Vec<Packet>) {
        established_with(CcaKind::Reno, spec)
    }

    fn established_with(cca: CcaKind, spec: TcpSpec) -> (TcpSender, Vec<Packet>) {
        let config = TcpConfig::from(&TcpSpec { mss: MSS as u32, ..spec });
        let cc = Controller::new(cca, &ControllerConfig::new(config.mss, config.initial_window));
        let mut s = TcpSender::new(0, 1, config, cc, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert!(out[0].has(flags::SYN));
        out.clear();
        let syn_ack = Packet { flags: flags::SYN | flags::ACK, ..ack_packet(1, &[]) };
        s.on_packet(SimTime::from_ms(10), &syn_ack, &[], &mut out);
        (s, out)
    }

    /// An ACK of `ack` that carries `blocks`, which travel beside the packet (its `sack_len`
    /// counts them).
    fn ack_packet(ack: u64, blocks: &[SackBlock]) -> Packet {
        assert!(blocks.len() <= MAX_SACK_BLOCKS);
        Packet { sack_len: blocks.len() as u8, ..Packet::acknowledgement(0, 0, flags::ACK, ack, 52, SimTime::ZERO) }
    }

    /// Deliver to `s` at `now` an ACK of `ack` with the SACK blocks `blocks`: the packet and its
    /// blocks as the network hands them over, one list for both.
    fn acknowledge(s: &mut TcpSender, now: SimTime, ack: u64, blocks: &[SackBlock], out: &mut Vec<Packet>) {
        s.on_packet(now, &ack_packet(ack, blocks), blocks, out);
    }

    /// The SACK blocks of the MSS-sized segments `sacked_segments` (their indices).
    fn sack_of(sacked_segments: &[u64]) -> Vec<SackBlock> {
        sacked_segments.iter().map(|&k| SackBlock { start: 1 + k * MSS, end: 1 + (k + 1) * MSS }).collect()
    }

    #[test]
    fn handshake_then_initial_window_of_ten_segments() {
        let (s, out) = established(TcpSpec::default());
        assert_eq!(out.len(), 10);
        assert_eq!(out[0].seq, 1);
        assert_eq!(out[9].seq, 1 + 9 * MSS);
        assert_eq!(s.core.srtt(), Some(SimTime::from_ms(10)));
    }

    #[test]
    fn three_sacked_segments_trigger_fast_retransmit_of_the_hole() {
        let (mut s, _) = established(TcpSpec::default());
        let mut out = Vec::new();
        let t = SimTime::from_ms(20);
        acknowledge(&mut s, t, 1, &sack_of(&[1]), &mut out);
        acknowledge(&mut s, t, 1, &sack_of(&[2, 1]), &mut out);
        assert!(out.iter().all(|p| !p.retransmission), "no retransmission before DupThresh");
        out.clear();
        acknowledge(&mut s, t, 1, &sack_of(&[3, 2, 1]), &mut out);
        let retransmitted: Vec<u64> = out.iter().filter(|p| p.retransmission).map(|p| p.seq).collect();
        assert_eq!(retransmitted, vec![1]);
        // RFC 5681 eq. (4): FlightSize at detection was 12 segments (10 + 2 sent on the dupacks).
        assert_eq!(s.core.ssthresh(), 6 * MSS);
        assert_eq!(s.core.record.recoveries, 1);
        assert_eq!(s.core.record.recovery_episodes, 1);
    }

    #[test]
    fn with_sack_a_duplicate_ack_without_new_sack_information_is_not_counted() {
        // Segments 0-3 acknowledged, then three ACKs that repeat the cumulative point and SACK
        // nothing new: what a receiver sends for segments it already holds, such as the ones a
        // sender resends after a timeout while their earlier copies are still on the way. With
        // SACK they are not duplicate ACKs (RFC 6675 §2) and start no fast retransmit (loss
        // detection by DupThresh, not RACK, which counts no duplicate ACKs).
        let rfc6675 = TcpSpec { rack: false, ..TcpSpec::default() };
        let (mut s, _) = established(rfc6675.clone());
        let mut out = Vec::new();
        let t = SimTime::from_ms(20);
        acknowledge(&mut s, t, 1 + 4 * MSS, &[], &mut out);
        for _ in 0..3 {
            acknowledge(&mut s, t, 1 + 4 * MSS, &[], &mut out);
        }
        assert!(out.iter().all(|p| !p.retransmission), "{out:?}");
        assert_eq!(s.core.record.recoveries, 0);
        // The same ACKs are RFC 5681 duplicates to a sender without SACK: it retransmits.
        let (mut s, _) = established(TcpSpec { sack: false, ..rfc6675 });
        let mut out = Vec::new();
        for _ in 0..4 {
            acknowledge(&mut s, t, 1 + 4 * MSS, &[], &mut out);
        }
        assert_eq!(out.iter().filter(|p| p.retransmission).map(|p| p.seq).collect::<Vec<_>>(), vec![1 + 4 * MSS]);
    }

    #[test]
    fn each_ssthresh_basis_gives_the_controller_its_own_flight() {
        // The loss of segment 0 found at the third SACK (segments 1, 2, 3): by then 12 segments
        // are above SND.UNA (10 + 2 sent on the SACKs), 3 of them SACKed and 1 deemed lost, and
        // Reno's window is still the initial 10 segments. Reno halves what it is given.
        let cases = [(SsthreshBasis::FlightSize, 12), (SsthreshBasis::Pipe, 12 - 3 - 1), (SsthreshBasis::Cwnd, 10)];
        for (basis, segments) in cases {
            let (mut s, _) = established(TcpSpec { ssthresh_from: basis, ..TcpSpec::default() });
            let mut out = Vec::new();
            let t = SimTime::from_ms(20);
            acknowledge(&mut s, t, 1, &sack_of(&[1]), &mut out);
            acknowledge(&mut s, t, 1, &sack_of(&[2, 1]), &mut out);
            assert_eq!(s.core.record.recoveries, 0);
            let (flight_size, pipe, cwnd) = (s.snd_nxt - s.snd_una, s.pipe(), s.core.cwnd());
            assert_eq!((flight_size, pipe, cwnd), (12 * MSS, 10 * MSS, 10 * MSS), "before the third SACK");
            acknowledge(&mut s, t, 1, &sack_of(&[3, 2, 1]), &mut out);
            assert_eq!(s.core.record.recoveries, 1);
            assert_eq!(s.core.ssthresh(), segments * MSS / 2, "{basis:?}");
        }
    }

    #[test]
    fn prr_sends_about_half_a_segment_per_segment_delivered() {
        let (mut s, _) = established(TcpSpec::default());
        let mut out = Vec::new();
        let t = SimTime::from_ms(20);
        // Lose segment 0; SACKs for segments 1..=9 arrive one by one.
        let mut sent_in_recovery = 0;
        for k in 1..=9u64 {
            out.clear();
            acknowledge(&mut s, t, 1, &[SackBlock { start: 1 + MSS, end: 1 + (k + 1) * MSS }], &mut out);
            if s.core.record.recoveries == 1 {
                sent_in_recovery += out.iter().map(|p| p.payload as u64).sum::<u64>();
            }
        }
        // Recovery starts at the third SACK; the 7 SACKs from then on deliver 7 segments and PRR
        // lets out ceil(7 · ssthresh / RecoverFS) = ceil(7 · 6/12) = 4 segments (RFC 6937 §3).
        assert_eq!(sent_in_recovery, 4 * MSS);
    }

    #[test]
    fn inter_departure_ewma_follows_the_ack_clock() {
        let (mut s, _) = established(TcpSpec { ack_every: 1, ..TcpSpec::default() });
        // The initial window leaves back to back: inter-departure time 0.
        assert_eq!(s.core.idt_ewma(), Some(SimTime::ZERO));
        // Each ACK 1 ms apart releases two segments (slow start): departures alternate 1 ms, 0.
        let mut out = Vec::new();
        let mut expected = 0u64;
        let one_ms = SimTime::from_ms(1).0;
        for k in 1..=4u64 {
            out.clear();
            acknowledge(&mut s, SimTime::from_ms(10 + k), 1 + k * MSS, &[], &mut out);
            assert_eq!(out.len(), 2, "slow start: two segments per segment acknowledged");
            for idt in [one_ms, 0] {
                expected = (7 * expected + idt) / 8; // EWMA with gain 1/8
            }
        }
        assert_eq!(s.core.idt_ewma(), Some(SimTime(expected)));
    }

    #[test]
    fn retransmission_timeout_resends_first_segment_with_one_segment_window() {
        // Without RACK-TLP the retransmission timer is the only one armed.
        let (mut s, _) = established(TcpSpec { rack: false, ..TcpSpec::default() });
        let mut out = Vec::new();
        let deadline = s.next_timeout().expect("timer armed with data outstanding");
        s.on_timeout(deadline, &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].retransmission);
        assert_eq!(out[0].seq, 1);
        assert_eq!(s.core.cwnd(), MSS);
        assert_eq!(s.core.record.rtos, 1);
        assert_eq!(s.core.record.recovery_episodes, 1);
        // Backed off: the next deadline is twice as far.
        let next = s.next_timeout().unwrap();
        assert_eq!(next - deadline, (deadline - SimTime::from_ms(10)).doubled());
    }

    #[test]
    fn with_rack_a_timeout_resends_the_oldest_segment_and_leaves_recent_ones_in_flight() {
        // RFC 8985 §6.3 with RFC 6298 §5.4. Segments 0..=9 leave at 10 ms; 0 is acknowledged at
        // 110 ms, 2..=4 SACKed at 120 ms: RACK deems 1 lost, fast recovery sends it again.
        let (mut s, _) = established(TcpSpec::default());
        let mut out = Vec::new();
        acknowledge(&mut s, SimTime::from_ms(110), 1 + MSS, &[], &mut out);
        acknowledge(
            &mut s,
            SimTime::from_ms(120),
            1 + MSS,
            &[SackBlock { start: 1 + 2 * MSS, end: 1 + 5 * MSS }],
            &mut out,
        );
        assert!(out.iter().any(|p| p.retransmission && p.seq == 1 + MSS), "segment 1 sent again");
        let deadline = s.rto_deadline.expect("the retransmission timer runs");
        // 20 ms before it expires, 5 and 6 are SACKed (RACK.rtt = deadline - 30 ms) and new data
        // leaves; its last segment is the newest of the window.
        out.clear();
        let late = deadline - SimTime::from_ms(20);
        acknowledge(&mut s, late, 1 + MSS, &[SackBlock { start: 1 + 2 * MSS, end: 1 + 7 * MSS }], &mut out);
        assert!(out.iter().any(|p| !p.retransmission), "new data leaves in recovery");
        let newest = s.scoreboard.last_index().unwrap();
        assert_eq!(s.scoreboard.get(newest).sent_time, late);
        // The timeout: lost are the oldest segment (1) and 7, 8 and 9, sent at 10 ms, at least
        // RACK.rtt + RACK.reo_wnd (zero in recovery) ago; what left at 110 ms, 120 ms and 20 ms
        // ago is still in flight.
        out.clear();
        s.on_timeout(deadline, &mut out);
        assert_eq!(s.core.record.rtos, 1);
        assert_eq!(s.core.cwnd(), MSS, "the loss window");
        assert_eq!(out.len(), 1, "only the oldest segment, although pipe exceeds the loss window");
        assert!(out[0].retransmission && out[0].seq == 1 + MSS);
        for k in 7..=9 {
            assert!(s.scoreboard.get(k - 1).lost, "segment {k}, sent at 10 ms, is lost");
        }
        assert!(!s.scoreboard.get(newest).lost, "the segment sent 20 ms ago is in flight");
        assert!(s.pipe() > 2 * MSS, "pipe counts the segments left in flight: {}", s.pipe());
    }

    #[test]
    fn paced_sender_releases_one_segment_per_packet_time_and_wakes_for_the_next() {
        let (mut s, out) = established_with(CcaKind::Bbr, TcpSpec::default());
        // BBR's initial rate: 10 segments per 1 ms times 2/ln 2; the window would allow 10.
        assert_eq!(out.len(), 1, "the pacer holds the rest of the initial window back");
        let rate = BitRate(s.core.pacing_rate_bps());
        let gap = rate.transmission_time(out[0].wire_bytes as u64);
        let wake = s.next_timeout().expect("a wakeup for the pacer");
        assert_eq!(wake, SimTime::from_ms(10) + gap);
        let mut more = Vec::new();
        s.on_timeout(wake, &mut more);
        assert_eq!(more.len(), 1);
        assert_eq!(more[0].seq, 1 + MSS);
        assert_eq!(s.next_timeout(), Some(wake + gap));
    }

    #[test]
    fn unpaced_sender_sends_the_window_at_once_and_waits_only_for_the_rto() {
        let (s, out) = established(TcpSpec { rack: false, ..TcpSpec::default() });
        assert_eq!((out.len(), s.core.pacing_rate_bps()), (10, 0));
        assert!(s.next_timeout().unwrap() > SimTime::from_ms(200));
    }

    #[test]
    fn a_loss_probe_is_due_two_srtt_after_new_data_leaves() {
        // RFC 8985 §7.2: PTO = 2·SRTT (10 ms from the handshake) with more than one segment out.
        let (s, _) = established(TcpSpec { rack: true, ..TcpSpec::default() });
        assert_eq!(s.next_timeout(), Some(SimTime::from_ms(10 + 20)));
    }

    #[test]
    fn without_sack_three_duplicate_acks_trigger_newreno_fast_retransmit() {
        let classic = TcpSpec { sack: false, recovery: RecoveryKind::Classic, ..TcpSpec::default() };
        let (mut s, _) = established(classic);
        let mut out = Vec::new();
        let t = SimTime::from_ms(20);
        for _ in 0..3 {
            acknowledge(&mut s, t, 1, &[], &mut out);
        }
        assert_eq!(out.iter().filter(|p| p.retransmission).map(|p| p.seq).collect::<Vec<_>>(), vec![1]);
        out.clear();
        // A partial ACK (segments 0..4) means segment 5 was lost too: RFC 6582 retransmits it.
        acknowledge(&mut s, t, 1 + 5 * MSS, &[], &mut out);
        assert!(out.iter().any(|p| p.retransmission && p.seq == 1 + 5 * MSS));
    }

    /// A Reno sender with `tcp.ecn = "classic"` after its SYN and an ECN-setup SYN-ACK
    /// (`syn_ack_flags`), with the SYN and the segments it sent.
    fn ecn_sender(syn_ack_flags: u8) -> (TcpSender, Packet, Vec<Packet>) {
        ecn_sender_in(TcpEcn::Classic, syn_ack_flags)
    }

    /// As [`ecn_sender`], with `tcp.ecn = mode`.
    fn ecn_sender_in(mode: TcpEcn, syn_ack_flags: u8) -> (TcpSender, Packet, Vec<Packet>) {
        let config = TcpConfig::from(&TcpSpec { mss: MSS as u32, ecn: mode, ..TcpSpec::default() });
        let cc = Controller::new(CcaKind::Reno, &ControllerConfig::new(config.mss, config.initial_window));
        let mut s = TcpSender::new(0, 1, config, cc, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let syn = out.remove(0);
        let syn_ack = Packet { flags: syn_ack_flags, ..ack_packet(1, &[]) };
        s.on_packet(SimTime::from_ms(10), &syn_ack, &[], &mut out);
        (s, syn, out)
    }

    fn ece(ack: u64) -> Packet {
        Packet { flags: flags::ACK | flags::ECE, ..ack_packet(ack, &[]) }
    }

    #[test]
    fn an_l4s_sender_negotiates_ecn_and_sends_new_data_ect1() {
        // RFC 9331 §4.1: ECT(1), the L4S identifier, on new data; the SYN as RFC 3168's.
        let (_, syn, data) = ecn_sender_in(TcpEcn::L4s, flags::SYN | flags::ACK | flags::ECE);
        assert!(syn.has(flags::ECE) && syn.has(flags::CWR) && syn.ecn == Ecn::NotEct);
        assert_eq!(data.len(), 10);
        assert!(data.iter().all(|p| p.ecn == Ecn::Ect1));
        let (_, _, data) = ecn_sender_in(TcpEcn::L4s, flags::SYN | flags::ACK);
        assert!(data.iter().all(|p| p.ecn == Ecn::NotEct), "no ECN without the peer's agreement");
    }

    #[test]
    fn ecn_is_negotiated_and_only_new_data_is_ect() {
        // RFC 3168 §6.1.1: the SYN asks with ECE and CWR and is not ECT.
        let (_, syn, data) = ecn_sender(flags::SYN | flags::ACK | flags::ECE);
        assert!(syn.has(flags::ECE) && syn.has(flags::CWR) && syn.ecn == Ecn::NotEct);
        assert_eq!(data.len(), 10);
        assert!(data.iter().all(|p| p.ecn == Ecn::Ect0 && !p.has(flags::CWR)));
        // A SYN-ACK without ECE: no ECN on this connection.
        let (_, _, data) = ecn_sender(flags::SYN | flags::ACK);
        assert!(data.iter().all(|p| p.ecn == Ecn::NotEct));
        // RFC 3168 §6.1.5: a retransmission is not ECT.
        // Nothing comes back: the loss probe and the timeouts send old data again.
        let (mut s, _, _) = ecn_sender(flags::SYN | flags::ACK | flags::ECE);
        let mut out = Vec::new();
        while out.iter().filter(|p: &&Packet| p.retransmission).count() < 3 {
            let due = s.next_timeout().expect("a timer armed");
            s.on_timeout(due, &mut out);
        }
        for p in &out {
            assert_eq!(p.ecn, if p.retransmission { Ecn::NotEct } else { Ecn::Ect0 }, "{p:?}");
        }
    }

    #[test]
    fn an_ecn_echo_reduces_the_window_once_per_window_of_data_and_cwr_follows() {
        let (mut s, _, _) = ecn_sender(flags::SYN | flags::ACK | flags::ECE);
        let mut out = Vec::new();
        let before = s.core.cwnd();
        // RFC 3168 §6.1.2: the first ECE halves the window (Reno: FlightSize/2) ...
        s.on_packet(SimTime::from_ms(20), &ece(1 + MSS), &[], &mut out);
        assert_eq!(s.core.record.ecn_responses, 1);
        assert_eq!((s.core.cwnd(), s.core.ssthresh()), (before / 2 - MSS / 2, before / 2 - MSS / 2));
        assert_eq!((s.core.record.recoveries, s.core.record.segments_retransmitted), (0, 0), "no loss recovery");
        // ... ECEs for the rest of the window sent before it do not reduce it again.
        for k in 2..=10 {
            s.on_packet(SimTime::from_ms(20 + k), &ece(1 + k * MSS), &[], &mut out);
        }
        assert_eq!(s.core.record.ecn_responses, 1);
        // CWR goes on the first new data segment after the reduction, and on no other.
        let data: Vec<&Packet> = out.iter().filter(|p| p.payload > 0).collect();
        assert!(data.len() > 2 && data[0].has(flags::CWR), "{data:?}");
        assert!(data[1..].iter().all(|p| !p.has(flags::CWR)));
        // An ECE that acknowledges data sent after the reduction is a new signal.
        let beyond = data[0].seq + data[0].payload as u64;
        s.on_packet(SimTime::from_ms(140), &ece(beyond), &[], &mut out);
        assert_eq!(s.core.record.ecn_responses, 2);
    }

    #[test]
    fn a_loss_in_the_window_an_ecn_echo_answered_does_not_reduce_it_again() {
        // RFC 3168 §6.1.2: "the TCP sender's congestion window should be reduced only once in
        // response to a series of dropped and/or CE packets from a single window of data". The
        // ECE halves the window of segments 0..9; segment 1 of that window is then found lost
        // (segments 2, 3 and 4 SACKed): fast recovery repairs it from the window the ECE left,
        // without a second halving (as Linux enters Recovery from CWR).
        let (mut s, _, _) = ecn_sender(flags::SYN | flags::ACK | flags::ECE);
        let mut out = Vec::new();
        s.on_packet(SimTime::from_ms(20), &ece(1 + MSS), &[], &mut out);
        assert_eq!(s.core.record.ecn_responses, 1);
        let (cwnd, ssthresh) = (s.core.cwnd(), s.core.ssthresh());
        out.clear();
        for k in 2..=4 {
            let sacked: Vec<u64> = (2..=k).rev().collect();
            acknowledge(&mut s, SimTime::from_ms(20 + k), 1 + MSS, &sack_of(&sacked), &mut out);
        }
        assert_eq!(s.core.record.recoveries, 1, "the loss starts a recovery");
        assert!(out.iter().any(|p| p.retransmission && p.seq == 1 + MSS), "{out:?}");
        assert_eq!(s.core.ssthresh(), ssthresh, "no second reduction");
        assert!(s.core.cwnd() <= cwnd);
    }

    #[test]
    fn a_loss_after_the_window_an_ecn_echo_answered_reduces_it_again() {
        // The same ECE, then the rest of its window acknowledged without one: the sender's next
        // segments (10, 11, ...) go out after the reduction. A loss among them is a new instance
        // of congestion, and halves the window again.
        let (mut s, _, _) = ecn_sender(flags::SYN | flags::ACK | flags::ECE);
        let mut out = Vec::new();
        s.on_packet(SimTime::from_ms(20), &ece(1 + MSS), &[], &mut out);
        for k in 2..=10 {
            acknowledge(&mut s, SimTime::from_ms(20 + k), 1 + k * MSS, &[], &mut out);
        }
        let ssthresh = s.core.ssthresh();
        let sent: Vec<u64> = out.iter().filter(|p| p.payload > 0).map(|p| (p.seq - 1) / MSS).collect();
        assert!(sent.len() >= 4 && sent[0] == 10, "{sent:?}");
        out.clear();
        for k in 1..=3u64 {
            let sacked: Vec<u64> = sent[1..=k as usize].iter().rev().copied().collect();
            acknowledge(&mut s, SimTime::from_ms(40 + k), 1 + 10 * MSS, &sack_of(&sacked), &mut out);
        }
        assert_eq!(s.core.record.recoveries, 1);
        assert!(out.iter().any(|p| p.retransmission && p.seq == 1 + 10 * MSS), "{out:?}");
        assert!(s.core.ssthresh() < ssthresh, "{} vs {ssthresh}", s.core.ssthresh());
    }

    #[test]
    fn an_ecn_echo_for_data_sent_before_a_timeout_does_not_reduce_the_window_again() {
        // RFC 3168 §6.1.2: one reduction per window of data. The timeout has already reduced for
        // the window it ends (ssthresh from the flight, cwnd one segment); the receiver goes on
        // echoing CE marks of that window until it sees CWR, and those echoes must not reduce
        // again from the one or two segments in flight after the timeout (ssthresh would fall to
        // 2 SMSS, and the flow regrow from there by congestion avoidance).
        let (mut s, _, _) = ecn_sender(flags::SYN | flags::ACK | flags::ECE);
        let mut out = Vec::new();
        // Nothing comes back: the loss probe, then the retransmission timer.
        let mut due = SimTime::ZERO;
        while s.core.record.rtos == 0 {
            due = s.next_timeout().expect("a timer armed");
            s.on_timeout(due, &mut out);
        }
        let ssthresh = s.core.ssthresh();
        assert!(ssthresh > 2 * MSS, "{ssthresh}");
        for k in 1..=10 {
            s.on_packet(due + SimTime::from_ms(k), &ece(1 + k * MSS), &[], &mut out);
        }
        assert_eq!(s.core.record.ecn_responses, 0);
        assert_eq!(s.core.ssthresh(), ssthresh);
    }
}
