"""Aggregation over seeds: one row per sweep point, the mean of every metric and its 95 %
confidence interval.

For a point with n complete runs (seeds) whose metric values are x_1..x_n, the interval is
mean ± t_{0.975, n−1} · s / √n, with s the sample standard deviation (Student's t: the runs are
few and their spread unknown). With one run the bounds are null: one seed says nothing of the
spread. Runs whose metric is null (undefined for that run) are left out of that metric's count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

__all__ = ["confidence_level", "aggregate_over_seeds", "t_quantile", "distinct_axes", "axis_label"]

confidence_level = 0.95


def t_quantile(dof: int, level: float = confidence_level) -> float:
    """The two-sided Student-t quantile t_{(1+level)/2, dof}: the inverse of Student's t
    distribution function, `scipy.special.stdtrit`, which `scipy.stats.t.ppf` itself calls (the
    same value to the last bit, a test). Importing `scipy.stats` for it cost `bufferlab results
    study` 0.7-2 s (its distributions' docstrings are parsed at import); `scipy.special` is the
    compiled function alone."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, (1 + level) / 2))


def aggregate_over_seeds(per_run: pl.DataFrame, by: Sequence[str], metrics: Sequence[str]) -> pl.DataFrame:
    """`per_run` has one row per run (columns `by` identify its point); returns one row per point:
    `by`, "seeds" (runs), and for each metric m: m (mean), m_ci_low, m_ci_high."""
    if per_run.height == 0:
        schema: dict[str, pl.DataType] = {**{c: per_run.schema[c] for c in by}, "seeds": pl.UInt32()}
        for m in metrics:
            schema.update({m: pl.Float64(), f"{m}_ci_low": pl.Float64(), f"{m}_ci_high": pl.Float64()})
        return pl.DataFrame(schema=schema)
    grouped = per_run.group_by(list(by), maintain_order=True).agg(
        pl.len().alias("seeds"),
        *[expr for m in metrics for expr in (pl.col(m).cast(pl.Float64).mean().alias(m),
                                             pl.col(m).cast(pl.Float64).std(ddof=1).alias(f"_{m}_sd"),
                                             pl.col(m).cast(pl.Float64).count().alias(f"_{m}_n"))])
    counts = sorted({int(n) for m in metrics for n in grouped[f"_{m}_n"].to_list() if n and n > 1})
    quantiles = {n: t_quantile(n - 1) for n in counts}
    t_of = pl.col("_n").replace_strict(quantiles, default=None, return_dtype=pl.Float64)
    out = grouped
    for m in metrics:
        half = (t_of * pl.col("_sd") / pl.col("_n").cast(pl.Float64).sqrt())
        out = out.with_columns(pl.col(f"_{m}_n").alias("_n"), pl.col(f"_{m}_sd").alias("_sd")).with_columns(
            (pl.col(m) - half).alias(f"{m}_ci_low"), (pl.col(m) + half).alias(f"{m}_ci_high"))
    ordered = [*by, "seeds", *[c for m in metrics for c in (m, f"{m}_ci_low", f"{m}_ci_high")]]
    return out.select(ordered)


def distinct_axes(points: pl.DataFrame, axes: Sequence[str]) -> list[tuple[str, int]]:
    """The axes worth a column in a table of a study's points (`points` has one column per axis):
    an axis whose value equals an earlier axis's at every point is folded into that one, as the
    keys of a zipped axis that move together are (SplitBuff's 250 Type-2 flows' RTTs). Each kept
    axis comes with the number of axes folded into it, in the study's order."""
    if points.height == 0:  # nothing to compare: every axis keeps its column
        return [(axis, 0) for axis in axes]
    kept: list[tuple[str, list[Any], int]] = []
    for axis in axes:
        values = points[axis].to_list()
        for i, (name, seen, folded) in enumerate(kept):
            if seen == values:
                kept[i] = (name, seen, folded + 1)
                break
        else:
            kept.append((axis, values, 0))
    return [(name, folded) for name, _, folded in kept]


def axis_label(axis: str, folded: int) -> str:
    """A kept axis's column heading: its key, and how many equal axes it stands for."""
    return axis if not folded else f"{axis} (+{folded} equal)"

