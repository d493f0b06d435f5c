//! A test bench for one TCP connection: the real sender and receiver joined by a path with a
//! fixed per-packet transmission time and one-way delay, where a script may drop or delay
//! chosen data transmissions. It lets tests stage the exact loss or reordering an RFC describes.

use super::config::TcpConfig;
use super::receiver::TcpReceiver;
use super::sender::TcpSender;
use crate::cc::{Controller, ControllerConfig};
use crate::net::packet::Packet;
use crate::net::sack_slab::SackSlab;
use crate::spec::{CcaKind, TcpSpec};
use crate::units::SimTime;

/// What happens to one data transmission: `segment` is its index (sequence / MSS), `copy` counts
/// its transmissions from 0 (the original).
#[derive(Debug)]
pub enum Fate {
    Delivered,
    Dropped,
    /// Delivered this much later than its turn.
    Delayed(SimTime),
}

#[derive(Debug)]
pub struct Loopback {
    pub sender: TcpSender,
    receiver: TcpReceiver,
    mss: u64,
    per_packet: SimTime,
    one_way: SimTime,
    /// When the forward path is free again.
    busy_until: SimTime,
    /// Packets on their way: (arrival time, order of sending, towards the receiver?, packet).
    in_transit: Vec<(SimTime, u64, bool, Packet)>,
    /// The SACK blocks of the ACKs on their way.
    sacks: SackSlab,
    sent: u64,
    /// Transmissions of each segment so far.
    copies: Vec<u32>,
}

impl Loopback {
    /// A connection carrying `segments` full segments with the options of `spec`.
    pub fn new(spec: TcpSpec, segments: u64, per_packet: SimTime, one_way: SimTime) -> Loopback {
        let config = TcpConfig::from(&spec);
        let mss = config.mss as u64;
        let cc = Controller::new(CcaKind::Reno, &ControllerConfig::new(config.mss, config.initial_window));
        Loopback {
            receiver: TcpReceiver::new(0, 0, &config),
            sender: TcpSender::new(0, 1, config, cc, Some(segments * mss)),
            mss,
            per_packet,
            one_way,
            busy_until: SimTime::ZERO,
            in_transit: Vec::new(),
            sacks: SackSlab::default(),
            sent: 0,
            copies: vec![0; segments as usize + 1],
        }
    }

    /// Run until the sender closes or `limit` passes; `script(segment, copy)` decides each data
    /// transmission's fate. Returns the time the connection closed.
    pub fn run(&mut self, limit: SimTime, mut script: impl FnMut(u64, u32) -> Fate) -> Option<SimTime> {
        let mut out = Vec::new();
        self.sender.start(SimTime::ZERO, &mut out);
        self.send_all(SimTime::ZERO, &mut out, true, &mut script);
        while !self.sender.core.is_closed() {
            let next_packet = self.in_transit.iter().map(|p| (p.0, p.1)).min();
            let timers = [self.sender.next_timeout(), self.receiver.next_timeout()];
            let next_timer = timers.into_iter().flatten().min();
            let now = match (next_packet, next_timer) {
                (Some((t, _)), Some(timer)) => t.min(timer),
                (Some((t, _)), None) => t,
                (None, Some(timer)) => timer,
                (None, None) => return None,
            };
            if now > limit {
                return None;
            }
            if let Some((t, order)) = next_packet.filter(|&(t, _)| t == now) {
                let i = self.in_transit.iter().position(|p| p.0 == t && p.1 == order).expect("found above");
                let (_, _, to_receiver, packet) = self.in_transit.swap_remove(i);
                if to_receiver {
                    self.receiver.on_packet(now, &packet, &mut self.sacks, &mut out);
                    self.send_all(now, &mut out, false, &mut script);
                } else {
                    self.sender.on_packet(now, &packet, self.sacks.blocks(&packet), &mut out);
                    self.sacks.release(&packet);
                    self.send_all(now, &mut out, true, &mut script);
                }
            } else if self.sender.next_timeout() == Some(now) {
                self.sender.on_timeout(now, &mut out);
                self.send_all(now, &mut out, true, &mut script);
            } else {
                self.receiver.on_timeout(now, &mut self.sacks, &mut out);
                self.send_all(now, &mut out, false, &mut script);
            }
        }
        self.sender.core.record.completed_ns.map(SimTime::from_ns)
    }

    fn send_all(
        &mut self,
        now: SimTime,
        out: &mut Vec<Packet>,
        forward: bool,
        script: &mut impl FnMut(u64, u32) -> Fate,
    ) {
        for packet in out.drain(..) {
            self.sent += 1;
            if !forward {
                self.in_transit.push((now + self.one_way, self.sent, false, packet));
                continue;
            }
            self.busy_until = self.busy_until.max(now) + self.per_packet;
            let mut arrival = self.busy_until + self.one_way;
            if packet.payload > 0 {
                let segment = (packet.seq - 1) / self.mss;
                let copy = self.copies[segment as usize];
                self.copies[segment as usize] += 1;
                match script(segment, copy) {
                    Fate::Delivered => {}
                    Fate::Dropped => continue,
                    Fate::Delayed(extra) => arrival += extra,
                }
            }
            self.in_transit.push((arrival, self.sent, true, packet));
        }
    }

    /// How many times segment `k` was sent.
    pub fn copies_of(&self, k: u64) -> u32 {
        self.copies[k as usize]
    }
}

/// The sender's loss detection on whole connections: RACK-TLP (RFC 8985) against RFC 6675 alone,
/// on the losses and reorderings each test scripts.
#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn loopback(rack: bool, segments: u64) -> Loopback {
        let spec = TcpSpec { mss: MSS as u32, rack, ..TcpSpec::default() };
        Loopback::new(spec, segments, SimTime::from_us(500), SimTime::from_ms(50))
    }

    #[test]
    fn rack_recovers_a_lost_retransmission_without_a_timeout() {
        // Segment 20 and its first retransmission are dropped.
        let drop_twice = |k, copy| if k == 20 && copy < 2 { Fate::Dropped } else { Fate::Delivered };
        let mut rack = loopback(true, 300);
        assert!(rack.run(SimTime::from_secs(60), drop_twice).is_some());
        assert_eq!(rack.copies_of(20), 3);
        assert_eq!((rack.sender.core.record.rtos, rack.sender.core.record.recoveries), (0, 1));
        // RFC 6675 alone cannot see a retransmission lost: the RTO has to find it.
        let mut sack_only = loopback(false, 300);
        assert!(sack_only.run(SimTime::from_secs(60), drop_twice).is_some());
        assert_eq!(sack_only.copies_of(20), 3);
        assert_eq!(sack_only.sender.core.record.rtos, 1);
    }

    #[test]
    fn a_loss_behind_a_delayed_ack_is_not_taken_for_reordering() {
        // The segment before the hole arrives in order and its ACK is delayed; the next arrival
        // is out of order and its ACK covers both: one cumulatively, the other by SACK. Neither
        // parity of the dropped segment may make RACK see reordering (its window would then stay
        // min_RTT/4 in recovery, and every loss would wait for it).
        for dropped in [20, 21] {
            let once = |k, copy| if k == dropped && copy == 0 { Fate::Dropped } else { Fate::Delivered };
            let mut rack = loopback(true, 300);
            assert!(rack.run(SimTime::from_secs(60), once).is_some());
            assert!(!rack.sender.rack.reordering_seen(), "segment {dropped} dropped");
            assert_eq!(rack.copies_of(dropped), 2);
            assert_eq!((rack.sender.core.record.rtos, rack.sender.core.record.segments_retransmitted), (0, 1));
        }
    }

    #[test]
    fn rack_deems_no_segment_lost_that_arrives_within_the_reordering_window() {
        // Segment 12 is overtaken by one segment (RACK notes reordering, DupThresh does not
        // fire); segment 100 arrives 5 ms late, overtaken by about ten segments, within RACK's
        // window of min_RTT / 4 (about 25 ms).
        let reorder = |k, copy| match (k, copy) {
            (12, 0) => Fate::Delayed(SimTime::from_us(700)),
            (100, 0) => Fate::Delayed(SimTime::from_ms(5)),
            _ => Fate::Delivered,
        };
        let mut rack = loopback(true, 300);
        assert!(rack.run(SimTime::from_secs(60), reorder).is_some());
        assert_eq!(rack.sender.core.record.segments_retransmitted, 0);
        assert_eq!(rack.sender.core.record.recoveries, 0);
        // RFC 6675's DupThresh rule takes the late segment for lost.
        let mut sack_only = loopback(false, 300);
        assert!(sack_only.run(SimTime::from_secs(60), reorder).is_some());
        assert_eq!(sack_only.copies_of(100), 2);
        assert_eq!(sack_only.copies_of(12), 1);
    }

    #[test]
    fn a_tail_loss_probe_repairs_the_last_segments_sooner_than_a_timeout() {
        // RFC 8985 §7: with two segments outstanding the probe is due 2·SRTT after the last
        // transmission, before the RTO (SRTT + 200 ms at least). It resends the last segment; its
        // SACK shows the other one lost, which fast recovery resends a round later. After the
        // RTO, the window of one segment takes two rounds as well, from a later start.
        let tail = |k, copy| if k >= 28 && copy == 0 { Fate::Dropped } else { Fate::Delivered };
        let mut rack = loopback(true, 30);
        let closed = rack.run(SimTime::from_secs(60), tail).expect("the transfer completes");
        assert_eq!((rack.sender.core.record.rtos, rack.copies_of(28), rack.copies_of(29)), (0, 2, 2));
        let mut sack_only = loopback(false, 30);
        let closed_after_rto = sack_only.run(SimTime::from_secs(60), tail).expect("the transfer completes");
        assert_eq!(sack_only.sender.core.record.rtos, 1);
        assert!(closed < closed_after_rto, "probe: {closed:?}, RTO: {closed_after_rto:?}");
    }

    #[test]
    fn a_tail_loss_probe_turns_the_loss_of_the_last_segments_into_a_fast_recovery() {
        // The probe's SACK shows segments 27 and 28 lost: RACK repairs them in fast recovery, one
        // per round under PRR's conservative bound (RFC 9937), without a timeout.
        let tail = |k, copy| if k >= 27 && copy == 0 { Fate::Dropped } else { Fate::Delivered };
        let mut rack = loopback(true, 30);
        rack.run(SimTime::from_secs(60), tail).expect("the transfer completes");
        assert_eq!((rack.sender.core.record.rtos, rack.sender.core.record.recoveries), (0, 1));
        assert_eq!([27, 28, 29].map(|k| rack.copies_of(k)), [2, 2, 2]);
    }
}
