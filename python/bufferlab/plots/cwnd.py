"""`cwnd`: seed 004's figure: the congestion window of each flow and the bottleneck queue on one
time axis, a column per run (over- against under-buffered), windows in kB as iperf3 reports them,
the queue in packets as the seed's queue monitor does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .common import (describe, figure_function, legend_below, new_figure, opened, run_info, run_labels,
                     time_window, title)
from .series import FLOW_QUANTITIES, LINK_QUANTITIES, default_flows, default_links, flow_lines, link_lines
from .timeseries import draw_lines, finish_time_axes

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["cwnd"]


@figure_function
def cwnd(db: Results | str | Path, runs: Sequence[str], *, flows: Sequence[str] | None = None,
         links: Sequence[str] | None = None, start: str | int | None = None, end: str | int | None = None,
         size: tuple[float, float] | None = None) -> Figure:
    """Per run (a column): cwnd of the chosen flows (default: the first recorded ones) above the
    queue of the chosen link (default: the run's bottleneck), on shared time axes; rows share
    their y axis so runs compare at a glance."""
    window = time_window(start, end)
    quantity, queue = FLOW_QUANTITIES["cwnd_kb"], LINK_QUANTITIES["queue"]
    with opened(db) as res:
        infos = [run_info(res, run) for run in runs]
        columns = []
        for info in infos:
            chosen, _ = default_flows(res, info, flows)
            columns.append((flow_lines(res, info, [quantity], chosen, window)[quantity.name],
                            link_lines(res, info, [queue], default_links(res, info, links), window)[queue.name]))
    fig, axes = new_figure(2, len(infos), size=size or (4.5 * len(infos) + 1.5, 5.0), sharex="col", sharey="row")
    labels = run_labels(infos)
    for col, (info, label, (windows, queues)) in enumerate(zip(infos, labels, columns)):
        top, bottom = axes[0, col], axes[1, col]
        draw_lines(top, windows, "flow")
        draw_lines(bottom, queues, "channel")
        if len(infos) > 1:
            top.set_title(label)
        finish_time_axes(fig, [top, bottom], info, window)
    axes[0, 0].set_ylabel(quantity.label)
    axes[1, 0].set_ylabel(queue.label)
    title(fig, describe(infos))
    legend_below(fig, axes[0, 0])
    return fig
