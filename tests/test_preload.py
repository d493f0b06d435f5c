"""The preload (`bufferlab.preload`): what a fresh run needs after the engine is imported and the
store writer's database made while the engine runs. It changes what is stored in no way, opens
no store file before the run is written, keeps the process alive never and loses no error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from bufferlab import preload, runner
from bufferlab.cli import main
from bufferlab.spec import Scenario
from bufferlab.store import connection
from conftest import REPO, SMALL_DUMBBELL, stored_tables


@pytest.fixture
def small(write_scenario) -> Path:
    return write_scenario(SMALL_DUMBBELL)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[preload.Preload | None]:
    """The preloads the run path starts, as it starts them."""
    handles: list[preload.Preload | None] = []
    real_start = preload.start

    def start(also: Sequence[str] = (), store: bool = True) -> preload.Preload | None:
        handles.append(real_start(also, store))
        return handles[-1]

    monkeypatch.setattr(preload, "start", start)
    return handles


@pytest.fixture(autouse=True)
def no_prepared_database() -> Iterator[None]:
    """Each test starts and ends without a writer database made ahead by an earlier one."""
    _drop_prepared()
    yield
    _drop_prepared()


def _drop_prepared() -> None:
    if preload._running is not None:  # an earlier run's preload, still finishing
        preload._running.wait(60)
    with connection._prepared_lock:
        while connection._prepared:
            connection._prepared.pop().close()


def test_a_run_with_the_preload_stores_exactly_what_it_stores_without(small: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     started: list[preload.Preload | None]) -> None:
    scenario = Scenario.from_toml(small)
    runner.run(scenario, tmp_path / "with.duckdb")
    assert started and started[0] is not None and started[0].wait(60) and started[0].error is None
    monkeypatch.setattr(preload, "start", lambda also=(), store=True: None)
    runner.run(scenario, tmp_path / "without.duckdb")
    with_preload, without = stored_tables(tmp_path / "with.duckdb"), stored_tables(tmp_path / "without.duckdb")
    assert with_preload == without
    assert len(with_preload["flow_timeseries"][1]) > 0 and len(with_preload["runs"][1]) == 1


def test_the_store_file_does_not_exist_while_the_engine_runs(small: Path, db: Path,
                                                            started: list[preload.Preload | None]) -> None:
    seen: list[tuple[bool, bool, int]] = []
    made_ahead: list[object] = []

    def progress(now_ns: int, end_ns: int) -> None:
        if not seen:  # the preload has done all it does before the run is over
            handle = started[0]
            assert handle is not None and handle.wait(60) and handle.error is None
            seen.append((db.exists(), Path(f"{db}.wal").exists(), len(connection._prepared)))
            made_ahead.extend(connection._prepared)

    runner.run(Scenario.from_toml(small), db, progress=progress)
    # No file while simulating, though the writer's database was ready; the run stored after,
    # by the writer that took that database and left it, without the store, for the next one.
    assert seen == [(False, False, 1)]
    assert db.exists() and connection._prepared == made_ahead
    assert connection._prepared[0].execute("SELECT database_name FROM duckdb_databases() "
                                           "WHERE NOT internal").fetchall() == [("memory",)]


def test_an_interrupted_simulation_leaves_no_store_file(small: Path, db: Path,
                                                       started: list[preload.Preload | None]) -> None:
    def interrupt(now_ns: int, end_ns: int) -> None:
        handle = started[0]
        assert handle is not None and handle.wait(60)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(Scenario.from_toml(small), db, progress=interrupt)
    assert not db.exists() and not Path(f"{db}.wal").exists() and not db.parent.exists()


def test_a_run_served_from_the_store_starts_no_preload(small: Path, db: Path,
                                                      started: list[preload.Preload | None]) -> None:
    scenario = Scenario.from_toml(small)
    runner.run(scenario, db)
    assert len(started) == 1
    assert runner.run(scenario, db).from_store
    assert len(started) == 1


def test_a_command_that_does_not_simulate_starts_no_preload(small: Path,
                                                           started: list[preload.Preload | None]) -> None:
    assert main(["check", str(small)]) == 0
    assert started == []


def test_a_failing_preload_keeps_its_error_and_the_run_stores_the_same(small: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      started: list[preload.Preload | None],
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    scenario = Scenario.from_toml(small)
    runner.run(scenario, tmp_path / "reference.duckdb")
    started[0].wait(60)  # type: ignore[union-attr]
    failure = MemoryError("no room for a DuckDB instance")

    def fail() -> None:
        raise failure

    monkeypatch.setattr(connection, "prepare_writer", fail)
    runner.run(scenario, tmp_path / "after_failure.duckdb")
    handle = started[1]
    assert handle is not None and handle.wait(60) and handle.error is failure
    # The writer made its own database; nothing of the thread's failure reached the terminal.
    assert stored_tables(tmp_path / "after_failure.duckdb") == stored_tables(tmp_path / "reference.duckdb")
    assert capfd.readouterr().err == ""


def test_the_preload_sets_the_switch_interval_back_when_it_ends() -> None:
    before = sys.getswitchinterval()
    handle = preload.start()
    assert handle is not None and handle.thread.daemon
    assert handle.wait(60) and handle.error is None
    assert sys.getswitchinterval() == pytest.approx(before)
    assert connection._prepared  # the next writer's database, made ahead


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)


def test_the_preload_thread_does_not_keep_the_process_alive(small: Path, db: Path) -> None:
    # A preload stuck in making DuckDB's instance: the run makes its own, the process ends anyway.
    done = _python("""
        import sys, threading
        from bufferlab import preload, runner
        from bufferlab.spec import Scenario
        from bufferlab.store import connection
        connection.prepare_writer = lambda: threading.Event().wait()
        runner.run(Scenario.from_toml(sys.argv[1]), sys.argv[2])
        alive = [t.name for t in threading.enumerate() if t.name == "bufferlab-preload"]
        print("stored", alive)
        """, str(small), str(db))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "stored ['bufferlab-preload']\n" and db.exists()


def test_a_run_that_fails_before_the_preload_is_done_waits_for_it_at_exit(small: Path, db: Path) -> None:
    # The run fails as soon as it derives (the metric catalogue cannot be imported) while the
    # preload is still making DuckDB's instance (here: a slow stand-in). The interpreter's exit waits for the
    # thread: torn down under a thread inside DuckDB's import, the process aborted (status 134).
    done = _python("""
        import sys, time
        sys.modules["bufferlab.analysis.metrics"] = None
        from bufferlab import preload, runner
        from bufferlab.spec import Scenario
        from bufferlab.store import connection

        def slow_instance():
            time.sleep(0.5)
            print("preload finished", flush=True)

        connection.prepare_writer = slow_instance
        runner.run(Scenario.from_toml(sys.argv[1]), sys.argv[2])
        """, str(small), str(db))
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr, done.stderr
    assert done.stdout == "preload finished\n"
    assert not db.exists()


def test_an_import_the_preload_cannot_make_fails_the_command_as_without_it(small: Path, tmp_path: Path) -> None:
    # The metric catalogue cannot be imported: the preload keeps the error, the main thread meets
    # it again when it derives the run, and the command says so in its one line, as it does
    # without a preload.
    code = """
        import sys
        sys.modules["bufferlab.analysis.metrics"] = None
        from bufferlab import preload
        from bufferlab.cli import main
        if sys.argv[3] == "without":
            preload.start = lambda also=(), store=True: None
        sys.exit(main(["run", sys.argv[1], "--db", sys.argv[2]]))
        """
    done = {case: _python(code, str(small), str(tmp_path / f"{case}.duckdb"), case) for case in ("with", "without")}
    for case, process in done.items():
        assert process.returncode == 1 and process.stdout == "", process.stderr
        assert process.stderr.startswith("error: internal: ModuleNotFoundError: import of bufferlab.analysis.metrics halted")
        assert len(process.stderr.splitlines()) == 1, process.stderr
        assert not (tmp_path / f"{case}.duckdb").exists()
    assert done["with"].stderr == done["without"].stderr


def test_the_preload_imports_the_modules_its_caller_names_after_its_own() -> None:
    done = _python("""
        import sys
        from bufferlab import preload
        from bufferlab.store import connection
        assert "bufferlab.render" not in sys.modules
        handle = preload.start(also=("bufferlab.render",))
        assert handle.wait(60) and handle.error is None
        assert "bufferlab.render" in sys.modules and "rich.table" in sys.modules and connection._prepared
        """)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("json_output", "also"), [(False, ("bufferlab.render",)), (True, ())])
def test_a_run_that_draws_tables_has_the_preload_import_rich(small: Path, db: Path, json_output: bool,
                                                             also: tuple[str, ...],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Sequence[str]] = []
    real_start = preload.start

    def start(also: Sequence[str] = (), store: bool = True) -> preload.Preload | None:
        asked.append(tuple(also))
        return real_start(also, store)

    monkeypatch.setattr(preload, "start", start)
    assert main(["run", str(small), "--db", str(db), *(["--json"] if json_output else [])]) == 0
    assert asked == [also]
