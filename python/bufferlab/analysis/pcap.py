"""A captured link direction as a libpcap file that tcpdump, tshark and Wireshark read.

Format (libpcap, nanosecond variant): a 24-byte global header with magic 0xa1b23c4d and link
type LINKTYPE_RAW (101: every record is an IPv4 packet, no link-layer header), then per packet a
16-byte record header (seconds, nanoseconds, captured length, original length) and the packet.

Each packet gets real headers: IPv4 (RFC 791; total length = the engine's wire bytes, header
checksum; the ECN field, the two low bits of the former TOS byte, as the packet carried it on the
captured link, RFC 3168 §5: Not-ECT, ECT(1), ECT(0) or CE) and TCP (RFC 9293; ports, 32-bit
sequence and acknowledgement numbers, flags with RFC 3168 §6.1's ECE and CWR, data offset,
checksum over the RFC 9293 §3.1 pseudo-header). Options fill the header bytes the engine
counts beyond 40: the timestamp option (RFC 7323) on every segment that has room for it, on a SYN
or SYN-ACK also MSS, SACK-permitted and window scale, and on an ACK its SACK blocks (RFC 2018).

Addressing: node i is 10.0.0.0 + (i + 1); flow f runs from port 1024 + f mod 64512 to port
5001 + f div 64512 (unique per flow). The initial sequence number of both ends is 0, so sequence
numbers are the engine's stream offsets modulo 2^32 (the first data byte is 1).

Payload bytes are zeros. By default only the headers are written (like ``tcpdump -s``: the
captured length is the header length, the original length the wire length); the checksum is
still that of the full segment, since zero bytes add nothing to the ones' complement sum.
``full_payload=True`` writes the zeros too.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from ..errors import SpecError
from .flow_specs import flow_descriptions

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["PCAP_MAGIC_NS", "LINKTYPE_RAW", "PACKET_FIELDS", "SACK_EDGES", "node_address", "flow_ports", "write_pcap", "check_tcp_only",
           "flow_descriptions", "PcapError"]

PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_RAW = 101
SNAPLEN = 65535

FIN, SYN, ACK = 0x01, 0x02, 0x10
# The engine's bit for RFC 9768's AE flag (`net::packet::flags::AE`), written in its place in the header.
ENGINE_AE = 0x20
IP_HEADER = 20
TCP_HEADER = 20
# A captured packet's fields that its headers are written from, and its SACK blocks' edges.
PACKET_FIELDS = ("time_ns", "flow", "is_data", "flags", "ecn", "seq", "ack", "payload_bytes", "wire_bytes",
                 "ts_val_ns", "ts_ecr_ns", "sack_blocks")
SACK_EDGES = tuple(f"sack{k}_{edge}" for k in (1, 2, 3) for edge in ("start", "end"))


class PcapError(SpecError):
    """A capture that cannot be written with real headers (e.g. header bytes below 40)."""


def node_address(node: int) -> str:
    """Dotted IPv4 address of node `node`: 10.0.0.1 for node 0."""
    n = node + 1
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def _address_bytes(node: int) -> bytes:
    n = node + 1
    return bytes((10, (n >> 16) & 255, (n >> 8) & 255, n & 255))


def flow_ports(flow: int) -> tuple[int, int]:
    """(sender port, receiver port) of flow `flow`."""
    return 1024 + flow % 64512, 5001 + flow // 64512


def _checksum(data: bytes) -> int:
    """RFC 1071 Internet checksum: ones' complement of the ones' complement sum of 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    total = int(np.frombuffer(data, dtype=">u2").sum(dtype=np.uint64))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _options(length: int, syn: bool, mss: int, ts_val: int, ts_ecr: int, sack: Sequence[int] = ()) -> bytes:
    """TCP options filling exactly `length` bytes (a multiple of 4, at most 40); `sack` holds
    the 32-bit edges of the SACK blocks to report."""
    out = b""
    timestamp = struct.pack("!BBII", 8, 10, ts_val, ts_ecr)  # RFC 7323 §3: kind 8, length 10
    if syn and length >= 20:
        # MSS (RFC 9293), SACK-permitted (RFC 2018), timestamps, NOP + window scale 7 (RFC 7323).
        out = struct.pack("!BBH", 2, 4, mss) + bytes((4, 2)) + timestamp + bytes((1, 3, 3, 7))
    elif length >= 12:
        out = bytes((1, 1)) + timestamp
    # RFC 2018 §3: kind 5, length 2 + 8n, n blocks of left and right edges, after two NOPs.
    blocks = struct.pack(f"!BBBB{len(sack)}I", 1, 1, 5, 2 + 4 * len(sack), *sack) if sack else b""
    if blocks and len(out) + len(blocks) <= length:
        out += blocks
    return out + bytes((1,)) * (length - len(out))


def _kind(flow: Mapping[str, Any]) -> str:
    traffic = flow.get("traffic")
    if isinstance(traffic, Mapping) and traffic.get("kind") in ("cbr", "on_off"):
        return "datagram"
    return str(flow.get("transport", "tcp"))


def check_tcp_only(capture: pl.DataFrame, flows: Sequence[Mapping[str, Any]]) -> None:
    """Packet export writes TCP headers: refuse a capture holding packets of other transports."""
    for flow in capture["flow"].unique().sort().to_list():
        kind = _kind(flows[flow])
        if kind != "tcp":
            where = "traffic" if kind == "datagram" else "transport"
            raise PcapError(f"flows[{flow}].{where}", "packet export (pcap, CSV) supports TCP flows only; "
                                                      f"this capture holds {kind} packets")


def write_pcap(path: str | Path | BinaryIO, capture: pl.DataFrame, flows: Sequence[Mapping[str, Any]],
               *, full_payload: bool = False) -> int:
    """Write the packets of one capture (rows of the engine's captures table: time_ns, flow,
    is_data, flags, ecn, seq, ack, payload_bytes, wire_bytes, ts_val_ns, ts_ecr_ns, sack_blocks
    and the SACK edges sack1_start ... sack3_end) of a run whose flows are `flows`
    (`flow_descriptions`: src, dst, tcp.mss). Returns the packets written. A capture stored
    before the ECN field was (schema version 7 and older: no `ecn`, or NULL) is written Not-ECT."""
    import polars as pl

    check_tcp_only(capture, flows)
    if "ecn" not in capture.columns:
        capture = capture.with_columns(pl.lit(0, dtype=pl.UInt8).alias("ecn"))
    rows = capture.with_columns(pl.col("ecn").fill_null(0)).select(*PACKET_FIELDS, *SACK_EDGES).iter_rows()
    with ExitStack() as opened:  # a file opened here is closed here; a stream given stays open
        handle = opened.enter_context(open(path, "wb")) if isinstance(path, (str, Path)) else path
        handle.write(struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_RAW))
        for index, (t, flow, is_data, flags, ecn, seq, ack, payload, wire, ts_val, ts_ecr, nblocks, *sack) in \
                enumerate(rows):
            edges = [edge & 0xFFFFFFFF for edge in sack[:2 * nblocks]]
            handle.write(_record(index, t, flows[flow], flow, bool(is_data), flags, ecn, seq, ack, payload, wire,
                                 ts_val, ts_ecr, edges, full_payload))
    return capture.height


def _record(index: int, t: int, spec: Mapping[str, Any], flow: int, is_data: bool, flags: int, ecn: int,
            seq: int, ack: int, payload: int, wire: int, ts_val: int, ts_ecr: int, sack: Sequence[int],
            full_payload: bool) -> bytes:
    options = wire - payload - IP_HEADER - TCP_HEADER
    if options < 0 or options % 4 or options > 40:
        raise PcapError(f"flows[{flow}].tcp.header_bytes", f"a {wire - payload}-byte header cannot be IPv4 + "
                        "TCP (40 bytes plus options in 4-byte words, at most 40)")
    sender, receiver = int(spec["src"]), int(spec["dst"])
    sport, dport = flow_ports(flow)
    if is_data:
        src, dst = sender, receiver
        # Data segments acknowledge the receiver's SYN (ISN 0) once established.
        ack32 = 1 if flags & ACK else 0
        seq32 = seq & 0xFFFFFFFF
    else:
        src, dst, sport, dport = receiver, sender, dport, sport
        seq32 = 0 if flags & SYN else 1
        ack32 = ack & 0xFFFFFFFF
    mss = int((spec.get("tcp") or {}).get("mss", 1448))
    opts = _options(options, bool(flags & SYN), min(mss, 0xFFFF), (ts_val // 1000) & 0xFFFFFFFF,
                    (ts_ecr // 1000) & 0xFFFFFFFF, sack)
    tcp_length = TCP_HEADER + options + payload
    # The flags byte: CWR, ECE, URG, ACK, PSH, RST, SYN, FIN from its high bit down (RFC 3168 §6.1
    # put CWR and ECE in what RFC 793 reserved); the engine's flags are those bits, but for AE
    # (RFC 9768's Accurate ECN bit), which the engine keeps in URG's place and the header just
    # above the byte, in the data offset's 16-bit word.
    ae = 0x100 if flags & ENGINE_AE else 0
    offset_flags = ((TCP_HEADER + options) // 4) << 12 | ae | (flags & 0xFF & ~ENGINE_AE)
    src_ip, dst_ip = _address_bytes(src), _address_bytes(dst)
    tcp = struct.pack("!HHIIHHHH", sport, dport, seq32, ack32, offset_flags, 65535, 0, 0) + opts
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 6, tcp_length)
    tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo + tcp)) + tcp[18:]
    # The second byte: DSCP (0) in its high six bits, the ECN field in its low two (RFC 3168 §5).
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, ecn & 0b11, wire, index & 0xFFFF, 0x4000, 64, 6, 0, src_ip, dst_ip)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    packet = ip + tcp + (bytes(payload) if full_payload else b"")
    return struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(packet), wire) + packet
