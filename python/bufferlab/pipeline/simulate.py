"""Step 2, simulate: a Plan goes through the engine; nothing else happens here.

Pure: no store, no files, no terminal. The GIL is released while the engine runs, so threads,
processes and Dask workers all simulate in parallel. A run is advanced in steps when progress is
reported; either way the engine hands control back every few milliseconds to let Python handle a
pending signal (Ctrl-C, SIGTERM), so a run stops within a fraction of a second. Stepping never
changes the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .engine import core, engine_error
from .plan import Plan

if TYPE_CHECKING:  # pragma: no cover - imported once the engine has run
    from .result import EngineResult

__all__ = ["RawRun", "simulate", "Progress", "PROGRESS_STEPS"]

# Called with (simulated ns reached, simulated ns at the latest end) while a run advances.
Progress = Callable[[int, int], None]
# Steps a run with progress reports takes: enough for a smooth bar, few enough to cost nothing.
PROGRESS_STEPS = 200


@dataclass
class RawRun:
    """The engine's result (`pipeline.result.EngineResult`: its Arrow tables as polars DataFrames)
    and the wall time the simulation took."""

    result: EngineResult
    wall_time_s: float


def simulate(plan: Plan, progress: Progress | None = None) -> RawRun:
    """Run `plan` on the engine, in one call or in steps that report progress."""
    spec_json = plan.spec_json
    started = time.perf_counter()
    _core = core()
    try:
        if progress is None:
            tables = _core.run(spec_json)
        else:
            stepped = _core.Run(spec_json)
            end, step = stepped.end_ns, max(1, stepped.end_ns // PROGRESS_STEPS)
            until = 0
            while not stepped.advance(until):
                progress(min(until, end), end)
                until += step
            progress(end, end)
            tables = stepped.finish()
    except _core.EngineSpecError as e:
        raise engine_error(e, plan.resolved) from None
    from .result import EngineResult

    return RawRun(result=EngineResult.from_engine(tables), wall_time_s=time.perf_counter() - started)
