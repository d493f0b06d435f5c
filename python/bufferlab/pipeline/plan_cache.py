"""The plan cache: a `bufferlab run` of a spec it has planned before skips the spec's validation.

Planning is a pure function of what the user gave (the spec file's bytes, `--set` and `--seed`,
the working directory that relative file names are read from), of the code that validates and
resolves it (our spec modules, pydantic, the engine's checks) and of the files the spec reads
besides itself (empirical distributions' tables). Its result, a `Plan`, is plain data. The
command keeps each plan it makes in a file with its inputs, and a later run of the same inputs
reads the plan back instead of importing pydantic and validating the spec, about half of what
the command does before its engine starts (pydantic's import above all). It is to the spec what
`__pycache__` is to a module, and it is checked the same way: a kept plan is used only if every
source file whose code ran while planning, and every file the spec read, still has the size and
modification time it had then; anything else (a missing, stale, corrupt or foreign file) is a
miss, and a miss is the full validation, with its error messages.

The memory budget depends on the machine (half its memory, or `--max-memory`), so it is checked
again on a hit against the estimate kept with the plan; a run over budget is planned afresh, which
refuses it with the usual message.

Where: ``$BUFFERLAB_PLAN_CACHE`` (a directory; ``off`` disables the cache), else
``$XDG_CACHE_HOME/bufferlab/plans`` or ``~/.cache/bufferlab/plans``. At most `MAX_PLANS` plans
and `MAX_CACHE_BYTES` are kept (the oldest go), none whose file would exceed `MAX_PLAN_BYTES`.
A directory that cannot be written is no error: the command then plans every time.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..spec.resolved import Resolved
from .budget import default_budget
from .engine import engine_version
from .plan import Plan

__all__ = ["ENVIRONMENT", "MAX_PLANS", "MAX_CACHE_BYTES", "MAX_PLAN_BYTES", "directory", "request", "load",
           "keep", "sources_of_planning"]

ENVIRONMENT = "BUFFERLAB_PLAN_CACHE"
# The layout of a kept plan; a file of another layout is a miss.
FORMAT = 1
MAX_PLANS = 256
MAX_CACHE_BYTES = 64 << 20
# A plan holds its engine spec, as JSON and as Python's tables, a dumbbell's flows as columns (the
# reference dumbbell's file ~12 kB, a 10,000-flow dumbbell's ~1.3 MB): the largest are not kept,
# so that a few of them do not fill the cache's bytes.
MAX_PLAN_BYTES = 4 << 20
# The modules whose code decides a plan: ours, and the validation library's.
PLANNING_PACKAGES = ("bufferlab", "pydantic", "pydantic_core", "annotated_types", "typing_extensions")
_OFF = ("", "0", "off", "no", "false")

# (path, modification time in ns, size) of a file a plan depends on.
Stamp = tuple[str, int, int]


def directory() -> Path | None:
    """Where plans are kept (see the module docstring); None when the cache is off."""
    chosen = os.environ.get(ENVIRONMENT)
    if chosen is not None:
        return None if chosen.strip().lower() in _OFF else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bufferlab" / "plans"


def request(path: Path, text: bytes, assignments: Sequence[str], seed: int | None) -> bytes:
    """What a plan is asked for: spec file `path` holding `text`, changed by `assignments`
    (`--set`) and `seed` (`--seed`), run from the working directory, by this interpreter and
    engine (marshalled: the plan's file holds it whole and is used only for an equal request)."""
    return marshal.dumps((FORMAT, sys.version, engine_version(), os.getcwd(), str(path), text, tuple(assignments),
                          seed))


def _file(folder: Path, asked: bytes) -> Path:
    """Where the plan of request `asked` is kept. Named by a CRC: two requests of one name take
    turns in it (each a miss for the other), never each other's plan, since the file holds its
    request; and the command need not load hashlib's OpenSSL before its engine."""
    return folder / f"{zlib.crc32(asked):08x}.{len(asked)}.marshal"


def load(asked: bytes, budget: int | None) -> Plan | None:
    """The plan kept for request `asked`, if it is still what planning would give and fits
    `budget` (bytes; None: the default budget); None otherwise."""
    folder = directory()
    if folder is None:
        return None
    try:
        kept = marshal.loads(_file(folder, asked).read_bytes())
        if not (isinstance(kept, dict) and kept.get("format") == FORMAT and kept.get("request") == asked
                and _unchanged(kept["sources"])):
            return None
        if kept["plan"]["memory_bytes"] > (default_budget() if budget is None else budget):
            return None  # planned again, which refuses it with the budget's message
        planned = dict(kept["plan"])
        planned["resolved"] = Resolved(**planned["resolved"])
        return Plan(**planned)
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        return None


def keep(asked: bytes, plan: Plan, sources: Iterable[Stamp]) -> None:
    """Keep `plan` for request `asked`, valid while `sources` are unchanged; a plan too large, or
    a directory that cannot be written, keeps nothing."""
    folder = directory()
    if folder is None:
        return
    kept = _as_dict(plan)
    kept["resolved"] = _as_dict(plan.resolved)
    entry = {"format": FORMAT, "request": asked, "sources": list(sources), "plan": kept}
    target = _file(folder, asked)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        data = marshal.dumps(entry)
        if len(data) > MAX_PLAN_BYTES:
            return
        folder.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(data)
        os.replace(temporary, target)  # whole or absent: a reader never sees half a plan
        _prune(folder)
    except (OSError, ValueError):  # unwritable, or a value marshal cannot hold: no plan kept
        with contextlib.suppress(OSError):  # (a path that cannot be a directory has no such file)
            temporary.unlink(missing_ok=True)


def sources_of_planning(files_read: Iterable[Path]) -> list[Stamp]:
    """Stamps of what a plan made in this process depends on: every loaded module of
    `PLANNING_PACKAGES` (its source or extension file) and `files_read` by the spec."""
    paths = []
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in PLANNING_PACKAGES:
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                paths.append(file)
    paths.extend(str(p) for p in files_read)
    return [stamp for path in dict.fromkeys(paths) if (stamp := _stamp(path)) is not None]


def _stamp(path: str) -> Stamp | None:
    """The file at `path` as a plan depends on it: size and modification time (None: no such file)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return path, status.st_mtime_ns, status.st_size


def _as_dict(data: Any) -> dict[str, Any]:
    """A dataclass's fields by name, not copied (`dataclasses.asdict` copies every value deeply:
    a large engine spec's dict would take longer than writing it)."""
    return {f.name: getattr(data, f.name) for f in fields(data)}


def _unchanged(sources: Any) -> bool:
    """Whether every file of `sources` still has the stamp it had (`sources_of_planning`)."""
    return all(_stamp(path) == (path, mtime_ns, size) for path, mtime_ns, size in sources)


def _prune(folder: Path) -> None:
    """Remove the oldest files beyond `MAX_PLANS` or `MAX_CACHE_BYTES`: plans, and the temporary
    files of writes cut short, which count and go as plans do."""
    plans = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                status = entry.stat()
            except OSError:  # removed by another process meanwhile
                continue
            plans.append((status.st_mtime_ns, status.st_size, entry.path))
    plans.sort(reverse=True)  # the newest first
    kept_bytes = 0
    for count, (_, size, path) in enumerate(plans, 1):
        kept_bytes += size
        if count <= MAX_PLANS and kept_bytes <= MAX_CACHE_BYTES:
            continue
        try:
            os.unlink(path)
        except OSError:
            pass
