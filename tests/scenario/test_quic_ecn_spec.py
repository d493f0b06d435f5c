"""`quic.ecn` takes the modes "off", "classic" and "l4s" and, as before, true and false (classic
and off); anything else is refused on one line naming the field. A link's `ecn_bleach` reaches
the engine only when set, and over a bleaching link a QUIC flow's AQM drops instead of marking."""

from __future__ import annotations

import textwrap

import pytest

from bufferlab import runner
from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import flow_quic

DUMBBELL = """
    name = "quic_ecn"
    duration = "2s"
    [topology]
    kind = "dumbbell"
    flows = 1
    bottleneck_rate = "10Mbps"
    rtt = "20ms"
    queue = { kind = "codel", ecn = true }
    [flow_defaults]
    transport = "quic"
"""

# Two hosts through a router, the second link bleaching when asked; the first link's forward
# direction is the bottleneck, with a CoDel that marks ECN-capable packets.
PATH = """
    name = "bleach"
    duration = "2s"
    [[nodes]]
    name = "a"
    kind = "host"
    [[nodes]]
    name = "r"
    kind = "router"
    [[nodes]]
    name = "b"
    kind = "host"
    [[links]]
    a = "a"
    b = "r"
    rate = "10Mbps"
    delay = "5ms"
    queue_forward = {{ kind = "codel", ecn = true }}
    [[links]]
    a = "r"
    b = "b"
    rate = "1Gbps"
    delay = "5ms"
    {bleach}
    [[flows]]
    src = "a"
    dst = "b"
    transport = "quic"
    quic = {{ ecn = "classic" }}
"""


def quic_ecn(value: str) -> Scenario:
    return Scenario.from_toml_text(textwrap.dedent(DUMBBELL) + f"quic = {{ ecn = {value} }}\n")


@pytest.mark.parametrize("written, engine", [('"off"', "off"), ('"classic"', "classic"), ('"l4s"', "l4s"),
                                             ("true", True), ("false", False)])
def test_quic_ecn_takes_its_modes_and_a_switch(written: str, engine: str | bool) -> None:
    s = quic_ecn(written)
    spec = s.to_engine()
    assert flow_quic(spec, spec["flows"][0])["ecn"] == engine
    plan(s)


@pytest.mark.parametrize("written", ['"dctcp"', "1", '"on"'])
def test_an_unknown_quic_ecn_mode_is_refused_naming_the_field(written: str) -> None:
    with pytest.raises(SpecError) as e:
        plan(quic_ecn(written))
    assert e.value.field == "flow_defaults.quic.ecn"
    assert "'off', 'classic' or 'l4s'" in e.value.reason and "\n" not in e.value.reason


def bleach_path(bleach: bool) -> Scenario:
    return Scenario.from_toml_text(textwrap.dedent(PATH).format(bleach="ecn_bleach = true" if bleach else ""))


def test_ecn_bleach_reaches_the_engine_only_when_set() -> None:
    assert [link.get("ecn_bleach") for link in bleach_path(True).to_engine()["links"]] == [None, True]
    assert all("ecn_bleach" not in link for link in bleach_path(False).to_engine()["links"])
    with pytest.raises(SpecError) as e:
        plan(Scenario.from_toml_text(textwrap.dedent(PATH).format(bleach='ecn_bleach = "yes"')))
    assert e.value.field == "links[1].ecn_bleach"


def test_over_a_bleaching_link_quic_stops_marking_and_the_aqm_drops() -> None:
    clean, _ = runner.simulate(bleach_path(False))
    bleached, _ = runner.simulate(bleach_path(True))
    btl = "a_r_forward"

    def channel(result, column: str) -> int:  # type: ignore[no-untyped-def]
        return int(result.channels.filter(result.channels["name"] == btl)[column][0])

    assert channel(clean, "ce_marked_packets") > 0 and channel(clean, "dropped_aqm_packets") == 0
    assert channel(bleached, "ce_marked_packets") == 0 and channel(bleached, "dropped_aqm_packets") > 0
    assert bleached.flows["ce_received"].to_list() == [0]
