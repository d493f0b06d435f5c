//! The future-event list: a binary heap ordered by (time, insertion sequence).
//!
//! Events at the same instant come out in the order they were scheduled, so a run is a pure
//! function of its spec and seed. Cancellation is lazy: owners of timers keep their own deadline
//! and ignore stale wakeups (see `Simulator`), which keeps the heap free of removals.

use crate::units::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens when an event fires. Small and `Copy`: packets never live in the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The transmitter of a channel is free again (or a shaper releases a packet).
    ChannelWakeup { channel: u32 },
    /// The packet at the head of a channel's propagation pipe reaches the far node.
    Arrive { channel: u32 },
    /// A TCP sender's timer (RTO, pacing or application start/stop) may be due.
    SenderTimer { flow: u32 },
    /// A TCP receiver's delayed-ACK timer may be due.
    ReceiverTimer { flow: u32 },
    /// A flow's application starts.
    FlowStart { flow: u32 },
    /// A flow's application stops writing.
    FlowStop { flow: u32 },
    /// Take one time-series sample.
    Sample,
    /// A generator's next open-loop transfer arrives.
    TransferArrival { generator: u32 },
    /// A closed-loop user of a generator has finished thinking and starts a transfer.
    UserReady { generator: u32, user: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scheduled {
    /// (time, insertion sequence) packed as time·2^64 + seq: one integer comparison orders both.
    key: u128,
    event: Event,
}

impl Ord for Scheduled {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) is on top.
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Scheduled>,
    next_seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn schedule(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { key: (time.0 as u128) << 64 | seq as u128, event });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.heap.pop().map(|s| (SimTime((s.key >> 64) as u64), s.event))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|s| SimTime((s.key >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_in_time_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(30), Event::Sample);
        q.schedule(SimTime(10), Event::FlowStart { flow: 1 });
        q.schedule(SimTime(20), Event::FlowStop { flow: 2 });
        let times: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t.0).collect();
        assert_eq!(times, vec![10, 20, 30]);
    }

    #[test]
    fn interleaved_schedules_and_pops_match_a_sorted_order() {
        // Pseudo-random times, each scheduled no earlier than the last event taken out.
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeMap::new();
        let (mut seq, mut now, mut x) = (0u64, 0u64, 12345u64);
        for round in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = now + x % 1_000_000;
            q.schedule(SimTime(t), Event::SenderTimer { flow: seq as u32 });
            reference.insert((t, seq), seq as u32);
            seq += 1;
            if round % 3 != 0 {
                let (t, e) = q.pop().unwrap();
                let ((rt, _), flow) = reference.pop_first().unwrap();
                assert_eq!((t.0, e), (rt, Event::SenderTimer { flow }));
                now = t.0;
            }
        }
        while let Some((t, e)) = q.pop() {
            let ((rt, _), flow) = reference.pop_first().unwrap();
            assert_eq!((t.0, e), (rt, Event::SenderTimer { flow }));
        }
        assert!(reference.is_empty());
    }

    #[test]
    fn ties_break_in_insertion_order() {
        let mut q = EventQueue::new();
        for flow in 0..100 {
            q.schedule(SimTime(5), Event::FlowStart { flow });
        }
        for expected in 0..100 {
            assert_eq!(q.pop(), Some((SimTime(5), Event::FlowStart { flow: expected })));
        }
        assert!(q.is_empty());
    }
}
