"""A flow's QUIC knobs (``quic``, with ``transport = "quic"``): a model imported, and so built,
when a scenario first gives one (`parsed.model_on_first_use`), not by every run of TCP
flows."""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (see `spec.scenario`).

from typing import Literal

from pydantic import BaseModel, ConfigDict, StrictBool

from .fields import ByteCount, Count, Switch, Time

__all__ = ["QuicOptions"]


class QuicOptions(BaseModel):
    """QUIC knobs (transport = "quic"); an unset option takes the flow defaults', then the engine's.

    Sizes follow RFC 9002: the window counts whole QUIC packets (UDP payloads). The engine
    checks the options' ranges and names the option; the model parses types and units only.
    """

    model_config = ConfigDict(extra="forbid")

    # Largest QUIC packet (UDP payload), RFC 9002's max_datagram_size: 1252 bytes, which makes a
    # 1280-byte IP packet (IPv6's minimum MTU).
    max_datagram: ByteCount | None = None
    # Bytes of a full packet that carry no stream data: 41 (a short header with an 8-byte
    # connection ID and a 4-byte packet number 13, the AEAD tag 16, the STREAM frame header 12).
    packet_overhead: ByteCount | None = None
    # Bytes below QUIC on the wire: 28, the IPv4 and UDP headers; add any link framing (a PPP
    # header and trailer: 7 more).
    lower_layer: ByteCount | None = None
    # UDP payload of an ACK-only packet with one ACK range: 39 (header 13, AEAD tag 16, ACK frame
    # 10); each further range adds 4 (RFC 9000 §19.3.1).
    ack_packet: ByteCount | None = None
    # Initial congestion window, packets: 10 (RFC 9002 §7.2: min(10·1252, max(14720, 2·1252))
    # bytes).
    initial_window: Count = None
    # The receiver ACKs every `ack_every`-th ack-eliciting packet, and at once when packets
    # arrive out of order: 1, every packet, as the server of the INET QUIC buffer-sizing
    # experiment (RFC 9000 §13.2.2 recommends 2).
    ack_every: Count = None
    # Longest the receiver delays an ACK: 25 ms (RFC 9000 §18.2's default max_ack_delay).
    max_ack_delay: Time | None = None
    # RTT assumed before the first sample: 333 ms (RFC 9002 §6.2.2's kInitialRtt).
    initial_rtt: Time | None = None
    # Packets acknowledged after an unacknowledged one before it is deemed lost: 3 (RFC 9002
    # §6.1.1's kPacketThreshold).
    packet_threshold: Count = None
    # ECN (RFC 9000 §13.4): "classic" sends packets ECT(0), the ACK frames carry ECN counts, and
    # a CE count that grows is a congestion event (RFC 9002 §7.1); "l4s" sends ECT(1) and reads
    # the counts as the accurate feedback a scalable controller (DCTCP, Prague) needs, answering
    # them once per round trip as TCP does. true is "classic", false "off" (the default). The
    # sender stops marking if the counts show that the path clears or rewrites the ECN field
    # (RFC 9000 §13.4.2).
    ecn: Literal["off", "classic", "l4s"] | StrictBool | None = None
    # Pacing of a window-based controller at N·cwnd/smoothed_rtt with N = 1.25 (RFC 9002 §7.7);
    # default false. BBR always paces at its own rate.
    pacing: Switch = None
