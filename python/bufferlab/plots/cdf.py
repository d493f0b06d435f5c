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
from .common import (PERCENT, PlotError, RunInfo, bytes_in_words, describe, figure_function, legend_below, new_figure,
                     opened, run_colour, run_info, run_labels, title)
from .operating_point import ecdf_points

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
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
        direction: str = "forward", split: str | int = DEFAULT_SPLIT_BYTES, labels: Sequence[str] | None = None,
        heading: str | None = None, skip_empty: bool = False, size: tuple[float, float] | None = None) -> Figure:
    """Seed 000's four panels: CDFs of per-flow throughput (left) and loss in % (right) of large
    (top) and small (bottom) flows, one line per run, named by `labels` (default: by what differs
    between the runs, `run_labels`), each panel saying how many flows it counts. The monitor reads
    `link` (default: the bottleneck's link) in `direction`. `heading` says what the runs are
    (default: what they have in common). A size class without flows in any run is refused (the
    `--split` error), or left out with `skip_empty`."""
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
    names = list(labels) if labels is not None else run_labels(infos)
    split_text = bytes_in_words(split_bytes)
    classes = [(size_class, text) for size_class, text in (("large", f"large flows (> {split_text})"),
                                                           ("small", f"small flows (≤ {split_text})"))
               if _has_flows(tables, size_class, text, skip_empty=skip_empty)]
    fig, axes = new_figure(len(classes), 2, size=size or (8.0, 0.6 + 2.7 * len(classes)), sharey=True)
    for row, (size_class, text) in enumerate(classes):
        for col, (column, label) in enumerate(_COLUMNS):
            samples = [_values(table, size_class, column) for table in tables]
            _draw_cdfs(axes[row, col], samples, names, text)
            axes[row, col].set_xlabel(label)
        axes[row, 0].set_ylabel("CDF")
    axes[0, 0].set_ylim(0, 1.02)
    where = "the flow table" if source == "flows" else f"the middlebox monitor of {link or 'the bottleneck'}"
    title(fig, f"{heading or describe(infos)}\nper flow, from {where}")
    legend_below(fig, max(axes.flat, key=lambda ax: len(ax.get_lines())))
    return fig


# The two metrics of seed 000's CDFs: (column of `per_flow`, shown as, axis label).
_COLUMNS = (("throughput_mbps", "throughput (Mb/s)"), ("loss", "loss (% of segments retransmitted)"))


def _values(table: pl.DataFrame, size_class: str, column: str) -> np.ndarray:
    """A metric of the flows of one size class, as drawn: finite values only (a flow seen as a
    single packet has no throughput), loss in %."""
    values = table.filter(pl.col("size_class") == size_class)[column].to_numpy().astype(np.float64)
    finite: np.ndarray = values[np.isfinite(values)]
    return finite * PERCENT if column == "loss" else finite


def _has_flows(tables: Sequence[pl.DataFrame], size_class: str, text: str, *, skip_empty: bool) -> bool:
    if any(_values(t, size_class, "throughput_mbps").size for t in tables):
        return True
    if skip_empty:
        return False
    raise PlotError("--split", f"no {text} in {'any of the runs' if len(tables) > 1 else 'the run'}; choose "
                               "another --split")


def _draw_cdfs(ax: Axes, samples: Sequence[np.ndarray], names: Sequence[str], heading: str) -> None:
    """One step line per run, and how many flows each counts: in the title for one run
    ("n = 54"), in a legend of the panel (in the runs' colours) for several."""
    for k, (values, name) in enumerate(zip(samples, names)):
        if values.size:
            x, y = ecdf_points(values)
            ax.plot(x, y, drawstyle="steps-post", color=run_colour(k), label=name)
    ax.set_xlim(left=0)
    if len(samples) == 1:
        ax.set_title(f"{heading}, n = {samples[0].size}", loc="left")
        return
    ax.set_title(heading, loc="left")
    from matplotlib.lines import Line2D

    counts = [Line2D([], [], color=run_colour(k)) for k in range(len(samples))]
    ax.legend(counts, [f"n = {values.size}" for values in samples], loc="lower right", handlelength=1.2,
              title="flows")
