"""`bufferlab run SCENARIO.toml` and `bufferlab check SCENARIO.toml`: one scenario file simulated,
stored and summarised, or only checked. `execute` is also `ccperf`'s way through the store."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import SpecError
from .metrics import metrics_json, print_metrics
from .options import (Number, db_option, force_option, json_option, max_memory_option, overridden, read_input,
                      set_option, study_option)
from .progress import progress_bar

if TYPE_CHECKING:  # pragma: no cover
    from ..pipeline.plan import Plan
    from ..spec import Scenario

__all__ = ["run_command", "check_command", "plan_file", "execute"]


@click.command("run", short_help="Simulate a scenario, store it and print a summary.")
@click.argument("scenario", type=click.Path(path_type=Path))
@db_option
@force_option
@json_option
@click.option("--seed", type=Number(0, 2**64 - 1, whole=True), default=None, help="Override the spec's seed.")
@set_option
@study_option
@max_memory_option
@click.option("--metrics", "show_metrics", is_flag=True,
              help="Also print the flow, link and network metric tables.")
def run_command(scenario: Path, db: Path, force: bool, as_json: bool, seed: int | None, assignments: tuple[str, ...],
                study: str | None, max_memory: str | None, show_metrics: bool) -> None:
    """Simulate the scenario in SCENARIO.toml, store it and print a summary.

    A spec run before with the same --set and --seed is not validated again: its plan is read
    back from ~/.cache/bufferlab/plans while the file, the tables it reads and bufferlab are
    unchanged (BUFFERLAB_PLAN_CACHE=off turns that off)."""
    from ..pipeline.budget import parse_budget

    planned = plan_file(scenario, assignments, seed, parse_budget(max_memory))
    execute(planned, db, force=force, as_json=as_json, label=str(scenario), study=study,
            show_metrics=show_metrics, seed_given=seed is not None)


def plan_file(path: Path, assignments: Sequence[str], seed: int | None, budget: int | None) -> Plan:
    """The plan of the spec file at `path` changed by `assignments` and `seed`: kept from an
    earlier run of the same inputs (`pipeline.plan_cache`: no pydantic, no validation), or made
    now and kept."""
    from ..pipeline import plan_cache
    from ..pipeline.plan import plan

    data = read_input(path)  # read once, with a limit: a FIFO or /dev/zero is no spec
    try:
        asked: bytes | None = plan_cache.request(path, data, assignments, seed)
    except OSError:  # the spec's own reading below says what is wrong with the file
        asked = None
    if asked is not None and (kept := plan_cache.load(asked, budget)) is not None:
        return kept
    from ..spec.distributions import files_read

    with files_read() as files:
        spec = overridden(scenario_of(path, data), assignments)
        if seed is not None:
            spec = spec.with_seed(seed)
        planned = plan(spec, budget)  # every check, the engine's too, before the store or a spinner appears
    if asked is not None:
        plan_cache.keep(asked, planned, plan_cache.sources_of_planning(files))
    return planned


def scenario_of(path: Path, data: bytes) -> Scenario:
    """The scenario in the bytes `data` read from the file at `path` (its relative paths, such as
    a table of flow sizes, are relative to the file's folder)."""
    from ..spec import Scenario

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(str(path), f"cannot read: not UTF-8 text ({e.reason} at byte {e.start})") from None
    return Scenario.from_toml_text(text, source=str(path), base_dir=path.parent)


@click.command("check", short_help="Check a scenario as run would, without simulating it.")
@click.argument("scenario", type=click.Path(path_type=Path))
@set_option
@max_memory_option
def check_command(scenario: Path, assignments: tuple[str, ...], max_memory: str | None) -> None:
    """Check SCENARIO.toml as `run` would (every field, the engine's checks, the memory budget)
    without simulating or storing anything."""
    from ..pipeline.budget import parse_budget
    from ..pipeline.plan import plan

    budget = parse_budget(max_memory)
    planned = plan(overridden(scenario_of(scenario, read_input(scenario)), assignments), budget)
    click.echo(f"{scenario}: ok (run id {planned.run_id[:12]})")


def execute(planned: Plan, db: Path, *, force: bool, as_json: bool, label: str, study: str | None = None,
            show_metrics: bool = False, seed_given: bool = False) -> None:
    """Run `planned` through the store (`runner.run`), then print its summary: as JSON, or as
    tables once the run is stored (a failed write prints none of it)."""
    from .. import runner

    if seed_given and not planned.seed_matters:
        sys.stderr.write(f"note: --seed: {planned.name or label} has no random element (no random loss, jittered "
                         "starts, RTT draws, traffic generators or BBR), so every seed gives this same run\n")
    if as_json or not sys.stdout.isatty():
        summary = runner.run(planned, db, force=force, study=study)
    else:
        with progress_bar(label) as progress:
            summary = runner.run(planned, db, force=force, progress=progress, study=study)
    if as_json:
        payload = {"scenario": planned.name or label, "db": str(db), **summary.to_json_dict()}
        if show_metrics:
            payload["metrics"] = metrics_json(db, summary.run_id)
        click.echo(json.dumps(payload, indent=2))
    else:
        from .render import render_summary  # rich: only for the tables, never for --json

        render_summary(summary, scenario=planned.name or label, db=str(db)).print()
        if show_metrics:
            print_metrics(db, summary.run_id, all_links=False)
