"""The `bufferlab` command.

    bufferlab run SCENARIO.toml [--db PATH] [--force] [--json] [--seed N] [--study NAME] [--metrics]
    bufferlab ccperf --bw=80Mbps --rtts=15ms,15ms --qlen=10p ... [--db PATH] [--force] [--json]
    bufferlab results list|show|query|export|monitor|csv|pcap ... [--db PATH]
    bufferlab size --rate 100Mbps --rtt 10ms,990ms [--flows N] [--packet 1500B] [--json]
    bufferlab advise --rate 100Mbps --flows 20 --rtt 20ms..200ms --target 'utilisation>=0.98' [-o advice.png]
    bufferlab plot KIND RUN... [-o FILE.pdf|.svg|.png] [--flows ...] [--links ...] [--from T --to T]
    bufferlab sweep SWEEP.toml [--workers N] [--dask local|tcp://HOST:PORT]
    bufferlab reproduce NAME [--quick] | --list
    bufferlab report [DB] [-o DIR]        bufferlab serve [DB] [--port N]

Bad input of any kind exits with status 2 and exactly one line ``error: <field>: <reason>`` on
stderr (no traceback), before anything is stored.

Start-up is kept instant: this module imports only click and light modules; pydantic, polars,
numpy, DuckDB and rich are imported inside the commands that use them (`bufferlab._lazy`).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .errors import InterruptedAfterWrite, SpecError, Terminated, TerminatedAfterWrite
from .pipeline.engine import EngineFailure, EngineMissing
from .store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline.plan import Plan
    from .spec import Scenario
    from .store.reader import Results

__all__ = ["main", "cli"]

EXIT_BAD_INPUT = 2
# New container objects between two passes of the cyclic garbage collector in the command's
# process (Python's default is 700; see `prepare_process`).
GC_THRESHOLD = 1_000_000
# Wall seconds a run on a terminal goes without a progress bar (see `_progress_bar`).
PROGRESS_BAR_AFTER_S = 0.5
# Progress reports of a run: (simulated ns reached, simulated ns at the end).
runner_progress = Callable[[int, int], None]


def _version_text() -> str:
    from . import __version__

    try:
        from .pipeline.engine import engine_version

        engine = engine_version()
    except EngineMissing:
        engine = "not built"
    return f"bufferlab {__version__} (engine {engine})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_text())
        ctx.exit(0)


class LazyGroup(click.Group):
    """A command group whose commands defined beside the step they drive are imported when one is
    first asked for (by name, or all of them for ``--help``): `run` does not pay for the modules
    of `size`, `advise`, `sweep`, `plot`, `report` and `reproduce` (20 ms of a fresh start), nor
    for declaring `ccperf`'s and `results`' options (1.2 ms, issue 15).
    `lazy` maps each such command's name to ``"module:attribute"`` (relative to this package)."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.pop(cmd_name, None)
        if where is not None:
            module, _, attribute = where.partition(":")
            self.add_command(getattr(importlib.import_module(module, __package__), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             lazy={"ccperf": ".ccperf_command:ccperf_command", "results": ".results_command:results_group",
                   "sweep": ".study.command:sweep_command", "size": ".sizing.command:size_command",
                   "advise": ".sizing.advise_command:advise_command",
                   "reproduce": ".experiments.command:reproduce_command", "plot": ".plot_command:plot_command",
                   "report": ".report.command:report_command", "serve": ".report.command:serve_command"})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the package and engine versions and exit.")
def cli() -> None:
    """bufferlab: a laboratory for router buffer sizing and congestion control."""


_db_option = click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
                          show_default=True, help="DuckDB result store.")
_force_option = click.option("--force", is_flag=True, help="Simulate again even if the store has this run.")
_json_option = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
_study_option = click.option("--study", default=None, help="Store the run as part of this study (a name).")
_max_memory_option = click.option(
    "--max-memory", "max_memory", default=None, metavar="SIZE",
    help="Refuse a run whose estimated memory exceeds SIZE, e.g. 8GB (default: half of the machine's memory).")
_set_option = click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
                           help="Change a field of the scenario, e.g. --set topology.queue=500p --set flows[0].cca=cubic "
                                "(repeatable; validated like the file).")


def _overridden(spec: Scenario, assignments: Sequence[str]) -> Scenario:
    if not assignments:
        return spec
    from .spec.overrides import parse_assignment

    return spec.with_overrides(dict(parse_assignment(a) for a in assignments))


@cli.command("run")
@click.argument("scenario", type=click.Path(path_type=Path))
@_db_option
@_force_option
@_json_option
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=None, help="Override the spec's seed.")
@_set_option
@_study_option
@_max_memory_option
@click.option("--metrics", "show_metrics", is_flag=True,
              help="Also print the flow, link and network metric tables (metrics.md).")
def run_command(scenario: Path, db: Path, force: bool, as_json: bool, seed: int | None, assignments: tuple[str, ...],
                study: str | None, max_memory: str | None, show_metrics: bool) -> None:
    """Simulate the scenario in SCENARIO.toml, store it and print a summary.

    A spec run before with the same --set and --seed is not validated again: its plan is read
    back from ~/.cache/bufferlab/plans while the file, the tables it reads and bufferlab are
    unchanged (BUFFERLAB_PLAN_CACHE=off turns that off)."""
    from .pipeline.budget import parse_budget

    planned = _planned(scenario, assignments, seed, parse_budget(max_memory))
    _execute(planned, db, force=force, as_json=as_json, label=str(scenario), study=study,
             show_metrics=show_metrics, seed_given=seed is not None)


def _planned(path: Path, assignments: Sequence[str], seed: int | None, budget: int | None) -> Plan:
    """The plan of the spec file at `path` changed by `assignments` and `seed`: kept from an
    earlier run of the same inputs (`pipeline.plan_cache`: no pydantic, no validation), or made
    now and kept."""
    from .pipeline import plan_cache
    from .pipeline.plan import plan

    try:
        asked: bytes | None = plan_cache.request(path, path.read_bytes(), assignments, seed)
    except OSError:  # the spec's own reading below says what is wrong with the file
        asked = None
    if asked is not None and (kept := plan_cache.load(asked, budget)) is not None:
        return kept
    from .spec import Scenario
    from .spec.distributions import files_read

    with files_read() as files:
        spec = _overridden(Scenario.from_toml(path), assignments)
        if seed is not None:
            spec = spec.with_seed(seed)
        planned = plan(spec, budget)  # every check, the engine's too, before the store or a spinner appears
    if asked is not None:
        plan_cache.keep(asked, planned, plan_cache.sources_of_planning(files))
    return planned


@cli.command("check")
@click.argument("scenario", type=click.Path(path_type=Path))
@_set_option
@_max_memory_option
def check_command(scenario: Path, assignments: tuple[str, ...], max_memory: str | None) -> None:
    """Check SCENARIO.toml as `run` would (every field, the engine's checks, the memory budget)
    without simulating or storing anything."""
    from .pipeline.budget import parse_budget
    from .pipeline.plan import plan
    from .spec import Scenario

    budget = parse_budget(max_memory)
    planned = plan(_overridden(Scenario.from_toml(scenario), assignments), budget)
    click.echo(f"{scenario}: ok (run id {planned.run_id[:12]})")


def _execute(planned: Plan, db: Path, *, force: bool, as_json: bool, label: str, study: str | None = None,
             show_metrics: bool = False, seed_given: bool = False) -> None:
    """Run `planned` through the store (`runner.run`), then print its summary: as JSON, or as
    tables once the run is stored (a failed write prints none of it)."""
    from . import runner

    if seed_given and not planned.seed_matters:
        sys.stderr.write(f"note: --seed: {planned.name or label} has no random element (no random loss, jittered "
                         "starts, RTT draws, traffic generators or BBR), so every seed gives this same run\n")
    if as_json or not sys.stdout.isatty():
        summary = runner.run(planned, db, force=force, study=study)
    else:
        with _progress_bar(label) as progress:
            summary = runner.run(planned, db, force=force, progress=progress, study=study)
    if as_json:
        payload = {"scenario": planned.name or label, "db": str(db), **summary.to_json_dict()}
        if show_metrics:
            payload["metrics"] = _metrics_json(db, summary.run_id)
        click.echo(json.dumps(payload, indent=2))
    else:
        from .render import render_summary  # rich: only for the tables, never for --json

        render_summary(summary, scenario=planned.name or label, db=str(db)).print()
        if show_metrics:
            _print_metrics(db, summary.run_id, all_links=False)


def _console() -> Any:
    from rich.console import Console

    # Piped output gets a fixed, roomy width instead of rich's 80-column default.
    return Console(width=None if sys.stdout.isatty() else 160)


def _metric_columns(db: Path | Results, run_id: str, all_links: bool) -> tuple[dict[str, list[Any]], ...]:
    """The run's flow, link (the bottleneck's, or `all_links`) and network metric tables, column
    by column: a few rows, read without polars (`Results.table_columns`), from the store at `db`
    or through a `Results` already open."""
    from .store.reader import reading

    with reading(db) as res:
        flows, links, net = (res.table_columns(name, run_id)
                             for name in ("flow_metrics", "link_metrics", "network_metrics"))
    if not all_links:
        keep = [i for i, bottleneck in enumerate(links.get("bottleneck", [])) if bottleneck]
        links = {column: [values[i] for i in keep] for column, values in links.items()}
    return flows, links, net


def _records(columns: dict[str, list[Any]], drop: str = "run_id") -> list[dict[str, Any]]:
    """Column-wise values as one dict per row, without the `drop` column."""
    names = [name for name in columns if name != drop]
    return [dict(zip(names, row)) for row in zip(*(columns[name] for name in names))]


def _print_metrics(db: Path | Results, run_id: str, *, all_links: bool) -> None:
    from .analysis import metrics
    from .render import metric_tables

    flows, links, net = _metric_columns(db, run_id, all_links)
    console = _console()
    if not flows.get("run_id"):
        console.print("no metric tables stored for this run (stored by an older bufferlab: run it again "
                      "with --force)")
        return
    tables = metric_tables(flows, metrics.FLOW_METRICS, title="Flow metrics")
    if links.get("run_id"):
        tables += metric_tables(links, metrics.LINK_METRICS, title="Link metrics")
    tables += metric_tables(net, metrics.NETWORK_METRICS, title="Network metrics")
    for table in tables:
        console.print(table)


def _metrics_json(db: Path | Results, run_id: str, all_links: bool = False) -> dict[str, Any]:
    flows, links, net = _metric_columns(db, run_id, all_links)
    network = _records(net)
    return {"flows": _records(flows), "links": _records(links), "network": network[0] if network else None}


@contextmanager
def _progress_bar(label: str) -> Iterator[runner_progress]:
    """A bar of simulated time for runs on a terminal that last longer than
    `PROGRESS_BAR_AFTER_S`; rich removes it when the run is over. A quicker run is over before a
    bar could tell anything, and drawing one (rich's progress module, its refresh thread) cost
    15 ms of CPU time in the reference dumbbell's run of 0.12 s."""
    started = time.monotonic()
    with ExitStack() as stack:
        bar: Any = None  # and its task, once drawn
        task: Any = None

        def report(now_ns: int, end_ns: int) -> None:
            nonlocal bar, task
            if bar is None:
                if time.monotonic() - started < PROGRESS_BAR_AFTER_S:
                    return
                bar, task = _draw_progress_bar(stack, label, started)
            done = "simulated; storing the results" if now_ns >= end_ns else "simulated"
            bar.update(task, completed=now_ns, total=end_ns, simulated=f"{now_ns / 1e9:.1f}/{end_ns / 1e9:g} s {done}")

        yield report


def _draw_progress_bar(stack: ExitStack, label: str, started: float) -> tuple[Any, Any]:
    """A rich progress bar, shown until `stack` closes, and its task: the run `label` that began
    at `started` (`time.monotonic`, rich's clock)."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (TextColumn("simulating {task.description}"), BarColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[simulated]}"), TimeElapsedColumn())
    bar = stack.enter_context(Progress(*columns, transient=True))
    task = bar.add_task(label, total=None, simulated="")
    bar.tasks[-1].start_time = started  # the elapsed time is the run's, not the bar's
    return bar, task


def _usage_error_line(error: click.UsageError) -> str:
    """Click's usage errors as one `field: reason` line."""
    if isinstance(error, click.NoSuchOption):
        return f"{error.option_name}: unknown flag"
    if isinstance(error, click.BadOptionUsage):
        return f"{error.option_name}: {error.message[:1].lower()}{error.message[1:]}"
    if isinstance(error, click.BadParameter | click.MissingParameter) and error.param is not None:
        param = error.param
        name = param.opts[0] if param.opts else (param.name or "argument")
        if isinstance(param, click.Argument):
            name = (param.name or "argument").upper()
        if isinstance(error, click.MissingParameter):
            return f"{name}: missing"
        return f"{name}: {error.message}"
    message = error.format_message()
    if message.startswith("No such command"):
        command = message.split("'")[1] if "'" in message else message
        return f"{command}: unknown command (known: {', '.join(cli.list_commands(click.Context(cli)))})"
    return f"usage: {message}"


def _fail(line: str, code: int = EXIT_BAD_INPUT) -> int:
    sys.stderr.write("error: " + " ".join(line.split()) + "\n")
    sys.stderr.flush()
    return code


def _is_store_error(error: Exception) -> bool:
    """An error of DuckDB (the store): DuckDB is imported only by the commands that use it, so an
    error of its type can only come once it is loaded."""
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(error, duckdb.Error)


EXIT_INTERRUPTED = 128 + signal.SIGINT
# An interruption held back by a write (`interrupts.deferred`) stops the command after the commit.
STORED_BEFORE_STOPPING = "the run being stored when it came was stored whole first; nothing after it was done"
EXIT_TERMINATED = 128 + signal.SIGTERM


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(f"signal {signum}")


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and SIGTERM raises Terminated, whatever the parent set up
    (a shell's background job starts with SIGINT ignored). Only the main thread can install them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `bufferlab` console script; returns the exit status.

    Every failure ends in one line on stderr: bad input (spec, flags, store, output paths) exits
    2, an interruption 130 (SIGINT) or 143 (SIGTERM), a bug of bufferlab itself 1."""
    try:
        with _signals_interrupt():
            # Not `cli.main`: it turns every KeyboardInterrupt (and so SIGTERM) into a bare Abort.
            args = list(argv) if argv is not None else sys.argv[1:]
            with cli.make_context("bufferlab", args) as ctx:
                result = cli.invoke(ctx)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.UsageError as e:
        return _fail(_usage_error_line(e))
    except SpecError as e:
        return _fail(str(e))
    except EngineMissing as e:
        return _fail(f"engine: {e}", 1)
    except EngineFailure as e:
        return _fail(str(e), 1)
    except TerminatedAfterWrite:
        return _fail(f"interrupted by SIGTERM: {STORED_BEFORE_STOPPING}", EXIT_TERMINATED)
    except InterruptedAfterWrite:
        return _fail(f"interrupted: {STORED_BEFORE_STOPPING}", EXIT_INTERRUPTED)
    except Terminated:
        return _fail("interrupted by SIGTERM: nothing of the unfinished run was stored", EXIT_TERMINATED)
    except (KeyboardInterrupt, click.Abort):
        return _fail("interrupted: nothing of the unfinished run was stored", EXIT_INTERRUPTED)
    except Exception as e:  # noqa: BLE001 - each kind below is one line
        if _is_store_error(e):
            return _fail(f"--db: {' '.join(str(e).split()) or type(e).__name__}")
        # DuckDB reports a Ctrl-C that lands inside a query as RuntimeError("Query interrupted").
        if isinstance(e, RuntimeError) and "interrupted" in str(e).lower():
            return _fail("interrupted: nothing of the unfinished run was stored", EXIT_INTERRUPTED)
        if isinstance(e, MemoryError):
            return _fail("memory: the machine ran out of memory (lower --max-memory to refuse such runs earlier)", 1)
        if isinstance(e, BrokenPipeError) and _stdout_reader_gone():
            return _stop_writing_stdout()
        return _internal(e)  # a bug: one line, the traceback on request
    return result if isinstance(result, int) else 0


def command_line() -> NoReturn:
    """The `bufferlab` command: its process settings, `main`, then exit with its status at once."""
    prepare_process()
    exit_now(main())


def prepare_process() -> None:
    """Settings of the command's process (not of the library imported elsewhere).

    numpy's OpenBLAS starts a pool of worker threads when numpy is imported, and they spin for a
    while waiting for work: 35-40 ms of CPU time in every command that imports numpy (plots,
    studies, reports; `bufferlab run` no longer does: its metrics are the engine crate's), for
    nothing, since nothing multiplies matrices. The command asks for one BLAS thread unless the
    environment says otherwise.

    Python's cyclic garbage collector runs whenever 700 more container objects exist than at its
    last pass, and every tenth pass walks the survivors of the ten before: about 100 passes in a
    fresh `bufferlab run`, most of them over the objects its imports made (classes, functions,
    pydantic's schemas), 5-6 ms of CPU time for a command that leaves little cyclic garbage.
    The command lets 1,000,000 accumulate instead (`GC_THRESHOLD`): a short run needs no
    pass, a long one a few (1000 flows for 5 s: 0.15 s less CPU time at 100,000), and the garbage
    that waits between passes stays bounded (the peak memory of a finely recorded run is
    unchanged). At 100,000, a 10,000-flow dumbbell's spec still took three passes over the
    objects it had just made (33 ms of CPU time, none of them garbage); at 1,000,000 it takes
    none, with the same peak memory (10,000 flows for 10 s 368 MB, the dumbbell's 1000 flows for
    5 s 856 MB; issue 15).

    A command started with stdout or stderr closed writes there nothing (`_discard_closed_streams`)."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _discard_closed_streams()


def _discard_closed_streams() -> None:
    """A command started with stdout or stderr closed (`bufferlab run x.toml >&-`) writes what it
    would have written there to /dev/null, as Python's `print` does when it has no stdout (the
    interpreter then sets `sys.stdout` to None, on which click's and rich's output, and the
    command's exit, failed with an internal error after the run was stored). The descriptor is
    opened too, so that no file the command opens takes the number 1 or 2 by chance."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        if name == "stdout":
            sys.stdout = stream
        else:
            sys.stderr = stream


def exit_now(status: int) -> NoReturn:
    """End the process with `status` once everything the command wrote is out: Python's exit
    functions (`atexit`) run and stdout and stderr are flushed, but the interpreter is not torn
    down. Freeing every module and object (polars', DuckDB's and numpy's thread pools, a run's
    tables) does nothing a finished command needs, and costs 50-100 ms of CPU time after
    `bufferlab run` (a quarter second of waiting on a busy machine); by then every store the
    command opened is committed and closed.

    What the process still costs after this (`bench_pipeline.py --stages`' exit: the dumbbell
    8-9 ms of CPU time, one flow 6-7) is the kernel's, not Python's: the exit functions take 0.2
    ms, the rest is the freeing of the process's memory, which grows with what it touched (the
    dumbbell's run ends with 145 MB resident, 85 MB of it anonymous; one flow's with 110 MB). A
    process that touches 0, 50, 100, 150 or 300 MB and ends with `os._exit` costs 0.4, 3.8, 7.5,
    11 or 20 ms the same way; the process's other threads are idle by then. Only a process that
    touches less memory would cut it (glibc's huge pages for malloc, `GLIBC_TUNABLES=
    glibc.malloc.hugetlb=1`, changed the command's CPU time by less than its noise; issue 15)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`bufferlab ... | head`) or stream
            if stream is sys.stdout and status == 0:
                status = 120  # what the interpreter's own exit reports when stdout cannot be flushed
    os._exit(status)


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (`bufferlab results list | head -1`):
    the pipe then reports an error condition to poll. A broken pipe elsewhere (a sweep's worker
    that died) is not this, and stays an error of its own."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no stdout, or not a file
        return False


def _stop_writing_stdout() -> int:
    """End quietly after stdout's reader went away, as rich's console does when it meets that
    (`Console.on_broken_pipe`): what is left to print goes nowhere, so the exit's flush cannot
    fail again, and the status is 1 with nothing on stderr (the reader chose to stop reading;
    nothing went wrong in the command). A run is stored before its summary is printed."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 1


def _internal(error: Exception) -> int:
    """A bug of bufferlab: one line, exit 1; BUFFERLAB_DEBUG=1 shows the traceback instead."""
    if os.environ.get("BUFFERLAB_DEBUG"):
        raise error
    return _fail(f"internal: {type(error).__name__}: {error} (a bug in bufferlab; BUFFERLAB_DEBUG=1 shows the "
                 "traceback)", 1)


if __name__ == "__main__":  # pragma: no cover
    command_line()
