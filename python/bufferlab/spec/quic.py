"""A flow's QUIC knobs (``quic``, with ``transport = "quic"``): a model imported, and so built,
when a scenario first gives one (`parsed.model_on_first_use`), not by every run of TCP flows
(issue 15)."""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (see `spec.scenario`).

from pydantic import BaseModel, ConfigDict

from .fields import ByteCount, Count, Switch, Time

__all__ = ["QuicOptions"]


class QuicOptions(BaseModel):
    """QUIC knobs (transport = "quic"); an unset option takes the flow defaults', then the engine's.

    Sizes follow RFC 9002: the window counts whole QUIC packets (UDP payloads). The engine
    checks the options' ranges and names the option; the model parses types and units only.
    """

    model_config = ConfigDict(extra="forbid")

    # Largest QUIC packet (UDP payload), RFC 9002 max_datagram_size; 1252 = a 1280-byte IP packet.
    max_datagram: ByteCount | None = None
    # Bytes of a packet that carry no stream data (header, AEAD tag, STREAM frame header).
    packet_overhead: ByteCount | None = None
    # Bytes below QUIC on the wire: IP + UDP headers (28), plus any link framing.
    lower_layer: ByteCount | None = None
    # UDP payload of an ACK-only packet with one ACK range.
    ack_packet: ByteCount | None = None
    initial_window: Count = None
    # ACK every n-th ack-eliciting packet (1: every one, as in seed 003).
    ack_every: Count = None
    max_ack_delay: Time | None = None
    initial_rtt: Time | None = None
    packet_threshold: Count = None
    # ECN (RFC 9000 §13.4): packets sent ECT(0), ECN counts in the ACK frames, and a congestion
    # event when the CE count grows (RFC 9002 §7.1); default false.
    ecn: Switch = None
