"""`bufferlab reproduce enachescu2006 --quick`: paced Reno flows keep a link with 10-20 packets of
buffer busy where the same flows unpaced over fast access links do not, slow access links pace
them naturally, and the pacing precondition fails when no sender paces."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from bufferlab.experiments.base import TCP_REDUCTIONS_KEY, ReproductionReport, reproduce
from bufferlab.experiments.registry import reproductions
from bufferlab.study.executors import LocalPoolExecutor
from bufferlab.study.sweep import Sweep

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("enachescu2006") / "r.duckdb"


@pytest.fixture(scope="module")
def quick(store: Path) -> ReproductionReport:
    return reproduce(reproductions()["enachescu2006"], store, store.parent / "quick", quick=True,
                     executor_factory=lambda: LocalPoolExecutor(2))


def _observation(report: ReproductionReport, key: str):
    return next(o for o in report.observations if o.key == key)


def _precondition(report: ReproductionReport, key: str):
    return next(p for p in report.preconditions if p.key == key)


def test_the_quick_run_meets_every_precondition(quick: ReproductionReport) -> None:
    assert all(not s.failed for s in quick.sweeps.values())
    assert all(p.met for p in quick.preconditions), [p for p in quick.preconditions if not p.met]
    assert {p.key for p in quick.preconditions} == {"the bottleneck is the bottleneck", "pacing engaged",
                                                   "steady state, N = 50", TCP_REDUCTIONS_KEY}


def test_paced_flows_keep_a_twenty_packet_buffers_link_busy_and_bursty_ones_do_not(quick: ReproductionReport) -> None:
    assert _observation(quick, "1 (N=50)").holds is True
    assert _observation(quick, "2 (N=50)").holds is True


def test_slow_access_links_recover_most_of_what_pacing_gains(quick: ReproductionReport) -> None:
    assert _observation(quick, "3 (N=50)").holds is True


def test_unpaced_utilisation_rises_with_the_buffer(quick: ReproductionReport) -> None:
    assert _observation(quick, "4 (N=50, unpaced_fast)").holds is True
    assert _observation(quick, "4 (N=50, unpaced_slow)").holds is True


def test_with_no_sender_pacing_the_pacing_precondition_fails_and_nothing_is_judged(store: Path) -> None:
    repro = reproductions()["enachescu2006"]

    def sweeps(quick: bool) -> dict[str, Sweep]:
        data = copy.deepcopy(repro.sweeps(quick)["tiny_buffers"].written)
        for axis in data["axes"]:
            for part in axis.get("zip", []):
                if part["key"] == "flow_defaults.tcp.pacing":
                    part["values"] = [False for _ in part["values"]]
        return {"tiny_buffers": Sweep.from_dict(data)}

    forced = dataclasses.replace(repro, name="enachescu2006-unpaced", sweeps=sweeps)
    report = reproduce(forced, store, store.parent / "unpaced", quick=True,
                       executor_factory=lambda: LocalPoolExecutor(2))
    assert _precondition(report, "pacing engaged").met is False
    assert all(o.holds is None and "pacing engaged" in o.not_judged for o in report.observations)


def test_runs_that_end_before_the_warm_up_judge_nothing(store: Path) -> None:
    repro = reproductions()["enachescu2006"]

    def sweeps(quick: bool) -> dict[str, Sweep]:
        data = copy.deepcopy(repro.sweeps(quick)["tiny_buffers"].written)
        data["base"]["duration"] = "15s"
        return {"tiny_buffers": Sweep.from_dict(data)}

    forced = dataclasses.replace(repro, name="enachescu2006-short", sweeps=sweeps)
    report = reproduce(forced, store, store.parent / "short", quick=True, executor_factory=lambda: LocalPoolExecutor(2))
    assert _precondition(report, "steady state, N = 50").met is False
    assert all(o.holds is None and "steady state, N = 50" in o.not_judged for o in report.observations)


def test_access_links_that_drop_more_than_a_tiny_share_of_the_bottleneck_fail_its_precondition(store: Path) -> None:
    # Access queues of 3 packets overflow in every window's burst: the access links, not the
    # bottleneck, then shape the flows, and nothing may be judged.
    repro = reproductions()["enachescu2006"]

    def sweeps(quick: bool) -> dict[str, Sweep]:
        data = copy.deepcopy(repro.sweeps(quick)["tiny_buffers"].written)
        data["base"]["topology"]["access_queue"] = "3p"
        return {"tiny_buffers": Sweep.from_dict(data)}

    forced = dataclasses.replace(repro, name="enachescu2006-access", sweeps=sweeps)
    report = reproduce(forced, store, store.parent / "access", quick=True, executor_factory=lambda: LocalPoolExecutor(2))
    bottleneck = _precondition(report, "the bottleneck is the bottleneck")
    assert bottleneck.met is False, bottleneck.measured
    assert all(o.holds is None and "the bottleneck is the bottleneck" in o.not_judged for o in report.observations)
