"""Units are parsed once, exactly, and errors say why."""

from __future__ import annotations

import pytest

from bufferlab import units
from bufferlab.units import QueueLimit, UnitError


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("50Mbps", 50_000_000),
        ("80Mbps", 80_000_000),
        ("1Gbps", 1_000_000_000),
        ("100mbit", 100_000_000),
        ("1.5Gb/s", 1_500_000_000),
        ("9600bps", 9600),
        ("64kbps", 64_000),
        ("10MBps", 80_000_000),
        (" 2.5 Mbps ", 2_500_000),
        ("1e3bps", 1000),
    ],
)
def test_rate_parses_to_bits_per_second(text: str, bps: int) -> None:
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0Mbps", 'zero or negative rate "0Mbps"'),
        ("-5Mbps", "zero or negative rate"),
        ("80", "missing rate unit"),
        ("80Mbs", 'unknown rate unit "Mbs"'),
        ("80Mibps", "unknown rate unit"),
        ("fast", "not a rate"),
        ("0.5bps", "not a whole number of bits per second"),
    ],
)
def test_bad_rate_is_rejected_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason):
        units.parse_rate(text)


def test_rate_must_be_text_not_a_bare_number() -> None:
    with pytest.raises(UnitError, match="with a unit"):
        units.parse_rate(80_000_000)


def test_unlimited_rate_only_where_allowed() -> None:
    assert units.parse_rate("unlimited", allow_unlimited=True) is None
    with pytest.raises(UnitError):
        units.parse_rate("unlimited")


@pytest.mark.parametrize(
    ("text", "ns"),
    [("15ms", 15_000_000), ("2ms", 2_000_000), ("1.5s", 1_500_000_000), ("100us", 100_000),
     ("100µs", 100_000), ("0s", 0), ("250ns", 250), ("0.125ms", 125_000)],
)
def test_time_parses_to_nanoseconds(text: str, ns: int) -> None:
    assert units.parse_time(text) == ns


@pytest.mark.parametrize(
    ("text", "reason"),
    [("15", "missing time unit"), ("15 min", 'unknown time unit "min"'), ("-1ms", "negative time"),
     ("1.5ns", "not a whole number of nanoseconds"), ("soon", "not a time")],
)
def test_bad_time_is_rejected_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason):
        units.parse_time(text)


def test_positive_time_rejects_zero() -> None:
    with pytest.raises(UnitError, match="must be positive"):
        units.parse_time("0s", positive=True)


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("18p", QueueLimit(packets=18)),
        ("100pkts", QueueLimit(packets=100)),
        ("1.25MB", QueueLimit(bytes=1_250_000)),  # seed 004: the BDP of 100 Mbit/s x 100 ms
        ("0.125MB", QueueLimit(bytes=125_000)),
        ("100KB", QueueLimit(bytes=100_000)),
        ("32kB", QueueLimit(bytes=32_000)),
        ("1500B", QueueLimit(bytes=1500)),
        ("64KiB", QueueLimit(bytes=65_536)),
    ],
)
def test_size_parses_to_packets_or_decimal_bytes(text: str, limit: QueueLimit) -> None:
    assert units.parse_size(text) == limit


@pytest.mark.parametrize(
    ("text", "reason"),
    [("0p", "queue limit must be positive"), ("0B", "queue limit must be positive"),
     ("100kb", "sizes are in bytes"), ("10", "missing size unit"), ("2.5p", "not a whole number of packets"),
     ("10 parsecs", 'unknown size unit "parsecs"')],
)
def test_bad_size_is_rejected_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason):
        units.parse_size(text)


@pytest.mark.parametrize("value", [0.0, 0.01, "1%", "0.5%"])
def test_probability_accepts_fraction_or_percent(value: object) -> None:
    p = units.parse_probability(value)
    assert 0.0 <= p < 1.0


@pytest.mark.parametrize("value", [1.0, -0.1, "101%", "lots", True])
def test_probability_outside_zero_one_is_rejected(value: object) -> None:
    with pytest.raises(UnitError):
        units.parse_probability(value)


@pytest.mark.parametrize("bps", [1, 999, 64_000, 80_000_000, 1_500_000_000, 123_456_789])
def test_rate_formats_back_exactly(bps: int) -> None:
    assert units.parse_rate(units.format_rate(bps)) == bps


@pytest.mark.parametrize("ns", [0, 1, 250, 100_000, 3_750_000, 15_000_000, 1_500_000_000, 1_000_000_001])
def test_time_formats_back_exactly(ns: int) -> None:
    assert units.parse_time(units.format_time(ns)) == ns


@pytest.mark.parametrize("limit", [QueueLimit(packets=10), QueueLimit(bytes=1_250_000), QueueLimit(bytes=1_000_001)])
def test_size_formats_back_exactly(limit: QueueLimit) -> None:
    assert units.parse_size(units.format_size(limit)) == limit
