"""Sweeps on a real Dask cluster: a scheduler and two worker processes started apart from the
sweep, talking TCP on 127.0.0.1, as on a cluster of machines. The results are the serial sweep's;
a worker killed mid-run loses nothing (the scheduler reruns its runs elsewhere, or they fail with
one line); a cluster whose workers are all gone fails the runs left instead of waiting forever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bufferlab.study.execute import run_sweep
from bufferlab.study.executors import DaskExecutor, SerialExecutor
from bufferlab.study.sweep import Sweep

from conftest import REPO, bufferlab as run_cli
from sweep_helpers import BASE, QUEUE_SWEEP, stored, sweep_of

pytestmark = [pytest.mark.engine, pytest.mark.slow]

# Six runs of a few seconds each, so that a worker is killed while it simulates.
LONG_BASE = BASE.replace('duration = "1s"', 'duration = "12s"') \
    .replace('bottleneck_rate = "10Mbps"', 'bottleneck_rate = "600Mbps"').replace('queue = "20p"', 'queue = "200p"') \
    .replace('"0.5%"', '"0.001%"')
LONG_SWEEP = """
    name = "long"
    seeds = 3
    [[axes]]
    key = "topology.queue"
    values = ["100p", "300p"]
"""


@dataclass
class Cluster:
    """A `dask scheduler` and its `dask worker`s, each a process of its own (no nanny: killing a
    worker's process is losing the worker, as when its machine goes)."""

    address: str
    scheduler: subprocess.Popen[bytes]
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def kill(self, name: str) -> None:
        self.workers[name].send_signal(signal.SIGKILL)
        self.workers[name].wait(timeout=30)

    def busy_worker(self, timeout: float = 60.0) -> str:
        """The name of a worker that holds a run, once one does."""
        from dask.distributed import Client

        with Client(self.address, timeout="10s") as client:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                names = {address: info["name"] for address, info in client.scheduler_info()["workers"].items()}
                busy = [names[address] for address, held in client.processing().items() if held and address in names]
                if busy:
                    return str(busy[0])
                time.sleep(0.05)
        raise AssertionError("no worker took a run")


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Two single-threaded workers; `@pytest.mark.parametrize("cluster", [n], indirect=True)`
    sets the scheduler's allowed failures per run (Dask's default: 3)."""
    allowed_failures = getattr(request, "param", 3)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]),
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures)}
    scheduler_file = tmp_path / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)], **quiet)
    running = Cluster("", scheduler)
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline and scheduler.poll() is None, "the scheduler did not start"
            time.sleep(0.05)
        running.address = json.loads(scheduler_file.read_text())["address"]
        assert running.address.startswith("tcp://127.0.0.1:")
        for name in ("w0", "w1"):
            running.workers[name] = subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", running.address, "--name", name,
                 "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"], **quiet)
        from dask.distributed import Client

        with Client(running.address, timeout="10s") as client:
            client.wait_for_workers(2, timeout=60)
        yield running
    finally:
        # The workers hold nothing worth a clean exit; a scheduler told to stop closes at once.
        for process in running.workers.values():
            process.kill()
        scheduler.terminate()
        for process in [*running.workers.values(), scheduler]:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def serial(tmp_path: Path, path: Path) -> dict[str, object]:
    db = tmp_path / "serial.duckdb"
    report = run_sweep(Sweep.from_toml(path), db, SerialExecutor())
    assert not report.failed
    return stored(db)


def test_a_sweep_through_the_command_on_a_tcp_cluster_stores_what_a_serial_sweep_does(
        tmp_path: Path, cluster: Cluster) -> None:
    path = sweep_of(tmp_path, QUEUE_SWEEP)
    db = tmp_path / "dask.duckdb"
    out = run_cli("sweep", str(path), "--db", str(db), "--dask", cluster.address, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["simulated"] == 4 and report["failed"] == [], report
    assert stored(db) == serial(tmp_path, path)


def test_a_worker_killed_mid_run_has_its_runs_rerun_by_the_other(tmp_path: Path, cluster: Cluster) -> None:
    path = sweep_of(tmp_path, LONG_SWEEP, LONG_BASE)
    db = tmp_path / "dask.duckdb"
    with subprocess.Popen([sys.executable, "-m", "bufferlab", "sweep", str(path), "--db", str(db), "--dask",
                           cluster.address, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as sweep:
        cluster.kill(cluster.busy_worker())
        out, err = sweep.communicate(timeout=600)
    assert sweep.returncode == 0, err
    report = json.loads(out)
    assert report["simulated"] == 6 and report["failed"] == [], report
    assert stored(db) == serial(tmp_path, path)


@pytest.mark.parametrize("cluster", [0], indirect=True)
def test_a_run_whose_worker_dies_more_often_than_allowed_fails_with_one_line_and_the_rest_are_stored(
        tmp_path: Path, cluster: Cluster) -> None:
    path = sweep_of(tmp_path, LONG_SWEEP, LONG_BASE)
    killer = threading.Thread(target=lambda: cluster.kill(cluster.busy_worker()))
    killer.start()
    report = run_sweep(Sweep.from_toml(path), tmp_path / "dask.duckdb", DaskExecutor(cluster.address, 2))
    killer.join()
    errors = [error for _, error in report.failed]
    # The killed worker held one run, or two (one under way, one queued behind it).
    assert 1 <= len(errors) <= 2 and report.simulated == 6 - len(errors), report
    assert all(e.startswith("engine: the Dask workers running this run died") and "\n" not in e for e in errors)
    points = stored(tmp_path / "dask.duckdb")["points"]
    assert sorted(p["status"] for p in points) == sorted(["complete"] * report.simulated + ["failed"] * len(errors))


def test_a_cluster_that_lost_every_worker_fails_the_runs_left_instead_of_waiting_forever(
        tmp_path: Path, cluster: Cluster) -> None:
    path = sweep_of(tmp_path, LONG_SWEEP, LONG_BASE)

    def kill_all() -> None:
        cluster.busy_worker()
        for name in cluster.workers:
            cluster.kill(name)

    killer = threading.Thread(target=kill_all)
    killer.start()
    started = time.monotonic()
    report = run_sweep(Sweep.from_toml(path), tmp_path / "dask.duckdb",
                       DaskExecutor(cluster.address, 2, workers_lost_after=3.0))
    killer.join()
    assert time.monotonic() - started < 120
    assert report.simulated + len(report.failed) == 6 and len(report.failed) >= 4, report
    assert {error for _, error in report.failed} == {
        f"dask: every worker of the scheduler at {cluster.address} left, and none joined within 3 s"}
