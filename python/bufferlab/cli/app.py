"""The `bufferlab` command group and its error boundary: the commands it knows (each imported
from its own module of `bufferlab.cli` when asked for), `main`, which turns every failure into one
line and an exit status, and the settings of the command's process (`command_line`).

Bad input of any kind exits with status 2 and exactly one line ``error: <field>: <reason>`` on
stderr (no traceback), before anything is stored: a spec, an option, a store, and any file or
stream the command cannot use (an output path, a stdout that refuses writes, such as a full disk
or /dev/full: ``error: stdout: cannot write: No space left on device``).

One stream problem is not an error: a reader of stdout that goes away before the output ends
(``bufferlab results list | head -1``) ends the command quietly, with nothing on stderr and
status 1, as rich's console does and as most Unix tools do (they die of SIGPIPE); what the
command had stored by then stays stored.
"""

from __future__ import annotations

import atexit
import errno
import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

import click

from ..errors import InterruptedAfterWrite, SpecError, Terminated, TerminatedAfterWrite
from ..pipeline.engine import EngineFailure, EngineMissing
from .lazy import LazyGroup
from .options import option_name

__all__ = ["cli", "main", "command_line", "prepare_process", "exit_now"]

EXIT_BAD_INPUT = 2
# New container objects between two passes of the cyclic garbage collector in the command's
# process (Python's default is 700; see `prepare_process`).
GC_THRESHOLD = 1_000_000


def _version_text() -> str:
    from .. import __version__

    try:
        from ..pipeline.engine import engine_version

        engine = engine_version()
    except EngineMissing:
        engine = "not built"
    return f"bufferlab {__version__} (engine {engine})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_text())
        ctx.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             lazy={"run": ".run:run_command", "check": ".run:check_command", "ccperf": ".ccperf:ccperf_command",
                   "results": ".results:results_group", "size": ".size:size_command",
                   "advise": ".advise:advise_command", "sweep": ".sweep:sweep_command",
                   "reproduce": ".reproduce:reproduce_command", "plot": ".plot:plot_command",
                   "report": ".report:report_command", "serve": ".report:serve_command"})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the package and engine versions and exit.")
def cli() -> None:
    """bufferlab: a laboratory for router buffer sizing and congestion control."""


def _usage_error_line(error: click.UsageError) -> str:
    """Click's usage errors as one `field: reason` line."""
    if isinstance(error, click.exceptions.NoArgsIsHelpError) and error.ctx is not None:
        group = error.ctx.command
        known = group.list_commands(error.ctx) if isinstance(group, click.Group) else []
        return f"COMMAND: missing (known: {', '.join(known)}; --help tells more)"
    if isinstance(error, click.NoSuchOption):
        return f"{error.option_name}: unknown flag"
    if isinstance(error, click.BadOptionUsage):
        return f"{error.option_name}: {error.message[:1].lower()}{error.message[1:]}"
    if isinstance(error, click.BadParameter | click.MissingParameter) and error.param is not None:
        name = option_name(error.param)
        if isinstance(error, click.MissingParameter):
            return f"{name}: missing"
        return f"{name}: {error.message}"
    message = error.format_message()
    if message.startswith("No such command"):
        command = message.split("'")[1] if "'" in message else message
        return f"{command}: unknown command (known: {', '.join(cli.list_commands(click.Context(cli)))})"
    return f"usage: {message}"


def _fail(line: str, code: int = EXIT_BAD_INPUT) -> int:
    try:
        sys.stderr.write("error: " + " ".join(line.split()) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr to tell it on: the status alone says it
        pass
    return code


def _os_error_line(error: OSError) -> str:
    """A file or stream the command could not use, as one `where: reason` line: the file the
    error names, else stdout when that is what refused a write (a full disk, /dev/full: an error
    of writing that names no file is one of the command's own output; the files it writes are
    named by their option, `errors.writing`)."""
    reason = error.strerror or str(error) or type(error).__name__
    if error.filename is not None:
        return f"{error.filename}: {reason}"
    if error.errno in _WRITE_ERRORS or _stdout_unwritable():
        try:  # what stdout still holds goes nowhere: the exit's flush must not fail again
            _stop_writing_stdout()
        except (OSError, ValueError):  # not a file (a test's captured stdout)
            pass
        return f"stdout: cannot write: {reason}"
    return f"system: {reason}"


# Errors of a write that a file system or device refuses.
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF})


def _stdout_unwritable() -> bool:
    """Whether stdout refuses what is still to be written to it."""
    try:
        sys.stdout.flush()
        return False
    except (OSError, ValueError):
        return True


def _is_store_error(error: Exception) -> bool:
    """An error of DuckDB (the store): DuckDB is imported only by the commands that use it, so an
    error of its type can only come once it is loaded."""
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(error, duckdb.Error)


EXIT_INTERRUPTED = 128 + signal.SIGINT
# An interruption held back by a write (`interrupts.deferred`) stops the command after the commit.
STORED_BEFORE_STOPPING = "the run being stored when it came was stored whole first; nothing after it was done"
EXIT_TERMINATED = 128 + signal.SIGTERM


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(f"signal {signum}")


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and SIGTERM raises Terminated, whatever the parent set up
    (a shell's background job starts with SIGINT ignored). Only the main thread can install them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `bufferlab` console script; returns the exit status.

    Every failure ends in one line on stderr: bad input (spec, flags, store, output paths) exits
    2, an interruption 130 (SIGINT) or 143 (SIGTERM), a bug of bufferlab itself 1."""
    try:
        with _signals_interrupt():
            # Not `cli.main`: it turns every KeyboardInterrupt (and so SIGTERM) into a bare Abort.
            args = list(argv) if argv is not None else sys.argv[1:]
            with cli.make_context("bufferlab", args) as ctx:
                result = cli.invoke(ctx)
            sys.stdout.flush()  # what is left of the output: a failure to write it is the command's
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.UsageError as e:
        return _fail(_usage_error_line(e))
    except SpecError as e:
        return _fail(str(e))
    except EngineMissing as e:
        return _fail(f"engine: {e}", 1)
    except EngineFailure as e:
        return _fail(str(e), 1)
    except TerminatedAfterWrite:
        return _fail(f"interrupted by SIGTERM: {STORED_BEFORE_STOPPING}", EXIT_TERMINATED)
    except InterruptedAfterWrite:
        return _fail(f"interrupted: {STORED_BEFORE_STOPPING}", EXIT_INTERRUPTED)
    except Terminated:
        return _fail("interrupted by SIGTERM: nothing of the unfinished run was stored", EXIT_TERMINATED)
    except (KeyboardInterrupt, click.Abort):
        return _fail("interrupted: nothing of the unfinished run was stored", EXIT_INTERRUPTED)
    except Exception as e:  # noqa: BLE001 - each kind below is one line
        if _is_store_error(e):
            return _fail(f"--db: {' '.join(str(e).split()) or type(e).__name__}")
        # DuckDB reports a Ctrl-C that lands inside a query as RuntimeError("Query interrupted").
        if isinstance(e, RuntimeError) and "interrupted" in str(e).lower():
            return _fail("interrupted: nothing of the unfinished run was stored", EXIT_INTERRUPTED)
        if isinstance(e, MemoryError):
            return _fail("memory: the machine ran out of memory (lower --max-memory to refuse such runs earlier)", 1)
        if isinstance(e, BrokenPipeError) and _stdout_reader_gone():
            return _stop_writing_stdout()
        if isinstance(e, OSError):
            return _fail(_os_error_line(e))
        return _internal(e)  # a bug: one line, the traceback on request
    return result if isinstance(result, int) else 0


def command_line() -> NoReturn:
    """The `bufferlab` command: its process settings, `main`, then exit with its status at once."""
    prepare_process()
    exit_now(main())


def prepare_process() -> None:
    """Settings of the command's process (not of the library imported elsewhere).

    numpy's OpenBLAS starts a pool of worker threads when numpy is imported, and they spin for a
    while waiting for work, in every command that imports numpy (plots, studies, reports;
    `bufferlab run` does not: its metrics are the engine crate's), for nothing, since nothing
    multiplies matrices. The command asks for one BLAS thread unless the environment says
    otherwise.

    Python's cyclic garbage collector runs whenever 700 more container objects exist than at its
    last pass, and every tenth pass walks the survivors of the ten before: a fresh `bufferlab run`
    would make about 100 passes, most of them over the objects its imports made (classes,
    functions, pydantic's schemas), and a large spec several more over the objects it has just
    made, for a command that leaves little cyclic garbage. The command lets 1,000,000 accumulate
    instead (`GC_THRESHOLD`): a short run needs no pass, a long one a few, and the garbage that
    waits between passes stays bounded (a finely recorded run's peak memory is the same).

    A command started with stdout or stderr closed writes there nothing (`_discard_closed_streams`)."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _discard_closed_streams()


def _discard_closed_streams() -> None:
    """A command started with stdout or stderr closed (`bufferlab run x.toml >&-`) writes what it
    would have written there to /dev/null, as Python's `print` does when it has no stdout (the
    interpreter then sets `sys.stdout` to None, on which click's and rich's output, and the
    command's exit, would fail with an internal error after the run was stored). The descriptor is
    opened too, so that no file the command opens takes the number 1 or 2 by chance."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        if name == "stdout":
            sys.stdout = stream
        else:
            sys.stderr = stream


def exit_now(status: int) -> NoReturn:
    """End the process with `status` once everything the command wrote is out: Python's exit
    functions (`atexit`) run and stdout and stderr are flushed, but the interpreter is not torn
    down. Freeing every module and object (polars', DuckDB's and numpy's thread pools, a run's
    tables) does nothing a finished command needs and costs CPU time after `bufferlab run`; by
    then every store the command opened is committed and closed.

    What the process still costs after this is the kernel's, not Python's: the freeing of the
    process's memory, which grows with what it touched (the process's other threads are idle by
    then)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`bufferlab ... | head`) or stream
            if stream is sys.stdout and status == 0:
                status = 120  # what the interpreter's own exit reports when stdout cannot be flushed
    os._exit(status)


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (`bufferlab results list | head -1`):
    the pipe then reports an error condition to poll. A broken pipe elsewhere (a sweep's worker
    that died) is not this, and stays an error of its own."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no stdout, or not a file
        return False


def _stop_writing_stdout() -> int:
    """End quietly after stdout's reader went away, as rich's console does when it meets that
    (`Console.on_broken_pipe`): what is left to print goes nowhere, so the exit's flush cannot
    fail again, and the status is 1 with nothing on stderr (the reader chose to stop reading;
    nothing went wrong in the command). A run is stored before its summary is printed."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 1


def _internal(error: Exception) -> int:
    """A bug of bufferlab: one line, exit 1; BUFFERLAB_DEBUG=1 shows the traceback instead."""
    if os.environ.get("BUFFERLAB_DEBUG"):
        raise error
    return _fail(f"internal: {type(error).__name__}: {error} (a bug in bufferlab; BUFFERLAB_DEBUG=1 shows the "
                 "traceback)", 1)
