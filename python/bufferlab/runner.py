"""Run a scenario: the pipeline's four steps in one call (`bufferlab run` does exactly this).

    scenario -> plan -> (stored? serve the summary from the store)
                     -> simulate -> derive -> persist -> summary

`simulate` runs the engine without the store. A run the store already has is answered without
loading polars or numpy (`store.counters`). Every input check happens in `plan`, before the
store is touched; the store is opened only for a short read (is the run there?) and, after the
simulation, for the one transaction that writes it. The steps run one after the other, in this
process; each imports what it needs when it starts (derive and the store's writer load only
when there is a run to derive and write).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .pipeline.engine import EngineMissing, core, engine_version
from .pipeline.plan import Plan, plan
from .pipeline.simulate import PROGRESS_STEPS, Progress
from .pipeline.simulate import simulate as _simulate
from .store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover - the summary's and the store's modules: after the engine
    from .analysis.summary import RunSummary
    from .pipeline.result import EngineResult
    from .spec import Scenario

__all__ = ["core", "engine_version", "validate", "simulate", "run", "stored_summary", "EngineMissing", "Progress",
           "PROGRESS_STEPS"]


def validate(scenario: Scenario) -> Plan:
    """Every check, the engine's included (e.g. routes between flow endpoints); raises SpecError."""
    return plan(scenario)


def simulate(scenario: Scenario, progress: Progress | None = None) -> tuple[EngineResult, float]:
    """Run on the engine without the store: (its result as Arrow tables, wall time in seconds)."""
    raw = _simulate(plan(scenario), progress)
    return raw.result, raw.wall_time_s


def stored_summary(p: Plan, db: str | Path) -> RunSummary | None:
    """The summary of `p`'s run if the store at `db` has it (a short read-only look)."""
    if not Path(db).exists():
        return None
    from .store.counters import stored_counters

    counters = stored_counters(db, p.run_id)
    if counters is None:
        return None
    from .analysis.summary import summarise

    return summarise(counters, endpoints=p.resolved.endpoints_of(counters["flows"]), bottleneck=p.resolved.bottleneck,
                     run_id=p.run_id, from_store=True, seed=p.seed, wall_time_s=counters["wall_time_s"],
                     queues=p.resolved.queue_descriptions)


def run(scenario: Scenario | Plan, db: str | Path = DEFAULT_DB, *, force: bool = False,
        user_spec: dict[str, Any] | None = None, progress: Progress | None = None,
        study: str | None = None) -> RunSummary:
    """Run `scenario` (or an existing plan of it) unless the store already has it (or `force`),
    store it with its metric tables (in `study`, if given), summarise it."""
    p = scenario if isinstance(scenario, Plan) else plan(scenario)
    if not force:
        stored = stored_summary(p, db)
        if stored is not None:
            return stored
    raw = _simulate(p, progress)
    from .analysis.derive import derive
    from .store.writer import persist

    derived = derive(p, raw, study=study, user_spec=user_spec)
    persist(derived, db, replace=force)
    return derived.summary
