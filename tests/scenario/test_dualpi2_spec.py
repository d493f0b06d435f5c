"""DualPI2 (RFC 9332) in scenario specs: its defaults reach the engine under the user's keys, a
bad value is a one-line error naming the field, and an L4S run through `bufferlab run` stores the
L and C queues apart; `tcp.ecn = "l4s"` reaches the engine."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from bufferlab import load
from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_tcp, link_queue
from conftest import bufferlab

MS = 1_000_000


def dumbbell(queue: Any, ecn: str = "off") -> dict[str, Any]:
    return {"duration": "1s", "topology": {"kind": "dumbbell", "bottleneck_rate": "100Mbps", "queue": queue,
                                           "bottleneck_delay": "1ms"},
            "flows": [{"rtt": "100ms"}], "flow_defaults": {"tcp": {"ecn": ecn}}}


def btl_queue(data: dict[str, Any]) -> dict[str, Any]:
    engine = Scenario.from_dict(data).resolve().engine
    return link_queue(engine, engine["links"][0], "forward")


def test_dualpi2_defaults_to_rfc_9332s_and_linuxs_parameters():
    assert btl_queue(dumbbell({"kind": "dualpi2"})) == {
        "kind": "dualpi2", "limit_packets": 10000, "limit_bytes": None, "target": 15 * MS, "tupdate": 16 * MS,
        "alpha": 0.16, "beta": 3.2, "coupling": 2.0, "step_thresh": 1 * MS, "scheduler": "tshift",
        "tshift": 30 * MS, "classic_protection": 10, "drop_on_overload": True}
    q = btl_queue(dumbbell({"kind": "dualq", "target": "20ms", "step_thresh": "500us", "scheduler": "wrr",
                            "classic_protection": 25, "limit": {"rule": "bdp"}, "drop_on_overload": False}))
    assert (q["kind"], q["target"], q["step_thresh"], q["scheduler"], q["classic_protection"]) == (
        "dualpi2", 20 * MS, 500_000, "wrr", 25)
    assert q["limit_packets"] == math.ceil(100e6 * 0.1 / 8 / 1500) and q["drop_on_overload"] is False
    # Its spec form reads back as written.
    again = Scenario.from_dict(Scenario.from_dict(dumbbell({"kind": "dualpi2", "tupdate": "15ms"})).to_dict())
    assert again.to_dict()["topology"]["queue"]["tupdate"] == "15ms"


def test_dualpi2_makes_the_seed_matter():
    # Its drops and marks draw from the run's seed.
    assert plan(Scenario.from_dict(dumbbell({"kind": "dualpi2"}))).seed_matters


def test_tcp_ecn_l4s_reaches_the_engine():
    engine = Scenario.from_dict(dumbbell("100p", ecn="l4s")).resolve().engine
    assert flow_tcp(engine, engine["flows"][0])["ecn"] == "l4s"


@pytest.mark.parametrize("queue, error", [
    ({"kind": "dualpi2", "limit": "1MB"}, "topology.queue.limit: DualPI2's limit is in packets"),
    ({"kind": "dualpi2", "limit": "0p"}, "topology.queue.limit: queue limit must be positive"),
    ({"kind": "dualpi2", "target": "0ms"}, "topology.queue.target: must be positive"),
    ({"kind": "dualpi2", "tupdate": "0ms"}, "topology.queue.tupdate: must be positive"),
    ({"kind": "dualpi2", "tupdate": "soon"}, "topology.queue.tupdate: "),
    ({"kind": "dualpi2", "alpha": 0}, "topology.queue.alpha: gain 0 must be positive"),
    ({"kind": "dualpi2", "beta": -1}, "topology.queue.beta: gain -1 must not be negative"),
    ({"kind": "dualpi2", "coupling": 0.5}, "topology.queue.coupling: coupling factor 0.5 not in [1, 256]"),
    ({"kind": "dualpi2", "step_thresh": "200d"}, "topology.queue.step_thresh: "),
    ({"kind": "dualpi2", "scheduler": "fair"}, "topology.queue.scheduler: "),
    ({"kind": "dualpi2", "classic_protection": 101},
     "topology.queue.classic_protection: the C queue's share is a percentage from 0 to 100, not 101"),
    ({"kind": "dualpi2", "classic_protection": 1.5}, "topology.queue.classic_protection: "),
    ({"kind": "dualpi2", "ecn": True}, "topology.queue.ecn: unknown key"),
])
def test_bad_dualpi2_specs_name_the_field(queue, error):
    with pytest.raises(SpecError) as e:  # by the spec layer, or the engine's checks (`plan`)
        plan(Scenario.from_dict(dumbbell(queue)))
    assert str(e.value).startswith(error), str(e.value)
    assert "\n" not in str(e.value)


def test_a_bad_dualpi2_value_exits_2_with_one_line_naming_the_field(tmp_path):
    path = tmp_path / "dualpi2.toml"
    path.write_text('duration = "1s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "10Mbps"\n'
                    'queue = { kind = "dualpi2", coupling = 0 }\nrtt = "100ms"\nflows = 1\n', encoding="utf-8")
    out = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: topology.queue.coupling: coupling factor 0 not in [1, 256]"]
    path.write_text(path.read_text(encoding="utf-8").replace("coupling = 0", 'scheduler = "fifo"'), encoding="utf-8")
    out = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "topology.queue.scheduler: " in out.stderr, out.stderr


def test_an_l4s_run_stores_the_l_and_c_queues_apart(tmp_path):
    # Two L4S and two Classic Reno flows through 20 Mb/s at a 60 ms RTT: the L queue's packets
    # wait about the 1 ms step, the C queue's near the 15 ms target; each queue's record and
    # series reach the store (sub_buffer 0 the L queue, 1 the C queue).
    path = tmp_path / "l4s.toml"
    path.write_text('duration = "10s"\nsample_interval = "100ms"\n[topology]\nkind = "dumbbell"\n'
                    'bottleneck_rate = "20Mbps"\nqueue = { kind = "dualpi2" }\nrtt = "60ms"\n'
                    '[flow_defaults]\ncca = "reno"\n'
                    '[[flows]]\ntcp = { ecn = "l4s" }\n[[flows]]\ntcp = { ecn = "l4s" }\n[[flows]]\n[[flows]]\n',
                    encoding="utf-8")
    db = tmp_path / "r.duckdb"
    out = bufferlab("run", str(path), "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["bottleneck"]["queue"] == "dualpi2 10000p, target 15ms, step 1ms, k 2, tshift"
    with load(db) as res:
        classes = res.query("SELECT * FROM queue_classes WHERE channel = 0 ORDER BY sub_buffer")
        series = res.query("SELECT * FROM class_timeseries WHERE channel = 0 ORDER BY sub_buffer, time_ns")
        btl = res.query("SELECT * FROM channels WHERE channel = 0")
    assert classes["sub_buffer"].to_list() == [0, 1]
    l_queue, c_queue = classes.row(0, named=True), classes.row(1, named=True)
    assert l_queue["sent_packets"] > 500 and c_queue["sent_packets"] > 5000, (l_queue, c_queue)
    l_ms = l_queue["sojourn_sum_ns"] / l_queue["sent_packets"] / MS
    c_ms = c_queue["sojourn_sum_ns"] / c_queue["sent_packets"] / MS
    assert l_ms < 1.5 and l_ms * 4 < c_ms, (l_ms, c_ms)
    # Every packet accounted for: what entered either queue was sent, is queued, or was dropped
    # by the AQM at the head.
    assert (classes["enqueued_packets"].sum()
            == classes["sent_packets"].sum() + classes["queued_packets"].sum() + btl["dropped_aqm_packets"][0])
    assert btl["ce_marked_packets"][0] > 0
    assert series.height == 2 * 100
