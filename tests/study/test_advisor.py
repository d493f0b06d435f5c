"""`bufferlab advise`: targets, the search against exact theory, stored probes, impossible targets.

Theory the advisor must reproduce:
* One long Reno flow (ACK per packet) over a drop-tail FIFO of B packets, pipe P = C · base RTT:
  the window saw-tooths between W_max/2 and W_max = P + B + 1, and the bottleneck utilisation is
  U = 3x² / (4(1 − x + x²)), x = W_max / P (crates/bufferlab-core/tests/buffer_theory.rs). The
  smallest buffer for U ≥ u is B = (x_u − 1) · P − 1, x_u the root of U(x) = u in [1, 2].
* A link kept overloaded by an unresponsive source holds a full queue: every packet waits the
  drain time of the buffer, so the largest buffer within a delay d is B = d · C.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bufferlab.analysis.window import weighted_percentile
from bufferlab.errors import SpecError
from bufferlab.sizing.advisor import Advice, Advisor, judge_probe, link_context, mix_scenario
from bufferlab.sizing.targets import parse_target
from bufferlab.spec import Scenario
from bufferlab.store.reader import load

from conftest import bufferlab

RATE_BPS = 4_000_000
RTT_S = 0.100
PACKET = 1500  # MSS 1448 + 52 bytes of headers
ACK = 52
ACCESS_BPS = 10 * RATE_BPS  # the dumbbell's default access rate

# One NewReno flow, 100 ms RTT, ACK per packet. The minimum RTO is RFC 6298's 1 s: with Linux's
# 200 ms, a queue of one BDP doubles the 100 ms RTT past the RTO and timeouts (which the sawtooth
# theory leaves out) cut the utilisation of a one-BDP buffer to 0.93.
RENO = {
    "name": "reno", "seed": 1, "duration": "120s", "sample_interval": "100ms",
    "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": "4Mbps", "rtt": "100ms", "queue": "10p"},
    "flow_defaults": {"cca": "newreno", "tcp": {"ack_every": 1, "min_rto": "1s"}},
}
RENO_WARMUP_NS = 20_000_000_000

# An unresponsive 5 Mb/s source into the 4 Mb/s bottleneck: the queue is always full.
OVERLOAD = {
    "name": "overload", "seed": 1, "duration": "10s", "sample_interval": "10ms",
    "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": "4Mbps", "rtt": "100ms", "queue": "10p"},
    "flow_defaults": {"traffic": {"kind": "cbr", "rate": "5Mbps", "packet": "1500B"}},
}


def sawtooth_buffer(u: float) -> float:
    """B = (x − 1) · P − 1 with 3x² / (4(1 − x + x²)) = u, i.e. (3 − 4u)x² + 4ux − 4u = 0."""
    x = 2 * (-u + math.sqrt(3 * u - 3 * u * u)) / (3 - 4 * u)
    base_rtt = RTT_S + PACKET * 8 * (1 / RATE_BPS + 2 / ACCESS_BPS) + ACK * 8 * (1 / RATE_BPS + 2 / ACCESS_BPS)
    pipe = RATE_BPS * base_rtt / (PACKET * 8)
    return (x - 1) * pipe - 1


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("advise") / "advise.duckdb"


# --- targets ----------------------------------------------------------------------------------

def test_targets_read_units_and_percentages():
    assert parse_target("utilisation>=98%").value == pytest.approx(0.98)
    assert parse_target("utilization >= 0.9").metric == "utilisation"
    loss = parse_target("loss<=1%")
    assert (loss.value, loss.floor) == (pytest.approx(0.01), True)
    delay = parse_target("p99_delay<=50ms")
    assert (delay.column, delay.value, delay.quantile, delay.floor) == ("p99_delay_ms", 50.0, 99, False)
    tput = parse_target("p10_throughput>=2Mbps")
    assert (tput.column, tput.value, tput.quantile, tput.floor) == ("p10_throughput_mbps", 2.0, 10, True)


@pytest.mark.parametrize("text, reason", [
    ("utilisation<=0.9", "utilisation takes >="),
    ("delay>=5ms", "delay takes <="),
    ("delay<=20", "missing time unit"),
    ("loss<=150%", "a fraction lies in [0, 1]"),
    ("throughput>=2Mbps", "give a percentile"),
    ("jitter<=1ms", 'unknown metric "jitter"'),
    ("utilisation=0.9", "expected METRIC>=VALUE"),
])
def test_bad_targets_are_one_line_naming_the_flag(text, reason, tmp_path):
    with pytest.raises(SpecError) as e:
        parse_target(text)
    assert e.value.field == "--target" and reason in e.value.reason
    db = tmp_path / "r.duckdb"
    out = bufferlab("advise", "--rate", "10Mbps", "--target", text, "--db", str(db))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: --target: "), out.stderr
    assert reason in out.stderr and not db.exists()


def test_the_rules_of_thumb_include_the_beta_rule_of_each_loss_based_controller_of_the_flows():
    # Six flows, controllers in turn: CUBIC and NewReno (the engine's Reno) cut by a constant β,
    # BBR does not. Each once, in the flows' order; the Reno row is the Stanford size.
    base = Scenario.from_dict(mix_scenario(rate="100Mbps", flows=6, rtt="100ms", ccas=["cubic", "bbr", "newreno"],
                                           duration="5s"))
    link = link_context(base, "topology.queue")
    assert link.controllers == ["cubic", "reno"]
    from bufferlab.sizing.rules import size_rows

    sizes = {size.rule: size.packets for size, _ in size_rows(link.rate_bps, link.rtts_ns, link.packet_bytes,
                                                               flows=6, controllers=link.controllers)}
    assert sizes["(1 − β)/β (reno, β = 0.5, N = 6)"] == sizes["stanford (N = 6)"] == math.ceil(833.33 / math.sqrt(6))
    assert sizes["(1 − β)/β (cubic, β = 0.7, N = 6)"] == math.ceil(833.33 / math.sqrt(6) * 3 / 7)
    assert not any("bbr" in rule for rule in sizes)


def test_on_a_terminal_each_probed_size_gets_a_progress_bar(capsys):
    # `advise` on a terminal once imported a helper that the sweep command had renamed (found by mypy).
    from bufferlab.cli.advise import _progress_per_size

    with _progress_per_size(120) as listener:
        listener.start(3, 0)
        for _ in range(3):
            listener.finished(True, 2.0)
    assert "sweep 120p" in capsys.readouterr().err


def test_weighted_percentile_counts_weights_as_repeated_values():
    values, weights = np.array([3.0, 1.0, 2.0]), np.array([1, 97, 2])
    repeated = np.repeat(values, weights)
    for q in (50, 98, 99, 100):
        assert weighted_percentile(values, weights, q) == np.sort(repeated)[math.ceil(q / 100 * 100) - 1]


# --- the decision at a probe -------------------------------------------------------------------

def _per_run(utilisations: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"run_id": [f"r{k}" for k in range(len(utilisations))], "utilisation": utilisations})


def test_a_probes_verdict_rests_on_the_mean_so_more_seeds_do_not_move_it():
    # Three replications of 0.948, 0.953, 0.958 and three times as many of the same spread: the
    # same mean, 0.953, so the same verdicts; only the interval narrows (a rule on its lower
    # bound said ✗ to 0.95 with 3 seeds, 0.953 - 4.30 · 0.005 / √3 = 0.941, and ✓ with 9).
    values = [0.948, 0.953, 0.958]
    floor, higher = parse_target("utilisation>=0.95"), parse_target("utilisation>=0.96")
    few = judge_probe(100, 0, _per_run(values), [floor, higher])
    many = judge_probe(100, 0, _per_run(values * 3), [floor, higher])
    for probe in (few, many):
        assert probe.metrics["utilisation"][0] == pytest.approx(0.953)
        assert probe.holds == {floor.text: True, higher.text: False}
    assert (few.seeds, many.seeds) == (3, 9)
    few_half = few.metrics["utilisation"][2] - 0.953
    many_half = many.metrics["utilisation"][2] - 0.953
    assert many_half < few_half / 2
    # 0.95 lies inside both intervals (unsettled: more seeds would tell), 0.96 outside the
    # narrower one only.
    assert few.settled == {floor.text: False, higher.text: False}
    assert many.settled == {floor.text: False, higher.text: True}


def test_probe_cells_mark_an_unsettled_verdict_and_one_seed_shows_no_interval():
    from bufferlab.cli.advise import _cell

    floor = parse_target("utilisation>=0.95")
    three = judge_probe(100, 0, _per_run([0.948, 0.953, 0.958]), [floor])
    one = judge_probe(100, 0, _per_run([0.953]), [floor])
    assert _cell(floor, three) == "0.953 ± 0.012 ✓?"
    assert _cell(floor, one) == "0.953 ✓"
    assert one.settled == {floor.text: False} and one.metrics["utilisation"][1:] == (None, None)


def test_advise_help_says_what_a_check_mark_means():
    out = bufferlab("advise", "--help")
    text = " ".join(out.stdout.split())
    assert out.returncode == 0
    assert "A target holds at a probe (✓) when its metric, measured after --warmup and averaged over the probe's " \
           "--seeds, meets it" in text
    assert "95 % interval" in text and "more --seeds would settle" in text


# --- the search against theory ----------------------------------------------------------------

@pytest.mark.parametrize("u", [0.98, 0.995])
def test_one_reno_flow_gets_the_sawtooth_buffer_for_its_utilisation_target(u, store):
    advisor = Advisor(Scenario.from_dict(RENO), [parse_target(f"utilisation>={u}")], store,
                      warmup_ns=RENO_WARMUP_NS, seeds=1)
    advice = advisor.advise()
    theory = sawtooth_buffer(u)
    resolution = max(1.0, advice.resolution * theory)
    print(f"u = {u}: sawtooth theory B = {theory:.2f} packets, advisor {advice.buffer_packets} packets")
    assert advice.buffer_packets is not None
    # The search's resolution, plus one packet: the engine runs a little above the sawtooth (its
    # utilisation exceeds the theory's by 0.003-0.009 at 0.1-0.5 BDP, docs/engine/validation.md),
    # worth up to one packet of buffer here (measured: 19 packets for 19.86, 25 for 26.01).
    assert abs(advice.buffer_packets - theory) <= resolution + 1
    # Below one BDP (34 packets), as the theory says of any target under 100 %.
    assert advice.buffer_packets < advisor.link.bdp_packets
    # The probes bracket it: one packet less misses the target.
    assert advisor.probe(advice.buffer_packets - 1).holds[f"utilisation>={u}"] is False


def test_a_delay_target_alone_gets_the_buffer_whose_drain_time_is_that_delay(store):
    for target, delay_s in (("delay<=30ms", 0.030), ("p99_delay<=45ms", 0.045)):
        advice = Advisor(Scenario.from_dict(OVERLOAD), [parse_target(target)], store, warmup_ns=2_000_000_000,
                         seeds=1).advise()
        drain = delay_s * RATE_BPS / (PACKET * 8)  # B = d · C
        print(f"{target}: drain-time buffer {drain:.1f} packets, advisor {advice.buffer_packets}")
        assert advice.buffer_packets is not None and abs(advice.buffer_packets - drain) <= 1


def test_under_codel_a_delay_target_holds_at_every_limit_where_a_fifo_needs_the_drain_time(store):
    # The Reno flow of RENO behind CoDel: the advisor searches CoDel's hard limit, keeping CoDel,
    # and CoDel holds the standing queue near its 5 ms target whatever the limit (RFC 8289), so a
    # 20 ms delay ceiling holds up to the largest limit tried. Behind a FIFO the sawtooth's mean
    # queueing delay grows with the buffer, so the same ceiling bounds it: to at least the buffer
    # whose drain time is 20 ms (6.7 packets at 4 Mb/s; the mean never exceeds a full buffer's) and,
    # the queue being full only at the sawtooth's peaks, to within about three times that.
    target = [parse_target("delay<=20ms")]
    codel = {**RENO, "duration": "60s", "topology": {**RENO["topology"], "queue": {"kind": "codel", "limit": "10p"}}}
    advisor = Advisor(Scenario.from_dict(codel), target, store, warmup_ns=RENO_WARMUP_NS, seeds=1, max_bdp=4)
    advice = advisor.advise()
    assert advisor.size_key == "topology.queue.limit"
    assert advice.queue == "codel, target 5ms, interval 100ms"
    assert advice.limit_meaning.startswith("CoDel's hard limit (RFC 8289)")
    assert advice.buffer_packets == advisor.max_packets
    assert all(p.holds["delay<=20ms"] for p in advice.probes)
    runs = load(store).study_runs(advice.study)
    assert set(runs["topology.queue.limit"].to_list()) == {f"{p.packets}p" for p in advice.probes}
    fifo = {**RENO, "duration": "60s"}
    drain = Advisor(Scenario.from_dict(fifo), target, store, warmup_ns=RENO_WARMUP_NS, seeds=1, max_bdp=4).advise()
    print(f"delay<=20ms: behind CoDel any limit up to {advice.buffer_packets}p, behind a FIFO {drain.buffer_packets}p")
    assert drain.queue == "fifo" and drain.buffer_packets is not None and 7 <= drain.buffer_packets <= 20


def test_advise_takes_an_aqm_for_a_mix_and_says_what_its_limit_means(tmp_path):
    db = tmp_path / "a.duckdb"
    out = bufferlab("advise", "--rate", "4Mbps", "--rtt", "100ms", "--queue", "fq_codel", "--target",
                    "utilisation>=0.5", "--seeds", "1", "--duration", "10s", "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    advice = json.loads(out.stdout)
    assert advice["queue"].startswith("fq_codel, 1024 flows") and advice["met"] is True
    assert advice["limit_meaning"].startswith("FQ-CoDel's limit over all 1024 flow queues (RFC 8290)")
    text = bufferlab("advise", "--rate", "4Mbps", "--rtt", "100ms", "--queue", "fq_codel", "--target",
                     "utilisation>=0.5", "--seeds", "1", "--duration", "10s", "--db", str(db))
    assert "recommended limit: " in text.stdout and "FQ-CoDel's limit over all" in " ".join(text.stdout.split())
    scenario = tmp_path / "s.toml"
    scenario.write_text('duration = "5s"\n[topology]\nkind = "dumbbell"\nbottleneck_rate = "4Mbps"\n', encoding="utf-8")
    both = bufferlab("advise", "--scenario", str(scenario), "--queue", "codel", "--target", "utilisation>=0.5",
                     "--db", str(db))
    assert both.returncode == 2 and both.stderr.startswith("error: --queue: the scenario's queue is searched")
    unknown = bufferlab("advise", "--rate", "4Mbps", "--queue", "tbf", "--target", "utilisation>=0.5", "--db", str(db))
    assert unknown.returncode == 2 and unknown.stderr.startswith('error: --queue: "tbf": expected one of fifo')


def test_recoveries_that_raised_a_window_are_counted_per_probe_and_noted_with_the_basis_to_change(tmp_path):
    # Four CUBIC flows behind PIE: reducing from RFC 5681's FlightSize (the default), some
    # recoveries begin as a long one ends and set ssthresh above the window (measured: 48 of 458
    # in 3 of 8 probes, most at the largest limit); reducing from cwnd, none can (0.7·cwnd).
    def advise(basis: str) -> tuple[Path, Advice]:
        mix = mix_scenario(rate="20Mbps", flows=4, rtt="100ms", ccas=["cubic"], duration="20s", queue="pie")
        mix["flow_defaults"]["tcp"] = {"ssthresh_from": basis}
        db = tmp_path / f"{basis}.duckdb"
        return db, Advisor(Scenario.from_dict(mix), [parse_target("utilisation>=0.9")], db, seeds=1,
                           warmup_ns=4_000_000_000).advise()

    db, advice = advise("flight_size")
    stored = load(db).query("SELECT sum(recoveries) AS r, sum(raising_reductions) AS raised FROM flows").row(0)
    assert (sum(p.recoveries for p in advice.probes), sum(p.raising_reductions for p in advice.probes)) == stored
    assert stored[1] > 0
    [note] = advice.notes
    assert note.startswith(f"{stored[1]} of {stored[0]} fast recoveries (in ") and 'ssthresh_from = "cwnd"' in note
    _, from_cwnd = advise("cwnd")
    assert all(p.recoveries > 0 and p.raising_reductions == 0 for p in from_cwnd.probes) and from_cwnd.notes == []


def test_probes_are_a_stored_study_and_asking_again_simulates_nothing(store):
    question = ([parse_target("utilisation>=0.98")], store)
    first = Advisor(Scenario.from_dict(RENO), *question, warmup_ns=RENO_WARMUP_NS, seeds=1).advise()
    again = Advisor(Scenario.from_dict(RENO), *question, warmup_ns=RENO_WARMUP_NS, seeds=1).advise()
    assert again.simulated == 0 and again.reused == len(again.probes)
    assert again.buffer_packets == first.buffer_packets
    runs = load(store).study_runs(again.study)
    assert sorted(runs["topology.queue"].to_list(), key=lambda v: int(v[:-1])) == \
        [f"{p.packets}p" for p in again.probes]


def test_an_advice_starts_its_workers_once_for_all_its_probes(tmp_path, monkeypatch, store_opens):
    # A pool's workers take a second to start (spawned interpreters importing the engine); an
    # advice of several probes starts them once and ends them when it is done.
    from bufferlab.study.executors import LocalPoolExecutor

    made: list[LocalPoolExecutor] = []

    def counted(advisor: Advisor) -> LocalPoolExecutor:
        made.append(LocalPoolExecutor(2))
        return made[-1]

    monkeypatch.setattr(Advisor, "_new_executor", counted)
    # A probe's measurement reads the store on one connection, however many seeds it has
    # (`store_opens`).
    advisor = Advisor(Scenario.from_dict(OVERLOAD), [parse_target("delay<=30ms")], tmp_path / "a.duckdb",
                      warmup_ns=2_000_000_000, seeds=3)
    advice = advisor.advise()
    assert len(advice.probes) > 2 and advice.simulated == 3 * len(advice.probes)
    assert len(made) == 1 and not made[0]._processes()  # one pool, its workers ended
    print(f"{len(store_opens)} store opens for {len(advice.probes)} probes")
    # Per probe: the sweep's look-up of what is stored and the probe's measurement, each a schema
    # check and one connection (with a connection per query: 10 here, plus 3 per distinct run);
    # the first probe's sweep, into a new store, has nothing to look up.
    assert len(store_opens) == 4 * len(advice.probes) - 2


def test_targets_no_buffer_can_meet_together_say_so_in_one_line(store, tmp_path):
    scenario = tmp_path / "reno.toml"
    scenario.write_text("\n".join([
        'name = "reno"', "seed = 1", 'duration = "120s"', 'sample_interval = "100ms"', "[topology]",
        'kind = "dumbbell"', "flows = 1", 'bottleneck_rate = "4Mbps"', 'rtt = "100ms"', 'queue = "10p"',
        "[flow_defaults]", 'cca = "newreno"', 'tcp = { ack_every = 1, min_rto = "1s" }']), encoding="utf-8")
    out = bufferlab("advise", "--scenario", str(scenario), "--target", "utilisation>=0.98", "--target",
                    "delay<=10ms", "--seeds", "1", "--warmup", "20s", "--db", str(store), "--json",
                    "-o", str(tmp_path / "advice.png"))
    assert out.returncode == 0, out.stderr
    advice = json.loads(out.stdout)
    assert advice["met"] is False and advice["buffer_packets"] is None
    assert advice["reason"].startswith("no buffer up to ") and "delay<=10ms" in advice["reason"]
    assert (tmp_path / "advice.png").stat().st_size > 0
    text = bufferlab("advise", "--scenario", str(scenario), "--target", "utilisation>=0.98", "--target",
                     "delay<=10ms", "--seeds", "1", "--warmup", "20s", "--db", str(store))
    assert text.returncode == 0 and "Traceback" not in text.stderr
    assert sum(line.startswith("no buffer up to ") for line in text.stdout.splitlines()) == 1
    # What the marks mean, above the probes (one seed: no interval to speak of).
    assert "probes: one seed each, so no interval; ✓ the run's metric after the warm-up meets the target" in \
        " ".join(text.stdout.split())   # the heading wraps at the table's width
    assert "±" not in text.stdout


def test_a_scenario_that_keeps_no_series_cannot_be_advised_and_nothing_runs(tmp_path):
    # The advisor measures the bottleneck's stored series after the warm-up: refused before any probe.
    scenario = tmp_path / "bare.toml"
    scenario.write_text("\n".join([
        'name = "bare"', 'duration = "10s"', "[topology]", 'kind = "dumbbell"', "flows = 1",
        'bottleneck_rate = "4Mbps"', 'rtt = "100ms"', 'queue = "10p"', "[record]", "store_series = false"]),
        encoding="utf-8")
    db = tmp_path / "advise.duckdb"
    out = bufferlab("advise", "--scenario", str(scenario), "--target", "utilisation>=0.9", "--db", str(db))
    assert out.returncode == 2 and not db.exists()
    assert out.stderr == ("error: record.store_series: advise measures the bottleneck's stored time series after "
                          "the warm-up: a scenario with store_series = false cannot be advised\n")

