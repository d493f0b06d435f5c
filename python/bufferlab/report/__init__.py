"""report: a static HTML site of a result store (`bufferlab report`) and its local server
(`bufferlab serve`). Pages are built from `bufferlab.load(db)` only, never from the engine.

    >>> from bufferlab.report import build_site
    >>> build_site("results/bufferlab.duckdb", "report")   # then open report/index.html

The names are imported on first use (`bufferlab._lazy`): the commands' options need only
`DEFAULT_OUT`, defined here, not polars or the store's reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from .site import BuildReport, build_site

__all__ = ["build_site", "BuildReport", "DEFAULT_OUT"]

# Where `bufferlab report` writes the site unless -o says otherwise.
DEFAULT_OUT = Path("report")

__getattr__, __dir__ = lazy_exports(globals(), {"build_site": ".site", "BuildReport": ".site"})
