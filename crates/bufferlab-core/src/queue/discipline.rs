//! What every egress queue discipline is: the trait the disciplines implement and what it hands
//! back. Below the disciplines and the [`Queue`](super::Queue) enum that holds them, so that
//! neither reaches the other's module for it.

use crate::net::packet::Packet;
use crate::units::SimTime;

/// Why a queue refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was at its packet or byte limit (tail drop).
    QueueFull,
    /// Dropped by the AQM's decision.
    Aqm,
}

/// What a dequeue attempt yields. A shaper may hold packets back until a later time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dequeue {
    Packet(Packet),
    Empty,
    /// Packets are queued but none may leave before this time.
    NotBefore(SimTime),
}

pub trait QueueDiscipline {
    /// Offer a packet; on refusal the packet comes back with the reason.
    fn enqueue(&mut self, packet: Packet, now: SimTime) -> Result<(), (Packet, DropReason)>;
    fn dequeue(&mut self, now: SimTime) -> Dequeue;
    fn len_packets(&self) -> u64;
    fn len_bytes(&self) -> u64;
}
