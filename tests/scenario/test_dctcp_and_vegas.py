"""DCTCP and Vegas are named in specs as the other controllers are; a DCTCP flow without the
accurate ECN feedback it estimates from (TCP's per-packet echo, `tcp.ecn = "dctcp"`; QUIC's
counts read as L4S feedback, `quic.ecn = "l4s"`) is refused naming the field the user wrote; and
the guide's step-marking DCTCP dumbbell runs as the papers say."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from bufferlab import runner
from bufferlab.errors import SpecError
from bufferlab.pipeline.result import EngineResult
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.ccperf import scenario_from_ccperf
from bufferlab.spec.resolved import flow_quic, flow_tcp
from conftest import bufferlab

REPO = Path(__file__).resolve().parents[2]

DUMBBELL = """
    name = "modern"
    duration = "1s"
    [topology]
    kind = "dumbbell"
    flows = 2
    bottleneck_rate = "10Mbps"
    rtt = "20ms"
    queue = "50p"
"""

BOTTLENECK = "btl_forward"
NO_ECHO = 'DCTCP needs ECN with per-packet echo: set tcp.ecn = "dctcp" (or "l4s")'


def scenario(extra: str) -> Scenario:
    return Scenario.from_toml_text(textwrap.dedent(DUMBBELL) + textwrap.dedent(extra))


@pytest.mark.parametrize("written, engine", [("dctcp", "dctcp"), ("DCTCP", "dctcp"), ("TcpDctcp", "dctcp"),
                                             ("vegas", "vegas"), ("Vegas", "vegas"), ("TcpVegas", "vegas")])
def test_the_controllers_are_named_as_written_and_reach_the_engine(written: str, engine: str) -> None:
    s = scenario(f'[flow_defaults]\ncca = "{written}"\ntcp = {{ ecn = "dctcp" }}\n')
    assert [f["cca"] for f in s.to_engine()["flows"]] == [engine, engine]
    plan(s)


@pytest.mark.parametrize("tcp", ["", 'tcp = { ecn = "off" }', 'tcp = { ecn = "classic" }'])
def test_dctcp_without_the_per_packet_echo_is_refused_naming_the_field(tcp: str) -> None:
    with pytest.raises(SpecError) as e:
        plan(scenario(f'[flow_defaults]\ncca = "dctcp"\n{tcp}\n'))
    assert (e.value.field, e.value.reason) == ("flow_defaults.tcp.ecn", NO_ECHO)


def test_a_single_dctcp_flow_without_the_echo_is_named_by_its_index() -> None:
    text = textwrap.dedent(DUMBBELL).replace("flows = 2\n", "") + textwrap.dedent("""
        [[flows]]
        rtt = "20ms"
        [[flows]]
        rtt = "20ms"
        cca = "dctcp"
    """)
    with pytest.raises(SpecError) as e:
        plan(Scenario.from_toml_text(text))
    assert (e.value.field, e.value.reason) == ("flows[1].tcp.ecn", NO_ECHO)


@pytest.mark.parametrize("quic", ["", 'quic = { ecn = "classic" }', "quic = { ecn = true }"])
def test_dctcp_over_quic_without_l4s_feedback_is_refused_naming_the_field(quic: str) -> None:
    with pytest.raises(SpecError) as e:
        plan(scenario(f'[flow_defaults]\ncca = "dctcp"\ntransport = "quic"\n{quic}\n'))
    assert e.value.field == "flow_defaults.quic.ecn"
    assert e.value.reason == 'DCTCP needs ECN with accurate feedback: set quic.ecn = "l4s"'


def test_dctcp_over_quic_with_l4s_feedback_runs() -> None:
    s = scenario('[flow_defaults]\ncca = "dctcp"\ntransport = "quic"\nquic = { ecn = "l4s" }\n')
    engine = s.to_engine()
    assert [flow_quic(engine, f)["ecn"] for f in engine["flows"]] == ["l4s", "l4s"]
    plan(s)


def test_the_check_command_prints_the_refusal_on_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "dctcp.toml"
    path.write_text(textwrap.dedent(DUMBBELL) + '[flow_defaults]\ncca = "dctcp"\n')
    result = bufferlab("check", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: flow_defaults.tcp.ecn: {NO_ECHO}"]


def test_ccperf_takes_vegas_and_gives_dctcp_and_prague_the_ecn_feedback_they_need() -> None:
    # As ns-3's TcpDctcp turns ECN on by itself: the flows plan and run, and over ccperf's FIFO,
    # which marks nothing, they answer losses.
    base = {"bw": "20Mbps", "rtts": "100ms,100ms,100ms", "qlen": "30p", "stop-time": "5s"}
    s = scenario_from_ccperf({**base, "algs": "TcpVegas,TcpDctcp,TcpPrague", "recoveries": ",".join(["TcpPrrRecovery"] * 3)})
    engine = s.to_engine()
    flows = engine["flows"]
    assert [f["cca"] for f in flows] == ["vegas", "dctcp", "prague"]
    assert [flow_tcp(engine, f).get("ecn") for f in flows] == ["off", "dctcp", "l4s"]
    assert [flow_tcp(engine, f)["recovery"] for f in flows] == ["prr"] * 3
    result = runner.simulate(s)[0]
    assert result.channels["ce_marked_packets"].sum() == 0
    assert (result.flows["bytes_delivered"] > 0).all()


def bottleneck(result: EngineResult) -> dict[str, Any]:
    """The dumbbell bottleneck's forward channel."""
    return result.channels.filter(pl.col("name") == BOTTLENECK).row(0, named=True)


def guide_blocks() -> list[str]:
    text = (REPO / "docs" / "guides" / "scenarios.md").read_text(encoding="utf-8")
    return re.findall(r"```toml\n(.*?)```", text, flags=re.S)


def test_the_guides_dctcp_dumbbell_keeps_the_queue_at_k_without_a_drop() -> None:
    # The guide's fragments: DCTCP for every flow, and the step-marking queue at K = 12 packets
    # (C·RTT/7 at 1 Gbit/s and 1 ms), in a four-flow dumbbell of that rate and RTT.
    defaults = next(b for b in guide_blocks() if 'cca = "dctcp"' in b)
    queue = next(b for b in guide_blocks() if b.startswith("queue = ") and 'min_th = "12p"' in b)
    text = ('name = "dctcp"\nduration = "1s"\nsample_interval = "1ms"\n' + defaults
            + '[topology]\nkind = "dumbbell"\nflows = 4\nbottleneck_rate = "1Gbps"\nrtt = "1ms"\n' + queue)
    result, _ = runner.simulate(Scenario.from_toml_text(text))
    btl = bottleneck(result)
    assert btl["dropped_queue_packets"] + btl["dropped_aqm_packets"] == 0
    assert btl["ce_marked_packets"] > 1000
    assert btl["max_queue_packets"] < 12 + 4 * 4 + 14  # K + a few N + the analysis's amplitude
    assert btl["busy_ns"] > 0.95 * 1e9
    assert all(r > 0 for r in result.flows["ecn_responses"].to_list())


def test_vegas_keeps_a_short_standing_queue_in_a_deep_buffer() -> None:
    s = scenario('[flow_defaults]\ncca = "vegas"\n').with_overrides({"topology.queue": "500p", "duration": "5s"})
    result, _ = runner.simulate(s)
    btl = bottleneck(result)
    assert btl["dropped_queue_packets"] == 0
    # Two flows keep 2α = 4 to 2β = 8 packets queued; slow start's peak is short of the buffer.
    assert btl["max_queue_packets"] < 100
