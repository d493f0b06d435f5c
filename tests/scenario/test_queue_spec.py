"""Queue sizes by time and by rule in specs, resolved from the expanded topology, and
the queue kinds' spec forms."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from bufferlab import load
from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_quic, flow_tcp, link_queue
from conftest import REPO, bufferlab

MS = 1_000_000


def dumbbell(queue: Any, rtts: tuple[str, ...] = ("10ms", "990ms"), rate: str = "100Mbps",
             **topology: Any) -> dict[str, Any]:
    return {"duration": "1s", "topology": {"kind": "dumbbell", "bottleneck_rate": rate, "queue": queue,
                                           "bottleneck_delay": "1ms", **topology},
            "flows": [{"rtt": r} for r in rtts]}


def btl_queue(data: dict[str, Any]) -> dict[str, Any]:
    resolved = Scenario.from_dict(data).resolve()
    return link_queue(resolved.engine, resolved.engine["links"][0], "forward")


def test_a_queue_in_time_holds_that_long_at_the_link_rate():
    assert btl_queue(dumbbell("25ms")) == {"kind": "fifo", "limit_packets": None, "limit_bytes": 312_500}


@pytest.mark.parametrize("rule, packets", [
    ({"rule": "bdp"}, 6250 * 1000 // 1500 + 1),                  # mean RTT 500 ms: 4166.7 -> 4167
    ({"rule": "bdp", "rtt": "max"}, 8250),                      # 990 ms
    ({"rule": "bdp", "rtt": "harmonic"}, 165),                # 19.8 ms: exactly 165
    ({"rule": "bdp", "rtt": "120ms", "packet": "1kB"}, 1500),   # a given RTT and packet size
    ({"rule": "stanford"}, math.ceil(100e6 * 0.5 / 8 / 1500 / math.sqrt(2))),
    ({"rule": "stanford", "flows": 100}, math.ceil(100e6 * 0.5 / 8 / 1500 / 10)),
])
def test_a_rule_takes_the_rate_rtts_and_number_of_flows_of_the_link(rule, packets):
    assert btl_queue(dumbbell(rule)) == {"kind": "fifo", "limit_packets": packets, "limit_bytes": None}


def test_a_tree_rule_uses_each_sources_propagation_rtt():
    # Seed 000's tree: 2, 4 and 8 sources at RTTs of 34, 234 and 534 ms, one greedy flow each,
    # through the 50 Mb/s bottleneck.
    data = {"duration": "1s", "topology": {"kind": "tree", "queue": {"rule": "bdp"}},
            "generators": [{"kind": "persistent", "dst": "sink", "flows": 1}]}
    resolved = Scenario.from_dict(data).resolve()
    btl = resolved.engine["links"][resolved.bottleneck // 2]
    mean_rtt = (2 * 34 + 4 * 234 + 8 * 534) / 14 / 1000
    assert link_queue(resolved.engine, btl, "forward")["limit_packets"] == math.ceil(50e6 * mean_rtt / 8 / 1500)
    assert "bdp rule: 50Mbps x mean RTT" in resolved.queue_descriptions[resolved.bottleneck]


def test_resolved_size_is_in_the_summary_and_the_stored_spec(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('duration = "1s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "10Mbps"\n'
                    'queue = { rule = "bdp" }\nrtt = "60ms"\nflows = 2\n', encoding="utf-8")
    db = tmp_path / "r.duckdb"
    out = bufferlab("run", str(path), "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    # 10 Mb/s x 60 ms = 75 000 B = 50 packets of 1500 B.
    assert json.loads(out.stdout)["bottleneck"]["queue"] == "50p (bdp rule: 10Mbps x mean RTT 60ms, 1.5kB packets)"
    table = bufferlab("run", str(path), "--db", str(db))
    assert "queue: 50p (bdp rule" in table.stdout
    spec = bufferlab("results", "query", "SELECT spec_json FROM runs", "--db", str(db), "--format", "json")
    stored = json.loads(json.loads(spec.stdout)[0]["spec_json"])
    assert link_queue(stored, stored["links"][0], "forward")["limit_packets"] == 50


def test_spec_round_trip_keeps_rules_and_times():
    data = dumbbell({"rule": "stanford", "rtt": "max", "flows": 4}, reverse_queue="5ms")
    scenario = Scenario.from_dict(data)
    again = Scenario.from_dict(scenario.to_dict())
    assert again.to_engine() == scenario.to_engine()
    assert again.to_dict()["topology"]["queue"] == {"rule": "stanford", "rtt": "max", "flows": 4}
    assert again.to_dict()["topology"]["reverse_queue"] == "5ms"


def test_splitbuff_kinds_default_to_the_bdp_total_and_the_papers_estimator():
    q = btl_queue(dumbbell({"kind": "splitbuff", "sub_buffers": 3, "update_interval": "50ms"}))
    assert q == {"kind": "splitbuff", "limit_packets": 4167, "limit_bytes": None, "sub_buffers": 3,
                 "update_interval": 50 * MS, "alpha": 0.25, "quantum": 1500, "estimator": "paper",
                 "total": "estimated"}
    q = btl_queue(dumbbell({"kind": "blind_splitbuff", "limit": "6250p"}))
    assert q == {"kind": "blind_splitbuff", "limit_packets": 6250, "limit_bytes": None, "sub_buffers": 2,
                 "quantum": 1500}


def test_red_and_pie_reach_the_engine_under_the_users_keys():
    # A threshold in packets or bytes becomes <name>_packets or <name>_bytes, as a limit does.
    q = btl_queue(dumbbell({"kind": "red", "min_th": "5p", "max_th": "15p", "max_p": 0.1, "w_q": 0.002,
                            "gentle": True, "limit": "100p"}))
    assert q == {"kind": "red", "limit_packets": 100, "limit_bytes": None, "min_th_packets": 5, "min_th_bytes": None,
                 "max_th_packets": 15, "max_th_bytes": None, "max_p": 0.1, "w_q": 0.002, "gentle": True,
                 "byte_mode": False, "mean_packet": 1500, "adaptive": False, "target_delay": 5 * MS,
                 "interval": 500 * MS, "ecn": False}
    q = btl_queue(dumbbell({"kind": "red", "min_th": "7.5kB", "max_th": "30kB", "byte_mode": True, "limit": "150kB"}))
    assert (q["min_th_bytes"], q["max_th_bytes"], q["limit_bytes"], q["byte_mode"]) == (7500, 30000, 150_000, True)
    assert q["min_th_packets"] is None and q["w_q"] is None
    # "ared" is RED with adaptive = true and the paper's automatic thresholds and weight.
    q = btl_queue(dumbbell({"kind": "ared"}))
    assert (q["kind"], q["adaptive"], q["min_th_packets"], q["w_q"], q["limit_packets"]) == ("red", True, None, None, 1000)
    q = btl_queue(dumbbell({"kind": "pie", "target": "15ms", "t_update": "15ms", "alpha": 0.125, "beta": 1.25,
                            "burst": "150ms", "limit": "1000p"}))
    assert q == {"kind": "pie", "limit_packets": 1000, "limit_bytes": None, "target": 15 * MS, "t_update": 15 * MS,
                 "alpha": 0.125, "beta": 1.25, "burst": 150 * MS, "derandomize": False, "mean_packet": 1500,
                 "ecn": False, "estimator": "timestamp"}
    q = btl_queue(dumbbell({"kind": "pie", "estimator": "departure_rate"}))
    assert q["estimator"] == "departure_rate"
    # A limit by rule, as any queue's; the spec round-trips.
    data = dumbbell({"kind": "red", "limit": {"rule": "bdp"}, "min_th": "5p", "max_th": "15p"}, rtts=("100ms",))
    assert btl_queue(data)["limit_packets"] == 834
    scenario = Scenario.from_dict(data)
    assert Scenario.from_dict(scenario.to_dict()).to_engine() == scenario.to_engine()


def test_red_and_pie_make_the_seed_matter():
    # Their early drops draw from the run's seed: the seed is part of the run's identity.
    for queue in ("100p", {"kind": "red"}, {"kind": "pie"}):
        assert plan(Scenario.from_dict(dumbbell(queue, rtts=("10ms",)))).seed_matters == (queue != "100p")
def test_codel_defaults_to_rfc_8289s_target_and_interval_and_linuxs_limit():
    q = btl_queue(dumbbell({"kind": "codel"}))
    assert q == {"kind": "codel", "target": 5 * MS, "interval": 100 * MS, "limit_packets": 1000, "limit_bytes": None,
                 "ecn": False, "control_law": "sqrt"}
    # A limit by rule or by time is resolved as a FIFO's.
    q = btl_queue(dumbbell({"kind": "codel", "target": "2ms", "interval": "50ms", "limit": {"rule": "bdp"}}))
    assert q == {"kind": "codel", "target": 2 * MS, "interval": 50 * MS, "limit_packets": 4167, "limit_bytes": None,
                 "ecn": False, "control_law": "sqrt"}
    assert btl_queue(dumbbell({"kind": "codel", "limit": "25ms"}))["limit_bytes"] == 312_500
    again = Scenario.from_dict(Scenario.from_dict(dumbbell({"kind": "codel", "target": "1ms"})).to_dict())
    assert again.to_dict()["topology"]["queue"] == {"kind": "codel", "target": "1ms", "interval": "100ms",
                                                    "limit": "1000p", "ecn": False,
                                                    "control_law": "sqrt"}


def test_codel_takes_linuxs_newton_control_law_as_an_option():
    q = btl_queue(dumbbell({"kind": "codel", "control_law": "newton"}))
    assert q["control_law"] == "newton"
    assert btl_queue(dumbbell({"kind": "fq_codel", "control_law": "newton"}))["control_law"] == "newton"
    with pytest.raises(SpecError, match=r"topology\.queue\.control_law: "):
        Scenario.from_dict(dumbbell({"kind": "codel", "control_law": "linux"}))


def test_fq_codel_defaults_to_linuxs_flows_quantum_and_limit():
    q = btl_queue(dumbbell({"kind": "fq_codel"}))
    assert q == {"kind": "fq_codel", "target": 5 * MS, "interval": 100 * MS, "limit_packets": 10240,
                 "limit_bytes": None, "flows": 1024, "quantum": 1514, "ecn": True,
                 "control_law": "sqrt", "memory_limit": None, "drop_batch": 1}
    q = btl_queue(dumbbell({"kind": "fq_codel", "flows": 64, "quantum": "3028B", "limit": {"rule": "bdp"}}))
    assert (q["flows"], q["quantum"], q["limit_packets"]) == (64, 3028, 4167)


def test_fq_pie_defaults_to_linuxs_fq_pie_with_rfc_8033s_pie_on_each_flow_queue():
    q = btl_queue(dumbbell({"kind": "fq_pie"}))
    assert q == {"kind": "fq_pie", "limit_packets": 10240, "limit_bytes": None, "memory_limit": None,
                 "drop_batch": 1, "flows": 1024, "quantum": 1514, "target": 15 * MS, "t_update": 15 * MS,
                 "alpha": 0.125, "beta": 1.25, "burst": 150 * MS, "derandomize": False, "mean_packet": 1500,
                 "ecn": False, "estimator": "timestamp"}
    q = btl_queue(dumbbell({"kind": "FqPieQueueDisc", "memory_limit": "32MB", "drop_batch": 64,
                            "estimator": "departure_rate"}))
    assert (q["kind"], q["memory_limit"], q["drop_batch"], q["estimator"]) == ("fq_pie", 32_000_000, 64,
                                                                               "departure_rate")
    assert plan(Scenario.from_dict(dumbbell({"kind": "fq_pie"}, rtts=("10ms",)))).seed_matters


@pytest.mark.parametrize("queue, error", [
    ({"kind": "fq_pie", "flows": 70000}, "topology.queue.flows: from 1 to 65536 flow queues, not 70000"),
    ({"kind": "fq_pie", "limit": "1MB"}, "topology.queue.limit: FQ-PIE's limit is in packets"),
    ({"kind": "fq_pie", "alpha": 0}, "topology.queue.alpha: gain 0 must be positive"),
    ({"kind": "fq_pie", "drop_batch": 0}, "topology.queue.drop_batch: at least one packet is dropped at the limit"),
    ({"kind": "fq_pie", "estimator": "guess"}, "topology.queue.estimator: "),
    ({"kind": "fq_codel", "memory_limit": "0B"}, "topology.queue.memory_limit: "),
    ({"kind": "pie", "estimator": "sojourn"}, "topology.queue.estimator: "),
    ({"kind": "fq_codel", "flows": 0}, "topology.queue.flows: from 1 to 65536 flow queues, not 0"),
    ({"kind": "fq_codel", "quantum": "0B"}, "topology.queue.quantum: size must be positive"),
    ({"kind": "fq_codel", "target": "0ms"}, "topology.queue.target: must be positive"),
    ({"kind": "fq_codel", "limit": "1MB"}, "topology.queue.limit: FQ-CoDel's limit is in packets"),
    ({"kind": "codel", "target": "0ms"}, "topology.queue.target: must be positive"),
    ({"kind": "codel", "interval": "0s"}, "topology.queue.interval: must be positive"),
    ({"kind": "codel", "interval": "200d"}, "topology.queue.interval: "),
    ({"kind": "codel", "target": "soon"}, "topology.queue.target: "),
    ({"kind": "codel", "limit": "0p"}, "topology.queue.limit: queue limit must be positive"),
    ({"kind": "codel", "ecn": "sometimes"}, "topology.queue.ecn: "),
    ({"kind": "fifo", "limit": "100p", "ecn": True}, "topology.queue.ecn: unknown key"),
    ({"kind": "tbf", "rate": "10mbit", "burst": "16KiB", "limit": "100kB", "ecn": True}, "topology.queue.ecn: "),
    ({"rule": "sqrt"}, 'topology.queue.rule: unknown sizing rule "sqrt" (known: bdp, stanford)'),
    ({"rule": "bdp", "flows": 3}, "topology.queue.flows: only the stanford rule takes the number of flows"),
    ({"rule": "bdp", "rtt": "soon"}, 'topology.queue.rtt: expected mean, harmonic, max or a time like "120ms"'),
    ({"rule": "bdp", "size": 3}, "topology.queue.size: unknown key"),
    ("25parsecs", 'topology.queue: unknown size unit "parsecs"'),
    ({"kind": "splitbuff", "sub_buffers": 4}, "topology.queue.sub_buffers: SplitBuff has 2 or 3 sub-buffers, not 4"),
    ({"kind": "splitbuff", "estimator": "clever"}, "topology.queue.estimator: "),
    ({"kind": "splitbuff", "total": "elastic"}, "topology.queue.total: "),
    ({"kind": "splitbuff", "alpha": 2}, "topology.queue.alpha: smoothing gain 2 not in (0, 1]"),
    ({"kind": "splitbuff", "thresholds": 2}, "topology.queue.thresholds: unknown key"),
    ({"kind": "sfq"}, 'topology.queue.kind: unknown queue discipline "sfq"'),
    ({"kind": "red", "max_p": 0}, "topology.queue.max_p: probability 0 not in (0, 1]"),
    ({"kind": "red", "max_p": "often"}, "topology.queue.max_p: "),
    ({"kind": "red", "w_q": 2}, "topology.queue.w_q: averaging weight 2 not in (0, 1]"),
    ({"kind": "red", "min_th": "15p", "max_th": "5p"},
     "topology.queue.max_th: max_th (5 packets) must exceed min_th (15 packets)"),
    ({"kind": "red", "min_th": "5p", "max_th": "30kB"},
     "topology.queue.max_th: give min_th and max_th in one unit, packets or bytes"),
    ({"kind": "red", "min_th": "5p"}, "topology.queue.max_th: give both thresholds or neither"),
    ({"kind": "red", "limit": "10p"},
     "topology.queue.max_th: max_th (15 packets (the default)) exceeds the queue's limit (10 packets)"),
    ({"kind": "red", "min_th": "0p", "max_th": "5p"}, "topology.queue.min_th: queue limit must be positive"),
    ({"kind": "ared", "max_p": 0.9}, "topology.queue.max_p: probability 0.9 not in [0.01, 0.5]"),
    ({"kind": "red", "adaptive": True, "interval": "0s"}, "topology.queue.interval: must be positive"),
    ({"kind": "pie", "alpha": -1}, "topology.queue.alpha: gain -1 must be positive"),
    ({"kind": "pie", "beta": -0.5}, "topology.queue.beta: gain -0.5 must not be negative"),
    ({"kind": "pie", "t_update": "0ms"}, "topology.queue.t_update: must be positive"),
    ({"kind": "pie", "quantum": 3}, "topology.queue.quantum: unknown key"),
])
def test_bad_queue_specs_name_the_field(queue, error):
    with pytest.raises(SpecError) as e:  # by the spec layer, or the engine's checks (`plan`)
        plan(Scenario.from_dict(dumbbell(queue)))
    assert str(e.value).startswith(error), str(e.value)


def test_a_rule_on_a_link_without_long_flows_needs_its_inputs():
    data = dumbbell({"rule": "stanford"})
    data["flows"] = [{"rtt": "10ms", "traffic": {"kind": "finite", "bytes": "1MB"}}]
    with pytest.raises(SpecError, match=r"topology.queue.rule: no long-lived \(greedy\) flow crosses this link"):
        Scenario.from_dict(data)
    data["topology"]["queue"] = {"rule": "stanford", "rtt": "100ms", "flows": 10}
    assert btl_queue(data)["limit_packets"] == math.ceil(100e6 * 0.1 / 8 / 1500 / math.sqrt(10))


def test_a_queue_in_time_needs_a_rate():
    data = {"duration": "1s", "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
            "links": [{"a": "a", "b": "b", "rate": "unlimited", "delay": "1ms", "queue": "5ms"}],
            "flows": [{"src": "a", "dst": "b"}]}
    with pytest.raises(SpecError, match='links\\[0\\].queue: a queue of "5ms" needs the link\'s rate'):
        Scenario.from_dict(data)


def test_splitbuff_sub_buffers_are_stored_with_their_series(tmp_path):
    # A short run of seed 002's Fig. 1 setting: the sub-buffers' counters and series reach the
    # store, and each sub-buffer's packets are accounted for (in = out + still queued).
    text = (REPO / "scenarios" / "splitbuff_fig1.toml").read_text(encoding="utf-8").replace('"60s"', '"5s"')
    path = tmp_path / "fig1.toml"
    path.write_text(text, encoding="utf-8")
    db = tmp_path / "r.duckdb"
    out = bufferlab("run", str(path), "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["bottleneck"]["queue"].startswith("splitbuff 6250p, 2 sub-buffers (bdp rule")
    with load(db) as res:
        classes = res.query("SELECT * FROM queue_classes ORDER BY sub_buffer")
        series = res.query("SELECT * FROM class_timeseries ORDER BY sub_buffer, time_ns")
        channels = res.query("SELECT * FROM channels WHERE channel = 0")
    assert classes.height == 2
    assert (classes["enqueued_packets"] == classes["sent_packets"] + classes["queued_packets"]).all()
    assert classes["dropped_packets"].sum() == channels["dropped_queue_packets"][0]
    assert classes["size_limit"].sum() <= 6250
    assert series.height == 2 * 50  # two sub-buffers, 5 s sampled every 100 ms
    assert series.filter(series["time_ns"] == 5_000_000_000)["estimate_rttp_ns"].to_list()[0] > 0


AQM_RUN = """duration = "20s"
seed = {seed}
[topology]
kind = "dumbbell"
bottleneck_rate = "10Mbps"
rtt = "100ms"
flows = 8
queue = {queue}
"""


@pytest.mark.parametrize("queue, described", [
    ('{ kind = "pie", limit = "500p" }', "pie 500p, target 15ms"),
    ('{ kind = "pie", limit = "500p", estimator = "departure_rate" }', "pie 500p, target 15ms"),
    ('{ kind = "fq_pie", limit = "500p" }', "fq_pie 500p, 1024 flows, quantum 1.514kB, target 15ms"),
    ('{ kind = "red", limit = "500p", min_th = "10p", max_th = "30p", max_p = 0.05 }', "red 500p, thresholds 10p-30p"),
])
def test_red_and_pie_run_through_bufferlab_run_and_keep_the_queue_short(tmp_path, queue, described):
    # 8 flows over 10 Mb/s and 100 ms: a FIFO of 500 packets (600 ms at 10 Mb/s) fills; PIE and
    # RED keep the queueing delay low (PIE toward 15 ms, RED's thresholds are 12-36 ms) and the link busy.
    def run(queue: str, seed: int = 1) -> dict[str, Any]:
        path = tmp_path / "aqm.toml"
        path.write_text(AQM_RUN.format(queue=queue, seed=seed), encoding="utf-8")
        out = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"), "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["bottleneck"]

    fifo, aqm = run('"500p"'), run(queue)
    assert aqm["queue"] == described
    assert fifo["mean_sojourn_ms"] > 200 and aqm["mean_sojourn_ms"] < 40, (fifo, aqm)
    assert aqm["utilisation"] > 0.9 and aqm["max_queue_packets"] < 500
    assert run(queue, seed=2)["mean_sojourn_ms"] != aqm["mean_sojourn_ms"], "the seed matters"
@pytest.mark.parametrize("queue, shown", [
    ('{ kind = "codel", target = "5ms", interval = "100ms", limit = "1000p" }',
     "codel 1000p, target 5ms, interval 100ms"),
    ('{ kind = "fq_codel", limit = "1000p" }',
     "fq_codel 1000p, 1024 flows, quantum 1.514kB, target 5ms, interval 100ms"),
])
def test_an_aqm_run_stores_its_aqm_drops(tmp_path, queue, shown):
    # Two Reno flows through 10 Mb/s at a 100 ms RTT: slow start overshoots, CoDel drops at the
    # head, and those drops reach the store under their own counter (not as tail drops).
    path = tmp_path / "aqm.toml"
    path.write_text('duration = "5s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "10Mbps"\n'
                    f'queue = {queue}\n'
                    'rtt = "100ms"\nflows = 2\n[flow_defaults]\ncca = "newreno"\n', encoding="utf-8")
    db = tmp_path / "r.duckdb"
    out = bufferlab("run", str(path), "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["bottleneck"]["queue"] == shown
    assert json.loads(out.stdout)["bottleneck"]["aqm_drops"] > 0
    with load(db) as res:
        btl = res.query("SELECT * FROM channels WHERE channel = 0")
        links = res.query("SELECT * FROM link_metrics WHERE channel = 0")
    assert btl["dropped_aqm_packets"][0] > 0 and btl["dropped_aqm_bytes"][0] >= 1500 * btl["dropped_aqm_packets"][0]
    assert btl["dropped_queue_packets"][0] == 0  # 1000 packets are never full here
    assert links["total_qdisc_drops_l2"][0] == btl["dropped_aqm_packets"][0]


def test_a_bad_codel_value_is_a_one_line_error_naming_the_field(tmp_path):
    path = tmp_path / "codel.toml"
    path.write_text('duration = "1s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "10Mbps"\n'
                    'queue = { kind = "codel", target = "0ms" }\nrtt = "100ms"\nflows = 1\n', encoding="utf-8")
    out = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "topology.queue.target: must be positive" in out.stderr


def test_ecn_reaches_the_engine_off_by_default_but_for_fq_codel():
    # As Linux: codel, red, pie and fq_pie mark only when asked; fq_codel marks unless told not to.
    for kind, default in (("codel", False), ("red", False), ("pie", False), ("fq_codel", True), ("fq_pie", False)):
        assert btl_queue(dumbbell({"kind": kind}))["ecn"] is default, kind
        assert btl_queue(dumbbell({"kind": kind, "ecn": not default}))["ecn"] is (not default), kind


def test_tcp_ecn_reaches_the_engine_and_a_bad_mode_is_a_one_line_error(tmp_path):
    data = dumbbell("100p", rtts=("10ms",))
    engine = Scenario.from_dict(data).resolve().engine
    assert flow_tcp(engine, engine["flows"][0])["ecn"] == "off"
    data["flow_defaults"] = {"tcp": {"ecn": "dctcp"}}
    engine = Scenario.from_dict(data).resolve().engine
    assert flow_tcp(engine, engine["flows"][0])["ecn"] == "dctcp"
    path = tmp_path / "ecn.toml"
    path.write_text('duration = "1s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "10Mbps"\nqueue = "100p"\n'
                    'rtt = "100ms"\nflows = 1\n[flow_defaults.tcp]\necn = "sometimes"\n', encoding="utf-8")
    out = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "flow_defaults.tcp.ecn: " in out.stderr, out.stderr


def test_an_ecn_run_stores_its_marks_apart_from_the_drops(tmp_path):
    # Two ECN-capable Reno flows through 10 Mb/s at a 100 ms RTT behind a marking CoDel: its
    # signals are CE marks, stored under their own counters, received and answered by the flows.
    path = tmp_path / "ecn.toml"
    path.write_text('duration = "5s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "10Mbps"\n'
                    'queue = { kind = "codel", limit = "1000p", ecn = true }\n'
                    'rtt = "100ms"\nflows = 2\n[flow_defaults]\ncca = "newreno"\n'
                    '[flow_defaults.tcp]\necn = "classic"\n', encoding="utf-8")
    db = tmp_path / "r.duckdb"
    out = bufferlab("run", str(path), "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    bottleneck = json.loads(out.stdout)["bottleneck"]
    assert bottleneck["ce_marks"] > 0 and bottleneck["aqm_drops"] == 0, bottleneck
    with load(db) as res:
        btl = res.query("SELECT * FROM channels WHERE channel = 0")
        flows = res.query("SELECT * FROM flows")
        links = res.query("SELECT * FROM link_metrics WHERE channel = 0")
        flow_metrics = res.query("SELECT * FROM flow_metrics")
    assert btl["ce_marked_packets"][0] == bottleneck["ce_marks"]
    assert btl["ce_marked_bytes"][0] == 1500 * btl["ce_marked_packets"][0]
    assert sum(flows["ce_received"]) == btl["ce_marked_packets"][0]
    assert all(0 < r <= c for r, c in zip(flows["ecn_responses"], flows["ce_received"]))
    assert links["total_ce_marks_l2"][0] == btl["ce_marked_packets"][0]
    assert list(flow_metrics["total_ecn_responses_l4"]) == list(flows["ecn_responses"])


def test_quic_ecn_reaches_the_engine_off_by_default():
    data = dumbbell("100p", rtts=("10ms",))
    data["flow_defaults"] = {"transport": "quic"}
    engine = Scenario.from_dict(data).resolve().engine
    assert flow_quic(engine, engine["flows"][0])["ecn"] == "off"
    data["flow_defaults"]["quic"] = {"ecn": True}
    engine = Scenario.from_dict(data).resolve().engine
    assert flow_quic(engine, engine["flows"][0])["ecn"] is True
    data["flow_defaults"]["quic"] = {"ecn": "yes"}
    with pytest.raises(SpecError) as e:
        Scenario.from_dict(data).resolve()
    assert str(e.value).startswith("flow_defaults.quic.ecn: "), str(e.value)
