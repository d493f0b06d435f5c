"""The one error type of bad input: a field path and a reason, printed as one line."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - pydantic is imported only by what validates specs
    from pydantic import ValidationError

__all__ = ["SpecError", "NoSuchField", "Terminated", "format_loc", "from_validation_error", "writing"]


class SpecError(ValueError):
    """Bad input. `field` is a path such as ``flows[1].cca`` (or a flag such as ``--bw``).

    Raised inside a pydantic validator, `field` is relative to the field being validated and is
    appended to pydantic's location (see `from_validation_error`).
    """

    def __init__(self, field: str, reason: str) -> None:
        # One line, whatever the source of the reason (engine messages, pydantic messages).
        self.field = field
        self.reason = " ".join(reason.split())
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}" if self.field else self.reason


class NoSuchField(SpecError):
    """A path that names no field of the scenario, whatever its value: an unknown key, an entry
    beyond a list's end, a field asked of something that is not a table. A sweep whose axis key
    gives this at a point would give it at every point, and is refused whole."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt (the CLI installs the handler) so that every
    step unwinds the same way: a store transaction rolls back, a sweep keeps its finished runs."""


class InterruptedAfterWrite(KeyboardInterrupt):
    """Ctrl-C that arrived while a run was being written, raised once the write had committed
    (`interrupts.deferred`): unlike any other interruption, the run it cut short is stored."""


class TerminatedAfterWrite(Terminated):
    """SIGTERM that arrived while a run was being written, raised once the write had committed."""


def format_loc(loc: Sequence[str | int]) -> str:
    """('flows', 0, 'cca') -> 'flows[0].cca'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _join(path: str, sub: str) -> str:
    if not sub:
        return path
    if not path:
        return sub
    return path + sub if sub.startswith("[") else f"{path}.{sub}"


# A value of the wrong kind for a field (or for one member of a union of kinds).
_KIND_ERRORS = ("_type", "_parsing")


def _user_loc(loc: Sequence[str | int]) -> list[str | int]:
    """A pydantic location without the members of a union it names (``constrained-int``,
    ``list[constrained-int]``): they are pydantic's names of the union's kinds, not keys of the
    spec."""
    return [part for part in loc if isinstance(part, int) or not re.search(r"[^A-Za-z0-9_]", part)]


def from_validation_error(error: ValidationError, prefix: str = "") -> SpecError:
    """Turn a pydantic ValidationError into one SpecError: the first problem, one line. A value
    that fits one kind of a union (a list where a number or a list is allowed) is judged by that
    kind: the first problem that is not a mismatch of kind is the one reported."""
    problems = error.errors(include_url=False)
    first = problems[0]
    field = _user_loc(first["loc"])
    if len(field) < len(first["loc"]):  # a union's member: the problems of the same field's other members
        same = [p for p in problems if _user_loc(p["loc"])[:len(field)] == field]
        first = next((p for p in same if not p["type"].endswith(_KIND_ERRORS)), first)
    path = _join(prefix, format_loc(_user_loc(first["loc"])))
    kind = first["type"]
    if kind == "extra_forbidden":
        return NoSuchField(path, "unknown key")
    if kind == "missing":
        return SpecError(path, "missing required key")
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, SpecError):
        return type(cause)(_join(path, cause.field), cause.reason)
    if isinstance(cause, BaseException):
        return SpecError(path, str(cause))
    message = first["msg"]
    message = message[:1].lower() + message[1:]
    return SpecError(path, f"{message} (got {first['input']!r})")


@contextmanager
def writing(path: str | Path, field: str = "--output") -> Iterator[None]:
    """Writing a file the user named: a path that cannot be written is bad input (`field`: why)."""
    try:
        yield
    except OSError as e:
        # Rust-backed writers (polars) give no strerror, but "<reason> (os error N): <path>".
        reason = e.strerror or str(e).split(" (os error")[0]
        raise SpecError(field, f"cannot write {path}: {reason}") from None
