//! Delay distributions: a log-linear histogram over nanoseconds, and the sparse form a run's
//! result keeps of it.
//!
//! The buckets are those of an HDR histogram (Tene's High Dynamic Range histogram): the values
//! below 2^S are counted one by one, and each octave [2^k, 2^(k+1)) above is split into 2^S
//! equal sub-buckets of width 2^(k−S). A bucket is therefore never wider than 2^−S of the
//! smallest value in it, whatever the scale: a sojourn of 3 µs and one of 3 s are known to the
//! same relative precision, in a fixed number of counters (every u64 is covered: 2^S exact
//! values and 64 − S octaves).
//!
//! With S = 5 (32 sub-buckets per octave, 1,920 counters in all), a quantile is reported as the
//! midpoint of the bucket its rank falls in, so it is within half a bucket of the exact order
//! statistic: a relative error of at most 2^−(S+1) = 1/64 ≈ 1.6 % (none below 32 ns, where
//! buckets are single values). The count, the smallest and the largest value are exact; the
//! buckets at either end are narrowed to them, so that a distribution of one value reports that
//! value exactly.
//!
//! Recording is O(1) (a leading-zero count, a shift, an add): a queue can record every packet it
//! sends. The counters are allocated an octave at a time, when a value first falls in it
//! ([`DelayHistogram`]: a few kB where every counter would be 15 kB), and a channel makes its
//! histogram when it first sees a packet wait (`net::channel`), so that the many links that
//! never queue hold none.
//!
//! What a run's result keeps is the sparse form, [`Distribution`]: the non-empty buckets in
//! increasing order, each with the range of values it holds (inclusive, narrowed to the exact
//! smallest and largest value) and its count. The store keeps the same rows
//! (`delay_histograms`), and the metric catalogue's percentiles are computed from them
//! ([`Distribution::quantile`]), so a percentile read back from a store is the one the run
//! reported.

use serde::{Deserialize, Serialize};

/// log2 of the sub-buckets per octave.
pub const SUB_BUCKET_BITS: u32 = 5;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
/// Counters of a histogram: 2^S exact values, then 2^S sub-buckets for each octave 2^S ≤ v < 2^64.
pub const BUCKETS: usize = ((64 - SUB_BUCKET_BITS as usize) + 1) << SUB_BUCKET_BITS;
/// The largest relative error of a reported quantile: half a bucket, 2^−(S+1).
pub const RELATIVE_ERROR: f64 = 1.0 / (2 << SUB_BUCKET_BITS) as f64;

/// The counter of `value`.
#[inline]
pub fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return value as usize;
    }
    let octave = 63 - value.leading_zeros(); // ≥ S
    let shift = octave - SUB_BUCKET_BITS;
    // (value >> shift) is in [2^S, 2^(S+1)): the sub-bucket plus 2^S.
    ((shift as usize + 1) << SUB_BUCKET_BITS) + ((value >> shift) - SUB_BUCKETS) as usize
}

/// The values counter `bucket` holds: [lower, upper], inclusive.
pub fn bucket_range(bucket: usize) -> (u64, u64) {
    let bucket = bucket as u64;
    if bucket < SUB_BUCKETS {
        return (bucket, bucket);
    }
    let shift = (bucket >> SUB_BUCKET_BITS) - 1;
    let sub = bucket & (SUB_BUCKETS - 1);
    let lower = (SUB_BUCKETS + sub) << shift;
    (lower, lower + ((1_u64 << shift) - 1))
}

/// One non-empty bucket of a distribution: `count` values in [lower_ns, upper_ns] (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub lower_ns: u64,
    pub upper_ns: u64,
    pub count: u64,
}

/// A delay distribution as its non-empty buckets in increasing order, the first and the last
/// narrowed to the exact smallest and largest value (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    pub buckets: Vec<Bucket>,
}

impl Distribution {
    /// `count` values, all equal to `value`.
    pub fn constant(value: u64, count: u64) -> Distribution {
        let buckets = if count == 0 { Vec::new() } else { vec![Bucket { lower_ns: value, upper_ns: value, count }] };
        Distribution { buckets }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// The q-quantile (0 ≤ q ≤ 1) in ns: the midpoint of the bucket that holds the ⌈q·n⌉-th
    /// smallest value (the smallest for q = 0), within [`RELATIVE_ERROR`] of it. None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        quantile(&self.buckets, q)
    }

    /// Heap held (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }
}

/// The q-quantile of a distribution given by its buckets in increasing order (the rows of a
/// store's `delay_histograms`, or a [`Distribution`]'s): see [`Distribution::quantile`].
pub fn quantile(buckets: &[Bucket], q: f64) -> Option<f64> {
    let count: u64 = buckets.iter().map(|b| b.count).sum();
    quantile_of(buckets.iter().copied(), count, q)
}

/// The q-quantile of `count` values in `buckets` (in increasing order).
fn quantile_of(buckets: impl Iterator<Item = Bucket>, count: u64, q: f64) -> Option<f64> {
    if count == 0 {
        return None;
    }
    // The rank of the order statistic, 1-based: the smallest value with at least q·n at or below it.
    let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).clamp(1, count);
    let mut seen = 0;
    for b in buckets {
        seen += b.count;
        if seen >= rank {
            // The midpoint, without overflowing near u64::MAX.
            return Some(b.lower_ns as f64 + (b.upper_ns - b.lower_ns) as f64 / 2.0);
        }
    }
    None
}

/// Octaves of counters: the exact values below 2^S, then one per octave 2^S ≤ v < 2^64.
const OCTAVES: usize = BUCKETS >> SUB_BUCKET_BITS;
/// The 2^S counters of one octave.
type Block = [u64; SUB_BUCKETS as usize];

/// A log-linear histogram of delays in ns (see the module documentation).
///
/// Its counters are kept an octave at a time: a block of 2^S counters for each octave that holds
/// a value, made when the first value falls in it. A queue's sojourns span a few octaves (an
/// access link's bursts, tens of µs to a ms: 5 or 6; a bottleneck's, µs to seconds: up to 20),
/// so a histogram holds 1.5 to 5 kB instead of the 15 kB of every counter. Recording allocates
/// only when a value falls in an octave none did before (at most 60 times in a histogram's life,
/// the first few as the run starts), never once the octaves in use are known.
#[derive(Debug, Clone)]
pub struct DelayHistogram {
    /// For each octave, 1 + the position of its block in `blocks`; 0 while it holds no value.
    slots: [u8; OCTAVES],
    blocks: Vec<Block>,
    count: u64,
    min: u64,
    max: u64,
}

/// Two histograms are equal when they counted the same values: their blocks may have been made
/// in different orders.
impl PartialEq for DelayHistogram {
    fn eq(&self, other: &Self) -> bool {
        (self.count, self.min(), self.max()) == (other.count, other.min(), other.max())
            && self.buckets().eq(other.buckets())
    }
}

impl Eq for DelayHistogram {}

impl Default for DelayHistogram {
    fn default() -> Self {
        DelayHistogram::new()
    }
}

impl DelayHistogram {
    /// Blocks made room for at once: the octaves of a typical queue.
    const INITIAL_BLOCKS: usize = 6;

    /// An empty histogram, with room for the blocks of a few octaves.
    pub fn new() -> DelayHistogram {
        DelayHistogram {
            slots: [0; OCTAVES],
            blocks: Vec::with_capacity(Self::INITIAL_BLOCKS),
            count: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Count one value.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Count `n` values equal to `ns`.
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        // `bucket_of` is below BUCKETS for every u64; the `min` says so without a panic path.
        let bucket = bucket_of(ns).min(BUCKETS - 1);
        let block = self.block_mut(bucket >> SUB_BUCKET_BITS);
        block[bucket & (SUB_BUCKETS as usize - 1)] += n;
        self.count += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// The counters of `octave`, made if it has none yet.
    #[inline]
    fn block_mut(&mut self, octave: usize) -> &mut Block {
        let slot = self.slots[octave];
        if slot == 0 {
            return self.new_block(octave);
        }
        &mut self.blocks[slot as usize - 1]
    }

    #[cold]
    #[inline(never)]
    fn new_block(&mut self, octave: usize) -> &mut Block {
        self.blocks.push([0; SUB_BUCKETS as usize]);
        // At most OCTAVES (60) blocks: the slot fits a u8.
        self.slots[octave] = self.blocks.len() as u8;
        let last = self.blocks.len() - 1;
        &mut self.blocks[last]
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value recorded; None when empty.
    pub fn min(&self) -> Option<u64> {
        (self.count != 0).then_some(self.min)
    }

    /// The largest value recorded; None when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count != 0).then_some(self.max)
    }

    /// Add every value `other` recorded.
    pub fn merge(&mut self, other: &DelayHistogram) {
        for (octave, &slot) in other.slots.iter().enumerate() {
            if slot != 0 {
                let theirs = &other.blocks[slot as usize - 1];
                for (mine, theirs) in self.block_mut(octave).iter_mut().zip(theirs) {
                    *mine += theirs;
                }
            }
        }
        if other.count != 0 {
            self.count += other.count;
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
    }

    /// The non-empty buckets in increasing order, the end ones narrowed to the exact smallest
    /// and largest value.
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        let (min, max) = (self.min, self.max);
        let octaves = self.slots.iter().enumerate().filter(|(_, &slot)| slot != 0);
        octaves
            .flat_map(move |(octave, &slot)| {
                let block = &self.blocks[slot as usize - 1];
                block.iter().enumerate().map(move |(sub, &count)| ((octave << SUB_BUCKET_BITS) + sub, count))
            })
            .filter(|&(_, count)| count != 0)
            .map(move |(i, count)| {
                let (lower, upper) = bucket_range(i);
                Bucket { lower_ns: lower.max(min), upper_ns: upper.min(max), count }
            })
    }

    /// The sparse form a result keeps.
    pub fn distribution(&self) -> Distribution {
        Distribution { buckets: self.buckets().collect() }
    }

    /// The q-quantile in ns (see [`Distribution::quantile`]); None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        quantile_of(self.buckets(), self.count, q)
    }

    /// Heap held by the blocks (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact q-quantile of sorted `values` by the same rank rule.
    fn exact(sorted: &[u64], q: f64) -> f64 {
        let n = sorted.len() as u64;
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        sorted[rank as usize - 1] as f64
    }

    fn within_bound(reported: f64, exact: f64) -> bool {
        (reported - exact).abs() <= RELATIVE_ERROR * exact + 0.5
    }

    #[test]
    fn every_value_falls_in_the_bucket_whose_range_holds_it() {
        let mut values: Vec<u64> = (0..200).collect();
        for k in 5..64 {
            let p = 1_u64 << k;
            values.extend([p - 1, p, p + 1, p + (p >> 1), p.wrapping_mul(2).wrapping_sub(1)]);
        }
        values.push(u64::MAX);
        for v in values {
            let b = bucket_of(v);
            assert!(b < BUCKETS, "{v}");
            let (lower, upper) = bucket_range(b);
            assert!(lower <= v && v <= upper, "{v} not in [{lower}, {upper}]");
            // A bucket is at most 2^-S of its lower bound wide.
            assert!((upper - lower) as f64 <= lower as f64 / SUB_BUCKETS as f64, "{v}");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_range(BUCKETS - 1).1, u64::MAX);
    }

    #[test]
    fn the_buckets_tile_the_values_without_gap_or_overlap() {
        for b in 1..BUCKETS {
            assert_eq!(bucket_range(b - 1).1 + 1, bucket_range(b).0, "{b}");
        }
    }

    #[test]
    fn quantiles_of_a_uniform_and_an_exponential_sample_are_within_the_stated_bound() {
        use rand_core::{RngCore, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        // Uniform over 0..10 ms, and exponential of mean 2 ms (inverse transform of a uniform in (0, 1]).
        let uniform: Vec<u64> = (0..100_000).map(|_| rng.next_u64() % 10_000_000).collect();
        let mut unit = || ((rng.next_u64() >> 11) + 1) as f64 / (1_u64 << 53) as f64;
        let exponential: Vec<u64> = (0..100_000).map(|_| (-unit().ln() * 2_000_000.0) as u64).collect();
        for mut values in [uniform, exponential] {
            let mut h = DelayHistogram::new();
            for &v in &values {
                h.record(v);
            }
            values.sort_unstable();
            assert_eq!(h.count(), values.len() as u64);
            assert_eq!((h.min(), h.max()), (values.first().copied(), values.last().copied()));
            let sparse = h.distribution();
            for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
                let (reported, truth) = (h.quantile(q).unwrap(), exact(&values, q));
                assert!(within_bound(reported, truth), "q {q}: {reported} against {truth}");
                assert_eq!(sparse.quantile(q), Some(reported), "the sparse form agrees at {q}");
            }
            // The end buckets are narrowed to the exact extremes.
            let (first, last) = (sparse.buckets[0], sparse.buckets[sparse.buckets.len() - 1]);
            assert_eq!((first.lower_ns, last.upper_ns), (values[0], values[values.len() - 1]));
            assert_eq!(sparse.count(), h.count());
        }
    }

    #[test]
    fn one_repeated_value_is_reported_exactly() {
        let mut h = DelayHistogram::new();
        h.record_n(12_345_678, 1000);
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(h.quantile(q), Some(12_345_678.0));
        }
        assert_eq!(h.distribution(), Distribution::constant(12_345_678, 1000));
    }

    #[test]
    fn an_empty_histogram_has_no_quantile_and_no_bucket() {
        let h = DelayHistogram::new();
        assert_eq!((h.count(), h.min(), h.max(), h.quantile(0.5)), (0, None, None, None));
        assert_eq!(h.distribution(), Distribution::default());
        assert_eq!(Distribution::default().quantile(0.99), None);
        assert_eq!(Distribution::constant(5, 0), Distribution::default());
    }

    #[test]
    fn zero_and_days_are_counted_at_the_stated_precision() {
        let day = 86_400 * 1_000_000_000_u64;
        let mut h = DelayHistogram::new();
        h.record_n(0, 3);
        h.record_n(3 * day, 1);
        h.record(u64::MAX);
        assert_eq!((h.min(), h.max(), h.count()), (Some(0), Some(u64::MAX), 5));
        assert_eq!(h.quantile(0.5), Some(0.0));
        let day3 = h.quantile(0.8).unwrap();
        assert!(within_bound(day3, (3 * day) as f64), "{day3}");
        // The largest counts in a bucket of its own, [2^64 − 2^59, 2^64 − 1]: its midpoint.
        assert!(within_bound(h.quantile(1.0).unwrap(), u64::MAX as f64));
        let buckets: Vec<Bucket> = h.buckets().collect();
        assert_eq!(buckets.len(), 3);
        assert_eq!((buckets[0].lower_ns, buckets[0].upper_ns, buckets[0].count), (0, 0, 3));
    }

    #[test]
    fn a_histogram_holds_counters_for_the_octaves_it_has_values_in_only() {
        let mut h = DelayHistogram::new();
        // An access link's bursts: multiples of 12 µs up to 480 µs, five octaves.
        for k in 1..=40_u64 {
            h.record(12_000 * k);
        }
        assert_eq!(h.heap_bytes(), DelayHistogram::INITIAL_BLOCKS * std::mem::size_of::<Block>());
        assert!(h.heap_bytes() <= 1536, "{} bytes", h.heap_bytes());
        let before = h.heap_bytes();
        for k in 1..=40_u64 {
            h.record_n(12_000 * k, 1000);
        }
        assert_eq!(h.heap_bytes(), before, "values in known octaves allocate nothing");
        assert_eq!(h.count(), 40 * 1001);
    }

    #[test]
    fn merging_counts_what_either_histogram_recorded() {
        let (mut a, mut b, mut both) = (DelayHistogram::new(), DelayHistogram::new(), DelayHistogram::new());
        for v in (0..10_000_u64).map(|i| i * 997) {
            if v % 3 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
            both.record(v);
        }
        a.merge(&b);
        assert_eq!(a, both);
        let mut empty = DelayHistogram::new();
        empty.merge(&DelayHistogram::new());
        assert_eq!(empty, DelayHistogram::new());
    }
}
