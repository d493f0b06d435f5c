"""Per-flow RTTs drawn from a distribution, realised exactly as dumbbell access delays."""

from __future__ import annotations

import numpy as np
import pytest

from bufferlab import runner
from bufferlab.spec import RTT_STREAM, Scenario

MS = 1_000_000

# Seed 002's trace-driven evaluation: N = 100 flows, half from a lognormal mode near 130 ms of
# propagation RTT (US coast to coast), half near 60 ms (US to Asia/Europe).
BIMODAL = {"dist": "mixture", "components": [
    {"weight": 0.5, "dist": "lognormal", "median": "130ms", "sigma": 0.15},
    {"weight": 0.5, "dist": "lognormal", "median": "60ms", "sigma": 0.15},
]}


def dumbbell(rtt: dict, flows: int = 100, seed: int = 5, **topology) -> dict:
    return {"name": "rtts", "seed": seed, "duration": "2s", "sample_interval": "off",
            "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "100Mbps", "queue": "1000p",
                         "rtt": rtt, **topology}}


def path_rtt(engine: dict, flow: dict) -> int:
    """Twice the sum of one-way delays along src -> left -> right -> dst."""
    delay_of = {frozenset((link["a"], link["b"])): link["delay"] for link in engine["links"]}
    nodes = [n["name"] for n in engine["nodes"]]
    left, right = nodes.index("left"), nodes.index("right")
    hops = [(flow["src"], left), (left, right), (right, flow["dst"])]
    return 2 * sum(delay_of[frozenset(h)] for h in hops)


def test_bimodal_draws_are_realised_exactly_by_the_access_delays() -> None:
    resolved = Scenario.from_dict(dumbbell(BIMODAL)).resolve()
    # The draws, recomputed independently: 50 from each lognormal, in order, from the RTT stream.
    rng = np.random.default_rng(np.random.SeedSequence([5, RTT_STREAM]))
    draws = np.concatenate([rng.lognormal(np.log(130e6), 0.15, 50), rng.lognormal(np.log(60e6), 0.15, 50)])
    expected = [2 * int(round(x / 2)) for x in draws]
    assert resolved.flow_rtts_ns == expected
    for flow, rtt in zip(resolved.engine["flows"], expected):
        assert path_rtt(resolved.engine, flow) == rtt
    first, second = np.array(expected[:50]), np.array(expected[50:])
    assert 110 * MS < np.median(first) < 150 * MS and 50 * MS < np.median(second) < 70 * MS
    # The default bottleneck delay is a quarter of the smallest RTT, so every draw fits.
    btl = next(link for link in resolved.engine["links"] if link["name"] == "btl")
    assert btl["delay"] == min(expected) // 4


def test_draws_depend_on_the_seed_only() -> None:
    rtts = lambda seed: Scenario.from_dict(dumbbell(BIMODAL, seed=seed)).resolve().flow_rtts_ns  # noqa: E731
    assert rtts(5) == rtts(5)
    assert rtts(5) != rtts(6)


def test_listed_flows_keep_their_own_rtt_and_the_others_draw() -> None:
    spec = dumbbell({"dist": "uniform", "low": "20ms", "high": "200ms"}, flows=None)
    del spec["topology"]["flows"]
    spec["flows"] = [{"rtt": "10ms"}, {}, {}, {"rtt": "300ms"}]
    resolved = Scenario.from_dict(spec).resolve()
    rtts = resolved.flow_rtts_ns
    assert rtts[0] == 10 * MS and rtts[3] == 300 * MS
    assert all(20 * MS <= r <= 200 * MS for r in rtts[1:3])
    assert all(path_rtt(resolved.engine, f) == r for f, r in zip(resolved.engine["flows"], rtts))


def test_a_draw_below_twice_a_given_bottleneck_delay_is_raised_to_it() -> None:
    spec = dumbbell({"dist": "uniform", "low": "2ms", "high": "100ms"}, flows=50, bottleneck_delay="10ms")
    rtts = Scenario.from_dict(spec).resolve().flow_rtts_ns
    assert min(rtts) == 20 * MS


@pytest.mark.engine
def test_handshakes_measure_the_drawn_rtts_plus_serialisation() -> None:
    # With an empty network the SYN/SYN-ACK exchange takes the propagation RTT plus serialising a
    # 60-byte SYN and SYN-ACK on each of three links (1 Gb/s access, 100 Mb/s bottleneck).
    scenario = Scenario.from_dict(dumbbell({"dist": "lognormal", "median": "50ms", "sigma": 0.5}, flows=20))
    resolved = scenario.resolve()
    result = runner.simulate(scenario)[0].counters()
    serialisation_ps = 2 * (2 * 480_000 + 4_800_000)  # 60 B: 0.48 µs at 1 Gb/s, 4.8 µs at 100 Mb/s
    for flow, rtt in zip(result["flows"], resolved.flow_rtts_ns):
        measured = flow["established_ns"] - flow["start_ns"]
        assert measured == (rtt * 1000 + serialisation_ps) // 1000, flow["name"]
