"""SplitBuff's options measured against each other: the paper's Fig. 2 as published (the
default) and the engine's refined estimator, each with B re-estimated every T_u (Fig. 2) or fixed
at the configured BDP; and Fig. 1's flows started together or jittered over 0-5 s. Prints one
table (docs/engine/index.md, "Queues", SplitBuff, quotes it).

    .venv/bin/python tools/splitbuff_estimators.py [--seconds-scale 1.0]

The settings are those of `bufferlab reproduce splitbuff` (experiments/splitbuff.py): a 100 Mb/s
dumbbell, 1 KB packets, Reno with SACK. Per case: the long-RTT group's throughput (Mb/s, per
flow), the short-RTT group's mean queueing delay (ms), the share of packets of the emptier
sub-buffer, and B at the end of the run (packets).
"""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from bufferlab import Scenario
from bufferlab.experiments.splitbuff import _dumbbell, bimodal_rtts_us
from bufferlab.runner import simulate

VARIANTS = [("paper", "estimated"), ("paper", "fixed"), ("refined", "estimated"), ("refined", "fixed")]


def cases(scale: float) -> list[tuple[str, list[dict[str, Any]], str, str, str]]:
    """(case, flows, duration, short group prefix, long group prefix)."""
    together = [{"name": "short_0", "rtt": "10ms", "start": "0s"}, {"name": "long_0", "rtt": "990ms", "start": "0s"}]
    jittered = [{"name": "short_0", "rtt": "10ms"}, {"name": "long_0", "rtt": "990ms"}]
    types = [{"name": f"short_{i}", "rtt": "10ms"} for i in range(5)] + \
        [{"name": f"long_{i}", "rtt": "200ms"} for i in range(5)]
    rtts = bimodal_rtts_us(20)
    bimodal = [{"name": f"long_{i}", "rtt": f"{r}us"} for i, r in enumerate(rtts["coast"])] + \
        [{"name": f"short_{i}", "rtt": f"{r}us"} for i, r in enumerate(rtts["abroad"])]
    return [("Fig. 1, starts together", together, f"{300 * scale:g}s", "short", "long"),
            ("Fig. 1, starts over 0-5 s", jittered, f"{300 * scale:g}s", "short", "long"),
            ("Figs. 4-6, N = 10, 200 ms", types, f"{90 * scale:g}s", "short", "long"),
            ("Table I, N = 20", bimodal, f"{60 * scale:g}s", "short", "long")]


def measure(flows: list[dict[str, Any]], duration: str, queue: Any) -> dict[str, float]:
    scenario = Scenario.from_dict(_dumbbell("splitbuff_estimators", flows, duration, queue))
    result, _ = simulate(scenario)
    end_ns = scenario.duration
    f = result.flows.with_columns(
        pl.col("name").str.split("_").list.first().alias("group"),
        (pl.col("bytes_delivered") * 8e3 / (end_ns - pl.col("start_ns"))).alias("mbps"),
        ((pl.col("rtt_sum_ns") / pl.col("rtt_samples") - pl.col("min_rtt_ns")) / 1e6).alias("qdelay_ms"))
    groups = {g: rows for (g,), rows in f.group_by(["group"])}
    out = {"long_mbps": float(groups["long"]["mbps"].mean()),  # type: ignore[arg-type]
           "short_qdelay_ms": float(groups["short"]["qdelay_ms"].mean())}  # type: ignore[arg-type]
    classes = result.queue_classes.filter(pl.col("channel") == 0)
    if classes.height:
        enq = classes["enqueued_packets"].to_numpy().astype(float)
        out["min_share"] = float(enq.min() / enq.sum())
        out["b_end"] = float(classes["size_limit"].sum())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-scale", type=float, default=1.0, help="multiply every case's duration")
    args = parser.parse_args()
    print("| case | queue | long-RTT flows Mb/s | short-RTT flows' queueing ms | emptier sub-buffer's share | "
          "B at the end (p) |")
    print("|---|---|---|---|---|---|")
    for case, flows, duration, _, _ in cases(args.seconds_scale):
        queues: list[tuple[str, Any]] = [("FIFO, BDP rule", {"rule": "bdp"})]
        queues += [(f"SplitBuff {e}, B {t}", {"kind": "splitbuff", "estimator": e, "total": t}) for e, t in VARIANTS]
        for label, queue in queues:
            m = measure(flows, duration, queue)
            share = f"{m['min_share']:.1%}" if "min_share" in m else "—"
            b_end = f"{m['b_end']:.0f}" if "b_end" in m else "—"
            print(f"| {case} ({duration}) | {label} | {m['long_mbps']:.2f} | {m['short_qdelay_ms']:.1f} | {share} | "
                  f"{b_end} |", flush=True)


if __name__ == "__main__":
    main()
