"""A dumbbell's flows written as columns in the engine spec's JSON (`spec.resolved.json_members`):
the engine expands them to exactly the spec the listed form gives, and runs it to the same result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bufferlab import _core
from bufferlab.errors import SpecError
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.resolved import canonical_json, listed_flows

pytestmark = pytest.mark.engine


def dumbbell(flows: int = 6, **extra: Any) -> dict[str, Any]:
    return {"duration": "2s", "seed": 3,
            "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "20Mbps", "queue": "30p",
                         "rtt": {"dist": "uniform", "low": "10ms", "high": "80ms"}},
            "flow_defaults": {"cca": "cubic", "start": {"dist": "uniform", "low": "0s", "high": "0.5s"}}, **extra}


def columns_and_listed(data: dict[str, Any]) -> tuple[str, str]:
    """The engine spec of `data` as planned (its flows as columns where they can be), and the
    same spec with every flow listed (the resolution's tables as they are)."""
    planned = plan(Scenario.from_dict(data))
    return planned.spec_json, canonical_json(planned.resolved.engine)


def test_a_dumbbell_with_drawn_rtts_and_starts_is_written_as_columns_the_engine_expands_to_its_listed_flows() -> None:
    # A generator's flows follow the dumbbell's; its sources are the dumbbell's hosts.
    data = dumbbell(generators=[{"kind": "persistent", "flows": 2, "sources": ["src_1", "src_4"], "dst": "dst_0"}])
    columns, listed = columns_and_listed(data)
    spec = json.loads(columns)
    assert len(spec["many_flows"]["starts"]) == 6 and len(spec["flows"]) == 4  # the generator's flows stay listed
    assert spec["nodes"] == [{"kind": "router", "name": "left"}, {"kind": "router", "name": "right"}]
    assert "many_flows" not in json.loads(listed)
    assert json.loads(_core.expanded_spec(columns)) == json.loads(_core.expanded_spec(listed))
    ran_columns, ran_listed = _core.run(columns), _core.run(listed)
    for table in ("flows", "channels", "flow_timeseries", "channel_timeseries"):
        assert ran_columns[table].to_ipc() == ran_listed[table].to_ipc(), table


def test_a_large_dumbbell_takes_a_few_dozen_bytes_of_spec_per_flow() -> None:
    small, large = (len(plan(Scenario.from_dict(dumbbell(flows))).spec_json) for flows in (10, 1010))
    assert (large - small) / 1000 < 40


@pytest.mark.parametrize("change", [
    {"flows": [{"rtt": "20ms"}, {"rtt": "30ms", "cca": "reno"}]},  # flows of different controllers
    {"flows": [{"rtt": "20ms", "name": "a"}, {"rtt": "30ms", "name": "b"}]},  # flows of their own names
    {"flows": [{"rtt": "20ms", "src": "x"}, {"rtt": "30ms"}]},  # a host of its own name
])
def test_a_dumbbell_whose_flows_are_not_alike_is_listed(change: dict[str, Any]) -> None:
    data = dumbbell(flows=2)
    data["topology"].pop("flows")
    columns, listed = columns_and_listed({**data, **change})
    assert columns == listed and "many_flows" not in json.loads(columns)


def test_a_dumbbell_of_listed_flows_alike_is_written_as_columns() -> None:
    data = dumbbell(flows=2)
    data["topology"].pop("flows")
    columns, listed = columns_and_listed({**data, "flows": [{"rtt": "20ms"}, {"rtt": "30ms"}]})
    assert json.loads(columns)["many_flows"]["delays"] == [[2_500_000, 2_500_000], [5_000_000, 5_000_000]]
    assert json.loads(_core.expanded_spec(columns)) == json.loads(_core.expanded_spec(listed))


def test_a_value_of_the_columns_is_named_as_in_the_listed_form() -> None:
    data = dumbbell(flows=2)
    data["topology"].update(rtt="30e30ms", bottleneck_delay="5ms")
    with pytest.raises(SpecError) as info:
        plan(Scenario.from_dict(data))
    assert str(info.value) == "topology.delay: 7.5e+36 is out of range (a whole number from 0 to 18446744073709551615)"


def test_a_plan_keeps_the_columns_and_lists_exactly_the_resolved_nodes_links_and_flows_again() -> None:
    data = dumbbell(generators=[{"kind": "persistent", "flows": 2, "sources": ["src_1", "src_4"], "dst": "dst_0"}])
    planned = plan(Scenario.from_dict(data))
    assert "many_flows" in planned.resolved.members and "many_flows" not in planned.resolved.engine
    resolved = Scenario.from_dict(data).resolve().engine
    resolved["seed"] = 0  # as planned: the draws are the resolution's, the engine makes none
    assert canonical_json(planned.resolved.engine) == canonical_json(resolved)
    assert listed_flows(planned.resolved.members) == planned.resolved.engine["flows"]
