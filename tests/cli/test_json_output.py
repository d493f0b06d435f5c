"""`--json` prints the summary with the keys the results guide (docs/guides/results.md) documents."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SMALL_DUMBBELL, bufferlab

TOP_KEYS = {"scenario", "db", "run_id", "from_store", "engine_version", "seed", "simulated_s", "wall_time_s",
            "events", "flows", "bottleneck", "notes"}
FLOW_KEYS = {"name", "src", "dst", "goodput_mbps", "loss_rate", "retransmissions", "rtos", "mean_srtt_ms",
             "completion_time_s", "bytes_delivered", "recoveries", "raising_reductions"}
BOTTLENECK_KEYS = {"channel", "rate_mbps", "utilisation", "drops", "random_losses", "mean_queue_packets",
                   "max_queue_packets", "mean_sojourn_ms", "queue", "aqm_drops", "ce_marks"}


def test_json_summary_has_the_documented_keys(write_scenario, db: Path) -> None:
    result = bufferlab("run", str(write_scenario(SMALL_DUMBBELL)), "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # stdout is JSON and nothing else
    assert set(summary) == TOP_KEYS
    assert summary["scenario"] == "small" and summary["db"] == str(db)
    assert len(summary["flows"]) == 2
    for flow in summary["flows"]:
        assert set(flow) == FLOW_KEYS
    assert set(summary["bottleneck"]) == BOTTLENECK_KEYS
    assert summary["bottleneck"]["channel"] == "btl_forward" and summary["bottleneck"]["rate_mbps"] == 10.0


def test_json_summary_values_are_physical(write_scenario, db: Path) -> None:
    summary = json.loads(bufferlab("run", str(write_scenario(SMALL_DUMBBELL)), "--db", str(db), "--json").stdout)
    total = sum(f["goodput_mbps"] for f in summary["flows"])
    assert 0 < total <= 10.0  # cannot beat the 10 Mb/s bottleneck
    assert 0 < summary["bottleneck"]["utilisation"] <= 1
    for flow in summary["flows"]:
        assert flow["mean_srtt_ms"] >= 20.0  # never below the 20 ms propagation RTT
        assert 0 <= flow["loss_rate"] < 1
        assert flow["completion_time_s"] is None  # greedy flows run to the end
    assert summary["simulated_s"] == 1.0


def test_the_results_guide_documents_every_json_key() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "results.md").read_text(encoding="utf-8")
    for key in TOP_KEYS | FLOW_KEYS | BOTTLENECK_KEYS:
        assert f"`{key}`" in guide, key


def test_results_list_json_gives_each_stored_run_with_its_whole_id(write_scenario, db: Path) -> None:
    ran = json.loads(bufferlab("run", str(write_scenario(SMALL_DUMBBELL)), "--db", str(db), "--json").stdout)
    listed = bufferlab("results", "list", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)  # stdout is JSON and nothing else
    assert [r["run_id"] for r in runs] == [ran["run_id"]] and len(ran["run_id"]) == 64
    assert set(runs[0]) == {"run_id", "name", "study", "seed", "status", "created_at", "simulated_s", "wall_time_s",
                            "flows"}
    assert (runs[0]["name"], runs[0]["status"], runs[0]["flows"], runs[0]["simulated_s"]) == ("small", "complete", 2, 1.0)
