"""benchmarks/bench_engine.py keeps working: its reference spec resolves and its measurement runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_engine.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_engine", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_spec_is_the_issue_s_dumbbell() -> None:
    bench = load_bench()
    spec = json.loads(bench.reference_spec(None, None))
    assert len(spec["flows"]) == 10
    assert spec["duration_ns"] == 30_000_000_000
    rates = sorted({link["rate_bps"] for link in spec["links"]})
    assert rates == [100_000_000, 1_000_000_000]
    bottleneck = next(link for link in spec["links"] if link["rate_bps"] == 100_000_000)
    assert bottleneck["delay_ns"] == 10_000_000
    assert bottleneck["queue_forward"] == {"kind": "fifo", "limit_packets": 100, "limit_bytes": None}
    assert all(link["delay_ns"] == 5_000_000 for link in spec["links"] if link is not bottleneck)


def test_measurement_counts_packets_and_events() -> None:
    bench = load_bench()
    m = bench.measure(bench.reference_spec(2, 0.5), repetitions=1)
    assert m["flows"] == 2 and m["simulated_s"] == 0.5
    assert m["packets"] > 0 and m["packets_per_s"] > 0 and m["events_per_s"] > 0
