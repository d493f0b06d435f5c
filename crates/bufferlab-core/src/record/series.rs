//! One recorded quantity of many sampled entities, in one buffer laid out as its table's column.
//!
//! The result's time-series tables are entity-major (every sample of row 0, then of row 1, ...),
//! and that is how the samples are kept while the run goes on. A row need not hold every sample
//! of the run: row `r` begins at the run's sample `first[r]` (an entity sampled only from the
//! sample before it starts: `TimeSeries::new`) and goes on to the last, so its samples are a
//! suffix of the run's. With room for `stride` samples, row `r` holds `stride - first[r]` of
//! them (none if it begins at or after `stride`), right after row `r - 1`'s; its sample `k`
//! (of the run's) sits at `offset[r] + k - first[r]`. A run that takes exactly `stride` samples
//! hands the buffer over as the table's column as it is (`into_column`, then Arrow's array over
//! the same allocation); one that ends early closes the gaps in place. A `Vec` per row would need
//! a second, concatenated copy of every series when the result crosses into Python: fresh memory,
//! and its page faults, the size of the series.
//!
//! The buffer is allocated zeroed, which the allocator takes from the kernel as untouched pages
//! for a large series: the memory is touched once, by the samples written into it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::{Index, Range};
use std::sync::Arc;

/// Serialized as its rows (a list of lists of samples), so that a result written by
/// `examples/run_spec` keeps one list of samples per row.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Each row's samples from its first on, row after row (see the module documentation).
    values: Vec<u64>,
    /// The run's sample each row begins at; the series of one kind of entity share it.
    first: Arc<[usize]>,
    /// Where each row begins in `values` at the current stride, and (last) the end of the rows.
    offset: Arc<[usize]>,
    stride: usize,
    samples: usize,
}

/// Where each row of rows beginning at `first` begins with room for `stride` samples, and the
/// end of the last: `first.len() + 1` offsets.
fn offsets(first: &[usize], stride: usize) -> Arc<[usize]> {
    let mut end = 0;
    let mut out = Vec::with_capacity(first.len() + 1);
    out.push(0);
    for &f in first {
        end += stride.saturating_sub(f);
        out.push(end);
    }
    out.into()
}

impl Series {
    /// A series of `rows` rows, each holding every sample, with no samples and no room reserved.
    pub fn with_rows(rows: usize) -> Series {
        Series::beginning_at(vec![0; rows].into())
    }

    /// A series of one row per entry of `first`, the row beginning at that sample of the run
    /// (shared by the series of one kind of entity), with no samples and no room reserved.
    pub fn beginning_at(first: Arc<[usize]>) -> Series {
        let offset = offsets(&first, 0);
        Series { values: Vec::new(), first, offset, stride: 0, samples: 0 }
    }

    /// Rows (sampled entities).
    pub fn len(&self) -> usize {
        self.first.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// Samples the run has taken (the rows beginning at sample 0 hold them all).
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The run's sample each row begins at.
    pub fn first_samples(&self) -> &[usize] {
        &self.first
    }

    /// The run's samples row `row` holds (empty if it begins after the last sample taken).
    pub fn sample_range(&self, row: usize) -> Range<usize> {
        let first = self.first[row].min(self.samples);
        first..self.samples
    }

    /// One more row holding every sample (its samples so far zero); rows are added before the
    /// run's first sample.
    pub fn add_row(&mut self) {
        let mut first = self.first.to_vec();
        first.push(0);
        self.first = first.into();
        self.offset = offsets(&self.first, self.stride);
        self.values.resize(self.offset[self.len()], 0);
    }

    /// Room for `samples` samples in every row, so that no sample up to there moves the series
    /// (see the module documentation). Call before the first sample.
    pub fn reserve_samples(&mut self, samples: usize) {
        if samples > self.stride {
            self.relayout(samples);
        }
    }

    /// Open the next sample of every row: `set` then writes each row's value. A sample beyond
    /// the room reserved doubles the room (one copy of the series; a run's sampling instants
    /// are known ahead, so this happens only past the engine's reservation cap).
    pub fn begin_sample(&mut self) {
        if self.samples == self.stride {
            self.relayout((2 * self.stride).max(16));
        }
        self.samples += 1;
    }

    /// Whether row `row` holds the sample opened last (it begins at or before it).
    #[inline]
    pub fn holds_sample(&self, row: usize) -> bool {
        self.first[row] < self.samples
    }

    /// Row `row`'s value at the sample opened last (`begin_sample`); the row must hold it.
    #[inline]
    pub fn set(&mut self, row: usize, value: u64) {
        self.set_at(self.position(row), value);
    }

    /// Where row `row`'s value at the sample opened last goes in the buffer (the row must hold
    /// it: `holds_sample`). Series that took the same rows, reservations and samples share their
    /// layout (`same_layout`), so a recorder setting one row of several of them finds the place
    /// once (`set_at`).
    #[inline]
    pub fn position(&self, row: usize) -> usize {
        debug_assert!(row < self.len() && self.holds_sample(row));
        self.offset[row] + self.samples - 1 - self.first[row]
    }

    /// Set the value at `position` (from [`Series::position`] of this series or of one of the
    /// same layout).
    #[inline]
    pub fn set_at(&mut self, position: usize, value: u64) {
        self.values[position] = value;
    }

    /// Both series place every row's samples alike.
    pub fn same_layout(&self, other: &Series) -> bool {
        (self.stride, self.samples) == (other.stride, other.samples)
            && (Arc::ptr_eq(&self.first, &other.first) || self.first == other.first)
    }

    /// Row `row`'s samples, from its first (`sample_range`).
    pub fn row(&self, row: usize) -> &[u64] {
        let start = self.offset[row];
        &self.values[start..start + self.sample_range(row).len()]
    }

    /// Row `row`'s value at the run's sample `sample`, if the row holds it.
    pub fn at(&self, row: usize, sample: usize) -> Option<u64> {
        let range = self.sample_range(row);
        range.contains(&sample).then(|| self.row(row)[sample - range.start])
    }

    /// The rows one after the other.
    pub fn iter(&self) -> impl Iterator<Item = &[u64]> {
        (0..self.len()).map(|row| self.row(row))
    }

    /// Every row's samples one after the other: the table's column. The buffer itself, its gaps
    /// closed in place if the run took fewer samples than reserved.
    pub fn into_column(mut self) -> Vec<u64> {
        let mut end = 0;
        if self.samples < self.stride {
            // Each row moves towards the front (its new place is never after its old one).
            for row in 0..self.len() {
                let (start, len) = (self.offset[row], self.sample_range(row).len());
                self.values.copy_within(start..start + len, end);
                end += len;
            }
        } else {
            end = self.offset.last().copied().unwrap_or(0);
        }
        self.values.truncate(end);
        self.values
    }

    /// Move the rows to a stride of `stride` samples (a new buffer).
    fn relayout(&mut self, stride: usize) {
        let offset = offsets(&self.first, stride);
        let mut values = vec![0; offset[self.len()]];
        for row in 0..self.len() {
            let samples = self.row(row);
            values[offset[row]..offset[row] + samples.len()].copy_from_slice(samples);
        }
        self.values = values;
        self.offset = offset;
        self.stride = stride;
    }
}

impl Index<usize> for Series {
    type Output = [u64];

    fn index(&self, row: usize) -> &[u64] {
        self.row(row)
    }
}

/// Equal rows and samples, whatever room either had reserved.
impl PartialEq for Series {
    fn eq(&self, other: &Series) -> bool {
        self.len() == other.len() && self.samples == other.samples && self.iter().eq(other.iter())
    }
}

impl Serialize for Series {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Series {
    /// Rows that end together (the samples of one run): a shorter row begins later, at the
    /// sample that makes it end with the longest.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Series, D::Error> {
        let rows = Vec::<Vec<u64>>::deserialize(deserializer)?;
        let samples = rows.iter().map(Vec::len).max().unwrap_or(0);
        let first: Arc<[usize]> = rows.iter().map(|row| samples - row.len()).collect();
        let offset = offsets(&first, samples);
        Ok(Series { values: rows.concat(), first, offset, stride: samples, samples })
    }
}

impl<'a> IntoIterator for &'a Series {
    type Item = &'a [u64];
    type IntoIter = Box<dyn Iterator<Item = &'a [u64]> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rows` rows, `samples` samples each, row r's k-th sample 100 r + k, with `reserved` room.
    fn filled(rows: usize, samples: usize, reserved: usize) -> Series {
        let mut series = Series::with_rows(rows);
        series.reserve_samples(reserved);
        for k in 0..samples {
            series.begin_sample();
            for r in 0..rows {
                series.set(r, (100 * r + k) as u64);
            }
        }
        series
    }

    fn expected(rows: usize, samples: usize) -> Vec<u64> {
        (0..rows).flat_map(|r| (0..samples).map(move |k| (100 * r + k) as u64)).collect()
    }

    #[test]
    fn a_run_that_takes_the_reserved_samples_hands_over_its_buffer_as_the_column() {
        let series = filled(3, 5, 5);
        let before = series.values.as_ptr();
        let column = series.into_column();
        assert_eq!(column, expected(3, 5));
        assert_eq!(column.as_ptr(), before, "the buffer itself, not a copy");
    }

    #[test]
    fn a_run_that_ends_early_closes_the_gaps_in_place() {
        let series = filled(4, 3, 10);
        assert_eq!(series.row(2), &[200, 201, 202]);
        let before = series.values.as_ptr();
        let column = series.into_column();
        assert_eq!(column, expected(4, 3));
        assert_eq!(column.as_ptr(), before);
    }

    #[test]
    fn samples_beyond_the_reserved_room_keep_every_row_in_order() {
        for reserved in [0, 1, 7] {
            let series = filled(3, 40, reserved);
            assert_eq!(series.samples(), 40);
            assert_eq!(series.iter().map(<[u64]>::to_vec).collect::<Vec<_>>().concat(), expected(3, 40));
            assert_eq!(series.into_column(), expected(3, 40));
        }
    }

    #[test]
    fn rows_added_before_sampling_are_rows_like_the_others() {
        let mut series = Series::with_rows(1);
        series.reserve_samples(4);
        series.add_row();
        series.add_row();
        for k in 0..4 {
            series.begin_sample();
            for r in 0..3 {
                series.set(r, (100 * r + k) as u64);
            }
        }
        assert_eq!(series.len(), 3);
        assert_eq!(series.into_column(), expected(3, 4));
    }

    #[test]
    fn it_is_written_and_read_as_its_rows() {
        let series = filled(2, 3, 10);
        let text = serde_json::to_string(&series).expect("serializable");
        assert_eq!(text, serde_json::to_string(&[[0, 1, 2], [100, 101, 102]]).expect("serializable"));
        assert_eq!(serde_json::from_str::<Series>(&text).expect("readable"), series);
    }

    /// Rows beginning at `first`, `samples` samples taken, row r's value at the run's sample k
    /// 100 r + k, with `reserved` room.
    fn ragged(first: &[usize], samples: usize, reserved: usize) -> Series {
        let mut series = Series::beginning_at(first.into());
        series.reserve_samples(reserved);
        for k in 0..samples {
            series.begin_sample();
            for r in 0..first.len() {
                if series.holds_sample(r) {
                    series.set(r, (100 * r + k) as u64);
                }
            }
        }
        series
    }

    fn ragged_expected(first: &[usize], samples: usize) -> Vec<u64> {
        (0..first.len()).flat_map(|r| (first[r].min(samples)..samples).map(move |k| (100 * r + k) as u64)).collect()
    }

    #[test]
    fn a_row_that_begins_later_holds_only_the_samples_from_its_first_on() {
        let first = [0, 3, 1, 9, 5];
        let series = ragged(&first, 6, 6);
        assert_eq!(series.row(1), &[103, 104, 105]);
        assert_eq!(series.row(3), &[] as &[u64], "a row beginning after the last sample holds none");
        assert_eq!(series.sample_range(4), 5..6);
        assert_eq!((series.at(1, 4), series.at(1, 2), series.at(4, 5)), (Some(104), None, Some(405)));
        // Rows of 6, 3, 5, 0 and 1 samples: no room for the samples before a row's first.
        assert_eq!(series.values.len(), 15);
        let before = series.values.as_ptr();
        let column = series.into_column();
        assert_eq!(column, ragged_expected(&first, 6));
        assert_eq!(column.as_ptr(), before, "the buffer itself, not a copy");
    }

    #[test]
    fn rows_that_begin_later_close_their_gaps_and_grow_past_the_room_like_the_others() {
        let first = [2, 0, 4, 1];
        for (samples, reserved) in [(3, 10), (5, 5), (40, 7), (30, 0)] {
            let series = ragged(&first, samples, reserved);
            assert_eq!(
                series.iter().map(<[u64]>::to_vec).collect::<Vec<_>>().concat(),
                ragged_expected(&first, samples)
            );
            assert_eq!(
                series.into_column(),
                ragged_expected(&first, samples),
                "{samples} samples, {reserved} reserved"
            );
        }
    }

    #[test]
    fn rows_that_begin_later_are_read_back_ending_with_the_longest() {
        let series = ragged(&[0, 2, 1], 4, 4);
        let text = serde_json::to_string(&series).expect("serializable");
        assert_eq!(text, "[[0,1,2,3],[102,103],[201,202,203]]");
        let back = serde_json::from_str::<Series>(&text).expect("readable");
        assert_eq!(back, series);
        assert_eq!(back.first_samples(), &[0, 2, 1]);
    }

    #[test]
    fn equality_compares_the_samples_not_the_room_reserved() {
        assert_eq!(filled(2, 6, 6), filled(2, 6, 50));
        assert_ne!(filled(2, 6, 6), filled(2, 5, 6));
        assert_ne!(filled(2, 6, 6), filled(3, 6, 6));
    }
}
