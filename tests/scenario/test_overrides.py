"""Overrides (`Scenario.with_overrides`, `--set KEY=VALUE`) and start-time jitter: fields changed
by path and validated exactly like a file; seeds that give independent replications."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bufferlab import runner
from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import canonical_json, json_members
from bufferlab.spec.overrides import parse_assignment, split_path

from conftest import SMALL_DUMBBELL, bufferlab


def small() -> Scenario:
    return Scenario.from_toml_text(SMALL_DUMBBELL)


def test_paths_split_into_tables_and_array_entries() -> None:
    assert split_path("flows[0].tcp.sack") == ["flows", 0, "tcp", "sack"]
    assert split_path("topology.queue") == ["topology", "queue"]
    with pytest.raises(SpecError, match=r"^flows\[x\]\.cca: malformed key"):
        split_path("flows[x].cca")


def test_assignments_read_toml_values_and_fall_back_to_text() -> None:
    assert parse_assignment("topology.flows=10") == ("topology.flows", 10)
    assert parse_assignment("topology.queue=500p") == ("topology.queue", "500p")
    assert parse_assignment('flow_defaults.start={dist = "uniform", low = "0s", high = "1s"}') == (
        "flow_defaults.start", {"dist": "uniform", "low": "0s", "high": "1s"})
    with pytest.raises(SpecError, match="^--set: .* is not KEY=VALUE"):
        parse_assignment("topology.queue")


def test_overrides_change_the_engine_spec_as_the_file_would() -> None:
    changed = small().with_overrides({"topology.queue": "500p", "flow_defaults.cca": "cubic",
                                      "flow_defaults.tcp.sack": False})
    written = Scenario.from_toml_text(SMALL_DUMBBELL.replace('queue = "20p"', 'queue = "500p"') +
                                      '[flow_defaults]\ncca = "cubic"\ntcp = { sack = false }\n')
    assert changed.to_engine_json() == written.to_engine_json()


def test_a_listed_flow_is_changed_by_index() -> None:
    listed = Scenario.from_toml_text(SMALL_DUMBBELL.replace("flows = 2\n", "") +
                                     '[[flows]]\ncca = "reno"\n[[flows]]\ncca = "reno"\n')
    engine = listed.with_overrides({"flows[1].cca": "cubic"}).to_engine()
    assert [f["cca"] for f in engine["flows"]] == ["reno", "cubic"]


@pytest.mark.parametrize(("overrides", "error"), [
    ({"topology.quue": "5p"}, "topology.quue: unknown key"),
    ({"topology.queue": "5 parsecs"}, "topology.queue: "),
    ({"flows[3].cca": "cubic"}, "flows: no such entry (nothing is listed under flows)"),
    ({"flow_defaults.cca": "westwood"}, 'flow_defaults.cca: unknown controller "westwood"'),
    ({"duration.x": "1s"}, "duration: is '1s', not a table"),
])
def test_a_bad_override_is_one_error_naming_its_key(overrides: dict, error: str) -> None:
    with pytest.raises(SpecError) as e:
        small().with_overrides(overrides)
    assert str(e.value).startswith(error), str(e.value)
    assert "\n" not in str(e.value)


def test_set_on_the_command_line_runs_the_changed_scenario(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    out = bufferlab("run", str(path), "--db", str(db), "--json", "--set", "topology.queue=7p",
                    "--set", "topology.flows=3")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert len(summary["flows"]) == 3 and summary["bottleneck"]["max_queue_packets"] <= 7


def test_a_bad_set_exits_2_with_one_line_and_stores_nothing(write_scenario, db: Path) -> None:
    path = write_scenario(SMALL_DUMBBELL)
    out = bufferlab("run", str(path), "--db", str(db), "--set", "topology.queue=lots")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: topology.queue: ") and len(out.stderr.splitlines()) == 1
    assert not db.exists()


def test_set_works_on_ccperf_too(db: Path) -> None:
    out = bufferlab("ccperf", "--bw=10Mbps", "--rtts=20ms,20ms", "--qlen=10p", "--stop-time=1s", "--db", str(db),
                    "--json", "--set", "topology.queue=3p")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["bottleneck"]["max_queue_packets"] <= 3


JITTERED = SMALL_DUMBBELL + '[flow_defaults]\nstart = { dist = "uniform", low = "0s", high = "200ms" }\n'


def test_jittered_starts_make_seeds_independent_replications() -> None:
    base = Scenario.from_toml_text(JITTERED)
    starts = {seed: [f["start"] for f in base.with_seed(seed).to_engine()["flows"]] for seed in (1, 2)}
    assert starts[1] != starts[2]
    assert all(0 <= s <= 200_000_000 for seed in starts for s in starts[seed])
    a1, _ = runner.simulate(base.with_seed(1))
    a2, _ = runner.simulate(base.with_seed(1))
    b, _ = runner.simulate(base.with_seed(2))
    assert a1.flows.equals(a2.flows)
    assert not a1.flows.equals(b.flows)
    assert plan(base.with_seed(1)).seed_matters and plan(base.with_seed(1)).run_id != plan(base.with_seed(2)).run_id


def test_a_scenario_without_random_element_has_one_identity_for_every_seed() -> None:
    a, b = plan(small().with_seed(1)), plan(small().with_seed(99))
    assert not a.seed_matters and a.run_id == b.run_id
    # Its engine spec is the canonical JSON of the resolved spec with seed 0 (assembled from the
    # members encoded once, not the spec encoded again).
    resolved = small().with_seed(99).resolve()
    assert a.spec_json == b.spec_json == canonical_json({**json_members(resolved), "seed": 0})
    assert json.loads(b.spec_json) == json_members(b.resolved)
    lossy = Scenario.from_toml_text(SMALL_DUMBBELL + 'loss = "1%"\n')
    assert plan(lossy).seed_matters and plan(lossy).run_id != plan(lossy.with_seed(99)).run_id
