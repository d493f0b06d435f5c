"""The user-level scenario spec: pydantic models <-> TOML files <-> the engine's ScenarioSpec.

A scenario is either a general graph (``nodes``, ``links``, ``flows`` naming nodes) or a dumbbell
shorthand (``[topology] kind = "dumbbell"`` plus ``flows`` that give a per-flow RTT). Either way
`Scenario.to_engine()` resolves it into the engine's input (`crates/bufferlab-core/src/spec.rs`):
integers in base units, nodes and links by index, every TCP option spelled out. This module holds
the models and expands topologies; `engine_spec.py` builds the engine's spec from the result.

Bad input raises `SpecError` with one line ``<field path>: <reason>``.

Dumbbell rule (how access delays follow from the requested RTTs): flow i runs
``src_i -> left -> right -> dst_i``. The bottleneck ``left -> right`` has one-way delay ``d_b``
(``topology.bottleneck_delay``; default a quarter of the smallest RTT, rounded down to a ns).
The remaining one-way propagation ``r_i = rtt_i / 2 - d_b`` is split between the flow's two access
links, ``src_i`` side ``floor(r_i / 2)`` and ``dst_i`` side the rest, so that the two-way
propagation ``2 (d_src + d_b + d_dst)`` equals ``rtt_i`` exactly. Hence ``rtt_i >= 2 d_b`` and, since
every link has one delay for both directions, ``rtt_i`` must be a whole even number of ns.
The RTT is propagation only: transmission and queueing come on top, as in ns-3 and ccperf.

RTT heterogeneity: ``topology.rtt`` may be a distribution (see `distributions`; a ``mixture`` of
lognormals gives the SplitBuff paper's bimodal RTTs). Every flow without an RTT of its own then draws one,
in flow order, from numpy's PCG64 generator seeded with ``SeedSequence([seed, RTT_STREAM])``, and
rounds it to a whole even number of ns; the dumbbell rule above realises that RTT exactly. A draw
below twice a given ``bottleneck_delay`` is raised to it (and noted); with the default bottleneck
delay (a quarter of the smallest RTT) no draw needs it.

Other topologies (`topology`): ``kind = "tree"`` (Dhamdhere & Dovrolis) and ``kind = "parking_lot"``.
Traffic generators (``[[generators]]``) spread sources over hosts: persistent flows, Poisson mice
and closed-loop users per source host, CBR and on/off datagram sources (see `Generator`).
"""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (in `spec.scenario`, `spec.topology` and
# `queues`), a cost every fresh run would pay.

import functools
import json
import tomllib
import weakref
from pathlib import Path
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, ValidationInfo
from pydantic_core import core_schema

from ..errors import SpecError, from_validation_error
from .distributions import Dist, parse_distribution
from .fields import (
    ByteCount,
    Count,
    LossModel,
    LossModelField,
    Controller,
    Name,
    OptionalName,
    OptionalRate,
    PositiveTime,
    Probability,
    Ratio,
    QueueField,
    Rate,
    Recovery,
    SampleInterval,
    Switch,
    Time,
    TrafficField,
)
from ..queues import Queue, fifo
from .. import units
from .parsed import TABLE, Parsed, Prebuilt, model_on_first_use
from .resolved import Resolved, user_field

if TYPE_CHECKING:  # pragma: no cover - imported with the first tree or parking lot (`_topology`)
    from .topology import Graph, ParkingLot, Tree
    # ... and with the first scenario that gives one (`model_on_first_use`)
    from .generators import Generator
    from .quic import QuicOptions
    from .recording import Capture, Record
else:  # a field's schema is `model_on_first_use`'s, whatever the type: the models need not exist yet
    Generator = QuicOptions = Capture = Record = Any

__all__ = ["Scenario", "Node", "Link", "Flow", "FlowDefaults", "TcpOptions", "Dumbbell", "Resolved", "load_scenario",
           "DEFAULT_SAMPLE_INTERVAL_NS", "RTT_STREAM", "draw_rtts", "start_sampler", "START_STREAM"]

# Time series are sampled at a fixed interval, 10 ms unless `[record]` gives another.
DEFAULT_SAMPLE_INTERVAL_NS = 10_000_000
# Flows (or closed-loop users) one count may ask for: far more than any study runs, few enough that
# expanding them is quick (the memory budget then judges the run itself).
MAX_FLOWS = 100_000
# Linux's default txqueuelen and ns-3's FifoQueueDisc default: 1000 packets.
DEFAULT_QUEUE = fifo(units.QueueLimit(packets=1000))
# The RTT draws' own stream: SeedSequence([seed, RTT_STREAM]) ("rtt" in ASCII).
RTT_STREAM = 0x727474
# The start-time draws' own stream: SeedSequence([seed, START_STREAM]) ("start" in ASCII).
START_STREAM = 0x7374617274

FlowCount = Annotated[int | None, Prebuilt(core_schema.nullable_schema(
    core_schema.int_schema(strict=True, gt=0, le=MAX_FLOWS)))]
"""A number of flows or users, or unset: ``StrictInt | None = Field(default=None, gt=0, le=MAX_FLOWS)``."""
Seed = Annotated[int, Prebuilt(core_schema.int_schema(strict=True, ge=0, lt=2**64))]
"""A run's seed, a 64-bit unsigned integer: ``StrictInt = Field(ge=0, lt=2**64)``."""
Frequency = Annotated[float | None, Prebuilt(core_schema.nullable_schema(core_schema.float_schema(
    allow_inf_nan=False)))]
"""A rate of events per second, or unset: ``float | None = Field(default=None, allow_inf_nan=False)``
(finite, as JSON has no infinity; the engine checks that it is positive and names the field)."""


def _base_dir(info: ValidationInfo) -> Path | None:
    context = info.context or {}
    return context.get("base_dir")


def _size_dist(value: Any, info: ValidationInfo) -> Dist:
    return parse_distribution(value, "bytes", _base_dir(info))


def _time_dist(value: Any, info: ValidationInfo) -> Dist:
    return parse_distribution(value, "time", _base_dir(info))


def _written(dist: Dist) -> dict[str, Any]:
    return dist.written


SizeDist = Annotated[Dist, Parsed(_size_dist, _written, returns=TABLE, info=True)]
"""A distribution of sizes (bytes): flow sizes."""
TimeDist = Annotated[Dist, Parsed(_time_dist, _written, returns=TABLE, info=True)]
"""A distribution of times (ns): think times, on and off periods."""


def _rtt(value: Any, info: ValidationInfo) -> int | Dist:
    if isinstance(value, dict) or isinstance(value, Dist):
        return parse_distribution(value, "time", _base_dir(info), allow_mixture=True)
    return units.parse_time(value, positive=True)


RttField = Annotated[int | Dist, Parsed(_rtt, lambda v: v.written if isinstance(v, Dist) else units.format_time(v),
                                         info=True)]
"""A dumbbell's RTT: a time, or a distribution each flow draws its RTT from."""


def _start(value: Any, info: ValidationInfo) -> int | Dist:
    if isinstance(value, dict) or isinstance(value, Dist):
        return parse_distribution(value, "time", _base_dir(info))
    return units.parse_time(value)


StartField = Annotated[int | Dist, Parsed(_start, lambda v: v.written if isinstance(v, Dist) else units.format_time(v),
                                           info=True)]
"""A flow's start: a time, or a distribution its start is drawn from (jittered application starts,
as ns-3 users do, so that seeds give independent replications); see `draw_starts`."""

@functools.cache
def engine_tcp_defaults() -> dict[str, Any]:
    """The engine's TcpSpec defaults (`impl Default for TcpSpec` in crates/bufferlab-core/src/spec.rs).

    Spelled out in every engine spec so that a stored spec says exactly what ran.
    """
    from .. import _core

    defaults: dict[str, Any] = json.loads(_core.tcp_defaults())
    return defaults


@functools.cache
def engine_quic_defaults() -> dict[str, Any]:
    """The engine's QuicSpec defaults (`impl Default for QuicSpec` in crates/bufferlab-core/src/spec.rs)."""
    from .. import _core

    defaults: dict[str, Any] = json.loads(_core.quic_defaults())
    return defaults


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Node(_Model):
    """A host (flow endpoint) or a router."""

    # The node's name, unique among the nodes; links and flows refer to it.
    name: Name
    # "host": a flow may start or end there; "router": it only forwards (no flow's src or dst).
    kind: Literal["host", "router"]


class Link(_Model):
    """A full-duplex point-to-point link; "forward" is a -> b, "backward" is b -> a."""

    # The link's name, unique among the links; default "<a>_<b>". Its two directions (channels)
    # are "<name>_forward" and "<name>_backward".
    name: OptionalName = None
    # The node at one end: the forward direction leaves it.
    a: str
    # The node at the other end: the backward direction leaves it.
    b: str
    # Line rate of each direction ("100Mbps"); "unlimited" sends in no time (no transmission delay).
    rate: OptionalRate
    # One-way propagation delay, the same in both directions.
    delay: Time
    # Probability that a packet is lost in flight, independently per packet, in both directions.
    loss: Probability = 0.0
    # A bursty (Gilbert–Elliott) loss process instead of independent losses (both directions, each
    # its own state).
    loss_model: LossModelField | None = None
    # The link clears the ECN field of every packet it carries, in both directions (ECT and CE
    # leave it Not-ECT), as a faulty middlebox may: a queue beyond it drops what it would have
    # marked, and a QUIC sender sees its ECN counts stop and stops marking (RFC 9000 §13.4.2).
    # Default false.
    ecn_bleach: Switch = None
    # The egress queue of each direction (each direction has its own queue of this kind); default
    # a FIFO of 1000 packets (Linux's default txqueuelen, ns-3's FifoQueueDisc). Give it or
    # `queue_forward`/`queue_backward`, not both.
    queue: QueueField | None = None
    # The egress queue of the forward direction (at `a`, toward `b`); default `queue`'s.
    queue_forward: QueueField | None = None
    # The egress queue of the backward direction (at `b`, toward `a`); default `queue`'s.
    queue_backward: QueueField | None = None


class TcpOptions(_Model):
    """TCP knobs; an unset option takes the flow defaults', then the engine's default. The engine
    checks their ranges (counts and timeouts positive, min_rto <= max_rto, rwnd >= mss) and names
    the option; a model parses types and units only."""

    # Sender maximum segment size, payload bytes: 1448, a 1500-byte IP packet less `header_bytes`.
    mss: Count = None
    # Bytes of IP and TCP header on every segment and ACK: 52 (IPv4 20, TCP 20 and the RFC 7323
    # timestamp option 12). A full segment is `mss` + `header_bytes` on the wire; SACK blocks add
    # to an ACK.
    header_bytes: Count = None
    # Initial congestion window, segments: 10 (RFC 6928).
    initial_window: Count = None
    # The receiver ACKs every `ack_every` full-sized segments: 2 (RFC 5681 §4.2's delayed ACK);
    # 1 ACKs every segment. Out-of-order data, a filled hole and a FIN are ACKed at once; a lone
    # segment waits at most `delayed_ack_timeout`.
    ack_every: Count = None
    # `delayed_ack = false` ACKs every segment, the same as `ack_every = 1`; true keeps delayed
    # ACKs (`ack_every` at least 2).
    delayed_ack: Switch = None
    # Longest the receiver holds an ACK back while fewer than `ack_every` segments wait: 40 ms,
    # Linux's minimum delayed-ACK timer (RFC 5681 §4.2 allows up to 500 ms). Above 0: an ACK
    # without delay is `ack_every = 1`.
    delayed_ack_timeout: PositiveTime | None = None
    # Selective acknowledgements (RFC 2018) and SACK-based loss recovery (RFC 6675): true, as
    # Linux; false recovers as NewReno (RFC 6582). RACK-TLP needs SACK.
    sack: Switch = None
    # Fast-recovery procedure: "prr", Proportional Rate Reduction (RFC 6937), the default as in
    # Linux; or "classic": cwnd = ssthresh on entry, then RFC 6675 §5 with SACK or RFC 6582's
    # window inflation without (ns-3's TcpClassicRecovery).
    recovery: Recovery | None = None
    # Lower bound of the retransmission timeout: 200 ms, as Linux and ns-3 (RFC 6298 §2.4 says
    # 1 s). At most `max_rto`.
    min_rto: Time | None = None
    # Retransmission timeout before the first RTT sample: 1 s (RFC 6298 §2.1).
    initial_rto: Time | None = None
    # Upper bound of the backed-off retransmission timeout: 60 s (RFC 6298 §2.5: a maximum, if
    # any, of at least 60 s).
    max_rto: Time | None = None
    # Receive window, bytes: the sender keeps at most this much unacknowledged data outstanding;
    # unset, no limit (the congestion window alone). At least `mss`.
    rwnd: ByteCount | None = None
    # Duplicate ACKs (with SACK: segments SACKed above a hole) after which a segment is deemed
    # lost: 3 (RFC 5681 §3.2, RFC 6675's DupThresh).
    dupthresh: Count = None
    # RTT measurement from echoed timestamps (RFC 7323 §4): true; false measures from send times
    # under Karn's rule. The option's 12 bytes stay counted in `header_bytes` either way.
    timestamps: Switch = None
    # HyStart++ (RFC 9406) in CUBIC's initial slow start: true; false is standard slow start.
    # Only CUBIC uses it.
    hystart: Switch = None
    # Retransmission timeout: "linux" (the default: SRTT + max(4·RTTVAR, min_rto), restarted when
    # the first outstanding segment is retransmitted) or "rfc6298" (RFC 6298 §2:
    # max(SRTT + 4·RTTVAR, min_rto), restarted only by new data acknowledged or a timeout).
    rto: Literal["linux", "rfc6298"] | None = None
    # RACK-TLP loss detection and tail loss probes (RFC 8985), with SACK: true, as Linux; false
    # leaves RFC 6675's DupThresh rule alone and a lost retransmission to the timeout.
    rack: Switch = None
    # Reno's window growth: "bytes" (the default: RFC 3465 byte counting, as Linux) or "per_ack"
    # (RFC 5681 per ACK, as ns-3's TcpNewReno: half a segment per RTT with delayed ACKs).
    ca_increase: Literal["bytes", "per_ack"] | None = None
    # The flight a fast recovery's reduction starts from (ssthresh = β·basis: Reno's β 1/2,
    # CUBIC's 0.7): "flight_size" (the default: RFC 5681 eq. (4), SND.NXT − SND.UNA, SACKed data
    # included), "pipe" (RFC 6675's estimate of the data still in the network, as ns-3 passes its
    # controllers) or "cwnd" (the congestion window, as Linux; RFC 9438 §4.6 allows it where cwnd
    # cannot outgrow the flight, as RFC 7661 ensures, which the engine does not for an
    # application-limited flow). Where recoveries last several RTTs (an AQM dropping
    # retransmissions), β·FlightSize can exceed the window it reduces and CUBIC's window runs
    # away; "cwnd" cannot.
    ssthresh_from: Literal["flight_size", "pipe", "cwnd"] | None = None
    # Explicit Congestion Notification: "off" (default), "classic" (RFC 3168: ECT(0) data, ECE
    # from a CE arrival until CWR, one window reduction per round trip), "dctcp" (RFC 8257's
    # accurate echo: ECE on every ACK while the segments it covers were CE) or "l4s" (RFC 9331:
    # ECT(1) data, which a DualPI2 queue puts in its L queue, with dctcp's echo unless `accecn`;
    # the window's response is the controller's).
    ecn: Literal["off", "classic", "dctcp", "l4s"] | None = None
    # Accurate ECN feedback (RFC 9768, without its TCP Option): false (the default) or true, in
    # place of the `ecn` mode's feedback. The SYN asks with AE, CWR and ECE; the receiver counts
    # CE-marked segments and every ACK carries the count modulo 8 in those three flags, sent at
    # once when a mark follows an unmarked segment and at every second mark; the sender turns the
    # count's increase into marked packets and bytes. The codepoint and the response stay the
    # mode's: "l4s" with accecn is the feedback TCP Prague is specified with. Needs `ecn` on.
    accecn: Switch = None
    # Pacing of a window-based controller by the sender, as Linux's internal pacing: false (the
    # default: a window leaves as fast as the ACKs release it); true: at `pacing_ss_ratio` ·
    # cwnd/SRTT while cwnd is below half of ssthresh, `pacing_ca_ratio` · cwnd/SRTT after. BBR
    # always paces at its own rate.
    pacing: Switch = None
    # The pacing rate's ratio to cwnd/SRTT in slow start: 2 (Linux's tcp_pacing_ss_ratio, 200 %).
    pacing_ss_ratio: Ratio | None = None
    # The pacing rate's ratio to cwnd/SRTT after slow start: 1.2 (Linux's tcp_pacing_ca_ratio,
    # 120 %).
    pacing_ca_ratio: Ratio | None = None
    # TCP Prague's reduced RTT-dependence (draft-briscoe-iccrg-prague-congestion-control §2.4.4):
    # true (the default, as the draft's reference implementation): after 500 round trips out of
    # slow start, a flow whose RTT is below 25 ms grows as a 25 ms flow would and answers ECN at
    # most once per 25 ms. Prague only, over TCP or QUIC alike (an option of the controller, set
    # here for a QUIC flow too).
    prague_rtt_independence: Switch = None
    # TCP Prague's fall-back on detecting a classic (RFC 3168) ECN AQM: false (the default, as the
    # reference implementation); true raises α toward a Reno-friendly reduction where the RTT's
    # variation and standing queue say the bottleneck is classic (Briscoe and Ahmed 2019).
    # Prague only, over TCP or QUIC alike.
    prague_classic_fallback: Switch = None


class FlowDefaults(_Model):
    """Values every flow takes unless it sets its own."""

    # Congestion controller: "reno" (RFC 5681; "newreno" is the same controller), "cubic" (RFC
    # 9438), "highspeed" (RFC 3649), "bbr" (BBR v1,
    # draft-cardwell-iccrg-bbr-congestion-control-00), "dctcp" (RFC 8257; needs TCP with
    # `tcp.ecn = "dctcp"` and an ECN-marking queue to be of use), "prague" (TCP Prague,
    # draft-briscoe-iccrg-prague-congestion-control; needs TCP with `tcp.ecn = "l4s"` or QUIC with
    # `quic.ecn = "l4s"`, at its best behind DualPI2) or "vegas" (TCP Vegas, Brakmo and Peterson
    # 1995); ns-3's names (TcpNewReno, ...) too. Unset: `[flow_defaults]`'s, else reno.
    cca: Controller | None = None
    # Transport protocol: "tcp" (default) or "quic".
    transport: Literal["tcp", "quic"] | None = None
    # QUIC options (RFC 9000, RFC 9002 loss detection), used with `transport = "quic"`; an unset
    # option takes `[flow_defaults]`'s, then the engine's default.
    quic: Annotated[QuicOptions | None, model_on_first_use(".quic:QuicOptions")] = None
    # What the application sends: "greedy" (the default: unlimited data until `stop`) or a
    # traffic table (a finite transfer, or a CBR or on/off datagram source).
    traffic: TrafficField | None = None
    # When the sender sends its SYN: a time (default 0 s), or a distribution each flow draws its
    # own start from (jittered starts, one draw per flow, different for every seed). Before
    # `duration`.
    start: StartField | None = None
    # When the application stops writing (greedy) or gives up; unset, the end of the run. After
    # `start`.
    stop: Time | None = None
    # The flow's two-way propagation delay, in a dumbbell only: its access delays are chosen to
    # give it exactly. A whole even number of ns, at least twice the bottleneck delay.
    rtt: PositiveTime | None = None
    # TCP options; an unset option takes `[flow_defaults]`'s, then the engine's default.
    tcp: TcpOptions | None = None


class Flow(FlowDefaults):
    """A one-way TCP transfer from host `src` to host `dst`; any key it leaves unset comes from
    `[flow_defaults]`.

    In a dumbbell, `src`/`dst` are optional host names (default src_i, dst_i) and `rtt` sets the
    flow's two-way propagation delay.
    """

    # The flow's name, unique among the flows; default "flow_<i>", i its index.
    name: OptionalName = None
    # Source host (where the data is sent from); in a dumbbell optional, default "src_<i>".
    src: str | None = None
    # Destination host (where the data goes, and the ACKs come from); in a dumbbell optional,
    # default "dst_<i>".
    dst: str | None = None


class Dumbbell(_Model):
    """K flows src_i -> left -> right -> dst_i sharing the bottleneck left -> right ("btl")."""

    # Selects the dumbbell.
    kind: Literal["dumbbell"]
    # The number of flows K, when they are not listed one by one under [[flows]].
    flows: FlowCount = None
    # Line rate of the bottleneck link left – right ("btl"), both directions.
    bottleneck_rate: Rate
    # One-way propagation delay of the bottleneck; default a quarter of the smallest flow RTT
    # (rounded down to a ns). Every flow's RTT must be at least twice it.
    bottleneck_delay: Time | None = None
    # Bottleneck queue (at `left`, toward `right`); `reverse_queue` defaults to the same.
    queue: QueueField
    # Queue at `right` toward `left`, the direction of the ACKs; default the same as `queue`.
    reverse_queue: QueueField | None = None
    # Probability that a packet is lost on the bottleneck, independently per packet, in both
    # directions; `loss_model` gives bursty loss instead.
    loss: Probability = 0.0
    # A Gilbert–Elliott bursty loss model on the bottleneck (both directions) instead of `loss`.
    loss_model: LossModelField | None = None
    # Rate of every access link; default ten times the bottleneck rate (1 Gb/s for the reference
    # 100 Mb/s dumbbell), "unlimited" sends in no time.
    access_rate: OptionalRate | None = None
    # Queue of every access link, both directions; default a FIFO of 1000 packets.
    access_queue: QueueField | None = None
    # Default RTT of every flow: a time, or a distribution every flow draws its own RTT from.
    rtt: RttField | None = None


# Keys each generator kind needs, and the keys it may have besides the common ones.
GENERATOR_KEYS = {
    "persistent": ({"flows"}, set()),
    "poisson": ({"arrivals_per_s", "size"}, set()),
    "closed_loop": ({"users", "size", "think"}, set()),
    "cbr": ({"rate"}, {"packet"}),
    "onoff": ({"rate", "on", "off"}, {"packet"}),
}
GENERATOR_COMMON_KEYS = {"name", "kind", "sources", "dst", "cca", "tcp", "start", "stop"}


if TYPE_CHECKING:  # pragma: no cover
    Topology = Dumbbell | Tree | ParkingLot
else:  # the field's schema is `_topology`'s, whatever the type: the models need not exist yet
    Topology = Any
# The kinds of `[topology]`. The tree's and the parking lot's models (`spec.topology`) are imported
# with the first scenario of their kind, not by every run of a dumbbell.
TOPOLOGY_KINDS = ("dumbbell", "tree", "parking_lot")


def _topology_model(kind: str) -> "type[Topology]":
    if kind == "dumbbell":
        return Dumbbell
    from .topology import ParkingLot, Tree

    return Tree if kind == "tree" else ParkingLot


def _topology(value: Any, info: ValidationInfo) -> Topology:
    """A `[topology]` table, by its kind (errors name `topology.<key>`, no union tags)."""
    if isinstance(value, Dumbbell):
        return value
    if not isinstance(value, dict):
        from .topology import ParkingLot, Tree

        if isinstance(value, (Tree, ParkingLot)):
            return value
        raise SpecError("", f"expected a table with a kind ({', '.join(TOPOLOGY_KINDS)}), got {value!r}")
    kind = value.get("kind")
    if not isinstance(kind, str) or kind not in TOPOLOGY_KINDS:  # a list or table is no kind
        raise SpecError("kind", f'unknown topology "{kind}" (known: {", ".join(TOPOLOGY_KINDS)})')
    try:
        return _topology_model(kind).model_validate(value, context=info.context)
    except ValidationError as e:
        raise from_validation_error(e) from None


TopologyField = Annotated[Topology, Parsed(_topology, lambda t: t.model_dump(mode="json", exclude_unset=True),
                                             info=True)]


# The largest spec file read: far above any real one, far below what would strain memory; a
# "file" that never ends (/dev/zero, a pipe fed forever) is refused at this size.
MAX_SPEC_BYTES = 16 * 2**20


def read_text_file(path: Path) -> str:
    """A spec file's text, at most `MAX_SPEC_BYTES` of it; SpecError naming the file if it cannot
    be read or is larger."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SPEC_BYTES + 1)
        if len(data) > MAX_SPEC_BYTES:
            raise SpecError(str(path), f"more than {MAX_SPEC_BYTES // 2**20} MB: not a spec file")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise SpecError(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(str(path), f"cannot read: {e}") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text as a mapping; SpecError naming `source` if it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(source, f"invalid TOML: {e}") from None


class _Validation:
    """The resolution `Scenario.from_dict` computed to validate a scenario, kept for the first
    `Scenario.resolve()` of that same scenario (`plan`'s), so that a run resolves its spec once
    (its cost grows with the flows and links a topology expands to).

    It cannot go stale: it is handed out only while the scenario's contents (every field, and
    which fields were set) are what was resolved, only to the scenario it was made for (a copy,
    which shares the holder, resolves afresh), and only once, so no two callers share one
    mutable `Resolved`. Copies and pickles of a scenario carry an empty holder."""

    __slots__ = ("owner", "contents", "resolved")

    def __init__(self) -> None:
        self.owner: Any = None
        self.contents: Any = None
        self.resolved: Resolved | None = None

    def keep(self, owner: "Scenario", resolved: Resolved) -> None:
        self.owner, self.contents, self.resolved = weakref.ref(owner), _contents(owner), resolved

    def take(self, owner: "Scenario") -> Resolved | None:
        """The kept resolution if it is `owner`'s and `owner` is unchanged (then forgotten), else None."""
        resolved, made_for, contents = self.resolved, self.owner, self.contents
        self.owner = self.contents = self.resolved = None
        if resolved is None or made_for is None or made_for() is not owner or _contents(owner) != contents:
            return None
        return resolved

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Validation":
        return _Validation()

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_Validation, ())


def _contents(scenario: "Scenario") -> tuple[dict[str, Any], dict[str, Any]]:
    """What a resolution depends on: every field's value (distributions by identity, as they are
    immutable), and the fields set by the spec (an unset option takes a default)."""
    return scenario.model_dump(), scenario.model_dump(exclude_unset=True)


class Scenario(_Model):
    """One experiment: topology, flows, duration and seed."""

    # A label for the scenario's runs (stored as the run's name); it changes nothing simulated.
    name: str | None = None
    # Free text about the scenario, kept with its spec; never simulated.
    description: str | None = None
    # Seed of every random stream of the run: random and bursty link loss, RTT and start draws,
    # generators, on/off periods, and the random choices of RED, PIE, Blind-SplitBuff and BBR. A
    # spec that draws no random number runs the same under every seed.
    seed: Seed = 1
    # Simulated time at which the run stops; every flow starts before it.
    duration: PositiveTime
    # Time-series sampling interval ("10ms"); "off" records no time series. `[record]`'s
    # `interval` is the same setting: give one of the two.
    sample_interval: SampleInterval = DEFAULT_SAMPLE_INTERVAL_NS
    # The channel the summary reports as bottleneck: "<link>_forward", "<link>_backward" or a link
    # name (its forward direction). Default: the slowest channel that carried traffic.
    bottleneck: str | None = None
    # A common shape ("dumbbell", "tree", "parking_lot") that builds the nodes and links; without
    # it, `nodes` and `links` give a general graph.
    topology: TopologyField | None = None
    # Empty lists as defaults: pydantic copies a default that cannot be hashed for each model, so
    # none is shared. (`Field(default_factory=list)` would do the same, but pydantic inspects the
    # signature of the factory, and that of a builtin type is parsed from its text at every fresh
    # run.)

    # The nodes of a general graph (not with `[topology]`, which builds its own).
    nodes: list[Node] = []
    # The links of a general graph, between `nodes` (not with `[topology]`).
    links: list[Link] = []
    # Values every flow and generator takes unless it sets its own.
    flow_defaults: FlowDefaults | None = None
    # The flows, each a one-way transfer between two hosts. A dumbbell may count them instead
    # (`topology.flows`); a parking lot without flows or generators gets its own (the long flow
    # and a cross flow per hop).
    flows: list[Flow] = []
    # Packet captures: every packet that starts transmission on the given link direction is
    # recorded.
    captures: Annotated[list[Capture], model_on_first_use(".recording:Capture", many=True)] = []
    # Traffic generators, which spread flows (persistent, Poisson, closed-loop, datagram) over
    # source hosts.
    generators: Annotated[list[Generator], model_on_first_use(".generators:Generator", many=True)] = []
    # What the time series record: the sampling interval, which flows and which links.
    record: Annotated[Record | None, model_on_first_use(".recording:Record")] = None
    # Free-form labels (e.g. ccperf's --experiment-name); stored, never simulated.
    meta: dict[str, str | int | float | bool] = {}
    # The resolution made while validating, for the first `resolve()` (see `_Validation`).
    _validation: _Validation = PrivateAttr(default_factory=_Validation)

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, base_dir: Path | None = None) -> "Scenario":
        """Validate a plain mapping (the TOML/JSON form); raises SpecError. Relative file names in
        it (empirical distributions) are taken from `base_dir`, else from the working directory."""
        try:
            scenario = cls.model_validate(data, context={"base_dir": base_dir})
        except ValidationError as e:
            raise from_validation_error(e) from None
        # Cross-field checks (names, RTTs, times) fail here, not at run time; the resolution is
        # kept for the run's plan.
        scenario._validation.keep(scenario, scenario.resolve())
        return scenario

    @classmethod
    def from_toml_text(cls, text: str, source: str = "scenario", base_dir: Path | None = None) -> "Scenario":
        return cls.from_dict(parse_toml(text, source), base_dir)

    @classmethod
    def from_toml(cls, path: str | Path) -> "Scenario":
        path = Path(path)
        return cls.from_toml_text(read_text_file(path), source=str(path), base_dir=path.parent)

    def to_dict(self) -> dict[str, Any]:
        """The TOML/JSON form, units as text; `Scenario.from_dict` gives this scenario back."""
        return self.model_dump(mode="json", exclude_unset=True)

    def with_seed(self, seed: int) -> "Scenario":
        data = self.to_dict()
        data["seed"] = seed
        return Scenario.from_dict(data)

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Scenario":
        """A copy with fields changed by path, validated exactly like a file (see `overrides`):
        ``s.with_overrides({"topology.queue": "500p", "flows[0].cca": "cubic"})``."""
        from .overrides import apply_overrides

        return Scenario.from_dict(apply_overrides(self.to_dict(), overrides))

    # --- resolution -------------------------------------------------------------------------

    def to_engine(self) -> dict[str, Any]:
        return self.resolve().engine

    def to_engine_json(self) -> str:
        return self.resolve().to_json()

    def resolve(self) -> Resolved:
        """Resolve into the engine's ScenarioSpec; raises SpecError for cross-field problems. Each
        call returns a `Resolved` of its own (the first after `from_dict` the one its validation
        made, if the scenario is unchanged since)."""
        kept = self._validation.take(self)
        if kept is not None:
            return kept
        return self._resolve()

    def _resolve(self) -> Resolved:
        rtts: list[int | None] = []
        if self.topology is not None:
            for key in ("nodes", "links"):
                if getattr(self, key):
                    raise SpecError(key, f"a {self.topology.kind} topology builds its own nodes and links: "
                                         "give either [topology] or nodes/links")
        bottleneck: str | None
        nodes: Sequence[Node | Host]
        links: Sequence[Link | AccessLink]
        flows: Sequence[Flow | CountedFlow]
        if isinstance(self.topology, Dumbbell):
            nodes, links, flows, bottleneck, rtts = _expand_dumbbell(self, self.topology)
            aliases = _dumbbell_aliases(self.topology)
        elif self.topology is not None:
            _no_rtts(self, self.flows)
            from .topology import Tree, build_parking_lot, build_tree

            graph = (build_tree(self.topology, DEFAULT_QUEUE) if isinstance(self.topology, Tree)
                     else build_parking_lot(self.topology, DEFAULT_QUEUE))
            nodes, links = _graph_nodes_links(graph)
            flows = list(self.flows)
            if not flows and not self.generators:
                flows = [Flow(**f) for f in graph.default_flows]
            bottleneck, aliases = graph.bottleneck, graph.aliases
        else:
            nodes, links, flows = self.nodes, self.links, self.flows
            _no_rtts(self, flows)
            bottleneck, aliases = None, {}
        # engine_spec imports this module's models, so it is imported here, not at the top.
        from .engine_spec import build_engine_spec

        try:
            resolved = build_engine_spec(self, nodes, links, flows, bottleneck, aliases)
        except SpecError as e:  # a field of a generated link is the user's topology key
            raise type(e)(user_field(aliases, e.field), e.reason) from None
        resolved.flow_rtts_ns = rtts + [None] * (len(resolved.flow_names) - len(rtts))
        if isinstance(self.topology, Dumbbell):
            resolved.dumbbell_flows = len(flows)
        if isinstance(self.topology, Dumbbell) and isinstance(self.topology.rtt, Dist):
            resolved.random_draws.insert(0, "topology.rtt")
        return resolved


def _no_rtts(s: Scenario, flows: list[Flow]) -> None:
    for i, flow in enumerate(flows):
        if flow.rtt is not None:
            raise SpecError(f"flows[{i}].rtt", "only a dumbbell topology derives delays from RTTs")
    if s.flow_defaults is not None and s.flow_defaults.rtt is not None:
        raise SpecError("flow_defaults.rtt", "only a dumbbell topology derives delays from RTTs")


def _graph_nodes_links(graph: "Graph") -> tuple[list[Node], list[Link]]:
    nodes = [Node(**n) for n in graph.nodes]
    links = []
    for link in graph.links:
        fields = dict(link, rate=units.format_rate(link["rate"]), delay=units.format_time(link["delay"]))
        links.append(Link(**fields))
    return nodes, links


def start_sampler(seed: int) -> Callable[[Dist], int]:
    """Draws of jittered start times, one per call, in flow order, from numpy's PCG64 seeded with
    ``SeedSequence([seed, START_STREAM])``, each rounded to a whole ns (never negative)."""
    rngs: list[Any] = []  # the generator, made at the first draw: most specs draw nothing

    def draw(dist: Dist) -> int:
        if not rngs:
            import numpy as np

            rngs.append(np.random.default_rng(np.random.SeedSequence([seed, START_STREAM])))
        return max(0, int(round(float(dist.draw(rngs[0], 1)[0]))))
    return draw


def draw_rtts(dist: Dist, seed: int, n: int) -> list[int]:
    """`n` RTTs (ns) from `dist`, each rounded to a whole even number of ns (at least 2): the
    draws of a dumbbell whose `topology.rtt` is a distribution (see the module docstring)."""
    import numpy as np  # only specs that draw need it

    rng = np.random.default_rng(np.random.SeedSequence([seed, RTT_STREAM]))
    draws = dist.draw(rng, n)
    return [max(2, 2 * int(round(float(x) / 2))) for x in draws]


# --- dumbbell -----------------------------------------------------------------------------------

class Host(NamedTuple):
    """A host a dumbbell adds for a flow, as the engine spec reads a `Node` (its name is the flow's
    src or dst, or src_i / dst_i, never empty: nothing for a model to check)."""

    name: str
    kind: Literal["host"] = "host"


class AccessLink(NamedTuple):
    """A dumbbell's access link, as the engine spec reads a `Link`: the checked access rate and
    queue (`topology.access_rate`, `topology.access_queue`), its own name, ends and delay (>= 0 ns,
    from `split_access_delays`), no loss, no bleaching."""

    name: str
    a: str
    b: str
    rate: int | None
    delay: int
    queue: Queue
    loss: float = 0.0
    loss_model: LossModel | None = None
    ecn_bleach: bool | None = None
    queue_forward: Queue | None = None
    queue_backward: Queue | None = None


class CountedFlow(NamedTuple):
    """A flow `topology.flows` counts, as the engine spec reads a `Flow`: its ends, and every
    other key unset (taken from `[flow_defaults]`)."""

    src: str
    dst: str
    name: None = None
    cca: None = None
    transport: None = None
    traffic: None = None
    start: None = None
    stop: None = None
    tcp: None = None
    quic: None = None


def _expand_dumbbell(s: Scenario, topo: Dumbbell) -> tuple[list[Node | Host], list[Link | AccessLink],
                                                            list[Flow | CountedFlow], str, list[int | None]]:
    if topo.flows is not None and s.flows and topo.flows != len(s.flows):
        raise SpecError("topology.flows", f"{topo.flows} flows, but {len(s.flows)} are listed in [[flows]]")
    # The flows `topology.flows` counts are all the one empty flow (only read, never changed).
    counted = Flow()
    flows = list(s.flows) if s.flows else [counted] * (topo.flows or 0)
    if not flows:
        raise SpecError("topology.flows", "a dumbbell needs flows: set topology.flows = K or list [[flows]]")
    defaults = s.flow_defaults or FlowDefaults()

    # Each flow's RTT and where it came from (for the error message).
    rtts: list[tuple[int, str]] = []
    drawing = isinstance(topo.rtt, Dist)
    drawn = iter(draw_rtts(topo.rtt, s.seed, sum(1 for f in flows if f.rtt is None and defaults.rtt is None))
                 if isinstance(topo.rtt, Dist) else [])
    for i, flow in enumerate(flows):
        if flow.rtt is not None:
            rtts.append((flow.rtt, f"flows[{i}].rtt"))
        elif defaults.rtt is not None:
            rtts.append((defaults.rtt, "flow_defaults.rtt"))
        elif drawing:
            rtts.append((next(drawn), f"topology.rtt (the draw of flows[{i}])"))
        elif topo.rtt is not None:
            assert isinstance(topo.rtt, int)
            rtts.append((topo.rtt, "topology.rtt"))
        else:
            raise SpecError(f"flows[{i}].rtt", "missing: set the flow's rtt, flow_defaults.rtt or topology.rtt")

    d_btl = topo.bottleneck_delay if topo.bottleneck_delay is not None else min(r for r, _ in rtts) // 4
    if drawing:
        # A draw below twice a given bottleneck delay cannot be realised: it is raised to it.
        rtts = [(max(r, 2 * d_btl), where) if "draw" in where else (r, where) for r, where in rtts]
    access_rate = topo.access_rate if "access_rate" in topo.model_fields_set else topo.bottleneck_rate * 10
    access_queue = topo.access_queue or DEFAULT_QUEUE

    nodes = [Node(name="left", kind="router"), Node(name="right", kind="router")]
    # The links in the form a spec writes them (rates and delays as text), validated as [[links]] are.
    links = [Link.model_validate(dict(name="btl", a="left", b="right", rate=units.format_rate(topo.bottleneck_rate),
                                      delay=units.format_time(d_btl), loss=topo.loss, loss_model=topo.loss_model,
                                      queue_forward=topo.queue, queue_backward=topo.reverse_queue or topo.queue))]
    # The access links are copies of one model with their own names, ends and delays: the values
    # are already checked (a validated rate, a delay >= 0 in ns, a validated queue) and are what
    # validating "10Gbps" and "5ms" again would give; the access links, their hosts and the flows
    # the topology counts are not models at all (`AccessLink`, `Host`, `CountedFlow`), since a
    # model per host, link and flow would be most of a large dumbbell's resolution.
    hosts: list[Host] = []
    access: list[AccessLink] = []
    expanded: list[Flow | CountedFlow] = []
    for i, (flow, (rtt, where)) in enumerate(zip(flows, rtts)):
        src, dst = flow.src or f"src_{i}", flow.dst or f"dst_{i}"
        d_src, d_dst = split_access_delays(rtt, d_btl, where)
        hosts += [Host(src), Host(dst)]
        access += [AccessLink(f"access_{src}", src, "left", access_rate, d_src, access_queue),
                   AccessLink(f"access_{dst}", "right", dst, access_rate, d_dst, access_queue)]
        expanded.append(CountedFlow(src, dst) if flow is counted else
                        flow.model_copy(update={"src": src, "dst": dst, "rtt": None}))
    return [*nodes, *hosts], [*links, *access], expanded, "btl_forward", [r for r, _ in rtts]


def _dumbbell_aliases(topo: Dumbbell) -> dict[str, str]:
    """Where a dumbbell's generated links come from: link 0 is the bottleneck, every other an
    access link (``links[*]``: one alias for them all, not four per link, which were ~1 kB of a
    large dumbbell's resolution per flow)."""
    reverse = "topology.reverse_queue" if topo.reverse_queue is not None else "topology.queue"
    return {"links[0]": "topology", "links[0].queue_forward": "topology.queue",
            "links[0].queue_backward": reverse, "links[0].rate": "topology.bottleneck_rate",
            "links[0].delay": "topology.bottleneck_delay", "links[0].loss": "topology.loss",
            "links[0].loss_model": "topology.loss_model",
            "links[*]": "topology", "links[*].rate": "topology.access_rate",
            "links[*].queue_forward": "topology.access_queue", "links[*].queue_backward": "topology.access_queue",
            # The same access links, and the flows the topology counts, as the engine spec's columns
            # (`spec.resolved.json_members`): a value is named as in their listed form.
            "many_flows.rate": "topology.access_rate",
            "many_flows.queue": "topology.access_queue", "many_flows.delays[*][0]": "topology.delay",
            "many_flows.delays[*][1]": "topology.delay", "many_flows.starts[*]": "flow_defaults.start",
            "many_flows.flow": "flow_defaults"}


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


def load_scenario(source: str | Path | dict[str, Any] | Scenario) -> "Scenario":
    """A Scenario from a TOML path, a mapping, or a Scenario (returned as is)."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, dict):
        return Scenario.from_dict(source)
    return Scenario.from_toml(source)

