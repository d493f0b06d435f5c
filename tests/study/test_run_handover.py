"""How a local pool's workers hand finished runs over: as files in a directory of the executor's
own in shared memory (`RunSpool`), each removed once read, the directory removed with the
executor, or by the workers themselves when the sweep's process is killed outright; a run that
cannot be written there comes through the pool's pipe, and is stored the same."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bufferlab.pipeline.plan import plan
from bufferlab.study.execute import run_sweep
from bufferlab.study.executors import (
    LocalPoolExecutor,
    RunSpool,
    SerialExecutor,
    _alive,
    _pid_namespace,
    _spooled_task,
    remove_abandoned_spools,
)
from bufferlab.study.sweep import Sweep

from conftest import REPO
from sweep_helpers import QUEUE_SWEEP, stored, sweep_of

pytestmark = pytest.mark.engine


def test_a_local_pool_removes_each_handed_over_run_and_then_its_spool(tmp_path: Path) -> None:
    sweep = Sweep.from_toml(sweep_of(tmp_path, QUEUE_SWEEP))
    executor = LocalPoolExecutor(2)
    spool = Path(executor.spool.path)
    try:
        report = run_sweep(sweep, tmp_path / "local.duckdb", executor, keep_executor=True)
        assert report.simulated == 4 and not report.failed, report.failed
        assert spool.is_dir() and not list(spool.iterdir())
    finally:
        executor.close()
    assert not spool.exists()
    assert run_sweep(sweep, tmp_path / "serial.duckdb", SerialExecutor()).simulated == 4
    assert stored(tmp_path / "local.duckdb") == stored(tmp_path / "serial.duckdb")


def test_a_run_that_cannot_be_spooled_comes_through_the_pipe_and_is_stored_the_same(tmp_path: Path) -> None:
    sweep = Sweep.from_toml(sweep_of(tmp_path, QUEUE_SWEEP))
    key, run, error = _spooled_task(7, plan(sweep.scenario(sweep.points()[0])), str(tmp_path / "no such directory"))
    assert key == 7 and error is None and not isinstance(run, str) and run is not None

    executor = LocalPoolExecutor(2)
    executor.spool.remove()  # every run now fails to be written there
    report = run_sweep(sweep, tmp_path / "local.duckdb", executor)
    assert report.simulated == 4 and not report.failed, report.failed
    assert run_sweep(sweep, tmp_path / "serial.duckdb", SerialExecutor()).simulated == 4
    assert stored(tmp_path / "local.duckdb") == stored(tmp_path / "serial.duckdb")


# A process that starts a pool of one worker, waits for a short run (so the worker is up), hands
# it a run of 10,000 simulated seconds, prints its spool's path and waits.
HOLDER = textwrap.dedent("""
    import sys, time
    from bufferlab.pipeline.plan import plan
    from bufferlab.study.executors import LocalPoolExecutor
    from bufferlab.study.sweep import Sweep

    if __name__ == "__main__":
        sweep = Sweep.from_toml(sys.argv[1])
        short, long = (plan(sweep.scenario(point)) for point in sweep.points())
        executor = LocalPoolExecutor(1)
        outcomes = executor.run([(0, short), (1, long)])
        assert next(outcomes).run is not None
        print(executor.spool.path, flush=True)
        time.sleep(600)
""")


@pytest.mark.slow
def test_the_workers_of_a_sweep_killed_outright_remove_its_spool(tmp_path: Path) -> None:
    path = sweep_of(tmp_path, """
        name = "held"
        [[axes]]
        key = "duration"
        values = ["1s", "10000s"]
    """)
    (tmp_path / "holder.py").write_text(HOLDER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")])}
    # (stderr: the killed process's resource tracker warns of the semaphores it was left with)
    with subprocess.Popen([sys.executable, str(tmp_path / "holder.py"), str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env=env) as holder:
        assert holder.stdout is not None
        spool = Path(holder.stdout.readline().strip())
        assert spool.is_dir() and spool.name.startswith(f"bufferlab-runs-{_pid_namespace()}.{holder.pid}-")
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    while spool.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not spool.exists(), "the spool outlived its killed sweep"


def test_a_new_spool_removes_those_whose_sweep_is_gone_and_keeps_the_living(tmp_path: Path) -> None:
    # What a SIGKILL to a sweep's whole process group leaves: a spool named after a process that no
    # longer exists, still holding a run.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead_pid = int(gone.stdout)
    assert not _alive(dead_pid)
    here = _pid_namespace()
    abandoned = tmp_path / f"{RunSpool.PREFIX}{here}.{dead_pid}-x1"
    living = tmp_path / f"{RunSpool.PREFIX}{here}.{os.getpid()}-x2"
    # A sweep in another container sharing the directory: its process id means nothing here.
    elsewhere = tmp_path / f"{RunSpool.PREFIX}{here}0.{dead_pid}-x3"
    unrelated = tmp_path / "bufferlab-runs-notapid-x4"
    for d in (abandoned, living, elsewhere, unrelated):
        d.mkdir()
        (d / "1.run").write_bytes(b"run")
    assert remove_abandoned_spools(str(tmp_path)) == [str(abandoned)]
    assert not abandoned.exists() and living.is_dir() and elsewhere.is_dir() and unrelated.is_dir()
    # A new spool does the same where it is made (/dev/shm), and is named as it judges others.
    first = RunSpool()
    assert Path(first.path).name.startswith(f"{RunSpool.PREFIX}{here}.{os.getpid()}-")
    left = Path(first.path).parent / f"{RunSpool.PREFIX}{here}.{dead_pid}-left-by-a-killed-sweep"
    left.mkdir()
    second = RunSpool()
    try:
        assert not left.exists() and Path(first.path).is_dir()
    finally:
        first.remove()
        second.remove()
        shutil.rmtree(left, ignore_errors=True)


def test_the_pid_namespace_is_the_kernel_s_identity_of_it() -> None:
    # Two processes of one namespace name it alike; on Linux it is /proc/self/ns/pid's inode.
    child = subprocess.run([sys.executable, "-c", "from bufferlab.study.executors import _pid_namespace; "
                            "print(_pid_namespace())"], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert child.stdout.strip() == _pid_namespace()
    if Path("/proc/self/ns/pid").exists():
        assert _pid_namespace() == str(os.stat("/proc/self/ns/pid").st_ino)
