"""`timeseries`: chosen flow and link series of one run over time, one panel per quantity."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .common import (STARTUP_FRACTION, PlotError, RunInfo, TimeWindow, decimate, describe, figure_function,
                     flow_colour, legend_below, new_figure, opened, require_data, run_info, steady_state_ylim,
                     time_window, title)
from .series import FLOW_QUANTITIES, LINK_QUANTITIES, QUANTITIES, Line, Quantity, default_flows, default_links, \
    flow_lines, link_lines

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["timeseries", "DEFAULT_QUANTITIES", "draw_lines", "finish_time_axes", "scale_to_steady_state",
           "require_samples"]

DEFAULT_QUANTITIES = ("cwnd", "srtt", "throughput", "queue")
_LINK_GREYS = ("#222222", "#777777", "#aaaaaa")


@figure_function
def timeseries(db: Results | str | Path, run: str, *, quantities: Sequence[str] = DEFAULT_QUANTITIES,
               flows: Sequence[str] | None = None, links: Sequence[str] | None = None,
               start: str | int | None = None, end: str | int | None = None,
               size: tuple[float, float] | None = None) -> Figure:
    """Flow series (cwnd, in_flight, srtt, throughput, delivery_rate, pacing_rate, ecn_alpha) and
    link series (queue, queue_bytes, sojourn, link_rate, drops; the AQM's aqm_probability,
    aqm_signal, aqm_state, aqm_count, ce_marks, aqm_drops, tail_drops: `plots.series`) of one run
    over time, one panel per quantity on a shared time axis. `flows` (names or patterns) defaults to the first recorded flows,
    `links` to the run's bottleneck; `start`/`end` ("5s", "500ms") cut the window."""
    unknown = [q for q in quantities if q not in QUANTITIES]
    if unknown or not quantities:
        raise PlotError("--quantities", f'unknown quantity "{unknown[0] if unknown else ""}" '
                                        f"(known: {', '.join(QUANTITIES)})")
    window = time_window(start, end)
    with opened(db) as res:
        info = run_info(res, run)
        flow_q = [FLOW_QUANTITIES[q] for q in quantities if q in FLOW_QUANTITIES]
        link_q = [LINK_QUANTITIES[q] for q in quantities if q in LINK_QUANTITIES]
        lines: dict[str, list[Line]] = {}
        title_note = ""
        if flow_q:
            chosen, recorded = default_flows(res, info, flows)
            lines.update(flow_lines(res, info, flow_q, chosen, window))
            if flows is None and len(chosen) < recorded:
                title_note = f" (first {len(chosen)} of {recorded} flows; choose with --flows)"
        if link_q:
            lines.update(link_lines(res, info, link_q, default_links(res, info, links), window))
    for name in quantities:
        require_samples(name, lines[name], info, window)
    fig, axes = new_figure(len(quantities), 1, size=size or (7.5, 1.2 + 1.5 * len(quantities)), sharex=True)
    for ax, name in zip(axes[:, 0], quantities):
        draw_lines(ax, lines[name], QUANTITIES[name].kind)
        ax.set_ylabel(QUANTITIES[name].label)
    finish_time_axes(fig, list(axes[:, 0]), info, window)
    for ax, name in zip(axes[:, 0], quantities):
        scale_to_steady_state(ax, lines[name], info, QUANTITIES[name])
    title(fig, describe([info]) + title_note)
    legend_below(fig, axes[0, 0] if flow_q else axes[-1, 0])
    return fig


def draw_lines(ax: Axes, lines: Sequence[Line], kind: str) -> None:
    """One line per entity: flows in their own colours, channels in greys (named in the panel when
    alone, in a legend of the panel when several)."""
    for k, line in enumerate(lines):
        x, y = decimate(line.t_s, line.y)
        if kind == "flow":
            ax.plot(x, y, color=flow_colour(line.index), label=line.name, drawstyle="default")
        else:
            ax.plot(x, y, color=_LINK_GREYS[k % len(_LINK_GREYS)], label=f"_{line.name}" if len(lines) == 1
                    else line.name)
    if kind == "channel":
        if len(lines) == 1:
            ax.set_title(lines[0].name, loc="left", fontsize="small")
        elif lines:
            ax.legend(loc="upper right")


def finish_time_axes(fig: Figure, axes: Sequence[Axes], info: RunInfo, window: TimeWindow) -> None:
    """A time axis in seconds across the window (the run's end if open), y from 0."""
    del fig
    lo, hi = window.limits_s(info.end_ns)
    for ax in axes:
        ax.set_xlim(lo, hi)
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("time (s)")


def scale_to_steady_state(ax: Axes, lines: Sequence[Line], info: RunInfo, quantity: Quantity) -> None:
    """The panel's y axis scaled to the run's steady state (`steady_state_ylim`): what comes after
    its start-up, the first `STARTUP_FRACTION` of the run, sets the scale; a higher start-up peak
    is clipped, and the panel says so."""
    steady_state_ylim(ax, [(line.t_s, line.y) for line in lines], startup_end_s=STARTUP_FRACTION * info.end_ns / 1e9,
                      unit=quantity.unit)


def require_samples(name: str, lines: Sequence[Line], info: RunInfo, window: TimeWindow) -> None:
    """Refuse a panel of `name` without one finite sample in the window (an empty axis): the
    error names the quantity, the window and how long the run lasted."""
    lo, hi = window.limits_s(info.end_ns)
    require_data(name, [line.y for line in lines],
                 f"run {info.run_id[:12]} has no {name} sample between {lo:g} s and {hi:g} s (it lasted "
                 f"{info.end_ns / 1e9:g} s)")
