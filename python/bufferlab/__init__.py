"""bufferlab: a laboratory for router buffer sizing and congestion control.

The simulation engine is Rust (`bufferlab._core`); this package parses scenario specs, runs them,
stores the results in DuckDB and summarises them; `load` reads a store back as polars DataFrames.

Importing the package is instant: `Scenario`, `load_scenario`, `load` and `__version__` are resolved
on first use (see `_lazy`), so ``bufferlab --version`` never loads pydantic, polars or DuckDB. The
package's namespace is a facade above every layer (`[tool.importlinter]` in pyproject.toml): the
layers below import the compiled engine (`bufferlab._core`) through it, so it names the modules it
re-exports and imports none of them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._lazy import lazy_exports
from .errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from .spec import Scenario, load_scenario
    from .store.reader import load

    __version__: str

__all__ = ["__version__", "Scenario", "SpecError", "load_scenario", "load"]

_exports_getattr, _exports_dir = lazy_exports(globals(), {"Scenario": ".spec", "load_scenario": ".spec",
                                                           "load": ".store.reader"})


def package_version() -> str:
    """The package's version: the Cargo workspace's, which the compiled engine carries (cheaper to
    ask than the installed metadata), or the installed metadata's without a built engine."""
    try:
        from ._core import package_version as compiled
    except ImportError:  # pragma: no cover - a source tree without a build
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("bufferlab")
        except PackageNotFoundError:
            return "0.0.0+unknown"
    return str(compiled())


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = package_version()
        globals()["__version__"] = value
        return value
    return _exports_getattr(name)


def __dir__() -> list[str]:
    return sorted({*_exports_dir(), "__version__"})

