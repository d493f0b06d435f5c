"""Progress on a terminal: a bar of simulated time for one run (`run`, `ccperf`), and a bar of runs
done for a study (`sweep`, `advise`, `reproduce`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..study.execute import Listener

__all__ = ["PROGRESS_BAR_AFTER_S", "RunProgress", "progress_bar", "progress_listener"]

# Wall seconds a run on a terminal goes without a progress bar (see `progress_bar`).
PROGRESS_BAR_AFTER_S = 0.5
# Progress reports of a run: (simulated ns reached, simulated ns at the end).
RunProgress = Callable[[int, int], None]


@contextmanager
def progress_bar(label: str) -> Iterator[RunProgress]:
    """A bar of simulated time for runs on a terminal that last longer than
    `PROGRESS_BAR_AFTER_S`; rich removes it when the run is over. A quicker run is over before a
    bar could tell anything, and drawing one (rich's progress module, its refresh thread) would
    be a large part of its CPU time."""
    started = time.monotonic()
    with ExitStack() as stack:
        bar: Any = None  # and its task, once drawn
        task: Any = None

        def report(now_ns: int, end_ns: int) -> None:
            nonlocal bar, task
            if bar is None:
                if time.monotonic() - started < PROGRESS_BAR_AFTER_S:
                    return
                bar, task = _draw_progress_bar(stack, label, started)
            done = "simulated; storing the results" if now_ns >= end_ns else "simulated"
            bar.update(task, completed=now_ns, total=end_ns, simulated=f"{now_ns / 1e9:.1f}/{end_ns / 1e9:g} s {done}")

        yield report


def _draw_progress_bar(stack: ExitStack, label: str, started: float) -> tuple[Any, Any]:
    """A rich progress bar, shown until `stack` closes, and its task: the run `label` that began
    at `started` (`time.monotonic`, rich's clock)."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (TextColumn("simulating {task.description}"), BarColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[simulated]}"), TimeElapsedColumn())
    bar = stack.enter_context(Progress(*columns, transient=True))
    task = bar.add_task(label, total=None, simulated="")
    bar.tasks[-1].start_time = started  # the elapsed time is the run's, not the bar's
    return bar, task


@contextmanager
def progress_listener(study: str) -> Iterator[Listener]:
    """A rich bar: runs done/total, failed, ETA and simulated seconds per wall second."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    from ..study.execute import Listener

    columns = (TextColumn(f"sweep {study}"), BarColumn(), MofNCompleteColumn(), TextColumn("runs"),
               TextColumn("{task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
               TextColumn("{task.fields[speed]}"))
    from rich.console import Console

    with Progress(*columns, transient=False, console=Console(stderr=True)) as bar:
        task = bar.add_task(study, total=None, failed="", speed="")
        state = {"failed": 0, "simulated": 0.0}

        def start(to_run: int, done: int) -> None:
            bar.update(task, total=to_run, completed=0)

        def finished(ok: bool, simulated_s: float) -> None:
            state["failed"] += 0 if ok else 1
            state["simulated"] += simulated_s
            elapsed = bar.tasks[0].elapsed or 0.0
            speed = f"{state['simulated'] / elapsed:.1f} sim s/s" if elapsed > 0 else ""
            failed = f"[red]{state['failed']} failed[/red]" if state["failed"] else ""
            bar.update(task, advance=1, failed=failed, speed=speed)

        yield Listener(start=start, finished=finished)
