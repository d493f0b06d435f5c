"""`cdf`: seed 000's figures: CDFs of per-flow throughput and loss, large flows (more than the
split, 100 KB by default) apart from small ones, one line per run (B_s against B_l).

Per flow, from the middlebox monitor of a captured link (`analysis.monitor`, the seed's own
method: bytes seen x 8 / (last - first packet seen), retransmissions seen / segments seen, size
class by bytes seen), or from the flow table (`--source flows`: goodput, loss rate, size class by
bytes delivered).

`delay_cdf`: the distribution of every packet's delay, from the run's stored delay histograms
(`Results.delay_distribution`): the sojourn times of a queue (the bottleneck's by default) and the
one-way delays of datagram flows (a VoIP-like CBR flow beside bulk TCP: what an AQM keeps its
delay at), as CDFs on a logarithmic time axis, one line per run and link or flow.
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

__all__ = ["cdf", "per_flow", "delay_cdf", "cdf_points", "quantile_ms"]

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


# --- delay distributions ------------------------------------------------------------------------

# Where a delay of zero (a packet sent without waiting) is drawn on the logarithmic axis: the
# line starts there at the fraction of such packets.
NO_WAIT_MS = 1e-3


def cdf_points(buckets: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """A stored distribution (`Results.delay_distribution`: lower_ns, upper_ns, count, in order)
    as a CDF line in ms: within a bucket the values are taken as spread evenly (a straight rise
    from its lower to its upper bound), zeros at `NO_WAIT_MS`."""
    lower = buckets["lower_ns"].to_numpy().astype(np.float64) / 1e6
    upper = buckets["upper_ns"].to_numpy().astype(np.float64) / 1e6
    counts = buckets["count"].to_numpy().astype(np.float64)
    after = np.cumsum(counts) / counts.sum()
    before = after - counts / counts.sum()
    x = np.column_stack([np.maximum(lower, NO_WAIT_MS), np.maximum(upper, NO_WAIT_MS)]).ravel()
    y = np.column_stack([before, after]).ravel()
    return x, y


def _datagram_flows(res: Results, run_id: str) -> list[str]:
    """The run's flows that keep their packets' one-way delays (datagram flows that received)."""
    return [str(n) for n in res.query(
        "SELECT DISTINCT f.name, f.flow FROM delay_histograms h JOIN flows f ON f.run_id = h.run_id AND f.flow = h.id "
        "WHERE h.run_id = ? AND h.subject = 'flow' ORDER BY f.flow", [run_id])["name"].to_list()]


@figure_function
def delay_cdf(db: Results | str | Path, runs: Sequence[str], *, links: Sequence[str] | None = None,
              flows: Sequence[str] | None = None, labels: Sequence[str] | None = None, heading: str | None = None,
              size: tuple[float, float] | None = None) -> Figure:
    """CDFs of every packet's delay: left, the sojourn time in the queue of each of `links` (a
    link's forward direction, or a channel such as ``btl_backward``; default the bottleneck);
    right, the one-way delay (send to arrival) of each of `flows` (default every datagram flow
    of the run, up to ten; none: one panel). One line per run and link or flow, runs named by
    `labels` (default by what differs between them); a dotted line marks each one's p99."""
    with opened(db) as res:
        infos = [run_info(res, run) for run in runs]
        run_names = [info.name for info in infos]
        names = list(labels) if labels is not None else (
            run_names if len(set(run_names)) == len(run_names) else run_labels(infos))
        queues: list[tuple[str, pl.DataFrame]] = []
        delays: list[tuple[str, pl.DataFrame]] = []
        for info, name in zip(infos, names):
            prefix = f"{name}: " if len(infos) > 1 else ""
            chosen: list[str | None] = list(links) if links else [None]  # None: the bottleneck
            for channel in chosen:
                link, direction = channel, "forward"
                if channel is not None and channel.endswith(("_forward", "_backward")):
                    link, direction = channel.rsplit("_", 1)
                shown = channel if channel is not None else (res.bottleneck(info.run_id) or "bottleneck")
                queues.append((prefix + shown, res.delay_distribution(info.run_id, link=link, direction=direction)))
            wanted = list(flows) if flows is not None else _datagram_flows(res, info.run_id)[:10]
            for flow in wanted:
                delays.append((prefix + flow, res.delay_distribution(info.run_id, flow=flow)))
    panels = [("queue sojourn time (ms)", "sojourn time of each packet sent", queues)]
    if delays:
        panels.append(("one-way delay (ms)", "one-way delay of each datagram, send to arrival", delays))
    rows = max(len(lines) for _, _, lines in panels)
    fig, axes = new_figure(1, len(panels), size=size or (4.8 * len(panels) + 0.4, 4.4 + 0.22 * rows), sharey=True)
    for ax, (xlabel, heading_text, lines) in zip(axes[0], panels):
        _draw_delay_cdfs(ax, lines)
        ax.set_xlabel(xlabel)
        ax.set_title(heading_text, loc="left")
    axes[0, 0].set_ylabel("fraction of packets at or below")
    axes[0, 0].set_ylim(0, 1.02)
    title(fig, f"{heading or describe(infos)}\ndelay distributions (log scale; no wait drawn at "
               f"{NO_WAIT_MS * 1e3:g} µs; dotted: p99)")
    return fig


def _draw_delay_cdfs(ax: Axes, lines: Sequence[tuple[str, pl.DataFrame]]) -> None:
    for k, (name, buckets) in enumerate(lines):
        x, y = cdf_points(buckets)
        p99 = quantile_ms(buckets, 0.99)
        colour = run_colour(k)
        ax.plot(x, y, color=colour, label=f"{name}: p50 {_ms(quantile_ms(buckets, 0.5))}, p99 {_ms(p99)}")
        ax.axvline(max(p99, NO_WAIT_MS), color=colour, linestyle=":", linewidth=0.9)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    # Plain numbers (0.001, 0.1, 10, ...) at the decades, and at 2 and 5 times them over a range
    # of less than three decades; none at the other minor ticks, which would crowd it.
    low, high = ax.dataLim.intervalx
    if high < 1000 * max(low, NO_WAIT_MS):
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), fontsize="small", frameon=False)


def quantile_ms(buckets: pl.DataFrame, q: float) -> float:
    """The q-quantile in ms by the engine's rule (the midpoint of the bucket holding the
    ⌈q·n⌉-th value: `record::histogram`), as the catalogue's p50/p95/p99 report it."""
    counts = buckets["count"].to_numpy()
    rank = max(1, int(np.ceil(q * counts.sum())))
    at = int(np.searchsorted(np.cumsum(counts), rank))
    lower, upper = int(buckets["lower_ns"][at]), int(buckets["upper_ns"][at])
    return (lower + (upper - lower) / 2) / 1e6


def _ms(value: float) -> str:
    """A delay in words: three significant figures in ms, or µs below a tenth of a ms."""
    return f"{value * 1e3:.3g} µs" if 0 < value < 0.1 else f"{value:.3g} ms"
