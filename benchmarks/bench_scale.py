"""The scale ladder: from the reference dumbbell to 10,000 flows at 10 Gb/s (with a FIFO and with
FQ-CoDel) and 100,000 flows at 100 Gb/s, and one flow with a very large window, each simulated in a process of
its own, printed as one table.

    python benchmarks/bench_scale.py                     # every case, once each
    python benchmarks/bench_scale.py --cases dumbbell cubic_10g --repetitions 3
    python benchmarks/bench_scale.py --list

Columns, per case (best of --repetitions by CPU time; memory of the best repetition's process):

    wall s       the engine called from Python (`pipeline.simulate`: the run and the Arrow tables of
                 its result), planning and the store excluded
    cpu s        the CPU time of the same (on a loaded machine, wall time also counts the time
                 other processes had the core; CPU time does not)
    Mevent/s     scheduler events per CPU second
    Mpkt/s       simulated packet transmissions per CPU second (a packet crossing three links
                 counts three times)
    peak MB      peak resident memory of the process (getrusage), Python and imports included
    run MB       what the run added: peak RSS minus the RSS just before the engine started
    kB/flow      run MB per flow of the result (listed and generated flows)

With --ns3-binary (compiled by `make bench-ns3`), a second table runs each case that ns-3's
dumbbell program can express as a twin with every setting matched (benchmarks/bench_ns3.py: the
same rates, delays, queue in packets and TCP options on both sides) and prints both simulators'
CPU time, the speed ratio, aggregate goodput and drops. The twins use bench_ns3's matched TCP
options, not the ladder's defaults, so their bufferlab times are of the twin, not of the row above.
Cases without a twin say why. Printed figures, never asserted: timings on a shared machine are
noisy, so compare ratios taken in one run.

    python benchmarks/bench_scale.py --together 6        # FQ-CoDel / FIFO at 10,000 flows, 6 pairs

--together N runs the FQ-CoDel and the FIFO rung at 10,000 flows N times as pairs started at
once, one process per core, and prints each pair's ratio of CPU times and their median. Run one
after the other, the two rungs of a pair see different speeds of a shared host (the FIFO rung
alone moved from 10.7 to 13.3 s within three minutes); started together, both see the same.
Each has the other beside it on the second core, as a loaded host would.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _dumbbell(flows: int, rate: str, seconds: int, *, rtt: Any, queue: Any, cca: str = "newreno",
              loss: float = 0.0, transport: str = "tcp", quic: dict[str, Any] | None = None) -> dict[str, Any]:
    """A greedy dumbbell without time series (sampling thousands of flows would measure the
    recorder, not the engine)."""
    flow_defaults: dict[str, Any] = {"cca": cca, "traffic": "greedy", "transport": transport}
    if quic is not None:
        flow_defaults["quic"] = quic
    return {
        "name": f"scale_{flows}x{rate}", "seed": 1, "duration": f"{seconds}s", "sample_interval": "off",
        "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": rate, "queue": queue, "rtt": rtt,
                     "loss": loss},
        "flow_defaults": flow_defaults,
    }


def _reference() -> dict[str, Any]:
    import tomllib

    data: dict[str, Any] = tomllib.loads((ROOT / "scenarios" / "dumbbell.toml").read_text())
    return data


def _seed000() -> dict[str, Any]:
    from bufferlab.experiments.dhamdhere2006 import _base

    # Seed 000 at its scale: the GENI tree, 144 persistent Reno flows and Poisson mice (Pareto
    # sizes), 150 s, the bottleneck captured; the small buffer B_s (18 packets).
    return _base("persistent", quick=False)


# name -> (what it is, the scenario as a mapping)
CASES: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "dumbbell": ("reference dumbbell: 10 NewReno, 100 Mb/s, 100p, 30 s, 10 ms samples", _reference),
    "100x1g": ("100 NewReno flows, 1 Gb/s, RTT 40 ms, Stanford buffer, 5 s",
               lambda: _dumbbell(100, "1Gbps", 5, rtt="40ms", queue={"rule": "stanford"})),
    "1000x1g": ("1000 NewReno flows, 1 Gb/s, RTT 40 ms, Stanford buffer, 5 s",
                lambda: _dumbbell(1000, "1Gbps", 5, rtt="40ms", queue={"rule": "stanford"})),
    "10000x10g": ("10,000 NewReno flows, 10 Gb/s, RTT uniform 20-200 ms, buffer RTT*C/sqrt(N), 10 s",
                  lambda: _dumbbell(10_000, "10Gbps", 10, rtt={"dist": "uniform", "low": "20ms", "high": "200ms"},
                                    queue={"rule": "stanford"})),
    # The same with FQ-CoDel at the bottleneck, a flow queue per flow (16,384 queues; the modulo
    # gives each of the 10,000 flows its own), limit the same Stanford buffer: what an AQM's
    # per-packet work costs at scale against the FIFO row above (the ratio is printed below the table).
    "fqcodel_10k": ("the same 10,000 flows behind FQ-CoDel, 16,384 flow queues, limit RTT*C/sqrt(N), 10 s",
                    lambda: _dumbbell(10_000, "10Gbps", 10, rtt={"dist": "uniform", "low": "20ms", "high": "200ms"},
                                      queue={"kind": "fq_codel", "flows": 16384, "limit": {"rule": "stanford"}})),
    # The top of the ladder: ten times the flows and the rate, for 2 simulated seconds (the RTTs and
    # the buffer rule as above); its target is to complete within 4 GB.
    "100000x100g": ("100,000 NewReno flows, 100 Gb/s, RTT uniform 20-200 ms, buffer RTT*C/sqrt(N), 2 s",
                    lambda: _dumbbell(100_000, "100Gbps", 2, rtt={"dist": "uniform", "low": "20ms", "high": "200ms"},
                                      queue={"rule": "stanford"})),
    "cubic_10g": ("1 CUBIC flow, 10 Gb/s, RTT 100 ms, 1 BDP, random loss 1e-6, 60 s",
                  lambda: _dumbbell(1, "10Gbps", 60, rtt="100ms", queue={"rule": "bdp"}, cca="cubic", loss=1e-6)),
    "seed000": ("seed 000's full scenario: GENI tree, persistent + Poisson mice, 18p, 150 s", _seed000),
    # Beyond the ladder: the per-ACK cost of a very large window (the SACK scoreboard's), slow
    # start into a 100,000-packet queue.
    "window_210k": ("1 NewReno flow, 1 Gb/s, RTT 100 ms, 100,000-packet queue (cwnd to ~210,000), 40 s",
                    lambda: _dumbbell(1, "1Gbps", 40, rtt="100ms", queue="100000p")),
    # The same for QUIC's sender (RFC 9002 loss detection over ACK frames that repeat their
    # ranges), with the default packet threshold (3), and with the time threshold alone (a sender
    # tolerating reordering) and random loss, so that each hole waits 1/8 RTT while a window's
    # worth of ACKs repeat the range above it.
    "quic_window": ("1 QUIC NewReno flow, 1 Gb/s, RTT 100 ms, 100,000-packet queue (cwnd to ~216,000), 40 s",
                    lambda: _dumbbell(1, "1Gbps", 40, rtt="100ms", queue="100000p", transport="quic")),
    "quic_timeloss": ("the same, loss by time threshold only (packet_threshold 10^6), random loss 1e-5",
                      lambda: _dumbbell(1, "1Gbps", 40, rtt="100ms", queue="100000p", transport="quic", loss=1e-5,
                                        quic={"packet_threshold": 1_000_000})),
}


def _stanford_packets(flows: int, rate_bps: float, rtt_s: float) -> int:
    """B = C·RTT/√N in 1500-byte packets (Appenzeller et al., SIGCOMM 2004), for an ns-3 twin's queue."""
    return max(1, round(rate_bps * rtt_s / 8 / 1500 / math.sqrt(flows)))


def ns3_twins() -> dict[str, Any]:
    """Ladder case -> the bench_ns3 case that builds the same dumbbell in both simulators, or the
    reason there is none."""
    from bench_ns3 import REFERENCE_TWIN, Case

    return {
        "dumbbell": REFERENCE_TWIN,
        "100x1g": Case("100x1g", 100, "1Gbps", 1e9, _stanford_packets(100, 1e9, 0.04), "TcpNewReno", 5, "10Gbps"),
        "1000x1g": Case("1000x1g", 1000, "1Gbps", 1e9, _stanford_packets(1000, 1e9, 0.04), "TcpNewReno", 5,
                        "10Gbps"),
        "10000x10g": "ns-3's dumbbell program gives every flow one RTT (this case spreads them over 20-200 ms)",
        "fqcodel_10k": "ns-3's dumbbell program gives every flow one RTT (this case spreads them over 20-200 ms)",
        "100000x100g": "ns-3's dumbbell program gives every flow one RTT (this case spreads them over 20-200 ms)",
        "cubic_10g": "ns-3's dumbbell program has no random loss",
        "seed000": "seed 000's GENI tree with Poisson mice is not a dumbbell",
        "window_210k": "not an ns-3 comparison: the per-ACK cost of a very large window",
        "quic_window": "not an ns-3 comparison: the per-ACK cost of a very large QUIC window",
        "quic_timeloss": "not an ns-3 comparison: the per-ACK cost of a very large QUIC window",
    }


NS3_HEADER = (f"{'case':<12} {'bl cpu s':>9} {'ns-3 cpu s':>11} {'ns-3/bl':>8} {'bl Mb/s':>9} {'ns-3 Mb/s':>10} "
              f"{'bl drops':>9} {'ns-3 drops':>10}")


def ns3_side_by_side(names: list[str], binary: Path) -> None:
    """The second table: each case's matched twin in bufferlab and in ns-3."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_ns3 import run_bufferlab, run_ns3

    print()
    print(f"ns-3 twins (matched settings, seed 1; {binary})")
    print(NS3_HEADER)
    print("-" * len(NS3_HEADER))
    twins = ns3_twins()
    for name in names:
        twin = twins[name]
        if isinstance(twin, str):
            print(f"{name:<10} no twin: {twin}")
            continue
        ours, theirs = run_bufferlab(twin, 1), run_ns3(twin, 1, binary)
        print(f"{name:<10} {ours['cpu']:>9.2f} {theirs['cpu']:>11.2f} {theirs['cpu'] / ours['cpu']:>7.0f}x "
              f"{ours['goodput'] / 1e6:>9.1f} {theirs['goodput'] / 1e6:>10.1f} {ours['drops']:>9} "
              f"{theirs['drops']:>10}", flush=True)


def _rss_mb() -> float:
    """Resident memory now, from /proc (Linux), in MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 1e6


def measure_case(name: str) -> dict[str, Any]:
    """Plan and simulate one case in this process; wall time of the simulation only."""
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import Scenario

    # The planner refuses a run whose upper estimate of memory (every queue full at once) exceeds
    # half the machine; at 100,000 flows that estimate counts 400,000 access queues of 1000
    # packets (51 GB). The ladder measures what a run uses, so it plans without that guard (as
    # `bufferlab run --max-memory` would) and prints the estimate beside the measured peak.
    planned = plan(Scenario.from_dict(CASES[name][1]()), max_memory=1 << 50)
    before_mb = _rss_mb()
    started, cpu_started = time.perf_counter(), time.process_time()
    raw = simulate(planned)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    result = raw.result.counters()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux
    flows = len(result["flows"])
    run_mb = max(0.0, peak_mb - before_mb)
    return {
        "case": name, "flows": flows, "simulated_s": result["end_ns"] / 1e9, "wall_s": wall, "cpu_s": cpu,
        "events": result["events"], "packets": sum(c["sent_packets"] for c in result["channels"]),
        "peak_mb": peak_mb, "run_mb": run_mb, "estimate_mb": planned.memory_bytes / 1e6, "kb_per_flow": run_mb * 1e3 / max(flows, 1),
        "goodput_mbps": sum(f["bytes_delivered"] for f in result["flows"]) * 8 / result["end_ns"] * 1e3,
        "drops": sum(c["dropped_queue_packets"] + c["dropped_loss_packets"] + c.get("dropped_aqm_packets", 0)
                     for c in result["channels"]),
    }


def start_child(name: str) -> subprocess.Popen[str]:
    """`measure_case` in a fresh interpreter, so that each case's peak memory is its own: started."""
    return subprocess.Popen([sys.executable, __file__, "--child", name], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def measured_by(child: subprocess.Popen[str]) -> dict[str, Any]:
    """What a child of `start_child` measured, once it has ended (its failure raised)."""
    out, err = child.communicate()
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, child.args, out, err)
    measured: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return measured


def run_in_child(name: str) -> dict[str, Any]:
    """`measure_case` for `name` in a child of its own, waited for."""
    return measured_by(start_child(name))


def ratio_together(rounds: int) -> None:
    """FQ-CoDel / FIFO at 10,000 flows: `rounds` pairs of the two rungs started at once."""
    ratios = []
    print(f"FQ-CoDel / FIFO at 10,000 flows, the two rungs started together, {rounds} pairs "
          f"(load at start {os.getloadavg()[0]:.1f})")
    for k in range(rounds):
        children = {name: start_child(name) for name in ("fqcodel_10k", "10000x10g")}
        cpu = {name: measured_by(child)["cpu_s"] for name, child in children.items()}
        ratios.append(cpu["fqcodel_10k"] / cpu["10000x10g"])
        print(f"  pair {k + 1}: FIFO {cpu['10000x10g']:.2f} s, FQ-CoDel {cpu['fqcodel_10k']:.2f} s, x{ratios[-1]:.2f}",
              flush=True)
    print(f"median x{statistics.median(ratios):.2f} (range x{min(ratios):.2f}-x{max(ratios):.2f}; target 1.5), "
          f"load at end {os.getloadavg()[0]:.1f}")


def row(m: dict[str, Any]) -> str:
    return (f"{m['case']:<12} {m['flows']:>6} {m['simulated_s']:>6.0f} {m['wall_s']:>8.2f} {m['cpu_s']:>7.2f} "
            f"{m['events'] / m['cpu_s'] / 1e6:>9.2f} {m['packets'] / m['cpu_s'] / 1e6:>7.2f} "
            f"{m['peak_mb']:>8.0f} {m['run_mb']:>7.0f} {m['kb_per_flow']:>8.2f} {m['goodput_mbps']:>10.1f} "
            f"{m['drops']:>9}")


HEADER = (f"{'case':<12} {'flows':>6} {'sim s':>6} {'wall s':>8} {'cpu s':>7} {'Mevent/s':>9} {'Mpkt/s':>7} {'peak MB':>8} "
          f"{'run MB':>7} {'kB/flow':>8} {'goodput Mb/s':>10} {'drops':>9}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="*", choices=list(CASES), help="cases to run (default: all)")
    parser.add_argument("--repetitions", type=int, default=1, help="best of this many runs per case")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--ns3-binary", type=Path,
                        help="ns-3's dumbbell program (`make bench-ns3` compiles benchmarks/ns3/build/dumbbell): "
                             "adds the table of matched ns-3 twins")
    parser.add_argument("--together", type=int, metavar="N",
                        help="FQ-CoDel / FIFO at 10,000 flows from N pairs of the two rungs started at once")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_case(args.child)))
        return
    if args.together:
        ratio_together(args.together)
        return
    if args.list:
        for name, (what, _) in CASES.items():
            print(f"{name:<12} {what}")
        return
    from bufferlab.pipeline.engine import engine_version

    print(f"engine {engine_version()}; best of {args.repetitions}; each case in its own process")
    print(HEADER)
    print("-" * len(HEADER))
    names = list(args.cases or CASES)
    measured = {}
    for name in names:
        best = min((run_in_child(name) for _ in range(args.repetitions)), key=lambda m: m["cpu_s"])
        measured[name] = best
        print(row(best), flush=True)
    if "10000x10g" in measured:
        big = measured["10000x10g"]
        print(f"\n10,000 flows at 10 Gb/s: {big['cpu_s']:.1f} s engine CPU for {big['simulated_s']:.0f} simulated s "
              f"(x{big['simulated_s'] / big['cpu_s']:.2f} real time; target >= 1 whole process), "
              f"{big['kb_per_flow']:.1f} kB per flow")
    if "100000x100g" in measured:
        top = measured["100000x100g"]
        print(f"100,000 flows at 100 Gb/s: peak {top['peak_mb']:.0f} MB (target 4000; the planner's upper estimate "
              f"{top['estimate_mb']:.0f} MB), {top['cpu_s']:.1f} s engine CPU "
              f"for {top['simulated_s']:.0f} simulated s, {top['kb_per_flow']:.1f} kB per flow")
    if "10000x10g" in measured and "fqcodel_10k" in measured:
        fifo, fq = measured["10000x10g"], measured["fqcodel_10k"]
        print(f"\nFQ-CoDel / FIFO at 10,000 flows: engine CPU time x{fq['cpu_s'] / fifo['cpu_s']:.2f} (target 1.5), "
              f"per packet x{(fq['cpu_s'] / fq['packets']) / (fifo['cpu_s'] / fifo['packets']):.2f}, "
              f"memory per flow {fq['kb_per_flow']:.2f} / {fifo['kb_per_flow']:.2f} kB")
    if args.ns3_binary is not None:
        if not args.ns3_binary.exists():
            sys.exit(f"bench_scale: {args.ns3_binary} is missing: run `make bench-ns3` (it compiles it)")
        ns3_side_by_side(names, args.ns3_binary)


if __name__ == "__main__":
    main()
