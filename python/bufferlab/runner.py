"""Run a scenario on the engine, through the result store.

    scenario -> engine spec JSON -> engine validate -> run id -> (store hit | engine run + save)
             -> summary
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import SpecError
from .result import decode
from .spec import Resolved, Scenario
from .store import DEFAULT_DB, Store, StoredRun, run_identity
from .summary import RunSummary, summarise

__all__ = ["core", "engine_version", "validate", "simulate", "run", "EngineMissing"]


class EngineMissing(RuntimeError):
    """The compiled engine (bufferlab._core) is not importable: build it with maturin."""


def core() -> ModuleType:
    try:
        from . import _core
    except ImportError as e:  # pragma: no cover - only without a build
        raise EngineMissing("bufferlab._core is not built; run `make run` or `maturin develop --release` "
                            f"({e})") from None
    return _core


def engine_version() -> str:
    return str(core().engine_version())


# Engine field names carry their base unit (`rate_bps`, `min_rto_ns`, `rwnd_bytes`); the user's
# spec names the same fields without it (`rate = "10Mbps"`).
_UNIT_SUFFIX = re.compile(r"_(ns|bps|bytes)(?=$|\.|\[)")


def _engine_error(error: ValueError, resolved: Resolved) -> SpecError:
    """The engine says "field.path: reason"; keep its field path, in the user's spelling."""
    field, sep, reason = str(error).partition(": ")
    if not sep or " " in field:
        return SpecError("spec", str(error))
    return SpecError(resolved.user_field(_UNIT_SUFFIX.sub("", field)), reason)


def validate(resolved: Resolved) -> None:
    """The engine's own checks (e.g. routes between flow endpoints); raises SpecError."""
    try:
        core().validate(resolved.to_json())
    except ValueError as e:
        raise _engine_error(e, resolved) from None


# Called with (simulated ns reached, simulated ns at the latest end) while a run advances.
Progress = Callable[[int, int], None]
# Steps a run with progress reports takes: enough for a smooth bar, few enough to cost nothing.
PROGRESS_STEPS = 200


def simulate(scenario: Scenario, progress: Progress | None = None) -> tuple[dict[str, Any], float]:
    """Run on the engine without the store: (RunResult as a dict, wall time in seconds)."""
    resolved = scenario.resolve()
    validate(resolved)
    return _simulate(resolved, progress)


def _simulate(resolved: Resolved, progress: Progress | None = None) -> tuple[dict[str, Any], float]:
    """Simulate in one engine call, or in steps that report progress (the result is the same)."""
    started = time.perf_counter()
    try:
        if progress is None:
            json_text, arrays = core().run(resolved.to_json())
        else:
            stepped = core().Run(resolved.to_json())
            end, step = stepped.end_ns, max(1, stepped.end_ns // PROGRESS_STEPS)
            until = 0
            while not stepped.advance(until):
                progress(min(until, end), end)
                until += step
            progress(end, end)
            json_text, arrays = stepped.finish()
    except ValueError as e:
        raise _engine_error(e, resolved) from None
    return decode(json_text, arrays), time.perf_counter() - started


def run(scenario: Scenario, db: str | Path = DEFAULT_DB, *, force: bool = False,
        user_spec: dict[str, Any] | None = None, progress: Progress | None = None,
        study: str | None = None) -> RunSummary:
    """Run `scenario` unless the store already has it (or `force`), store it with its metric
    tables (in `study`, if given), summarise it.

    Every input check happens before the store is opened, so bad input never touches it.
    """
    resolved = scenario.resolve()
    validate(resolved)
    spec_json = resolved.to_json()
    run_id = run_identity(spec_json, engine_version())
    with Store(db) as store:
        if not force and store.has_run(run_id):
            counters = store.load_counters(run_id)
            assert counters is not None
            return summarise(counters, endpoints=resolved.endpoints_of(counters["flows"]), bottleneck=resolved.bottleneck,
                             run_id=run_id, from_store=True, seed=scenario.seed,
                             wall_time_s=counters["wall_time_s"], queues=resolved.queue_descriptions)
        result, wall = _simulate(resolved, progress)
        store.save(StoredRun(run_id=run_id, name=scenario.name, seed=scenario.seed,
                             duration_ns=scenario.duration, wall_time_s=wall, spec_json=spec_json,
                             user_spec_json=json.dumps(user_spec or scenario.to_dict(), sort_keys=True),
                             endpoints=resolved.endpoints_of(result["flows"]), result=result,
                             bottleneck=resolved.bottleneck, study=study),
                   replace=force)
    return summarise(result, endpoints=resolved.endpoints_of(result["flows"]), bottleneck=resolved.bottleneck,
                     run_id=run_id, from_store=False, seed=scenario.seed, wall_time_s=wall,
                     queues=resolved.queue_descriptions)
