"""The compiled engine (`bufferlab._core`), its version, and its errors in the user's field names."""

from __future__ import annotations

import re
from types import ModuleType
from typing import TYPE_CHECKING

from ..errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from ..spec import Resolved

__all__ = ["core", "engine_version", "EngineMissing", "engine_error", "EngineFailure"]


class EngineMissing(RuntimeError):
    """The compiled engine (bufferlab._core) is not importable: build it with maturin."""


class EngineFailure(RuntimeError):
    """The engine broke one of its own invariants (a bug, not bad input): ``engine: reason``."""


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
# spec names the same fields without it (`rate = "10Mbps"`). A pattern `re` compiles at its first
# use (an engine error), not as the command starts (issue 15).
_UNIT_SUFFIX = r"_(ns|bps|bytes)(?=$|\.|\[)"


def engine_error(error: Exception, resolved: Resolved) -> SpecError | EngineFailure:
    """The engine's typed error (`_core.EngineSpecError`: `.field`, `.reason`) in the user's field
    names. Field "engine" is a broken invariant of the engine itself, not bad input."""
    field = getattr(error, "field", None)
    reason = getattr(error, "reason", None)
    if not isinstance(field, str) or not isinstance(reason, str):
        return EngineFailure(f"engine: {type(error).__name__}: {' '.join(str(error).split())}")
    if field == "engine":
        return EngineFailure(f"engine: {reason}")
    return SpecError(resolved.user_field(re.sub(_UNIT_SUFFIX, "", field)), reason)
