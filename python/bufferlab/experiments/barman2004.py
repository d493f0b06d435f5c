"""barman2004 — seed 004: RTT fairness of HighSpeed TCP and CUBIC in an over- and an
under-buffered bottleneck (after Barman et al. 2004, as reproduced on GENI).

Two flows, s1→d1 with ~100 ms RTT and s2→d2 with ~50 ms, share a 100 Mbit/s bottleneck shaped by
a token bucket (burst 32 kB) whose limit is 1.25 MB (≈ one BDP: over-buffered) or 0.125 MB (10 %:
under-buffered); HSTCP or CUBIC; 120 s (scenarios/shaped_bottleneck.toml). The seed plots both
windows and the queue every 0.1 s; it found that a *small* buffer helps HSTCP converge (the
opposite of the original paper) and that CUBIC converges faster than HSTCP with either buffer.

Convergence measures, per case: the time after which the two windows stay within 10 % of each
other (never, if they do not), the ratio of the windows' means over the last quarter of the run,
and Jain's index of the two throughputs over the second half.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..spec import Scenario
from ..study.sweep import Sweep
from .base import Observation, Precondition, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "shaped_bottleneck.toml"
OVER, UNDER = "1310720B", "131072B"  # tc's 1.25mb and 0.125mb (binary megabytes, as tc reads them)
CASES = {OVER: "over-buffered", UNDER: "under-buffered"}
CLOSE = 0.10


def _sweeps(quick: bool) -> dict[str, Sweep]:
    base = Scenario.from_toml(SCENARIO).to_dict()
    base["duration"] = "60s" if quick else "120s"
    return {"cases": Sweep.from_dict({
        "name": "barman2004", "base": base,
        "axes": [{"key": "flow_defaults.cca", "values": ["highspeed", "cubic"]},
                 {"key": "links[0].queue_forward.limit", "values": [OVER, UNDER]}]})}


def convergence(res: Results, run_id: str) -> dict[str, Any]:
    """The windows of the two flows and how close they come (see the module docstring)."""
    series = res.timeseries(run_id, kind="flow").sort("flow", "time_ns")
    flows = series["name"].unique(maintain_order=True).to_list()
    w = [series.filter(pl.col("name") == f)["cwnd_bytes"].to_numpy().astype(float) for f in flows]
    t = series.filter(pl.col("name") == flows[0])["time_ns"].to_numpy() / 1e9
    ratio = np.minimum(w[0], w[1]) / np.maximum(np.maximum(w[0], w[1]), 1.0)
    apart = np.nonzero(ratio < 1 - CLOSE)[0]
    settled = None if apart.size and apart[-1] == len(t) - 1 else float(t[apart[-1] + 1]) if apart.size else float(t[0])
    last = slice(int(len(t) * 0.75), None)
    mean_ratio = float(min(w[0][last].mean(), w[1][last].mean()) / max(w[0][last].mean(), w[1][last].mean()))
    acked = [series.filter(pl.col("name") == f)["acked_bytes"].to_numpy().astype(float) for f in flows]
    half = len(t) // 2
    x = np.array([a[-1] - a[half] for a in acked])
    jain = float(x.sum() ** 2 / (len(x) * (x ** 2).sum())) if (x ** 2).sum() > 0 else float("nan")
    return {"settled_s": settled, "end_ratio": mean_ratio, "jain": jain}


def _runs(res: Results, studies: dict[str, str]) -> dict[tuple[str, str], str]:
    runs = res.study_runs(studies["cases"]).filter(pl.col("status") == "complete")
    return {(r["flow_defaults.cca"], r["links[0].queue_forward.limit"]): r["run_id"] for r in runs.iter_rows(named=True)}


# The windows' convergence is judged over congestion cycles: each flow must have backed off at
# least this often after its slow start (a cycle of HSTCP at 100 ms and ~830 packets lasts
# seconds; fewer cycles say nothing about where the windows settle).
MIN_CYCLES = 3
# A back-off: the window falls by more than this between two 0.1 s samples.
BACKOFF = 0.05


def backoffs(cwnd: np.ndarray) -> int:
    """How often a window series falls by more than `BACKOFF` from one sample to the next."""
    w = cwnd.astype(float)
    return int(np.sum(w[1:] < (1 - BACKOFF) * w[:-1]))


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    runs = _runs(res, studies)
    study = {(r["flow_defaults.cca"], r["links[0].queue_forward.limit"]): r
             for r in res.study(studies["cases"]).iter_rows(named=True)}
    shaped, cycles = [], []
    for (cca, limit), run_id in runs.items():
        row = study[(cca, limit)]
        rate, drops = float(row["mean_agg_throughput_l4"]), int(row["total_qdisc_drops_l2"])
        shaped.append((f"{cca} {CASES[limit]}: {rate:.1f} Mb/s, {drops} drops", rate <= 100.5 and drops > 0))
        series = res.timeseries(run_id, kind="flow").sort("flow", "time_ns")
        fewest = min(backoffs(g["cwnd_bytes"].to_numpy()) for _, g in series.group_by("flow"))
        cycles.append((f"{cca} {CASES[limit]}: {fewest}", fewest >= MIN_CYCLES))
    return [
        Precondition("shaper shaped", "in every case the token bucket held the flows to its 100 Mbit/s (aggregate "
                     "≤ 100.5 Mb/s) and its limit dropped packets (the buffer under test was the one that filled)",
                     "; ".join(m for m, _ in shaped), all(ok for _, ok in shaped)),
        Precondition("congestion cycles", f"each flow's window backed off (by > {BACKOFF:.0%} between 0.1 s samples) at "
                     f"least {MIN_CYCLES} times in every case, fewest per case",
                     "; ".join(m for m, _ in cycles), all(ok for _, ok in cycles)),
    ]


def _describe(c: dict[str, Any]) -> str:
    settled = "never" if c["settled_s"] is None else f"{c['settled_s']:.1f} s"
    return f"within 10 % from {settled}; final window ratio {c['end_ratio']:.2f}; Jain {c['jain']:.3f}"


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    runs = _runs(res, studies)
    c = {key: convergence(res, run_id) for key, run_id in runs.items()}
    hs_over, hs_under = c[("highspeed", OVER)], c[("highspeed", UNDER)]
    cu_over, cu_under = c[("cubic", OVER)], c[("cubic", UNDER)]
    return [
        Observation("1", "HSTCP's windows come closer with the small buffer than with the large one (GENI; the "
                    "original paper said the opposite)", "under-buffered closer",
                    f"over: {_describe(hs_over)}; under: {_describe(hs_under)}",
                    hs_under["end_ratio"] > hs_over["end_ratio"], tolerance="a strict ordering of one run per case, as the seed ran one per case"),
        Observation("2", "CUBIC's windows end closer than HSTCP's, over-buffered", "CUBIC closer",
                    f"CUBIC {cu_over['end_ratio']:.2f} vs HSTCP {hs_over['end_ratio']:.2f}",
                    cu_over["end_ratio"] > hs_over["end_ratio"], tolerance="a strict ordering of one run per case, as the seed ran one per case"),
        Observation("3", "CUBIC's windows end closer than HSTCP's, under-buffered", "CUBIC closer",
                    f"CUBIC {cu_under['end_ratio']:.2f} vs HSTCP {hs_under['end_ratio']:.2f}",
                    cu_under["end_ratio"] > hs_under["end_ratio"], tolerance="a strict ordering of one run per case, as the seed ran one per case"),
        Observation("4", "CUBIC is fairer (Jain over the second half) than HSTCP with either buffer", "CUBIC fairer",
                    f"over: {cu_over['jain']:.3f} vs {hs_over['jain']:.3f}; under: {cu_under['jain']:.3f} vs "
                    f"{hs_under['jain']:.3f}", cu_over["jain"] >= hs_over["jain"] and cu_under["jain"] >= hs_under["jain"],
                    tolerance="an ordering (ties count as fairer) of one run per case, as the seed ran one per case"),
    ]


# The two cases as the seed names them, for the figures.
CASE_TERMS = {OVER: "over-buffered (1 BDP, 1.25 MB)", UNDER: "under-buffered (0.1 BDP, 0.125 MB)"}


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots import cwnd
    from ..plots.common import controller_name

    runs = _runs(res, studies)
    return {f"barman2004_{cca}": cwnd(res, [runs[(cca, OVER)], runs[(cca, UNDER)]],
                                      labels=[CASE_TERMS[OVER], CASE_TERMS[UNDER]],
                                      heading=f"Seed 004, {controller_name(cca)}: two flows (RTT 100 ms and 50 ms) "
                                              "through a 100 Mbit/s token bucket")
            for cca in ("highspeed", "cubic")}


REPRODUCTION = Reproduction(
    name="barman2004", seed="004", title="Seed 004: HighSpeed TCP and CUBIC, RTT fairness over- and under-buffered",
    description="Two flows with ~100 ms and ~50 ms RTT through a 100 Mbit/s token bucket (burst 32 kB) with a "
                "1.25 MB (≈ BDP) or 0.125 MB limit, HSTCP and CUBIC: both windows and the queue every 0.1 s, and how "
                "soon and how closely the two windows converge.",
    quick_estimate_s=4, full_estimate_s=5, sweeps=_sweeps, preconditions=_preconditions, observe=_observe,
    draw=_draw,
    notes=["tc reads 1.25mb as 1.25 × 2^20 bytes: the limits are 1 310 720 and 131 072 bytes.",
           "Delays as the seed's netem settings, each on one interface and so in one direction: 45 ms at s1, 10 ms "
           "at g2 toward g1, 45 ms at d1 (RTT 100 ms); 20, 10 and 20 ms for s2 -> d2 (RTT 50 ms). Links here have "
           "one delay for both directions, so each takes half: 22.5 ms access links for the 100 ms path, 10 ms for "
           "the 50 ms path, around a 5 ms bottleneck: the same RTTs (scenarios/shaped_bottleneck.toml).",
           "Quick: 60 s; full: the seed's 120 s. Both flows start at 0 s."])
