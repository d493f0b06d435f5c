"""The ccperf command-line form (seed 001) builds the dumbbell its flags describe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bufferlab.spec.ccperf import parse_traffic_model, scenario_from_ccperf, split_list
from bufferlab.errors import SpecError
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_tcp, link_queue
from conftest import SCENARIOS, bufferlab

K = 5
# Seed 001, experiment #11, verbatim (after the ns-3 program name).
SEED_COMMAND = [
    "--experiment-name=shallow_buffers", "--db-path=benchmark_TcpNewReno.db",
    "--parameters={aut:TcpNewReno,k:5,qlen:10p}", "--aut=TcpNewReno", "--stop-time=15s", "--seed=42",
    "--qlen=10p", "--bw=80Mbps", "--loss=0.0", "--qdisc=FifoQueueDisc",
    "--rtts=15ms,15ms,15ms,15ms,15ms", "--sources=src_0,src_1,src_2,src_3,src_4",
    "--destinations=dst_0,dst_1,dst_2,dst_3,dst_4", "--protocols=TCP,TCP,TCP,TCP,TCP",
    "--algs=TcpNewReno,TcpNewReno,TcpNewReno,TcpNewReno,TcpNewReno",
    "--recoveries=TcpPrrRecovery,TcpPrrRecovery,TcpPrrRecovery,TcpPrrRecovery,TcpPrrRecovery",
    "--start-times=0s,0s,0s,0s,0s", "--stop-times=15s,15s,15s,15s,15s",
    "--traffic-models=Greedy(bytes=0),Greedy(bytes=0),Greedy(bytes=0),Greedy(bytes=0),Greedy(bytes=0)",
]


def flags(argv: list[str]) -> dict[str, str]:
    out = {}
    for arg in argv:
        key, _, value = arg.removeprefix("--").partition("=")
        out[key] = value
    return out


def test_split_list_respects_parentheses() -> None:
    assert split_list("Greedy(bytes=0),Greedy(bytes=10)") == ["Greedy(bytes=0)", "Greedy(bytes=10)"]
    assert split_list("15ms, 20ms") == ["15ms", "20ms"]


def test_greedy_zero_bytes_is_greedy_and_n_bytes_is_finite() -> None:
    assert parse_traffic_model("Greedy(bytes=0)") == "greedy"
    assert parse_traffic_model("Greedy(bytes=1500000)") == {"kind": "finite", "bytes": 1_500_000}
    with pytest.raises(ValueError, match="unknown traffic model"):
        parse_traffic_model("Poisson(rate=3)")


def test_seed_command_builds_the_shallow_buffers_dumbbell() -> None:
    scenario = scenario_from_ccperf(flags(SEED_COMMAND))
    engine = scenario.to_engine()
    assert engine["seed"] == 42 and engine["duration"] == 15_000_000_000
    assert len(engine["flows"]) == K
    btl = engine["links"][0]
    assert btl["name"] == "btl" and btl["rate"] == 80_000_000 and btl["loss"] == 0.0
    assert link_queue(engine, btl, "forward")["limit_packets"] == 10
    for i, flow in enumerate(engine["flows"]):
        assert engine["nodes"][flow["src"]]["name"] == f"src_{i}"
        assert engine["nodes"][flow["dst"]]["name"] == f"dst_{i}"
        assert flow["cca"] == "reno" and flow_tcp(engine, flow)["recovery"] == "prr"
        assert flow["traffic"] == {"kind": "greedy"}
        assert (flow["start"], flow["stop"]) == (0, 15_000_000_000)
    assert scenario.meta["experiment-name"] == "shallow_buffers"
    assert scenario.meta["db-path"] == "benchmark_TcpNewReno.db"


def test_the_flows_are_ns3_sockets_each_reducing_and_growing_as_its_ns3_class() -> None:
    scenario = scenario_from_ccperf({"bw": "48Mbps", "rtts": "15ms,15ms,15ms", "qlen": "10p", "stop-time": "5s",
                                     "algs": "TcpNewReno,TcpCubic,TcpBbrV3"})
    engine = scenario.to_engine()
    tcp = [flow_tcp(engine, flow) for flow in engine["flows"]]
    for options in tcp:  # ns-3 3.44's socket: no RACK, RFC 6298's timer, 1 s floor; an ACK per segment
        assert (options["rack"], options["rto"], options["min_rto"], options["initial_rto"],
                options["ack_every"]) == (False, "rfc6298", 10**9, 10**9, 1)
    # TcpNewReno halves the pipe and grows per ACK; TcpCubic takes 0.7 of cwnd; ns-3 has no BBRv3,
    # which keeps the engine's own basis and growth.
    assert [(o["ssthresh_from"], o["ca_increase"]) for o in tcp] == [
        ("pipe", "per_ack"), ("cwnd", "bytes"), ("flight_size", "bytes")]


def test_a_set_assignment_changes_one_of_the_ns3_socket_options(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = bufferlab("ccperf", "--bw=16Mbps", "--rtts=15ms", "--qlen=10p", "--stop-time=1s",
                       "--set", "flow_defaults.tcp.ack_every=2", "--db", str(db), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    from bufferlab.store.reader import load

    with load(db) as res:
        engine = res.spec(res.runs["run_id"][0])
    assert flow_tcp(engine, engine["flows"][0])["ack_every"] == 2


def test_seed_command_and_shallow_buffers_toml_are_the_same_run() -> None:
    from_flags = scenario_from_ccperf(flags(SEED_COMMAND)).to_engine_json()
    from_toml = Scenario.from_toml(SCENARIOS / "shallow_buffers.toml").to_engine_json()
    assert from_flags == from_toml


def test_classic_recovery_finite_traffic_and_loss() -> None:
    scenario = scenario_from_ccperf({"bw": "16Mbps", "rtts": "20ms,60ms", "qlen": "100KB", "loss": "0.01",
                                     "recoveries": "TcpClassicRecovery,TcpPrrRecovery", "algs": "TcpReno,TcpNewReno",
                                     "traffic-models": "Greedy(bytes=0),Greedy(bytes=2000000)",
                                     "start-times": "0s,1s", "stop-time": "5s"})
    engine = scenario.to_engine()
    assert engine["links"][0]["loss"] == 0.01
    assert link_queue(engine, engine["links"][0], "forward")["limit_bytes"] == 100_000
    assert [flow_tcp(engine, f)["recovery"] for f in engine["flows"]] == ["classic", "prr"]
    assert engine["flows"][1]["traffic"] == {"kind": "finite", "bytes": 2_000_000}
    assert engine["flows"][1]["start"] == 1_000_000_000 and engine["flows"][1]["stop"] is None
    assert engine["seed"] == 1


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"algs": "TcpNewReno"}, "--algs: 1 value(s), but --rtts gives 2 flow(s)"),
        ({"stop-times": "1s,1s,1s"}, "--stop-times: 3 value(s), but --rtts gives 2 flow(s)"),
        ({"bw": "0Mbps"}, '--bw: zero or negative rate "0Mbps"'),
        ({"qlen": "0p"}, "--qlen: queue limit must be positive"),
        ({"algs": "TcpWestwood,TcpNewReno"}, '--algs: unknown controller "TcpWestwood"'),
        ({"recoveries": "TcpPrrRecovery,Fast"}, '--recoveries: unknown recovery "Fast"'),
        ({"traffic-models": "Greedy(bytes=0),Bulk"}, '--traffic-models: unknown traffic model "Bulk"'),
        ({"protocols": "TCP,QUIC"}, '--protocols: unsupported protocol "QUIC"'),
        ({"qdisc": "RedQueueDisc"}, '--qdisc: unsupported queue discipline "RedQueueDisc"'),
        ({"loss": "1.5"}, "--loss: probability must be in [0, 1)"),
        ({"seed": "-3"}, "--seed: not a seed"),
        ({"start-times": "0s,9s"}, "--start-times: flow 1 starts at 9s, not before --stop-time (5s)"),
        ({"sources": "a,a"}, '--sources: host name "a" is used twice'),
        ({"rtts": "15ms,,15ms"}, "--rtts: empty entry"),
    ],
)
def test_bad_flag_is_named(given: dict[str, str], expected: str) -> None:
    base = {"bw": "10Mbps", "rtts": "15ms,15ms", "qlen": "10p", "stop-time": "5s"}
    with pytest.raises(SpecError) as info:
        scenario_from_ccperf({**base, **given})
    assert str(info.value).startswith(expected)


def test_missing_required_flag() -> None:
    with pytest.raises(SpecError, match="^--qlen: missing required flag"):
        scenario_from_ccperf({"bw": "10Mbps", "rtts": "15ms"})


def test_seed_command_runs_as_is(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = bufferlab("ccperf", *SEED_COMMAND, "--db", str(db), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["seed"] == 42 and len(summary["flows"]) == K
    assert summary["bottleneck"]["channel"] == "btl_forward"
    assert sum(f["goodput_mbps"] for f in summary["flows"]) <= 80.0
    # --db-path is a label, not a file bufferlab writes.
    assert not (tmp_path / "benchmark_TcpNewReno.db").exists()


@pytest.mark.parametrize("flag", ["--frobnicate=1", "--bandwidth=80Mbps", "--rtt=15ms"])
def test_unknown_flag_exits_2_with_one_line(flag: str, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = bufferlab("ccperf", "--bw=80Mbps", "--rtts=15ms", "--qlen=10p", "--stop-time=1s", flag, "--db", str(db))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: {flag.split('=')[0]}: unknown flag"]
    assert not db.exists()


def test_unequal_lists_exit_2_naming_the_flag(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = bufferlab("ccperf", "--bw=80Mbps", "--rtts=15ms,15ms", "--qlen=10p", "--stop-time=1s",
                       "--start-times=0s", "--db", str(db))
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: --start-times: 1 value(s), but --rtts gives 2 flow(s)")
    assert not db.exists()
