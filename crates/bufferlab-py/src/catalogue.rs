//! `_core.metric_catalogue`: the catalogue's metrics, units and definitions
//! (`bufferlab_core::metrics::catalogue`), the one list Python's tables are named from
//! (analysis/catalogue.py); `_core.catalogue`: the metric catalogue of a run
//! (`bufferlab_core::metrics`) from its flow, channel and flow time-series tables, for Python's
//! derive step (pipeline/derive.py); and
//! `_core.figures`: the end-of-run figures alone (`metrics::figures`), from the flow table, the
//! channel table or both in one call, for the run summary (analysis/summary.py) and derive's
//! summary columns. The tables' columns are read in place (the series without a copy); the
//! computation runs without the GIL; the result comes back as Python lists by column (None where
//! a metric is undefined).

use std::borrow::Cow;
use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use bufferlab_core::metrics::{
    self, Catalogue, ChannelFigures, FlowFigures, FlowSamples, FlowSeries, RunFacts, Segment,
};
use bufferlab_core::record::result::{Bucket, ChannelRecord, Distribution, FlowRecord};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::Table;

/// Why a table cannot be read: its name, the column and the reason.
type ReadError = String;

/// An unsigned integer column's values (a null or a missing column counts 0, as the records'
/// `get(name) or 0` did): the engine's UInt64 in place, other integer types converted.
fn counts<'a>(batch: &'a RecordBatch, name: &str) -> Result<Cow<'a, [u64]>, ReadError> {
    let Some(array) = batch.column_by_name(name) else { return Ok(Cow::Owned(vec![0; batch.num_rows()])) };
    let widen = |values: Vec<Option<u64>>| Cow::Owned(values.into_iter().map(Option::unwrap_or_default).collect());
    Ok(match array.data_type() {
        DataType::UInt64 if array.null_count() == 0 => Cow::Borrowed(array.as_primitive::<UInt64Type>().values()),
        DataType::UInt64 => widen(array.as_primitive::<UInt64Type>().iter().collect()),
        DataType::UInt32 => widen(array.as_primitive::<UInt32Type>().iter().map(|v| v.map(u64::from)).collect()),
        DataType::Int64 => {
            widen(array.as_primitive::<Int64Type>().iter().map(|v| v.map(|x| x.max(0) as u64)).collect())
        }
        DataType::Int32 => {
            widen(array.as_primitive::<Int32Type>().iter().map(|v| v.map(|x| x.max(0) as u64)).collect())
        }
        other => return Err(format!("column {name:?}: {other} is not an unsigned count")),
    })
}

/// A nullable integer column (None for a null or a missing column).
fn optional_counts(batch: &RecordBatch, name: &str) -> Result<Vec<Option<u64>>, ReadError> {
    let Some(array) = batch.column_by_name(name) else { return Ok(vec![None; batch.num_rows()]) };
    let values = counts(batch, name)?;
    Ok((0..array.len()).map(|i| array.is_valid(i).then(|| values[i])).collect())
}

/// A 128-bit counter (Decimal128(38, 0)), or an integer column.
fn wide_counts(batch: &RecordBatch, name: &str) -> Result<Vec<u128>, ReadError> {
    match batch.column_by_name(name).map(|a| (a.data_type().clone(), a)) {
        Some((DataType::Decimal128(_, 0), array)) => {
            Ok(array.as_primitive::<Decimal128Type>().iter().map(|v| v.unwrap_or(0).max(0) as u128).collect())
        }
        _ => Ok(counts(batch, name)?.iter().map(|&v| u128::from(v)).collect()),
    }
}

/// A flow's path: List<UInt32> (polars: LargeList; a missing column: no paths).
fn paths(batch: &RecordBatch) -> Result<Vec<Vec<usize>>, ReadError> {
    let Some(array) = batch.column_by_name("path") else { return Ok(vec![Vec::new(); batch.num_rows()]) };
    let items = |list: Option<ArrayRef>| -> Result<Vec<usize>, ReadError> {
        let Some(items) = list else { return Ok(Vec::new()) };
        match items.data_type() {
            DataType::UInt32 => Ok(items.as_primitive::<UInt32Type>().iter().flatten().map(|c| c as usize).collect()),
            DataType::Int64 => Ok(items.as_primitive::<Int64Type>().iter().flatten().map(|c| c as usize).collect()),
            other => Err(format!("column \"path\": items of {other}")),
        }
    };
    match array.data_type() {
        DataType::List(_) => array.as_list::<i32>().iter().map(items).collect(),
        DataType::LargeList(_) => array.as_list::<i64>().iter().map(items).collect(),
        other => Err(format!("column \"path\": {other} is not a list")),
    }
}

/// The flow records the catalogue reads (the counters it needs).
fn flow_records(batch: &RecordBatch) -> Result<Vec<FlowRecord>, ReadError> {
    let u = |name: &str| counts(batch, name);
    let (start, acked, delivered, sent, payload, written) = (
        u("start_ns")?,
        u("bytes_acked")?,
        u("bytes_delivered")?,
        u("segments_sent")?,
        u("payload_bytes_sent")?,
        u("app_bytes_written")?,
    );
    let (retransmitted, rtos, episodes, recovery, samples, rtt_sum) = (
        u("segments_retransmitted")?,
        u("rtos")?,
        u("recovery_episodes")?,
        u("recovery_time_ns")?,
        u("rtt_samples")?,
        u("rtt_sum_ns")?,
    );
    let (completed, min_rtt) = (optional_counts(batch, "completed_ns")?, optional_counts(batch, "min_rtt_ns")?);
    // Absent from the results of engines before ECN (read as zero, as every absent counter).
    let (ce_received, ecn_responses) = (u("ce_received")?, u("ecn_responses")?);
    let delay = wide_counts(batch, "delivery_delay_byte_ns")?;
    let paths = paths(batch)?;
    Ok((0..batch.num_rows())
        .zip(paths)
        .map(|(i, path)| FlowRecord {
            start_ns: start[i],
            completed_ns: completed[i],
            app_bytes_written: written[i],
            bytes_acked: acked[i],
            bytes_delivered: delivered[i],
            segments_sent: sent[i],
            payload_bytes_sent: payload[i],
            segments_retransmitted: retransmitted[i],
            rtos: rtos[i],
            ce_received: ce_received[i],
            ecn_responses: ecn_responses[i],
            recovery_episodes: episodes[i],
            recovery_time_ns: recovery[i],
            rtt_samples: samples[i],
            rtt_sum_ns: rtt_sum[i],
            min_rtt_ns: min_rtt[i],
            delivery_delay_byte_ns: delay[i],
            path,
            ..FlowRecord::default()
        })
        .collect())
}

/// The channel records the catalogue reads.
fn channel_records(batch: &RecordBatch) -> Result<Vec<ChannelRecord>, ReadError> {
    let u = |name: &str| counts(batch, name);
    let (rate, shaping) = (optional_counts(batch, "rate_bps")?, optional_counts(batch, "shaping_rate_bps")?);
    let (offered, sent, sent_bytes, dropped, lost) = (
        u("offered_packets")?,
        u("sent_packets")?,
        u("sent_bytes")?,
        u("dropped_queue_packets")?,
        u("dropped_loss_packets")?,
    );
    // Absent from the results of engines before CoDel (read as zero, as every absent counter).
    let dropped_aqm = u("dropped_aqm_packets")?;
    let ce_marked = u("ce_marked_packets")?;
    let (busy, sojourn, max_queue) = (u("busy_ns")?, u("sojourn_sum_ns")?, u("max_queue_packets")?);
    let queue = wide_counts(batch, "queue_packet_ns")?;
    Ok((0..batch.num_rows())
        .map(|i| ChannelRecord {
            rate_bps: rate[i],
            shaping_rate_bps: shaping[i],
            offered_packets: offered[i],
            sent_packets: sent[i],
            sent_bytes: sent_bytes[i],
            dropped_queue_packets: dropped[i],
            dropped_loss_packets: lost[i],
            dropped_aqm_packets: dropped_aqm[i],
            ce_marked_packets: ce_marked[i],
            busy_ns: busy[i],
            sojourn_sum_ns: sojourn[i],
            max_queue_packets: max_queue[i],
            queue_packet_ns: queue[i],
            ..ChannelRecord::default()
        })
        .collect())
}

/// The delay distributions of a `delay_histograms` table (subject, id, lower_ns, upper_ns,
/// count; each distribution's rows in increasing order) put into the records they belong to:
/// a channel's sojourn times, a flow's one-way delays.
fn read_distributions(
    batch: &RecordBatch,
    flows: &mut [FlowRecord],
    channels: &mut [ChannelRecord],
) -> Result<(), ReadError> {
    let Some(subjects) = batch.column_by_name("subject") else { return Err("no column \"subject\"".into()) };
    let subjects = match subjects.data_type() {
        DataType::Utf8 => subjects.as_string::<i32>().iter().map(|s| s.unwrap_or_default().to_owned()).collect(),
        DataType::LargeUtf8 => subjects.as_string::<i64>().iter().map(|s| s.unwrap_or_default().to_owned()).collect(),
        DataType::Utf8View => subjects.as_string_view().iter().map(|s| s.unwrap_or_default().to_owned()).collect(),
        other => return Err(format!("column \"subject\": {other} is not text")),
    };
    let subjects: Vec<String> = subjects;
    let (ids, lower, upper, count) =
        (counts(batch, "id")?, counts(batch, "lower_ns")?, counts(batch, "upper_ns")?, counts(batch, "count")?);
    for i in 0..batch.num_rows() {
        let id = ids[i] as usize;
        let distribution = match subjects[i].as_str() {
            "channel" => channels.get_mut(id).map(|c| &mut c.sojourn),
            "flow" => flows.get_mut(id).map(|f| &mut f.one_way_delay),
            other => return Err(format!("row {i}: subject {other:?} is neither \"channel\" nor \"flow\"")),
        };
        let Some(distribution) = distribution else { return Err(format!("row {i}: no {} {id}", subjects[i])) };
        let bucket = Bucket { lower_ns: lower[i], upper_ns: upper[i], count: count[i] };
        distribution.get_or_insert_with(Distribution::default).buckets.push(bucket);
    }
    Ok(())
}

/// The flow series' columns, whole (every row, flow-major).
struct SeriesColumns<'a> {
    /// Each flow's block of rows: its index and its rows' range.
    blocks: Vec<(usize, Range<usize>)>,
    /// The rows of the longest block: its samples are the clock the others end on.
    clock: Range<usize>,
    time_ns: Cow<'a, [u64]>,
    columns: [Cow<'a, [u64]>; 10],
    delivery_rate_bps: Option<Cow<'a, [u64]>>,
}

const SERIES_COLUMNS: [&str; 10] = [
    "acked_bytes",
    "delivered_bytes",
    "sent_bytes",
    "written_bytes",
    "cwnd_bytes",
    "in_flight_bytes",
    "srtt_ns",
    "min_rtt_ns",
    "idt_ewma_ns",
    "delivery_delay_byte_us",
];

impl<'a> SeriesColumns<'a> {
    /// None when no flow was sampled (or no sample taken).
    fn read(batch: &'a RecordBatch) -> Result<Option<Self>, ReadError> {
        if batch.num_rows() == 0 {
            return Ok(None);
        }
        let mut columns = Vec::with_capacity(SERIES_COLUMNS.len());
        for name in SERIES_COLUMNS {
            if batch.column_by_name(name).is_none() {
                return Err(format!("no column {name:?}"));
            }
            columns.push(counts(batch, name)?);
        }
        let columns: [Cow<'a, [u64]>; 10] = columns.try_into().map_err(|_| "series columns".to_string())?;
        let delivery_rate_bps =
            batch.column_by_name("delivery_rate_bps").map(|_| counts(batch, "delivery_rate_bps")).transpose()?;
        let flow = counts(batch, "flow")?;
        let time_ns = counts(batch, "time_ns")?;
        // Flow-major blocks, one per flow, each the run's samples from the flow's first on: the
        // samples of every block end those of the longest (`series` relies on it).
        let mut blocks: Vec<(usize, Range<usize>)> = Vec::new();
        for (row, &f) in flow.iter().enumerate() {
            match blocks.last_mut() {
                Some((last, rows)) if *last as u64 == f => rows.end = row + 1,
                _ => blocks.push((f as usize, row..row + 1)),
            }
        }
        let clock = blocks.iter().map(|(_, rows)| rows.clone()).max_by_key(Range::len).unwrap_or_default();
        let times = &time_ns[clock.clone()];
        if blocks.iter().any(|(_, rows)| !times.ends_with(&time_ns[rows.clone()])) {
            return Err("its flows' samples do not each end those of the flow sampled longest".to_string());
        }
        Ok(Some(SeriesColumns { blocks, clock, time_ns, columns, delivery_rate_bps }))
    }

    /// The table as the catalogue reads it: flow-major blocks of rows, each a flow's samples
    /// from its first on, flows in order of appearance.
    fn series(&self) -> FlowSeries<'_> {
        let rows = self
            .blocks
            .iter()
            .map(|(flow, range)| {
                let c = |k: usize| &self.columns[k][range.clone()];
                let series = FlowSamples {
                    acked_bytes: c(0),
                    delivered_bytes: c(1),
                    sent_bytes: c(2),
                    written_bytes: c(3),
                    cwnd_bytes: c(4),
                    in_flight_bytes: c(5),
                    srtt_ns: c(6),
                    min_rtt_ns: c(7),
                    idt_ewma_ns: c(8),
                    delivery_delay_byte_us: c(9),
                    delivery_rate_bps: self.delivery_rate_bps.as_deref().map(|r| &r[range.clone()]),
                };
                (*flow, series)
            })
            .collect();
        FlowSeries { time_ns: &self.time_ns[self.clock.clone()], rows }
    }
}

/// Everything the catalogue computes from the tables (the GIL released meanwhile).
fn compute(
    flows: &RecordBatch,
    channels: &RecordBatch,
    series: &RecordBatch,
    histograms: Option<&RecordBatch>,
    end_ns: u64,
    segments: &[Segment],
    bottleneck: Option<usize>,
) -> Result<Catalogue, ReadError> {
    let mut flow_records = flow_records(flows).map_err(|e| format!("flows: {e}"))?;
    let mut channel_records = channel_records(channels).map_err(|e| format!("channels: {e}"))?;
    if let Some(histograms) = histograms {
        read_distributions(histograms, &mut flow_records, &mut channel_records)
            .map_err(|e| format!("delay_histograms: {e}"))?;
    }
    if segments.len() < flow_records.len() {
        return Err(format!("{} segments for {} flows", segments.len(), flow_records.len()));
    }
    let columns = SeriesColumns::read(series).map_err(|e| format!("flow_timeseries: {e}"))?;
    let facts = RunFacts {
        end_ns,
        flows: &flow_records,
        channels: &channel_records,
        segments,
        bottleneck,
        series: columns.as_ref().map(SeriesColumns::series),
    };
    Ok(metrics::catalogue(&facts))
}

/// The catalogue's tables by name (flow_metrics, link_metrics, network_metrics), each its metrics
/// in the table's order as (name, unit, definition) (`metrics::catalogue`).
#[pyfunction]
pub fn metric_catalogue(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for (table, metrics) in metrics::catalogue::TABLES {
        out.set_item(table, metrics.iter().map(|m| (m.name, m.unit, m.definition)).collect::<Vec<_>>())?;
    }
    Ok(out)
}

/// The metric catalogue of a run from its `flows`, `channels` and `flow_timeseries` tables, the
/// run's end, each flow's (MSS, header bytes), the bottleneck channel and its
/// `delay_histograms` table (without it, the delay percentiles are null): a dict of
/// `flow_figures`, `channel_figures`, `flow_metrics`, `link_metrics` (each a dict of columns as
/// lists) and `network_metrics` (a dict of values).
#[pyfunction]
#[pyo3(signature = (flows, channels, flow_timeseries, end_ns, segments, bottleneck=None, delay_histograms=None))]
#[allow(clippy::too_many_arguments)]
pub fn catalogue<'py>(
    py: Python<'py>,
    flows: PyRef<'py, Table>,
    channels: PyRef<'py, Table>,
    flow_timeseries: PyRef<'py, Table>,
    end_ns: u64,
    segments: Vec<(u64, u64)>,
    bottleneck: Option<usize>,
    delay_histograms: Option<PyRef<'py, Table>>,
) -> PyResult<Bound<'py, PyDict>> {
    let segments: Vec<Segment> =
        segments.into_iter().map(|(mss, header_bytes)| Segment { mss, header_bytes }).collect();
    let (f, c, s) = (flows.batch(), channels.batch(), flow_timeseries.batch());
    let h = delay_histograms.as_ref().map(|t| t.batch());
    let result = py
        .allow_threads(|| compute(f, c, s, h, end_ns, &segments, bottleneck))
        .map_err(|e| PyValueError::new_err(format!("metric catalogue: {e}")))?;
    to_python(py, result)
}

/// The end-of-run figures of the flows and the channels of a run that ended at `end_ns`, of the
/// tables given only: a dict of `flow_figures` if `flows` is given and `channel_figures` if
/// `channels` is (each a dict of columns as lists, as `catalogue` gives them). Only the counters
/// the figures read are needed: no series, segments or bottleneck.
#[pyfunction]
#[pyo3(signature = (end_ns, *, flows=None, channels=None))]
pub fn figures<'py>(
    py: Python<'py>,
    end_ns: u64,
    flows: Option<PyRef<'py, Table>>,
    channels: Option<PyRef<'py, Table>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (f, c) = (flows.as_ref().map(|t| t.batch()), channels.as_ref().map(|t| t.batch()));
    let (flow_figures, channel_figures) = py
        .allow_threads(|| -> Result<_, ReadError> {
            let flows = f.map(flow_records).transpose().map_err(|e| format!("flows: {e}"))?;
            let channels = c.map(channel_records).transpose().map_err(|e| format!("channels: {e}"))?;
            Ok((
                flows.map(|flows| FlowFigures::of(&flows, end_ns)),
                channels.map(|channels| ChannelFigures::of(&channels, end_ns)),
            ))
        })
        .map_err(|e| PyValueError::new_err(format!("figures: {e}")))?;
    let out = PyDict::new(py);
    if let Some(flow_figures) = flow_figures {
        out.set_item("flow_figures", flow_figures_dict(py, flow_figures)?)?;
    }
    if let Some(channel_figures) = channel_figures {
        out.set_item("channel_figures", channel_figures_dict(py, channel_figures)?)?;
    }
    Ok(out)
}

/// The index of the slowest rate-limited channel of `channels` that sent something
/// (`metrics::slowest_busy_channel`: the run summary's bottleneck where the spec names none);
/// None if every channel is unlimited or idle.
#[pyfunction]
pub fn slowest_busy_channel(py: Python<'_>, channels: PyRef<'_, Table>) -> PyResult<Option<usize>> {
    let batch = channels.batch();
    py.allow_threads(|| channel_records(batch).map(|records| metrics::slowest_busy_channel(&records)))
        .map_err(|e| PyValueError::new_err(format!("slowest busy channel: channels: {e}")))
}

/// Named columns as a dict of lists (the vectors handed over, not copied).
fn columns_dict<'py, T: IntoPyObject<'py>>(
    py: Python<'py>,
    columns: impl IntoIterator<Item = (&'static str, Vec<T>)>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (name, values) in columns {
        out.set_item(name, values)?;
    }
    Ok(out)
}

/// The flow figures by column, as `catalogue` and `figures` return them.
fn flow_figures_dict(py: Python<'_>, f: FlowFigures) -> PyResult<Bound<'_, PyDict>> {
    let out = columns_dict(
        py,
        [
            ("goodput_bps", f.goodput_bps),
            ("loss_rate", f.loss_rate),
            ("mean_srtt_ns", f.mean_srtt_ns),
            ("throughput_l4", f.throughput_l4),
            ("throughput_l7", f.throughput_l7),
            ("sending_rate_l4", f.sending_rate_l4),
            ("sending_rate_l7", f.sending_rate_l7),
            ("one_way_delay_ms", f.one_way_delay_ms),
            ("recovery_time_ms", f.recovery_time_ms),
        ],
    )?;
    out.set_item("lifetime_ns", f.lifetime_ns)?;
    out.set_item("completion_time_ns", f.completion_time_ns)?;
    out.set_item("lifetime_s", f.lifetime_s)?;
    Ok(out)
}

/// The channel figures by column, as `catalogue` and `figures` return them.
fn channel_figures_dict(py: Python<'_>, ch: ChannelFigures) -> PyResult<Bound<'_, PyDict>> {
    let out = columns_dict(
        py,
        [
            ("utilisation", ch.utilisation),
            ("mean_queue_packets", ch.mean_queue_packets),
            ("mean_sojourn_ns", ch.mean_sojourn_ns),
        ],
    )?;
    out.set_item("service_rate_bps", ch.service_rate_bps)?;
    Ok(out)
}

/// The catalogue as `catalogue` returns it (see there), its vectors moved into Python lists.
fn to_python(py: Python<'_>, c: Catalogue) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("flow_figures", flow_figures_dict(py, c.flow_figures)?)?;
    out.set_item("channel_figures", channel_figures_dict(py, c.channel_figures)?)?;
    let flow_metrics = columns_dict(py, c.flow_metrics.columns)?;
    flow_metrics.set_item("delivery_rate_source", c.flow_metrics.delivery_rate_source)?;
    out.set_item("flow_metrics", flow_metrics)?;
    let links = c.link_metrics;
    let link_metrics = columns_dict(py, links.columns)?;
    link_metrics.set_item("channel", links.channel)?;
    link_metrics.set_item("rate_mbps", links.rate_mbps)?;
    link_metrics.set_item("bottleneck", links.bottleneck)?;
    out.set_item("link_metrics", link_metrics)?;
    let network = PyDict::new(py);
    for (metric, value) in metrics::NETWORK_METRICS.iter().zip(c.network_metrics) {
        network.set_item(metric.name, value)?;
    }
    out.set_item("network_metrics", network)?;
    Ok(out)
}

/// Jain's fairness index of `values` (`bufferlab_core::metrics::network::jain`); None when
/// every value is 0.
#[pyfunction]
pub fn jain(values: Vec<f64>) -> Option<f64> {
    metrics::network::jain(&values, metrics::numeric::pairwise_sum(&values), &mut Vec::new())
}

/// The entropy −Σ sᵢ ln sᵢ of the shares sᵢ = xᵢ / Σx of `values` (0 ln 0 = 0); None when Σx = 0.
#[pyfunction]
pub fn entropy(values: Vec<f64>) -> Option<f64> {
    let total = metrics::numeric::pairwise_sum(&values);
    if total == 0.0 {
        return None;
    }
    let positive: Vec<f64> = values.into_iter().filter(|&x| x > 0.0).collect();
    Some(metrics::network::entropy(&positive, total, &mut Vec::new()))
}

/// `numerators[i] / denominators[i]` of integers (a 128-bit numerator, a 64-bit denominator),
/// each the correctly rounded quotient Python's true division gives; inf or NaN for a zero
/// denominator.
#[pyfunction]
pub fn quotients(numerators: Vec<u128>, denominators: Vec<u64>) -> PyResult<Vec<f64>> {
    if numerators.len() != denominators.len() {
        return Err(PyValueError::new_err("quotients: as many numerators as denominators"));
    }
    Ok(numerators.into_iter().zip(denominators).map(|(a, b)| metrics::numeric::quotient(a, b)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, UInt32Array, UInt64Array};
    use std::sync::Arc;

    /// A flow time-series table of flows 3 and 5 (in that order), two samples each; every series
    /// column holds its row number.
    fn two_flows() -> RecordBatch {
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            ("flow", Arc::new(UInt32Array::from(vec![3, 3, 5, 5]))),
            ("time_ns", Arc::new(UInt64Array::from(vec![10, 20, 10, 20]))),
        ];
        for name in SERIES_COLUMNS {
            columns.push((name, Arc::new(UInt64Array::from(vec![0, 1, 2, 3]))));
        }
        RecordBatch::try_from_iter(columns).expect("a batch")
    }

    #[test]
    fn series_rows_are_the_flows_in_order_of_appearance_with_their_samples() {
        let batch = two_flows();
        let columns = SeriesColumns::read(&batch).expect("readable").expect("sampled");
        let series = columns.series();
        assert_eq!(series.time_ns, &[10, 20]);
        assert_eq!(series.rows.iter().map(|(f, _)| *f).collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(series.rows[1].1.acked_bytes, &[2, 3]);
        assert!(series.rows[0].1.delivery_rate_bps.is_none());
    }

    #[test]
    fn a_table_without_rows_has_no_series_and_one_without_a_column_is_refused() {
        let empty = RecordBatch::try_from_iter([("flow", Arc::new(UInt32Array::from(Vec::<u32>::new())) as ArrayRef)])
            .expect("a batch");
        assert!(SeriesColumns::read(&empty).expect("readable").is_none());
        let partial = two_flows().project(&[0, 1, 2]).expect("projected");
        let error = SeriesColumns::read(&partial).err().expect("refused");
        assert!(error.contains("delivered_bytes"), "{error}");
    }

    /// A table whose flow 3 has samples at 10 and 20 ns and flow 5 one sample at `flow_5_at`.
    fn two_flows_of_uneven_blocks(flow_5_at: u64) -> RecordBatch {
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            ("flow", Arc::new(UInt32Array::from(vec![3, 3, 5]))),
            ("time_ns", Arc::new(UInt64Array::from(vec![10, 20, flow_5_at]))),
        ];
        for name in SERIES_COLUMNS {
            columns.push((name, Arc::new(UInt64Array::from(vec![0, 1, 2]))));
        }
        RecordBatch::try_from_iter(columns).expect("a batch")
    }

    #[test]
    fn a_flow_sampled_from_a_later_sample_on_is_read_and_one_whose_samples_stop_early_is_refused() {
        // A flow's row begins at the last sample before it starts and runs to the end of the
        // run, so its samples end those of the flow sampled longest; samples that stop before
        // the end are not a series the engine writes.
        assert!(SeriesColumns::read(&two_flows_of_uneven_blocks(20)).is_ok());
        let error = SeriesColumns::read(&two_flows_of_uneven_blocks(10)).err().expect("refused");
        assert!(error.contains("end those of the flow sampled longest"), "{error}");
    }

    #[test]
    fn counters_of_other_integer_types_and_nulls_are_read_as_counts() {
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(arrow_array::Int64Array::from(vec![Some(4), None, Some(-1)])) as ArrayRef),
            ("b", Arc::new(UInt64Array::from(vec![Some(7), None, Some(9)])) as ArrayRef),
        ])
        .expect("a batch");
        assert_eq!(&*counts(&batch, "a").expect("read"), &[4, 0, 0]);
        assert_eq!(&*counts(&batch, "missing").expect("read"), &[0, 0, 0]);
        assert_eq!(optional_counts(&batch, "b").expect("read"), vec![Some(7), None, Some(9)]);
    }
}
