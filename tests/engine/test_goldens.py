"""Golden scenarios: every controller, both transports, every queue kind and every
traffic generator give bit-identical results across optimisations of the engine. The hashes are
checked in (tests/engine/goldens/hashes.json); `python tests/engine/goldens/regenerate.py` rewrites them when a
result is meant to change."""

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


def test_every_golden_has_a_checked_in_hash() -> None:
    assert sorted(CHECKED_IN) == sorted(goldens.GOLDENS)


@pytest.mark.parametrize("name", sorted(goldens.GOLDENS))
def test_golden_result_is_bit_identical(name: str) -> None:
    assert goldens.golden_hash(name) == CHECKED_IN[name], (
        f"{name}: the engine's result changed; if that is intended, run tests/engine/goldens/regenerate.py "
        "and say why in the commit")


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
