"""From the engine's last event to a stored run (issue 15, "an instant command"): the whole
`bufferlab run` process of the reference dumbbell into a new store, then each pipeline step in
one process for the reference dumbbell and a large sampled run.

    python benchmarks/bench_pipeline.py                  # both parts, best of 5 (large: of 3)
    python benchmarks/bench_pipeline.py --repetitions 3 --large-flows 2000
    python benchmarks/bench_pipeline.py --imports        # where a fresh run's imports go

Whole process: `bufferlab run scenarios/dumbbell.toml --db NEW` in a fresh interpreter, wall and
CPU time (user + system) of the child, best and median. The issue's target is 0.2 s on an idle
machine.

Pipeline steps, in this process, each measured on its own (best of the repetitions, CPU time):

    engine       the simulation alone (`_core.Run(...).advance(end)`): what no result handling costs
    simulate     `pipeline.simulate`: the engine and its result crossing into Python
    crossing     simulate - engine: handing the result over
    derive       `pipeline.derive`: flow and channel rows, metric tables, summary
    persist      `store.writer.persist` into a new store file (schema creation included)
    after engine crossing + derive + persist: from the engine's last event to a stored run

Imports happen once, in a warm-up run before the measurements (a fresh process pays them: see
the whole-process figure and --imports). Printed figures, never asserted: the machine is shared,
so compare figures taken in one run.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "scenarios" / "dumbbell.toml"


def large_case(flows: int) -> dict[str, Any]:
    """`flows` greedy NewReno flows through 1 Gb/s for 5 s, sampled every 10 ms (500 samples per
    flow): a result with flows x 500 rows of time series."""
    return {"name": f"large_{flows}", "seed": 1, "duration": "5s", "sample_interval": "10ms",
            "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "1Gbps", "queue": "40ms",
                         "rtt": "40ms"},
            "flow_defaults": {"cca": "newreno", "traffic": "greedy"}}


def whole_process(repetitions: int) -> dict[str, float]:
    """`bufferlab run` of the reference dumbbell into a new store, in a child process each time."""
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repetitions):
            db = Path(tmp) / f"fresh{k}.duckdb"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "bufferlab", "run", str(REFERENCE), "--db", str(db)], check=True,
                           stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {"best_wall_s": min(walls), "median_wall_s": statistics.median(walls), "best_cpu_s": min(cpus),
            "median_cpu_s": statistics.median(cpus)}


def _best_cpu(step: Callable[[], Any], repetitions: int) -> tuple[float, Any]:
    """The least CPU time of `repetitions` calls of `step`, and the last call's value."""
    best, value = float("inf"), None
    for _ in range(repetitions):
        started = time.process_time()
        value = step()
        best = min(best, time.process_time() - started)
    return best, value


def pipeline_steps(scenario: dict[str, Any], repetitions: int) -> dict[str, float]:
    """CPU seconds of each pipeline step for `scenario` (see the module docstring)."""
    from bufferlab.pipeline.derive import derive
    from bufferlab.pipeline.engine import core
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import Scenario
    from bufferlab.store.writer import persist

    planned = plan(Scenario.from_dict(scenario))

    def engine_only() -> None:
        stepped = core().Run(planned.spec_json)
        stepped.advance(stepped.end_ns)

    with tempfile.TemporaryDirectory() as tmp:
        stores = iter(Path(tmp) / f"s{k}.duckdb" for k in range(repetitions + 1))
        persist(derive(planned, simulate(planned)), next(stores))  # warm-up: imports, caches
        engine_s, _ = _best_cpu(engine_only, repetitions)
        simulate_s, raw = _best_cpu(lambda: simulate(planned), repetitions)
        derive_s, derived = _best_cpu(lambda: derive(planned, raw), repetitions)
        persist_s, _ = _best_cpu(lambda: persist(derived, next(stores)), repetitions)
    crossing = max(0.0, simulate_s - engine_s)
    return {"engine": engine_s, "simulate": simulate_s, "crossing": crossing, "derive": derive_s,
            "persist": persist_s, "after engine": crossing + derive_s + persist_s}


def top_imports(limit: int) -> list[tuple[str, float]]:
    """The top-level imports of a fresh `bufferlab run` into a new store, by cumulative time (s)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "bufferlab", "run", str(REFERENCE), "--db",
                              str(Path(tmp) / "fresh.duckdb")], check=True, capture_output=True, text=True)
    totals: list[tuple[str, float]] = []
    for line in out.stderr.splitlines():
        fields = line.split("|")
        if not line.startswith("import time:") or len(fields) != 3 or "cumulative" in line:
            continue
        name = fields[2][1:]  # after the bar's one space; deeper imports are indented further
        if not name.startswith(" "):
            totals.append((name, int(fields[1]) / 1e6))
    return sorted(totals, key=lambda item: -item[1])[:limit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--large-flows", type=int, default=1000)
    parser.add_argument("--imports", action="store_true", help="only list a fresh run's slowest top-level imports")
    args = parser.parse_args(argv)
    if args.imports:
        for name, seconds in top_imports(15):
            print(f"{seconds:>7.3f} s  {name}")
        return 0
    whole = whole_process(args.repetitions)
    print(f"bufferlab run scenarios/dumbbell.toml, new store, {args.repetitions} processes: "
          f"wall best {whole['best_wall_s']:.3f} s (median {whole['median_wall_s']:.3f}), "
          f"CPU best {whole['best_cpu_s']:.3f} s (median {whole['median_cpu_s']:.3f}); target 0.2 s")
    from bufferlab.spec import load_scenario

    cases = [("dumbbell", load_scenario(REFERENCE).to_dict(), args.repetitions),
             (f"{args.large_flows} flows x 500 samples", large_case(args.large_flows), max(1, args.repetitions // 2))]
    columns = ("engine", "simulate", "crossing", "derive", "persist", "after engine")
    print(f"\n{'CPU s (best)':<26}" + "".join(f"{c:>13}" for c in columns))
    for label, scenario, repetitions in cases:
        steps = pipeline_steps(scenario, repetitions)
        print(f"{label:<26}" + "".join(f"{steps[c]:>13.3f}" for c in columns), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
