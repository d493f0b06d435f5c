"""Engine throughput on the reference dumbbell, side by side with ns-3's figure for it.

The reference scenario (scenarios/dumbbell.toml): 10 NewReno flows, 100 Mb/s bottleneck with
10 ms delay, 1 Gb/s access links with 5 ms delay, 100-packet FIFO, 30 simulated seconds. ns-3 3.44
runs it in about 6 s on these machines (a side-by-side measurement, which
`benchmarks/bench_pipeline.py` quotes too): NS3_REFERENCE_S below. The target for the engine alone
is 200x that speed (0.03 s).

    python benchmarks/bench_engine.py                # the reference scenario, 5 repetitions
    python benchmarks/bench_engine.py --flows 10 100 1000 --seconds 10
    python benchmarks/bench_engine.py --ns3-binary benchmarks/ns3/build/dumbbell   # ns-3 measured now

With --ns3-binary (compiled by `make bench-ns3`), ns-3's time is measured in the same session:
its twin of the reference dumbbell (benchmarks/bench_ns3.py, every setting matched), whole
process, best of 3. The quoted 6 s was taken on another day, and the host's speed varies from
hour to hour, so only a side-by-side ratio is a fair one.

Prints wall time (best and median of the repetitions) of the engine called from Python, result
tables included, then of the engine alone (the `run_spec` Rust example, when cargo is available,
built with the extension's profile when the extension is a profile-guided build: see
tools/pgo-build); simulated packet transmissions per second (every packet on every link counts
once per link), scheduler events per second, and the speed ratio against ns-3. A printed figure,
not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bufferlab import load_scenario
from bufferlab.pipeline.result import EngineResult
from bufferlab.runner import core

NS3_REFERENCE_S = 6.0
REFERENCE = Path(__file__).resolve().parent.parent / "scenarios" / "dumbbell.toml"


def reference_spec(flows: int | None, seconds: float | None) -> str:
    """The engine spec of the reference scenario, optionally with another flow count or length."""
    scenario = load_scenario(REFERENCE)
    data = scenario.to_dict()
    if flows is not None:
        data["topology"]["flows"] = flows
    if seconds is not None:
        data["duration"] = f"{seconds}s"
    return type(scenario).from_dict(data).resolve().to_json()


def measure(spec_json: str, repetitions: int) -> dict[str, float]:
    walls = []
    result = None
    for _ in range(repetitions):
        started = time.perf_counter()
        result = EngineResult.from_engine(core().run(spec_json)).counters()
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


def ns3_reference_s(binary: Path | None) -> tuple[float, str]:
    """ns-3's time for the reference dumbbell and where it comes from: measured now with `binary`
    (its twin, whole process, best of 3), else the quoted figure."""
    if binary is None:
        return NS3_REFERENCE_S, "quoted; --ns3-binary measures it now"
    sys.path.insert(0, str(REFERENCE.parent.parent / "benchmarks"))
    from bench_ns3 import REFERENCE_TWIN, best_walls

    return best_walls([REFERENCE_TWIN], binary, "bench_engine")[0], "measured now: its twin, whole process, best of 3"


def pgo_profile() -> Path | None:
    """The profile the installed extension was optimised with, or None if it is a plain build.
    tools/pgo-build leaves its optimised build in target/pgo/optimized and installs a copy of it,
    so the extension is a profile-guided build exactly when it is byte-identical to that file."""
    root = REFERENCE.parent.parent
    profile = root / "target" / "pgo" / "merged.profdata"
    built = root / "target" / "pgo" / "optimized" / "release" / "lib_core.so"
    installed = Path(core().__file__ or "")
    if not (profile.is_file() and built.is_file() and installed.is_file()):
        return None
    if built.stat().st_size != installed.stat().st_size or built.read_bytes() != installed.read_bytes():
        return None
    return profile


def engine_alone(spec_json: str, repetitions: int, profile: Path | None) -> float | None:
    """Best wall time of the engine without Python (the `run_spec` Rust example) on the same
    resolved spec, or None where cargo is not available. With `profile`, the example is built as
    the extension was (tools/pgo-build: the profile on the workspace's crates, through
    tools/pgo-rustc, in target/pgo/optimized), so that it measures the engine users get."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return None
    root = REFERENCE.parent.parent
    env = dict(os.environ)
    target = root / "target"
    if profile is not None:
        target = root / "target" / "pgo" / "optimized"
        env.update(CARGO_TARGET_DIR=str(target), RUSTC_WORKSPACE_WRAPPER=str(root / "tools" / "pgo-rustc"),
                   BUFFERLAB_PGO_FLAG=f"-Cprofile-use={profile}")
    subprocess.run([cargo, "build", "--release", "--quiet", "--example", "run_spec"], cwd=root, check=True, env=env)
    binary = target / "release" / "examples" / "run_spec"
    with tempfile.NamedTemporaryFile("w", suffix=".json") as spec_file:
        spec_file.write(spec_json)
        spec_file.flush()
        out = subprocess.run([str(binary), spec_file.name, str(repetitions)], check=True, capture_output=True,
                             text=True).stdout
    match = re.search(r"wall ([0-9.]+) s", out)
    assert match, out
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flows", type=int, nargs="*", help="flow counts to sweep (default: the reference 10)")
    parser.add_argument("--seconds", type=float, help="simulated seconds (default: the reference 30)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--ns3-binary", type=Path,
                        help="ns-3's dumbbell program (`make bench-ns3` compiles benchmarks/ns3/build/dumbbell): "
                             "measure ns-3's reference time now instead of quoting it")
    args = parser.parse_args()

    profile = pgo_profile()
    build = f"profile-guided build ({profile.relative_to(REFERENCE.parent.parent)})" if profile else "plain build (no PGO)"
    ns3_s, ns3_source = ns3_reference_s(args.ns3_binary)
    print(f"engine {core().engine_version()}, {build}; reference: {REFERENCE.name}; "
          f"ns-3 reference {ns3_s:.2f} s ({ns3_source})")
    header = f"{'flows':>6} {'sim s':>6} {'best s':>8} {'median s':>9} {'Mpkt/s':>7} {'Mevent/s':>9} {'vs ns-3':>8}"
    print(header)
    print("-" * len(header))
    for flows in args.flows or [None]:
        spec_json = reference_spec(flows, args.seconds)
        m = measure(spec_json, args.repetitions)
        reference = m["flows"] == 10 and m["simulated_s"] == 30.0
        ratio = f"{ns3_s / m['best_s']:7.0f}x" if reference else "       -"
        print(f"{m['flows']:>6} {m['simulated_s']:>6.0f} {m['best_s']:>8.3f} {m['median_s']:>9.3f} "
              f"{m['packets_per_s'] / 1e6:>7.2f} {m['events_per_s'] / 1e6:>9.2f} {ratio}")
        alone = engine_alone(spec_json, args.repetitions, profile)
        if alone is not None:
            ratio = f", {ns3_s / alone:.0f}x ns-3" if reference else ""
            print(f"{'':>6} engine alone, without Python and JSON: {alone:.3f} s{ratio}")


if __name__ == "__main__":
    main()
