"""TCP Prague is named in specs as the other controllers are; a Prague flow without
`tcp.ecn = "l4s"` over TCP, or `quic.ecn = "l4s"` over QUIC (ECT(1) and accurate ECN feedback),
is refused naming the field the user wrote; its two options reach the engine over either
transport."""

from __future__ import annotations

import textwrap

import pytest

from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_quic, flow_tcp

DUMBBELL = """
    name = "l4s"
    duration = "1s"
    [topology]
    kind = "dumbbell"
    flows = 2
    bottleneck_rate = "10Mbps"
    rtt = "20ms"
    queue = { kind = "dualpi2" }
"""

NO_L4S = 'Prague needs ECT(1) and accurate ECN feedback: set tcp.ecn = "l4s"'


def scenario(extra: str) -> Scenario:
    return Scenario.from_toml_text(textwrap.dedent(DUMBBELL) + textwrap.dedent(extra))


@pytest.mark.parametrize("written", ["prague", "Prague", "TcpPrague"])
def test_prague_is_named_as_written_and_reaches_the_engine(written: str) -> None:
    s = scenario(f'[flow_defaults]\ncca = "{written}"\ntcp = {{ ecn = "l4s" }}\n')
    assert [f["cca"] for f in s.to_engine()["flows"]] == ["prague", "prague"]
    plan(s)


@pytest.mark.parametrize("tcp", ["", 'tcp = { ecn = "off" }', 'tcp = { ecn = "classic" }',
                                 'tcp = { ecn = "dctcp" }'])
def test_prague_without_l4s_ecn_is_refused_naming_the_field(tcp: str) -> None:
    with pytest.raises(SpecError) as e:
        plan(scenario(f'[flow_defaults]\ncca = "prague"\n{tcp}\n'))
    assert (e.value.field, e.value.reason) == ("flow_defaults.tcp.ecn", NO_L4S)


@pytest.mark.parametrize("quic", ["", 'quic = { ecn = "off" }', 'quic = { ecn = "classic" }', "quic = { ecn = true }"])
def test_prague_over_quic_without_l4s_ecn_is_refused_naming_the_quic_field(quic: str) -> None:
    # tcp.ecn = "l4s" does not carry over: a QUIC flow's ECN is its own.
    with pytest.raises(SpecError) as e:
        plan(scenario(f'[flow_defaults]\ncca = "prague"\ntransport = "quic"\ntcp = {{ ecn = "l4s" }}\n{quic}\n'))
    assert (e.value.field, e.value.reason) == (
        "flow_defaults.quic.ecn", 'Prague needs ECT(1) and accurate ECN feedback: set quic.ecn = "l4s"')


def test_prague_over_quic_with_l4s_ecn_takes_its_options_from_tcp() -> None:
    s = scenario('[flow_defaults]\ncca = "prague"\ntransport = "quic"\nquic = { ecn = "l4s" }\n'
                 'tcp = { prague_rtt_independence = false, prague_classic_fallback = true }\n')
    engine = s.to_engine()
    flow = engine["flows"][0]
    tcp = flow_tcp(engine, flow)
    assert (flow["transport"], flow_quic(engine, flow)["ecn"]) == ("quic", "l4s")
    assert (tcp["prague_rtt_independence"], tcp["prague_classic_fallback"]) == (False, True)
    plan(s)


def test_the_options_default_as_the_reference_implementation_and_reach_the_engine() -> None:
    s = scenario('[flow_defaults]\ncca = "prague"\ntcp = { ecn = "l4s" }\n')
    tcp = flow_tcp(engine := s.to_engine(), engine["flows"][0])
    assert (tcp["prague_rtt_independence"], tcp["prague_classic_fallback"]) == (True, False)
    s = scenario('[flow_defaults]\ncca = "prague"\n'
                 'tcp = { ecn = "l4s", prague_rtt_independence = false, prague_classic_fallback = true }\n')
    tcp = flow_tcp(engine := s.to_engine(), engine["flows"][0])
    assert (tcp["prague_rtt_independence"], tcp["prague_classic_fallback"]) == (False, True)
    plan(s)
