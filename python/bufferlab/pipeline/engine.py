"""The compiled engine (`bufferlab._core`), its version, and its errors in the user's field names."""

from __future__ import annotations

import re
from types import ModuleType
from typing import TYPE_CHECKING

from ..errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from ..spec import Resolved

__all__ = ["core", "engine_version", "EngineMissing", "engine_error"]


class EngineMissing(RuntimeError):
    """The compiled engine (bufferlab._core) is not importable: build it with maturin."""


def core() -> ModuleType:
    try:
        from .. import _core
    except ImportError as e:  # pragma: no cover - only without a build
        raise EngineMissing("bufferlab._core is not built; run `make run` or `maturin develop --release` "
                            f"({e})") from None
    return _core


def engine_version() -> str:
    return str(core().engine_version())


# Engine field names carry their base unit (`rate_bps`, `min_rto_ns`, `rwnd_bytes`); the user's
# spec names the same fields without it (`rate = "10Mbps"`).
_UNIT_SUFFIX = re.compile(r"_(ns|bps|bytes)(?=$|\.|\[)")


def engine_error(error: ValueError, resolved: Resolved) -> SpecError:
    """The engine says "field.path: reason"; keep its field path, in the user's spelling."""
    field, sep, reason = str(error).partition(": ")
    if not sep or " " in field:
        return SpecError("spec", str(error))
    return SpecError(resolved.user_field(_UNIT_SUFFIX.sub("", field)), reason)
