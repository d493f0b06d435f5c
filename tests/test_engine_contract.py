"""The Python side agrees with the engine's contract (spec.rs, record/result.rs)."""

from __future__ import annotations

import json

import pytest

from bufferlab import runner
from bufferlab.store import writer as store
from bufferlab.pipeline.result import decode
from bufferlab.spec import Scenario
from conftest import SMALL_DUMBBELL


def small_engine_spec() -> dict:
    return Scenario.from_toml_text(SMALL_DUMBBELL).to_engine()


def test_python_tcp_defaults_are_the_engine_s() -> None:
    # Spelling out the engine's TCP defaults must simulate exactly what the engine's own defaults do.
    spelled = small_engine_spec()
    implicit = json.loads(json.dumps(spelled))
    for flow in implicit["flows"]:
        del flow["tcp"]
    core = runner.core()
    assert core.run(json.dumps(spelled)) == core.run(json.dumps(implicit))


def test_store_columns_cover_every_engine_counter() -> None:
    result = decode(*runner.core().run(json.dumps(small_engine_spec())))
    assert set(result["flows"][0]) == set(store.FLOW_COUNTERS)
    renamed = {store.RENAMED_COLUMNS.get(c, c) for c in store.CHANNEL_COUNTERS}
    assert set(result["channels"][0]) == renamed
    series = set(result["timeseries"]) - {"interval_ns", "time_ns", *store.SERIES_INDICES}
    assert series == set(store.FLOW_SERIES) | set(store.CHANNEL_SERIES) | set(store.CLASS_SERIES)


def test_store_columns_cover_every_sub_buffer_counter() -> None:
    spec = small_engine_spec()
    spec["links"][0]["queue_forward"] = {"kind": "splitbuff", "limit_packets": 20, "sub_buffers": 3,
                                         "update_interval_ns": 50_000_000, "alpha": 0.5, "quantum_bytes": 1500}
    result = decode(*runner.core().run(json.dumps(spec)))
    assert [set(c) for c in result["channels"][0]["classes"]] == [set(store.CLASS_COUNTERS)] * 3
    assert "classes" not in result["channels"][1]
    assert list(result["timeseries"]["class_indices"]) == [0, 1, 2]


def test_store_columns_cover_every_captured_field() -> None:
    spec = small_engine_spec()
    spec["captures"] = [{"link": 0, "direction": "forward"}]
    capture = decode(*runner.core().run(json.dumps(spec)))["captures"][0]
    assert capture["sack"].shape == (len(capture["time_ns"]), 6)
    assert set(store.capture_columns(capture)) == set(store.CAPTURE_COLUMNS)
    assert set(capture) - {"channel", "sack"} == set(store.CAPTURE_COLUMNS) - {
        f"sack{k}_{edge}" for k in (1, 2, 3) for edge in ("start", "end")}


def test_engine_version_is_reported() -> None:
    version = runner.engine_version()
    assert version and decode(*runner.core().run(json.dumps(small_engine_spec())))["engine_version"] == version


def test_stepped_run_refuses_to_finish_early_or_twice() -> None:
    stepped = runner.core().Run(json.dumps(small_engine_spec()))
    assert stepped.end_ns == 1_000_000_000
    assert not stepped.advance(500_000_000)
    with pytest.raises(ValueError, match="not over yet"):
        stepped.finish()
    assert stepped.advance(stepped.end_ns)
    json_text, _ = stepped.finish()
    assert json_text == runner.core().run(json.dumps(small_engine_spec()))[0]
    with pytest.raises(ValueError, match="already finished"):
        stepped.finish()
