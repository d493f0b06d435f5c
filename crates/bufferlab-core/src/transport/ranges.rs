//! A set of `u64` values kept as sorted, disjoint, non-adjacent half-open ranges: the received
//! packet numbers a QUIC receiver acknowledges (RFC 9000 §19.3.1), or the stream bytes a sender
//! knows were delivered.
//!
//! The ranges live in a ring buffer, found by binary search: values arrive mostly above the
//! highest range or fill the lowest hole (a retransmission repairing the oldest loss), both edits
//! at an end of the ring, O(1); an edit inside moves the shorter side only.

use std::collections::VecDeque;

/// Sorted, disjoint, non-adjacent `[start, end)` ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: VecDeque<(u64, u64)>,
}

impl crate::memory::HeapBytes for RangeSet {
    fn heap_bytes(&self) -> usize {
        self.ranges.heap_bytes()
    }
}

impl RangeSet {
    pub fn new() -> Self {
        RangeSet::default()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Insert `[start, end)`; returns how many values were not in the set before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        // Common cases first: extending the highest range, or a range above it.
        if let Some(last) = self.ranges.back_mut() {
            if start >= last.0 && start <= last.1 {
                let added = end.saturating_sub(last.1);
                last.1 = last.1.max(end);
                return added;
            }
        }
        if self.ranges.back().is_none_or(|&(_, last_end)| start > last_end) {
            self.ranges.push_back((start, end));
            return end - start;
        }
        // Ranges [first, past) overlap or touch [start, end); they merge into one.
        let first = self.ranges.partition_point(|&(_, e)| e < start);
        let past = self.ranges.partition_point(|&(s, _)| s <= end);
        let covered: u64 = self.ranges.range(first..past).map(|&(s, e)| e.min(end) - s.max(start)).sum();
        if first == past {
            self.ranges.insert(first, (start, end));
        } else {
            let merged = (self.ranges[first].0.min(start), self.ranges[past - 1].1.max(end));
            self.ranges[first] = merged;
            self.ranges.drain(first + 1..past);
        }
        (end - start) - covered
    }

    pub fn contains(&self, value: u64) -> bool {
        let i = self.ranges.partition_point(|&(_, e)| e <= value);
        self.ranges.get(i).is_some_and(|&(s, _)| s <= value)
    }

    /// Whether every value of `[start, end)` is in the set.
    pub fn contains_range(&self, start: u64, end: u64) -> bool {
        if start >= end {
            return true;
        }
        let i = self.ranges.partition_point(|&(_, e)| e <= start);
        self.ranges.get(i).is_some_and(|&(s, e)| s <= start && end <= e)
    }

    /// The end of the range that starts at `origin`, i.e. how far the set covers `[origin, ..)`
    /// without a hole; `origin` if it is not in the set.
    pub fn contiguous_end(&self, origin: u64) -> u64 {
        match self.ranges.front() {
            Some(&(s, e)) if s <= origin && origin < e => e,
            _ => origin,
        }
    }

    /// The highest value in the set.
    pub fn max(&self) -> Option<u64> {
        self.ranges.back().map(|&(_, e)| e - 1)
    }

    /// Ranges from the highest down, as an ACK frame lists them.
    pub fn iter_descending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().copied()
    }

    /// The first run of values of `[from, to)` missing from the set, as `[start, end)`; `None` if
    /// the set holds all of them. Walking a range's missing parts this way costs O(log n) per part,
    /// however much of the range the set already holds.
    #[inline]
    pub fn first_gap(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let i = self.ranges.partition_point(|&(_, e)| e <= from);
        let (start, next_start) = match self.ranges.get(i) {
            Some(&(s, e)) if s <= from => (e, self.ranges.get(i + 1).map(|&(s, _)| s)),
            Some(&(s, _)) => (from, Some(s)),
            None => (from, None),
        };
        let end = next_start.map_or(to, |n| n.min(to));
        (start < end).then_some((start, end))
    }

    /// Forget the ranges that end at or below `value` (values the owner no longer asks about).
    #[inline]
    pub fn forget_below(&mut self, value: u64) {
        while self.ranges.front().is_some_and(|&(_, e)| e <= value) {
            self.ranges.pop_front();
        }
    }

    /// Forget all but the `keep` highest ranges (a receiver's bounded ACK state, RFC 9000 §13.2.4).
    pub fn keep_highest(&mut self, keep: usize) {
        if self.ranges.len() > keep {
            self.ranges.drain(..self.ranges.len() - keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_counts_only_new_values_and_merges_neighbours() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(10, 20), 10);
        assert_eq!(s.insert(30, 40), 10);
        assert_eq!(s.len(), 2);
        assert_eq!(s.insert(15, 35), 10); // fills the gap 20..30
        assert_eq!(s.len(), 1);
        assert_eq!(s.iter_descending().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(s.insert(40, 41), 1); // adjacent: extends
        assert_eq!(s.insert(0, 5), 5);
        assert_eq!(s.iter_descending().collect::<Vec<_>>(), vec![(10, 41), (0, 5)]);
        assert_eq!(s.insert(0, 50), 50 - 5 - 31);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn membership_and_contiguous_prefix() {
        let mut s = RangeSet::new();
        s.insert(0, 10);
        s.insert(12, 20);
        assert!(s.contains(9) && !s.contains(10) && s.contains(12) && !s.contains(20));
        assert!(s.contains_range(12, 20) && !s.contains_range(5, 15));
        assert_eq!(s.contiguous_end(0), 10);
        assert_eq!(s.contiguous_end(10), 10);
        assert_eq!(s.max(), Some(19));
    }

    #[test]
    fn keep_highest_drops_the_oldest_ranges() {
        let mut s = RangeSet::new();
        for k in 0..10 {
            s.insert(3 * k, 3 * k + 1);
        }
        s.keep_highest(3);
        assert_eq!(s.iter_descending().collect::<Vec<_>>(), vec![(27, 28), (24, 25), (21, 22)]);
    }

    #[test]
    fn gaps_are_the_missing_runs_of_a_range() {
        let mut s = RangeSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.first_gap(0, 50), Some((0, 10)));
        assert_eq!(s.first_gap(12, 50), Some((20, 30)));
        assert_eq!(s.first_gap(20, 25), Some((20, 25)));
        assert_eq!(s.first_gap(35, 40), None);
        assert_eq!(s.first_gap(35, 45), Some((40, 45)));
        s.forget_below(30);
        assert_eq!(s.iter_descending().collect::<Vec<_>>(), vec![(30, 40)]);
        s.forget_below(35);
        assert_eq!(s.len(), 1, "a range reaching above the bound stays whole");
    }

    proptest::proptest! {
        /// Whatever the set, walking a range by `first_gap` visits exactly its missing values, in
        /// order, each run as long as it can be.
        #[test]
        fn gaps_are_the_values_a_set_lacks(spans in proptest::collection::vec((0u64..200, 0u64..20), 0..30),
                                           from in 0u64..250, len in 0u64..100) {
            let mut ranges = RangeSet::new();
            for &(start, n) in &spans {
                ranges.insert(start, start + n);
            }
            let to = from + len;
            let (mut at, mut walked) = (from, Vec::new());
            while let Some((start, end)) = ranges.first_gap(at, to) {
                assert!(at <= start && start < end && end <= to);
                assert!(start == from || ranges.contains(start - 1), "a run starts after a held value");
                assert!(end == to || ranges.contains(end), "a run ends at a held value");
                walked.extend(start..end);
                at = end;
            }
            let missing: Vec<u64> = (from..to).filter(|&v| !ranges.contains(v)).collect();
            assert_eq!(walked, missing);
        }

        /// Whatever the order of insertions, the set holds exactly the values inserted, each
        /// insertion counts only the new ones, and the ranges stay sorted, disjoint and apart.
        #[test]
        fn insertions_agree_with_a_set_of_values(spans in proptest::collection::vec((0u64..300, 0u64..20), 1..60)) {
            let mut ranges = RangeSet::new();
            let mut values = std::collections::BTreeSet::new();
            for (start, len) in spans {
                let new = (start..start + len).filter(|v| values.insert(*v)).count() as u64;
                assert_eq!(ranges.insert(start, start + len), new);
                let listed: Vec<(u64, u64)> = ranges.iter_descending().collect();
                assert!(listed.windows(2).all(|w| w[1].1 < w[0].0), "sorted, disjoint, not adjacent: {listed:?}");
                let held: Vec<u64> = listed.iter().rev().flat_map(|&(s, e)| s..e).collect();
                assert!(held.iter().eq(values.iter()), "{listed:?}");
            }
        }
    }
}
