"""`bufferlab ccperf --bw=80Mbps --rtts=15ms,15ms --qlen=10p ...`: a static dumbbell given in
ns-3 ccperf's flag vocabulary (seed 001), run and stored as `bufferlab run` stores a scenario
file (`run.execute`).

Imported when it is asked for (`lazy.LazyGroup`): declaring its 26 options, with the flags'
module, would slow every other command's start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..spec.ccperf import CCPERF_FLAGS, METADATA_FLAGS
from .options import (db_option, force_option, json_option, max_memory_option, overridden, set_option,
                      study_option)
from .run import execute

__all__ = ["ccperf_command"]


def _ccperf_options(func: Any) -> Any:
    for name, text in reversed([*CCPERF_FLAGS.items(), *METADATA_FLAGS.items()]):
        func = click.option(f"--{name}", name.replace("-", "_"), type=str, default=None, help=text)(func)
    return func


@click.command("ccperf")
@_ccperf_options
@db_option
@force_option
@json_option
@set_option
@study_option
@max_memory_option
def ccperf_command(db: Path, force: bool, as_json: bool, assignments: tuple[str, ...], study: str | None,
                   max_memory: str | None, **flags: str | None) -> None:
    """Run a static dumbbell given in ccperf's flag vocabulary (seed 001) and print its flow,
    link and network metric tables."""
    from ..pipeline.budget import parse_budget
    from ..pipeline.plan import plan
    from ..spec.ccperf import scenario_from_ccperf

    budget = parse_budget(max_memory)
    spec = overridden(scenario_from_ccperf({k.replace("_", "-"): v for k, v in flags.items()}), assignments)
    planned = plan(spec, budget)  # every check, the engine's too, before the store or a spinner appears
    execute(planned, db, force=force, as_json=as_json, label=spec.name or "ccperf", study=study,
             show_metrics=True)
