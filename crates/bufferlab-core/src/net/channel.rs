//! One direction of a point-to-point link: an egress queue, a transmitter and a propagation pipe.
//!
//! Packets in propagation arrive in the order they were sent (the delay is constant), so the pipe
//! is a ring and only its head has an event in the scheduler: one heap entry per channel, however
//! many packets are on the wire (the htsim design).

use crate::net::packet::Packet;
use crate::queue::{Dequeue, Queue, QueueDiscipline};
use crate::record::result::ChannelRecord;
use crate::units::{BitRate, SimTime};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// What the simulator must schedule after a channel operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    None,
    /// A transmission ends (or a shaper releases a packet) at this time.
    TransmitDone(SimTime),
}

#[derive(Debug)]
pub struct Channel {
    pub from: u32,
    pub to: u32,
    rate: Option<BitRate>,
    delay: SimTime,
    /// Loss probability as a threshold on a uniform 64-bit draw.
    loss_threshold: u64,
    rng: Xoshiro256PlusPlus,
    queue: Queue,
    transmitting: Option<Packet>,
    /// A transmit-done (or shaper) wakeup is pending.
    wakeup_pending: bool,
    pipe: VecDeque<(SimTime, Packet)>,
    queue_changed_at: SimTime,
    pub record: ChannelRecord,
}

impl Channel {
    pub fn new(from: u32, to: u32, rate: Option<BitRate>, delay: SimTime, loss: f64, queue: Queue, seed: u64) -> Self {
        // Each channel draws from its own stream, so adding a link elsewhere leaves its losses as they were.
        let loss_threshold = if loss <= 0.0 { 0 } else { (loss * u64::MAX as f64) as u64 };
        Channel {
            from,
            to,
            rate,
            delay,
            loss_threshold,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            queue,
            transmitting: None,
            wakeup_pending: false,
            pipe: VecDeque::new(),
            queue_changed_at: SimTime::ZERO,
            record: ChannelRecord::default(),
        }
    }

    pub fn queue_packets(&self) -> u64 {
        self.queue.len_packets()
    }

    pub fn queue_bytes(&self) -> u64 {
        self.queue.len_bytes()
    }

    /// Accumulate the queue-length integral up to `now` (call before every change of length).
    fn integrate_queue(&mut self, now: SimTime) {
        let dt = (now - self.queue_changed_at).0 as u128;
        self.record.queue_packet_ns += self.queue.len_packets() as u128 * dt / 1000;
        self.record.queue_byte_ns += self.queue.len_bytes() as u128 * dt / 1000;
        self.queue_changed_at = now;
    }

    /// A packet arrives at the egress queue. Returns a wakeup to schedule, or the dropped packet.
    #[inline]
    pub fn offer(&mut self, mut packet: Packet, now: SimTime) -> Result<Wakeup, Packet> {
        let bytes = packet.wire_bytes as u64;
        self.record.offered_packets += 1;
        self.record.offered_bytes += bytes;
        packet.enqueued_at = now;
        self.integrate_queue(now);
        if let Err((dropped, _reason)) = self.queue.enqueue(packet, now) {
            self.record.dropped_queue_packets += 1;
            self.record.dropped_queue_bytes += bytes;
            return Err(dropped);
        }
        self.record.max_queue_packets = self.record.max_queue_packets.max(self.queue.len_packets());
        self.record.max_queue_bytes = self.record.max_queue_bytes.max(self.queue.len_bytes());
        Ok(self.start_transmission(now))
    }

    /// If the transmitter is idle, take the next packet from the queue onto the wire.
    fn start_transmission(&mut self, now: SimTime) -> Wakeup {
        if self.transmitting.is_some() || self.wakeup_pending {
            return Wakeup::None;
        }
        self.integrate_queue(now);
        match self.queue.dequeue(now) {
            Dequeue::Packet(packet) => {
                let bytes = packet.wire_bytes as u64;
                let tx_time = self.rate.map_or(SimTime::ZERO, |r| r.transmission_time(bytes));
                self.record.sent_packets += 1;
                self.record.sent_bytes += bytes;
                self.record.busy_ns += tx_time.as_ns();
                self.record.sojourn_sum_ns += (now - packet.enqueued_at).as_ns();
                self.transmitting = Some(packet);
                self.wakeup_pending = true;
                Wakeup::TransmitDone(now + tx_time)
            }
            Dequeue::NotBefore(t) => {
                self.wakeup_pending = true;
                Wakeup::TransmitDone(t)
            }
            Dequeue::Empty => Wakeup::None,
        }
    }

    /// The packet on the wire has been serialised: it starts propagating (unless the link loses
    /// it). Returns the packet's arrival time if it became the head of the pipe, and the next
    /// transmission's wakeup.
    #[inline]
    pub fn finish_transmission(&mut self, now: SimTime) -> (Option<SimTime>, Wakeup) {
        self.wakeup_pending = false;
        let mut head_arrival = None;
        if let Some(packet) = self.transmitting.take() {
            if self.loss_threshold > 0 && self.rng.next_u64() < self.loss_threshold {
                self.record.dropped_loss_packets += 1;
                self.record.dropped_loss_bytes += packet.wire_bytes as u64;
            } else {
                let arrival = now + self.delay;
                if self.pipe.is_empty() {
                    head_arrival = Some(arrival);
                }
                self.pipe.push_back((arrival, packet));
            }
        }
        (head_arrival, self.start_transmission(now))
    }

    /// Transmission start is about to be captured: the packet now on the wire.
    pub fn on_wire(&self) -> Option<&Packet> {
        self.transmitting.as_ref()
    }

    /// The head of the pipe reaches the far node. Returns it and the next head's arrival time.
    #[inline]
    pub fn arrive(&mut self) -> (Packet, Option<SimTime>) {
        let (_, packet) = self.pipe.pop_front().expect("arrival scheduled for an empty pipe");
        self.record.delivered_packets += 1;
        self.record.delivered_bytes += packet.wire_bytes as u64;
        (packet, self.pipe.front().map(|&(t, _)| t))
    }

    /// Fill in the end-of-run state that conservation accounts for.
    pub fn finish(&mut self, now: SimTime) {
        self.integrate_queue(now);
        self.record.queued_end_packets = self.queue.len_packets();
        self.record.queued_end_bytes = self.queue.len_bytes();
        self.record.transmitting_end_packets = self.transmitting.is_some() as u64;
        self.record.transmitting_end_bytes = self.transmitting.map_or(0, |p| p.wire_bytes as u64);
        self.record.propagating_end_packets = self.pipe.len() as u64;
        self.record.propagating_end_bytes = self.pipe.iter().map(|(_, p)| p.wire_bytes as u64).sum();
        // Conservation is checked on every run: a violation is an engine bug, never a result.
        assert_eq!(self.record.unaccounted(), (0, 0), "packet conservation violated on {}", self.record.name);
    }
}
