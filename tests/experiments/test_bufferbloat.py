"""`bufferlab reproduce bufferbloat --quick`: what its verdicts say about FIFO, RED, CoDel,
FQ-CoDel and PIE, that its preconditions can fail, and that each measured quantity reads the
store as the engine counted it."""

from __future__ import annotations

import copy
import json
import dataclasses
from pathlib import Path

import pytest

from bufferlab.experiments.base import ReproductionReport, reproduce
from bufferlab.experiments.registry import reproductions
from bufferlab.study.executors import LocalPoolExecutor
from bufferlab.study.sweep import Sweep

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bufferbloat") / "r.duckdb"


@pytest.fixture(scope="module")
def quick(store: Path) -> ReproductionReport:
    return reproduce(reproductions()["bufferbloat"], store, store.parent / "quick", quick=True,
                     executor_factory=lambda: LocalPoolExecutor(2))


def _observation(report: ReproductionReport, key: str):
    return next(o for o in report.observations if o.key == key)


def _precondition(report: ReproductionReport, key: str):
    return next(p for p in report.preconditions if p.key == key)


def _forced(store: Path, part: str, change) -> ReproductionReport:
    """The quick reproduction with its sweep as written changed by `change(data)`, under a name of
    its own (its unchanged runs come from the store)."""
    repro = reproductions()["bufferbloat"]

    def sweeps(quick: bool) -> dict[str, Sweep]:
        data = copy.deepcopy(repro.sweeps(quick)["sweep"].written)
        change(data)
        return {"sweep": Sweep.from_dict(data)}

    forced = dataclasses.replace(repro, sweeps=sweeps)
    studies = {"sweep": f"bufferbloat-quick/{part}"}
    forced.study_names = lambda quick: studies  # type: ignore[method-assign]
    return reproduce(forced, store, store.parent / part, quick=True, executor_factory=lambda: LocalPoolExecutor(2))


def test_the_quick_run_meets_every_precondition(quick: ReproductionReport) -> None:
    assert all(not s.failed for s in quick.sweeps.values())
    assert all(p.met for p in quick.preconditions), [p for p in quick.preconditions if not p.met]
    assert {p.key for p in quick.preconditions} >= {
        "bottleneck saturated", "AQM engaged: RED", "AQM engaged: CoDel", "AQM engaged: FQ-CoDel", "AQM engaged: PIE",
        "sparse flow delivered: FQ-CoDel", "steady state: CUBIC", "steady state: BBR"}


def test_a_fifo_fills_to_its_limit_while_codel_and_pie_hold_their_targets(quick: ReproductionReport) -> None:
    for key in ("FIFO", "CoDel", "PIE"):
        assert _observation(quick, key).holds is True, _observation(quick, key)
    for kind in ("CoDel", "FQ-CoDel", "PIE"):
        assert _observation(quick, f"utilisation: {kind}").holds is True


def test_fq_codel_serves_the_sparse_flow_at_its_base_delay(quick: ReproductionReport) -> None:
    assert _observation(quick, "FQ-CoDel sparse flow").holds is True
    assert _observation(quick, "shared queue sparse flow").holds is True


def test_bbr_bounds_its_queue_in_a_deep_fifo_and_floods_a_shallow_one(quick: ReproductionReport) -> None:
    assert _observation(quick, "BBR deep FIFO").holds is True
    assert _observation(quick, "BBR shallow FIFO").holds is True


def test_the_summary_shows_the_reduction_basis_and_the_measured_table(quick: ReproductionReport) -> None:
    summary = quick.summary.read_text()
    assert 'ssthresh_from = "cwnd"' in summary
    assert "## Measured, per point" in summary and "| CUBIC | FQ-CoDel | 10 |" in summary
    assert {p.stem for p in quick.figures} == {"bufferbloat_delay_vs_buffer", "bufferbloat_delay_vs_throughput",
                                               "bufferbloat_sparse_flow_delay", "bufferbloat_sojourn_cdf"}
    assert "| p99 sojourn ms |" in summary and "| sparse flow p99 delay ms |" in summary


def test_the_measured_quantities_agree_with_the_engines_whole_run_counters(quick: ReproductionReport,
                                                                          store: Path) -> None:
    # After the warm-up, a FIFO of 10 BDP with CUBIC is full: the window's mean sojourn is close to
    # the whole run's (the engine's mean_qdisc_delay_l2); its p99 sojourn, of the packets after
    # the warm-up (the run's `record.warmup`), is at most the limit's delay; and the sparse flow's
    # p99 delay is its base delay plus the link's p99 sojourn.
    import polars as pl

    from bufferlab.experiments.bufferbloat import limit_delay_ms, measure
    from bufferlab.store.reader import load

    res = load(store)
    m = measure(res, quick.studies)
    row = m.filter((pl.col("cca") == "cubic") & (pl.col("kind") == "fifo") & (pl.col("multiple") == 10.0)).row(
        0, named=True)
    whole = res.query("SELECT mean_qdisc_delay_l2 FROM link_metrics WHERE run_id = ? AND bottleneck",
                      [row["run_id"]])["mean_qdisc_delay_l2"][0]
    assert row["delay_ms"] == pytest.approx(whole, rel=0.15)
    assert row["delay_ms"] <= row["p99_delay_ms"] <= 1.02 * limit_delay_ms(10.0)
    assert row["sparse_queueing_ms"] == pytest.approx(row["p99_delay_ms"], rel=0.1)
    # The run's delay distribution starts at the warm-up: it counts the packets sent after it.
    run = res.query("SELECT sent_packets FROM channels WHERE run_id = ? AND name = 'btl_forward'", [row["run_id"]])
    counted = res.delay_distribution(row["run_id"])["count"].sum()
    assert 0 < counted < run["sent_packets"][0]
    assert json.loads(res.query("SELECT spec_json FROM runs WHERE run_id = ?", [row["run_id"]])["spec_json"][0]
                      )["record"]["warmup"] == 10 * 10**9
    assert row["sparse_floor_ms"] == pytest.approx(50.0 + 200 * 8 / 100e6 * 1e3 + 2 * 200 * 8 / 1e9 * 1e3, abs=1e-6)
    assert 0 <= row["sparse_loss"] < 0.05 and 0.99 <= row["utilisation"] <= 1.0


def test_codel_with_a_target_no_queue_reaches_is_not_judged(quick: ReproductionReport, store: Path) -> None:
    # CoDel with TARGET = 10 s never drops early: "AQM engaged: CoDel" fails, and what rests on it
    # (CoDel's delay and utilisation) is not judged; FIFO and PIE are judged as before.
    def lazy_codel(data: dict) -> None:
        queues = data["axes"][1]["zip"][0]["values"]
        for q in queues:
            if isinstance(q, dict) and q["kind"] == "codel":
                q["target"] = "10s"
                q["interval"] = "20s"

    report = _forced(store, "lazy_codel", lazy_codel)
    engaged = _precondition(report, "AQM engaged: CoDel")
    assert not engaged.met and "fewest 0" in engaged.measured
    for key in ("CoDel", "utilisation: CoDel"):
        o = _observation(report, key)
        assert o.holds is None and "AQM engaged: CoDel" in o.not_judged and "fewest 0" in o.not_judged
    assert _observation(report, "PIE").holds is True and _observation(report, "FIFO").holds is True


def test_runs_too_short_for_a_steady_state_judge_nothing(store: Path) -> None:
    # 12 s: 2 s measured after the 10 s warm-up, far from 200 base RTTs; no observation is judged.
    def short(data: dict) -> None:
        data["base"]["duration"] = "12s"
        data["base"]["flows"][-1]["stop"] = "10s"

    report = _forced(store, "short", short)
    steady = [p for p in report.preconditions if p.key.startswith("steady state")]
    assert steady and not any(p.met for p in steady)
    judged = [o for o in report.observations if o.holds is not None]
    assert not judged, judged
