//! One recorded quantity of many sampled entities, in one buffer laid out as its table's column.
//!
//! The result's time-series tables are entity-major (every sample of row 0, then of row 1, ...),
//! and that is how the samples are kept while the run goes on: row `r`'s sample `k` sits at
//! `r * stride + k`, where the stride is the number of samples the run is expected to take. A
//! run that takes exactly that many hands the buffer over as the table's column as it is
//! (`into_column`, then Arrow's array over the same allocation); one that ends early closes the
//! gaps in place. A `Vec` per row would need a second, concatenated copy of every series when
//! the result crosses into Python: fresh memory, and its page faults, the size of the series.
//!
//! The buffer is allocated zeroed, which the allocator takes from the kernel as untouched pages
//! for a large series: the memory is touched once, by the samples written into it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::Index;

/// Serialized as its rows (a list of lists of samples), so that a result written by
/// `examples/run_spec` keeps one list of samples per row.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// `rows * stride` values, row-major; only the first `samples` of each row are recorded.
    values: Vec<u64>,
    rows: usize,
    stride: usize,
    samples: usize,
}

impl Series {
    /// A series of `rows` rows with no samples and no room reserved.
    pub fn with_rows(rows: usize) -> Series {
        Series { rows, ..Series::default() }
    }

    /// Rows (sampled entities).
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Samples recorded in each row.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// One more row (its samples so far zero); rows are added before the run's first sample.
    pub fn add_row(&mut self) {
        self.rows += 1;
        self.values.resize(self.rows * self.stride, 0);
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

    /// Row `row`'s value at the sample opened last (`begin_sample`).
    #[inline]
    pub fn set(&mut self, row: usize, value: u64) {
        self.set_at(self.position(row), value);
    }

    /// Where row `row`'s value at the sample opened last goes in the buffer. Series that took
    /// the same rows, reservations and samples share their layout (`same_layout`), so a
    /// recorder setting one row of several of them finds the place once (`set_at`).
    #[inline]
    pub fn position(&self, row: usize) -> usize {
        debug_assert!(row < self.rows && self.samples > 0);
        row * self.stride + self.samples - 1
    }

    /// Set the value at `position` (from [`Series::position`] of this series or of one of the
    /// same layout).
    #[inline]
    pub fn set_at(&mut self, position: usize, value: u64) {
        self.values[position] = value;
    }

    /// Both series place every row's samples alike.
    pub fn same_layout(&self, other: &Series) -> bool {
        (self.rows, self.stride, self.samples) == (other.rows, other.stride, other.samples)
    }

    /// Row `row`'s samples.
    pub fn row(&self, row: usize) -> &[u64] {
        let start = row * self.stride;
        &self.values[start..start + self.samples]
    }

    /// The rows one after the other.
    pub fn iter(&self) -> impl Iterator<Item = &[u64]> {
        (0..self.rows).map(|row| self.row(row))
    }

    /// Every row's samples one after the other, `rows * samples` values: the table's column.
    /// The buffer itself, its gaps closed in place if the run took fewer samples than reserved.
    pub fn into_column(mut self) -> Vec<u64> {
        if self.samples < self.stride {
            for row in 1..self.rows {
                let start = row * self.stride;
                self.values.copy_within(start..start + self.samples, row * self.samples);
            }
        }
        self.values.truncate(self.rows * self.samples);
        self.values
    }

    /// Move the rows to a stride of `stride` samples (a new buffer).
    fn relayout(&mut self, stride: usize) {
        let mut values = vec![0; self.rows * stride];
        for row in 0..self.rows {
            values[row * stride..row * stride + self.samples].copy_from_slice(self.row(row));
        }
        self.values = values;
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
        self.rows == other.rows && self.samples == other.samples && self.iter().eq(other.iter())
    }
}

impl Serialize for Series {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Series {
    /// Rows of equal length (the samples of one run); rows of unequal length are refused.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Series, D::Error> {
        let rows = Vec::<Vec<u64>>::deserialize(deserializer)?;
        let samples = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|row| row.len() != samples) {
            return Err(serde::de::Error::custom("the rows of a series have different numbers of samples"));
        }
        Ok(Series { rows: rows.len(), stride: samples, samples, values: rows.concat() })
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
        assert!(serde_json::from_str::<Series>("[[1, 2], [3]]").is_err());
    }

    #[test]
    fn equality_compares_the_samples_not_the_room_reserved() {
        assert_eq!(filled(2, 6, 6), filled(2, 6, 50));
        assert_ne!(filled(2, 6, 6), filled(2, 5, 6));
        assert_ne!(filled(2, 6, 6), filled(3, 6, 6));
    }
}
