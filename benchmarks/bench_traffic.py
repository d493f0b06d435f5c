"""Scale with traffic generators: many concurrent flows and a stream of mice created in the run.

The scale case: 10 000 concurrent long-lived flows and 100 000 mice over the run's life,
on a dumbbell (so the per-packet path is the same whatever the flow count): a 1 Gb/s bottleneck
with a 10 000-packet FIFO, 10 000 greedy NewReno flows (`persistent`, RTT 40 ms) and Poisson
mice at 1 000 per second for 100 s (sizes exponential, mean 20 kB), time series off.

    python benchmarks/bench_traffic.py                          # the scale case
    python benchmarks/bench_traffic.py --flows 100 1000 10000 --mice-rate 1000 --seconds 20

For each flow count it prints wall time, scheduler events per second, packet transmissions per
second, flows created, mice completed, and the process's peak resident memory. If per-flow work
stayed out of the per-packet path, events per second hardly move as the flow count grows. A
printed figure, not a test.
"""

from __future__ import annotations

import argparse
import resource
import time

from bufferlab.pipeline.result import EngineResult
from bufferlab.runner import core
from bufferlab.spec import Scenario


def scenario(flows: int, mice_rate: float, seconds: float) -> Scenario:
    return Scenario.from_dict({
        "name": "scale", "seed": 1, "duration": f"{seconds}s", "sample_interval": "off",
        "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": "1Gbps", "bottleneck_delay": "5ms",
                     "queue": "10000p", "rtt": "40ms"},
        "generators": [
            {"name": "long", "kind": "persistent", "sources": "src_0", "dst": "dst_0", "flows": flows},
            {"name": "mice", "kind": "poisson", "sources": "src_0", "dst": "dst_0", "arrivals_per_s": mice_rate,
             "size": {"dist": "exponential", "mean": "20kB"}},
        ],
        "flows": [{"name": "probe", "traffic": {"kind": "finite", "bytes": "1kB"}}],
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, nargs="+", default=[10_000])
    parser.add_argument("--mice-rate", type=float, default=1000.0, help="mice per second")
    parser.add_argument("--seconds", type=float, default=100.0, help="simulated seconds")
    args = parser.parse_args()
    print(f"{'flows':>7} {'mice/s':>7} {'sim s':>6} {'wall s':>8} {'Mevents/s':>10} {'Mpkt/s':>8} "
          f"{'flows made':>11} {'mice done':>10} {'peak RSS MB':>12}")
    for flows in args.flows:
        spec_json = scenario(flows, args.mice_rate, args.seconds).resolve().to_json()
        started = time.perf_counter()
        result = EngineResult.from_engine(core().run(spec_json)).counters()
        wall = time.perf_counter() - started
        packets = sum(c["sent_packets"] for c in result["channels"])
        mice = [f for f in result["flows"] if f["generator"] is not None]
        done = sum(f["completed_ns"] is not None for f in mice)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{flows:>7} {args.mice_rate:>7g} {args.seconds:>6g} {wall:>8.2f} {result['events'] / wall / 1e6:>10.2f} "
              f"{packets / wall / 1e6:>8.2f} {len(result['flows']):>11} {done:>10} {rss_mb:>12.0f}")


if __name__ == "__main__":
    main()
