"""The engine checks the ranges of a spec's values and names the field the user wrote: its input
keys are the user's (`crates/bufferlab-core/src/spec.rs`), and what the resolution moved (a
dumbbell's queue, a generator's model, options taken from `flow_defaults`) is recorded as it
moves. Each case here is a bound only the engine checks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from conftest import bufferlab

GRAPH = """
    duration = "1s"
    [[nodes]]
    name = "a"
    kind = "host"
    [[nodes]]
    name = "b"
    kind = "host"
    [[links]]
    a = "a"
    b = "b"
    rate = "10Mbps"
    delay = "5ms"
    {link}
    [[flows]]
    src = "a"
    dst = "b"
    {flow}
    {rest}
"""


def graph(link: str = "", flow: str = "", rest: str = "") -> str:
    return GRAPH.format(link=link, flow=flow, rest=rest)


def dumbbell(queue: str) -> str:
    return f"""
        duration = "1s"
        [topology]
        kind = "dumbbell"
        flows = 2
        bottleneck_rate = "10Mbps"
        rtt = "20ms"
        queue = {queue}
    """


CASES = {
    "splitbuff gain, through a dumbbell's queue": (
        dumbbell('{ kind = "splitbuff", limit = "100p", alpha = 1.5 }'),
        "topology.queue.alpha", "smoothing gain 1.5 not in (0, 1]"),
    "blind splitbuff sub-buffers, through a dumbbell's queue": (
        dumbbell('{ kind = "blind_splitbuff", limit = "100p", sub_buffers = 40 }'),
        "topology.queue.sub_buffers", "from 2 to 16 sub-buffers, not 40"),
    "gilbert-elliott p above 1": (
        graph(link='loss_model = { kind = "gilbert_elliott", p = 1.5, r = 0.5 }'),
        "links[0].loss_model.p", "probability 1.5 not in [0, 1]"),
    "link loss of 1": (graph(link="loss = 1.0"), "links[0].loss", "loss probability 1 not in [0, 1)"),
    "min_rto above max_rto": (
        graph(flow='tcp = { min_rto = "2s", max_rto = "1s" }'), "flows[0].tcp.min_rto", "minimum RTO above the maximum"),
    "a tcp count of 0": (graph(flow="tcp = { dupthresh = 0 }"), "flows[0].tcp.dupthresh", "must be positive"),
    "an mss beyond an IP packet": (
        graph(flow="tcp = { mss = 70000 }"), "flows[0].tcp.mss", "a segment must fit an IP packet (mss <= 65000)"),
    "a tcp option taken from flow_defaults": (
        graph(rest="[flow_defaults]\ntcp = { rwnd = \"100B\" }"), "flow_defaults.tcp.rwnd",
        "receive window smaller than one MSS"),
    "a quic datagram beyond UDP": (
        graph(flow='transport = "quic"\nquic = { max_datagram = "70000B" }'), "flows[0].quic.max_datagram",
        "a QUIC packet must fit a UDP datagram (<= 65527 bytes)"),
    "a generator's datagrams below their headers": (
        graph(rest='[[generators]]\nkind = "cbr"\ndst = "b"\nrate = "1Mbps"\npacket = "20B"'),
        "generators[0].packet", "20 B: a datagram has 28 header bytes and at most 65535 in all"),
    "a generator's arrivals": (
        graph(rest='[[generators]]\nkind = "poisson"\ndst = "b"\narrivals_per_s = 0.0\n'
                   'size = { dist = "fixed", value = "10kB" }'),
        "generators[0].arrivals_per_s", "arrival rate must be positive, got 0"),
    "a recording interval beyond the time limit": (
        graph(rest='[record]\ninterval = "9000000s"'), "record.interval",
        "9000000000000000 ns is beyond the 100-day limit of simulated time"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_engine_bound_names_the_users_field(case: str) -> None:
    text, field, reason = CASES[case]
    scenario = Scenario.from_toml_text(textwrap.dedent(text))
    with pytest.raises(SpecError) as caught:
        plan(scenario)
    assert (caught.value.field, caught.value.reason) == (field, reason)


@pytest.mark.parametrize("case", ["splitbuff gain, through a dumbbell's queue", "min_rto above max_rto"])
def test_the_check_command_prints_the_users_field_and_exits_2(case: str, tmp_path: Path) -> None:
    text, field, reason = CASES[case]
    path = tmp_path / "spec.toml"
    path.write_text(textwrap.dedent(text))
    result = bufferlab("check", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: {field}: {reason}"]
