//! The future-event list: a radix heap ordered by (time, scheduling order).
//!
//! Events at the same instant come out in the order they were scheduled, so a run is a pure
//! function of its spec and seed. Cancellation is lazy: owners of timers keep their own deadline
//! and ignore stale wakeups (see `Simulator`), which keeps the list free of removals.
//!
//! Why a radix heap: simulated time never goes back. Every event is scheduled at or after the
//! time of the event being handled, the last one taken out. A priority queue whose keys are never
//! smaller than the last key taken out is *monotone*, and for integer keys the radix heap
//! (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path problem", JACM
//! 1990) serves it with a few instructions per push and an amortised handful per pop: an event
//! waits in the bucket named by the highest bit in which its time differs from the last time
//! taken out, and moves to a lower bucket only when every earlier event has gone. Buckets are
//! appended to and emptied in order, first in first out, which is what keeps ties in scheduling
//! order without a sequence number (see [`EventQueue`]). A comparison heap would move keys along
//! a root-to-leaf path on every push and pop.

use crate::net::routing::Hop;
use crate::units::SimTime;

/// What happens when an event fires. Small and `Copy`: packets never live in the event list.
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
    /// The warm-up ends (`RecordSpec::warmup_ns`): the delay distributions start afresh.
    WarmUpEnd,
    /// A generator's next open-loop transfer arrives.
    TransferArrival { generator: u32 },
    /// A closed-loop user of a generator has finished thinking and starts a transfer.
    UserReady { generator: u32, user: u32 },
}

/// An event with the time it fires.
#[derive(Debug, Clone, Copy)]
struct Pending {
    time: u64,
    event: Event,
}

/// Buckets of a radix heap on 64-bit times: one per bit in which a time can first differ from
/// the last time taken out.
const BUCKETS: usize = 64;

/// The earliest time of an empty bucket: later than any event's.
const NEVER: u64 = u64::MAX;

/// The event list.
///
/// Invariant: every pending event's time is at or after `last`. Those at exactly `last` wait in
/// `due`; any other waits in bucket `b` = the index of the highest bit of `time ^ last`, so bucket
/// `b` holds times in `last`'s block of 2^(b+1) with bit `b` different: every time in a lower
/// bucket is earlier than every time in a higher one.
///
/// Why ties keep their scheduling order: the bucket of an event depends on its time and `last`
/// only, so events at the same time always share a bucket (or `due`). Each list is appended to
/// at its end, and a refill moves a bucket's events in their order (into `due` and lower
/// buckets, which are empty then). So events at one time reach `due` in the order they were
/// scheduled, and `due` is taken out from the front.
#[derive(Debug)]
pub struct EventQueue {
    /// The time of the event taken out last (zero before the first).
    last: u64,
    /// The events at time `last`, in scheduling order; `due[next_due..]` are still pending.
    due: Vec<Pending>,
    next_due: usize,
    buckets: [Vec<Pending>; BUCKETS],
    /// For each non-empty bucket, its earliest time and the index of its first event at that
    /// time: a refill knows the new `last` without a scan, and a peek finds the next event.
    earliest: [(u64, u32); BUCKETS],
    /// Bit `b` is set when bucket `b` is not empty.
    occupied: u64,
}

/// Put `pending` where [`EventQueue`]'s invariant says, relative to `last`: into `due` if it is
/// at `last`, else into the bucket of the highest bit in which its time differs. Apart from the
/// queue, so that the compiler sees the lists it writes and `last` cannot overlap: the loop of a
/// refill keeps `last` in a register instead of reloading it after every store.
#[inline(always)]
fn place(
    pending: Pending,
    last: u64,
    due: &mut Vec<Pending>,
    buckets: &mut [Vec<Pending>],
    earliest: &mut [(u64, u32); BUCKETS],
    occupied: &mut u64,
) {
    let differs = pending.time ^ last;
    if differs == 0 {
        due.push(pending);
        return;
    }
    let b = differs.ilog2() as usize;
    let bucket = &mut buckets[b];
    // The first event at the bucket's earliest time stays its earliest (ties: the first). An
    // empty bucket's earliest time is `NEVER`. A select, not a branch: which way it goes is a
    // coin toss the branch predictor would lose (written as an `if`, the compiler makes it a
    // branch).
    let (current, arriving) = (earliest[b], (pending.time, bucket.len() as u32));
    earliest[b] = std::hint::select_unpredictable(pending.time < current.0, arriving, current);
    bucket.push(pending);
    *occupied |= 1 << b;
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            last: 0,
            due: Vec::new(),
            next_due: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            earliest: [(NEVER, 0); BUCKETS],
            occupied: 0,
        }
    }

    /// Schedule `event` at `time`, which must not be before the last event taken out: the
    /// simulator never schedules in the past (a monotone queue; see [`EventQueue`]).
    #[inline]
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        assert!(time.0 >= self.last, "event queue: an event scheduled at {time:?}, before the last one taken out");
        self.place(Pending { time: time.0, event });
    }

    /// Put an event where the invariant says, relative to the current `last`.
    #[inline(always)]
    fn place(&mut self, pending: Pending) {
        place(pending, self.last, &mut self.due, &mut self.buckets, &mut self.earliest, &mut self.occupied);
    }

    /// `due` is empty: advance `last` to the earliest pending time, take out the lowest non-empty
    /// bucket's first event at that time (the next one out: its index is known) and move the
    /// bucket's other events, in their order, into `due` (the later ones at the same time) and
    /// the buckets below. Each move lowers an event's bucket, so an event moves at most 64
    /// times, and in practice a few. `None` when nothing is pending.
    ///
    /// The next event never passes through `due`: on a short list (one CUBIC flow: ~10 events
    /// pending) almost every pop refills, and `due` then held that one event for the moment
    /// between its push and its pop.
    #[inline]
    fn refill(&mut self) -> Option<Pending> {
        if self.occupied == 0 {
            return None;
        }
        let b = self.occupied.trailing_zeros() as usize;
        self.occupied &= !(1 << b);
        let (last, first) = self.earliest[b];
        self.last = last;
        self.earliest[b] = (NEVER, 0);
        let (lower, from_b) = self.buckets.split_at_mut(b);
        let moving = &mut from_b[0];
        let first = first as usize;
        let next = moving[first];
        // The buckets below b are empty, and every event moved lands in one of them or in `due`.
        // None before `first` is at time `last` (it is the first at that time). Two loops, not
        // a chained iterator, whose switch between its halves the branch predictor misses.
        for &pending in &moving[..first] {
            place(pending, last, &mut self.due, lower, &mut self.earliest, &mut self.occupied);
        }
        for &pending in &moving[first + 1..] {
            place(pending, last, &mut self.due, lower, &mut self.earliest, &mut self.occupied);
        }
        // Emptied in place, so that its capacity is kept: no allocation per event.
        moving.clear();
        Some(next)
    }

    /// The next event, taken out, if it fires at or before `until`: the simulator's step.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, Event)> {
        match self.peek_time() {
            Some(t) if t <= until => self.pop(),
            _ => None,
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let Pending { time, event } = if self.next_due < self.due.len() { self.take_due() } else { self.refill()? };
        Some((SimTime(time), event))
    }

    /// The first event of `due` (there is one).
    #[inline]
    fn take_due(&mut self) -> Pending {
        let pending = self.due[self.next_due];
        self.next_due += 1;
        if self.next_due == self.due.len() {
            self.due.clear();
            self.next_due = 0;
        }
        pending
    }

    /// The first event of the lowest non-empty bucket: the next one out once `due` is empty.
    #[inline]
    fn earliest_in_buckets(&self) -> Option<(usize, Pending)> {
        (self.occupied != 0).then(|| {
            let b = self.occupied.trailing_zeros() as usize;
            (b, self.buckets[b][self.earliest[b].1 as usize])
        })
    }

    /// The next event to come out, without taking it out.
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        match self.due.get(self.next_due) {
            Some(pending) => Some(pending.event),
            None => self.earliest_in_buckets().map(|(_, pending)| pending.event),
        }
    }

    /// Most events a peek at the event after next reads in a bucket: a hint for prefetching
    /// must stay cheap, so a larger lowest bucket gives no second answer.
    const PEEK_SCAN: usize = 32;

    /// The next event to come out and the one after it (unless an earlier one is scheduled
    /// meanwhile), without taking them out. The second is `None` also when finding it would
    /// mean scanning more than [`Self::PEEK_SCAN`] events (the lowest bucket is rarely that
    /// large). One call for both, as the simulator asks for both after every pop: they share
    /// the lookup of the lowest bucket.
    #[inline]
    pub fn peek_two(&self) -> (Option<Event>, Option<Event>) {
        match &self.due[self.next_due..] {
            [first, second, ..] => return (Some(first.event), Some(second.event)),
            [first] => return (Some(first.event), self.earliest_in_buckets().map(|(_, pending)| pending.event)),
            [] => {}
        }
        let Some((b, first)) = self.earliest_in_buckets() else { return (None, None) };
        let bucket = &self.buckets[b];
        let second = match bucket.len() {
            // Every time in a higher bucket is later than every time in a lower one.
            1 => {
                let higher = self.occupied & (self.occupied - 1);
                (higher != 0).then(|| {
                    let b = higher.trailing_zeros() as usize;
                    self.buckets[b][self.earliest[b].1 as usize].event
                })
            }
            n if n > Self::PEEK_SCAN => None,
            // The earliest of the bucket's other events (ties: the first scheduled, and the
            // next one's first event is the first at its time, so every tie comes after it).
            _ => {
                let next = self.earliest[b].1 as usize;
                bucket
                    .iter()
                    .zip(0..)
                    .filter(|&(_, i)| i != next)
                    .min_by_key(|&(p, i)| (p.time, i))
                    .map(|(p, _)| p.event)
            }
        };
        (Some(first.event), second)
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        if self.next_due < self.due.len() {
            return Some(SimTime(self.last));
        }
        // The lowest non-empty bucket's earliest time, known without reading the bucket.
        (self.occupied != 0).then(|| SimTime(self.earliest[self.occupied.trailing_zeros() as usize].0))
    }

    /// Events pending: counted when asked (tests, diagnostics), not kept up to date by every
    /// schedule and pop.
    pub fn len(&self) -> usize {
        let buckets = (0..BUCKETS).filter(|b| self.occupied & (1 << b) != 0).map(|b| self.buckets[b].len());
        self.due.len() - self.next_due + buckets.sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.next_due == self.due.len() && self.occupied == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// The event list as it was before the radix heap (and the four-ary heap before it): the
    /// standard library's binary heap of (time, sequence) keys. Any sequence of operations must
    /// give the same pops from both.
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

        /// The two events the reference pops next, without popping them.
        fn next_two(&self) -> (Option<Event>, Option<Event>) {
            let mut two = self.heap.clone();
            let mut next = || two.pop().map(|Reverse((_, _, flow))| Event::SenderTimer { flow });
            (next(), next())
        }
    }

    /// One step of a random workload: schedule at `now + delay` (delays drawn from a few values,
    /// so that ties are common, and from spans that reach the high buckets), or pop.
    #[derive(Debug, Clone)]
    enum Op {
        Schedule {
            delay: u64,
        },
        Pop,
        /// Pop only an event due within `ahead` of the last time taken out.
        PopUntil {
            ahead: u64,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => prop_oneof![
                Just(0u64),
                Just(1),
                Just(7),
                0..50u64,
                0..1_000_000u64,
                (0..u64::MAX >> 2),
                (0..64u32).prop_map(|bit| 1u64 << bit),
            ]
            .prop_map(|delay| Op::Schedule { delay }),
            2 => Just(Op::Pop),
            1 => prop_oneof![Just(0u64), Just(1), 0..1_000_000u64].prop_map(|ahead| Op::PopUntil { ahead }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn pops_come_out_in_time_then_scheduling_order_like_a_binary_heap(
            ops in proptest::collection::vec(op(), 0..2_000),
            start in prop_oneof![Just(0u64), 0..u64::MAX >> 1],
        ) {
            let mut q = EventQueue::new();
            let mut r = Reference::default();
            let mut now = start;
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Schedule { delay } => {
                        let time = now.saturating_add(*delay);
                        q.schedule(SimTime(time), Event::SenderTimer { flow: i as u32 });
                        r.schedule(time, i as u32);
                    }
                    Op::Pop => {
                        let popped = q.pop();
                        prop_assert_eq!(popped, r.pop());
                        if let Some((t, _)) = popped {
                            now = t.0;
                        }
                    }
                    Op::PopUntil { ahead } => {
                        let until = now.saturating_add(*ahead);
                        let popped = q.pop_until(SimTime(until));
                        let due = r.heap.peek().is_some_and(|Reverse((t, _, _))| *t <= until);
                        prop_assert_eq!(popped, if due { r.pop() } else { None });
                        if let Some((t, _)) = popped {
                            now = t.0;
                        }
                    }
                }
                prop_assert_eq!(q.len(), r.heap.len());
                prop_assert_eq!(q.peek_time(), r.heap.peek().map(|Reverse((t, _, _))| SimTime(*t)));
                let (first, second) = r.next_two();
                prop_assert_eq!(q.peek(), first);
                let (peeked_first, peeked_second) = q.peek_two();
                prop_assert_eq!(peeked_first, first);
                // A hint that may decline (a large lowest bucket), never a wrong answer.
                if let Some(peeked) = peeked_second {
                    prop_assert_eq!(Some(peeked), second);
                }
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
        for flow in 0..2_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Times a few apart, so that ties (broken by scheduling order) are common and the
            // low buckets hold a few events each.
            q.schedule(SimTime(x % 3_000), Event::SenderTimer { flow });
        }
        let mut answered = 0;
        while !q.is_empty() {
            let (first, second) = q.peek_two();
            assert_eq!(first, q.pop().map(|(_, e)| e));
            if second.is_some() {
                assert_eq!(second, q.peek(), "the second peek is the next event after one pop");
                answered += 1;
            }
        }
        assert!(answered > 1_900, "the peek declined {} times of 2,000", 2_000 - answered);
        assert_eq!(q.peek_two(), (None, None));
    }

    #[test]
    fn a_refill_takes_the_next_event_from_the_middle_of_its_bucket_and_keeps_ties_behind_it() {
        // One bucket (times 4 to 7, last 0) whose earliest event is neither its first nor its
        // last, with a tie after it: the refill hands out the first event at time 5 and moves
        // the tie into `due`, where one scheduled at 5 afterwards queues behind it.
        let mut q = EventQueue::new();
        for (time, flow) in [(6, 0), (5, 1), (7, 2), (5, 3)] {
            q.schedule(SimTime(time), Event::SenderTimer { flow });
        }
        assert_eq!(q.pop(), Some((SimTime(5), Event::SenderTimer { flow: 1 })));
        q.schedule(SimTime(5), Event::SenderTimer { flow: 4 });
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|(t, e)| match e {
                Event::SenderTimer { flow } => (t.0, flow),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(order, vec![(5, 3), (5, 4), (6, 0), (7, 2)]);
    }

    #[test]
    #[should_panic(expected = "before the last one taken out")]
    fn scheduling_in_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), Event::Sample);
        q.pop();
        q.schedule(SimTime(9), Event::Sample);
    }

    #[test]
    fn an_event_moves_down_a_bucket_at_each_refill_that_takes_it() {
        // Times with every high bit apart from the last one taken out: each pop refills.
        let mut q = EventQueue::new();
        for bit in (0..64).rev() {
            q.schedule(SimTime(1 << bit), Event::FlowStart { flow: bit });
        }
        q.schedule(SimTime(u64::MAX), Event::Sample);
        q.schedule(SimTime(0), Event::Sample);
        assert_eq!(q.pop(), Some((SimTime(0), Event::Sample)));
        for bit in 0..64 {
            assert_eq!(q.pop(), Some((SimTime(1 << bit), Event::FlowStart { flow: bit })));
        }
        assert_eq!(q.pop(), Some((SimTime(u64::MAX), Event::Sample)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn an_event_at_the_last_representable_time_is_found_in_a_reused_bucket() {
        // Bucket 1 (times differing from the last first at bit 1) holds two events, the earlier
        // one second; it is emptied, and much later an event at u64::MAX is the first in it again.
        let mut q = EventQueue::new();
        q.schedule(SimTime(3), Event::FlowStart { flow: 3 });
        q.schedule(SimTime(2), Event::FlowStart { flow: 2 });
        assert_eq!(q.pop(), Some((SimTime(2), Event::FlowStart { flow: 2 })));
        assert_eq!(q.pop(), Some((SimTime(3), Event::FlowStart { flow: 3 })));
        q.schedule(SimTime(u64::MAX - 3), Event::Sample);
        assert_eq!(q.pop(), Some((SimTime(u64::MAX - 3), Event::Sample)));
        q.schedule(SimTime(u64::MAX), Event::FlowStop { flow: 1 });
        assert_eq!(q.peek_time(), Some(SimTime(u64::MAX)));
        assert_eq!(q.peek(), Some(Event::FlowStop { flow: 1 }));
        assert_eq!(q.pop(), Some((SimTime(u64::MAX), Event::FlowStop { flow: 1 })));
        assert!(q.is_empty());
    }

    #[test]
    fn ties_break_in_insertion_order() {
        let mut q = EventQueue::new();
        for flow in 0..100 {
            q.schedule(SimTime(5), Event::FlowStart { flow });
            if flow == 50 {
                // A later tie scheduled while the earlier ones are due.
                assert_eq!(q.pop(), Some((SimTime(5), Event::FlowStart { flow: 0 })));
            }
        }
        for expected in 1..100 {
            assert_eq!(q.pop(), Some((SimTime(5), Event::FlowStart { flow: expected })));
        }
        assert!(q.is_empty());
    }
}
