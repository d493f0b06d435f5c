"""Time series of a stored run as lines to draw: one quantity of chosen flows or channels.

Every quantity is the stored sample or, for a rate, the increase of a stored cumulative series
over the sampling interval (as the metric catalogue takes it, `analysis.metrics`):

| quantity | from | unit |
|---|---|---|
| cwnd, in_flight | cwnd_bytes, in_flight_bytes / MSS | segments |
| cwnd_kb | cwnd_bytes / 1000 (seed 004's iperf trace) | kB |
| srtt | srtt_ns (left out before the first RTT sample) | ms |
| throughput | increase of acked_bytes / interval | Mb/s |
| delivery_rate, pacing_rate | delivery_rate_bps, pacing_rate_bps | Mb/s |
| queue | queue_packets | packets |
| queue_bytes | queue_bytes / 1000 | kB |
| sojourn | increase of sojourn_ns / increase of sent_packets (mean of the packets sent in the interval) | ms |
| link_rate | increase of sent_bytes / interval | Mb/s |
| drops | increase of drops | packets per interval |
| ecn_alpha | ecn_alpha: DCTCP's α, the fraction of bytes it estimates marked (none for other controllers) | fraction |
| aqm_probability | aqm_probability: RED's p_b, PIE's drop_prob, DualPI2's p' | probability |
| aqm_signal | aqm_signal: RED's average queue (packets); PIE's and DualPI2's queueing delay (ms) | packets or ms |
| aqm_state | aqm_state: CoDel 1 while dropping; FQ-CoDel the flow queues dropping | queues |
| aqm_count | aqm_count: CoDel's count (FQ-CoDel: the largest of its dropping queues'); RED's count | packets |
| ce_marks, aqm_drops | increase of ce_marks, aqm_drops | packets per interval |
| tail_drops | increase of drops − aqm_drops (a full queue's drops and the link's losses) | packets per interval |

The AQM's columns are NULL (no value drawn) where the queue discipline keeps no such quantity
(`store.tables.AQM_COLUMNS` says which keeps which).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..analysis.metrics import interval_rate_mbps, segment_bytes
from ..store.reader import series_stored
from .common import PlotError, RunInfo, TimeWindow, pick_names

if TYPE_CHECKING:  # pragma: no cover
    from ..store.reader import Results

__all__ = ["Quantity", "QUANTITIES", "FLOW_QUANTITIES", "LINK_QUANTITIES", "Line", "flow_lines", "link_lines",
           "recorded_names", "default_flows", "MAX_DEFAULT_FLOWS"]

# Without --flows, a time plot draws at most this many flows (the first ones): more lines than
# colours is no longer a figure anyone can read.
MAX_DEFAULT_FLOWS = 10

Columns = Mapping[str, np.ndarray]


def _interval_ns(c: Columns) -> np.ndarray:
    return np.diff(c["time_ns"].astype(np.float64), prepend=0.0)


def _positive_ms(ns: np.ndarray) -> np.ndarray:
    return np.where(ns > 0, ns / 1e6, np.nan)


def _optional(c: Columns, column: str) -> np.ndarray:
    """A nullable column as floats, NaN where NULL (and all NaN in a run stored before the column
    existed, which reads it as NULL)."""
    values = c.get(column)
    if values is None:
        return np.full(len(c["time_ns"]), np.nan)
    return np.asarray([np.nan if v is None else v for v in values] if values.dtype == object else values,
                      dtype=np.float64)


def _per_interval(c: Columns, column: str) -> np.ndarray:
    """The increase of a cumulative nullable column over each interval."""
    return np.diff(_optional(c, column), prepend=0.0)


def _aqm_signal(c: Columns) -> np.ndarray:
    """RED's average queue as it is (packets, or bytes in byte mode); PIE's and DualPI2's delay
    from ns to ms. The series do not carry the queue's kind: RED is the one of the three that
    keeps a count, so a signal without a count is a delay."""
    signal = _optional(c, "aqm_signal")
    count = _optional(c, "aqm_count")
    delay = np.isnan(count) & ~np.isnan(signal)
    return np.where(delay, signal / 1e6, signal)


def _per_packet_ms(c: Columns) -> np.ndarray:
    sojourn = np.diff(c["sojourn_ns"].astype(np.float64), prepend=0.0)
    packets = np.diff(c["sent_packets"].astype(np.float64), prepend=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(packets > 0, sojourn / packets / 1e6, np.nan)


@dataclass(frozen=True)
class Quantity:
    """A plottable series: its axis label (with unit), whether it is a flow's or a channel's, and
    how it comes from the stored columns (and the flow's MSS)."""

    name: str
    label: str
    kind: str  # "flow" or "channel"
    compute: Callable[[Columns, int], np.ndarray]

    @property
    def unit(self) -> str:
        """The unit of the label, in its last parentheses: "cwnd (kB)" -> "kB"."""
        return self.label.rsplit("(", 1)[-1].rstrip(")") if "(" in self.label else ""


FLOW_QUANTITIES: dict[str, Quantity] = {q.name: q for q in (
    Quantity("cwnd", "cwnd (segments)", "flow", lambda c, mss: c["cwnd_bytes"] / mss),
    Quantity("cwnd_kb", "cwnd (kB)", "flow", lambda c, mss: c["cwnd_bytes"] / 1e3),
    Quantity("in_flight", "in flight (segments)", "flow", lambda c, mss: c["in_flight_bytes"] / mss),
    Quantity("srtt", "sRTT (ms)", "flow", lambda c, mss: _positive_ms(c["srtt_ns"].astype(np.float64))),
    Quantity("throughput", "throughput (Mb/s)", "flow",
             lambda c, mss: interval_rate_mbps(c["acked_bytes"], _interval_ns(c))),
    Quantity("delivery_rate", "delivery rate (Mb/s)", "flow", lambda c, mss: c["delivery_rate_bps"] / 1e6),
    Quantity("pacing_rate", "pacing rate (Mb/s)", "flow", lambda c, mss: c["pacing_rate_bps"] / 1e6),
    Quantity("ecn_alpha", "DCTCP α", "flow", lambda c, mss: _optional(c, "ecn_alpha")),
)}
LINK_QUANTITIES: dict[str, Quantity] = {q.name: q for q in (
    Quantity("queue", "queue (packets)", "channel", lambda c, _: c["queue_packets"].astype(np.float64)),
    Quantity("queue_bytes", "queue (kB)", "channel", lambda c, _: c["queue_bytes"] / 1e3),
    Quantity("sojourn", "sojourn (ms)", "channel", lambda c, _: _per_packet_ms(c)),
    Quantity("link_rate", "sending rate (Mb/s)", "channel",
             lambda c, _: interval_rate_mbps(c["sent_bytes"], _interval_ns(c))),
    Quantity("drops", "drops (packets per interval)", "channel",
             lambda c, _: np.diff(c["drops"].astype(np.float64), prepend=0.0)),
    Quantity("aqm_probability", "AQM probability", "channel", lambda c, _: _optional(c, "aqm_probability")),
    Quantity("aqm_signal", "AQM signal (pkts or ms)", "channel", lambda c, _: _aqm_signal(c)),
    Quantity("aqm_state", "AQM dropping (queues)", "channel", lambda c, _: _optional(c, "aqm_state")),
    Quantity("aqm_count", "AQM count", "channel", lambda c, _: _optional(c, "aqm_count")),
    Quantity("ce_marks", "CE marks (per interval)", "channel", lambda c, _: _per_interval(c, "ce_marks")),
    Quantity("aqm_drops", "AQM drops (per interval)", "channel", lambda c, _: _per_interval(c, "aqm_drops")),
    Quantity("tail_drops", "tail drops (per interval)", "channel",
             lambda c, _: np.diff(c["drops"].astype(np.float64), prepend=0.0) - _per_interval(c, "aqm_drops")),
)}
QUANTITIES: dict[str, Quantity] = {**FLOW_QUANTITIES, **LINK_QUANTITIES}


@dataclass(frozen=True)
class Line:
    """One entity's series in a window: its name, index in the run (flow or channel number, which
    fixes its colour), times in s and values."""

    name: str
    index: int
    t_s: np.ndarray
    y: np.ndarray


def recorded_names(res: Results, run_id: str, kind: str) -> list[str]:
    """Flows (``kind="flow"``) or channels with stored time series, in index order."""
    table, entity = ("flow_timeseries", "flows") if kind == "flow" else ("channel_timeseries", "channels")
    frame = res.query(f"SELECT DISTINCT e.{kind} AS i, e.name FROM {table} t JOIN {entity} e "
                      f"ON e.run_id = t.run_id AND e.{kind} = t.{kind} WHERE t.run_id = ? ORDER BY 1", [run_id])
    return [str(n) for n in frame["name"].to_list()]


def _missing_series(info: RunInfo, kind: str) -> PlotError:
    if not series_stored(info.user_spec):
        return PlotError("record.store_series", f"run {info.run_id[:12]} kept its time series out of the store "
                                                "([record] store_series = false): only its metrics are stored; run "
                                                "it again without that setting to draw them")
    if kind == "flow":
        return PlotError("record.flows", f"run {info.run_id[:12]} stored no flow time series; record them "
                                         '([record] interval = "100ms", flows = "all") and run it again')
    return PlotError("record.links", f"run {info.run_id[:12]} stored no link time series; record them "
                                     '([record] interval = "100ms", links = "all") and run it again')


def default_flows(res: Results, info: RunInfo, wanted: Sequence[str] | None) -> tuple[list[str], int]:
    """The flows a time plot draws: `wanted` (names or patterns), or the first recorded ones up to
    `MAX_DEFAULT_FLOWS`; and how many flows have series."""
    known = recorded_names(res, info.run_id, "flow")
    if not known:
        raise _missing_series(info, "flow")
    chosen = pick_names(wanted, known, field="--flows", what="flow series", run_id=info.run_id)
    return (chosen if wanted is not None else chosen[:MAX_DEFAULT_FLOWS]), len(known)


def default_links(res: Results, info: RunInfo, wanted: Sequence[str] | None) -> list[str]:
    """The channels a time plot draws: `wanted` (a link name means its forward direction, or give
    `<link>_backward`; patterns allowed), or the run's bottleneck."""
    known = recorded_names(res, info.run_id, "channel")
    if not known:
        raise _missing_series(info, "channel")
    if wanted is None:
        bottleneck = res.bottleneck(info.run_id)
        if bottleneck is None or bottleneck not in known:
            link = (bottleneck or "").rsplit("_", 1)[0] or "<link>"
            raise PlotError("record.links", f"run {info.run_id[:12]} stored no series of its bottleneck "
                                            f'{bottleneck}; add "{link}" to [record] links (or choose --links)')
        return [bottleneck]
    channels = [f"{w}_forward" if f"{w}_forward" in known else w for w in wanted]
    return pick_names(channels, known, field="--links", what="link series", run_id=info.run_id)


def _grouped(res: Results, run_id: str, kind: str, names: Sequence[str]) -> dict[str, tuple[int, Columns]]:
    frame = res.timeseries(run_id, kind=kind, names=list(names))
    out: dict[str, tuple[int, Columns]] = {}
    for (name,), part in frame.group_by("name", maintain_order=True):
        index = int(part[kind][0])
        out[str(name)] = (index, {c: part[c].to_numpy() for c in part.columns if c not in ("name", "run_id")})
    return out


def flow_lines(res: Results, info: RunInfo, quantities: Sequence[Quantity], flows: Sequence[str],
               window: TimeWindow) -> dict[str, list[Line]]:
    """Per flow quantity, one line per flow in `flows` (order kept), cut to the window. Rates are
    computed over the whole series first, so the first interval in the window is exact."""
    grouped = _grouped(res, info.run_id, "flow", flows)
    specs = res.packet_flows(info.run_id) if any(q.name in ("cwnd", "in_flight") for q in quantities) else None
    out: dict[str, list[Line]] = {q.name: [] for q in quantities}
    for name in flows:
        index, cols = grouped[name]
        mss = segment_bytes(specs[index])[0] if specs is not None else 1
        keep = window.mask(cols["time_ns"])
        t_s = cols["time_ns"][keep] / 1e9
        for q in quantities:
            out[q.name].append(Line(name, index, t_s, np.asarray(q.compute(cols, mss), dtype=np.float64)[keep]))
    return out


def link_lines(res: Results, info: RunInfo, quantities: Sequence[Quantity], channels: Sequence[str],
               window: TimeWindow) -> dict[str, list[Line]]:
    """Per link quantity, one line per channel in `channels`, cut to the window."""
    grouped = _grouped(res, info.run_id, "channel", channels)
    out: dict[str, list[Line]] = {q.name: [] for q in quantities}
    for name in channels:
        index, cols = grouped[name]
        keep = window.mask(cols["time_ns"])
        t_s = cols["time_ns"][keep] / 1e9
        for q in quantities:
            out[q.name].append(Line(name, index, t_s, np.asarray(q.compute(cols, 0), dtype=np.float64)[keep]))
    return out
