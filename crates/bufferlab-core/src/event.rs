//! The future-event list: a four-ary min-heap ordered by (time, insertion sequence).
//!
//! Events at the same instant come out in the order they were scheduled, so a run is a pure
//! function of its spec and seed. Cancellation is lazy: owners of timers keep their own deadline
//! and ignore stale wakeups (see `Simulator`), which keeps the heap free of removals.
//!
//! Why four-ary, and why keys apart from events: a large run keeps tens of thousands of events
//! pending (one per busy channel and per armed timer), more than a core's L2 cache holds, and
//! every event costs one push and one pop. A pop walks the heap from root to leaf; with four
//! children per node the walk has half the levels of a binary heap, and the four children's keys
//! (16 bytes each) share one 64-byte cache line, so each level costs one cache line of keys
//! (LaMarca and Ladner, "The influence of caches on the performance of heaps", 1996). The events
//! themselves move alongside in a parallel array and are read once per level.

use crate::units::SimTime;

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

/// The order of an event: time·2^64 + insertion sequence, so that one integer comparison orders
/// by time and breaks ties by scheduling order. Sequences are unique, so no two keys are equal
/// and the pop order is fully determined by the keys (not by the heap's shape).
type Key = u128;

/// Fills the unused lanes of the last group: larger than every real key (a real key would need
/// time u64::MAX and 2^64 - 1 events scheduled before it).
const VACANT: Key = Key::MAX;

/// Four keys that are siblings in the heap, on one cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(align(64))]
struct Siblings([Key; 4]);

/// The first heap node sits at slot `ROOT` (lane 3 of group 0), so that the children of the node
/// in slot `p` fill exactly group `p - 2` (slots 4(p - 2) to 4(p - 2) + 3) and share its line.
const ROOT: usize = 3;

#[derive(Debug)]
pub struct EventQueue {
    /// Keys by slot (slot `s` is lane `s % 4` of group `s / 4`); slots `ROOT..ROOT + len` are the heap.
    keys: Vec<Siblings>,
    /// The event of each slot, moved together with its key.
    events: Vec<Event>,
    len: usize,
    next_seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue { keys: vec![Siblings([VACANT; 4])], events: vec![Event::Sample; ROOT], len: 0, next_seq: 0 }
    }

    #[inline]
    fn key(&self, slot: usize) -> Key {
        self.keys[slot / 4].0[slot % 4]
    }

    #[inline]
    fn set(&mut self, slot: usize, key: Key, event: Event) {
        self.keys[slot / 4].0[slot % 4] = key;
        self.events[slot] = event;
    }

    pub fn schedule(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = (time.0 as Key) << 64 | seq as Key;
        // Open a slot at the end of the heap, then move the hole up past every parent that is
        // later than the new event.
        let mut slot = ROOT + self.len;
        self.len += 1;
        if slot / 4 == self.keys.len() {
            self.keys.push(Siblings([VACANT; 4]));
        }
        if slot == self.events.len() {
            self.events.push(event);
        }
        while slot > ROOT {
            let parent = slot / 4 + 2;
            let parent_key = self.key(parent);
            if parent_key < key {
                break;
            }
            let parent_event = self.events[parent];
            self.set(slot, parent_key, parent_event);
            slot = parent;
        }
        self.set(slot, key, event);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        if self.len == 0 {
            return None;
        }
        let top = (self.key(ROOT), self.events[ROOT]);
        self.len -= 1;
        let last = ROOT + self.len;
        let (key, event) = (self.key(last), self.events[last]);
        self.keys[last / 4].0[last % 4] = VACANT;
        if self.len > 0 {
            // Move the hole at the root down past every child earlier than the last event, then
            // put the last event in it.
            let mut slot = ROOT;
            loop {
                let group = slot - 2;
                if group >= self.keys.len() {
                    break;
                }
                let siblings = &self.keys[group].0;
                // The earliest of the four children (vacant lanes never win).
                let mut lane = 0;
                for l in 1..4 {
                    if siblings[l] < siblings[lane] {
                        lane = l;
                    }
                }
                let child_key = siblings[lane];
                if child_key > key {
                    break; // also when the group is vacant
                }
                let child = 4 * group + lane;
                let child_event = self.events[child];
                self.set(slot, child_key, child_event);
                slot = child;
            }
            self.set(slot, key, event);
        }
        Some((SimTime((top.0 >> 64) as u64), top.1))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        (self.len > 0).then(|| SimTime((self.key(ROOT) >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// The event list as it was before the four-ary heap: the standard library's binary heap of
    /// (time, sequence) keys. Any sequence of operations must give the same pops from both.
    #[derive(Default)]
    struct Reference {
        heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
        next_seq: u64,
    }

    impl Reference {
        fn schedule(&mut self, time: u64, flow: u32) {
            self.heap.push(Reverse((time, self.next_seq, flow)));
            self.next_seq += 1;
        }

        fn pop(&mut self) -> Option<(SimTime, Event)> {
            self.heap.pop().map(|Reverse((t, _, flow))| (SimTime(t), Event::SenderTimer { flow }))
        }
    }

    /// One step of a random workload: schedule at `now + delay` (delays drawn from a few values,
    /// so that ties are common), or pop.
    #[derive(Debug, Clone)]
    enum Op {
        Schedule { delay: u64 },
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => prop_oneof![Just(0u64), Just(1), Just(7), 0..50u64, 0..1_000_000u64]
                .prop_map(|delay| Op::Schedule { delay }),
            2 => Just(Op::Pop),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn pops_match_the_binary_heap_it_replaces(ops in proptest::collection::vec(op(), 0..2_000)) {
            let (mut q, mut r) = (EventQueue::new(), Reference::default());
            let mut now = 0;
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Schedule { delay } => {
                        q.schedule(SimTime(now + delay), Event::SenderTimer { flow: i as u32 });
                        r.schedule(now + delay, i as u32);
                    }
                    Op::Pop => {
                        let popped = q.pop();
                        prop_assert_eq!(popped, r.pop());
                        if let Some((t, _)) = popped {
                            now = t.0;
                        }
                    }
                }
                prop_assert_eq!(q.len(), r.heap.len());
                prop_assert_eq!(q.peek_time(), r.heap.peek().map(|Reverse((t, _, _))| SimTime(*t)));
            }
            // Drain: the rest comes out in the same order too.
            loop {
                let popped = q.pop();
                prop_assert_eq!(popped, r.pop());
                if popped.is_none() {
                    break;
                }
            }
            prop_assert!(q.is_empty());
        }
    }

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
