"""Topology builders: a `[topology]` table expands into the nodes and links of a general graph.

Each builder returns a `Graph` of plain node and link tables (the `[[nodes]]`/`[[links]]` form of
a general graph), the default bottleneck and, for error messages, which user key each generated
link comes from. The dumbbell lives in `spec` (its access delays follow from per-flow RTTs);
here are the tree of Dhamdhere & Dovrolis's experiment and the parking lot.

**Tree** (Dhamdhere & Dovrolis 2006, as reproduced on GENI): ``sink — target1 — target2`` and
below target2 a balanced tree of source hosts, ``levels`` levels deep: each node has ``fanout`` children (or
``fanout[L-1]`` children on level L when it is a list), named ``h{L}_{j}``; ``h{L+1}_{j}`` hangs
off ``h{L}_{j // fanout}``. The default is the experiment's balanced *binary* tree, 2 + 4 + 8 = 14
sources. (The experiment's text also speaks of "18 source nodes", which no binary tree of three levels
has; ``fanout = [2, 2, 3]`` gives 2 + 4 + 12 = 18 with the same three RTT classes.) Every link is named after the direction data
flows, toward the sink, and that direction is its "forward": ``h2_3_h1_1``, ``h1_1_target2``,
``btl`` (target2 → target1: the bottleneck, whose forward queue is the experiment's pfifo at target2)
and ``target1_sink``. The experiment's rates and one-way delays are the defaults: bottleneck 50 Mb/s,
every other link 100 Mb/s; sink–target1 2 ms, target1–target2 5 ms, then 10, 100 and 150 ms per
level, so the two-way propagation RTT of a level-L source is 34, 234 and 534 ms.

**Parking lot**: routers ``r0 … rH`` in a row joined by ``hop0 … hop{H-1}`` (rH is the last); a
long flow's hosts ``long_src → r0`` and ``rH → long_dst``, and for each hop i a cross flow's
hosts ``x{i}_src → r{i}`` and ``r{i+1} → x{i}_dst``, so the long flow meets every hop and cross
flow i only hop i. Unless ``[[flows]]`` are listed, the builder adds the greedy flows ``long``
and ``cross{i}``.
"""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (in `spec.scenario`, `spec.topology` and
# `queues`), a cost every fresh run would pay.

import math

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from ..errors import SpecError
from .fields import LossModelField, OptionalRate, Probability, Queue, QueueField, Rate, Time

__all__ = ["Tree", "ParkingLot", "Graph", "build_tree", "build_parking_lot"]

T = TypeVar("T")

MBPS = 1_000_000
MS = 1_000_000


class _Model(BaseModel):
    # Validated only through `scenario._topology`, by kind: a model's validator is built when the
    # first scenario of its kind is read, not by every command that imports the spec.
    model_config = ConfigDict(extra="forbid", defer_build=True)


@dataclass
class Graph:
    """Nodes and links as general-graph tables, plus what the scenario needs to know about them."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    # Flows the builder adds when the scenario lists none.
    default_flows: list[dict[str, Any]] = field(default_factory=list)
    bottleneck: str | None = None
    # Engine field prefixes (links[k], links[k].queue_forward, ...) -> the user's topology keys.
    aliases: dict[str, str] = field(default_factory=dict)

    def node(self, name: str, kind: str) -> None:
        self.nodes.append({"name": name, "kind": kind})

    def link(self, name: str, a: str, b: str, rate: int | None, delay: int, keys: dict[str, str],
             **extra: Any) -> None:
        k = len(self.links)
        self.links.append({"name": name, "a": a, "b": b, "rate": rate, "delay": delay, **extra})
        self.aliases[f"links[{k}]"] = "topology"
        for engine_key, user_key in keys.items():
            self.aliases[f"links[{k}].{engine_key}"] = f"topology.{user_key}"


# --- the tree of Dhamdhere & Dovrolis ---------------------------------------------------------

class Tree(_Model):
    """The balanced binary tree of Dhamdhere & Dovrolis's "Open issues in router buffer sizing"
    (2006) as reproduced on GENI: sources on three levels below the bottleneck, toward one sink;
    every rate and one-way delay defaults to that experiment's."""

    # Selects the tree.
    kind: Literal["tree"]
    # Levels of source hosts below target2: 3, as in the experiment (sources two, three and four
    # hops from the sink). Other than 3, give `level_delays`.
    levels: StrictInt = Field(default=3, ge=1, le=12)
    # Children each node has on the next level down (target2's on level 1): one number for every
    # level, or a list of one per level. 2, the binary tree of 2 + 4 + 8 = 14 sources;
    # `[2, 2, 3]` gives 18.
    fanout: Annotated[int, Field(ge=1, le=64)] | list[Annotated[int, Field(ge=1, le=64)]] = 2
    # Rate of the bottleneck "btl", target2 – target1: 50 Mb/s, as in the experiment.
    bottleneck_rate: Rate = 50 * MBPS
    # Rate of every link other than the bottleneck, unless `sink_rate` / `level_rates` say
    # otherwise: 100 Mb/s, as in the experiment.
    rate: Rate = 100 * MBPS
    # Rate of the link target1 – sink; default `rate`.
    sink_rate: Rate | None = None
    # Rates of each level's links to their parents, one per level; default `rate` on every level.
    level_rates: list[Rate] | None = None
    # One-way delay of the link target1 – sink: 2 ms, as in the experiment.
    sink_delay: Time = 2 * MS
    # One-way delay of the bottleneck: 5 ms, as in the experiment.
    bottleneck_delay: Time = 5 * MS
    # One-way delay of each level's links to their parents, one per level: 10, 100 and 150 ms, as
    # in the experiment, so that sources on levels 1, 2 and 3 have propagation RTTs of 34, 234
    # and 534 ms.
    level_delays: list[Time] = Field(default_factory=lambda: [10 * MS, 100 * MS, 150 * MS])
    # The bottleneck queue, at target2 toward target1 (the experiment's pfifo).
    queue: QueueField
    # Queue at target1 toward target2, the direction of the ACKs; default `other_queue`'s.
    reverse_queue: QueueField | None = None
    # Queue of every other link, both directions; default a FIFO of 1000 packets.
    other_queue: QueueField | None = None
    # Probability that a packet is lost on the bottleneck, independently per packet, in both
    # directions; `loss_model` gives bursty loss instead.
    loss: Probability = 0.0
    # A Gilbert–Elliott bursty loss model on the bottleneck (both directions) instead of `loss`.
    loss_model: LossModelField | None = None

    def source_rtt_ns(self, level: int) -> int:
        """Two-way propagation RTT of a source on `level` (1-based) to the sink."""
        return 2 * (self.sink_delay + self.bottleneck_delay + sum(self.level_delays[:level]))


def _per_level(values: list[Any] | None, levels: int, key: str) -> None:
    if values is not None and len(values) != levels:
        raise SpecError(f"topology.{key}", f"{len(values)} values for {levels} levels: give one per level")


# Hosts a tree may have: hundreds of thousands of flows' worth, far beyond any seed's tree.
MAX_TREE_HOSTS = 200_000


def build_tree(t: Tree, default_queue: Queue) -> Graph:
    fanouts = t.fanout if isinstance(t.fanout, list) else [t.fanout] * t.levels
    _per_level(fanouts, t.levels, "fanout")
    host_count = sum(math.prod(fanouts[:level]) for level in range(1, t.levels + 1))
    if host_count > MAX_TREE_HOSTS:
        raise SpecError("topology.fanout", f"{t.levels} levels of this fanout make {host_count} hosts, more than "
                                           f"{MAX_TREE_HOSTS} (a limit that keeps building the tree bounded)")
    _per_level(t.level_rates, t.levels, "level_rates")
    if "level_delays" not in t.model_fields_set and t.levels != 3:
        raise SpecError("topology.level_delays", f"the seed's delays are for 3 levels, not {t.levels}: "
                                                 "give one delay per level")
    _per_level(t.level_delays, t.levels, "level_delays")
    other = t.other_queue or default_queue
    g = Graph(bottleneck="btl_forward")
    g.node("sink", "host")
    g.node("target1", "router")
    g.node("target2", "router")
    sink_rate = t.sink_rate if t.sink_rate is not None else t.rate
    g.link("target1_sink", "target1", "sink", sink_rate, t.sink_delay,
           {"rate": "sink_rate", "delay": "sink_delay", "queue_forward": "other_queue",
            "queue_backward": "other_queue"}, queue=other)
    g.link("btl", "target2", "target1", t.bottleneck_rate, t.bottleneck_delay,
           {"rate": "bottleneck_rate", "delay": "bottleneck_delay", "queue_forward": "queue",
            "queue_backward": "reverse_queue" if t.reverse_queue is not None else "other_queue",
            "loss": "loss", "loss_model": "loss_model"},
           queue_forward=t.queue, queue_backward=t.reverse_queue or other, loss=t.loss, loss_model=t.loss_model)
    parents = ["target2"]
    for level in range(1, t.levels + 1):
        rate = t.level_rates[level - 1] if t.level_rates is not None else t.rate
        rate_key = f"level_rates[{level - 1}]" if t.level_rates is not None else "rate"
        fanout = fanouts[level - 1]
        hosts = [f"h{level}_{j}" for j in range(len(parents) * fanout)]
        for j, host in enumerate(hosts):
            g.node(host, "host")
            parent = parents[j // fanout]
            g.link(f"{host}_{parent}", host, parent, rate, t.level_delays[level - 1],
                   {"rate": rate_key, "delay": f"level_delays[{level - 1}]", "queue_forward": "other_queue",
                    "queue_backward": "other_queue"}, queue=other)
        parents = hosts
    return g


# --- the parking lot ----------------------------------------------------------------------------

class ParkingLot(_Model):
    """Routers in a row; one long flow crosses every hop, one cross flow each hop."""

    # Selects the parking lot.
    kind: Literal["parking_lot"]
    # Hops (links hop0 … hop{H-1} between routers r0 … rH): the long flow crosses all of them,
    # cross flow i only hop i.
    hops: StrictInt = Field(default=2, ge=1, le=64)
    # Rate of every hop; give it or `hop_rates`.
    rate: Rate | None = None
    # Rates of the hops, one per hop, instead of `rate`.
    hop_rates: list[Rate] | None = None
    # One-way delay of every hop, unless `hop_delays` gives one per hop.
    delay: Time = 5 * MS
    # One-way delays of the hops, one per hop; they replace `delay`.
    hop_delays: list[Time] | None = None
    # Queue of every hop (forward, the data direction); `hop_queues` one per hop.
    queue: QueueField | None = None
    # Queues of the hops (forward), one per hop, instead of `queue`.
    hop_queues: list[QueueField] | None = None
    # Queue of every hop's backward direction, that of the ACKs; default `access_queue`'s.
    reverse_queue: QueueField | None = None
    # Probability that a packet is lost on each hop, independently per packet, in both
    # directions; `loss_model` gives bursty loss instead.
    loss: Probability = 0.0
    # A Gilbert–Elliott bursty loss model on every hop (both directions) instead of `loss`.
    loss_model: LossModelField | None = None
    # Rate of every host's access link; "unlimited" sends in no time.
    access_rate: OptionalRate = 1000 * MBPS
    # One-way delay of every access link.
    access_delay: Time = 1 * MS
    # Queue of every access link, both directions; default a FIFO of 1000 packets.
    access_queue: QueueField | None = None


def build_parking_lot(p: ParkingLot, default_queue: Queue) -> Graph:
    def per_hop(single: T | None, many: list[T] | None, key: str, many_key: str) -> list[tuple[T, str]]:
        if many is not None:
            if single is not None and key != "delay":
                raise SpecError(f"topology.{many_key}", f"give either {key} or {many_key}")
            if len(many) != p.hops:
                raise SpecError(f"topology.{many_key}", f"{len(many)} values for {p.hops} hops: give one per hop")
            return [(v, f"{many_key}[{i}]") for i, v in enumerate(many)]
        if single is None:
            raise SpecError(f"topology.{key}", f"missing: give {key} (every hop) or {many_key} (one per hop)")
        return [(single, key)] * p.hops

    rates = per_hop(p.rate, p.hop_rates, "rate", "hop_rates")
    delays = per_hop(p.delay, p.hop_delays, "delay", "hop_delays")
    queues = per_hop(p.queue, p.hop_queues, "queue", "hop_queues")
    access_queue = p.access_queue or default_queue
    g = Graph()
    for i in range(p.hops + 1):
        g.node(f"r{i}", "router")
    for host in ("long_src", "long_dst"):
        g.node(host, "host")
    for i in range(p.hops):
        g.node(f"x{i}_src", "host")
        g.node(f"x{i}_dst", "host")
    for i in range(p.hops):
        (rate, rate_key), (delay, delay_key), (queue, queue_key) = rates[i], delays[i], queues[i]
        g.link(f"hop{i}", f"r{i}", f"r{i + 1}", rate, delay,
               {"rate": rate_key, "delay": delay_key, "queue_forward": queue_key,
                "queue_backward": "reverse_queue" if p.reverse_queue is not None else "access_queue",
                "loss": "loss", "loss_model": "loss_model"},
               queue_forward=queue, queue_backward=p.reverse_queue or access_queue, loss=p.loss,
               loss_model=p.loss_model)
    access = {"rate": "access_rate", "delay": "access_delay", "queue_forward": "access_queue",
              "queue_backward": "access_queue"}
    ends = [("long_src", "r0"), (f"r{p.hops}", "long_dst")]
    for i in range(p.hops):
        ends += [(f"x{i}_src", f"r{i}"), (f"r{i + 1}", f"x{i}_dst")]
    for a, b in ends:
        g.link(f"{a}_{b}", a, b, p.access_rate, p.access_delay, access, queue=access_queue)
    g.default_flows = [{"name": "long", "src": "long_src", "dst": "long_dst"}]
    g.default_flows += [{"name": f"cross{i}", "src": f"x{i}_src", "dst": f"x{i}_dst"} for i in range(p.hops)]
    return g

