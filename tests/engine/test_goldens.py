"""Golden scenarios: every controller, both transports, every queue kind and every
traffic generator give bit-identical results across optimisations of the engine. The hashes are
checked in (tests/engine/goldens/hashes.json), with each golden's goodput, drops and RTOs
(aggregates.json); `python tests/engine/goldens/regenerate.py --why ...` rewrites them when a result is
meant to change, and keeps a summary of the moves (changes.json) only if each lies within the
spread that start-time jitter alone gives."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest

GOLDENS_DIR = Path(__file__).resolve().parent / "goldens"


def _load_regenerate():
    spec = importlib.util.spec_from_file_location("goldens_regenerate", GOLDENS_DIR / "regenerate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


goldens = _load_regenerate()
CHECKED_IN: dict[str, str] = json.loads((GOLDENS_DIR / "hashes.json").read_text())
AGGREGATES: dict[str, dict[str, int]] = json.loads((GOLDENS_DIR / "aggregates.json").read_text())


def test_every_golden_has_a_checked_in_hash_and_aggregates() -> None:
    assert sorted(CHECKED_IN) == sorted(goldens.GOLDENS) == sorted(AGGREGATES)


@pytest.mark.parametrize("name", sorted(goldens.GOLDENS))
def test_golden_result_is_bit_identical(name: str) -> None:
    result = goldens.simulated(goldens.GOLDENS[name])
    assert goldens.content_hash(result) == CHECKED_IN[name], (
        f"{name}: the engine's result changed; if that is intended, run tests/engine/goldens/regenerate.py "
        "and say why in the commit")
    assert goldens.aggregates(result) == AGGREGATES[name]


def test_the_last_change_summary_moved_each_golden_within_its_start_time_jitter() -> None:
    summary = json.loads((GOLDENS_DIR / "changes.json").read_text())
    assert summary["why"] and summary["changed"]
    for name, change in summary["changed"].items():
        assert sorted(change) == sorted(AGGREGATES[name]), name
        for key, c in change.items():
            assert c["after"] == AGGREGATES[name][key], f"{name}.{key}: the summary is not of the checked-in results"
            assert c["jitter_min"] <= c["after"] <= c["jitter_max"], f"{name}.{key}"
            assert abs(c["after"] - c["before"]) <= c["jitter_max"] - c["jitter_min"], f"{name}.{key} moved too far"


def test_a_jittered_golden_keeps_everything_but_its_starts() -> None:
    for name in ("dualpi2", "closed_loop"):
        golden, jittered = goldens.GOLDENS[name], goldens.jittered(name, 3)
        assert jittered == goldens.jittered(name, 3) != goldens.jittered(name, 4)
        assert golden["seed"] == jittered["seed"] and golden["topology"] == jittered["topology"]
        if name == "dualpi2":
            assert [{k: v for k, v in f.items() if k != "start"} for f in jittered["flows"]] == golden["flows"]
        else:
            assert [{k: v for k, v in g.items() if k != "start"} for g in jittered["generators"]] == golden["generators"]
        starts = [f["start"] for f in jittered.get("flows") or jittered["generators"]]
        assert all(0 <= int(t.removesuffix("ns")) < goldens.JITTER_NS for t in starts)


def test_the_hash_sees_one_counter_and_one_sample_change() -> None:
    import polars as pl

    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import Scenario

    result = simulate(plan(Scenario.from_dict(goldens.GOLDENS["reno"]))).result
    reference = goldens.content_hash(result)
    first = pl.int_range(pl.len()) == 0
    counter = result.with_tables(flows=result.flows.with_columns(
        pl.when(first).then(pl.col("segments_retransmitted") + 1).otherwise(pl.col("segments_retransmitted"))
        .alias("segments_retransmitted")))
    last = pl.int_range(pl.len()) == pl.len() - 1
    sample = result.with_tables(flow_timeseries=result.flow_timeseries.with_columns(
        pl.when(last).then(pl.col("cwnd_bytes") + 1).otherwise(pl.col("cwnd_bytes")).alias("cwnd_bytes")))
    work = dataclasses.replace(result, events=result.events + 1)
    assert goldens.content_hash(counter) != reference
    assert goldens.content_hash(sample) != reference
    assert goldens.content_hash(work) == reference  # the work done is not the result
