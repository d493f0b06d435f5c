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
from .timeseries import draw_lines, finish_time_axes, require_samples, scale_to_steady_state

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["cwnd"]


@figure_function
def cwnd(db: Results | str | Path, runs: Sequence[str], *, flows: Sequence[str] | None = None,
         links: Sequence[str] | None = None, start: str | int | None = None, end: str | int | None = None,
         labels: Sequence[str] | None = None, heading: str | None = None,
         size: tuple[float, float] | None = None) -> Figure:
    """Per run (a column): cwnd of the chosen flows (default: the first recorded ones) above the
    queue of the chosen link (default: the run's bottleneck), on shared time axes. Columns are
    named by `labels` (default: by what differs between the runs, `run_labels`), the figure by
    `heading` (default: what the runs have in common). Every panel has its own y axis, scaled to
    the steady state (`scale_to_steady_state`): an over- and an under-buffered run differ tenfold."""
    window = time_window(start, end)
    quantity, queue = FLOW_QUANTITIES["cwnd_kb"], LINK_QUANTITIES["queue"]
    with opened(db) as res:
        infos = [run_info(res, run) for run in runs]
        columns = []
        for info in infos:
            chosen, _ = default_flows(res, info, flows)
            columns.append((flow_lines(res, info, [quantity], chosen, window)[quantity.name],
                            link_lines(res, info, [queue], default_links(res, info, links), window)[queue.name]))
    for info, (windows, queues) in zip(infos, columns):
        require_samples("cwnd", windows, info, window)
        require_samples("queue", queues, info, window)
    fig, axes = new_figure(2, len(infos), size=size or (4.5 * len(infos) + 1.5, 5.0), sharex="col")
    names = list(labels) if labels is not None else run_labels(infos)
    for col, (info, name, (windows, queues)) in enumerate(zip(infos, names, columns)):
        top, bottom = axes[0, col], axes[1, col]
        draw_lines(top, windows, "flow")
        draw_lines(bottom, queues, "channel")
        if len(infos) > 1 or labels is not None:
            top.set_title(name)
        finish_time_axes(fig, [top, bottom], info, window)
        scale_to_steady_state(top, windows, info, quantity)
        scale_to_steady_state(bottom, queues, info, queue)
    axes[0, 0].set_ylabel(quantity.label)
    axes[1, 0].set_ylabel(queue.label)
    title(fig, heading or describe(infos))
    legend_below(fig, axes[0, 0])
    return fig
