"""Type stub of the compiled engine binding (crates/bufferlab-py/src/lib.rs).

Specs cross the boundary as JSON text (crates/bufferlab-core/src/spec.rs, ScenarioSpec); results
as Arrow tables (crates/bufferlab-py/src/tables.rs defines every table's columns) through the
Arrow C stream interface (bufferlab.pipeline.result.EngineResult; polars reads them on demand).
"""

from typing import Any

class EngineSpecError(ValueError):
    """A spec the engine refuses: `.field` is the engine's field path, `.reason` says why."""

    field: str
    reason: str

class Column:
    """One numeric column (UInt8, UInt32, UInt64, Float64, without nulls) for numpy:
    ``numpy.asarray(column)`` views its values in place (read-only)."""

    def __len__(self) -> int: ...
    @property
    def __array_interface__(self) -> dict[str, Any]: ...

class Table:
    """One result table: an Arrow record batch held by the engine's allocation. polars
    (``pl.DataFrame(table)``), pyarrow (``pa.table(table)``) and DuckDB read it in place."""

    @staticmethod
    def from_columns(name: str, columns: list[tuple[str, str, list[Any]]]) -> Table:
        """A new table of (column name, Arrow type name, values) columns; the type one of Utf8,
        Float64, UInt64, UInt32, Boolean, Timestamp(us) (microseconds since the epoch); None is null."""
    def with_columns(self, columns: list[tuple[str, str, list[Any]]]) -> Table:
        """This table with `columns` (as in `from_columns`) after its own."""
    def column_types(self) -> list[tuple[str, str]]:
        """Each column's name and Arrow type name (UInt8, UInt32, UInt64, Float64, Boolean, Utf8,
        Decimal128, Timestamp(us), List(<item>))."""
    def column(self, name: str) -> Column:
        """Column `name`, for numpy."""
    def to_pylist(self) -> list[dict[str, Any]]:
        """The rows as dicts; the 128-bit counters (Decimal128) as ints, nulls as None."""
    def column_values(self, name: str) -> list[Any]:
        """Column `name`'s values as a Python list (None for a null, a 128-bit counter as an int),
        for what has no numpy view: nulls, Utf8, Decimal128, lists."""
    def row(self, index: int) -> dict[str, Any]:
        """Row `index` as a dict (as in `to_pylist`), for a reader of a few rows of a long table."""
    def to_ipc(self) -> bytes:
        """The table as an Arrow IPC stream: its schema, one record batch, the end marker."""
    @staticmethod
    def from_ipc(name: str, data: bytes) -> Table:
        """A table named `name` of an Arrow IPC stream of one record batch (`to_ipc`); raises
        ValueError for anything else."""
    @property
    def name(self) -> str: ...
    @property
    def num_rows(self) -> int: ...
    def __len__(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> Any:
        """A PyCapsule "arrow_array_stream" of the table's one record batch."""
    def __arrow_c_schema__(self) -> Any:
        """A PyCapsule "arrow_schema" of the table's schema."""

def run(spec_json: str) -> dict[str, Table]:
    """Simulate a resolved scenario. Returns its result as tables by name: run (one row: engine
    version, end, events, sampling interval), flows, channels, queue_classes, flow_timeseries,
    channel_timeseries, class_timeseries, captures, delay_histograms.

    Raises EngineSpecError (a ValueError: .field, .reason) for a spec the engine rejects. The GIL
    is released while simulating and while the tables are built.
    """

def result_schemas() -> dict[str, Table]:
    """Every result table with no rows, by name: the tables' schemas."""

def plan(spec_json: str) -> bool:
    """Check a resolved scenario completely without building the simulator; raises
    EngineSpecError("field.path: reason"), e.g. "flows[2]: no route from h1 to h5". Returns whether
    it draws random numbers (whether its seed can change anything)."""

def engine_version() -> str:
    """The engine's version; part of every run's identity in the result store."""

def package_version() -> str:
    """The package's version (the Cargo workspace's)."""


def expanded_spec(spec_json: str) -> str:
    """A resolved scenario's JSON text with its dumbbell's columns (`many_flows`) expanded into the
    nodes, links and flows they stand for; raises EngineSpecError."""


def tcp_defaults() -> str:
    """The engine's TCP defaults (TcpSpec::default()) as JSON text."""


def check_distribution(dist_json: str) -> str:
    """Why a distribution (engine JSON form) is malformed, or "" if it is fine."""


def quic_defaults() -> str:
    """The engine's QUIC defaults (QuicSpec::default()) as JSON text."""


class Run:
    """A run advanced in steps (for progress reports); the result equals `run()`'s."""

    def __init__(self, spec_json: str) -> None:
        """Validate and set up; raises ValueError("field.path: reason")."""

    @property
    def now_ns(self) -> int:
        """Simulated time reached so far, ns."""

    @property
    def end_ns(self) -> int:
        """Simulated time at which the run ends at the latest, ns."""

    def advance(self, until_ns: int) -> bool:
        """Simulate up to `until_ns` (without the GIL); returns whether the run is over."""

    def finish(self) -> dict[str, Table]:
        """The result as `run()` returns it; raises ValueError unless the run is over."""

def metric_catalogue() -> dict[str, list[tuple[str, str, str]]]:
    """The metric catalogue's tables by name (flow_metrics, link_metrics, network_metrics), each
    its metrics in the table's order as (name, unit, definition): the engine's one list of them
    (crates/bufferlab-core/src/metrics/catalogue.rs)."""

def catalogue(flows: Table, channels: Table, flow_timeseries: Table, end_ns: int, segments: list[tuple[int, int]],
              bottleneck: int | None = None, delay_histograms: Table | None = None) -> dict[str, Any]:
    """The metric catalogue of a run from its `flows`, `channels` and `flow_timeseries` tables, the
    run's end, each flow's (MSS, header bytes), the bottleneck channel and its `delay_histograms`
    table (without it, the delay percentiles are null): a dict of
    `flow_figures`, `channel_figures`, `flow_metrics`, `link_metrics` (each a dict of columns as
    lists) and `network_metrics` (a dict of values)."""

def figures(end_ns: int, *, flows: Table | None = None, channels: Table | None = None) -> dict[str, Any]:
    """The end-of-run figures of the flows and the channels of a run that ended at `end_ns`, of the
    tables given only: `flow_figures` if `flows` is given and `channel_figures` if `channels` is."""

def quotients(numerators: list[int], denominators: list[int]) -> list[float]:
    """`numerators[i] / denominators[i]` of integers, each the correctly rounded quotient Python's
    true division gives; inf or NaN for a zero denominator."""

def slowest_busy_channel(channels: Table) -> int | None:
    """The index of the slowest rate-limited channel that sent something; None if every channel is
    unlimited or idle."""

def jain(values: list[float]) -> float | None:
    """Jain's fairness index of `values`; None when every value is 0."""

def entropy(values: list[float]) -> float | None:
    """The entropy −Σ sᵢ ln sᵢ of the shares sᵢ = xᵢ / Σx of `values`; None when Σx = 0."""
