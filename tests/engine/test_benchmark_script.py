"""benchmarks/bench_engine.py and bench_scale.py keep working: their specs are the reference
scenarios they name and their measurements run."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from bufferlab import _core
from bufferlab.spec.resolved import link_queue

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_engine.py"


def load_script(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name (bench_pipeline's)
    spec.loader.exec_module(module)
    return module


def load_bench():
    return load_script(BENCH)


def test_reference_spec_is_the_issue_s_dumbbell() -> None:
    bench = load_bench()
    # The dumbbell's flows are columns of its JSON (`many_flows`), as the engine expands them.
    spec = json.loads(_core.expanded_spec(bench.reference_spec(None, None)))
    assert len(spec["flows"]) == 10
    assert spec["duration"] == 30_000_000_000
    rates = sorted({link["rate"] for link in spec["links"]})
    assert rates == [100_000_000, 1_000_000_000]
    bottleneck = next(link for link in spec["links"] if link["rate"] == 100_000_000)
    assert bottleneck["delay"] == 10_000_000
    assert link_queue(spec, bottleneck, "forward") == {"kind": "fifo", "limit_packets": 100, "limit_bytes": None}
    assert all(link["delay"] == 5_000_000 for link in spec["links"] if link is not bottleneck)


def test_measurement_counts_packets_and_events() -> None:
    bench = load_bench()
    m = bench.measure(bench.reference_spec(2, 0.5), repetitions=1)
    assert m["flows"] == 2 and m["simulated_s"] == 0.5
    assert m["packets"] > 0 and m["packets_per_s"] > 0 and m["events_per_s"] > 0


def load_scale_bench():
    return load_script(BENCH.parent / "bench_scale.py")


def test_scale_ladder_has_the_issue_s_six_cases_and_the_large_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH.parent))  # ns3_twins imports bench_ns3 beside it
    bench = load_scale_bench()
    cases = {name: make() for name, (_, make) in bench.CASES.items()}
    assert list(cases) == ["dumbbell", "100x1g", "1000x1g", "10000x10g", "fqcodel_10k", "100000x100g", "cubic_10g",
                           "seed000", "window_210k", "quic_window", "quic_timeloss"]
    big = cases["10000x10g"]["topology"]
    assert (big["flows"], big["bottleneck_rate"], big["queue"]) == (10_000, "10Gbps", {"rule": "stanford"})
    assert big["rtt"] == {"dist": "uniform", "low": "20ms", "high": "200ms"}
    # The FQ-CoDel rung is the same scenario but for its queue (its ratio to the FIFO is printed).
    fq = cases["fqcodel_10k"]["topology"]
    assert {**fq, "queue": big["queue"]} == big
    assert fq["queue"] == {"kind": "fq_codel", "flows": 16384, "limit": {"rule": "stanford"}}
    # The top rung: ten times the flows and the rate of the 10,000-flow one, for 2 s.
    top = cases["100000x100g"]
    assert {**top["topology"], "flows": 10_000, "bottleneck_rate": "10Gbps"} == big
    assert (top["topology"]["flows"], top["topology"]["bottleneck_rate"], top["duration"]) == (100_000, "100Gbps", "2s")
    cubic = cases["cubic_10g"]
    assert (cubic["topology"]["loss"], cubic["flow_defaults"]["cca"], cubic["duration"]) == (1e-6, "cubic", "60s")
    assert cases["seed000"]["duration"] == "150s"
    for name in ("window_210k", "quic_window", "quic_timeloss"):
        assert cases[name]["topology"]["queue"] == "100000p" and cases[name]["topology"]["flows"] == 1
    assert cases["window_210k"]["flow_defaults"]["transport"] == "tcp"
    assert cases["quic_window"]["flow_defaults"]["transport"] == "quic"
    assert "quic" not in cases["quic_window"]["flow_defaults"], "RFC 9002's default packet threshold"
    timeloss = cases["quic_timeloss"]
    assert timeloss["flow_defaults"]["quic"] == {"packet_threshold": 1_000_000}
    assert timeloss["topology"]["loss"] == 1e-5
    assert set(bench.ns3_twins()) == set(cases), "every case has a twin or says why not"


def test_scale_measurement_reports_rates_and_memory() -> None:
    m = load_scale_bench().measure_case("100x1g")
    assert m["flows"] == 100 and m["simulated_s"] == 5.0
    assert m["events"] > 0 and m["packets"] > 0 and m["peak_mb"] > 0
    assert 0 < m["goodput_mbps"] <= 1000


def test_output_fingerprints_tell_a_changed_table_and_nothing_else() -> None:
    compare = load_script(BENCH.parent / "compare_outputs.py")
    dumbbell = BENCH.parent.parent / "scenarios" / "dumbbell.toml"
    first = compare.fingerprint(dumbbell, simulate_it=True)
    assert compare.fingerprint(dumbbell, simulate_it=True) == first  # the run's wall time aside
    changed = {**first, "tables": {**first["tables"], "link_metrics": "0" * 64}}
    assert compare.differences({"d": first}, {"d": first}) == []
    assert compare.differences({"d": first}, {"d": changed}) == ["d.tables.link_metrics: differs"]
    assert compare.differences({"d": first}, {}) == ["d: only before"]
    other = compare.fingerprint(BENCH.parent.parent / "scenarios" / "shallow_buffers.toml", simulate_it=False)
    assert other["spec_json"] != first["spec_json"] and "tables" not in other


def test_ns3_twins_of_the_command_cases_simulate_the_same_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench_pipeline and bench_engine divide ns-3's time for a twin by bufferlab's for a case: the
    ratio means something only if both simulate the same network (nodes, links with their rates,
    delays and queues, flows between the same hosts) for the same time. The TCP settings are ns-3's,
    matched in bufferlab by bench_ns3, and may differ from the scenario's."""
    from bufferlab.spec import load_scenario
    from bufferlab.spec.overrides import parse_assignment

    monkeypatch.syspath_prepend(str(BENCH.parent))
    import bench_ns3

    pipeline = load_script(BENCH.parent / "bench_pipeline.py")
    reference = load_scenario(BENCH.parent.parent / "scenarios" / "dumbbell.toml")
    assert [case[3] for case in pipeline.WHOLE_PROCESS_CASES] == ["REFERENCE_TWIN", "ONE_FLOW_TWIN"]
    for _, overrides, _, twin_name, _ in pipeline.WHOLE_PROCESS_CASES:
        ours = reference.with_overrides(dict(parse_assignment(assignment) for assignment in overrides))
        theirs = bench_ns3.bufferlab_scenario(getattr(bench_ns3, twin_name), 1)
        ours_spec, theirs_spec = ours.resolve().engine, theirs.resolve().engine
        for key in ("nodes", "links", "duration"):
            assert ours_spec[key] == theirs_spec[key], (twin_name, key)
        assert [(f["src"], f["dst"]) for f in ours_spec["flows"]] == [(f["src"], f["dst"]) for f in theirs_spec["flows"]]
    assert load_bench().ns3_reference_s(None) == (6.0, "quoted; --ns3-binary measures it now")
    assert pipeline.ns3_seconds(None)[0] == [6.0, 1.3]


def test_reproduction_benchmark_times_a_reproduction_against_its_listed_estimate(tmp_path: Path) -> None:
    import subprocess

    from bufferlab.experiments.registry import reproductions

    out = subprocess.run([sys.executable, str(BENCH.parent / "bench_reproduce.py"), "--names", "quic_sizing"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()
    assert header.split() == ["reproduction", "measured", "listed", "ratio", "store", "MB"]
    name, variant, measured, listed, ratio, store_mb = row.split()[:6]
    assert (name, variant) == ("quic_sizing", "--quick")
    assert float(listed.rstrip("s")) == reproductions()["quic_sizing"].quick_estimate_s
    assert float(ratio) == pytest.approx(float(measured.rstrip("s")) / float(listed.rstrip("s")), abs=0.05)
    assert float(store_mb) > 0
