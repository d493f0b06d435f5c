"""A scenario resolved for the engine (`Resolved`): plain data, without the spec's pydantic models.

`Scenario.resolve()` (in `spec.scenario`) makes one; a run's plan keeps it, and everything after
the plan (the engine, derive, the summary, the store) reads only it. It lives apart from the
models so that a plan read back from the plan cache (`pipeline.plan_cache`) needs no pydantic.

A plan keeps its engine spec compact (`Resolved.compact`): a dumbbell's flows, with their hosts
and access links, as the columns its JSON form writes (`json_members`), which `Resolved.engine`
lists again when asked (`listed_members`). A 10,000-flow dumbbell's listed nodes, links and flows
were ~12 MB of Python objects, held from the plan to the store's write, which sets the command's
peak memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

__all__ = ["Resolved", "user_field", "canonical_json", "json_members", "listed_members", "listed_flows", "flow_tcp",
           "flow_quic", "link_queue"]


@dataclass
class Resolved:
    """A scenario resolved for the engine, plus the names needed to read its result."""

    # The engine spec's members: listed as resolved; a dumbbell's flows as columns once compact.
    members: dict[str, Any]
    node_names: list[str]
    flow_names: list[str]
    # Channel index of the bottleneck named by the spec (None: pick the slowest busy channel).
    bottleneck: int | None = None
    # Names of the engine's generators (flows they create are "<generator>#<k>").
    generator_names: list[str] = field(default_factory=list)
    # Propagation RTT of each listed flow where the topology fixes it (dumbbell), in ns.
    flow_rtts_ns: list[int | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Where the resolution drew random numbers from the seed (e.g. "topology.rtt",
    # "flow_defaults.start"): a spec with none here, whose engine draws none either, runs the same
    # under every seed.
    random_draws: list[str] = field(default_factory=list)
    # Engine field paths that the resolution moved from where the user wrote them, e.g. a
    # dumbbell's "links[0].queue_forward" is its "topology.queue" (other paths are the user's).
    field_aliases: dict[str, str] = field(default_factory=dict)
    # Each channel's queue as resolved, and how its size came about ("500p (bdp rule: ...)").
    queue_descriptions: list[str] = field(default_factory=list)
    # False: the run's time series are sampled (its metrics need them) but not stored
    # (`[record] store_series`); part of the run's identity (`pipeline.plan`).
    store_series: bool = True
    # The first flows that are a dumbbell's, each with two hosts and two access links of its own,
    # the last of the nodes and links: its JSON form may write them as columns (`json_members`).
    dumbbell_flows: int = 0

    @property
    def engine(self) -> dict[str, Any]:
        """The engine spec with every node, link and flow listed: `members` itself as resolved;
        once compact, a new dict of them listed again at each call (read it once; changing it
        changes nothing kept)."""
        return listed_members(self.members)

    def compact(self, members: dict[str, Any] | None = None) -> None:
        """Keep the engine spec as its JSON form writes it: `members`, made already by
        `json_members`, or made now. What a plan holds (see the module docstring)."""
        self.members = json_members(self) if members is None else members
        self.dumbbell_flows = 0

    @property
    def flow_endpoints(self) -> list[tuple[str, str]]:
        """(src, dst) host names of each listed flow, read from the engine tables when asked (a
        list of its own was 0.6 MB of a 10,000-flow dumbbell's resolution)."""
        engine = self.engine
        nodes = engine["nodes"]
        return [(nodes[f["src"]]["name"], nodes[f["dst"]]["name"]) for f in engine["flows"]]

    @property
    def channel_names(self) -> list[str]:
        """Each channel's name, a link's forward then its backward direction (``<link>_forward``,
        ``<link>_backward``, as the engine names them), made when asked: no step of a run reads
        them, and a 10,000-flow dumbbell's 40,002 were 3.2 MB of its resolution."""
        return [f"{link['name']}_{direction}" for link in self.engine["links"] for direction in ("forward", "backward")]

    def user_field(self, engine_field: str) -> str:
        """The user's name for an engine field path: its longest aliased prefix replaced."""
        return user_field(self.field_aliases, engine_field)

    def endpoints_of(self, flows: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """(src, dst) host names of every flow of a result: listed flows and generated ones.
        Flows read back from the store carry their names; the engine's records their node indices."""
        out = []
        listed: list[tuple[str, str]] | None = None
        for i, f in enumerate(flows):
            if f.get("src") is not None and f.get("dst") is not None:
                out.append((str(f["src"]), str(f["dst"])))
            elif f.get("src_node") is not None and f.get("dst_node") is not None:
                out.append((self.node_names[f["src_node"]], self.node_names[f["dst_node"]]))
            else:
                if listed is None:
                    listed = self.flow_endpoints
                out.append(listed[i])
        return out

    def to_json(self) -> str:
        """Canonical JSON of the engine spec (`json_members`): the identity of a run (with the
        engine version)."""
        return canonical_json(json_members(self))


def json_members(resolved: Resolved) -> dict[str, Any]:
    """The members of the engine spec's JSON form: the engine spec's own, except that a dumbbell's
    flows (`Resolved.dumbbell_flows`), with their hosts and access links, are written as columns
    (`many_flows`: each flow's start and access delays, and once what they share; `DumbbellText` in
    crates/bufferlab-core/src/spec.rs, which expands them to exactly these nodes, links and flows)
    when every one of them has a dumbbell flow's shape: ~30 bytes per flow instead of ~460. The
    members are the engine spec's values, not copies."""
    engine = resolved.members
    flows = resolved.dumbbell_flows
    columns = _dumbbell_columns(engine, flows) if flows else None
    if columns is None:
        return engine
    return {**engine, "nodes": engine["nodes"][:-2 * flows], "links": engine["links"][:-2 * flows],
            "flows": engine["flows"][flows:], "many_flows": columns}


# What all of a dumbbell's flows share in the engine spec (each has its name, ends and start).
_SHARED_FLOW_KEYS = ("cca", "traffic", "stop", "transport", "tcp", "quic")


def _dumbbell_columns(engine: Mapping[str, Any], count: int) -> dict[str, Any] | None:
    """The `many_flows` member that stands for the first `count` flows, the last 2 x `count` nodes
    and links of `engine`, or None where one of them is not as the member would expand it: each
    flow, its two hosts and its two access links exactly as `listed_members` lists them again
    (`_listed_flow`, `_listed_hosts`, `_listed_access_link`), every access link with the first
    one's rate and queue, every flow with the first one's options, traffic and stop."""
    nodes, links, flows = engine["nodes"], engine["links"], engine["flows"]
    first_node, first_link = len(nodes) - 2 * count, len(links) - 2 * count
    if first_node < 0 or first_link < 0 or len(flows) < count:
        return None
    shared = {key: flows[0][key] for key in _SHARED_FLOW_KEYS if key in flows[0]}
    left, right = links[first_link]["b"], links[first_link + 1]["a"]
    rate, queue = links[first_link]["rate"], links[first_link]["queue_forward"]
    starts, delays = [], []
    for i in range(count):
        flow, src, dst = flows[i], first_node + 2 * i, first_node + 2 * i + 1
        to_left, from_right = links[first_link + 2 * i], links[first_link + 2 * i + 1]
        start, delay = flow.get("start"), [to_left.get("delay"), from_right.get("delay")]
        if not (flow == _listed_flow(shared, i, src, start)
                and nodes[src:dst + 1] == _listed_hosts(i)
                and to_left == _listed_access_link(f"access_src_{i}", src, left, rate, delay[0], queue)
                and from_right == _listed_access_link(f"access_dst_{i}", right, dst, rate, delay[1], queue)):
            return None
        starts.append(start)
        delays.append(delay)
    return {"left": left, "right": right, "rate": rate, "queue": queue, "starts": starts, "delays": delays,
            "flow": shared}


def listed_members(members: dict[str, Any]) -> dict[str, Any]:
    """The engine spec `members` with a dumbbell's columns (`many_flows`) listed again: exactly
    the nodes, links and flows `_dumbbell_columns` found them to stand for (`members` itself when
    it has none)."""
    columns = members.get("many_flows")
    if columns is None:
        return members
    nodes, links = list(members["nodes"]), list(members["links"])
    left, right, rate, queue = columns["left"], columns["right"], columns["rate"], columns["queue"]
    for i, (to_left, from_right) in enumerate(columns["delays"]):
        src, dst = len(nodes), len(nodes) + 1
        nodes += _listed_hosts(i)
        links += [_listed_access_link(f"access_src_{i}", src, left, rate, to_left, queue),
                  _listed_access_link(f"access_dst_{i}", right, dst, rate, from_right, queue)]
    listed = {key: value for key, value in members.items() if key != "many_flows"}
    return {**listed, "nodes": nodes, "links": links, "flows": listed_flows(members)}


def listed_flows(members: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The flows of the engine spec `members`, listed (a new list of the same dicts): those of
    `members["flows"]`, after a dumbbell's columns' (`many_flows`) flows as `listed_members` lists
    them, without listing their hosts and access links."""
    columns = members.get("many_flows")
    if columns is None:
        return list(members["flows"])
    first_host, shared = len(members["nodes"]), columns["flow"]
    dumbbell = [_listed_flow(shared, i, first_host + 2 * i, start) for i, start in enumerate(columns["starts"])]
    return [*dumbbell, *members["flows"]]


# A dumbbell's flow `i`, its hosts and its access links as the resolution lists them: the one
# definition of the shape that `_dumbbell_columns` checks and `listed_members` lists again.

def _listed_flow(shared: Mapping[str, Any], i: int, src: int, start: Any) -> dict[str, Any]:
    """Flow ``flow_i`` from host node `src` to the next node, ``dst_i``."""
    return {**shared, "name": f"flow_{i}", "src": src, "dst": src + 1, "start": start}


def _listed_hosts(i: int) -> list[dict[str, Any]]:
    """Flow `i`'s two hosts, ``src_i`` then ``dst_i``."""
    return [{"name": f"src_{i}", "kind": "host"}, {"name": f"dst_{i}", "kind": "host"}]


def _listed_access_link(name: str, a: int, b: int, rate: int | None, delay: Any, queue: int) -> dict[str, Any]:
    """A dumbbell's access link (`spec.scenario.AccessLink`: no loss, one queue both ways)."""
    return {"name": name, "a": a, "b": b, "rate": rate, "delay": delay, "loss": 0.0, "queue_forward": queue,
            "queue_backward": queue}


def user_field(aliases: dict[str, str], engine_field: str) -> str:
    """The user's name for an engine field path: its longest prefix in `aliases` replaced; where
    none is, its longest prefix that names the first list's entry as ``[*]`` (an alias for every
    entry of the list that has none of its own: a dumbbell's access links, ``links[*]``).

    A prefix ends where the path does or just before a "." or "[", so the path's own prefixes are
    looked up, longest first: the cost is the path's length, not the number of aliases (a
    10,000-flow dumbbell has tens of thousands, and the memory budget asks for every queue)."""
    found = _replaced_prefix(aliases, engine_field, 1)
    if found is not None:
        return found
    head, bracket, rest = engine_field.partition("[")
    index, closing, tail = rest.partition("]")
    if bracket and closing and index.isdigit():
        generic = f"{head}[*]{tail}"
        found = _replaced_prefix(aliases, generic, len(head) + 3)
        if found is not None:
            return found
    return engine_field


def _replaced_prefix(aliases: dict[str, str], path: str, shortest: int) -> str | None:
    """`path` with its longest prefix of at least `shortest` characters in `aliases` replaced
    (None without one)."""
    if path in aliases:
        return aliases[path]
    for end in range(len(path) - 1, shortest - 1, -1):
        if path[end] in ".[" and (prefix := path[:end]) in aliases:
            return aliases[prefix] + path[end:]
    return None


def flow_tcp(engine: Mapping[str, Any], flow: Mapping[str, Any]) -> dict[str, Any]:
    """The TCP options of a flow or generator of an engine spec: the entry of `tcp_options` its
    `tcp` refers to ({} without one: the engine's defaults). The entry is shared by every flow
    that refers to it: not to be changed."""
    index = flow.get("tcp")
    entry: dict[str, Any] = {} if index is None else engine["tcp_options"][index]
    return entry


def flow_quic(engine: Mapping[str, Any], flow: Mapping[str, Any]) -> dict[str, Any]:
    """The QUIC options of a flow of an engine spec: the entry of `quic_options` its `quic`
    refers to ({} without one: the engine's defaults), shared as `flow_tcp`'s."""
    index = flow.get("quic")
    entry: dict[str, Any] = {} if index is None else engine["quic_options"][index]
    return entry


def link_queue(engine: Mapping[str, Any], link: Mapping[str, Any], direction: str) -> dict[str, Any]:
    """The queue of a link's direction ("forward", "backward") in an engine spec: the entry of
    `queues` its `queue_forward` or `queue_backward` refers to."""
    queue: dict[str, Any] = engine["queues"][link[f"queue_{direction}"]]
    return queue


def canonical_json(value: Any) -> str:
    """The canonical JSON of a spec (keys sorted, no spaces): what a run's identity hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
