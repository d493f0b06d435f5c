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

/// What an active queue manager's controller holds at an instant: the channel's time series
/// samples it (`record`), never the per-packet path. Each field is `None` where the discipline
/// keeps no such quantity (a FIFO, a shaper, SplitBuff: all four).
///
/// | discipline | `probability` | `signal` | `state` | `count` |
/// |---|---|---|---|---|
/// | RED, ARED | p_b at the average queue, for a packet of the mean size (Floyd & Jacobson 1993, eq. 2; gentle above max_th) | the average queue, in the thresholds' unit (packets, or bytes in byte mode) | — | packets admitted since the last early drop or mark (§7's count) |
/// | PIE | drop_prob (RFC 8033 §4.2) | the queueing delay estimate, ns (§4.3) | — | — |
/// | DualPI2 | p', the base probability (RFC 9332 §2.4: p_C = p'², p_L = min(k·p', 1) where the L queue's own step does not mark) | the queueing delay at the last update, ns | — | — |
/// | CoDel | — | — | 1 in the dropping state, else 0 (RFC 8289 §5.5) | the control law's count (kept after the dropping state ends, for a re-entry to resume from) |
/// | FQ-CoDel | — | — | flow queues in the dropping state | the largest count among them (0 when none) |
/// | FQ-PIE | the largest drop_prob among the flow queues | the largest delay estimate among them, ns | — | — |
///
/// The values are those of the discipline's last packet event: PIE and DualPI2 apply the
/// updates due since then at the next arrival or departure, so a sample in an idle period shows
/// the probability the queue last had, and a queue under load the one in force.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AqmState {
    pub probability: Option<f64>,
    pub signal: Option<f64>,
    pub state: Option<u64>,
    pub count: Option<u64>,
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
    /// The AQM's controller now ([`AqmState`]); nothing for a discipline without one.
    fn aqm_state(&self) -> AqmState {
        AqmState::default()
    }
}
