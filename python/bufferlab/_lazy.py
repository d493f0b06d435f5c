"""Names a package exports without importing them until first use (PEP 562).

A command such as ``bufferlab --version`` must not pay for pydantic, polars, numpy or DuckDB: a
package's ``__init__`` lists where each exported name lives, and the module is imported only when
the name is first read (``from bufferlab.spec import Scenario`` works as before).

    __getattr__, __dir__ = lazy_exports(globals(), {"Scenario": ".scenario", ...})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict[str, Any],
                 where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of the package whose namespace
    (``globals()``) is `namespace`, which exports each name of `where` from the (relative)
    module given for it."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # the next read is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
