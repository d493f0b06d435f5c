"""The metric catalogue (shared metrics.md): flow, link and network tables with ccperf's names.

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
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..pipeline.result import column_names, numpy_column, polars_type, record_values
from . import summary
from .catalogue import FLOW_METRICS, FLOW_TABLE, LINK_METRICS, LINK_TABLE, NETWORK_METRICS, NETWORK_TABLE

if TYPE_CHECKING:  # pragma: no cover
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


@dataclass(frozen=True)
class FlowSeries:
    """The per-flow time series (the engine's `flow_timeseries` table: one row per sampled flow and
    sample, flow-major) as ``(flows, samples)`` arrays: `column(name)[row]` is one flow's series."""

    # The table: the engine's Arrow table, or a polars DataFrame of it.
    frame: Any
    time_ns: np.ndarray
    # Row of each sampled flow in the arrays.
    rows: Mapping[int, int]
    _columns: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_table(cls, frame: Any) -> FlowSeries | None:
        """None when no flow was sampled (or no sample taken)."""
        if len(frame) == 0:
            return None
        flow = numpy_column(frame, "flow")
        _, first = np.unique(flow, return_index=True)
        flows = flow[np.sort(first)].tolist()  # in order of appearance
        samples = len(flow) // len(flows)
        return cls(frame=frame, time_ns=numpy_column(frame, "time_ns")[:samples],
                   rows={int(f): row for row, f in enumerate(flows)})

    def __contains__(self, name: str) -> bool:
        return name in column_names(self.frame)

    def column(self, name: str) -> np.ndarray:
        """Series `name` of every sampled flow, ``[row][sample]`` (a view of the table's column)."""
        if name not in self._columns:
            self._columns[name] = numpy_column(self.frame, name).reshape(len(self.rows), self.time_ns.size)
        return self._columns[name]


# Integers below 2**53 are exact doubles, so the float64 quotient of two of them is the correctly
# rounded quotient that Python's int / int gives; larger ones (128-bit counters) are divided as ints.
EXACT_INT = 2**53


def exact_quotients(numerators: Sequence[int] | np.ndarray, denominators: Sequence[int] | np.ndarray | int,
                    ) -> np.ndarray:
    """``numerators[i] / denominators[i]`` of integers (Python ints, or an unsigned integer array
    such as an engine column; one int divides them all) as float64, bit for bit Python's true
    division (a zero denominator gives inf or NaN, for the caller to mask)."""
    quotients: np.ndarray
    with np.errstate(divide="ignore", invalid="ignore"):
        quotients = np.divide(np.asarray(numerators, dtype=np.float64), np.asarray(denominators, dtype=np.float64))
    if _largest(numerators) >= EXACT_INT or _largest(denominators) >= EXACT_INT:
        per_row = np.broadcast_to(np.asarray(denominators, dtype=object), quotients.shape)
        for i, (a, b) in enumerate(zip(np.asarray(numerators, dtype=object).tolist(), per_row.tolist())):
            if (a >= EXACT_INT or b >= EXACT_INT) and b:
                quotients[i] = int(a) / int(b)
    return quotients


def _largest(values: Sequence[int] | np.ndarray | int) -> int:
    if isinstance(values, int):
        return values
    if isinstance(values, np.ndarray):
        return int(values.max()) if values.size else 0
    return max(values, default=0)


def _where(values: np.ndarray, defined: np.ndarray) -> list[float | None]:
    """`values` as Python floats, None where `defined` is False."""
    if defined.all():  # the usual case: no value to leave out
        listed: list[float | None] = values.tolist()
        return listed
    return [v if ok else None for v, ok in zip(values.tolist(), defined.tolist())]


@dataclass(frozen=True)
class ChannelFigures:
    """`analysis.summary`'s per-channel figures of every channel, one list each (None where the
    figure is undefined), bit for bit what its functions give one channel at a time: derive's
    channel table and the link table read the same figures, taken once for all channels with
    numpy (a 10,000-flow dumbbell has 40,002 channels; issue 15)."""

    service_rate_bps: list[int | None]
    utilisation: list[float | None]
    mean_queue_packets: list[float | None]
    mean_sojourn_ns: list[float | None]

    @classmethod
    def of(cls, channels: Sequence[Mapping[str, Any]], end_ns: int, table: Any = None) -> ChannelFigures:
        """The figures of `channels` (the engine's channel records) over a run of `end_ns`; its
        counters are read from `table` (the same channels as an Arrow table or a DataFrame) where
        given, in place."""
        lines = record_values(channels, "rate_bps")
        shapers = record_values(channels, "shaping_rate_bps")
        shaped = any(s is not None for s in shapers)
        rates = [summary.service_rate_of(line, s) for line, s in zip(lines, shapers)] if shaped else lines
        n = len(channels)
        if end_ns <= 0:
            return cls(rates, [None] * n, [None] * n, [summary.mean_sojourn_ns(c) for c in channels])
        # utilisation: busy / end x line / rate, in that order (`summary.utilisation`).
        rated = np.array([r is not None and line is not None for r, line in zip(rates, lines)], dtype=bool)
        busy = exact_quotients(_counter(channels, table, "busy_ns"), end_ns)
        with np.errstate(divide="ignore", invalid="ignore"):
            utilisation = (busy * np.array([line or 0 for line in lines], dtype=np.float64)
                           / np.array([r or 0 for r in rates], dtype=np.float64))
        # The queue's integral is a 128-bit counter: read from the records, as Python ints.
        queue = exact_quotients([int(q) for q in record_values(channels, "queue_packet_ns")], end_ns)
        sent = _counter(channels, table, "sent_packets")
        sojourn = exact_quotients(_counter(channels, table, "sojourn_sum_ns"), sent)
        return cls(rates, _where(utilisation, rated), queue.tolist(), _where(sojourn, sent != 0))


def _counter(records: Sequence[Mapping[str, Any]], table: Any, name: str) -> np.ndarray:
    """An unsigned 64-bit counter of every record, as an array: `table`'s column in place where
    given and without nulls, else taken from the records (a missing or null value counts 0)."""
    if table is not None and name in column_names(table):
        try:
            values = numpy_column(table, name)
        except ValueError:  # nulls: no view
            values = None
        if values is not None and values.dtype.kind == "u":
            return values
    return np.array([int(r.get(name) or 0) for r in records], dtype=np.uint64)


@dataclass(frozen=True)
class FlowFigures:
    """The per-flow figures taken from the end-of-run counters (`analysis.summary`'s and the
    flow table's), one list each (None where undefined), bit for bit what they give one flow at
    a time, for all flows at once (issue 15). A flow's lifetime runs from its start to its
    completion, or to the run's end."""

    lifetime_ns: list[int]
    goodput_bps: list[float | None]
    loss_rate: list[float | None]
    mean_srtt_ns: list[float | None]
    completion_time_ns: list[int | None]
    # The flow table's lifetime means (Mb/s): bytes x 8 over the lifetime in seconds.
    throughput_l4: list[float | None]
    throughput_l7: list[float | None]
    sending_rate_l4: list[float | None]
    sending_rate_l7: list[float | None]
    one_way_delay_ms: list[float | None]
    recovery_time_ms: list[float | None]
    lifetime_s: list[float]

    @classmethod
    def of(cls, flows: Sequence[Mapping[str, Any]], end_ns: int, table: Any = None) -> FlowFigures:
        """The figures of `flows` (the engine's flow records); counters are read from `table` (the
        same flows, Arrow or polars) in place where given."""

        def counter(name: str) -> np.ndarray:
            return _counter(flows, table, name)

        completed = [f.get("completed_ns") for f in flows]
        start = counter("start_ns").astype(np.int64)
        until = np.array([end_ns if c is None else c for c in completed], dtype=np.int64)
        lifetime = until - start
        seconds = lifetime / 1e9
        alive = seconds > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            def per_lifetime(name: str) -> list[float | None]:  # bytes x 8 / s / 1e6, int x 8 exact in float
                return _where(counter(name).astype(np.float64) * 8.0 / seconds / 1e6, alive)

            delivered = counter("bytes_delivered")
            goodput = delivered.astype(np.float64) * 8.0 * 1e9 / lifetime.astype(np.float64)
            sent, samples, episodes = counter("segments_sent"), counter("rtt_samples"), counter("recovery_episodes")
            # The delay integral is a 128-bit counter: read from the records, as Python ints.
            delay = exact_quotients([int(f["delivery_delay_byte_ns"]) for f in flows], delivered) / 1e6
            return cls(
                lifetime_ns=lifetime.tolist(), goodput_bps=_where(goodput, lifetime > 0),
                loss_rate=_where(exact_quotients(counter("segments_retransmitted"), sent), sent != 0),
                mean_srtt_ns=_where(exact_quotients(counter("rtt_sum_ns"), samples), samples != 0),
                completion_time_ns=[None if c is None else int(c - s) for c, s in zip(completed, start.tolist())],
                throughput_l4=per_lifetime("bytes_acked"), throughput_l7=per_lifetime("bytes_delivered"),
                sending_rate_l4=per_lifetime("payload_bytes_sent"), sending_rate_l7=per_lifetime("app_bytes_written"),
                one_way_delay_ms=_where(delay, delivered != 0),
                recovery_time_ms=_where(exact_quotients(counter("recovery_time_ns"), episodes) / 1e6, episodes != 0),
                lifetime_s=seconds.tolist())


@dataclass
class RunData:
    """What the metrics are computed from: a run's counters, time series and spec facts.

    `flows` and `channels` are the rows of the engine's flow and channel tables as dicts (or
    `pipeline.result.Rows` of them, whose columns are read without making the rows:
    `record_values`); `timeseries` its per-flow series, or None when no flow was sampled.
    """

    end_ns: int
    flows: Sequence[Mapping[str, Any]]
    channels: Sequence[Mapping[str, Any]]
    # Per flow (listed, then generated): (src, dst) host names, and its spec (`pcap.flow_descriptions`).
    endpoints: Sequence[tuple[str, str]]
    flow_specs: Sequence[Mapping[str, Any]]
    bottleneck: int | None
    timeseries: FlowSeries | None = None
    # The engine's flow and channel tables (Arrow or polars) of `flows` and `channels`, if at
    # hand: their counters are read from them in place.
    flow_table: Any = None
    channel_table: Any = None

    @classmethod
    def from_result(cls, counters: Mapping[str, Any], flow_timeseries: Any, engine_spec: Mapping[str, Any],
                    endpoints: Sequence[tuple[str, str]], bottleneck: int | None,
                    flow_table: Any = None, channel_table: Any = None) -> RunData:
        """From a run's counters (`EngineResult.counters`), its `flow_timeseries` table (Arrow or
        polars) and, optionally, its flow and channel tables."""
        from .pcap import flow_descriptions

        return cls(end_ns=int(counters["end_ns"]), flows=counters["flows"], channels=counters["channels"],
                   endpoints=endpoints, flow_specs=flow_descriptions(engine_spec, counters["flows"]),
                   bottleneck=summary.pick_bottleneck(counters["channels"], bottleneck),
                   timeseries=FlowSeries.from_table(flow_timeseries), flow_table=flow_table,
                   channel_table=channel_table)

    @functools.cached_property
    def series_block(self) -> _SeriesBlock | None:
        """The sampled flows' per-sample quantities (None: no flow was sampled), computed once for
        the flow and the network tables."""
        return _compute_series_block(self)

    @functools.cached_property
    def flow_figures(self) -> FlowFigures:
        """Every flow's figures from its counters, computed once for the flow tables."""
        return FlowFigures.of(self.flows, self.end_ns, self.flow_table)

    @functools.cached_property
    def channel_figures(self) -> ChannelFigures:
        """Every channel's summary figures, computed once for derive's channel table, the link
        table and the flows' paths (which ask for service rates 100,000s of times on a large run)."""
        return ChannelFigures.of(self.channels, self.end_ns, self.channel_table)

    def service_rate_bps(self, channel: int) -> int | None:
        """`summary.service_rate_bps` of channel `channel`."""
        return self.channel_figures.service_rate_bps[channel]

    def bottleneck_bps(self) -> float | None:
        """Rate of the run's bottleneck channel (the spec's, else the slowest busy one)."""
        if self.bottleneck is None:
            return None
        rate = self.service_rate_bps(self.bottleneck)
        return None if rate is None else float(rate)

    def path_bottleneck_bps(self, flow: int) -> float | None:
        """Rate of the slowest channel on the flow's data path (unlimited channels aside); the
        run's bottleneck for a record without a path."""
        path = self.flows[flow].get("path")
        if not path:
            return self.bottleneck_bps()
        rates = [r for r in (self.service_rate_bps(c) for c in path) if r is not None]
        return float(min(rates)) if rates else None


# --- helpers ------------------------------------------------------------------------------------

def _mean_of(values: np.ndarray) -> float:
    """The mean of a non-empty array, bit for bit what `values.mean()` gives: numpy's pairwise
    sum in float64 over the count. (`ndarray.mean` adds some microseconds of Python around the
    same sum; a run of 10,000 flows takes 200,000 means.)"""
    return float(values.sum(dtype=np.float64)) / values.size


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
    x = np.asarray(cumulative, dtype=np.float64)
    out = np.empty(x.shape)
    out[..., :1] = x[..., :1]  # x[0] - 0.0 is x[0]
    np.subtract(x[..., 1:], x[..., :-1], out=out[..., 1:])
    return out


def interval_rate_mbps(cumulative: np.ndarray, dt_ns: np.ndarray) -> np.ndarray:
    """Per-interval rate in Mb/s of a cumulative byte series (value 0 at t = 0)."""
    increase = _increments(cumulative)
    rate: np.ndarray = increase * 8e3 / dt_ns  # bytes/ns x 8e3 = Mb/s
    return rate


def jain(x: np.ndarray) -> float | None:
    """Jain's fairness index (Σx)² / (n Σx²); None when every x is 0."""
    squares = float((x * x).sum())
    return None if squares == 0 else float(x.sum()) ** 2 / (x.size * squares)


def entropy(x: np.ndarray) -> float | None:
    """Shannon entropy −Σ sᵢ ln sᵢ of the shares sᵢ = xᵢ/Σx (0 ln 0 = 0); None when Σx = 0."""
    total = float(x.sum())
    if total == 0:
        return None
    s = x[x > 0] / total
    return float(-(s * np.log(s)).sum())


def segment_bytes(spec: Mapping[str, Any]) -> tuple[int, int]:
    """A flow's (MSS, header bytes): what a "segment" is in the segment-counted metrics."""
    tcp = spec.get("tcp") or {}
    return int(tcp.get("mss", 1448)), int(tcp.get("header_bytes", 52))


def _lifetime_end(flow: Mapping[str, Any], end_ns: int) -> int:
    return int(flow["completed_ns"]) if flow.get("completed_ns") is not None else end_ns


@dataclass
class _SeriesBlock:
    """Every sampled flow's per-sample quantities as ``(flows, samples)`` arrays, one row per
    sampled flow in flow order, NaN outside the flow's active samples (and where a quantity is
    undefined). Computed for all flows at once: each quantity is elementwise, so a row holds the
    bits a flow's own computation gives (issue 15: 10,000 flows took numpy calls on tiny arrays
    each)."""

    flows: list[int]  # flow index of each row
    row_of: dict[int, int]  # row of each sampled flow
    throughput_l4: np.ndarray
    throughput_l7: np.ndarray
    sending_l4: np.ndarray
    sending_l7: np.ndarray
    delivery_rate: np.ndarray
    delivery_rate_source: list[str]
    cwnd: np.ndarray
    in_flight: np.ndarray
    srtt_ms: np.ndarray
    est_qdelay_ms: np.ndarray
    idt_ms: np.ndarray
    one_way_delay_ms: np.ndarray
    bdp_segments: list[float | None]
    active: np.ndarray  # bool, (flows, samples)


def _compute_series_block(run: RunData) -> _SeriesBlock | None:
    ts = run.timeseries
    if ts is None:
        return None
    flows = [i for i in range(len(run.flows)) if i in ts.rows]
    if not flows:
        return None
    rows = np.array([ts.rows[i] for i in flows], dtype=np.intp)
    t = np.asarray(ts.time_ns, dtype=np.float64)
    dt = _increments(t)
    records = [run.flows[i] for i in flows]
    start = np.array([float(rec["start_ns"]) for rec in records])[:, None]
    end = np.array([float(_lifetime_end(rec, run.end_ns)) for rec in records])[:, None]
    active = (t > start) & (t - dt < end) & (dt > 0)
    segments = [segment_bytes(run.flow_specs[i]) for i in flows]
    mss = np.array([m for m, _ in segments], dtype=np.float64)[:, None]

    def col(name: str) -> np.ndarray:
        return np.asarray(ts.column(name)[rows], dtype=np.float64)

    def kept(values: np.ndarray) -> np.ndarray:
        """`values` in the active samples, NaN elsewhere."""
        return np.where(active, values, np.nan)

    tput4 = interval_rate_mbps(col("acked_bytes"), dt)
    rate = col("delivery_rate_bps") / 1e6 if "delivery_rate_bps" in ts else np.zeros_like(tput4)
    sampled: np.ndarray = np.asarray((rate > 0).any(axis=1))
    # Rate samples where a flow has any; else (a transport without the estimator, or none taken)
    # its acknowledged bytes per interval.
    delivery = np.where(sampled[:, None], np.where(rate > 0, rate, np.nan), tput4)
    sources = ["rate samples" if has else "acknowledged bytes per interval (fallback)" for has in sampled.tolist()]
    srtt = col("srtt_ns")
    srtt_ms = np.where(srtt > 0, srtt / 1e6, np.nan)
    min_rtt = col("min_rtt_ns")
    qdelay = np.where((srtt > 0) & (min_rtt > 0), (srtt - min_rtt) / 1e6, np.nan)
    # The EWMA exists from the second data segment on.
    idt_ms = np.where(col("sent_bytes") > mss, col("idt_ewma_ns") / 1e6, np.nan)
    delivered = _increments(col("delivered_bytes"))
    delay = _increments(col("delivery_delay_byte_us"))
    with np.errstate(invalid="ignore", divide="ignore"):
        owd_ms = np.where(delivered > 0, delay / delivered / 1e3, np.nan)
    bdps: list[float | None] = []
    for i, (m, header) in zip(flows, segments):
        rate_bps, min_rtt_ns = run.path_bottleneck_bps(i), run.flows[i].get("min_rtt_ns")
        bdps.append(None if rate_bps is None or not min_rtt_ns else rate_bps * min_rtt_ns / 1e9 / 8 / (m + header))
    return _SeriesBlock(
        flows=flows, row_of={f: r for r, f in enumerate(flows)},
        throughput_l4=kept(tput4), throughput_l7=kept(interval_rate_mbps(col("delivered_bytes"), dt)),
        sending_l4=kept(interval_rate_mbps(col("sent_bytes"), dt)),
        sending_l7=kept(interval_rate_mbps(col("written_bytes"), dt)),
        delivery_rate=kept(delivery), delivery_rate_source=sources,
        cwnd=kept(col("cwnd_bytes") / mss), in_flight=kept(col("in_flight_bytes") / mss),
        srtt_ms=kept(srtt_ms), est_qdelay_ms=kept(qdelay), idt_ms=kept(idt_ms),
        one_way_delay_ms=kept(owd_ms), bdp_segments=bdps, active=active)


def _kept_groups(keep: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """The rows of `keep` (a boolean array) grouped by how many values they keep: (rows, n) for
    each count n > 0, in increasing order."""
    counts = keep.sum(axis=1)
    return [(np.flatnonzero(counts == n), n) for n in _positive_counts(counts)]


def _kept(values: np.ndarray, keep: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Rows `rows` of `values`, each keeping `n` values (where `keep` is True), as one contiguous
    ``(rows, n)`` array: row r is ``values[r][keep[r]]``. (A boolean selection, not a sort of each
    row's kept values to its front: a third of a dumbbell's metrics; issue 15.)"""
    taken: np.ndarray = (values[keep] if rows.size == values.shape[0]  # every row: no copy of the rows first
                         else values[rows][keep[rows]])
    return taken.reshape(rows.size, n)


def _row_means(values: np.ndarray) -> list[float | None]:
    """The mean of each row's finite values (None for a row without one), bit for bit
    ``row[np.isfinite(row)].mean()``: rows with as many finite values are summed together along
    their contiguous rows (`_row_sums`)."""
    finite = np.isfinite(values)
    means: list[float | None] = [None] * values.shape[0]
    for rows, n in _kept_groups(finite):
        for r, mean in zip(rows.tolist(), (_row_sums(_kept(values, finite, rows, n), n) / n).tolist()):
            means[r] = mean
    return means


def _row_covs(values: np.ndarray) -> list[float | None]:
    """The coefficient of variation of each row's finite values, bit for bit ``std / mean`` of
    ``row[np.isfinite(row)]`` (None without a finite value or with a zero mean; numpy's std of a
    contiguous row is the same sums as of that row alone)."""
    finite = np.isfinite(values)
    out: list[float | None] = [None] * values.shape[0]
    for rows, n in _kept_groups(finite):
        group = _kept(values, finite, rows, n)
        means = _row_sums(group, n) / n
        stds = group.std(axis=1)
        for r, mean, std in zip(rows.tolist(), means.tolist(), stds.tolist()):
            out[r] = None if mean == 0 else std / mean
    return out


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def _positive(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.nan)


# --- flow metrics -------------------------------------------------------------------------------

def _series_metrics(run: RunData) -> dict[str, list[float | None]]:
    """The per-sample flow metrics (means and covs of the series) of every sampled flow, by name,
    one value per row of `run.series_block` (there must be one), computed for all of them at once."""
    block = run.series_block
    assert block is not None
    tput = block.throughput_l4
    rates = [run.path_bottleneck_bps(i) for i in block.flows]
    with np.errstate(invalid="ignore", divide="ignore"):
        power = tput / (block.srtt_ms / 1e3)
        pf = np.log(_positive(tput))
        mpdf = -1.0 / _positive(tput)
        # Rows without a rate or BDP get NaN (their metric is None below).
        per_rate = np.array([np.nan if r is None else r for r in rates])[:, None]
        bw = tput * 1e6 / per_rate
        per_bdp = np.array([b if b else np.nan for b in block.bdp_segments])[:, None]
        bdp = block.in_flight / per_bdp
    means = {name: _row_means(values) for name, values in (
        ("mean_throughput_l4", tput), ("mean_throughput_l7", block.throughput_l7),
        ("mean_delivery_rate_l4", block.delivery_rate), ("mean_sending_rate_l4", block.sending_l4),
        ("mean_sending_rate_l7", block.sending_l7), ("mean_cwnd_l4", block.cwnd),
        ("mean_in_flight_l4", block.in_flight), ("mean_srtt_l4", block.srtt_ms),
        ("mean_est_qdelay_l4", block.est_qdelay_ms), ("mean_idt_ewma_l4", block.idt_ms),
        ("mean_network_power_l4", power), ("mean_utility_pf_l4", pf), ("mean_utility_mpdf_l4", mpdf),
        ("mean_utilization_bw_l4", bw), ("mean_utilization_bdp_l4", bdp),
        ("mean_one_way_delay_l7", block.one_way_delay_ms))}
    covs = {name: _row_covs(values) for name, values in (
        ("cov_throughput_l4", tput), ("cov_throughput_l7", block.throughput_l7),
        ("cov_in_flight_l4", block.in_flight), ("cov_cwnd_l4", block.cwnd), ("cov_srtt_l4", block.srtt_ms))}
    columns = {**means, **covs}
    # Rows without a rate or BDP have no such utilisation.
    columns["mean_utilization_bw_l4"] = [None if rate is None else v
                                         for rate, v in zip(rates, columns["mean_utilization_bw_l4"])]
    columns["mean_utilization_bdp_l4"] = [v if bdp else None
                                          for bdp, v in zip(block.bdp_segments, columns["mean_utilization_bdp_l4"])]
    return columns


def flow_metric_rows(run: RunData) -> list[dict[str, Any]]:
    """One row per flow (`FLOW_TABLE`): its index, name, endpoints, then every flow metric (None
    if undefined), and where its delivery rate came from."""
    columns = flow_metric_columns(run)
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


# Where a flow's delivery rate comes from without series.
NO_SERIES_SOURCE = "acknowledged bytes over the lifetime (no series)"


def flow_metric_columns(run: RunData) -> dict[str, list[Any]]:
    """The flow table (`flow_metric_rows`) by column, `FLOW_TABLE`'s columns in order: the means
    of the sampled flows' series, else lifetime means of their counters (`FlowFigures`)."""
    n = len(run.flows)
    figures = run.flow_figures
    columns: dict[str, list[Any]] = {
        "flow": list(range(n)), "name": [f["name"] for f in run.flows],
        "src": [src for src, _ in run.endpoints[:n]], "dst": [dst for _, dst in run.endpoints[:n]],
        **{name: [None] * n for name in FLOW_METRICS}}
    # Without series: the rates over the lifetime, and the delay of every delivered byte.
    columns.update({
        "mean_throughput_l4": list(figures.throughput_l4), "mean_throughput_l7": list(figures.throughput_l7),
        "mean_delivery_rate_l4": list(figures.throughput_l4), "mean_sending_rate_l4": list(figures.sending_rate_l4),
        "mean_sending_rate_l7": list(figures.sending_rate_l7), "mean_one_way_delay_l7": list(figures.one_way_delay_ms)})
    sources = [NO_SERIES_SOURCE] * n
    block = run.series_block
    if block is not None:
        for name, values in _series_metrics(run).items():
            column = columns[name]
            for flow, value in zip(block.flows, values):
                column[flow] = value
        for flow, source in zip(block.flows, block.delivery_rate_source):
            sources[flow] = source
    columns.update({
        "mean_recovery_time_l4": figures.recovery_time_ms, "flow_completion_time_l4": figures.lifetime_s,
        "total_retransmissions_l4": _counter(run.flows, run.flow_table, "segments_retransmitted").tolist(),
        "total_rtos_l4": _counter(run.flows, run.flow_table, "rtos").tolist(),
        "loss_rate_l4": figures.loss_rate, "delivery_rate_source": sources})
    return columns


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
    end = run.end_ns
    figures = run.channel_figures

    def counter(name: str) -> np.ndarray:
        return _counter(run.channels, run.channel_table, name)

    busy = np.flatnonzero((counter("sent_packets") != 0) | (counter("offered_packets") != 0))
    rows = busy.tolist()

    def counts(name: str) -> list[float]:  # float(count), as numpy converts it
        values: list[float] = counter(name)[busy].astype(np.float64).tolist()
        return values

    names = record_values(run.channels, "name")
    rates = [figures.service_rate_bps[i] for i in rows]
    sojourns = [figures.mean_sojourn_ns[i] for i in rows]
    sent_bytes = counts("sent_bytes")
    return {
        "channel": rows, "name": [names[i] for i in rows],
        "rate_mbps": [None if rate is None else rate / 1e6 for rate in rates],
        "bottleneck": [i == run.bottleneck for i in rows],
        "mean_qdisc_length_l2": [figures.mean_queue_packets[i] for i in rows],
        "max_qdisc_length_l2": counts("max_queue_packets"),
        "mean_qdisc_delay_l2": [None if ns is None else ns / 1e6 for ns in sojourns],
        # bytes x 8e3 / end, as Python takes an int times a float: the int as a float first.
        "mean_sending_rate_l1": [b * 8e3 / end for b in sent_bytes] if end else [None] * len(rows),
        "total_qdisc_drops_l2": counts("dropped_queue_packets"),
        "total_random_losses_l1": counts("dropped_loss_packets"),
        "utilization_l1": [figures.utilisation[i] for i in rows],
    }


# --- network metrics ----------------------------------------------------------------------------

def _positive_counts(counts: np.ndarray) -> list[int]:
    """The distinct positive values of `counts`, in increasing order. (Not `np.unique`: numpy 2.4's
    imports numpy.ma to ask whether its argument is masked, 4-5 ms of a fresh run; issue 15.)"""
    return sorted(set(counts[counts > 0].tolist()))


def _row_sums(rows: np.ndarray, n: int) -> np.ndarray:
    """The sum of each row's first `n` entries, in the order ``row[:n].sum()`` adds them (numpy's
    pairwise summation runs along the contiguous last axis), so that samples taken together give
    the same bits as one sample at a time."""
    sums: np.ndarray = np.ascontiguousarray(rows[:, :n]).sum(axis=1)
    return sums


def _network_samples(tput: np.ndarray, in_flight: np.ndarray, bdp_util: np.ndarray,
                     rate_bps: float | None) -> dict[str, np.ndarray]:
    """Each network metric at each sample (columns of the ``(flows, samples)`` arrays; NaN where a
    sample has no value). The flows active at a sample are those with a throughput there. Samples
    with as many active (or positive-throughput) flows are computed together, one row each."""
    values = {name: np.full(tput.shape[1], np.nan) for name in NETWORK_METRICS}
    # One row per sample (a column of the arrays): its active flows' values, in flow order.
    active = ~np.isnan(tput.T)
    total_all = np.full(tput.shape[1], np.nan)
    for cols, n in _kept_groups(active):
        x = _kept(tput.T, active, cols, n)
        total = total_all[cols] = _row_sums(x, n)
        values["mean_agg_throughput_l4"][cols] = total
        values["mean_agg_in_flight_l4"][cols] = _row_sums(_kept(in_flight.T, active, cols, n), n)
        if rate_bps is not None:
            values["mean_agg_utilization_bw_l4"][cols] = total * 1e6 / rate_bps
        bdp = _kept(bdp_util.T, active, cols, n)
        some_bdp = ~np.isnan(bdp).all(axis=1)
        values["mean_agg_utilization_bdp_l4"][cols[some_bdp]] = np.nansum(bdp, axis=1)[some_bdp]
        squares = _row_sums(x * x, n)
        fair = squares != 0
        # Jain: (Σx)² / (n Σx²), squared by libm's pow as `jain` does (numpy's x ** 2 is x · x,
        # which differs from pow in the last bit about once in a thousand).
        total_squared = np.array([t ** 2 for t in total[fair].tolist()])
        values["mean_jains_fairness_throughput_l4"][cols[fair]] = total_squared / (n * squares[fair])
        values["mean_product_fairness_throughput_l4"][cols] = np.prod(x, axis=1)
    positive = active & (tput.T > 0)
    for cols, n in _kept_groups(positive):
        p = _kept(tput.T, positive, cols, n)
        values["mean_agg_utility_pf_l4"][cols] = _row_sums(np.log(p), n)
        values["mean_agg_utility_mpdf_l4"][cols] = _row_sums(-1.0 / p, n)
        # Entropy: −Σ sᵢ ln sᵢ over the shares sᵢ = xᵢ / Σx of the positive x.
        s = p / total_all[cols, None]
        values["mean_entropy_fairness_throughput_l4"][cols] = -_row_sums(s * np.log(s), n)
    return values


def network_metrics(run: RunData) -> pl.DataFrame:
    """The network table (`network_metric_row`) as a polars DataFrame."""
    return _frame([network_metric_row(run)], NETWORK_TABLE)


def network_metric_row(run: RunData) -> dict[str, Any]:
    """The one row (`net`, `NETWORK_TABLE`): per sample, sums and fairness indices over the flows
    active then, averaged over the samples. Flows without series are left out; with none, every
    value is None."""
    block = run.series_block
    row: dict[str, Any] = {"name": "net", **dict.fromkeys(NETWORK_METRICS)}
    if block is not None:
        tput, in_flight = block.throughput_l4, block.in_flight
        bdp_util = np.full(tput.shape, np.nan)
        with_bdp = [r for r, b in enumerate(block.bdp_segments) if b]
        if with_bdp:
            bdps = np.array([block.bdp_segments[r] for r in with_bdp], dtype=np.float64)[:, None]
            bdp_util[with_bdp] = in_flight[with_bdp] / bdps
        with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
            per_sample = _network_samples(tput, in_flight, bdp_util, run.bottleneck_bps())
        for name, values in per_sample.items():
            defined = values[np.isfinite(values)]  # a sample without a value is left out
            row[name] = _mean_of(defined) if defined.size else None
    return row
