"""plots: figures of stored runs and studies, read from the store only (`bufferlab.load`).

Every function takes the store (a path or an open `Results`) and returns a matplotlib `Figure`
(no pyplot, no display); `save(fig, "x.pdf")` writes PDF, SVG or PNG. `bufferlab plot KIND ...`
(`bufferlab.cli.plot`) is the command line of the same functions, through `KINDS`.

    >>> from bufferlab import plots
    >>> fig = plots.timeseries("results/bufferlab.duckdb", "3fa2", quantities=["cwnd", "queue"])
    >>> plots.save(fig, "cwnd.pdf")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import PlotError, save
from .cdf import cdf, delay_cdf
from .cwnd import cwnd
from .operating_point import ecdf, inflight, operating_point, plane
from .sweep import sweep
from .timeseries import DEFAULT_QUANTITIES, timeseries

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["PlotError", "save", "timeseries", "cdf", "delay_cdf", "sweep", "cwnd", "operating_point", "inflight", "ecdf",
           "plane", "KINDS", "Kind"]

Options = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """A figure of the command line: how it is drawn from the targets (runs or a study) and the
    command's options."""

    name: str
    draw: Callable[[Path, Sequence[str], Options], Figure]


def _one_run(kind: str, targets: Sequence[str]) -> str:
    if len(targets) != 1:
        raise PlotError("RUN", f"{kind} draws one run (got {len(targets)})")
    return targets[0]


def _timeseries(db: Path, targets: Sequence[str], o: Options) -> Figure:
    return timeseries(db, _one_run("timeseries", targets), quantities=o["quantities"] or DEFAULT_QUANTITIES,
                      flows=o["flows"], links=o["links"], start=o["start"], end=o["end"], size=o["size"])


def _cwnd(db: Path, targets: Sequence[str], o: Options) -> Figure:
    return cwnd(db, targets, flows=o["flows"], links=o["links"], start=o["start"], end=o["end"], size=o["size"])


def _operating_point(db: Path, targets: Sequence[str], o: Options) -> Figure:
    return operating_point(db, _one_run("operating-point", targets), flows=o["flows"], start=o["start"],
                           end=o["end"], size=o["size"])


def _ecdf(db: Path, targets: Sequence[str], o: Options) -> Figure:
    return ecdf(db, _one_run("ecdf", targets), flows=o["flows"], start=o["start"], end=o["end"], size=o["size"])


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("timeseries", _timeseries),
    Kind("operating-point", _operating_point),
    Kind("inflight", lambda db, targets, o: inflight(db, targets, size=o["size"])),
    Kind("ecdf", _ecdf),
    Kind("plane", lambda db, targets, o: plane(db, targets, size=o["size"])),
    Kind("cdf", lambda db, targets, o: cdf(db, targets, source=o["source"], link=o["link"],
                                           direction=o["direction"], split=o["split"], size=o["size"])),
    Kind("delay", lambda db, targets, o: delay_cdf(db, targets, links=o["links"], flows=o["flows"],
                                                   size=o["size"])),
    Kind("sweep", lambda db, targets, o: sweep(db, targets, x=o["x"] or "", metric=o["metric"] or "", by=o["by"],
                                               size=o["size"])),
    Kind("cwnd", _cwnd),
)}
