"""An instant command: what `bufferlab --version`, `--help` and `run` of a stored run
import. Heavy libraries load only where a command needs them; checked by the modules a fresh
interpreter has loaded, never by a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("polars", "numpy", "pandas", "duckdb", "pydantic", "rich", "matplotlib", "scipy", "dask", "pyarrow")


def heavy_modules_loaded(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has loaded after running `code`."""
    probe = (f"import sys, io, contextlib\n{code}\n"
             f"print('\\n' + __import__('json').dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def cli(*args: str) -> str:
    return ("from bufferlab.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    status = main({list(args)!r})\n"
            "assert status == 0, status")


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("run", "--help"), ("plot", "--help"),
                                  ("sweep", "--help"), ("results", "--help"), ("ccperf", "--help"),
                                  ("report", "--help")])
def test_version_and_help_load_no_heavy_library(args: tuple[str, ...]) -> None:
    assert heavy_modules_loaded(cli(*args)) == []


def test_the_package_and_its_public_names_import_lazily() -> None:
    assert heavy_modules_loaded("import bufferlab, bufferlab.spec, bufferlab.store, bufferlab.study, "
                                "bufferlab.report") == []
    # The memory budget's flag is read before any spec is: no spec models with it.
    assert heavy_modules_loaded("from bufferlab.pipeline.budget import parse_budget") == []
    # ... and still resolve on first use.
    assert "pydantic" in heavy_modules_loaded("from bufferlab import Scenario; Scenario.model_fields")
    assert "duckdb" in heavy_modules_loaded("import bufferlab.runner\nfrom bufferlab.store import Results")


def test_a_stored_run_is_served_without_polars_numpy_or_pandas(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    scenario = ROOT / "scenarios" / "dumbbell.toml"
    args = ("run", str(scenario), "--db", str(db), "--set", "duration=1s")
    fresh = heavy_modules_loaded(cli(*args))
    assert "duckdb" in fresh
    stored = heavy_modules_loaded(cli(*args))
    # The spec was planned by the first run: its plan is read back (`pipeline.plan_cache`).
    assert set(stored) == {"duckdb", "rich"}


def test_results_list_and_show_print_rows_without_polars_numpy_or_pyarrow(tmp_path: Path) -> None:
    # A listing is a few rows: DuckDB's own rows, printed by rich. polars (and the pyarrow and
    # numpy of DuckDB's conversion to it) come with the first query that returns a DataFrame.
    db = tmp_path / "r.duckdb"
    heavy_modules_loaded(cli("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(db), "--set", "duration=1s"))
    assert set(heavy_modules_loaded(cli("results", "list", "--db", str(db)))) == {"duckdb", "rich"}
    # So are a run's metric tables (`results show`, `run --metrics`).
    from bufferlab.store.reader import load

    [(run_id,)] = load(db).rows("SELECT run_id FROM runs")[1]
    assert set(heavy_modules_loaded(cli("results", "show", run_id, "--db", str(db)))) == {"duckdb", "rich"}
    frame = f"from bufferlab.store import Results\nassert Results({str(db)!r}).runs.height == 1"
    assert {"polars", "duckdb"} <= set(heavy_modules_loaded(frame))


def test_looking_for_a_run_in_a_store_that_does_not_exist_loads_no_duckdb(tmp_path: Path) -> None:
    # DuckDB (30-70 ms) is for reading a store file, or for writing a run once it is simulated.
    code = ("from bufferlab import runner\nfrom bufferlab.spec import load_scenario\n"
            f"planned = runner.validate(load_scenario({str(ROOT / 'scenarios' / 'dumbbell.toml')!r}))\n"
            f"assert runner.stored_summary(planned, {str(tmp_path / 'none.duckdb')!r}) is None")
    assert set(heavy_modules_loaded(code)) == {"pydantic"}


def test_the_store_s_writer_loads_duckdb_alone(tmp_path: Path) -> None:
    # The schema's columns come from data-only modules
    # (`analysis.catalogue`, `pipeline.columns`), not from derive's catalogue or the spec's pydantic.
    assert heavy_modules_loaded("import bufferlab.store.writer") == ["duckdb"]


def test_a_fresh_run_reaches_the_store_without_numpy_polars_pandas_or_pyarrow(tmp_path: Path) -> None:
    # The engine's Arrow tables go to DuckDB through the C stream interface and to the metric
    # catalogue in Rust (`_core.catalogue` reads them in place); derived tables are Arrow tables
    # made by the binding (`_core.Table`), so neither numpy nor polars is needed (numpy's import
    # alone would cost a fresh run more than its metrics). The store binds no parameter
    # (DuckDB's client would load pandas and pyarrow to convert one).
    args = ("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(tmp_path / "r.duckdb"),
            "--set", "duration=1s")
    assert set(heavy_modules_loaded(cli(*args))) == {"duckdb", "pydantic", "rich"}
    # ... and for a run of split queues (sub-buffer tables and series), and of generated flows.
    for name in ("splitbuff_fig1.toml", "tree_mice.toml"):
        other = ("run", str(ROOT / "scenarios" / name), "--db", str(tmp_path / f"{name}.duckdb"), "--set",
                 "duration=1s", "--json")
        assert not {"numpy", "polars"} & set(heavy_modules_loaded(cli(*other))), name


def test_run_json_draws_no_table_so_loads_no_rich(tmp_path: Path) -> None:
    args = ("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(tmp_path / "r.duckdb"),
            "--set", "duration=1s", "--json")
    fresh, stored = heavy_modules_loaded(cli(*args)), heavy_modules_loaded(cli(*args))
    assert set(fresh) == {"duckdb", "pydantic"}
    assert set(stored) == {"duckdb"}  # planned by the first run (`pipeline.plan_cache`)


def test_version_names_package_and_engine() -> None:
    from importlib.metadata import version

    import bufferlab
    from bufferlab.pipeline.engine import engine_version

    out = subprocess.run([sys.executable, "-m", "bufferlab", "--version"], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == f"bufferlab {version('bufferlab')} (engine {engine_version()})"
    assert bufferlab.__version__ == version("bufferlab")


OTHER_COMMANDS = ("bufferlab.cli.size", "bufferlab.cli.advise", "bufferlab.cli.sweep", "bufferlab.cli.reproduce",
                  "bufferlab.cli.report", "bufferlab.cli.plot", "bufferlab.cli.ccperf", "bufferlab.cli.results",
                  "bufferlab.spec.ccperf")


def modules_loaded(code: str, names: tuple[str, ...]) -> list[str]:
    """Which of `names` a fresh interpreter has loaded after running `code`."""
    probe = (f"import sys, io, contextlib\n{code}\n"
             f"print('\\n' + __import__('json').dumps([m for m in {names!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_run_loads_no_other_command_s_module(tmp_path: Path) -> None:
    args = ("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(tmp_path / "r.duckdb"),
            "--set", "duration=1s", "--json")
    assert modules_loaded(cli(*args), OTHER_COMMANDS) == []
    # ... while each of them is still there when asked for.
    assert modules_loaded(cli("size", "--rate", "100Mbps", "--rtt", "10ms"), OTHER_COMMANDS) == ["bufferlab.cli.size"]
    assert modules_loaded(cli("results", "study", "--help"), OTHER_COMMANDS) == ["bufferlab.cli.sweep",
                                                                                "bufferlab.cli.results"]
    # ccperf's 26 options and the results group's seven commands are declared only for them, not
    # at every other command's start.
    assert modules_loaded(cli("ccperf", "--help"), OTHER_COMMANDS) == ["bufferlab.cli.ccperf",
                                                                      "bufferlab.spec.ccperf"]
    assert modules_loaded(cli("results", "list", "--help"), OTHER_COMMANDS) == ["bufferlab.cli.results"]


def test_the_command_exits_without_teardown_but_after_exit_functions_and_flushed_output() -> None:
    # `cli.app.exit_now` skips the interpreter's teardown: what atexit registered still runs, what
    # was printed still arrives, the status is the command's.
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('exit functions ran', file=sys.stderr))\n"
            "sys.argv = ['bufferlab', '{}']\n"
            "from bufferlab.cli import command_line\n"
            "command_line()\n")
    ok = subprocess.run([sys.executable, "-c", code.format("--version")], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and ok.stdout.startswith("bufferlab ") and "exit functions ran" in ok.stderr
    bad = subprocess.run([sys.executable, "-c", code.format("--no-such-flag")], capture_output=True, text=True,
                         cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --no-such-flag") and "exit functions ran" in bad.stderr


@pytest.mark.parametrize("args", [("--version",), ("run", "--json"), ("run",)])
def test_a_reader_that_closed_stdout_ends_the_command_quietly_after_its_run_is_stored(tmp_path: Path,
                                                                                    args: tuple[str, ...]) -> None:
    # `bufferlab ... | head -1`: the reader goes away; that is not a bug of bufferlab. Plain
    # output (click) and the run's summary (rich) end alike: status 1, nothing on stderr, and
    # what the command stored was committed before it printed.
    import os

    import duckdb

    db = tmp_path / "r.duckdb"
    command = [*args[:1], str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(db), "--set", "duration=1s",
               *args[1:]] if args[0] == "run" else list(args)
    reader, writer = os.pipe()
    os.close(reader)
    try:
        ended = subprocess.run([sys.executable, "-m", "bufferlab", *command], stdout=writer, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT, timeout=120, check=False)
    finally:
        os.close(writer)
    assert (ended.returncode, ended.stderr) == (1, "")
    if args[0] == "run":
        con = duckdb.connect(str(db), read_only=True)
        try:
            assert con.execute("SELECT count(*) FROM runs WHERE status = 'complete'").fetchone() == (1,)
        finally:
            con.close()


@pytest.mark.parametrize("closed", [">&-", "2>&-", ">&- 2>&- <&-"])
def test_a_command_started_with_its_standard_streams_closed_runs_and_stores_its_run(tmp_path: Path,
                                                                                   closed: str) -> None:
    # `bufferlab run x.toml >&-`: what it would print goes nowhere, as Python's print does without
    # a stdout; the run is stored and the status is that of the command (click and rich failed on
    # the None stdout the interpreter gives such a process: an internal error, status 1).
    import duckdb

    db = tmp_path / "r.duckdb"
    run = f"{sys.executable} -m bufferlab run {ROOT / 'scenarios' / 'dumbbell.toml'} --set duration=1s --db {db}"
    assert subprocess.run(f"{run} {closed}", shell=True, timeout=120, check=False).returncode == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM runs WHERE status = 'complete'").fetchone() == (1,)
    finally:
        con.close()
    assert subprocess.run(f"{sys.executable} -m bufferlab --version {closed}", shell=True, timeout=60,
                          check=False).returncode == 0
    bad = f"{sys.executable} -m bufferlab run {tmp_path / 'missing.toml'} {closed}"
    assert subprocess.run(bad, shell=True, timeout=60, check=False).returncode == 2


def test_only_stdout_closed_by_its_reader_counts_as_the_reader_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken pipe elsewhere (a sweep's worker that died) stays an error of its own.
    import os

    from bufferlab.cli import app as command

    reader, writer = os.pipe()
    with os.fdopen(writer, "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert not command._stdout_reader_gone()  # its reader still reads
        os.close(reader)
        assert command._stdout_reader_gone()
        monkeypatch.undo()


def test_the_command_collects_cyclic_garbage_less_often_than_the_library() -> None:
    # A fresh `bufferlab run` made ~100 passes of the cyclic collector over what its imports
    # built; the command's process raises the threshold (`cli.app.prepare_process`), a program that
    # imports bufferlab keeps its own.
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print(gc.get_threshold(), file=sys.stderr))\n"
            "sys.argv = ['bufferlab', '--version']\n"
            "import bufferlab.cli\n"
            "print(gc.get_threshold(), file=sys.stderr)\n"
            "bufferlab.cli.command_line()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    library, command = out.stderr.splitlines()
    assert library == "(700, 10, 10)"
    assert command == "(1000000, 10, 10)"


def test_a_run_on_a_terminal_draws_its_progress_bar_only_once_it_has_lasted(monkeypatch: pytest.MonkeyPatch) -> None:
    # A run over before `PROGRESS_BAR_AFTER_S` never loads rich's progress module or starts its
    # refresh thread; a longer one gets its bar from then on, timed from the run's start.
    from bufferlab.cli import progress

    clock = [100.0]
    drawn: list[tuple[str, float]] = []
    updates: list[dict[str, object]] = []

    class Bar:
        def update(self, task: object, **fields: object) -> None:
            updates.append(fields)

    def draw(stack: object, label: str, started: float) -> tuple[Bar, int]:
        drawn.append((label, started))
        return Bar(), 0

    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(progress, "_draw_progress_bar", draw)
    end = 30_000_000_000
    with progress.progress_bar("dumbbell") as report:
        report(end // 4, end)
        clock[0] += progress.PROGRESS_BAR_AFTER_S / 2
        report(end // 2, end)
        assert drawn == [] and updates == []
        clock[0] += progress.PROGRESS_BAR_AFTER_S
        report(3 * end // 4, end)
        report(end, end)
    assert drawn == [("dumbbell", 100.0)]
    assert [u["completed"] for u in updates] == [3 * end // 4, end]
    assert updates[-1]["simulated"] == "30.0/30 s simulated; storing the results"


def test_the_sizing_module_loads_only_for_a_queue_sized_by_time_or_rule(tmp_path: Path) -> None:
    args = ("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(tmp_path / "r.duckdb"),
            "--set", "duration=1s", "--json")
    sizing = ("bufferlab.spec.queue_sizes", "bufferlab.sizing.rules")
    assert modules_loaded(cli(*args), sizing) == []
    assert modules_loaded(cli(*args, "--set", "topology.queue=25ms"), sizing) == list(sizing)
    # ... and the rules (their RTT averages) for a queue sized by rule.
    by_rule = ("--set", 'topology.queue={rule = "stanford", rtt = "max"}')
    assert modules_loaded(cli(*args, *by_rule), sizing) == list(sizing)


def test_the_tree_and_parking_lot_models_load_only_for_such_a_topology(tmp_path: Path) -> None:
    args = ("run", str(ROOT / "scenarios" / "dumbbell.toml"), "--db", str(tmp_path / "r.duckdb"),
            "--set", "duration=1s", "--json")
    assert modules_loaded(cli(*args), ("bufferlab.spec.topology",)) == []
    tree = ("run", str(ROOT / "scenarios" / "tree_mice.toml"), "--db", str(tmp_path / "t.duckdb"),
            "--set", "duration=1s", "--json")
    assert modules_loaded(cli(*tree), ("bufferlab.spec.topology",)) == ["bufferlab.spec.topology"]


def test_the_queues_union_loads_only_for_a_queue_written_as_a_table(tmp_path: Path) -> None:
    # pydantic's TypeAdapter (its module 0.35 ms) validates a queue table ({kind = "tbf", ...});
    # a queue written as a size ("100p") is a FIFO without it.
    args = ("check", str(ROOT / "scenarios" / "dumbbell.toml"))
    assert modules_loaded(cli(*args), ("pydantic.type_adapter",)) == []
    table = ("--set", 'topology.queue={kind = "fifo", limit = "100p"}')
    assert modules_loaded(cli(*args, *table), ("pydantic.type_adapter",)) == ["pydantic.type_adapter"]


SPEC_ON_FIRST_USE = ("bufferlab.spec.generators", "bufferlab.spec.recording", "bufferlab.spec.quic")


def test_a_dumbbell_of_tcp_flows_builds_no_generator_recording_or_quic_model() -> None:
    load = "from bufferlab.spec import load_scenario\nload_scenario({!r})"
    assert modules_loaded(load.format(str(ROOT / "scenarios" / "dumbbell.toml")), SPEC_ON_FIRST_USE) == []
    # ... which a scenario that has them builds as it reads them.
    assert modules_loaded(load.format(str(ROOT / "scenarios" / "tree_mice.toml")), SPEC_ON_FIRST_USE) == [
        "bufferlab.spec.generators"]
    assert modules_loaded(load.format(str(ROOT / "scenarios" / "quic_sizing.toml")), SPEC_ON_FIRST_USE) == [
        "bufferlab.spec.quic"]


AFTER_THE_ENGINE = ("bufferlab.analysis.summary", "bufferlab.pipeline.result", "bufferlab.store.counters")


def test_what_only_the_steps_after_the_engine_need_is_not_imported_before_it() -> None:
    # The command's modules and a planned dumbbell: what a fresh run has loaded when its engine
    # starts. The summary, the result's tables and the store's counters come after it.
    code = ("import bufferlab.cli, bufferlab.runner\n"
            "from bufferlab.spec import load_scenario\n"
            f"bufferlab.runner.validate(load_scenario({str(ROOT / 'scenarios' / 'dumbbell.toml')!r}))")
    assert modules_loaded(code, AFTER_THE_ENGINE) == []


def test_a_run_of_a_spec_planned_before_reaches_its_engine_without_pydantic_hashlib_or_decimal() -> None:
    # The plan cache (`pipeline.plan_cache`): the first process plans the dumbbell and keeps its
    # plan; the second reads it back and gets as far as the engine's start with what `run` loads.
    # Validating the spec needs pydantic's import; hashlib (OpenSSL) only names a run never
    # planned before, and decimal only reads units.
    code = ("import bufferlab.cli.run\nfrom pathlib import Path\n"
            f"planned = bufferlab.cli.run.plan_file(Path({str(ROOT / 'scenarios' / 'dumbbell.toml')!r}), (), None, None)\n"
            "import bufferlab.runner, bufferlab.pipeline.simulate\n")
    names = ("pydantic", "pydantic_core", "hashlib", "decimal", "bufferlab.spec.scenario", *AFTER_THE_ENGINE)
    assert "pydantic" in modules_loaded(code, names)
    assert modules_loaded(code, names) == []
