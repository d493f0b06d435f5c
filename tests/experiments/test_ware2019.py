"""`bufferlab reproduce ware2019 --quick`: the paper's model (Eqs. 9-11) as written, BBR's share
measured against it, its independence of the number of CUBIC flows, and preconditions that fail
when the loss-based flows that fill the queue are taken away."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from bufferlab.experiments import ware2019
from bufferlab.experiments.base import ReproductionReport, reproduce
from bufferlab.experiments.registry import reproductions
from bufferlab.study.executors import LocalPoolExecutor
from bufferlab.study.sweep import Sweep

pytestmark = pytest.mark.engine


def test_the_model_gives_half_the_link_in_a_bloated_buffer_less_the_probe_rtt_time() -> None:
    # Eq. 9 tends to p = 1/2 (Eq. 5) as the buffer grows; at 64 BDP of 100 Mb/s × 40 ms it is
    # 1/2 − 1/128 − 4/21333; Eq. 11's ProbeRTT takes (2.56 s + 0.2 s + 0.04 s) of every 10 s.
    q = ware2019.queue_packets(64)
    assert q == 21333
    assert ware2019.loss_based_share(64) == pytest.approx(0.5 - 1 / 128 - 4 / q)
    assert ware2019.probe_rtt_fraction(64) == pytest.approx((q * 1500 * 8 / 100e6 + 0.2 + 0.04) / 10)
    assert ware2019.model_share(64) == pytest.approx((1 - ware2019.loss_based_share(64)) * (1 - 0.28), abs=1e-3)
    # At one BDP BBR's cap covers the pipe and the queue: p = 0, BBR's share is 1 less ProbeRTT.
    assert ware2019.loss_based_share(1) == 0.0
    assert ware2019.model_share(1) == pytest.approx(1 - (0.04 + 0.2 + 0.04) / 10, abs=1e-3)
    # More BBR flows leave 4 packets each in the queue during ProbeRTT: the loss-based share falls.
    assert ware2019.loss_based_share(2, bbr_flows=8) < ware2019.loss_based_share(2, bbr_flows=1)


def test_the_rtt_estimate_of_eq_7_grows_with_the_queue_the_loss_based_flows_hold() -> None:
    # (p·q + 4)/c + l: at 8 BDP, p = 1/2 − 1/16 − 4/2667 and q/c = 320 ms.
    p = ware2019.loss_based_share(8)
    assert ware2019.model_rtt_estimate_s(8) == pytest.approx(p * 0.32 + 4 * 1500 * 8 / 100e6 + 0.04, rel=1e-3)
    assert ware2019.model_rtt_estimate_s(1) == pytest.approx(0.04 + 4 * 1500 * 8 / 100e6)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ware2019") / "r.duckdb"


@pytest.fixture(scope="module")
def quick(store: Path) -> ReproductionReport:
    return reproduce(reproductions()["ware2019"], store, store.parent / "quick", quick=True,
                     executor_factory=lambda: LocalPoolExecutor(2))


def _observation(report: ReproductionReport, key: str):
    return next(o for o in report.observations if o.key == key)


def _precondition(report: ReproductionReport, key: str):
    return next(p for p in report.preconditions if p.key == key)


def test_the_quick_run_saturates_the_link_fills_the_queue_and_leaves_startup(quick: ReproductionReport) -> None:
    assert all(not s.failed for s in quick.sweeps.values())
    for key in ("bottleneck saturated", "queue filled", "left Startup: BBRv1", "left Startup: BBRv3"):
        assert _precondition(quick, key).met, _precondition(quick, key)
    assert _precondition(quick, "settled: BBRv1, 8 BDP").met


def test_bbrs_share_does_not_depend_on_the_number_of_cubic_flows(quick: ReproductionReport) -> None:
    # At 8 BDP, one BBR flow takes the same share against one CUBIC flow as against four: far
    # above the fair share of 1/5 against four.
    o = _observation(quick, "independent of N")
    assert o.holds is True, o
    assert "8 BDP" in o.measured


def test_bbrv1s_rtt_estimate_is_inflated_by_the_cubic_flows_queue_as_eq_7_says(quick: ReproductionReport) -> None:
    o = _observation(quick, "RTT_est (Eq. 7)")
    assert o.holds is True, o
    summary = quick.summary.read_text()
    assert "| in-flight / cwnd | RTT_est ms | Eq. 7 ms |" in summary


def test_the_model_is_judged_at_every_settled_buffer_with_its_tolerance(quick: ReproductionReport) -> None:
    o = _observation(quick, "model: 8 BDP")
    assert o.holds is not None and "0.1" in o.tolerance
    assert f"{ware2019.model_share(8):.3f}" in o.seed_value
    summary = quick.summary.read_text()
    assert "## Measured, per point" in summary and "| BBRv3 | 4 | 8 |" in summary
    assert {p.stem for p in quick.figures} == {"ware2019_share_vs_buffer"}


def test_without_loss_based_flows_the_queue_never_fills_and_the_model_is_not_judged(store: Path) -> None:
    # BBR flows in place of the CUBIC flows: nothing fills the buffer (BBR keeps about one BDP of
    # queue), so the model's premise fails and no buffer's verdict is given.
    repro = reproductions()["ware2019"]

    def sweeps(quick: bool) -> dict[str, Sweep]:
        data = copy.deepcopy(repro.sweeps(quick)["sweep"].written)
        for flows in data["axes"][0]["zip"][0]["values"]:
            for f in flows[1:]:
                f["cca"] = "bbr"
        return {"sweep": Sweep.from_dict(data)}

    forced = dataclasses.replace(repro, sweeps=sweeps)
    studies = {"sweep": "ware2019-quick/no_loss_based"}
    forced.study_names = lambda quick: studies  # type: ignore[method-assign]
    report = reproduce(forced, store, store.parent / "no_loss_based", quick=True,
                       executor_factory=lambda: LocalPoolExecutor(2))
    filled = _precondition(report, "queue filled")
    assert not filled.met
    for key in ("model: 2 BDP", "model: 8 BDP"):
        o = _observation(report, key)
        assert o.holds is None and "queue filled" in o.not_judged
