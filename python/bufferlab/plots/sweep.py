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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from .. import units
from ..analysis.aggregate import aggregate_over_seeds
from ..analysis.metrics import FLOW_METRICS, LINK_METRICS, NETWORK_METRICS
from .common import (PlotError, RunInfo, bounded_band, describe, differing_keys, figure_function, flatten, key_term,
                     legend_below, metric_axis, new_figure, opened, readable_value, require_data, run_colour, run_info,
                     run_infos, spec_term, title)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["sweep", "sweep_points", "study_points", "axis_value"]

METRICS = {**FLOW_METRICS, **LINK_METRICS, **NETWORK_METRICS}


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
        rows.append({**{a: flat[a] for a in axes}, metric: _run_value(res, info.run_id, metric)})
    frame = pl.DataFrame(rows, schema={**dict.fromkeys(axes, pl.String), metric: pl.Float64}, orient="row")
    return aggregate_over_seeds(frame, list(axes), [metric]), infos


def study_points(res: Results, study: str, axes: Sequence[str], metric: str) -> tuple[pl.DataFrame, list[RunInfo]]:
    """The same table from a stored study (`Results.study`), with the study's runs."""
    table = res.study(study)
    known = res.study_axes(study)
    for axis in axes:
        if axis not in known:
            raise PlotError("--x" if axis == axes[0] else "--by",
                            f'study "{study}" has no axis "{axis}" (its axes: {", ".join(known) or "none"})')
    points = table.select(*[pl.col(a).cast(pl.String) for a in axes], "seeds", metric, f"{metric}_ci_low",
                          f"{metric}_ci_high")
    runs = res.study_runs(study).filter(pl.col("status") == "complete")["run_id"].unique(maintain_order=True)
    return points, run_infos(res, runs.to_list())


@figure_function
def sweep(db: Results | str | Path, runs: Sequence[str], *, x: str | None = None, metric: str, by: str | None = None,
          size: tuple[float, float] | None = None) -> Figure:
    """`metric` against the spec key `x`, one line per value of the spec key `by`: over a stored
    study (`runs` is one study name; `x` and `by` default to its first two axes) or a list of runs
    (seeds of the same point are averaged). The band is the 95 % confidence interval over seeds."""
    if metric not in METRICS:
        raise PlotError("--metric", f'unknown metric "{metric}" (known: {", ".join(METRICS)})')
    with opened(db) as res:
        study = runs[0] if len(runs) == 1 and runs[0] in set(res.studies["study_id"].to_list()) else None
        if study is not None:
            known = res.study_axes(study)
            x = x or (known[0] if known else None)
            by = by if by is not None or x != (known[0] if known else None) else (known[1] if len(known) > 1 else None)
        if not x:
            raise PlotError("--x", "missing: the spec key on the x axis, e.g. topology.queue")
        axes_keys = [x] + ([by] if by else [])
        points, infos = (study_points(res, study, axes_keys, metric) if study is not None
                         else sweep_points(res, runs, axes_keys, metric))
    shown = metric_axis(metric)
    require_data(metric, [shown.shown(points[metric].to_list())],
                 f"no value in any of the {len(infos)} run(s): the metric is undefined for them (e.g. a fairness "
                 "index of one flow, or means of series that were not recorded)")
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
        xs = group["_x"].to_numpy()
        ax.plot(xs, shown.shown(group[metric].to_list()), "o-", color=colour,
                label=spec_term(by, str(key[0])) if by else shown.label)
        low, high = shown.shown(group[f"{metric}_ci_low"].to_list()), shown.shown(group[f"{metric}_ci_high"].to_list())
        if np.isfinite(low).any():
            bounded_band(ax, xs, low, high, shown.bounds, color=colour, label="_95 % CI")
    if categorical:
        ax.set_xticks(range(len(categories)), [readable_value(c) for c in categories])
    ax.set_xlabel(f"{key_term(x)} ({x_units.pop()})" if not categorical and x_units and "" not in x_units
                  else key_term(x))
    ax.set_ylabel(shown.label)
    seeds = sorted(set(points["seeds"].to_list()))
    spread = (f"mean over {'/'.join(map(str, seeds))} seed(s) per point, 95 % CI shaded" if max(seeds, default=1) >= 2
              else "one seed per point, so no interval")
    title(fig, f"{describe(infos)}\n{spread}")
    if by:
        legend_below(fig, ax)
    return fig
