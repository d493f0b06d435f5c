//! A result table for Python through the Arrow PyCapsule interface: an object with
//! `__arrow_c_stream__` (and `__arrow_c_schema__`), which polars, pyarrow and DuckDB read without
//! a copy of the columns (they keep the table's buffers alive through the stream's release
//! callback). No Python Arrow library is needed on this side, nor loaded by handing a table over.
//!
//! A fresh `bufferlab run` derives and stores its result without any Python Arrow library either
//! (importing polars would be a large part of a short run), so a table also offers
//! what that path needs: its rows as dicts (`to_pylist`, or one by index: `row`), a column as
//! Python values (`column_values`), a numeric column as a numpy array without a copy (`column`,
//! through numpy's array interface), its column types (`column_types`), and new tables of Python
//! values (`from_columns`, `with_columns`).
//!
//! A table also crosses to another process as an Arrow IPC stream (`to_ipc`, `from_ipc`):
//! `bufferlab run` writes the store in a child process (python/bufferlab/store/writer_process.py),
//! which gets back the very schema and values, nullability and types included, so that DuckDB
//! stores the same rows as from the table itself.

use std::ffi::CString;
use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::types::{Decimal128Type, Float64Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, ListArray, RecordBatch, RecordBatchIterator,
    StringArray, TimestampMicrosecondArray, UInt32Array, UInt64Array,
};
use arrow_buffer::Buffer;
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{ArrowError, DataType, Field, Schema, TimeUnit};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList, PyString};
use pyo3::IntoPyObjectExt;

/// One table of a run's result (`tables.rs`), held by the engine's allocation until every
/// reader has released it.
#[pyclass(module = "bufferlab._core", name = "Table", frozen)]
#[derive(Debug)]
pub struct Table {
    name: String,
    batch: RecordBatch,
}

impl Table {
    pub fn new(name: &str, batch: RecordBatch) -> Self {
        Table { name: name.to_owned(), batch }
    }

    /// The table's record batch, for what reads its columns in Rust (`catalogue.rs`).
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }
}

/// One numeric column of a table, for numpy: `numpy.asarray(column)` views its values in place
/// (numpy's array interface, version 3, read-only) and keeps the column alive while it does.
#[pyclass(module = "bufferlab._core", name = "Column", frozen)]
#[derive(Debug)]
pub struct Column {
    name: String,
    array: ArrayRef,
}

/// numpy's type string of a column's values ("<u8": little-endian unsigned 8-byte integers).
fn numpy_type(kind: &DataType) -> Option<&'static str> {
    let little = cfg!(target_endian = "little");
    Some(match kind {
        DataType::UInt8 => "|u1",
        DataType::UInt32 if little => "<u4",
        DataType::UInt32 => ">u4",
        DataType::UInt64 if little => "<u8",
        DataType::UInt64 => ">u8",
        DataType::Float64 if little => "<f8",
        DataType::Float64 => ">f8",
        _ => return None,
    })
}

fn values_address(array: &dyn Array) -> usize {
    match array.data_type() {
        DataType::UInt8 => array.as_primitive::<UInt8Type>().values().as_ptr() as usize,
        DataType::UInt32 => array.as_primitive::<UInt32Type>().values().as_ptr() as usize,
        DataType::UInt64 => array.as_primitive::<UInt64Type>().values().as_ptr() as usize,
        _ => array.as_primitive::<Float64Type>().values().as_ptr() as usize,
    }
}

#[pymethods]
impl Column {
    fn __len__(&self) -> usize {
        self.array.len()
    }

    /// numpy's array interface: shape, type and the address of the values (read-only).
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let typestr = numpy_type(self.array.data_type()).ok_or_else(|| {
            PyValueError::new_err(format!("{}: a {} column has no numpy view", self.name, self.array.data_type()))
        })?;
        if self.array.null_count() > 0 {
            return Err(PyValueError::new_err(format!("{}: a column with nulls has no numpy view", self.name)));
        }
        let interface = PyDict::new(py);
        interface.set_item("shape", (self.array.len(),))?;
        interface.set_item("typestr", typestr)?;
        interface.set_item("data", (values_address(self.array.as_ref()), true))?;
        interface.set_item("version", 3)?;
        Ok(interface)
    }
}

/// The values of `array` as Python sees them, in row order: ints, floats, bools, strs or lists,
/// None for a null. A Decimal128 of scale 0 (the engine's 128-bit counters) gives ints. The
/// column's type is matched once, not per value (`to_pylist` converts 50,000 rows of a
/// 10,000-flow run).
fn python_values<'py>(py: Python<'py>, array: &dyn Array) -> PyResult<Vec<Bound<'py, PyAny>>> {
    fn each<'py>(
        py: Python<'py>,
        array: &dyn Array,
        value: impl Fn(usize) -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        (0..array.len()).map(|row| if array.is_null(row) { Ok(py.None().into_bound(py)) } else { value(row) }).collect()
    }
    match array.data_type() {
        DataType::UInt8 => each(py, array, |row| array.as_primitive::<UInt8Type>().value(row).into_bound_py_any(py)),
        DataType::UInt32 => each(py, array, |row| array.as_primitive::<UInt32Type>().value(row).into_bound_py_any(py)),
        DataType::UInt64 => each(py, array, |row| array.as_primitive::<UInt64Type>().value(row).into_bound_py_any(py)),
        DataType::Float64 => {
            each(py, array, |row| array.as_primitive::<Float64Type>().value(row).into_bound_py_any(py))
        }
        DataType::Boolean => each(py, array, |row| array.as_boolean().value(row).into_bound_py_any(py)),
        DataType::Utf8 => each(py, array, |row| array.as_string::<i32>().value(row).into_bound_py_any(py)),
        DataType::Decimal128(_, 0) => {
            each(py, array, |row| array.as_primitive::<Decimal128Type>().value(row).into_bound_py_any(py))
        }
        DataType::List(_) => {
            let lists = array.as_list::<i32>();
            each(py, array, |row| Ok(PyList::new(py, python_values(py, lists.value(row).as_ref())?)?.into_any()))
        }
        other => Err(PyValueError::new_err(format!("no Python value for a {other} column"))),
    }
}

/// A column's Arrow type by the name `column_types` gives it.
fn type_name(kind: &DataType) -> String {
    match kind {
        DataType::Decimal128(_, 0) => "Decimal128".to_owned(),
        DataType::List(item) => format!("List({})", type_name(item.data_type())),
        DataType::Timestamp(TimeUnit::Microsecond, None) => "Timestamp(us)".to_owned(),
        other => other.to_string(),
    }
}

/// A column of Python values (None for null) of the type named `kind`: Utf8, Float64, UInt64,
/// UInt32, Boolean, Timestamp(us) (microseconds since the epoch, no time zone), Decimal128 (a
/// 128-bit counter as ints, scale 0) or List(UInt32) (lists of ints).
fn column_of(name: &str, kind: &str, values: &Bound<'_, PyAny>) -> PyResult<(Field, ArrayRef)> {
    let array: ArrayRef = match kind {
        "Utf8" => Arc::new(StringArray::from(values.extract::<Vec<Option<String>>>()?)),
        "Float64" => Arc::new(Float64Array::from(values.extract::<Vec<Option<f64>>>()?)),
        "UInt64" => Arc::new(UInt64Array::from(values.extract::<Vec<Option<u64>>>()?)),
        "UInt32" => Arc::new(UInt32Array::from(values.extract::<Vec<Option<u32>>>()?)),
        "Boolean" => Arc::new(BooleanArray::from(values.extract::<Vec<Option<bool>>>()?)),
        "Timestamp(us)" => Arc::new(TimestampMicrosecondArray::from(values.extract::<Vec<Option<i64>>>()?)),
        "Decimal128" => {
            let values = values.extract::<Vec<Option<i128>>>()?;
            let decimals = Decimal128Array::from(values).with_precision_and_scale(38, 0);
            Arc::new(decimals.map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?)
        }
        "List(UInt32)" => {
            let lists = values.extract::<Vec<Option<Vec<u32>>>>()?;
            Arc::new(ListArray::from_iter_primitive::<UInt32Type, _, _>(
                lists.into_iter().map(|list| list.map(|items| items.into_iter().map(Some))),
            ))
        }
        other => return Err(PyValueError::new_err(format!("{name}: no column type {other:?}"))),
    };
    Ok((Field::new(name, array.data_type().clone(), true), array))
}

fn batch_of(
    name: &str,
    mut fields: Vec<Field>,
    mut arrays: Vec<ArrayRef>,
    columns: Vec<(String, String, Bound<'_, PyAny>)>,
) -> PyResult<RecordBatch> {
    for (column, kind, values) in &columns {
        let (field, array) = column_of(column, kind, values)?;
        fields.push(field);
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))
}

/// Writes `batch` as an Arrow IPC stream into `out`: its schema, the batch, the end-of-stream
/// marker.
fn write_ipc_stream<W: Write>(batch: &RecordBatch, out: W) -> Result<W, ArrowError> {
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(out, batch.schema().as_ref())?;
    writer.write(batch)?;
    writer.into_inner()
}

/// The length of `batch`'s Arrow IPC stream, counted as it is written nowhere: the stream's
/// buffers are only measured, not copied.
fn ipc_stream_len(batch: &RecordBatch) -> Result<usize, ArrowError> {
    Ok(write_ipc_stream(batch, ByteCount(0))?.0)
}

/// A writer that keeps only the count of the bytes written to it.
struct ByteCount(usize);

impl Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The one record batch of an Arrow IPC stream (`write_ipc_stream`), its arrays pointing into `data`
/// (the bytes object, held for as long as they live) rather than into copies of it: the stream
/// aligns every buffer to 64 bytes of its start, and a bytes object's data to 16 bytes.
fn batch_of_ipc(data: PyBackedBytes) -> Result<RecordBatch, ArrowError> {
    let mut data = Buffer::from(bytes::Bytes::from_owner(data));
    let mut decoder = arrow_ipc::reader::StreamDecoder::new();
    let batch = decoder.decode(&mut data)?;
    let rest = decoder.decode(&mut data)?;
    decoder.finish()?;
    match (batch, rest) {
        (Some(batch), None) => Ok(batch),
        (None, _) => Err(ArrowError::IpcError("no record batch".to_owned())),
        (Some(_), Some(_)) => Err(ArrowError::IpcError("more than one record batch".to_owned())),
    }
}

fn capsule_name(name: &str) -> PyResult<CString> {
    CString::new(name).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl Table {
    /// A new table named `name` of `columns`: (column name, type name, values) each, the type
    /// one of Utf8, Float64, UInt64, UInt32, Boolean, Timestamp(us); None is null.
    #[staticmethod]
    fn from_columns(name: &str, columns: Vec<(String, String, Bound<'_, PyAny>)>) -> PyResult<Table> {
        Ok(Table::new(name, batch_of(name, Vec::new(), Vec::new(), columns)?))
    }

    /// This table with `columns` (as in `from_columns`, one value per row) after its own.
    fn with_columns(&self, columns: Vec<(String, String, Bound<'_, PyAny>)>) -> PyResult<Table> {
        let fields = self.batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        Ok(Table::new(&self.name, batch_of(&self.name, fields, self.batch.columns().to_vec(), columns)?))
    }

    /// The table as an Arrow IPC stream (bytes): schema, one record batch, end of stream. Encoded
    /// without the GIL.
    ///
    /// The stream is written straight into the bytes object, sized by a first pass that only
    /// counts: encoding it into a buffer of its own and copying that into the bytes would take
    /// twice the stream's size in fresh memory, and its page faults.
    fn to_ipc<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let failed = |e: ArrowError| PyValueError::new_err(format!("{}: Arrow IPC stream: {e}", self.name));
        let len = py.allow_threads(|| ipc_stream_len(&self.batch)).map_err(failed)?;
        PyBytes::new_with(py, len, |room: &mut [u8]| {
            let rest = py.allow_threads(|| write_ipc_stream(&self.batch, &mut room[..])).map_err(failed)?;
            match rest.len() {
                0 => Ok(()),
                left => Err(failed(ArrowError::IpcError(format!("{left} of {len} bytes counted but not written")))),
            }
        })
    }

    /// A table named `name` of an Arrow IPC stream of one record batch (`to_ipc`), decoded
    /// without the GIL and without a copy: the table holds on to `data` (bytes).
    #[staticmethod]
    fn from_ipc(py: Python<'_>, name: &str, data: PyBackedBytes) -> PyResult<Table> {
        let batch = py.allow_threads(|| batch_of_ipc(data));
        Ok(Table::new(name, batch.map_err(|e| PyValueError::new_err(format!("{name}: Arrow IPC stream: {e}")))?))
    }

    /// The table's name (`flows`, `flow_timeseries`, ...).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Each column's name and Arrow type: UInt8, UInt32, UInt64, Float64, Boolean, Utf8,
    /// Decimal128 (the engine's 128-bit counters, scale 0), Timestamp(us), List(<item type>).
    fn column_types(&self) -> Vec<(String, String)> {
        self.batch.schema().fields().iter().map(|f| (f.name().clone(), type_name(f.data_type()))).collect()
    }

    /// Column `name`, for numpy (`Column`).
    fn column(&self, name: &str) -> PyResult<Column> {
        let array = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("{}: no column {name:?}", self.name)))?;
        Ok(Column { name: name.to_owned(), array: array.clone() })
    }

    /// Column `name`'s values as a Python list (`python_values`: None for a null, a 128-bit
    /// counter as an int), for what has no numpy view: nulls, Utf8, Decimal128, lists.
    fn column_values<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
        let array = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("{}: no column {name:?}", self.name)))?;
        PyList::new(py, python_values(py, array.as_ref())?)
    }

    /// Row `index` as a dict (as in `to_pylist`), for a reader of a few rows of a long table.
    fn row<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyDict>> {
        if index >= self.batch.num_rows() {
            return Err(PyIndexError::new_err(format!("{}: no row {index} of {}", self.name, self.batch.num_rows())));
        }
        let values = PyDict::new(py);
        for (field, column) in self.batch.schema().fields().iter().zip(self.batch.columns()) {
            let value = python_values(py, column.slice(index, 1).as_ref())?.pop().expect("one value");
            values.set_item(field.name(), value)?;
        }
        Ok(values)
    }

    /// The rows as dicts, column name to value (`python_values`), in the table's order. Each
    /// column is converted at once, and every row's dict is a copy of one made with the column
    /// names (keys hashed once, the dict sized once), its values then replaced.
    fn to_pylist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let schema = self.batch.schema();
        let names: Vec<Bound<'py, PyString>> = schema.fields().iter().map(|f| PyString::new(py, f.name())).collect();
        let columns = self
            .batch
            .columns()
            .iter()
            .map(|column| python_values(py, column.as_ref()))
            .collect::<PyResult<Vec<_>>>()?;
        let template = PyDict::new(py);
        for name in &names {
            template.set_item(name, py.None())?;
        }
        let rows = (0..self.batch.num_rows())
            .map(|row| {
                let values = template.copy()?;
                for (name, column) in names.iter().zip(&columns) {
                    values.set_item(name, &column[row])?;
                }
                Ok(values)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
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
