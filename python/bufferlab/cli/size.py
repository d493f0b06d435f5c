"""`bufferlab size`: every sizing rule the given inputs allow, as a table (or `--json`).

    bufferlab size --rate 100Mbps --rtt 10ms,990ms --packet 1KB
    bufferlab size --rate 50Mbps --rtt 120ms --flows 800
    bufferlab size --rate 10Gbps --rtt 100ms --flows 5000 --cca cubic
    bufferlab size --rate 100Mbps --packet 1287B --tp 1ms --ack 58B
    bufferlab size --rate 100Mbps --rtt 100ms --flows 10 --queue codel
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from .. import units
from ..errors import SpecError
from ..sizing.limits import SIZED_KINDS
from ..sizing.rules import MULTIPLICATIVE_DECREASE, BufferSize, size_rows
from .options import Number, listed, parsed

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

__all__ = ["size_command"]


def _rtts(values: tuple[str, ...]) -> list[int]:
    """`--rtt 10ms,990ms --rtt 50ms`: every RTT given, in order."""
    return [parsed("--rtt", lambda t: units.parse_time(t, positive=True), part)
            for part in (listed("--rtt", values, what="RTT") if values else [])]


def _controllers(values: tuple[str, ...]) -> list[str]:
    """`--cca reno,cubic`: the engine's controllers named, each once, in order; one without a
    constant multiplicative decrease (the (1 − β)/β rule's β) is bad input."""
    from ..spec.fields import engine_controller, parse_controller

    out: list[str] = []
    for name in listed("--cca", values, what="controller"):
        try:
            kind = engine_controller(parse_controller(name))
        except SpecError as e:
            raise SpecError("--cca", e.reason) from None
        if kind not in MULTIPLICATIVE_DECREASE:
            raise SpecError("--cca", f'"{name}": the (1 − β)/β rule is for the loss-based controllers that cut '
                                     "their window by a constant β: reno, newreno (β = 1/2) and cubic (β = 0.7)")
        if kind not in out:
            out.append(kind)
    return out


def _limit_meaning(kind: str, rate_bps: int, packet_bytes: int) -> str:
    """What a size means for a queue of `kind` with its defaults (`sizing.limits`)."""
    from ..queues import parse_queue
    from ..sizing.limits import limit_meaning

    queue = parse_queue("100p" if kind == "fifo" else {"kind": kind})
    return limit_meaning(queue, rate_bps, packet_bytes)


def _table(rows: list[tuple[BufferSize, str]], title: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for header in ("rule", "packets", "exact", "bytes", "ms at rate", "from"):
        table.add_column(header, justify="left" if header in ("rule", "from") else "right")
    for size, source in rows:
        table.add_row(size.rule, str(size.packets), f"{size.exact_packets:.2f}", str(size.bytes),
                      f"{size.ms:.3f}", source)
    return table


@click.command("size", short_help="Every buffer sizing rule for a link and its flows.")
@click.option("--rate", required=True, help='Link rate, e.g. "100Mbps".')
@click.option("--rtt", "rtt", multiple=True,
              help='Round-trip propagation delays of the flows ("10ms,990ms"; repeatable).')
@click.option("--flows", type=Number(1, whole=True), default=None,
              help="Long-lived flows N for the Stanford rule (default: one per --rtt).")
@click.option("--packet", default="1500B", show_default=True, help="Packet size on the wire (the data packet).")
@click.option("--tp", default=None, help="Seed 003: the bottleneck's one-way propagation delay.")
@click.option("--ack", default=None, help="Seed 003: the ACK's size on the wire.")
@click.option("--cca", "cca", multiple=True, default=("reno", "cubic"), show_default=True,
              help="The flows' loss-based controller(s) for the (1 − β)/β rule (Spang et al. 2021): reno or "
                   "newreno (β = 1/2), cubic (β = 0.7); comma-separated or repeated.")
@click.option("--sub-buffers", type=Number(2, 3, whole=True), default=2, show_default=True,
              help="SplitBuff's sub-buffers (2, or 3 with thresholds at RTTP ± σ/2).")
@click.option("--queue", "queue_kind", default="fifo", show_default=True,
              help=f"The queue the size is for: {', '.join(SIZED_KINDS)} (an AQM with its RFC defaults, whose "
                   "hard limit the sizes then are).")
@click.option("--json", "as_json", is_flag=True, help="Print the sizes as JSON.")
def size_command(rate: str, rtt: tuple[str, ...], flows: int | None, packet: str, tp: str | None, ack: str | None,
                 cca: tuple[str, ...], sub_buffers: int, queue_kind: str, as_json: bool) -> None:
    """How big should the buffer be? Every sizing rule the inputs allow, in packets, bytes and
    milliseconds of queueing at the link rate."""
    rate_bps = parsed("--rate", units.parse_rate, rate)
    packet_bytes = parsed("--packet", units.parse_bytes, packet)
    rtts_ns = _rtts(rtt)
    controllers = _controllers(cca)
    if queue_kind not in SIZED_KINDS:
        raise SpecError("--queue", f'"{queue_kind}": expected one of {", ".join(SIZED_KINDS)}')
    tp_ns = None if tp is None else parsed("--tp", units.parse_time, tp)
    ack_bytes = None if ack is None else parsed("--ack", units.parse_bytes, ack)
    if rate_bps is None:
        raise SpecError("--rate", f'"{rate}": a buffer is sized for a finite rate')
    if not rtts_ns and tp_ns is None:
        raise SpecError("--rtt", "give the flows' RTTs (--rtt), or seed 003's --tp and --ack")
    if tp_ns is not None and ack_bytes is None:
        raise SpecError("--ack", "seed 003's rule needs the ACK size with --tp")
    try:
        rows = size_rows(rate_bps, rtts_ns, packet_bytes, flows=flows, tp_ns=tp_ns, ack_bytes=ack_bytes,
                         sub_buffers=sub_buffers, controllers=controllers)
    except ValueError as e:
        if isinstance(e, SpecError):
            raise
        raise SpecError("size", str(e)) from None
    meaning = _limit_meaning(queue_kind, rate_bps, packet_bytes)
    if as_json:
        click.echo(json.dumps([{"rule": s.rule, "packets": s.packets, "exact_packets": s.exact_packets,
                                "bytes": s.bytes, "ms": s.ms, "packet_bytes": s.packet_bytes,
                                "rate_bps": s.rate_bps, "from": source, "queue": queue_kind,
                                "limit_meaning": meaning} for s, source in rows], indent=1))
        return
    title = (f"Buffer sizes for {units.format_rate(rate_bps)}, {units.format_bytes(packet_bytes)} packets"
             + (f", RTTs {', '.join(units.format_time(r) for r in rtts_ns)}" if rtts_ns else ""))
    from .render import console

    out = console(132)
    out.print(_table(rows, title))
    out.print(f"What a size means under {queue_kind}: {meaning}.", highlight=False)
