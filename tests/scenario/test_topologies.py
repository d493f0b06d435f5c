"""Topology builders: seed 000's tree and the parking lot, as specs and on the engine."""

from __future__ import annotations

import polars as pl
import pytest

from bufferlab import runner
from bufferlab.errors import SpecError
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import link_queue

MS = 1_000_000

TREE = {
    "name": "tree", "duration": "4s", "sample_interval": "off",
    "topology": {"kind": "tree", "queue": "18p"},
    "generators": [{"name": "pers", "kind": "persistent", "dst": "sink", "flows": 1}],
}


def _path_delay(engine: dict, src: int, dst: int) -> int:
    """One-way propagation delay from node `src` to `dst` along the tree's forward links."""
    forward = {link["a"]: link for link in engine["links"]}
    node, total = src, 0
    while node != dst:
        link = forward[node]
        total += link["delay"]
        node = link["b"]
    return total


# The seed's text counts 18 source nodes; its balanced binary tree of 2, 4 and 8 hosts has 14.
# Both shapes: the default binary tree, and fanout [2, 2, 3] for 2 + 4 + 12 = 18 sources.
SHAPES = [(None, [2, 4, 8]), ([2, 2, 3], [2, 4, 12])]


@pytest.mark.parametrize("fanout, per_level", SHAPES, ids=["binary_14", "sources_18"])
def test_tree_has_the_seed_s_nodes_and_source_rtts_of_34_234_and_534_ms(fanout, per_level) -> None:
    spec = dict(TREE, topology={"kind": "tree", "queue": "18p"} | ({"fanout": fanout} if fanout else {}))
    resolved = Scenario.from_dict(spec).resolve()
    names = resolved.node_names
    sources = [n for n in names if n.startswith("h")]
    assert [sum(n.startswith(f"h{level}_") for n in sources) for level in (1, 2, 3)] == per_level
    assert len(resolved.flow_names) == sum(per_level)
    sink = names.index("sink")
    expected = {1: 34 * MS, 2: 234 * MS, 3: 534 * MS}
    for host in sources:
        level = int(host[1])
        assert 2 * _path_delay(resolved.engine, names.index(host), sink) == expected[level], host
    links = {link["name"]: link for link in resolved.engine["links"]}
    assert links["btl"]["rate"] == 50_000_000
    assert link_queue(resolved.engine, links["btl"], "forward") == {"kind": "fifo", "limit_packets": 18, "limit_bytes": None}
    assert all(link["rate"] == 100_000_000 for name, link in links.items() if name != "btl")
    assert resolved.channel_names[resolved.bottleneck] == "btl_forward"


@pytest.mark.engine
@pytest.mark.parametrize("fanout, per_level", SHAPES, ids=["binary_14", "sources_18"])
def test_flows_from_every_source_reach_the_sink_through_the_50mbps_bottleneck(fanout, per_level) -> None:
    topology = {"kind": "tree", "queue": "18p"} | ({"fanout": fanout} if fanout else {})
    spec = dict(TREE, topology=topology, captures=[{"link": "btl", "direction": "forward"}])
    scenario = Scenario.from_dict(spec)
    resolved = scenario.resolve()
    engine, _ = runner.simulate(scenario)
    result = engine.counters()
    assert set(engine.captures.filter(pl.col("is_data"))["flow"].to_list()) == set(range(sum(per_level)))
    for name, flow in zip(resolved.flow_names, result["flows"]):
        assert flow["bytes_delivered"] > 0, name
        # The handshake's RTT sample: the class's propagation RTT plus SYN/SYN-ACK serialisation
        # (60 bytes, under 10 µs a hop) plus at most a full bottleneck queue (18 x 1500 B at
        # 50 Mb/s = 4.32 ms, filled by the nearer flows before the far SYNs arrive).
        level = int(name.split("_")[1][1])
        handshake = flow["established_ns"] - flow["start_ns"]
        assert 0 <= handshake - {1: 34, 2: 234, 3: 534}[level] * MS < 4.32 * MS + 100_000, name
    btl = next(c for c in result["channels"] if c["name"] == "btl_forward")
    assert btl["rate_bps"] == 50_000_000


def test_tree_rates_and_delays_can_be_overridden_per_level() -> None:
    spec = dict(TREE, topology={"kind": "tree", "queue": "500p", "levels": 2, "fanout": 3,
                                "level_delays": ["1ms", "2ms"], "level_rates": ["1Gbps", "10Mbps"],
                                "bottleneck_rate": "20Mbps"})
    resolved = Scenario.from_dict(spec).resolve()
    assert len(resolved.flow_names) == 3 + 9
    links = {link["name"]: link for link in resolved.engine["links"]}
    assert links["h2_8_h1_2"]["rate"] == 10_000_000 and links["h2_8_h1_2"]["delay"] == 2 * MS
    assert links["h1_0_target2"]["rate"] == 1_000_000_000
    assert links["btl"]["rate"] == 20_000_000


@pytest.mark.parametrize("topology, message", [
    ({"levels": 2}, "topology.level_delays: the seed's delays are for 3 levels, not 2"),
    ({"level_rates": ["1Gbps"]}, "topology.level_rates: 1 values for 3 levels"),
    ({"queue": "0p"}, "topology.queue: queue limit must be positive"),
    ({"bottleneck_rate": "fast"}, "topology.bottleneck_rate"),
])
def test_bad_tree_settings_name_the_key(topology, message) -> None:
    spec = dict(TREE, topology={"kind": "tree", "queue": "18p", **topology})
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        Scenario.from_dict(spec)


def test_unknown_topology_kind_is_named() -> None:
    with pytest.raises(SpecError, match='topology.kind: unknown topology "star"'):
        Scenario.from_dict(dict(TREE, topology={"kind": "star"}))


@pytest.mark.engine
def test_parking_lot_long_flow_crosses_every_hop_and_each_cross_flow_one() -> None:
    spec = {"name": "lot", "duration": "2s", "sample_interval": "off",
            "topology": {"kind": "parking_lot", "hops": 3, "hop_rates": ["50Mbps", "30Mbps", "40Mbps"],
                         "queue": "64p"},
            "captures": [{"link": f"hop{i}"} for i in range(3)]}
    scenario = Scenario.from_dict(spec)
    resolved = scenario.resolve()
    assert resolved.flow_names == ["long", "cross0", "cross1", "cross2"]
    result, _ = runner.simulate(scenario)
    for i, capture in enumerate(result.captures.partition_by("capture", maintain_order=True)):
        assert set(capture.filter(pl.col("is_data"))["flow"].to_list()) == {0, 1 + i}, f"hop{i}"
    assert (result.flows["bytes_delivered"] > 0).all()


def test_parking_lot_needs_a_rate_per_hop() -> None:
    spec = {"name": "lot", "duration": "1s", "topology": {"kind": "parking_lot", "queue": "10p"}}
    with pytest.raises(SpecError, match="topology.rate: missing: give rate"):
        Scenario.from_dict(spec)
    spec["topology"] |= {"hop_rates": ["1Mbps"]}
    with pytest.raises(SpecError, match="topology.hop_rates: 1 values for 2 hops"):
        Scenario.from_dict(spec)


@pytest.mark.parametrize("kind", [[1, 2], {"kind": "tree"}, 3])
def test_a_topology_or_traffic_kind_that_is_not_text_is_named(kind) -> None:
    # A list or a table as the kind was looked up as a key and crashed (unhashable) instead of
    # being bad input.
    with pytest.raises(SpecError, match='^topology.kind: unknown topology "'):
        Scenario.from_dict(dict(TREE, topology={"kind": kind}))
    flows = [{"src": "h1_0", "dst": "sink", "traffic": {"kind": kind}}]
    with pytest.raises(SpecError, match='^flows\\[0\\].traffic.kind: unknown traffic model "'):
        Scenario.from_dict(dict(TREE, flows=flows))
