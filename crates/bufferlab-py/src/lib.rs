//! `bufferlab._core`: the Python face of the engine. Conversion and error mapping only.
//!
//! Specs cross the boundary as JSON text (`bufferlab_core::spec`). A result comes back in two
//! parts: the counters as JSON text (`bufferlab_core::record::result`), and every long numeric
//! column (time series, captures) as raw little-endian bytes that Python wraps in numpy arrays
//! without a copy or a parse. The JSON names each column with its dtype and shape. The GIL is
//! released while simulating.
//!
//! Errors are typed: a spec the engine refuses raises `EngineSpecError` (a `ValueError`) with
//! `.field` (the engine's field path, e.g. `links[0].rate_bps`) and `.reason`. A simulation runs
//! in slices of a bounded number of events, and between slices the binding lets Python handle
//! pending signals, so Ctrl-C or SIGTERM stops a run within a fraction of a second.

use bufferlab_core::net::packet::MAX_SACK_BLOCKS;
use bufferlab_core::record::result::{Capture, RunResult, TimeSeries};
use bufferlab_core::units::SimTime;
use bufferlab_core::{spec::ScenarioSpec, EngineError, Simulator};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde_json::{json, Value};

pyo3::create_exception!(
    _core,
    EngineSpecError,
    PyValueError,
    "A spec the engine refuses: `.field` is the engine's field path, `.reason` says why."
);

/// Events simulated between two looks for a pending signal: a few milliseconds of work on any
/// scenario (an event costs well under a microsecond), so an interruption takes effect at once.
const EVENTS_PER_SLICE: u64 = 50_000;

/// `EngineSpecError(field, reason)` with both as attributes, so Python maps it without parsing.
fn spec_error(py: Python<'_>, field: &str, reason: &str) -> PyErr {
    let err = EngineSpecError::new_err(format!("{field}: {reason}"));
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory exhaustion.
    let _ = value.setattr("field", field);
    let _ = value.setattr("reason", reason);
    err
}

fn engine_error(py: Python<'_>, e: EngineError) -> PyErr {
    spec_error(py, &e.field, &e.reason)
}

/// Parse a spec (`ScenarioSpec::from_json`: the error names the JSON path of the value at fault).
fn spec_from_json(py: Python<'_>, spec_json: &str) -> PyResult<ScenarioSpec> {
    ScenarioSpec::from_json(spec_json).map_err(|e| engine_error(py, e))
}

/// Simulate up to `until` in slices of `EVENTS_PER_SLICE` events without the GIL, letting Python
/// run its signal handlers between slices (a handler that raises, as Ctrl-C's does, ends the run
/// with that exception). Returns whether the run is over.
fn advance_interruptibly(py: Python<'_>, sim: &mut Simulator, until: SimTime) -> PyResult<bool> {
    loop {
        if let Some(finished) = py.allow_threads(|| sim.run_until_bounded(until, EVENTS_PER_SLICE)) {
            return Ok(finished);
        }
        py.check_signals()?;
    }
}

/// Numeric columns leaving as bytes, with the description the JSON carries for each.
#[derive(Default)]
struct Columns {
    described: serde_json::Map<String, Value>,
    bytes: Vec<(String, Vec<u8>)>,
}

/// Appends the little-endian bytes of `values`: a plain loop over a reserved buffer, which compiles
/// to block copies (a `flat_map` iterator cost per element: 40 % of the reference dumbbell's run).
fn extend_le_u64(bytes: &mut Vec<u8>, values: &[u64]) {
    bytes.reserve(values.len() * 8);
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
}

impl Columns {
    /// A 1-D column of `u64`.
    fn u64s(&mut self, name: String, values: &[u64]) {
        let mut bytes = Vec::new();
        extend_le_u64(&mut bytes, values);
        self.add(name, "u64", vec![values.len()], bytes);
    }

    /// A 2-D column (`rows` of equal length) of `u64`, row-major.
    fn u64_rows(&mut self, name: String, rows: &[Vec<u64>]) {
        let cols = rows.first().map_or(0, Vec::len);
        let mut bytes = Vec::with_capacity(rows.len() * cols * 8);
        for row in rows {
            extend_le_u64(&mut bytes, row);
        }
        self.add(name, "u64", vec![rows.len(), cols], bytes);
    }

    fn u32s(&mut self, name: String, values: &[u32]) {
        let mut bytes = Vec::with_capacity(values.len() * 4);
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        self.add(name, "u32", vec![values.len()], bytes);
    }

    fn u8s(&mut self, name: String, values: impl ExactSizeIterator<Item = u8>) {
        let n = values.len();
        self.add(name, "u8", vec![n], values.collect());
    }

    fn add(&mut self, name: String, dtype: &str, shape: Vec<usize>, bytes: Vec<u8>) {
        self.described.insert(name.clone(), json!({ "dtype": dtype, "shape": shape }));
        self.bytes.push((name, bytes));
    }
}

/// Move the time series out as columns named `timeseries.<series>`; `timeseries.flows` and
/// `timeseries.channels` give the flow or channel of each row.
fn timeseries_columns(ts: &TimeSeries, columns: &mut Columns) {
    columns.u64s("timeseries.time_ns".into(), &ts.time_ns);
    let indices = |v: &[usize]| v.iter().map(|&i| i as u64).collect::<Vec<u64>>();
    columns.u64s("timeseries.flows".into(), &indices(&ts.flows));
    columns.u64s("timeseries.channels".into(), &indices(&ts.channels));
    let per_entity: [(&str, &Vec<Vec<u64>>); 21] = [
        ("cwnd_bytes", &ts.cwnd_bytes),
        ("ssthresh_bytes", &ts.ssthresh_bytes),
        ("in_flight_bytes", &ts.in_flight_bytes),
        ("srtt_ns", &ts.srtt_ns),
        ("min_rtt_ns", &ts.min_rtt_ns),
        ("acked_bytes", &ts.acked_bytes),
        ("delivered_bytes", &ts.delivered_bytes),
        ("sent_bytes", &ts.sent_bytes),
        ("written_bytes", &ts.written_bytes),
        ("idt_ewma_ns", &ts.idt_ewma_ns),
        ("delivery_delay_byte_us", &ts.delivery_delay_byte_us),
        ("pacing_rate_bps", &ts.pacing_rate_bps),
        ("cc_state", &ts.cc_state),
        ("delivery_rate_bps", &ts.delivery_rate_bps),
        ("queue_packets", &ts.queue_packets),
        ("queue_bytes", &ts.queue_bytes),
        ("channel_sent_bytes", &ts.channel_sent_bytes),
        ("channel_drops", &ts.channel_drops),
        ("channel_sent_packets", &ts.channel_sent_packets),
        ("channel_sojourn_ns", &ts.channel_sojourn_ns),
        ("channel_busy_ns", &ts.channel_busy_ns),
    ];
    for (name, rows) in per_entity {
        columns.u64_rows(format!("timeseries.{name}"), rows);
    }
    columns.u64s("timeseries.class_channels".into(), &indices(&ts.class_channels));
    columns.u64s("timeseries.class_indices".into(), &indices(&ts.class_indices));
    let per_class: [(&str, &Vec<Vec<u64>>); 11] = [
        ("class_queue_packets", &ts.class_queue_packets),
        ("class_queue_bytes", &ts.class_queue_bytes),
        ("class_limit", &ts.class_limit),
        ("class_enqueued_packets", &ts.class_enqueued_packets),
        ("class_dropped_packets", &ts.class_dropped_packets),
        ("class_sent_packets", &ts.class_sent_packets),
        ("class_sent_bytes", &ts.class_sent_bytes),
        ("class_sojourn_ns", &ts.class_sojourn_ns),
        ("class_rttp_ns", &ts.class_rttp_ns),
        ("class_estimate_rttp_ns", &ts.class_estimate_rttp_ns),
        ("class_threshold_ns", &ts.class_threshold_ns),
    ];
    for (name, rows) in per_class {
        columns.u64_rows(format!("timeseries.{name}"), rows);
    }
}

/// Move a capture out as columns named `captures.<i>.<field>`.
fn capture_columns(i: usize, c: &Capture, columns: &mut Columns) {
    let name = |field: &str| format!("captures.{i}.{field}");
    columns.u64s(name("time_ns"), &c.time_ns);
    columns.u32s(name("flow"), &c.flow);
    columns.u8s(name("is_data"), c.is_data.iter().map(|&b| b as u8));
    columns.u8s(name("flags"), c.flags.iter().copied());
    columns.u64s(name("seq"), &c.seq);
    columns.u64s(name("ack"), &c.ack);
    columns.u32s(name("payload_bytes"), &c.payload_bytes);
    columns.u32s(name("wire_bytes"), &c.wire_bytes);
    columns.u8s(name("retransmission"), c.retransmission.iter().map(|&b| b as u8));
    columns.u64s(name("ts_val_ns"), &c.ts_val_ns);
    columns.u64s(name("ts_ecr_ns"), &c.ts_ecr_ns);
    columns.u8s(name("sack_blocks"), c.sack_blocks.iter().copied());
    let width = 2 * MAX_SACK_BLOCKS;
    let mut bytes = Vec::with_capacity(c.sack.len() * width * 8);
    for row in &c.sack {
        extend_le_u64(&mut bytes, row);
    }
    columns.add(name("sack"), "u64", vec![c.sack.len(), width], bytes);
}

/// The result's JSON with its long columns replaced by descriptions, and the columns' bytes.
fn split_result(mut result: RunResult) -> PyResult<(String, Columns)> {
    let mut columns = Columns::default();
    let timeseries = result.timeseries.take();
    let captures = std::mem::take(&mut result.captures);
    if let Some(ts) = &timeseries {
        timeseries_columns(ts, &mut columns);
    }
    for (i, c) in captures.iter().enumerate() {
        capture_columns(i, c, &mut columns);
    }
    let mut value = serde_json::to_value(&result).map_err(|e| PyValueError::new_err(format!("engine: result: {e}")))?;
    value["timeseries"] = match &timeseries {
        Some(ts) => json!({ "interval_ns": ts.interval_ns }),
        None => Value::Null,
    };
    value["captures"] = captures.iter().map(|c| json!({ "channel": c.channel })).collect();
    value["columns"] = Value::Object(std::mem::take(&mut columns.described));
    Ok((value.to_string(), columns))
}

fn result_to_python<'py>(py: Python<'py>, result: RunResult) -> PyResult<(String, Bound<'py, PyDict>)> {
    let (json_text, columns) = split_result(result)?;
    let arrays = PyDict::new(py);
    for (name, bytes) in columns.bytes {
        arrays.set_item(name, PyBytes::new(py, &bytes))?;
    }
    Ok((json_text, arrays))
}

/// Simulate a resolved scenario (JSON text). Returns the counters as JSON text and the long
/// numeric columns as `{name: bytes}`; the JSON's `columns` gives each one's dtype and shape.
#[pyfunction]
fn run<'py>(py: Python<'py>, spec_json: &str) -> PyResult<(String, Bound<'py, PyDict>)> {
    let spec = spec_from_json(py, spec_json)?;
    let mut sim = Simulator::new(&spec).map_err(|e| engine_error(py, e))?;
    let end = sim.end();
    advance_interruptibly(py, &mut sim, end)?;
    let result = sim.finish().map_err(|e| engine_error(py, e))?;
    result_to_python(py, result)
}

/// A run advanced in steps, so Python can report progress and be interrupted between them.
/// Stepping never changes the result: `finish()` returns exactly what `run()` would.
#[pyclass(module = "bufferlab._core")]
struct Run {
    sim: Option<Simulator>,
}

impl Run {
    fn sim(&self) -> PyResult<&Simulator> {
        self.sim.as_ref().ok_or_else(|| PyValueError::new_err("run: already finished"))
    }
}

#[pymethods]
impl Run {
    #[new]
    fn new(py: Python<'_>, spec_json: &str) -> PyResult<Self> {
        let spec = spec_from_json(py, spec_json)?;
        Ok(Run { sim: Some(Simulator::new(&spec).map_err(|e| engine_error(py, e))?) })
    }

    /// Simulated time reached so far, in ns.
    #[getter]
    fn now_ns(&self) -> PyResult<u64> {
        Ok(self.sim()?.now().as_ns())
    }

    /// Simulated time at which the run ends at the latest, in ns.
    #[getter]
    fn end_ns(&self) -> PyResult<u64> {
        Ok(self.sim()?.end().as_ns())
    }

    /// Simulate up to `until_ns` (without the GIL, looking for signals between slices of
    /// events); returns whether the run is over.
    fn advance(&mut self, py: Python<'_>, until_ns: u64) -> PyResult<bool> {
        let sim = self.sim.as_mut().ok_or_else(|| PyValueError::new_err("run: already finished"))?;
        advance_interruptibly(py, sim, SimTime::from_ns(until_ns))
    }

    /// The result, as `run()` returns it; the run must be over.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<(String, Bound<'py, PyDict>)> {
        if !self.sim()?.is_finished() {
            return Err(PyValueError::new_err("run: not over yet; advance to its end first"));
        }
        let Some(sim) = self.sim.take() else { return Err(PyValueError::new_err("run: already finished")) };
        let result = sim.finish().map_err(|e| engine_error(py, e))?;
        result_to_python(py, result)
    }
}

/// Plan a resolved scenario (JSON text) in one call: check it completely without building the
/// simulator (raises EngineSpecError), and return whether it draws random numbers, i.e. whether
/// its seed matters (`ScenarioSpec::draws_random_numbers`).
#[pyfunction]
fn plan(py: Python<'_>, spec_json: &str) -> PyResult<bool> {
    let spec = spec_from_json(py, spec_json)?;
    bufferlab_core::validate(&spec).map_err(|e| engine_error(py, e))?;
    Ok(spec.draws_random_numbers())
}

/// The engine's TCP defaults (`TcpSpec::default()`) as JSON text: the single source of truth the
/// Python spec layer fills unset options from.
#[pyfunction]
fn tcp_defaults() -> PyResult<String> {
    serde_json::to_string(&bufferlab_core::spec::TcpSpec::default()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Why a distribution (JSON text of `bufferlab_core::traffic::Distribution`) is malformed, or ""
/// if it is fine: the engine's own check, so the spec layer reports it before a run.
#[pyfunction]
fn check_distribution(dist_json: &str) -> PyResult<String> {
    let dist: bufferlab_core::traffic::Distribution =
        serde_json::from_str(dist_json).map_err(|e| PyValueError::new_err(format!("distribution: {e}")))?;
    Ok(dist.check().err().unwrap_or_default())
}

/// The engine's QUIC defaults (`QuicSpec::default()`) as JSON text, like `tcp_defaults`.
#[pyfunction]
fn quic_defaults() -> PyResult<String> {
    serde_json::to_string(&bufferlab_core::spec::QuicSpec::default()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Version of the engine; part of every run's identity in the result store.
#[pyfunction]
fn engine_version() -> &'static str {
    bufferlab_core::ENGINE_VERSION
}

/// Version of the package (the Cargo workspace's, which maturin gives the wheel): what
/// `bufferlab.__version__` reports without reading the installed metadata.
#[pyfunction]
fn package_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("EngineSpecError", m.py().get_type::<EngineSpecError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_class::<Run>()?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    m.add_function(wrap_pyfunction!(package_version, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(check_distribution, m)?)?;
    m.add_function(wrap_pyfunction!(quic_defaults, m)?)?;
    Ok(())
}
