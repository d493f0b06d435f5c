"""From the engine's last event to a stored run: the whole
`bufferlab run` process of the reference dumbbell into a new store, then each pipeline step in
one process for the reference dumbbell and a large sampled run.

    python benchmarks/bench_pipeline.py                  # both parts, best of 5 (large: of 3)
    python benchmarks/bench_pipeline.py --repetitions 3 --large-flows 2000
    python benchmarks/bench_pipeline.py --imports        # where a fresh run's imports go

Whole process: `bufferlab run scenarios/dumbbell.toml --db NEW` in a fresh interpreter, wall and
CPU time (user + system) of the child, best and median, its median minor page faults and peak
resident memory (the wall time ends as the command does; the CPU time, faults and peak count the
processes it left behind too, e.g. an older checkout's store writer process: `_child`), for the reference
dumbbell and for one flow of it over 10 s, each against ns-3's time for the same run: quoted
(about 6 s and 1.3 s, taken on another day), or with --ns3-binary (compiled by `make bench-ns3`)
measured in the same session, its twin with every setting matched (benchmarks/bench_ns3.py),
whole process, best of 3. The targets are 30x ns-3 and 10x ns-3. The host's speed varies from
hour to hour, so the side-by-side ratio is the fair one. On a shared machine the CPU time is the
steadier figure.

    python benchmarks/bench_pipeline.py --stages --ns3-binary benchmarks/ns3/build/dumbbell

    python benchmarks/bench_pipeline.py --stages         # where a fresh run's time goes
    python benchmarks/bench_pipeline.py --baseline ../main/.venv/bin/python   # before and after
    python benchmarks/bench_pipeline.py --stages-case 10000x10g --repetitions 1   # a scale-ladder case

--stages: one fresh process per repetition runs the command's steps one after the other, each
with the imports it brings, and reports for each the CPU time (user + system, every thread), the
minor page faults (every thread; `getrusage`) and how much the resident memory grew
(`/proc/self/status`' VmRSS; start: what the interpreter had at the first mark), then what was
resident at the exit (anonymous and file-backed: mapped code and data of the libraries) and the
peak. Each figure is the least of the repetitions, measure by measure:

    start        the interpreter, before any of bufferlab
    cli          `import bufferlab.cli` (click and the command's own modules)
    spec         the spec layer (pydantic models), the scenario loaded and its overrides applied;
                 where the command has the plan cache (`pipeline.plan_cache`), its plan read back
                 (or made and kept: `--plan-cache off`, or a checkout without the cache)
    plan         `pipeline.plan`: every check, the engine's included, with the imports the command
                 makes before it (`runner`); with the plan cache, the runner's import alone
    engine       the simulation (`_core.run`)
    result       the engine's tables into Python (`EngineResult.from_engine`; polars before
                 the run path went without it)
    derive       `analysis.derive` with its imports (numpy, the metric catalogue)
    persist      `store.writer.persist` into a new store with its imports (DuckDB)
    present      the summary's tables (rich), printed into a buffer
    exit         the child's CPU time after it reported the others: the interpreter's teardown
                 where the command exits with `sys.exit`; where it has `cli.app.exit_now`, the
                 kernel freeing the process's memory (see `cli.app.exit_now`); no faults, and
                 its resident growth is not measured

--stages-case CASE: the same table for one case of the scale ladder (benchmarks/bench_scale.py,
written as a JSON scenario), e.g. 10,000 flows at 10 Gb/s, where planning and deriving grow with
the flows.

Like the command, the process takes `cli.app.prepare_process`'s settings after it imports `cli`, and
leaves by `cli.app.exit_now`. The steps run one after the other on the main thread, as the command
runs them (an older checkout given as --baseline is measured the same way, in one process, with
none of the helper threads or processes its command may have had: see its whole-process figures).

--idle-flows: memory per additional idle flow through the whole command: the peak resident memory
of `bufferlab run` into a new store with 1,000 and with 10,000 flows that start in the last
millisecond of a 10 s run (built, planned, stored; never sending), with time series sampled every
100 ms and without; the difference divided by 9,000 against the target of 2 kB per flow. Each
peak is the least of 3 processes (fewer with --repetitions): one process's peak varies by about
a megabyte at 1,000 flows and several at 10,000. Every run plans afresh (a spec's first run: the
plan cache is off; a compact plan of 10,000 flows would be kept).

    python benchmarks/bench_pipeline.py --idle-flows --stages --repetitions 3

--idle-flows --stages: where those bytes go, without series: the --stages process for 1,000 and
for 10,000 idle flows, and for each stage the resident growth and the peak resident memory
reached by its end (`VmHWM`), each per additional flow (the 10,000 flows' least over processes
minus the 1,000's, over 9,000), and the 10,000 flows' peak in MB. The exit's peak is the
command's figure; the stage that sets the 10,000 flows' peak (where it last rises), not the one
that grows most, is where a cut moves it.

--baseline PYTHON: the same figures for another checkout's interpreter (e.g. main's venv), in
the same run, so the before and after are taken under the same load.

--plan-cache kept|off: the measured runs find their spec's plan kept by an unmeasured run
before them (default: a spec run again, as here, skips its validation) or plan it afresh
(``BUFFERLAB_PLAN_CACHE=off``: a spec's first run).

    python benchmarks/bench_pipeline.py --memory         # peak memory per recorded series byte

--memory: peak RSS of `bufferlab run` with a fine recording (100 flows, 1 ms samples) minus that
of the same run sampled once a second, over the recorded series' bytes: the copies of the series
a run holds at its peak, which `pipeline.budget.SERIES_COPIES` charges.

Pipeline steps, in this process, each measured on its own (best of the repetitions, CPU time):

    engine       the simulation alone (`_core.Run(...).advance(end)`): what no result handling costs
    simulate     `pipeline.simulate`: the engine and its result crossing into Python
    crossing     simulate - engine: handing the result over
    derive       `analysis.derive`: flow and channel rows, metric tables, summary
    persist      `store.writer.persist` into a new store file (schema creation included)
    after engine crossing + derive + persist: from the engine's last event to a stored run

Imports happen once, in a warm-up run before the measurements (a fresh process pays them: see
the whole-process figure and --imports). Printed figures, never asserted: the machine is shared,
so compare figures taken in one run.

    python benchmarks/bench_pipeline.py --existing       # persist into a store of N runs
    python benchmarks/bench_pipeline.py --existing --baseline ../main/.venv/bin/python

--existing: CPU time of `store.writer.persist` of the reference dumbbell's run (156,000 series
rows) into a store that already holds 0, 1, 10 and 50 runs of it (each under its own run id),
best of the repetitions, each into a fresh copy of that store; and the store's size. A write
that rewrites what earlier runs left (DuckDB's vacuum merging row groups, a table's last row
group taken up again) shows as a figure that grows with N. With --baseline the same figures for
the other interpreter (its checkout's bufferlab and DuckDB), measured in a child process.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "scenarios" / "dumbbell.toml"


def large_case(flows: int) -> dict[str, Any]:
    """`flows` greedy NewReno flows through 1 Gb/s for 5 s, sampled every 10 ms (500 samples per
    flow): a result with flows x 500 rows of time series."""
    return {"name": f"large_{flows}", "seed": 1, "duration": "5s", "sample_interval": "10ms",
            "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "1Gbps", "queue": "40ms",
                         "rtt": "40ms"},
            "flow_defaults": {"cca": "newreno", "traffic": "greedy"}}


# (label, --set overrides of scenarios/dumbbell.toml, ns-3's quoted whole-process seconds, the
# name of its twin in bench_ns3 for --ns3-binary, target ratio)
WHOLE_PROCESS_CASES = [
    ("reference dumbbell, 30 s", (), 6.0, "REFERENCE_TWIN", 30),
    ("one flow, 10 s", ("topology.flows=1", "duration=10s"), 1.3, "ONE_FLOW_TWIN", 10),
]


def ns3_seconds(binary: Path | None) -> tuple[list[float], str]:
    """ns-3's time for each of WHOLE_PROCESS_CASES and where the figures come from: measured now
    with `binary` (each case's twin, whole process, best of 3), else the quoted ones."""
    if binary is None:
        return [quoted for _, _, quoted, _, _ in WHOLE_PROCESS_CASES], "quoted (--ns3-binary: measured now)"
    import bench_ns3

    twins = [getattr(bench_ns3, twin) for _, _, _, twin, _ in WHOLE_PROCESS_CASES]
    return bench_ns3.best_walls(twins, binary, "bench_pipeline"), "measured now: each case's twin in ns-3, whole process, best of 3"


@dataclasses.dataclass(frozen=True)
class ChildUsage:
    """What one child process used: wall and CPU seconds (user + system, every thread), minor
    page faults, peak resident bytes, and its stdout. The figures include what the processes it
    reaped used (an older checkout's store writer process), and the peak is the largest of them (Linux)."""

    wall_s: float
    cpu_s: float
    faults: int
    peak_bytes: int
    stdout: str


def _child(command: list[str], **kwargs: Any) -> ChildUsage:
    """Run `command` in a child process and collect its own usage (`os.wait4`: the peak is the
    child's, not the largest of all children so far as `RUSAGE_CHILDREN` would give). The wall
    time ends with the child's exit; its CPU time and faults count the processes it left to end
    on their own too (an older checkout's writer process it did not wait for), which come
    to this process as their subreaper (`_adopt_orphans`) and are waited for after it."""
    _adopt_orphans()
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, **kwargs)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    cpu, faults, peak = usage.ru_utime + usage.ru_stime, usage.ru_minflt, usage.ru_maxrss
    for orphan in _orphans_ended():  # counted as the child's reaped children are (`wait4`)
        cpu, faults = cpu + orphan.ru_utime + orphan.ru_stime, faults + orphan.ru_minflt
        peak = max(peak, orphan.ru_maxrss)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, command, out)
    return ChildUsage(wall, cpu, faults, peak * 1024, out)  # kB


def _adopt_orphans() -> None:
    """Make this process the subreaper of its descendants (Linux's `PR_SET_CHILD_SUBREAPER`), so
    that a process a measured command left running when it exited comes to this one, not init,
    and its usage can be counted (`_orphans_ended`). Nothing where it cannot be done."""
    global _subreaper
    if _subreaper is None:
        import ctypes

        try:
            _subreaper = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            _subreaper = False


_subreaper: bool | None = None


def _orphans_ended() -> list[Any]:
    """The usage of each child of this process left (none of the `subprocess` module's: each
    measured command has been waited for), once it has ended: the orphans it adopted."""
    ended: list[Any] = []
    while True:
        try:
            _, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            return ended
        ended.append(usage)


# How the children find their spec's plan (`pipeline.plan_cache`, `--plan-cache`): "kept" from
# a run before the measured ones (what a user who runs a spec again gets), or "off": planned
# afresh each time (a spec's first run). Checkouts without the cache plan afresh either way.
PLAN_CACHE_MODES = ("kept", "off")


def plan_cache_environment(mode: str, tmp: str) -> dict[str, str]:
    """The children's environment for plan cache `mode`, its plans (if kept) under `tmp`."""
    return {**os.environ, "BUFFERLAB_PLAN_CACHE": str(Path(tmp) / "plans") if mode == "kept" else "off"}


def rounds(repetitions: int, plan_cache: str) -> range:
    """The rounds of a measurement: `repetitions` measured ones (0, 1, ...), after an unmeasured
    round -1 that keeps the plans where `plan_cache` is "kept"."""
    return range(-1 if plan_cache == "kept" else 0, repetitions)


def whole_process(repetitions: int, overrides: tuple[str, ...] = (),
                  pythons: tuple[str, ...] = (sys.executable,), plan_cache: str = "kept") -> list[dict[str, float]]:
    """`bufferlab run` of the reference dumbbell (with `overrides`) into a new store, in a child
    process each time, for each interpreter of `pythons` (their repetitions interleaved, so that
    each sees the same load), its plan as `plan_cache` says (`PLAN_CACHE_MODES`; a kept one made
    by an unmeasured run first): wall and CPU seconds, best and median, and the median minor page
    faults and peak resident bytes."""
    used: list[list[ChildUsage]] = [[] for _ in pythons]
    sets = [arg for o in overrides for arg in ("--set", o)]
    with tempfile.TemporaryDirectory() as tmp:
        env = plan_cache_environment(plan_cache, tmp)
        for k in rounds(repetitions, plan_cache):
            for i, python in enumerate(pythons):
                db = Path(tmp) / f"fresh{k}_{i}.duckdb"
                run = _child([python, "-m", "bufferlab", "run", str(REFERENCE), "--db", str(db), *sets], env=env)
                if k >= 0:
                    used[i].append(run)
    out = []
    for runs in used:
        walls, cpus = [u.wall_s for u in runs], [u.cpu_s for u in runs]
        out.append({"best_wall_s": min(walls), "median_wall_s": statistics.median(walls), "best_cpu_s": min(cpus),
                    "median_cpu_s": statistics.median(cpus), "median_faults": statistics.median(u.faults for u in runs),
                    "median_peak_bytes": statistics.median(u.peak_bytes for u in runs)})
    return out


STAGES = ("start", "cli", "spec", "plan", "engine", "result", "derive", "persist", "present", "exit")
# What --stages reports of each stage: CPU seconds, minor page faults, resident growth in bytes.
STAGE_MEASURES = ("cpu", "faults", "rss")
# The stages the command's main thread goes through one after the other (`_STAGE_SCRIPT`'s marks).
_MARKED = STAGES[1:STAGES.index("exit")]

# One fresh process: the command's steps in order, the CPU time, minor page faults (every thread)
# and resident bytes (anonymous and file-backed) reached after each (see --stages).
_STAGE_SCRIPT = """
import io, json, os, resource, sys, time
from contextlib import redirect_stdout
def _resident():
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return {k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "RssAnon", "RssFile", "VmHWM")}
def _measures():
    return {"cpu": time.process_time(), "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt, **_resident()}
marks = {"start": _measures()}
def mark(stage):
    marks[stage] = _measures()
import importlib
def _module(*names):  # the first of `names` this checkout has (modules moved, e.g. into bufferlab/cli/)
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    return None
command = _module("bufferlab.cli.app", "bufferlab.cli")
getattr(command, "prepare_process", lambda: None)()  # the command's process settings, where it has them
run_command = _module("bufferlab.cli.run", "bufferlab.cli")
mark("cli")
source = sys.argv[1]
planned_by_command = getattr(run_command, "plan_file", getattr(run_command, "_planned", None))  # the plan cache's checkouts
if planned_by_command is not None and not source.endswith(".json"):
    # As the command: the plan kept from an earlier run of the same inputs, or made now and kept
    # (both are "spec"; "plan" is the runner's import).
    from pathlib import Path
    planned = planned_by_command(Path(source), sys.argv[3:], None, None)
    mark("spec")
    import bufferlab.runner
    mark("plan")
else:
    from bufferlab.spec import load_scenario
    from bufferlab.spec.overrides import parse_assignment
    scenario = load_scenario(json.load(open(source)) if source.endswith(".json") else source)
    if sys.argv[3:]:  # as the command: a scenario without --set is validated once
        scenario = scenario.with_overrides(dict(parse_assignment(o) for o in sys.argv[3:]))
    mark("spec")
    import bufferlab.runner  # the command imports the runner before its plan
    from bufferlab.pipeline.plan import plan
    planned = plan(scenario)
    mark("plan")
from bufferlab.pipeline.engine import core
started = time.perf_counter()
tables = core().run(planned.spec_json)
mark("engine")
from bufferlab.pipeline.result import EngineResult
from bufferlab.pipeline.simulate import RawRun
raw = RawRun(result=EngineResult.from_engine(tables), wall_time_s=time.perf_counter() - started)
mark("result")
derive = _module("bufferlab.analysis.derive", "bufferlab.pipeline.derive").derive
derived = derive(planned, raw)
mark("derive")
from bufferlab.store.writer import persist
persist(derived, sys.argv[2])
mark("persist")
print_summary = _module("bufferlab.cli.render", "bufferlab.render").print_summary
with redirect_stdout(io.StringIO()):
    print_summary(derived.summary, scenario="dumbbell", db=sys.argv[2])
mark("present")
print(json.dumps(marks))
getattr(command, "exit_now", sys.exit)(0)  # the command's way out
"""


def stages(repetitions: int, overrides: tuple[str, ...] = (), pythons: tuple[str, ...] = (sys.executable,),
           scenario: Path = REFERENCE, plan_cache: str = "kept") -> list[dict[str, dict[str, float]]]:
    """For each interpreter of `pythons` (interleaved), each of `STAGE_MEASURES` of each stage of a
    fresh run of `scenario` (TOML, or a .json mapping) with `overrides` (`STAGES`, see the module
    docstring): the least of `repetitions` processes, measure by measure; and under "end", the
    process's resident bytes (anonymous, file-backed) when it reached its exit, and its peak;
    under "peak", the peak resident bytes reached by the end of each stage (`VmHWM`; the exit's,
    the whole process's).

    CPU time and faults count every thread of the process; the exit's are what the child used
    in all minus what it had used at its last mark (its resident growth is not measured: the
    kernel frees it all). The plan as `plan_cache` says (see `whole_process`)."""
    best: list[dict[str, dict[str, float]]] = [
        {measure: dict.fromkeys(STAGES, float("inf")) for measure in (*STAGE_MEASURES, "end", "peak")}
        for _ in pythons]
    with tempfile.TemporaryDirectory() as tmp:
        env = plan_cache_environment(plan_cache, tmp)
        for k in rounds(repetitions, plan_cache):
            for i, python in enumerate(pythons):
                db = Path(tmp) / f"s{k}_{i}.duckdb"
                child = _child([python, "-c", _STAGE_SCRIPT, str(scenario), str(db), *overrides], cwd=ROOT, env=env)
                if k < 0:
                    continue
                marks = json.loads(child.stdout.strip().splitlines()[-1])
                last = marks["present"]
                spent = {"cpu": {"start": marks["start"]["cpu"], "exit": child.cpu_s - last["cpu"]},
                         "faults": {"start": marks["start"]["faults"],
                                    "exit": child.faults - last["faults"]},
                         "rss": {"start": marks["start"]["VmRSS"], "exit": 0.0},
                         "end": {"VmRSS": last["VmRSS"], "RssAnon": last["RssAnon"], "RssFile": last["RssFile"],
                                 "peak": child.peak_bytes},
                         "peak": {"start": marks["start"]["VmHWM"], "exit": child.peak_bytes}}
                previous = "start"
                for stage in _MARKED:
                    spent["cpu"][stage] = marks[stage]["cpu"] - marks[previous]["cpu"]
                    spent["faults"][stage] = marks[stage]["faults"] - marks[previous]["faults"]
                    spent["rss"][stage] = marks[stage]["VmRSS"] - marks[previous]["VmRSS"]
                    spent["peak"][stage] = marks[stage]["VmHWM"]
                    previous = stage
                best[i] = {measure: {key: min(best[i][measure].get(key, float("inf")), value)
                                     for key, value in spent[measure].items()} for measure in spent}
    return best


def _peak_rss(overrides: tuple[str, ...], db: Path, scenario: Path = REFERENCE,
              env: dict[str, str] | None = None) -> int:
    """Peak resident bytes of one `bufferlab run` of `scenario` (the reference dumbbell) with `overrides`."""
    sets = [arg for o in overrides for arg in ("--set", o)]
    code = ("import resource, sys\nfrom bufferlab.cli import main\n"
            f"status = main(['run', {str(scenario)!r}, '--db', {str(db)!r}, '--json', *{sets!r}])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    if not db.exists():
        sys.exit(f"bench_pipeline: the run of {scenario} stored nothing:\n{out.stderr}")
    return int(out.stderr.strip().splitlines()[-1]) * 1024  # Linux reports kB


def idle_flows_case(flows: int) -> dict[str, Any]:
    """`flows` NewReno flows on a 10 s dumbbell that start 1 ms before the end: what a run holds
    for flows that are there but idle (not yet started, as the finished ones of a long run)."""
    return {"name": f"idle_{flows}", "seed": 1, "duration": "10s", "sample_interval": "100ms",
            "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "1Gbps", "queue": "1000p",
                         "rtt": "40ms"},
            "flow_defaults": {"cca": "newreno", "traffic": "greedy", "start": "9.999s"}}


def idle_flow_bytes(sampled: bool, repetitions: int = 1, small: int = 1_000,
                    large: int = 10_000) -> tuple[float, int, int]:
    """Peak resident bytes of a whole `bufferlab run` per additional idle flow (`idle_flows_case`),
    and the peaks of the small and the large run, each the least of `repetitions` processes, each
    into a new store and planning afresh (the plan cache off)."""
    overrides = () if sampled else ("sample_interval=off",)
    peaks = []
    with tempfile.TemporaryDirectory() as tmp:
        env = plan_cache_environment("off", tmp)
        for flows in (small, large):
            spec = Path(tmp) / f"idle_{flows}.toml"
            spec.write_text(tomli_w.dumps(idle_flows_case(flows)))
            peaks.append(min(_peak_rss(overrides, Path(tmp) / f"idle_{flows}_{k}.duckdb", scenario=spec, env=env)
                             for k in range(repetitions)))
    return (peaks[1] - peaks[0]) / (large - small), peaks[0], peaks[1]


def reference_with(overrides: tuple[str, ...]) -> Any:
    """The reference dumbbell's `Scenario` with `overrides` (``KEY=VALUE``, as ``--set`` takes them)."""
    from bufferlab.spec import load_scenario
    from bufferlab.spec.overrides import parse_assignment

    scenario = load_scenario(REFERENCE)
    return scenario.with_overrides(dict(parse_assignment(o) for o in overrides)) if overrides else scenario


def series_copies(flows: int = 100, interval: str = "1ms", duration: str = "5s") -> tuple[float, float]:
    """(recorded series in bytes, copies of them at the run's peak): see the module docstring."""
    from bufferlab.pipeline.budget import SERIES_COPIES, memory_demands
    from bufferlab.pipeline.plan import plan

    fine = (f"topology.flows={flows}", f"sample_interval={interval}", f"duration={duration}")
    coarse = (f"topology.flows={flows}", "sample_interval=1s", f"duration={duration}")
    scenario = reference_with(fine)
    recorded = next(d.bytes for d in memory_demands(scenario, plan(scenario).resolved) if d.field == "sample_interval")
    series = recorded / SERIES_COPIES
    with tempfile.TemporaryDirectory() as tmp:
        extra = _peak_rss(fine, Path(tmp) / "fine.duckdb") - _peak_rss(coarse, Path(tmp) / "coarse.duckdb")
    return series, extra / series


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
    from bufferlab.analysis.derive import derive
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


# How many runs the store holds before the measured write (see --existing).
EXISTING_RUNS = (0, 1, 10, 50)


def _bench_run_id(k: int) -> str:
    """A run id (64 hex digits) of its own for the k-th copy of the reference run."""
    return hashlib.sha256(f"bench_pipeline existing {k}".encode()).hexdigest()


def persist_into_existing(repetitions: int, counts: tuple[int, ...] = EXISTING_RUNS) -> list[dict[str, float]]:
    """For each n of `counts`: the least CPU seconds of persisting the reference dumbbell's run
    into a copy of a store that holds n runs already, and that store's bytes (see --existing)."""
    from bufferlab.analysis.derive import derive
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import load_scenario
    from bufferlab.store.writer import persist

    planned = plan(load_scenario(REFERENCE))
    derived = derive(planned, simulate(planned))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        grown, copy = Path(tmp) / "grown.duckdb", Path(tmp) / "copy.duckdb"
        persist(dataclasses.replace(derived, run_id=_bench_run_id(-1)), Path(tmp) / "warm-up.duckdb")
        held = 0
        for n in sorted(counts):
            while held < n:
                persist(dataclasses.replace(derived, run_id=_bench_run_id(held)), grown)
                held += 1
            best = float("inf")
            for k in range(repetitions):
                copy.unlink(missing_ok=True)
                if n:
                    shutil.copyfile(grown, copy)
                started = time.process_time()
                persist(dataclasses.replace(derived, run_id=_bench_run_id(10_000 + k)), copy)
                best = min(best, time.process_time() - started)
            results.append({"runs": n, "persist_s": best, "store_bytes": grown.stat().st_size if n else 0})
    return results


def print_existing(repetitions: int, baseline: str | None) -> None:
    """The --existing table, with the baseline interpreter's figures beside it if given."""
    measured = {"after": persist_into_existing(repetitions)}
    if baseline:
        out = subprocess.run([baseline, __file__, "--existing-json", "--repetitions", str(repetitions)],
                             check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        measured["before"] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\npersist of the reference dumbbell's run into a store of N runs, CPU ms (best of {repetitions})")
    print(f"{'N runs held':<14}" + "".join(f"{version + ' ms':>12}{'store MB':>10}" for version in measured))
    for i, n in enumerate(EXISTING_RUNS):
        print(f"{n:<14}" + "".join(f"{1000 * rows[i]['persist_s']:>12.0f}{rows[i]['store_bytes'] / 1e6:>10.0f}"
                                   for rows in measured.values()), flush=True)


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


def scale_case_file(name: str, directory: Path) -> Path:
    """The scale ladder's case `name` (benchmarks/bench_scale.py) as a JSON scenario file in `directory`."""
    from bench_scale import CASES

    path = directory / f"{name}.json"
    path.write_text(json.dumps(CASES[name][1]()))
    return path


# How each measure of --stages is printed: heading, unit scale, digits after the point.
_STAGE_TABLES = {"cpu": ("CPU ms", 1000, 0), "faults": ("minor page faults", 1, 0),
                 "rss": ("resident growth MB (start: resident at the first mark)", 1e-6, 1)}


def print_stages(repetitions: int, pythons: list[tuple[str, str]], scale_case: str | None = None,
                 plan_cache: str = "kept") -> None:
    """The --stages tables: CPU ms, minor page faults and resident growth of each stage, per case
    and interpreter, and what was resident at the exit (with `scale_case`: of that case of the
    scale ladder alone); plans as `plan_cache` says (`whole_process`)."""
    with tempfile.TemporaryDirectory() as tmp:
        if scale_case is None:
            cases = [(label, overrides, REFERENCE) for label, overrides, *_ in WHOLE_PROCESS_CASES]
        else:
            cases = [(scale_case, (), scale_case_file(scale_case, Path(tmp)))]
        measured = [(label, stages(repetitions, overrides, tuple(python for _, python in pythons), scenario,
                                   plan_cache)) for label, overrides, scenario in cases]
    for measure, (heading, scale, digits) in _STAGE_TABLES.items():
        print(f"\n{heading} of each stage of a fresh run, least of {repetitions} processes")
        print(f"{'':<35}" + "".join(f"{stage:>8}" for stage in STAGES) + f"{'sum':>8}")
        for label, rows in measured:
            for (version, _), spent in zip(pythons, rows):
                name = f"{label} ({version})" if len(pythons) > 1 else label
                values = [spent[measure][stage] * scale for stage in STAGES]
                print(f"{name:<35}" + "".join(f"{v:>8.{digits}f}" for v in values) + f"{sum(values):>8.{digits}f}")
    print(f"\nresident MB at the exit (least of {repetitions}): all, anonymous, file-backed; peak")
    for label, rows in measured:
        for (version, _), spent in zip(pythons, rows):
            name = f"{label} ({version})" if len(pythons) > 1 else label
            end = spent["end"]
            print(f"{name:<35}" + "".join(f"{end[k] / 1e6:>8.1f}"
                                          for k in ("VmRSS", "RssAnon", "RssFile", "peak")))
    sys.stdout.flush()


def idle_flow_stages(repetitions: int, pythons: tuple[str, ...] = (sys.executable,), small: int = 1_000,
                     large: int = 10_000) -> list[dict[str, dict[str, float]]]:
    """For each interpreter of `pythons`: each stage's resident growth ("rss") and the peak
    resident bytes reached by its end ("peak"), per additional idle flow (`idle_flows_case`, no
    series, planned afresh), from `small` to `large` flows (see --idle-flows --stages); and the
    `large` flows' peak by the end of each stage, in bytes ("large_peak")."""
    with tempfile.TemporaryDirectory() as tmp:
        measured = []
        for flows in (small, large):
            case = {**idle_flows_case(flows), "sample_interval": "off"}
            scenario = Path(tmp) / f"idle_{flows}.json"
            scenario.write_text(json.dumps(case))
            measured.append(stages(repetitions, (), pythons, scenario, plan_cache="off"))
    return [{**{measure: {stage: (b[measure][stage] - a[measure][stage]) / (large - small) for stage in STAGES}
                for measure in ("rss", "peak")}, "large_peak": b["peak"]} for a, b in zip(*measured)]


def print_idle_flow_stages(repetitions: int, pythons: list[tuple[str, str]]) -> None:
    """The --idle-flows --stages table, one pair of rows per interpreter."""
    rows = idle_flow_stages(repetitions, tuple(python for _, python in pythons))
    print(f"bytes per additional idle flow (1,000 -> 10,000, no series), least of {repetitions} processes each")
    print(f"{'':<35}" + "".join(f"{stage:>8}" for stage in STAGES))
    for (version, _), per_flow in zip(pythons, rows):
        for measure, label in (("rss", "resident growth"), ("peak", "peak by its end")):
            name = f"{label} ({version})" if len(pythons) > 1 else label
            print(f"{name:<35}" + "".join(f"{per_flow[measure][stage]:>8.0f}" for stage in STAGES))
        name = f"MB peak of 10,000 ({version})" if len(pythons) > 1 else "MB peak of 10,000 flows"
        print(f"{name:<35}" + "".join(f"{per_flow['large_peak'][stage] / 1e6:>8.1f}" for stage in STAGES))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--large-flows", type=int, default=1000)
    parser.add_argument("--imports", action="store_true", help="only list a fresh run's slowest top-level imports")
    parser.add_argument("--memory", action="store_true", help="only measure the copies of the series at the peak")
    parser.add_argument("--idle-flows", action="store_true",
                        help="only the whole command's memory per additional idle flow (1,000 -> 10,000 flows); "
                             "with --stages, step by step")
    parser.add_argument("--stages", action="store_true", help="only the CPU time of each stage of a fresh run")
    parser.add_argument("--stages-case", metavar="CASE", default=None,
                        help="with --stages: the stages of one case of bench_scale.py (e.g. 10000x10g) instead")
    parser.add_argument("--existing", action="store_true",
                        help="only the persist into stores that hold 0, 1, 10 and 50 runs already")
    parser.add_argument("--existing-json", action="store_true", help=argparse.SUPPRESS)  # --baseline's child
    parser.add_argument("--baseline", metavar="PYTHON", default=None,
                        help="also measure another checkout's interpreter (before), e.g. ../main/.venv/bin/python")
    parser.add_argument("--plan-cache", choices=PLAN_CACHE_MODES, default="kept",
                        help="the spec's plan kept from a run before the measured ones (default), or made afresh "
                             "in every run (a spec's first run)")
    parser.add_argument("--ns3-binary", type=Path, default=None,
                        help="ns-3's dumbbell program (`make bench-ns3` compiles benchmarks/ns3/build/dumbbell): "
                             "measure ns-3's times now instead of quoting them")
    args = parser.parse_args(argv)
    pythons = [("after", sys.executable)] + ([("before", args.baseline)] if args.baseline else [])
    if args.existing_json:
        print(json.dumps(persist_into_existing(args.repetitions)))
        return 0
    if args.existing:
        print_existing(args.repetitions, args.baseline)
        return 0
    if args.stages_case is not None:
        print_stages(args.repetitions, pythons, args.stages_case, args.plan_cache)
        return 0
    if args.idle_flows and args.stages:
        print_idle_flow_stages(args.repetitions, pythons)
        return 0
    if args.imports:
        for name, seconds in top_imports(15):
            print(f"{seconds:>7.3f} s  {name}")
        return 0
    if args.memory:
        from bufferlab.pipeline.budget import SERIES_COPIES

        series, copies = series_copies()
        print(f"100 flows, 1 ms samples, 5 s: {series / 1e6:.0f} MB of series, {copies:.2f} copies at the peak "
              f"(the budget charges {SERIES_COPIES})")
        return 0
    if args.idle_flows:
        repetitions = min(args.repetitions, 3)
        for sampled in (False, True):
            per_flow, small, large = idle_flow_bytes(sampled, repetitions)
            label = "sampled every 100 ms" if sampled else "no time series"
            print(f"bufferlab run, 1,000 -> 10,000 idle flows, {label}: {per_flow / 1e3:.2f} kB per additional flow "
                  f"(target 2; peaks {small / 1e6:.1f} and {large / 1e6:.1f} MB, least of {repetitions})", flush=True)
        return 0
    ns3_times, ns3_source = ns3_seconds(args.ns3_binary)
    print(f"bufferlab run scenarios/dumbbell.toml into a new store, {args.repetitions} processes each, the spec's "
          + ("plan kept from a run before" if args.plan_cache == "kept" else "plan made afresh in each")
          + f"; ns-3 {ns3_source}")
    print(f"{'':<35}{'wall best':>10}{'median':>8}{'CPU best':>10}{'median':>8}{'ns-3':>7}{'x ns-3 (CPU)':>14}"
          f"{'target':>8}{'faults':>8}{'peak MB':>9}")
    for (label, overrides, _, _, target), ns3_s in zip(WHOLE_PROCESS_CASES, ns3_times):
        measured = whole_process(args.repetitions, overrides, tuple(python for _, python in pythons),
                                 args.plan_cache)
        for (version, _), whole in zip(pythons, measured):
            name = f"{label} ({version})" if args.baseline else label
            print(f"{name:<35}{whole['best_wall_s']:>10.3f}{whole['median_wall_s']:>8.3f}"
                  f"{whole['best_cpu_s']:>10.3f}{whole['median_cpu_s']:>8.3f}{ns3_s:>7.1f}"
                  f"{ns3_s / whole['best_wall_s']:>6.1f} ({ns3_s / whole['best_cpu_s']:>4.1f}){target:>7}x"
                  f"{whole['median_faults']:>8.0f}{whole['median_peak_bytes'] / 1e6:>9.1f}", flush=True)
    print_stages(args.repetitions, pythons, plan_cache=args.plan_cache)
    if args.stages:
        return 0
    from bufferlab.spec import load_scenario

    cases = [("dumbbell", load_scenario(REFERENCE).to_dict(), args.repetitions),
             (f"{args.large_flows} flows x 500 samples", large_case(args.large_flows), max(1, args.repetitions // 2))]
    columns = ("engine", "simulate", "crossing", "derive", "persist", "after engine")
    print(f"\n{'CPU s (best)':<26}" + "".join(f"{c:>13}" for c in columns))
    for label, scenario, repetitions in cases:
        steps = pipeline_steps(scenario, repetitions)
        print(f"{label:<26}" + "".join(f"{steps[c]:>13.3f}" for c in columns), flush=True)
    print_existing(args.repetitions, args.baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
