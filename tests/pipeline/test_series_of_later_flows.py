"""A flow's time series begin at the last sample before it starts (when its counters are all
still zero), a channel's at the earliest of those of the listed flows that cross it: flows and
links idle until late in a run cost no series rows. The metrics read the shorter rows as the
full ones they stand for."""

from __future__ import annotations

import polars as pl

from bufferlab import runner
from bufferlab.analysis import metrics
from bufferlab.spec import Scenario

INTERVAL_NS = 100_000_000
END_NS = 3_000_000_000


def staggered(starts: list[str]) -> Scenario:
    """A dumbbell of one NewReno flow per start, sampled every 100 ms for 3 s."""
    flows = "".join(f"""
[[flows]]
src = "src_{i}"
dst = "dst_{i}"
start = "{start}"
""" for i, start in enumerate(starts))
    return Scenario.from_toml_text(f"""
name = "staggered"
duration = "3s"
sample_interval = "100ms"
[topology]
kind = "dumbbell"
flows = {len(starts)}
bottleneck_rate = "20Mbps"
queue = "60p"
rtt = "40ms"
[flow_defaults]
cca = "newreno"
traffic = "greedy"
""" + flows)


def first_times(frame: pl.DataFrame, key: str) -> dict[int, int]:
    return {int(k): int(t) for k, t in frame.group_by(key).agg(pl.col("time_ns").min()).iter_rows()}


def test_a_flow_is_sampled_from_the_last_sample_before_it_starts_to_the_end() -> None:
    result, _ = runner.simulate(staggered(["0s", "1.05s", "2s", "2.95s"]))
    series = result.flow_timeseries
    # 1.05 s: the last sample before it is at 1.0 s; 2 s: at 1.9 s (the one at 2 s is not before it).
    assert first_times(series, "flow") == {0: INTERVAL_NS, 1: 1_000_000_000, 2: 1_900_000_000, 3: 2_900_000_000}
    assert set(series.group_by("flow").agg(pl.col("time_ns").max())["time_ns"]) == {END_NS}
    assert series.group_by("flow").agg(pl.len())["len"].sum() == 30 + 21 + 12 + 2
    firsts = series.sort("time_ns").group_by("flow", maintain_order=True).first()
    for counter in ("acked_bytes", "delivered_bytes", "sent_bytes", "written_bytes", "delivery_delay_byte_us"):
        assert firsts.filter(pl.col("flow") != 0)[counter].to_list() == [0, 0, 0], counter


def test_a_channel_is_sampled_from_the_first_sample_of_the_flows_that_cross_it() -> None:
    result, _ = runner.simulate(staggered(["0.5s", "2.05s"]))
    names = dict(enumerate(result.channels["name"].to_list()))
    first = {names[c]: t for c, t in first_times(result.channel_timeseries, "channel").items()}
    # Data one way, acknowledgements the other: both directions of a flow's links.
    assert first["btl_forward"] == first["btl_backward"] == 400_000_000
    for direction in ("forward", "backward"):
        assert first[f"access_src_0_{direction}"] == first[f"access_dst_0_{direction}"] == 400_000_000
        assert first[f"access_src_1_{direction}"] == first[f"access_dst_1_{direction}"] == 2_000_000_000


def test_metrics_of_shorter_rows_equal_those_of_the_rows_padded_with_the_idle_samples() -> None:
    scenario = staggered(["0s", "0.73s", "1.5s", "2.42s"])
    result, _ = runner.simulate(scenario)
    resolved = scenario.resolve()
    series = result.flow_timeseries
    times = series.filter(pl.col("flow") == 0)["time_ns"]
    # The rows as a run sampling every flow from the first sample would have them before the
    # flow started: cumulative counters and states zero (outside the flow's active period).
    padding = []
    for flow, first in first_times(series, "flow").items():
        earlier = times.filter(times < first)
        padding.append(pl.DataFrame({"flow": pl.Series([flow] * len(earlier), dtype=series["flow"].dtype),
                                     "time_ns": earlier}))
    padded = pl.concat([series, *padding], how="diagonal").sort("flow", "time_ns")
    padded = padded.with_columns(pl.exclude("flow", "time_ns", "ecn_alpha").fill_null(0)).select(series.columns)
    assert padded.height == 4 * 30

    def run_data(table: pl.DataFrame) -> metrics.RunData:
        return metrics.RunData.from_result(result.counters(), table, resolved.engine, resolved.flow_endpoints,
                                           resolved.bottleneck)

    ragged, full = run_data(series), run_data(padded)
    assert metrics.flow_metrics(ragged).equals(metrics.flow_metrics(full))
    assert metrics.network_metrics(ragged).equals(metrics.network_metrics(full))
    assert metrics.flow_metrics(ragged)["mean_cwnd_l4"].drop_nulls().len() == 4


def test_the_flow_series_arrays_have_zeros_before_a_flow_s_first_sample() -> None:
    result, _ = runner.simulate(staggered(["0s", "1.05s"]))
    series = metrics.FlowSeries.from_table(result.flow_timeseries)
    assert series is not None and series.time_ns.tolist() == [INTERVAL_NS * k for k in range(1, 31)]
    sent = series.column("sent_bytes")
    assert sent.shape == (2, 30)
    later = result.flow_timeseries.filter(pl.col("flow") == 1)["sent_bytes"].to_list()
    assert sent[1].tolist() == [0] * 9 + later and sent[0].tolist() == (
        result.flow_timeseries.filter(pl.col("flow") == 0)["sent_bytes"].to_list())
