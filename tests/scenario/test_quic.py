"""QUIC flows from the spec to the store: `transport = "quic"`, `[flows.quic]` options, errors."""

from __future__ import annotations

import json

import polars as pl
import pytest

from bufferlab import runner
from bufferlab.errors import SpecError
from bufferlab.pipeline.result import EngineResult
from bufferlab.spec import Scenario, engine_quic_defaults
from bufferlab.spec.resolved import flow_quic, link_queue
from conftest import SCENARIOS, SMALL_DUMBBELL


def quic_dumbbell(**quic: object) -> Scenario:
    data = Scenario.from_toml_text(SMALL_DUMBBELL).to_dict()
    data.setdefault("flow_defaults", {})["transport"] = "quic"
    if quic:
        data["flow_defaults"]["quic"] = quic
    return Scenario.from_dict(data)


def test_python_quic_defaults_are_the_engine_s() -> None:
    spelled = quic_dumbbell().to_engine()
    assert all(f["transport"] == "quic" and flow_quic(spelled, f) == engine_quic_defaults() for f in spelled["flows"])
    implicit = json.loads(json.dumps(spelled))
    for flow in implicit["flows"]:
        del flow["quic"]
    core = runner.core()
    run = lambda spec: EngineResult.from_engine(core.run(json.dumps(spec)))  # noqa: E731
    assert run(spelled).equals(run(implicit))


def test_quic_options_take_units_and_reach_the_engine() -> None:
    engine = quic_dumbbell(max_datagram="1452B", ack_every=2, max_ack_delay="10ms", lower_layer="35B").to_engine()
    quic = flow_quic(engine, engine["flows"][0])
    assert quic["max_datagram"] == 1452 and quic["ack_every"] == 2
    assert quic["max_ack_delay"] == 10_000_000 and quic["lower_layer"] == 35


def test_quic_flows_deliver_and_tcp_stays_the_default() -> None:
    tcp = Scenario.from_toml_text(SMALL_DUMBBELL)
    assert all(f["transport"] == "tcp" for f in tcp.to_engine()["flows"])
    result = runner.simulate(quic_dumbbell())[0].counters()
    for flow in result["flows"]:
        assert flow["bytes_delivered"] > 0 and flow["established_ns"] is not None
    # The receiver's in-order byte count never exceeds what the sender saw acknowledged plus a window.
    assert all(f["bytes_acked"] <= f["bytes_delivered"] for f in result["flows"])


def test_an_unknown_transport_is_a_one_line_error() -> None:
    data = Scenario.from_toml_text(SMALL_DUMBBELL).to_dict()
    data.setdefault("flow_defaults", {})["transport"] = "sctp"
    with pytest.raises(SpecError) as e:
        Scenario.from_dict(data)
    assert str(e.value).startswith("flow_defaults.transport:")


def test_engine_rejects_a_datagram_too_small_for_its_overhead() -> None:
    scenario = quic_dumbbell(max_datagram="41B")
    with pytest.raises(SpecError) as e:
        runner.validate(scenario)
    assert str(e.value) == "flow_defaults.quic.max_datagram: must exceed packet_overhead to carry stream data"


def test_quic_sizing_scenario_has_the_seed_s_buffer_and_window() -> None:
    # Seed 003: B = 22 packets; the window peaks at W_max = 44 packets of 1252 bytes.
    scenario = Scenario.from_toml(SCENARIOS / "quic_sizing.toml")
    engine = scenario.to_engine()
    btl = next(link for link in engine["links"] if link["name"] == "bottleneck")
    assert link_queue(engine, btl, "forward")["limit_packets"] == 22
    result, _ = runner.simulate(scenario)
    first = result.flow_timeseries.filter(pl.col("flow") == 0)
    cwnd = first["cwnd_bytes"].to_numpy()
    times = first["time_ns"].to_numpy()
    after_startup = cwnd[times >= 4_000_000_000]
    assert int(after_startup.max()) // 1252 == 44
