"""How long each seed's reproduction takes, against what `bufferlab reproduce --list` tells users.

Each reproduction runs as `bufferlab reproduce NAME [--quick]` does (its studies, figures and
summary), in a process of its own, into a fresh store, on the default workers (one per core).
The table prints the measured wall time, the listed estimate, their ratio and the size of the
store the run left. An estimate off by more than a factor of two is marked: update the
reproduction's `quick_estimate_s` / `full_estimate_s` (python/bufferlab/experiments/).

    python benchmarks/bench_reproduce.py                         # every quick variant (~30 s)
    python benchmarks/bench_reproduce.py --full appenzeller2004  # the seed's scale (minutes)
    python benchmarks/bench_reproduce.py --names splitbuff ccperf

A printed figure, not a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bufferlab.experiments.registry import reproductions

BUFFERLAB = [sys.executable, "-m", "bufferlab"]


def measure(name: str, quick: bool, folder: Path) -> tuple[float, int]:
    """Wall seconds of one reproduction, whole process, and the bytes of the store it left."""
    db = folder / f"{name}.duckdb"
    started = time.perf_counter()
    done = subprocess.run([*BUFFERLAB, "reproduce", name, *(["--quick"] if quick else []), "--db", str(db),
                           "--out", str(folder / name)], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bufferlab reproduce {name} failed ({done.returncode}): {done.stderr.strip()}")
    return wall, db.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    known = reproductions()
    parser.add_argument("--names", nargs="*", choices=list(known), help="quick variants to time (default: all)")
    parser.add_argument("--full", nargs="*", choices=list(known), default=[],
                        help="reproductions to time at the seed's scale too")
    args = parser.parse_args()
    cases = [(name, True) for name in (args.names if args.names is not None else known)]
    cases += [(name, False) for name in args.full]
    print(f"{'reproduction':<24} {'measured':>9} {'listed':>8} {'ratio':>6} {'store MB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, quick in cases:
            r = known[name]
            listed = r.quick_estimate_s if quick else r.full_estimate_s
            wall, size = measure(name, quick, Path(tmp))
            ratio = wall / listed
            mark = "  <- update the estimate" if not 0.5 <= ratio <= 2 else ""
            label = f"{name} {'--quick' if quick else 'full'}"
            print(f"{label:<24} {wall:>8.1f}s {listed:>7.0f}s {ratio:>6.2f} {size / 1e6:>9.1f}{mark}", flush=True)


if __name__ == "__main__":
    main()
