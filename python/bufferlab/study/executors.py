"""Where a sweep's runs are simulated: in this process, on a local process pool, or on Dask.

Every executor runs the same pure task, `simulate_and_derive(plan)`, and hands back its result
in completion order; none of them ever opens the store (the sweep's one writer, in the calling
process, does). The same plans give the same results on any of them: the engine is deterministic
and a plan carries everything a run depends on.

- ``serial``: in this process, one run at a time (``--workers 1``).
- ``local``: a process pool of N workers (default: one per core), started with "spawn" so that no
  worker inherits the caller's threads or open files. A worker ends itself when the process that
  started it dies (`end_with_parent`), so a sweep killed with SIGKILL, which no handler sees,
  leaves no orphaned workers behind. A worker hands a finished run over as a file in shared
  memory (`RunSpool`), not through the pool's pipe.
- ``dask``: dask.distributed, on a LocalCluster of N single-threaded worker processes
  (``--dask local``) or on a running scheduler (``--dask tcp://host:8786``). A finished run is
  fetched into this process as soon as it finishes (`_fetch`), while the writer stores the one
  before.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import queue
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from ..analysis.derive import derive
from ..analysis.record import DerivedRun
from ..errors import SpecError
from ..pipeline.plan import Plan
from ..pipeline.simulate import simulate

__all__ = ["simulate_and_derive", "Outcome", "Executor", "SerialExecutor", "LocalPoolExecutor", "DaskExecutor",
           "RunSpool", "make_executor", "default_workers", "end_with_parent", "ORPHANED_EXIT_STATUS"]


# A worker process that ends without a result (killed by the kernel's OOM killer, a signal, an
# abort): every run it had, and every run not yet started on that pool, fails with this line.
WORKER_DIED = "engine: a worker process died before finishing this run (out of memory or killed)"


# How often a Dask sweep with nothing finished asks the scheduler whether it still has workers.
_DASK_POLL_S = 2.0


# The status of a worker that ended itself because its sweep's process died (nobody waits for it).
ORPHANED_EXIT_STATUS = 1


def end_with_parent(spool: str | None = None) -> None:
    """In a pool worker (its initializer): end this process as soon as the process that started
    it dies, whatever it is doing, and remove the directory `spool` (`RunSpool`), which nobody
    else will. A sweep's process stops its workers itself on Ctrl-C, SIGTERM and at its end;
    SIGKILL (or the OOM killer) gives it no chance, and workers that wait for tasks from a dead
    process would sleep forever, as orphans.

    `multiprocessing.parent_process().sentinel` is the worker's end of the pipe its parent
    spawned it through; the parent holds the other end until it dies (or has joined the worker),
    so the sentinel turns readable exactly then. A daemon thread waits on it without the GIL and
    ends the process with `os._exit`: a run under way is abandoned (it was never stored) and no
    exit handler of the worker runs. The engine hands the GIL back between slices of events, so
    the thread gets it within milliseconds even mid-run."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by multiprocessing: nothing to watch
        return

    def watch() -> None:
        parent.join()  # returns when the sentinel is readable: the parent is gone
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)
        os._exit(ORPHANED_EXIT_STATUS)

    threading.Thread(target=watch, name="bufferlab-parent-watch", daemon=True).start()


def simulate_and_derive(plan: Plan) -> DerivedRun:
    """The task of one run: simulate, then derive (a pure function of the plan)."""
    return derive(plan, simulate(plan))


def _task(key: int, plan: Plan) -> tuple[int, DerivedRun | None, str | None]:
    """A task as workers run it: the run, or its one-line error (a failure never escapes)."""
    try:
        return key, simulate_and_derive(plan), None
    except SpecError as e:
        return key, None, str(e)
    except Exception as e:  # noqa: BLE001 - a worker reports every failure as one line
        return key, None, f"engine: {type(e).__name__}: {' '.join(str(e).split())}"


@dataclass
class Outcome:
    """One finished task: `key` is the caller's, `run` the derived run or None with `error`."""

    key: int
    run: DerivedRun | None
    error: str | None


class RunSpool:
    """Where a local pool's workers leave their finished runs: a directory of its own in shared
    memory (/dev/shm, a tmpfs; the system's temporary directory where there is none), one file
    per run, each read and removed by the sweep's process as it takes the run.

    A run is ~19 MB of tables on the reference dumbbell. Through the pool's pipe it took ~35 ms
    of the worker's CPU and ~28 ms of the receiver's: a pipe holds 64 kB, so the run crossed in
    ~300 writes, each waiting for the reader, and the reader's `os.read` asked each time for a
    buffer the size of what was left. Written to a file and read back in one call, the same run
    costs ~16 and ~5 ms. A run that cannot be written there (a full tmpfs: a container's
    /dev/shm may hold 64 MB) goes through the pipe after all. The directory goes with the
    executor (`close`, or when it is collected), and with its workers if the sweep's process is
    killed outright (`end_with_parent`). A directory left when nothing of its sweep survived (a
    SIGKILL to the whole process group) holds memory until the next spool is made, which
    removes it (`remove_abandoned_spools`).

    Its name says whose it is: `bufferlab-runs-<pid namespace>.<pid>-…`. A process id means
    something only in its PID namespace, and two containers can share /dev/shm (or the temporary
    directory) as one user while each has its own namespace, where a living sweep's process id
    may be no process at all; so only spools of this process's namespace are ever judged
    abandoned."""

    PREFIX = "bufferlab-runs-"

    def __init__(self) -> None:
        shm = "/dev/shm"
        where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else tempfile.gettempdir()
        remove_abandoned_spools(where)
        self.path = tempfile.mkdtemp(prefix=f"{self.PREFIX}{_pid_namespace()}.{os.getpid()}-", dir=where)
        self._remove = weakref.finalize(self, shutil.rmtree, self.path, True)

    def take(self, key: int, file: str) -> Outcome:
        """The outcome of task `key`, whose run is in `file` (written by `_spooled_task`); the
        file is removed."""
        try:
            with open(file, "rb") as f:
                run: DerivedRun = pickle.load(f)
        except OSError as e:
            return Outcome(key, None, f"engine: the finished run could not be read back from {file}: "
                                      f"{e.strerror or e}")
        finally:
            _unlink(file)
        return Outcome(key, run, None)

    def remove(self) -> None:
        self._remove()


def remove_abandoned_spools(where: str) -> list[str]:
    """Remove the spools in `where` whose sweep's process is gone (their name carries its PID
    namespace and process id); returns their paths. A spool whose process is alive, that was
    made in another PID namespace (whose process ids mean nothing here) or that belongs to another
    user is left alone."""
    removed, namespace = [], _pid_namespace()
    with contextlib.suppress(OSError), os.scandir(where) as entries:
        for entry in entries:
            owner = entry.name.removeprefix(RunSpool.PREFIX).partition("-")[0]
            spool_namespace, _, pid = owner.partition(".")
            if entry.name.startswith(RunSpool.PREFIX) and spool_namespace == namespace and pid.isdigit() \
                    and not _alive(int(pid)) and entry.is_dir(follow_symlinks=False) \
                    and entry.stat(follow_symlinks=False).st_uid == os.getuid():
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    return removed


def _pid_namespace() -> str:
    """This process's PID namespace, as the inode number of /proc/self/ns/pid on Linux (the
    identity namespaces have there), "host" where there is no such file."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "host"


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user's counts: it cannot be signalled)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _spooled_task(key: int, plan: Plan, spool: str) -> tuple[int, str | DerivedRun | None, str | None]:
    """A local pool's task: the name of the file in `spool` that holds the run (the run itself if
    it could not be written there), or its one-line error."""
    key, run, error = _task(key, plan)
    if run is None:
        return key, None, error
    file = None
    try:
        fd, file = tempfile.mkstemp(suffix=".run", dir=spool)
        with open(fd, "wb") as f:
            pickle.dump(run, f, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:  # no room in the spool (or no spool): the run goes through the pipe
        if file is not None:
            _unlink(file)
        return key, run, None
    except BaseException:
        if file is not None:
            _unlink(file)
        raise
    return key, file, None


def _started() -> None:
    """The empty task that starts a pool's worker (`LocalPoolExecutor.start`)."""


def _unlink(file: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(file)


class Executor(Protocol):
    name: str
    workers: int

    def start(self, tasks: int) -> None:
        """Get ready for `tasks` runs (more than 0) before they are handed over, so that workers
        that take time to start start while the caller does other work."""
        ...

    def run(self, tasks: Sequence[tuple[int, Plan]]) -> Iterator[Outcome]:
        """Run every (key, plan) and yield outcomes as they finish."""
        ...

    def close(self) -> None:
        """Stop the workers (cancelling what has not started)."""
        ...

    def stop_workers(self) -> None:
        """End the runs being simulated at once, without waiting or locking (callable from a
        signal handler); `close` still follows."""
        ...


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class SerialExecutor:
    name = "serial"
    workers = 1

    def start(self, tasks: int) -> None:
        pass  # the runs simulate in this process

    def run(self, tasks: Sequence[tuple[int, Plan]]) -> Iterator[Outcome]:
        for key, plan in tasks:
            yield Outcome(*_task(key, plan))

    def close(self) -> None:
        pass

    def stop_workers(self) -> None:
        pass  # the one run simulates in this process, between the caller's writes


class LocalPoolExecutor:
    """A process pool; at most 2 x workers tasks are queued at once, so that Ctrl-C has little
    to cancel and results stream back while the rest wait."""

    name = "local"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.spool = RunSpool()
        self.pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=end_with_parent, initargs=(self.spool.path,))

    def start(self, tasks: int) -> None:
        """Start the workers that `tasks` runs will keep busy, now rather than at the first run: a
        spawned worker takes ~0.15 s of CPU to import the engine and derive, which then overlaps
        the caller's own start (a new store made, DuckDB and polars imported).

        The pool starts a worker for a task it is given while none is idle, so one empty task per
        worker wanted starts them; a pool with workers running already starts no more."""
        if getattr(self.pool, "_broken", False) or self._processes():
            return
        for _ in range(min(tasks, self.workers)):
            self.pool.submit(_started)

    def run(self, tasks: Sequence[tuple[int, Plan]]) -> Iterator[Outcome]:
        if getattr(self.pool, "_broken", False):
            # A worker died in an earlier sweep on this executor (`run_sweep(keep_executor=True)`):
            # that sweep's runs failed; this one gets a pool of its own.
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool()
        pending = list(reversed(tasks))
        running: dict[Future[Any], int] = {}
        while pending or running:
            while pending and len(running) < 2 * self.workers:
                key, plan = pending.pop()
                try:
                    running[self.pool.submit(_spooled_task, key, plan, self.spool.path)] = key
                except BrokenProcessPool:
                    pending.append((key, plan))
                    break
            if not running:  # the pool broke: nothing can run any more
                for key, _ in reversed(pending):
                    yield Outcome(key, None, WORKER_DIED)
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                key = running.pop(future)
                try:
                    _, run, error = future.result()
                except BrokenProcessPool:
                    yield Outcome(key, None, WORKER_DIED)
                    continue
                yield self.spool.take(key, run) if isinstance(run, str) else Outcome(key, run, error)

    def _processes(self) -> list[multiprocessing.process.BaseProcess]:
        """The pool's worker processes (the pool forgets them when it shuts down)."""
        return list((getattr(self.pool, "_processes", None) or {}).values())

    def close(self) -> None:
        """Cancel what has not started and stop the workers at once: after a normal end nothing is
        left; after Ctrl-C a run still simulating is abandoned (it was never stored)."""
        processes = self._processes()
        manager = getattr(self.pool, "_executor_manager_thread", None)  # forgotten by `shutdown`
        self.pool.shutdown(wait=False, cancel_futures=True)
        _terminate(processes)
        for process in processes:
            process.join(timeout=5)
        # The pool's thread that hands tasks over closes its queues once it sees the workers gone.
        # A process that exits before then leaves their semaphores to the resource tracker, which
        # warns of "leaked semaphore objects" at exit.
        if manager is not None:
            manager.join(timeout=5)
        self.spool.remove()  # with the runs of an interrupted sweep that nobody took

    def stop_workers(self) -> None:
        _terminate(self._processes())


def _terminate(processes: Sequence[multiprocessing.process.BaseProcess]) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()


class DaskExecutor:
    """dask.distributed: a LocalCluster of `workers` processes, or a running scheduler.

    A worker that dies (killed, out of memory, its machine gone) loses only the runs it held:
    the scheduler gives them to another worker, and a run whose workers died
    `distributed.scheduler.allowed-failures` + 1 times (Dask's default: 4) fails with one line.
    Once every worker has left the scheduler, the sweep waits `workers_lost_after` seconds for one
    to join (a cluster's workers restart, a batch system brings them back) before the runs left
    fail with one line; a scheduler that never had a worker is waited for, as a batch system's
    workers may take their time to start."""

    name = "dask"

    def __init__(self, address: str, workers: int, workers_lost_after: float = 60.0) -> None:
        from dask.distributed import Client, LocalCluster

        self.address = address
        self.workers_lost_after = workers_lost_after
        self.cluster = None
        if address == "local":
            import dask

            # A worker's statistical profiler samples its threads' stacks every 10 ms: ~10 ms of
            # CPU per reference dumbbell run, for a profile that nobody reads (no dashboard). The
            # scheduler's HTTP server (its /metrics and /health) takes a free port: without an
            # address it asks for 8787, and warns when another cluster (a second sweep) holds it.
            with dask.config.set({"distributed.worker.profile.enabled": False}):
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                            dashboard_address=":0")
            self.client = Client(self.cluster)
        else:
            if not address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
                raise SpecError("--dask", f'"{address}" is neither "local" nor a scheduler address like tcp://host:8786')
            try:
                self.client = Client(address, timeout="10s")
            except OSError as e:
                raise SpecError("--dask", f"cannot reach the scheduler at {address}: {e}") from None
        self.workers = len(self.client.scheduler_info().get("workers", {})) or workers
        # The scheduler's worker threads, as last asked (`_window`), and when.
        self._threads = self.workers
        self._threads_seen_at: float | None = None

    def start(self, tasks: int) -> None:
        pass  # the cluster's workers are running (a LocalCluster's since it was made)

    def run(self, tasks: Sequence[tuple[int, Plan]]) -> Iterator[Outcome]:
        waiting = list(reversed(tasks))
        keys: dict[Any, int] = {}  # the futures submitted and not yet handed back
        # Outcomes fetched by the client's callback thread, in the order their runs came in.
        fetched: queue.Queue[tuple[Any, Outcome]] = queue.Queue()
        # When the scheduler was last seen with a worker (None: never, so far).
        last_worker_seen = time.monotonic() if self.client.nthreads() else None
        try:
            while waiting or keys:
                window = self._window()
                while waiting and len(keys) < window:
                    key, plan = waiting.pop()
                    future = self.client.submit(_task, key, plan, pure=False)
                    keys[future] = key
                    future.add_done_callback(functools.partial(_fetch, key, fetched))
                try:
                    future, outcome = fetched.get(timeout=_DASK_POLL_S)
                except queue.Empty:
                    if self.client.nthreads():
                        last_worker_seen = time.monotonic()
                    elif last_worker_seen is not None \
                            and time.monotonic() - last_worker_seen >= self.workers_lost_after:
                        reason = (f"dask: every worker of the scheduler at {self.address} left, and none "
                                  f"joined within {self.workers_lost_after:g} s")
                        for key in sorted([*keys.values(), *(key for key, _ in waiting)]):
                            yield Outcome(key, None, reason)
                        return
                    continue
                last_worker_seen = time.monotonic()
                # Forgetting the future lets the scheduler release its result on the worker.
                del keys[future]
                yield outcome
        finally:
            for future in keys:
                future.cancel()

    def _window(self) -> int:
        """How many runs may be submitted and not yet handed back: two per worker thread the
        scheduler has (asked at most every `_DASK_POLL_S`, as workers may join and leave). Each
        worker has one run under way and the next at hand; the rest wait here, not on the
        workers, so that workers on the sweep's own machine leave its writer the CPU it needs,
        and a writer that falls behind holds at most this many finished runs (fetched into its
        process as they finish, `_fetch`), not every run of the sweep."""
        now = time.monotonic()
        if self._threads_seen_at is None or now - self._threads_seen_at >= _DASK_POLL_S:
            self._threads = sum(self.client.nthreads().values())
            self._threads_seen_at = now
        return 2 * max(1, self._threads)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def stop_workers(self) -> None:
        pass  # the scheduler's workers are told by `close` (cancelled futures, a closed cluster)


def _fetch(key: int, fetched: queue.Queue[tuple[Any, Outcome]], future: Any) -> None:
    """A Dask future's done-callback (it runs on the client's callback thread): fetch the
    finished run from its worker into this process and queue its outcome for the sweep's writer.
    The run comes over while the writer stores the one before, not after the writer asks for it:
    a reference dumbbell's run took 50-90 ms to fetch from an idle worker and up to 400 ms from
    one running the next run, through the scheduler, which the writer waited out between two
    stores. A worker lost after its run finished is no loss: Dask runs the task again, and this
    fetch waits for it. A fetch that fails fails its run with one line: a run left unqueued would
    keep the sweep waiting for it."""
    try:
        outcome = _outcome(key, future)
    except BaseException as e:  # noqa: BLE001 - (a cancellation is a BaseException) the run fails alone
        outcome = Outcome(key, None, f"dask: {type(e).__name__}: {' '.join(str(e).split())}")
    fetched.put((future, outcome))


def _outcome(key: int, future: Any) -> Outcome:
    """A finished future's outcome; a task the scheduler gave up on fails with one line."""
    from dask.distributed import KilledWorker

    if future.status == "finished":
        return Outcome(*future.result())
    if future.status == "cancelled":  # by the scheduler (e.g. restarted), or by this sweep's end
        return Outcome(key, None, "dask: the scheduler cancelled this run")
    error = future.exception()
    if isinstance(error, KilledWorker):
        return Outcome(key, None, "engine: the Dask workers running this run died "
                                  "(distributed.scheduler.allowed-failures exceeded: killed or out of memory)")
    return Outcome(key, None, f"dask: {type(error).__name__}: {' '.join(str(error).split())}")


def make_executor(workers: int | None, dask: str | None) -> Executor:
    """The executor a sweep's options ask for."""
    n = workers if workers is not None else default_workers()
    if n < 1:
        raise SpecError("--workers", f"expected 1 or more, got {n}")
    if dask is not None:
        return DaskExecutor(dask, n)
    if n == 1:
        return SerialExecutor()
    return LocalPoolExecutor(n)
