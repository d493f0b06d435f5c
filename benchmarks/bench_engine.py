"""Engine throughput on the reference dumbbell, side by side with ns-3's figure for it.

The reference scenario (issue "Engine foundation"; scenarios/dumbbell.toml): 10 NewReno flows,
100 Mb/s bottleneck with 10 ms delay, 1 Gb/s access links with 5 ms delay, 100-packet FIFO,
30 simulated seconds. ns-3's release build needs about 13 s of wall time for it on these machines
(NS3_REFERENCE_S below); bufferlab's goal is at least 100x that speed.

    python benchmarks/bench_engine.py                # the reference scenario, 5 repetitions
    python benchmarks/bench_engine.py --flows 10 100 1000 --seconds 10

Prints wall time (best and median of the repetitions, engine call including JSON conversion),
simulated packet transmissions per second (every packet on every link counts once per link),
scheduler events per second, and the speed ratio against ns-3. A printed figure, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bufferlab import load_scenario
from bufferlab.runner import core

NS3_REFERENCE_S = 13.0
REFERENCE = Path(__file__).resolve().parent.parent / "scenarios" / "dumbbell.toml"


def measure(flows: int | None, seconds: float | None, repetitions: int) -> dict[str, float]:
    scenario = load_scenario(REFERENCE)
    data = scenario.to_dict()
    if flows is not None:
        data["topology"]["flows"] = flows
    if seconds is not None:
        data["duration"] = f"{seconds}s"
    scenario = type(scenario).from_dict(data)
    spec_json = scenario.resolve().to_json()
    import json

    walls = []
    result = None
    for _ in range(repetitions):
        started = time.perf_counter()
        result = json.loads(core().run(spec_json))
        walls.append(time.perf_counter() - started)
    assert result is not None
    packets = sum(c["sent_packets"] for c in result["channels"])
    best = min(walls)
    return {
        "flows": len(result["flows"]),
        "simulated_s": result["end_ns"] / 1e9,
        "best_s": best,
        "median_s": statistics.median(walls),
        "packets": packets,
        "packets_per_s": packets / best,
        "events_per_s": result["events"] / best,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flows", type=int, nargs="*", help="flow counts to sweep (default: the reference 10)")
    parser.add_argument("--seconds", type=float, help="simulated seconds (default: the reference 30)")
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()

    print(f"engine {core().engine_version()}; reference: {REFERENCE.name}; ns-3 reference {NS3_REFERENCE_S:.0f} s")
    header = f"{'flows':>6} {'sim s':>6} {'best s':>8} {'median s':>9} {'Mpkt/s':>7} {'Mevent/s':>9} {'vs ns-3':>8}"
    print(header)
    print("-" * len(header))
    for flows in args.flows or [None]:
        m = measure(flows, args.seconds, args.repetitions)
        reference = m["flows"] == 10 and m["simulated_s"] == 30.0
        ratio = f"{NS3_REFERENCE_S / m['best_s']:7.0f}x" if reference else "       -"
        print(f"{m['flows']:>6} {m['simulated_s']:>6.0f} {m['best_s']:>8.3f} {m['median_s']:>9.3f} "
              f"{m['packets_per_s'] / 1e6:>7.2f} {m['events_per_s'] / 1e6:>9.2f} {ratio}")


if __name__ == "__main__":
    main()
