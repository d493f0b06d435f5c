"""Ctrl-C that never cuts a write in half.

A result is stored whole or not at all; a SIGINT that arrives while a run is being written would
otherwise abort the write (DuckDB turns it into "Query interrupted") and lose a finished run.
Inside `deferred()`, SIGINT and SIGTERM are only noted; when the block ends, the interruption is
raised after the write has committed, as `errors.InterruptedAfterWrite` (a KeyboardInterrupt) or,
for SIGTERM, `errors.TerminatedAfterWrite` (an `errors.Terminated`): whoever reports it can say
that the run being written is stored, while any other interruption stored nothing of its run.

What can stop at once does, though: inside `reacting(stop)`, a signal noted by a deferred write
calls `stop` right away (a sweep ends its worker processes, so that the write it waits for no
longer shares the CPU with simulations whose results would be thrown away).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from .errors import InterruptedAfterWrite, TerminatedAfterWrite

__all__ = ["deferred", "reacting"]

# What to stop at once when a deferred write notes a signal (innermost last).
_reactions: list[Callable[[], None]] = []


@contextmanager
def reacting(stop: Callable[[], None]) -> Iterator[None]:
    """Within the block, a signal that a `deferred` write holds back calls `stop` at once (from
    the main thread, between two statements of the write)."""
    _reactions.append(stop)
    try:
        yield
    finally:
        _reactions.remove(stop)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends (main thread only: elsewhere signals never
    arrive)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        for stop in reversed(_reactions):
            stop()

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    if signal.SIGTERM in received:
        raise TerminatedAfterWrite(f"signal {signal.SIGTERM}")
    if received:
        raise InterruptedAfterWrite
