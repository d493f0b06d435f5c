"""The engine's result reaches Python as Arrow tables, and the store row for row."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from bufferlab import runner
from bufferlab.pipeline.result import ENGINE_TABLES
from bufferlab.spec import Scenario
from bufferlab.store.tables import KEYS
from conftest import SMALL_DUMBBELL

CAPTURED = SMALL_DUMBBELL + """
    [[captures]]
    link = "btl"
    direction = "forward"
"""


def test_time_series_arrive_as_one_row_per_flow_and_sample() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(SMALL_DUMBBELL))
    ts = result.flow_timeseries
    assert result.sample_interval_ns == 100_000_000
    assert ts["flow"].to_list() == [0] * 10 + [1] * 10
    assert ts["time_ns"].to_list() == [k * 100_000_000 for k in range(1, 11)] * 2
    assert ts.schema["cwnd_bytes"] == pl.UInt64
    assert result.channel_timeseries.height == result.channels.height * 10
    # Cumulative series end where the counters do (the last sample is at the end of the run).
    last = ts.group_by("flow", maintain_order=True).last()
    assert last["delivered_bytes"].to_list() == result.flows["bytes_delivered"].to_list()
    acked = ts["acked_bytes"].to_numpy().reshape(2, 10)
    assert (np.diff(acked, axis=1) >= 0).all()


def test_captures_arrive_as_rows_with_booleans() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(CAPTURED))
    cap = result.captures
    btl = result.channels.row(int(cap["channel"][0]), named=True)
    assert btl["name"] == "btl_forward"
    assert cap.height == btl["sent_packets"]
    assert cap.schema["is_data"] == pl.Boolean and cap["is_data"].all()
    assert int(cap["wire_bytes"].sum()) == btl["sent_bytes"]
    assert int(cap["retransmission"].sum()) <= int(result.flows["segments_retransmitted"].sum())


def test_store_keeps_every_table_of_the_engine_row_for_row(db) -> None:
    scenario = Scenario.from_toml_text(CAPTURED)
    result, _ = runner.simulate(scenario)
    summary = runner.run(scenario, db)
    con = duckdb.connect(str(db), read_only=True)
    for name in ENGINE_TABLES:
        engine = result.table(name)
        columns = ", ".join(engine.columns)
        order = ", ".join(KEYS[name])
        stored = con.execute(f"SELECT {columns} FROM {name} WHERE run_id = ? ORDER BY {order}",
                             [summary.run_id]).fetchall()
        # 128-bit counters: Arrow decimals in the engine's table, HUGEINT in the store (equal values).
        assert stored == engine.rows(), name
    assert result.captures.height > 0 and result.flow_timeseries.height > 0


def test_stepped_run_with_progress_equals_one_call_and_reports_monotone_time() -> None:
    scenario = Scenario.from_toml_text(CAPTURED)
    whole, _ = runner.simulate(scenario)
    reports: list[tuple[int, int]] = []
    stepped, _ = runner.simulate(scenario, progress=lambda now, end: reports.append((now, end)))
    assert reports[-1] == (1_000_000_000, 1_000_000_000)
    assert [now for now, _ in reports] == sorted(now for now, _ in reports)
    assert len(reports) > 100
    for name in ENGINE_TABLES:
        assert stepped.table(name).equals(whole.table(name)), name
