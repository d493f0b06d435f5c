"""A run's result in Python: the engine's Arrow tables, and polars DataFrames of them on demand.

The engine hands its result over as Arrow tables (`_core.Table`) through the Arrow C stream
interface (crates/bufferlab-py/src/tables.rs names and types every column, once); polars, pyarrow
and DuckDB read each one without copying a column. The tables, one row per ...:

    flows               flow: the engine's FlowRecord, with its index `flow`
    channels            link direction: ChannelRecord, with its index `channel`
    queue_classes       sub-buffer of a split queue (channel, sub_buffer): QueueClassRecord
    flow_timeseries     sampled flow x sample (flow, time_ns): cwnd, srtt, cumulative bytes, ...
    channel_timeseries  sampled channel x sample (channel, time_ns): queue length, drops, ...
    class_timeseries    sub-buffer x sample (channel, sub_buffer, time_ns)
    captures            captured packet (capture, channel, packet): time, flow, flags, seq, ...
    delay_histograms    non-empty bucket of a delay distribution (subject, id, lower_ns): a
                        channel's sojourn times, a datagram flow's one-way delays

and the run's scalars (engine version, simulated end, events, sampling interval). Rows come in
the engine's order: by index, then by sample time.

`result.flows` (and each table's name) is a polars DataFrame, made when first asked for;
`bufferlab run` itself derives and stores a result from the Arrow tables (`arrow`, `rows`,
`numpy_column`) without loading polars, whose import would be a large part of a short run.
"""

from __future__ import annotations

import copyreg
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, SupportsIndex

from .engine import EngineMissing, core

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import polars as pl

__all__ = ["EngineResult", "ENGINE_TABLES", "engine_schemas", "engine_column_types", "rows", "numpy_column",
           "column_names", "polars_type", "Rows", "record_values"]

# The engine's tables besides `run`, in the order the store writes them.
ENGINE_TABLES = ("flows", "channels", "queue_classes", "flow_timeseries", "channel_timeseries", "class_timeseries",
                 "captures", "delay_histograms")


def rows(table: Any) -> list[dict[str, Any]]:
    """An Arrow table's rows as dicts (`_core.Table.to_pylist`; a polars DataFrame's `to_dicts`).
    The engine's 128-bit counters come as ints."""
    if hasattr(table, "to_pylist"):
        return list(table.to_pylist())
    return list(table.to_dicts())


class Rows(Sequence[dict[str, Any]]):
    """An engine table's rows as dicts (`rows`), made when first iterated over, and its columns as
    lists (`values`) without them: derive reads 40,002 channels of a 10,000-flow run by column
    and a row or two by index."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._rows: list[dict[str, Any]] | None = None

    def all(self) -> list[dict[str, Any]]:
        """Every row, as dicts (made once)."""
        if self._rows is None:
            self._rows = rows(self._table)
        return self._rows

    def __len__(self) -> int:
        return len(self._table)

    def __getitem__(self, index: Any) -> Any:
        if self._rows is None and isinstance(index, int) and hasattr(self._table, "row"):
            return self._table.row(index + len(self) if index < 0 else index)
        return self.all()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.all())

    def values(self, name: str) -> list[Any]:
        """Column `name` as a list, the rows' values (None for a null, and for a column the table
        lacks, as a row's `get` gives)."""
        if self._rows is None and hasattr(self._table, "column_values"):
            if name not in column_names(self._table):
                return [None] * len(self)
            values: list[Any] = self._table.column_values(name)
            return values
        return [row.get(name) for row in self.all()]


def record_values(records: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    """Field `name` of every record (None where missing): a `Rows`' column, or each record's."""
    if isinstance(records, Rows):
        return records.values(name)
    return [record.get(name) for record in records]


def numpy_column(table: Any, name: str) -> np.ndarray:
    """Column `name` of an Arrow table as a numpy array, without a copy (a non-null numeric column)."""
    import numpy as np

    if hasattr(table, "to_pylist"):
        return np.asarray(table.column(name))
    return np.asarray(table[name].to_numpy())


def polars_type(arrow_type: str) -> pl.DataType:
    """The polars type of a column that derive and the metric catalogue declare by its Arrow type
    name (`_core.Table.column_types`: Boolean, UInt32, UInt64, Float64, Utf8)."""
    import polars as pl

    types: dict[str, pl.DataType] = {"Boolean": pl.Boolean(), "UInt32": pl.UInt32(), "UInt64": pl.UInt64(),
                                     "Float64": pl.Float64(), "Utf8": pl.String()}
    return types[arrow_type]


def column_names(table: Any) -> list[str]:
    """An Arrow table's column names, in order."""
    if hasattr(table, "column_types"):
        return [name for name, _ in table.column_types()]
    return list(table.columns)


def _pickled_table(table: Any) -> tuple[Any, tuple[str, IpcStream]]:
    """How an engine table pickles: as its Arrow IPC stream (`to_ipc`), which `from_ipc` decodes
    into the same table (schema, nullability and values) without copying a column. A sweep's
    workers send their derived runs to the one process that stores them; the reference
    dumbbell's 19 MB of tables encode in ~3 ms this way, where a polars DataFrame's pickle took
    ~50 ms, a fifth of the run."""
    return core().Table.from_ipc, (table.name, IpcStream(table.to_ipc()))


class IpcStream:
    """A table's Arrow IPC stream on its way into a pickle: a buffer of its own beside the
    pickle (out of band, PEP 574) where the pickler takes such buffers, else bytes in it; either
    way it unpickles as bytes.

    A Dask worker pickles a finished run with protocol 5 and a buffer callback, and sends each
    out-of-band buffer as a frame of its own, as it is. In the pickle, the reference dumbbell's
    19 MB of streams were copied into one fresh bytes object, which Dask then searched whole
    for the text "__main__" (its check for code to pickle by value): ~30 ms of the worker's CPU
    per run. Protocols before 5 (the default `pickle.dumps`, `copy.deepcopy`) have no such
    buffers, and get the bytes."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, tuple[Any]]:
        if int(protocol) >= 5:
            from pickle import PickleBuffer  # (a module `bufferlab run` does not load otherwise)

            return _stream_bytes, (PickleBuffer(self.data),)
        return _stream_bytes, (self.data,)


def _stream_bytes(buffer: Any) -> bytes:
    """An unpickled `IpcStream` as the bytes `from_ipc` takes: the bytes themselves, or those
    an out-of-band buffer views whole (Dask hands a received frame over as a view of bytes it
    made), else a copy of the buffer."""
    if type(buffer) is bytes:
        return buffer
    view = memoryview(buffer)
    whole = view.obj
    if type(whole) is bytes and view.contiguous and view.nbytes == len(whole):
        return whole
    return view.tobytes()


def _register_pickling() -> None:
    try:
        table = core().Table
    except EngineMissing:  # pragma: no cover - only without a build
        return
    copyreg.pickle(table, _pickled_table)


_register_pickling()


@dataclass(frozen=True)
class EngineResult:
    """What the engine computed in one run (see the module docstring)."""

    engine_version: str
    end_ns: int
    # Scheduler events processed: the work done, not part of the result's content.
    events: int
    # The sampling interval; None when nothing was sampled (every time-series table is empty).
    sample_interval_ns: int | None
    # Each of `ENGINE_TABLES` as the engine made it: an Arrow table (`_core.Table`, or anything
    # with `__arrow_c_stream__`, such as a polars DataFrame).
    tables: Mapping[str, Any]
    _frames: dict[str, pl.DataFrame] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_engine(cls, tables: Mapping[str, Any]) -> EngineResult:
        """The result of `_core.run` (or `Run.finish`): Arrow tables by name."""
        run = rows(tables["run"])[0]
        return cls(engine_version=str(run["engine_version"]), end_ns=int(run["end_ns"]), events=int(run["events"]),
                   sample_interval_ns=run["sample_interval_ns"], tables={name: tables[name] for name in ENGINE_TABLES})

    def with_tables(self, **tables: Any) -> EngineResult:
        """This result with some tables replaced by name (Arrow tables or polars DataFrames)."""
        unknown = set(tables) - set(ENGINE_TABLES)
        if unknown:
            raise KeyError(f"no engine table {sorted(unknown)[0]!r} (known: {', '.join(ENGINE_TABLES)})")
        return replace(self, tables={**self.tables, **tables})

    def arrow(self, name: str) -> Any:
        """One of `ENGINE_TABLES` by name, as the engine handed it over."""
        if name not in ENGINE_TABLES:
            raise KeyError(f"no engine table {name!r} (known: {', '.join(ENGINE_TABLES)})")
        return self.tables[name]

    def table(self, name: str) -> pl.DataFrame:
        """One of `ENGINE_TABLES` by name, as a polars DataFrame (read in place, made once)."""
        if name not in self._frames:
            import polars as pl

            self._frames[name] = pl.DataFrame(self.arrow(name))
        return self._frames[name]

    @property
    def flows(self) -> pl.DataFrame:
        return self.table("flows")

    @property
    def channels(self) -> pl.DataFrame:
        return self.table("channels")

    @property
    def queue_classes(self) -> pl.DataFrame:
        return self.table("queue_classes")

    @property
    def flow_timeseries(self) -> pl.DataFrame:
        return self.table("flow_timeseries")

    @property
    def channel_timeseries(self) -> pl.DataFrame:
        return self.table("channel_timeseries")

    @property
    def class_timeseries(self) -> pl.DataFrame:
        return self.table("class_timeseries")

    @property
    def captures(self) -> pl.DataFrame:
        return self.table("captures")

    @property
    def delay_histograms(self) -> pl.DataFrame:
        return self.table("delay_histograms")

    def equals(self, other: EngineResult) -> bool:
        """Whether `other` holds the same facts: every table and the scalars but the work done (events)."""
        return (self.engine_version, self.end_ns, self.sample_interval_ns) == (
            other.engine_version, other.end_ns, other.sample_interval_ns) and all(
            self.table(name).equals(other.table(name)) for name in ENGINE_TABLES)

    def counters(self) -> dict[str, Any]:
        """The run's counters as plain records, the shape the run summary reads (`analysis.summary`):
        engine_version, end_ns, events, and one dict per flow and per channel (`Rows`: made when
        read, the channels' columns read without them)."""
        return {"engine_version": self.engine_version, "end_ns": self.end_ns, "events": self.events,
                "flows": rows(self.arrow("flows")), "channels": Rows(self.arrow("channels"))}


def engine_schemas() -> dict[str, pl.Schema]:
    """Every engine table's columns and types (the engine's definition), without running it."""
    import polars as pl

    empty = core().result_schemas()
    return {name: pl.DataFrame(empty[name]).schema for name in ENGINE_TABLES}


def engine_column_types() -> dict[str, dict[str, str]]:
    """Every engine table's columns and their Arrow type names (`_core.Table.column_types`)."""
    empty = core().result_schemas()
    return {name: dict(empty[name].column_types()) for name in ENGINE_TABLES}
