"""ccperf — seed 001: the ccperf benchmark's static-dumbbell suite, for four controllers.

ccperf (an ns-3 benchmark) runs a dumbbell of K flows, one per source/destination pair, with a
bottleneck of 16 Mb/s per flow, 15 ms RTTs, a FIFO of `qlen` packets, greedy traffic, NewReno with
PRR, 15 s and seed 42, and prints flow, link and network metric tables (metrics.md) with the best
value of each row in bold. Its page (the seed) shows experiment #11, shallow_buffers with K = 5 and
qlen = 10p. The suite here: that experiment and its siblings, each for NewReno, CUBIC, BBR and
HighSpeed, built from ccperf's own flags (`bufferlab ccperf` reads the same command line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..analysis.metrics import LINK_METRICS, NETWORK_METRICS
from ..spec.ccperf import scenario_from_ccperf
from ..study.sweep import Sweep
from .base import Observation, Reproduction, relative

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

CONTROLLERS = {"TcpNewReno": "newreno", "TcpCubic": "cubic", "TcpBbr": "bbr", "TcpHighSpeed": "highspeed"}
# name -> (K flows, qlen, per-flow RTTs in ms, per-flow start times in s, loss)
CASES: dict[str, tuple[int, str, list[int], list[float], float]] = {
    "steady_state": (1, "100p", [15], [0], 0.0),
    "shallow_buffers_k1": (1, "10p", [15], [0], 0.0),
    "shallow_buffers_k5": (5, "10p", [15] * 5, [0] * 5, 0.0),
    "deep_buffers_20p": (5, "20p", [15] * 5, [0] * 5, 0.0),
    "deep_buffers_80p": (5, "80p", [15] * 5, [0] * 5, 0.0),
    "synchronous_fairness": (5, "100p", [15] * 5, [0] * 5, 0.0),
    "start_time_fairness": (5, "100p", [15] * 5, [0, 2, 4, 6, 8], 0.0),
    "rtt_fairness": (5, "100p", [15, 30, 45, 60, 75], [0] * 5, 0.0),
    "random_loss": (1, "100p", [15], [0], 0.01),
}
# Experiment #11 of the seed: shallow_buffers, K = 5, qlen = 10p, TcpNewReno.
SEED_11 = {"mean_agg_throughput_l4": 61.48, "mean_jains_fairness_throughput_l4": 0.93, "total_qdisc_drops_l2": 330,
           "mean_qdisc_length_l2": 1.66, "mean_agg_in_flight_l4": 85.01}
# Which way is better, per metric shown in the tables (True: higher is better).
HIGHER_IS_BETTER = {"mean_agg_throughput_l4": True, "mean_agg_in_flight_l4": None, "mean_agg_utility_pf_l4": True,
                    "mean_agg_utility_mpdf_l4": True, "mean_agg_utilization_bw_l4": True,
                    "mean_agg_utilization_bdp_l4": None, "mean_jains_fairness_throughput_l4": True,
                    "mean_entropy_fairness_throughput_l4": True, "mean_product_fairness_throughput_l4": True,
                    "mean_qdisc_length_l2": False, "max_qdisc_length_l2": False, "mean_qdisc_delay_l2": False,
                    "mean_sending_rate_l1": True, "total_qdisc_drops_l2": False, "total_random_losses_l1": None,
                    "utilization_l1": True}


def _flags(case: str, duration: str) -> dict[str, str]:
    k, qlen, rtts, starts, loss = CASES[case]
    return {"experiment-name": case, "bw": f"{16 * k}Mbps", "qlen": qlen, "loss": str(loss),
            "rtts": ",".join(f"{r}ms" for r in rtts), "start-times": ",".join(f"{s:g}s" for s in starts),
            "stop-time": duration, "seed": "42", "recoveries": ",".join(["TcpPrrRecovery"] * k)}


def _duration(case: str, quick: bool) -> str:
    """ccperf's 15 s; the quick variant keeps it for #11 (compared with the seed) and for start-time
    fairness (flows start up to 8 s in) and runs 5 s elsewhere."""
    return "15s" if not quick or case in ("shallow_buffers_k5", "start_time_fairness") else "5s"


def _sweeps(quick: bool) -> dict[str, Sweep]:
    return {case: Sweep.from_dict({"name": case, "base": scenario_from_ccperf(_flags(case, _duration(case, quick))).to_dict(),
                                   "axes": [{"zip": [{"key": "flow_defaults.cca", "values": list(CONTROLLERS.values())},
                                                     {"key": "meta.aut", "values": list(CONTROLLERS)}]}]})
            for case in CASES}


def _table(res: Results, study: str) -> pl.DataFrame:
    return res.study(study).rename({"meta.aut": "aut"})


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    t = _table(res, studies["shallow_buffers_k5"]).filter(pl.col("aut") == "TcpNewReno").row(0, named=True)
    out = []
    for key, (metric, tolerance) in {"#11 throughput": ("mean_agg_throughput_l4", 0.15),
                                     "#11 Jain": ("mean_jains_fairness_throughput_l4", 0.05),
                                     "#11 drops": ("total_qdisc_drops_l2", 0.5),
                                     "#11 queue": ("mean_qdisc_length_l2", 0.5),
                                     "#11 in flight": ("mean_agg_in_flight_l4", 0.15)}.items():
        ours, theirs = float(t[metric]), float(SEED_11[metric])
        out.append(Observation(key, f"experiment #11 (shallow_buffers, K = 5, 10p, NewReno): {metric}",
                               f"{theirs:g}", f"{ours:.2f}", abs(ours - theirs) <= tolerance * theirs,
                               relative(ours, theirs)))
    deep = _table(res, studies["deep_buffers_80p"]).filter(pl.col("aut") == "TcpNewReno").row(0, named=True)
    out.append(Observation("shallow vs deep", "a shallow buffer (10p) costs NewReno throughput against a deep one "
                           "(80p)", "lower with 10p", f"{t['mean_agg_throughput_l4']:.1f} vs "
                           f"{deep['mean_agg_throughput_l4']:.1f} Mb/s",
                           t["mean_agg_throughput_l4"] < deep["mean_agg_throughput_l4"]))
    return out


def _best(values: list[float | None], higher: bool | None) -> int | None:
    finite = [(v, i) for i, v in enumerate(values) if v is not None]
    if higher is None or not finite:
        return None
    return (max if higher else min)(finite)[1]


def _appendix(res: Results, studies: dict[str, str]) -> str:
    """Per case, the link and network metric tables in ccperf's layout (metric rows, one column per
    controller), the best value of each row in bold."""
    lines = ["## Metric tables (ccperf's layout: best value per row in bold)", ""]
    for case, study in studies.items():
        t = _table(res, study)
        auts = t["aut"].to_list()
        lines += [f"### {case}", "", "| metric | " + " | ".join(auts) + " |", "|---|" + "---|" * len(auts)]
        for metric in [*LINK_METRICS, *NETWORK_METRICS]:
            values = [None if v is None else float(v) for v in t[metric].to_list()]
            best = _best(values, HIGHER_IS_BETTER.get(metric))
            shown = ["—" if v is None else f"{v:.2f}" for v in values]
            # Every controller that ties with the best as printed is bold; none when all tie.
            top = shown[best] if best is not None else None
            cells = [f"**{s}**" if s == top and shown.count(top) < len(shown) else s for s in shown]
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots import ecdf, inflight, operating_point, plane

    runs = res.study_runs(studies["shallow_buffers_k5"])
    run_id = runs.filter(pl.col("meta.aut") == "TcpNewReno")["run_id"][0]
    return {"ccperf_11_operating_point": operating_point(res, run_id), "ccperf_11_inflight": inflight(res, [run_id]),
            "ccperf_11_ecdf": ecdf(res, run_id), "ccperf_11_plane": plane(res, [run_id])}


REPRODUCTION = Reproduction(
    name="ccperf", seed="001", title="Seed 001: the ccperf suite (shallow and deep buffers, fairness, loss)",
    description="ccperf's static dumbbell, 16 Mb/s per flow, 15 ms RTTs, 15 s, seed 42: steady state, shallow "
                "buffers (10p, K = 1 and 5), deep buffers (20p, 80p), synchronous, start-time and RTT fairness, "
                "random loss, each for NewReno, CUBIC, BBR and HighSpeed; experiment #11's numbers next to the seed's, "
                "metric tables in ccperf's layout and its four figures.",
    quick_estimate_s=6, full_estimate_s=6, sweeps=_sweeps, observe=_observe, draw=_draw, appendix=_appendix,
    notes=["Time series sampled every 100 ms, ccperf's apparent interval (bufferlab ccperf --sample-interval): Jain's "
           "index of #11 is 0.65 over 10 ms samples and 0.94 over 100 ms ones, against the seed's 0.93.",
           "ccperf's #11 ran ns-3 (a FifoQueueDisc in front of a one-packet device queue, its own TCP details): the "
           "seed's numbers are a reference, not a calibration target.",
           "Cases the seed names without parameters: steady state and fairness cases use a 100p queue; start-time "
           "fairness starts flows 2 s apart; RTT fairness spreads RTTs over 15–75 ms; random loss is 1 %.",
           "Quick: experiment #11 and start-time fairness at ccperf's 15 s, the other cases 5 s; full: 15 s throughout."])
