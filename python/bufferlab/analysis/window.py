"""A run's bottleneck over a measurement window: from a warm-up time to the end of the run.

The catalogue's metrics (`analysis.metrics`) cover the whole run, slow start included; a buffer
sized for the steady state is judged after the start-up transient. Everything here is read from
what the store holds: the bottleneck channel's sampled cumulative series (bytes and packets
sent, drops, summed sojourn) and queue length, and the per-flow metrics. With samples t_0 < ... <
t_n in the window (t_0 the first sample at or after the warm-up) and Δ the increase of a
cumulative series from t_0 to t_n:

* utilisation = 8 · Δsent_bytes / (C · (t_n − t_0)), C the channel's rate (its token rate on a
  shaped link): the fraction of the window the link spent sending.
* loss = Δdrops / (Δsent_packets + Δdrops + q(t_n) − q(t_0)): packets the queue dropped over
  packets that arrived at it (arrivals = departures + drops + growth of the queue).
* delay = Δsojourn / Δsent_packets: the mean queueing delay (enqueue to start of transmission).
* pNN_delay: the NN-th percentile of the queueing delay, estimated from the sampled queue. A
  packet that arrives when q bytes wait leaves q · 8 / C later (FIFO at rate C); each sample's
  drain time q(t_k) · 8 / C stands for the packets the link sent in (t_{k−1}, t_k], so the
  estimate is the weighted percentile of the drain times with those packet counts as weights.
  Its resolution is the sampling interval: finer sampling, closer to the per-packet sojourns.
* pNN_throughput: the NN-th percentile (linear interpolation) of the flows' mean throughputs
  (`mean_throughput_l4` over each flow's life, mice included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ..errors import SpecError

__all__ = ["window_metrics", "weighted_percentile"]


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float | None:
    """The smallest value v such that the values ≤ v carry at least q % of the weight."""
    keep = weights > 0
    if not keep.any():
        return None
    order = np.argsort(values[keep], kind="stable")
    v, w = values[keep][order], weights[keep][order]
    cumulative = np.cumsum(w)
    k = int(np.searchsorted(cumulative, q / 100 * cumulative[-1], side="left"))
    return float(v[min(k, len(v) - 1)])


def _bottleneck(res: Any, run_id: str) -> tuple[int, float]:
    rows = res.query("SELECT l.channel, coalesce(c.shaping_rate_bps, c.rate_bps) AS rate FROM link_metrics l "
                     "JOIN channels c ON c.run_id = l.run_id AND c.channel = l.channel "
                     "WHERE l.run_id = ? AND l.bottleneck", [run_id])
    if rows.height == 0 or rows["rate"][0] is None:
        raise SpecError("bottleneck", f"run {run_id[:12]} has no bottleneck link of finite rate")
    return int(rows["channel"][0]), float(rows["rate"][0])


def _run_window(res: Any, run_id: str, warmup_ns: int, delay_quantiles: Sequence[int],
                throughput_quantiles: Sequence[int]) -> dict[str, Any]:
    channel, rate_bps = _bottleneck(res, run_id)
    series = res.query("SELECT time_ns, queue_bytes, queue_packets, sent_bytes, sent_packets, drops, sojourn_ns "
                       "FROM channel_timeseries WHERE run_id = ? AND channel = ? AND time_ns >= ? ORDER BY time_ns",
                       [run_id, channel, warmup_ns])
    if series.height < 2 and not res.series_stored(run_id):
        raise SpecError("record.store_series", f"run {run_id[:12]} kept its time series out of the store ([record] "
                                               "store_series = false): a measurement window reads its bottleneck's "
                                               "series; run it without that setting")
    if series.height < 2:
        raise SpecError("warmup", f"run {run_id[:12]} has fewer than two samples of its bottleneck after the "
                                  "warm-up: record the bottleneck's series (sample_interval, [record] links) and "
                                  "keep the warm-up shorter than the run")
    s = {c: series[c].to_numpy().astype(np.float64) for c in series.columns}
    d = {c: s[c][-1] - s[c][0] for c in ("time_ns", "sent_bytes", "sent_packets", "drops", "sojourn_ns")}
    arrivals = d["sent_packets"] + d["drops"] + s["queue_packets"][-1] - s["queue_packets"][0]
    row: dict[str, Any] = {
        "run_id": run_id,
        "utilisation": 8 * d["sent_bytes"] / (rate_bps * d["time_ns"] / 1e9),
        "loss": d["drops"] / arrivals if arrivals > 0 else None,
        "delay_ms": d["sojourn_ns"] / d["sent_packets"] / 1e6 if d["sent_packets"] > 0 else None,
    }
    drain_ms = s["queue_bytes"][1:] * 8 / rate_bps * 1e3
    sent_in_interval = np.diff(s["sent_packets"])
    for q in delay_quantiles:
        row[f"p{q}_delay_ms"] = weighted_percentile(drain_ms, sent_in_interval, q)
    if throughput_quantiles:
        flows = res.query("SELECT mean_throughput_l4 FROM flow_metrics WHERE run_id = ? "
                          "AND mean_throughput_l4 IS NOT NULL", [run_id])["mean_throughput_l4"].to_numpy()
        for q in throughput_quantiles:
            row[f"p{q}_throughput_mbps"] = float(np.percentile(flows, q)) if len(flows) else None
    return row


def window_metrics(res: Any, run_ids: Sequence[str], warmup_ns: int, *, delay_quantiles: Sequence[int] = (),
                   throughput_quantiles: Sequence[int] = ()) -> pl.DataFrame:
    """One row per run: run_id, utilisation, loss, delay_ms and the requested pNN_delay_ms and
    pNN_throughput_mbps, measured from `warmup_ns` to the end of the run (module docstring)."""
    rows = [_run_window(res, r, warmup_ns, delay_quantiles, throughput_quantiles) for r in run_ids]
    columns = ["run_id", "utilisation", "loss", "delay_ms", *[f"p{q}_delay_ms" for q in delay_quantiles],
               *[f"p{q}_throughput_mbps" for q in throughput_quantiles]]
    schema = {c: (pl.Utf8 if c == "run_id" else pl.Float64) for c in columns}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
