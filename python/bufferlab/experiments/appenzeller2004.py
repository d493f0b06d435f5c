"""appenzeller2004 — the Stanford model behind B_s: B = RTT·C/√N is enough for N desynchronised
long-lived flows (Appenzeller, Keslassy and McKeown, "Sizing Router Buffers", SIGCOMM 2004).

N long-lived Reno flows with RTTs drawn uniformly from 25–300 ms share one drop-tail bottleneck;
the buffer is swept in multiples of the mean RTT × C / √N. The paper's claims checked here:
utilisation rises with the buffer; at a fixed multiple it rises with N (the sum of N sawtooth
windows fluctuates as 1/√N of their mean); and with one multiple (B = RTT·C/√N) a link carrying
hundreds of flows is almost fully used. The paper's number for that: its Gaussian model of the
summed windows bounds the utilisation by erf(3√3/(2√2) · B/(RTT·C/√N)) (Sec. 3), 98.9 % at one
multiple, and its simulations of hundreds of flows report 98–99 % and more.

The regime. The model is about the steady state of many sawtooths, so every run must outlast its
slowest flow's sawtooth several times. Reno's windows come out about equal whatever the RTT
(rate ∝ 1/RTT), W ≈ C·RTT_h/N with RTT_h the harmonic mean RTT (0.275 / ln 12 = 111 ms for
25–300 ms); the slowest flow's cycle, from W_max/2 back to W_max at one packet per RTT, lasts
(W_max/2)·RTT_max ≈ (2/3)·W·RTT_max. At 1 Gb/s that is ~180 s for N = 10 and ~37 s for N = 50:
one cycle or less of a 60 s run (the three seeds of N = 10 at 0.25× gave 0.75 / 0.76 / 0.54). So
the link's rate grows with N, 5 Mb/s per flow (W ≈ 46 packets, a cycle of ~9 s), up to 1 Gb/s
(quick: 100 Mb/s) from N = 200 on, where the windows, and the cycles, shrink with N.

Both are checked in the store (`_preconditions`), per N over every buffer and seed: the slowest
flow (longest RTT) went through at least `MIN_CYCLES` congestion cycles after its slow start
(its recovery episodes, each the loss that ends a cycle, less the one that ended slow start), and
the warm-up, until every flow has left slow start (the flows' `cc_state` sampled every second),
left at least half the run. Utilisation is the bottleneck's busy time after the warm-up (its
channel series). Starts are jittered over the first 5 s (quick: 2 s) so that flows begin
desynchronised, as the model assumes, and each seed is an independent replication.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..study.sweep import Sweep
from .base import Observation, Precondition, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

PACKET = 1500
RTT_LOW_S, RTT_HIGH_S = 0.025, 0.300
MEAN_RTT_S = (RTT_LOW_S + RTT_HIGH_S) / 2
# Bottleneck rate per flow, below the cap: windows of ~46 packets, a slowest cycle of ~9 s.
RATE_PER_FLOW_BPS = 5_000_000
SAMPLE = "1s"
MIN_CYCLES = 4          # congestion cycles of the slowest flow after its slow start
MIN_STEADY_SHARE = 0.5  # of the run left after the warm-up
SEED_SPREAD_FLOOR = 0.005  # the smallest drop between neighbours read as noise (one seed)
MANY_FLOWS = 200  # the paper's "hundreds of flows"


def scale(quick: bool) -> dict[str, Any]:
    if quick:
        return {"cap_bps": 100_000_000, "flows": [4, 16, 64], "multiples": [0.25, 1.0, 2.0], "duration": "30s",
                "jitter": "2s", "seeds": 1}
    return {"cap_bps": 1_000_000_000, "flows": [10, 50, 200, 500, 1000], "multiples": [0.25, 0.5, 1.0, 1.5, 2.0],
            "duration": "120s", "jitter": "5s", "seeds": 3}


def link_rate_bps(n: int, cap_bps: float) -> float:
    """The bottleneck's rate for N flows: `RATE_PER_FLOW_BPS` each, at most `cap_bps`."""
    return min(cap_bps, n * RATE_PER_FLOW_BPS)


def stanford_packets(rate_bps: float, n: int, multiple: float) -> int:
    """multiple × mean RTT × C / √N, in packets of 1500 bytes (at least one)."""
    return max(1, round(multiple * MEAN_RTT_S * rate_bps / math.sqrt(n) / (PACKET * 8)))


def model_utilisation(multiple: float) -> float:
    """The paper's Gaussian lower bound on utilisation at B = multiple × RTT·C/√N (Sec. 3):
    erf(3√3/(2√2) · multiple)."""
    return math.erf(3 * math.sqrt(3) / (2 * math.sqrt(2)) * multiple)


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    combos = [(n, m, link_rate_bps(n, s["cap_bps"])) for n in s["flows"] for m in s["multiples"]]
    base = {
        "name": "appenzeller2004", "duration": s["duration"], "sample_interval": SAMPLE,
        # Every flow's window state (for the warm-up) and the bottleneck's busy time (for the
        # utilisation after it); no other link.
        "record": {"flows": "all", "links": ["btl"]},
        "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": "1Gbps",
                     "bottleneck_delay": "5ms", "queue": "100p",
                     "rtt": {"dist": "uniform", "low": f"{RTT_LOW_S * 1000:g}ms", "high": f"{RTT_HIGH_S * 1000:g}ms"}},
        "flow_defaults": {"cca": "reno", "traffic": "greedy",
                          "start": {"dist": "uniform", "low": "0s", "high": s["jitter"]}},
    }
    long_flows = Sweep.from_dict({
        "name": "appenzeller2004", "base": base, "seeds": s["seeds"],
        "axes": [{"zip": [{"key": "topology.flows", "values": [n for n, _, _ in combos]},
                          {"key": "meta.multiple", "values": [m for _, m, _ in combos]},
                          {"key": "topology.bottleneck_rate", "values": [f"{r:g}bps" for _, _, r in combos]},
                          {"key": "topology.queue",
                           "values": [f"{stanford_packets(r, n, m)}p" for n, m, r in combos]}]}],
    })
    return {"long_flows": long_flows}


def _table(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    return res.study(studies["long_flows"]).select(
        pl.col("topology.flows").alias("flows"), pl.col("meta.multiple").alias("multiple"),
        pl.col("topology.queue").alias("queue"), "seeds", "utilization_l1", "utilization_l1_ci_low",
        "utilization_l1_ci_high", "loss_rate_l4", "mean_qdisc_delay_l2").sort("flows", "multiple")


def warm_up_s(res: Results, run_id: str) -> float | None:
    """When the last flow left slow start (its first sample in another `cc_state`), in seconds;
    None if one never did."""
    rows = res.query("SELECT flow, min(time_ns) AS left_ns FROM flow_timeseries WHERE run_id = ? AND cc_state <> 0 "
                     "GROUP BY flow", [run_id])
    flows: int = res.query("SELECT count(*) AS n FROM flows WHERE run_id = ?", [run_id])["n"].to_list()[0]
    if rows.height < flows:
        return None
    left_ns: list[int] = rows["left_ns"].to_list()
    return max(left_ns) / 1e9


def utilisation_after(res: Results, run_id: str, start_s: float) -> float:
    """The bottleneck's busy fraction from `start_s` to the end of the run (its channel series)."""
    series = res.timeseries(run_id, kind="channel", names=["btl_forward"]).sort("time_ns")
    t = series["time_ns"].to_numpy().astype(np.float64) / 1e9
    busy = series["busy_ns"].to_numpy().astype(np.float64) / 1e9
    i = int(np.searchsorted(t, start_s))
    return float((busy[-1] - busy[i]) / (t[-1] - t[i])) if i < len(t) - 1 else float("nan")


def slowest_flow_cycles(res: Results, run_id: str) -> int:
    """Congestion cycles of the flow with the longest RTT: its recovery episodes (each the loss
    that ends a cycle) less the one that ended its slow start."""
    row = res.query("SELECT recovery_episodes FROM flows WHERE run_id = ? ORDER BY min_rtt_ns DESC, flow LIMIT 1",
                    [run_id])
    episodes: int = row["recovery_episodes"].to_list()[0]
    return max(0, episodes - 1)


def measure(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    """One row per run: flows, multiple, seed, run length, warm-up, the slowest flow's cycles and
    the utilisation after the warm-up."""
    runs = res.study_runs(studies["long_flows"]).filter(pl.col("status") == "complete")
    rows = []
    for r in runs.iter_rows(named=True):
        last_ns: int = res.query("SELECT max(time_ns) AS t FROM channel_timeseries WHERE run_id = ?",
                                 [r["run_id"]])["t"].to_list()[0]
        warm = warm_up_s(res, r["run_id"])
        rows.append({"flows": r["topology.flows"], "multiple": r["meta.multiple"], "seed": r["seed"],
                     "duration_s": last_ns / 1e9, "warm_up_s": warm, "cycles": slowest_flow_cycles(res, r["run_id"]),
                     "utilisation": utilisation_after(res, r["run_id"], warm) if warm is not None else float("nan")})
    return pl.DataFrame(rows, schema={"flows": pl.Int64, "multiple": pl.Float64, "seed": pl.Int64,
                                      "duration_s": pl.Float64, "warm_up_s": pl.Float64, "cycles": pl.Int64,
                                      "utilisation": pl.Float64})


def steady_key(n: int) -> str:
    return f"steady state, N = {n}"


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    m = measure(res, studies)
    out = []
    for (n,), g in m.group_by(["flows"], maintain_order=True):
        fewest = min(g["cycles"].to_list())
        warm = g["warm_up_s"].to_list()
        shortest_run = min(g["duration_s"].to_list())
        longest = None if None in warm else max(warm)
        steady_ok = longest is not None and longest <= (1 - MIN_STEADY_SHARE) * shortest_run
        warm_text = "a flow never left slow start" if longest is None else f"longest warm-up {longest:.0f} s"
        out.append(Precondition(
            steady_key(n), f"in every run: the slowest flow (longest RTT) went through ≥ {MIN_CYCLES} congestion "
            f"cycles after its slow start, and the warm-up (until every flow left slow start) ended within the first "
            f"{1 - MIN_STEADY_SHARE:.0%} of the run", f"fewest cycles {fewest}; {warm_text} of {shortest_run:.0f} s",
            fewest >= MIN_CYCLES and steady_ok))
    return out


def _points(m: pl.DataFrame) -> pl.DataFrame:
    """Per (N, multiple): utilisation after the warm-up, mean over seeds, and its spread (max − min)."""
    return m.group_by("flows", "multiple").agg(pl.col("utilisation").mean().alias("u"),
                                               (pl.col("utilisation").max() - pl.col("utilisation").min())
                                               .alias("spread")).sort("flows", "multiple")


def _rises(u: list[float], spread: list[float]) -> bool:
    """Each value at least its predecessor less the noise of the two: half the sum of their
    spreads over seeds, at least `SEED_SPREAD_FLOOR`."""
    return all(u[i + 1] >= u[i] - max(SEED_SPREAD_FLOOR, (spread[i] + spread[i + 1]) / 2) for i in range(len(u) - 1))


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    points = _points(measure(res, studies))
    seeds = res.study_runs(studies["long_flows"])["seed"].n_unique()
    noise = (f"a drop between neighbours within half the sum of their spreads (max − min) over the {seeds} seeds, "
             f"at least {SEED_SPREAD_FLOOR * 100:.1f} points, counts as noise" if seeds > 1 else
             f"a drop between neighbours of up to {SEED_SPREAD_FLOOR * 100:.1f} points counts as noise (one seed)")
    obs = []
    for (n,), g in points.group_by(["flows"], maintain_order=True):
        u = g["u"].to_list()
        obs.append(Observation(
            f"1 (N={n})", f"utilisation after the warm-up rises with the buffer (N = {n}, multiples "
            + ", ".join(f"{x:g}" for x in g["multiple"]) + " of RTT·C/√N)", "monotone",
            ", ".join(f"{x:.3f}" for x in u), _rises(u, g["spread"].to_list()), tolerance=noise,
            requires=(steady_key(n),)))
    at_one = points.filter(pl.col("multiple") == 1.0).sort("flows")
    u_one = at_one["u"].to_list()
    obs.append(Observation(
        "2", "at B = RTT·C/√N, utilisation after the warm-up rises with N", "rises",
        ", ".join(f"N={n}: {u:.3f}" for n, u in zip(at_one["flows"], u_one)),
        _rises(u_one, at_one["spread"].to_list()) and u_one[-1] > u_one[0],
        tolerance=noise + "; the last above the first",
        requires=tuple(steady_key(n) for n in at_one["flows"])))
    quick = studies["long_flows"].startswith("appenzeller2004-quick")
    # "Many flows": the paper's hundreds; the quick run's largest N (64) stands in for them.
    flows = at_one["flows"].to_list()
    many = [i for i, n in enumerate(flows) if n >= MANY_FLOWS] or [len(flows) - 1]
    model = model_utilisation(1.0)
    threshold = 0.95 if quick else 0.98
    lowest = min(u_one[i] for i in many)
    obs.append(Observation(
        "3", "B = RTT·C/√N keeps a link with many flows busy (after the warm-up)",
        f"≥ {model:.1%} (the paper's Gaussian bound, Sec. 3; its simulations: 98–99 % for hundreds of flows)",
        ", ".join(f"N={flows[i]}: {u_one[i]:.4f}" for i in many), lowest >= threshold,
        f"{(lowest - model) * 100:+.1f} points against the bound at the lowest",
        tolerance=(f"≥ {threshold:.0%}: " + ("N = 64 is fewer than the paper's hundreds of flows, so 4 points below "
                                             "its bound" if quick else "one point below the bound, the paper's 98 %")),
        requires=tuple(steady_key(flows[i]) for i in many)))
    return obs


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import bounded_band, metric_axis, new_figure, plain_log_ticks, run_colour, title

    t = _table(res, studies)
    # Utilisation as the observations judge it: after each run's warm-up, the mean over seeds and
    # their range (min-max) shaded.
    m = measure(res, studies).group_by("flows", "multiple").agg(
        pl.col("utilisation").mean().alias("u"), pl.col("utilisation").min().alias("low"),
        pl.col("utilisation").max().alias("high"), pl.len().alias("seeds")).sort("flows", "multiple")
    several_seeds = bool((m["seeds"] > 1).any())
    fig, grid = new_figure(1, 2, size=(11, 4.2))
    utilisation, delay = grid[0]
    shown = {metric: metric_axis(metric) for metric in ("utilization_l1", "mean_qdisc_delay_l2")}
    for i, ((n,), g) in enumerate(m.group_by(["flows"], maintain_order=True)):
        x = g["multiple"].to_numpy()
        utilisation.plot(x, shown["utilization_l1"].shown(g["u"].to_list()), marker="o", color=run_colour(i),
                         label=f"N = {n}")
        if several_seeds:
            bounded_band(utilisation, x, shown["utilization_l1"].shown(g["low"].to_list()),
                         shown["utilization_l1"].shown(g["high"].to_list()), shown["utilization_l1"].bounds,
                         color=run_colour(i))
    for i, ((n,), g) in enumerate(t.group_by(["flows"], maintain_order=True)):
        g = g.sort("multiple")
        delay.plot(g["multiple"].to_numpy(), shown["mean_qdisc_delay_l2"].shown(g["mean_qdisc_delay_l2"].to_list()),
                   marker="o", color=run_colour(i), label=f"N = {n}")
    multiples = sorted(set(t["multiple"].to_list()))
    for ax, metric in ((utilisation, "utilization_l1"), (delay, "mean_qdisc_delay_l2")):
        ax.set(xlabel="buffer / (mean RTT × C / √N)", ylabel=shown[metric].label)
        plain_log_ticks(ax, ticks=multiples)
        ax.axvline(1.0, color="0.5", linestyle=":", linewidth=1)
    utilisation.set_title("utilisation after the warm-up")
    delay.set_title("queueing delay, whole run")
    utilisation.legend(title="long Reno flows", fontsize="small")
    title(fig, "Stanford model: N long Reno flows, RTTs uniform 25–300 ms, drop-tail bottleneck\n"
               "B = 1 × mean RTT × C / √N dotted" + (", range over seeds shaded" if several_seeds else ""))
    return {"appenzeller2004_utilisation_vs_buffer": fig}


REPRODUCTION = Reproduction(
    name="appenzeller2004", seed="(Stanford model)", title="Appenzeller et al. 2004: B = RTT·C/√N",
    description="N long-lived Reno flows with RTTs spread over 25–300 ms on one drop-tail bottleneck; "
                "utilisation and queueing delay against the buffer in multiples of the mean RTT × C / √N.",
    quick_estimate_s=3, full_estimate_s=180, sweeps=_sweeps, preconditions=_preconditions, observe=_observe,
    draw=_draw,
    notes=[f"Bottleneck rate {RATE_PER_FLOW_BPS / 1e6:g} Mb/s per flow, so that the slowest flow's sawtooth lasts "
           "~9 s whatever N, up to a cap: quick 100 Mb/s, N = 4, 16, 64, multiples 0.25, 1, 2, 30 s, one seed; full "
           "1 Gb/s (from N = 200), N = 10 to 1000, multiples 0.25 to 2, 120 s, three seeds. At 1 Gb/s for every N, "
           "one cycle of the slowest of 10 flows lasts ~180 s, three times a 60 s run (see the module docstring).",
           "The quick runs are too short for the slowest of 4 and 16 flows (a cycle of ~9 s in 30 s): their "
           "observations are not judged.",
           "RTTs are two-way propagation drawn uniformly from 25–300 ms (mean 162.5 ms, the RTT of the rule); "
           "starts are jittered uniformly over the first seconds.",
           "The observations read the utilisation after the warm-up; the figures show it over the whole run "
           "(N = 10 at 1×: 0.998 after an 8 s warm-up, 0.984 over the run).",
           "Full run (3 seeds): the slowest flow went through 9–57 cycles, warm-ups lasted 6–12 s of 120 s. At 1× the "
           "utilisation dips with N before it rises: 0.998, 0.992, 0.981, 0.998, 1.000 for N = 10, 50, 200, 500, "
           "1000, so observation 2 differs; up to N = 200 the rate grows with N (the same ~46-packet windows), "
           "and N = 200 is the first at 1 Gb/s. The paper's 98 % holds for N ≥ 200, its model's 99.1 % from 500.",
           "Not yet: the paper's short-flow mix (Pareto-sized mice beside the long flows)."])
