"""Running a sweep: plan every point, skip what the store has, simulate the rest on an executor,
and store each run as it finishes, as part of the study named after the sweep.

    points --plan--> run ids --(stored? skip)--> executor (workers: simulate + derive)
           --> this process: persist each run with its study point, one transaction each

Resumable by construction: a run is stored whole or not at all as soon as it finishes, so a
sweep that is stopped (Ctrl-C, SIGKILL) and started again simulates only what is missing.
A point whose overrides are invalid, or whose run fails, is stored as failed with its one-line
error; the others go on. An axis key that names no field of the scenario (a typo) is no point's
failure but the sweep's: every point is planned before anything is stored, and such a sweep is
refused whole. Points that resolve to the same engine spec (e.g. the seeds of a
scenario without random elements) share one run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SpecError, Terminated
from ..interrupts import deferred, reacting
from ..pipeline.plan import Plan, plan
from ..store.reader import Results
from ..store.writer import Store, StudyPoint, persist
from .executors import Executor, Outcome
from .sweep import Sweep, SweepPoint

__all__ = ["SweepReport", "run_sweep", "Listener"]


@dataclass
class SweepReport:
    """What a sweep did: counts of (point, seed) pairs, the failures with their reasons."""

    study: str
    total: int
    simulated: int = 0
    reused: int = 0
    failed: list[tuple[SweepPoint, str]] = field(default_factory=list)
    wall_time_s: float = 0.0
    simulated_time_s: float = 0.0
    interrupted: bool = False
    # The signal that stopped it: "SIGINT" (Ctrl-C) or "SIGTERM".
    interrupted_by: str | None = None
    # Seeds that gave no distinct run (no random element in the scenario).
    seedless: bool = False

    @property
    def runs_per_minute(self) -> float:
        return 60.0 * self.simulated / self.wall_time_s if self.wall_time_s > 0 else 0.0


@dataclass
class Listener:
    """Progress callbacks: `start(to_simulate, already_done)`, then `finished(ok, simulated_s)`
    once per task (a task is one distinct run)."""

    start: Callable[[int, int], None] = lambda to_run, done: None
    finished: Callable[[bool, float], None] = lambda ok, simulated_s: None


def _stored_state(db: Path, study: str) -> tuple[set[str], dict[tuple[int, int], tuple[str | None, str]]]:
    """Complete run ids in the store, and this study's recorded points: (point, seed) -> (run id, status)."""
    if not db.exists():
        return set(), {}
    res = Results(db)
    with res.one_connection():
        complete = {row[0] for row in res.rows("SELECT run_id FROM runs WHERE status = 'complete'")[1]}
        points = res.rows("SELECT point, seed, run_id, status FROM study_points WHERE study_id = ?", [study])[1]
    return complete, {(point, seed): (run_id, status) for point, seed, run_id, status in points}


def _begin_study(sweep: Sweep, db: Path) -> None:
    with Store(db) as store:
        store.begin_study(sweep.name, sweep_json=sweep.to_json(), axes=sweep.axis_keys, description=sweep.description)


def _study_point(sweep: Sweep, point: SweepPoint, error: str | None = None) -> StudyPoint:
    return StudyPoint(study=sweep.name, point=point.index, seed=point.seed, values=point.values, error=error)


def _store_outcome(sweep: Sweep, db: Path, outcome: Outcome, planned: Plan, points: list[SweepPoint],
                   report: SweepReport, listener: Listener) -> None:
    """Store one finished task (its run, or its failure, at every point it serves) and count it."""
    error = outcome.error or "failed"
    interruption: KeyboardInterrupt | None = None
    try:
        if outcome.run is not None:
            outcome.run.study = sweep.name
            persist(outcome.run, db, point=_study_point(sweep, points[0]))
        else:
            with deferred(), Store(db) as store:
                store.record_points([(_study_point(sweep, p, error), None) for p in points])
    except KeyboardInterrupt as e:  # noted during the write, raised once it had committed: count it
        interruption = e
    if outcome.run is not None:
        if len(points) > 1 and interruption is None:  # (else the next sweep records them as reused)
            with deferred(), Store(db) as store:
                store.record_points([(_study_point(sweep, p), planned.run_id) for p in points[1:]])
            points_stored = len(points)
        else:
            points_stored = 1
        report.simulated += points_stored
        report.simulated_time_s += planned.duration_ns / 1e9
        listener.finished(True, planned.duration_ns / 1e9)
    else:
        report.failed.extend((p, error) for p in points)
        listener.finished(False, 0.0)
    if interruption is not None:
        raise interruption


def run_sweep(sweep: Sweep, db: str | Path, executor: Executor, listener: Listener | None = None,
              max_memory: int | None = None, keep_executor: bool = False) -> SweepReport:
    """Run every point of `sweep` that the store at `db` does not have yet (see the module docstring).
    The executor is closed at the end, however the sweep ends, unless `keep_executor`: a caller
    running several sweeps on it, whose workers then start once (a reproduction's studies, an
    advisor's probes), closes it itself, however they end."""
    db = Path(db)
    listener = listener or Listener()
    started = time.perf_counter()
    report = SweepReport(study=sweep.name, total=len(sweep.points()))
    # Plan every (point, seed) before anything is stored: a key that names no field of the
    # scenario refuses the whole sweep (`Sweep.check_keys`), a value that makes no valid scenario
    # fails its point alone.
    plans: list[tuple[SweepPoint, Plan | SpecError]] = []
    for point in sweep.points():
        try:
            plans.append((point, plan(sweep.scenario(point), max_memory)))
        except SpecError as e:
            sweep.check_keys(e)
            plans.append((point, e))
    # A new store has nothing to skip: the executor starts its workers before the store is made,
    # so that their start overlaps its making (an existing store may need migrating before it is
    # read: it is begun first).
    new_store = not db.exists()
    if not new_store:
        _begin_study(sweep, db)
    complete, recorded = _stored_state(db, sweep.name)

    # A distinct run becomes one task, whatever number of points share it.
    tasks: dict[str, tuple[Plan, list[SweepPoint]]] = {}
    settled: list[tuple[StudyPoint, str | None]] = []
    for point, planned in plans:
        if isinstance(planned, SpecError):
            report.failed.append((point, str(planned)))
            settled.append((_study_point(sweep, point, str(planned)), None))
            continue
        if planned.run_id in complete:
            report.reused += 1
            if recorded.get((point.index, point.seed)) != (planned.run_id, "complete"):
                settled.append((_study_point(sweep, point), planned.run_id))
            continue
        tasks.setdefault(planned.run_id, (planned, []))[1].append(point)
    report.seedless = len(sweep.seeds) > 1 and all(not p.seed_matters for p, _ in tasks.values()) and bool(tasks)
    try:
        if tasks:
            executor.start(len(tasks))
        if new_store:
            _begin_study(sweep, db)
    except BaseException:  # a store that cannot be made: the workers just started end with it
        if not keep_executor:
            executor.close()
        raise
    if settled:
        with deferred(), Store(db) as store:
            store.record_points(settled)

    listener.start(len(tasks), report.reused + len(report.failed))
    keyed = list(tasks.values())
    try:
        # A signal during a write lets the write finish, but ends the simulations at once.
        with reacting(executor.stop_workers):
            for outcome in executor.run([(k, p) for k, (p, _) in enumerate(keyed)]):
                planned, points = keyed[outcome.key]
                _store_outcome(sweep, db, outcome, planned, points, report, listener)
    except KeyboardInterrupt as e:
        # Every finished run is stored already; `close` ends the running ones without waiting.
        report.interrupted = True
        report.interrupted_by = "SIGTERM" if isinstance(e, Terminated) else "SIGINT"
    finally:
        if not keep_executor:
            executor.close()
        report.wall_time_s = time.perf_counter() - started
    return report
