//! The receiving side of a QUIC connection: it records packet numbers, reassembles the stream
//! and sends ACK frames (RFC 9000 §13.2).

use super::config::{QuicConfig, RECEIVER_RANGES};
use crate::net::packet::{flags, AckFrame, Ecn, EcnCounts, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::net::sack_slab::SackSlab;
use crate::transport::ranges::RangeSet;
use crate::transport::timing::DeliveryLog;
use crate::units::SimTime;

#[derive(Debug)]
pub struct QuicReceiver {
    flow: u32,
    sender_node: u32,
    config: QuicConfig,
    /// Packet numbers received (bounded: old ranges are forgotten).
    received: RangeSet,
    /// When the largest packet number so far arrived, for the ACK Delay field.
    largest_received_at: SimTime,
    /// Stream bytes received, and where the stream ends once the FIN arrived.
    stream: RangeSet,
    fin_offset: Option<u64>,
    /// Ack-eliciting packets received since the last ACK.
    unacknowledged: u32,
    ack_deadline: Option<SimTime>,
    pub acks_sent: u64,
    /// In-order delivery times of the bytes delivered (for the recorder).
    deliveries: DeliveryLog,
    /// Packets that arrived marked CE.
    pub ce_received: u64,
    /// The packets received with each ECN codepoint (RFC 9000 §13.4.1), reported in every ACK
    /// frame when the connection uses ECN.
    ecn_counts: EcnCounts,
}

/// Bytes of a variable-length integer of value `v` (RFC 9000 §16).
fn varint_bytes(v: u32) -> u32 {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

impl QuicReceiver {
    /// Heap held by the received packet numbers and stream ranges (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        use crate::memory::HeapBytes;
        self.received.heap_bytes() + self.stream.heap_bytes()
    }

    pub fn new(flow: u32, sender_node: u32, config: &QuicConfig) -> Self {
        QuicReceiver {
            flow,
            sender_node,
            config: config.clone(),
            received: RangeSet::new(),
            largest_received_at: SimTime::ZERO,
            stream: RangeSet::new(),
            fin_offset: None,
            unacknowledged: 0,
            ack_deadline: None,
            acks_sent: 0,
            deliveries: DeliveryLog::default(),
            ce_received: 0,
            ecn_counts: EcnCounts::default(),
        }
    }

    /// Stream bytes delivered in order to the application.
    pub fn bytes_delivered(&self) -> u64 {
        let contiguous = self.stream.contiguous_end(0);
        self.fin_offset.map_or(contiguous, |f| contiguous.min(f))
    }

    pub fn next_timeout(&self) -> Option<SimTime> {
        self.ack_deadline
    }

    /// The ACK timer (max_ack_delay): an ACK frame goes out if one is due (its ranges into
    /// `sacks`).
    pub fn on_timeout(&mut self, now: SimTime, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        if self.ack_deadline.is_some_and(|d| d <= now) {
            self.send_ack(now, 0, sacks, out);
        }
    }

    /// Sum of the in-order delivery times of the bytes delivered, in byte·ps.
    pub fn delivered_byte_ps(&self) -> u128 {
        self.deliveries.byte_ps()
    }

    /// A packet arrived; the ACK frames it prompts go to `out`, their ranges into `sacks`.
    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        let delivered_before = self.bytes_delivered();
        self.receive(now, packet, sacks, out);
        self.deliveries.delivered(self.bytes_delivered() - delivered_before, now);
    }

    fn receive(&mut self, now: SimTime, packet: &Packet, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        let largest = self.received.max();
        // RFC 9000 §13.2.1: acknowledge at once a packet that arrives out of order, i.e. below
        // the largest received or after a gap.
        let out_of_order = largest.is_some_and(|l| packet.pn < l || packet.pn > l + 1);
        if self.received.insert(packet.pn, packet.pn + 1) == 0 {
            // A duplicate still deserves an ACK, so that a lost ACK gets repeated.
            self.send_ack(now, 0, sacks, out);
            return;
        }
        self.received.keep_highest(RECEIVER_RANGES);
        if largest.is_none_or(|l| packet.pn > l) {
            self.largest_received_at = now;
        }
        // RFC 9000 §13.4.1: count each received packet under its ECN codepoint.
        let counts = &mut self.ecn_counts;
        match packet.ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => counts.ect0 = counts.ect0.wrapping_add(1),
            Ecn::Ect1 => counts.ect1 = counts.ect1.wrapping_add(1),
            Ecn::Ce => counts.ce = counts.ce.wrapping_add(1),
        }
        self.ce_received += (packet.ecn == Ecn::Ce) as u64;
        if packet.has(flags::SYN) {
            // The client's Initial: answer with the server's handshake flight, a full datagram
            // that acknowledges it.
            self.send_ack(now, flags::SYN, sacks, out);
            return;
        }
        if packet.payload > 0 || packet.has(flags::FIN) {
            self.stream.insert(packet.seq, packet.seq + packet.payload as u64);
        }
        if packet.has(flags::FIN) {
            self.fin_offset = Some(packet.seq + packet.payload as u64);
        }
        // Every packet the sender sends is ack-eliciting (STREAM or PING frames).
        self.unacknowledged += 1;
        if out_of_order || self.unacknowledged >= self.config.ack_every {
            self.send_ack(now, 0, sacks, out);
        } else if self.ack_deadline.is_none() {
            // RFC 9000 §13.2.1: an ACK is not delayed by more than max_ack_delay.
            self.ack_deadline = Some(now + self.config.max_ack_delay);
        }
    }

    /// An ACK frame with the highest packet-number ranges; `extra_flags` marks the handshake answer.
    fn send_ack(&mut self, now: SimTime, extra_flags: u8, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        let Some(largest) = self.received.max() else { return };
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        for (start, end) in self.received.iter_descending().take(MAX_SACK_BLOCKS) {
            sack[n] = SackBlock { start, end };
            n += 1;
        }
        let datagram = if extra_flags & flags::SYN != 0 {
            self.config.max_datagram
        } else {
            // RFC 9000 §19.3: each range after the first adds a Gap and an ACK Range Length.
            self.config.ack_packet + 4 * (n as u32 - 1)
        };
        // RFC 9000 §19.3.2: an ACK frame with ECN counts (type 0x03) adds them as three varints.
        let (datagram, ecn_counts) = if self.config.ecn.is_on() {
            let c = self.ecn_counts;
            (datagram + varint_bytes(c.ect0) + varint_bytes(c.ect1) + varint_bytes(c.ce), c)
        } else {
            (datagram, EcnCounts::default())
        };
        let mut packet = Packet::acknowledgement(
            self.flow,
            self.sender_node,
            flags::ACK | extra_flags,
            largest,
            datagram + self.config.lower_layer,
            now,
        );
        let ack_delay_us = u32::try_from((now - self.largest_received_at).as_ns() / 1_000).unwrap_or(u32::MAX);
        sacks.store(&mut packet, AckFrame { blocks: &sack[..n], ack_delay_us, ecn_counts });
        out.push(packet);
        self.acks_sent += 1;
        self.unacknowledged = 0;
        self.ack_deadline = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::QuicSpec;

    fn receiver(ack_every: u32) -> QuicReceiver {
        QuicReceiver::new(0, 0, &QuicConfig::from(&QuicSpec { ack_every, ..QuicSpec::default() }))
    }

    fn data(pn: u64, offset: u64, len: u32) -> Packet {
        Packet { pn, ..Packet::segment(0, 1, 0, offset, len, len + 69, SimTime::ZERO) }
    }

    #[test]
    fn every_packet_is_acknowledged_with_the_default_ack_frequency() {
        let mut r = receiver(1);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        for pn in 0..5 {
            r.on_packet(SimTime::from_ms(pn), &data(pn, pn * 1000, 1000), &mut sacks, &mut out);
        }
        assert_eq!(out.len(), 5);
        assert_eq!(out[4].ack, 4);
        assert_eq!(sacks.blocks(&out[4]), &[SackBlock { start: 0, end: 5 }]);
        assert_eq!(r.bytes_delivered(), 5000);
    }

    #[test]
    fn a_gap_is_reported_at_once_even_when_acks_are_delayed() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &data(0, 0, 1000), &mut sacks, &mut out);
        assert!(out.is_empty(), "the first packet waits for a second or for max_ack_delay");
        assert_eq!(r.next_timeout(), Some(SimTime::from_ms(25)));
        r.on_packet(SimTime::from_ms(1), &data(2, 2000, 1000), &mut sacks, &mut out); // pn 1 missing
        assert_eq!(out.len(), 1);
        assert_eq!(sacks.blocks(&out[0]), &[SackBlock { start: 2, end: 3 }, SackBlock { start: 0, end: 1 }]);
        assert_eq!(r.bytes_delivered(), 1000, "the hole at 1000..2000 holds delivery back");
        // The retransmitted bytes come in a new packet number: the stream is whole again.
        r.on_packet(SimTime::from_ms(2), &data(3, 1000, 1000), &mut sacks, &mut out);
        assert_eq!(r.bytes_delivered(), 3000);
    }

    #[test]
    fn ack_delay_is_the_time_since_the_largest_packet_arrived() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::from_ms(10), &data(0, 0, 1000), &mut sacks, &mut out);
        r.on_timeout(SimTime::from_ms(35), &mut sacks, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(sacks.frame(&out[0]).ack_delay_us, 25_000);
    }
}
