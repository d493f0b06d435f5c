"""Sweep throughput: runs per minute through each executor, and the ratio to one worker.

The sweep is the reference dumbbell (10 NewReno flows, 100 Mb/s, 40 ms, jittered starts) with its
buffer at 6 sizes x 2 seeds = 12 runs of 10 simulated seconds each, stored in a fresh store per
executor. Wall time covers the whole sweep: planning, worker start-up, simulation, derivation of
the metric tables, and the one writer storing each run.

    python benchmarks/bench_sweep.py                 # serial, local pool of 2, Dask LocalCluster of 2
    python benchmarks/bench_sweep.py --runs-seconds 30

A printed figure, not a test: on a 2-core machine two workers cannot exceed 2x one.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bufferlab.study.execute import run_sweep
from bufferlab.study.executors import DaskExecutor, LocalPoolExecutor, SerialExecutor
from bufferlab.study.sweep import Sweep

REFERENCE = Path(__file__).resolve().parent.parent / "scenarios" / "dumbbell.toml"


def sweep(seconds: float) -> Sweep:
    return Sweep.from_dict({
        "name": "bench_sweep", "base": str(REFERENCE), "seeds": 2,
        "set": {"duration": f"{seconds:g}s", "sample_interval": "100ms",
                "flow_defaults.start": {"dist": "uniform", "low": "0s", "high": "1s"}},
        "axes": [{"key": "topology.queue", "log": {"start": 25, "stop": 700, "num": 6}, "unit": "p"}],
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-seconds", type=float, default=10.0, help="simulated seconds per run")
    args = parser.parse_args()
    s = sweep(args.runs_seconds)
    runs = len(s.points())
    print(f"sweep: {runs} runs of the reference dumbbell, {args.runs_seconds:g} simulated s each")
    print(f"{'executor':<22} {'wall s':>8} {'runs/min':>9} {'vs 1 worker':>12}")
    baseline = None
    for label, make in (("serial (1 worker)", SerialExecutor), ("local pool, 2 workers", lambda: LocalPoolExecutor(2)),
                        ("dask LocalCluster, 2", lambda: DaskExecutor("local", 2))):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            report = run_sweep(s, Path(tmp) / "bench.duckdb", make())
            wall = time.perf_counter() - started
        assert report.simulated == runs and not report.failed, report.failed
        rate = 60 * runs / wall
        baseline = baseline or rate
        print(f"{label:<22} {wall:>8.2f} {rate:>9.1f} {rate / baseline:>11.2f}x")


if __name__ == "__main__":
    main()
