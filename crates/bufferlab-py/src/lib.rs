//! `bufferlab._core`: the Python face of the engine. Conversion and error mapping only.
//!
//! Specs cross the boundary as JSON text (`bufferlab_core::spec`). A result comes back as Arrow
//! tables (`tables.rs` defines each one's columns, once), handed over through the Arrow C stream
//! interface (`arrow.rs`): polars, pyarrow and DuckDB read them without copying a column. The GIL
//! is released while simulating and while the tables are built. Python's derive step hands those
//! tables back to `catalogue` (`catalogue.rs`), which computes the metric catalogue from them with
//! `bufferlab_core::metrics`, so that deriving a run needs no numpy; `figures` computes the
//! end-of-run figures alone, for the run summary; `metric_catalogue` lists the catalogue's
//! metrics, units and definitions, which Python names its tables' columns from.
//!
//! Errors are typed: a spec the engine refuses raises `EngineSpecError` (a `ValueError`) with
//! `.field` (the engine's field path, e.g. `links[0].rate_bps`) and `.reason`. A simulation runs
//! in slices of a bounded number of events, and every `SIGNAL_CHECK_INTERVAL` of wall time the
//! binding takes the GIL back between two slices to let Python handle pending signals, so Ctrl-C
//! or SIGTERM stops a run within a fraction of a second.

mod arrow;
mod catalogue;
mod tables;

use arrow::{Column, Table};
use bufferlab_core::record::result::RunResult;
use bufferlab_core::units::SimTime;
use bufferlab_core::{spec::ScenarioSpec, EngineError, Simulator};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::{Duration, Instant};

pyo3::create_exception!(
    _core,
    EngineSpecError,
    PyValueError,
    "A spec the engine refuses: `.field` is the engine's field path, `.reason` says why."
);

/// Events simulated between two looks at the clock: a few milliseconds of work on any scenario
/// (an event costs well under a microsecond).
const EVENTS_PER_SLICE: u64 = 50_000;

/// Wall time between two looks for a pending signal (`advance_interruptibly`): short enough that
/// an interruption takes effect at once, long enough that the GIL is asked for rarely.
///
/// Taking the GIL back costs the engine little when no other thread runs Python, but a fresh
/// `bufferlab run` has one (`bufferlab.preload` imports numpy and DuckDB while the engine runs),
/// and each time the engine then waits for that thread to hand the GIL over (up to the
/// interpreter's switch interval) and hands it back. Looking after every slice would slow the
/// engine beside the preload by a tenth; a look every 20 ms costs about what one single slice
/// does, and a person does not notice a 20 ms wait for an interruption.
const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(20);

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
/// run its signal handlers every `SIGNAL_CHECK_INTERVAL` (a handler that raises, as Ctrl-C's
/// does, ends the run with that exception). Returns whether the run is over. Where the slices
/// end changes nothing in the result; only the wall clock decides when Python is asked.
fn advance_interruptibly(py: Python<'_>, sim: &mut Simulator, until: SimTime) -> PyResult<bool> {
    loop {
        if let Some(finished) = py.allow_threads(|| simulate_for(sim, until, SIGNAL_CHECK_INTERVAL)) {
            return Ok(finished);
        }
        py.check_signals()?;
    }
}

/// Simulate slices up to `until` for about `interval` of wall time (at least one slice):
/// `Some(finished)` once `until` or the run's end is reached, `None` when the time is up first.
fn simulate_for(sim: &mut Simulator, until: SimTime, interval: Duration) -> Option<bool> {
    let started = Instant::now();
    loop {
        let reached = sim.run_until_bounded(until, EVENTS_PER_SLICE);
        if reached.is_some() || started.elapsed() >= interval {
            return reached;
        }
    }
}

/// The run's result as `{name: Table}` (`tables.rs`), built without the GIL.
fn result_to_python(py: Python<'_>, result: RunResult) -> PyResult<Bound<'_, PyDict>> {
    let built = py.allow_threads(|| tables::tables(result));
    let built = built.map_err(|e| spec_error(py, "engine", &format!("result tables: {e}")))?;
    let out = PyDict::new(py);
    for (name, batch) in built {
        out.set_item(name, Table::new(name, batch))?;
    }
    Ok(out)
}

/// Simulate a resolved scenario (JSON text). Returns the result as Arrow tables by name
/// (`tables.rs`: run, flows, channels, queue_classes, the time series, captures, delay_histograms).
#[pyfunction]
fn run<'py>(py: Python<'py>, spec_json: &str) -> PyResult<Bound<'py, PyDict>> {
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
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if !self.sim()?.is_finished() {
            return Err(PyValueError::new_err("run: not over yet; advance to its end first"));
        }
        let Some(sim) = self.sim.take() else { return Err(PyValueError::new_err("run: already finished")) };
        let result = sim.finish().map_err(|e| engine_error(py, e))?;
        result_to_python(py, result)
    }
}

/// Every result table with no rows, by name: the tables' schemas, for a store to create its
/// tables from before any run.
#[pyfunction]
fn result_schemas(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for (name, schema) in tables::schemas() {
        out.set_item(name, Table::new(name, arrow_array::RecordBatch::new_empty(schema)))?;
    }
    Ok(out)
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

/// A resolved scenario's JSON text with its dumbbell's columns expanded into the nodes, links and
/// flows they stand for (`ScenarioSpec::expanded_json`; raises EngineSpecError).
#[pyfunction]
fn expanded_spec(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    ScenarioSpec::expanded_json(spec_json).map_err(|e| engine_error(py, e))
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
    m.add_class::<Table>()?;
    m.add_class::<Column>()?;
    m.add_function(wrap_pyfunction!(result_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::metric_catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::figures, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::slowest_busy_channel, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::jain, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::entropy, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue::quotients, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(expanded_spec, m)?)?;
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    m.add_function(wrap_pyfunction!(package_version, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(check_distribution, m)?)?;
    m.add_function(wrap_pyfunction!(quic_defaults, m)?)?;
    Ok(())
}
