"""Run a scenario: the pipeline's four steps in one call (`bufferlab run` does exactly this).

    scenario -> plan -> (stored? serve the summary from the store)
                     -> simulate -> derive -> persist -> summary

`simulate` runs the engine without the store. A run the store already has is answered without
loading polars or numpy (`store.counters`). Every input check happens in `plan`, before the
store is touched; the store is opened only for a short read (is the run there?) and, after the
simulation, for the one transaction that writes it. While the engine of a run to be stored
runs, another thread imports what deriving and storing it needs (`bufferlab.preload`).

`bufferlab run` passes its store's writer process (`store.writer_process`): then the look-up and
the write are the child's, and this process loads no DuckDB.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import preload
from .pipeline.engine import EngineMissing, core, engine_version
from .pipeline.plan import Plan, plan
from .pipeline.simulate import PROGRESS_STEPS, Progress
from .pipeline.simulate import simulate as _simulate
from .store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover - the summary's and the store's modules: after the engine
    from .analysis.summary import RunSummary
    from .pipeline.result import EngineResult
    from .spec import Scenario
    from .store.writer_process import WriterProcess

__all__ = ["core", "engine_version", "validate", "simulate", "run", "stored_summary", "EngineMissing", "Progress",
           "PROGRESS_STEPS"]


def validate(scenario: Scenario) -> Plan:
    """Every check, the engine's included (e.g. routes between flow endpoints); raises SpecError."""
    return plan(scenario)


def simulate(scenario: Scenario, progress: Progress | None = None) -> tuple[EngineResult, float]:
    """Run on the engine without the store: (its result as Arrow tables, wall time in seconds)."""
    raw = _simulate(plan(scenario), progress)
    return raw.result, raw.wall_time_s


def stored_summary(p: Plan, db: str | Path, writer: WriterProcess | None = None) -> RunSummary | None:
    """The summary of `p`'s run if the store at `db` has it (a short read-only look, by `writer`
    if given)."""
    if not Path(db).exists():
        return None
    if writer is None:
        from .store.counters import stored_counters

        counters = stored_counters(db, p.run_id)
    else:
        counters = writer.stored_counters(db, p.run_id)
    if counters is None:
        return None
    from .analysis.summary import summarise

    return summarise(counters, endpoints=p.resolved.endpoints_of(counters["flows"]), bottleneck=p.resolved.bottleneck,
                     run_id=p.run_id, from_store=True, seed=p.seed, wall_time_s=counters["wall_time_s"],
                     queues=p.resolved.queue_descriptions)


def run(scenario: Scenario | Plan, db: str | Path = DEFAULT_DB, *, force: bool = False,
        user_spec: dict[str, Any] | None = None, progress: Progress | None = None,
        study: str | None = None, storing: Callable[[RunSummary], None] | None = None,
        preload_also: Sequence[str] = (), writer: WriterProcess | None = None) -> RunSummary:
    """Run `scenario` (or an existing plan of it) unless the store already has it (or `force`),
    store it with its metric tables (in `study`, if given), summarise it. `storing` is called with
    the summary of a simulated run while it is stored (to present it meanwhile: just before the
    write, or, with `writer`, once the writer process has the whole run), never for a run served
    from the store; `preload_also` names modules it will import, which the preload
    imports while the engine runs; `writer`, the store's writer process, looks the run up and
    stores it (else this process does)."""
    p = scenario if isinstance(scenario, Plan) else plan(scenario)
    if not force:
        stored = stored_summary(p, db, writer)
        if stored is not None:
            return stored
    preload.start(also=(*(writer.MODULES if writer is not None else ()), *preload_also), store=writer is None)
    raw = _simulate(p, progress)
    # derive (and DuckDB and the store's writer, without a writer process) load only when there
    # is something to derive and write (the preload has most likely loaded them by now).
    from .pipeline.derive import derive

    derived = derive(p, raw, study=study, user_spec=user_spec)
    present = None if storing is None else (lambda: storing(derived.summary))
    if writer is not None:  # presented once the writer process has the run (`WriterProcess.persist`)
        writer.persist(derived, db, replace=force, sent=present)
    else:
        from .store.writer import persist

        if present is not None:
            present()
        persist(derived, db, replace=force)
    return derived.summary
