//! The engine's result as Arrow tables: the one place where each table's columns are named and
//! typed. Python receives them through the Arrow C stream interface (`arrow.rs`), derives its
//! metrics from them and writes them to the store as they are, so the store's columns for the
//! engine's facts are these (plus `run_id`).
//!
//! Tables (one row per ...):
//!   run                 run: engine version, simulated end, events, sampling interval
//!   flows               flow: `FlowRecord`, with its index
//!   channels            link direction: `ChannelRecord` (without its classes), with its index
//!   queue_classes       sub-buffer of a split queue: `QueueClassRecord`
//!   flow_timeseries     sampled flow x sample: the per-flow series of `TimeSeries`, each flow
//!                       from the last sample before it starts
//!   channel_timeseries  sampled channel x sample: the per-channel series, each channel from the
//!                       first of the samples of the listed flows that cross it
//!   class_timeseries    sub-buffer x sample: the per-class series
//!   captures            captured packet: `Capture`, SACK blocks as one column per edge
//!   delay_histograms    non-empty bucket of a delay distribution: a channel's sojourn times
//!                       (`ChannelRecord::sojourn`), a datagram flow's one-way delays
//!                       (`FlowRecord::one_way_delay`)
//!
//! Types follow the counters: u64 counters are UInt64, indices UInt32, `Option` nullable, and the
//! u128 integrals (byte·ns, packet·ns) Decimal128(38, 0), Arrow's carrier of 128-bit integers.
//! A table's rows come in the engine's order: by index, then by sample time.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, ListArray, RecordBatch, StringArray, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use bufferlab_core::net::packet::MAX_SACK_BLOCKS;
use bufferlab_core::record::result::{
    Bucket, Capture, ChannelRecord, FlowRecord, QueueClassRecord, RunResult, Series, TimeSeries, NULL,
};

/// Decimal128 digits: the most Arrow allows, so every u128 below 10^38 fits.
const U128_PRECISION: u8 = 38;

/// Builds one column from a table's source; it may take what it needs out of the source (a time
/// series hands its buffer over), so a table is built once from a source used for nothing else.
type Build<S> = Box<dyn Fn(&mut S) -> Result<ArrayRef, ArrowError>>;

/// One column of a table: its field (name, type, nullability) and how to build it.
struct Column<S: ?Sized> {
    field: Field,
    build: Build<S>,
}

impl<S: ?Sized> Column<S> {
    /// A column built from a look at the source.
    fn new(
        name: &str,
        kind: DataType,
        nullable: bool,
        build: impl Fn(&S) -> Result<ArrayRef, ArrowError> + 'static,
    ) -> Self {
        Column::taking(name, kind, nullable, move |source: &mut S| build(source))
    }

    /// A column built from what it takes out of the source.
    fn taking(
        name: &str,
        kind: DataType,
        nullable: bool,
        build: impl Fn(&mut S) -> Result<ArrayRef, ArrowError> + 'static,
    ) -> Self {
        Column { field: Field::new(name, kind, nullable), build: Box::new(build) }
    }
}

fn schema_of<S: ?Sized>(columns: &[Column<S>]) -> SchemaRef {
    Arc::new(Schema::new(columns.iter().map(|c| c.field.clone()).collect::<Vec<_>>()))
}

/// The table of `columns`, built in their order from `source`.
fn batch_of<S: ?Sized>(columns: &[Column<S>], source: &mut S) -> Result<RecordBatch, ArrowError> {
    let arrays = columns.iter().map(|c| (c.build)(source)).collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema_of(columns), arrays)
}

fn index(i: usize) -> Result<u32, ArrowError> {
    u32::try_from(i).map_err(|_| ArrowError::ComputeError(format!("index {i} does not fit a UInt32 column")))
}

fn u128_array(values: impl Iterator<Item = u128>) -> Result<ArrayRef, ArrowError> {
    let values = values
        .map(|v| {
            i128::try_from(v)
                .ok()
                .filter(|&v| v < 10_i128.pow(U128_PRECISION.into()))
                .ok_or_else(|| ArrowError::ComputeError(format!("{v} has more than {U128_PRECISION} digits")))
        })
        .collect::<Result<Vec<i128>, _>>()?;
    Ok(Arc::new(Decimal128Array::from(values).with_precision_and_scale(U128_PRECISION, 0)?))
}

// --- columns of tables with one row per record ---------------------------------------------------

/// A record's position in its table as a UInt32 column (`flow`, `channel`).
fn position<R: 'static>(name: &str) -> Column<[R]> {
    Column::new(name, DataType::UInt32, false, |rows: &[R]| {
        Ok(Arc::new((0..rows.len()).map(index).collect::<Result<UInt32Array, _>>()?) as ArrayRef)
    })
}

fn u64_of<R: 'static>(name: &str, get: fn(&R) -> u64) -> Column<[R]> {
    Column::new(name, DataType::UInt64, false, move |rows: &[R]| {
        Ok(Arc::new(rows.iter().map(get).collect::<UInt64Array>()) as ArrayRef)
    })
}

fn optional_u64_of<R: 'static>(name: &str, get: fn(&R) -> Option<u64>) -> Column<[R]> {
    Column::new(name, DataType::UInt64, true, move |rows: &[R]| {
        Ok(Arc::new(rows.iter().map(get).collect::<UInt64Array>()) as ArrayRef)
    })
}

fn index_of<R: 'static>(name: &str, get: fn(&R) -> usize) -> Column<[R]> {
    Column::new(name, DataType::UInt32, false, move |rows: &[R]| {
        Ok(Arc::new(rows.iter().map(|r| index(get(r))).collect::<Result<UInt32Array, _>>()?) as ArrayRef)
    })
}

fn optional_index_of<R: 'static>(name: &str, get: fn(&R) -> Option<usize>) -> Column<[R]> {
    Column::new(name, DataType::UInt32, true, move |rows: &[R]| {
        let values = rows.iter().map(|r| get(r).map(index).transpose()).collect::<Result<UInt32Array, _>>()?;
        Ok(Arc::new(values) as ArrayRef)
    })
}

fn u128_of<R: 'static>(name: &str, get: fn(&R) -> u128) -> Column<[R]> {
    Column::new(name, DataType::Decimal128(U128_PRECISION, 0), false, move |rows: &[R]| {
        u128_array(rows.iter().map(get))
    })
}

fn text_of<R: 'static>(name: &str, get: fn(&R) -> &str) -> Column<[R]> {
    Column::new(name, DataType::Utf8, false, move |rows: &[R]| {
        Ok(Arc::new(rows.iter().map(|r| Some(get(r))).collect::<StringArray>()) as ArrayRef)
    })
}

/// A list of indices (a flow's path of channels) as List<UInt32>.
fn indices_of<R: 'static>(name: &str, get: fn(&R) -> &[usize]) -> Column<[R]> {
    let item = Arc::new(Field::new_list_field(DataType::UInt32, false));
    Column::new(name, DataType::List(item.clone()), false, move |rows: &[R]| {
        let mut offsets = vec![0_i32];
        let mut values = Vec::new();
        for r in rows {
            for &i in get(r) {
                values.push(index(i)?);
            }
            let end = i32::try_from(values.len()).map_err(|e| ArrowError::ComputeError(e.to_string()))?;
            offsets.push(end);
        }
        let offsets = arrow_buffer::OffsetBuffer::new(offsets.into());
        Ok(Arc::new(ListArray::try_new(item.clone(), offsets, Arc::new(UInt32Array::from(values)), None)?) as ArrayRef)
    })
}

/// What the `run` table holds: the run's scalars.
struct RunRow {
    engine_version: String,
    end_ns: u64,
    events: u64,
    sample_interval_ns: Option<u64>,
}

fn run_columns() -> Vec<Column<[RunRow]>> {
    vec![
        text_of("engine_version", |r: &RunRow| &r.engine_version),
        u64_of("end_ns", |r: &RunRow| r.end_ns),
        u64_of("events", |r: &RunRow| r.events),
        // Null when nothing was sampled (then every time-series table is empty).
        optional_u64_of("sample_interval_ns", |r: &RunRow| r.sample_interval_ns),
    ]
}

fn flow_columns() -> Vec<Column<[FlowRecord]>> {
    vec![
        position("flow"),
        text_of("name", |f: &FlowRecord| &f.name),
        u64_of("start_ns", |f: &FlowRecord| f.start_ns),
        optional_u64_of("established_ns", |f: &FlowRecord| f.established_ns),
        optional_u64_of("completed_ns", |f: &FlowRecord| f.completed_ns),
        u64_of("app_bytes_written", |f: &FlowRecord| f.app_bytes_written),
        u64_of("bytes_acked", |f: &FlowRecord| f.bytes_acked),
        u64_of("bytes_delivered", |f: &FlowRecord| f.bytes_delivered),
        u64_of("segments_sent", |f: &FlowRecord| f.segments_sent),
        u64_of("payload_bytes_sent", |f: &FlowRecord| f.payload_bytes_sent),
        u64_of("segments_retransmitted", |f: &FlowRecord| f.segments_retransmitted),
        u64_of("rtos", |f: &FlowRecord| f.rtos),
        u64_of("recoveries", |f: &FlowRecord| f.recoveries),
        // Schema version 11: the fast recoveries whose reduction raised the window.
        u64_of("raising_reductions", |f: &FlowRecord| f.raising_reductions),
        u64_of("recovery_episodes", |f: &FlowRecord| f.recovery_episodes),
        u64_of("recovery_time_ns", |f: &FlowRecord| f.recovery_time_ns),
        u64_of("acks_sent", |f: &FlowRecord| f.acks_sent),
        // Schema version 7: ECN (RFC 3168), the marks received and the sender's answers.
        u64_of("ce_received", |f: &FlowRecord| f.ce_received),
        u64_of("ecn_responses", |f: &FlowRecord| f.ecn_responses),
        u64_of("rtt_samples", |f: &FlowRecord| f.rtt_samples),
        u64_of("rtt_sum_ns", |f: &FlowRecord| f.rtt_sum_ns),
        optional_u64_of("min_rtt_ns", |f: &FlowRecord| f.min_rtt_ns),
        optional_u64_of("final_srtt_ns", |f: &FlowRecord| f.final_srtt_ns),
        u64_of("final_cwnd_bytes", |f: &FlowRecord| f.final_cwnd_bytes),
        u128_of("delivery_delay_byte_ns", |f: &FlowRecord| f.delivery_delay_byte_ns),
        indices_of("path", |f: &FlowRecord| &f.path),
        index_of("src_node", |f: &FlowRecord| f.src_node),
        index_of("dst_node", |f: &FlowRecord| f.dst_node),
        optional_index_of("generator", |f: &FlowRecord| f.generator),
        optional_index_of("user", |f: &FlowRecord| f.user.map(|u| u as usize)),
    ]
}

fn channel_columns() -> Vec<Column<[ChannelRecord]>> {
    vec![
        position("channel"),
        text_of("name", |c: &ChannelRecord| &c.name),
        index_of("link", |c: &ChannelRecord| c.link),
        // `from` and `to` are SQL keywords.
        index_of("from_node", |c: &ChannelRecord| c.from),
        index_of("to_node", |c: &ChannelRecord| c.to),
        optional_u64_of("rate_bps", |c: &ChannelRecord| c.rate_bps),
        optional_u64_of("shaping_rate_bps", |c: &ChannelRecord| c.shaping_rate_bps),
        u64_of("delay_ns", |c: &ChannelRecord| c.delay_ns),
        u64_of("offered_packets", |c: &ChannelRecord| c.offered_packets),
        u64_of("offered_bytes", |c: &ChannelRecord| c.offered_bytes),
        u64_of("sent_packets", |c: &ChannelRecord| c.sent_packets),
        u64_of("sent_bytes", |c: &ChannelRecord| c.sent_bytes),
        u64_of("delivered_packets", |c: &ChannelRecord| c.delivered_packets),
        u64_of("delivered_bytes", |c: &ChannelRecord| c.delivered_bytes),
        u64_of("dropped_queue_packets", |c: &ChannelRecord| c.dropped_queue_packets),
        u64_of("dropped_queue_bytes", |c: &ChannelRecord| c.dropped_queue_bytes),
        u64_of("dropped_loss_packets", |c: &ChannelRecord| c.dropped_loss_packets),
        u64_of("dropped_loss_bytes", |c: &ChannelRecord| c.dropped_loss_bytes),
        // Schema version 6: the AQM's drops (CoDel), apart from the tail drops.
        u64_of("dropped_aqm_packets", |c: &ChannelRecord| c.dropped_aqm_packets),
        u64_of("dropped_aqm_bytes", |c: &ChannelRecord| c.dropped_aqm_bytes),
        // Schema version 7: the AQM's CE marks instead of drops (RFC 3168 §5).
        u64_of("ce_marked_packets", |c: &ChannelRecord| c.ce_marked_packets),
        u64_of("ce_marked_bytes", |c: &ChannelRecord| c.ce_marked_bytes),
        u64_of("queued_end_packets", |c: &ChannelRecord| c.queued_end_packets),
        u64_of("queued_end_bytes", |c: &ChannelRecord| c.queued_end_bytes),
        u64_of("transmitting_end_packets", |c: &ChannelRecord| c.transmitting_end_packets),
        u64_of("transmitting_end_bytes", |c: &ChannelRecord| c.transmitting_end_bytes),
        u64_of("propagating_end_packets", |c: &ChannelRecord| c.propagating_end_packets),
        u64_of("propagating_end_bytes", |c: &ChannelRecord| c.propagating_end_bytes),
        u64_of("busy_ns", |c: &ChannelRecord| c.busy_ns),
        u64_of("sojourn_sum_ns", |c: &ChannelRecord| c.sojourn_sum_ns),
        u64_of("max_queue_packets", |c: &ChannelRecord| c.max_queue_packets),
        u64_of("max_queue_bytes", |c: &ChannelRecord| c.max_queue_bytes),
        u128_of("queue_packet_ns", |c: &ChannelRecord| c.queue_packet_ns),
        u128_of("queue_byte_ns", |c: &ChannelRecord| c.queue_byte_ns),
    ]
}

/// A sub-buffer of a split queue with its place: channel and position in the queue.
struct ClassRow {
    channel: usize,
    sub_buffer: usize,
    record: QueueClassRecord,
}

fn class_columns() -> Vec<Column<[ClassRow]>> {
    vec![
        index_of("channel", |r: &ClassRow| r.channel),
        index_of("sub_buffer", |r: &ClassRow| r.sub_buffer),
        u64_of("enqueued_packets", |r: &ClassRow| r.record.enqueued_packets),
        u64_of("enqueued_bytes", |r: &ClassRow| r.record.enqueued_bytes),
        u64_of("dropped_packets", |r: &ClassRow| r.record.dropped_packets),
        u64_of("dropped_bytes", |r: &ClassRow| r.record.dropped_bytes),
        u64_of("sent_packets", |r: &ClassRow| r.record.sent_packets),
        u64_of("sent_bytes", |r: &ClassRow| r.record.sent_bytes),
        u64_of("sojourn_sum_ns", |r: &ClassRow| r.record.sojourn_sum_ns),
        u64_of("max_packets", |r: &ClassRow| r.record.max_packets),
        u64_of("queued_packets", |r: &ClassRow| r.record.queued_packets),
        u64_of("queued_bytes", |r: &ClassRow| r.record.queued_bytes),
        // `limit` is an SQL keyword.
        u64_of("size_limit", |r: &ClassRow| r.record.limit),
        u64_of("rttp_ns", |r: &ClassRow| r.record.rttp_ns),
        u64_of("estimate_rttp_ns", |r: &ClassRow| r.record.estimate_rttp_ns),
        u64_of("threshold_ns", |r: &ClassRow| r.record.threshold_ns),
        // Schema version 9: DualPI2's CE marks per queue.
        u64_of("ce_marked_packets", |r: &ClassRow| r.record.ce_marked_packets),
        u64_of("ce_marked_bytes", |r: &ClassRow| r.record.ce_marked_bytes),
    ]
}

// --- delay distributions: one row per non-empty bucket ---------------------------------------------

/// A bucket of a channel's or a flow's distribution.
struct HistogramRow {
    /// "channel" (sojourn times) or "flow" (one-way delays).
    subject: &'static str,
    id: usize,
    bucket: Bucket,
}

fn histogram_columns() -> Vec<Column<[HistogramRow]>> {
    vec![
        text_of("subject", |r: &HistogramRow| r.subject),
        index_of("id", |r: &HistogramRow| r.id),
        // The values the bucket holds, [lower_ns, upper_ns] inclusive (`record::histogram`).
        u64_of("lower_ns", |r: &HistogramRow| r.bucket.lower_ns),
        u64_of("upper_ns", |r: &HistogramRow| r.bucket.upper_ns),
        u64_of("count", |r: &HistogramRow| r.bucket.count),
    ]
}

/// The rows of every channel's and then every flow's distribution, each in increasing order.
fn histogram_rows(result: &RunResult) -> Vec<HistogramRow> {
    let channels = result.channels.iter().enumerate().filter_map(|(i, c)| Some(("channel", i, c.sojourn.as_ref()?)));
    let flows = result.flows.iter().enumerate().filter_map(|(i, f)| Some(("flow", i, f.one_way_delay.as_ref()?)));
    channels
        .chain(flows)
        .flat_map(|(subject, id, d)| d.buckets.iter().map(move |&bucket| HistogramRow { subject, id, bucket }))
        .collect()
}

// --- time series: one row per (sampled entity, sample) -------------------------------------------

/// One kind of series in `TimeSeries`, `[row][sample]`.
type SeriesOf = fn(&mut TimeSeries) -> &mut Series;

/// The run's samples (indices into `time_ns`) row `r` of a kind of entity holds.
type SamplesOf = fn(&TimeSeries, usize) -> Range<usize>;

/// Every sample, for the kinds of entity whose rows all begin at the first (sub-buffers).
fn every_sample(ts: &TimeSeries, _row: usize) -> Range<usize> {
    0..ts.time_ns.len()
}

/// Entity × sample, entity-major: the key column repeats each row's entity once per sample it
/// holds (a row begins at its first sample: `TimeSeries`).
fn repeated(name: &str, entities: fn(&TimeSeries) -> &Vec<usize>, samples: SamplesOf) -> Column<TimeSeries> {
    Column::new(name, DataType::UInt32, false, move |ts: &TimeSeries| {
        let rows = entities(ts);
        let mut out = Vec::with_capacity((0..rows.len()).map(|r| samples(ts, r).len()).sum());
        for (r, &e) in rows.iter().enumerate() {
            out.extend(std::iter::repeat_n(index(e)?, samples(ts, r).len()));
        }
        Ok(Arc::new(UInt32Array::from(out)) as ArrayRef)
    })
}

/// The sampling instants of each row of `entities`, from its first sample on.
fn sample_times(entities: fn(&TimeSeries) -> &Vec<usize>, samples: SamplesOf) -> Column<TimeSeries> {
    Column::new("time_ns", DataType::UInt64, false, move |ts: &TimeSeries| {
        let rows = entities(ts).len();
        let mut out = Vec::with_capacity((0..rows).map(|r| samples(ts, r).len()).sum());
        for r in 0..rows {
            out.extend_from_slice(&ts.time_ns[samples(ts, r)]);
        }
        Ok(Arc::new(UInt64Array::from(out)) as ArrayRef)
    })
}

/// A series' column: its buffer, taken out of the result and handed to Arrow as it is (entity-
/// major already: `Series`), not copied. The key columns (`repeated`, `sample_times`) count the
/// samples by `time_ns`, which stays.
fn series(name: &str, rows: SeriesOf) -> Column<TimeSeries> {
    Column::taking(name, DataType::UInt64, false, move |ts: &mut TimeSeries| {
        Ok(Arc::new(UInt64Array::from(std::mem::take(rows(ts)).into_column())) as ArrayRef)
    })
}

/// The samples of a series that are no value (`result::NULL`) as Arrow's validity: `None` when
/// every sample is one.
fn validity(values: &[u64]) -> Option<NullBuffer> {
    values.contains(&NULL).then(|| NullBuffer::from_iter(values.iter().map(|&v| v != NULL)))
}

/// A series of f64 samples (`result::encode_f64`) as a Float64 column, NULL where a sample is no
/// value: its buffer, read as the f64s whose bits it holds, not copied.
fn f64_series(name: &str, rows: SeriesOf) -> Column<TimeSeries> {
    Column::taking(name, DataType::Float64, true, move |ts: &mut TimeSeries| {
        let values = std::mem::take(rows(ts)).into_column();
        let nulls = validity(&values);
        let len = values.len();
        let floats = ScalarBuffer::<f64>::new(ScalarBuffer::<u64>::from(values).into_inner(), 0, len);
        Ok(Arc::new(Float64Array::new(floats, nulls)) as ArrayRef)
    })
}

/// A series of optional integers (`result::encode_u64`): NULL where a sample is no value.
fn optional_series(name: &str, rows: SeriesOf) -> Column<TimeSeries> {
    Column::taking(name, DataType::UInt64, true, move |ts: &mut TimeSeries| {
        let values = std::mem::take(rows(ts)).into_column();
        let nulls = validity(&values);
        Ok(Arc::new(UInt64Array::new(ScalarBuffer::from(values), nulls)) as ArrayRef)
    })
}

fn flow_series_columns() -> Vec<Column<TimeSeries>> {
    vec![
        repeated("flow", |ts| &ts.flows, TimeSeries::flow_samples),
        sample_times(|ts| &ts.flows, TimeSeries::flow_samples),
        series("cwnd_bytes", |ts| &mut ts.cwnd_bytes),
        series("ssthresh_bytes", |ts| &mut ts.ssthresh_bytes),
        series("in_flight_bytes", |ts| &mut ts.in_flight_bytes),
        series("srtt_ns", |ts| &mut ts.srtt_ns),
        series("min_rtt_ns", |ts| &mut ts.min_rtt_ns),
        series("acked_bytes", |ts| &mut ts.acked_bytes),
        series("delivered_bytes", |ts| &mut ts.delivered_bytes),
        series("sent_bytes", |ts| &mut ts.sent_bytes),
        series("written_bytes", |ts| &mut ts.written_bytes),
        series("idt_ewma_ns", |ts| &mut ts.idt_ewma_ns),
        series("delivery_delay_byte_us", |ts| &mut ts.delivery_delay_byte_us),
        series("pacing_rate_bps", |ts| &mut ts.pacing_rate_bps),
        series("cc_state", |ts| &mut ts.cc_state),
        series("delivery_rate_bps", |ts| &mut ts.delivery_rate_bps),
        // Schema version 9: DCTCP's α, NULL for a controller that keeps none.
        f64_series("ecn_alpha", |ts| &mut ts.ecn_alpha),
    ]
}

fn channel_series_columns() -> Vec<Column<TimeSeries>> {
    vec![
        repeated("channel", |ts| &ts.channels, TimeSeries::channel_samples),
        sample_times(|ts| &ts.channels, TimeSeries::channel_samples),
        series("queue_packets", |ts| &mut ts.queue_packets),
        series("queue_bytes", |ts| &mut ts.queue_bytes),
        series("sent_bytes", |ts| &mut ts.channel_sent_bytes),
        series("drops", |ts| &mut ts.channel_drops),
        series("sent_packets", |ts| &mut ts.channel_sent_packets),
        series("sojourn_ns", |ts| &mut ts.channel_sojourn_ns),
        series("busy_ns", |ts| &mut ts.channel_busy_ns),
        // Schema version 9: the AQM's state (`queue::AqmState`, NULL where the discipline keeps
        // no such quantity), and the cumulative CE marks and AQM drops.
        f64_series("aqm_probability", |ts| &mut ts.channel_aqm_probability),
        f64_series("aqm_signal", |ts| &mut ts.channel_aqm_signal),
        optional_series("aqm_state", |ts| &mut ts.channel_aqm_state),
        optional_series("aqm_count", |ts| &mut ts.channel_aqm_count),
        series("ce_marks", |ts| &mut ts.channel_ce_marks),
        series("aqm_drops", |ts| &mut ts.channel_aqm_drops),
    ]
}

fn class_series_columns() -> Vec<Column<TimeSeries>> {
    vec![
        repeated("channel", |ts| &ts.class_channels, every_sample),
        repeated("sub_buffer", |ts| &ts.class_indices, every_sample),
        sample_times(|ts| &ts.class_channels, every_sample),
        series("queue_packets", |ts| &mut ts.class_queue_packets),
        series("queue_bytes", |ts| &mut ts.class_queue_bytes),
        series("size_limit", |ts| &mut ts.class_limit),
        series("enqueued_packets", |ts| &mut ts.class_enqueued_packets),
        series("dropped_packets", |ts| &mut ts.class_dropped_packets),
        series("sent_packets", |ts| &mut ts.class_sent_packets),
        series("sent_bytes", |ts| &mut ts.class_sent_bytes),
        series("sojourn_ns", |ts| &mut ts.class_sojourn_ns),
        series("rttp_ns", |ts| &mut ts.class_rttp_ns),
        series("estimate_rttp_ns", |ts| &mut ts.class_estimate_rttp_ns),
        series("threshold_ns", |ts| &mut ts.class_threshold_ns),
        // Schema version 9: DualPI2's CE marks per queue.
        series("ce_marked_packets", |ts| &mut ts.class_ce_marked_packets),
    ]
}

// --- captures: one row per captured packet, captures one after the other --------------------------

/// Per capture, one value per packet (the capture's index or channel).
fn per_capture(name: &str, value: fn(usize, &Capture) -> usize) -> Column<[Capture]> {
    Column::new(name, DataType::UInt32, false, move |caps: &[Capture]| {
        let mut out = Vec::new();
        for (i, c) in caps.iter().enumerate() {
            out.extend(std::iter::repeat_n(index(value(i, c))?, c.time_ns.len()));
        }
        Ok(Arc::new(UInt32Array::from(out)) as ArrayRef)
    })
}

/// A capture field, the captures' columns concatenated; `A` is the Arrow array of its type.
fn captured<T: Copy + 'static, A>(name: &str, kind: DataType, field: fn(&Capture) -> &Vec<T>) -> Column<[Capture]>
where
    A: From<Vec<T>> + arrow_array::Array + 'static,
{
    Column::new(name, kind, false, move |caps: &[Capture]| {
        let values: Vec<T> = caps.iter().flat_map(|c| field(c).iter().copied()).collect();
        Ok(Arc::new(A::from(values)) as ArrayRef)
    })
}

/// One edge (0 start, 1 end) of SACK block `block` of every captured packet (0 where unused).
fn sack_edge(block: usize, edge: usize) -> Column<[Capture]> {
    let name = format!("sack{}_{}", block + 1, ["start", "end"][edge]);
    Column::new(&name, DataType::UInt64, false, move |caps: &[Capture]| {
        let values: Vec<u64> = caps.iter().flat_map(|c| c.sack.iter().map(|s| s[2 * block + edge])).collect();
        Ok(Arc::new(UInt64Array::from(values)) as ArrayRef)
    })
}

fn capture_columns() -> Vec<Column<[Capture]>> {
    let mut columns = vec![
        per_capture("capture", |i, _| i),
        per_capture("channel", |_, c| c.channel),
        Column::new("packet", DataType::UInt64, false, |caps: &[Capture]| {
            let values: Vec<u64> = caps.iter().flat_map(|c| 0..c.time_ns.len() as u64).collect();
            Ok(Arc::new(UInt64Array::from(values)) as ArrayRef)
        }),
        captured::<u64, UInt64Array>("time_ns", DataType::UInt64, |c| &c.time_ns),
        captured::<u32, UInt32Array>("flow", DataType::UInt32, |c| &c.flow),
        captured::<bool, BooleanArray>("is_data", DataType::Boolean, |c| &c.is_data),
        captured::<u8, UInt8Array>("flags", DataType::UInt8, |c| &c.flags),
        // Schema version 8: the IP header's ECN field (RFC 3168 §5).
        captured::<u8, UInt8Array>("ecn", DataType::UInt8, |c| &c.ecn),
        captured::<u64, UInt64Array>("seq", DataType::UInt64, |c| &c.seq),
        captured::<u64, UInt64Array>("ack", DataType::UInt64, |c| &c.ack),
        captured::<u32, UInt32Array>("payload_bytes", DataType::UInt32, |c| &c.payload_bytes),
        captured::<u32, UInt32Array>("wire_bytes", DataType::UInt32, |c| &c.wire_bytes),
        captured::<bool, BooleanArray>("retransmission", DataType::Boolean, |c| &c.retransmission),
        captured::<u64, UInt64Array>("ts_val_ns", DataType::UInt64, |c| &c.ts_val_ns),
        captured::<u64, UInt64Array>("ts_ecr_ns", DataType::UInt64, |c| &c.ts_ecr_ns),
        captured::<u8, UInt8Array>("sack_blocks", DataType::UInt8, |c| &c.sack_blocks),
    ];
    for block in 0..MAX_SACK_BLOCKS {
        columns.extend([sack_edge(block, 0), sack_edge(block, 1)]);
    }
    columns
}

// --- the result ------------------------------------------------------------------------------------

/// The schema of every table, by name, in the order `tables` returns them.
pub fn schemas() -> Vec<(&'static str, SchemaRef)> {
    vec![
        ("run", schema_of(&run_columns())),
        ("flows", schema_of(&flow_columns())),
        ("channels", schema_of(&channel_columns())),
        ("queue_classes", schema_of(&class_columns())),
        ("flow_timeseries", schema_of(&flow_series_columns())),
        ("channel_timeseries", schema_of(&channel_series_columns())),
        ("class_timeseries", schema_of(&class_series_columns())),
        ("captures", schema_of(&capture_columns())),
        ("delay_histograms", schema_of(&histogram_columns())),
    ]
}

/// Time series (empty tables when nothing was sampled).
fn series_batch(columns: &[Column<TimeSeries>], ts: Option<&mut TimeSeries>) -> Result<RecordBatch, ArrowError> {
    match ts {
        Some(ts) => batch_of(columns, ts),
        None => Ok(RecordBatch::new_empty(schema_of(columns))),
    }
}

/// The run's result as tables, by name (see the module documentation); the time series' buffers
/// become their columns (`series`), so the result is taken.
pub fn tables(mut result: RunResult) -> Result<Vec<(&'static str, RecordBatch)>, ArrowError> {
    let mut ts = result.timeseries.take();
    let mut run = [RunRow {
        engine_version: result.engine_version.clone(),
        end_ns: result.end_ns,
        events: result.events,
        sample_interval_ns: ts.as_ref().map(|t| t.interval_ns),
    }];
    let mut classes: Vec<ClassRow> = result
        .channels
        .iter()
        .enumerate()
        .flat_map(|(channel, c)| {
            c.classes.iter().enumerate().map(move |(sub_buffer, &record)| ClassRow { channel, sub_buffer, record })
        })
        .collect();
    let mut histograms = histogram_rows(&result);
    Ok(vec![
        ("run", batch_of(&run_columns(), &mut run[..])?),
        ("flows", batch_of(&flow_columns(), &mut result.flows[..])?),
        ("channels", batch_of(&channel_columns(), &mut result.channels[..])?),
        ("queue_classes", batch_of(&class_columns(), &mut classes[..])?),
        ("flow_timeseries", series_batch(&flow_series_columns(), ts.as_mut())?),
        ("channel_timeseries", series_batch(&channel_series_columns(), ts.as_mut())?),
        ("class_timeseries", series_batch(&class_series_columns(), ts.as_mut())?),
        ("captures", batch_of(&capture_columns(), &mut result.captures[..])?),
        ("delay_histograms", batch_of(&histogram_columns(), &mut histograms[..])?),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use bufferlab_core::record::{ChannelSample, FlowSample};
    use bufferlab_core::units::SimTime;

    fn flow_sample(cwnd: u64) -> FlowSample {
        FlowSample {
            cwnd,
            ssthresh: 0,
            in_flight: 0,
            srtt_ns: 0,
            min_rtt_ns: 0,
            acked: 0,
            delivered: 0,
            sent: 0,
            written: 0,
            idt_ewma_ns: 0,
            delivery_delay_byte_us: 0,
            pacing_rate_bps: 0,
            cc_state: 0,
            delivery_rate_bps: 0,
            // Flow 1's controller keeps α (a quarter of its cwnd), flow 3's none.
            ecn_alpha: if cwnd < 30 { (cwnd as f64 / 4.0).to_bits() } else { NULL },
        }
    }

    fn channel_sample(queue_packets: u64) -> ChannelSample {
        ChannelSample {
            queue_packets,
            queue_bytes: 0,
            sent_bytes: 0,
            drops: 0,
            sent_packets: 0,
            sojourn_ns: 0,
            busy_ns: 0,
            // A PIE-like queue whose probability is k/10 at sample k, and a count present at the
            // second sample only.
            aqm_probability: (queue_packets as f64 / 10.0).to_bits(),
            aqm_signal: NULL,
            aqm_state: NULL,
            aqm_count: if queue_packets == 2 { 7 } else { NULL },
            ce_marks: 5 * queue_packets,
            aqm_drops: 0,
        }
    }

    /// Two flows (rows for flows 1 and 3) and one channel sampled three times.
    fn sampled_result() -> RunResult {
        let mut ts = TimeSeries::new(SimTime::from_ns(100), vec![1, 3], vec![2]);
        for k in 1..=3_u64 {
            ts.push_time(SimTime::from_ns(100 * k));
            ts.push_flow(0, flow_sample(10 + k));
            ts.push_flow(1, flow_sample(30 + k));
            ts.push_channel(0, channel_sample(k));
        }
        RunResult {
            engine_version: "test".into(),
            end_ns: 300,
            events: 7,
            flows: vec![FlowRecord::default(); 4],
            channels: vec![ChannelRecord::default(); 3],
            timeseries: Some(ts),
            captures: Vec::new(),
        }
    }

    fn table<'a>(tables: &'a [(&'static str, RecordBatch)], name: &str) -> &'a RecordBatch {
        &tables.iter().find(|(n, _)| *n == name).expect("the table").1
    }

    fn u64s(batch: &RecordBatch, column: &str) -> Vec<u64> {
        let array = batch.column_by_name(column).expect("the column");
        array.as_any().downcast_ref::<UInt64Array>().expect("UInt64").values().to_vec()
    }

    fn u32s(batch: &RecordBatch, column: &str) -> Vec<u32> {
        let array = batch.column_by_name(column).expect("the column");
        array.as_any().downcast_ref::<UInt32Array>().expect("UInt32").values().to_vec()
    }

    #[test]
    fn every_table_comes_in_its_declared_schema() {
        let tables = tables(sampled_result()).expect("tables");
        let declared = schemas();
        assert_eq!(
            tables.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            declared.iter().map(|(n, _)| *n).collect::<Vec<_>>()
        );
        for ((name, batch), (_, schema)) in tables.iter().zip(&declared) {
            assert_eq!(batch.schema(), *schema, "{name}");
        }
        assert_eq!(table(&tables, "flows").num_rows(), 4);
        assert_eq!(u32s(table(&tables, "channels"), "channel"), vec![0, 1, 2]);
    }

    #[test]
    fn time_series_are_entity_major_with_the_sample_times_repeated() {
        let tables = tables(sampled_result()).expect("tables");
        let flows = table(&tables, "flow_timeseries");
        assert_eq!(u32s(flows, "flow"), vec![1, 1, 1, 3, 3, 3]);
        assert_eq!(u64s(flows, "time_ns"), vec![100, 200, 300, 100, 200, 300]);
        assert_eq!(u64s(flows, "cwnd_bytes"), vec![11, 12, 13, 31, 32, 33]);
        let channels = table(&tables, "channel_timeseries");
        assert_eq!(u32s(channels, "channel"), vec![2, 2, 2]);
        assert_eq!(u64s(channels, "queue_packets"), vec![1, 2, 3]);
        let run = table(&tables, "run");
        assert_eq!(u64s(run, "sample_interval_ns"), vec![100]);
    }

    fn f64s(batch: &RecordBatch, column: &str) -> Vec<Option<f64>> {
        let array = batch.column_by_name(column).expect("the column");
        array.as_any().downcast_ref::<Float64Array>().expect("Float64").iter().collect()
    }

    fn optional_u64s(batch: &RecordBatch, column: &str) -> Vec<Option<u64>> {
        let array = batch.column_by_name(column).expect("the column");
        array.as_any().downcast_ref::<UInt64Array>().expect("UInt64").iter().collect()
    }

    #[test]
    fn encoded_samples_come_as_floats_and_integers_with_nulls_where_no_value() {
        let tables = tables(sampled_result()).expect("tables");
        let flows = table(&tables, "flow_timeseries");
        assert_eq!(f64s(flows, "ecn_alpha"), vec![Some(2.75), Some(3.0), Some(3.25), None, None, None]);
        let channels = table(&tables, "channel_timeseries");
        assert_eq!(f64s(channels, "aqm_probability"), vec![Some(0.1), Some(0.2), Some(0.3)]);
        assert_eq!(f64s(channels, "aqm_signal"), vec![None, None, None]);
        assert_eq!(optional_u64s(channels, "aqm_count"), vec![None, Some(7), None]);
        assert_eq!(channels.column_by_name("ce_marks").expect("the column").null_count(), 0);
        assert_eq!(u64s(channels, "ce_marks"), vec![5, 10, 15]);
    }

    #[test]
    fn a_series_column_is_the_engines_buffer_not_a_copy() {
        let result = sampled_result();
        let samples = result.timeseries.as_ref().expect("sampled").cwnd_bytes.row(0).as_ptr();
        let tables = tables(result).expect("tables");
        let column = table(&tables, "flow_timeseries").column_by_name("cwnd_bytes").expect("the column").clone();
        let values = column.as_any().downcast_ref::<UInt64Array>().expect("UInt64").values();
        assert_eq!(values.as_ptr(), samples);
    }

    #[test]
    fn nothing_sampled_gives_empty_series_tables_and_a_null_interval() {
        let result = RunResult { timeseries: None, ..sampled_result() };
        let tables = tables(result).expect("tables");
        assert_eq!(table(&tables, "flow_timeseries").num_rows(), 0);
        assert_eq!(table(&tables, "class_timeseries").num_rows(), 0);
        assert!(table(&tables, "run").column_by_name("sample_interval_ns").expect("column").is_null(0));
    }

    #[test]
    fn packets_of_two_captures_follow_each_other_with_their_place() {
        let mut first = Capture::new(4);
        let mut second = Capture::new(1);
        for (capture, n) in [(&mut first, 2_u64), (&mut second, 3)] {
            for k in 0..n {
                capture.time_ns.push(k);
                capture.flow.push(0);
                capture.is_data.push(true);
                capture.flags.push(0);
                capture.ecn.push(0);
                capture.seq.push(k);
                capture.ack.push(0);
                capture.payload_bytes.push(0);
                capture.wire_bytes.push(40);
                capture.retransmission.push(false);
                capture.ts_val_ns.push(0);
                capture.ts_ecr_ns.push(0);
                capture.sack_blocks.push(1);
                capture.sack.push([k, k + 1, 0, 0, 0, 0]);
            }
        }
        let result = RunResult { captures: vec![first, second], ..sampled_result() };
        let tables = tables(result).expect("tables");
        let captures = table(&tables, "captures");
        assert_eq!(u32s(captures, "capture"), vec![0, 0, 1, 1, 1]);
        assert_eq!(u32s(captures, "channel"), vec![4, 4, 1, 1, 1]);
        assert_eq!(u64s(captures, "packet"), vec![0, 1, 0, 1, 2]);
        assert_eq!(u64s(captures, "sack1_end"), vec![1, 2, 1, 2, 3]);
        assert_eq!(u64s(captures, "sack3_start"), vec![0; 5]);
    }

    #[test]
    fn delay_histograms_list_each_channel_s_then_each_flow_s_buckets_in_order() {
        use bufferlab_core::record::result::Distribution;
        let mut result = sampled_result();
        let bucket = |lower_ns, upper_ns, count| Bucket { lower_ns, upper_ns, count };
        result.channels[2].sojourn = Some(Distribution { buckets: vec![bucket(0, 0, 5), bucket(64, 65, 2)] });
        result.channels[0].sojourn = Some(Distribution::constant(0, 3));
        result.flows[1].one_way_delay = Some(Distribution::constant(1_000_000, 7));
        let tables = tables(result).expect("tables");
        let rows = table(&tables, "delay_histograms");
        let subjects = rows.column_by_name("subject").expect("column").as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(subjects.iter().flatten().collect::<Vec<_>>(), ["channel", "channel", "channel", "flow"]);
        assert_eq!(u32s(rows, "id"), vec![0, 2, 2, 1]);
        assert_eq!(u64s(rows, "lower_ns"), vec![0, 0, 64, 1_000_000]);
        assert_eq!(u64s(rows, "upper_ns"), vec![0, 0, 65, 1_000_000]);
        assert_eq!(u64s(rows, "count"), vec![3, 5, 2, 7]);
    }

    #[test]
    fn a_128_bit_counter_travels_exactly_and_one_beyond_38_digits_is_refused() {
        let mut result = sampled_result();
        result.channels[0].queue_byte_ns = 10_u128.pow(37) + 7;
        let tables = tables(result.clone()).expect("tables");
        let column = table(&tables, "channels").column_by_name("queue_byte_ns").expect("column").clone();
        let decimals = column.as_any().downcast_ref::<Decimal128Array>().expect("Decimal128");
        assert_eq!(decimals.value(0), 10_i128.pow(37) + 7);
        result.channels[0].queue_byte_ns = 10_u128.pow(38);
        assert!(super::tables(result).is_err());
    }
}
