"""The training run of the profile-guided build (tools/pgo-build): runs the instrumented engine on
the golden scenarios (tests/engine/goldens/regenerate.py: every controller, both transports, every queue
kind, every traffic generator, a capture) and on the reference dumbbell (scenarios/dumbbell.toml,
the scenario users run first and `benchmarks/bench_engine.py` times; weighted, see
DUMBBELL_WEIGHT), and on two large dumbbells that cross the engine's size thresholds (LARGE),
through the same plan-and-simulate path as `bufferlab run`, result tables included. The profile it leaves says which branches and calls are hot; what it computes is thrown
away.

    PYTHONPATH=target/pgo/train python tools/pgo_train.py target/pgo/train

The argument is the directory the instrumented package was unpacked to: the script checks that
the engine it imported is that one, not the installed one (which would train nothing).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The reference dumbbell is run this many times (1.5 M events each, against 0.5 M for all the
# goldens), so that the common path (greedy TCP flows through a FIFO) has the weight of what users
# run, while the goldens still mark every other path as used. Measured (docs/development/speed.md, "A
# profile-guided build"): once, the dumbbell gained 1 % and one flow 4 %; four times, 4 % and
# 7 %, the QUIC and CUBIC cases about as much as before (-6..-10 %); the dumbbell alone, 5 % and
# 8 %, but QUIC only 0..-6 %.
DUMBBELL_WEIGHT = 4

# Large runs: the paths a run takes only past the engine's size thresholds (the prefetches ahead
# of each event, which start above about 4,300 flows; FQ-CoDel's drops from the fattest of
# thousands of flow queues), unseen by the small scenarios above, would otherwise be compiled as
# never run. 5,000 flows at 5 Gb/s for 0.4 simulated s, behind a FIFO and behind FQ-CoDel (1.9 M
# events together, 1.6 s on the instrumented engine). Measured (docs/development/speed.md, "A
# profile-guided build"): FQ-CoDel at 10,000 flows about 5 % faster, the FIFO rung and the
# reference dumbbell unchanged.
LARGE = [
    {"name": f"pgo_large_{kind}", "seed": 1, "duration": "400ms", "sample_interval": "off",
     "topology": {"kind": "dumbbell", "flows": 5000, "bottleneck_rate": "5Gbps", "queue": queue,
                  "rtt": {"dist": "uniform", "low": "20ms", "high": "200ms"}},
     "flow_defaults": {"cca": "newreno", "traffic": "greedy"}}
    for kind, queue in [("fifo", {"rule": "stanford"}),
                        ("fq_codel", {"kind": "fq_codel", "flows": 8192, "limit": {"rule": "stanford"}})]
]


def main() -> int:
    import bufferlab._core
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab import load_scenario
    from bufferlab.spec import Scenario

    if len(sys.argv) > 1:
        expected = Path(sys.argv[1]).resolve()
        found = Path(bufferlab._core.__file__ or "").resolve()
        if expected not in found.parents:
            print(f"pgo_train: the engine imported is {found}, not the instrumented one under {expected}",
                  file=sys.stderr)
            return 1

    spec = importlib.util.spec_from_file_location("goldens_regenerate", ROOT / "tests" / "engine" / "goldens" / "regenerate.py")
    assert spec and spec.loader
    goldens = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(goldens)

    started = time.perf_counter()
    scenarios = [Scenario.from_dict(data) for data in goldens.GOLDENS.values()]
    scenarios += [load_scenario(ROOT / "scenarios" / "dumbbell.toml")] * DUMBBELL_WEIGHT
    scenarios += [Scenario.from_dict(data) for data in LARGE]
    events = 0
    for scenario in scenarios:
        events += simulate(plan(scenario)).result.events
    print(f"pgo_train: {len(scenarios)} scenarios, {events / 1e6:.1f} M events, "
          f"{time.perf_counter() - started:.1f} s on the instrumented engine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
