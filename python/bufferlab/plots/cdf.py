"""`cdf`: seed 000's figures: CDFs of per-flow throughput and loss, large flows (more than the
split, 100 KB by default) apart from small ones, one line per run (B_s against B_l).

Per flow, from the middlebox monitor of a captured link (`analysis.monitor`, the seed's own
method: bytes seen x 8 / (last - first packet seen), retransmissions seen / segments seen, size
class by bytes seen), or from the flow table (`--source flows`: goodput, loss rate, size class by
bytes delivered).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from .. import units
from ..analysis.monitor import DEFAULT_SPLIT_BYTES
from .common import (PlotError, RunInfo, describe, figure_function, legend_below, new_figure, opened, run_colour,
                     run_info, run_labels, title)
from .operating_point import ecdf_points

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["cdf", "per_flow"]

SOURCES = ("monitor", "flows")


def _captured(res: Results, run_id: str) -> list[str]:
    return [str(n) for n in res.query(
        "SELECT DISTINCT c.name FROM captures p JOIN channels c ON c.run_id = p.run_id AND c.channel = p.channel "
        "WHERE p.run_id = ? ORDER BY 1", [run_id])["name"].to_list()]


def per_flow(res: Results, info: RunInfo, *, source: str, link: str | None, direction: str,
             split_bytes: int) -> pl.DataFrame:
    """One row per flow: name, throughput_mbps, loss, size_class ("large"/"small")."""
    if source == "flows":
        flows = res.query("SELECT name, goodput_bps, loss_rate, bytes_delivered FROM flows WHERE run_id = ? "
                          "AND bytes_delivered > 0 ORDER BY flow", [info.run_id])
        return flows.select(
            "name", (pl.col("goodput_bps") / 1e6).alias("throughput_mbps"), pl.col("loss_rate").alias("loss"),
            pl.when(pl.col("bytes_delivered") > split_bytes).then(pl.lit("large")).otherwise(pl.lit("small"))
            .alias("size_class"))
    if link is None:
        bottleneck = res.bottleneck(info.run_id) or ""
        link, _, direction = bottleneck.rpartition("_")
    channel = f"{link}_{direction}"
    if channel not in _captured(res, info.run_id):
        raise PlotError("record.captures", f'run {info.run_id[:12]} has no capture of "{channel}"; add captures = '
                                           f'[{{ link = "{link or "<link>"}", direction = "{direction}" }}] to '
                                           "[record] and run it again (or plot --source flows)")
    return res.monitor(info.run_id, link=link, direction=direction, split_bytes=split_bytes).select(
        "name", "throughput_mbps", "loss", "size_class")


@figure_function
def cdf(db: Results | str | Path, runs: Sequence[str], *, source: str = "monitor", link: str | None = None,
        direction: str = "forward", split: str | int = DEFAULT_SPLIT_BYTES,
        size: tuple[float, float] | None = None) -> Figure:
    """Seed 000's four panels: CDFs of per-flow throughput (left) and loss (right) of large (top)
    and small (bottom) flows, one line per run, named by what differs between the runs. The
    monitor reads `link` (default: the bottleneck's link) in `direction`."""
    if source not in SOURCES:
        raise PlotError("--source", f'unknown source "{source}" (known: {", ".join(SOURCES)})')
    try:
        split_bytes = split if isinstance(split, int) else units.parse_bytes(split)
    except units.UnitError as e:
        raise PlotError("--split", str(e)) from None
    with opened(db) as res:
        infos = [run_info(res, run) for run in runs]
        tables = [per_flow(res, info, source=source, link=link, direction=direction, split_bytes=split_bytes)
                  for info in infos]
    labels = run_labels(infos) if len(infos) > 1 else [f"{infos[0].name}"]
    fig, axes = new_figure(2, 2, size=size or (8.0, 6.0), sharey=True)
    split_text = units.format_bytes(split_bytes)
    for row, (size_class, heading) in enumerate((("large", f"large flows (> {split_text})"),
                                                 ("small", f"small flows (≤ {split_text})"))):
        for col, (column, label) in enumerate((("throughput_mbps", "throughput (Mb/s)"),
                                               ("loss", "loss (retransmitted / sent segments)"))):
            ax = axes[row, col]
            counts = []
            for k, (table, name) in enumerate(zip(tables, labels)):
                values = table.filter(pl.col("size_class") == size_class)[column].drop_nulls().to_numpy()
                counts.append(str(values.size))
                if values.size:
                    x, y = ecdf_points(values.astype(np.float64))
                    ax.plot(x, y, drawstyle="steps-post", color=run_colour(k), label=name)
            ax.set_title(f"{heading}: {' / '.join(counts)} flows", loc="left")
            ax.set_xlabel(label)
            ax.set_xlim(left=0)
            if not ax.get_lines():
                ax.text(0.5, 0.5, f"no {size_class} flows", transform=ax.transAxes, ha="center", va="center")
        axes[row, 0].set_ylabel("CDF")
    axes[0, 0].set_ylim(0, 1.02)
    where = "the flow table" if source == "flows" else f"the middlebox monitor of {link or 'the bottleneck'}"
    title(fig, f"{describe(infos)}\nper flow, from {where}")
    legend_below(fig, next((ax for ax in axes.flat if ax.get_lines()), axes[0, 0]))
    return fig
