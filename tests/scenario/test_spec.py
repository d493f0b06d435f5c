"""The scenario spec: validation messages, the dumbbell rule, and the engine spec it resolves to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import engine_tcp_defaults, Flow, Link, Node, Scenario, split_access_delays
from bufferlab.spec.resolved import flow_quic, flow_tcp, link_queue


def graph(**overrides: Any) -> dict[str, Any]:
    """A valid two-host, one-router graph; `overrides` replace top-level keys."""
    data: dict[str, Any] = {
        "duration": "1s",
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "h2", "kind": "host"}],
        "links": [
            {"name": "l0", "a": "h1", "b": "r", "rate": "100Mbps", "delay": "1ms"},
            {"name": "l1", "a": "r", "b": "h2", "rate": "10Mbps", "delay": "5ms", "queue": "20p"},
        ],
        "flows": [{"src": "h1", "dst": "h2"}],
    }
    data.update(overrides)
    return data


def dumbbell(**topology: Any) -> dict[str, Any]:
    topo = {"kind": "dumbbell", "flows": 2, "bottleneck_rate": "10Mbps", "queue": "20p", "rtt": "20ms"}
    topo.update(topology)
    return {"duration": "1s", "topology": topo}


def error_of(data: dict[str, Any]) -> str:
    """The error a run of `data` stops with: the spec layer's, or the engine's checks (`plan`)."""
    with pytest.raises(SpecError) as info:
        plan(Scenario.from_dict(data))
    return str(info.value)


# --- validation messages: one line, field path first ---------------------------------------------

def test_unknown_key_names_its_path() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "colour": "red"}])
    assert error_of(data) == "flows[0].colour: unknown key"


def test_unknown_top_level_key() -> None:
    assert error_of(graph(colour="red")) == "colour: unknown key"


def test_zero_rate_names_link_and_value() -> None:
    data = graph()
    data["links"][0]["rate"] = "0Mbps"
    assert error_of(data) == 'links[0].rate: zero or negative rate "0Mbps"'


def test_negative_rate_is_rejected() -> None:
    data = graph()
    data["links"][1]["rate"] = "-10Mbps"
    assert error_of(data).startswith("links[1].rate: zero or negative rate")


def test_bad_unit_names_field_and_unit() -> None:
    data = graph()
    data["links"][1]["delay"] = "5mss"
    assert error_of(data) == 'links[1].delay: unknown time unit "mss" in "5mss" (known: s, ms, us, ns)'


def test_unknown_controller_lists_known_ones() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2"}, {"src": "h1", "dst": "h2", "cca": "westwood"}])
    assert error_of(data) == 'flows[1].cca: unknown controller "westwood" (known: reno, newreno, cubic, highspeed, bbr, bbr3, dctcp, prague, vegas)'


@pytest.mark.parametrize("name", ["reno", "newreno", "NewReno", "TcpNewReno", "tcpreno", "TCPRENO"])
def test_controller_names_of_ccperf_are_accepted(name: str) -> None:
    spec = Scenario.from_dict(graph(flows=[{"src": "h1", "dst": "h2", "cca": name}])).to_engine()
    assert spec["flows"][0]["cca"] == "reno"


def test_dumbbell_queue_limit_zero() -> None:
    assert error_of(dumbbell(queue="0p")) == 'topology.queue: queue limit must be positive, got "0p"'


def test_link_queue_limit_zero_in_table_form() -> None:
    data = graph()
    data["links"][1]["queue"] = {"kind": "fifo", "limit": "0B"}
    assert error_of(data).startswith("links[1].queue.limit: queue limit must be positive")


def test_finite_traffic_needs_bytes() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "traffic": {"kind": "finite"}}])
    assert error_of(data).startswith("flows[0].traffic.bytes: missing")


def test_unknown_traffic_model() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "traffic": "bulk"}])
    assert error_of(data).startswith('flows[0].traffic: unknown traffic model "bulk"')


def test_flow_to_unknown_node() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h9"}])
    assert error_of(data).startswith('flows[0].dst: unknown node "h9"')


def test_flow_from_a_router() -> None:
    data = graph(flows=[{"src": "r", "dst": "h2"}])
    assert error_of(data) == 'flows[0].src: "r" is a router; flows run between hosts'


def test_link_to_unknown_node() -> None:
    data = graph()
    data["links"][0]["b"] = "nowhere"
    assert error_of(data).startswith('links[0].b: unknown node "nowhere"')


def test_duplicate_node_name() -> None:
    data = graph()
    data["nodes"].append({"name": "h1", "kind": "host"})
    assert error_of(data) == 'nodes[3].name: duplicate name "h1" (also nodes[0])'


def test_missing_duration() -> None:
    data = graph()
    del data["duration"]
    assert error_of(data) == "duration: missing required key"


def test_flow_starting_after_the_end() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "start": "2s"}])
    assert error_of(data).startswith("flows[0].start: starts at 2s, not before the end of the run")


def test_flow_stopping_before_it_starts() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "start": "0.5s", "stop": "0.2s"}])
    assert error_of(data).startswith("flows[0].stop: stop (200ms) is not after start (500ms)")


def test_tcp_option_type_error() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"mss": "large"}}])
    assert error_of(data) == "flows[0].tcp.mss: input should be a valid integer (got 'large')"


def test_a_tcp_option_out_of_range_is_named_by_the_engine() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"mss": 0}}])
    assert error_of(data) == "flows[0].tcp.mss: must be positive"


@pytest.mark.parametrize("basis", ["flight_size", "pipe", "cwnd"])
def test_ssthresh_from_takes_each_reduction_basis_to_the_engine(basis: str) -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"ssthresh_from": basis}}])
    engine = json.loads(plan(Scenario.from_dict(data)).spec_json)
    assert flow_tcp(engine, engine["flows"][0])["ssthresh_from"] == basis


def test_ssthresh_from_defaults_to_rfc_5681_flight_size() -> None:
    assert engine_tcp_defaults()["ssthresh_from"] == "flight_size"
    engine = Scenario.from_dict(graph()).to_engine()
    assert flow_tcp(engine, engine["flows"][0])["ssthresh_from"] == "flight_size"


@pytest.mark.parametrize("value", ["flightsize", "inflight", 1, True])
def test_ssthresh_from_refuses_any_other_basis_in_one_line(value: object) -> None:
    message = error_of(graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"ssthresh_from": value}}]))
    assert message.startswith("flows[0].tcp.ssthresh_from: ")
    assert "\n" not in message


def test_pacing_takes_linuxs_ratios_by_default_and_as_percentages() -> None:
    defaults = engine_tcp_defaults()
    assert (defaults["pacing"], defaults["pacing_ss_ratio"], defaults["pacing_ca_ratio"]) == (False, 2.0, 1.2)
    data = graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"pacing": True, "pacing_ca_ratio": "150%"}}])
    engine = json.loads(plan(Scenario.from_dict(data)).spec_json)
    tcp = flow_tcp(engine, engine["flows"][0])
    assert (tcp["pacing"], tcp["pacing_ss_ratio"], tcp["pacing_ca_ratio"]) == (True, 2.0, 1.5)
    quic = graph(flows=[{"src": "h1", "dst": "h2", "transport": "quic", "quic": {"pacing": True}}])
    engine = json.loads(plan(Scenario.from_dict(quic)).spec_json)
    assert flow_quic(engine, engine["flows"][0])["pacing"] is True


@pytest.mark.parametrize("ratio, reason", [(0, "a ratio to cwnd/SRTT above 0 and at most 100, not 0"),
                                           ("-10%", "a ratio to cwnd/SRTT above 0 and at most 100, not -0.1"),
                                           (1000, "a ratio to cwnd/SRTT above 0 and at most 100, not 1000"),
                                           ("fast", 'expected a ratio like 1.2 or "120%", got \'fast\'')])
def test_a_pacing_ratio_out_of_range_is_one_line_naming_it(ratio: object, reason: str) -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"pacing": True, "pacing_ss_ratio": ratio}}])
    assert error_of(data) == f"flows[0].tcp.pacing_ss_ratio: {reason}"


def test_rtt_outside_a_dumbbell() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "rtt": "10ms"}])
    assert error_of(data) == "flows[0].rtt: only a dumbbell topology derives delays from RTTs"


def test_invalid_toml_is_one_line() -> None:
    with pytest.raises(SpecError) as info:
        Scenario.from_toml_text('duration = "1s\nseed = 1\n', source="x.toml")
    assert str(info.value).startswith("x.toml: invalid TOML")
    assert "\n" not in str(info.value)


def test_every_message_is_one_line() -> None:
    for data in (graph(flows="many"), graph(nodes=[{"name": ""}]), dumbbell(flows=0), graph(seed=-1)):
        message = error_of(data)
        assert "\n" not in message and ": " in message


PERSISTENT = {"kind": "persistent", "dst": "h2", "flows": 1}


@pytest.mark.parametrize(("overrides", "message"), [
    ({"generators": "x"}, "generators: input should be a valid list (got 'x')"),
    ({"generators": [1]}, "generators[0]: input should be a valid dictionary or instance of Generator (got 1)"),
    ({"generators": [PERSISTENT, {**PERSISTENT, "kind": "x"}]}, "generators[1].kind: input should be 'persistent', "
                                                                 "'poisson', 'closed_loop', 'cbr' or 'onoff' (got 'x')"),
    ({"generators": [{**PERSISTENT, "tcp": {"mss": "x"}}]}, "generators[0].tcp.mss: input should be a valid integer (got 'x')"),
    ({"generators": [{**PERSISTENT, "think": {"dist": "x"}}]}, "generators[0].think.dist: unknown distribution 'x'"),
    ({"record": {"bogus": 1}}, "record.bogus: unknown key"),
    ({"record": "x"}, "record: input should be a valid dictionary or instance of Record (got 'x')"),
    ({"record": {"captures": [{"link": "l1", "direction": "up"}]}},
     "record.captures[0].direction: input should be 'forward' or 'backward' (got 'up')"),
    ({"captures": [{"direction": "forward"}]}, "captures[0].link: missing required key"),
    ({"flow_defaults": {"quic": {"initial_window": 1.5}}},
     "flow_defaults.quic.initial_window: input should be a valid integer (got 1.5)"),
    ({"flows": [{"src": "h1", "dst": "h2", "quic": {"bogus": 1}}]}, "flows[0].quic.bogus: unknown key"),
])
def test_a_model_built_on_first_use_names_its_errors_as_pydantic_does(overrides: dict[str, Any], message: str) -> None:
    # Generators, recording and QUIC options are models built when a spec first has one
    # (`parsed.model_on_first_use`); their errors read as those of any nested model.
    assert error_of(graph(**overrides)).startswith(message)


def test_a_model_built_on_first_use_round_trips_with_only_what_was_set() -> None:
    data = graph(generators=[{**PERSISTENT, "tcp": {"sack": False}}], captures=[{"link": "l1"}],
                 record={"interval": "5ms", "captures": [{"link": "l0", "direction": "backward"}]},
                 flow_defaults={"quic": {"initial_window": 4}})
    scenario = Scenario.from_dict(data)
    written = scenario.to_dict()
    assert written["generators"] == [{**PERSISTENT, "tcp": {"sack": False}}]
    assert written["captures"] == [{"link": "l1"}]
    assert written["record"] == {"interval": "5ms", "captures": [{"link": "l0", "direction": "backward"}]}
    assert written["flow_defaults"] == {"quic": {"initial_window": 4}}
    assert Scenario.from_dict(json.loads(json.dumps(written))).to_engine_json() == scenario.to_engine_json()
    assert type(scenario.generators[0]).__name__ == "Generator" and scenario.record is not None


# --- the dumbbell rule ---------------------------------------------------------------------------

@pytest.mark.parametrize(("rtt", "btl"), [(40_000_000, 10_000_000), (15_000_000, 3_750_000),
                                          (20_000_002, 7_000_001), (20_000_000, 10_000_000),
                                          (100_000_006, 0)])
def test_access_delays_make_two_way_propagation_equal_the_rtt(rtt: int, btl: int) -> None:
    src, dst = split_access_delays(rtt, btl)
    assert src >= 0 and dst >= 0 and abs(src - dst) <= 1
    assert 2 * (src + btl + dst) == rtt


def test_dumbbell_engine_spec_sums_to_each_requested_rtt() -> None:
    rtts = ["15ms", "40ms", "123.456ms", "10ms"]
    data = dumbbell(bottleneck_delay="5ms", flows=None)
    del data["topology"]["flows"]
    data["flows"] = [{"rtt": rtt} for rtt in rtts]
    engine = Scenario.from_dict(data).to_engine()
    links = {link["name"]: link for link in engine["links"]}
    btl = links["btl"]["delay"]
    assert btl == 5_000_000
    from bufferlab.units import parse_time

    for i, rtt in enumerate(rtts):
        flow = engine["flows"][i]
        src_name, dst_name = engine["nodes"][flow["src"]]["name"], engine["nodes"][flow["dst"]]["name"]
        one_way = links[f"access_{src_name}"]["delay"] + btl + links[f"access_{dst_name}"]["delay"]
        assert 2 * one_way == parse_time(rtt)


def test_dumbbell_default_bottleneck_delay_is_a_quarter_of_the_smallest_rtt() -> None:
    data = dumbbell()
    del data["topology"]["flows"]
    data["flows"] = [{"rtt": "20ms"}, {"rtt": "100ms"}]
    engine = Scenario.from_dict(data).to_engine()
    assert engine["links"][0]["name"] == "btl"
    assert engine["links"][0]["delay"] == 5_000_000


def test_dumbbell_rtt_shorter_than_twice_the_bottleneck_delay() -> None:
    data = dumbbell(bottleneck_delay="10ms", rtt="15ms")
    assert error_of(data) == "topology.rtt: 15ms is shorter than twice the bottleneck delay (2 x 10ms)"


def test_dumbbell_per_flow_rtt_error_names_the_flow() -> None:
    data = dumbbell(bottleneck_delay="10ms")
    del data["topology"]["flows"]
    data["flows"] = [{"rtt": "40ms"}, {"rtt": "19ms"}]
    assert error_of(data).startswith("flows[1].rtt: 19ms is shorter than twice the bottleneck delay")


def test_dumbbell_flow_count_must_match_the_list() -> None:
    data = dumbbell(flows=3)
    data["flows"] = [{}, {}]
    assert error_of(data) == "topology.flows: 3 flows, but 2 are listed in [[flows]]"


def test_dumbbell_needs_an_rtt() -> None:
    data = dumbbell()
    del data["topology"]["rtt"]
    assert error_of(data).startswith("flows[0].rtt: missing")


def test_dumbbell_layout_and_defaults() -> None:
    engine = Scenario.from_dict(dumbbell(loss=0.01)).to_engine()
    names = [n["name"] for n in engine["nodes"]]
    assert names == ["left", "right", "src_0", "dst_0", "src_1", "dst_1"]
    btl = engine["links"][0]
    assert (names[btl["a"]], names[btl["b"]]) == ("left", "right")
    assert btl["rate"] == 10_000_000 and btl["loss"] == 0.01
    assert link_queue(engine, btl, "forward") == link_queue(engine, btl, "backward") == {
        "kind": "fifo", "limit_packets": 20, "limit_bytes": None}
    access = engine["links"][1:]
    assert all(link["rate"] == 100_000_000 and link["loss"] == 0.0 for link in access)  # 10 x bottleneck
    # Every forward direction carries data: src -> left, left -> right, right -> dst.
    assert [(names[link["a"]], names[link["b"]]) for link in access] == [
        ("src_0", "left"), ("right", "dst_0"), ("src_1", "left"), ("right", "dst_1")]


def test_dumbbell_refuses_explicit_nodes() -> None:
    data = dumbbell()
    data["nodes"] = [{"name": "x", "kind": "host"}]
    assert error_of(data).startswith("nodes: a dumbbell topology builds its own nodes and links")


# --- the engine spec ---------------------------------------------------------------------------

def test_engine_spec_spells_out_every_tcp_default() -> None:
    engine = Scenario.from_dict(graph()).to_engine()
    assert flow_tcp(engine, engine["flows"][0]) == engine_tcp_defaults()
    assert engine["flows"][0]["traffic"] == {"kind": "greedy"}
    assert engine["sample_interval"] == 10_000_000
    assert engine["seed"] == 1


def test_tcp_options_layer_defaults_then_flow() -> None:
    data = graph(flow_defaults={"tcp": {"mss": 1000, "recovery": "classic", "min_rto": "1s"}},
                 flows=[{"src": "h1", "dst": "h2", "tcp": {"mss": 500, "delayed_ack": False, "rwnd": "64KiB"}}])
    engine = Scenario.from_dict(data).to_engine()
    tcp = flow_tcp(engine, engine["flows"][0])
    assert tcp["mss"] == 500 and tcp["recovery"] == "classic" and tcp["min_rto"] == 1_000_000_000
    assert tcp["ack_every"] == 1 and tcp["rwnd"] == 65_536


def test_finite_traffic_and_times_resolve_to_base_units() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "traffic": {"kind": "finite", "bytes": "1.5MB"},
                         "start": "100ms", "stop": "900ms"}])
    flow = Scenario.from_dict(data).to_engine()["flows"][0]
    assert flow["traffic"] == {"kind": "finite", "bytes": 1_500_000}
    assert (flow["start"], flow["stop"]) == (100_000_000, 900_000_000)


def test_per_direction_queues_and_unlimited_rate() -> None:
    data = graph()
    data["links"][0].update(rate="unlimited", queue_forward="1.25MB", queue_backward="5p")
    engine = Scenario.from_dict(data).to_engine()
    link = engine["links"][0]
    assert link["rate"] is None
    assert link_queue(engine, link, "forward") == {"kind": "fifo", "limit_packets": None, "limit_bytes": 1_250_000}
    assert link_queue(engine, link, "backward") == {"kind": "fifo", "limit_packets": 5, "limit_bytes": None}


def test_sample_interval_off_records_no_series() -> None:
    assert Scenario.from_dict(graph(sample_interval="off")).to_engine()["sample_interval"] is None


def test_a_warm_up_goes_to_the_engine_in_ns_and_must_end_before_the_run() -> None:
    engine = Scenario.from_dict(graph(duration="10s", record={"warmup": "2.5s"})).to_engine()
    assert engine["record"]["warmup"] == 2_500_000_000
    # None: the key stays out of the engine's input, whose canonical form (the run's identity)
    # is then what it was before the key existed.
    assert "warmup" not in Scenario.from_dict(graph(record={"links": "all"})).to_engine()["record"]
    assert error_of(graph(duration="10s", record={"warmup": "10s"})) == (
        "record.warmup: 10s does not end before the run does (duration 10s)")
    assert error_of(graph(record={"warmup": "-1s"})).startswith("record.warmup: ")


def test_engine_json_is_canonical() -> None:
    a = Scenario.from_dict(graph()).to_engine_json()
    reordered = graph()
    reordered["links"][0] = dict(reversed(list(reordered["links"][0].items())))
    assert Scenario.from_dict(reordered).to_engine_json() == a
    assert json.loads(a)["links"][0]["delay"] == 1_000_000


def test_bottleneck_by_link_or_channel_name() -> None:
    assert Scenario.from_dict(graph(bottleneck="l1")).resolve().bottleneck == 2
    assert Scenario.from_dict(graph(bottleneck="l1_backward")).resolve().bottleneck == 3
    assert error_of(graph(bottleneck="l7")).startswith('bottleneck: unknown link or channel "l7"')


# --- to and from Python objects ------------------------------------------------------------------

def test_round_trip_through_dict_keeps_the_engine_spec() -> None:
    data = graph(flow_defaults={"tcp": {"sack": False}}, seed=9)
    data["links"][1]["loss"] = "1%"
    scenario = Scenario.from_dict(data)
    again = Scenario.from_dict(json.loads(json.dumps(scenario.to_dict())))
    assert again.to_engine_json() == scenario.to_engine_json()
    assert scenario.to_dict()["links"][1]["rate"] == "10Mbps"


def test_scenario_built_from_python_objects() -> None:
    scenario = Scenario(
        duration="2s",
        nodes=[Node(name="a", kind="host"), Node(name="b", kind="host")],
        links=[Link(a="a", b="b", rate="1Gbps", delay="250us", queue="100p")],
        flows=[Flow(src="a", dst="b", cca="newreno", traffic={"kind": "finite", "bytes": 10_000})],
    )
    engine = scenario.to_engine()
    assert engine["links"][0]["name"] == "a_b" and engine["links"][0]["delay"] == 250_000
    assert engine["flows"][0]["traffic"] == {"kind": "finite", "bytes": 10_000}
    assert Scenario.from_dict(scenario.to_dict()).to_engine() == engine


def test_with_seed_changes_only_the_seed() -> None:
    scenario = Scenario.from_dict(graph(seed=1))
    reseeded = scenario.with_seed(2)
    a, b = scenario.to_engine(), reseeded.to_engine()
    assert b["seed"] == 2
    assert {**a, "seed": 2} == b


def _user_field_by_scan(aliases: dict[str, str], engine_field: str) -> str:
    """The definition, by scanning every alias (longest first), then every alias of a list's
    entries (``links[*]``) for the path with its first index as ``[*]``."""
    for prefix in sorted(aliases, key=len, reverse=True):
        if engine_field == prefix or engine_field.startswith((prefix + ".", prefix + "[")):
            return aliases[prefix] + engine_field[len(prefix):]
    head, _, rest = engine_field.partition("[")
    index, _, tail = rest.partition("]")
    if index.isdigit():
        for prefix in sorted((a for a in aliases if a.startswith(f"{head}[*]")), key=len, reverse=True):
            generic = f"{head}[*]{tail}"
            if generic == prefix or generic.startswith((prefix + ".", prefix + "[")):
                return aliases[prefix] + generic[len(prefix):]
    return engine_field


def test_user_field_replaces_the_longest_aliased_prefix_at_a_path_boundary() -> None:
    from bufferlab.spec.resolved import user_field

    aliases = {"links[1]": "topology.access", "links[1].queue_forward": "topology.queue", "flows": "topology.flows"}
    assert user_field(aliases, "links[1].queue_forward.limit_packets") == "topology.queue.limit_packets"
    assert user_field(aliases, "links[1].rate") == "topology.access.rate"
    assert user_field(aliases, "links[10].rate") == "links[10].rate"  # "links[1" is no prefix of a path part
    assert user_field(aliases, "flows[3].cca") == "topology.flows[3].cca"
    assert user_field(aliases, "flowsx") == "flowsx"
    # An alias of every entry of a list without one of its own.
    aliases = {"links[0]": "topology", "links[0].rate": "topology.bottleneck_rate", "links[*]": "topology",
               "links[*].rate": "topology.access_rate"}
    assert user_field(aliases, "links[0].rate") == "topology.bottleneck_rate"
    assert user_field(aliases, "links[0].delay") == "topology.delay"
    assert user_field(aliases, "links[12].rate") == "topology.access_rate"
    assert user_field(aliases, "links[12].queue_forward.limit") == "topology.queue_forward.limit"
    assert user_field(aliases, "links[x].rate") == "links[x].rate" and user_field(aliases, "nodes[3]") == "nodes[3]"


def test_user_field_agrees_with_a_scan_of_every_alias_of_a_large_dumbbell() -> None:
    scenario = Scenario.from_dict({"name": "d", "duration": "1s", "topology": {
        "kind": "dumbbell", "flows": 120, "bottleneck_rate": "1Gbps", "rtt": "40ms", "queue": "100p"}})
    resolved = scenario.resolve()
    aliases = resolved.field_aliases
    assert "links[*].queue_forward" in aliases and not any(a.startswith("links[7]") for a in aliases)
    paths = [*aliases, *(f"{a}.x" for a in aliases), *(f"{a}[0].y" for a in aliases), "links[999].queue", "z",
             *(f"links[{k}].{key}" for k in (0, 1, 7, 119) for key in ("rate", "delay", "queue_forward.limit"))]
    for path in paths:
        assert resolved.user_field(path) == _user_field_by_scan(aliases, path), path


# --- the resolution kept from validation (a run resolves its spec once) -------------------------

def test_first_resolve_after_validation_is_what_a_fresh_resolution_gives() -> None:
    s = Scenario.from_dict(dumbbell(rtt={"dist": "uniform", "low": "20ms", "high": "200ms"}, flows=5))
    kept, fresh = s.resolve(), s._resolve()
    assert kept is not fresh
    assert kept == fresh


def test_each_resolve_hands_out_a_resolution_of_its_own() -> None:
    s = Scenario.from_dict(dumbbell())
    first = s.resolve()
    first.engine["seed"] = 99  # a caller changing its copy (plan sets the seed of a seedless run to 0)
    second = s.resolve()
    assert second is not first and second.engine["seed"] == s.seed


def test_a_changed_scenario_is_resolved_again() -> None:
    s = Scenario.from_dict(dumbbell())
    s.seed = 7
    assert s.resolve().engine["seed"] == 7
    s = Scenario.from_dict(dumbbell())
    assert s.topology is not None
    s.topology.flows = 3  # a nested field
    assert len(s.resolve().engine["flows"]) == 3


def test_a_field_mutated_in_place_is_seen_even_when_it_was_never_set() -> None:
    s = Scenario.from_dict(graph())
    assert "captures" not in s.model_fields_set
    s.captures.append(Scenario.from_dict(graph(captures=[{"link": "l1"}])).captures[0])
    assert s.resolve().engine["captures"] == [{"link": 1, "direction": "forward"}]


def test_setting_an_option_to_its_default_value_is_seen() -> None:
    # An unset access_rate is ten times the bottleneck's; set to None it means unlimited.
    s = Scenario.from_dict(dumbbell())
    assert s.topology is not None and s.topology.access_rate is None
    s.topology.access_rate = None
    assert s.resolve().engine["links"][1]["rate"] is None


def test_a_copy_resolves_its_own_fields() -> None:
    s = Scenario.from_dict(dumbbell())
    copy = s.model_copy(update={"seed": 5})
    assert copy.resolve().engine["seed"] == 5
    assert s.resolve().engine["seed"] == s.seed


def test_pickles_and_deep_copies_carry_no_kept_resolution() -> None:
    import copy
    import pickle

    s = Scenario.from_dict(dumbbell())
    for other in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert other._validation.resolved is None
        assert other.resolve() == s._resolve()


def test_dumbbell_hosts_access_links_and_counted_flows_read_as_the_models_they_stand_for() -> None:
    s = Scenario.from_dict(dumbbell(rtt={"dist": "uniform", "low": "20ms", "high": "200ms"}, flows=4,
                                    access_rate="1Gbps", access_queue="30p"))
    from bufferlab.spec.scenario import _expand_dumbbell

    assert s.topology is not None
    nodes, links, flows, _, _ = _expand_dumbbell(s, s.topology)  # type: ignore[arg-type]
    for flow in flows:  # the flows topology.flows counts: an empty flow's values, and their ends
        assert {name: getattr(flow, name) for name in flow._fields} == {
            name: getattr(Flow(src=flow.src, dst=flow.dst), name) for name in flow._fields}
    assert isinstance(links[0], Link) and links[0].model_dump(mode="json", exclude_unset=True)["name"] == "btl"
    for link in links[1:]:  # the access links: no models, the values a written [[links]] entry validates to
        written = {"name": link.name, "a": link.a, "b": link.b, "rate": "1Gbps", "delay": f"{link.delay}ns",
                   "queue": "30p"}
        assert {name: getattr(link, name) for name in Link.model_fields} == dict(Link.model_validate(written))
    for node in nodes[2:]:  # the hosts
        assert {name: getattr(node, name) for name in Node.model_fields} == dict(
            Node.model_validate({"name": node.name, "kind": "host"}))


@pytest.mark.parametrize("prebuilt, spelling, default", [
    ("PositiveCount", "StrictInt | None = Field(default=None, gt=0)", None),
    ("Switch", "StrictBool | None = None", None),
    ("Name", "str = Field(min_length=1)", ...),
    ("OptionalName", "str | None = Field(default=None, min_length=1)", None),
    ("FlowCount", "StrictInt | None = Field(default=None, gt=0, le=MAX_FLOWS)", None),
    ("Seed", "StrictInt = Field(default=1, ge=0, lt=2**64)", 1),
    ("Count", "StrictInt | None = None", None),
    ("Frequency", "float | None = Field(default=None, allow_inf_nan=False)", None),
])
def test_a_prebuilt_field_type_validates_as_its_pydantic_spelling(prebuilt: str, spelling: str, default: Any) -> None:
    # `spec.parsed.Prebuilt`: the constraints applied once where the type is defined must accept,
    # reject and word their errors as pydantic's own spelling at each field did.
    from pydantic import BaseModel, Field, StrictBool, StrictInt, ValidationError

    from bufferlab.spec import fields, scenario

    names = {"Field": Field, "StrictBool": StrictBool, "StrictInt": StrictInt, "MAX_FLOWS": scenario.MAX_FLOWS,
             "BaseModel": BaseModel, "T": getattr(fields, prebuilt, None) or getattr(scenario, prebuilt)}
    for source in (f"class Spelled(BaseModel):\n    x: {spelling}\n",
                   "class Prebuilt(BaseModel):\n    x: T" + ("" if default is ... else f" = {default!r}") + "\n"):
        # Annotations evaluated as the class is made (not this module's postponed ones).
        exec(compile(source, "<model>", "exec", dont_inherit=True), names)

    def outcome(model: Any, value: Any) -> Any:
        try:
            return ("ok", model.model_validate({} if value is ... else {"x": value}).model_dump())
        except ValidationError as e:
            return [(err["type"], err["loc"], err["msg"]) for err in e.errors(include_url=False)]

    values = [..., None, 0, 1, 3, -2, 2**64 - 1, 2**64, 100_000, 100_001, 2.5, 3.0, float("nan"), float("inf"), True,
              False, "", "x", "3", "true", [], {}]
    for value in values:
        assert outcome(names["Prebuilt"], value) == outcome(names["Spelled"], value), value


@pytest.mark.parametrize("ends, expected", [
    ({"dst": "h2"}, "flows[1].src: missing required key"),
    ({"src": "h1"}, "flows[1].dst: missing required key"),
    ({"src": "h9", "dst": "r"}, 'flows[1].src: unknown node "h9"'),
    ({"src": "r", "dst": "h9"}, 'flows[1].dst: unknown node "h9"'),
    ({"src": "r", "dst": "r"}, 'flows[1].src: "r" is a router; flows run between hosts'),
    ({"src": "h2", "dst": "r"}, 'flows[1].dst: "r" is a router; flows run between hosts'),
    ({"src": "h2", "dst": "h2"}, 'flows[1].dst: same node as src ("h2")'),
])
def test_a_flow_s_ends_are_checked_in_order_after_a_good_flow(ends: dict[str, str], expected: str) -> None:
    assert error_of(graph(flows=[{"src": "h1", "dst": "h2"}, ends])).startswith(expected)


def test_flows_and_links_refer_to_one_listed_entry_of_what_they_share() -> None:
    data = dumbbell(flows=4, rtt="20ms")
    data["flow_defaults"] = {"tcp": {"mss": 1000, "delayed_ack": False}, "quic": {"ack_every": 2}}
    data["flows"] = [{}, {"tcp": {"sack": False}},
                     {"traffic": {"kind": "finite", "bytes": "10kB"}, "transport": "quic"},
                     {"transport": "quic"}]
    engine = Scenario.from_dict(data).resolve().engine
    first, own, third, fourth = engine["flows"]
    assert flow_tcp(engine, first) == {**engine_tcp_defaults(), "mss": 1000, "ack_every": 1}
    assert flow_tcp(engine, own) == {**flow_tcp(engine, first), "sack": False}
    # A TCP flow has no QUIC entry (it would say nothing about the run); a QUIC flow has both.
    assert "quic" not in first and "quic" not in own and flow_quic(engine, third)["ack_every"] == 2
    assert first["traffic"] == own["traffic"] == {"kind": "greedy"} != third["traffic"]
    # One entry of each for the flows that take it from the defaults, one for the flow with its
    # own options, and one queue for all the access channels.
    assert first["tcp"] == third["tcp"] == fourth["tcp"] == 0 and own["tcp"] == 1
    assert len(engine["tcp_options"]) == 2 and third["quic"] == fourth["quic"] == 0
    assert {link[side] for link in engine["links"][1:] for side in ("queue_forward", "queue_backward")} == {1}
    assert len(engine["queues"]) == 2
    # An entry is named as the field it was written in: the engine's refusal of one names it.
    resolved = Scenario.from_dict(data).resolve()
    assert resolved.user_field("tcp_options[0].mss") == "flow_defaults.tcp.mss"
    assert resolved.user_field("tcp_options[1].sack") == "flows[1].tcp.sack"
    assert resolved.user_field("tcp_options[1].mss") == "flow_defaults.tcp.mss"
    assert resolved.user_field("quic_options[0].ack_every") == "flow_defaults.quic.ack_every"
    assert resolved.user_field("queues[0].limit") == "topology.queue.limit"
    assert resolved.user_field("queues[1]") == "topology.access_queue"


def test_a_min_rto_above_max_rto_names_the_table_it_was_written_in() -> None:
    data = graph(flows=[{"src": "h1", "dst": "h2", "tcp": {"max_rto": "3s"}}, {"src": "h1", "dst": "h2"}])
    data["flow_defaults"] = {"tcp": {"min_rto": "2s", "max_rto": "1s"}}
    assert error_of(data) == "flow_defaults.tcp.min_rto: minimum RTO above the maximum"  # flows[1] takes them
    data["flows"][0]["tcp"] = {"max_rto": "1s"}
    assert error_of(data) == "flow_defaults.tcp.min_rto: minimum RTO above the maximum"  # flows[0] takes min_rto
    data["flows"][0]["tcp"] = {"min_rto": "2s", "max_rto": "1s"}
    assert error_of(data) == "flows[0].tcp.min_rto: minimum RTO above the maximum"
