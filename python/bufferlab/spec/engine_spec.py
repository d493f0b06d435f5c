"""From a validated scenario, its topology expanded into nodes, links and flows, to the engine's
input (`crates/bufferlab-core/src/spec.rs`): names become indices, every TCP and QUIC option is
spelled out from the engine's own defaults, generators and the recording selection are resolved,
and cross-field problems raise `SpecError` naming the user's field.

What flows and links share is listed once: each distinct set of TCP options, of QUIC options and
each distinct queue is an entry of the engine spec's `tcp_options`, `quic_options` or `queues`, and
a flow's `tcp`/`quic`, a generator's `tcp` and a link's `queue_forward`/`queue_backward` are the
indices of theirs (a 10,000-flow dumbbell's flows all refer to one TCP entry, its 40,000 access
channels to one queue). An entry's path is aliased to the user's field of its first user
(`tcp_options[0]` is `flow_defaults.tcp`), so that the engine's errors about it name the user's
field; `spec.resolved` reads an entry through its index (`flow_tcp`, `link_queue`).

The engine's input keys are the user's (`rate`, `delay`, `min_rto`), so the options are copied
under their own names; what the resolution moves elsewhere (a generator's model fields, a
dumbbell's links) is recorded in `Resolved.field_aliases`, and the engine's range checks then
name the user's field.

`Scenario.resolve()` (spec.py) expands the topology and calls `build_engine_spec`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .. import units
from ..errors import SpecError
from .distributions import Dist
from .fields import DEFAULT_DATAGRAM, Traffic, engine_controller, engine_recovery
from .resolved import user_field
from ..queues import Queue
from .scenario import (
    AccessLink,
    CountedFlow,
    DEFAULT_QUEUE,
    Host,
    Flow,
    GENERATOR_COMMON_KEYS,
    GENERATOR_KEYS,
    FlowDefaults,
    Link,
    Node,
    Resolved,
    Scenario,
    TcpOptions,
    engine_quic_defaults,
    engine_tcp_defaults,
    start_sampler,
)


if TYPE_CHECKING:  # pragma: no cover - built with the first scenario that has one
    from .generators import Generator
    from .quic import QuicOptions


def _index(names: dict[str, int], name: str, where: str, what: str = "node") -> int:
    if name not in names:
        known = ", ".join(sorted(names)) if len(names) <= 12 else f"{len(names)} names"
        raise SpecError(where, f'unknown {what} "{name}" (known: {known})')
    return names[name]


def _unique(names: list[str], section: str, aliases: dict[str, str] | None = None) -> dict[str, int]:
    """Each name's index; a name given twice is named where the user wrote it (`aliases`: a
    generated flow or generator is its generator)."""
    def user(i: int) -> str:
        return (aliases or {}).get(f"{section}[{i}]", f"{section}[{i}]")

    index: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in index:
            raise SpecError(f"{user(i)}.name", f'duplicate name "{name}" (also {user(index[name])})')
        index[name] = i
    return index


# TCP options that are not the engine's keys as they are: `delayed_ack` is a shorthand for
# `ack_every`, and a recovery's name has spellings of its own (TcpPrrRecovery).
_TCP_SHORTHANDS = frozenset({"delayed_ack", "recovery"})


def _tcp(defaults: TcpOptions | None, own: TcpOptions | None, where: str) -> dict[str, Any]:
    """The engine's TCP options: its defaults, then the flow defaults' and the flow's own (the
    engine checks their values, e.g. min_rto <= max_rto, and names the flow's field)."""
    tcp = dict(engine_tcp_defaults())
    for layer, path in ((defaults, "flow_defaults.tcp"), (own, f"{where}.tcp")):
        if layer is None:
            continue
        given = layer.model_fields_set
        if "delayed_ack" in given and "ack_every" in given and layer.delayed_ack is False \
                and layer.ack_every != 1:
            raise SpecError(f"{path}.delayed_ack", "false means ack_every = 1, but ack_every is "
                                                   f"{layer.ack_every}")
        tcp.update({key: getattr(layer, key) for key in given - _TCP_SHORTHANDS})
        if "recovery" in given and layer.recovery is not None:
            tcp["recovery"] = engine_recovery(layer.recovery)
        if "delayed_ack" in given and layer.delayed_ack is not None:
            tcp["ack_every"] = 1 if not layer.delayed_ack else max(tcp["ack_every"], 2)
    return tcp


def _quic(defaults: QuicOptions | None, own: QuicOptions | None) -> dict[str, Any]:
    """The engine's QUIC options: its defaults, then the flow defaults' and the flow's own."""
    quic = dict(engine_quic_defaults())
    for layer in (defaults, own):
        if layer is not None:
            quic.update({key: getattr(layer, key) for key in layer.model_fields_set})
    return quic


# What a flow's option table taken whole from the defaults is aliased to: one string per table,
# shared by every flow that takes it (a string of its own per flow was 1.3 MB of a 10,000-flow
# dumbbell's resolution).
_DEFAULTS_OF = {section: f"flow_defaults.{section}" for section in ("tcp", "quic", "traffic")}


def _inherited(aliases: dict[str, str], where: str, own: Flow | CountedFlow | Generator, defaults: FlowDefaults,
               sections: tuple[str, ...]) -> None:
    """Record which option tables of a flow (or generator) at `where` the resolution took from
    `flow_defaults`, so that an engine error about one names the field the user wrote: the whole
    table when the flow gives none of its own, else each option only the defaults set."""
    for section in sections:
        given, inherited = getattr(own, section), getattr(defaults, section)
        if inherited is None:
            continue
        if given is None:
            aliases[f"{where}.{section}"] = _DEFAULTS_OF[section]
        elif isinstance(given, BaseModel):  # a traffic table given is the flow's own, whole
            for key in inherited.model_fields_set - given.model_fields_set:
                aliases[f"{where}.{section}.{key}"] = f"flow_defaults.{section}.{key}"


def _feedback_fields(aliases: dict[str, str], where: str, own: Flow | CountedFlow | Generator,
                     defaults: FlowDefaults) -> None:
    """Name the settings the engine checks against a flow's controller (DCTCP needs TCP with
    `tcp.ecn = "dctcp"` or QUIC with `quic.ecn = "l4s"`, Prague TCP with `tcp.ecn = "l4s"` or QUIC with
    `quic.ecn = "l4s"`) where the user wrote them, or, where nobody did, beside the `cca` that chose the controller: the field to set."""
    chosen_at = user_field(aliases, where) if own.cca is not None else "flow_defaults"
    for section in ("tcp", "quic"):
        layers = (getattr(own, section, None), getattr(defaults, section, None))
        if not any(layer is not None and "ecn" in layer.model_fields_set for layer in layers):
            aliases[f"{where}.{section}.ecn"] = f"{chosen_at}.{section}.ecn"
    if getattr(own, "transport", None) is None:
        aliases[f"{where}.transport"] = ("flow_defaults.transport" if defaults.transport is not None
                                         else f"{chosen_at}.transport")


def _flow_ends(flow: Flow | CountedFlow, where: str, nodes: Sequence[Node | Host],
               node_index: dict[str, int]) -> tuple[int, int]:
    """A flow's source and destination node, checked in order (set, known, hosts, different)."""
    if flow.src is None:
        raise SpecError(f"{where}.src", "missing required key")
    if flow.dst is None:
        raise SpecError(f"{where}.dst", "missing required key")
    src = _index(node_index, flow.src, f"{where}.src")
    dst = _index(node_index, flow.dst, f"{where}.dst")
    for end, idx in (("src", src), ("dst", dst)):
        if nodes[idx].kind != "host":
            raise SpecError(f"{where}.{end}", f'"{nodes[idx].name}" is a router; flows run between hosts')
    if src == dst:
        raise SpecError(f"{where}.dst", f'same node as src ("{flow.src}")')
    return src, dst


def _start_field(flow: Flow | CountedFlow, where: str) -> str:
    """The user's field a flow's start comes from: its own, or the flow defaults'."""
    return f"{where}.start" if flow.start is not None else "flow_defaults.start"


class _Listing:
    """One of the engine spec's tables of shared entries (`tcp_options`, `quic_options`, `queues`):
    each distinct entry is listed once, and its users refer to it by index. Entries are told apart
    by value, so that equal runs have equal engine specs however their options were written (the
    spec is the run's identity); an entry made from the same source objects as an earlier one is
    found without being made again (sources are told apart by identity and kept alive, so that
    an id is never reused). Each new entry's path is recorded with the engine path of its first
    user (`users`), whose user field its errors will name."""

    __slots__ = ("name", "entries", "by_source", "by_value", "users")

    def __init__(self, name: str, users: dict[str, str]) -> None:
        self.name = name
        self.entries: list[dict[str, Any]] = []
        self.by_source: dict[tuple[int, ...], tuple[tuple[object, ...], int]] = {}
        self.by_value: dict[tuple[tuple[str, Any], ...], int] = {}
        self.users = users

    def index(self, sources: tuple[object, ...], make: Callable[[], dict[str, Any]], user: str,
              named: Callable[[str], None] | None = None) -> int:
        """The index of the entry `make()` gives for `sources` (not to be changed: its users share
        it); `user` is the engine path of the field that refers to it (`flows[3].tcp`), and
        `named(path)` is called with a new entry's path (`tcp_options[1]`)."""
        key = tuple(map(id, sources))
        known = self.by_source.get(key)
        if known is None:
            known = self.by_source[key] = (sources, self.listed(make(), user, named))
        return known[1]

    def listed(self, entry: dict[str, Any], user: str, named: Callable[[str], None] | None = None) -> int:
        """The index of `entry` (a table of plain values), listed now if no equal one is."""
        value = tuple(sorted(entry.items()))
        index = self.by_value.get(value)
        if index is None:
            index = self.by_value[value] = len(self.entries)
            self.entries.append(entry)
            self.users[f"{self.name}[{index}]"] = user
            if named is not None:
                named(f"{self.name}[{index}]")
        return index


def _inherited_keys(aliases: dict[str, str], own: BaseModel | None, inherited: BaseModel | None, section: str,
                    entry: str) -> None:
    """Name the options of a table entry made from a flow's own options and the flow defaults'
    that came from the defaults (`tcp_options[1].mss` is `flow_defaults.tcp.mss`)."""
    if own is not None and inherited is not None:
        for key in inherited.model_fields_set - own.model_fields_set:
            aliases[f"{entry}.{key}"] = f"flow_defaults.{section}.{key}"


def build_engine_spec(s: Scenario, nodes: Sequence[Node | Host], links: Sequence[Link | AccessLink],
                      flows: Sequence[Flow | CountedFlow], bottleneck: str | None,
                      topology_aliases: dict[str, str] | None = None) -> Resolved:
    """The engine spec of a scenario whose topology is expanded into `nodes`, `links` and
    `flows`; `topology_aliases` name the user's fields of what the expansion made (a dumbbell's
    `links[0].queue_forward` is its `topology.queue`)."""
    node_index = _unique([n.name for n in nodes], "nodes")
    link_names = [link.name or f"{link.a}_{link.b}" for link in links]
    link_index = _unique(link_names, "links")

    engine_links = []
    # Each channel's queue as written, and the user's field of it: link index and key (sizes by
    # time or rule are resolved once the flows are known).
    queues: list[tuple[Queue, int, str]] = []
    for i, (link, name) in enumerate(zip(links, link_names)):
        a, b = node_index.get(link.a), node_index.get(link.b)
        if a is None or b is None:  # the error names the first unknown end (field names made only here)
            a, b = _index(node_index, link.a, f"links[{i}].a"), _index(node_index, link.b, f"links[{i}].b")
        if a == b:
            raise SpecError(f"links[{i}].b", f'a link needs two different nodes, both ends are "{link.a}"')
        if link.queue is not None and (link.queue_forward is not None or link.queue_backward is not None):
            raise SpecError(f"links[{i}].queue", "give either queue (both directions) or "
                                                 "queue_forward/queue_backward")
        forward = link.queue_forward or link.queue or DEFAULT_QUEUE
        backward = link.queue_backward or link.queue or DEFAULT_QUEUE
        queues += [(forward, i, "queue_forward" if link.queue_forward is not None else "queue"),
                   (backward, i, "queue_backward" if link.queue_backward is not None else "queue")]
        engine_link = {"name": name, "a": a, "b": b, "rate": link.rate, "delay": link.delay, "loss": link.loss}
        if link.loss_model is not None:
            if link.loss:
                raise SpecError(f"links[{i}].loss_model", "give either loss or loss_model, not both")
            engine_link["loss_model"] = link.loss_model.to_engine()
        if link.ecn_bleach:
            engine_link["ecn_bleach"] = True
        engine_links.append(engine_link)

    draw_start = start_sampler(s.seed)
    random_draws: list[str] = []
    # The shared tables, and the engine path of each entry's first user (`_Listing`).
    users: dict[str, str] = {}
    tcp_options, quic_options = _Listing("tcp_options", users), _Listing("quic_options", users)
    generated, engine_generators, aliases = _expand_generators(s, nodes, node_index, draw_start, random_draws,
                                                               tcp_options, first_flow=len(flows))
    flows = [*flows, *generated]
    if not flows and not engine_generators:
        raise SpecError("flows", "no flows: list at least one [[flows]] or [[generators]]")
    defaults = s.flow_defaults or FlowDefaults()
    engine_flows, flow_names = [], []
    greedy = Traffic(kind="greedy")
    is_host = [n.kind == "host" for n in nodes]
    # What flows share is resolved once and listed once (`_Listing`): most flows of a large spec
    # take their options from the flow defaults (a 10,000-flow dumbbell's all do). A traffic table
    # is small ({"kind": "greedy"}): flows share the object, and the JSON repeats it.
    traffic_tables: dict[int, tuple[Traffic, dict[str, Any]]] = {}
    for i, flow in enumerate(flows):
        where = f"flows[{i}]"
        src, dst = node_index.get(flow.src or ""), node_index.get(flow.dst or "")
        if src is None or dst is None or src == dst or not (is_host[src] and is_host[dst]):
            src, dst = _flow_ends(flow, where, nodes, node_index)  # raises, naming the first problem
        cca = flow.cca or defaults.cca or "reno"
        traffic = flow.traffic or defaults.traffic or greedy
        start_value = flow.start if flow.start is not None else (defaults.start or 0)
        stop = flow.stop if flow.stop is not None else defaults.stop
        start_at = None  # the field a start comes from, named when it is drawn or wrong
        if isinstance(start_value, Dist):
            start_at = _start_field(flow, where)
            start = draw_start(start_value)
            if start_at not in random_draws:
                random_draws.append(start_at)
            start_at = f"{start_at} (the draw of {where}, {units.format_time(start)})"
        else:
            start = start_value
        # The engine checks the start and stop too, but cannot say which draw gave a start.
        if start >= s.duration:
            raise SpecError(start_at or _start_field(flow, where),
                            f"starts at {units.format_time(start)}, not before the end of the run "
                            f"({units.format_time(s.duration)})")
        if stop is not None and stop <= start:
            raise SpecError(f"{where}.stop" if flow.stop is not None else "flow_defaults.stop",
                            f"stop ({units.format_time(stop)}) is not after start ({units.format_time(start)})")
        name = flow.name or f"flow_{i}"
        flow_names.append(name)
        _inherited(aliases, where, flow, defaults, ("tcp", "quic", "traffic"))
        if engine_controller(cca) in ("dctcp", "prague"):
            _feedback_fields(aliases, where, flow, defaults)
        # Flows with the same option tables (their own, and the defaults) share one entry.
        tcp = tcp_options.index((defaults.tcp, flow.tcp), partial(_tcp, defaults.tcp, flow.tcp, where),
                                f"{where}.tcp", partial(_inherited_keys, aliases, flow.tcp, defaults.tcp, "tcp"))
        transport = flow.transport or defaults.transport or "tcp"
        known_traffic = traffic_tables.get(id(traffic))
        if known_traffic is None:
            known_traffic = traffic_tables[id(traffic)] = (traffic, traffic.to_engine())
        engine_flow = {"name": name, "src": src, "dst": dst, "cca": engine_controller(cca),
                       "traffic": known_traffic[1], "start": start, "stop": stop, "transport": transport,
                       "tcp": tcp}
        # A TCP flow's spec has no QUIC entry: it would say nothing about the run (the engine's is
        # the default, unused). A QUIC flow has both (its controller's Prague options are the TCP
        # entry's).
        if transport == "quic":
            quic = quic_options.index((defaults.quic, flow.quic), partial(_quic, defaults.quic, flow.quic),
                                      f"{where}.quic", partial(_inherited_keys, aliases, flow.quic, defaults.quic, "quic"))
            engine_flow["quic"] = quic
        engine_flows.append(engine_flow)
    _unique(flow_names, "flows", aliases)

    queue_list = _Listing("queues", users)
    queue_descriptions = _resolve_queues(nodes, engine_links, engine_flows, queues, queue_list,
                                         tcp_options.entries, quic_options.entries)
    channel_names = [f"{name}_{d}" for name in link_names for d in ("forward", "backward")]
    captures = []
    recorded = [(f"captures[{i}]", cap) for i, cap in enumerate(s.captures)]
    if s.record is not None:
        recorded += [(f"record.captures[{i}]", cap) for i, cap in enumerate(s.record.captures)]
    for where, cap in recorded:
        li = _index(link_index, cap.link, f"{where}.link", "link")
        captures.append({"link": li, "direction": cap.direction})

    record = _record_selection(s, flow_names, link_index, channel_names)
    chosen = s.bottleneck or bottleneck
    bottleneck_channel = None
    if chosen is not None:
        if chosen in link_index:
            bottleneck_channel = 2 * link_index[chosen]
        elif chosen in channel_names:
            bottleneck_channel = channel_names.index(chosen)
        else:
            raise SpecError("bottleneck", f'unknown link or channel "{chosen}" '
                                          '(give a link name or "<link>_forward"/"<link>_backward")')

    engine = {
        "seed": s.seed,
        "duration": s.duration,
        "sample_interval": _sample_interval(s) or None,
        "nodes": [{"name": n.name, "kind": n.kind} for n in nodes],
        "tcp_options": tcp_options.entries,
        "queues": queue_list.entries,
        "links": engine_links,
        "flows": engine_flows,
        "captures": captures,
        "record": record,
    }
    if quic_options.entries:
        engine["quic_options"] = quic_options.entries
    if engine_generators:
        engine["generators"] = engine_generators
    if s.record is not None and s.record.interval is not None:
        aliases["sample_interval"] = "record.interval"
    aliases.update(topology_aliases or {})
    for entry, user in users.items():  # an entry is named as its first user is
        aliases[entry] = user_field(aliases, user)
    return Resolved(members=engine, node_names=[n.name for n in nodes], flow_names=flow_names,
                    bottleneck=bottleneck_channel,
                    generator_names=[g["name"] for g in engine_generators], queue_descriptions=queue_descriptions,
                    random_draws=random_draws, field_aliases=aliases,
                    store_series=s.record is None or s.record.store_series)


def _resolve_queues(nodes: Sequence[Node | Host], engine_links: list[dict[str, Any]],
                    engine_flows: list[dict[str, Any]], queues: list[tuple[Queue, int, str]],
                    listing: _Listing, tcp_options: list[dict[str, Any]],
                    quic_options: list[dict[str, Any]]) -> list[str]:
    """Put the index of each channel's queue, its size resolved (time, rule), in `listing` into
    the engine links; returns one description per channel."""
    loads = None
    descriptions = []
    # A resolved queue's entry and description, made once per queue (queues are frozen): a
    # 10,000-flow dumbbell's 40,000 access channels share one queue. A queue sized by time or
    # rule is sized per link, and listed once per distinct size.
    described = dict[int, str]()
    for channel, (queue, link, written) in enumerate(queues):
        key = "queue_forward" if channel % 2 == 0 else "queue_backward"
        user = f"links[{link}].{key}"
        if id(queue) in described:
            engine_links[link][key] = listing.index((queue,), queue.to_engine, user)
            descriptions.append(described[id(queue)])
            continue
        if not queue.resolved:
            # Only a size given by time or by rule needs the sizing module, imported here.
            from .queue_sizes import loads_of_links, resolve_queue

            if loads is None:  # the loads of the links whose queues are sized by time or rule
                loads = loads_of_links(len(nodes), engine_links, engine_flows, _links_sized_later(queues),
                                       tcp_options, quic_options)
            sized, description = resolve_queue(queue, loads[link], f"links[{link}].{written}")
            engine_links[link][key] = listing.listed(sized.to_engine(), user)
        else:
            description = described[id(queue)] = str(queue)
            engine_links[link][key] = listing.index((queue,), queue.to_engine, user)
        descriptions.append(description)
    return descriptions


def _links_sized_later(queues: list[tuple[Queue, int, str]]) -> set[int]:
    """The links with a queue sized by time or rule (each distinct queue asked once)."""
    resolved: dict[int, bool] = {}
    links = set()
    for queue, link, _ in queues:
        done = resolved.get(id(queue))
        if done is None:
            done = resolved[id(queue)] = queue.resolved
        if not done:
            links.add(link)
    return links


def _generator_sources(g: Generator, nodes: Sequence[Node | Host], where: str) -> list[str]:
    """The host names a generator's `sources` select (default: every host but the destination)."""
    hosts = [n.name for n in nodes if n.kind == "host" and n.name != g.dst]
    patterns = [g.sources] if isinstance(g.sources, str) else g.sources
    if patterns is None:
        return hosts
    kinds = {n.name: n.kind for n in nodes}
    chosen: list[str] = []
    for pattern in patterns:
        if pattern in kinds:
            if kinds[pattern] != "host":
                raise SpecError(f"{where}.sources", f'"{pattern}" is a router; sources are hosts')
            if pattern == g.dst:
                raise SpecError(f"{where}.sources", f'"{pattern}" is the destination')
            matched = [pattern]
        else:
            matched = fnmatch.filter(hosts, pattern)
            if not matched:
                raise SpecError(f"{where}.sources", f'"{pattern}" matches no host')
        chosen += [h for h in matched if h not in chosen]
    return chosen


# A generator's model fields, which the engine nests in its `model` -> the user's generator keys.
_GENERATOR_MODEL_FIELDS = {"model.arrivals_per_s": "arrivals_per_s", "model.users": "users", "model.size": "size",
                           "model.think": "think", "model": "kind"}


def _expand_generators(s: Scenario, nodes: Sequence[Node | Host], node_index: dict[str, int],
                       draw_start: Callable[[Dist], int], random_draws: list[str], tcp_options: _Listing,
                       first_flow: int) -> tuple[list[Flow], list[dict[str, Any]], dict[str, str]]:
    """Generators -> listed flows (persistent, cbr, onoff) and engine generators (poisson,
    closed_loop), one per source host. A start distribution in flow_defaults gives each listed
    flow its own draw (the flows take it from flow_defaults) and each engine generator one.
    Also returns the field aliases that name each engine flow (from index `first_flow` on) and
    engine generator by the user's generator (`Resolved.field_aliases`)."""
    defaults = s.flow_defaults or FlowDefaults()
    flows: list[Flow] = []
    engine: list[dict[str, Any]] = []
    names: list[str] = []
    aliases: dict[str, str] = {}
    for i, g in enumerate(s.generators):
        where = f"generators[{i}]"
        needed, optional = GENERATOR_KEYS[g.kind]
        for key in sorted(needed):
            if getattr(g, key) is None:
                raise SpecError(f"{where}.{key}", f"missing required key of a {g.kind} generator")
        for key in sorted(g.model_fields_set - needed - optional - GENERATOR_COMMON_KEYS):
            raise SpecError(f"{where}.{key}", f"not a key of a {g.kind} generator")
        dst = _index(node_index, g.dst, f"{where}.dst")
        if nodes[dst].kind != "host":
            raise SpecError(f"{where}.dst", f'"{g.dst}" is a router; flows run between hosts')
        # A generator without a start of its own takes flow_defaults.start: a time, or one draw.
        jittered = False
        if g.start is not None:
            start = g.start
        elif isinstance(defaults.start, Dist):
            jittered = True
            start = draw_start(defaults.start)
            if "flow_defaults.start" not in random_draws:
                random_draws.append("flow_defaults.start")
        else:
            start = defaults.start or 0
        stop = g.stop if g.stop is not None else defaults.stop
        if start >= s.duration:
            raise SpecError(f"{where}.start", f"starts at {units.format_time(start)}, not before the end of the "
                                              f"run ({units.format_time(s.duration)})")
        if stop is not None and stop <= start:
            raise SpecError(f"{where}.stop", f"stop ({units.format_time(stop)}) is not after start "
                                             f"({units.format_time(start)})")
        cca = g.cca or defaults.cca or "reno"
        name = g.name or f"gen_{i}"
        # What every listed flow of the generator shares (a jittered one draws its own start).
        template = Flow.model_construct(dst=g.dst, cca=cca, start=None if jittered else start, stop=stop, tcp=g.tcp)
        for host in _generator_sources(g, nodes, where):
            base = f"{name}_{host}"
            made = len(flows)
            if g.kind == "persistent":
                assert g.flows is not None
                flows += [template.model_copy(update={"name": f"{base}_{k}", "src": host, "traffic": Traffic(kind="greedy")})
                          for k in range(g.flows)]
            elif g.kind in ("cbr", "onoff"):
                traffic = Traffic(kind=g.kind, rate=g.rate, packet=g.packet or DEFAULT_DATAGRAM, on=g.on, off=g.off)
                flows.append(template.model_copy(update={"name": base, "src": host, "traffic": traffic}))
            for k in range(first_flow + made, first_flow + len(flows)):
                # A generated flow's fields are the generator's (its traffic: the generator's rate, packet).
                aliases.update({f"flows[{k}]": where, f"flows[{k}].traffic": where})
            if g.kind in ("persistent", "cbr", "onoff"):
                continue
            assert g.size is not None
            if (defaults.transport or "tcp") != "tcp":
                raise SpecError(f"{where}.kind", f"{g.kind} transfers are TCP connections, but "
                                                 f'flow_defaults.transport is "{defaults.transport}"')
            if g.kind == "poisson":
                model = {"kind": "poisson", "arrivals_per_s": g.arrivals_per_s, "size": g.size.engine}
            else:
                assert g.think is not None
                model = {"kind": "closed_loop", "users": g.users, "size": g.size.engine,
                         "think": g.think.engine}
            k = len(engine)
            aliases[f"generators[{k}]"] = where
            _inherited(aliases, f"generators[{k}]", g, defaults, ("tcp",))
            if engine_controller(cca) in ("dctcp", "prague"):
                _feedback_fields(aliases, f"generators[{k}]", g, defaults)
            aliases.update({f"generators[{k}].{key}": f"{where}.{user}"
                            for key, user in _GENERATOR_MODEL_FIELDS.items()})
            names.append(base)
            tcp = tcp_options.index((defaults.tcp, g.tcp), partial(_tcp, defaults.tcp, g.tcp, where),
                                    f"generators[{k}].tcp", partial(_inherited_keys, aliases, g.tcp, defaults.tcp, "tcp"))
            engine.append({"name": base, "src": node_index[host], "dst": dst, "cca": engine_controller(cca),
                           "tcp": tcp, "start": start, "stop": stop, "model": model})
    _unique(names, "generators", aliases)
    return flows, engine, aliases


def _sample_interval(s: Scenario) -> int:
    """The sampling interval in ns (0: off), from `[record] interval` or `sample_interval`."""
    if s.record is not None and s.record.interval is not None:
        return s.record.interval
    return s.sample_interval


def _record_selection(s: Scenario, flow_names: list[str], link_index: dict[str, int],
                      channel_names: list[str]) -> dict[str, list[int] | int | None]:
    """The engine's `record`: flow and channel indices to sample (None: all of them), and the
    warm-up when there is one."""
    if s.record is None:
        return {"flows": None, "channels": None}
    if s.record.warmup >= s.duration and s.record.warmup > 0:
        raise SpecError("record.warmup", f"{units.format_time(s.record.warmup)} does not end before the run does "
                                         f"(duration {units.format_time(s.duration)})")
    if s.record.interval is not None and "sample_interval" in s.model_fields_set:
        raise SpecError("record.interval", "the interval is given twice: here and as sample_interval")
    flows: list[int] | None
    channels: list[int] | None
    if isinstance(s.record.flows, list):
        flow_index = {name: i for i, name in enumerate(flow_names)}
        flows = [_index(flow_index, name, f"record.flows[{k}]", "flow") for k, name in enumerate(s.record.flows)]
    else:
        flows = None if s.record.flows == "all" else []
    if isinstance(s.record.links, list):
        channels = []
        for k, name in enumerate(s.record.links):
            if name in link_index:
                channels += [2 * link_index[name], 2 * link_index[name] + 1]
            elif name in channel_names:
                channels.append(channel_names.index(name))
            else:
                raise SpecError(f"record.links[{k}]", f'unknown link or channel "{name}" '
                                                      '(give a link name or "<link>_forward"/"<link>_backward")')
    else:
        channels = None if s.record.links == "all" else []
    selection: dict[str, list[int] | int | None] = {"flows": None if flows is None else sorted(set(flows)),
                                                    "channels": None if channels is None else sorted(set(channels))}
    if s.record.warmup:
        selection["warmup"] = s.record.warmup
    return selection
