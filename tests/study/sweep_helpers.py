"""What the sweep tests share: a base scenario whose seeds matter, a sweep file beside it, a small
sweep of four runs, and what a sweep stored, keyed by what ran."""

from __future__ import annotations

import textwrap
from pathlib import Path

import bufferlab

from conftest import SMALL_DUMBBELL

# Random loss, so that each seed is a run of its own.
BASE = textwrap.dedent(SMALL_DUMBBELL) + 'loss = "0.5%"\n'


def sweep_of(tmp_path: Path, body: str, base: str = BASE) -> Path:
    (tmp_path / "base.toml").write_text(base)
    path = tmp_path / "sweep.toml"
    path.write_text('base = "base.toml"\n' + textwrap.dedent(body))
    return path


QUEUE_SWEEP = """
    name = "queues"
    seeds = 2
    [[axes]]
    key = "topology.queue"
    values = ["5p", "40p"]
"""


def stored(db: Path) -> dict[str, object]:
    """Everything a sweep stored, keyed by what ran (not when, nor how long it took)."""
    res = bufferlab.load(db)
    runs = res.query("SELECT run_id, seed, spec_json, events, end_ns FROM runs ORDER BY run_id").to_dicts()
    flows = res.query("SELECT * EXCLUDE (run_id) , run_id FROM flows ORDER BY run_id, flow").to_dicts()
    metrics = res.query("SELECT * FROM flow_metrics ORDER BY run_id, flow").to_dicts()
    points = res.query("SELECT point, seed, run_id, status FROM study_points ORDER BY point, seed").to_dicts()
    return {"runs": runs, "flows": flows, "metrics": metrics, "points": points}
