"""bufferlab: a laboratory for router buffer sizing and congestion control.

The simulation engine is Rust (`bufferlab._core`); this package parses scenario specs, runs them,
stores the results in DuckDB and summarises them; `load` reads a store back as polars DataFrames.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bufferlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import SpecError
from .spec import Scenario, load_scenario

if TYPE_CHECKING:  # pragma: no cover
    from .store.reader import Results

__all__ = ["__version__", "Scenario", "SpecError", "load_scenario", "load"]


def load(db: str | Path = Path("results") / "bufferlab.duckdb") -> Results:
    """Open a result store for reading: runs, flows, metric tables and time series as polars
    DataFrames (see `bufferlab.store.reader.Results`)."""
    from .store.reader import load as _load

    return _load(db)
