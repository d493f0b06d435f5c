"""`bufferlab ccperf --bw=80Mbps --rtts=15ms,15ms --qlen=10p ...`: a static dumbbell given in
ns-3 ccperf's flag vocabulary (seed 001), run and stored as `bufferlab run` stores a scenario
file (`run.execute`).

Imported when it is asked for (`lazy.LazyGroup`): declaring its 26 options, with the flags'
module, would slow every other command's start."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..errors import SpecError
from ..spec.ccperf import CCPERF_FLAGS, METADATA_FLAGS
from .options import (db_option, force_option, json_option, max_memory_option, overridden, set_option,
                      study_option)
from .run import execute

__all__ = ["ccperf_command"]


def _ccperf_options(func: Any) -> Any:
    for name, text in reversed([*CCPERF_FLAGS.items(), *METADATA_FLAGS.items()]):
        func = click.option(f"--{name}", name.replace("-", "_"), type=str, default=None, help=text)(func)
    return func


# The fields of the scenario `scenario_from_ccperf` builds, and the flags that set them: an error
# about one names the flag the user wrote (`--rtts`, not `flows[0].rtt`).
FIELD_FLAGS = {"rtt": "--rtts", "cca": "--algs", "start": "--start-times", "stop": "--stop-times",
               "src": "--sources", "dst": "--destinations", "traffic": "--traffic-models", "tcp": "--recoveries",
               "topology.bottleneck_rate": "--bw", "topology.queue": "--qlen", "topology.loss": "--loss",
               "duration": "--stop-time", "sample_interval": "--sample-interval", "seed": "--seed",
               "name": "--experiment-name"}


def flag_of(field: str) -> str | None:
    """The ccperf flag that set `field` of the built scenario (None if no flag did)."""
    match = re.fullmatch(r"flows\[\d+\]\.([a-z_]+).*", field)
    if match:
        return FIELD_FLAGS.get(match.group(1))
    return next((flag for key, flag in FIELD_FLAGS.items() if field == key or field.startswith(key + ".")), None)


@contextmanager
def _named_by_flag(set_keys: set[str]) -> Iterator[None]:
    """An error about a field a flag set, named by that flag (a field a --set assignment changed
    keeps its own name)."""
    try:
        yield
    except SpecError as e:
        flag = None if e.field.startswith("-") or e.field in set_keys else flag_of(e.field)
        if flag is None:
            raise
        raise SpecError(flag, e.reason) from None


@click.command("ccperf", short_help="Run a dumbbell given in ccperf's flags; print its metric tables.")
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
    link and network metric tables.

    The flows are ns-3 3.44's TCP sockets, as ccperf's are: no RACK, RFC 6298's timer with a 1 s
    floor, each controller's reduction and growth as its ns-3 class does them, and an ACK per
    segment. --set flow_defaults.tcp.KEY=VALUE changes one (e.g. ack_every=2)."""
    from ..pipeline.budget import parse_budget
    from ..pipeline.plan import plan
    from ..spec.ccperf import scenario_from_ccperf

    budget = parse_budget(max_memory)
    set_keys = {a.partition("=")[0].strip() for a in assignments}
    with _named_by_flag(set_keys):
        spec = scenario_from_ccperf({k.replace("_", "-"): v for k, v in flags.items()})
    spec = overridden(spec, assignments)
    with _named_by_flag(set_keys):
        planned = plan(spec, budget)  # every check, the engine's too, before the store or a spinner appears
    execute(planned, db, force=force, as_json=as_json, label=spec.name or "ccperf", study=study,
             show_metrics=True)
