"""bufferlab: a laboratory for router buffer sizing and congestion control.

The simulation engine is Rust (`bufferlab._core`); this package parses scenario specs, runs them,
stores the results in DuckDB and summarises them.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bufferlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

from .errors import SpecError
from .spec import Scenario, load_scenario

__all__ = ["__version__", "Scenario", "SpecError", "load_scenario"]
