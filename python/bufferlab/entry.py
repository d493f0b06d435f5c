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
import sys
from typing import NoReturn

from . import codecache

__all__ = ["main", "prepare_interpreter", "GC_THRESHOLD"]

# New container objects between two passes of the cyclic garbage collector in the command's
# process (Python's default is 700; see `cli.prepare_process`).
GC_THRESHOLD = 1_000_000


def prepare_interpreter() -> None:
    """The command's collector threshold and code cache (see the module docstring)."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    codecache.install()


def main() -> NoReturn:
    """The `bufferlab` command; a command that stores a run has its writer process forked first
    (`store.writer_process.start_early`)."""
    prepare_interpreter()
    from .store import writer_process

    writer_process.start_early(sys.argv)
    from .cli import command_line

    command_line()
