"""Pydantic field types for the scenario spec: each parses its text form once (see `units`) and
serialises back to the same text form, so a spec survives a TOML/JSON round trip unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal


from pydantic_core import core_schema

from .. import units
from ..errors import NoSuchField, SpecError
from .distributions import Dist, parse_distribution
from ..queues import Queue, QueueField
from .parsed import STR, TABLE, TEXT_OR_TABLE, Parsed, Prebuilt

__all__ = [
    "Rate",
    "OptionalRate",
    "Time",
    "PositiveTime",
    "SampleInterval",
    "ByteCount",
    "Probability",
    "PositiveCount",
    "Count",
    "Switch",
    "Name",
    "OptionalName",
    "Queue",
    "QueueField",
    "Traffic",
    "TrafficField",
    "LossModel",
    "LossModelField",
    "Controller",
    "Recovery",
    "parse_controller",
    "parse_recovery",
]


def _rate(value: Any) -> int:
    bps = units.parse_rate(value)
    assert bps is not None
    return bps


def _rate_or_unlimited(value: Any) -> int | None:
    return units.parse_rate(value, allow_unlimited=True)


Rate = Annotated[int, Parsed(_rate, units.format_rate, returns=STR)]
"""A bit rate, stored in bit/s: "80Mbps"."""

OptionalRate = Annotated[int | None, Parsed(_rate_or_unlimited, units.format_rate, returns=STR)]
"""A bit rate or "unlimited" (None: zero transmission time)."""

Time = Annotated[int, Parsed(units.parse_time, units.format_time, returns=STR)]
"""A duration or instant, stored in ns: "15ms"; "0s" allowed."""

PositiveTime = Annotated[int, Parsed(lambda v: units.parse_time(v, positive=True), units.format_time, returns=STR)]


def _sample_interval(value: Any) -> int:
    if isinstance(value, str) and value.strip().lower() in ("off", "none"):
        return 0
    return units.parse_time(value, positive=True)


SampleInterval = Annotated[int, Parsed(_sample_interval, lambda ns: units.format_time(ns) if ns else "off",
                                        returns=STR)]
"""Time-series sampling interval in ns; "off" (stored as 0) records no time series."""

ByteCount = Annotated[int, Parsed(units.parse_bytes, units.format_bytes, returns=STR)]
"""An amount of bytes: "1.25MB", or a plain integer of bytes."""

Probability = Annotated[float, Parsed(units.parse_fraction, inner=core_schema.float_schema())]
"""A probability: 0.01 or "1%" (the engine checks its range and names the field)."""

Ratio = Annotated[float, Parsed(units.parse_ratio, inner=core_schema.float_schema())]
"""A ratio: 1.2 or "120%" (the engine checks its range and names the field)."""

# Types pydantic knows, with their constraints applied once (`Prebuilt`): each validates as the
# pydantic spelling in its docstring does, errors included.

PositiveCount = Annotated[int | None, Prebuilt(core_schema.nullable_schema(core_schema.int_schema(strict=True, gt=0)))]
"""A whole number above 0, or unset: ``StrictInt | None = Field(default=None, gt=0)`` (not "3",
3.0 or true)."""

Count = Annotated[int | None, Prebuilt(core_schema.nullable_schema(core_schema.int_schema(strict=True)))]
"""A whole number, or unset: ``StrictInt | None = None`` (not "3", 3.0 or true). For an option
whose range the engine checks (and names the field): a TCP or QUIC count, sub-buffers."""

Switch = Annotated[bool | None, Prebuilt(core_schema.nullable_schema(core_schema.bool_schema(strict=True)))]
"""true or false, or unset: ``StrictBool | None`` (not 1 or "yes")."""

Name = Annotated[str, Prebuilt(core_schema.str_schema(min_length=1))]
"""A name that is not empty: ``str = Field(min_length=1)``."""

OptionalName = Annotated[str | None, Prebuilt(core_schema.nullable_schema(core_schema.str_schema(min_length=1)))]
"""A name that is not empty, or unset: ``str | None = Field(default=None, min_length=1)``."""


# --- traffic --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Traffic:
    """What the application on a flow sends: "greedy" (until the stop time), a finite transfer of
    `bytes`, or an unresponsive datagram source ("cbr" at `rate` in datagrams of `packet` bytes on
    the wire, or "onoff": the same during on periods drawn from `on`, silent during `off`)."""

    # "greedy": unlimited data until the flow's stop; "finite": a transfer of `bytes`, then FIN;
    # "cbr" or "onoff": an unresponsive datagram source (no congestion control, no ACKs).
    kind: Literal["greedy", "finite", "cbr", "onoff"]
    # Application bytes of a finite transfer.
    bytes: int | None = None
    # Sending rate of a datagram source, during its on periods for onoff.
    rate: int | None = None
    # Datagram size on the wire, IP and UDP headers included: 1500 bytes, a full Ethernet MTU.
    packet: int | None = None
    # Distribution of the lengths of the sending periods; a source starts with one.
    on: Dist | None = None
    # Distribution of the lengths of the silent periods.
    off: Dist | None = None

    def to_engine(self) -> dict[str, Any]:
        if self.kind == "greedy":
            return {"kind": "greedy"}
        if self.kind == "finite":
            return {"kind": "finite", "bytes": self.bytes}
        engine: dict[str, Any] = {"kind": "cbr" if self.kind == "cbr" else "on_off", "rate": self.rate,
                                  "packet": self.packet}
        if self.kind == "onoff":
            assert self.on is not None and self.off is not None
            engine.update(on=self.on.engine, off=self.off.engine)
        return engine


_TRAFFIC_KEYS = {"greedy": {"kind"}, "finite": {"kind", "bytes"}, "cbr": {"kind", "rate", "packet"},
                 "onoff": {"kind", "rate", "packet", "on", "off"}}
# A datagram's size on the wire when `packet` is not given: a full Ethernet MTU.
DEFAULT_DATAGRAM = 1500


def parse_traffic(value: Any) -> Traffic:
    """ "greedy", {kind = "greedy"}, {kind = "finite", bytes = "1MB"},
    {kind = "cbr", rate = "10Mbps", packet = "1500B"} or {kind = "onoff", rate, packet, on, off}."""
    if isinstance(value, Traffic):
        return value
    if isinstance(value, str):
        if value == "greedy":
            return Traffic(kind="greedy")
        raise SpecError("", f'unknown traffic model "{value}" (known: greedy, or a table '
                            '{kind = "finite", bytes = ...})')
    if not isinstance(value, dict):
        raise SpecError("", f'expected "greedy" or a table {{kind = "finite", bytes = ...}}, got {value!r}')
    kind = value.get("kind")
    if not isinstance(kind, str) or kind not in _TRAFFIC_KEYS:  # a list or table is no kind (nor a key)
        raise SpecError("kind", f'unknown traffic model "{kind}" (known: {", ".join(_TRAFFIC_KEYS)})')
    for key in value:
        if key not in _TRAFFIC_KEYS[kind]:
            if kind == "greedy" and key == "bytes":
                raise SpecError("bytes", 'a greedy flow has no size (use kind = "finite")')
            raise NoSuchField(str(key), "unknown key")
    if kind == "greedy":
        return Traffic(kind="greedy")
    if kind == "finite":
        if "bytes" not in value:
            raise SpecError("bytes", "missing required key (size of the transfer)")
        try:
            return Traffic(kind="finite", bytes=units.parse_bytes(value["bytes"]))
        except units.UnitError as e:
            raise SpecError("bytes", str(e)) from None
    if "rate" not in value:
        raise SpecError("rate", "missing required key (the sending rate)")
    try:
        rate = _rate(value["rate"])
    except units.UnitError as e:
        raise SpecError("rate", str(e)) from None
    try:
        packet = units.parse_bytes(value.get("packet", DEFAULT_DATAGRAM))
    except units.UnitError as e:
        raise SpecError("packet", str(e)) from None
    if kind == "cbr":
        return Traffic(kind="cbr", rate=rate, packet=packet)
    periods: dict[str, Dist] = {}
    for key in ("on", "off"):
        if key not in value:
            raise SpecError(key, "missing required key (a distribution of period lengths)")
        try:
            periods[key] = parse_distribution(value[key], "time")
        except SpecError as e:
            raise type(e)(f"{key}.{e.field}" if e.field else key, e.reason) from None
    return Traffic(kind="onoff", rate=rate, packet=packet, on=periods["on"], off=periods["off"])


def _traffic_out(traffic: Traffic) -> str | dict[str, Any]:
    if traffic.kind == "greedy":
        return "greedy"
    if traffic.kind == "finite":
        assert traffic.bytes is not None
        return {"kind": "finite", "bytes": units.format_bytes(traffic.bytes)}
    assert traffic.rate is not None and traffic.packet is not None
    out: dict[str, Any] = {"kind": traffic.kind, "rate": units.format_rate(traffic.rate),
                           "packet": units.format_bytes(traffic.packet)}
    if traffic.kind == "onoff":
        assert traffic.on is not None and traffic.off is not None
        out.update(on=traffic.on.written, off=traffic.off.written)
    return out


TrafficField = Annotated[Traffic, Parsed(parse_traffic, _traffic_out, returns=TEXT_OR_TABLE)]


# --- loss models ----------------------------------------------------------------------------

@dataclass(frozen=True)
class LossModel:
    """Gilbert–Elliott bursty loss on a link (each direction its own chain): Good → Bad with
    probability `p` per packet, Bad → Good with `r`; a packet is lost with `loss_good` in Good,
    `loss_bad` in Bad (defaults 0 and 1: Gilbert's model, bursts of mean length 1/r)."""

    # Probability per packet of a move from the Good state to the Bad one.
    p: float
    # Probability per packet of a move from the Bad state back to Good; with `loss_bad = 1`, loss
    # bursts last 1/r packets on average.
    r: float
    # Loss probability in the Good state: 0, as in Gilbert's model.
    loss_good: float = 0.0
    # Loss probability in the Bad state: 1, as in Gilbert's model. The long-run loss rate is
    # (r·loss_good + p·loss_bad)/(p + r).
    loss_bad: float = 1.0
    # The Gilbert–Elliott two-state Markov chain, stepped once per packet ("gilbert" names it too).
    kind: Literal["gilbert_elliott"] = "gilbert_elliott"

    def to_engine(self) -> dict[str, Any]:
        return {"kind": self.kind, "p": self.p, "r": self.r, "loss_good": self.loss_good, "loss_bad": self.loss_bad}


def parse_loss_model(value: Any) -> LossModel:
    if isinstance(value, LossModel):
        return value
    if not isinstance(value, dict):
        raise SpecError("", f'expected a table {{kind = "gilbert_elliott", p = ..., r = ...}}, got {value!r}')
    kind = value.get("kind")
    if kind not in ("gilbert_elliott", "gilbert"):
        raise SpecError("kind", f'unknown loss model "{kind}" (known: gilbert_elliott)')
    known = ("kind", "p", "r", "loss_good", "loss_bad")
    for key in value:
        if key not in known:
            raise NoSuchField(str(key), "unknown key")
    probabilities = {}
    for key in known[1:]:
        if key not in value:
            if key in ("p", "r"):
                raise SpecError(key, "missing required key (a transition probability per packet)")
            continue
        try:  # in [0, 1]: the engine checks the range (and that the chain can leave a lossy state)
            probabilities[key] = units.parse_fraction(value[key])
        except units.UnitError as e:
            raise SpecError(key, str(e)) from None
    return LossModel(p=probabilities["p"], r=probabilities["r"], loss_good=probabilities.get("loss_good", 0.0),
                     loss_bad=probabilities.get("loss_bad", 1.0))


def _loss_model_out(model: LossModel) -> dict[str, Any]:
    return {"kind": model.kind, "p": model.p, "r": model.r, "loss_good": model.loss_good, "loss_bad": model.loss_bad}


LossModelField = Annotated[LossModel, Parsed(parse_loss_model, _loss_model_out, returns=TABLE)]


# --- names: controllers and recovery --------------------------------------------------------

# User-facing controller names -> the engine's CcaKind. NewReno (RFC 6582) is Reno's loss
# recovery when SACK is off, so both names select the engine's one AIMD controller ("reno").
# ccperf / ns-3 spell them TcpNewReno, TcpReno, TcpCubic, TcpHighSpeed, TcpBbr (seed 001),
# TcpDctcp, TcpPrague and TcpVegas; ns-3 has no BBRv3, whose ccperf spelling here is TcpBbrV3. Matching is
# case-insensitive.
_CONTROLLERS = {"reno": "reno", "newreno": "reno", "tcpreno": "reno", "tcpnewreno": "reno",
                "cubic": "cubic", "tcpcubic": "cubic",
                "highspeed": "highspeed", "hstcp": "highspeed", "tcphighspeed": "highspeed",
                "bbr": "bbr", "tcpbbr": "bbr",
                "bbr3": "bbr3", "bbrv3": "bbr3", "tcpbbrv3": "bbr3", "tcpbbr3": "bbr3",
                "dctcp": "dctcp", "tcpdctcp": "dctcp",
                "prague": "prague", "tcpprague": "prague",
                "vegas": "vegas", "tcpvegas": "vegas"}
KNOWN_CONTROLLERS = ("reno", "newreno", "cubic", "highspeed", "bbr", "bbr3", "dctcp", "prague", "vegas")

_RECOVERIES = {"prr": "prr", "tcpprrrecovery": "prr", "classic": "classic", "tcpclassicrecovery": "classic"}
KNOWN_RECOVERIES = ("prr", "classic")


def parse_controller(value: Any) -> str:
    if isinstance(value, str) and value.lower() in _CONTROLLERS:
        return value
    raise SpecError("", f'unknown controller "{value}" (known: {", ".join(KNOWN_CONTROLLERS)})')


def parse_recovery(value: Any) -> str:
    if isinstance(value, str) and value.lower() in _RECOVERIES:
        return value
    raise SpecError("", f'unknown recovery "{value}" (known: {", ".join(KNOWN_RECOVERIES)})')


def engine_controller(name: str) -> str:
    return _CONTROLLERS[name.lower()]


def engine_recovery(name: str) -> str:
    return _RECOVERIES[name.lower()]


Controller = Annotated[str, Parsed(parse_controller, inner=core_schema.str_schema())]
"""A congestion controller name as the user wrote it (reno, newreno, TcpNewReno, ...)."""

Recovery = Annotated[str, Parsed(parse_recovery, inner=core_schema.str_schema())]
"""A loss-recovery name as the user wrote it (prr, classic, TcpPrrRecovery, ...)."""
