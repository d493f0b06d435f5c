"""The TOML the guides show is valid: whole scenarios validate as they stand, fragments validate
inside the scenario they belong to, sweeps expand to their points. (The guides' console and
python examples are run by tests/codebase/test_docs_examples.py; TOML blocks are not commands.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bufferlab import runner
from bufferlab.spec import Scenario
from bufferlab.study.sweep import Sweep

REPO = Path(__file__).resolve().parents[2]
GUIDES = REPO / "docs" / "guides"


def toml_blocks(page: str) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", (GUIDES / page).read_text(encoding="utf-8"), flags=re.S)


def block_with(page: str, *needles: str) -> str:
    found = [b for b in toml_blocks(page) if all(n in b for n in needles)]
    assert len(found) == 1, (page, needles, len(found))
    return found[0]


def test_every_whole_scenario_of_the_scenarios_guide_validates() -> None:
    whole = [b for b in toml_blocks("scenarios.md") if re.search(r"^duration = ", b, flags=re.M)]
    assert len(whole) == 2  # the dumbbell shorthand and the general graph
    for block in whole:
        runner.validate(Scenario.from_toml_text(block))


def test_the_per_flow_list_completes_the_dumbbell_once_its_flow_count_is_dropped() -> None:
    dumbbell = block_with("scenarios.md", 'kind = "dumbbell"').replace("flows = 5 ", "# flows = 5 ")
    flows = next(b for b in toml_blocks("scenarios.md") if b.startswith("[[flows]]\nrtt"))
    engine = Scenario.from_toml_text(dumbbell + flows).to_engine()
    assert len(engine["flows"]) == 2


def test_the_record_table_fits_the_general_graph_it_names() -> None:
    graph = block_with("scenarios.md", 'name = "two_hops"')
    graph = re.sub(r"^sample_interval = .*$", "", graph, flags=re.M)  # [record] sets the interval
    runner.validate(Scenario.from_toml_text(graph + block_with("scenarios.md", "[record]")))


@pytest.mark.parametrize("needle", ['cca = "cubic"', 'transport = "quic"'])
def test_a_flow_fragment_fits_the_general_graph(needle: str) -> None:
    graph = block_with("scenarios.md", 'name = "two_hops"')
    fragment = block_with("scenarios.md", needle).replace('"client"', '"a"').replace('"server"', '"b"')
    runner.validate(Scenario.from_toml_text(graph + fragment))


def test_the_generator_fragment_fits_the_tree() -> None:
    tree = 'name = "t"\nduration = "2s"\n[topology]\nkind = "tree"\nqueue = "18p"\n'
    runner.validate(Scenario.from_toml_text(tree + block_with("scenarios.md", "[[generators]]")))


def test_every_queue_the_guides_write_is_a_valid_bottleneck_queue() -> None:
    base = Scenario.from_toml((REPO / "scenarios" / "dumbbell.toml").as_posix())
    lines = [line for page in ("scenarios.md", "advise.md") for block in toml_blocks(page)
             for line in block.splitlines() if line.startswith("queue = ")]
    assert len(lines) >= 6
    for line in lines:
        queue = tomllib.loads(line)["queue"]
        runner.validate(base.with_overrides({"topology.queue": queue}))


def test_the_sweeps_of_the_guides_expand_to_their_points() -> None:
    sweep = Sweep.from_dict(tomllib.loads(block_with("sweep.md", "[[axes]]")), base_dir=REPO / "sweeps")
    assert len(sweep.points()) == 6 * 2 * 3  # six buffers, two controllers, three seeds
    axis = block_with("advise.md", "[[axes]]")
    rules = Sweep.from_dict({"base": "../scenarios/dumbbell.toml", **tomllib.loads(axis)}, base_dir=REPO / "sweeps")
    assert len(rules.points()) == 3
    for point in rules.points():
        runner.validate(rules.scenario(point))
