"""Units, parsed once: text such as "80Mbps", "15ms", "18p" or "1.25MB" becomes an integer in the
engine's base units (bits per second, nanoseconds, bytes or packets).

Conventions (all prefixes are decimal SI, as in ns-3's DataRate and in the seeds: seed 004 calls
1.25 MB the BDP of 100 Mbit/s x 100 ms, which is 1.25e6 bytes):

* rates: ``<number><prefix><unit>`` with prefix ``k|K`` (1e3), ``m|M`` (1e6), ``g|G`` (1e9),
  ``t|T`` (1e12) and unit ``bps``, ``bit`` or ``b/s`` for bits per second, ``Bps`` or ``B/s`` for
  bytes per second. So "100mbit" is 100e6 bit/s. (Unlike tc, lowercase "mbps" means megaBITs per
  second: the case of the ``b``/``B`` alone decides bits or bytes.) ``"unlimited"`` where allowed.
* times: ``s``, ``ms``, ``us`` (or ``µs``), ``ns``.
* sizes: ``p`` (also ``pkt``, ``pkts``, ``packets``) counts packets; ``B`` bytes with the decimal
  prefixes ``kB|KB`` (1e3), ``MB`` (1e6), ``GB`` (1e9), or the binary ones ``KiB`` (1024),
  ``MiB``, ``GiB``. A lowercase ``b`` in a size is an error (bits are not a size).

Every quantity must come out as a whole number of base units (no silent rounding): "1.5ns" is an
error. Errors are ``UnitError`` (a ``ValueError``) with a one-line reason that quotes the text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = [
    "UnitError",
    "QueueLimit",
    "parse_rate",
    "parse_time",
    "parse_size",
    "parse_bytes",
    "parse_fraction",
    "parse_probability",
    "format_rate",
    "format_time",
    "format_size",
    "format_bytes",
]


class UnitError(ValueError):
    """A quantity that could not be parsed; the message is the reason, without the field name."""


_NUMBER_AND_UNIT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*?)\s*$")

_DECIMAL_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6,
                   "g": 10**9, "G": 10**9, "t": 10**12, "T": 10**12}

# Rate unit suffix -> bits per unit (after the prefix).
_RATE_UNITS = {"bps": 1, "bit": 1, "b/s": 1, "Bps": 8, "B/s": 8}
_TIME_UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "µs": 10**3, "ns": 1}
_PACKET_UNITS = ("p", "pkt", "pkts", "packet", "packets")
_BYTE_UNITS = {"B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9,
               "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _split(text: object, what: str) -> tuple[Decimal, str]:
    """Split "12.5ms" into (Decimal("12.5"), "ms"); the number is mandatory."""
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"expected a {what} as text with a unit, like {_EXAMPLE[what]}, got {text!r}")
    match = _NUMBER_AND_UNIT.match(text)
    if match is None:
        raise UnitError(f'not a {what}: "{text}" (expected a number and a unit, like {_EXAMPLE[what]})')
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:  # pragma: no cover - the regex only lets valid decimals through
        raise UnitError(f'not a number in "{text}"') from None
    return number, match.group(2)


_EXAMPLE = {"rate": '"80Mbps"', "time": '"15ms"', "size": '"100p" or "1.25MB"', "byte size": '"1.25MB"'}


def _whole(number: Decimal, scale: int, text: str, base: str) -> int:
    value = number * scale
    if value != value.to_integral_value():
        raise UnitError(f'"{text}" is not a whole number of {base}')
    return int(value)


def _split_prefix(unit: str, units: dict[str, int]) -> tuple[int, int] | None:
    """Find (prefix multiplier, unit multiplier) for a unit such as "Mbps"; None if unknown."""
    for suffix, multiplier in units.items():
        if unit.endswith(suffix):
            prefix = unit[: -len(suffix)]
            if prefix in _DECIMAL_PREFIX:
                return _DECIMAL_PREFIX[prefix], multiplier
    return None


def parse_rate(text: object, *, allow_unlimited: bool = False) -> int | None:
    """Parse a bit rate into bits per second; "unlimited" gives None when allowed."""
    if allow_unlimited and isinstance(text, str) and text.strip().lower() in ("unlimited", "inf"):
        return None
    number, unit = _split(text, "rate")
    if unit == "":
        raise UnitError(f'missing rate unit in "{text}" (known: bps, kbps, Mbps, Gbps, bit, b/s, Bps)')
    found = _split_prefix(unit, _RATE_UNITS)
    if found is None:
        raise UnitError(f'unknown rate unit "{unit}" in "{text}" (known: bps, kbps, Mbps, Gbps, Tbps, '
                        f"mbit, Gb/s, MBps, ...)")
    bps = _whole(number, found[0] * found[1], str(text), "bits per second")
    if bps <= 0:
        raise UnitError(f'zero or negative rate "{text}"')
    return bps


def parse_time(text: object, *, positive: bool = False) -> int:
    """Parse a duration into nanoseconds ("0s" is allowed unless `positive`)."""
    number, unit = _split(text, "time")
    if unit == "":
        raise UnitError(f'missing time unit in "{text}" (known: s, ms, us, ns)')
    if unit not in _TIME_UNITS:
        raise UnitError(f'unknown time unit "{unit}" in "{text}" (known: s, ms, us, ns)')
    ns = _whole(number, _TIME_UNITS[unit], str(text), "nanoseconds")
    if ns < 0:
        raise UnitError(f'negative time "{text}"')
    if positive and ns == 0:
        raise UnitError(f'time must be positive, got "{text}"')
    return ns


@dataclass(frozen=True)
class QueueLimit:
    """A queue limit: exactly one of `packets` and `bytes` is set."""

    packets: int | None = None
    bytes: int | None = None

    def __str__(self) -> str:
        return format_size(self)


def parse_size(text: object) -> QueueLimit:
    """Parse a queue size: packets ("18p") or bytes ("1.25MB", "100KB", "1500B")."""
    number, unit = _split(text, "size")
    if unit == "":
        raise UnitError(f'missing size unit in "{text}" (known: p for packets; B, kB, MB, GB, KiB, MiB)')
    if unit in _PACKET_UNITS:
        packets = _whole(number, 1, str(text), "packets")
        if packets <= 0:
            raise UnitError(f'queue limit must be positive, got "{text}"')
        return QueueLimit(packets=packets)
    size = _parse_byte_unit(number, unit, str(text))
    if size <= 0:
        raise UnitError(f'queue limit must be positive, got "{text}"')
    return QueueLimit(bytes=size)


def parse_bytes(text: object, *, allow_zero: bool = False) -> int:
    """Parse an amount of bytes ("1.25MB"); a plain integer is taken as bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        size = text
    else:
        number, unit = _split(text, "byte size")
        if unit == "":
            raise UnitError(f'missing size unit in "{text}" (known: B, kB, MB, GB, KiB, MiB, GiB)')
        size = _parse_byte_unit(number, unit, str(text))
    if size < 0 or (size == 0 and not allow_zero):
        raise UnitError(f"size must be positive, got {text!r}")
    return size


def _parse_byte_unit(number: Decimal, unit: str, text: str) -> int:
    if unit in _BYTE_UNITS:
        return _whole(number, _BYTE_UNITS[unit], text, "bytes")
    if unit.lower() in {u.lower() for u in _BYTE_UNITS} or unit.endswith("b"):
        raise UnitError(f'unknown size unit "{unit}" in "{text}": sizes are in bytes, write B '
                        f"(kB, MB, KiB, ...), or p for packets")
    raise UnitError(f'unknown size unit "{unit}" in "{text}" (known: p; B, kB, MB, GB, KiB, MiB, GiB)')


def parse_fraction(value: object, what: str = 'a probability like 0.01 or "1%"') -> float:
    """A probability as written, a finite number (0.01) or a percentage ("1%"), whatever its
    range: the engine checks a spec's probabilities against theirs (a link's loss in [0, 1), a
    loss model's in [0, 1]) and names the field. `what` names the expected form in errors."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            p = float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise UnitError(f'not a percentage: "{value}"') from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        p = float(value)
    else:
        raise UnitError(f"expected {what}, got {value!r}")
    if not math.isfinite(p):  # JSON, the engine's input, has no NaN nor infinity
        raise UnitError(f"expected {what}, got {value!r}")
    return p


def parse_ratio(value: object) -> float:
    """A ratio as written, a finite number (1.2) or a percentage ("120%", as Linux's sysctls),
    whatever its range (the engine checks it and names the field)."""
    return parse_fraction(value, 'a ratio like 1.2 or "120%"')


def parse_probability(value: object) -> float:
    """A probability in [0, 1): a number (0.01) or a percentage ("1%")."""
    p = parse_fraction(value)
    if not 0.0 <= p < 1.0:
        raise UnitError(f"probability must be in [0, 1), got {value!r}")
    return p


def _format_decimal(value: int, scale: int) -> str:
    text = format((Decimal(value) / Decimal(scale)).normalize(), "f")
    return text


def format_rate(bps: int | None) -> str:
    """Exact inverse of parse_rate: 80_000_000 -> "80Mbps"."""
    if bps is None:
        return "unlimited"
    for prefix, scale in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if bps >= scale:
            return f"{_format_decimal(bps, scale)}{prefix}bps"
    return f"{bps}bps"


def format_time(ns: int) -> str:
    """Exact inverse of parse_time: 15_000_000 -> "15ms"."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            return f"{_format_decimal(ns, scale)}{unit}"
    return f"{ns}ns"


def format_bytes(n: int) -> str:
    """Exact inverse of parse_bytes (decimal prefixes): 1_250_000 -> "1.25MB"."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{_format_decimal(n, scale)}{unit}"
    return f"{n}B"


def format_size(limit: QueueLimit) -> str:
    if limit.packets is not None:
        return f"{limit.packets}p"
    assert limit.bytes is not None
    return format_bytes(limit.bytes)
