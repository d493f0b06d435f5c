"""The store's writer in a process of its own, for `bufferlab run` (issue 15).

Why. In one process, DuckDB cost a fresh run its import (~41 ms, of which `importlib.metadata`
for its own version 12 and `duckdb._relation` 13), its in-memory instance (~17 ms) and the
write itself, and most of that held the GIL: the preload's imports (DuckDB, numpy, rich: ~100
ms) ran beside the engine but exceeded the reference dumbbell's 68 ms engine and dwarfed one
flow's 14 ms, so the steps after the engine waited for them; and DuckDB's client takes the GIL
back about 580 times during the dumbbell's write, so the summary rendered beside it and the write
delayed each other. A process of its own imports DuckDB and makes its instance on the second
core while the command parses the spec and simulates, and writes without sharing a GIL. On a
quiet machine (docs/speed.md, "The store's writer in a process of its own"): the dumbbell's command
0.270 -> 0.255 s, one flow's 0.212 -> 0.166 s, a stored run's 0.163 -> 0.138 s, for 17-30 ms
more CPU time (the fork's copy-on-write, the tables' hand-over, a write in a fresh process),
which a busy machine pays in wall time too.

How. `start` forks the child before any thread exists (a fork copies only the forking thread;
the preload's thread starts later): as the console script starts, for the commands that store a
run (`start_early`, before click and the command's own modules), else as the command knows it
will run (`cli`). The
child imports DuckDB and the store's writer, makes the writer's in-memory database
(`connection.prepare_writer`: no store file is opened, none is created) and waits for requests
on a pipe. The parent never imports DuckDB on this path:

    lookup  ("counters", db, run_id) -> the stored run's counters or None (`stored_counters`),
            the "is this run stored already?" of `runner.stored_summary`;
    write   ("write", db, replace, the run's scalars, its table names), then each table as an
            Arrow IPC stream (`_core.Table.to_ipc`) -> done, once committed (`Store.save`).

Each message is a frame: its length (8 bytes) and its bytes, a pickle or an IPC stream. The child
decodes each table (`_core.Table.from_ipc`: the same schema and values) and inserts it as soon as
it has arrived, as `Store.save` inserts a run's tables in one process. A thread of the child reads
the tables' frames from the pipe as soon as the write's request has come (`_ArrivingTables`), while
the child opens the store and inserts the tables before (DuckDB lets go of the GIL), so that the
parent sends the whole run without waiting for an insert and no insert waits for the pipe. Reading
each frame only when `Store.save` took its table kept the pipe's copy on the write's critical path:
the reference dumbbell's flow and channel series (3.7 and 8.6 MB) took 5.5 and 5.8 ms to read
between their inserts, the child took its first table 14 ms after the request (opening the new
store), and from the parent's first encoding to the last table inserted took 36-39 ms (best-median
of 7, interleaved); with the thread 29-30 ms, the parent's wait for the commit 76-79 -> 67-69 ms,
for about 2 MB more of the command's peak resident memory (the child's: its reader thread, and the
IPC bytes of the tables not yet inserted). One flow's tables (0.6 MB) take 0.5 ms to read either
way.

Tried and dropped (issue 15, 2026-11-24): handing the streams over in a shared memory file
(`os.memfd_create` before the fork, the parent writing each stream into it and sending only its
place) instead of through the pipe. Measured for the dumbbell's 12 MB (CPU ms, best of 15):
through the pipe the parent's write takes 1.8-2.0 and the child's read 6.1 (mostly the page faults
of fresh bytes); with `os.pwrite` and `os.pread` on the file 3.8-3.9 and 5.8-6.7 (the file's pages
are allocated as they are written: no gain); with the child mapping each stream (`mmap`,
`MAP_POPULATE`) 3.8 and 2.3, so at best ~1.6 ms in all, or ~5 if the binding also encoded
straight into the file rather than into fresh bytes (3.8 ms). Neither is on the write's critical
path once the thread reads ahead, and both need the binding to hold a mapping (or a Python
buffer) under an Arrow array or to write to a raw descriptor, which takes `unsafe` code, which the
workspace forbids. The pipe's turns are already few: about 12 of 1 MB for the dumbbell (`_widen`).

Tried and dropped too (issue 15, 2026-11-24; the branch `handover` keeps it as a commit and its
revert): sending the write's request and the engine's series before derive, the rest after it, so
that the child opens the store, makes a new store's schema and inserts the series while the
command derives (the child takes a write's first table 11-14 ms after its request, opening the
store). It leaves a new store's empty file behind when the command is interrupted while it
derives, and holds the store's lock meanwhile, and did not pay on the shared machine: the whole
command, 30 interleaved rounds with the two cores busy, wall best (first quartile) and CPU best,
against this module without it: the dumbbell 0.366 (0.402) s and 0.380 s against 0.371 (0.400)
and 0.357, one flow 0.283 (0.292) and 0.268 against 0.275 (0.283) and 0.254.

A failure of the child is sent back as what it was (`_failure`): the same one-line error and exit
status as in one process (a bad or locked store, a full disk, a bug).

What holds as in one process: a stored run is complete or absent (one transaction), and the
summary is printed only after the commit (the parent waits for the reply). Ctrl-C and SIGTERM:
the child ignores both, so that a terminal's Ctrl-C, which reaches the whole process group, acts
through the parent alone. The parent holds them back while the run is written (`persist`, with
`interrupts.deferred`, as today's write) and is interrupted otherwise; either way it then ends
the child (`WriterProcess.close`): a child with no write under way holds no store and is killed,
one with a write under way is waited for. The child ends on its own when its request pipe
closes, however the parent ended (even by SIGKILL): it reads the end of the pipe when it waits
for a request, and looks for it once more before a write's commit (`_parent_gone`), rolling the
write back if the parent has gone. The parent reaps the child (no zombie), and a child outlives
its parent by at most the rest of its imports or of a write it will not commit (no lasting
orphan).

A write is the child's last request. Once it has committed, the child lets go of the store's
lock (`_let_go`, checked) and replies, then ends as its request pipe closes. The command does
not wait for that end (issue 15): the kernel freeing the child's memory took 5-6 ms for the
dumbbell, which the command spent in `waitpid` after printing its summary, only so that the
lock was free once it had ended. It now is by the reply; the command leaves the pipe to its own
end (`WriterProcess.close`), which closes it only once the kernel has freed the command's
memory, so the two ends do not compete for the CPU; the child then ends and init reaps it (a
program that stores run after run reaps its ended writers itself, `reap_ended`). Where the child
cannot make sure the lock is free, it says so and the parent waits for its end as before. The
same after a lookup that found the run stored (the lookup closes the store before its reply):
the command prints it and ends, and leaves the idle child to end with it. The child closes the
stdin, stdout and stderr it had from the fork at its first reply (`_close_standard_streams`),
so that nothing reading the command's output waits for the child.

Where no fork is available, or the process already runs threads or has DuckDB loaded (a library
user, the tests), or may run on one CPU only (`start`), it returns None and the run is stored in
the process as before.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .. import codecache
from ..errors import SpecError
from ..interrupts import deferred

if TYPE_CHECKING:  # pragma: no cover
    import queue

    from ..pipeline.derive import DerivedRun

__all__ = ["WriterProcess", "WriterProcessLost", "start", "start_early", "take", "end_untaken", "reap_ended",
           "STORING_COMMANDS"]

# A frame's length, before its bytes.
_LENGTH = struct.Struct("<Q")
# The request pipe's capacity asked for (`_widen`): Linux's default limit for a user's pipe.
PIPE_BYTES = 1 << 20


class WriterProcessLost(RuntimeError):
    """The store's writer process ended without replying (killed, out of memory, crashed)."""


class WriterProcessFailed(RuntimeError):
    """An error of the writer process that could not cross as itself (its type and message)."""


class _ParentGone(Exception):
    """The child's request pipe ended: the parent has exited, or given up on this write."""


def start() -> WriterProcess | None:
    """Fork the store's writer process (see the module docstring); None where it cannot be done
    safely here: no `os.fork`, another thread running (it would be missing in the child, with
    whatever lock it held), or DuckDB already loaded (its instance's threads, likewise); and
    where it cannot pay: a process allowed on one CPU only, where the two processes would take
    turns on it and the child's 20-40 ms of extra CPU time would only add to the run."""
    reap_ended()
    if not hasattr(os, "fork") or threading.active_count() != 1 or "duckdb" in sys.modules:
        return None
    if hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) < 2:
        return None
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    _widen(requests_write)
    pid = os.fork()
    if pid == 0:  # the child: never returns into the command
        status = 1
        try:
            os.close(requests_write)
            os.close(replies_read)
            status = _serve(requests_read, replies_write)
        finally:
            os._exit(status)
    os.close(requests_read)
    os.close(replies_write)
    return WriterProcess(pid, os.fdopen(requests_write, "wb"), os.fdopen(replies_read, "rb"))


# The commands that store a run through a writer process (`cli._store_writer`).
STORING_COMMANDS = ("run", "ccperf")
# A writer process forked at the console script's start (`start_early`), until a command takes it.
_early: list[WriterProcess] = []


def start_early(argv: list[str]) -> None:
    """Fork the writer process as the console script starts (`entry.main`), before the command's
    own modules are imported, where its first argument names a command that stores a run.

    Why: the child's start (DuckDB's import ~21 ms and its first instance ~17 ms of CPU time) runs
    beside the command's spec and engine, and for one flow for 10 s it was still under way when
    the run was derived on a busy machine; forked here, it starts ~20 ms sooner (click's and the
    command's imports, `bench_pipeline.py --stages`' cli stage), and from a smaller process.
    The command takes it (`take`); one that no command took (a usage error, ``--help``) is ended
    and reaped before the process exits (`end_untaken`)."""
    if len(argv) > 1 and argv[1] in STORING_COMMANDS and not _early:
        writer = start()
        if writer is not None:
            _early.append(writer)


def take() -> WriterProcess | None:
    """The writer process forked early (`start_early`), else one forked now (`start`)."""
    return _early.pop() if _early else start()


def end_untaken() -> None:
    """End and reap a writer process forked early that no command took, and reap those that
    have ended after a write (`reap_ended`)."""
    while _early:
        _early.pop().close()
    reap_ended()


def _widen(pipe: int) -> None:
    """Let the request pipe hold `PIPE_BYTES` (where Linux allows it): the dumbbell's tables are
    12 MB, which the default 64 kB pipe passes in about 190 turns of writer and reader."""
    try:
        import fcntl

        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or above the system's limit
        pass


# --- the parent's side ----------------------------------------------------------------------------

class WriterProcess:
    """The command's handle on its writer process: requests, replies, and its end (`close`)."""

    # What this side imports for its requests: pickle (1 ms of CPU time), not where the module is
    # imported, before the fork, which is on the way to every run's engine, but by the preload
    # while the engine runs (`runner.run`; issue 15). The child imports it after the fork.
    MODULES = ("pickle",)

    def __init__(self, pid: int, requests: IO[bytes], replies: IO[bytes]) -> None:
        self.pid = pid
        self._requests = requests
        self._replies = replies
        self._writing = False  # a write sent and not yet answered: the child may be committing it
        # The child holds no store and has nothing under way: it answered a lookup (which closes
        # the store before its reply), or committed a write and let go of the store (`_let_go`).
        self._free = False
        self._status: int | None = None

    def stored_counters(self, db: str | Path, run_id: str) -> dict[str, Any] | None:
        """`store.counters.stored_counters`, looked up by the child."""
        self._request(("counters", str(db), run_id))
        answer: dict[str, Any] | None = self._reply()
        # Found: the command prints it and ends, its writer idle (an absent run is simulated and
        # written next, and an interrupted simulation ends its writer as before: `close`).
        self._free = answer is not None
        return answer

    def persist(self, run: DerivedRun, db: str | Path, *, replace: bool = False,
                sent: Callable[[], None] | None = None) -> None:
        """`store.writer.persist` of `run`, written by the child; returns once it has committed.
        `sent` is called once the child has the whole run, while it writes and commits it (the
        summary's rendering: `runner.run`). Ctrl-C and SIGTERM wait for the write, as in one
        process. The write is the child's last request: it replies once it has committed and let
        go of the store (`_let_go`; the reply says whether it could), and ends as the request
        pipe closes, without this process waiting for the kernel to free its memory (DuckDB's
        instance and the run's tables: 5-7 ms for the dumbbell; `close`).

        The tables go smallest first (`_smallest_first`), so that the child inserts the small
        ones while the large ones are encoded and cross the pipe; and nothing else runs in this
        process meanwhile (`sent` comes after), since the encoding holds the GIL. The reference
        dumbbell's channel series (8.6 MB) took 4 ms to encode and 6 to cross; with the
        summary rendered beside the hand-over and the tables in the order derive lists them, the
        child waited 4-8 ms for the series after its other inserts."""
        with deferred():
            tables = _smallest_first(run.stored_tables())
            scalars = _ReceivedRun.scalars_of(run)
            self._writing, self._free = True, False
            self._request(("write", str(db), replace, scalars, list(tables)))
            for table in tables.values():
                self._send(table.to_ipc())
            if sent is not None:
                sent()
            self._free = self._reply() is True
        _HANDED_OVER[:] = [run]


    def _request(self, message: tuple[Any, ...]) -> None:
        import pickle  # with the preload, while the engine runs (`MODULES`)

        self._send(pickle.dumps(message))

    def _send(self, frame: bytes) -> None:
        try:
            _write_frame(self._requests, frame)
        except BrokenPipeError:
            raise self._lost() from None

    def _reply(self) -> Any:
        """The child's answer to the request sent; its error raised here."""
        frame = _read_frame(self._replies)
        if frame is None:
            raise self._lost()
        self._writing = False  # answered: the child is done with any write
        import pickle

        reply = pickle.loads(frame)
        if reply[0] == "ok":
            return reply[1]
        raise _error_of(reply[1:])

    def _lost(self) -> WriterProcessLost:
        self._writing = False  # the child has gone: there is no write left to wait for
        self._reap()
        status = self._status or 0
        how = f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else \
            f"with status {os.waitstatus_to_exitcode(status)}"
        return WriterProcessLost(f"the process writing the store ended ({how}) before it replied")

    def close(self, *, process_ending: bool = False) -> None:
        """End the child and reap it: at once if it has no write under way (it holds no store
        then), else once it has committed or rolled the write back (it sees the pipe close).

        Except where the child holds no store and has nothing under way: after a lookup it has
        answered (a stored run's command), or a committed write whose store it has let go of
        (`_let_go`). It then ends on its own as the request pipe closes, and is neither killed
        nor waited for, so that the command does not wait for the kernel to free the child's
        memory (5-6 ms for the dumbbell; issue 15). With `process_ending` (the command, `cli._store_writer`) this
        process leaves the pipe to its own end, which closes it once the kernel has freed this
        process's memory, so that the two ends do not compete for the CPU (on a busy machine they
        took as long side by side as one after the other). Either way the child is reaped by the
        next `start` or at the command's end if it has ended by then (`reap_ended`), else by
        init once this process has ended."""
        if self._status is not None:
            return
        if self._free:
            self._status = 0
            if process_ending:
                _ENDING.append((self.pid, (self._requests, self._replies)))  # open until this process ends
                return
            _ENDING.append((self.pid, ()))
        for stream in (self._requests, self._replies):
            try:
                stream.close()
            except OSError:  # a request cut short by the child's end: nothing left to send
                pass
        if self._free:
            return
        if not self._writing:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap()

    def _reap(self) -> None:
        if self._status is None:
            try:
                self._status = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:  # reaped elsewhere
                self._status = 0

    def __enter__(self) -> WriterProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The writer processes that committed a write and let go of their store, not waited for
# (`WriterProcess.close`), each with the pipes left open until this process ends, if any.
_ENDING: list[tuple[int, tuple[IO[bytes], ...]]] = []


def reap_ended() -> None:
    """Reap the writer processes not waited for (`WriterProcess.close`) that have ended; the
    others are left to end on their own (and to init, once this process has ended)."""
    for ending in list(_ENDING):
        try:
            if os.waitpid(ending[0], os.WNOHANG)[0] == 0:
                continue  # still ending
        except ChildProcessError:  # reaped elsewhere
            pass
        _ENDING.remove(ending)


# The runs this process has had stored by its writer process, kept until it ends: the command
# prints the summary and ends at once (`cli.exit_now`, which frees nothing), and the run's tables
# freed as `runner.run` returns cost the dumbbell's command 0.8 ms before its summary was printed.
# Only the last one: a program that stores many runs through a writer process holds one at most.
_HANDED_OVER: list[Any] = []


def _smallest_first(tables: dict[str, Any]) -> dict[str, Any]:
    """`tables` by their number of values (rows x columns), smallest first (the order is the
    insert's within one transaction: the stored rows are the same in any)."""
    return dict(sorted(tables.items(), key=lambda item: len(item[1]) * len(item[1].column_types())))


def _error_of(failure: tuple[Any, ...]) -> BaseException:
    """The exception a failure of the child (`_failure`) is in the parent."""
    kind, *details = failure
    if kind == "spec":  # a SpecError: `--db: reason`, `BUFFERLAB_DB_WAIT: ...`
        return SpecError(*details)
    if kind == "store":  # an error of DuckDB's, printed as the command prints one (`cli.main`)
        return SpecError("--db", details[0])
    if kind == "memory":
        return MemoryError(*details)
    if kind == "exception":
        import pickle

        try:
            error = pickle.loads(details[0])
        except Exception:  # noqa: BLE001 - a class this process cannot rebuild: its name and text
            return WriterProcessFailed(details[1])
        if isinstance(error, BaseException):
            return error
    return WriterProcessFailed(details[-1])


# --- the child's side -----------------------------------------------------------------------------

def _serve(requests_fd: int, replies_fd: int) -> int:
    """The child's life: get ready, then answer requests until the parent closes the pipe."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    standard = _standard_streams(requests_fd, replies_fd)  # before anything here opens a file
    requests, replies = os.fdopen(requests_fd, "rb"), os.fdopen(replies_fd, "wb")
    import pickle  # the child's, after the fork (see `WriterProcess.MODULES`)

    try:  # what a request needs, made ahead; an error here is met again by the request
        import queue  # noqa: F401 - for `_ArrivingTables` (the command's process never needs it)

        from . import connection, counters, empty_store, writer  # noqa: F401

        connection.prepare_writer()
        codecache.save()  # what DuckDB's import compiled, for the next command (no exit functions run here)
        empty_store.prepare()  # once per schema: what a new store is copied from (`_write`)
    except BaseException:  # noqa: BLE001, S110 - the request that needs it reports it
        pass
    while True:
        frame = _read_frame(requests)
        if frame is None:
            return 0
        request = pickle.loads(frame)
        try:
            answer = _answer(request, requests)
        except _ParentGone:
            return 0
        except BaseException as e:  # noqa: BLE001 - sent to the parent, which raises it
            reply = ("error", *_failure(e))
        else:
            reply = ("ok", answer)
        _close_standard_streams(standard)  # at the first reply
        try:
            _write_frame(replies, pickle.dumps(reply))
        except BrokenPipeError:
            return 0
        if request[0] == "write":
            if reply == ("ok", True):  # its store let go of: end once the parent closes the pipe (`close`)
                _parent_ended(requests)
            return 0


def _parent_ended(requests: IO[bytes]) -> None:
    """Wait for the end of the request pipe: the parent closes it in `WriterProcess.close`, or
    leaves it to its own end, which closes it only once the kernel has freed the parent's memory
    (`do_exit`: `exit_mm` before `exit_files`), so that this process's end does not compete with
    the command's for the CPU (`WriterProcess.close`)."""
    try:
        while requests.read(1 << 16):
            pass
    except OSError:
        pass


def _standard_streams(*pipes: int) -> list[int]:
    """The descriptors 0, 1 and 2 open in the child as it starts, the command's stdin, stdout and
    stderr, but for its own `pipes` (which take those numbers where the command was started with
    one of them closed), so that `_close_standard_streams` never closes a file of the child's."""
    standard = []
    for fd in (0, 1, 2):
        if fd not in pipes:
            try:
                os.fstat(fd)
            except OSError:  # closed
                continue
            standard.append(fd)
    return standard


def _close_standard_streams(standard: list[int]) -> None:
    """Close the child's stdin, stdout and stderr (the command's, inherited by the fork) before
    its first reply (a lookup's or a write's): a caller reading the command's output to its end
    (`subprocess.run(capture_output=True)`, a shell's `$(...)`) would otherwise wait for the
    child's end too, which the command no longer waits for (`WriterProcess.close`), and the
    kernel closes a process's descriptors only after it has freed its memory (`do_exit`:
    `exit_mm` before `exit_files`). Before the reply, not after: a child that has replied may
    not run again before the command has ended (seen under strace on the busy machine: 2.5 ms
    from its reply to its next system call). It has nothing more to say on them: a failure goes
    back in the reply (`_failure`). `standard`: those the child had as it started
    (`_standard_streams`)."""
    for fd in standard:
        try:
            os.close(fd)
        except OSError:  # closed already
            pass
    standard.clear()  # their numbers may go to the child's files next


def _answer(request: tuple[Any, ...], requests: IO[bytes]) -> Any:
    kind, *arguments = request
    if kind == "counters":
        from .counters import stored_counters

        db, run_id = arguments
        return stored_counters(db, run_id)
    if kind == "write":
        db, replace, scalars, names = arguments
        run = _ReceivedRun.of(scalars, _ArrivingTables(names, requests))
        try:
            return _write(run, db, replace, requests)
        finally:
            run.tables.drain()
    raise ValueError(f"unknown request {kind!r}")


def _write(run: _ReceivedRun, db: str, replace: bool, requests: IO[bytes]) -> bool:
    """`Store.save` of `run`, rolled back if the parent has gone before the commit, into a copy
    of an empty store where there is no store yet (`empty_store`); a failed write closes the
    store (`Store.__exit__`). Whether the committed store's lock is free (`_let_go`): the reply.

    A committed write leaves its store attached and its connection open (`_COMMITTED`): the
    write is the child's last request, and the child's end closes the file. (A connection merely
    dropped here would be closed at once, tearing DuckDB's instance down before the reply: 4-6 ms
    for the dumbbell.) Nothing is left to write by then: the commit is a checkpoint into the
    file, synced, and leaves no write-ahead log (`store.connection`). Its lock is let go of before
    the reply (`_let_go`: 0.05 ms, where DuckDB's detach, `connection.release_writer`, took
    0.5-0.9), so that the parent need not wait for the child's end, which frees the lock only
    once the kernel has freed the child's memory (5-6 ms for the dumbbell; issue 15)."""
    from . import empty_store
    from .writer import Store

    placed = empty_store.place(Path(db))  # a new store's tables without making them now, where it can
    store = Store(db, copy_as_placed=placed)
    try:
        store.save(run, replace=replace, before_commit=lambda: _parent_gone(requests))
    except BaseException:
        store.con.close()
        raise
    _COMMITTED.append(store)
    return _let_go(store.path)


# The store of the write the child has committed, kept open until the child ends (`_write`).
_COMMITTED: list[Any] = []

# `struct flock` of Linux's fcntl(2) on a 64-bit system: l_type, l_whence, l_start, l_len, l_pid.
_FLOCK = struct.Struct("hhqqi4x")


def _let_go(path: Path) -> bool:
    """Let go of the lock DuckDB holds on the committed store at `path` without closing DuckDB's
    file, and say whether it is free now: another process may then open the store, while this
    one only replies and ends (it never touches the file again).

    DuckDB locks its file with a POSIX record lock (`fcntl(F_SETLK)`, "POSIX" in /proc/locks;
    DuckDB 2.0), and a process's POSIX locks on a file are all released when it closes any
    descriptor of that file (fcntl(2), "Advisory record locking"): here, one opened for the
    purpose. Checked, not assumed: an open file description's lock query (`F_OFD_GETLK`, Linux
    3.15), which sees every other lock of the file, this process's POSIX locks included, must
    find this process's write lock before and no lock after. Where it cannot (no `F_OFD_GETLK`,
    DuckDB locking another way, the file replaced, another process quicker to take the lock),
    False: the lock is let go of as the child ends, and the parent waits for that (`close`)."""
    import fcntl

    query = getattr(fcntl, "F_OFD_GETLK", None)
    if query is None or struct.calcsize("P") != 8:  # not Linux, or not a 64-bit system's `struct flock`
        return False
    try:
        before = _lock_on(path, query)  # closing it lets go of this process's POSIX locks on the file
        return before == (fcntl.F_WRLCK, os.getpid()) and _lock_on(path, query)[0] == fcntl.F_UNLCK
    except OSError:
        return False


def _lock_on(path: Path, query: int) -> tuple[int, int]:
    """The type (`F_WRLCK`, `F_RDLCK`, `F_UNLCK`) and process of a lock that would keep another
    from writing to all of `path`, seen through a descriptor opened and closed for the purpose."""
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        kind, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, query, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)))
    finally:
        os.close(fd)
    return kind, pid


def _parent_gone(requests: IO[bytes]) -> None:
    """Raise `_ParentGone` if the request pipe has ended: between requests the parent sends
    nothing, so anything to read is its end."""
    if select.select([requests], [], [], 0)[0]:
        raise _ParentGone


def _failure(error: BaseException) -> tuple[Any, ...]:
    """`error` as the parent rebuilds it (`_error_of`): a SpecError by field and reason, an error
    of DuckDB's by its text (the parent has no DuckDB to rebuild it with), a MemoryError, else the
    exception pickled, with its type and text in case it cannot be rebuilt there."""
    if isinstance(error, SpecError):
        return "spec", error.field, error.reason
    duckdb_error = getattr(sys.modules.get("duckdb"), "Error", None)
    if isinstance(duckdb_error, type) and isinstance(error, duckdb_error):
        return "store", " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, MemoryError):
        return "memory", str(error)
    text = f"{type(error).__name__}: {error}"
    if not type(error).__module__.startswith(("duckdb", "_duckdb")):
        import pickle

        try:
            return "exception", pickle.dumps(error), text
        except Exception:  # noqa: BLE001, S110 - not picklable: its type and text
            pass
    return "internal", text


@dataclass(frozen=True)
class _Scalars:
    engine_version: str
    end_ns: int
    events: int


@dataclass(frozen=True)
class _ReceivedRun:
    """A run as the child receives it: what `Store.save` writes (`writer.RunToStore`)."""

    run_id: str
    name: str | None
    seed: int
    duration_ns: int
    wall_time_s: float
    spec_json: str
    spec_hash: str
    user_spec_json: str
    study: str | None
    result: _Scalars
    tables: _ArrivingTables

    @staticmethod
    def scalars_of(run: DerivedRun) -> dict[str, Any]:
        """What the parent sends of `run` besides its tables: this class's fields, read from it."""
        engine = {f.name: getattr(run.result, f.name) for f in fields(_Scalars)}
        return {**{f.name: getattr(run, f.name) for f in fields(_ReceivedRun) if f.name not in ("result", "tables")},
                **engine}

    @classmethod
    def of(cls, scalars: dict[str, Any], tables: _ArrivingTables) -> _ReceivedRun:
        engine = {f.name: scalars.pop(f.name) for f in fields(_Scalars)}
        return cls(**scalars, result=_Scalars(**engine), tables=tables)

    def stored_tables(self) -> _ArrivingTables:
        return self.tables


class _ArrivingTables:
    """A write's tables in the order the parent sends them, each decoded as it arrives. A thread
    reads the frames from the pipe as soon as the write's request has come, while the store is
    opened and the tables before are inserted (DuckDB lets go of the GIL while it works)."""

    def __init__(self, names: list[str], requests: IO[bytes]) -> None:
        self._names = names
        self._requests = requests
        self._received = 0
        import queue

        self._frames: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read, name="requests", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for _ in self._names:
                frame = _read_frame(self._requests)
                self._frames.put(frame)
                if frame is None:
                    return
        except BaseException as e:  # noqa: BLE001 - raised where the frame is taken
            self._frames.put(e)

    def items(self) -> Iterator[tuple[str, Any]]:
        from ..pipeline.engine import core

        while self._received < len(self._names):
            name, frame = self._names[self._received], self._next()
            yield name, core().Table.from_ipc(name, frame)

    def drain(self) -> None:
        """Read what the parent still sends of the write (after a failure), so that it is
        never left writing into a full pipe."""
        self._reader.join()

    def _next(self) -> bytes:
        frame = self._frames.get()
        if isinstance(frame, BaseException):
            raise frame
        if frame is None:
            raise _ParentGone
        self._received += 1
        return frame


# --- frames -----------------------------------------------------------------------------------

def _write_frame(stream: IO[bytes], frame: bytes) -> None:
    stream.write(_LENGTH.pack(len(frame)))
    stream.write(frame)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame, or None where the stream ends (before or inside a frame)."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    frame = stream.read(length)
    return frame if len(frame) == length else None
