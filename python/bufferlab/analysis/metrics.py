"""The metric catalogue: flow, link and network tables with ccperf's names.

Names follow ccperf's convention ``<stat>_<quantity>_<layer>``: stat is mean, cov (std/mean),
total or agg (sum over flows); layer is l1 (link, headers included), l2 (queue discipline),
l4 (transport) or l7 (application).

How a ``mean_*`` is taken. The time series are sampled every Δ (``[record] interval``, default
10 ms) at t_k = kΔ. A rate in interval k is the increase of a cumulative series over
(t_{k-1}, t_k] divided by Δ; a state (cwnd, in flight, srtt) is its value at t_k. A flow's mean is
over the samples of its active period: intervals that overlap [start, completion] (or the end of
the run for a flow that did not complete). Samples where a quantity is undefined are left out:
srtt before the first RTT sample, one-way delay in an interval that delivered nothing, the
utilities ln(x) and −1/x where the throughput x is 0. A network mean takes, at each sample, the
sum (or fairness index) over the flows active then, and averages those over the samples.

Without time series for a flow (recording off, or the flow not selected), the rates, one-way
delay and totals come from the end-of-run counters as averages over the flow's lifetime, and
the per-sample quantities (cwnd, srtt, utilities, cov) are null.

Deviations from ccperf, by design of the engine:
- The application writes a byte when TCP first sends it (no send buffer is modelled), so
  ``mean_sending_rate_l7`` counts first transmissions and ``mean_one_way_delay_l7`` runs from the
  first transmission of a byte to its in-order delivery (head-of-line blocking included).
- ``mean_delivery_rate_l4`` is the mean of the sender's BBR-style delivery-rate samples (series
  ``delivery_rate_bps``, the TCP and QUIC senders' estimator); for a flow without any (datagram
  sources) it falls back to the bytes newly acknowledged per interval (then it equals
  ``mean_throughput_l4``), and the table says which in ``delivery_rate_source``.
- Link means use the engine's exact counters: the queue length is its time-average (the limit of
  the sample mean as Δ → 0), the queue delay the mean sojourn of every packet that left the queue.

Percentiles (``p50_``, ``p95_``, ``p99_``) are of every packet's value, not of samples: a link's
of the sojourn times of the packets it sent, a datagram flow's of its packets' one-way delays
(send to arrival; null for TCP and QUIC flows, whose delay is their bytes'). They come from the
run's delay histograms (the engine's ``delay_histograms`` table, log-linear buckets: within 1.6 %
of the exact order statistic).

Where they are computed: in the engine crate (crates/bufferlab-core/src/metrics/, called through
`_core.catalogue` with the run's flow, channel and flow time-series tables), so that deriving a
run loads neither numpy nor polars, whose imports would cost a fresh `bufferlab run` more than
the metrics themselves. The numbers are bit for bit those numpy gives (the same operations in the
same order, numpy's pairwise sums), except that the logarithm
is libm's, the same on every machine, where numpy's depended on the CPU (SVML on AVX-512). This
module gathers the inputs (`RunData`), hands the results out by table, and keeps the plotting
helpers (`interval_rate_mbps`, `FlowSeries`) that read series with numpy outside a run. The
metrics' names, units and definitions are the engine's too: its one list (metrics/catalogue.rs),
read through `analysis.catalogue`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..pipeline.engine import core
from ..pipeline.result import column_names, numpy_column, polars_type, record_values
from . import summary
from .catalogue import FLOW_METRICS, FLOW_TABLE, LINK_METRICS, LINK_TABLE, NETWORK_METRICS, NETWORK_TABLE
from .figures import CHANNEL_COUNTERS, FLOW_COUNTERS, ChannelFigures, FlowFigures, engine_table
from .flow_specs import segment_bytes

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import polars as pl

__all__ = ["FLOW_METRICS", "LINK_METRICS", "NETWORK_METRICS", "RunData", "flow_metrics", "link_metrics",
           "interval_rate_mbps", "segment_bytes", "series_mean", "FlowSeries", "network_metrics", "jain", "entropy",
           "flow_metric_rows", "flow_metric_columns", "link_metric_rows", "link_metric_columns", "ChannelFigures",
           "FlowFigures",
           "exact_quotients", "network_metric_row", "FLOW_TABLE", "LINK_TABLE", "NETWORK_TABLE"]

def _frame(rows: list[dict[str, Any]], columns: Mapping[str, str]) -> pl.DataFrame:
    """Rows of one of the catalogue's tables as a polars DataFrame of its types."""
    import polars as pl

    schema = {name: polars_type(kind) for name, kind in columns.items()}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


# --- the engine's tables, as the catalogue reads them (flows and channels: `figures.engine_table`) --

def _series_table(table: Any) -> Any:
    """The flow time series as an engine table (an empty one for none)."""
    if table is None or len(table) == 0:
        return core().Table.from_columns("flow_timeseries", [("flow", "UInt32", [])])
    if hasattr(table, "column_types"):
        return table
    return core().Table.from_ipc("flow_timeseries", table.write_ipc_stream(None).getvalue())


def _histogram_table(table: Any) -> Any:
    """The delay histograms as an engine table (None for none: the percentiles are then null)."""
    if table is None or hasattr(table, "column_types"):
        return table
    return core().Table.from_ipc("delay_histograms", table.write_ipc_stream(None).getvalue())


def _catalogue(flows: Any, channels: Any, series: Any, end_ns: int, segments: Sequence[tuple[int, int]],
               bottleneck: int | None, histograms: Any = None) -> dict[str, Any]:
    """`_core.catalogue` of engine tables (bufferlab-core's `metrics::catalogue`)."""
    result: dict[str, Any] = core().catalogue(flows, channels, series, end_ns, list(segments), bottleneck,
                                              _histogram_table(histograms))
    return result


# --- figures ----------------------------------------------------------------------------------

def exact_quotients(numerators: Sequence[int], denominators: Sequence[int] | int) -> list[float]:
    """``numerators[i] / denominators[i]`` of non-negative integers (one int divides them all),
    bit for bit Python's true division (a zero denominator gives inf or NaN, for the caller to
    mask); bufferlab-core's `metrics::numeric::quotient`."""
    numerators = [int(a) for a in numerators]
    divisors = [int(denominators)] * len(numerators) if isinstance(denominators, int) else [int(b) for b in denominators]
    quotients: list[float] = core().quotients(numerators, divisors)
    return quotients


@dataclass
class RunData:
    """What the metrics are computed from: a run's counters, time series and spec facts.

    `flows` and `channels` are the rows of the engine's flow and channel tables as dicts (or
    `pipeline.result.Rows` of them, whose columns are read without making the rows:
    `record_values`); `timeseries` its `flow_timeseries` table (an engine table or a polars
    DataFrame), or None when no flow was sampled.
    """

    end_ns: int
    flows: Sequence[Mapping[str, Any]]
    channels: Sequence[Mapping[str, Any]]
    # Per flow (listed, then generated): (src, dst) host names, and its spec (`flow_specs.flow_descriptions`).
    endpoints: Sequence[tuple[str, str]]
    flow_specs: Sequence[Mapping[str, Any]]
    bottleneck: int | None
    timeseries: Any = None
    # The engine's flow and channel tables (Arrow or polars) of `flows` and `channels`, if at
    # hand: their counters are read from them in place.
    flow_table: Any = None
    channel_table: Any = None
    # The engine's `delay_histograms` table (Arrow or polars), whose buckets give the delay
    # percentiles (p99_qdisc_delay_l2, p99_one_way_delay_l3, ...); None leaves them null.
    delay_histograms: Any = None

    @classmethod
    def from_result(cls, counters: Mapping[str, Any], flow_timeseries: Any, engine_spec: Mapping[str, Any],
                    endpoints: Sequence[tuple[str, str]], bottleneck: int | None,
                    flow_table: Any = None, channel_table: Any = None, delay_histograms: Any = None) -> RunData:
        """From a run's counters (`EngineResult.counters`), its `flow_timeseries` table (Arrow or
        polars) and, optionally, its flow, channel and delay histogram tables."""
        from .flow_specs import flow_descriptions

        return cls(end_ns=int(counters["end_ns"]), flows=counters["flows"], channels=counters["channels"],
                   endpoints=endpoints, flow_specs=flow_descriptions(engine_spec, counters["flows"]),
                   bottleneck=summary.pick_bottleneck(counters["channels"], bottleneck, channel_table),
                   timeseries=flow_timeseries, flow_table=flow_table, channel_table=channel_table,
                   delay_histograms=delay_histograms)

    @functools.cached_property
    def computed(self) -> dict[str, Any]:
        """The whole catalogue of the run, computed once (bufferlab-core's `metrics::catalogue`):
        figures, flow, link and network tables by column."""
        n = len(self.flows)
        return _catalogue(engine_table("flows", self.flow_table, self.flows, FLOW_COUNTERS),
                          engine_table("channels", self.channel_table, self.channels, CHANNEL_COUNTERS),
                          _series_table(self.timeseries), self.end_ns,
                          [segment_bytes(spec) for spec in self.flow_specs[:n]], self.bottleneck,
                          self.delay_histograms)

    @functools.cached_property
    def flow_figures(self) -> FlowFigures:
        """Every flow's figures from its counters, for the flow tables and the summary."""
        return FlowFigures.from_catalogue(self.computed["flow_figures"])

    @functools.cached_property
    def channel_figures(self) -> ChannelFigures:
        """Every channel's summary figures, for derive's channel table."""
        return ChannelFigures.from_catalogue(self.computed["channel_figures"])


# --- helpers ------------------------------------------------------------------------------------

def series_mean(series: pl.Series) -> float:
    """The mean of a numeric series' non-null values (polars types an aggregate as any Python value)."""
    mean = series.mean()
    if not isinstance(mean, (int, float)):
        raise ValueError(f"{series.name} has no mean (no numeric values): {mean!r}")
    return float(mean)


def _increments(cumulative: np.ndarray) -> np.ndarray:
    """Each sample's increase over the one before, the first's over 0, in float64, along the last
    axis (a series, or one series per row): bit for bit `np.diff(x, prepend=0.0)` without its
    generality."""
    import numpy as np

    x = np.asarray(cumulative, dtype=np.float64)
    out = np.empty(x.shape)
    out[..., :1] = x[..., :1]  # x[0] - 0.0 is x[0]
    np.subtract(x[..., 1:], x[..., :-1], out=out[..., 1:])
    return out


def interval_rate_mbps(cumulative: np.ndarray, dt_ns: np.ndarray) -> np.ndarray:
    """Per-interval rate in Mb/s of a cumulative byte series (value 0 at t = 0), for plots: the
    catalogue's rates (`metrics/catalogue.rs`) are bufferlab-core's, computed the same way."""
    increase = _increments(cumulative)
    rate: np.ndarray = increase * 8e3 / dt_ns  # bytes/ns x 8e3 = Mb/s
    return rate


def jain(x: Sequence[float] | np.ndarray) -> float | None:
    """Jain's fairness index (Σx)² / (n Σx²); None when every x is 0 (bufferlab-core's
    `metrics::network::jain`, the network table's per-sample index)."""
    index: float | None = core().jain([float(v) for v in x])
    return index


def entropy(x: Sequence[float] | np.ndarray) -> float | None:
    """Shannon entropy −Σ sᵢ ln sᵢ of the shares sᵢ = xᵢ/Σx (0 ln 0 = 0); None when Σx = 0
    (bufferlab-core's `metrics::network::entropy`)."""
    value: float | None = core().entropy([float(v) for v in x])
    return value


@dataclass(frozen=True)
class FlowSeries:
    """The per-flow time series (the engine's `flow_timeseries` table: one row per sampled flow and
    sample, flow-major) as ``(flows, samples)`` numpy arrays, for plots and tests: `column(name)[row]`
    is one flow's series. (The catalogue reads the table in Rust.) A flow sampled from a later
    sample on (the last before it started) has zeros before it, the values of a flow that had not
    started."""

    # The table: the engine's Arrow table, or a polars DataFrame of it.
    frame: Any
    time_ns: np.ndarray
    # Row of each sampled flow in the arrays.
    rows: Mapping[int, int]
    # Samples each flow's block of the table holds, in row order (each ends the run's samples).
    lengths: tuple[int, ...] = ()
    _columns: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_table(cls, frame: Any) -> FlowSeries | None:
        """None when no flow was sampled (or no sample taken)."""
        import numpy as np

        if len(frame) == 0:
            return None
        flow = numpy_column(frame, "flow")
        starts = np.concatenate(([0], np.flatnonzero(flow[1:] != flow[:-1]) + 1))  # each block's first row
        lengths = np.diff(starts, append=len(flow))
        longest = int(np.argmax(lengths))
        time_ns = numpy_column(frame, "time_ns")[starts[longest]:starts[longest] + lengths[longest]]
        return cls(frame=frame, time_ns=time_ns, rows={int(flow[s]): row for row, s in enumerate(starts)},
                   lengths=tuple(int(n) for n in lengths))

    def __contains__(self, name: str) -> bool:
        return name in column_names(self.frame)

    def column(self, name: str) -> np.ndarray:
        """Series `name` of every sampled flow, ``[row][sample]`` (a view of the table's column
        when every flow has every sample)."""
        import numpy as np

        if name not in self._columns:
            values = numpy_column(self.frame, name)
            samples = self.time_ns.size
            if all(n == samples for n in self.lengths):
                self._columns[name] = values.reshape(len(self.rows), samples)
            else:
                out = np.zeros((len(self.rows), samples), dtype=values.dtype)
                end = 0
                for row, n in enumerate(self.lengths):
                    out[row, samples - n:] = values[end:end + n]
                    end += n
                self._columns[name] = out
        return self._columns[name]


# --- flow metrics -------------------------------------------------------------------------------

def flow_metric_rows(run: RunData) -> list[dict[str, Any]]:
    """One row per flow (`FLOW_TABLE`): its index, name, endpoints, then every flow metric (None
    if undefined), and where its delivery rate came from."""
    columns = flow_metric_columns(run)
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


def flow_metric_columns(run: RunData) -> dict[str, list[Any]]:
    """The flow table (`flow_metric_rows`) by column, `FLOW_TABLE`'s columns in order: the means
    of the sampled flows' series, else lifetime means of their counters."""
    n = len(run.flows)
    computed = run.computed["flow_metrics"]
    return {"flow": list(range(n)), "name": record_values(run.flows, "name"),
            "src": [src for src, _ in run.endpoints[:n]], "dst": [dst for _, dst in run.endpoints[:n]],
            **{name: computed[name] for name in FLOW_METRICS},
            "delivery_rate_source": computed["delivery_rate_source"]}


def flow_metrics(run: RunData) -> pl.DataFrame:
    """The flow table (`flow_metric_rows`) as a polars DataFrame."""
    return _frame(flow_metric_rows(run), FLOW_TABLE)


# --- link metrics -------------------------------------------------------------------------------

def link_metrics(run: RunData) -> pl.DataFrame:
    """The link table (`link_metric_rows`) as a polars DataFrame."""
    return _frame(link_metric_rows(run), LINK_TABLE)


def link_metric_rows(run: RunData) -> list[dict[str, Any]]:
    """One row per channel that carried traffic (`LINK_TABLE`): every link metric, from the exact
    counters."""
    columns = link_metric_columns(run)
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


def link_metric_columns(run: RunData) -> dict[str, list[Any]]:
    """The link table (`link_metric_rows`) by column, `LINK_TABLE`'s columns in order."""
    computed = run.computed["link_metrics"]
    names = record_values(run.channels, "name")
    rows: list[int] = computed["channel"]
    return {"channel": rows, "name": [names[i] for i in rows], "rate_mbps": computed["rate_mbps"],
            "bottleneck": computed["bottleneck"], **{name: computed[name] for name in LINK_METRICS}}


# --- network metrics ----------------------------------------------------------------------------

def network_metrics(run: RunData) -> pl.DataFrame:
    """The network table (`network_metric_row`) as a polars DataFrame."""
    return _frame([network_metric_row(run)], NETWORK_TABLE)


def network_metric_row(run: RunData) -> dict[str, Any]:
    """The one row (`net`, `NETWORK_TABLE`): per sample, sums and fairness indices over the flows
    active then, averaged over the samples. Flows without series are left out; with none, every
    value is None."""
    computed = run.computed["network_metrics"]
    return {"name": "net", **{name: computed[name] for name in NETWORK_METRICS}}
