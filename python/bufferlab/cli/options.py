"""What several commands share: their common options, and the reading of what those options say.

Every option is checked here before a command simulates, stores or draws anything, so that every
command words the same mistake the same way, naming the option as the user wrote it (its long
name, ``--output`` rather than ``-o``):

- numbers (`Number`) are finite and in their range: ``expected a number from 0.1 to 3600, got
  nan``; a count is whole (``expected a whole number from 1 to 1024, got 0``);
- lists (`listed`) have no empty entry and at least one entry;
- an output file or folder (`writable_file`, `writable_folder`) can be written before the work
  that fills it starts; what fails while it is written (a full disk) is one line naming the
  option too (`errors.writing`);
- an input file is read whole, up to `MAX_INPUT_BYTES` (`read_input`), so that a "file" that
  never ends (``/dev/zero``, a pipe fed forever) is refused instead of filling memory.

Nothing here imports more than click: every command's module imports this one."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import SpecError
from ..store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    from ..spec import Scenario

__all__ = ["db_option", "force_option", "json_option", "study_option", "max_memory_option", "set_option",
           "overridden", "parsed", "Number", "listed", "writable_file", "writable_folder", "figure_output", "read_input",
           "option_name", "MAX_INPUT_BYTES", "MAX_WORKERS"]

T = TypeVar("T")

# The largest spec file read: far above any real one (a spec of 10,000 flows is about 1 MB), far
# below what would strain memory (the limit of `spec.scenario.read_text_file` too).
MAX_INPUT_BYTES = 16 * 2**20
# Worker processes a command may start: more than any machine's cores, fewer than would exhaust
# the process table.
MAX_WORKERS = 1024

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


def option_name(param: click.Parameter | None) -> str:
    """How an error names a parameter: an option by its long name (``--output``, not ``-o``), an
    argument by its metavar in capitals."""
    if param is None:
        return "argument"
    if isinstance(param, click.Argument):
        return (param.name or "argument").upper()
    return next((o for o in param.opts if o.startswith("--")), param.opts[0] if param.opts else param.name or "option")


def _number_text(x: float) -> str:
    return str(x) if isinstance(x, int) else str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:g}"


class Number(click.ParamType):  # type: ignore[type-arg]
    """A finite number within bounds: `low`/`high` inclusive, `above`/`below` exclusive; `whole`
    for a count. NaN and infinities are refused, as is any value outside the range, with one
    wording: ``expected a number from 0.1 to 3600, got nan``."""

    def __init__(self, low: float | None = None, high: float | None = None, *, above: float | None = None,
                 below: float | None = None, whole: bool = False) -> None:
        self.low, self.high, self.above, self.below, self.whole = low, high, above, below, whole
        self.name = "integer" if whole else "number"

    def expected(self) -> str:
        """What the option takes, e.g. "a number from 0.1 to 3600", "a whole number of 1 or more"."""
        kind = "a whole number" if self.whole else "a number"
        lower = (f"above {_number_text(self.above)}" if self.above is not None else
                 f"from {_number_text(self.low)}" if self.low is not None else None)
        upper = (f"below {_number_text(self.below)}" if self.below is not None else
                 f"to {_number_text(self.high)}" if self.high is not None else None)
        if lower is None and upper is None:
            return f"a finite {'whole ' if self.whole else ''}number"
        if upper is None:
            return f"{kind} {lower}" if self.above is not None else f"{kind} of {_number_text(self.low or 0)} or more"
        if lower is None:
            return f"{kind} {upper}" if self.below is not None else f"{kind} of at most {upper[3:]}"
        if self.above is None and self.below is None:
            return f"{kind} {lower} {upper}"
        return f"{kind} {lower} and " + (upper if self.below is not None else f"at most {upper[3:]}")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number: float | int = value
        else:
            text = str(value).strip()
            try:
                number = int(text) if self.whole else float(text)
            except ValueError:
                self.fail(f'expected {self.expected()}, got "{value}"', param, ctx)
        if not math.isfinite(number) or (self.whole and number != int(number)):
            self.fail(f"expected {self.expected()}, got {value}", param, ctx)
        if ((self.low is not None and number < self.low) or (self.high is not None and number > self.high)
                or (self.above is not None and number <= self.above)
                or (self.below is not None and number >= self.below)):
            self.fail(f"expected {self.expected()}, got {value}", param, ctx)
        return int(number) if self.whole else float(number)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str | None:
        return "INTEGER" if self.whole else "NUMBER"


def listed(option: str, values: str | Sequence[str], *, what: str = "entry") -> list[str]:
    """The comma-separated entries of an option's value (or of each of its repeated values):
    stripped, none of them empty, at least one."""
    texts = [values] if isinstance(values, str) else list(values)
    out: list[str] = []
    for text in texts:
        parts = [p.strip() for p in text.split(",")]
        if any(not p for p in parts):
            raise SpecError(option, f'empty {what} in "{text}"' if text.strip() else f"expected at least one {what}")
        out.extend(parts)
    if not out:
        raise SpecError(option, f"expected at least one {what}")
    return out


def _first_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _probe_folder(option: str, folder: Path) -> None:
    """Whether files can be made in `folder`: its missing parts made, a file made in it and
    removed, and the parts made removed again (nothing is left by a check)."""
    made: list[Path] = []
    anchor = _first_existing(folder)
    if not anchor.is_dir():
        raise SpecError(option, f"cannot write into {folder}: {anchor} is a file, not a folder")
    try:
        for missing in reversed([p for p in [folder, *folder.parents] if p not in anchor.parents and p != anchor]):
            missing.mkdir()
            made.append(missing)
        handle, name = tempfile.mkstemp(prefix=".bufferlab-check-", dir=folder)
        os.close(handle)
        os.unlink(name)
    except OSError as e:
        raise SpecError(option, f"cannot write into {folder}: {_reason(e)}") from None
    finally:
        for part in reversed(made):
            try:
                part.rmdir()
            except OSError:
                pass


def writable_file(option: str, path: Path) -> Path:
    """`path` if a file can be written there (checked before the work that fills it)."""
    if path.is_dir():
        raise SpecError(option, f"{path} is a folder, not a file")
    if path.exists():
        try:
            with open(path, "ab"):
                pass
        except OSError as e:
            raise SpecError(option, f"cannot write {path}: {_reason(e)}") from None
        return path
    _probe_folder(option, path.parent)
    return path


def figure_output(option: str, path: Path) -> Path:
    """`path` if it names a figure format (PDF, SVG, PNG) and can be written."""
    from ..plots.common import FORMATS  # numpy with it: only a command that draws asks

    if path.suffix.lower() not in FORMATS:
        raise SpecError(option, f'unknown format "{path.suffix or path.name}" (known: {", ".join(FORMATS)})')
    return writable_file(option, path)


def writable_folder(option: str, path: Path) -> Path:
    """`path` if it is, or can be made, a folder that files can be written into."""
    if path.exists() and not path.is_dir():
        raise SpecError(option, f"{path} is a file, not a folder")
    _probe_folder(option, path)
    return path


def read_input(path: Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of an input file (a spec, a sweep), at most `limit` of them; a file that is
    larger, or never ends, is refused naming the file, as is one that cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise SpecError(str(path), "no such file") from None
    except IsADirectoryError:
        raise SpecError(str(path), "is a folder, not a file") from None
    except OSError as e:
        raise SpecError(str(path), f"cannot read: {_reason(e)}") from None
    if len(data) > limit:
        raise SpecError(str(path), f"more than {limit // 2**20} MB: not a spec file (a file that never ends, such as "
                                   "/dev/zero, is read no further)")
    return data


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
