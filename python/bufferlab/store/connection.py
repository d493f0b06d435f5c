"""Opening the store so that many processes can share it.

DuckDB lets one process open a database file for writing, or any number of processes open it
read-only, never both at once. So no bufferlab process keeps the file open: a writer opens it for
one transaction, a reader for one query, and each closes it at once. A process that finds the
file locked by another waits and tries again with growing pauses, for at most
``BUFFERLAB_DB_WAIT`` seconds (default 120), then gives up with a one-line error naming the store.

A writer keeps the rows of an unfinished transaction out of the database file. By default DuckDB
writes a large append to the file as it goes ("optimistic writes": each full row group is
compressed and written before the commit); a process killed before its commit (SIGKILL, the OOM
killer) then leaves those blocks past the end the file's header records, and DuckDB only shrinks
the file when a checkpoint frees its last blocks, so the store stayed several times larger than its
data. Without optimistic writes a transaction's rows reach the file only through the write-ahead
log at its commit and the checkpoint that follows; a kill before the commit leaves the file as it
was, and a kill during that checkpoint is redone whole, in the same blocks, from the log.

No connection draws DuckDB's progress bar: it would be printed into the output of a long write or
query (a JSON summary, an exported CSV on stdout).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import duckdb

from ..errors import SpecError

__all__ = ["connect", "lock_wait_s", "StoreBusy", "StoreUnusable", "store_error"]

DEFAULT_WAIT_S = 120.0
# First pause after a refused lock; each next one is 1.5x longer, up to MAX_PAUSE_S.
FIRST_PAUSE_S = 0.02
MAX_PAUSE_S = 0.5


class StoreBusy(SpecError):
    """Another process held the store's lock for longer than we were willing to wait."""


class StoreUnusable(SpecError):
    """The store's file or directory cannot be used: not writable, not a DuckDB file, damaged."""


def store_error(path: Path, error: BaseException) -> StoreUnusable:
    """An OS or DuckDB error about the store at `path` as one ``--db: reason`` line."""
    if isinstance(error, OSError):
        where = error.filename or path
        return StoreUnusable("--db", f"cannot use {where}: {error.strerror or error}")
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return StoreUnusable("--db", f"cannot use {path}: {text}")


def lock_wait_s() -> float:
    raw = os.environ.get("BUFFERLAB_DB_WAIT")
    if raw is None:
        return DEFAULT_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        raise SpecError("BUFFERLAB_DB_WAIT", f"{raw!r} is not a number of seconds") from None
    if not value >= 0:
        raise SpecError("BUFFERLAB_DB_WAIT", f"{raw!r}: must be 0 or more seconds")
    return value


def _is_lock_conflict(error: duckdb.Error) -> bool:
    text = str(error)
    return "lock" in text.lower() or "Conflicting lock" in text


def _open(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """One attempt to open the store, with the settings of the module docstring."""
    con = duckdb.connect(str(path), read_only=read_only,
                         config={} if read_only else {"enable_optimistic_write": False})
    con.execute("SET enable_progress_bar = false")  # a per-connection setting
    return con


def connect(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open `path`, waiting while another process holds its lock (see the module docstring)."""
    deadline = time.monotonic() + lock_wait_s()
    pause = FIRST_PAUSE_S
    # Jitter keeps processes that collided once from colliding again in lockstep (not simulation
    # randomness: it only decides when a process retries).
    jitter = random.Random()
    while True:
        try:
            return _open(path, read_only)
        except duckdb.IOException as e:
            if not _is_lock_conflict(e):
                raise store_error(path, e) from None
            if time.monotonic() >= deadline:
                raise StoreBusy("--db", f"{path} stayed locked by another process for {lock_wait_s():g} s "
                                        "(set BUFFERLAB_DB_WAIT to wait longer)") from None
            time.sleep(pause * (0.5 + jitter.random()))
            pause = min(pause * 1.5, MAX_PAUSE_S)
        except duckdb.Error as e:  # not a DuckDB file, damaged, written by an unknown version
            raise store_error(path, e) from None
