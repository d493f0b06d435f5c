"""Buffer-sizing rules against the numbers the seeds give, and the
`bufferlab size` command."""

from __future__ import annotations

import json
import math

import pytest

from bufferlab.queues import parse_queue
from bufferlab.sizing import rules
from bufferlab.sizing.limits import limit_meaning
from conftest import bufferlab

MS = 1_000_000


def test_seed003_single_flow_bound_is_20_47_packets_and_22_with_the_extra_one():
    # Seed 003: 100 Mb/s, Tp = 1 ms, 1287-byte frames and 58-byte ACKs:
    # (2 x 1 ms + 102.96 us + 4.64 us) x 9712.5 packets/s = 20.47 -> 21, plus one = 22.
    size = rules.single_flow(100_000_000, 1 * MS, 1287, 58)
    assert size.exact_packets == pytest.approx(20.4701, abs=1e-4)
    assert size.packets == 22
    assert size.bytes == 22 * 1287
    assert size.ms == pytest.approx(2.26512)  # the seed's pause after a loss, B / C


def test_seed000_bl_is_the_bdp_and_bs_the_stanford_buffer():
    # Seed 000: 50 Mb/s, 1500-byte packets; B_l = 500 packets is the BDP at a 120 ms RTT, and the
    # Stanford buffer of the same BDP for N long flows is B_s = 500 / sqrt(N): 18 packets for any N
    # from 772 to 865 (the seed does not state N; 800 here).
    b_l = rules.bdp(50_000_000, [120 * MS], 1500)
    assert (b_l.packets, b_l.exact_packets) == (500, pytest.approx(500.0))
    b_s = rules.stanford(50_000_000, [120 * MS], 800, 1500)
    assert b_s.exact_packets == pytest.approx(500 / math.sqrt(800))
    assert b_s.packets == 18
    assert rules.stanford(50_000_000, [120 * MS], 771, 1500).packets == 19
    assert rules.stanford(50_000_000, [120 * MS], 866, 1500).packets == 17


def test_beta_rule_is_the_stanford_rule_for_reno_and_three_sevenths_of_it_for_cubic():
    # Spang et al. 2021: B = (1 − β)/β · C·RTT/√N. Reno's β = 1/2 gives C·RTT/√N itself; CUBIC's
    # 0.7 gives 3/7 of it: at 10 Gb/s, 100 ms and 5,000 flows, 1178.5 and 505.1 packets.
    reno = rules.beta_rule(10_000_000_000, [100 * MS], 5000, rules.MULTIPLICATIVE_DECREASE["reno"], 1500, "reno")
    stanford = rules.stanford(10_000_000_000, [100 * MS], 5000, 1500)
    assert reno.exact_bytes == pytest.approx(stanford.exact_bytes) and reno.packets == stanford.packets == 1179
    cubic = rules.beta_rule(10_000_000_000, [100 * MS], 5000, rules.MULTIPLICATIVE_DECREASE["cubic"], 1500, "cubic")
    assert cubic.exact_packets == pytest.approx(1178.511 * 3 / 7, abs=1e-3)
    assert (cubic.packets, cubic.rule) == (506, "(1 − β)/β (cubic, β = 0.7, N = 5000)")
    # One flow: the window cut to β of the pipe plus the buffer just fills the pipe.
    one = rules.beta_rule_multiple(0.7)
    assert 0.7 * (1 + one) == pytest.approx(1.0)
    for beta, flows in ((0.0, 1), (1.0, 1), (0.5, 0)):
        with pytest.raises(ValueError):
            rules.beta_rule_multiple(beta, flows)


def test_seed002_splitbuff_example_splits_6250_packets_into_62_and_6187():
    # Seed 002 §III.C: 10 ms and 990 ms flows, 100 Mbps, 1 KB packets: B = 6250 packets at the
    # 500 ms mean, sub-buffers of ~62 and ~6187 packets.
    total, (short, long_) = rules.splitbuff_split(100_000_000, [10 * MS, 990 * MS], 1000)
    assert total.packets == 6250
    assert (short.packets, long_.packets) == (62, 6187)
    assert short.packets + long_.packets <= total.packets


def test_three_sub_buffers_split_at_rttp_plus_and_minus_half_sigma():
    rtts = [50 * MS, 100 * MS, 150 * MS]
    sigma = math.sqrt(((50 - 100) ** 2 + 0 + (150 - 100) ** 2) / 3) * MS
    assert rules.splitbuff_thresholds(rtts, 3) == pytest.approx([100 * MS - sigma / 2, 100 * MS + sigma / 2])
    assert rules.splitbuff_classes(rtts, 3) == [[50 * MS], [100 * MS], [150 * MS]]
    total, parts = rules.splitbuff_split(100_000_000, rtts, 1000, 3)
    # eq. (4) generalised: shares 50 : 100 : 150 of the 1250-packet BDP at 100 ms.
    assert [p.packets for p in parts] == [208, 416, 625]
    assert total.packets == 1250


def test_bdp_averages_differ_as_means_do():
    rtts = [10 * MS, 990 * MS]
    mean, harmonic, largest = (rules.bdp(100_000_000, rtts, 1000, a).packets for a in rules.AVERAGES)
    assert (mean, harmonic, largest) == (6250, 248, 12375)  # harmonic mean of 10 and 990 ms: 19.8 ms


def test_size_command_prints_every_rule_as_json():
    out = bufferlab("size", "--rate", "100Mbps", "--rtt", "10ms,990ms", "--packet", "1kB", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["rule"]: r for r in json.loads(out.stdout)}
    assert rows["bdp (mean RTT)"]["packets"] == 6250
    assert rows["bdp (mean RTT)"]["ms"] == pytest.approx(500.0)
    assert rows["stanford (N = 2)"]["packets"] == math.ceil(6250 / math.sqrt(2))
    assert rows["splitbuff sub-buffer 0"]["packets"] == 62
    assert rows["splitbuff sub-buffer 1"]["packets"] == 6187
    # --cca's default: the (1 − β)/β rule of Reno (the Stanford size) and of CUBIC (3/7 of it).
    assert rows["(1 − β)/β (reno, β = 0.5, N = 2)"]["packets"] == rows["stanford (N = 2)"]["packets"]
    assert rows["(1 − β)/β (cubic, β = 0.7, N = 2)"]["packets"] == math.ceil(6250 / math.sqrt(2) * 3 / 7)


def test_size_command_gives_the_beta_rule_of_the_controllers_named():
    out = bufferlab("size", "--rate", "10Gbps", "--rtt", "100ms", "--flows", "5000", "--cca", "newreno",
                    "--cca", "TcpCubic,reno", "--json")
    assert out.returncode == 0, out.stderr
    beta_rows = [r for r in json.loads(out.stdout) if r["rule"].startswith("(1 − β)/β")]
    # NewReno and Reno are one controller (one row), named as the engine names it.
    assert [(r["rule"], r["packets"]) for r in beta_rows] == [("(1 − β)/β (reno, β = 0.5, N = 5000)", 1179),
                                                              ("(1 − β)/β (cubic, β = 0.7, N = 5000)", 506)]


def test_size_command_table_gives_seed003s_22_packets():
    out = bufferlab("size", "--rate", "100Mbps", "--packet", "1287B", "--tp", "1ms", "--ack", "58B")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "seed 003" in line and "single flow" in line)
    assert row.split("│")[2].strip() == "22"


def test_size_command_says_what_a_size_means_under_an_aqm():
    # CoDel's 5 ms target is 41.7 packets of 1500 bytes at 100 Mb/s, PIE's 15 ms 125: the standing
    # queue each aims for, whatever the limit the rules then size.
    out = bufferlab("size", "--rate", "100Mbps", "--rtt", "100ms", "--flows", "10", "--queue", "codel", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["queue"] for r in rows} == {"codel"}
    assert rows[0]["limit_meaning"].startswith("CoDel's hard limit (RFC 8289)")
    assert "target of 5ms (42 packets here)" in rows[0]["limit_meaning"]
    pie = bufferlab("size", "--rate", "100Mbps", "--rtt", "100ms", "--queue", "pie")
    assert pie.returncode == 0 and "15ms (125 packets here)" in " ".join(pie.stdout.split())
    fifo = bufferlab("size", "--rate", "100Mbps", "--rtt", "100ms")
    assert "What a size means under fifo: a drop-tail FIFO's size" in " ".join(fifo.stdout.split())


def test_size_command_says_a_fq_pie_limit_is_shared_by_flow_queues_each_held_by_its_own_pie():
    # FQ-PIE's 15 ms target is 125 packets of 1500 bytes at 100 Mb/s, as PIE's, but held by a PIE
    # per flow queue; the limit is the total over the flow queues, as FQ-CoDel's.
    out = bufferlab("size", "--rate", "100Mbps", "--rtt", "100ms", "--queue", "fq_pie", "--json")
    assert out.returncode == 0, out.stderr
    meaning = json.loads(out.stdout)[0]["limit_meaning"]
    assert meaning.startswith("FQ-PIE's limit over all 1024 flow queues (Linux fq_pie): each flow queue's PIE")
    assert "near 15ms (125 packets here), whatever the limit" in meaning
    assert meaning.endswith("the fattest flow queue loses its head, so the limit bounds the bursts of all flows "
                            "together")
    queue = parse_queue({"kind": "fq_pie", "flows": 64, "target": "5ms"})
    assert limit_meaning(queue, None, 1500).startswith("FQ-PIE's limit over all 64 flow queues")
    assert "near 5ms, whatever the limit" in limit_meaning(queue, None, 1500)


@pytest.mark.parametrize("args, line", [
    (("--rate", "100Mbps"), "error: --rtt: give the flows' RTTs (--rtt), or seed 003's --tp and --ack"),
    (("--rate", "100Mbps", "--rtt", "10ms", "--queue", "tbf"),
     "error: --queue: \"tbf\": expected one of fifo, red, pie, codel, fq_codel, fq_pie"),
    (("--rate", "fast", "--rtt", "10ms"), "error: --rate: not a rate"),
    (("--rate", "1Mbps", "--rtt", "10parsecs"), 'error: --rtt: unknown time unit "parsecs"'),
    (("--rate", "1Mbps", "--tp", "1ms"), "error: --ack: seed 003's rule needs the ACK size with --tp"),
    (("--rate", "1Mbps", "--rtt", "10ms", "--cca", "bbr"),
     'error: --cca: "bbr": the (1 − β)/β rule is for the loss-based controllers that cut their window by a constant'),
    (("--rate", "1Mbps", "--rtt", "10ms", "--cca", "westwood"), 'error: --cca: unknown controller "westwood"'),
    (("--rate", "1Mbps", "--rtt", "10ms", "--cca", "cubic,"), 'error: --cca: empty controller in "cubic,"'),
])
def test_size_command_bad_input_is_one_line_and_status_2(args, line):
    out = bufferlab("size", *args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith(line), out.stderr


def test_rule_routes_are_least_delay_then_fewest_hops_through_single_link_hosts():
    # The rule's routes skip expanding a node with one link; every route found must
    # still cost what an exhaustive search (Bellman-Ford, delay + 1 per hop) says is least. The
    # graph has a chain of one-link ends (h1 - r2), a host on a shortcut's end, and a triangle.
    from bufferlab.spec.queue_sizes import _channels, _incoming, _path, _routes_toward

    links = [(0, 1, 5), (1, 2, 3), (0, 2, 9), (2, 3, 1), (3, 4, 2), (1, 5, 4), (0, 6, 7)]
    channels = _channels([{"a": a, "b": b, "delay": d} for a, b, d in links])
    nodes = 7
    for dst in range(nodes):
        least = [math.inf] * nodes
        least[dst] = 0
        for _ in range(nodes):
            for frm, to, delay in channels:
                least[frm] = min(least[frm], least[to] + delay + 1)
        toward = _routes_toward(dst, nodes, channels, _incoming(nodes, channels))
        for src in range(nodes):
            path = _path(src, dst, toward, channels)
            assert sum(channels[ch][2] + 1 for ch in path) == least[src]
            assert src == dst or channels[path[-1]][1] == dst


@pytest.mark.parametrize("scenario", ["parking_lot.toml", "tree_mice.toml", "bimodal_rtts.toml", "quic_sizing.toml"])
def test_the_loads_of_some_links_are_those_of_every_link(scenario: str) -> None:
    from pathlib import Path

    from bufferlab.spec.queue_sizes import link_loads, loads_of_links
    from bufferlab.spec import load_scenario

    engine = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / scenario).resolve().engine
    every = link_loads(engine)
    assert any(load.rtts_ns for load in every)
    links = len(engine["links"])
    for wanted in [{k} for k in range(links)] + [set(range(0, links, 2)), set()]:
        some = loads_of_links(len(engine["nodes"]), engine["links"], engine["flows"], wanted, engine["tcp_options"],
                              engine.get("quic_options", []))
        assert some == {k: every[k] for k in sorted(wanted)}
