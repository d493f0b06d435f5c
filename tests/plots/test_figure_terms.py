"""Figures in the papers' terms, read back from the matplotlib `Figure`s: legends and
titles say B_s / B_l, HSTCP, "buffer = 18 packets", never a spec path or a run id alone; loss in %;
counts labelled; bands of bounded metrics within their bounds; panels of different scales on their
own y axes, scaled to the steady state; plain log ticks; and no empty axes: a metric without data
is one error line, exit 2, no file."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import LOSSY_LINE, SMALL_DUMBBELL, bufferlab
from bufferlab import plots, runner
from bufferlab.plots import common
from bufferlab.spec import Scenario

pytestmark = pytest.mark.engine

# A legend entry or title that is a spec path ("topology.queue=18p", "links[0].queue_forward")
# or a bare run id.
SPEC_PATH = re.compile(r"\w+(\[\d+\])?\.\w+\s*=|^run [0-9a-f]{8}$")


def _texts(fig) -> list[str]:
    """Every title, legend entry and legend title of a figure."""
    texts = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    for ax in fig.axes:
        texts += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        if ax.get_legend() is not None:
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    for legend in fig.legends:
        texts += [t.get_text() for t in legend.get_texts()]
    return [t for t in texts if t]


@pytest.fixture(scope="module")
def queues(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """SMALL_DUMBBELL with a 4-packet and a 40-packet queue, and a capture of the bottleneck."""
    db = tmp_path_factory.mktemp("terms") / "terms.duckdb"
    text = SMALL_DUMBBELL + '    [record]\n    captures = [{ link = "btl", direction = "forward" }]\n'
    runs = {queue: runner.run(Scenario.from_toml_text(textwrap.dedent(text.replace('queue = "20p"',
                                                                                  f'queue = "{queue}"'))), db).run_id
            for queue in ("4p", "40p")}
    return {"db": db, **runs}


# --- the papers' terms --------------------------------------------------------------------------

def test_controllers_and_buffers_are_named_as_the_papers_write_them() -> None:
    assert [common.controller_name(c) for c in ("highspeed", "cubic", "newreno", "reno", "bbr")] == [
        "HSTCP", "CUBIC", "NewReno", "Reno", "BBR"]
    assert common.spec_term("flow_defaults.cca", "highspeed") == "HSTCP"
    assert common.spec_term("links[0].queue_forward.limit", "1310720B") == "buffer = 1.31 MB"
    assert common.spec_term("topology.queue", "18p") == "buffer = 18 packets"
    info = common.RunInfo(run_id="ab" * 8, name="shaped", seed=1, end_ns=0,
                          user_spec={"flow_defaults": {"cca": "highspeed"}, "topology": {"queue": "18p"}})
    described = common.describe([info])
    assert "HSTCP" in described and "buffer 18 packets" in described and "highspeed" not in described


def test_cdf_legends_titles_and_counts_are_in_words_and_loss_in_percent(queues) -> None:
    fig = plots.cdf(queues["db"], [queues["4p"], queues["40p"]], split="1kB", skip_empty=True)
    texts = _texts(fig)
    assert not [t for t in texts if SPEC_PATH.search(t)], texts
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["buffer = 4 packets", "buffer = 40 packets"]
    throughput, loss = fig.axes[:2]
    # Each panel counts its flows per run, labelled: the two greedy flows are large flows.
    assert [t.get_text() for t in throughput.get_legend().get_texts()] == ["n = 2", "n = 2"]
    assert loss.get_xlabel() == "loss (% of segments retransmitted)"
    with plots.common.opened(queues["db"]) as res:
        seen = res.monitor(queues["4p"], link="btl", split_bytes=1000)
    np.testing.assert_allclose(loss.get_lines()[0].get_xdata(), np.sort(seen["loss"].to_numpy()) * 100)
    assert 0 < loss.get_lines()[0].get_xdata().max() <= 100  # the 4-packet queue drops


def test_cdf_of_one_run_counts_its_flows_in_the_panel_title(queues) -> None:
    fig = plots.cdf(queues["db"], [queues["4p"]], split="1kB", skip_empty=True)
    assert fig.axes[0].get_title(loc="left") == "large flows (> 1 kB), n = 2"


def test_a_size_class_without_flows_is_refused_or_left_out_never_an_empty_panel(queues) -> None:
    with pytest.raises(common.PlotError, match=r"^--split: no small flows \(≤ 1 kB\) in any of the runs"):
        plots.cdf(queues["db"], [queues["4p"], queues["40p"]], split="1kB")
    fig = plots.cdf(queues["db"], [queues["4p"], queues["40p"]], split="1kB", skip_empty=True)
    assert len(fig.axes) == 2 and all(ax.get_lines() for ax in fig.axes)


def test_cwnd_columns_take_the_papers_names_and_their_own_y_axes(queues) -> None:
    fig = plots.cwnd(queues["db"], [queues["4p"], queues["40p"]],
                     labels=["under-buffered (0.1 BDP)", "over-buffered (1 BDP)"], heading="Seed 004, HSTCP")
    axes = np.array(fig.axes[:4]).reshape(2, 2)
    assert [axes[0, c].get_title() for c in (0, 1)] == ["under-buffered (0.1 BDP)", "over-buffered (1 BDP)"]
    assert fig._suptitle.get_text() == "Seed 004, HSTCP"
    # Queues of 4 and 40 packets on one scale would flatten the small one: each panel its own axis.
    assert not axes[1, 0].get_shared_y_axes().joined(axes[1, 0], axes[1, 1])
    assert axes[1, 0].get_ylim()[1] < 10 < axes[1, 1].get_ylim()[1]


def test_a_start_up_spike_does_not_set_the_scale_of_a_steady_state_plot() -> None:
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    t = np.linspace(0, 10, 101)
    y = 5 + 4 * np.sin(t)
    y[2] = 100.0  # slow start's overshoot at 0.2 s
    ax.plot(t, y)
    peak = common.steady_state_ylim(ax, [(t, y)], startup_end_s=1.0, unit="kB")
    assert peak == 100.0
    assert ax.get_ylim() == pytest.approx((0.0, 9.0 * 1.08), rel=1e-3)
    assert [text.get_text() for text in ax.texts] == ["start-up peak of 100 kB clipped"]
    calm = Figure().subplots()
    calm.plot(t, 5 + 4 * np.sin(t))
    before = calm.get_ylim()
    assert common.steady_state_ylim(calm, [(t, 5 + 4 * np.sin(t))], startup_end_s=1.0, unit="kB") is None
    assert calm.get_ylim() == before and not calm.texts


def test_bands_of_bounded_metrics_stay_within_their_bounds() -> None:
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    x = np.array([1.0, 2.0, 3.0])
    common.bounded_band(ax, x, np.array([-5.0, 40.0, 90.0]), np.array([20.0, 80.0, 130.0]),
                        common.metric_axis("utilization_l1").bounds)
    y = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert y.min() == 0.0 and y.max() == 100.0
    assert common.metric_axis("loss_rate_l4") == common.MetricAxis("loss rate (%)", 100.0, (0.0, 100.0))
    assert common.metric_axis("mean_jains_fairness_throughput_l4").bounds == (0.0, 1.0)
    assert common.metric_axis("mean_qdisc_length_l2").bounds[0] == 0.0


def test_sweep_of_loss_is_in_percent_with_its_band_inside_0_to_100(tmp_path: Path) -> None:
    db = tmp_path / "loss.duckdb"
    runs = [runner.run(Scenario.from_toml_text(textwrap.dedent(LOSSY_LINE.format(seed=seed))), db).run_id
            for seed in (1, 2, 3)]
    fig = plots.sweep(db, runs, x="links[1].queue", metric="loss_rate_l4")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "loss rate (%)"
    with plots.common.opened(db) as res:
        losses = [res.flow_metrics.filter(pl.col("run_id") == r)["loss_rate_l4"].mean() for r in runs]
    measured = [loss for loss in losses if loss is not None]  # a seed without a loss episode has none
    assert ax.get_lines()[0].get_ydata()[0] == pytest.approx(np.mean(measured) * 100, rel=1e-9)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert 0.0 <= band.min() and band.max() <= 100.0


def test_log_axes_are_labelled_with_plain_numbers() -> None:
    from matplotlib.figure import Figure

    fig = Figure()
    swept, wide = fig.subplots(1, 2)
    swept.plot([0.25, 1.0, 2.0], [1, 2, 3])
    common.plain_log_ticks(swept, ticks=[0.25, 1.0, 2.0])
    wide.plot([1.0, 1000.0], [1, 2])
    common.plain_log_ticks(wide)
    fig.canvas.draw()
    assert [t.get_text() for t in swept.get_xticklabels()] == ["0.25", "1", "2"]
    labels = [t.get_text() for t in wide.get_xticklabels() if 1 <= t.get_position()[0] <= 1000]
    assert labels[:4] == ["1", "2", "5", "10"] and "1000" in labels
    assert not swept.get_xticklabels(minor=True) or not any(t.get_text() for t in swept.get_xticklabels(minor=True))


# --- no empty axes --------------------------------------------------------------------------------

def test_a_time_plot_without_samples_in_its_window_exits_2_with_one_line_and_no_file(queues, tmp_path: Path) -> None:
    run = queues["4p"]
    for kind, quantity in (("timeseries", "cwnd"), ("cwnd", "cwnd")):
        out = tmp_path / f"{kind}.png"
        result = bufferlab("plot", kind, run[:8], "--db", str(queues["db"]), "-o", str(out), "--from", "5s")
        assert result.returncode == 2 and not out.exists()
        assert result.stderr == (f"error: {quantity}: run {run[:12]} has no {quantity} sample between 5 s and 1 s "
                                 "(it lasted 1 s)\n")


# --- the reproductions --------------------------------------------------------------------------

def test_dhamdhere2006_figures_say_b_s_and_b_l(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bufferlab.experiments import dhamdhere2006
    from bufferlab.store.reader import load
    from bufferlab.study.execute import run_sweep
    from bufferlab.study.executors import SerialExecutor

    monkeypatch.setattr(dhamdhere2006, "scale", lambda quick: {"duration": "3s", "jitter": "1s"})
    db = tmp_path / "seed000.duckdb"
    studies = dhamdhere2006.REPRODUCTION.study_names(True)
    for part, sweep in dhamdhere2006.REPRODUCTION.sweeps(True).items():
        sweep.name = studies[part]
        run_sweep(sweep, db, SerialExecutor())
    figures = dhamdhere2006.REPRODUCTION.draw(load(db), studies)
    for fig in figures.values():
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["B_s = 18 packets (Stanford)",
                                                                      "B_l = 500 packets (BDP)"]
        texts = _texts(fig)
        assert not [t for t in texts if SPEC_PATH.search(t)], texts
        assert "B_s against B_l" in fig._suptitle.get_text()
        assert all(ax.get_lines() for ax in fig.axes)  # no empty panel
