//! The packet as the network sees it: a fixed-size value, moved (never heap-allocated) from
//! queue to wire to endpoint.

use crate::units::SimTime;

/// TCP flag bits, numbered as in the TCP header (RFC 9293 §3.1).
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const ACK: u8 = 0x10;
    /// ECN-Echo: the receiver saw congestion experienced (RFC 3168 §6.1.2); on a SYN (with CWR)
    /// or a SYN-ACK (alone), the end asks for or agrees to ECN (RFC 3168 §6.1.1).
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced: the sender has answered an ECN-Echo (RFC 3168 §6.1.2).
    pub const CWR: u8 = 0x80;
    /// Accurate ECN: the header bit RFC 9768 §3.2.2 takes back from the historic ECN nonce (NS),
    /// the ACE field's most significant bit beside CWR and ECE. On the wire it sits just above this
    /// byte's eight flags; here it takes the bit of URG, which no endpoint sets (a capture's TCP
    /// header puts it back in its place).
    pub const AE: u8 = 0x20;
}

/// The ECN field of the IP header, its two low bits of the former TOS byte (RFC 3168 §5):
/// whether the packet's transport is ECN-capable (ECT(0) or ECT(1)) and whether a router on the
/// way marked it Congestion Experienced (CE) instead of dropping it. The discriminants are the
/// field's bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Ecn {
    /// Not-ECT (00): the transport does not take CE for congestion; a queue must drop.
    #[default]
    NotEct = 0b00,
    /// ECT(1) (01), which L4S (RFC 9331) uses to tell its flows apart.
    Ect1 = 0b01,
    /// ECT(0) (10), the codepoint RFC 3168 senders use.
    Ect0 = 0b10,
    /// CE (11): congestion experienced.
    Ce = 0b11,
}

impl Ecn {
    /// A queue may mark this packet instead of dropping it: ECT(0), ECT(1), or already CE (RFC
    /// 3168 §5: a router that would mark a CE packet leaves it CE and forwards it).
    #[inline]
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// Most SACK blocks an ACK carries: 3 when the timestamp option is present (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A byte range [start, end) reported as received by a SACK option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// One IP packet carrying a TCP segment or a QUIC packet of a flow.
///
/// Sequence numbers are 64-bit stream offsets and never wrap. `seq` of a SYN is 0 and the first
/// data byte has sequence number 1, as if the initial sequence number were zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    pub flow: u32,
    /// Node the packet is addressed to.
    pub dst: u32,
    /// True for segments from the flow's sender to its receiver, false for the reverse direction.
    pub is_data: bool,
    pub flags: u8,
    /// Bytes on the wire: headers + payload.
    pub wire_bytes: u32,
    /// Payload bytes. Sixteen bits, as IP's length field (RFC 791); the validator keeps every
    /// segment and datagram within 65535 bytes, and the packet within 80 bytes (see the test).
    pub payload: u16,
    pub seq: u64,
    /// Cumulative acknowledgement (next byte expected), valid when `flags & ACK`.
    pub ack: u64,
    /// Where the packet's SACK blocks are (out of the packet, which is copied at each
    /// hop, while only ACKs carry blocks): the entry of the network's
    /// [`crate::net::sack_slab::SackSlab`] the receiver stored them in. Meaningless when
    /// `sack_len` is 0.
    pub sack: u32,
    pub sack_len: u8,
    /// Sender's transmission timestamp (TSval, RFC 7323); the receiver echoes it.
    pub ts_val: SimTime,
    /// Echoed timestamp (TSecr) on ACKs.
    pub ts_ecr: SimTime,
    /// The segment is a retransmission (known to the sender; a monitor sees it as such).
    pub retransmission: bool,
    /// The IP header's ECN field (RFC 3168 §5): set by the sender, turned to CE by a queue.
    pub ecn: Ecn,
    /// The sender's smoothed RTT when it sent the packet, for RTT-aware queues (active RTT
    /// estimation as in SplitBuff); zero before the first sample.
    pub sender_srtt: SimTime,
    /// When the packet entered its current egress queue (set by the channel that queues it; read
    /// only while it waits there: a packet that finds its link idle goes on without waiting).
    pub enqueued_at: SimTime,
    /// QUIC packet number (RFC 9000 §12.3): never reused, so an acknowledgement names exactly one
    /// transmission. On a QUIC ACK the SACK blocks carry acknowledged packet-number ranges. Zero
    /// for TCP.
    pub pn: u64,
}

/// What an ACK carries besides its fixed fields, kept beside the packet in the network's SACK
/// slab ([`crate::net::sack_slab::SackSlab`]): its SACK blocks (TCP, RFC 2018; on a
/// QUIC ACK frame, the acknowledged packet-number ranges of RFC 9000 §19.3) and QUIC's ACK Delay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckFrame<'a> {
    pub blocks: &'a [SackBlock],
    /// QUIC ACK Delay (RFC 9000 §19.3) in microseconds, the field's unit with ack_delay_exponent
    /// 0: how long the receiver held the ACK after the largest acknowledged packet arrived. Zero
    /// for TCP.
    pub ack_delay_us: u32,
    /// QUIC's ECN counts (RFC 9000 §19.3.2, an ACK frame of type 0x03): zero unless the
    /// connection uses ECN, and for TCP.
    pub ecn_counts: EcnCounts,
}

/// The ECN Counts of a QUIC ACK frame (RFC 9000 §19.3.2): the packets received so far with each
/// ECN codepoint (§13.4.1). Kept modulo 2³² (the slab's entry has room for three 32-bit counts): a
/// sender reads an increase by wrapping subtraction, exact while fewer than 2³² packets arrive
/// between two of its ACKs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EcnCounts {
    pub ect0: u32,
    pub ect1: u32,
    pub ce: u32,
}

impl<'a> AckFrame<'a> {
    /// The blocks `blocks` and no ACK Delay (TCP's SACK option).
    pub fn without_delay(blocks: &'a [SackBlock]) -> Self {
        AckFrame { blocks, ack_delay_us: 0, ecn_counts: EcnCounts { ect0: 0, ect1: 0, ce: 0 } }
    }
}

impl Packet {
    /// A segment from a flow's sender to its receiver (node `dst`), sent at `now`.
    pub fn segment(flow: u32, dst: u32, flags: u8, seq: u64, payload: u32, wire_bytes: u32, now: SimTime) -> Packet {
        Packet {
            flow,
            dst,
            is_data: true,
            flags,
            wire_bytes,
            payload: {
                debug_assert!(payload <= u16::MAX as u32, "validated: a payload fits IP's 16-bit length");
                payload as u16
            },
            seq,
            ack: 0,
            sack: 0,
            sack_len: 0,
            ts_val: now,
            ts_ecr: SimTime::ZERO,
            retransmission: false,
            ecn: Ecn::NotEct,
            sender_srtt: SimTime::ZERO,
            enqueued_at: now,
            pn: 0,
        }
    }

    /// An acknowledgement from a flow's receiver to its sender (node `dst`), sent at `now`.
    pub fn acknowledgement(flow: u32, dst: u32, flags: u8, ack: u64, wire_bytes: u32, now: SimTime) -> Packet {
        Packet { is_data: false, ack, ..Packet::segment(flow, dst, flags, 0, 0, wire_bytes, now) }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_without_its_ack_frame_is_80_bytes() {
        // Packets are copied at each hop (into a pool slot, out of it, into and out of queues);
        // an ACK's SACK blocks and ACK Delay live in the pool's slab, so a copy is 80 bytes, not
        // 128, and a pool slot spans two cache lines wherever it starts.
        assert_eq!(std::mem::size_of::<Packet>(), 80);
    }

    #[test]
    fn the_ecn_codepoints_are_rfc_3168s_bit_patterns() {
        assert_eq!([Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].map(|e| e as u8), [0b00, 0b01, 0b10, 0b11]);
        assert!(!Ecn::NotEct.is_capable() && Ecn::Ect0.is_capable() && Ecn::Ect1.is_capable() && Ecn::Ce.is_capable());
        let p = Packet::segment(0, 1, 0, 1, 1448, 1500, SimTime::ZERO);
        assert_eq!((p.ecn, p.payload), (Ecn::NotEct, 1448), "a packet is not ECN-capable unless its sender says so");
    }
}
