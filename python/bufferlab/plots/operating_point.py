"""Seed 001's four figures of the operating point (ccperf's experiment pages):

- `operating_point`: in flight, sRTT and throughput of each flow over time;
- `inflight`: each flow's mean throughput and mean sRTT against its mean in flight, the joint
  operating point (aggregate in flight and throughput, sRTT averaged over flows) and the optimal
  point starred: Kleinrock's, in flight = BDP, throughput = bottleneck capacity, RTT = the
  round-trip propagation time RTprop (L. Kleinrock, "Power and deterministic rules of thumb for
  probabilistic problems in computer communications", ICC 1979; the BBR paper's Fig. 1), with
  the bounds throughput <= min(w/RTprop, C) and RTT >= max(RTprop, w/C) dashed;
- `ecdf`: empirical CDFs of each flow's throughput and sRTT samples over its lifetime;
- `plane`: each flow's mean throughput against its mean sRTT.

Means are the stored metric tables' (`flow_metrics`, `network_metrics`), samples the stored
series; capacity is the bottleneck's rate in payload terms, C x MSS / (MSS + headers), since
throughput counts acknowledged payload; RTprop is the smallest RTT any flow measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ..analysis.metrics import segment_bytes, series_mean
from .common import (PlotError, RunInfo, describe, figure_function, flow_colour, legend_below, new_figure, opened,
                     run_colour, run_info, run_labels, time_window, title)
from .series import FLOW_QUANTITIES, default_flows, flow_lines
from .timeseries import timeseries

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["operating_point", "inflight", "ecdf", "plane", "OptimalPoint", "optimal_point"]

OPTIMAL_COLOUR = "magenta"


def operating_point(db: Results | str | Path, run: str, *, flows: Sequence[str] | None = None,
                    start: str | int | None = None, end: str | int | None = None,
                    size: tuple[float, float] | None = None) -> Figure:
    """Seed 001's "time series plot of the operating point": in flight, sRTT and throughput."""
    return timeseries(db, run, quantities=("in_flight", "srtt", "throughput"), flows=flows, start=start, end=end,
                      size=size)


@dataclass(frozen=True)
class OptimalPoint:
    """Kleinrock's optimal operating point of a run's bottleneck."""

    rate_mbps: float  # the bottleneck's rate, headers included
    capacity_mbps: float  # payload rate at the bottleneck's rate
    rtprop_ms: float
    bdp_segments: float  # C x RTprop in wire-size segments
    segment_payload: int
    segment_wire: int


def optimal_point(res: Results, info: RunInfo) -> OptimalPoint:
    """The bottleneck's payload capacity, the smallest RTT measured, and their product."""
    rate = res.query("SELECT rate_mbps FROM link_metrics WHERE run_id = ? AND bottleneck", [info.run_id])
    if rate.height == 0 or rate["rate_mbps"][0] is None:
        raise PlotError("bottleneck", f"run {info.run_id[:12]} has no rate-limited bottleneck; name one with "
                                      "bottleneck = \"<link>\" in the spec")
    min_rtt = res.query("SELECT min(min_rtt_ns) AS m FROM flows WHERE run_id = ? AND min_rtt_ns > 0",
                        [info.run_id])["m"][0]
    if min_rtt is None:
        raise PlotError("flows", f"run {info.run_id[:12]} has no RTT sample; its flows sent nothing")
    mss, header = segment_bytes(res.packet_flows(info.run_id)[0])
    rate_mbps = float(rate["rate_mbps"][0])
    return OptimalPoint(rate_mbps=rate_mbps, capacity_mbps=rate_mbps * mss / (mss + header),
                        rtprop_ms=float(min_rtt) / 1e6, bdp_segments=rate_mbps * 1e6 * float(min_rtt) / 1e9 / 8 / (mss + header),
                        segment_payload=mss, segment_wire=mss + header)


def _flow_means(res: Results, run_id: str) -> pl.DataFrame:
    return res.query("SELECT flow, name, mean_in_flight_l4, mean_throughput_l4, mean_srtt_l4 FROM flow_metrics "
                     "WHERE run_id = ? ORDER BY flow", [run_id])


def _joint(res: Results, run_id: str, flows: pl.DataFrame) -> tuple[float, float, float]:
    net = res.query("SELECT mean_agg_in_flight_l4, mean_agg_throughput_l4 FROM network_metrics WHERE run_id = ?",
                    [run_id])
    return (float(net["mean_agg_in_flight_l4"][0]), float(net["mean_agg_throughput_l4"][0]),
            series_mean(flows["mean_srtt_l4"]))


def _check_means(info: RunInfo, flows: pl.DataFrame) -> None:
    if flows.height == 0 or flows["mean_srtt_l4"].null_count() == flows.height:
        raise PlotError("record.flows", f"run {info.run_id[:12]} has no sampled flow means; record flow series "
                                        '([record] interval = "100ms") and run it again')


@figure_function
def inflight(db: Results | str | Path, runs: Sequence[str], *, size: tuple[float, float] | None = None) -> Figure:
    """Seed 001's "in flight vs mean operating point": mean throughput (top) and mean sRTT
    (bottom) of each flow against its mean in flight, the joint operating point (diamond), the
    optimal point (magenta star) and Kleinrock's bounds (dashed)."""
    with opened(db) as res:
        infos = [run_info(res, run) for run in runs]
        points = []
        for info in infos:
            flows = _flow_means(res, info.run_id)
            _check_means(info, flows)
            points.append((flows, _joint(res, info.run_id, flows), optimal_point(res, info)))
    labels = run_labels(infos)
    x_end = 1.08 * max(max(joint[0], 2 * best.bdp_segments) for _, joint, best in points)
    fig, axes = new_figure(2, 1, size=size or (6.5, 6.5), sharex=True)
    top, bottom = axes[0, 0], axes[1, 0]
    for k, (label, (flows, joint, best)) in enumerate(zip(labels, points)):
        for row in flows.iter_rows(named=True):
            colour = flow_colour(row["flow"]) if len(infos) == 1 else run_colour(k)
            name = row["name"] if len(infos) == 1 else (label if row["flow"] == 0 else None)
            top.plot([row["mean_in_flight_l4"]], [row["mean_throughput_l4"]], "o", color=colour,
                     label=name or "_", markersize=5)
            bottom.plot([row["mean_in_flight_l4"]], [row["mean_srtt_l4"]], "o", color=colour, label="_",
                        markersize=5)
        joint_colour = "black" if len(infos) == 1 else run_colour(k)
        top.plot([joint[0]], [joint[1]], "D", color=joint_colour, markersize=7, markerfacecolor="none",
                 label="joint (all flows)" if k == 0 else "_")
        bottom.plot([joint[0]], [joint[2]], "D", color=joint_colour, markersize=7, markerfacecolor="none",
                    label="_")
        _draw_optimum(top, bottom, best, x_end, first=k == 0)
    for ax in (top, bottom):
        ax.set_xlim(0, x_end)
        ax.set_ylim(bottom=0)
    top.set_ylabel("mean throughput (Mb/s)")
    bottom.set_ylabel("mean sRTT (ms)")
    bottom.set_xlabel("mean in flight (segments)")
    title(fig, describe(infos))
    legend_below(fig, top, max_columns=3)
    return fig


def _draw_optimum(top: Axes, bottom: Axes, best: OptimalPoint, x_end: float, *, first: bool) -> None:
    """The optimal point (star) and the bounds through it: throughput <= min(w x MSS / RTprop, C)
    and RTT >= max(RTprop, w x segment / C), w in segments."""
    knee = best.bdp_segments
    w = np.array([0.0, knee, max(x_end, knee)])
    throughput_bound = np.minimum(w * best.segment_payload * 8 / (best.rtprop_ms * 1e3), best.capacity_mbps)
    rtt_bound = np.maximum(best.rtprop_ms, w * best.segment_wire * 8 / (best.rate_mbps * 1e3))
    top.plot(w, throughput_bound, "--", color="grey", linewidth=0.8, label="bounds" if first else "_")
    bottom.plot(w, rtt_bound, "--", color="grey", linewidth=0.8, label="_")
    top.plot([knee], [best.capacity_mbps], "*", color=OPTIMAL_COLOUR, markersize=14,
             label=(f"optimal: BDP {knee:.1f} segments,\n"
                    f"{best.capacity_mbps:.1f} Mb/s, RTprop {best.rtprop_ms:.1f} ms" if first else "_"))
    bottom.plot([knee], [best.rtprop_ms], "*", color=OPTIMAL_COLOUR, markersize=14, label="_")


def _lifetime_samples(res: Results, info: RunInfo, names: Sequence[str], start: str | int | None,
                      end: str | int | None) -> dict[str, dict[str, np.ndarray]]:
    """Per flow: its throughput and sRTT samples over its lifetime (intervals that overlap
    [start, completion or end of run], as the metric means take them) and the window."""
    window = time_window(start, end)
    interval_ns = _sampling_interval_ns(res, info)
    quantities = [FLOW_QUANTITIES["throughput"], FLOW_QUANTITIES["srtt"]]
    lines = flow_lines(res, info, quantities, names, window)
    life = res.query("SELECT name, start_ns, completed_ns FROM flows WHERE run_id = ?", [info.run_id])
    bounds = {r["name"]: (r["start_ns"], r["completed_ns"] or info.end_ns) for r in life.iter_rows(named=True)}
    out: dict[str, dict[str, np.ndarray]] = {}
    for throughput, srtt in zip(lines["throughput"], lines["srtt"]):
        t_ns = np.rint(throughput.t_s * 1e9)
        first, last = bounds[throughput.name]
        active = (t_ns > first) & (t_ns - interval_ns < last)
        out[throughput.name] = {"throughput": throughput.y[active & np.isfinite(throughput.y)],
                                "srtt": srtt.y[active & np.isfinite(srtt.y)]}
    return out


def _sampling_interval_ns(res: Results, info: RunInfo) -> float:
    times = res.query("SELECT DISTINCT time_ns FROM flow_timeseries WHERE run_id = ? ORDER BY 1 LIMIT 2",
                      [info.run_id])["time_ns"].to_list()
    return float(times[1] - times[0]) if len(times) > 1 else float(times[0]) if times else 0.0


def ecdf_points(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF as steps: sorted samples and i/n."""
    x = np.sort(samples)
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)


@figure_function
def ecdf(db: Results | str | Path, run: str, *, flows: Sequence[str] | None = None, start: str | int | None = None,
         end: str | int | None = None, size: tuple[float, float] | None = None) -> Figure:
    """Seed 001's "distribution of the operating point": eCDFs of each flow's throughput and sRTT
    samples over its lifetime (and the window)."""
    with opened(db) as res:
        info = run_info(res, run)
        names, _ = default_flows(res, info, flows)
        samples = _lifetime_samples(res, info, names, start, end)
        index = dict(zip(*res.query("SELECT name, flow FROM flows WHERE run_id = ?", [info.run_id]).get_columns()))
    fig, axes = new_figure(1, 2, size=size or (8.0, 3.8), sharey=True)
    for ax, quantity in zip(axes[0], ("throughput", "srtt")):
        for name in names:
            x, y = ecdf_points(samples[name][quantity])
            ax.plot(x, y, drawstyle="steps-post", color=flow_colour(int(index[name])), label=name)
        ax.set_xlabel(FLOW_QUANTITIES[quantity].label)
        ax.set_xlim(left=0) if quantity == "throughput" else None
    axes[0, 0].set_ylabel("eCDF")
    axes[0, 0].set_ylim(0, 1.02)
    title(fig, describe([info]))
    legend_below(fig, axes[0, 0])
    return fig


@figure_function
def plane(db: Results | str | Path, runs: Sequence[str], *, size: tuple[float, float] | None = None) -> Figure:
    """Seed 001's "mean operating point plane": each flow's mean throughput against its mean
    sRTT (one colour per flow, or per run when several runs are compared), RTprop and the
    capacity's fair share dotted."""
    fig, axes = new_figure(1, 1, size=size or (6.0, 4.5))
    ax = axes[0, 0]
    with opened(db) as res:
        infos = [run_info(res, run) for run in runs]
        labels = run_labels(infos)
        for k, (info, label) in enumerate(zip(infos, labels)):
            flows = _flow_means(res, info.run_id)
            _check_means(info, flows)
            best = optimal_point(res, info)
            for row in flows.iter_rows(named=True):
                colour = flow_colour(row["flow"]) if len(infos) == 1 else run_colour(k)
                name = row["name"] if len(infos) == 1 else (label if row["flow"] == 0 else "_")
                ax.plot([row["mean_srtt_l4"]], [row["mean_throughput_l4"]], "o", color=colour, label=name)
            if k == 0:
                ax.axvline(best.rtprop_ms, color="grey", linestyle=":", label=f"RTprop {best.rtprop_ms:.1f} ms")
                ax.axhline(best.capacity_mbps / flows.height, color="grey", linestyle="-.",
                           label=f"fair share C/{flows.height} = {best.capacity_mbps / flows.height:.1f} Mb/s")
    ax.set_xlabel("mean sRTT (ms)")
    ax.set_ylabel("mean throughput (Mb/s)")
    ax.set_ylim(bottom=0)
    title(fig, describe(infos))
    legend_below(fig, ax, max_columns=3)
    return fig
