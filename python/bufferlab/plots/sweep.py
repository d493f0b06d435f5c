"""`sweep`: any metric against a sweep axis (seed 002's throughput and delay against buffer size
and RTT), the mean over seeds with its 95 % confidence band, one line per value of a second axis.

The figure draws a table of sweep points in the studies' layout (`Results.study(NAME)`): one
column per axis, `seeds`, and per metric m the columns m, m_ci_low, m_ci_high. `sweep_points`
builds that table from a list of runs, each run's axis values read from its spec as written
(`topology.queue = "18p"`); a study's table plugs in unchanged once the store has studies.
A run's value of a flow metric is the mean over its flows, of a link metric its bottleneck's,
as in the study contract.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from .. import units
from ..analysis.metrics import FLOW_METRICS, LINK_METRICS, NETWORK_METRICS
from .common import (PlotError, RunInfo, describe, differing_keys, figure_function, flatten, legend_below, new_figure,
                     opened, run_colour, run_info, title)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["sweep", "sweep_points", "student_t_quantile", "axis_value"]

METRICS = {**FLOW_METRICS, **LINK_METRICS, **NETWORK_METRICS}


def student_t_quantile(p: float, dof: int) -> float:
    """The p-quantile (p > 0.5) of Student's t with `dof` degrees of freedom, by bisection on its
    CDF in closed form for whole dof (Abramowitz & Stegun 26.7.3 and 26.7.4: with θ = atan(t/√ν),
    A(t|ν) = P(|T| ≤ t) is a finite sum of powers of cos θ)."""
    def two_sided(t: float) -> float:
        theta = math.atan(t / math.sqrt(dof))
        c2, s = math.cos(theta) ** 2, math.sin(theta)
        if dof % 2 == 1:  # 26.7.3
            term = total = math.cos(theta) if dof > 1 else 0.0
            for k in range(3, dof - 1, 2):
                term *= (k - 1) / k * c2
                total += term
            return 2 / math.pi * (theta + s * total)
        term, total = 1.0, 1.0  # 26.7.4
        for k in range(2, dof - 1, 2):
            term *= (k - 1) / k * c2
            total += term
        return s * total

    target, lo, hi = 2 * p - 1, 0.0, 1.0
    while two_sided(hi) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if two_sided(mid) < target else (lo, mid)
    return (lo + hi) / 2


def axis_value(text: str) -> tuple[float, str] | None:
    """A spec value as a number and its unit for an axis: times in ms, sizes in packets or bytes,
    rates in Mb/s, plain numbers as they are; None for anything else (a controller's name)."""
    for parse, unit in ((units.parse_time, "ms"), (units.parse_rate, "Mb/s")):
        try:
            value = parse(text)
        except (units.UnitError, TypeError):
            continue
        return (value / 1e6, unit) if value is not None else None
    try:
        limit = units.parse_size(text)
    except (units.UnitError, TypeError):
        pass
    else:
        return (float(limit.packets), "packets") if limit.packets is not None else (float(limit.bytes or 0), "bytes")
    try:
        return float(text), ""
    except ValueError:
        return None


def _run_value(res: Results, run_id: str, metric: str) -> float | None:
    if metric in FLOW_METRICS:
        sql = f"SELECT avg({metric}) FROM flow_metrics WHERE run_id = ?"
    elif metric in LINK_METRICS:
        sql = f"SELECT {metric} FROM link_metrics WHERE run_id = ? AND bottleneck"
    else:
        sql = f"SELECT {metric} FROM network_metrics WHERE run_id = ?"
    values = res.query(sql, [run_id]).to_series().to_list()
    return None if not values or values[0] is None else float(values[0])


def sweep_points(res: Results, runs: Sequence[str], axes: Sequence[str],
                 metric: str) -> tuple[pl.DataFrame, list[RunInfo]]:
    """The study layout from runs: per distinct combination of the `axes` values, `seeds` (runs)
    and the metric's mean with a Student-t 95 % interval over them (null bounds with one run);
    and the runs."""
    infos = [run_info(res, run) for run in runs]
    rows = []
    for info in infos:
        flat = flatten(info.user_spec)
        for axis in axes:
            if axis not in flat:
                hint = ", ".join(differing_keys([i.user_spec for i in infos])) or "none"
                raise PlotError("--x" if axis == axes[0] else "--by",
                                f'run {info.run_id[:12]} has no spec key "{axis}" (keys that differ between the '
                                f"runs: {hint})")
        rows.append({**{a: flat[a] for a in axes}, "value": _run_value(res, info.run_id, metric)})
    frame = pl.DataFrame(rows, schema={**dict.fromkeys(axes, pl.String), "value": pl.Float64}, orient="row")
    out = []
    for key, group in frame.group_by(list(axes), maintain_order=True):
        values = group["value"].drop_nulls().to_numpy()
        mean = float(values.mean()) if values.size else None
        half = None
        if values.size > 1:
            half = student_t_quantile(0.975, values.size - 1) * float(values.std(ddof=1)) / math.sqrt(values.size)
        out.append({**dict(zip(axes, key)), "seeds": int(values.size), metric: mean,
                    f"{metric}_ci_low": None if half is None or mean is None else mean - half,
                    f"{metric}_ci_high": None if half is None or mean is None else mean + half})
    schema = {**dict.fromkeys(axes, pl.String), "seeds": pl.Int64, metric: pl.Float64,
              f"{metric}_ci_low": pl.Float64, f"{metric}_ci_high": pl.Float64}
    return pl.DataFrame(out, schema=schema, orient="row"), infos


@figure_function
def sweep(db: Results | str | Path, runs: Sequence[str], *, x: str, metric: str, by: str | None = None,
          size: tuple[float, float] | None = None) -> Figure:
    """`metric` against the spec key `x` over the runs (seeds of the same point are averaged, with
    a 95 % band), one line per value of the spec key `by`."""
    if metric not in METRICS:
        raise PlotError("--metric", f'unknown metric "{metric}" (known: {", ".join(METRICS)})')
    if not x:
        raise PlotError("--x", "missing: the spec key on the x axis, e.g. topology.queue")
    axes_keys = [x] + ([by] if by else [])
    with opened(db) as res:
        points, infos = sweep_points(res, runs, axes_keys, metric)
    numeric = [axis_value(v) for v in points[x].to_list()]
    x_units = {n[1] for n in numeric if n is not None}
    categorical = any(n is None for n in numeric) or len(x_units) > 1
    categories = list(dict.fromkeys(points[x].to_list()))
    positions = [float(categories.index(v)) if categorical or n is None else n[0]
                 for v, n in zip(points[x].to_list(), numeric)]
    points = points.with_columns(pl.Series("_x", positions))
    fig, grid = new_figure(1, 1, size=size or (6.0, 4.2))
    ax = grid[0, 0]
    groups = points.group_by(by, maintain_order=True) if by else [((None,), points)]
    for k, (key, group) in enumerate(groups):
        group = group.sort("_x")
        colour = run_colour(k)
        label = f"{by}={key[0]}" if by else metric
        ax.plot(group["_x"].to_numpy(), group[metric].to_numpy(), "o-", color=colour, label=label)
        low, high = group[f"{metric}_ci_low"].to_numpy(), group[f"{metric}_ci_high"].to_numpy()
        if np.isfinite(low.astype(float)).any():
            ax.fill_between(group["_x"].to_numpy(), low.astype(float), high.astype(float), color=colour, alpha=0.2,
                            linewidth=0, label="_95 % CI")
    if categorical:
        ax.set_xticks(range(len(categories)), categories)
    unit = METRICS[metric][0]
    ax.set_xlabel(f"{x} ({x_units.pop()})" if not categorical and x_units and "" not in x_units else x)
    ax.set_ylabel(f"{metric} ({unit})" if unit not in ("-", "") else metric)
    seeds = sorted(set(points["seeds"].to_list()))
    title(fig, f"{describe(infos)}\nmean over {'/'.join(map(str, seeds))} seed(s) per point, 95 % CI shaded")
    if by:
        legend_below(fig, ax)
    return fig
