"""plots: figures of stored runs and studies, read from the store only (`bufferlab.load`).

Every function takes the store (a path or an open `Results`) and returns a matplotlib `Figure`
(no pyplot, no display); `save(fig, "x.pdf")` writes PDF, SVG or PNG. `bufferlab plot KIND ...`
(`plots.command`) is the command line of the same functions, through `KINDS`.

    >>> from bufferlab import plots
    >>> fig = plots.timeseries("results/bufferlab.duckdb", "3fa2", quantities=["cwnd", "queue"])
    >>> plots.save(fig, "cwnd.pdf")

The names are imported on first use (`bufferlab._lazy`): the `plot` command's options load neither
numpy nor matplotlib before a figure is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from .cdf import cdf
    from .common import PlotError, save
    from .cwnd import cwnd
    from .kinds import KINDS, Kind
    from .operating_point import ecdf, inflight, operating_point, plane
    from .sweep import sweep
    from .timeseries import timeseries

__all__ = ["PlotError", "save", "timeseries", "cdf", "sweep", "cwnd", "operating_point", "inflight", "ecdf",
           "plane", "KINDS", "Kind"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "PlotError": ".common", "save": ".common", "timeseries": ".timeseries", "cdf": ".cdf", "sweep": ".sweep",
    "cwnd": ".cwnd", "operating_point": ".operating_point", "inflight": ".operating_point",
    "ecdf": ".operating_point", "plane": ".operating_point", "KINDS": ".kinds", "Kind": ".kinds",
})
