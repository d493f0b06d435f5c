"""A short interpreter switch interval while a helper thread runs Python beside the main thread.

A thread that wants the GIL asks for it and gets it after at most the interpreter's switch
interval (5 ms by default) if another thread is running Python. The main thread of `bufferlab
run` spends its time in extensions that let go of the GIL and take it back often: the engine
every 20 ms to look for signals, DuckDB's Python client after every statement and
between the steps of one (to check for Ctrl-C; about 580 times in the reference dumbbell's
write). While a helper thread runs Python (the preload's imports, the summary's rendering),
each of those takes up to a switch interval to get back, so the main thread mostly waits: the
dumbbell's engine took 0.26 s instead of 0.09 s beside a busy thread, its write ~120 ms instead
of ~90 ms beside the summary's rendering.

`quick_switches` sets the interval to `QUICK_SWITCH_S` while any helper runs and sets the
previous one back when the last ends (helpers may overlap: a short run's preload can still be
importing when its summary is rendered).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["QUICK_SWITCH_S", "begin_quick_switches", "end_quick_switches", "quick_switches"]

# The switch interval while a helper runs (the engine beside a busy thread: 0.095 s).
QUICK_SWITCH_S = 0.0002

_lock = threading.Lock()
_helpers = 0
_previous = 0.0


def begin_quick_switches() -> None:
    """A helper starts: the short interval holds until every helper that began has ended."""
    global _helpers, _previous
    with _lock:
        if _helpers == 0:
            _previous = sys.getswitchinterval()
            sys.setswitchinterval(QUICK_SWITCH_S)
        _helpers += 1


def end_quick_switches() -> None:
    """A helper ends: the last to end sets the interval from before the first back."""
    global _helpers
    with _lock:
        _helpers -= 1
        if _helpers == 0:
            sys.setswitchinterval(_previous)


@contextmanager
def quick_switches() -> Iterator[None]:
    """The short interval for the code inside (run by a helper thread)."""
    begin_quick_switches()
    try:
        yield
    finally:
        end_quick_switches()
