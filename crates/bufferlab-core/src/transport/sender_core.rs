//! The sender core: what a TCP and a QUIC sender do alike, written once.
//!
//! Both carry one stream of application bytes under a congestion controller. They differ in how
//! they name what they send (TCP's sequence space, QUIC's packet numbers) and so in how they
//! detect loss, recover and time out; each keeps that to itself (`tcp/sender.rs`: SACK scoreboard,
//! RFC 6675 / PRR recovery, RACK-TLP, the RTO; `quic/sender.rs`: packet numbers, RFC 9002 loss
//! detection, the probe timeout, ACK ranges). The rest is one piece of work, done here:
//!
//! - the connection's phase (idle, handshake, established, closed) and its times in the record;
//! - the congestion controller: the recovery period that a congestion event begins, and the
//!   [`AckSample`] every ACK ends with (with the ACK's delivery-rate sample) and the hooks it goes to;
//! - the delivery-rate estimator (draft-cheng-iccrg-delivery-rate-estimation): a snapshot per
//!   packet sent, a sample per ACK, the application-limited mark (§3.4);
//! - pacing at the controller's rate (RFC 9002 §7.7, the BBR draft §4.2.1), or, for a window-based
//!   controller with the transport's `pacing` on, at a multiple of cwnd/SRTT ([`WindowPacing`]),
//!   and the pacer's wakeup among the transport's own timers;
//! - the record: packets, payload and retransmissions sent, RTT samples, bytes written and
//!   acknowledged, recovery episodes and their time, the inter-departure EWMA, and the write log
//!   that one-way delays are computed from (`timing.rs`).
//!
//! A sender owns one `SenderCore<R>`, `R` being its transport's RTT estimator (RFC 6298 for TCP,
//! RFC 9002 §5 for QUIC) read through [`RttEstimate`]: static dispatch, nothing allocated per
//! packet. The transport decides *when* each step happens; the core makes every step the same.

use crate::cc::delivery_rate::TxSnapshot;
use crate::cc::{AckSample, CongestionController, Controller, DeliveryRateEstimator};
use crate::memory::prefetch;
use crate::net::packet::Packet;
use crate::record::result::FlowRecord;
use crate::transport::pacer::Pacer;
use crate::transport::rtt::RttEstimate;
use crate::transport::timing::{InterDeparture, WriteLog};
use crate::units::{BitRate, SimTime};

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The application has not started.
    Idle,
    /// The first packet (TCP's SYN, QUIC's Initial) is out; waiting for the answer.
    Handshake,
    Established,
    /// Every byte and the end of the stream are acknowledged.
    Closed,
}

/// What a transport's ACK processing found, for the controller's [`AckSample`]; the core adds
/// what it keeps itself (SRTT, min RTT, recovery, C.delivered and the rate sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckTally {
    /// Bytes newly acknowledged that may grow the window (TCP: cumulatively; QUIC: packets sent
    /// after the recovery period began, RFC 9002 B.5).
    pub bytes_acked: u64,
    /// Bytes newly delivered (RFC 6937 DeliveredData).
    pub delivered: u64,
    /// Bytes newly deemed lost.
    pub lost: u64,
    /// Send time of the newest packet acknowledged.
    pub sent_time: SimTime,
    /// The RTT sample this ACK gave, if any.
    pub rtt: Option<SimTime>,
    /// Bytes in flight before and after the ACK.
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// ECN feedback of congestion, and the acknowledged bytes reported CE (see [`AckSample`]).
    pub ecn_echo: bool,
    pub ce_marked_bytes: u64,
}

/// Pacing of a window-based controller by its sender (a controller with a rate of its own, BBR,
/// paces at that): rate = ratio · max(cwnd, bytes in flight) / SRTT, one ratio in slow start and
/// one after. Linux's `tcp_update_pacing_rate`: 200 % (`tcp_pacing_ss_ratio`) while
/// cwnd < ssthresh/2, 120 % (`tcp_pacing_ca_ratio`) after; RFC 9002 §7.7: N = 1.25 throughout.
/// Before the first RTT sample nothing is paced (Linux waits for SRTT as well).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowPacing {
    pub slow_start: f64,
    pub avoidance: f64,
}

impl WindowPacing {
    /// The pacing rate for a window of `window` bytes (at least the flight), a slow-start
    /// threshold `ssthresh` and a smoothed RTT `srtt`.
    pub fn rate(&self, window: u64, ssthresh: u64, srtt: SimTime) -> BitRate {
        let ratio = if window < ssthresh / 2 { self.slow_start } else { self.avoidance };
        let bps = ratio * window as f64 * 8.0 / srtt.as_secs_f64().max(1e-12);
        BitRate((bps as u64).max(1))
    }
}

#[derive(Debug)]
pub struct SenderCore<R> {
    flow: u32,
    receiver_node: u32,
    pub cc: Controller,
    pub rtt: R,
    /// Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation).
    pub rate: DeliveryRateEstimator,
    pacer: Pacer,
    /// The transport's pacing of a window-based controller, if on.
    window_pacing: Option<WindowPacing>,
    phase: Phase,
    /// When the loss-recovery period under way began.
    recovery_since: Option<SimTime>,
    /// For the recorder: inter-departure times of data packets, write times of the bytes.
    idt: InterDeparture,
    write_log: WriteLog,
    pub record: FlowRecord,
}

impl<R: RttEstimate> SenderCore<R> {
    /// The core of the sender of flow `flow`, whose receiver is node `receiver_node`.
    pub fn new(flow: u32, receiver_node: u32, cc: Controller, rtt: R) -> Self {
        SenderCore {
            flow,
            receiver_node,
            cc,
            rtt,
            rate: DeliveryRateEstimator::new(),
            pacer: Pacer::new(),
            window_pacing: None,
            phase: Phase::Idle,
            recovery_since: None,
            idt: InterDeparture::default(),
            write_log: WriteLog::default(),
            record: FlowRecord::default(),
        }
    }

    /// The core with the transport's pacing of window-based controllers on (`tcp.pacing`,
    /// `quic.pacing`).
    pub fn with_window_pacing(mut self, pacing: Option<WindowPacing>) -> Self {
        self.window_pacing = pacing;
        self
    }

    /// The rate packets leave at with `in_flight` bytes out: the controller's own (BBR), else the
    /// transport's window pacing once SRTT is known; `None`: not paced.
    #[inline]
    pub fn pacing_rate(&self, in_flight: u64) -> Option<BitRate> {
        if let Some(rate) = self.cc.pacing_rate() {
            return Some(rate);
        }
        let pacing = self.window_pacing?;
        let srtt = self.rtt.srtt()?;
        Some(pacing.rate(self.cc.window().max(in_flight), self.cc.ssthresh(), srtt))
    }

    /// Ask for the lines of the core that an ACK reads (see `TcpSender::prefetch`).
    #[inline]
    pub fn prefetch(&self) {
        prefetch(&self.cc);
        prefetch(&self.rtt);
        prefetch(&self.rate);
        prefetch(&self.pacer);
        prefetch(&self.phase);
        prefetch(&self.recovery_since);
        prefetch(&self.idt);
        prefetch(&self.write_log);
        // The record's counters an ACK and the packets it releases update.
        let r = &self.record;
        for counter in [&r.rtt_samples, &r.rtt_sum_ns, &r.bytes_acked, &r.app_bytes_written, &r.segments_sent] {
            prefetch(counter);
        }
        prefetch(&r.payload_bytes_sent);
    }

    /// Ask for the write log's ends (see `TcpSender::prefetch_buffers`).
    #[inline]
    pub fn prefetch_buffers(&self) {
        self.write_log.prefetch_ends();
    }

    // ----- observers, for the recorder -----

    pub fn cwnd(&self) -> u64 {
        self.cc.window()
    }
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    pub fn srtt(&self) -> Option<SimTime> {
        self.rtt.srtt()
    }
    pub fn min_rtt(&self) -> Option<SimTime> {
        self.rtt.min_rtt()
    }
    /// Pacing rate in bit/s (the window's, not the flight's, for window pacing), 0 when the
    /// sender does not pace.
    pub fn pacing_rate_bps(&self) -> u64 {
        self.pacing_rate(0).map_or(0, |r| r.bps())
    }
    /// The controller's state code (`cc::state`).
    pub fn cc_state(&self) -> u8 {
        self.cc.state()
    }
    /// The controller's ECN fraction estimate (DCTCP's α), for controllers that keep one.
    pub fn ecn_alpha(&self) -> Option<f64> {
        self.cc.ecn_alpha()
    }
    /// Delivery rate of the latest valid rate sample, bit/s (0 before the first).
    pub fn delivery_rate_bps(&self) -> u64 {
        self.rate.latest_rate_bps()
    }
    /// Smoothed inter-departure time of data packets; `None` before the second one.
    pub fn idt_ewma(&self) -> Option<SimTime> {
        self.idt.ewma()
    }
    /// Sum of the write times of the first `bytes` application bytes, in byte·ps.
    pub fn written_byte_ps_below(&self, bytes: u64) -> u128 {
        self.write_log.byte_ps_below(bytes)
    }
    /// Fold the write times of the first `bytes` application bytes into one sum (delivered, so
    /// never asked for in parts again); [`SenderCore::written_byte_ps_below`] is unchanged.
    pub fn fold_writes_below(&mut self, bytes: u64) {
        self.write_log.fold_below(bytes);
    }
    /// Heap held by the write log and the record (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        use crate::memory::HeapBytes;
        self.write_log.heap_bytes() + self.record.heap_bytes()
    }
    /// A closed connection keeps its counters, not its buffers' memory.
    pub fn release_buffers(&mut self) {
        self.write_log.shrink_to_fit();
        self.record.path.shrink_to_fit();
    }

    // ----- the connection's life -----

    pub fn phase(&self) -> Phase {
        self.phase
    }
    pub fn is_established(&self) -> bool {
        self.phase == Phase::Established
    }
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// The application opens the connection at `now`; the transport sends its first packet.
    pub fn start(&mut self, now: SimTime) {
        debug_assert_eq!(self.phase, Phase::Idle);
        self.phase = Phase::Handshake;
        self.record.start_ns = now.as_ns();
    }

    /// The handshake completed at `now`.
    pub fn establish(&mut self, now: SimTime) {
        self.phase = Phase::Established;
        self.record.established_ns = Some(now.as_ns());
    }

    /// Every byte and the end of the stream (`bytes_acked` bytes in all) are acknowledged: the
    /// connection closes, ending any recovery period. A packet the pacer held back (a
    /// retransmission whose bytes a copy delivered meanwhile) no longer needs a wakeup.
    pub fn close(&mut self, now: SimTime, bytes_acked: u64) {
        self.phase = Phase::Closed;
        self.pacer.release_hold();
        self.record.completed_ns = Some(now.as_ns());
        self.end_recovery(now);
        self.acknowledged(bytes_acked);
    }

    // ----- congestion and recovery -----

    /// A congestion event at `now`: the controller reduces from `window` (TCP: FlightSize,
    /// RFC 5681 eq. (4); QUIC: the congestion window, RFC 9002 §7.3.2), and a recovery period
    /// begins (one under way ends first: QUIC may start a new one inside it, B.6).
    pub fn congestion_event(&mut self, now: SimTime, window: u64) {
        let window_before = self.cc.window();
        self.cc.on_congestion_event(now, window);
        self.record.recoveries += 1;
        // A reduction is meant to lower the window (RFC 5681 §3.2 step 2: ssthresh = FlightSize/2);
        // one that set ssthresh above the window in use raised it (`FlowRecord::raising_reductions`).
        if !self.cc.governs_recovery() && self.cc.ssthresh() > window_before {
            self.record.raising_reductions += 1;
        }
        self.end_recovery(now);
        self.begin_recovery(now);
    }

    /// A loss detected at `now` in a window whose reduction was already taken (an ECN response
    /// to the same window of data, RFC 3168 §6.1.2): a recovery episode without a new reduction.
    pub fn loss_in_answered_window(&mut self, now: SimTime) {
        self.record.recoveries += 1;
        self.end_recovery(now);
        self.begin_recovery(now);
    }

    /// ECN feedback of congestion at `now` that the transport answers (once per round trip, its
    /// rule): the controller's ECN response from `window` (TCP: FlightSize; QUIC: the congestion
    /// window), counted in the record if the controller responded, as the result says. No
    /// loss-recovery episode begins: nothing is lost.
    pub fn ecn_congestion_event(&mut self, now: SimTime, window: u64) -> bool {
        let responded = self.cc.on_ecn_congestion_event(now, window);
        if responded {
            self.record.ecn_responses += 1;
        }
        responded
    }

    /// A recovery period begins at `now`, unless one is under way (a timeout inside a fast
    /// recovery continues its episode).
    pub fn begin_recovery(&mut self, now: SimTime) {
        if self.recovery_since.is_none() {
            self.recovery_since = Some(now);
            self.record.recovery_episodes += 1;
        }
    }

    /// The recovery period under way, if any, ends at `now`; its time goes to the record.
    pub fn end_recovery(&mut self, now: SimTime) -> bool {
        let Some(since) = self.recovery_since.take() else { return false };
        self.record.recovery_time_ns += (now - since).as_ns();
        true
    }

    /// The recovery period under way ends at `now` and the controller leaves recovery.
    pub fn exit_recovery(&mut self, now: SimTime) {
        if self.end_recovery(now) {
            self.cc.on_recovery_exit(now);
        }
    }

    pub fn in_recovery(&self) -> bool {
        self.recovery_since.is_some()
    }

    // ----- acknowledgements -----

    /// An RTT sample was taken (the estimator has it already): counted for the record.
    pub fn record_rtt_sample(&mut self, sample: SimTime) {
        self.record.rtt_samples += 1;
        self.record.rtt_sum_ns += sample.as_ns();
    }

    /// The first `bytes` application bytes are acknowledged: the record says so, and their write
    /// times fold into one sum (no delivery lies below them).
    pub fn acknowledged(&mut self, bytes: u64) {
        self.record.bytes_acked = bytes;
        self.write_log.fold_below(bytes);
    }

    /// The end of an ACK's processing: the delivery-rate sample (draft §3.3 GenerateRateSample),
    /// the [`AckSample`], `on_ack` if the window may grow (`grow`), then `on_ack_processed`
    /// (the contract of `cc/mod.rs`).
    pub fn conclude_ack(&mut self, now: SimTime, tally: AckTally, grow: bool) -> AckSample {
        let min_rtt = self.rtt.min_rtt();
        let rate = self.rate.generate(now, min_rtt);
        let sample = AckSample {
            now,
            bytes_acked: tally.bytes_acked,
            delivered: tally.delivered,
            lost: tally.lost,
            sent_time: tally.sent_time,
            rtt: tally.rtt,
            srtt: self.rtt.srtt(),
            min_rtt,
            prior_in_flight: tally.prior_in_flight,
            in_flight: tally.in_flight,
            in_recovery: self.in_recovery(),
            total_delivered: self.rate.delivered(),
            rate,
            ecn_echo: tally.ecn_echo,
            ce_marked_bytes: tally.ce_marked_bytes,
        };
        if grow {
            self.cc.on_ack(&sample);
        }
        self.cc.on_ack_processed(&sample);
        sample
    }

    // ----- transmission -----

    /// Whether a packet may leave at `now`, `in_flight` bytes out, under the pacing rate; if not,
    /// the pacer holds it back and the sender wakes when it may.
    pub fn pacing_allows(&mut self, now: SimTime, in_flight: u64) -> bool {
        let rate = self.pacing_rate(in_flight);
        self.pacing_allows_at(now, rate)
    }

    /// [`SenderCore::pacing_allows`] under the pacing rate `rate`, read beforehand (it holds while
    /// packets leave: no hook of the controller runs on a send).
    pub fn pacing_allows_at(&mut self, now: SimTime, rate: Option<BitRate>) -> bool {
        self.pacer.allows(now, rate)
    }

    /// The sender tries to send (or closes): nothing is held back until the pacer says so.
    pub fn release_pacing_hold(&mut self) {
        self.pacer.release_hold();
    }

    /// A packet the pacer held back may leave at `now`.
    pub fn held_packet_due(&self, now: SimTime) -> bool {
        self.pacer.held_packet_due(now)
    }

    /// The earliest of the transport's timers and the pacer's release (when it holds a packet).
    pub fn next_wakeup<const N: usize>(&self, timers: [Option<SimTime>; N]) -> Option<SimTime> {
        let mut earliest = self.pacer.wakeup();
        for t in timers.into_iter().flatten() {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
        earliest
    }

    /// A packet is sent at `now`, `nothing_in_flight` before it: the snapshot it must keep for the
    /// delivery-rate estimator (draft §3.2).
    pub fn snapshot_for_send(&mut self, now: SimTime, nothing_in_flight: bool) -> TxSnapshot {
        self.rate.on_send(now, nothing_in_flight)
    }

    /// A packet of `wire_bytes` leaves at `now`, `in_flight` bytes out before it: the next may
    /// leave size/rate later (draft-cardwell-iccrg-bbr-congestion-control-00 §4.2.1).
    pub fn pace(&mut self, now: SimTime, wire_bytes: u64, in_flight: u64) {
        self.pace_at(now, wire_bytes, self.pacing_rate(in_flight));
    }

    /// [`SenderCore::pace`] under the pacing rate `rate`, read beforehand.
    pub fn pace_at(&mut self, now: SimTime, wire_bytes: u64, rate: Option<BitRate>) {
        if let Some(rate) = rate {
            self.pacer.on_send(now, wire_bytes, rate);
        }
    }

    /// The sender had room in the window (`in_flight` below it) but nothing to send: the
    /// application limits the flow (draft §3.4), and rate samples until this flight is delivered
    /// say so.
    pub fn note_send_opportunity_unused(&mut self, in_flight: u64) {
        if in_flight < self.cc.window() {
            self.rate.mark_app_limited(in_flight);
        }
    }

    /// The application wrote stream bytes `[start, end)` at `now` (a byte is written when it is
    /// first sent: there is no send buffer).
    pub fn wrote(&mut self, start: u64, end: u64, now: SimTime) {
        self.write_log.write(start, end, now);
        self.record.app_bytes_written = end;
    }

    /// A packet leaving at `now` toward the receiver, stamped with the sender's SRTT (which the
    /// queues that estimate RTTs read); data packets are counted for the record.
    pub fn packet(
        &mut self,
        now: SimTime,
        flags: u8,
        seq: u64,
        payload: u32,
        wire_bytes: u32,
        retransmission: bool,
    ) -> Packet {
        if payload > 0 {
            self.idt.departed(now);
            self.record.segments_sent += 1;
            self.record.payload_bytes_sent += payload as u64;
            if retransmission {
                self.record.segments_retransmitted += 1;
            }
        }
        Packet {
            retransmission,
            sender_srtt: self.rtt.srtt().unwrap_or(SimTime::ZERO),
            ..Packet::segment(self.flow, self.receiver_node, flags, seq, payload, wire_bytes, now)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ControllerConfig;
    use crate::net::packet::flags;
    use crate::spec::CcaKind;
    use crate::units::BitRate;

    /// An estimator that has seen one sample.
    #[derive(Debug)]
    struct Fixed(Option<SimTime>);

    impl RttEstimate for Fixed {
        fn srtt(&self) -> Option<SimTime> {
            self.0
        }
        fn min_rtt(&self) -> Option<SimTime> {
            self.0
        }
    }

    const MSS: u32 = 1000;

    fn core(cca: CcaKind) -> SenderCore<Fixed> {
        let cc = Controller::new(cca, &ControllerConfig::new(MSS, 10));
        SenderCore::new(3, 7, cc, Fixed(Some(SimTime::from_ms(40))))
    }

    fn ms(n: u64) -> SimTime {
        SimTime::from_ms(n)
    }

    #[test]
    fn a_recovery_period_is_one_episode_and_its_time_is_recorded_when_it_ends() {
        let mut c = core(CcaKind::Reno);
        c.congestion_event(ms(100), 20 * MSS as u64);
        assert_eq!(c.ssthresh(), 10 * MSS as u64, "RFC 5681 eq. (4): FlightSize / 2");
        // A timeout inside the period continues the episode.
        c.begin_recovery(ms(150));
        c.exit_recovery(ms(160));
        assert!(!c.in_recovery());
        assert_eq!((c.record.recoveries, c.record.recovery_episodes), (1, 1));
        assert_eq!(c.record.recovery_time_ns, ms(60).as_ns());
        assert!(!c.end_recovery(ms(170)), "nothing under way");
    }

    #[test]
    fn a_reduction_to_above_the_window_in_use_is_counted_as_raising_it() {
        // Initial window 10 segments. RFC 5681 eq. (4) from a FlightSize of 20: ssthresh 10, the
        // window itself (not raised); from 30 (SACKed data counted): 15, above it.
        let mut reno = core(CcaKind::Reno);
        reno.congestion_event(ms(100), 20 * MSS as u64);
        assert_eq!(reno.record.raising_reductions, 0);
        reno.exit_recovery(ms(140));
        let window = reno.cwnd();
        reno.congestion_event(ms(200), 3 * window);
        assert_eq!(reno.ssthresh(), 3 * window / 2);
        assert_eq!((reno.record.recoveries, reno.record.raising_reductions), (2, 1));
        // CUBIC (β = 0.7, RFC 9438 §4.6) from 20 segments: 14 > 10.
        let mut cubic = core(CcaKind::Cubic);
        cubic.congestion_event(ms(100), 20 * MSS as u64);
        assert_eq!(cubic.record.raising_reductions, 1);
        // BBR sets its window from its model, not from a reduction: never counted.
        let mut bbr = core(CcaKind::Bbr);
        bbr.congestion_event(ms(100), 100 * MSS as u64);
        assert_eq!((bbr.record.recoveries, bbr.record.raising_reductions), (1, 0));
    }

    #[test]
    fn a_congestion_event_inside_a_period_starts_a_new_one_and_time_is_not_counted_twice() {
        let mut c = core(CcaKind::Reno);
        c.congestion_event(ms(100), 20 * MSS as u64);
        c.congestion_event(ms(130), 20 * MSS as u64);
        c.close(ms(200), 5_000);
        assert_eq!((c.record.recoveries, c.record.recovery_episodes), (2, 2));
        assert_eq!(c.record.recovery_time_ns, ms(100).as_ns());
        assert_eq!((c.record.completed_ns, c.record.bytes_acked), (Some(ms(200).as_ns()), 5_000));
        assert!(c.is_closed());
    }

    #[test]
    fn the_controller_grows_only_when_told_and_every_ack_reaches_on_ack_processed() {
        let mut c = core(CcaKind::Reno);
        let tally = AckTally {
            bytes_acked: MSS as u64,
            delivered: MSS as u64,
            lost: 0,
            sent_time: ms(0),
            rtt: Some(ms(40)),
            prior_in_flight: 10 * MSS as u64,
            in_flight: 9 * MSS as u64,
            ecn_echo: false,
            ce_marked_bytes: 0,
        };
        let before = c.cwnd();
        let sample = c.conclude_ack(ms(40), tally, false);
        assert_eq!(c.cwnd(), before);
        assert_eq!((sample.srtt, sample.min_rtt, sample.in_recovery), (Some(ms(40)), Some(ms(40)), false));
        c.conclude_ack(ms(41), tally, true);
        assert_eq!(c.cwnd(), before + MSS as u64, "slow start: one MSS per MSS acknowledged");
    }

    #[test]
    fn the_rate_sample_counts_what_the_ack_delivered() {
        let mut c = core(CcaKind::Reno);
        let tx = c.snapshot_for_send(ms(0), true);
        c.rate.on_delivered(ms(50), &tx, ms(0), false, 5_000);
        let tally = AckTally {
            bytes_acked: 5_000,
            delivered: 5_000,
            lost: 0,
            sent_time: ms(0),
            rtt: None,
            prior_in_flight: 5_000,
            in_flight: 0,
            ecn_echo: false,
            ce_marked_bytes: 0,
        };
        let sample = c.conclude_ack(ms(50), tally, true);
        assert_eq!(sample.total_delivered, 5_000);
        // 5000 bytes over max(send interval 0, ACK interval 50 ms) = 800 kbit/s.
        assert_eq!(sample.rate.and_then(|r| r.delivery_rate), Some(BitRate(800_000)));
    }

    #[test]
    fn data_packets_are_counted_and_carry_the_srtt() {
        let mut c = core(CcaKind::Reno);
        let syn = c.packet(ms(0), flags::SYN, 0, 0, 60, false);
        let first = c.packet(ms(1), flags::ACK, 1, MSS, MSS + 52, false);
        let again = c.packet(ms(2), flags::ACK, 1, MSS, MSS + 52, true);
        assert_eq!((c.record.segments_sent, c.record.payload_bytes_sent), (2, 2 * MSS as u64));
        assert_eq!(c.record.segments_retransmitted, 1);
        assert_eq!(c.idt_ewma(), Some(ms(1)), "the SYN is not a data packet");
        assert!(again.retransmission && !first.retransmission);
        assert_eq!((syn.flow, syn.dst, first.sender_srtt), (3, 7, ms(40)));
    }

    #[test]
    fn a_paced_sender_wakes_for_the_held_packet_before_its_other_timers() {
        let mut c = core(CcaKind::Bbr);
        assert!(c.pacing_allows(ms(0), 0));
        c.pace(ms(0), 1500, 0);
        assert!(!c.pacing_allows(ms(0), 1500), "the next packet waits a packet time");
        let release = c.next_wakeup([None, Some(ms(200))]).unwrap();
        assert!(release > ms(0) && release < ms(1) && c.held_packet_due(release));
        c.release_pacing_hold();
        assert_eq!(c.next_wakeup([None, Some(ms(200))]), Some(ms(200)));
        // An unpaced controller never holds a packet back.
        let mut reno = core(CcaKind::Reno);
        reno.pace(ms(0), 1500, 0);
        assert!(reno.pacing_allows(ms(0), 1500));
    }

    #[test]
    fn window_pacing_spaces_a_window_over_srtt_divided_by_its_ratio() {
        // Reno's initial window (10 × 1000 bytes) at SRTT 40 ms, in slow start (cwnd < ssthresh/2,
        // ssthresh unset): 2 × 10,000 × 8 / 0.040 = 4 Mb/s, so the window leaves in 20 ms.
        let linux = WindowPacing { slow_start: 2.0, avoidance: 1.2 };
        let mut c = core(CcaKind::Reno).with_window_pacing(Some(linux));
        let window = 10 * MSS as u64;
        assert_eq!(c.pacing_rate(0), Some(BitRate(4_000_000)));
        assert_eq!(c.pacing_rate(0).unwrap().transmission_time(window), ms(20));
        // The flight counts when it exceeds the window (Linux: max(cwnd, packets_out)).
        assert_eq!(c.pacing_rate(2 * window), Some(BitRate(8_000_000)));
        // After a reduction (cwnd ≥ ssthresh/2): 1.2 × cwnd / SRTT.
        c.congestion_event(ms(100), window);
        c.exit_recovery(ms(140));
        let cwnd = c.cwnd();
        assert_eq!(c.pacing_rate(0), Some(BitRate((1.2 * cwnd as f64 * 8.0 / 0.040) as u64)));
        // BBR paces at its own rate whatever the transport's setting; without SRTT nothing is paced.
        let bbr = core(CcaKind::Bbr).with_window_pacing(Some(linux));
        assert_eq!(bbr.pacing_rate(0), bbr.cc.pacing_rate());
        let unmeasured =
            SenderCore::new(3, 7, Controller::new(CcaKind::Reno, &ControllerConfig::new(MSS, 10)), Fixed(None))
                .with_window_pacing(Some(linux));
        assert_eq!(unmeasured.pacing_rate(0), None);
        assert_eq!(core(CcaKind::Reno).pacing_rate(0), None, "off unless the transport asks");
    }

    #[test]
    fn an_unused_send_opportunity_marks_samples_app_limited_only_below_the_window() {
        let mut c = core(CcaKind::Reno);
        c.note_send_opportunity_unused(c.cwnd());
        assert!(!c.rate.is_app_limited(), "a full window is not the application's limit");
        c.note_send_opportunity_unused(c.cwnd() - 1);
        assert!(c.rate.is_app_limited());
    }

    #[test]
    fn writes_are_logged_for_one_way_delays_and_folded_once_acknowledged() {
        let mut c = core(CcaKind::Reno);
        c.wrote(0, 1000, ms(1));
        c.wrote(1000, 3000, ms(2));
        assert_eq!(c.record.app_bytes_written, 3000);
        c.acknowledged(1000);
        let ps = |t: SimTime, n: u128| n * t.0 as u128;
        assert_eq!(c.written_byte_ps_below(3000), ps(ms(1), 1000) + ps(ms(2), 2000));
        assert_eq!(c.record.bytes_acked, 1000);
    }
}
