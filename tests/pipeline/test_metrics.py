"""The metric catalogue on runs simple enough to compute by hand, and its invariants.

The main fixture: hosts a and b joined by an unlimited (zero serialisation time) link with a
10 ms one-way delay, flows starting at 1 ms whose receive window caps them at W segments and
whose initial window is already W, every segment ACKed at once. Each flow then sends W segments
at 21 ms (after the handshake), and every 20 ms after that when their ACKs return: ACKs arrive
at 41, 61, 81, ... ms, deliveries at 31, 51, 71, ... ms. With 100 ms samples over 2 s, the first
interval holds 3 ACK rounds and 4 delivery rounds, each later one 5 of both: 98 W segments
acknowledged and 99 W delivered in the run. Nothing ever waits in a queue: every byte's one-way
delay is 10 ms and every RTT 20 ms.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bufferlab import runner
from bufferlab.analysis import metrics
from bufferlab.pipeline.result import EngineResult
from bufferlab.spec import Scenario

MSS = 1448


def windows_scenario(windows: list[int], *, rate: str = "unlimited", interval: str = "100ms") -> Scenario:
    flows = "".join(f"""
[[flows]]
src = "a"
dst = "b"
tcp = {{ ack_every = 1, rwnd = "{w * MSS}B", initial_window = {w} }}
""" for w in windows)
    return Scenario.from_toml_text(f"""
name = "windows"
duration = "2s"
sample_interval = "{interval}"
[[nodes]]
name = "a"
kind = "host"
[[nodes]]
name = "b"
kind = "host"
[[links]]
name = "ab"
a = "a"
b = "b"
rate = "{rate}"
delay = "10ms"
[flow_defaults]
start = "1ms"
""" + flows)


def run_data(scenario: Scenario, result: EngineResult) -> metrics.RunData:
    resolved = scenario.resolve()
    return metrics.RunData.from_result(result.counters(), result.flow_timeseries, resolved.engine,
                                       resolved.flow_endpoints, resolved.bottleneck,
                                       delay_histograms=result.delay_histograms)


def tables(scenario: Scenario) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, EngineResult]:
    result, _ = runner.simulate(scenario)
    run = run_data(scenario, result)
    return metrics.flow_metrics(run), metrics.link_metrics(run), metrics.network_metrics(run), result


def mbps(segments: float, seconds: float) -> float:
    return segments * MSS * 8 / seconds / 1e6


@pytest.fixture(scope="module")
def two_windows() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict]:
    return tables(windows_scenario([10, 20]))


def test_rates_of_window_limited_flows_are_window_over_rtt(two_windows) -> None:
    flows, _, _, _ = two_windows
    for row, w in zip(flows.iter_rows(named=True), (10, 20)):
        # 98 W segments acknowledged, 99 W written, sent and delivered in 2 s.
        assert row["mean_throughput_l4"] == pytest.approx(mbps(98 * w, 2))
        assert row["mean_throughput_l7"] == pytest.approx(mbps(99 * w, 2))
        assert row["mean_sending_rate_l4"] == pytest.approx(mbps(99 * w, 2))
        assert row["mean_sending_rate_l7"] == pytest.approx(mbps(99 * w, 2))
        # BBR-style rate samples: a window delivered per 20 ms round trip, from the first ACK on.
        assert row["mean_delivery_rate_l4"] == pytest.approx(mbps(w, 0.020))
        assert row["delivery_rate_source"] == "rate samples"


def test_window_rtt_and_delay_metrics_are_exact(two_windows) -> None:
    flows, _, _, _ = two_windows
    for row, w in zip(flows.iter_rows(named=True), (10, 20)):
        assert row["mean_in_flight_l4"] == w and row["cov_in_flight_l4"] == 0
        assert row["mean_srtt_l4"] == 20.0 and row["mean_est_qdelay_l4"] == 0.0 and row["cov_srtt_l4"] == 0
        assert row["mean_one_way_delay_l7"] == pytest.approx(10.0)
        # Per sample: throughput / 20 ms; the first sample has 3 of the 5 ACK rounds of the others.
        steady = mbps(5 * w, 0.1)
        samples = np.array([0.6 * steady] + [steady] * 19)
        assert row["mean_network_power_l4"] == pytest.approx(float(np.mean(samples / 0.020)))
        assert row["mean_utility_pf_l4"] == pytest.approx(float(np.mean(np.log(samples))))
        assert row["mean_utility_mpdf_l4"] == pytest.approx(float(np.mean(-1 / samples)))
        assert row["cov_throughput_l4"] == pytest.approx(float(samples.std() / samples.mean()))
        assert row["flow_completion_time_l4"] == pytest.approx(1.999)  # greedy: start to end of run
        assert (row["total_retransmissions_l4"], row["total_rtos_l4"], row["loss_rate_l4"]) == (0, 0, 0)
        assert row["mean_recovery_time_l4"] is None  # no recovery episode
        # An unlimited link has no rate: utilisations are undefined.
        assert row["mean_utilization_bw_l4"] is None and row["mean_utilization_bdp_l4"] is None
        # A window leaves at once (IDT 0), then 20 ms pass: the EWMA stays between the two.
        assert 0 < row["mean_idt_ewma_l4"] < 20


def test_network_metrics_of_two_to_one_shares(two_windows) -> None:
    flows, _, net, _ = two_windows
    row = net.row(0, named=True)
    # Every sample: x2 = 2 x1, so Jain = (3x)^2 / (2 (x^2 + 4x^2)) = 0.9 and shares are 1/3, 2/3.
    assert row["mean_jains_fairness_throughput_l4"] == pytest.approx(0.9)
    assert row["mean_entropy_fairness_throughput_l4"] == pytest.approx(-(math.log(1 / 3) / 3 + 2 * math.log(2 / 3) / 3))
    # Both flows are active in every sample: the aggregate mean is the sum of the flows' means.
    assert row["mean_agg_throughput_l4"] == pytest.approx(flows["mean_throughput_l4"].sum())
    assert row["mean_agg_in_flight_l4"] == pytest.approx(30)
    assert row["mean_agg_utility_pf_l4"] == pytest.approx(flows["mean_utility_pf_l4"].sum())
    assert row["mean_agg_utility_mpdf_l4"] == pytest.approx(flows["mean_utility_mpdf_l4"].sum())
    steady = mbps(50, 0.1)
    products = np.array([0.36 * steady * 2 * steady] + [steady * 2 * steady] * 19)
    assert row["mean_product_fairness_throughput_l4"] == pytest.approx(float(products.mean()))


@pytest.mark.parametrize("n", [2, 3, 5])
def test_equal_shares_are_perfectly_fair(n: int) -> None:
    flows, _, net, _ = tables(windows_scenario([10] * n))
    row = net.row(0, named=True)
    assert row["mean_jains_fairness_throughput_l4"] == pytest.approx(1.0)
    assert row["mean_entropy_fairness_throughput_l4"] == pytest.approx(math.log(n))
    assert row["mean_agg_throughput_l4"] == pytest.approx(flows["mean_throughput_l4"].sum())


def test_fairness_indices_on_known_vectors() -> None:
    assert metrics.jain(np.array([1.0, 1.0, 1.0, 1.0])) == pytest.approx(1.0)
    assert metrics.jain(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)  # 1/n: one flow takes all
    assert metrics.entropy(np.array([2.0, 2.0])) == pytest.approx(math.log(2))
    assert metrics.entropy(np.array([5.0, 0.0])) == 0.0
    assert metrics.jain(np.zeros(3)) is None and metrics.entropy(np.zeros(3)) is None


# The metrics that take a logarithm: libm's in the catalogue (the same on every machine), numpy's
# here (SVML on a CPU with AVX-512, another elsewhere), so equal to within rounding, not bit for bit.
LOG_METRICS = {"mean_utility_pf_l4", "mean_agg_utility_pf_l4", "mean_entropy_fairness_throughput_l4"}


def _numpy_mean(values: np.ndarray) -> float | None:
    """numpy's mean of the finite values (None without one), which the catalogue's Rust
    arithmetic matches bit for bit."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else None


def _synthetic_run(rng: np.random.Generator, flows: int, k: int) -> tuple[metrics.RunData, dict[str, np.ndarray]]:
    """A run of `flows` sampled flows over `k` samples of 10 ms with random counters: flows start
    and end at random samples, some intervals acknowledge nothing, some flows complete, some have
    no min RTT (no BDP); its series as the engine's table, and the per-sample quantities by numpy."""
    dt_ns = 10_000_000
    time_ns = np.arange(1, k + 1, dtype=np.uint64) * dt_ns
    start = rng.integers(0, k * dt_ns // 2, flows)
    completed = [None if rng.random() < 0.5 else int(s + rng.integers(dt_ns, k * dt_ns)) for s in start]
    acked = np.cumsum(rng.integers(0, 3_000_000, (flows, k)) * (rng.random((flows, k)) > 0.1), axis=1).astype(np.uint64)
    in_flight = rng.integers(0, 2_000_000, (flows, k)).astype(np.uint64)
    srtt = rng.integers(20_000_000, 90_000_000, (flows, k)).astype(np.uint64)
    srtt[:, : k // 10] = 0
    series = {"acked_bytes": acked, "delivered_bytes": acked, "sent_bytes": acked, "written_bytes": acked,
              "cwnd_bytes": in_flight, "in_flight_bytes": in_flight, "srtt_ns": srtt, "min_rtt_ns": srtt // 2,
              "idt_ewma_ns": srtt // 100, "delivery_delay_byte_us": acked // 1000}
    table = pl.DataFrame({"flow": np.repeat(np.arange(flows, dtype=np.uint32), k), "time_ns": np.tile(time_ns, flows),
                          **{name: values.reshape(-1) for name, values in series.items()}})
    records = [{"name": f"f{i}", "start_ns": int(start[i]), "completed_ns": completed[i], "path": [],
                "min_rtt_ns": None if i % 3 == 0 else int(rng.integers(10_000_000, 50_000_000)),
                "bytes_acked": int(acked[i, -1])} for i in range(flows)]
    channels = [{"name": "btl_forward", "rate_bps": 100_000_000, "sent_packets": 1}]
    run = metrics.RunData(end_ns=int(time_ns[-1]), flows=records, channels=channels,
                          endpoints=[("a", "b")] * flows, flow_specs=[{"tcp": {"mss": 1448}}] * flows, bottleneck=0,
                          timeseries=table)
    t = time_ns.astype(np.float64)
    dt = np.diff(t, prepend=0.0)
    ends = np.array([float(c) if c is not None else float(time_ns[-1]) for c in completed])[:, None]
    active = (t > start.astype(np.float64)[:, None]) & (t - dt < ends) & (dt > 0)
    tput = np.where(active, np.diff(acked.astype(np.float64), axis=1, prepend=0.0) * 8e3 / dt, np.nan)
    flight = np.where(active, in_flight / 1448.0, np.nan)
    bdps = np.array([np.nan if r["min_rtt_ns"] is None else 1e8 * r["min_rtt_ns"] / 1e9 / 8 / 1500 for r in records])
    return run, {"tput": tput, "in_flight": flight, "srtt_ms": np.where(active & (srtt > 0), srtt / 1e6, np.nan),
                 "bdp_util": flight / bdps[:, None]}


@pytest.mark.parametrize(("flows", "k"), [(1, 5), (3, 40), (9, 129), (17, 300), (130, 60)])
def test_flow_means_are_numpy_s_bit_for_bit(flows: int, k: int) -> None:
    # The catalogue's means in Rust (`_core.catalogue`) against numpy's: pairwise sums, std, log.
    run, q = _synthetic_run(np.random.default_rng(flows * k), flows, k)
    got = metrics.flow_metric_columns(run)
    tput = q["tput"]
    with np.errstate(divide="ignore", invalid="ignore"):
        positive = np.where(tput > 0, tput, np.nan)
        expected = {"mean_throughput_l4": tput, "mean_in_flight_l4": q["in_flight"], "mean_srtt_l4": q["srtt_ms"],
                    "mean_network_power_l4": tput / (q["srtt_ms"] / 1e3), "mean_utility_pf_l4": np.log(positive),
                    "mean_utility_mpdf_l4": -1.0 / positive, "mean_utilization_bw_l4": tput * 1e6 / 1e8,
                    "mean_utilization_bdp_l4": q["bdp_util"]}
    for name, values in expected.items():
        want = [_numpy_mean(row) for row in values]
        if name in LOG_METRICS:
            assert got[name] == [None if v is None else pytest.approx(v, rel=1e-14) for v in want], name
            continue
        assert [None if v is None else v.hex() for v in got[name]] == [None if v is None else v.hex() for v in want], name
    for flow, row in enumerate(tput):
        finite = row[np.isfinite(row)]
        mean = float(finite.mean()) if finite.size else None
        want = None if mean is None or mean == 0 else float(finite.std()) / mean
        assert got["cov_throughput_l4"][flow] == want, flow


@pytest.mark.parametrize(("flows", "k"), [(1, 5), (3, 40), (9, 129), (17, 300), (130, 60)])
def test_network_means_are_numpy_s_bit_for_bit(flows: int, k: int) -> None:
    # At each sample the flows active then, by the catalogue's definitions in numpy; then the mean
    # of the samples that define a value.
    run, q = _synthetic_run(np.random.default_rng(flows + k), flows, k)
    tput, in_flight, bdp = q["tput"], q["in_flight"], q["bdp_util"]
    per_sample: dict[str, list[float]] = {name: [] for name in metrics.NETWORK_METRICS}
    for col in range(k):
        active = ~np.isnan(tput[:, col])
        if not active.any():
            continue
        x, b = tput[active, col], bdp[active, col]
        positive = x[x > 0]
        total = float(x.sum())
        per_sample["mean_agg_throughput_l4"].append(total)
        per_sample["mean_agg_in_flight_l4"].append(float(in_flight[active, col].sum()))
        per_sample["mean_agg_utilization_bw_l4"].append(total * 1e6 / 1e8)
        if not np.isnan(b).all():
            per_sample["mean_agg_utilization_bdp_l4"].append(float(np.nansum(b)))
        squares = float((x * x).sum())
        if squares:
            per_sample["mean_jains_fairness_throughput_l4"].append(total * total / (x.size * squares))
        per_sample["mean_product_fairness_throughput_l4"].append(float(np.prod(x)))
        if positive.size:
            per_sample["mean_agg_utility_pf_l4"].append(float(np.log(positive).sum()))
            per_sample["mean_agg_utility_mpdf_l4"].append(float((-1.0 / positive).sum()))
            s = positive / total
            per_sample["mean_entropy_fairness_throughput_l4"].append(float(-(s * np.log(s)).sum()))
    row = metrics.network_metric_row(run)
    for name, values in per_sample.items():
        want = _numpy_mean(np.array(values, dtype=np.float64))
        assert row[name] == (pytest.approx(want, rel=1e-14) if name in LOG_METRICS and want is not None else want), name


def test_entropy_takes_a_logarithm_equal_to_numpy_s_within_rounding() -> None:
    # The entropy of two shares x / (x + 1) and 1 / (x + 1), against numpy's on any machine.
    rng = np.random.default_rng(42)
    for x in rng.exponential(10.0, 2000):
        values = np.array([x, 1.0])
        s = values / values.sum()
        assert metrics.entropy(values) == pytest.approx(float(-(s * np.log(s)).sum()), rel=1e-14, abs=1e-300)


@pytest.mark.parametrize("n", [0, 1, 2, 1000])
def test_increments_are_numpy_s_diff_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for cumulative in (np.cumsum(rng.exponential(1e6, n)), rng.standard_normal(n), np.full(n, -0.0),
                       np.cumsum(rng.integers(0, 2**40, n)).astype(np.uint64)):
        want = np.diff(cumulative.astype(np.float64), prepend=0.0)
        assert metrics._increments(cumulative).tobytes() == want.tobytes()


def test_utilisation_of_a_window_limited_flow_on_a_rated_link() -> None:
    flows, links, net, result = tables(windows_scenario([10], rate="100Mbps"))
    row = flows.row(0, named=True)
    assert row["mean_utilization_bw_l4"] == pytest.approx(row["mean_throughput_l4"] / 100)
    # BDP in segments on the wire: 100 Mb/s x min RTT (the handshake's) / (1448 + 52) B.
    bdp = 100e6 * result.flows["min_rtt_ns"][0] / 1e9 / 8 / 1500
    assert row["mean_utilization_bdp_l4"] == pytest.approx(10 / bdp, rel=1e-3)
    assert net.row(0, named=True)["mean_agg_utilization_bw_l4"] == pytest.approx(row["mean_utilization_bw_l4"])
    btl = links.filter(pl.col("bottleneck")).row(0, named=True)
    assert btl["name"] == "ab_forward"


def test_link_metrics_of_a_stop_and_wait_flow() -> None:
    # One segment at a time on 10 Mb/s, 10 ms: a cycle is 1.2 ms (data) + 0.0416 ms (ACK) + 20 ms.
    _, links, _, result = tables(windows_scenario([1], rate="10Mbps"))
    fwd = links.filter(pl.col("name") == "ab_forward").row(0, named=True)
    cycle = 1.2 + 0.0416 + 20
    assert fwd["utilization_l1"] == pytest.approx(1.2 / cycle, rel=0.02)
    assert fwd["mean_sending_rate_l1"] == pytest.approx(1500 * 8 / cycle / 1e3, rel=0.02)
    channel = result.channels.row(0, named=True)
    assert fwd["mean_sending_rate_l1"] == pytest.approx(channel["sent_bytes"] * 8 / 2 / 1e6)
    # Nothing queues, nothing drops.
    assert (fwd["mean_qdisc_length_l2"], fwd["mean_qdisc_delay_l2"], fwd["total_qdisc_drops_l2"]) == (0, 0, 0)


def test_queueing_shows_in_link_and_flow_delay_metrics() -> None:
    # A window of 40 segments sent at once into 10 Mb/s: the queue holds them, the flow's srtt
    # exceeds its min RTT, and the link's sojourn and the flow's one-way delay include the wait.
    flows, links, _, _ = tables(windows_scenario([40], rate="10Mbps"))
    fwd = links.filter(pl.col("name") == "ab_forward").row(0, named=True)
    row = flows.row(0, named=True)
    assert fwd["mean_qdisc_length_l2"] > 1 and fwd["mean_qdisc_delay_l2"] > 1
    assert row["mean_est_qdelay_l4"] > 1
    assert row["mean_one_way_delay_l7"] > 10 + 1.2


def test_without_series_rates_come_from_counters_and_sampled_means_are_null() -> None:
    flows, _, net, result = tables(windows_scenario([10, 20], interval="off"))
    assert result.sample_interval_ns is None and result.flow_timeseries.height == 0
    row = flows.row(0, named=True)
    f = result.flows.row(0, named=True)
    assert row["mean_throughput_l4"] == pytest.approx(f["bytes_acked"] * 8 / 1.999 / 1e6)
    assert row["mean_one_way_delay_l7"] == pytest.approx(10.0)
    assert row["mean_srtt_l4"] is None and row["cov_throughput_l4"] is None
    assert net.row(0, named=True)["mean_jains_fairness_throughput_l4"] is None


def test_without_rate_samples_the_delivery_rate_falls_back_to_acknowledged_bytes() -> None:
    scenario = windows_scenario([10, 20])
    result, _ = runner.simulate(scenario)
    result = result.with_tables(flow_timeseries=result.flow_timeseries.drop("delivery_rate_bps"))
    flows = metrics.flow_metrics(run_data(scenario, result))
    assert flows["mean_delivery_rate_l4"].to_list() == flows["mean_throughput_l4"].to_list()
    assert all(source.endswith("(fallback)") for source in flows["delivery_rate_source"])


def test_delivery_rate_samples_are_used_when_the_engine_records_them() -> None:
    scenario = windows_scenario([10, 20])
    result, _ = runner.simulate(scenario)
    ts = result.flow_timeseries
    # Rate samples of 8 and 16 Mb/s at every sample, none (0) at the first.
    rates = (pl.when(pl.col("time_ns") == ts["time_ns"].min()).then(0)
             .when(pl.col("flow") == 0).then(8_000_000).otherwise(16_000_000).cast(pl.UInt64))
    result = result.with_tables(flow_timeseries=ts.with_columns(rates.alias("delivery_rate_bps")))
    flows = metrics.flow_metrics(run_data(scenario, result))
    assert flows["mean_delivery_rate_l4"].to_list() == pytest.approx([8.0, 16.0])
    assert flows["delivery_rate_source"].to_list() == ["rate samples", "rate samples"]


def test_tables_convert_to_pandas(two_windows) -> None:
    flows, links, net, _ = two_windows
    frame = flows.to_pandas()
    assert list(frame["name"]) == ["flow_0", "flow_1"]
    assert frame["mean_srtt_l4"].tolist() == [20.0, 20.0]
    assert links.to_pandas().shape[0] == links.height and net.to_pandas().shape == (1, 10)


def test_derive_s_arrow_tables_hold_the_catalogue_s_polars_tables() -> None:
    # `bufferlab run` derives from the engine's Arrow tables without polars; the catalogue's
    # polars tables of the same run (from polars frames of those tables) hold the same values.
    from bufferlab.analysis.derive import derive
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate

    scenario = windows_scenario([4, 9, 30], rate="20Mbps", interval="10ms")
    planned = plan(scenario)
    raw = simulate(planned)
    derived = derive(planned, raw)
    run = run_data(scenario, raw.result)  # from a polars DataFrame of the series
    expected = {"flow_metrics": metrics.flow_metrics(run), "link_metrics": metrics.link_metrics(run),
                "network_metrics": metrics.network_metrics(run)}
    for name, frame in expected.items():
        arrow = pl.DataFrame(derived.metric_tables[name])
        assert arrow.schema == frame.schema and arrow.equals(frame, null_equal=True), name


def test_increments_of_rows_are_each_row_s_own() -> None:
    rng = np.random.default_rng(5)
    rows = np.cumsum(rng.exponential(1e6, (6, 50)), axis=1)
    together = metrics._increments(rows)
    for row, want in zip(rows, together):
        assert metrics._increments(row).tobytes() == want.tobytes()


def test_flow_metrics_of_all_flows_at_once_equal_each_flow_alone() -> None:
    # Flows that start at different samples, one that completes, CUBIC beside NewReno, a flow
    # without time series: the flows' series are computed as one block, and each flow's row must
    # be what a run holding that flow's series alone gives.
    scenario = Scenario.from_toml_text("""
duration = "2s"
sample_interval = "10ms"
[topology]
kind = "dumbbell"
bottleneck_rate = "20Mbps"
queue = "30p"
rtt = "40ms"
[[flows]]
cca = "cubic"
[[flows]]
start = "305ms"
rtt = "90ms"
[[flows]]
start = "120ms"
traffic = { kind = "finite", bytes = "300kB" }
[[flows]]
start = "1s"
[record]
flows = ["flow_0", "flow_1", "flow_2"]
""")
    result, _ = runner.simulate(scenario)
    together = metrics.flow_metric_rows(run_data(scenario, result))
    series = result.flow_timeseries
    assert series["flow"].unique().sort().to_list() == [0, 1, 2]
    assert together[2]["flow_completion_time_l4"] < 1.5  # the finite flow completed
    resolved = scenario.resolve()
    for flow in range(4):
        alone = metrics.RunData.from_result(result.counters(), series.filter(pl.col("flow") == flow),
                                            resolved.engine, resolved.flow_endpoints, resolved.bottleneck)
        assert metrics.flow_metric_rows(alone)[flow] == together[flow]


def _channel(rng: np.random.Generator, **given: object) -> dict:
    record = {"name": "c_forward", "rate_bps": int(rng.integers(1, 10**11)), "shaping_rate_bps": None,
              "busy_ns": int(rng.integers(0, 10**10)), "queue_packet_ns": int(rng.integers(0, 10**13)),
              "sent_packets": int(rng.integers(0, 10**7)), "sojourn_sum_ns": int(rng.integers(0, 10**14))}
    record.update(given)
    return record


@pytest.mark.parametrize("end_ns", [10**10, 7, 0])
def test_channel_figures_of_all_channels_equal_the_summary_s_of_each_bit_for_bit(end_ns: int) -> None:
    rng = np.random.default_rng(15)
    channels = [_channel(rng) for _ in range(200)] + [
        _channel(rng, rate_bps=None), _channel(rng, sent_packets=0), _channel(rng, shaping_rate_bps=10**6),
        _channel(rng, rate_bps=None, shaping_rate_bps=3 * 10**5),
        # 128-bit counters beyond float64's exact integers are divided as Python ints.
        _channel(rng, queue_packet_ns=2**100 + 12345, sojourn_sum_ns=2**63 + 2**12 + 1, sent_packets=3)]
    figures = metrics.ChannelFigures.of(channels, end_ns)
    # The counters read in place from a table of the channels give the same figures.
    table = pl.DataFrame({name: [c[name] for c in channels] for name in ("busy_ns", "sent_packets", "sojourn_sum_ns")},
                         schema=dict.fromkeys(("busy_ns", "sent_packets", "sojourn_sum_ns"), pl.UInt64))
    assert metrics.ChannelFigures.of(channels, end_ns, table) == figures
    # Each channel's figures in Python's arithmetic, one operation after the other as the summary
    # defines them: the line rate or a shaper's token rate below it; busy / end × line / rate; the
    # queue integral over the run; sojourn per packet.
    rates = [min((r for r in (c["rate_bps"], c["shaping_rate_bps"]) if r is not None), default=None)
             for c in channels]
    assert figures.service_rate_bps == rates
    utilisation = [None if end_ns <= 0 or rate is None or c["rate_bps"] is None
                   else c["busy_ns"] / end_ns * c["rate_bps"] / rate for c, rate in zip(channels, rates)]
    mean_queue = [None if end_ns <= 0 else c["queue_packet_ns"] / end_ns for c in channels]
    mean_sojourn = [c["sojourn_sum_ns"] / c["sent_packets"] if c["sent_packets"] else None for c in channels]
    for name, expected in (("utilisation", utilisation), ("mean_queue_packets", mean_queue),
                           ("mean_sojourn_ns", mean_sojourn)):
        got = getattr(figures, name)
        assert [None if v is None else v.hex() for v in got] == [None if v is None else v.hex() for v in expected], name


def test_exact_quotients_are_python_s_true_division() -> None:
    numerators = [0, 1, 10**15, 2**53 + 1, 2**90 + 7, 3]
    denominators = [5, 3, 7, 3, 2**60 + 1, 0]
    quotients = metrics.exact_quotients(numerators, denominators)
    assert [q.hex() for q in quotients[:5]] == [(a / b).hex() for a, b in zip(numerators, denominators[:5])]
    assert math.isinf(quotients[5])


def _flow(rng: np.random.Generator, **given: object) -> dict:
    start = int(rng.integers(0, 10**9))
    record = {"name": "f", "start_ns": start, "completed_ns": start + int(rng.integers(1, 10**10)),
              "bytes_acked": int(rng.integers(0, 10**10)), "bytes_delivered": int(rng.integers(1, 10**10)),
              "payload_bytes_sent": int(rng.integers(0, 10**10)), "app_bytes_written": int(rng.integers(0, 10**10)),
              "segments_sent": int(rng.integers(1, 10**7)), "segments_retransmitted": int(rng.integers(0, 10**5)),
              "rtt_samples": int(rng.integers(1, 10**6)), "rtt_sum_ns": int(rng.integers(0, 10**15)),
              "recovery_episodes": int(rng.integers(0, 100)), "recovery_time_ns": int(rng.integers(0, 10**10)),
              "delivery_delay_byte_ns": int(rng.integers(0, 10**18)), "rtos": int(rng.integers(0, 9))}
    record.update(given)
    return record


def _one_flow(flow: dict, end_ns: int) -> dict:
    """The flow figures of one flow in Python's arithmetic, as the summary and the flow table
    define them (the metric catalogue, crates/bufferlab-core/src/metrics/catalogue.rs)."""
    until = flow["completed_ns"] if flow["completed_ns"] is not None else end_ns
    lifetime_ns = until - flow["start_ns"]
    lifetime_s = lifetime_ns / 1e9
    completed = flow["completed_ns"]

    def mbps(nbytes: int) -> float | None:
        return None if lifetime_s <= 0 else nbytes * 8 / lifetime_s / 1e6

    episodes = flow["recovery_episodes"]
    return {"goodput_bps": flow["bytes_delivered"] * 8 * 1e9 / lifetime_ns if lifetime_ns > 0 else None,
            "loss_rate": flow["segments_retransmitted"] / flow["segments_sent"] if flow["segments_sent"] else None,
            "mean_srtt_ns": flow["rtt_sum_ns"] / flow["rtt_samples"] if flow["rtt_samples"] else None,
            "completion_time_ns": None if completed is None else completed - flow["start_ns"],
            "throughput_l4": mbps(flow["bytes_acked"]), "throughput_l7": mbps(flow["bytes_delivered"]),
            "sending_rate_l4": mbps(flow["payload_bytes_sent"]), "sending_rate_l7": mbps(flow["app_bytes_written"]),
            "one_way_delay_ms": (flow["delivery_delay_byte_ns"] / flow["bytes_delivered"] / 1e6
                                 if flow["bytes_delivered"] else None),
            "recovery_time_ms": flow["recovery_time_ns"] / episodes / 1e6 if episodes else None,
            "lifetime_s": lifetime_s}


def test_flow_figures_of_all_flows_equal_each_flow_s_own_bit_for_bit() -> None:
    rng = np.random.default_rng(15)
    end_ns = 12 * 10**9
    flows = [_flow(rng) for _ in range(200)] + [
        _flow(rng, completed_ns=None), _flow(rng, completed_ns=None, start_ns=end_ns),  # no lifetime left
        _flow(rng, segments_sent=0, segments_retransmitted=0), _flow(rng, rtt_samples=0, rtt_sum_ns=0),
        _flow(rng, bytes_delivered=0, delivery_delay_byte_ns=0), _flow(rng, recovery_episodes=0),
        # 128-bit delay integrals and counters beyond float64's exact integers
        _flow(rng, delivery_delay_byte_ns=2**90 + 3, rtt_sum_ns=2**60 + 1, rtt_samples=7)]
    figures = metrics.FlowFigures.of(flows, end_ns)
    counters = ("start_ns", "bytes_acked", "bytes_delivered", "payload_bytes_sent", "app_bytes_written",
                "segments_sent", "segments_retransmitted", "rtt_samples", "rtt_sum_ns", "recovery_episodes",
                "recovery_time_ns", "rtos")
    table = pl.DataFrame({name: [f[name] for f in flows] for name in counters},
                         schema=dict.fromkeys(counters, pl.UInt64))
    assert metrics.FlowFigures.of(flows, end_ns, table) == figures
    expected = [_one_flow(f, end_ns) for f in flows]

    def bits(v: object) -> object:
        return v.hex() if isinstance(v, float) else v

    for name in expected[0]:
        assert [bits(v) for v in getattr(figures, name)] == [bits(e[name]) for e in expected], name


def test_a_summary_s_flow_figures_are_each_flow_s_own_in_display_units_bit_for_bit() -> None:
    # The summary takes its figures from bufferlab-core (`FlowFigures`: derive's, or its own of
    # the counters for a stored run) and shows them in Mb/s, ms and s: the numbers the summary
    # printed when it computed them in Python, one flow at a time.
    from bufferlab.analysis import summary

    rng = np.random.default_rng(16)
    end_ns = 12 * 10**9
    flows = [_flow(rng) for _ in range(100)] + [
        _flow(rng, completed_ns=None), _flow(rng, completed_ns=None, start_ns=end_ns),
        _flow(rng, segments_sent=0, segments_retransmitted=0), _flow(rng, rtt_samples=0, rtt_sum_ns=0),
        _flow(rng, rtt_sum_ns=2**60 + 1, rtt_samples=7, segments_retransmitted=2**54 + 1, segments_sent=2**55)]
    counters = {"engine_version": "v", "end_ns": end_ns, "events": 1, "flows": flows, "channels": []}
    endpoints = [(f"s{i}", f"d{i}") for i in range(len(flows))]

    def summarised(**figures: object) -> list[list[object]]:
        made = summary.summarise(counters, endpoints=endpoints, bottleneck=None, run_id="r", from_store=False,
                                 seed=1, wall_time_s=0.5, **figures)  # type: ignore[arg-type]
        return [[v.hex() if isinstance(v, float) else v for v in vars(f).values()] for f in made.flows]

    def scaled(value: float | None, unit: float) -> float | None:
        return None if value is None else value / unit

    expected = []
    for (src, dst), f in zip(endpoints, flows):
        one = _one_flow(f, end_ns)
        made = summary.FlowSummary(
            name=f["name"], src=src, dst=dst, goodput_mbps=scaled(one["goodput_bps"], 1e6),
            loss_rate=one["loss_rate"], retransmissions=f["segments_retransmitted"], rtos=f["rtos"],
            mean_srtt_ms=scaled(one["mean_srtt_ns"], 1e6), completion_time_s=scaled(one["completion_time_ns"], 1e9),
            bytes_delivered=f["bytes_delivered"])
        expected.append([v.hex() if isinstance(v, float) else v for v in vars(made).values()])
    assert summarised() == expected
    assert summarised(flow_figures=metrics.FlowFigures.of(flows, end_ns)) == expected


def test_figures_of_flows_and_channels_in_one_call_are_those_of_each_table_alone() -> None:
    from bufferlab.analysis import summary
    from bufferlab.analysis.figures import figures_of

    rng = np.random.default_rng(17)
    end_ns = 9 * 10**9
    flows = [_flow(rng) for _ in range(50)] + [_flow(rng, completed_ns=None), _flow(rng, rtt_samples=0, rtt_sum_ns=0)]
    channels = [_channel(rng) for _ in range(20)] + [_channel(rng, rate_bps=None), _channel(rng, sent_packets=0)]
    flow_figures, channel_figures = figures_of(flows, channels, end_ns)
    assert flow_figures == metrics.FlowFigures.of(flows, end_ns)
    assert channel_figures == metrics.ChannelFigures.of(channels, end_ns)
    # A stored run's summary takes its flows' and its bottleneck's figures in that one call: the
    # same summary as from the figures of every flow and channel (a fresh run's, derive's).
    for channel in channels:
        channel.update(name="c", dropped_queue_packets=3, dropped_loss_packets=1, max_queue_packets=9)
    counters = {"engine_version": "v", "end_ns": end_ns, "events": 1, "flows": flows, "channels": channels}
    common = {"endpoints": [("s", "d")] * len(flows), "run_id": "r", "from_store": True, "seed": 1,
              "wall_time_s": 0.5, "queues": ["droptail"] * len(channels)}
    for bottleneck in (None, 4, 20):
        stored = summary.summarise(counters, bottleneck=bottleneck, **common)  # type: ignore[arg-type]
        fresh = summary.summarise(counters, bottleneck=bottleneck, flow_figures=flow_figures,  # type: ignore[arg-type]
                                  channel_figures=channel_figures, **common)
        assert stored.bottleneck is not None and stored == fresh
