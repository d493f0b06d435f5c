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
//! themselves wait in a separate array, named by their key, and are read once, when popped.

use crate::net::routing::Hop;
use crate::units::SimTime;

/// What happens when an event fires. Small and `Copy`: packets never live in the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The transmitter of a channel is free again (or a shaper releases a packet).
    ChannelWakeup { channel: u32 },
    /// The packet at the head of a channel's propagation pipe, in pool slot `slot`, reaches the
    /// far node, where `then` says what becomes of it. The slot is named here so that reading the
    /// packet need not wait for the channel, and `then` so that the channel or flow the packet
    /// goes to can be asked for before the packet is read.
    Arrive { channel: u32, slot: u32, then: Hop },
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

/// The order of an event, packed in one integer so that one comparison decides it:
///
/// ```text
///   time (64 bits) | insertion sequence (64 - entry_bits) | entry (entry_bits)
/// ```
///
/// Time first, then the sequence: events at the same time come out in scheduling order. The
/// low bits name where the event itself waits (`EventQueue::entries`); they never decide the
/// order because sequences are unique. Keeping the event out of the heap means a pop moves
/// 16-byte keys only, four siblings to a cache line, and reads the event once.
type Key = u128;

/// Fills the unused lanes of the last group: larger than every real key (a real key's sequence
/// and entry fields are never both all ones: `EventQueue::renumber` keeps sequences short).
const VACANT: Key = Key::MAX;

/// Four keys that are siblings in the heap, on one cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(align(64))]
struct Siblings([Key; 4]);

impl Siblings {
    /// The lane of the earliest key, and the key: a knockout of two pairs, so that the two first
    /// comparisons do not wait for each other (a scan would compare each lane with the winner so
    /// far, each comparison waiting for the one before and for a load at the lane it chose).
    /// Among equal keys (only vacant lanes are equal) it may name any of them.
    #[inline(always)]
    fn earliest(&self) -> (usize, Key) {
        let [a, b, c, d] = self.0;
        let (left, left_key) = if b < a { (1, b) } else { (0, a) };
        let (right, right_key) = if d < c { (3, d) } else { (2, c) };
        if right_key < left_key {
            (right, right_key)
        } else {
            (left, left_key)
        }
    }
}

/// The first heap node sits at position `ROOT` (lane 3 of group 0), so that the children of the
/// node at position `p` fill exactly group `p - 2` (positions 4(p - 2) to 4(p - 2) + 3).
const ROOT: usize = 3;

/// Entry bits to begin with: room for 16 million pending events before the layout widens.
const ENTRY_BITS: u32 = 24;

#[derive(Debug)]
pub struct EventQueue {
    /// Keys by heap position (position `p` is lane `p % 4` of group `p / 4`); positions
    /// `ROOT..ROOT + len` hold the heap.
    keys: Vec<Siblings>,
    len: usize,
    /// The pending events, each at the entry its key names; vacant entries are reused.
    entries: Vec<Event>,
    vacant: Vec<u32>,
    /// Bits of a key that name the entry; the sequence has the 64 - entry_bits above them.
    entry_bits: u32,
    /// Largest sequence field allowed (smaller than 64 - entry_bits bits in tests only, so that
    /// they can reach the renumbering).
    max_seq_bits: u32,
    next_seq: u64,
    /// The first sequence, and the first entry, that do not fit the keys' fields (derived from
    /// the two widths above, so that `schedule` checks each with one comparison).
    seq_limit: u64,
    entry_limit: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::with_bits(ENTRY_BITS, 64)
    }

    fn with_bits(entry_bits: u32, max_seq_bits: u32) -> Self {
        let mut queue = EventQueue {
            keys: vec![Siblings([VACANT; 4])],
            len: 0,
            entries: Vec::new(),
            vacant: Vec::new(),
            entry_bits,
            max_seq_bits,
            next_seq: 0,
            seq_limit: 0,
            entry_limit: 0,
        };
        queue.set_limits();
        queue
    }

    fn set_limits(&mut self) {
        self.seq_limit = 1 << self.seq_bits();
        self.entry_limit = 1 << self.entry_bits;
    }

    #[inline]
    fn key(&self, pos: usize) -> Key {
        self.keys[pos / 4].0[pos % 4]
    }

    #[inline]
    fn set_key(&mut self, pos: usize, key: Key) {
        self.keys[pos / 4].0[pos % 4] = key;
    }

    fn seq_bits(&self) -> u32 {
        (64 - self.entry_bits).min(self.max_seq_bits)
    }

    /// Time, sequence and entry of a key.
    #[inline]
    fn decode(&self, key: Key) -> (u64, u64, u32) {
        let low = key as u64;
        ((key >> 64) as u64, low >> self.entry_bits, (low & (self.entry_limit - 1)) as u32)
    }

    #[inline]
    fn encode(&self, time: u64, seq: u64, entry: u32) -> Key {
        (time as Key) << 64 | (seq << self.entry_bits | entry as u64) as Key
    }

    pub fn schedule(&mut self, time: SimTime, event: Event) {
        let entry = match self.vacant.pop() {
            Some(entry) => {
                self.entries[entry as usize] = event;
                entry
            }
            None => {
                self.entries.push(event);
                (self.entries.len() - 1) as u32
            }
        };
        if self.next_seq >= self.seq_limit || entry as u64 >= self.entry_limit {
            self.renumber();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = self.encode(time.0, seq, entry);
        // Open a position at the end of the heap, then move the hole up past every parent that
        // is later than the new event.
        let mut pos = ROOT + self.len;
        self.len += 1;
        if pos / 4 == self.keys.len() {
            self.keys.push(Siblings([VACANT; 4]));
        }
        while pos > ROOT {
            let parent = pos / 4 + 2;
            let parent_key = self.key(parent);
            if parent_key < key {
                break;
            }
            self.set_key(pos, parent_key);
            pos = parent;
        }
        self.set_key(pos, key);
    }

    /// Give the pending events the sequences 0, 1, 2, … in their order, and room in the keys for
    /// as many entries as exist. Needed only when sequences outgrow their field (after 2^40
    /// events with the initial layout) or more than 2^24 events are pending; the order of every
    /// event, pending or future, stays exactly what it was.
    #[cold]
    fn renumber(&mut self) {
        let mut pending: Vec<(u64, u64, u32)> = (ROOT..ROOT + self.len).map(|p| self.decode(self.key(p))).collect();
        pending.sort_unstable();
        let needed = usize::BITS - self.entries.len().leading_zeros();
        self.entry_bits = self.entry_bits.max(needed);
        self.set_limits();
        assert!(
            (pending.len() as u64) < 1 << self.seq_bits(),
            "event queue: {} pending events do not fit its keys",
            pending.len()
        );
        // In key order, a valid heap.
        for (seq, &(time, _, entry)) in pending.iter().enumerate() {
            let key = self.encode(time, seq as u64, entry);
            self.set_key(ROOT + seq, key);
        }
        self.next_seq = pending.len() as u64;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        if self.len == 0 {
            return None;
        }
        let (time, _, entry) = self.decode(self.key(ROOT));
        let event = self.entries[entry as usize];
        self.vacant.push(entry);
        self.len -= 1;
        let last = ROOT + self.len;
        let key = self.key(last);
        self.set_key(last, VACANT);
        if self.len > 0 {
            // Move the hole at the root down past every child earlier than the last key, then
            // put the last key in it.
            let mut pos = ROOT;
            loop {
                let group = pos - 2;
                if group >= self.keys.len() {
                    break;
                }
                // The earliest of the four children (vacant lanes never win).
                let (lane, child_key) = self.keys[group].earliest();
                if child_key > key {
                    break; // also when the group is vacant
                }
                self.set_key(pos, child_key);
                pos = 4 * group + lane;
            }
            self.set_key(pos, key);
        }
        Some((SimTime(time), event))
    }

    /// The next event to come out, without taking it out.
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        (self.len > 0).then(|| self.entries[self.decode(self.key(ROOT)).2 as usize])
    }

    /// The event that comes out after the next one, unless an earlier one is scheduled meanwhile:
    /// the earliest child of the root (its four children's keys share one cache line).
    #[inline]
    pub fn peek_second(&self) -> Option<Event> {
        if self.len < 2 {
            return None;
        }
        let (_, earliest) = self.keys[ROOT - 2].earliest();
        Some(self.entries[self.decode(earliest).2 as usize])
    }

    /// Ask for the entries of the events that may be [`EventQueue::peek_second`] after the next
    /// pop: the root's other children, and the children of the earliest one, which replace it
    /// when it rises to the root. Their keys are on lines every pop reads (the top three levels);
    /// their entries, scheduled milliseconds ago, are not, and reading one to peek would wait.
    #[inline]
    pub fn prefetch_upcoming(&self) {
        let Some(children) = self.keys.get(ROOT - 2) else { return };
        let mut earliest = 0;
        for (lane, &key) in children.0.iter().enumerate() {
            if key != VACANT {
                self.prefetch_entry(key);
            }
            if key < children.0[earliest] {
                earliest = lane;
            }
        }
        if let Some(grandchildren) = self.keys.get(4 * (ROOT - 2) + earliest - 2) {
            for &key in grandchildren.0.iter().filter(|&&key| key != VACANT) {
                self.prefetch_entry(key);
            }
        }
    }

    #[inline]
    fn prefetch_entry(&self, key: Key) {
        if let Some(event) = self.entries.get(self.decode(key).2 as usize) {
            crate::memory::prefetch(event);
        }
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
        fn pops_match_the_binary_heap_it_replaces(
            ops in proptest::collection::vec(op(), 0..2_000),
            tiny_keys in any::<bool>(),
        ) {
            // Tiny keys (2 entry bits, at most 8 sequence bits, so at most 200 pending here)
            // renumber and widen every few dozen operations: the order must not notice.
            let mut q = if tiny_keys { EventQueue::with_bits(2, 8) } else { EventQueue::new() };
            let mut r = Reference::default();
            let mut now = 0;
            for (i, op) in ops.iter().enumerate() {
                let op = if tiny_keys && q.len() >= 200 { &Op::Pop } else { op };
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
    fn peeks_name_the_next_two_events_to_come_out() {
        let mut q = EventQueue::new();
        let mut x = 99u64;
        for flow in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct times, so that ties (broken by sequence) are common.
            q.schedule(SimTime(x % 300), Event::SenderTimer { flow });
        }
        while !q.is_empty() {
            let (first, second) = (q.peek(), q.peek_second());
            assert_eq!(first, q.pop().map(|(_, e)| e));
            assert_eq!(second, q.peek(), "the second peek is the next event after one pop");
        }
        assert_eq!((q.peek(), q.peek_second()), (None, None));
    }

    #[test]
    fn prefetching_the_upcoming_entries_is_harmless_at_any_size() {
        // A hint only: it reads no vacant lane's entry and changes nothing, whatever the heap's shape.
        let mut q = EventQueue::new();
        q.prefetch_upcoming();
        for flow in 0..40 {
            q.schedule(SimTime(u64::from(flow) * 7 % 13), Event::SenderTimer { flow });
            q.prefetch_upcoming();
        }
        let mut popped = 0;
        while !q.is_empty() {
            let second = q.peek_second();
            q.prefetch_upcoming();
            q.pop();
            assert_eq!(q.peek(), second);
            popped += 1;
        }
        assert_eq!(popped, 40);
    }

    #[test]
    fn the_knockout_names_the_earliest_of_four_siblings() {
        // Every order of four distinct keys, and vacant lanes anywhere: the lane named holds the
        // smallest key.
        let keys: [Key; 4] = [5, 1 << 64, 7, (1 << 64) - 1];
        for a in 0..4 {
            for b in 0..4 {
                for c in 0..4 {
                    for d in 0..4 {
                        for vacant_from in 1..=4 {
                            let mut lanes = [keys[a], keys[b], keys[c], keys[d]];
                            lanes[vacant_from..].fill(VACANT);
                            let (lane, key) = Siblings(lanes).earliest();
                            assert_eq!(key, *lanes.iter().min().unwrap());
                            assert_eq!(lanes[lane], key);
                        }
                    }
                }
            }
        }
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
