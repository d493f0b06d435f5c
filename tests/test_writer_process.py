"""The store's writer process of `bufferlab run` (`store.writer_process`): it stores exactly what
the in-process writer stores, fails with the same one-line errors, never leaves a process behind
(after success, a store error, Ctrl-C, SIGTERM or the command's SIGKILL), never writes after its
parent has gone, and keeps DuckDB out of the command's process. After a committed write it lets
go of the store before it replies, and the command does not wait for its end. Where no fork is
available the command stores in its own process as before."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from bufferlab import runner
from bufferlab.pipeline.engine import core
from bufferlab.pipeline.result import ENGINE_TABLES
from bufferlab.spec import Scenario
from bufferlab.store import writer as store
from bufferlab.store import writer_process
from conftest import REPO, SCENARIOS, SMALL_DUMBBELL, start_long_run, stored_tables, wait_until_simulating

# Every kind of engine table has rows: series, captures (booleans), and a split queue's classes.
CAPTURED = SMALL_DUMBBELL + """
    [[captures]]
    link = "btl"
    direction = "forward"
"""

# The head of a test program: each writer process forked is kept as it is started (its pid, and
# whether the command's CLI module was loaded yet), to look for it once the command has ended:
# "reaped", "ending" (a writer that let go of its store after its write, left to end on its own:
# `WriterProcess.close`) or "running" (neither: left behind).
_FORKS_KEPT = """
    import json, os, sys
    from bufferlab.store import writer_process
    forks = []
    real_start = writer_process.start
    def start():
        handle = real_start()
        if handle is not None:
            forks.append((handle.pid, "bufferlab.cli" not in sys.modules))
        return handle
    writer_process.start = start
    def ends():
        found = []
        for pid, _ in forks:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                found.append("reaped")
                continue
            found.append("ending" if pid in [ending[0] for ending in writer_process._ENDING] else "running")
        return found
"""

# `bufferlab run` in a fresh interpreter, in the command's process (`prepare_process`: with its
# writer process) or as a program calling `main` (`library`: without), then what it loaded.
_COMMAND = _FORKS_KEPT + """
    from bufferlab import cli
    mode, *args = sys.argv[1:]
    if mode == "no-fork":
        del os.fork
    if mode == "writer-killed":  # the writer process dies as it gets the run (the OOM killer, say)
        import signal
        real_answer = writer_process._answer
        def answer(request, requests):
            if request[0] == "write":
                os.kill(os.getpid(), signal.SIGKILL)
            return real_answer(request, requests)
        writer_process._answer = answer
    if mode == "slow-end":  # the writer's end takes 3 s once the command has let it end (a slow teardown)
        import time
        real_parent_ended, real_read_frame, command = writer_process._parent_ended, writer_process._read_frame, os.getpid()
        def parent_ended(requests):  # after a write
            real_parent_ended(requests)
            time.sleep(3.0)
        def read_frame(stream):  # between requests (after a lookup)
            frame = real_read_frame(stream)
            if frame is None and os.getpid() != command:
                time.sleep(3.0)
            return frame
        writer_process._parent_ended, writer_process._read_frame = parent_ended, read_frame
    if mode == "not-let-go":  # the writer cannot tell that the store's lock is free (`_let_go`)
        writer_process._let_go = lambda path: False
    if mode == "slow-write":  # the write says when it begins, then takes a second
        import time
        real_answer = writer_process._answer
        def answer(request, requests):
            if request[0] == "write":
                open(os.environ["WRITE_BEGUN"], "w").close()
                time.sleep(1.0)
            return real_answer(request, requests)
        writer_process._answer = answer
    events = []
    if mode == "order":  # what the command's main thread does after derive, in its order
        from bufferlab import render
        def noted(owner, name, event):
            real = getattr(owner, name)
            def wrapper(*args, **kwargs):
                result = real(*args, **kwargs)
                events.append(event)
                return result
            setattr(owner, name, wrapper)
        noted(writer_process.WriterProcess, "_send", "sent")
        noted(writer_process.WriterProcess, "_reply", "committed")
        noted(cli._SummaryRendering, "start", "rendering")  # in a worker thread, from here
        noted(render.RenderedSummary, "print", "printed")
    if mode != "library":
        cli.prepare_process()
    status = cli.main(args)
    sys.stdout.flush()
    print("\\n" + json.dumps({"status": status, "duckdb": "duckdb" in sys.modules, "writers": len(forks),
                              "ends": ends(), "pids": [pid for pid, _ in forks], **({"events": events} if events else {})}))
"""


def _command(mode: str, *args: str, env: dict[str, str] | None = None,
             preexec_fn: Any = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_COMMAND), mode, *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, check=False, env=env, preexec_fn=preexec_fn)
    assert done.stdout.strip(), done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return done, report


@pytest.fixture
def captured(write_scenario) -> Path:
    return write_scenario(CAPTURED)


# --- the binding's Arrow IPC streams -------------------------------------------------------------

def test_every_engine_table_crosses_as_an_ipc_stream_unchanged() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(CAPTURED))
    for name in ENGINE_TABLES:
        table = result.arrow(name)
        copy = core().Table.from_ipc(name, table.to_ipc())
        assert copy.name == name
        assert copy.column_types() == table.column_types()
        assert copy.to_pylist() == table.to_pylist()
    assert len(result.arrow("captures")) > 0 and len(result.arrow("flow_timeseries")) > 0


def test_a_derived_table_with_nulls_and_timestamps_crosses_unchanged() -> None:
    table = core().Table.from_columns("t", [("a", "Utf8", ["x", None]), ("b", "Float64", [None, 1.5]),
                                            ("c", "Timestamp(us)", [0, None]), ("d", "Boolean", [True, None])])
    copy = core().Table.from_ipc("t", table.to_ipc())
    assert copy.column_types() == table.column_types()
    assert pl.DataFrame(copy).to_dicts() == pl.DataFrame(table).to_dicts()


def test_bytes_that_are_not_one_ipc_stream_are_refused() -> None:
    with pytest.raises(ValueError, match="Arrow IPC stream"):
        core().Table.from_ipc("t", b"not arrow")
    table = core().Table.from_columns("t", [("a", "UInt64", [1])])
    with pytest.raises(ValueError, match="Arrow IPC stream"):
        core().Table.from_ipc("t", table.to_ipc()[:-20])  # cut inside the batch


# --- the command --------------------------------------------------------------------------------

def test_the_writer_process_stores_exactly_what_the_in_process_writer_stores(captured: Path,
                                                                            tmp_path: Path) -> None:
    splitbuff = str(SCENARIOS / "splitbuff_fig1.toml")
    for mode in ("command", "library"):
        db = str(tmp_path / f"{mode}.duckdb")
        for args in ((str(captured), "--study", "s1"), (splitbuff, "--set", "duration=1s"),
                     (str(captured), "--seed", "5", "--force")):
            done, report = _command(mode, "run", *args, "--db", db, "--json")
            assert report["status"] == 0, done.stderr
            assert report["writers"] == (1 if mode == "command" else 0)
    through_child, in_process = stored_tables(tmp_path / "command.duckdb"), stored_tables(tmp_path / "library.duckdb")
    assert through_child == in_process
    assert all(len(through_child[table][1]) > 0 for table in ("captures", "queue_classes", "class_timeseries",
                                                              "flow_timeseries", "studies", "network_metrics"))


def test_a_fresh_run_and_a_stored_one_never_load_duckdb_in_the_command_s_process(small_scenario: Path,
                                                                                tmp_path: Path) -> None:
    for output in ((), ("--json",)):
        db = str(tmp_path / f"r{len(output)}.duckdb")
        outs = []
        for _ in ("fresh", "stored"):
            done, report = _command("command", "run", str(small_scenario), "--db", db, *output)
            # The writer holds no store after its write or a lookup that found the run: it ends on its own.
            assert len(report.pop("pids")) == 1
            assert report == {"status": 0, "duckdb": False, "writers": 1, "ends": ["ending"]}, done.stderr
            outs.append(done.stdout)
        if output:
            fresh, stored = (json.loads(out.strip().rsplit("\n", 1)[0]) for out in outs)
            assert not fresh["from_store"] and stored["from_store"] and fresh["run_id"] == stored["run_id"]
        else:
            assert "simulated and stored" in outs[0] and "from the store" in outs[1]


@pytest.fixture
def small_scenario(write_scenario) -> Path:
    return write_scenario(SMALL_DUMBBELL)


def test_the_summary_is_rendered_while_the_run_is_written_and_printed_once_it_is_committed(
        small_scenario: Path, tmp_path: Path) -> None:
    # The command hands the whole run over first (its encoding holds the GIL), then renders the
    # summary while the writer process writes and commits it, and prints it only once committed.
    done, report = _command("order", "run", str(small_scenario), "--db", str(tmp_path / "r.duckdb"))
    assert report["status"] == 0 and report["writers"] == 1, done.stderr
    events = [event for k, event in enumerate(report["events"]) if event != "sent" or report["events"][k + 1] != "sent"]
    # The request and each table sent, the summary's rendering begun, the commit, the summary printed.
    assert events == ["sent", "rendering", "committed", "printed"], report["events"]
    assert "simulated and stored" in done.stdout


# The console script (`entry.main`) in a fresh interpreter; at its exit (`cli.exit_now` runs the
# exit functions), its writer processes as forked and how each ends (`_FORKS_KEPT`).
_CONSOLE_SCRIPT = _FORKS_KEPT + """
    import atexit
    from bufferlab import entry
    def report():
        print("\\n" + json.dumps({"forked_before_cli": [early for _, early in forks], "ends": ends()}))
    atexit.register(report)
    sys.argv = ["bufferlab", *sys.argv[1:]]
    entry.main()
"""


@pytest.mark.parametrize("args", [("--help",), (), ("--set",), ("run.toml", "--json")])
def test_the_console_script_forks_the_writer_first_and_reaps_it_whatever_the_command_does(
        args: tuple[str, ...], small_scenario: Path, tmp_path: Path) -> None:
    args = tuple(str(small_scenario) if a == "run.toml" else a for a in args)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_CONSOLE_SCRIPT), "run", *args,
                           "--db", str(tmp_path / "r.duckdb")], capture_output=True, text=True, cwd=REPO,
                          timeout=300, check=False)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # Forked before click and the command's modules, once, and reaped before the process ended
    # after --help, after a usage error (a missing argument, an option's value); after a run,
    # having let go of the store, left to end as the command's process ends.
    ends = ["ending"] if "--json" in args else ["reaped"]
    assert report == {"forked_before_cli": [True], "ends": ends}, done.stderr
    assert done.returncode == (0 if {"--help", "--json"} & set(args) else 2), done.stderr
    if "--json" in args:
        assert json.loads(done.stdout.strip().rsplit("\n", 1)[0])["from_store"] is False


def test_on_one_cpu_the_command_stores_in_its_own_process(small_scenario: Path, tmp_path: Path) -> None:
    done, report = _command("command", "run", str(small_scenario), "--db", str(tmp_path / "a.duckdb"), "--json",
                            preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    assert report == {"status": 0, "duckdb": True, "writers": 0, "ends": [], "pids": []}, done.stderr


def test_without_fork_the_command_stores_in_its_own_process(small_scenario: Path, tmp_path: Path) -> None:
    done, report = _command("no-fork", "run", str(small_scenario), "--db", str(tmp_path / "a.duckdb"), "--json")
    assert report == {"status": 0, "duckdb": True, "writers": 0, "ends": [], "pids": []}, done.stderr
    _command("library", "run", str(small_scenario), "--db", str(tmp_path / "b.duckdb"), "--json")
    assert stored_tables(tmp_path / "a.duckdb") == stored_tables(tmp_path / "b.duckdb")


def _same_failure(*args: str, env: dict[str, str] | None = None, preexec_fn: Any = None) -> str:
    """Run the command with and without its writer process: both fail alike (status, the one
    line on stderr, nothing on stdout), the writer process is reaped; the line."""
    results = {mode: _command(mode, *args, env=env, preexec_fn=preexec_fn) for mode in ("command", "library")}
    (child_run, child), (own_run, own) = results["command"], results["library"]
    assert child["status"] == own["status"] == 2, (child_run.stderr, own_run.stderr)
    assert child_run.stderr == own_run.stderr and len(child_run.stderr.splitlines()) == 1, child_run.stderr
    assert child_run.stdout.strip().count("\n") == 0  # nothing but the report line
    assert child["writers"] == 1 and child["ends"] == ["reaped"] and not child["duckdb"]
    return child_run.stderr


def test_an_unusable_store_fails_as_in_one_process_and_leaves_no_writer(small_scenario: Path,
                                                                       tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"this is not a DuckDB file" * 100)
    assert _same_failure("run", str(small_scenario), "--db", str(garbage)).startswith(f"error: --db: cannot use {garbage}")
    blocked = tmp_path / "file"
    blocked.write_text("")
    line = _same_failure("run", str(small_scenario), "--db", str(blocked / "r.duckdb"))
    assert line == f"error: --db: cannot create {blocked / 'r.duckdb'}: a part of its directory is a file\n"


def test_a_store_locked_past_the_wait_fails_as_in_one_process(small_scenario: Path, tmp_path: Path) -> None:
    db = tmp_path / "locked.duckdb"
    holder = duckdb.connect(str(db))  # this process holds the store's lock
    try:
        line = _same_failure("run", str(small_scenario), "--db", str(db),
                             env={**os.environ, "BUFFERLAB_DB_WAIT": "0.2"})
    finally:
        holder.close()
    assert line == f"error: --db: {db} stayed locked by another process for 0.2 s (set BUFFERLAB_DB_WAIT to wait longer)\n"


def test_a_full_disk_fails_as_in_one_process_and_stores_nothing(captured: Path, tmp_path: Path) -> None:
    # A file size limit makes the store's writes fail as a full disk does (EFBIG instead of ENOSPC).
    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))

    line = _same_failure("run", str(captured), "--db", str(tmp_path / "full.duckdb"), "--set", "duration=20s",
                         "--set", "sample_interval=10ms", preexec_fn=small_files)
    assert line.startswith("error: --db: ") and "too large" in line.lower(), line
    con = duckdb.connect(str(tmp_path / "full.duckdb"), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert "runs" not in tables or con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    finally:
        con.close()


def test_a_writer_process_that_dies_fails_the_command_in_one_line_and_stores_nothing(small_scenario: Path,
                                                                                    tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    done, report = _command("writer-killed", "run", str(small_scenario), "--db", str(db))
    assert report["status"] == 1 and report["ends"] == ["reaped"], done.stderr
    assert done.stderr == ("error: --db: the process writing the store ended (killed by signal 9) before it "
                           "replied\n")
    assert done.stdout.strip().count("\n") == 0 and not db.exists()


# --- signals and a killed command ----------------------------------------------------------------

def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def _simulating_with_its_writer(proc: subprocess.Popen[str]) -> int:
    """Wait until the command simulates; its writer process's pid."""
    wait_until_simulating(proc, 1.0)
    children = _children(proc.pid)
    assert len(children) == 1, children
    return children[0]


def _gone(pid: int, within_s: float) -> bool:
    """Whether process `pid` has ended and been reaped (no zombie either) within `within_s`."""
    deadline = time.monotonic() + within_s
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "group", "status"), [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143),
                                                      (signal.SIGTERM, True, 143)])
def test_a_signal_ends_the_command_and_its_writer_and_stores_nothing(small_scenario: Path, db: Path, sig: int,
                                                                     group: bool, status: int) -> None:
    proc = start_long_run(small_scenario, db, new_session=True)
    writer = _simulating_with_its_writer(proc)
    if group:  # a terminal's Ctrl-C reaches every process of the foreground group
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert len(err.splitlines()) == 1 and err.startswith("error: interrupted"), err
    assert _gone(writer, 0.0)  # reaped by the command before it exited
    assert not db.exists() and not db.parent.exists()


@pytest.mark.slow
def test_ctrl_c_during_the_write_lets_it_commit_then_interrupts_as_in_one_process(small_scenario: Path,
                                                                               tmp_path: Path) -> None:
    # A terminal's Ctrl-C reaches the writer too; it ignores it, and the command holds it back
    # until the write has committed (`interrupts.deferred`), then stops as interrupted.
    db, begun = tmp_path / "r.duckdb", tmp_path / "write-begun"
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_COMMAND), "slow-write", "run",
                             str(small_scenario), "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, start_new_session=True, env={**os.environ, "WRITE_BEGUN": str(begun)})
    deadline = time.monotonic() + 60
    while not begun.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    # The one line says what happened: the run is in the store, unlike any other interruption's.
    assert err == "error: interrupted: the run being stored when it came was stored whole first; nothing after it " \
                  "was done\n", err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["status"] == 130 and report["ends"] == ["ending"]  # the write committed, the store let go of
    assert len(stored_tables(db)["runs"][1]) == 1  # the run was stored whole


@pytest.mark.slow
def test_a_command_killed_outright_leaves_no_writer_behind(small_scenario: Path, db: Path) -> None:
    proc = start_long_run(small_scenario, db, new_session=True)
    writer = _simulating_with_its_writer(proc)
    proc.kill()
    proc.communicate(timeout=60)
    # Its request pipe closed with the command: it ends on its own (and init reaps it).
    assert _gone(writer, 10.0)
    assert not db.exists()


# --- the child's look for its parent ------------------------------------------------------------

def test_the_writer_sees_its_parent_gone_once_the_request_pipe_ends() -> None:
    read, write = os.pipe()
    with os.fdopen(read, "rb") as requests:
        writer_process._parent_gone(requests)  # nothing to read: the parent is there
        os.close(write)
        with pytest.raises(writer_process._ParentGone):
            writer_process._parent_gone(requests)


def test_a_write_whose_parent_has_gone_before_the_commit_is_rolled_back(tmp_path: Path) -> None:
    planned = runner.validate(Scenario.from_toml_text(SMALL_DUMBBELL))
    raw = runner._simulate(planned)
    from bufferlab.pipeline.derive import derive

    derived = derive(planned, raw)
    db = tmp_path / "r.duckdb"

    def parent_gone() -> None:
        raise writer_process._ParentGone

    with pytest.raises(writer_process._ParentGone), store.Store(db) as opened:
        opened.save(derived, before_commit=parent_gone)
    with store.Store(db) as reopened:
        assert reopened.run_ids() == []


# A process that writes the small dumbbell's run as the writer process does (`_write`), says so
# (with whether it let go of the store: `_let_go`) and waits to be killed, its store still
# attached and DuckDB's file still open, as the child is between its reply and its end.
_COMMITS_THEN_WAITS = """
    import os, sys, time
    from pathlib import Path
    from bufferlab import runner
    from bufferlab.pipeline.derive import derive
    from bufferlab.spec import Scenario
    from bufferlab.store import writer_process
    from conftest import SMALL_DUMBBELL
    planned = runner.validate(Scenario.from_toml_text(SMALL_DUMBBELL))
    run = derive(planned, runner._simulate(planned))
    requests, _ = os.pipe()  # the parent never goes: nothing to read
    let_go = writer_process._write(run, sys.argv[1], False, os.fdopen(requests, "rb"))
    print(run.run_id, let_go, flush=True)
    time.sleep(60)
"""


@pytest.mark.slow
def test_a_committed_write_is_whole_in_the_file_and_its_store_free_by_the_reply(small_scenario: Path,
                                                                                tmp_path: Path) -> None:
    # The writer process replies once its write has committed and it has let go of the store's
    # lock, without closing DuckDB's file (`writer_process._let_go`), and ends after: the run must
    # be in the file, whole, and the store free for another process, while the writer lives on.
    db, reference = tmp_path / "r.duckdb", tmp_path / "reference.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_COMMITS_THEN_WAITS), str(db)], text=True,
                            stdout=subprocess.PIPE, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "tests")})
    assert proc.stdout is not None
    run_id, let_go = proc.stdout.readline().split()
    try:
        assert let_go == "True"
        assert not Path(f"{db}.wal").exists()
        written = stored_tables(db)  # opened at once, the writer still running
        duckdb.connect(str(db)).close()  # and for writing
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    done, report = _command("library", "run", str(small_scenario), "--db", str(reference), "--json")
    assert report["status"] == 0, done.stderr
    assert written == stored_tables(db) == stored_tables(reference) and len(written["runs"][1]) == 1
    assert run_id == json.loads(done.stdout.strip().rsplit("\n", 1)[0])["run_id"]


@pytest.mark.skipif(not hasattr(fcntl, "F_OFD_GETLK"), reason="open file description locks are Linux's")
def test_the_writer_lets_go_of_duckdb_s_lock_and_only_of_a_lock_it_holds(tmp_path: Path) -> None:
    # `_let_go` says the store is free only where it found this process's write lock, then none.
    path, missing = tmp_path / "s.duckdb", tmp_path / "missing.duckdb"
    opens = f"import duckdb, sys, time; con = duckdb.connect({str(path)!r}); print(flush=True); time.sleep(float(sys.argv[1]))"
    assert subprocess.run([sys.executable, "-c", opens, "0"], capture_output=True, check=False).returncode == 0
    assert not writer_process._let_go(path)  # nobody's lock
    assert not writer_process._let_go(missing)
    holder = subprocess.Popen([sys.executable, "-c", opens, "60"], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        assert not writer_process._let_go(path)  # another process's lock: not this one's to let go of
    finally:
        holder.kill()
        holder.communicate(timeout=60)
    con = duckdb.connect(str(path))  # DuckDB's own lock, as the writer process holds it
    try:
        assert writer_process._let_go(path)
        # Another process can open the store for writing, this one's connection still open.
        assert subprocess.run([sys.executable, "-c", opens, "0"], capture_output=True, check=False).returncode == 0
    finally:
        con.close()


def test_the_store_is_free_for_the_next_writer_once_the_command_has_ended(small_scenario: Path,
                                                                          tmp_path: Path) -> None:
    # Its writer process lets go of the store before its reply, so that the next command finds
    # the store free at once, though the command has not waited for the writer's end.
    db = tmp_path / "r.duckdb"
    for force in ((), ("--force",), ("--force",)):
        done, report = _command("command", "run", str(small_scenario), "--db", str(db), "--json", *force,
                                env={**os.environ, "BUFFERLAB_DB_WAIT": "0"})
        assert report["status"] == 0 and report["ends"] == ["ending"], done.stderr
    with store.Store(db) as opened:  # no wait allowed: the lock is free
        assert len(opened.run_ids()) == 1


def _ended(pid: int, within_s: float) -> bool:
    """Whether process `pid` has ended (gone, or a zombie left for its parent, init) within `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


@pytest.mark.parametrize("run", ["fresh", "stored"])
def test_the_command_does_not_wait_for_its_writer_s_end(run: str, small_scenario: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer's end (the kernel freeing its memory) made to take 3 s, after a write or after
    # a lookup that found the run stored: the command and its caller, who reads its output to
    # the end, are done without it (the writer closed the command's stdout and stderr it had
    # from the fork), the store is free meanwhile, and the writer then ends on its own.
    db = tmp_path / "r.duckdb"
    if run == "stored":
        _command("command", "run", str(small_scenario), "--db", str(db))
    started = time.monotonic()
    done, report = _command("slow-end", "run", str(small_scenario), "--db", str(db), "--json")
    assert report["status"] == 0 and report["ends"] == ["ending"], done.stderr
    assert json.loads(done.stdout.strip().rsplit("\n", 1)[0])["from_store"] is (run == "stored")
    (writer,) = report["pids"]
    assert not _ended(writer, 0.0), time.monotonic() - started  # still in its slow end
    monkeypatch.setenv("BUFFERLAB_DB_WAIT", "0")
    with store.Store(db) as opened:  # free at once
        assert len(opened.run_ids()) == 1
    assert _ended(writer, 30.0)


def test_a_command_started_without_stdin_stores_its_run_and_lets_its_writer_end(small_scenario: Path,
                                                                               tmp_path: Path) -> None:
    # With descriptor 0 closed, the writer's request pipe takes it: the writer closes only the
    # standard streams it had from the command (`_standard_streams`), never its own pipes.
    db = tmp_path / "r.duckdb"
    done, report = _command("command", "run", str(small_scenario), "--db", str(db), "--json",
                            preexec_fn=lambda: os.close(0))
    assert report["status"] == 0 and report["ends"] == ["ending"], done.stderr
    assert len(stored_tables(db)["runs"][1]) == 1


def test_a_writer_that_cannot_tell_the_store_is_free_is_waited_for(small_scenario: Path, tmp_path: Path) -> None:
    # Where the writer could not make sure that it let go of the store's lock (`_let_go`), the
    # command waits for its end, which lets go of it, as before.
    db = tmp_path / "r.duckdb"
    for force in ((), ("--force",)):
        done, report = _command("not-let-go", "run", str(small_scenario), "--db", str(db), "--json", *force,
                                env={**os.environ, "BUFFERLAB_DB_WAIT": "0"})
        assert report["status"] == 0 and report["ends"] == ["reaped"], done.stderr
    with store.Store(db) as opened:
        assert len(opened.run_ids()) == 1


def test_a_run_s_tables_are_handed_over_smallest_first() -> None:
    planned = runner.validate(Scenario.from_toml_text(CAPTURED))
    from bufferlab.pipeline.derive import derive

    tables = derive(planned, runner._simulate(planned)).stored_tables()
    ordered = writer_process._smallest_first(tables)
    assert sorted(ordered) == sorted(tables) and ordered == tables  # the same tables, each unchanged
    sizes = [len(t) * len(t.column_types()) for t in ordered.values()]
    assert sizes == sorted(sizes) and list(ordered)[-1] in ("captures", "channel_timeseries")


# --- the child's reading of a write's tables --------------------------------------------------

def _frames_of(tables: dict[str, Any]) -> bytes:
    """A write's tables as the parent sends them: a frame of each one's IPC stream."""
    return b"".join(writer_process._LENGTH.pack(len(ipc)) + ipc for ipc in (t.to_ipc() for t in tables.values()))


def _series(rows: int) -> dict[str, Any]:
    return {name: core().Table.from_columns(name, [("time_ns", "UInt64", list(range(k, k + rows)))])
            for k, name in enumerate(("flow_timeseries", "channel_timeseries"))}


def test_the_writer_reads_a_write_s_tables_before_it_takes_the_first_one() -> None:
    tables = _series(40_000)  # 2 x 320 kB: more than a default pipe holds
    read, write = os.pipe()
    with os.fdopen(read, "rb") as requests, os.fdopen(write, "wb") as parent:
        arriving = writer_process._ArrivingTables(list(tables), requests)
        sent = threading.Thread(target=parent.write, args=(_frames_of(tables),))
        sent.start()
        sent.join(timeout=20)  # the parent is never left waiting on a full pipe
        assert not sent.is_alive()
        received = dict(arriving.items())
    assert [received[name].column("time_ns").__array_interface__["shape"] for name in tables] == [(40_000,)] * 2
    assert {name: t.column_values("time_ns")[:2] for name, t in received.items()} == {
        "flow_timeseries": [0, 1], "channel_timeseries": [1, 2]}


def test_a_parent_gone_in_the_middle_of_a_write_s_tables_ends_the_write() -> None:
    tables = _series(10)
    read, write = os.pipe()
    with os.fdopen(read, "rb") as requests:
        arriving = writer_process._ArrivingTables([*tables, "flows"], requests)
        with os.fdopen(write, "wb") as parent:
            parent.write(_frames_of(tables))  # the third table never comes
        taken = arriving.items()
        assert [name for name, _ in (next(taken), next(taken))] == list(tables)
        with pytest.raises(writer_process._ParentGone):
            next(taken)
        arriving.drain()  # returns: nothing more will come


def test_a_program_storing_run_after_run_through_writer_processes_keeps_only_the_last_one(tmp_path: Path) -> None:
    # The command keeps the run it had stored until it ends (freeing it cost the summary 0.8 ms);
    # a program that stores run after run through writer processes must not keep them all.
    program = textwrap.dedent(f"""
        import json
        from bufferlab import runner
        from bufferlab.spec import Scenario
        from bufferlab.store import writer_process
        import tomllib

        spec = tomllib.loads({SMALL_DUMBBELL!r})
        ids, pids = [], []
        for duration in ("1s", "2s", "3s", "4s"):  # a writer process stores one run
            writer = writer_process.start()
            assert writer is not None
            with writer:
                summary = runner.run(Scenario.from_dict({{**spec, "duration": duration}}), {str(tmp_path / "s.duckdb")!r},
                                     writer=writer)
            ids.append(summary.run_id)
            pids.append(writer.pid)
        kept = [run.run_id for run in writer_process._HANDED_OVER]
        ending = [pid for pid, _ in writer_process._ENDING]
        print(json.dumps({{"ids": ids, "kept": kept, "pids": pids, "ending": ending}}))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(set(report["ids"])) == 4 and report["kept"] == report["ids"][-1:]
    # Nor the writer processes it did not wait for: each is reaped by the next one's start once
    # it has ended (the one before the last at the latest), never more than the last two left.
    assert set(report["ending"]) <= set(report["pids"][-2:]), report
