"""`--json` prints the summary with the keys the README documents."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SMALL_DUMBBELL, bufferlab

TOP_KEYS = {"scenario", "db", "run_id", "from_store", "engine_version", "seed", "simulated_s", "wall_time_s",
            "events", "flows", "bottleneck"}
FLOW_KEYS = {"name", "src", "dst", "goodput_mbps", "loss_rate", "retransmissions", "rtos", "mean_srtt_ms",
             "completion_time_s", "bytes_delivered"}
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


def test_readme_documents_every_json_key() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for key in TOP_KEYS | FLOW_KEYS | BOTTLENECK_KEYS:
        assert f"`{key}`" in readme, key


def test_readme_spec_examples_are_valid() -> None:
    import re

    from bufferlab import runner
    from bufferlab.spec import Scenario

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    sweeps = [b for b in blocks if "[[axes]]" in b]
    full = [b for b in blocks if "duration" in b and b not in sweeps]
    assert len(full) == 2 and len(sweeps) == 1
    from bufferlab.study.sweep import Sweep
    import tomllib

    for block in sweeps:  # README sweeps are written as if they sat in sweeps/
        sweep = Sweep.from_dict(tomllib.loads(block), base_dir=Path(__file__).resolve().parents[2] / "sweeps")
        assert len(sweep.points()) > 1
    for block in full:
        runner.validate(Scenario.from_toml_text(block))
    # The per-flow list fragment completes the dumbbell example once `flows = K` is dropped.
    fragment = next(b for b in blocks if "duration" not in b and "rtt" in b)
    dumbbell = next(b for b in full if "dumbbell" in b).replace("flows = 5 ", "# flows = 5 ")
    engine = Scenario.from_toml_text(dumbbell + fragment).to_engine()
    assert len(engine["flows"]) == 2
