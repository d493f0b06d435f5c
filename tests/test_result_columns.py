"""The engine's long columns reach Python as numpy arrays and the store row for row."""

from __future__ import annotations

import duckdb
import numpy as np

from bufferlab import runner
from bufferlab.spec import Scenario
from conftest import SMALL_DUMBBELL

CAPTURED = SMALL_DUMBBELL + """
    [[captures]]
    link = "btl"
    direction = "forward"
"""


def test_time_series_arrive_as_flow_by_sample_arrays() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(SMALL_DUMBBELL))
    ts = result["timeseries"]
    assert ts["interval_ns"] == 100_000_000
    assert ts["time_ns"].tolist() == [k * 100_000_000 for k in range(1, 11)]
    assert ts["cwnd_bytes"].shape == (2, 10) and ts["cwnd_bytes"].dtype == np.uint64
    assert ts["queue_packets"].shape == (len(result["channels"]), 10)
    # Cumulative series end where the counters do (the last sample is at the end of the run).
    assert [int(row[-1]) for row in ts["delivered_bytes"]] == [f["bytes_delivered"] for f in result["flows"]]
    assert (np.diff(ts["acked_bytes"], axis=1) >= 0).all()


def test_captures_arrive_as_columns_with_booleans() -> None:
    result, _ = runner.simulate(Scenario.from_toml_text(CAPTURED))
    cap = result["captures"][0]
    btl = result["channels"][cap["channel"]]
    assert btl["name"] == "btl_forward"
    assert len(cap["time_ns"]) == btl["sent_packets"]
    assert cap["is_data"].dtype == bool and cap["is_data"].all()
    assert int(cap["wire_bytes"].sum()) == btl["sent_bytes"]
    assert int(cap["retransmission"].sum()) <= sum(f["segments_retransmitted"] for f in result["flows"])


def test_store_keeps_every_sample_and_captured_packet(db) -> None:
    scenario = Scenario.from_toml_text(CAPTURED)
    result, _ = runner.simulate(scenario)
    summary = runner.run(scenario, db)
    con = duckdb.connect(str(db), read_only=True)
    cwnd = con.execute("SELECT cwnd_bytes FROM flow_timeseries WHERE run_id = ? AND flow = 1 ORDER BY time_ns",
                       [summary.run_id]).fetchall()
    assert [c for (c,) in cwnd] == result["timeseries"]["cwnd_bytes"][1].tolist()
    seqs = con.execute("SELECT seq, retransmission FROM captures WHERE run_id = ? ORDER BY packet",
                       [summary.run_id]).fetchall()
    cap = result["captures"][0]
    assert seqs == list(zip(cap["seq"].tolist(), cap["retransmission"].tolist()))


def test_stepped_run_with_progress_equals_one_call_and_reports_monotone_time() -> None:
    scenario = Scenario.from_toml_text(CAPTURED)
    whole, _ = runner.simulate(scenario)
    reports: list[tuple[int, int]] = []
    stepped, _ = runner.simulate(scenario, progress=lambda now, end: reports.append((now, end)))
    assert reports[-1] == (1_000_000_000, 1_000_000_000)
    assert [now for now, _ in reports] == sorted(now for now, _ in reports)
    assert len(reports) > 100
    assert stepped["flows"] == whole["flows"] and stepped["channels"] == whole["channels"]
    for name, series in whole["timeseries"].items():
        assert np.array_equal(np.asarray(stepped["timeseries"][name]), np.asarray(series)), name
    assert np.array_equal(stepped["captures"][0]["seq"], whole["captures"][0]["seq"])
