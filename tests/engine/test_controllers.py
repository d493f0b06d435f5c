"""Every congestion controller runs from a spec and from the ccperf command line, and its state
reaches the time series and the store: pacing rate, controller state, delivery rate."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from bufferlab import runner
from bufferlab.analysis.metrics import FlowSeries
from bufferlab.errors import SpecError
from bufferlab.pipeline.result import EngineResult
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_tcp
from conftest import SMALL_DUMBBELL, bufferlab

CONTROLLERS = ("reno", "newreno", "cubic", "highspeed", "bbr", "bbr3", "dctcp", "prague", "vegas")
# The controllers that pace, and the state codes of each (cc/contract.rs, `state`).
# Prague paces always (draft-briscoe-iccrg-prague-congestion-control §2.5), at cwnd/SRTT.
PACED = ("bbr", "bbr3", "prague")
STATE_CODES = {"bbr3": {0, 1, 3, 4, 5, 6, 7}}
# What a controller needs of its TCP: DCTCP the per-packet ECN echo (over SMALL_DUMBBELL's FIFO,
# which drops, it answers losses only).
NEEDS = {"dctcp": 'tcp = { ecn = "dctcp" }', "prague": 'tcp = { ecn = "l4s" }'}


def with_controller(cca: str, tcp: str = "") -> str:
    return SMALL_DUMBBELL + f"""
    [flow_defaults]
    cca = "{cca}"
    {tcp}
"""


def series(result: EngineResult) -> dict[str, np.ndarray]:
    """Every per-flow series as a (flows, samples) array."""
    ts = FlowSeries.from_table(result.flow_timeseries)
    assert ts is not None
    return {name: ts.column(name) for name in result.flow_timeseries.columns}


@pytest.mark.parametrize("cca", CONTROLLERS)
def test_each_controller_records_pacing_state_and_delivery_rate(cca: str) -> None:
    scenario = Scenario.from_toml_text(with_controller(cca, NEEDS.get(cca, "")))
    assert scenario.to_engine()["flows"][0]["cca"] == {"newreno": "reno"}.get(cca, cca)
    result, _ = runner.simulate(scenario)
    ts = series(result)
    for column in ("pacing_rate_bps", "cc_state", "delivery_rate_bps"):
        assert ts[column].shape == ts["cwnd_bytes"].shape and ts[column].dtype == np.uint64
    # Only BBR, BBRv3 and Prague pace; every controller's state is one of its codes.
    assert (ts["pacing_rate_bps"] > 0).all() == (cca in PACED)
    assert (ts["pacing_rate_bps"] == 0).all() == (cca not in PACED)
    assert set(ts["cc_state"].ravel().tolist()) <= STATE_CODES.get(cca, {0, 1, 2, 3})
    # Two flows on 10 Mb/s: every rate sample is below the link rate, and a flow's samples
    # average a fair part of it.
    rates = ts["delivery_rate_bps"]
    assert (rates <= 10e6).all() and (rates[:, -1] > 0).all()
    assert (rates.mean(axis=1) > 1.5e6).all(), rates.mean(axis=1)
    assert int(result.flows["bytes_delivered"].sum()) > 0.5 * 10e6 / 8 * 0.8


def test_bbr_leaves_startup_and_paces_near_the_link_rate() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(with_controller("bbr")))
    ts = series(result)
    # 0 Startup, 1 Drain, 2 ProbeBW: after a second both flows are probing bandwidth.
    assert (ts["cc_state"][:, 0] == 0).all() and (ts["cc_state"][:, -1] == 2).all()
    assert 2e6 < ts["pacing_rate_bps"][:, -1].sum() < 15e6


def test_bbr3_leaves_startup_and_cycles_through_probe_bw() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(with_controller("bbr3")))
    ts = series(result)
    # 0 Startup; from 2 up the flow has left Startup and Drain (4-7 the ProbeBW phases).
    states = ts["cc_state"]
    assert (states[:, 0] == 0).all() and (states[:, -1] >= 2).all()
    assert 2e6 < ts["pacing_rate_bps"][:, -1].sum() < 15e6


@pytest.mark.parametrize("name", ["bbrv3", "BBR3", "TcpBbrV3"])
def test_bbrv3_spellings_select_bbr3(name: str) -> None:
    assert Scenario.from_toml_text(with_controller(name)).to_engine()["flows"][0]["cca"] == "bbr3"


def test_hystart_can_be_switched_off_per_flow() -> None:
    scenario = Scenario.from_toml_text(with_controller("cubic", "tcp = { hystart = false }"))
    engine = scenario.to_engine()
    assert all(flow_tcp(engine, f)["hystart"] is False for f in engine["flows"])
    engine = Scenario.from_toml_text(with_controller("cubic")).to_engine()
    assert flow_tcp(engine, engine["flows"][0])["hystart"] is True
    runner.simulate(scenario)


def test_hystart_must_be_a_boolean() -> None:
    with pytest.raises(SpecError) as e:
        Scenario.from_toml_text(with_controller("cubic", 'tcp = { hystart = "no" }'))
    assert str(e.value).startswith("flow_defaults.tcp.hystart:")


def test_rto_rack_and_ca_increase_reach_the_engine_with_their_defaults() -> None:
    chosen = 'tcp = { rto = "rfc6298", rack = false, ca_increase = "per_ack" }'
    scenario = Scenario.from_toml_text(with_controller("reno", chosen))
    engine = scenario.to_engine()
    tcp = flow_tcp(engine, engine["flows"][0])
    assert (tcp["rto"], tcp["rack"], tcp["ca_increase"]) == ("rfc6298", False, "per_ack")
    engine = Scenario.from_toml_text(with_controller("reno")).to_engine()
    default = flow_tcp(engine, engine["flows"][0])
    assert (default["rto"], default["rack"], default["ca_increase"]) == ("linux", True, "bytes")
    runner.simulate(scenario)


@pytest.mark.parametrize("option, value", [("rto", '"rfc793"'), ("rack", '"on"'), ("ca_increase", '"packets"')])
def test_rto_rack_and_ca_increase_refuse_unknown_values(option: str, value: str) -> None:
    with pytest.raises(SpecError) as e:
        Scenario.from_toml_text(with_controller("reno", f"tcp = {{ {option} = {value} }}"))
    assert str(e.value).startswith(f"flow_defaults.tcp.{option}:")
    assert "\n" not in str(e.value)


def test_ccperf_names_select_the_controllers_and_the_store_keeps_their_series(db) -> None:
    args = ["ccperf", "--bw=20Mbps", "--rtts=20ms,20ms,20ms,20ms,20ms,20ms", "--qlen=30p", "--stop-time=1s",
            "--algs=TcpNewReno,TcpCubic,TcpHighSpeed,TcpBbr,TcpBbrV3,TcpVegas", "--db", str(db), "--json"]
    proc = bufferlab(*args)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    con = duckdb.connect(str(db), read_only=True)
    spec = json.loads(con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [summary["run_id"]]).fetchone()[0])
    assert [f["cca"] for f in spec["flows"]] == ["reno", "cubic", "highspeed", "bbr", "bbr3", "vegas"]
    rows = con.execute("SELECT flow, max(pacing_rate_bps), max(cc_state), max(delivery_rate_bps) "
                       "FROM flow_timeseries WHERE run_id = ? GROUP BY flow ORDER BY flow",
                       [summary["run_id"]]).fetchall()
    assert [r[1] > 0 for r in rows] == [False, False, False, True, True, False]
    assert all(r[2] <= 7 and r[3] > 0 for r in rows)
