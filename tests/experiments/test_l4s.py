"""`bufferlab reproduce l4s --quick`: behind DualPI2, Prague's L queue stays near its 1 ms step,
CUBIC's C queue near the 15 ms target, the two families get rates of the same order; a FIFO of
the same buffer queues Prague behind CUBIC, FQ-CoDel balances by scheduling at 5 ms."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlab.experiments import l4s
from bufferlab.experiments.base import TCP_REDUCTIONS_KEY, ReproductionReport, reproduce
from bufferlab.experiments.registry import reproductions
from bufferlab.store.reader import load
from bufferlab.study.executors import LocalPoolExecutor

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("l4s") / "r.duckdb"


@pytest.fixture(scope="module")
def quick(store: Path) -> ReproductionReport:
    return reproduce(reproductions()["l4s"], store, store.parent / "quick", quick=True,
                     executor_factory=lambda: LocalPoolExecutor(2))


def _observation(report: ReproductionReport, key: str) -> l4s.Observation:
    return next(o for o in report.observations if o.key == key)


def test_the_quick_run_meets_every_precondition(quick: ReproductionReport) -> None:
    assert all(not s.failed for s in quick.sweeps.values())
    assert all(p.met for p in quick.preconditions), [p for p in quick.preconditions if not p.met]
    assert {p.key for p in quick.preconditions} == {l4s.RUNS_KEY, l4s.L_CARRIED_KEY, l4s.C_CARRIED_KEY,
                                                   l4s.MARKS_KEY, TCP_REDUCTIONS_KEY}


def test_the_l_queue_stays_near_its_step_and_the_c_queue_near_its_target(quick: ReproductionReport) -> None:
    assert _observation(quick, "l-delay").holds is True
    assert _observation(quick, "c-delay").holds is True


def test_the_coupling_balances_prague_and_cubic(quick: ReproductionReport) -> None:
    assert _observation(quick, "balance").holds is True


def test_dualpi2_beats_the_fifo_and_fq_codel_on_l4s_delay(quick: ReproductionReport) -> None:
    assert _observation(quick, "vs-fifo").holds is True
    assert _observation(quick, "vs-fq-codel").holds is True


def test_the_measurements_come_from_the_stored_runs(quick: ReproductionReport, store: Path) -> None:
    m = l4s.measure(load(store), quick.studies)
    assert sorted(m["kind"].to_list()) == sorted(l4s.KINDS)
    dual = m.filter(m["kind"] == "dualpi2").row(0, named=True)
    # Every Prague segment but none of CUBIC's went through the L queue.
    assert dual["l_enqueued"] >= 0.95 * dual["prague_sent"]
    assert dual["c_enqueued"] >= 0.95 * dual["cubic_sent"]
    assert dual["ce_marks"] > 0 and dual["prague_responses"] > 0


def test_a_precondition_not_met_leaves_the_dualpi2_observations_not_judged(quick: ReproductionReport,
                                                                           store: Path) -> None:
    from bufferlab.experiments.base import Precondition, judge

    failed = [Precondition(l4s.MARKS_KEY, "marks", "0 marks", False)]
    judged = judge(quick.observations, failed)
    assert {o.key for o in judged if o.holds is None} == {"l-delay", "c-delay", "balance"}


def test_the_figure_is_written(quick: ReproductionReport) -> None:
    assert {p.name for p in quick.figures} >= {"l4s_rates_and_delay.png", "l4s_rates_and_delay.pdf"}
