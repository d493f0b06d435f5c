"""`bufferlab plot`: files of every format from the command line, and one-line errors (exit 2)
that name what to add to the spec and leave no file behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL_DUMBBELL, bufferlab

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A store with SMALL_DUMBBELL (series, no capture); returns (db, run id, a directory)."""
    root = tmp_path_factory.mktemp("plot_cli")
    spec = root / "small.toml"
    spec.write_text(SMALL_DUMBBELL.replace("\n    ", "\n"), encoding="utf-8")
    db = root / "store.duckdb"
    result = bufferlab("run", str(spec), "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    return db, json.loads(result.stdout)["run_id"], root


def test_plot_timeseries_writes_the_file_it_names(stored) -> None:
    db, run_id, root = stored
    out = root / "ts.png"
    result = bufferlab("plot", "timeseries", run_id[:8], "--db", str(db), "-o", str(out), "--flows", "flow_0",
                       "--from", "200ms", "--to", "0.8s", "--quantities", "cwnd,queue", "--size", "5x3", "--dpi", "80")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"timeseries -> {out}"
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, line", [
    (["timeseries", "{run}", "-o", "{root}/x.jpg"], 'error: --output: unknown format ".jpg" (known: .pdf, .svg, .png)'),
    (["nope", "{run}", "-o", "{root}/x.pdf"], 'error: KIND: unknown kind "nope"'),
    (["timeseries", "{run}", "-o", "{root}/x.pdf", "--from", "5"], 'error: --from: missing time unit in "5"'),
    (["timeseries", "{run}", "-o", "{root}/x.pdf", "--size", "big"], 'error: --size: "big" is not WIDTHxHEIGHT'),
    (["timeseries", "{run}", "-o", "{root}/x.pdf", "--quantities", "power"], 'error: --quantities: unknown quantity'),
    (["timeseries", "ffff", "-o", "{root}/x.pdf"], 'error: RUN: no run "ffff"'),
])
def test_plot_errors_are_one_line_exit_2_and_no_file(stored, args: list[str], line: str) -> None:
    db, run_id, root = stored
    argv = [a.format(run=run_id[:8], root=root) for a in args]
    result = bufferlab("plot", *argv, "--db", str(db))
    assert result.returncode == 2
    assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr
    assert not list(root.glob("x.*"))


def test_a_cdf_of_a_run_without_a_capture_exits_2_with_one_line_and_writes_nothing(stored) -> None:
    db, run_id, root = stored
    out = root / "cdf.pdf"
    result = bufferlab("plot", "cdf", run_id[:8], "--db", str(db), "-o", str(out))
    assert result.returncode == 2
    assert result.stderr == (f'error: record.captures: run {run_id[:12]} has no capture of "btl_forward"; add '
                             'captures = [{ link = "btl", direction = "forward" }] to [record] and run it again '
                             "(or plot --source flows)\n")
    assert not out.exists()


def test_a_time_plot_of_a_run_that_kept_no_series_says_so_in_one_line(stored) -> None:
    # `[record] store_series = false` stores the metrics only: figures of metrics still draw,
    # figures of series name the setting instead of asking to record what was recorded.
    db, _, root = stored
    result = bufferlab("run", str(root / "small.toml"), "--db", str(db), "--json", "--set", "record.store_series=false")
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["run_id"]
    for kind in ("timeseries", "cwnd", "operating-point"):
        out = root / f"bare-{kind}.png"
        failed = bufferlab("plot", kind, run_id[:8], "--db", str(db), "-o", str(out))
        assert failed.returncode == 2 and not out.exists()
        assert failed.stderr == (f"error: record.store_series: run {run_id[:12]} kept its time series out of the "
                                 "store ([record] store_series = false): only its metrics are stored; run it again "
                                 "without that setting to draw them\n")
    drawn = bufferlab("plot", "inflight", run_id[:8], "--db", str(db), "-o", str(root / "bare-inflight.png"))
    assert drawn.returncode == 0, drawn.stderr


def test_plot_delay_draws_the_bottleneck_s_sojourn_cdf_and_refuses_a_tcp_flow_in_one_line(stored) -> None:
    db, run_id, root = stored
    out = root / "delay.png"
    result = bufferlab("plot", "delay", run_id[:8], "--db", str(db), "-o", str(out), "--links", "btl,btl_backward")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"
    import matplotlib

    matplotlib.use("Agg", force=True)
    from bufferlab.plots import delay_cdf

    fig = delay_cdf(db, [run_id], links=["btl", "btl_backward"])
    (queues,) = fig.axes  # no datagram flow: no one-way delay panel
    lines = [line for line in queues.get_lines() if line.get_linestyle() == "-"]
    assert [line.get_label().split(":")[0] for line in lines] == ["btl", "btl_backward"]
    assert all(line.get_ydata()[-1] == 1.0 for line in lines) and queues.get_xscale() == "log"
    refused = root / "refused.png"
    result = bufferlab("plot", "delay", run_id[:8], "--db", str(db), "-o", str(refused), "--flows", "flow_0")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith('error: --flows: flow "flow_0" of run') and "not a datagram flow" in result.stderr
    assert not refused.exists()
