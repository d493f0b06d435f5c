"""splitbuff — seed 002: SplitBuff, buffers split by RTT (Jabeen et al.).

Three parts, on a dumbbell with a 100 Mb/s bottleneck and 1 KB packets (TCP with SACK):

- ``fig1``: one 10 ms and one 990 ms RTT flow. A single FIFO swept from 25 to 500 ms of buffer
  (the seed's Fig. 1: throughput ratio, queueing delay, loss), then one BDP (500 ms, 6250 packets)
  as a FIFO, split by SplitBuff, and split blindly (Blind-SplitBuff).
- ``types``: N/2 Type-1 flows at 10 ms RTTP and N/2 Type-2 flows at a longer RTTP, under the BDP
  rule, the Stanford model, SplitBuff and Blind-SplitBuff (Figs. 4–6).
- ``bimodal``: N = 100 flows, half from a lognormal around 130 ms RTTP and half around 60 ms (the
  bimodal US trace of Table I), BDP rule against SplitBuff.

Queueing delay per flow is its mean smoothed RTT less its minimum RTT (`mean_est_qdelay_l4`);
normalised throughput is its throughput over the link rate, as the seed's figures plot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..analysis.metrics import series_mean
from ..study.sweep import Sweep
from .base import Observation, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

RATE_MBPS = 100.0
DISCIPLINES = {"bdp": {"rule": "bdp"}, "stanford": {"rule": "stanford"}, "splitbuff": {"kind": "splitbuff"},
               "blind": {"kind": "blind_splitbuff"}}


def scale(quick: bool) -> dict[str, Any]:
    if quick:
        return {"fig1_buffers_ms": [25, 100, 500], "fig1_duration": "60s", "types_n": [10], "type2_rttp_ms": [100, 400],
                "types_duration": "40s", "bimodal_n": 20, "bimodal_duration": "40s", "seeds": 1}
    return {"fig1_buffers_ms": [25, 50, 100, 200, 300, 400, 500], "fig1_duration": "500s",
            "types_n": [2, 10, 100, 250, 500], "type2_rttp_ms": [10, 100, 200, 300, 400, 500],
            "types_duration": "500s", "bimodal_n": 100, "bimodal_duration": "500s", "seeds": 10}


def _dumbbell(name: str, flows: list[dict[str, Any]], duration: str, queue: Any) -> dict[str, Any]:
    return {
        "name": name, "duration": duration, "sample_interval": "100ms",
        # The observations and figures read the flow metrics only. The series they are taken
        # over stay out of the store: the full grid's would fill ~68 GB (one 500-flow, 500 s run
        # left a store of 163 MB with them, 1.3 MB without) and take longer to write than to
        # simulate.
        "record": {"store_series": False},
        # "1 KB" packets: 948 bytes of payload + 52 of IP/TCP headers. The seed's TCP is ns-2's
        # TCP SACK: RFC 6675 recovery without RACK-TLP (a lost retransmission waits for the RTO).
        "flow_defaults": {"cca": "reno", "tcp": {"mss": 948, "sack": True, "rack": False},
                          "start": {"dist": "uniform", "low": "0s", "high": "5s"}},
        "topology": {"kind": "dumbbell", "bottleneck_rate": "100Mbps", "bottleneck_delay": "2ms", "queue": queue,
                     "reverse_queue": "10000p"},
        "flows": flows,
    }


def _fig1(s: dict[str, Any]) -> Sweep:
    # Both flows start at 0 s, as in Fig. 1 (jittered starts separate them too: docs/engine.md,
    # SplitBuff, staggered starts).
    flows = [{"name": "short_10ms", "rtt": "10ms", "start": "0s"}, {"name": "long_990ms", "rtt": "990ms", "start": "0s"}]
    queues = [*[f"{ms}ms" for ms in s["fig1_buffers_ms"]], DISCIPLINES["splitbuff"], DISCIPLINES["blind"]]
    labels = [*[f"fifo {ms} ms" for ms in s["fig1_buffers_ms"]], "splitbuff", "blind"]
    return Sweep.from_dict({"name": "fig1", "base": _dumbbell("splitbuff_fig1", flows, s["fig1_duration"], "500ms"),
                            "seeds": s["seeds"],
                            "axes": [{"zip": [{"key": "meta.queue", "values": labels},
                                              {"key": "topology.queue", "values": queues}]}]})


def _types(s: dict[str, Any]) -> dict[str, Sweep]:
    sweeps = {}
    for n in s["types_n"]:
        half = max(1, n // 2)
        flows = [{"name": f"type1_{i}", "rtt": "10ms"} for i in range(half)]
        flows += [{"name": f"type2_{i}", "rtt": "100ms"} for i in range(half)]
        rtt_axis = {"zip": [{"key": f"flows[{half + i}].rtt", "values": [f"{r}ms" for r in s["type2_rttp_ms"]]}
                            for i in range(half)] + [{"key": "meta.type2_rttp_ms", "values": s["type2_rttp_ms"]}]}
        sweeps[f"types_n{n}"] = Sweep.from_dict({
            "name": f"types_n{n}", "base": _dumbbell(f"splitbuff_types_{n}", flows, s["types_duration"], "500ms"),
            "seeds": s["seeds"],
            "axes": [{"zip": [{"key": "meta.discipline", "values": list(DISCIPLINES)},
                              {"key": "topology.queue", "values": list(DISCIPLINES.values())}]}, rtt_axis]})
    return sweeps


def _bimodal(s: dict[str, Any]) -> Sweep:
    # Table I's trace: half the flows around 130 ms RTTP (US coast to coast), half around 60 ms
    # (US to Asia/Europe); lognormal with sigma 0.25, drawn once from a fixed stream.
    rng = np.random.default_rng(2002)
    half = s["bimodal_n"] // 2
    coast = rng.lognormal(np.log(0.130), 0.25, half)
    abroad = rng.lognormal(np.log(0.060), 0.25, half)
    flows = [{"name": f"coast_{i}", "rtt": f"{2 * round(r * 1e6 / 2)}us"} for i, r in enumerate(coast)]
    flows += [{"name": f"abroad_{i}", "rtt": f"{2 * round(r * 1e6 / 2)}us"} for i, r in enumerate(abroad)]
    return Sweep.from_dict({
        "name": "bimodal", "base": _dumbbell("splitbuff_bimodal", flows, s["bimodal_duration"], {"rule": "bdp"}),
        "seeds": s["seeds"],
        "axes": [{"zip": [{"key": "meta.discipline", "values": ["bdp", "splitbuff"]},
                          {"key": "topology.queue", "values": [DISCIPLINES["bdp"], DISCIPLINES["splitbuff"]]}]}]})


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    return {"fig1": _fig1(s), **_types(s), "bimodal": _bimodal(s)}


def per_flow(res: Results, study: str, axes: list[str]) -> pl.DataFrame:
    """Per (point, flow name): mean over seeds of throughput (Mb/s), queueing delay (ms), loss."""
    runs = res.study_runs(study).filter(pl.col("status") == "complete").select("run_id", *axes)
    flows = res.flow_metrics.select("run_id", "name", "mean_throughput_l4", "mean_est_qdelay_l4", "loss_rate_l4")
    # In the study's order (point, seed), then the flows' (polars joins keep no order unless told).
    return (runs.join(flows, on="run_id", maintain_order="left_right").group_by([*axes, "name"], maintain_order=True)
            .agg(pl.col("mean_throughput_l4").mean().alias("throughput_mbps"),
                 pl.col("mean_est_qdelay_l4").mean().alias("qdelay_ms"), pl.col("loss_rate_l4").mean().alias("loss")))


def _fig1_table(res: Results, studies: dict[str, str]) -> dict[str, dict[str, dict[str, float]]]:
    t = per_flow(res, studies["fig1"], ["meta.queue"])
    out: dict[str, dict[str, dict[str, float]]] = {}
    for row in t.iter_rows(named=True):
        out.setdefault(row["meta.queue"], {})[row["name"]] = row
    return out


def _types_table(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    frames = []
    for part, study in studies.items():
        if part.startswith("types_n"):
            t = per_flow(res, study, ["meta.discipline", "meta.type2_rttp_ms"])
            frames.append(t.with_columns(pl.lit(int(part[len("types_n"):])).alias("n"),
                                         pl.col("name").str.split("_").list.first().alias("type")))
    return pl.concat(frames).group_by(["n", "meta.discipline", "meta.type2_rttp_ms", "type"], maintain_order=True) \
        .agg(pl.col("throughput_mbps").mean(), pl.col("qdelay_ms").mean(), pl.col("loss").mean())


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    f1 = _fig1_table(res, studies)
    fifo = [k for k in f1 if k.startswith("fifo")]
    ratios = [f1[k]["short_10ms"]["throughput_mbps"] / max(f1[k]["long_990ms"]["throughput_mbps"], 1e-6) for k in fifo]
    bdp = f1[fifo[-1]]
    split, blind = f1["splitbuff"], f1["blind"]
    gain = split["long_990ms"]["throughput_mbps"] / max(bdp["long_990ms"]["throughput_mbps"], 1e-6)
    blind_gain = blind["long_990ms"]["throughput_mbps"] / max(bdp["long_990ms"]["throughput_mbps"], 1e-6)
    t = _types_table(res, studies)
    n, longest, shortest = t["n"].max(), t["meta.type2_rttp_ms"].max(), t["meta.type2_rttp_ms"].min()
    assert isinstance(n, int) and isinstance(longest, int) and isinstance(shortest, int)  # axis values as written

    def tput(disc: str, kind: str, rttp: int) -> float:
        row = t.filter((pl.col("n") == n) & (pl.col("meta.discipline") == disc) & (pl.col("type") == kind)
                       & (pl.col("meta.type2_rttp_ms") == rttp))
        return float(row["throughput_mbps"][0]) if row.height else float("nan")

    def delay(disc: str, kind: str) -> float:
        row = t.filter((pl.col("n") == n) & (pl.col("meta.discipline") == disc) & (pl.col("type") == kind)
                       & (pl.col("meta.type2_rttp_ms") == longest))
        return float(row["qdelay_ms"][0]) if row.height else float("nan")

    split_balance = tput("splitbuff", "type2", longest) / max(tput("splitbuff", "type1", longest), 1e-9)
    bdp_balance = tput("bdp", "type2", longest) / max(tput("bdp", "type1", longest), 1e-9)
    bim = per_flow(res, studies["bimodal"], ["meta.discipline"]).with_columns(
        pl.col("name").str.split("_").list.first().alias("group"))
    bim_delay = {d: series_mean(g["qdelay_ms"]) for (d,), g in bim.group_by(["meta.discipline"])}
    return [
        Observation("Fig. 1a", "throughput ratio of the 10 ms to the 990 ms flow: above 100 with small buffers, "
                    "smaller with larger ones", "> 100, falling",
                    ", ".join(f"{k[5:]}: {r:.0f}" for k, r in zip(fifo, ratios)),
                    ratios[0] > 100 and ratios[-1] < ratios[0],
                    "" if all(b <= a for a, b in zip(ratios, ratios[1:])) else "not monotone between the sizes"),
        Observation("Fig. 1b", "behind a BDP FIFO (500 ms) the 10 ms flow queues for more than 300 ms", "> 300 ms",
                    f"{bdp['short_10ms']['qdelay_ms']:.0f} ms", bdp["short_10ms"]["qdelay_ms"] > 300),
        Observation("SplitBuff", "SplitBuff raises the 990 ms flow's throughput several-fold over the BDP FIFO and "
                    "cuts the 10 ms flow's queueing delay", "several times; far lower",
                    f"{gain:.0f}x; {split['short_10ms']['qdelay_ms']:.0f} ms vs {bdp['short_10ms']['qdelay_ms']:.0f} ms",
                    gain >= 3 and split["short_10ms"]["qdelay_ms"] < bdp["short_10ms"]["qdelay_ms"] / 3),
        Observation("Blind", "Blind-SplitBuff behaves like the single buffer: no such gain", "no gain",
                    f"{blind_gain:.1f}x", blind_gain < 2),
        Observation("Fig. 4a/b", f"Type-2 throughput falls as its RTTP grows, under BDP and Stanford (N = {n})",
                    "falls", f"BDP {tput('bdp', 'type2', shortest):.2f} → {tput('bdp', 'type2', longest):.2f} Mb/s; "
                    f"Stanford {tput('stanford', 'type2', shortest):.2f} → {tput('stanford', 'type2', longest):.2f}",
                    tput("bdp", "type2", longest) < tput("bdp", "type2", shortest)
                    and tput("stanford", "type2", longest) < tput("stanford", "type2", shortest)),
        Observation("Fig. 4c", f"under SplitBuff both types get about the same throughput (N = {n}, Type-2 at "
                    f"{longest} ms)", "about equal", f"Type-2/Type-1 {split_balance:.2f} (BDP: {bdp_balance:.2f})",
                    split_balance > 0.5 and split_balance > bdp_balance),
        Observation("Fig. 5c", "SplitBuff cuts the short flows' queueing delay dramatically", "far below BDP",
                    f"Type-1 {delay('splitbuff', 'type1'):.0f} ms vs {delay('bdp', 'type1'):.0f} ms under BDP",
                    delay("splitbuff", "type1") < delay("bdp", "type1") / 2),
        Observation("Table I", "bimodal RTTs (N = 100 at full scale): SplitBuff's mean queueing delay below the "
                    "BDP rule's", "98.25 vs 108.7 ms",
                    f"{bim_delay.get('splitbuff', float('nan')):.1f} vs {bim_delay.get('bdp', float('nan')):.1f} ms",
                    bim_delay.get("splitbuff", np.inf) < bim_delay.get("bdp", -np.inf)),
    ]


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import new_figure, run_colour, title

    f1 = _fig1_table(res, studies)
    fifo = [k for k in f1 if k.startswith("fifo")]
    ms = [float(k.split()[1]) for k in fifo]
    fig, grid = new_figure(1, 3, size=(13, 4))
    axes = grid[0]
    axes[0].plot(ms, [f1[k]["short_10ms"]["throughput_mbps"] / max(f1[k]["long_990ms"]["throughput_mbps"], 1e-6)
                      for k in fifo], marker="o", color=run_colour(0))
    axes[0].set(xlabel="FIFO buffer (ms at 100 Mb/s)", ylabel="throughput ratio, 10 ms / 990 ms flow", yscale="log")
    for i, name in enumerate(("short_10ms", "long_990ms")):
        axes[1].plot(ms, [f1[k][name]["qdelay_ms"] for k in fifo], marker="o", color=run_colour(i), label=name)
        axes[2].plot(ms, [f1[k][name]["loss"] * 100 for k in fifo], marker="o", color=run_colour(i), label=name)
    axes[1].set(xlabel="FIFO buffer (ms at 100 Mb/s)", ylabel="queueing delay (ms)")
    axes[2].set(xlabel="FIFO buffer (ms at 100 Mb/s)", ylabel="loss rate (%)")
    axes[1].legend(fontsize="small")
    title(fig, "Seed 002, Fig. 1: a 10 ms and a 990 ms RTT flow behind one FIFO, 100 Mb/s, 1 KB packets")
    t = _types_table(res, studies)
    n = t["n"].max()
    assert isinstance(n, int)
    fig4, grid4 = new_figure(1, 4, size=(15, 4), sharey=True)
    ax4 = grid4[0]
    for ax, disc in zip(ax4, DISCIPLINES):
        for i, kind in enumerate(("type1", "type2")):
            g = t.filter((pl.col("n") == n) & (pl.col("meta.discipline") == disc) & (pl.col("type") == kind)) \
                .sort("meta.type2_rttp_ms")
            ax.plot(g["meta.type2_rttp_ms"].to_numpy(), g["throughput_mbps"].to_numpy() / RATE_MBPS, marker="o",
                    color=run_colour(i), label=f"{kind.replace('type', 'Type-')} flows")
        ax.set(xlabel="Type-2 RTTP (ms)", title=disc)
    ax4[0].set(ylabel="normalised throughput per flow")
    ax4[0].legend(fontsize="small")
    title(fig4, f"Seed 002, Figs. 4 and 6: N = {n} flows, half at 10 ms RTTP (Type-1), half longer (Type-2)")
    return {"splitbuff_fig1": fig, "splitbuff_types": fig4}


REPRODUCTION = Reproduction(
    name="splitbuff", seed="002", title="Seed 002: SplitBuff, buffers split by RTT",
    description="Short and long RTT flows on a 100 Mb/s bottleneck with 1 KB packets: a single FIFO against "
                "SplitBuff (sub-buffers sized by eq. (4), round robin) and Blind-SplitBuff; the BDP rule and the "
                "Stanford model for N/2 + N/2 flows; the bimodal trace of Table I.",
    quick_estimate_s=4, full_estimate_s=35 * 60, sweeps=_sweeps, observe=_observe, draw=_draw,
    notes=["TCP: Reno with SACK and PRR (the seed runs ns-2's TCP SACK); 1 KB packets are a 948-byte MSS plus 52 bytes "
           "of headers; starts jittered over 0–5 s (the seed's \"uniformly at random from [0 s, 5 s]\").",
           "Quick: Fig. 1 at 25, 100, 500 ms for 60 s; N = 10 with Type-2 at 100 and 400 ms for 40 s; the bimodal "
           "case with N = 20 for 40 s; one seed. Full: the seed's grid, 500 s, 10 seeds (1,310 runs, 1,238 distinct: "
           "35 min on two cores, a store of 189 MB: the runs keep their metrics, not their time series).",
           "Bimodal RTTs: lognormal around 130 ms and 60 ms RTTP with sigma 0.25, drawn once (the seed gives modes only).",
           "SplitBuff's details the seed leaves open (T_u, alpha, the two-sub-buffer threshold) are in docs/engine.md.",
           "Fig. 1's two flows start together, as in the figure; with starts jittered over 0–5 s SplitBuff "
           "separates them as well (docs/engine.md, SplitBuff, staggered starts)."])
