"""Ctrl-C that never cuts a write in half.

A result is stored whole or not at all; a SIGINT that arrives while a run is being written would
otherwise abort the write (DuckDB turns it into "Query interrupted") and lose a finished run.
Inside `deferred()`, SIGINT is only noted; when the block ends, the interruption is raised as
KeyboardInterrupt, after the write has committed.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deferred"]


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT until the block ends (main thread only: elsewhere signals never arrive)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
