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
the file when a checkpoint frees its last blocks, so the store would stay several times larger than
its data. Without optimistic writes a transaction's rows reach the file only at its commit; a kill
before the commit leaves the file as it was.

A writer's commit is also its checkpoint (`checkpoint_threshold` 0): DuckDB then writes a large
commit's rows, compressed, straight into the database file, and skips writing them uncompressed to
the write-ahead log first and again into the file at the close. A checkpoint becomes visible only
when it rewrites the file's header, so a kill during it still loses the whole transaction and
nothing else; what it can leave is the blocks it had written, unused space past the data that
later writes fill again. No write leaves a write-ahead log behind for readers to replay.

A checkpoint left for later (a `checkpoint_threshold` above 0: a commit writes the log, and the
first commit that finds the log past the threshold folds it in) would make a write cheaper and
every later open of the store dearer: the log holds the rows uncompressed, every connection,
read-only ones included, replays it whole for each query (a `Results` opens the store per query),
and DuckDB weighs the log before a commit without the rows that commit appends, so a large run
would go to the log whole.

A writer attaches the store with row groups of 32,768 rows (`ROW_GROUP_SIZE`; DuckDB's default,
122,880, is not recorded in the file, so every writer asks for it), and needs DuckDB 2. A
checkpoint's vacuum merges a table's trailing, partly filled row groups whenever fewer would hold
their rows; with smaller groups a run's series fill whole groups of their own that no later vacuum
touches, so a write into a store of many runs costs about what a write into a new one does (a run
with fewer rows still merges with its neighbours, rewriting at most three groups). DuckDB 2 keeps
the rest cheap: its copy of an append into the table allocates little, and the vacuum it still runs
on the small tables, `runs` included, rewrites all their rows only while they hold fewer than
2,048, then only once they have doubled. Smaller
groups compress a little less; one run's series read as fast (zone maps skip the other runs'
groups). Readers need no setting.

A writer makes a new store with blocks of 64 kB (`NEW_STORE_BLOCK_SIZE`; DuckDB's default is
256 kB). DuckDB chooses the same compression for every segment either way (bit-packing, RLE,
constants, FSST dictionaries), but with larger blocks a run's many small segments leave more of the
store's blocks partly empty, and the checkpoint starts every segment in a block-sized buffer that
it initialises whole: smaller blocks make a smaller store and fewer page faults at the commit. A
store keeps the block size it was made with, and DuckDB refuses an ATTACH that names another, so a
store made with 256 kB blocks keeps them and only a new file is given 64 kB. Below 64 kB DuckDB
stops bit-packing (RLE or uncompressed segments instead), and the store grows.

A writer uses one DuckDB thread: its work is one append of Arrow tables and a checkpoint, which a
second thread does not shorten but spends more CPU time on.

No connection draws DuckDB's progress bar: it would be printed into the output of a long write or
query (a JSON summary, an exported CSV on stdout).

A writer that has committed lets go of the store by detaching it (`release_writer`: DETACH
closes the file and its lock as closing the connection would) and leaves its in-memory database,
settings and all, for the next writer of the process. Closing the connection would also tear down
DuckDB's instance (its catalogue of functions, its allocator's caches); a process that stores many
runs (a sweep's writer, the tests) makes the instance once, and its later writes find DuckDB's
memory warm. A writer that fails closes its connection instead, and a forked child never uses a
database its parent made.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from ..errors import SpecError

__all__ = ["connect", "lock_wait_s", "release_writer", "sql_string", "NEW_STORE_BLOCK_SIZE",
           "ROW_GROUP_SIZE", "StoreBusy", "StoreUnusable", "store_error"]

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


# A writer's DuckDB settings (see the module docstring).
WRITER_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_optimistic_write": False, "checkpoint_threshold": "0MB", "threads": 1}
# Rows per row group of what a writer appends (see the module docstring); a multiple of 2,048.
ROW_GROUP_SIZE = 32_768
# Bytes per block of a store a writer makes (see the module docstring); DuckDB's default is 262,144.
NEW_STORE_BLOCK_SIZE = 65_536


def sql_string(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# A writer's in-memory database left by the last writer (`release_writer`) for the next one.
_prepared: list[duckdb.DuckDBPyConnection] = []
_prepared_lock = threading.Lock()
# A forked child's copies of its parent's databases: never used, never closed (DuckDB's instance
# belongs to the parent; closing the copy could touch its threads' state).
_parents: list[duckdb.DuckDBPyConnection] = []


def _forget_the_parents_database() -> None:
    global _prepared_lock
    _parents.extend(_prepared)
    _prepared.clear()
    _prepared_lock = threading.Lock()  # it may have been held by another thread of the parent


os.register_at_fork(after_in_child=_forget_the_parents_database)


def _new_writer_database() -> duckdb.DuckDBPyConnection:
    """An in-memory database with a writer's settings; no store attached."""
    return duckdb.connect(":memory:", config=WRITER_CONFIG)


def _writer_database() -> duckdb.DuckDBPyConnection:
    """The database the last writer left, else a new one."""
    with _prepared_lock:
        if _prepared:
            return _prepared.pop()
    return _new_writer_database()


def release_writer(con: duckdb.DuckDBPyConnection) -> None:
    """End a writer that has finished its transactions: detach its store, which closes the file
    and lets go of its lock, and keep the in-memory database for the next writer unless one is
    waiting already (see the module docstring)."""
    try:
        con.execute("USE memory")
        con.execute("DETACH store")
    except BaseException:
        con.close()
        raise
    with _prepared_lock:
        if not _prepared:
            _prepared.append(con)
            return
    con.close()


def _is_new(path: Path) -> bool:
    """Whether `path` holds no store yet: no file, or an empty one (DuckDB makes a store there)."""
    try:
        return path.stat().st_size == 0
    except FileNotFoundError:
        return True


def _attach(con: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyConnection:
    """Attach the store at `path` to a writer's database as its default database, which is how
    DuckDB takes a row group size, and a new store's block size (`NEW_STORE_BLOCK_SIZE`); this
    opens and locks the file. A store keeps the block size it was made with, and DuckDB refuses
    an ATTACH that names another, so only a new store is given one; one made meanwhile by another
    process with another block size (an earlier bufferlab's) is attached as it is."""
    store = f"ATTACH {sql_string(str(path))} AS store (ROW_GROUP_SIZE {ROW_GROUP_SIZE}"
    if _is_new(path):
        try:
            con.execute(f"{store}, BLOCK_SIZE {NEW_STORE_BLOCK_SIZE})")
        except duckdb.InvalidInputException as e:
            if "block size" not in str(e):
                raise
            con.execute(f"{store})")
    else:
        con.execute(f"{store})")
    con.execute("USE store")
    return con


def connect(path: Path, *, read_only: bool, sandboxed: bool = False) -> duckdb.DuckDBPyConnection:
    """Open `path` with the settings of the module docstring, waiting while another process holds
    its lock. A writer attaches the store on an in-memory database (one prepared ahead if there
    is one); only the ATTACH is tried again.

    A `sandboxed` connection (read-only) is for SQL the user wrote: DuckDB's access to anything
    but the store is off (`enable_external_access`: no file read or written, no extension
    installed, no other database attached) and its settings are locked, so that the SQL cannot
    turn that access back on."""
    if sandboxed and not read_only:
        raise ValueError("a sandboxed connection is read-only")
    if read_only:
        config: dict[str, str | bool | int | float | list[str]] = {"enable_external_access": False} if sandboxed else {}
        con = _retrying_lock(path, lambda: duckdb.connect(str(path), read_only=True, config=config))
    else:
        database = _writer_database()
        try:
            con = _retrying_lock(path, lambda: _attach(database, path))
        except BaseException:
            database.close()
            raise
    try:
        con.execute("SET enable_progress_bar = false")  # a per-connection setting
    except duckdb.InvalidInputException as e:
        # In a Jupyter kernel DuckDB draws its progress bar as an ipywidgets widget and, without
        # ipywidgets, refuses any change of the setting; it draws no bar there to begin with.
        if "progress bar" not in str(e):
            con.close()
            raise
    if sandboxed:
        con.execute("SET lock_configuration = true")
    return con


def _retrying_lock(path: Path, open_store: Callable[[], duckdb.DuckDBPyConnection]) -> duckdb.DuckDBPyConnection:
    """`open_store()`, tried again with growing pauses while another process holds the store's
    lock, for at most `lock_wait_s()` seconds; any other failure as a one-line store error."""
    deadline = time.monotonic() + lock_wait_s()
    pause = FIRST_PAUSE_S
    # Jitter keeps processes that collided once from colliding again in lockstep (not simulation
    # randomness: it only decides when a process retries).
    jitter = random.Random()
    while True:
        try:
            return open_store()
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
