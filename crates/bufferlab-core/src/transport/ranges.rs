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
        // Common case first: appending at (or beyond) the highest range.
        if let Some(last) = self.ranges.back_mut() {
            if start >= last.0 && start <= last.1 {
                let added = end.saturating_sub(last.1);
                last.1 = last.1.max(end);
                return added;
            }
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

    proptest::proptest! {
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
