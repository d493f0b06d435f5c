"""Pydantic field types for the scenario spec: each parses its text form once (see `units`) and
serialises back to the same text form, so a spec survives a TOML/JSON round trip unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import PlainSerializer, PlainValidator

from . import units
from .errors import SpecError
from .units import QueueLimit

__all__ = [
    "Rate",
    "OptionalRate",
    "Time",
    "PositiveTime",
    "SampleInterval",
    "ByteCount",
    "Probability",
    "Queue",
    "QueueField",
    "Traffic",
    "TrafficField",
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


Rate = Annotated[int, PlainValidator(_rate), PlainSerializer(units.format_rate, return_type=str)]
"""A bit rate, stored in bit/s: "80Mbps"."""

OptionalRate = Annotated[
    int | None,
    PlainValidator(_rate_or_unlimited),
    PlainSerializer(units.format_rate, return_type=str),
]
"""A bit rate or "unlimited" (None: zero transmission time)."""

Time = Annotated[int, PlainValidator(units.parse_time), PlainSerializer(units.format_time, return_type=str)]
"""A duration or instant, stored in ns: "15ms"; "0s" allowed."""

PositiveTime = Annotated[
    int,
    PlainValidator(lambda v: units.parse_time(v, positive=True)),
    PlainSerializer(units.format_time, return_type=str),
]


def _sample_interval(value: Any) -> int:
    if isinstance(value, str) and value.strip().lower() in ("off", "none"):
        return 0
    return units.parse_time(value, positive=True)


SampleInterval = Annotated[
    int,
    PlainValidator(_sample_interval),
    PlainSerializer(lambda ns: units.format_time(ns) if ns else "off", return_type=str),
]
"""Time-series sampling interval in ns; "off" (stored as 0) records no time series."""

ByteCount = Annotated[int, PlainValidator(units.parse_bytes), PlainSerializer(units.format_bytes, return_type=str)]
"""An amount of bytes: "1.25MB", or a plain integer of bytes."""

Probability = Annotated[float, PlainValidator(units.parse_probability)]
"""A probability in [0, 1): 0.01 or "1%"."""


# --- queues ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Queue:
    """An egress queue discipline. Only drop-tail FIFO exists so far."""

    limit: QueueLimit
    kind: Literal["fifo"] = "fifo"

    def to_engine(self) -> dict[str, Any]:
        return {"kind": self.kind, "limit_packets": self.limit.packets, "limit_bytes": self.limit.bytes}

    def __str__(self) -> str:
        return str(self.limit)


_QUEUE_KINDS = ("fifo",)


def parse_queue(value: Any) -> Queue:
    """ "100p" or {kind = "fifo", limit = "100p"}."""
    if isinstance(value, Queue):
        return value
    if isinstance(value, str):
        return Queue(limit=units.parse_size(value))
    if isinstance(value, dict):
        for key in value:
            if key not in ("kind", "limit"):
                raise SpecError(str(key), "unknown key")
        kind = value.get("kind", "fifo")
        if isinstance(kind, str) and kind.lower() in ("fifo", "fifoqueuedisc", "pfifo", "droptail"):
            kind = "fifo"
        if kind not in _QUEUE_KINDS:
            raise SpecError("kind", f'unknown queue discipline "{kind}" (known: {", ".join(_QUEUE_KINDS)})')
        if "limit" not in value:
            raise SpecError("limit", "missing required key")
        try:
            return Queue(limit=units.parse_size(value["limit"]))
        except units.UnitError as e:
            raise SpecError("limit", str(e)) from None
    raise SpecError("", f'expected a queue limit like "100p" or a table {{kind, limit}}, got {value!r}')


def _queue_out(queue: Queue) -> str | dict[str, str]:
    return str(queue.limit)


QueueField = Annotated[Queue, PlainValidator(parse_queue), PlainSerializer(_queue_out)]


# --- traffic --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Traffic:
    """What the application on a flow sends: "greedy" (until the stop time) or a finite transfer."""

    kind: Literal["greedy", "finite"]
    bytes: int | None = None

    def to_engine(self) -> dict[str, Any]:
        if self.kind == "greedy":
            return {"kind": "greedy"}
        return {"kind": "finite", "bytes": self.bytes}


def parse_traffic(value: Any) -> Traffic:
    """ "greedy", {kind = "greedy"} or {kind = "finite", bytes = "1MB"}."""
    if isinstance(value, Traffic):
        return value
    if isinstance(value, str):
        if value == "greedy":
            return Traffic(kind="greedy")
        raise SpecError("", f'unknown traffic model "{value}" (known: greedy, or a table '
                            '{kind = "finite", bytes = ...})')
    if not isinstance(value, dict):
        raise SpecError("", f'expected "greedy" or a table {{kind = "finite", bytes = ...}}, got {value!r}')
    for key in value:
        if key not in ("kind", "bytes"):
            raise SpecError(str(key), "unknown key")
    kind = value.get("kind")
    if kind == "greedy":
        if "bytes" in value:
            raise SpecError("bytes", 'a greedy flow has no size (use kind = "finite")')
        return Traffic(kind="greedy")
    if kind == "finite":
        if "bytes" not in value:
            raise SpecError("bytes", "missing required key (size of the transfer)")
        try:
            return Traffic(kind="finite", bytes=units.parse_bytes(value["bytes"]))
        except units.UnitError as e:
            raise SpecError("bytes", str(e)) from None
    raise SpecError("kind", f'unknown traffic model "{kind}" (known: greedy, finite)')


def _traffic_out(traffic: Traffic) -> str | dict[str, str]:
    if traffic.kind == "greedy":
        return "greedy"
    assert traffic.bytes is not None
    return {"kind": "finite", "bytes": units.format_bytes(traffic.bytes)}


TrafficField = Annotated[Traffic, PlainValidator(parse_traffic), PlainSerializer(_traffic_out)]


# --- names: controllers and recovery --------------------------------------------------------

# User-facing controller names -> the engine's CcaKind. NewReno (RFC 6582) is Reno's loss
# recovery when SACK is off, so both names select the engine's one AIMD controller ("reno").
# ccperf / ns-3 spell them TcpNewReno, TcpReno, TcpCubic, TcpHighSpeed and TcpBbr (seed 001);
# matching is case-insensitive.
_CONTROLLERS = {"reno": "reno", "newreno": "reno", "tcpreno": "reno", "tcpnewreno": "reno",
                "cubic": "cubic", "tcpcubic": "cubic",
                "highspeed": "highspeed", "hstcp": "highspeed", "tcphighspeed": "highspeed",
                "bbr": "bbr", "tcpbbr": "bbr"}
KNOWN_CONTROLLERS = ("reno", "newreno", "cubic", "highspeed", "bbr")

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


Controller = Annotated[str, PlainValidator(parse_controller)]
"""A congestion controller name as the user wrote it (reno, newreno, TcpNewReno, ...)."""

Recovery = Annotated[str, PlainValidator(parse_recovery)]
"""A loss-recovery name as the user wrote it (prr, classic, TcpPrrRecovery, ...)."""
