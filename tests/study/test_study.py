"""Studies: sweep specs, their execution on every executor, resumption, failures that stay
alone, a store many processes share, and confidence intervals over seeds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pytest

import bufferlab
from bufferlab.errors import SpecError
from bufferlab.study.execute import run_sweep
from bufferlab.study.executors import DaskExecutor, LocalPoolExecutor, SerialExecutor
from bufferlab.study.sweep import Sweep

from conftest import SMALL_DUMBBELL, bufferlab as run_cli
from sweep_helpers import BASE, QUEUE_SWEEP, stored, sweep_of

pytestmark = pytest.mark.engine

MSS = 1448


# --- the sweep spec ------------------------------------------------------------------------------

def test_axes_expand_to_the_product_first_axis_slowest(tmp_path: Path) -> None:
    sweep = Sweep.from_toml(sweep_of(tmp_path, """
        seeds = 2
        [[axes]]
        key = "topology.queue"
        values = ["5p", "10p"]
        [[axes]]
        key = "topology.flows"
        range = { start = 1, stop = 5, step = 2 }
    """))
    assert sweep.name == "sweep" and sweep.seeds == [3, 4]
    assert sweep.point_values() == [{"topology.queue": q, "topology.flows": n} for q in ("5p", "10p") for n in (1, 3, 5)]
    assert len(sweep.points()) == 12 and sweep.points()[1].seed == 4 and sweep.points()[1].index == 0


def test_log_ranges_units_and_zipped_axes(tmp_path: Path) -> None:
    sweep = Sweep.from_toml(sweep_of(tmp_path, """
        name = "mine"
        [[axes]]
        key = "topology.bottleneck_rate"
        log = { start = 1, stop = 100, num = 3 }
        unit = "Mbps"
        [[axes]]
        zip = [{ key = "topology.queue", values = ["18p", "500p"] }, { key = "meta.label", values = ["B_s", "B_l"] }]
    """))
    assert sweep.name == "mine" and sweep.axis_keys == ["topology.bottleneck_rate", "topology.queue", "meta.label"]
    values = sweep.point_values()
    assert [v["topology.bottleneck_rate"] for v in values[::2]] == ["1Mbps", "10Mbps", "100Mbps"]
    assert [(v["topology.queue"], v["meta.label"]) for v in values[:2]] == [("18p", "B_s"), ("500p", "B_l")]


@pytest.mark.parametrize(("body", "error"), [
    ('[[axes]]\nkey = "topology.queue"\n', "axes[0]: missing values"),
    ('[[axes]]\nkey = "topology.queue"\nvalues = []\n', "axes[0].values: expected a non-empty list"),
    ('[[axes]]\nkey = "topology.queue"\nrange = { start = 1, stop = 5, step = -1 }\n', "axes[0].range.step: "),
    ('[[axes]]\nkey = "seed"\nvalues = [1, 2]\n', "axes[0].key: the seed is not an axis"),
    ('[[axes]]\nzip = [{ key = "a", values = [1] }, { key = "b", values = [1, 2] }]\n', "axes[0].zip: zipped axes"),
    ("seeds = 0\n", "seeds: expected 1 to"),
    ("bogus = 1\n", "bogus: unknown key"),
    ('[set]\n"topology.queue" = "many"\n', "set.topology.queue: "),
])
def test_a_bad_sweep_spec_is_one_error_naming_the_field(tmp_path: Path, body: str, error: str) -> None:
    with pytest.raises(SpecError) as e:
        Sweep.from_toml(sweep_of(tmp_path, body))
    assert str(e.value).startswith(error), str(e.value)


def test_the_cli_reports_a_bad_sweep_with_exit_2_and_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    out = run_cli("sweep", str(sweep_of(tmp_path, "seeds = -1\n")), "--db", str(db))
    assert out.returncode == 2 and out.stderr.startswith("error: seeds: ") and len(out.stderr.splitlines()) == 1
    assert not db.exists()


# --- execution -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_serial_local_pool_and_dask_store_identical_results(tmp_path: Path) -> None:
    sweep = Sweep.from_toml(sweep_of(tmp_path, QUEUE_SWEEP))
    results = {}
    for name, executor in (("serial", SerialExecutor()), ("local", LocalPoolExecutor(2)),
                           ("dask", DaskExecutor("local", 2))):
        db = tmp_path / f"{name}.duckdb"
        report = run_sweep(sweep, db, executor)
        assert report.simulated == 4 and not report.failed, report.failed
        results[name] = stored(db)
    assert len(results["serial"]["runs"]) == 4
    assert results["local"] == results["serial"]
    assert results["dask"] == results["serial"]


@pytest.mark.slow
def test_a_local_dask_cluster_s_workers_run_without_the_statistical_profiler() -> None:
    # It samples every thread's stack every 10 ms: CPU for a profile that a sweep never shows.
    import dask

    executor = DaskExecutor("local", 2)
    try:
        assert set(executor.client.run(lambda: dask.config.get("distributed.worker.profile.enabled")).values()) \
            == {False}
    finally:
        executor.close()
    assert dask.config.get("distributed.worker.profile.enabled")  # this process's setting is its own


def test_a_local_dask_cluster_starts_while_another_holds_the_dashboard_port() -> None:
    # Two sweeps with `--dask local` at once: the second's scheduler must not want port 8787 (it
    # warned, an error under this suite's warning filter, and a user saw a warning for nothing).
    import socket
    import warnings

    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            held.bind(("", 8787))
        except OSError:
            pass  # already held by someone else: the case under test all the same
        held.listen()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            executor = DaskExecutor("local", 1)
        executor.close()


class _Finished:
    """A Dask future as `_fetch` sees it: finished, its result fetched by `result()`."""

    status = "finished"

    def __init__(self, fetch: Callable[[], object]) -> None:
        self.result = fetch


def _lost() -> object:
    raise OSError("Timed out trying to connect to tcp://10.0.0.7:40000")


def test_a_dask_run_is_fetched_as_it_finishes_and_a_failed_fetch_fails_it_with_one_line() -> None:
    # The done-callback fetches a finished run into this process for the writer; a fetch that
    # raises (its worker unreachable) fails that run with one line instead of losing it, which
    # would leave the sweep waiting for it forever.
    import queue

    from bufferlab.study.executors import Outcome, _fetch

    fetched: queue.Queue[tuple[object, Outcome]] = queue.Queue()
    finished, lost = _Finished(lambda: (3, "the run", None)), _Finished(_lost)
    _fetch(3, fetched, finished)
    _fetch(4, fetched, lost)
    assert fetched.get_nowait() == (finished, Outcome(3, "the run", None))  # type: ignore[arg-type]
    assert fetched.get_nowait() == (lost, Outcome(4, None, "dask: OSError: Timed out trying to connect to "
                                                           "tcp://10.0.0.7:40000"))


class _StartRecorded(SerialExecutor):
    """A serial executor that notes when it is told to start: (runs, whether the store existed)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.started: tuple[int, bool] | None = None

    def start(self, tasks: int) -> None:
        self.started = (tasks, self.db.exists())


def test_a_sweep_into_a_new_store_starts_its_workers_before_the_store_is_made(tmp_path: Path) -> None:
    # Their start (spawned interpreters importing the engine) overlaps the store's making; a sweep
    # with nothing left to run starts none.
    sweep = Sweep.from_toml(sweep_of(tmp_path, QUEUE_SWEEP))
    db = tmp_path / "s.duckdb"
    first, again = _StartRecorded(db), _StartRecorded(db)
    report = run_sweep(sweep, db, first)
    assert first.started == (report.simulated, False) and report.simulated > 1
    assert run_sweep(sweep, db, again).reused == report.simulated and again.started is None


def test_a_local_pool_told_to_start_starts_the_workers_its_runs_need_once() -> None:
    pool = LocalPoolExecutor(2)
    try:
        pool.start(1)
        assert len(pool._processes()) == 1
        pool.start(5)  # running already
        assert len(pool._processes()) == 1
    finally:
        pool.close()


def test_a_point_with_an_invalid_override_fails_alone(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, """
        name = "some_bad"
        [[axes]]
        key = "topology.queue"
        values = ["5p", "lots", "40p"]
    """)
    out = run_cli("sweep", str(path), "--db", str(db), "--workers", "2", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["simulated"] == 2 and len(report["failed"]) == 1
    assert report["failed"][0]["error"].startswith("topology.queue: ") and "\n" not in report["failed"][0]["error"]
    runs = bufferlab.load(db).study_runs("some_bad")
    assert runs["status"].to_list() == ["complete", "failed", "complete"]
    assert runs["topology.queue"].to_list() == ["5p", "lots", "40p"]
    assert runs.filter(pl.col("status") == "failed")["error"][0] == report["failed"][0]["error"]


def test_a_second_sweep_runs_only_what_is_missing(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, QUEUE_SWEEP)
    first = json.loads(run_cli("sweep", str(path), "--db", str(db), "--workers", "1", "--json").stdout)
    again = json.loads(run_cli("sweep", str(path), "--db", str(db), "--workers", "1", "--json").stdout)
    assert (first["simulated"], first["reused"]) == (4, 0)
    assert (again["simulated"], again["reused"]) == (0, 4)
    assert bufferlab.load(db).query("SELECT count(*) AS n FROM runs")["n"][0] == 4


# 40 runs of a 20-flow, 100 Mb/s dumbbell for 40 s: long enough, on one worker, to stop mid-way
# (about 15 s in all; of 10 s each, the sweep took 4.4 s and could end between two looks at its
# store on a loaded machine, before the test could stop it).
LONG_SWEEP = """
    name = "{name}"
    seeds = 20
    [set]
    duration = "40s"
    "topology.flows" = 20
    "topology.bottleneck_rate" = "100Mbps"
    [[axes]]
    key = "topology.queue"
    values = ["5p", "20p"]
"""


@pytest.mark.slow
def test_a_sweep_killed_mid_way_and_restarted_stores_every_point_exactly_once(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, LONG_SWEEP.format(name="killed"))
    proc = subprocess.Popen([sys.executable, "-m", "bufferlab", "sweep", str(path), "--db", str(db), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_points(db, proc, 2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = bufferlab.load(db).query("SELECT count(*) AS n FROM study_points")["n"][0]
    assert 2 <= before < 40
    out = run_cli("sweep", str(path), "--db", str(db), "--workers", "2", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["reused"] == before and report["simulated"] == 40 - before
    res = bufferlab.load(db)
    counts = res.query("SELECT point, seed, count(*) AS n FROM study_points GROUP BY point, seed")
    assert counts.height == 40 and set(counts["n"].to_list()) == {1}
    assert res.query("SELECT count(*) AS n FROM runs")["n"][0] == 40
    # Nothing half-written survives the kill: every run has its flows and metric rows.
    orphans = res.query("SELECT count(*) AS n FROM runs r WHERE NOT EXISTS "
                        "(SELECT 1 FROM flow_metrics m WHERE m.run_id = r.run_id)")["n"][0]
    assert orphans == 0


def wait_for_points(db: Path, proc: subprocess.Popen, n: int) -> None:
    """Until the sweep run by `proc` has stored `n` points (reading the store as it writes)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.3)
        try:
            if db.exists() and bufferlab.load(db).query("SELECT count(*) AS n FROM study_points")["n"][0] >= n:
                break
        except (SpecError, duckdb.Error):
            continue
    assert proc.poll() is None, "the sweep ended before it could be stopped"


# --- a shared store ------------------------------------------------------------------------------

@pytest.mark.slow
def test_four_runs_on_one_store_at_once_all_succeed_while_results_list_reads_it(tmp_path: Path,
                                                                               write_scenario) -> None:
    db = tmp_path / "shared.duckdb"
    path = write_scenario(BASE.replace('duration = "1s"', 'duration = "4s"'))
    # The store exists before the four start: a run writes its file only when it persists, and
    # runs are now fast enough that all four could end between two looks at a store not yet made.
    assert run_cli("run", str(path), "--db", str(db), "--seed", "10").returncode == 0
    procs = [subprocess.Popen([sys.executable, "-m", "bufferlab", "run", str(path), "--db", str(db), "--seed",
                               str(seed), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in (11, 12, 13, 14)]
    listings = []
    while any(p.poll() is None for p in procs):
        listings.append(run_cli("results", "list", "--db", str(db)))
        time.sleep(0.05)
    outs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outs]
    assert len({json.loads(out)["run_id"] for out, _ in outs}) == 4
    assert listings and all(r.returncode == 0 for r in listings), [r.stderr for r in listings]
    assert bufferlab.load(db).query("SELECT count(*) AS n FROM runs")["n"][0] == 5


# --- aggregation ---------------------------------------------------------------------------------

# Window-limited flows over an unlimited 10 ms link: each sends its window per 20 ms round trip
# whatever the seed (test_metrics.py derives the exact rates). A lossy link that no packet crosses
# makes the seed part of each run's identity, so every seed is a run of its own.
WINDOWS = """
name = "windows"
duration = "2s"
sample_interval = "100ms"
[[nodes]]
name = "a"
kind = "host"
[[nodes]]
name = "b"
kind = "host"
[[nodes]]
name = "c"
kind = "host"
[[links]]
name = "ab"
a = "a"
b = "b"
rate = "unlimited"
delay = "10ms"
[[links]]
name = "ac"
a = "a"
b = "c"
rate = "10Mbps"
delay = "1ms"
loss = "1%"
[flow_defaults]
start = "1ms"
[[flows]]
src = "a"
dst = "b"
tcp = { ack_every = 1, rwnd = "14480B", initial_window = 10 }
"""


def test_confidence_intervals_contain_the_exact_answer_with_zero_width(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, """
        name = "windows"
        seeds = 3
        [[axes]]
        zip = [{ key = "flows[0].tcp.rwnd", values = ["14480B", "28960B"] },
               { key = "flows[0].tcp.initial_window", values = [10, 20] }]
    """, base=WINDOWS)
    assert run_cli("sweep", str(path), "--db", str(db), "--workers", "1").returncode == 0
    study = bufferlab.load(db).study("windows")
    assert study["seeds"].to_list() == [3, 3]
    for row, w in zip(study.iter_rows(named=True), (10, 20)):
        exact = 98 * w * MSS * 8 / 2 / 1e6  # 98 windows acknowledged in 2 s (test_metrics.py)
        assert row["mean_throughput_l4"] == pytest.approx(exact)
        assert row["mean_throughput_l4_ci_low"] == pytest.approx(exact)
        assert row["mean_throughput_l4_ci_high"] == pytest.approx(exact)
    assert study.columns[:4] == ["point", "flows[0].tcp.rwnd", "flows[0].tcp.initial_window", "seeds"]


def test_intervals_widen_with_the_spread_of_the_seeds(tmp_path: Path) -> None:
    from bufferlab.analysis.aggregate import aggregate_over_seeds, t_quantile

    per_run = pl.DataFrame({"point": [0, 0, 0, 1], "x": [1.0, 2.0, 3.0, 5.0]})
    out = aggregate_over_seeds(per_run, ["point"], ["x"]).to_dicts()
    half = t_quantile(2) * 1.0 / 3 ** 0.5  # s = 1 over three runs
    assert t_quantile(2) == pytest.approx(4.302652729911275)
    assert out[0]["x"] == 2.0 and out[0]["x_ci_low"] == pytest.approx(2 - half)
    assert out[0]["x_ci_high"] == pytest.approx(2 + half)
    assert out[1]["seeds"] == 1 and out[1]["x_ci_low"] is None  # one seed: no interval


def test_student_t_quantiles_are_scipy_stats_own_to_the_last_bit() -> None:
    from scipy.stats import t

    from bufferlab.analysis.aggregate import t_quantile

    for level in (0.8, 0.9, 0.95, 0.99):
        for dof in range(1, 101):
            assert t_quantile(dof, level) == float(t.ppf((1 + level) / 2, dof)), (dof, level)


def test_a_t_quantile_does_not_import_scipy_stats() -> None:
    # scipy.stats parses its distributions' docstrings at import: 0.7-2 s of `results study`.
    probe = ("import sys\nfrom bufferlab.analysis.aggregate import t_quantile\nt_quantile(4)\n"
             "print('scipy.stats' in sys.modules, 'scipy.special' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_results_study_prints_one_row_per_point(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, QUEUE_SWEEP)
    assert run_cli("sweep", str(path), "--db", str(db), "--workers", "1").returncode == 0
    out = run_cli("results", "study", "queues", "--db", str(db), "--format", "json")
    rows = json.loads(out.stdout)
    assert [r["topology.queue"] for r in rows] == ["5p", "40p"] and all(r["seeds"] == 2 for r in rows)
    table = run_cli("results", "study", "queues", "--db", str(db))
    assert table.returncode == 0 and "topology.queue" in table.stdout and "±" in table.stdout
    missing = run_cli("results", "study", "nope", "--db", str(db))
    assert missing.returncode == 2 and missing.stderr.startswith('error: STUDY: no study "nope"')



def test_equal_axes_share_a_column_and_different_ones_keep_theirs() -> None:
    from bufferlab.analysis.aggregate import axis_label, distinct_axes

    points = pl.DataFrame({"flows[1].rtt": ["10ms", "90ms"], "flows[2].rtt": ["10ms", "90ms"],
                           "meta.rttp": [10, 90], "flows[3].rtt": ["10ms", "90ms"], "topology.queue": ["5p", "5p"]})
    kept = distinct_axes(points, list(points.columns))
    assert kept == [("flows[1].rtt", 2), ("meta.rttp", 0), ("topology.queue", 0)]
    assert [axis_label(a, n) for a, n in kept] == ["flows[1].rtt (+2 equal)", "meta.rttp", "topology.queue"]
    assert distinct_axes(points.clear(), ["flows[1].rtt", "flows[2].rtt"]) == [("flows[1].rtt", 0), ("flows[2].rtt", 0)]


def test_results_study_shows_a_zipped_axis_of_many_flows_as_one_column(tmp_path: Path) -> None:
    # SplitBuff's Type-2 RTT axis zips one key per flow (250 at full scale): one column, not 250.
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, textwrap.dedent("""
        name = "rtts"
        [[axes]]
        zip = [{ key = "flows[0].rtt", values = ["20ms", "60ms"] }, { key = "flows[1].rtt", values = ["20ms", "60ms"] }]
    """), base=textwrap.dedent(SMALL_DUMBBELL).replace("flows = 2\n", "").replace('rtt = "20ms"\n', "")
        + '[[flows]]\nrtt = "20ms"\n[[flows]]\nrtt = "20ms"\n')
    assert run_cli("sweep", str(path), "--db", str(db), "--workers", "1").returncode == 0
    table = run_cli("results", "study", "rtts", "--db", str(db))
    assert table.returncode == 0, table.stderr
    assert "flows[0].rtt (+1 equal)" in " ".join(table.stdout.split()) and "flows[1].rtt" not in table.stdout
    rows = json.loads(run_cli("results", "study", "rtts", "--db", str(db), "--format", "json").stdout)
    assert [(r["flows[0].rtt"], r["flows[1].rtt"]) for r in rows] == [("20ms", "20ms"), ("60ms", "60ms")]


def test_the_sweep_report_prints_a_bracketed_study_name_as_written(tmp_path: Path) -> None:
    # "[/q]" is the user's text, not rich markup (rich would raise: a closing tag with nothing open).
    db = tmp_path / "s[/x].duckdb"
    path = sweep_of(tmp_path, QUEUE_SWEEP.replace('"queues"', '"[/q]"').replace("seeds = 2", "seeds = 1"))
    out = run_cli("sweep", str(path), "--db", str(db), "--workers", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"study [/q] in {db}: 2 run(s)")
    assert f"see it with: bufferlab results study [/q] --db {db}" in out.stdout

@pytest.mark.slow
def test_sigint_stops_a_sweep_and_keeps_every_finished_run(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = sweep_of(tmp_path, LONG_SWEEP.format(name="stopped"))
    proc = subprocess.Popen([sys.executable, "-m", "bufferlab", "sweep", str(path), "--db", str(db), "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_points(db, proc, 1)
    proc.send_signal(signal.SIGINT)
    stopped_at = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - stopped_at < 15
    assert err.strip().splitlines()[-1].startswith("error: interrupted: ")
    res = bufferlab.load(db)
    kept = res.query("SELECT count(*) AS n FROM study_points WHERE status = 'complete'")["n"][0]
    assert kept >= 1 and res.query("SELECT count(*) AS n FROM runs")["n"][0] == kept
    again = json.loads(run_cli("sweep", str(path), "--db", str(db), "--workers", "2", "--json").stdout)
    assert again["reused"] == kept and again["simulated"] == 40 - kept


def _die(key: int, plan: object, spool: str) -> None:
    os._exit(1)


def test_a_worker_that_dies_fails_its_runs_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bufferlab.study import executors

    sweep = Sweep.from_toml(sweep_of(tmp_path, QUEUE_SWEEP))
    pool = LocalPoolExecutor(2)
    # A worker process that exits abruptly, as one the kernel kills for memory.
    monkeypatch.setattr(executors, "_spooled_task", _die)
    report = run_sweep(sweep, tmp_path / "s.duckdb", pool)
    assert report.simulated == 0 and len(report.failed) == 4
    assert {error for _, error in report.failed} == {executors.WORKER_DIED}
