"""What a fresh run will need after the engine, made ready while the engine runs.

The engine releases the GIL while it simulates (`_core.run` takes it back every 20 ms to look
for signals), so on a machine with a second core another thread can run Python meanwhile.
`start` begins that thread just before the engine of a run that is not in the store yet. It
imports what `derive` and `persist` need and makes the store writer's in-memory DuckDB database
(`store.connection.prepare_writer`). In a fresh `bufferlab run` of the reference dumbbell that
is about 0.1 s of imports (DuckDB, the metric catalogue's Python side, the store's writer; no
numpy since the catalogue is computed in Rust, issue 15) and DuckDB's
instance (~20 ms, mostly without the GIL), taken off the command's wall time where the engine
runs long enough to cover it. (Making the instance in a third thread, beside the imports, did
not pay: with the engine and the imports on the two cores it only took time from the engine.)

It is a process-level shortcut, not a step of the pipeline: no step waits for it or knows of it.
A step that needs a module the thread has not finished importing imports it itself, and Python's
import lock makes it wait for the thread's import; a writer that finds no database made ahead
makes its own (`store.connection`). So a failed or unfinished preload changes nothing: its
error is kept (`Preload.error`), and the main thread meets the same one, with the command's
one-line report, when it does the same work. The store's file is not opened before `persist`
attaches it: sweeps run many processes on one store, and an interrupted run leaves no file. The
thread is a daemon: it never keeps the process alive (past the short wait at exit below).

While the preload runs, the interpreter switches threads quickly (`bufferlab.switching`): the
engine takes the GIL back every 20 ms to look for signals (`SIGNAL_CHECK_INTERVAL` in
crates/bufferlab-py/src/lib.rs; it used to after every 2-3 ms slice: the dumbbell's engine beside
the preload 93 -> 84 ms, alone 82), and would otherwise wait up to 5 ms for it each time.

Where the store is written by another process (`store.writer_process`, `bufferlab run` on Linux:
`start(store=False)`), the thread imports only what `derive` needs and the caller names: DuckDB,
its instance and the store's writer are the child's, which makes them on the second core while
this process parses the spec, instead of about 60 ms of GIL-held imports here beside the engine.

A caller may name modules it will need after the run (`start(also=...)`: `bufferlab run`'s
summary tables, rich, 17 ms of imports); the thread imports them after its own, so that the
summary rendered beside the store's write is left only its own work (7 ms).

The process waits for an unfinished preload when it exits (an `atexit` function, at most
`EXIT_WAIT_S`): a run that fails early, or is interrupted, can end while the thread is still
inside DuckDB's import or instance, and an interpreter torn down under a thread in an extension's
C++ code aborts the process (``FATAL: exception not rethrown``, status 134) instead of exiting
with the run's own status. The preload takes about 0.1 s; a run that got this far has usually
finished it already.
"""

from __future__ import annotations

import atexit
import importlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from .switching import begin_quick_switches, end_quick_switches

__all__ = ["Preload", "start", "MODULES", "STORE_MODULES", "EXIT_WAIT_S"]

# What the steps after the engine import, in the order the preload imports them: DuckDB and the
# store's connection first, so that DuckDB's instance (made without the GIL) is under way while
# a short run's main thread imports `derive` (a few ms: the catalogue is the engine crate's).
MODULES = ("bufferlab.store.connection", "bufferlab.pipeline.derive", "bufferlab.store.writer")
# The store's part of `MODULES`: none of it where another process writes the store.
STORE_MODULES = ("bufferlab.store.connection", "bufferlab.store.writer")
# The longest the process waits at its exit for a preload still under way (see the module docstring).
EXIT_WAIT_S = 2.0


@dataclass
class Preload:
    """A preload under way: its thread, and the error that ended it early, if one did."""

    thread: threading.Thread = field(init=False, repr=False)
    error: BaseException | None = None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; whether it did (within `timeout` seconds)."""
        self.thread.join(timeout)
        return not self.thread.is_alive()


_lock = threading.Lock()
_running: Preload | None = None


def start(also: Sequence[str] = (), store: bool = True) -> Preload | None:
    """Start preloading in a daemon thread, importing `also` (module names) after `MODULES`
    (without `STORE_MODULES` and DuckDB's instance unless `store`: see the module docstring);
    None while an earlier preload of this process is still running."""
    global _running
    with _lock:
        if _running is not None and _running.thread.is_alive():
            return None
        preload = Preload()
        modules = [*(m for m in MODULES if store or m not in STORE_MODULES), *also]
        preload.thread = threading.Thread(target=_run, args=(preload, modules), name="bufferlab-preload",
                                          daemon=True)
        if _running is None:
            atexit.register(_wait_at_exit)
        _running = preload
        begin_quick_switches()  # before the thread starts, so the engine never waits the default
        try:
            preload.thread.start()
        except BaseException:
            end_quick_switches()
            raise
    return preload


def _run(preload: Preload, modules: Sequence[str]) -> None:
    """The thread's work; an error is kept on `preload`, not printed (see the module docstring)."""
    try:
        for module in modules:
            imported = importlib.import_module(module)
            if module == MODULES[0]:  # the store's connection: DuckDB's instance next
                imported.prepare_writer()
    except BaseException as e:  # noqa: BLE001 - kept for the record; the main thread meets it again
        preload.error = e
    finally:
        end_quick_switches()


def _wait_at_exit() -> None:
    """Let a preload still under way finish before the interpreter is torn down (see the module
    docstring); a preload stuck for longer than `EXIT_WAIT_S` is left behind."""
    running = _running
    if running is not None:
        running.wait(EXIT_WAIT_S)
