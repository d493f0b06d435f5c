"""What several commands share: their common options, and the reading of what those options say.

Nothing here imports more than click: every command's module imports this one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from ..errors import SpecError
from ..store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from ..spec import Scenario

__all__ = ["db_option", "force_option", "json_option", "study_option", "max_memory_option", "set_option",
           "overridden", "parsed"]

T = TypeVar("T")

db_option = click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
                         show_default=True, help="DuckDB result store.")
force_option = click.option("--force", is_flag=True, help="Simulate again even if the store has this run.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
study_option = click.option("--study", default=None, help="Store the run as part of this study (a name).")
max_memory_option = click.option(
    "--max-memory", "max_memory", default=None, metavar="SIZE",
    help="Refuse a run whose estimated memory exceeds SIZE, e.g. 8GB (default: half of the machine's memory).")
set_option = click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
                          help="Change a field of the scenario, e.g. --set topology.queue=500p --set flows[0].cca=cubic "
                               "(repeatable; validated like the file).")


def overridden(spec: Scenario, assignments: Sequence[str]) -> Scenario:
    """`spec` changed by the `--set KEY=VALUE` assignments."""
    if not assignments:
        return spec
    from ..spec.overrides import parse_assignment

    return spec.with_overrides(dict(parse_assignment(a) for a in assignments))


def parsed(option: str, parse: Callable[[str], T], text: str) -> T:
    """`parse(text)` of the value given to `option`; a unit it cannot read is bad input of that option."""
    from ..units import UnitError

    try:
        return parse(text)
    except UnitError as e:
        raise SpecError(option, str(e)) from None
