"""The command fuzzer (tests/cli/fuzz_commands.py) in the test suite: every command's options and
arguments, not only specs, drawn from valid, boundary and wrong values, through the real command in
this process, each example in a fresh copy of a small world. At least 300 invocations in all,
with a fixed budget so that `make test` stays quick; `make fuzz` sets BUFFERLAB_FUZZ_EXAMPLES for a
longer search on fresh seeds.

Every invocation exits 0, or 2 with one line ``error: ...``; a refused one leaves every file as it
was and adds none. Where a command has --max-memory, the fuzzer passes a budget (or a wrong one);
a subset of the simulating commands also runs in a subprocess under an address-space limit.
`serve` is fuzzed up to its server: the server is made (its port bound, or refused) and stopped
at once, as Ctrl-C would stop it.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_commands import (BYTES, FIGURES, FOLDERS, INPUTS, LONG, MEMORY, NUMBERS, OUTPUTS, RATES, SETS, STORES,
                           STRINGS, STUDY, TIMES, UNICODE, Part, argument, build_world, check_invocation, command,
                           copy_world, flag, option, pool, repeated, snapshot)

pytestmark = pytest.mark.engine

SCALE = int(os.environ.get("BUFFERLAB_FUZZ_EXAMPLES") or "1")
MEMORY_LIMIT = 3 * 2**30

# Derandomised: the same examples on every CI run (make fuzz explores with fresh seeds). The world
# is a module fixture copied afresh for each example, so the fixture's scope is no hazard.
FIXED = settings(deadline=None, derandomize=SCALE == 1, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                        HealthCheck.data_too_large])


def examples(n: int) -> settings:
    return settings(FIXED, max_examples=n * SCALE)


class World:
    """The template world and a fresh copy of it per example."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.template = root / "template"
        self.run_id = build_world(self.template)
        self.count = 0

    def fresh(self) -> Path:
        self.count += 1
        return copy_world(self.template, self.root / f"w{self.count}")

    def run(self, args: list[str]) -> tuple[int, str, str]:
        world = self.fresh()
        try:
            return check_invocation(args, world)
        finally:
            (world / "readonly").chmod(0o755)
            shutil.rmtree(world, ignore_errors=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("fuzz_world"))
    yield made
    (made.template / "readonly").chmod(0o755)


def runs(world: World) -> Part:
    """A RUN argument: the stored run (whole or a prefix), or a mistake."""
    return argument([world.run_id, world.run_id[:12]],
                    pool([world.run_id[:1], world.run_id.upper(), "0", "nope", ""], STRINGS))


# Right values of the common options; the wrong ones are drawn from the pools (fuzz_commands).
GOOD_INPUTS = ["spec.toml", "spec.toml", "scenarios/dumbbell.toml", "scenarios/tree_mice.toml",
               "scenarios/splitbuff_fig1.toml"]
GOOD_STORES = ["stored.duckdb", "new.duckdb", "new/deeper/store.duckdb", UNICODE + ".duckdb"]
GOOD_OUTPUTS = ["out.csv", "new/deeper/out.csv", UNICODE + ".csv"]
GOOD_FIGURES = ["fig.svg", "fig.png", "new/fig.pdf"]
GOOD_FOLDERS = ["site", "new/deeper/site", UNICODE]
GOOD_SETS = ["topology.queue=5p", "flows[0].cca=reno", "seed=4", "flow_defaults.cca=bbr"]
GOOD_WORKERS = ["1"]
WRONG_WORKERS = ["0", "-1", "nan", "1025", "x", "", "1.5"]


def db_option(valid: list[str] = GOOD_STORES) -> Part:
    return option("--db", valid, pool(STORES))


def scenario_parts() -> list[Part]:
    return [repeated("--set", GOOD_SETS, pool(SETS)), option("--max-memory", ["512MB"], pool(MEMORY), always=True)]


# --- the top level --------------------------------------------------------------------------------

COMMANDS = ["run", "check", "ccperf", "results", "size", "advise", "sweep", "reproduce", "plot", "report", "serve"]
RESULTS = ["list", "show", "query", "export", "monitor", "csv", "pcap", "study"]


@st.composite
def top_level(draw: st.DrawFn) -> list[str]:
    first = draw(st.sampled_from([[], ["--version"], ["--help"], ["-h"], ["--nope"], ["-x"], ["--version=1"],
                                  *[[c] for c in COMMANDS], ["results", draw(st.sampled_from(RESULTS))],
                                  ["Run"], [UNICODE], [LONG], [""], ["results", "nope"]]))
    rest = draw(st.lists(st.sampled_from(["--help", "--nope", "-", "--", "--db", "x", "", "--json", UNICODE]),
                         max_size=2))
    return [*first, *rest]


@examples(30)
@given(args=top_level())
def test_the_command_group_exits_0_or_2_with_one_line(world: World, args: list[str]) -> None:
    world.run(args)


# --- run and check --------------------------------------------------------------------------------

def run_args(world: World) -> st.SearchStrategy[list[str]]:
    return command(["run"], argument(GOOD_INPUTS, pool(INPUTS)), option("--set", ["duration=0.2s"], always=True),
                   db_option(), flag("--force"), flag("--json"),
                   option("--seed", ["0", "7", "18446744073709551615"], pool(NUMBERS)),
                   option("--study", ["s", UNICODE, STUDY], pool(STRINGS)), flag("--metrics"), *scenario_parts())


@examples(30)
@given(data=st.data())
def test_run_exits_0_or_2_with_one_line_and_stores_nothing_when_refused(world: World, data: st.DataObject) -> None:
    world.run(data.draw(run_args(world)))


@examples(30)
@given(args=command(["check"], argument(GOOD_INPUTS, pool(INPUTS)), option("--set", ["duration=0.2s"], always=True),
                    *scenario_parts()))
def test_check_exits_0_or_2_with_one_line(world: World, args: list[str]) -> None:
    world.run(args)


# --- ccperf ---------------------------------------------------------------------------------------

LISTS = ["", ",", " , ", "a,,b"]
# Each flag: (right values, wrong values); the first three are required.
CCPERF: dict[str, tuple[list[str], list[str]]] = {
    "--bw": (["10Mbps", "1Gbps"], RATES), "--rtts": (["20ms,20ms", "20ms"], ["20ms,,20ms", "-1ms,20ms", "nanms", *LISTS]),
    "--qlen": (["10p", "100KB"], ["0p", "-1p", "1e400p", "nanp", "10", ""]),
    "--qdisc": (["FifoQueueDisc"], ["RedQueueDisc", ""]), "--loss": (["0.0", "0.01"], ["1.5", "-0.1", "nan", "inf", ""]),
    "--algs": (["TcpNewReno,TcpCubic", "TcpBbr"], ["TcpFoo", *LISTS]),
    "--recoveries": (["TcpPrrRecovery", "TcpClassicRecovery,TcpPrrRecovery"], ["TcpNope", *LISTS]),
    "--protocols": (["TCP", "TCP,TCP"], ["UDP", *LISTS]), "--sources": (["src_0,src_1"], ["a,a", "dst_0", *LISTS]),
    "--destinations": (["dst_0,dst_1"], ["src_0", *LISTS]), "--start-times": (["0s,10ms"], ["-1s", "1e39s", *LISTS]),
    "--stop-times": (["0.2s,0.2s"], ["0s", "-1s", "nans", *LISTS]),
    "--traffic-models": (["Greedy(bytes=0)", "Greedy(bytes=100000),Greedy(bytes=0)"],
                         ["Greedy(bytes=-1)", "Greedy(bytes=99999999999999999999999)", "Greedy(", "Poisson()", *LISTS]),
    "--stop-time": (["0.2s"], ["0s", "-1s", "nans", ""]), "--seed": (["1", "18446744073709551615"], NUMBERS),
    "--sample-interval": (["50ms"], ["0s", "1ns", "-1ms", "nanms", ""]),
    "--experiment-name": (["e", UNICODE], STRINGS), "--db-path": (["x.db"], STRINGS),
    "--parameters": (["p=1"], STRINGS), "--aut": (["TcpCubic"], STRINGS),
}
REQUIRED = ("--bw", "--rtts", "--qlen", "--stop-time")


def ccperf_args() -> st.SearchStrategy[list[str]]:
    flags = [option(name, valid, pool(wrong), always=name in REQUIRED) for name, (valid, wrong) in CCPERF.items()]
    return command(["ccperf"], option("--set", ["duration=0.2s"], always=True), *flags, db_option(), flag("--force"),
                   flag("--json"), option("--study", ["s"], pool(STRINGS)), *scenario_parts())


@examples(30)
@given(args=ccperf_args())
def test_ccperf_exits_0_or_2_with_one_line(world: World, args: list[str]) -> None:
    world.run(args)


# --- results --------------------------------------------------------------------------------------

TABLES = ["flow_metrics", "link_metrics", "network_metrics", "runs", "flows", "channels", "flow_timeseries",
          "channel_timeseries", "captures", "studies"]
GOOD_QUERIES = ["SELECT count(*) AS n FROM runs", "SELECT * FROM flows", "SELECT path FROM flows",
                "SELECT 'nan'::DOUBLE AS x, 'inf'::DOUBLE AS y", "SELECT [1, 2] AS l, {'a': 1} AS s",
                "SELECT NULL AS n", "SELECT DATE '2024-01-01' AS d", "SELECT repeat('é', 10) AS e", "PRAGMA version"]
QUERIES = ["", " ", "SELECT 1/0", "DROP TABLE runs", "DELETE FROM runs", "CREATE TABLE t (a INT)",
           "COPY runs TO 'copy.csv'", "ATTACH 'other.duckdb' AS o", "SELECT * FROM read_csv('spec.toml')",
           "INSTALL httpfs", "LOAD httpfs", "SELECT 1; SELECT 2", "SELECT", "SET threads = 1", "SELECT * FROM nope",
           "EXPORT DATABASE 'dump'", "CHECKPOINT", "SELECT * FROM glob('*')", "CALL pragma_database_list()"]
LINKS = ["nope", "", "btl_forward", UNICODE]
FORMATS = ["table", "csv", "json"]


def results_args(world: World, sub: str) -> st.SearchStrategy[list[str]]:
    head = ["results", sub]
    db = db_option(["stored.duckdb"] * 3 + GOOD_STORES)
    capture = [runs(world), db, option("--link", ["btl"], pool(LINKS), always=True),
               option("--direction", ["forward", "backward"], pool(["both"])),
               option("-o", GOOD_OUTPUTS, pool(OUTPUTS), always=True)]
    return {
        "list": command(head, db, option("--study", [STUDY, "nope"], pool(STRINGS))),
        "show": command(head, runs(world), db, flag("--all-links"), flag("--json")),
        "query": command(head, argument(GOOD_QUERIES, pool(QUERIES, STRINGS)), db,
                         option("--format", FORMATS, pool(["xml"]))),
        "export": command(head, Part(st.one_of(st.just([]), runs(world).valid), runs(world).wrong, positional=True),
                          db, option("--table", TABLES, pool(["nope", "", "runs; DROP TABLE runs", "meta"]), always=True),
                          option("--format", ["parquet", "csv"], pool(["xlsx"])),
                          option("--output", GOOD_OUTPUTS + ["out.parquet"], pool(OUTPUTS), always=True)),
        "monitor": command(head, runs(world), db, option("--link", ["btl"], pool(LINKS), always=True),
                           option("--direction", ["forward", "backward"], pool(["up"])),
                           option("--split", ["100KB", "1B"], pool(BYTES)), flag("--json")),
        "csv": command(head, *capture, flag("--no-header")),
        "pcap": command(head, *capture, flag("--full-payload")),
        "study": command(head, argument([STUDY], pool(["nope"], STRINGS)), db,
                         option("--metrics", ["mean_throughput_l4", "utilization_l1,loss_rate_l4"],
                                pool(["nope", "utilization_l1,,x"], STRINGS)),
                         option("--format", FORMATS, pool(["xml"]))),
    }[sub]


@examples(60)
@given(data=st.data())
def test_results_commands_exit_0_or_2_with_one_line_and_change_no_store(world: World, data: st.DataObject) -> None:
    sub = data.draw(st.sampled_from(RESULTS))
    world.run(data.draw(results_args(world, sub)))


# --- size and advise ------------------------------------------------------------------------------

@examples(30)
@given(args=command(["size"], option("--rate", ["100Mbps", "1Gbps"], pool(RATES), always=True),
                    repeated("--rtt", ["10ms,990ms", "20ms", "1ns"], pool(TIMES, ["10ms,,990ms", ","]), least=1),
                    option("--flows", ["1", "800"], pool(NUMBERS)), option("--packet", ["1500B", "1KB"], pool(BYTES)),
                    option("--tp", ["1ms"], pool(TIMES)), option("--ack", ["58B"], pool(BYTES)),
                    option("--sub-buffers", ["2", "3"], pool(NUMBERS)),
                    option("--queue", ["fifo", "codel", "fq_codel", "pie", "red"], pool(["tbf", "CoDel", ""])),
                    flag("--json")))
def test_size_exits_0_or_2_with_one_line(world: World, args: list[str]) -> None:
    world.run(args)


GOOD_TARGETS = ["utilisation>=0.5", "p99_delay<=50ms", "loss<=1%", "delay<=20ms"]
TARGETS = ["", "x", "utilisation>=nan", "delay<=-1ms", ">=", "utilisation>=2", "utilisation<=", "loss<=200%",
           "nope>=1", "utilisation=>0.9", "delay<=infms", "utilisation>=0.9>=1"]


@st.composite
def advise_args(draw: st.DrawFn) -> list[str]:
    source = (option("--rate", ["10Mbps"], pool(RATES), always=True) if draw(st.booleans()) else
              option("--scenario", ["spec.toml"], pool(INPUTS), always=True))
    return draw(command(["advise"], source, option("--queue-key", ["topology.queue"], pool(["nope", "flows[0].cca"])),
                        option("--flows", ["1", "3"], pool(NUMBERS)),
                        option("--rtt", ["20ms", "20ms..40ms"], pool(TIMES, ["40ms..20ms", "..", "1ms..", "20ms..nanms"])),
                        option("--cca", ["newreno", "cubic,bbr"], pool(["foo", ",", "cubic,,bbr"])),
                        option("--mice", ["0", "5"], pool(NUMBERS)), option("--mice-size", ["20kB"], pool(BYTES)),
                        option("--queue", ["fifo", "codel", "pie"], pool(["tbf", "splitbuff", ""])),
                        repeated("--target", GOOD_TARGETS, pool(TARGETS), least=1),
                        option("--seeds", ["1"], pool(["0", "1001", "nan", "-1", "1.5", ""]), always=True),
                        option("--duration", ["0.2s", "0.1s"], pool(["0s", "-1s", "nans", "", "1ns"]), always=True),
                        option("--warmup", ["0s", "50ms"], pool(TIMES)),
                        option("--resolution", ["0.5", "0.99"], pool(NUMBERS)),
                        option("--max-bdp", ["2", "0.5"], pool(["0", "-1", "nan", "1e7", "inf", ""]), always=True),
                        option("--workers", GOOD_WORKERS, pool(WRONG_WORKERS), always=True),
                        db_option(), option("--study", ["s"], pool(STRINGS)), flag("--json"),
                        option("-o", GOOD_FIGURES, pool(FIGURES))))


@examples(20)
@given(args=advise_args())
def test_advise_exits_0_or_2_with_one_line_and_stores_nothing_when_refused(world: World, args: list[str]) -> None:
    world.run(args)


# --- sweep and reproduce --------------------------------------------------------------------------

DASK = ["", "nope", "http://localhost:8786", "local:", "tcp:/x"]  # never one that starts a cluster or connects


def sweep_args() -> st.SearchStrategy[list[str]]:
    return command(["sweep"], argument(["sweep.toml"], pool(["bad_sweep.toml", *INPUTS])), db_option(),
                   option("--workers", GOOD_WORKERS, pool(WRONG_WORKERS), always=True),
                   Part(st.just([]), st.sampled_from(DASK).map(lambda v: ["--dask", v])),
                   option("--max-memory", ["512MB"], pool(MEMORY), always=True), flag("--json"))


@examples(20)
@given(args=sweep_args())
def test_sweep_exits_0_or_2_with_one_line_and_stores_nothing_when_refused(world: World, args: list[str]) -> None:
    world.run(args)


REPRODUCTIONS = ["dhamdhere2006", "ccperf", "splitbuff", "quic_sizing", "barman2004", "appenzeller2004",
                 "bufferbloat", "spang2021", "enachescu2006", "ware2019", "l4s"]


@st.composite
def reproduce_args(draw: st.DrawFn) -> list[str]:
    """`reproduce`: --list, or a name that is not a reproduction, or a real one with an option that
    refuses it (never a reproduction run: even --quick takes too long for a fuzzer)."""
    listing = draw(st.booleans())
    name = draw(st.one_of(st.none(), st.sampled_from(REPRODUCTIONS), pool(["nope", "Ccperf"])))
    parts = [flag("--quick"), db_option(), Part(st.just([]), st.sampled_from(DASK).map(lambda v: ["--dask", v]))]
    if listing:
        parts += [flag("--list"), option("--workers", GOOD_WORKERS, pool(WRONG_WORKERS)),
                  option("--out", GOOD_FOLDERS, pool(FOLDERS))]
    elif name in REPRODUCTIONS:
        parts.append(Part(st.one_of(option("--workers", WRONG_WORKERS, always=True).valid,
                                    option("--out", ["spec.toml", "not_a_dir/out", "/proc/bufferlab-fuzz/out"],
                                           always=True).valid)))
    args = draw(command(["reproduce"], *([] if name is None else [argument([name])]), *parts))
    return [*args, "--list"] if listing and "--list" not in args else args


@examples(15)
@given(args=reproduce_args())
def test_reproduce_list_and_refusals_exit_0_or_2_with_one_line(world: World, args: list[str]) -> None:
    world.run(args)


# --- plot, report, serve --------------------------------------------------------------------------

KINDS = ["timeseries", "operating-point", "inflight", "ecdf", "plane", "cdf", "sweep", "cwnd"]


@st.composite
def plot_args(draw: st.DrawFn, world: World) -> list[str]:
    kind = draw(st.sampled_from(KINDS))
    target = argument([STUDY]) if kind == "sweep" else runs(world)
    return draw(command(["plot"], argument([kind], pool(["nope", "Timeseries"])), target,
                        db_option(["stored.duckdb"]), option("-o", GOOD_FIGURES, pool(FIGURES), always=True),
                        repeated("--flows", ["flow_0", "f*"], pool(["nope", *LISTS])),
                        repeated("--links", ["btl"], pool(["nope", *LISTS])),
                        option("--from", ["0s", "50ms"], pool(TIMES)), option("--to", ["150ms", "1s"], pool(TIMES)),
                        repeated("--quantities", ["cwnd", "queue,drops"], pool(["nope", *LISTS])),
                        option("--source", ["monitor", "flows"], pool(["nope"])),
                        option("--link", ["btl"], pool(LINKS)),
                        option("--direction", ["forward", "backward"], pool(["up"])),
                        option("--split", ["100KB"], pool(BYTES)),
                        option("--x", ["topology.queue"], pool(["nope", ""])),
                        option("--metric", ["mean_throughput_l4", "utilization_l1"], pool(["nope", ""])),
                        option("--by", ["seed"], pool(["topology.queue", "nope", ""])),
                        option("--size", ["7x5", "1x1", "7X5"], pool(["0x0", "nanxnan", "1e9x1", "x", "7x5x3",
                                                                      "100x100", "-7x5"])),
                        option("--dpi", ["72", "1200"], pool(NUMBERS, ["9", "1201"]))))


@examples(15)
@given(data=st.data())
def test_plot_exits_0_or_2_with_one_line_and_writes_no_figure_when_refused(world: World, data: st.DataObject) -> None:
    world.run(data.draw(plot_args(world)))


def site_args(head: str, *extra: Part) -> st.SearchStrategy[list[str]]:
    # Figures cost seconds a site: one example in four draws them.
    no_figures = Part(st.sampled_from([["--no-figures"]] * 3 + [[]]))
    return command([head], argument(["stored.duckdb"], pool(STORES)), no_figures,
                   option("-o", GOOD_FOLDERS, pool(FOLDERS), always=True), *extra)


@examples(8)
@given(args=site_args("report", flag("--force")))
def test_report_exits_0_or_2_with_one_line_and_writes_no_site_when_refused(world: World, args: list[str]) -> None:
    world.run(args)


@pytest.fixture
def serve_stops_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` makes its server (the port bound, or refused: the real `make_server`), then is
    stopped as Ctrl-C stops it, instead of serving forever."""
    from bufferlab.report import serve

    real = serve.make_server

    def make_server(root: Path, port: int) -> Any:
        server = real(root, port)

        def interrupted(*_: Any, **__: Any) -> None:
            raise KeyboardInterrupt

        server.serve_forever = interrupted
        return server

    monkeypatch.setattr(serve, "make_server", make_server)


@settings(examples(8), suppress_health_check=[*FIXED.suppress_health_check, HealthCheck.function_scoped_fixture])
@given(args=site_args("serve", option("--port", ["0"], pool(["-1", "65536", "nan", "1e9", "x", ""]), always=True),
                      option("--interval", ["0.1", "3600"], pool(NUMBERS, ["0.09", "3601"]))))
def test_serve_validates_its_options_before_serving(world: World, serve_stops_at_once: None, args: list[str]) -> None:
    world.run(args)


# --- under a memory limit -------------------------------------------------------------------------

def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@examples(8)
@given(data=st.data())
def test_simulating_commands_under_a_memory_limit_exit_0_or_2(world: World, data: st.DataObject) -> None:
    """`run`, `ccperf` and `sweep` as the user starts them, in a process of their own under an
    address-space limit, and without --max-memory: the default budget (half the machine's memory)
    alone must refuse what would not fit, not abort the interpreter."""
    kind = data.draw(st.sampled_from(["run", "ccperf", "sweep"]))
    args = data.draw({"run": run_args(world), "ccperf": ccperf_args(), "sweep": sweep_args()}[kind])
    args = [a for i, a in enumerate(args) if a != "--max-memory" and (i == 0 or args[i - 1] != "--max-memory")]
    folder = world.fresh()
    try:
        before = snapshot(folder)
        done = subprocess.run([sys.executable, "-m", "bufferlab", *args], capture_output=True, text=True, timeout=300,
                              check=False, preexec_fn=_limited, cwd=folder,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "python")})
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert done.returncode in (0, 2), (args, done.returncode, done.stderr[-2000:])
        if done.returncode == 2:
            lines = done.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), (args, done.stderr)
            assert snapshot(folder) == before, (args, done.stderr)
    finally:
        (folder / "readonly").chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
