//! A result table for Python through the Arrow PyCapsule interface: an object with
//! `__arrow_c_stream__` (and `__arrow_c_schema__`), which polars, pyarrow and DuckDB read without
//! a copy of the columns (they keep the table's buffers alive through the stream's release
//! callback). No Python Arrow library is needed on this side, nor loaded by handing a table over.

use std::ffi::CString;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// One table of a run's result (`tables.rs`), held by the engine's allocation until every
/// reader has released it.
#[pyclass(module = "bufferlab._core", name = "Table", frozen)]
#[derive(Debug)]
pub struct Table {
    name: &'static str,
    batch: RecordBatch,
}

impl Table {
    pub fn new(name: &'static str, batch: RecordBatch) -> Self {
        Table { name, batch }
    }
}

fn capsule_name(name: &str) -> PyResult<CString> {
    CString::new(name).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl Table {
    /// The table's name (`flows`, `flow_timeseries`, ...).
    #[getter]
    fn name(&self) -> &'static str {
        self.name
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// The table as an Arrow C stream of one record batch, in a capsule named
    /// "arrow_array_stream". The stream is offered in the table's own schema: a consumer's
    /// `requested_schema` is a request the interface lets a producer decline.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new(py, stream, Some(capsule_name("arrow_array_stream")?))
    }

    /// The table's schema as an Arrow C schema, in a capsule named "arrow_schema".
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.batch.schema().as_ref())
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", self.name)))?;
        PyCapsule::new(py, schema, Some(capsule_name("arrow_schema")?))
    }

    fn __repr__(&self) -> String {
        format!("<bufferlab._core.Table {} ({} rows)>", self.name, self.batch.num_rows())
    }
}
