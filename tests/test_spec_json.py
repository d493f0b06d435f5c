"""`list_json`, the fast canonical JSON of an engine spec's lists: always the very text of
`canonical_json` (which defines run ids), whichever tables the rows share or merely resemble."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bufferlab.pipeline.plan import plan
from bufferlab.pipeline.spec_json import list_json
from bufferlab.spec import Scenario, load_scenario
from bufferlab.spec.scenario import canonical_json

SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.toml"))

TCP = {"mss": 1448, "sack": True, "rto": "linux", "min_rto_ns": 200_000_000, "rwnd_bytes": None,
       "weights": [0.5, 1e-300, -0.0, float("inf")], "nested": {"b": [1, {"z": "é"}], "a": None}}


def rows(tables: list[Any]) -> list[dict[str, Any]]:
    """Flow-like rows, the i-th with the table `tables[i]`, in the resolver's key order."""
    n = len(tables)
    return [{"name": f"flow_{i}", "src": i, "dst": n + i, "tcp": table, "start_ns": 0}
            for i, table in enumerate(tables)]


def same_text(items: list[Any]) -> None:
    assert list_json(items) == canonical_json(items) == json.dumps(items, sort_keys=True, separators=(",", ":"),
                                                                   ensure_ascii=False)


def test_shared_and_copied_tables_encode_like_json_dumps() -> None:
    same_text(rows([TCP] * 6))
    same_text(rows([dict(TCP) for _ in range(6)]))


def test_tables_equal_but_encoded_differently_keep_their_own_text() -> None:
    # 0 == 0.0 == False and 1 == 1.0 == True, -0.0 == 0.0: equal tables, other text.
    for other in (0, 0.0, False, -0.0):
        base = dict(TCP, flag=0.0, count=1)
        same_text(rows([dict(base) if i % 2 else dict(base, flag=other) for i in range(6)]))
    for other in (1, 1.0, True):
        base = dict(TCP, count=True)
        same_text(rows([dict(base) if i % 3 else dict(base, count=other) for i in range(6)]))


def test_a_table_with_equal_values_under_other_keys_in_another_order() -> None:
    template = dict(TCP, a=0, b=0.0)
    # The template's own value objects, in its order, under its keys in another order: equal to
    # it (0 == 0.0) and identical place by place, yet {"a":0.0,"b":0} is other text.
    swapped = dict(TCP, b=template["a"], a=template["b"])
    assert list(swapped.values()) == list(template.values()) and list(swapped) != list(template)
    same_text(rows([dict(template) if i != 3 else swapped for i in range(6)]))


def test_many_distinct_tables_and_mixed_rows() -> None:
    same_text(rows([dict(TCP, mss=1000 + i) for i in range(40)]))
    mixed: list[Any] = rows([dict(TCP) for _ in range(6)])
    mixed[2] = dict(mixed[2], tcp=None)
    mixed[4] = {"name": "only a name"}
    same_text(mixed)
    same_text([*rows([dict(TCP) for _ in range(6)]), [1, 2], "text", 3.5])
    same_text([])
    same_text([dict(TCP)])


def test_a_name_that_encodes_like_a_placeholder_is_kept() -> None:
    from bufferlab.pipeline import spec_json

    items = rows([dict(TCP) for _ in range(6)])
    items[0] = dict(items[0], name=f"{spec_json._MARK}0")
    items[1] = dict(items[1], name=f'x"{spec_json._MARK}0')
    same_text(items)
    inside = dict(TCP, rto=f"{spec_json._MARK}1")
    same_text(rows([dict(inside) for _ in range(6)]) + rows([dict(TCP) for _ in range(6)]))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_scenario_plans_to_the_json_dumps_text(path: Path) -> None:
    planned = plan(load_scenario(path))
    assert planned.spec_json == canonical_json(planned.resolved.engine)


def test_a_large_dumbbell_plans_to_the_json_dumps_text() -> None:
    scenario = Scenario.from_dict({
        "duration": "1s", "topology": {"kind": "dumbbell", "flows": 300, "bottleneck_rate": "1Gbps",
                                       "queue": "100p", "rtt": {"dist": "uniform", "low": "20ms", "high": "200ms"}},
        "flow_defaults": {"cca": "cubic", "transport": "quic"}})
    planned = plan(scenario)
    assert planned.spec_json == canonical_json(planned.resolved.engine)


def test_unicode_names_plan_to_the_json_dumps_text() -> None:
    nodes = [{"name": "hôte_α", "kind": "host"}, {"name": "路由器", "kind": "router"},
             {"name": "ĥ2 \"x\"", "kind": "host"}]
    scenario = Scenario.from_dict({
        "duration": "1s", "nodes": nodes,
        "links": [{"name": "ünï", "a": "hôte_α", "b": "路由器", "rate": "100Mbps", "delay": "1ms"},
                  {"a": "路由器", "b": 'ĥ2 "x"', "rate": "10Mbps", "delay": "5ms", "queue": "20p"}],
        "flows": [{"name": f"flöw_{i}", "src": "hôte_α", "dst": 'ĥ2 "x"'} for i in range(5)]})
    planned = plan(scenario)
    assert planned.spec_json == canonical_json(planned.resolved.engine)
    assert "路由器" in planned.spec_json


@pytest.mark.parametrize("path", SCENARIOS[:3], ids=lambda p: p.name)
def test_the_plan_hashes_its_spec_json_as_the_store_and_the_run_id_do(path: Path) -> None:
    from bufferlab.pipeline.plan import run_identity
    from bufferlab.store import spec_hash

    planned = plan(load_scenario(path))
    assert planned.spec_hash == spec_hash(planned.spec_json)
    assert planned.run_id == run_identity(planned.spec_json, planned.engine_version)
