//! What every egress queue discipline is: the trait the disciplines implement and what it hands
//! back. Below the disciplines and the [`Queue`](super::Queue) enum that holds them, so that
//! neither reaches the other's module for it.

use crate::net::packet::{Ecn, Packet};
use crate::units::SimTime;

/// Why a queue dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was at its packet or byte limit (tail drop).
    QueueFull,
    /// Dropped by the AQM's decision (RED's and PIE's early drops at arrival, CoDel's control law
    /// at dequeue, RFC 8289 §5.5), not for want of room.
    Aqm,
}

/// The packets a discipline marked Congestion Experienced instead of dropping them (RFC 3168 §5),
/// counted where it marked them; the channel copies the count into its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CeMarks {
    pub packets: u64,
    pub bytes: u64,
}

impl CeMarks {
    /// The AQM decided to drop `packet`: with `ecn` on and an ECN-capable packet, mark it CE
    /// instead and count it (RFC 3168 §5: "set the CE codepoint ... instead of dropping the
    /// packet"; a CE packet stays CE). True if marked: the packet goes on; false: drop it.
    #[inline]
    pub fn mark_instead_of_drop(&mut self, ecn: bool, packet: &mut Packet) -> bool {
        if !ecn || !packet.ecn.is_capable() {
            return false;
        }
        packet.ecn = Ecn::Ce;
        self.packets += 1;
        self.bytes += packet.wire_bytes as u64;
        true
    }
}

/// What a dequeue attempt yields. A shaper may hold packets back until a later time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dequeue {
    Packet(Packet),
    Empty,
    /// Packets are queued but none may leave before this time.
    NotBefore(SimTime),
}

/// Where a discipline hands the packets it drops while dequeuing (an AQM drops at the head, RFC
/// 8289 §5.5) or, beyond the one it hands back, to make room for an arrival (a batch drop), each
/// with its reason, as it drops them: the caller frees and counts each one as it does a refused
/// arrival. A generic parameter of [`QueueDiscipline::enqueue`] and
/// [`QueueDiscipline::dequeue`], so the per-packet path is a static call, with no buffer to
/// allocate or to fill; any `FnMut(Packet, DropReason)` is one.
pub trait DropSink {
    fn dropped(&mut self, packet: Packet, reason: DropReason);
}

impl<F: FnMut(Packet, DropReason)> DropSink for F {
    #[inline]
    fn dropped(&mut self, packet: Packet, reason: DropReason) {
        self(packet, reason)
    }
}

/// The sink of a discipline's unit tests where nothing is dropped into a sink (no AQM drop at
/// dequeue, no batch drop at enqueue): a packet there is a bug.
#[cfg(test)]
pub(crate) struct NoDrops;

#[cfg(test)]
impl DropSink for NoDrops {
    fn dropped(&mut self, packet: Packet, reason: DropReason) {
        panic!("dropped at dequeue ({reason:?}): {packet:?}");
    }
}

pub trait QueueDiscipline {
    /// Offer a packet; on refusal a packet comes back with the reason: the arrival, or the one
    /// a discipline dropped to make room for it (FQ-CoDel and FQ-PIE drop from the head of their
    /// fattest flow queue, RFC 8290 §4.1, and keep the arrival). A discipline that drops several
    /// packets to make room (the flow queues' batch drop) hands back the first and gives the
    /// others to `drops`, as it makes them; no other discipline uses `drops` here.
    fn enqueue(&mut self, packet: Packet, now: SimTime, drops: &mut impl DropSink) -> Result<(), (Packet, DropReason)>;
    /// The next packet to transmit, if any may leave now. Packets the discipline drops on the way
    /// (an AQM) go to `drops`, before the packet it yields; none stays in the queue.
    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue;
    fn len_packets(&self) -> u64;
    fn len_bytes(&self) -> u64;
    /// The packets marked CE instead of dropped so far (none for a discipline without ECN).
    fn ce_marks(&self) -> CeMarks {
        CeMarks::default()
    }
}
