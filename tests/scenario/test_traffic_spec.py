"""Traffic in the spec: generators spread over hosts, distributions with units, datagram sources,
token-bucket queues and loss models, and how they reach the engine and the store."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bufferlab import runner
from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_tcp, link_queue
from conftest import EMPIRICAL_SIZES_SCENARIO, bufferlab

MS = 1_000_000


def tree(*generators: dict, **extra) -> dict:
    return {"name": "t", "duration": "3s", "sample_interval": "off",
            "topology": {"kind": "tree", "queue": "100p"}, "generators": list(generators), **extra}


def test_generators_spread_over_the_hosts_their_patterns_select() -> None:
    resolved = Scenario.from_dict(tree(
        {"name": "pers", "kind": "persistent", "sources": ["h1_*", "h2_0"], "dst": "sink", "flows": 2},
        {"name": "mice", "kind": "poisson", "sources": "h3_*", "dst": "sink", "arrivals_per_s": 3,
         "size": {"dist": "pareto", "shape": 1.5, "mean": "30kB"}, "start": "1s", "stop": "2s"},
        {"name": "cl", "kind": "closed_loop", "dst": "sink", "users": 4,
         "size": {"dist": "lognormal", "median": "10kB", "sigma": 1.0},
         "think": {"dist": "exponential", "mean": "1s"}},
    )).resolve()
    assert resolved.flow_names == [f"pers_{h}_{k}" for h in ("h1_0", "h1_1", "h2_0") for k in (0, 1)]
    generators = resolved.engine["generators"]
    mice = [g for g in generators if g["name"].startswith("mice_")]
    assert [g["name"] for g in mice] == [f"mice_h3_{j}" for j in range(8)]
    assert mice[0]["model"] == {"kind": "poisson", "arrivals_per_s": 3,
                                "size": {"dist": "pareto", "shape": 1.5, "scale": 10_000.0}}
    assert (mice[0]["start"], mice[0]["stop"]) == (1_000_000_000, 2_000_000_000)
    users = [g for g in generators if g["name"].startswith("cl_")]
    assert len(users) == 14, "default sources: every host but the destination"
    assert users[0]["model"]["size"] == {"dist": "lognormal", "mu": math.log(10_000), "sigma": 1.0}
    assert users[0]["model"]["think"] == {"dist": "exponential", "mean": 1e9}
    assert flow_tcp(resolved.engine, users[0])["mss"] == 1448


@pytest.mark.parametrize("generator, message", [
    ({"kind": "poisson", "dst": "sink", "size": {"dist": "fixed", "value": "1kB"}},
     "generators[0].arrivals_per_s: missing required key of a poisson generator"),
    ({"kind": "persistent", "dst": "sink", "flows": 1, "users": 3}, "generators[0].users: not a key of a persistent"),
    ({"kind": "persistent", "dst": "sink", "flows": 1, "sources": "x*"}, 'generators[0].sources: "x*" matches no host'),
    ({"kind": "persistent", "dst": "target1", "flows": 1}, 'generators[0].dst: "target1" is a router'),
    ({"kind": "poisson", "dst": "sink", "arrivals_per_s": 1, "size": {"dist": "pareto", "shape": 0.9, "mean": "1kB"}},
     "generators[0].size.mean: a Pareto of shape 0.9 <= 1 has no finite mean"),
    ({"kind": "poisson", "dst": "sink", "arrivals_per_s": 1, "size": {"dist": "exponential", "mean": "0B"}},
     "generators[0].size: mean must be positive, got 0"),
    ({"kind": "closed_loop", "dst": "sink", "users": 1, "size": {"dist": "fixed", "value": "1kB"},
      "think": {"dist": "weibull"}}, "generators[0].think.dist: unknown distribution 'weibull'"),
    ({"kind": "cbr", "dst": "sink", "rate": "1Mbps", "packet": "20B"},
     "generators[0].packet: 20 B: a datagram has 28 header bytes"),
])
def test_bad_generators_are_named_with_their_reason(generator, message) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):  # by the spec layer, or the engine's checks
        plan(Scenario.from_dict(tree(generator)))


def test_empirical_sizes_come_from_a_file_next_to_the_scenario(write_scenario, tmp_path) -> None:
    (tmp_path / "sizes.cdf").write_text("# bytes  P(size <= bytes)\n1000 0.5\n100000 1.0\n", encoding="utf-8")
    path = write_scenario(EMPIRICAL_SIZES_SCENARIO)
    scenario = Scenario.from_toml(path)
    engine = scenario.to_engine()
    assert engine["generators"][0]["model"]["size"] == {"dist": "empirical", "points": [[1000.0, 0.5], [100000.0, 1.0]]}
    assert scenario.with_seed(9).to_engine()["generators"] == engine["generators"]


def test_token_bucket_queue_and_loss_model_round_trip() -> None:
    spec = {"name": "shaped", "duration": "1s",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
            "links": [{"a": "a", "b": "b", "rate": "1Gbps", "delay": "1ms",
                       "queue_forward": {"kind": "tbf", "rate": "100mbit", "burst": "32KiB", "limit": "1.25MB"},
                       "loss_model": {"kind": "gilbert_elliott", "p": 0.001, "r": "25%"}}],
            "flows": [{"src": "a", "dst": "b"}]}
    scenario = Scenario.from_dict(spec)
    engine = scenario.to_engine()
    link = engine["links"][0]
    assert link_queue(engine, link, "forward") == {"kind": "tbf", "rate": 100_000_000, "burst": 32_768,
                                                   "limit": 1_250_000}
    assert link["loss_model"] == {"kind": "gilbert_elliott", "p": 0.001, "r": 0.25, "loss_good": 0.0, "loss_bad": 1.0}
    assert Scenario.from_dict(scenario.to_dict()).to_engine() == scenario.to_engine()


@pytest.mark.engine
def test_a_small_tbf_bucket_is_refused_by_the_engine_naming_the_queue() -> None:
    spec = {"name": "shaped", "duration": "1s",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
            "links": [{"name": "ab", "a": "a", "b": "b", "rate": "1Gbps", "delay": "1ms",
                       "queue_forward": {"kind": "tbf", "rate": "1Mbps", "burst": "1000B", "limit": "10kB"}}],
            "flows": [{"src": "a", "dst": "b"}]}
    with pytest.raises(SpecError, match="links\\[0\\].queue_forward: a 1000-byte bucket never holds the tokens"):
        runner.validate(Scenario.from_dict(spec))


@pytest.mark.engine
def test_generated_flows_are_summarised_and_stored_with_their_hosts(write_scenario, db) -> None:
    path = write_scenario("""
        name = "mice"
        duration = "3s"
        sample_interval = "100ms"
        [topology]
        kind = "tree"
        queue = "50p"
        [[generators]]
        name = "bulk"
        kind = "persistent"
        sources = "h1_0"
        dst = "sink"
        flows = 1
        [[generators]]
        name = "mice"
        kind = "poisson"
        sources = ["h1_1", "h2_3"]
        dst = "sink"
        arrivals_per_s = 10
        size = { dist = "exponential", mean = "20kB" }
        [[generators]]
        name = "udp"
        kind = "cbr"
        sources = "h3_5"
        dst = "sink"
        rate = "2Mbps"
    """)
    import json

    first = bufferlab("run", str(path), "--db", str(db), "--json")
    assert first.returncode == 0, first.stderr
    flows = json.loads(first.stdout)["flows"]
    assert [f["name"] for f in flows[:2]] == ["bulk_h1_0_0", "udp_h3_5"]
    mice = flows[2:]
    assert len(mice) > 30 and all(f["name"].startswith(("mice_h1_1#", "mice_h2_3#")) for f in mice)
    assert all((f["src"], f["dst"]) == (f["name"][5:9], "sink") for f in mice)
    udp = flows[1]
    assert udp["bytes_delivered"] > 0.99 * 2e6 / 8 * (3 - 0.3) * 1472 / 1500
    again = bufferlab("run", str(path), "--db", str(db), "--json")
    assert json.loads(again.stdout)["from_store"] is True
    assert json.loads(again.stdout)["flows"] == flows


@pytest.mark.engine
def test_closed_loop_sizes_and_think_times_follow_their_distributions() -> None:
    scenario = Scenario.from_dict({
        "name": "cl", "duration": "60s", "sample_interval": "off", "seed": 4,
        "topology": {"kind": "tree", "queue": "500p", "levels": 1, "level_delays": ["1ms"]},
        "generators": [{"name": "cl", "kind": "closed_loop", "dst": "sink", "users": 10,
                        "size": {"dist": "uniform", "low": "10kB", "high": "30kB"},
                        "think": {"dist": "fixed", "value": "200ms"}}]})
    result = runner.simulate(scenario)[0].counters()
    flows = [f for f in result["flows"] if f["completed_ns"] is not None]
    sizes = np.array([f["bytes_delivered"] for f in flows])
    assert sizes.min() >= 10_000 and sizes.max() <= 30_000
    assert abs(sizes.mean() / 20_000 - 1) < 4 * (20_000 / math.sqrt(12)) / 20_000 / math.sqrt(len(sizes))
    by_user: dict[tuple[int, int], list[dict]] = {}
    for f in result["flows"]:
        by_user.setdefault((f["generator"], f["user"]), []).append(f)
    assert len(by_user) == 20
    thinks = {b["start_ns"] - a["completed_ns"] for fs in by_user.values() for a, b in zip(fs, fs[1:])}
    assert thinks == {200 * MS}, "a fixed think time is realised to the nanosecond"


def test_seed_004_shaper_reads_tc_units_as_tc_does() -> None:
    from conftest import SCENARIOS

    engine = Scenario.from_toml(SCENARIOS / "shaped_bottleneck.toml").to_engine()
    shaper = link_queue(engine, next(link for link in engine["links"] if link["name"] == "g1_g2"), "forward")
    # tbf rate 100mbit burst 32kB limit 1.25Mb: tc's kb and mb are 1024 and 1024² bytes.
    assert shaper == {"kind": "tbf", "rate": 100_000_000, "burst": 32 * 1024, "limit": 1_310_720}
    delays = {link["name"]: link["delay"] for link in engine["links"]}
    assert 2 * (delays["s1_g1"] + delays["g1_g2"] + delays["g2_d1"]) == 100 * MS
    assert 2 * (delays["s2_g1"] + delays["g1_g2"] + delays["g2_d2"]) == 50 * MS


def test_engine_generated_transfers_are_tcp() -> None:
    spec = tree({"kind": "poisson", "dst": "sink", "arrivals_per_s": 1, "size": {"dist": "fixed", "value": "1kB"}},
                flow_defaults={"transport": "quic"})
    with pytest.raises(SpecError, match='generators\\[0\\].kind: poisson transfers are TCP connections'):
        Scenario.from_dict(spec)


@pytest.mark.engine
def test_a_dumbbell_bottleneck_with_gilbert_loss_drops_at_the_stationary_rate() -> None:
    # Gilbert's model p = 1 %, r = 25 %: loss rate p/(p + r) = 3.85 %, bursts of 4 packets.
    scenario = Scenario.from_dict({
        "name": "bursty", "duration": "20s", "sample_interval": "off",
        "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": "100Mbps", "queue": "100p", "rtt": "20ms",
                     "loss_model": {"kind": "gilbert_elliott", "p": 0.01, "r": 0.25}},
        "flows": [{"traffic": {"kind": "cbr", "rate": "50Mbps"}}]})
    result = runner.simulate(scenario)[0].counters()
    btl = next(c for c in result["channels"] if c["name"] == "btl_forward")
    rate = btl["dropped_loss_packets"] / btl["sent_packets"]
    assert abs(rate / (0.01 / 0.26) - 1) < 0.2, rate
    # Datagrams are counted, not recovered: what arrived is what the link did not lose.
    assert result["flows"][0]["bytes_delivered"] < (1 - 0.8 * 0.01 / 0.26) * result["flows"][0]["payload_bytes_sent"]


@pytest.mark.engine
def test_seed_004_shaped_link_is_full_at_its_token_rate() -> None:
    # Two HighSpeed flows through the 100 Mbit token bucket: the summary reports the shaper's
    # rate and a full link, not the 10 % the 1 Gb/s line's busy time alone would say.
    from conftest import SCENARIOS
    from bufferlab.analysis import summary

    data = Scenario.from_toml(SCENARIOS / "shaped_bottleneck.toml").to_dict()
    data["duration"] = "20s"
    scenario = Scenario.from_dict(data)
    result = runner.simulate(scenario)[0].counters()
    chosen = summary.pick_bottleneck(result["channels"], scenario.resolve().bottleneck)
    btl = summary.summarise_channel(result["channels"][chosen], result["end_ns"])
    assert btl.channel == "g1_g2_forward" and btl.rate_mbps == 100.0
    assert btl.utilisation is not None and btl.utilisation > 0.9
