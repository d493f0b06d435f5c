"""appenzeller2004 — the Stanford model behind B_s: B = RTT·C/√N is enough for N desynchronised
long-lived flows (Appenzeller, Keslassy and McKeown, "Sizing Router Buffers", SIGCOMM 2004).

N long-lived Reno flows with RTTs drawn uniformly from 25–300 ms share one drop-tail bottleneck;
the buffer is swept in multiples of the mean RTT × C / √N. The paper's claims checked here:
utilisation rises with the buffer; at a fixed multiple it rises with N (the sum of N sawtooth
windows fluctuates as 1/√N of their mean); and with one multiple (B = RTT·C/√N) a link carrying
many flows is almost fully used (the paper: above 98 % for a few hundred flows).

Starts are jittered over the first 5 s (quick: 2 s) so that flows begin desynchronised, as the
model assumes, and each seed is an independent replication. Utilisation is the bottleneck's busy
fraction over the whole run, slow start included, which favours small buffers a little less than
the paper's steady state.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from ..study.sweep import Sweep
from .base import Observation, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

PACKET = 1500
RTT_LOW_S, RTT_HIGH_S = 0.025, 0.300
MEAN_RTT_S = (RTT_LOW_S + RTT_HIGH_S) / 2


def scale(quick: bool) -> dict[str, Any]:
    if quick:
        return {"rate_bps": 100_000_000, "flows": [4, 16, 64], "multiples": [0.25, 1.0, 2.0], "duration": "30s",
                "jitter": "2s", "seeds": 1}
    return {"rate_bps": 1_000_000_000, "flows": [10, 50, 200, 500, 1000], "multiples": [0.25, 0.5, 1.0, 1.5, 2.0],
            "duration": "60s", "jitter": "5s", "seeds": 3}


def stanford_packets(rate_bps: float, n: int, multiple: float) -> int:
    """multiple × mean RTT × C / √N, in packets of 1500 bytes (at least one)."""
    return max(1, round(multiple * MEAN_RTT_S * rate_bps / math.sqrt(n) / (PACKET * 8)))


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    combos = [(n, m) for n in s["flows"] for m in s["multiples"]]
    base = {
        "name": "appenzeller2004", "duration": s["duration"], "sample_interval": "off",
        "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": f"{s['rate_bps']}bps",
                     "bottleneck_delay": "5ms", "queue": "100p",
                     "rtt": {"dist": "uniform", "low": f"{RTT_LOW_S * 1000:g}ms", "high": f"{RTT_HIGH_S * 1000:g}ms"}},
        "flow_defaults": {"cca": "reno", "traffic": "greedy",
                          "start": {"dist": "uniform", "low": "0s", "high": s["jitter"]}},
    }
    long_flows = Sweep.from_dict({
        "name": "appenzeller2004", "base": base, "seeds": s["seeds"],
        "axes": [{"zip": [{"key": "topology.flows", "values": [n for n, _ in combos]},
                          {"key": "meta.multiple", "values": [m for _, m in combos]},
                          {"key": "topology.queue",
                           "values": [f"{stanford_packets(s['rate_bps'], n, m)}p" for n, m in combos]}]}],
    })
    return {"long_flows": long_flows}


def _table(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    return res.study(studies["long_flows"]).select(
        pl.col("topology.flows").alias("flows"), pl.col("meta.multiple").alias("multiple"),
        pl.col("topology.queue").alias("queue"), "seeds", "utilization_l1", "utilization_l1_ci_low",
        "utilization_l1_ci_high", "loss_rate_l4", "mean_qdisc_delay_l2").sort("flows", "multiple")


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    t = _table(res, studies)
    by_n = {n: g.sort("multiple") for (n,), g in t.group_by(["flows"], maintain_order=True)}
    # Rises with the buffer: allow a drop of 0.5 % between neighbours (seed-to-seed noise).
    rising = {n: all(b >= a - 0.005 for a, b in zip(g["utilization_l1"], g["utilization_l1"][1:]))
              for n, g in by_n.items()}
    at_one = t.filter(pl.col("multiple") == 1.0).sort("flows")
    u_at_one = at_one["utilization_l1"].to_list()
    grows_with_n = all(b >= a - 0.005 for a, b in zip(u_at_one, u_at_one[1:])) and u_at_one[-1] > u_at_one[0]
    largest = at_one.row(-1, named=True)
    quick = studies["long_flows"].startswith("appenzeller2004-quick")
    threshold = 0.95 if quick else 0.98
    lines = "; ".join(f"N={n}: " + ", ".join(f"{u:.3f}" for u in g["utilization_l1"]) for n, g in by_n.items())
    return [
        Observation("1", "utilisation rises with the buffer (multiples " +
                    ", ".join(f"{m:g}" for m in by_n[next(iter(by_n))]["multiple"]) + " of RTT·C/√N)",
                    "monotone", lines, all(rising.values()),
                    "" if all(rising.values()) else "falls for N = " + ", ".join(str(n) for n, r in rising.items() if not r)),
        Observation("2", "at B = RTT·C/√N, utilisation rises with N", "rises",
                    ", ".join(f"N={n}: {u:.3f}" for n, u in zip(at_one["flows"], u_at_one)), grows_with_n),
        Observation("3", f"B = RTT·C/√N keeps a link with many flows busy (N = {largest['flows']})",
                    f"≥ {threshold:.0%}" + (" (paper: ≥ 98 % for hundreds of flows; quick run: fewer flows)" if quick else ""),
                    f"{largest['utilization_l1']:.4f}", largest["utilization_l1"] >= threshold),
    ]


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import bounded_band, metric_axis, new_figure, plain_log_ticks, run_colour, title

    t = _table(res, studies)
    fig, grid = new_figure(1, 2, size=(11, 4.2))
    utilisation, delay = grid[0]
    shown = {metric: metric_axis(metric) for metric in ("utilization_l1", "mean_qdisc_delay_l2")}
    for i, ((n,), g) in enumerate(t.group_by(["flows"], maintain_order=True)):
        g = g.sort("multiple")
        x = g["multiple"].to_numpy()
        for ax, metric in ((utilisation, "utilization_l1"), (delay, "mean_qdisc_delay_l2")):
            ax.plot(x, shown[metric].shown(g[metric].to_list()), marker="o", color=run_colour(i), label=f"N = {n}")
        band = [shown["utilization_l1"].shown(g[f"utilization_l1_ci_{end}"].to_list()) for end in ("low", "high")]
        if g["utilization_l1_ci_low"].null_count() == 0:
            bounded_band(utilisation, x, band[0], band[1], shown["utilization_l1"].bounds, color=run_colour(i))
    multiples = sorted(set(t["multiple"].to_list()))
    for ax, metric in ((utilisation, "utilization_l1"), (delay, "mean_qdisc_delay_l2")):
        ax.set(xlabel="buffer / (mean RTT × C / √N)", ylabel=shown[metric].label)
        plain_log_ticks(ax, ticks=multiples)
        ax.axvline(1.0, color="0.5", linestyle=":", linewidth=1)
    utilisation.legend(title="long Reno flows", fontsize="small")
    title(fig, "Stanford model: N long Reno flows, RTTs uniform 25–300 ms, drop-tail bottleneck\n"
               "B = 1 × mean RTT × C / √N dotted" + (", 95 % CI over seeds shaded" if t["seeds"].gt(1).any() else ""))
    return {"appenzeller2004_utilisation_vs_buffer": fig}


REPRODUCTION = Reproduction(
    name="appenzeller2004", seed="(Stanford model)", title="Appenzeller et al. 2004: B = RTT·C/√N",
    description="N long-lived Reno flows with RTTs spread over 25–300 ms on one drop-tail bottleneck; "
                "utilisation and queueing delay against the buffer in multiples of the mean RTT × C / √N.",
    quick_estimate_s=2, full_estimate_s=120, sweeps=_sweeps, observe=_observe, draw=_draw,
    notes=["Quick: 100 Mb/s, N = 4, 16, 64, multiples 0.25, 1, 2, 30 s, one seed. Full: 1 Gb/s, N = 10 to 1000, "
           "multiples 0.25 to 2, 60 s, three seeds.",
           "RTTs are two-way propagation drawn uniformly from 25–300 ms (mean 162.5 ms, the RTT of the rule); "
           "starts are jittered uniformly over the first seconds.",
           "Not yet: the paper's short-flow mix (Pareto-sized mice beside the long flows)."])
