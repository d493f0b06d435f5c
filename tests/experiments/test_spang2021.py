"""`bufferlab reproduce spang2021 --quick`: one Reno flow needs a BDP of buffer and one CUBIC flow
3/7 of it, BBR less than both, N flows (1 − β)/β · BDP/√N; the preconditions (steady state,
desynchronised flows, the reduction β) can fail, and the threshold and the sawtooth formula are
computed as the module says."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from bufferlab.experiments import spang2021
from bufferlab.experiments.base import ReproductionReport, reproduce
from bufferlab.experiments.registry import reproductions
from bufferlab.study.executors import LocalPoolExecutor
from bufferlab.study.sweep import Sweep


# --- the arithmetic (no engine) --------------------------------------------------------------------


def test_the_sawtooth_formula_is_three_quarters_without_a_buffer_and_full_from_one_bdp() -> None:
    assert spang2021.reno_sawtooth_utilisation(1.0) == pytest.approx(0.75)
    assert spang2021.reno_sawtooth_utilisation(2.0) == 1.0
    assert spang2021.reno_sawtooth_utilisation(2.5) == 1.0
    # reno_buffer_for inverts it: the buffer (packets) whose x = (P + B + 1)/P gives the level.
    for level in (0.8, 0.9, 0.99, 0.999):
        b = spang2021.reno_buffer_for(level, 83.0)
        assert spang2021.reno_sawtooth_utilisation((83.0 + b + 1) / 83.0) == pytest.approx(level, abs=1e-12)


def test_the_rule_is_one_bdp_for_reno_three_sevenths_for_cubic_and_falls_as_root_n() -> None:
    assert spang2021.rule_of_the_paper("reno", 1) == pytest.approx(1.0)
    assert spang2021.rule_of_the_paper("cubic", 1) == pytest.approx(3 / 7)
    assert spang2021.rule_of_the_paper("cubic", 16) == pytest.approx(3 / 7 / 4)
    # Multiples of BDP/√N in packets: N = 8 flows at 10 Mb/s each and 100 ms, 1 × BDP/√8 = 236 packets.
    assert spang2021.queue_packets(8, 1.0) == round(8 * 10e6 * 0.1 / 12000 / math.sqrt(8))


def test_the_threshold_is_interpolated_in_log_buffer_where_the_utilisation_stays_above_the_level() -> None:
    buffers = [0.1, 0.2, 0.4, 0.8]
    # Crossing 0.99 halfway between 0.2 (0.98) and 0.4 (1.0): the geometric mean of the two.
    assert spang2021.threshold(buffers, [0.9, 0.98, 1.0, 1.0], 0.99) == pytest.approx(math.sqrt(0.2 * 0.4))
    # A dip above the level's first crossing moves the threshold past it.
    assert spang2021.threshold(buffers, [0.995, 0.98, 1.0, 1.0], 0.99) == pytest.approx(math.sqrt(0.2 * 0.4))
    assert spang2021.threshold(buffers, [0.995, 0.996, 1.0, 1.0], 0.99) == 0.1
    assert spang2021.threshold(buffers, [0.9, 0.95, 0.97, 0.98], 0.99) is None


def test_a_congestion_event_counts_the_other_flows_that_reduce_with_it() -> None:
    import polars as pl

    ms = 1_000_000
    # Events: {0, 1} at 0–100 ms, {2} at 2 s, {0, 1, 2, 3} at 4 s: (1/3 + 0 + 3/3)/3 of the others.
    reductions = pl.DataFrame({"time_ns": [0, 100 * ms, 2000 * ms, 4000 * ms, 4100 * ms, 4250 * ms, 4300 * ms],
                               "flow": [0, 1, 2, 0, 1, 2, 3]})
    assert spang2021._together(reductions, 4) == pytest.approx((1 / 3 + 0 + 1) / 3)


# --- the quick reproduction -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spang2021") / "r.duckdb"


@pytest.fixture(scope="module")
def quick(store: Path) -> ReproductionReport:
    return reproduce(reproductions()["spang2021"], store, store.parent / "quick", quick=True,
                     executor_factory=lambda: LocalPoolExecutor(2))


def _observation(report: ReproductionReport, key: str):
    return next(o for o in report.observations if o.key == key)


def _precondition(report: ReproductionReport, key: str):
    return next(p for p in report.preconditions if p.key == key)


def _forced(store: Path, part: str, change: Callable[[dict], None], keep: Callable[[str, int], bool]
            ) -> ReproductionReport:
    """The quick reproduction restricted to the (controller, N) that `keep` accepts, its sweep as
    written changed by `change(data)`, under a study of its own (unchanged runs come from the store)."""
    repro = reproductions()["spang2021"]

    def sweeps(quick: bool) -> dict[str, Sweep]:
        data = copy.deepcopy(repro.sweeps(quick)["sweep"].written)
        ccas, zipped = data["axes"][0], data["axes"][1]["zip"]
        flows = next(a for a in zipped if a["key"] == "topology.flows")["values"]
        ccas["values"] = [c for c in ccas["values"] if any(keep(c, n) for n in flows)]
        chosen = [i for i, n in enumerate(flows) if any(keep(c, n) for c in ccas["values"])]
        for axis in zipped:
            axis["values"] = [axis["values"][i] for i in chosen]
        change(data)
        return {"sweep": Sweep.from_dict(data)}

    forced = dataclasses.replace(repro, sweeps=sweeps)
    studies = {"sweep": f"spang2021-quick/{part}"}
    forced.study_names = lambda quick: studies  # type: ignore[method-assign]
    return reproduce(forced, store, store.parent / part, quick=True, executor_factory=lambda: LocalPoolExecutor(2))


engine = pytest.mark.engine  # the tests below run the compiled engine


@engine
def test_the_quick_run_meets_every_precondition(quick: ReproductionReport) -> None:
    assert all(not s.failed for s in quick.sweeps.values())
    assert all(p.met for p in quick.preconditions), [p for p in quick.preconditions if not p.met]
    assert {p.key for p in quick.preconditions} >= {
        "the bottleneck is the bottleneck", "steady state: Reno, N = 1", "steady state: CUBIC, N = 8",
        "steady state: BBR, N = 8", "desynchronised: Reno, N = 8", "desynchronised: CUBIC, N = 8",
        "β as assumed: Reno", "β as assumed: CUBIC"}


@engine
def test_one_reno_flow_needs_a_bdp_and_one_cubic_flow_three_sevenths_of_it(quick: ReproductionReport) -> None:
    reno, cubic = _observation(quick, "one Reno flow"), _observation(quick, "one CUBIC flow")
    assert reno.holds is True and cubic.holds is True, (reno, cubic)
    assert _observation(quick, "Reno sawtooth").holds is True


@engine
def test_bbr_needs_less_buffer_than_either_loss_based_controller(quick: ReproductionReport) -> None:
    for n in (1, 8):
        assert _observation(quick, f"BBR, N = {n}").holds is True, _observation(quick, f"BBR, N = {n}")


@engine
def test_eight_flows_need_the_single_flow_rule_over_root_eight(quick: ReproductionReport) -> None:
    assert _observation(quick, "Reno, N = 8").holds is True and _observation(quick, "CUBIC, N = 8").holds is True
    # One N > 1 cannot give a slope: not judged, and saying why.
    slope = _observation(quick, "√N: Reno")
    assert slope.holds is None and "N = 8" in slope.measured


@engine
def test_the_summary_shows_the_thresholds_and_the_reduction_basis(quick: ReproductionReport) -> None:
    summary = quick.summary.read_text()
    assert 'ssthresh_from = "cwnd"' in summary
    assert "## Thresholds" in summary and "| CUBIC | 1 | 0.429 |" in summary
    assert {p.stem for p in quick.figures} == {"spang2021_utilisation_vs_buffer", "spang2021_threshold_vs_flows"}


@engine
def test_the_measured_reduction_is_the_controllers_beta(quick: ReproductionReport, store: Path) -> None:
    import polars as pl

    from bufferlab.store.reader import load

    m = spang2021.measure(load(store), quick.studies)
    for cca, beta in spang2021.BETA.items():
        ratios = m.filter(pl.col("cca") == cca)["beta"].to_list()
        assert all(abs(r - beta) < 0.01 for r in ratios), (cca, ratios)


@engine
def test_synchronised_reno_flows_are_not_judged_against_the_root_n_rule(quick: ReproductionReport,
                                                                       store: Path) -> None:
    # Eight Reno flows with one RTT that start together reduce together (drop-tail
    # synchronisation): the desynchronisation precondition fails, and the √N observation for them
    # is not judged.
    def same_rtt_same_start(data: dict) -> None:
        data["base"]["flow_defaults"]["start"] = "0s"
        for axis in data["axes"][1]["zip"]:
            if axis["key"] == "topology.rtt":
                axis["values"] = ["100ms" for _ in axis["values"]]

    report = _forced(store, "synchronised", same_rtt_same_start, lambda cca, n: cca == "reno" and n == 8)
    desync = _precondition(report, "desynchronised: Reno, N = 8")
    assert not desync.met, desync
    o = _observation(report, "Reno, N = 8")
    assert o.holds is None and "desynchronised: Reno, N = 8" in o.not_judged


@engine
def test_runs_too_short_for_a_steady_state_judge_nothing(quick: ReproductionReport, store: Path) -> None:
    # 40 s for one flow (10 s measured after 30 s) holds one or two congestion cycles of a Reno
    # flow, not four: the single-flow observations are not judged.
    def short(data: dict) -> None:
        for axis in data["axes"][1]["zip"]:
            if axis["key"] == "duration":
                axis["values"] = ["40s" for _ in axis["values"]]

    report = _forced(store, "short", short, lambda cca, n: cca in ("reno", "cubic") and n == 1)
    steady = _precondition(report, "steady state: Reno, N = 1")
    assert not steady.met, steady
    for key in ("one Reno flow", "Reno sawtooth"):
        assert _observation(report, key).holds is None, _observation(report, key)
