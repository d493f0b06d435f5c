"""The `bufferlab` command's entry point (the console script and ``python -m bufferlab``): the
settings of the command's process that pay from its first import, then the command (`cli`).

The garbage collector's threshold and the code cache (`codecache`) are set before click and the
commands' modules are imported, so that their imports, too, run without collector passes and
with compiled code kept between runs: 1.5-2 ms of CPU time before a fresh run's engine (its
parent's steps up to the engine, best of 30: 69.7-69.1 -> 68.3-67.5 ms; issue 15). The rest of
the command's settings need `cli` (`cli.prepare_process`, which also makes these two, for a
program that calls `cli.command_line` itself).
"""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn

from . import codecache

__all__ = ["main", "prepare_interpreter", "discard_closed_streams", "GC_THRESHOLD"]

# New container objects between two passes of the cyclic garbage collector in the command's
# process (Python's default is 700; see `cli.prepare_process`).
GC_THRESHOLD = 1_000_000


def prepare_interpreter() -> None:
    """The command's collector threshold and code cache (see the module docstring), and its
    closed standard streams opened on /dev/null (`discard_closed_streams`)."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    codecache.install()
    discard_closed_streams()


def discard_closed_streams() -> None:
    """A command started with stdout or stderr closed (`bufferlab run x.toml >&-`) writes what it
    would have written there to /dev/null, as Python's `print` does when it has no stdout (the
    interpreter then sets `sys.stdout` to None, on which click's and rich's output, and the
    command's exit, failed with an internal error after the run was stored). The descriptor
    itself is opened too, before the store's writer process is forked, so that no file of the
    command or the child takes the number 1 or 2 by chance."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False))


def main() -> NoReturn:
    """The `bufferlab` command; a command that stores a run has its writer process forked first
    (`store.writer_process.start_early`)."""
    prepare_interpreter()
    from .store import writer_process

    writer_process.start_early(sys.argv)
    from .cli import command_line

    command_line()
