"""The user-level scenario spec: pydantic models <-> TOML files <-> the engine's ScenarioSpec.

A scenario is either a general graph (``nodes``, ``links``, ``flows`` naming nodes) or a dumbbell
shorthand (``[topology] kind = "dumbbell"`` plus ``flows`` that give a per-flow RTT). Either way
`Scenario.to_engine()` resolves it into the engine's input (`crates/bufferlab-core/src/spec.rs`):
integers in base units, nodes and links by index, every TCP option spelled out.

Bad input raises `SpecError` with one line ``<field path>: <reason>``.

Dumbbell rule (how access delays follow from the requested RTTs): flow i runs
``src_i -> left -> right -> dst_i``. The bottleneck ``left -> right`` has one-way delay ``d_b``
(``topology.bottleneck_delay``; default a quarter of the smallest RTT, rounded down to a ns).
The remaining one-way propagation ``r_i = rtt_i / 2 - d_b`` is split between the flow's two access
links, ``src_i`` side ``floor(r_i / 2)`` and ``dst_i`` side the rest, so that the two-way
propagation ``2 (d_src + d_b + d_dst)`` equals ``rtt_i`` exactly. Hence ``rtt_i >= 2 d_b`` and, since
every link has one delay for both directions, ``rtt_i`` must be a whole even number of ns.
The RTT is propagation only: transmission and queueing come on top, as in ns-3 and ccperf.
"""

from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from .errors import SpecError, from_validation_error
from .fields import (
    ByteCount,
    Controller,
    OptionalRate,
    PositiveTime,
    Probability,
    QueueField,
    Rate,
    Recovery,
    SampleInterval,
    Time,
    TrafficField,
    Queue,
    Traffic,
    engine_controller,
    engine_recovery,
)
from . import units

__all__ = ["Scenario", "Node", "Link", "Flow", "FlowDefaults", "TcpOptions", "Dumbbell", "Capture",
           "Resolved", "load_scenario", "DEFAULT_SAMPLE_INTERVAL_NS"]

# metrics.md: "Time series are sampled at a fixed interval (default 10 ms, configurable)".
DEFAULT_SAMPLE_INTERVAL_NS = 10_000_000
# Linux's default txqueuelen and ns-3's FifoQueueDisc default: 1000 packets.
DEFAULT_QUEUE = Queue(limit=units.QueueLimit(packets=1000))

@functools.cache
def engine_tcp_defaults() -> dict[str, Any]:
    """The engine's TcpSpec defaults (`impl Default for TcpSpec` in crates/bufferlab-core/src/spec.rs).

    Spelled out in every engine spec so that a stored spec says exactly what ran.
    """
    from . import _core

    defaults: dict[str, Any] = json.loads(_core.tcp_defaults())
    return defaults


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Node(_Model):
    """A host (flow endpoint) or a router."""

    name: str = Field(min_length=1)
    kind: Literal["host", "router"]


class Link(_Model):
    """A full-duplex point-to-point link; "forward" is a -> b, "backward" is b -> a."""

    name: str | None = Field(default=None, min_length=1)
    a: str
    b: str
    rate: OptionalRate
    delay: Time
    loss: Probability = 0.0
    # One queue for both directions, or one per direction; default 1000 packets.
    queue: QueueField | None = None
    queue_forward: QueueField | None = None
    queue_backward: QueueField | None = None


class TcpOptions(_Model):
    """TCP knobs; an unset option takes the flow defaults', then the engine's default."""

    mss: StrictInt | None = Field(default=None, gt=0)
    header_bytes: StrictInt | None = Field(default=None, gt=0)
    initial_window: StrictInt | None = Field(default=None, gt=0)
    ack_every: StrictInt | None = Field(default=None, gt=0)
    # `delayed_ack = false` is the same as `ack_every = 1` (ACK every packet).
    delayed_ack: StrictBool | None = None
    delayed_ack_timeout: PositiveTime | None = None
    sack: StrictBool | None = None
    recovery: Recovery | None = None
    min_rto: PositiveTime | None = None
    initial_rto: PositiveTime | None = None
    max_rto: PositiveTime | None = None
    rwnd: ByteCount | None = None
    dupthresh: StrictInt | None = Field(default=None, gt=0)
    # RTT measurement from echoed timestamps (RFC 7323); false: send times under Karn's rule.
    timestamps: StrictBool | None = None
    # HyStart++ (RFC 9406) in CUBIC's initial slow start; false: standard slow start.
    hystart: StrictBool | None = None


class FlowDefaults(_Model):
    """Values every flow takes unless it sets its own."""

    cca: Controller | None = None
    traffic: TrafficField | None = None
    start: Time | None = None
    stop: Time | None = None
    rtt: PositiveTime | None = None
    tcp: TcpOptions | None = None


class Flow(FlowDefaults):
    """A one-way TCP transfer from host `src` to host `dst`; any key it leaves unset comes from
    `[flow_defaults]`.

    In a dumbbell, `src`/`dst` are optional host names (default src_i, dst_i) and `rtt` sets the
    flow's two-way propagation delay.
    """

    name: str | None = Field(default=None, min_length=1)
    src: str | None = None
    dst: str | None = None


class Dumbbell(_Model):
    """K flows src_i -> left -> right -> dst_i sharing the bottleneck left -> right ("btl")."""

    kind: Literal["dumbbell"]
    # K, when the flows are not listed one by one under [[flows]].
    flows: StrictInt | None = Field(default=None, gt=0)
    bottleneck_rate: Rate
    bottleneck_delay: Time | None = None
    # Bottleneck queue (at `left`, toward `right`); `reverse_queue` defaults to the same.
    queue: QueueField
    reverse_queue: QueueField | None = None
    # Random loss on the bottleneck link (both directions, as the engine applies it).
    loss: Probability = 0.0
    # Default: ten times the bottleneck rate (1 Gb/s for the reference 100 Mb/s dumbbell).
    access_rate: OptionalRate | None = None
    access_queue: QueueField | None = None
    # Default RTT of every flow.
    rtt: PositiveTime | None = None


class Capture(_Model):
    """Record every packet that starts transmission on one direction of a link."""

    link: str
    direction: Literal["forward", "backward"] = "forward"


@dataclass
class Resolved:
    """A scenario resolved for the engine, plus the names needed to read its result."""

    engine: dict[str, Any]
    node_names: list[str]
    flow_names: list[str]
    flow_endpoints: list[tuple[str, str]]
    channel_names: list[str]
    # Channel index of the bottleneck named by the spec (None: pick the slowest busy channel).
    bottleneck: int | None = None
    notes: list[str] = field(default_factory=list)
    # Engine field paths (as the engine names them, unit suffixes removed) that the user wrote
    # elsewhere, e.g. a dumbbell's "links[0].queue_forward" is its "topology.queue".
    field_aliases: dict[str, str] = field(default_factory=dict)

    def user_field(self, engine_field: str) -> str:
        """The user's name for an engine field path: its longest aliased prefix replaced."""
        for prefix in sorted(self.field_aliases, key=len, reverse=True):
            if engine_field == prefix or engine_field.startswith((prefix + ".", prefix + "[")):
                return self.field_aliases[prefix] + engine_field[len(prefix):]
        return engine_field

    def to_json(self) -> str:
        """Canonical JSON of the engine spec: the identity of a run (with the engine version)."""
        return canonical_json(self.engine)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Scenario(_Model):
    """One experiment: topology, flows, duration and seed."""

    name: str | None = None
    description: str | None = None
    seed: StrictInt = Field(default=1, ge=0, lt=2**64)
    duration: PositiveTime
    sample_interval: SampleInterval = DEFAULT_SAMPLE_INTERVAL_NS
    # The channel the summary reports as bottleneck: "<link>_forward", "<link>_backward" or a link
    # name (its forward direction). Default: the slowest channel that carried traffic.
    bottleneck: str | None = None
    topology: Dumbbell | None = None
    nodes: list[Node] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    flow_defaults: FlowDefaults | None = None
    flows: list[Flow] = Field(default_factory=list)
    captures: list[Capture] = Field(default_factory=list)
    # Free-form labels (e.g. ccperf's --experiment-name); stored, never simulated.
    meta: dict[str, str | int | float | bool] = Field(default_factory=dict)

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any) -> Scenario:
        """Validate a plain mapping (the TOML/JSON form); raises SpecError."""
        try:
            scenario = cls.model_validate(data)
        except ValidationError as e:
            raise from_validation_error(e) from None
        scenario.resolve()  # cross-field checks (names, RTTs, times) fail here, not at run time
        return scenario

    @classmethod
    def from_toml_text(cls, text: str, source: str = "scenario") -> Scenario:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SpecError(source, f"invalid TOML: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def from_toml(cls, path: str | Path) -> Scenario:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SpecError(str(path), "no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise SpecError(str(path), f"cannot read: {e}") from None
        return cls.from_toml_text(text, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The TOML/JSON form, units as text; `Scenario.from_dict` gives this scenario back."""
        return self.model_dump(mode="json", exclude_unset=True)

    def with_seed(self, seed: int) -> Scenario:
        data = self.to_dict()
        data["seed"] = seed
        return Scenario.from_dict(data)

    # --- resolution -------------------------------------------------------------------------

    def to_engine(self) -> dict[str, Any]:
        return self.resolve().engine

    def to_engine_json(self) -> str:
        return self.resolve().to_json()

    def resolve(self) -> Resolved:
        """Resolve into the engine's ScenarioSpec; raises SpecError for cross-field problems."""
        if self.topology is not None:
            for key in ("nodes", "links"):
                if getattr(self, key):
                    raise SpecError(key, "a dumbbell topology builds its own nodes and links: "
                                         "give either [topology] or nodes/links")
            nodes, links, flows, bottleneck = _expand_dumbbell(self)
            aliases = _dumbbell_aliases(self, len(links))
        else:
            nodes, links, flows = self.nodes, self.links, self.flows
            for i, flow in enumerate(flows):
                if flow.rtt is not None:
                    raise SpecError(f"flows[{i}].rtt", "only a dumbbell topology derives delays from RTTs")
            if self.flow_defaults is not None and self.flow_defaults.rtt is not None:
                raise SpecError("flow_defaults.rtt", "only a dumbbell topology derives delays from RTTs")
            bottleneck, aliases = None, {}
        resolved = _build(self, nodes, links, flows, bottleneck)
        resolved.field_aliases = aliases
        return resolved


# --- dumbbell -----------------------------------------------------------------------------------

def _expand_dumbbell(s: Scenario) -> tuple[list[Node], list[Link], list[Flow], str]:
    topo = s.topology
    assert topo is not None
    if topo.flows is not None and s.flows and topo.flows != len(s.flows):
        raise SpecError("topology.flows", f"{topo.flows} flows, but {len(s.flows)} are listed in [[flows]]")
    flows = list(s.flows) if s.flows else [Flow() for _ in range(topo.flows or 0)]
    if not flows:
        raise SpecError("topology.flows", "a dumbbell needs flows: set topology.flows = K or list [[flows]]")
    defaults = s.flow_defaults or FlowDefaults()

    # Each flow's RTT and where it came from (for the error message).
    rtts: list[tuple[int, str]] = []
    for i, flow in enumerate(flows):
        if flow.rtt is not None:
            rtts.append((flow.rtt, f"flows[{i}].rtt"))
        elif defaults.rtt is not None:
            rtts.append((defaults.rtt, "flow_defaults.rtt"))
        elif topo.rtt is not None:
            rtts.append((topo.rtt, "topology.rtt"))
        else:
            raise SpecError(f"flows[{i}].rtt", "missing: set the flow's rtt, flow_defaults.rtt or topology.rtt")

    d_btl = topo.bottleneck_delay if topo.bottleneck_delay is not None else min(r for r, _ in rtts) // 4
    access_rate = topo.access_rate if "access_rate" in topo.model_fields_set else topo.bottleneck_rate * 10
    access_queue = topo.access_queue or DEFAULT_QUEUE

    nodes = [Node(name="left", kind="router"), Node(name="right", kind="router")]
    links = [Link(name="btl", a="left", b="right", rate=units.format_rate(topo.bottleneck_rate),
                  delay=units.format_time(d_btl), loss=topo.loss,
                  queue_forward=topo.queue, queue_backward=topo.reverse_queue or topo.queue)]
    expanded: list[Flow] = []
    for i, (flow, (rtt, where)) in enumerate(zip(flows, rtts)):
        src, dst = flow.src or f"src_{i}", flow.dst or f"dst_{i}"
        d_src, d_dst = split_access_delays(rtt, d_btl, where)
        nodes += [Node(name=src, kind="host"), Node(name=dst, kind="host")]
        for host, a, b, delay in ((src, src, "left", d_src), (dst, "right", dst, d_dst)):
            links.append(Link(name=f"access_{host}", a=a, b=b, rate=units.format_rate(access_rate),
                              delay=units.format_time(delay), queue=access_queue))
        expanded.append(flow.model_copy(update={"src": src, "dst": dst, "rtt": None}))
    return nodes, links, expanded, "btl_forward"


def _dumbbell_aliases(s: Scenario, links: int) -> dict[str, str]:
    """Where a dumbbell's generated links come from: link 0 is the bottleneck, the rest access."""
    topo = s.topology
    assert topo is not None
    reverse = "topology.reverse_queue" if topo.reverse_queue is not None else "topology.queue"
    aliases = {"links[0]": "topology", "links[0].queue_forward": "topology.queue",
               "links[0].queue_backward": reverse, "links[0].rate": "topology.bottleneck_rate",
               "links[0].delay": "topology.bottleneck_delay", "links[0].loss": "topology.loss"}
    for k in range(1, links):
        aliases[f"links[{k}]"] = "topology"
        aliases[f"links[{k}].rate"] = "topology.access_rate"
        for direction in ("forward", "backward"):
            aliases[f"links[{k}].queue_{direction}"] = "topology.access_queue"
    return aliases


def split_access_delays(rtt_ns: int, bottleneck_delay_ns: int, where: str = "rtt") -> tuple[int, int]:
    """One-way delays (src side, dst side) of a dumbbell flow's access links, in ns, such that
    2 * (src + bottleneck + dst) == rtt exactly (see the module docstring)."""
    if rtt_ns % 2:
        raise SpecError(where, f"{rtt_ns}ns is odd: links have one delay for both directions, so an "
                               "RTT must be a whole even number of nanoseconds")
    if rtt_ns < 2 * bottleneck_delay_ns:
        raise SpecError(where, f"{units.format_time(rtt_ns)} is shorter than twice the bottleneck delay "
                               f"(2 x {units.format_time(bottleneck_delay_ns)})")
    remainder = rtt_ns // 2 - bottleneck_delay_ns
    src = remainder // 2
    return src, remainder - src


# --- building the engine spec -------------------------------------------------------------------

def _index(names: dict[str, int], name: str, where: str, what: str = "node") -> int:
    if name not in names:
        known = ", ".join(sorted(names)) if len(names) <= 12 else f"{len(names)} names"
        raise SpecError(where, f'unknown {what} "{name}" (known: {known})')
    return names[name]


def _unique(names: list[str], section: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in index:
            raise SpecError(f"{section}[{i}].name", f'duplicate name "{name}" (also {section}[{index[name]}])')
        index[name] = i
    return index


def _tcp(defaults: TcpOptions | None, own: TcpOptions | None, where: str) -> dict[str, Any]:
    tcp = dict(engine_tcp_defaults())
    for layer, path in ((defaults, "flow_defaults.tcp"), (own, f"{where}.tcp")):
        if layer is None:
            continue
        given = layer.model_fields_set
        if "delayed_ack" in given and "ack_every" in given and layer.delayed_ack is False \
                and layer.ack_every != 1:
            raise SpecError(f"{path}.delayed_ack", "false means ack_every = 1, but ack_every is "
                                                   f"{layer.ack_every}")
        simple = {"mss": "mss", "header_bytes": "header_bytes", "initial_window": "initial_window",
                  "ack_every": "ack_every", "sack": "sack", "dupthresh": "dupthresh", "timestamps": "timestamps",
                  "hystart": "hystart",
                  "delayed_ack_timeout": "delayed_ack_timeout_ns", "min_rto": "min_rto_ns",
                  "initial_rto": "initial_rto_ns", "max_rto": "max_rto_ns", "rwnd": "rwnd_bytes"}
        for ours, engine_key in simple.items():
            if ours in given:
                tcp[engine_key] = getattr(layer, ours)
        if "recovery" in given and layer.recovery is not None:
            tcp["recovery"] = engine_recovery(layer.recovery)
        if "delayed_ack" in given and layer.delayed_ack is not None:
            tcp["ack_every"] = 1 if not layer.delayed_ack else max(tcp["ack_every"], 2)
    if tcp["min_rto_ns"] > tcp["max_rto_ns"]:
        raise SpecError(f"{where}.tcp.min_rto", "min_rto is larger than max_rto")
    return tcp


def _build(s: Scenario, nodes: list[Node], links: list[Link], flows: list[Flow],
           bottleneck: str | None) -> Resolved:
    node_index = _unique([n.name for n in nodes], "nodes")
    link_names = [link.name or f"{link.a}_{link.b}" for link in links]
    link_index = _unique(link_names, "links")

    engine_links = []
    for i, (link, name) in enumerate(zip(links, link_names)):
        a = _index(node_index, link.a, f"links[{i}].a")
        b = _index(node_index, link.b, f"links[{i}].b")
        if a == b:
            raise SpecError(f"links[{i}].b", f'a link needs two different nodes, both ends are "{link.a}"')
        if link.queue is not None and (link.queue_forward is not None or link.queue_backward is not None):
            raise SpecError(f"links[{i}].queue", "give either queue (both directions) or "
                                                 "queue_forward/queue_backward")
        forward = link.queue_forward or link.queue or DEFAULT_QUEUE
        backward = link.queue_backward or link.queue or DEFAULT_QUEUE
        engine_links.append({"name": name, "a": a, "b": b, "rate_bps": link.rate, "delay_ns": link.delay,
                             "loss": link.loss, "queue_forward": forward.to_engine(),
                             "queue_backward": backward.to_engine()})

    if not flows:
        raise SpecError("flows", "no flows: list at least one [[flows]]")
    defaults = s.flow_defaults or FlowDefaults()
    engine_flows, flow_names, endpoints = [], [], []
    for i, flow in enumerate(flows):
        where = f"flows[{i}]"
        for end in ("src", "dst"):
            if getattr(flow, end) is None:
                raise SpecError(f"{where}.{end}", "missing required key")
        src = _index(node_index, flow.src, f"{where}.src")  # type: ignore[arg-type]
        dst = _index(node_index, flow.dst, f"{where}.dst")  # type: ignore[arg-type]
        for end, idx in (("src", src), ("dst", dst)):
            if nodes[idx].kind != "host":
                raise SpecError(f"{where}.{end}", f'"{nodes[idx].name}" is a router; flows run between hosts')
        if src == dst:
            raise SpecError(f"{where}.dst", f'same node as src ("{flow.src}")')
        cca = flow.cca or defaults.cca or "reno"
        traffic = flow.traffic or defaults.traffic or Traffic(kind="greedy")
        start = flow.start if flow.start is not None else (defaults.start or 0)
        stop = flow.stop if flow.stop is not None else defaults.stop
        start_at = f"{where}.start" if flow.start is not None else "flow_defaults.start"
        if start >= s.duration:
            raise SpecError(start_at, f"starts at {units.format_time(start)}, not before the end of the "
                                      f"run ({units.format_time(s.duration)})")
        if stop is not None and stop <= start:
            raise SpecError(f"{where}.stop" if flow.stop is not None else "flow_defaults.stop",
                            f"stop ({units.format_time(stop)}) is not after start ({units.format_time(start)})")
        name = flow.name or f"flow_{i}"
        flow_names.append(name)
        endpoints.append((nodes[src].name, nodes[dst].name))
        engine_flows.append({"name": name, "src": src, "dst": dst, "cca": engine_controller(cca),
                             "traffic": traffic.to_engine(), "start_ns": start, "stop_ns": stop,
                             "tcp": _tcp(defaults.tcp, flow.tcp, where)})
    _unique(flow_names, "flows")

    channel_names = [f"{name}_{d}" for name in link_names for d in ("forward", "backward")]
    captures = []
    for i, cap in enumerate(s.captures):
        li = _index(link_index, cap.link, f"captures[{i}].link", "link")
        captures.append({"link": li, "direction": cap.direction})

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
        "duration_ns": s.duration,
        "sample_interval_ns": s.sample_interval or None,
        "nodes": [{"name": n.name, "kind": n.kind} for n in nodes],
        "links": engine_links,
        "flows": engine_flows,
        "captures": captures,
    }
    return Resolved(engine=engine, node_names=[n.name for n in nodes], flow_names=flow_names,
                    flow_endpoints=endpoints, channel_names=channel_names, bottleneck=bottleneck_channel)


def load_scenario(source: str | Path | dict[str, Any] | Scenario) -> Scenario:
    """A Scenario from a TOML path, a mapping, or a Scenario (returned as is)."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, dict):
        return Scenario.from_dict(source)
    return Scenario.from_toml(source)

