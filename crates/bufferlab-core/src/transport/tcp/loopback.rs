//! A test bench for one TCP connection: the real sender and receiver joined by a path with a
//! fixed per-packet transmission time and one-way delay, where a script may drop or delay
//! chosen data transmissions. It lets tests stage the exact loss or reordering an RFC describes.

use super::{TcpConfig, TcpReceiver, TcpSender};
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
