//! `bufferlab._core`: the Python face of the engine. Conversion and error mapping only.
//!
//! Specs and results cross the boundary as JSON text (see `bufferlab_core::spec` and
//! `bufferlab_core::record::result` for the schema); the GIL is released while simulating.

use bufferlab_core::{spec::ScenarioSpec, EngineError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn spec_from_json(spec_json: &str) -> PyResult<ScenarioSpec> {
    serde_json::from_str(spec_json).map_err(|e| PyValueError::new_err(format!("spec: {e}")))
}

fn engine_error(e: EngineError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Simulate a resolved scenario (JSON text) and return its result as JSON text.
#[pyfunction]
fn run(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec = spec_from_json(spec_json)?;
    let result = py.allow_threads(|| bufferlab_core::run(&spec)).map_err(engine_error)?;
    serde_json::to_string(&result).map_err(|e| PyValueError::new_err(format!("result: {e}")))
}

/// Check a resolved scenario (JSON text) without running it; raises ValueError("field: reason").
#[pyfunction]
fn validate(spec_json: &str) -> PyResult<()> {
    let spec = spec_from_json(spec_json)?;
    bufferlab_core::validate(&spec).map_err(engine_error)
}

/// The engine's TCP defaults (`TcpSpec::default()`) as JSON text: the single source of truth the
/// Python spec layer fills unset options from.
#[pyfunction]
fn tcp_defaults() -> PyResult<String> {
    serde_json::to_string(&bufferlab_core::spec::TcpSpec::default()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Version of the engine; part of every run's identity in the result store.
#[pyfunction]
fn engine_version() -> &'static str {
    bufferlab_core::ENGINE_VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_defaults, m)?)?;
    Ok(())
}
