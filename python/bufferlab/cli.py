"""The `bufferlab` command.

    bufferlab run SCENARIO.toml [--db PATH] [--force] [--json] [--seed N]
    bufferlab ccperf --bw=80Mbps --rtts=15ms,15ms --qlen=10p ... [--db PATH] [--force] [--json]

Bad input of any kind exits with status 2 and exactly one line ``error: <field>: <reason>`` on
stderr (no traceback), before anything is stored.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import duckdb

from . import __version__
from .ccperf import CCPERF_FLAGS, METADATA_FLAGS, scenario_from_ccperf
from .errors import SpecError
from .runner import EngineMissing
from .spec import Scenario
from .store import DEFAULT_DB

__all__ = ["main", "cli"]

EXIT_BAD_INPUT = 2
# Progress reports of a run: (simulated ns reached, simulated ns at the end).
runner_progress = Callable[[int, int], None]


def _version_text() -> str:
    try:
        from .runner import engine_version

        engine = engine_version()
    except EngineMissing:
        engine = "not built"
    return f"bufferlab {__version__} (engine {engine})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_text())
        ctx.exit(0)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the package and engine versions and exit.")
def cli() -> None:
    """bufferlab: a laboratory for router buffer sizing and congestion control."""


_db_option = click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
                          show_default=True, help="DuckDB result store.")
_force_option = click.option("--force", is_flag=True, help="Simulate again even if the store has this run.")
_json_option = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")


@cli.command("run")
@click.argument("scenario", type=click.Path(path_type=Path))
@_db_option
@_force_option
@_json_option
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=None, help="Override the spec's seed.")
def run_command(scenario: Path, db: Path, force: bool, as_json: bool, seed: int | None) -> None:
    """Simulate the scenario in SCENARIO.toml, store it and print a summary."""
    spec = Scenario.from_toml(scenario)
    if seed is not None:
        spec = spec.with_seed(seed)
    _execute(spec, db, force=force, as_json=as_json, label=str(scenario))


def _ccperf_options(func: Any) -> Any:
    for name, text in reversed([*CCPERF_FLAGS.items(), *METADATA_FLAGS.items()]):
        func = click.option(f"--{name}", name.replace("-", "_"), type=str, default=None, help=text)(func)
    return func


@cli.command("ccperf")
@_ccperf_options
@_db_option
@_force_option
@_json_option
def ccperf_command(db: Path, force: bool, as_json: bool, **flags: str | None) -> None:
    """Run a static dumbbell given in ccperf's flag vocabulary (seed 001)."""
    spec = scenario_from_ccperf({k.replace("_", "-"): v for k, v in flags.items()})
    _execute(spec, db, force=force, as_json=as_json, label=spec.name or "ccperf")


def _execute(spec: Scenario, db: Path, *, force: bool, as_json: bool, label: str) -> None:
    from . import runner
    from .render import print_summary

    resolved = spec.resolve()
    runner.validate(resolved)  # the engine's checks, before the store or a spinner appears
    if as_json or not sys.stdout.isatty():
        summary = runner.run(spec, db, force=force)
    else:
        with _progress_bar(label) as progress:
            summary = runner.run(spec, db, force=force, progress=progress)
    if as_json:
        payload = {"scenario": spec.name or label, "db": str(db), **summary.to_json_dict()}
        click.echo(json.dumps(payload, indent=2))
    else:
        print_summary(summary, scenario=spec.name or label, db=str(db))


@contextmanager
def _progress_bar(label: str) -> Iterator[runner_progress]:
    """A bar of simulated time for runs on a terminal (rich hides it when the run is quick)."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (TextColumn("simulating {task.description}"), BarColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[simulated]}"), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=None, simulated="")

        def report(now_ns: int, end_ns: int) -> None:
            done = "simulated; storing the results" if now_ns >= end_ns else "simulated"
            bar.update(task, completed=now_ns, total=end_ns, simulated=f"{now_ns / 1e9:.1f}/{end_ns / 1e9:g} s {done}")

        yield report


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
        return f"{command}: unknown command (known: run, ccperf)"
    return f"usage: {message}"


def _fail(line: str, code: int = EXIT_BAD_INPUT) -> int:
    sys.stderr.write("error: " + " ".join(line.split()) + "\n")
    sys.stderr.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `bufferlab` console script; returns the exit status."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="bufferlab",
                          standalone_mode=False)
    except click.UsageError as e:
        return _fail(_usage_error_line(e))
    except SpecError as e:
        return _fail(str(e))
    except EngineMissing as e:
        return _fail(f"engine: {e}", 1)
    except duckdb.IOException as e:
        return _fail(f"--db: cannot open the store: {e}", 1)
    except click.Abort:
        return _fail("interrupted", 130)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
