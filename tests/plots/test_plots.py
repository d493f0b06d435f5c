"""Figures (`bufferlab.plots`): what each figure draws is what the store holds, read back from the
matplotlib artists; every figure writes PDF, SVG and PNG; legends name runs by what differs."""

from __future__ import annotations

import struct
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import bufferlab
from bufferlab import plots, runner
from bufferlab.plots import common
from bufferlab.spec import Scenario

pytestmark = pytest.mark.engine

# Two greedy flows and two short transfers (small flows for seed 000's split) on a 10 Mb/s
# dumbbell with a capture of the bottleneck; the queue is the knob the runs differ in.
MIXED = """
    name = "mixed"
    seed = 5
    duration = "2s"

    [topology]
    kind = "dumbbell"
    bottleneck_rate = "10Mbps"
    bottleneck_delay = "5ms"
    queue = "{queue}"
    rtt = "{rtt}"

    [[flows]]
    name = "bulk_a"
    [[flows]]
    name = "bulk_b"
    rtt = "60ms"
    [[flows]]
    name = "short_a"
    traffic = {{ kind = "finite", bytes = "30kB" }}
    start = "0.5s"
    [[flows]]
    name = "short_b"
    traffic = {{ kind = "finite", bytes = "20kB" }}
    start = "1s"

    [record]
    interval = "50ms"
    captures = [{{ link = "btl", direction = "forward" }}]
"""


def _store(db: Path, text: str) -> str:
    return runner.run(Scenario.from_toml_text(textwrap.dedent(text)), db).run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One store: the mixed dumbbell with a small and a large queue, and a run without a capture
    or series."""
    db = tmp_path_factory.mktemp("plots") / "plots.duckdb"
    small = _store(db, MIXED.format(queue="8p", rtt="20ms"))
    large = _store(db, MIXED.format(queue="100p", rtt="20ms"))
    bare = _store(db, MIXED.format(queue="8p", rtt="20ms").replace("[record]", "[record]\nflows = \"none\"\n"
                                                                                "links = \"none\"")
                  .replace('captures = [{ link = "btl", direction = "forward" }]', "captures = []"))
    return {"db": db, "small": small, "large": large, "bare": bare}


def _panel_lines(ax) -> dict[str, np.ndarray]:
    return {line.get_label().lstrip("_"): line.get_xydata() for line in ax.get_lines()}


def _stored_flow_columns(db: Path, run_id: str, name: str) -> dict[str, np.ndarray]:
    with bufferlab.load(db) as res:
        frame = res.timeseries(run_id, flows=[name])
    return {c: frame[c].to_numpy() for c in frame.columns if c not in ("name", "run_id")}


# --- timeseries -----------------------------------------------------------------------------------

def test_timeseries_draws_the_stored_samples_and_rates_from_the_cumulative_series(store) -> None:
    db, run_id = store["db"], store["small"]
    fig = plots.timeseries(db, run_id, quantities=["cwnd", "srtt", "throughput", "queue", "sojourn"])
    cwnd, srtt, throughput, queue, sojourn = fig.axes[:5]
    assert [ax.get_ylabel() for ax in fig.axes[:5]] == ["cwnd (segments)", "sRTT (ms)", "throughput (Mb/s)",
                                                        "queue (packets)", "sojourn (ms)"]
    for name in ("bulk_a", "bulk_b", "short_a", "short_b"):
        s = _stored_flow_columns(db, run_id, name)
        t = s["time_ns"] / 1e9
        np.testing.assert_array_equal(_panel_lines(cwnd)[name], np.column_stack([t, s["cwnd_bytes"] / 1448]))
        expected_srtt = np.where(s["srtt_ns"] > 0, s["srtt_ns"] / 1e6, np.nan)
        np.testing.assert_array_equal(_panel_lines(srtt)[name][:, 1], expected_srtt)
        # Mb/s in each 50 ms interval = bytes newly acknowledged x 8 / 0.05 s.
        acked = np.diff(s["acked_bytes"].astype(float), prepend=0.0)
        np.testing.assert_allclose(_panel_lines(throughput)[name][:, 1], acked * 8 / 0.05 / 1e6, rtol=1e-12)
    with bufferlab.load(db) as res:
        link = res.timeseries(run_id, kind="channel", names=["btl_forward"])
    np.testing.assert_array_equal(_panel_lines(queue)["btl_forward"],
                                  np.column_stack([link["time_ns"].to_numpy() / 1e9, link["queue_packets"].to_numpy()]))
    sent = np.diff(link["sent_packets"].to_numpy().astype(float), prepend=0.0)
    waited = np.diff(link["sojourn_ns"].to_numpy().astype(float), prepend=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_allclose(_panel_lines(sojourn)["btl_forward"][:, 1],
                                   np.where(sent > 0, waited / sent / 1e6, np.nan), rtol=1e-12)


def test_a_figure_of_a_store_path_opens_the_store_once_for_its_queries(store, store_opens) -> None:
    # A figure makes a dozen queries or more; they share one connection (`Results.one_connection`).
    plots.timeseries(store["db"], store["small"])
    assert len(store_opens) == 2  # the store's schema check, then the figure's queries


def test_timeseries_window_keeps_the_samples_inside_it_with_rates_of_the_whole_series(store) -> None:
    db, run_id = store["db"], store["small"]
    full = plots.timeseries(db, run_id, quantities=["throughput"], flows=["bulk_a"])
    cut = plots.timeseries(db, run_id, quantities=["throughput"], flows=["bulk_a"], start="0.5s", end="1000ms")
    whole, window = _panel_lines(full.axes[0])["bulk_a"], _panel_lines(cut.axes[0])["bulk_a"]
    inside = (whole[:, 0] >= 0.5) & (whole[:, 0] <= 1.0)
    np.testing.assert_array_equal(window, whole[inside])
    assert window[0, 0] == 0.5 and window[-1, 0] == 1.0 and cut.axes[0].get_xlim() == (0.5, 1.0)


def test_timeseries_flows_by_pattern_and_a_missing_flow_names_the_recorded_ones(store) -> None:
    fig = plots.timeseries(store["db"], store["small"], quantities=["cwnd"], flows=["bulk_*"])
    assert sorted(_panel_lines(fig.axes[0])) == ["bulk_a", "bulk_b"]
    with pytest.raises(common.PlotError, match=r'--flows: .*no flow series "nope" \(recorded: bulk_a, bulk_b'):
        plots.timeseries(store["db"], store["small"], flows=["nope"])


def test_timeseries_of_a_run_without_series_says_what_to_record(store) -> None:
    with pytest.raises(common.PlotError, match=r"record.flows: .*stored no flow time series.*\[record\]"):
        plots.timeseries(store["db"], store["bare"])


# DCTCP flows through a marking PIE on a 10 Mb/s dumbbell: the AQM's probability and delay estimate,
# its CE marks and the flows' α all move.
AQM = """
    name = "aqm"
    seed = 2
    duration = "3s"

    [topology]
    kind = "dumbbell"
    flows = 2
    bottleneck_rate = "10Mbps"
    bottleneck_delay = "10ms"
    queue = { kind = "pie", limit = "200p", ecn = true, target = "5ms" }
    rtt = "40ms"

    [flow_defaults]
    cca = "dctcp"
    tcp = { ecn = "dctcp" }

    [record]
    interval = "50ms"
"""


def test_timeseries_draws_the_aqms_state_its_marks_and_dctcps_alpha_as_stored(store, tmp_path: Path) -> None:
    db = tmp_path / "aqm.duckdb"
    run_id = _store(db, AQM)
    fig = plots.timeseries(db, run_id, quantities=["aqm_probability", "aqm_signal", "ce_marks", "ecn_alpha"])
    probability, signal, marks, alpha = fig.axes[:4]
    with bufferlab.load(db) as res:
        link = res.timeseries(run_id, kind="channel", names=["btl_forward"])
    t = link["time_ns"].to_numpy() / 1e9
    np.testing.assert_array_equal(_panel_lines(probability)["btl_forward"],
                                  np.column_stack([t, link["aqm_probability"].to_numpy()]))
    # PIE's signal is its delay estimate, stored in ns and drawn in ms.
    np.testing.assert_allclose(_panel_lines(signal)["btl_forward"][:, 1], link["aqm_signal"].to_numpy() / 1e6)
    per_interval = np.diff(link["ce_marks"].to_numpy().astype(float), prepend=0.0)
    np.testing.assert_array_equal(_panel_lines(marks)["btl_forward"][:, 1], per_interval)
    assert per_interval.sum() > 0 and link["aqm_probability"].max() > 0
    flow = _stored_flow_columns(db, run_id, "flow_0")
    np.testing.assert_array_equal(_panel_lines(alpha)["flow_0"][:, 1], flow["ecn_alpha"])
    assert 0 < np.nanmax(flow["ecn_alpha"]) <= 1
    # A FIFO keeps no AQM state: the panel would be empty, and the figure says so.
    with pytest.raises(common.PlotError, match=r"aqm_probability: .*no aqm_probability sample"):
        plots.timeseries(store["db"], store["small"], quantities=["aqm_probability"])


# --- shared pieces --------------------------------------------------------------------------------

def test_decimation_keeps_every_bucket_extreme_and_leaves_short_lines_alone() -> None:
    x = np.arange(100_000, dtype=float)
    y = np.sin(x / 700.0) + (x == 51_234) * 5.0  # one spike that must survive
    dx, dy = common.decimate(x, y, max_points=1000)
    assert len(dx) <= 1000 and np.all(np.diff(dx) > 0)
    assert dy.max() == y.max() and dy.min() == y.min() and 51_234.0 in dx
    short = np.arange(10.0)
    assert common.decimate(short, short)[0] is short


def test_run_labels_name_runs_by_the_keys_that_differ() -> None:
    def info(seed: int, queue: str, run_id: str = "ab") -> common.RunInfo:
        return common.RunInfo(run_id=run_id * 8, name="tree", seed=seed, end_ns=0,
                              user_spec={"seed": seed, "topology": {"kind": "tree", "queue": queue}})

    assert common.run_labels([info(1, "18p"), info(1, "500p")]) == ["buffer = 18 packets", "buffer = 500 packets"]
    assert common.run_labels([info(1, "18p"), info(2, "18p")]) == ["seed 1", "seed 2"]
    # Identical specs and seeds: the scenario's name with the run id, never the run id alone.
    assert common.run_labels([info(1, "18p", "aa"), info(1, "18p", "bb")]) == ["tree, run aaaaaaaa",
                                                                               "tree, run bbbbbbbb"]
    assert common.flatten({"flows": [{"rtt": "10ms"}, {"rtt": "20ms"}]}) == {"flows[0].rtt": "10ms",
                                                                           "flows[1].rtt": "20ms"}


def test_time_window_takes_units_and_refuses_an_empty_window() -> None:
    assert common.time_window("5s", "5500ms") == common.TimeWindow(5_000_000_000, 5_500_000_000)
    with pytest.raises(common.PlotError, match="--to: must be after --from"):
        common.time_window("2s", "1s")
    with pytest.raises(common.PlotError, match="--from: missing time unit"):
        common.time_window("5", None)


# --- files ----------------------------------------------------------------------------------------

def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("suffix, magic", [(".pdf", b"%PDF-"), (".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_timeseries_writes_each_format(store, tmp_path: Path, suffix: str, magic: bytes) -> None:
    fig = plots.timeseries(store["db"], store["small"], size=(6.0, 4.0))
    path = plots.save(fig, tmp_path / f"ts{suffix}", dpi=100)
    assert path.read_bytes().startswith(magic) and path.stat().st_size > 1000
    if suffix == ".png":
        assert _png_size(path) == (600, 400)


def test_saving_twice_gives_the_same_bytes(store, tmp_path: Path) -> None:
    for suffix in (".pdf", ".svg"):
        a = plots.save(plots.timeseries(store["db"], store["small"]), tmp_path / f"a{suffix}")
        b = plots.save(plots.timeseries(store["db"], store["small"]), tmp_path / f"b{suffix}")
        assert a.read_bytes() == b.read_bytes()


# --- cwnd (seed 004) ------------------------------------------------------------------------------

def test_cwnd_draws_each_runs_windows_above_its_bottleneck_queue_titled_by_difference(store) -> None:
    db = store["db"]
    fig = plots.cwnd(db, [store["small"], store["large"]], flows=["bulk_a", "bulk_b"])
    axes = np.array(fig.axes[:4]).reshape(2, 2)
    assert [axes[0, c].get_title() for c in (0, 1)] == ["buffer = 8 packets", "buffer = 100 packets"]
    assert axes[0, 0].get_ylabel() == "cwnd (kB)" and axes[1, 0].get_ylabel() == "queue (packets)"
    for col, run_id in enumerate((store["small"], store["large"])):
        for name in ("bulk_a", "bulk_b"):
            s = _stored_flow_columns(db, run_id, name)
            np.testing.assert_array_equal(_panel_lines(axes[0, col])[name],
                                          np.column_stack([s["time_ns"] / 1e9, s["cwnd_bytes"] / 1e3]))
        with bufferlab.load(db) as res:
            queue = res.timeseries(run_id, kind="channel", names=["btl_forward"])["queue_packets"].to_numpy()
        np.testing.assert_array_equal(_panel_lines(axes[1, col])["btl_forward"][:, 1], queue)
    # The small queue never holds more than its 8 packets; the large one does.
    assert _panel_lines(axes[1, 0])["btl_forward"][:, 1].max() <= 8 < _panel_lines(axes[1, 1])["btl_forward"][:, 1].max()


# --- seed 001's four ------------------------------------------------------------------------------

def _markers(ax, marker: str) -> np.ndarray:
    return np.array([line.get_xydata()[0] for line in ax.get_lines() if line.get_marker() == marker])


def test_operating_point_time_series_are_in_flight_srtt_and_throughput(store) -> None:
    fig = plots.operating_point(store["db"], store["small"], flows=["bulk_a"])
    assert [ax.get_ylabel() for ax in fig.axes[:3]] == ["in flight (segments)", "sRTT (ms)", "throughput (Mb/s)"]
    s = _stored_flow_columns(store["db"], store["small"], "bulk_a")
    np.testing.assert_array_equal(_panel_lines(fig.axes[0])["bulk_a"][:, 1], s["in_flight_bytes"] / 1448)


def test_inflight_marks_each_flows_means_the_joint_point_and_the_optimum(store) -> None:
    db, run_id = store["db"], store["small"]
    fig = plots.inflight(db, [run_id])
    top, bottom = fig.axes[:2]
    with bufferlab.load(db) as res:
        flows = res.flow_metrics.filter(pl.col("run_id") == run_id).sort("flow")
        net = res.network_metrics.filter(pl.col("run_id") == run_id)
        min_rtt_ms = res.flows.filter(pl.col("run_id") == run_id)["min_rtt_ns"].min() / 1e6
    np.testing.assert_array_equal(_markers(top, "o"), flows.select("mean_in_flight_l4", "mean_throughput_l4").to_numpy())
    np.testing.assert_array_equal(_markers(bottom, "o"), flows.select("mean_in_flight_l4", "mean_srtt_l4").to_numpy())
    np.testing.assert_allclose(_markers(top, "D"), [[net["mean_agg_in_flight_l4"][0], net["mean_agg_throughput_l4"][0]]])
    assert _markers(bottom, "D")[0, 1] == pytest.approx(flows["mean_srtt_l4"].mean())
    # Kleinrock's point: 10 Mb/s of 1500-byte packets carry 1448-byte payloads; BDP = C x RTprop.
    bdp = 10e6 * min_rtt_ms / 1e3 / 8 / 1500
    np.testing.assert_allclose(_markers(top, "*"), [[bdp, 10 * 1448 / 1500]])
    np.testing.assert_allclose(_markers(bottom, "*"), [[bdp, min_rtt_ms]])


def test_ecdf_steps_through_each_flows_lifetime_samples_whose_means_are_the_metric_tables(store) -> None:
    db, run_id = store["db"], store["small"]
    fig = plots.ecdf(db, run_id)
    throughput, srtt = fig.axes[:2]
    with bufferlab.load(db) as res:
        flows = res.flow_metrics.filter(pl.col("run_id") == run_id).sort("flow")
    for row in flows.iter_rows(named=True):
        for ax, metric in ((throughput, "mean_throughput_l4"), (srtt, "mean_srtt_l4")):
            xy = _panel_lines(ax)[row["name"]]
            assert np.all(np.diff(xy[:, 0]) >= 0)
            np.testing.assert_allclose(xy[:, 1], np.arange(1, len(xy) + 1) / len(xy))
            assert xy[:, 0].mean() == pytest.approx(row[metric], rel=1e-12)
    # A 30 kB transfer lives for a few intervals only, not the whole 2 s run (about a third of it
    # here: its two timeouts on the 8-packet queue each wait SRTT + 200 ms, Linux's RTO).
    assert len(_panel_lines(throughput)["short_a"]) < len(_panel_lines(throughput)["bulk_a"]) / 2


def test_plane_puts_each_flow_at_its_mean_srtt_and_throughput_coloured_per_run(store) -> None:
    db = store["db"]
    fig = plots.plane(db, [store["small"], store["large"]])
    ax = fig.axes[0]
    with bufferlab.load(db) as res:
        both = pl.concat([res.flow_metrics.filter(pl.col("run_id") == r).sort("flow")
                          for r in (store["small"], store["large"])])
    np.testing.assert_array_equal(_markers(ax, "o"), both.select("mean_srtt_l4", "mean_throughput_l4").to_numpy())
    colours = [line.get_color() for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(set(colours[:4])) == 1 and len(set(colours[4:])) == 1 and colours[0] != colours[4]
    assert {"buffer = 8 packets", "buffer = 100 packets"} <= {t.get_text() for t in fig.legends[0].get_texts()}


# --- cdf (seed 000) -------------------------------------------------------------------------------

def test_cdf_steps_through_the_monitors_per_flow_throughput_and_loss_by_size_class(store) -> None:
    db, runs = store["db"], [store["small"], store["large"]]
    fig = plots.cdf(db, runs, split="25kB")
    axes = np.array(fig.axes[:4]).reshape(2, 2)
    with bufferlab.load(db) as res:
        for k, run_id in enumerate(runs):
            seen = res.monitor(run_id, link="btl", split_bytes=25_000)
            for row, size_class in enumerate(("large", "small")):
                for col, column in enumerate(("throughput_mbps", "loss")):
                    line = axes[row, col].get_lines()[k]
                    expected = np.sort(seen.filter(pl.col("size_class") == size_class)[column].to_numpy())
                    np.testing.assert_allclose(line.get_xdata(), expected * (100 if column == "loss" else 1))
                    np.testing.assert_allclose(line.get_ydata(), np.arange(1, len(expected) + 1) / len(expected))
    # The 20 kB transfer is the one small flow (wire bytes seen stay under 25 kB); the rest are large.
    assert axes[1, 0].get_title(loc="left") == "small flows (≤ 25 kB)"
    assert [t.get_text() for t in axes[1, 0].get_legend().get_texts()] == ["n = 1", "n = 1"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["buffer = 8 packets", "buffer = 100 packets"]


def test_cdf_from_the_flow_table_needs_no_capture(store) -> None:
    fig = plots.cdf(store["db"], [store["bare"]], source="flows", split="100KB")
    with bufferlab.load(store["db"]) as res:
        flows = res.flows.filter(pl.col("run_id") == store["bare"])
    large = flows.filter(pl.col("bytes_delivered") > 100_000)
    np.testing.assert_array_equal(fig.axes[0].get_lines()[0].get_xdata(), np.sort(large["goodput_bps"] / 1e6))
    np.testing.assert_allclose(fig.axes[3].get_lines()[0].get_xdata(),
                               np.sort(flows.filter(pl.col("bytes_delivered") <= 100_000)["loss_rate"]) * 100)


def test_cdf_of_a_run_without_a_capture_says_what_to_add(store) -> None:
    with pytest.raises(common.PlotError, match=r'record.captures: .*no capture of "btl_forward"; add captures = '
                                               r'\[\{ link = "btl", direction = "forward" \}\] to \[record\]'):
        plots.cdf(store["db"], [store["bare"]])


# --- sweep ----------------------------------------------------------------------------------------

def test_student_t_quantiles_are_the_tables_values() -> None:
    from bufferlab.analysis.aggregate import t_quantile

    # Two-sided 95 % critical values of Student's t (any statistics table).
    for dof, value in ((1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (9, 2.262), (30, 2.042)):
        assert t_quantile(dof) == pytest.approx(value, abs=5e-4)


def test_sweep_draws_the_mean_over_seeds_with_a_student_t_band_per_queue(tmp_path: Path) -> None:
    from conftest import LOSSY_LINE

    db = tmp_path / "sweep.duckdb"
    runs = {(queue, seed): _store(db, LOSSY_LINE.format(seed=seed).replace('queue = "50p"', f'queue = "{queue}"'))
            for queue in ("5p", "50p") for seed in (1, 2, 3)}
    fig = plots.sweep(db, list(runs.values()), x="links[1].queue", metric="mean_throughput_l4")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "buffer (packets)" and ax.get_ylabel() == "mean throughput (Mb/s)"
    with bufferlab.load(db) as res:
        per_run = {key: res.flow_metrics.filter(pl.col("run_id") == run_id)["mean_throughput_l4"].mean()
                   for key, run_id in runs.items()}
    line = ax.get_lines()[0].get_xydata()
    band = ax.collections[0].get_paths()[0].vertices
    for row, queue in zip(line, (5.0, 50.0)):
        values = np.array([per_run[(f"{int(queue)}p", seed)] for seed in (1, 2, 3)])
        half = 4.303 * values.std(ddof=1) / np.sqrt(3)
        assert row[0] == queue and row[1] == pytest.approx(values.mean(), rel=1e-12)
        at_x = band[np.isclose(band[:, 0], queue), 1]
        # A throughput is never negative: the band stops at 0 where the interval reaches below.
        assert at_x.min() == pytest.approx(max(0.0, values.mean() - half), rel=1e-3)
        assert at_x.max() == pytest.approx(values.mean() + half, rel=1e-3)
        assert half > 0  # random loss makes the seeds differ


def test_sweep_of_a_study_draws_its_stored_means_and_intervals(tmp_path: Path) -> None:
    import textwrap

    from conftest import LOSSY_LINE
    from bufferlab.study.execute import run_sweep
    from bufferlab.study.executors import SerialExecutor
    from bufferlab.study.sweep import Sweep

    db = tmp_path / "study.duckdb"
    base = Scenario.from_toml_text(textwrap.dedent(LOSSY_LINE.format(seed=1))).to_dict()
    sweep_spec = Sweep.from_dict({"name": "queues", "base": base, "seeds": 3,
                                  "axes": [{"key": "links[1].queue", "values": ["5p", "50p"]},
                                           {"key": "links[1].delay", "values": ["1ms", "5ms"]}]})
    assert run_sweep(sweep_spec, db, SerialExecutor()).simulated == 12
    fig = plots.sweep(db, ["queues"], metric="mean_throughput_l4")  # x and by: the study's axes
    ax = fig.axes[0]
    assert ax.get_xlabel() == "buffer (packets)"
    table = bufferlab.load(db).study("queues")
    lines = ax.get_lines()
    assert len(lines) == 2  # one per delay
    for line, delay in zip(lines, ("1ms", "5ms")):
        rows = table.filter(pl.col("links[1].delay") == delay).sort("point")
        assert line.get_xydata()[:, 1] == pytest.approx(rows["mean_throughput_l4"].to_numpy(), rel=1e-12)
    band = ax.collections[0].get_paths()[0].vertices
    first = table.filter(pl.col("links[1].delay") == "1ms").sort("point").row(0, named=True)
    at_x = band[np.isclose(band[:, 0], 5.0), 1]
    assert at_x.min() == pytest.approx(max(0.0, first["mean_throughput_l4_ci_low"]), rel=1e-9)
    assert at_x.max() == pytest.approx(first["mean_throughput_l4_ci_high"], rel=1e-9)


def test_sweep_of_a_key_no_run_has_names_the_keys_that_differ(store) -> None:
    with pytest.raises(common.PlotError, match=r'--x: .*no spec key "topology.buffer" \(keys that differ between '
                                               r"the runs: topology.queue\)"):
        plots.sweep(store["db"], [store["small"], store["large"]], x="topology.buffer", metric="mean_srtt_l4")


# --- every kind, every format ---------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(plots.KINDS))
def test_every_kind_writes_pdf_svg_and_png_of_the_requested_size(store, tmp_path: Path, kind: str) -> None:
    targets = [store["small"]] if kind in ("timeseries", "operating-point", "ecdf") else [store["small"],
                                                                                          store["large"]]
    options = {"flows": None, "links": None, "start": None, "end": None, "quantities": None, "source": "monitor",
               "link": None, "direction": "forward", "split": "25kB", "x": "topology.queue",
               "metric": "mean_srtt_l4", "by": None, "size": (5.0, 4.0)}
    fig = plots.KINDS[kind].draw(store["db"], targets, options)
    for suffix, magic in ((".pdf", b"%PDF-"), (".svg", b"<?xml"), (".png", b"\x89PNG")):
        path = plots.save(fig, tmp_path / f"{kind}{suffix}", dpi=120)
        assert path.read_bytes().startswith(magic) and path.stat().st_size > 2000
    assert _png_size(tmp_path / f"{kind}.png") == (600, 480)


def test_reader_gives_a_runs_user_spec_and_bottleneck(store) -> None:
    with bufferlab.load(store["db"]) as res:
        assert res.user_spec(store["large"])["topology"]["queue"] == "100p"
        assert res.bottleneck(store["large"]) == "btl_forward"
