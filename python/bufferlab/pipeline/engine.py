"""The compiled engine (`bufferlab._core`), its version, and its errors in the user's field names."""

from __future__ import annotations

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


def engine_error(error: Exception, resolved: Resolved) -> SpecError | EngineFailure:
    """The engine's typed error (`_core.EngineSpecError`: `.field`, `.reason`) as the user's: the
    engine names fields by the user's keys, and the resolution's aliases say where a field it
    moved came from (a dumbbell's links). Field "engine" is a broken invariant of the engine
    itself, not bad input."""
    field = getattr(error, "field", None)
    reason = getattr(error, "reason", None)
    if not isinstance(field, str) or not isinstance(reason, str):
        return EngineFailure(f"engine: {type(error).__name__}: {' '.join(str(error).split())}")
    if field == "engine":
        return EngineFailure(f"engine: {reason}")
    return SpecError(resolved.user_field(field), reason)
