"""`bufferlab report` and `bufferlab serve`: pages built from the store only, metric tables that
hold the store's numbers with the right bests in bold, a spec file that reproduces the run, escaped
names, incremental rebuilds, and a server that stays on loopback and inside its folder."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from bufferlab.analysis import metrics as catalogue
from bufferlab.report import build_site
from bufferlab.report.serve import LOOPBACK, Watcher, make_server, resolve_inside
from bufferlab.report.site import run_dir_name, study_dir_name
from bufferlab.report.tables import HIGHER_IS_BETTER, LOWER_IS_BETTER, NEITHER, best_positions, better

from conftest import SMALL_DUMBBELL, bufferlab

EVIL_NAME = '<script>alert("x")</script> & co'


# --- tables without a store -------------------------------------------------------------------------

def test_every_catalogue_metric_has_exactly_one_direction_class():
    every = {*catalogue.FLOW_METRICS, *catalogue.LINK_METRICS, *catalogue.NETWORK_METRICS}
    assert HIGHER_IS_BETTER | LOWER_IS_BETTER | NEITHER == every
    assert not HIGHER_IS_BETTER & LOWER_IS_BETTER and not (HIGHER_IS_BETTER | LOWER_IS_BETTER) & NEITHER


def test_throughput_and_fairness_are_better_higher_delay_drops_and_loss_lower():
    assert better("mean_throughput_l4") == better("mean_jains_fairness_throughput_l4") == "higher"
    assert better("utilization_l1") == "higher"
    assert better("mean_qdisc_delay_l2") == better("total_qdisc_drops_l2") == better("loss_rate_l4") == "lower"
    assert better("mean_cwnd_l4") is None


def test_best_positions_marks_every_tie_and_nothing_without_a_comparison():
    assert best_positions([1.0, 3.0, 3.0, None], "higher") == {1, 2}
    assert best_positions([1.0, 3.0, 0.5], "lower") == {2}
    assert best_positions([2.0, 2.0], "lower") == set()          # all equal: no best
    assert best_positions([2.0, None], "higher") == set()        # one value: nothing compared
    assert best_positions([1.0, 3.0], None) == set()             # a metric without a direction


# --- a store with runs and a study --------------------------------------------------------------------

@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A plain run, a run with a hostile name, and a two-point study of the queue."""
    from bufferlab.runner import run
    from bufferlab.spec import Scenario
    from bufferlab.study.execute import run_sweep
    from bufferlab.study.executors import make_executor
    from bufferlab.study.sweep import Sweep

    root = tmp_path_factory.mktemp("report")
    db = root / "store.duckdb"
    spec_path = root / "small.toml"
    spec_path.write_text(textwrap.dedent(SMALL_DUMBBELL), encoding="utf-8")
    plain = run(Scenario.from_toml(spec_path), db).run_id
    evil = run(Scenario.from_toml(spec_path).with_overrides({"name": EVIL_NAME, "topology.queue": "8p"}), db).run_id
    sweep = Sweep.from_dict({"name": "queue/small", "base": str(spec_path), "seeds": 1,
                             "axes": [{"key": "topology.queue", "values": ["5p", "40p"]}]})
    run_sweep(sweep, db, make_executor(1, None))
    out = root / "site"
    report = build_site(db, out)
    return {"db": db, "out": out, "plain": plain, "evil": evil, "report": report, "spec": spec_path}


class _Tables(HTMLParser):
    """Metric tables of a page: table id -> {metric: [(data-value, bold)]}, plus every href."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, list[tuple[float | None, bool]]]] = {}
        self.columns: dict[str, list[str]] = {}
        self.links: list[str] = []
        self._table: str | None = None
        self._metric: str | None = None
        self._cell: list | None = None
        self._in_head = False
        self._head_text = ""

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "table" and "metrics" in (a.get("class") or ""):
            self._table = a.get("id")
            self.tables[self._table] = {}
            self.columns[self._table] = []
        elif self._table and tag == "thead":
            self._in_head = True
        elif self._table and self._in_head and tag == "th":
            self._head_text = ""
        elif self._table and tag == "tr" and "data-metric" in a:
            self._metric = a["data-metric"]
            self.tables[self._table][self._metric] = []
        elif self._metric and tag == "td" and "num" in (a.get("class") or ""):
            value = a.get("data-value")
            self._cell = [float(value) if value is not None else None, "best" in a["class"].split()]
            self.tables[self._table][self._metric].append(self._cell)

    def handle_data(self, data: str) -> None:
        if self._in_head:
            self._head_text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._in_head and self._table:
            self.columns[self._table].append(self._head_text.strip())
        if tag == "thead":
            self._in_head = False
        if tag == "tr":
            self._metric = None
        if tag == "table":
            self._table = None


def _parse(path: Path) -> _Tables:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_run_page_metric_tables_hold_the_stores_numbers_with_the_bests_in_bold(store):
    import bufferlab

    res = bufferlab.load(store["db"])
    page = _parse(store["out"] / "runs" / run_dir_name(store["plain"]) / "index.html")
    frames = {"flow-metrics": (res.table("flow_metrics", store["plain"]), catalogue.FLOW_METRICS),
              "link-metrics": (res.table("link_metrics", store["plain"]).filter(pl.col("bottleneck")),
                               catalogue.LINK_METRICS),
              "network-metrics": (res.table("network_metrics", store["plain"]), catalogue.NETWORK_METRICS)}
    for table_id, (frame, metrics) in frames.items():
        assert page.columns[table_id][2:] == frame["name"].to_list()
        assert list(page.tables[table_id]) == [m for m in metrics if m in frame.columns]
        for metric, cells in page.tables[table_id].items():
            stored = frame[metric].to_list()
            assert [c[0] for c in cells] == [None if v is None else float(v) for v in stored], metric
            assert {i for i, c in enumerate(cells) if c[1]} == best_positions(stored, better(metric)), metric
    # Two flows of one dumbbell differ in throughput: one of them is bold in that row.
    throughput = page.tables["flow-metrics"]["mean_throughput_l4"]
    values = [c[0] for c in throughput]
    if values[0] != values[1]:
        best = max(range(2), key=lambda i: values[i])
        assert [c[1] for c in throughput] == [i == best for i in range(2)]


def test_run_page_spec_file_reproduces_the_run(store):
    from bufferlab.pipeline.plan import plan
    from bufferlab.spec import Scenario

    page_dir = store["out"] / "runs" / run_dir_name(store["plain"])
    assert "bufferlab run spec.toml" in (page_dir / "index.html").read_text(encoding="utf-8")
    assert plan(Scenario.from_toml(page_dir / "spec.toml")).run_id == store["plain"]
    evil_dir = store["out"] / "runs" / run_dir_name(store["evil"])
    assert plan(Scenario.from_toml(evil_dir / "spec.toml")).run_id == store["evil"]


def test_names_from_the_store_are_escaped_in_every_page(store):
    for page in (store["out"] / "index.html", store["out"] / "runs" / run_dir_name(store["evil"]) / "index.html"):
        html = page.read_text(encoding="utf-8")
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co" in html


def test_index_links_every_run_and_study_to_a_page_that_exists(store):
    index = _parse(store["out"] / "index.html")
    runs = [link for link in index.links if link.startswith("runs/")]
    studies = [link for link in index.links if link.startswith("studies/")]
    assert len(runs) == 4 and len(studies) == 1
    for link in runs + studies:
        assert (store["out"] / link).is_file(), link
    assert f"studies/{study_dir_name('queue/small')}/index.html" in studies


def _runs_tables(html: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The index's tables of runs: caption -> (column headings, rows of cell texts)."""
    from html import unescape

    def cells(text: str, tag: str) -> list[str]:
        return [unescape(re.sub(r"<.*?>", "", c)) for c in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", text, re.S)]

    tables = {}
    for table in re.findall(r'<table class="list runs".*?</table>', html, re.S):
        caption = cells(table, "caption")[0]
        head = cells(re.search(r"<thead>(.*?)</thead>", table, re.S).group(1), "th")
        rows = [cells(row, "td") for row in re.findall(r"<tr class=\"filterable\".*?</tr>", table, re.S)]
        tables[caption] = (head, rows)
    return tables


def test_index_tells_the_runs_of_a_study_apart_by_the_axis_values_that_differ(store):
    # Two runs of a buffer sweep differ in their buffer alone: the index shows it, a column per
    # axis whose value differs; the runs in no study are listed on their own.
    tables = _runs_tables((store["out"] / "index.html").read_text(encoding="utf-8"))
    assert list(tables) == ["study queue/small: runs by topology.queue", "runs in no study"]
    head, rows = tables["study queue/small: runs by topology.queue"]
    assert head[:3] == ["run", "name", "topology.queue"]
    assert [row[2] for row in rows] == ["5p", "40p"]
    head, rows = tables["runs in no study"]
    assert "topology.queue" not in head and len(rows) == 2
    assert {row[0] for row in rows} == {store["plain"][:12], store["evil"][:12]}


def test_a_study_page_shows_an_interval_only_where_a_point_has_two_seeds(store, tmp_path):
    # queue/small has one seed per point: no interval, and no "95 % CI" said of it.
    page = store["out"] / "studies" / study_dir_name("queue/small") / "index.html"
    html = page.read_text(encoding="utf-8")
    assert "95 %" not in html and not re.findall(r'<span class="ci">[^<]', html)
    assert "<caption>Points: one seed per point, so no interval</caption>" in html
    assert "utilization_l1 against topology.queue (one seed per point, so no interval)" in html
    # The same sweep with two seeds: the interval, and what it is.
    from bufferlab.study.execute import run_sweep
    from bufferlab.study.executors import SerialExecutor
    from bufferlab.study.sweep import Sweep

    db = tmp_path / "store.duckdb"
    run_sweep(Sweep.from_dict({"name": "two", "base": str(store["spec"]), "seeds": 2,
                               "axes": [{"key": "topology.queue", "values": ["5p", "40p"]}]}), db, SerialExecutor())
    build_site(db, tmp_path / "site", figures=False)
    html = (tmp_path / "site" / "studies" / study_dir_name("two") / "index.html").read_text(encoding="utf-8")
    assert "<caption>Points: mean over seeds [95 % CI]</caption>" in html
    assert len(re.findall(r'<span class="ci">\[', html)) == 2 * 7     # two points, seven metrics


def test_study_page_compares_its_points_and_links_their_runs(store):
    import bufferlab

    page = store["out"] / "studies" / study_dir_name("queue/small") / "index.html"
    html = page.read_text(encoding="utf-8")
    points = bufferlab.load(store["db"]).study("queue/small")
    for value in points["utilization_l1"].to_list():
        assert f'data-value="{value}"' in html
    links = [link for link in _parse(page).links if link.startswith("../../runs/")]
    assert len(links) == 2 and all((page.parent / link).resolve().is_file() for link in links)
    assert (page.parent / "sweep-utilization_l1.svg").stat().st_size > 0


def _charts(html: str) -> dict[str, dict]:
    """A run page's interactive charts: id -> the chart's JSON."""
    found = re.findall(r'<script type="application/json" class="chart-data">(.*?)</script>', html, re.S)
    return {chart["id"]: chart for chart in map(json.loads, found)}


def _notes(html: str) -> list[str]:
    from html import unescape

    return [unescape(n) for n in re.findall(r"<li>(.*?)</li>", "".join(re.findall(r'<ul class="notes">(.*?)</ul>',
                                                                                html, re.S)))]


def test_run_page_embeds_the_series_for_its_interactive_charts(store):
    # The time series and seed 001's operating point (in flight, sRTT, throughput) as charts
    # drawn in the browser, no static figure of the same series beside them.
    page = store["out"] / "runs" / run_dir_name(store["plain"])
    html = (page / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'data-chart="(\w+)"', html) == ["cwnd", "in_flight", "srtt", "throughput", "queue"]
    assert [s["name"] for s in _charts(html)["in_flight"]["series"]] == ["flow_0", "flow_1"]
    assert not list(page.glob("*.png")) and _notes(html) == []
    assert (store["out"] / "assets" / "report.js").is_file() and (store["out"] / "assets" / "report.css").is_file()
    assert "http://" not in html and "https://" not in html      # nothing fetched from the network


def test_a_run_that_kept_no_series_gets_its_metric_tables_and_one_line_on_its_page(tmp_path):
    # `[record] store_series = false` is the spec's choice: the page says so, no figure is
    # attempted, and the build prints nothing about it (a sweep of such runs stays quiet).
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    spec_path = tmp_path / "small.toml"
    spec_path.write_text(textwrap.dedent(SMALL_DUMBBELL), encoding="utf-8")
    db = tmp_path / "store.duckdb"
    run_id = run(Scenario.from_toml(spec_path).with_overrides({"record.store_series": False}), db).run_id
    report = build_site(db, tmp_path / "site")
    page = tmp_path / "site" / "runs" / run_dir_name(run_id)
    html = (page / "index.html").read_text(encoding="utf-8")
    assert "its time series were not stored ([record] store_series = false)" in html
    assert not re.findall(r'data-chart="(\w+)"', html) and not list(page.glob("*.png"))
    tables = _Tables()
    tables.feed(html)
    assert tables.tables and all(tables.tables.values())
    assert report.notes == []


def test_a_chart_with_nothing_to_show_is_left_out_with_one_line_saying_why(tmp_path):
    # A datagram source takes no RTT sample (an sRTT chart of no line), a spec may record the
    # bottleneck alone (the advisor's runs) or nothing at all: no empty chart, one line each on
    # the page, and nothing on the console (the spec chose it).
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    spec_path = tmp_path / "small.toml"
    spec_path.write_text(textwrap.dedent(SMALL_DUMBBELL), encoding="utf-8")
    small = Scenario.from_toml(spec_path)
    db = tmp_path / "store.duckdb"
    datagrams = run(small.with_overrides({"flow_defaults.traffic": {"kind": "cbr", "rate": "12Mbps",
                                                                    "packet": "1500B"}}), db).run_id
    queue_only = run(small.with_overrides({"record.flows": "none", "record.links": ["btl"]}), db).run_id
    unrecorded = run(small.with_overrides({"sample_interval": "off"}), db).run_id
    report = build_site(db, tmp_path / "site")
    assert report.notes == []
    expected = {
        datagrams: (["cwnd", "in_flight", "throughput", "queue"],
                    ["no sRTT chart: no flow took an RTT sample (datagram flows take none)"]),
        queue_only: (["queue"], ["no cwnd, in flight, sRTT, throughput charts: run "
                                 f"{queue_only[:12]} stored no flow time series; record them"]),
        unrecorded: ([], ["no time series stored for this run, so no charts"]),
    }
    for run_id, (charts, lines) in expected.items():
        html = (tmp_path / "site" / "runs" / run_dir_name(run_id) / "index.html").read_text(encoding="utf-8")
        drawn = _charts(html)
        assert list(drawn) == charts, run_id
        for chart in drawn.values():       # every chart drawn has a value to show
            assert any(v is not None for line in chart["series"] for v in line["y"]), chart["id"]
        notes = _notes(html)
        assert len(notes) == len(lines) and all(n.startswith(line) for n, line in zip(notes, lines)), notes


def test_a_run_with_an_aqm_gets_charts_of_its_controller_marks_and_alpha(tmp_path):
    # DCTCP flows through a marking CoDel: the dropping state, the count, the CE marks and α move,
    # so their charts follow the five of every run; PIE's probability and signal, which CoDel
    # does not keep, and AQM drops, which marking replaced, are left out without a word.
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    spec_path = tmp_path / "small.toml"
    spec_path.write_text(textwrap.dedent(SMALL_DUMBBELL), encoding="utf-8")
    db = tmp_path / "store.duckdb"
    codel = {"kind": "codel", "limit": "100p", "ecn": True, "target": "1ms", "interval": "20ms"}
    run_id = run(Scenario.from_toml(spec_path).with_overrides(
        {"topology.queue": codel, "duration": "3s", "flow_defaults.cca": "dctcp",
         "flow_defaults.tcp": {"ecn": "dctcp"}}), db).run_id
    report = build_site(db, tmp_path / "site")
    html = (tmp_path / "site" / "runs" / run_dir_name(run_id) / "index.html").read_text(encoding="utf-8")
    assert report.notes == [] and _notes(html) == []
    assert re.findall(r'data-chart="(\w+)"', html) == ["cwnd", "in_flight", "srtt", "throughput", "queue",
                                                       "aqm_state", "aqm_count", "ce_marks", "ecn_alpha"]
    charts = _charts(html)
    assert [s["name"] for s in charts["ecn_alpha"]["series"]] == ["flow_0", "flow_1"]
    assert charts["aqm_state"]["title"] == "AQM dropping (queues)"
    assert max(v for v in charts["ce_marks"]["series"][0]["y"] if v is not None) > 0


def test_a_run_whose_recoveries_raised_a_window_says_so_on_its_page_as_run_does(tmp_path):
    # CUBIC flows behind PIE reducing from RFC 5681's FlightSize (the default): some recoveries
    # set ssthresh above the window in use; the page carries the note `bufferlab run` prints.
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    spec_path = tmp_path / "small.toml"
    spec_path.write_text(textwrap.dedent(SMALL_DUMBBELL), encoding="utf-8")
    db = tmp_path / "store.duckdb"
    summary = run(Scenario.from_toml(spec_path).with_overrides(
        {"topology.queue": {"kind": "pie", "limit": "200p"}, "duration": "20s", "flow_defaults.cca": "cubic",
         "topology.rtt": "200ms"}), db)
    [note] = summary.notes
    build_site(db, tmp_path / "site", figures=False)
    html = (tmp_path / "site" / "runs" / run_dir_name(summary.run_id) / "index.html").read_text(encoding="utf-8")
    assert _notes(html) == [note]


def test_a_study_page_shows_a_zipped_axis_of_many_flows_as_one_column(tmp_path):
    from bufferlab.study.execute import run_sweep
    from bufferlab.study.executors import SerialExecutor
    from bufferlab.study.sweep import Sweep

    base = textwrap.dedent(SMALL_DUMBBELL).replace("flows = 2\n", "").replace('rtt = "20ms"\n', "")
    (tmp_path / "base.toml").write_text(base + '[[flows]]\nrtt = "20ms"\n[[flows]]\nrtt = "20ms"\n', encoding="utf-8")
    sweep = Sweep.from_dict({"name": "rtts", "base": str(tmp_path / "base.toml"), "seeds": 1, "axes": [
        {"zip": [{"key": "flows[0].rtt", "values": ["20ms", "60ms"]}, {"key": "flows[1].rtt", "values": ["20ms", "60ms"]}]}]})
    db = tmp_path / "store.duckdb"
    run_sweep(sweep, db, SerialExecutor())
    build_site(db, tmp_path / "site", figures=False)
    html = (tmp_path / "site" / "studies" / study_dir_name("rtts") / "index.html").read_text(encoding="utf-8")
    assert "<dd>flows[0].rtt (+1 equal)</dd>" in html
    assert html.count("<th>flows[0].rtt (+1 equal)</th>") == 2 and "flows[1].rtt" not in html  # points, runs


def test_a_second_build_rewrites_only_what_changed(store, tmp_path):
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    again = build_site(store["db"], store["out"])
    assert again.rebuilt == []
    db = tmp_path / "copy.duckdb"
    db.write_bytes(store["db"].read_bytes())
    out = tmp_path / "site"
    build_site(db, out, figures=False)
    new = run(Scenario.from_toml(store["spec"]).with_seed(11).with_overrides({"topology.queue": "12p"}), db).run_id
    assert build_site(db, out, figures=False).rebuilt == [f"runs/{run_dir_name(new)}"]


def test_a_build_opens_the_store_about_once_per_page(store, tmp_path, store_opens):
    # A page's queries share one connection (`Results.one_connection`): a run's page makes about
    # ten queries, and each open of the store costs time.
    report = build_site(store["db"], tmp_path / "site", figures=False)
    pages = report.runs + report.studies + report.reproductions
    assert pages == 5 and len(report.rebuilt) == pages
    # The store's schema check, the lists of runs and studies, then one per page.
    assert len(store_opens) == 2 + pages


@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_every_file_and_folder_of_a_report_gets_the_modes_its_umask_leaves(store, tmp_path, umask, file_mode,
                                                                           folder_mode):
    # A web server running as another user must be able to read the report: pages, figures, specs
    # and assets get what `open()` and `mkdir` give (0666 and 0777 less the umask), not 0600.
    previous = os.umask(umask)
    try:
        build_site(store["db"], tmp_path / "site", figures=umask == 0o022)
    finally:
        os.umask(previous)
    written = list((tmp_path / "site").rglob("*"))
    assert any(p.name.startswith("sweep-") for p in written) == (umask == 0o022)   # figures, once
    modes = {p.relative_to(tmp_path): stat.S_IMODE(p.stat().st_mode) for p in written}
    assert {p: m for p, m in modes.items() if (tmp_path / p).is_file() and m != file_mode} == {}
    assert {p: m for p, m in modes.items() if (tmp_path / p).is_dir() and m != folder_mode} == {}
    assert not [p for p in written if p.name.startswith(".tmp-")]       # nothing left aside


def test_report_command_writes_the_site_and_rejects_a_missing_store(store, tmp_path):
    done = bufferlab("report", str(store["db"]), "-o", str(tmp_path / "site"), "--no-figures")
    assert done.returncode == 0, done.stderr
    assert "4 run(s), 1 study(ies)" in done.stdout and (tmp_path / "site" / "index.html").is_file()
    missing = bufferlab("report", str(tmp_path / "nothing.duckdb"), "-o", str(tmp_path / "x"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: DB: no store at") and missing.stderr.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_report_and_serve_take_the_store_by_db_as_every_other_command_does(store, tmp_path):
    done = bufferlab("report", "--db", str(store["db"]), "-o", str(tmp_path / "site"), "--no-figures")
    assert done.returncode == 0, done.stderr
    assert "4 run(s), 1 study(ies)" in done.stdout and (tmp_path / "site" / "index.html").is_file()
    # The same store both ways is the store; two stores are one line naming --db, and nothing is written.
    same = bufferlab("report", str(store["db"]), "--db", str(store["db"]), "-o", str(tmp_path / "same"), "--no-figures")
    assert same.returncode == 0, same.stderr
    for command in ("report", "serve"):
        twice = bufferlab(command, str(tmp_path / "other.duckdb"), "--db", str(store["db"]), "-o", str(tmp_path / "y"))
        assert twice.returncode == 2 and twice.stderr.count("\n") == 1
        assert twice.stderr.startswith("error: --db: the store is given twice, as DB (")
        missing = bufferlab(command, "--db", str(tmp_path / "nothing.duckdb"), "-o", str(tmp_path / "y"))
        assert missing.returncode == 2 and missing.stderr.startswith("error: --db: no store at")
    assert not (tmp_path / "y").exists()


# --- the server ---------------------------------------------------------------------------------------

@pytest.fixture
def server(store):
    srv = make_server(store["out"], 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _get(srv, path: str) -> tuple[int, bytes]:
    con = http.client.HTTPConnection(LOOPBACK, srv.server_address[1], timeout=10)
    try:
        con.request("GET", path)
        response = con.getresponse()
        return response.status, response.read()
    finally:
        con.close()


def test_server_binds_the_loopback_address_only(server):
    assert server.socket.getsockname()[0] == "127.0.0.1"


@pytest.mark.parametrize("path", [
    "/../", "/..", "/%2e%2e/", "/%2E%2E/etc/passwd", "/..%2f", "/..%2F..%2Fetc%2Fpasswd", "/%2e%2e%2f%2e%2e%2f",
    "/runs/../../report.duckdb", "/assets/%2e%2e/%2e%2e/store.duckdb", "/..%5c..%5cstore.duckdb",
    "//etc/passwd", "/%2fetc%2fpasswd", "/index.html%00.png", "/%252e%252e/", "/no-such-page.html",
])
def test_server_answers_404_outside_the_report_folder(server, path):
    status, body = _get(server, path)
    assert status == 404, path
    assert b"root:" not in body


def test_server_does_not_follow_a_link_out_of_the_folder(server, store, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret", encoding="utf-8")
    link = store["out"] / "escape.txt"
    link.symlink_to(secret)
    try:
        assert _get(server, "/escape.txt")[0] == 404
        assert resolve_inside(store["out"], "/escape.txt") is None
    finally:
        link.unlink()


def test_server_serves_the_files_inside(server, store):
    status, body = _get(server, "/")
    assert status == 200 and b"<h1>Results in" in body
    run_page = f"/runs/{run_dir_name(store['plain'])}/index.html"
    assert _get(server, run_page)[0] == 200
    assert _get(server, f"/runs/{run_dir_name(store['plain'])}/spec.toml?x=1")[0] == 200
    assert _get(server, f"/runs/{run_dir_name(store['plain'])}")[0] == 301


def test_watcher_rebuilds_when_the_store_gains_a_run(store, tmp_path):
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    db = tmp_path / "copy.duckdb"
    db.write_bytes(store["db"].read_bytes())
    calls = []
    watcher = Watcher(db, lambda: calls.append(1))
    assert watcher.check() is False and calls == []
    run(Scenario.from_toml(store["spec"]).with_seed(12).with_overrides({"topology.queue": "13p"}), db)
    assert watcher.check() is True and calls == [1]
    assert watcher.check() is False


def test_serve_command_prints_its_loopback_address_and_stops_on_ctrl_c(store, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "bufferlab", "serve", str(store["db"]), "--port", "0",
                             "-o", str(tmp_path / "site"), "--no-figures"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line + proc.stderr.read() if proc.poll() is not None else line
        con = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=10)
        con.request("GET", "/index.html")
        assert con.getresponse().status == 200
        con.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in out


def test_a_reproduction_page_shows_the_seeds_observations_next_to_the_measured_ones(tmp_path):
    from html import unescape

    from bufferlab.experiments.base import reproduce
    from bufferlab.experiments.registry import reproductions
    from bufferlab.study.executors import make_executor

    db = tmp_path / "store.duckdb"
    done = reproduce(reproductions()["quic_sizing"], db, tmp_path / "summary", quick=True,
                     executor_factory=lambda: make_executor(1, None))
    assert done.observations
    build_site(db, tmp_path / "site", figures=False)
    page = tmp_path / "site" / "reproductions" / "quic_sizing-quick" / "index.html"
    html = page.read_text(encoding="utf-8")
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>"
                      r"<td class=\"verdict [\w-]+\">(.*?)</td>", html)
    cells = [tuple(unescape(c) for c in r) for r in rows]
    assert [c[:4] for c in cells] == [(o.key, o.claim, o.seed_value, o.measured) for o in done.observations]
    # Every judged observation states its tolerance.
    assert [c[4] for c in cells] == [o.tolerance if o.holds is not None else "" for o in done.observations]
    assert [c[5] for c in cells] == [o.verdict + (f" ({o.difference})" if o.difference else "")
                                     for o in done.observations]
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert 'href="reproductions/quic_sizing-quick/index.html"' in index
    for study in done.studies.values():   # its studies link back to it
        assert "reproductions/quic_sizing-quick/index.html" in (
            tmp_path / "site" / "studies" / study_dir_name(study) / "index.html").read_text(encoding="utf-8")
