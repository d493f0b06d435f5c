"""Reading the store back: `bufferlab.load`, `bufferlab results`, schema versions, studies, the
spec's `[record]` selection, and runs that die while being written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pytest

import bufferlab
import bufferlab.analysis.metrics
from bufferlab import runner
from bufferlab.store import writer as store
from bufferlab.store.reader import RecoveryCounts
from bufferlab.store.schema import SCHEMA_VERSION, StoreError
from bufferlab.store.tables import KEYS, NUMBERED_TABLES, RUN_TABLES, run_key, stored_table
from bufferlab.errors import SpecError
from bufferlab.spec import Scenario
from conftest import REPO, SMALL_DUMBBELL, bufferlab as cli

CAPTURED = SMALL_DUMBBELL + """
    [[captures]]
    link = "btl"
"""


def stored(write_scenario, db: Path, text: str = CAPTURED, *args: str) -> str:
    result = cli("run", str(write_scenario(text)), "--db", str(db), "--json", *args)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["run_id"])


def test_load_returns_polars_tables_of_every_kind(write_scenario, db: Path) -> None:
    run_id = stored(write_scenario, db)
    with bufferlab.load(db) as res:
        assert res.runs["run_id"].to_list() == [run_id]
        assert res.runs["spec_hash"][0] == store.spec_hash(res.runs["spec_json"][0])
        for frame, rows in ((res.flows, 2), (res.flow_metrics, 2), (res.network_metrics, 1)):
            assert isinstance(frame, pl.DataFrame) and frame.height == rows
        assert set(metric for metric in bufferlab.analysis.metrics.FLOW_METRICS) <= set(res.flow_metrics.columns)
        assert res.link_metrics.filter(pl.col("bottleneck"))["name"].to_list() == ["btl_forward"]
        series = res.timeseries(run_id[:8], flows=["flow_1"])
        assert series["name"].unique().to_list() == ["flow_1"] and series.height == 10
        assert res.timeseries(run_id, kind="channel", names=["btl_forward"]).height == 10
        pandas = res.flow_metrics.to_pandas()
        assert pandas.shape == (2, res.flow_metrics.width)
        stored_metrics = res.flow_metrics.drop("run_id")
    # The stored rows are what the metric module computes from the run (same spec, same result).
    scenario = Scenario.from_toml_text(CAPTURED)
    result, _ = runner.simulate(scenario)
    resolved = scenario.resolve()
    fresh = bufferlab.analysis.metrics.flow_metrics(bufferlab.analysis.metrics.RunData.from_result(
        result.counters(), result.flow_timeseries, resolved.engine, resolved.flow_endpoints, resolved.bottleneck))
    assert stored_metrics.columns == fresh.columns
    for column in bufferlab.analysis.metrics.FLOW_METRICS:
        assert stored_metrics[column].to_list() == pytest.approx(fresh[column].to_list(), nan_ok=True), column


def test_one_runs_series_and_captures_read_by_its_number_are_its_rows_as_sql_reads_them(write_scenario,
                                                                                        db: Path) -> None:
    # `Results` reads a run's rows of a numbered table from its data table and puts the run id back
    # in polars; a query of the view (what a user's SQL reads) gives the same frame.
    first = stored(write_scenario, db)
    second = stored(write_scenario, db, CAPTURED.replace('queue = "20p"', 'queue = "30p"'))
    with bufferlab.load(db) as res:
        for run_id in (first, second):
            for table in NUMBERED_TABLES:
                order = ", ".join(KEYS[table])
                expected = res.query(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id])
                assert res.table(table, run_id[:10]).equals(expected), table
                assert table == "class_timeseries" or expected.height > 0, table
            for kind, entity in (("flow", "flows"), ("channel", "channels")):
                expected = res.query(f"SELECT e.name, t.* FROM {kind}_timeseries t JOIN {entity} e USING (run_id, {kind}) "
                                     f"WHERE run_id = ? ORDER BY {kind}, time_ns", [run_id])
                assert res.timeseries(run_id, kind=kind).equals(expected), kind


def test_results_show_notes_the_recoveries_that_raised_a_window_as_run_did(write_scenario, db: Path) -> None:
    # CUBIC flows behind PIE at 200 ms reducing from RFC 5681's FlightSize (the default) raise some
    # windows; the stored counts give `results show` the note `run` printed, in the same words.
    spec = Scenario.from_toml(write_scenario(SMALL_DUMBBELL)).with_overrides(
        {"topology.queue": {"kind": "pie", "limit": "200p"}, "duration": "20s", "flow_defaults.cca": "cubic",
         "topology.rtt": "200ms"})
    summary = runner.run(spec, db)
    [note] = summary.notes
    shown = cli("results", "show", summary.run_id, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert f"note: {note}" in " ".join(shown.stdout.split())
    assert bufferlab.load(db).recovery_counts([summary.run_id]) == RecoveryCounts(
        2, sum(f.raising_reductions > 0 for f in summary.flows), sum(f.recoveries for f in summary.flows),
        sum(f.raising_reductions for f in summary.flows), 0)


def test_results_cli_lists_shows_queries_and_exports(write_scenario, db: Path, tmp_path: Path) -> None:
    run_id = stored(write_scenario, db, CAPTURED, "--study", "smoke")
    listing = cli("results", "list", "--db", str(db))
    assert listing.returncode == 0 and run_id[:12] in listing.stdout and "smoke" in listing.stdout
    shown = cli("results", "show", run_id[:6], "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    for text in ("mean_throughput_l4", "mean_qdisc_delay_l2", "btl_forward", "mean_jains_fairness_throughput_l4",
                 "flow_0", "flow_1", "net"):
        assert text in shown.stdout
    as_json = json.loads(cli("results", "show", run_id, "--db", str(db), "--json").stdout)
    assert [f["name"] for f in as_json["metrics"]["flows"]] == ["flow_0", "flow_1"]
    query = cli("results", "query", "SELECT name, loss_rate_l4 FROM flow_metrics ORDER BY flow", "--db", str(db),
                "--format", "csv")
    assert query.stdout.splitlines()[0] == "name,loss_rate_l4" and len(query.stdout.splitlines()) == 3
    for fmt, read in (("parquet", pl.read_parquet), ("csv", pl.read_csv)):
        out = tmp_path / f"fm.{fmt}"
        done = cli("results", "export", run_id[:10], "--db", str(db), "--table", "flow_metrics", "--format", fmt,
                   "-o", str(out))
        assert done.returncode == 0, done.stderr
        with bufferlab.load(db) as res:
            expected = res.flow_metrics
        exported = read(out)
        assert exported["mean_throughput_l4"].to_list() == pytest.approx(expected["mean_throughput_l4"].to_list())
    with bufferlab.load(db) as res:
        assert res.studies["study_id"].to_list() == ["smoke"] and res.runs["study_id"].to_list() == ["smoke"]


def test_a_run_s_table_columns_are_its_dataframe_s_values(write_scenario, db: Path) -> None:
    # `results show` and `run --metrics` read the metric tables without polars: the same values.
    run_id = stored(write_scenario, db)
    with bufferlab.load(db) as res:
        for name in ("flow_metrics", "link_metrics", "network_metrics", "runs", "flows", "channels"):
            assert res.table_columns(name, run_id[:8]) == res.table(name, run_id).to_dict(as_series=False), name
        with pytest.raises(SpecError, match="flow_timeseries"):
            res.table_columns("flow_timeseries", run_id)


def test_queries_in_a_one_connection_block_open_the_store_once_and_let_go_after(
        write_scenario, db: Path, store_opens: list[int]) -> None:
    run_id = stored(write_scenario, db)
    with bufferlab.load(db) as res:
        store_opens.clear()
        with res.one_connection():
            names, rows = res.rows("SELECT name FROM flows ORDER BY flow")
            assert res.table_columns("network_metrics", run_id[:6])["run_id"] == [run_id]
            with res.one_connection():  # nested: the same connection
                res.rows("SELECT 1")
        assert (names, rows) == (["name"], [("flow_0",), ("flow_1",)]) and len(store_opens) == 1
        res.rows("SELECT 1")
        res.rows("SELECT 1")
        assert len(store_opens) == 3  # outside a block, each query opens and closes its own
    # The block's end closed the store: a writer gets it at once.
    duckdb.connect(str(db)).close()


def test_results_show_reads_the_run_and_its_metric_tables_on_one_connection(
        write_scenario, db: Path, store_opens: list[int]) -> None:
    import contextlib
    import io

    from bufferlab.cli import main

    run_id = stored(write_scenario, db)
    for json_flag in ([], ["--json"]):
        store_opens.clear()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["results", "show", run_id[:8], "--db", str(db), *json_flag]) == 0
        assert "flow_1" in out.getvalue()
        assert len(store_opens) == 2  # the store's schema check, then every query of the command


def test_results_show_prints_a_bracketed_scenario_name_as_written(write_scenario, db: Path) -> None:
    # "[/n]" is the user's text, not rich markup (rich would raise: a closing tag with nothing open).
    text = SMALL_DUMBBELL.replace('name = "small"', 'name = "[/n]"')
    assert '"[/n]"' in text
    run_id = stored(write_scenario, db, text)
    shown = cli("results", "show", run_id, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"run {run_id[:12]} ([/n], seed")


def test_results_cli_exports_the_capture_as_csv_pcap_and_middlebox_table(write_scenario, db: Path,
                                                                          tmp_path: Path) -> None:
    run_id = stored(write_scenario, db)
    csv_path, pcap_path = tmp_path / "btl.csv", tmp_path / "btl.pcap"
    assert cli("results", "csv", run_id, "--db", str(db), "--link", "btl", "-o", str(csv_path)).returncode == 0
    assert cli("results", "pcap", run_id, "--db", str(db), "--link", "btl", "-o", str(pcap_path)).returncode == 0
    with bufferlab.load(db) as res:
        packets = res.query("SELECT count(*) AS n FROM captures")["n"][0]
        monitored = res.monitor(run_id, link="btl")
    assert pl.read_csv(csv_path).height == packets
    assert pcap_path.stat().st_size > 24
    table = json.loads(cli("results", "monitor", run_id, "--db", str(db), "--link", "btl", "--json").stdout)
    assert [f["bytes"] for f in table["flows"]] == monitored["bytes"].to_list()


@pytest.mark.parametrize("args, line", [
    (["show", "nope"], 'error: RUN: no run "nope" in'),
    (["export", "--table", "nope", "-o", "x"], 'error: --table: unknown table "nope"'),
    (["query", "SELEC 1"], "error: SQL: Parser Error"),
    (["pcap", "RUNID", "--link", "access_src_0", "-o", "x"], 'has no capture of "access_src_0_forward"'),
])
def test_results_cli_errors_are_one_line(write_scenario, db: Path, args: list[str], line: str) -> None:
    run_id = stored(write_scenario, db)
    result = cli("results", *[run_id if a == "RUNID" else a for a in args], "--db", str(db))
    assert result.returncode == 2 and result.stderr.startswith("error: ") and line in result.stderr
    assert result.stderr.count("\n") == 1


def test_record_selection_in_the_spec_limits_the_stored_series(write_scenario, db: Path) -> None:
    run_id = stored(write_scenario, db, SMALL_DUMBBELL.replace('sample_interval = "100ms"', "") + """
    [record]
    interval = "50ms"
    flows = ["flow_1"]
    links = ["btl"]
    """)
    with bufferlab.load(db) as res:
        flows = res.table("flow_timeseries", run_id)
        channels = res.timeseries(run_id, kind="channel")
        metrics = res.table("flow_metrics", run_id)
    assert flows["flow"].unique().to_list() == [1] and flows.height == 20
    assert sorted(channels["name"].unique().to_list()) == ["btl_backward", "btl_forward"]
    # The unsampled flow still has its counter-based metrics; its sampled-only ones are null.
    assert metrics["mean_srtt_l4"].is_null().to_list() == [True, False]
    assert metrics["mean_throughput_l4"].is_null().to_list() == [False, False]


def test_record_captures_add_a_capture(write_scenario, db: Path) -> None:
    run_id = stored(write_scenario, db, SMALL_DUMBBELL + """
    [record]
    captures = [{ link = "btl", direction = "backward" }]
    """)
    with bufferlab.load(db) as res:
        acks = res.capture(run_id, link="btl", direction="backward")
    assert len(acks["time_ns"]) > 0 and not acks["is_data"].any()


def test_record_none_runs_without_series(write_scenario, db: Path) -> None:
    run_id = stored(write_scenario, db, SMALL_DUMBBELL + """
    [record]
    flows = "none"
    links = "none"
    """)
    with bufferlab.load(db) as res:
        assert res.table("flow_timeseries", run_id).height == 0
        assert res.table("channel_timeseries", run_id).height == 0


@pytest.mark.parametrize("record, line", [
    ('flows = ["nope"]', 'record.flows[0]: unknown flow "nope"'),
    ('links = ["btl_sideways"]', 'record.links[0]: unknown link or channel "btl_sideways"'),
    ('interval = "10ms"', "record.interval: the interval is given twice"),
    ('captures = [{ link = "nope" }]', 'record.captures[0].link: unknown link "nope"'),
])
def test_bad_record_selection_is_a_spec_error(record: str, line: str) -> None:
    with pytest.raises(SpecError, match=line.replace("[", r"\[").replace("]", r"\]")):
        Scenario.from_toml_text(SMALL_DUMBBELL + "\n[record]\n" + record + "\n")


# --- schema versions -----------------------------------------------------------------------------

V1_SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, status VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
    name VARCHAR, engine_version VARCHAR NOT NULL, seed UBIGINT NOT NULL, duration_ns UBIGINT NOT NULL,
    end_ns UBIGINT NOT NULL, events UBIGINT NOT NULL, wall_time_s DOUBLE NOT NULL,
    spec_json VARCHAR NOT NULL, user_spec_json VARCHAR NOT NULL);
CREATE TABLE flows (run_id VARCHAR NOT NULL, flow UINTEGER NOT NULL, name VARCHAR, bytes_delivered UBIGINT);
CREATE TABLE flow_timeseries (run_id VARCHAR NOT NULL, flow UINTEGER NOT NULL, time_ns UBIGINT NOT NULL,
    cwnd_bytes UBIGINT);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO runs VALUES ('old', 'complete', now(), 'old', 'e1', 1, 1, 1, 1, 0.1, '{}', '{}');
INSERT INTO flows VALUES ('old', 0, 'f', 1234);
"""


def test_a_version_1_store_is_migrated_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute(V1_SCHEMA)
    con.close()
    with bufferlab.load(path) as res:
        assert res.runs["run_id"].to_list() == ["old"] and res.runs["study_id"].to_list() == [None]
        assert res.flows["bytes_delivered"].to_list() == [1234] and "delivery_delay_byte_ns" in res.flows.columns
        assert res.flow_metrics.height == 0
        assert res.query("SELECT value FROM meta")["value"].to_list() == [str(SCHEMA_VERSION)]


def test_a_store_from_a_newer_bufferlab_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.duckdb"
    with store.Store(path):
        pass
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="schema version 99, newer than this bufferlab's"):
        bufferlab.load(path)
    result = cli("results", "list", "--db", str(path))
    assert result.returncode == 2 and "error: --db:" in result.stderr


# --- a run killed while it is written --------------------------------------------------------------

WRITER = textwrap.dedent("""
    import dataclasses, sys, time
    sys.path.insert(0, {tests!r})
    import polars as pl
    from bufferlab import runner
    from bufferlab.analysis.derive import derive
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import RawRun
    from bufferlab.store import writer as store
    from bufferlab.spec import Scenario
    from conftest import SMALL_DUMBBELL

    db, mode, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # Random loss makes every seed its own run.
    scenario = Scenario.from_toml_text(SMALL_DUMBBELL.replace("seed = 3", f"seed = {{seed}}") + 'loss = "0.1%"\\n')
    result, wall = runner.simulate(scenario)
    planned = plan(scenario)
    if mode.startswith("large"):
        # Derived from the counters alone (deriving from inflated series would take minutes); then
        # the series are inflated to a few million rows, so that the insert takes seconds.
        run = derive(planned, RawRun(result.with_tables(flow_timeseries=result.flow_timeseries.clear()), wall))
        reps = 40_000
        inflated = {{name: pl.concat([getattr(result, name)] * reps).with_columns(
                        time_ns=pl.int_range(1, getattr(result, name).height * reps + 1, dtype=pl.UInt64))
                    for name in ("flow_timeseries", "channel_timeseries")}}
        run.result = result.with_tables(**inflated)
    else:
        run = derive(planned, RawRun(result, wall))
    if mode.endswith("pause"):  # stop after the series, before the captures and the commit
        original = store.Store._insert_frame
        def pause(self, table, number, frame):
            if table == "captures":
                print("mid-write", flush=True)
                time.sleep(60)
            original(self, table, number, frame)
        store.Store._insert_frame = pause
    with store.Store(db) as s:
        print("saving", flush=True)
        s.save(run)
    print("saved", flush=True)
""")


def kill_writer(db: Path, mode: str, wait_for: str, seed: int, delay: float = 0.0) -> str:
    script = WRITER.format(tests=str(REPO / "tests"))
    with subprocess.Popen([sys.executable, "-c", script, str(db), mode, str(seed)], stdout=subprocess.PIPE,
                          text=True, cwd=REPO) as child:
        assert child.stdout is not None
        seen = []
        for line in child.stdout:
            seen.append(line.strip())
            if line.strip() == wait_for:
                break
        if delay:
            try:
                child.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                pass
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        rest = child.stdout.read()
        child.wait(timeout=60)
    return " ".join(seen) + " " + rest


def run_counts(db: Path) -> dict[str, dict[str, int]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'").fetchone()[0]:
            # A new store gets its tables in the transaction of its first run: none before it.
            return {"orphans": dict.fromkeys(RUN_TABLES, 0)}
        names = [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()]
        # Orphans: rows of a run table (as stored: a numbered one keyed by run number) that no run owns.
        return {name: {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [name]).fetchone()[0]
                       for t in RUN_TABLES} for name in names} | {
            "orphans": {t: con.execute(f"SELECT count(*) FROM {stored_table(t)} WHERE {run_key(t)} "
                                       f"NOT IN (SELECT {run_key(t)} FROM runs)").fetchone()[0]
                        for t in RUN_TABLES}}
    finally:
        con.close()


def test_a_writer_killed_mid_transaction_leaves_no_partial_rows(db: Path) -> None:
    # A first run is stored whole; the second writer dies after inserting most of its rows.
    assert "saved" in kill_writer(db, "normal", "saved", seed=3)
    before = run_counts(db)
    output = kill_writer(db, "pause", "mid-write", seed=4)
    assert "saved" not in output
    after = run_counts(db)
    assert after == before, "the killed run left rows behind"
    assert after["orphans"] == dict.fromkeys(RUN_TABLES, 0)
    # The store opens for writing again and takes the same run whole.
    assert "saved" in kill_writer(db, "normal", "saved", seed=4)
    assert len(run_counts(db)) == 3  # two runs + the orphans entry


def test_a_writer_killed_during_a_large_insert_leaves_all_or_nothing(db: Path) -> None:
    # Nearly 5 million series rows take seconds to insert; the writer dies half a second in.
    output = kill_writer(db, "large", "saving", seed=5, delay=0.5)
    counts = run_counts(db)
    assert counts["orphans"] == dict.fromkeys(RUN_TABLES, 0)
    runs = [c for name, c in counts.items() if name != "orphans"]
    if "saved" in output:
        assert runs and runs[0]["flow_timeseries"] == 2 * 10 * 40_000
    else:
        assert runs == []
    with store.Store(db) as s:
        assert len(s.run_ids()) == len(runs)
    assert "saved" in kill_writer(db, "normal", "saved", seed=6)


def test_store_connections_print_no_progress_bar_and_writers_append_nothing_before_commit(db: Path) -> None:
    from bufferlab.store.connection import connect

    with store.Store(db):
        pass
    for read_only in (False, True):
        con = connect(db, read_only=read_only)
        try:
            # DuckDB draws its progress bar on stdout after two seconds, even into a pipe: it would
            # land inside `--json` summaries and CSV exports of long writes and queries.
            settings = con.execute("SELECT current_setting('enable_progress_bar'), "
                                   "current_setting('enable_optimistic_write')").fetchone()
        finally:
            con.close()
        assert settings == (False, read_only)


def test_a_writer_killed_before_its_commit_leaves_the_store_no_larger(tmp_path: Path) -> None:
    # Millions of series rows are inserted, then the writer dies before its commit. DuckDB's
    # optimistic writes would put those rows in the database file already: after a restart the
    # store would stay many times the size of the same store written cleanly.
    clean, killed = tmp_path / "clean.duckdb", tmp_path / "killed.duckdb"
    assert "saved" in kill_writer(clean, "normal", "saved", seed=4)
    output = kill_writer(killed, "large-pause", "mid-write", seed=5)
    assert "saved" not in output
    assert run_counts(killed) == {"orphans": dict.fromkeys(RUN_TABLES, 0)}
    assert "saved" in kill_writer(killed, "normal", "saved", seed=4)
    assert not Path(f"{killed}.wal").exists()
    assert killed.stat().st_size <= 1.1 * clean.stat().st_size, \
        f"after the kill the store takes {killed.stat().st_size} bytes, written cleanly {clean.stat().st_size}"


def test_the_stored_engine_spec_lists_shared_options_once_and_is_read_through_its_indices(write_scenario,
                                                                                          db: Path) -> None:
    # The store keeps the engine spec as it ran (its identity, and what packet export reads of
    # each flow) in its compact form, each option set and queue listed once, and the scenario as
    # the user wrote it, which plans to the same engine spec again (what a rerun runs).
    text = CAPTURED + '[flow_defaults.tcp]\nmss = 1000\n[[flows]]\ntcp = { sack = false }\n[[flows]]\n'
    run_id = stored(write_scenario, db, text)
    with bufferlab.load(db) as res:
        spec, user_spec = res.spec(run_id), res.user_spec(run_id)
        flows = res.packet_flows(run_id)
    assert [flow["tcp"] for flow in spec["flows"]] == [0, 1]
    assert len(spec["tcp_options"]) == 2 and len(spec["queues"]) == 2  # the bottleneck's, the access links'
    assert [(f["tcp"]["mss"], f["tcp"]["sack"]) for f in flows] == [(1000, False), (1000, True)]
    from bufferlab.pipeline.plan import plan

    assert json.loads(plan(Scenario.from_dict(user_spec)).spec_json) == spec


def test_a_stored_dumbbell_spec_of_many_flows_reads_back_with_its_flows_listed(write_scenario, db: Path) -> None:
    # A dumbbell's flows are columns of the stored engine spec (`spec.resolved.json_members`); a
    # reader gets them listed, as the engine expands them.
    run_id = stored(write_scenario, db, SMALL_DUMBBELL)
    with bufferlab.load(db) as res:
        spec, user_spec = res.spec(run_id), res.user_spec(run_id)
        stored_text = res.query("SELECT spec_json FROM runs WHERE run_id = ?", [run_id])["spec_json"][0]
    assert "many_flows" in json.loads(stored_text) and "many_flows" not in spec
    assert [(f["name"], f["src"], f["dst"]) for f in spec["flows"]] == [("flow_0", 2, 3), ("flow_1", 4, 5)]
    assert [link["name"] for link in spec["links"]] == ["btl", "access_src_0", "access_dst_0", "access_src_1",
                                                         "access_dst_1"]
    from bufferlab.pipeline.plan import plan

    assert plan(Scenario.from_dict(user_spec)).spec_json == stored_text
