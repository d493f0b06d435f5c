"""report: a static HTML site of a result store (`bufferlab report`) and its local server
(`bufferlab serve`). Pages are built from `bufferlab.load(db)` only, never from the engine.

    >>> from bufferlab.report import build_site
    >>> build_site("results/bufferlab.duckdb", "report")   # then open report/index.html
"""

from .site import DEFAULT_OUT, BuildReport, build_site

__all__ = ["build_site", "BuildReport", "DEFAULT_OUT"]
