"""Sweep throughput: runs per minute through each executor, and the ratio to the serial rate.

The sweep is the reference dumbbell (scenarios/dumbbell.toml: 10 NewReno flows, 100 Mb/s, 40 ms,
30 simulated seconds sampled every 10 ms) at 16 buffer sizes from 25 to 700 packets x 2 seeds =
32 runs; the flows' starts are spread uniformly over the first second, so that each seed is a run
of its own. Each executor sweeps into a fresh store:

- serial: every run in this process, one at a time;
- the local pool of 2 worker processes (`--workers 2`);
- a Dask cluster of a scheduler and two single-threaded worker processes, started apart from the
  sweep and talking TCP on 127.0.0.1, as on a cluster of machines (`--dask tcp://...`);
- a Dask LocalCluster of 2 (`--dask local`), whose start-up is part of its sweep.

Wall time covers the whole sweep: planning, the workers' start-up (the local pool's and the
LocalCluster's; the TCP cluster is started before the clock, its client connects within it),
simulation, derivation of the metric tables, and the one writer storing each run. The CPU
seconds say where the time went: "writer" is this process (planning, receiving the runs, storing
them), "workers" the worker processes (start-up, simulation, derivation, sending the runs),
"sched" the TCP cluster's scheduler. On two cores the sweep cannot take less than the writer's
CPU time, nor less than half of all three together: "bound" is the ratio to the serial rate
that this allows (the serial sweep's CPU seconds over that least time), which other processes
on the machine do not move as they move the wall times.

    python benchmarks/bench_sweep.py                       # 32 points, 30 simulated s each
    python benchmarks/bench_sweep.py --points 8 --runs-seconds 10

Printed figures, not a test. The targets are for an idle machine: 2 local workers at least 1.8x
the serial rate, the 2-process Dask cluster at least 1.6x; on a 2-core machine two workers cannot
exceed 2x. The load average is printed at the start and the end: a ratio measured while other
processes share the cores is not the idle figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from typing import TYPE_CHECKING, Any

import bufferlab

if TYPE_CHECKING:
    from bufferlab.study.executors import Executor
    from bufferlab.study.sweep import Sweep

# The package's heavy modules (the store's DuckDB, the scenario models) are imported inside the
# functions: a "spawn" worker imports the main module of the process that starts it, and
# `bufferlab sweep`'s main module is the light command line, not this file.
REFERENCE = Path(__file__).resolve().parent.parent / "scenarios" / "dumbbell.toml"
WORKERS = 2
SEEDS = 2
# The targets: the ratio to the serial rate each executor should reach on an idle machine.
TARGETS = {"local": 1.8, "dask tcp": 1.6}


def sweep(points: int, seconds: float | None) -> Sweep:
    """`points` (point, seed) pairs: points / 2 buffer sizes, evenly spread from 25 to 700 packets
    (distinct whole sizes up to 676 of them), times 2 seeds."""
    from bufferlab.study.sweep import Sweep

    sizes = points // SEEDS
    queues = [f"{round(25 + 675 * i / max(1, sizes - 1))}p" for i in range(sizes)]
    overrides: dict[str, object] = {"flow_defaults.start": {"dist": "uniform", "low": "0s", "high": "1s"}}
    if seconds is not None:
        overrides["duration"] = f"{seconds:g}s"
    return Sweep.from_dict({"name": "bench_sweep", "base": str(REFERENCE), "seeds": SEEDS, "set": overrides,
                            "axes": [{"key": "topology.queue", "values": queues}]})


@contextmanager
def tcp_cluster(workers: int) -> Iterator[str]:
    """A `dask scheduler` and `workers` single-threaded `dask worker` processes (no nanny) on
    127.0.0.1, ready when this yields their scheduler's address; stopped at the end."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(bufferlab.__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])}
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        scheduler_file = Path(tmp) / "scheduler.json"
        try:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            deadline = time.monotonic() + 60
            while not scheduler_file.exists() or not scheduler_file.read_text().strip():
                if time.monotonic() > deadline or processes[0].poll() is not None:
                    raise RuntimeError("the Dask scheduler did not start")
                time.sleep(0.05)
            address = json.loads(scheduler_file.read_text())["address"]
            for i in range(workers):
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "distributed.cli.dask_worker", address, "--name", f"w{i}",
                     "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            from dask.distributed import Client

            with Client(address, timeout="10s") as client:
                client.wait_for_workers(workers, timeout=60)
            yield address
        finally:
            for process in reversed(processes):
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def cpu_s(usage: Any) -> float:
    return float(usage.ru_utime + usage.ru_stime)


def timed(s: Sweep, make: Callable[[], Executor],
          cluster: Callable[[], tuple[float, float]] | None = None) -> tuple[float, float, float, float | None]:
    """One sweep into a fresh store: its wall time, this process's CPU time, its workers' (the
    `cluster`'s, or the child processes this process waited for: the local pool's) and the
    cluster's scheduler's (None without a `cluster`), in s."""
    from bufferlab.study.execute import run_sweep

    with tempfile.TemporaryDirectory() as tmp:
        cluster_before = cluster() if cluster is not None else None
        children = cpu_s(resource.getrusage(resource.RUSAGE_CHILDREN))
        own = cpu_s(resource.getrusage(resource.RUSAGE_SELF))
        started = time.perf_counter()
        report = run_sweep(s, Path(tmp) / "bench.duckdb", make())
        wall = time.perf_counter() - started
        own = cpu_s(resource.getrusage(resource.RUSAGE_SELF)) - own
        children = cpu_s(resource.getrusage(resource.RUSAGE_CHILDREN)) - children
        cluster_after = cluster() if cluster is not None else None
    runs = len(s.points())
    assert report.simulated == runs and not report.failed and not report.reused, report
    if cluster_before is None or cluster_after is None:
        return wall, own, children, None
    return wall, own, cluster_after[0] - cluster_before[0], cluster_after[1] - cluster_before[1]


def cluster_cpu(address: str) -> tuple[float, float]:
    """The CPU seconds the cluster's workers and its scheduler have spent so far (asked through a
    client of its own)."""
    from dask.distributed import Client

    with Client(address, timeout="10s") as client:
        workers = sum(cpu_s(usage) for usage in client.run(resource.getrusage, resource.RUSAGE_SELF).values())
        return workers, cpu_s(client.run_on_scheduler(resource.getrusage, resource.RUSAGE_SELF))


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=32,
                        help="(point, seed) pairs: an even number, half as many buffer sizes x 2 seeds (default 32)")
    parser.add_argument("--runs-seconds", type=float, default=None,
                        help="simulated seconds per run (default: the reference dumbbell's own, 30)")
    parser.add_argument("--no-local-cluster", action="store_true", help="leave out the Dask LocalCluster line")
    args = parser.parse_args()
    if args.points < SEEDS or args.points % SEEDS or args.points // SEEDS > 676:
        print(f"error: --points: expected an even number from 2 to 1352 (buffer sizes x {SEEDS} seeds), "
              f"got {args.points}", file=sys.stderr)
        sys.exit(2)
    if args.runs_seconds is not None and not args.runs_seconds > 0:
        print(f"error: --runs-seconds: expected a positive number of seconds, got {args.runs_seconds:g}",
              file=sys.stderr)
        sys.exit(2)
    s = sweep(args.points, args.runs_seconds)
    runs = len(s.points())
    seconds = s.scenario(s.points()[0]).duration / 1e9
    print(f"sweep: {runs} runs of the reference dumbbell ({runs // SEEDS} buffer sizes x {SEEDS} seeds), "
          f"{seconds:g} simulated s each; {os.cpu_count()} cores")
    print(f"load average (1, 5, 15 min) at start: {load()}")
    print(f"{'':<34} {'':>7} {'':>9} {'':>10} {'CPU s':>22}")
    print(f"{'executor':<34} {'wall s':>7} {'runs/min':>9} {'vs serial':>10} {'writer':>7} {'workers':>7} {'sched':>6} "
          f"{'bound':>6}  target")
    from bufferlab.study.executors import DaskExecutor, LocalPoolExecutor, SerialExecutor

    baseline: float | None = None
    serial_cpu: float | None = None

    def line(label: str, target: str | None, wall: float, cpu: float, workers_cpu: float | None,
             scheduler_cpu: float | None = None) -> None:
        nonlocal baseline, serial_cpu
        rate = 60 * runs / wall
        baseline = baseline or rate
        serial_cpu = serial_cpu or cpu
        ratio = rate / baseline
        verdict = ""
        if target is not None:
            goal = TARGETS[target]
            verdict = f"{goal:.1f}x {'met' if ratio >= goal else 'not met'}"
        workers = "-" if workers_cpu is None else f"{workers_cpu:.2f}"
        scheduler = "-" if scheduler_cpu is None else f"{scheduler_cpu:.2f}"
        bound = "-" if workers_cpu is None else \
            f"{serial_cpu / max(cpu, (cpu + workers_cpu + (scheduler_cpu or 0.0)) / 2):.2f}x"
        print(f"{label:<34} {wall:>7.2f} {rate:>9.1f} {ratio:>9.2f}x {cpu:>7.2f} {workers:>7} {scheduler:>6} "
              f"{bound:>6}  {verdict}", flush=True)

    line("serial (this process)", None, *timed(s, SerialExecutor)[:2], None)
    line(f"local pool, {WORKERS} workers", "local", *timed(s, lambda: LocalPoolExecutor(WORKERS))[:3])
    with tcp_cluster(WORKERS) as address:
        line(f"dask tcp cluster, {WORKERS} workers", "dask tcp",
             *timed(s, lambda: DaskExecutor(address, WORKERS), lambda: cluster_cpu(address)))
    if not args.no_local_cluster:
        # Its workers are the children of nannies, whose CPU time this process does not see.
        wall, cpu, _, _ = timed(s, lambda: DaskExecutor("local", WORKERS))
        line(f"dask LocalCluster, {WORKERS} (+start-up)", None, wall, cpu, None)
    print(f"load average (1, 5, 15 min) at end:   {load()}")


if __name__ == "__main__":
    main()
