"""The example scenarios load, pass the engine's checks, and say what they claim."""

from __future__ import annotations

import math

import pytest

from bufferlab import runner
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_tcp, link_queue
from conftest import SCENARIOS


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_example_scenario_is_valid(path) -> None:
    scenario = Scenario.from_toml(path)
    runner.validate(scenario)


def test_there_are_the_promised_examples() -> None:
    names = {p.stem for p in SCENARIOS.glob("*.toml")}
    assert {"dumbbell", "shallow_buffers", "quic_sizing", "quic_sizing_tcp", "parking_lot"} <= names


def test_reference_dumbbell_is_the_issue_s() -> None:
    engine = Scenario.from_toml(SCENARIOS / "dumbbell.toml").to_engine()
    links = {link["name"]: link for link in engine["links"]}
    assert len(engine["flows"]) == 10 and engine["duration"] == 30_000_000_000
    assert links["btl"]["rate"] == 100_000_000 and links["btl"]["delay"] == 10_000_000
    assert link_queue(engine, links["btl"], "forward")["limit_packets"] == 100
    access = [link for name, link in links.items() if name != "btl"]
    assert len(access) == 20
    assert all(link["rate"] == 1_000_000_000 and link["delay"] == 5_000_000 for link in access)


def test_quic_sizing_buffer_follows_the_seed_s_formula() -> None:
    # B = ceil((2 Tp + Tt + Tt') C) + 1 packets with TCP's 1500-byte packets and 52-byte ACKs.
    engine = Scenario.from_toml(SCENARIOS / "quic_sizing_tcp.toml").to_engine()
    btl = next(link for link in engine["links"] if link["name"] == "bottleneck")
    tcp = flow_tcp(engine, engine["flows"][0])
    packet, ack = tcp["mss"] + tcp["header_bytes"], tcp["header_bytes"]
    rate, tp = btl["rate"], btl["delay"] / 1e9
    c = rate / (packet * 8)
    expected = math.ceil((2 * tp + packet * 8 / rate + ack * 8 / rate) * c) + 1
    assert link_queue(engine, btl, "forward")["limit_packets"] == expected == 19
    assert tcp["ack_every"] == 1
    others = [link for link in engine["links"] if link["name"] != "bottleneck"]
    assert all(link["rate"] is None and link["delay"] == 0 for link in others)


def test_quic_sizing_keeps_the_bottleneck_busy() -> None:
    # Seed 003's claim, on a shortened run: with B from the formula the sender never lets the
    # bottleneck idle after the first seconds, so goodput reaches its payload capacity.
    data = Scenario.from_toml(SCENARIOS / "quic_sizing_tcp.toml").to_dict()
    data["duration"] = "3s"
    result = runner.simulate(Scenario.from_dict(data))[0].counters()
    flow = result["flows"][0]
    capacity = 100e6 * 1448 / 1500  # payload bits per second of a 100 Mb/s link
    goodput = flow["bytes_delivered"] * 8 / 3.0
    assert goodput >= 0.99 * capacity  # slow start included
    assert flow["segments_retransmitted"] > 0  # the buffer did overflow: the sawtooth is real
