"""Code the standard library compiles from text at run time, kept between runs of the command.

Four of Python's own modules compile text while a program runs, not just when a module is
imported (whose code the interpreter keeps in `__pycache__`):

- `dataclasses` writes each class's `__init__`, `__repr__`, `__eq__` (and, frozen, `__setattr__`,
  `__delattr__`, `__hash__`) as text and compiles it (`dataclasses._create_fn`);
- `typing` compiles every forward reference, an annotation written as a string, into an
  expression (`typing.ForwardRef`); typing_extensions' TypedDicts make one per key;
- `collections.namedtuple` evaluates the text of each named tuple's `__new__`;
- `re` parses each regular expression and translates it into the matcher's program of integers
  (`re._compiler.compile`), in Python, once per process: 51 patterns in a fresh `bufferlab run`,
  4.7 ms of CPU time, 3.6 of them before the engine (36 patterns: `platform`'s, which `uuid`
  imports for click and pydantic, json's, tomllib's, textwrap's, our units').

pydantic and pydantic_core are full of them (about 60 dataclasses, 90 TypedDicts of core
schemas), as are our spec, pipeline and summary modules and rich. A fresh `bufferlab run`
compiled 334 functions, 800 forward references and 47 named tuples' `__new__` (543 distinct
texts), the same in every process: 17 ms of CPU time before the engine (12 of dataclasses, 4 of
forward references, 1 of named tuples), 5 more after it (issue 15).

`install` (the command's process only: `cli.prepare_process`) puts a caching `exec` in
`dataclasses`' namespace, a caching `compile` in `typing`'s and a caching `eval` in
`collections`', each found there before the built-in of that name. Each compiles a text once per
process and keeps the code object, keyed by the text itself: the same text always compiles to
the same code (the same file name, ``<string>``, and flags: none, as none of the three modules
has a ``__future__`` import for the built-in to pass on, so none is passed on from this one
either), so a cached object is exactly what the built-in would have made; a text that does not
compile raises as before and is not kept. The functions and expressions made from the code are
new each time, as they were.

For regular expressions `install` replaces `re._compiler.compile`, which `re` calls for a
pattern its own per-process cache does not hold, by one that keeps what the matcher is made from
(`_sre.compile`'s arguments: the flags, the program, the groups and their names), keyed by the
pattern and the flags asked for, and makes the pattern object from them; the steps that make
them are those of `re._compiler.compile` itself, so the object is the one it would have made
(patterns compare equal when their flags, text and program are). Left to the original: a
pattern already parsed (`re.Scanner`'s), ``re.DEBUG`` (which prints the program), and a pattern
the parser might warn about (a nested set, ``--``/``&&``/``~~``/``||`` in a set, a conditional
group, a bytes pattern beyond ASCII: `may_warn`), so that its warning is still given each time.

The command's process writes what it compiled to `path()` (in the package's `__pycache__`, as
marshalled code objects, like the interpreter's .pyc files) when it exits having compiled a text
the file did not have, and reads it back at its next start: 0.8 ms to read the 543 texts of a
fresh run instead of compiling them (the read is put off until the first text, which `bufferlab
--version` never reaches). The file is written only where the interpreter writes its own
bytecode (not under ``PYTHONDONTWRITEBYTECODE``, nor by an interpreter without a cache tag), by
the process that installed the cache at its exit (a process forked from it only by calling
`save`), atomically (a temporary file renamed over it), with what the file holds by then (the
writer process's texts and the command's, or those of a sweep's processes, end up in one file;
two writing at once may each leave out the other's new texts, which the next run adds), and only
while it stays below `MAX_TEXTS`. A file of another Python version or marshal format, or one
that cannot be read, counts as no file.

Only the texts these modules compile pass through here: `dataclasses` calls `exec` only in
`_create_fn`, `typing` calls `compile` only in `ForwardRef`, `collections` calls `eval` only in
`namedtuple`; every other call of the built-ins is untouched.
"""

# No `from __future__ import annotations` in this module: `compile` passes the future features of
# the code that calls it on to what it compiles, and the three modules whose texts compile here
# have none (the cached compiles say so with `dont_inherit`; a call handed on keeps its own).

import atexit
import builtins
import marshal
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from re import _compiler as regex_compiler  # type: ignore[attr-defined]
from re import _parser as regex_parser  # type: ignore[attr-defined]
from types import CodeType
from typing import Any

__all__ = ["install", "installed", "save", "path", "MAX_TEXTS"]

# The most texts the file keeps: far above what the commands compile (about 700 for `run` and
# its writer process), so that it is written again only when a new kind of command compiles
# something new, and bounded whatever runs in the command's process.
MAX_TEXTS = 20_000
# A temporary file this much older than a finished write belongs to a write that never finished.
ABANDONED_AFTER_S = 60.0
# Marks an expression (a forward reference, a named tuple's `__new__`) among the keys (a dataclass
# function's text is a `def`).
_EXPRESSION = "\0eval\0"
# What the file was written by: code objects are valid for one interpreter version and one
# marshal format.
_HEADER = f"bufferlab code cache {sys.implementation.cache_tag} {sys.hexversion} {marshal.version}\n".encode()

# What the parser of regular expressions warns about (Python 3.11-3.13, `re._parser`): a set
# opening with "[", a doubled "-", "&", "~" or "|" in a set, a conditional group's name.
_REGEX_WARNING_MARKS = ("[[", "--", "&&", "~~", "||", "(?(")
# `regex_parts` repeats `re._compiler.compile`'s private steps, which are those of Python 3.11 to
# 3.13 only: on another version `re` is left as it is (the other caches use public functions).
REGEX_STEPS_KNOWN = (3, 11) <= sys.version_info[:2] <= (3, 13)

_real_exec = builtins.exec
_real_eval = builtins.eval
_real_compile = builtins.compile
_real_regex_compile = regex_compiler.compile
# The arguments of `_sre.compile` after the pattern: the flags, the matcher's program, the number
# of groups, the names of groups to their numbers and the numbers to their names.
RegexParts = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


class _Cache:
    """The code objects of one process, keyed by their text (see the module docstring)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.owner = os.getpid()
        # Code objects by their text, and regular expressions' parts by (pattern, flags); read at
        # the first text compiled.
        self.codes: dict[Any, Any] | None = None
        self.new = 0

    def code(self, key: str, compile_text: Callable[[], CodeType]) -> CodeType:
        codes = self.codes if self.codes is not None else self._read()
        code = codes.get(key)
        if type(code) is not CodeType:  # not kept yet (or not code: then made again)
            code = compile_text()
            codes[key] = code
            self.new += 1
        return code

    def regex_parts(self, key: tuple[str | bytes, int], make: Callable[[], RegexParts]) -> RegexParts:
        codes = self.codes if self.codes is not None else self._read()
        parts = codes.get(key)
        if type(parts) is not tuple or len(parts) != 5:  # not kept yet (or not parts: then made again)
            parts = make()
            codes[key] = parts
            self.new += 1
        return parts

    def _read(self) -> dict[Any, Any]:
        self.codes = self._kept()
        return self.codes

    def _kept(self) -> dict[Any, Any]:
        """The file's code objects; none if there is no file, or not one of ours."""
        try:
            data = self.file.read_bytes()
            if data.startswith(_HEADER):
                kept = marshal.loads(memoryview(data)[len(_HEADER):])  # not a copy of half a megabyte
                if isinstance(kept, dict):
                    return kept
        except (OSError, EOFError, ValueError, TypeError):
            pass
        return {}

    def write(self, forked: bool = False) -> None:
        """Write the texts compiled so far, with those the file has meanwhile (another process's),
        if this process compiled a new one (see the module docstring for when it does not);
        `forked`: also from a process forked after `install`."""
        if (self.codes is None or not self.new or (os.getpid() != self.owner and not forked)
                or sys.dont_write_bytecode or sys.implementation.cache_tag is None):
            return
        codes = {**self._kept(), **self.codes}
        if len(codes) > MAX_TEXTS:
            return
        temporary = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(exist_ok=True)
            temporary.write_bytes(_HEADER + marshal.dumps(codes))
            os.replace(temporary, self.file)
            self._remove_abandoned()
        except OSError:  # a read-only installation: the next process compiles again
            temporary.unlink(missing_ok=True)
        self.new = 0

    def _remove_abandoned(self) -> None:
        """Remove the temporary files of writes that never finished: the command kills its
        writer process at once when it ends without a write under way, which may be while the
        child writes the cache (`save`)."""
        for temporary in self.file.parent.glob(f"{self.file.name}.*.tmp"):
            try:
                if time.time() - temporary.stat().st_mtime > ABANDONED_AFTER_S:
                    temporary.unlink()
            except OSError:  # removed by another process meanwhile
                pass


_cache: _Cache | None = None


def path() -> Path:
    """The cache's file: in the package's `__pycache__`, named for the interpreter."""
    return Path(__file__).with_name("__pycache__") / f"codecache.{sys.implementation.cache_tag}.marshal"


def installed() -> bool:
    return _cache is not None


def save() -> None:
    """Write what this process compiled now, for a process forked from the command that ends
    without its exit functions (`os._exit`): the store's writer process, whose DuckDB import
    compiles 216 dataclass functions of its own (8 ms of its 63 before it is ready); it saves
    once ready, before its first request, while the command still parses or simulates."""
    if _cache is not None:
        _cache.write(forked=True)


def install(file: Path | None = None) -> None:
    """Compile the texts of `dataclasses`, `typing` and `collections.namedtuple` through the cache
    in this process, kept in `file` (default `path()`) between processes; a second call changes
    nothing."""
    global _cache
    if _cache is not None:
        return
    import collections
    import dataclasses
    import typing

    cache = _cache = _Cache(file if file is not None else path())

    def cached_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            text = source
            source = cache.code(text, lambda: _real_compile(text, "<string>", "exec", dont_inherit=True))
        _real_exec(source, globals, locals)

    def cached_compile(source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                       optimize: int = -1, **more: Any) -> Any:
        if type(source) is str and filename == "<string>" and mode == "eval" and not (flags or dont_inherit or more) \
                and optimize == -1:
            return cache.code(_EXPRESSION + source, lambda: _real_compile(source, filename, mode, dont_inherit=True))
        return _real_compile(source, filename, mode, flags, dont_inherit, optimize, **more)

    def cached_eval(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
        # `eval` drops a text's leading blanks before compiling it, `compile` does not: such a
        # text (collections writes none) is left to the built-in.
        if type(source) is str and not source.startswith((" ", "\t")):
            text = source
            source = cache.code(_EXPRESSION + text, lambda: _real_compile(text, "<string>", "eval", dont_inherit=True))
        return _real_eval(source, globals, locals)

    def cached_regex_compile(pattern: Any, flags: int = 0) -> Any:
        if type(pattern) in (str, bytes) and type(flags) is int and not flags & re.DEBUG and not may_warn(pattern):
            parts = cache.regex_parts((pattern, flags), lambda: regex_parts(pattern, flags))
            matched_flags, program, groups, names, numbered = parts
            return regex_compiler._sre.compile(pattern, matched_flags, program, groups, dict(names), numbered)
        return _real_regex_compile(pattern, flags)

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]
    typing.compile = cached_compile  # type: ignore[attr-defined]
    collections.eval = cached_eval  # type: ignore[attr-defined]
    if REGEX_STEPS_KNOWN:
        regex_compiler.compile = cached_regex_compile
    atexit.register(cache.write)


def may_warn(pattern: str | bytes) -> bool:
    """Whether the parser might warn about `pattern` (see the module docstring): conservatively,
    whether it holds one of the marks the parser's warnings are about."""
    text = pattern if isinstance(pattern, str) else pattern.decode("latin-1")
    return (isinstance(pattern, bytes) and not text.isascii()) or any(mark in text for mark in _REGEX_WARNING_MARKS)


def regex_parts(pattern: str | bytes, flags: int) -> RegexParts:
    """What `re._compiler.compile(pattern, flags)` makes its pattern object from, made by its own
    steps (Python 3.11-3.13): parse, translate into the matcher's program, number the groups."""
    parsed = regex_parser.parse(pattern, flags)
    # The program's operation codes are named integers (`re._constants`), which marshal does not
    # write: the matcher takes plain ones alike.
    program = [int(number) for number in regex_compiler._code(parsed, flags)]
    names: dict[str, int] = parsed.state.groupdict
    numbered: list[str | None] = [None] * parsed.state.groups
    for name, number in names.items():
        numbered[number] = name
    return int(flags | parsed.state.flags), program, parsed.state.groups - 1, names, tuple(numbered)
