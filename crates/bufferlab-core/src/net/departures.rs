//! Departures fixed at enqueue: the packets waiting in a drop-tail FIFO in front of a lossless
//! link, each with the time its transmission starts.
//!
//! A FIFO serves its packets in arrival order, back to back, and nothing that happens later
//! changes when a packet already queued starts: it starts when the packet ahead of it has been
//! serialised (`start = max(now, busy_until)`). So the channel fixes the start as the packet
//! joins, puts the packet in its pipe at once (arriving at `start + serialisation + delay`),
//! and needs no transmitter wakeup per packet: a quarter of a dumbbell's events.
//!
//! What the queue is at an instant follows from the starts: the packets whose start is still
//! ahead. The channel takes the started ones out ([`Departures::pop`]) before anything
//! reads its queue or its counters (an offer, a sample, the warm-up's end, the run's end), each
//! with its own start time, so that the queue-length integral and the sent counters are those of
//! a transmitter woken at every start.
//!
//! The one change of order: at an instant where a queued packet starts and another arrives,
//! the start comes first, so the arrival finds the queue without it. With a wakeup per packet,
//! the order of the two events decided (their scheduling order).

use crate::units::SimTime;
use std::collections::VecDeque;

/// A queued packet's transmission: when it starts, when it joined the queue, how long it takes
/// to serialise, and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure {
    pub start: SimTime,
    pub enqueued_at: SimTime,
    pub serialisation: SimTime,
    pub bytes: u32,
}

impl Departure {
    /// The time it waited in the queue, in whole nanoseconds (as the sojourn counter adds it).
    #[inline]
    pub fn sojourn_ns(&self) -> u64 {
        (self.start - self.enqueued_at).as_ns()
    }
}

/// The departures not yet started, in the order they start.
#[derive(Debug, Default)]
pub struct Departures {
    waiting: VecDeque<Departure>,
    bytes: u64,
}

impl Departures {
    pub fn len_packets(&self) -> u64 {
        self.waiting.len() as u64
    }

    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// When the first waiting packet starts, if one waits.
    pub fn next_start(&self) -> Option<SimTime> {
        self.waiting.front().map(|d| d.start)
    }

    /// Queue a departure, starting no earlier than the last one queued.
    #[inline]
    pub fn push(&mut self, departure: Departure) {
        debug_assert!(self.waiting.back().is_none_or(|last| last.start <= departure.start));
        self.bytes += departure.bytes as u64;
        self.waiting.push_back(departure);
    }

    /// Take out the first waiting packet (its transmission has started: see [`Departures::next_start`]).
    #[inline]
    pub fn pop(&mut self) -> Option<Departure> {
        let first = self.waiting.pop_front()?;
        self.bytes -= first.bytes as u64;
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn departure(start_us: u64, bytes: u32) -> Departure {
        Departure {
            start: SimTime::from_us(start_us),
            enqueued_at: SimTime::ZERO,
            serialisation: SimTime::from_us(1),
            bytes,
        }
    }

    #[test]
    fn departures_leave_in_the_order_they_start_and_carry_their_bytes_out() {
        let mut d = Departures::default();
        d.push(departure(10, 1500));
        d.push(departure(20, 52));
        assert_eq!((d.len_packets(), d.len_bytes(), d.next_start()), (2, 1552, Some(SimTime::from_us(10))));
        assert_eq!(d.pop(), Some(departure(10, 1500)));
        assert_eq!((d.len_packets(), d.len_bytes(), d.next_start()), (1, 52, Some(SimTime::from_us(20))));
        assert_eq!(d.pop(), Some(departure(20, 52)));
        assert!(d.is_empty() && d.len_bytes() == 0 && d.pop().is_none());
    }

    #[test]
    fn the_sojourn_is_the_wait_from_joining_to_starting() {
        let d = Departure { enqueued_at: SimTime::from_us(4), ..departure(10, 1500) };
        assert_eq!(d.sojourn_ns(), 6_000);
    }
}
