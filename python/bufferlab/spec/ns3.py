"""ns-3 3.44's TCP in bufferlab's `tcp` options: what a flow standing for an ns-3 socket is given.

Two users: the ccperf form (`spec.ccperf`, seed 001, whose numbers come from ns-3 runs) gives its
flows ns-3's defaults where ccperf says nothing, and the side-by-side benchmark
(benchmarks/bench_ns3.py) takes the controllers' behaviour from here and sets the rest itself (it
moves ns-3's socket defaults to bufferlab's instead).

The socket (`NS3_SOCKET`), ns-3 3.44's defaults:

| ns-3 attribute | default | bufferlab option |
|---|---|---|
| TcpSocketBase::Sack, ::Timestamp | true, true | `sack`, `timestamps` (the engine's defaults too) |
| loss detection | RFC 6675's DupThresh 3; ns-3 3.44 has no RACK-TLP | `rack = false` |
| TcpSocketBase::MinRto, ClockGranularity | 1 s, 1 ms: RTO = max(SRTT + max(G, 4·RTTVAR), MinRto) (RFC 6298 §2.4) | `rto = "rfc6298"`, `min_rto = "1s"` (at a 1 s floor the 1 ms granularity never decides) |
| RttEstimator::InitialEstimation | 1 s | `initial_rto = "1s"` |
| TcpSocket::DelAckCount, DelAckTimeout | 2, 200 ms | `ack_every = 2`, `delayed_ack_timeout = "200ms"` |

The controllers (`NS3_CONTROLLER`, keyed by the engine's name for ns-3's class), where ns-3
differs from the engine's defaults:

- **The basis of a loss's reduction** (`ssthresh_from`). TcpSocketBase hands a controller's
  GetSsThresh BytesInFlight(), which with SACK is RFC 6675's pipe. TcpNewReno halves it ("pipe");
  TcpCubic takes 0.7 of cwnd, as Linux does; TcpDctcp (1 − α/2)·cwnd; TcpVegas min(ssthresh,
  cwnd − 1 segment); TcpBbr keeps no ssthresh of its own: all from cwnd ("cwnd"). The engine's
  default is RFC 5681 eq. (4)'s FlightSize.
- **Reno's growth** (`ca_increase`). TcpNewReno, and TcpVegas outside its own adjustments, grow by
  one segment per cwnd of ACKs, counting ACKs, not bytes (RFC 5681 §3.1: half a segment per RTT
  with delayed ACKs): "per_ack". The engine's default is RFC 3465's byte counting, as Linux.

Each was measured side by side (docs/engine/validation.md, "Side by side with ns-3"). A
controller not listed (HighSpeed, BBRv3, Prague: not in ns-3 3.44's tree, or not compared) keeps
the engine's defaults.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NS3_SOCKET", "NS3_CONTROLLER", "ns3_controller_options"]

# ns-3 3.44's socket defaults as `tcp` options (the table above).
NS3_SOCKET: dict[str, Any] = {"sack": True, "timestamps": True, "rack": False, "rto": "rfc6298", "min_rto": "1s",
                              "initial_rto": "1s", "ack_every": 2, "delayed_ack_timeout": "200ms"}

# Engine controller -> how ns-3 3.44's class of it reduces and grows (the list above).
NS3_CONTROLLER: dict[str, dict[str, str]] = {
    "reno": {"ssthresh_from": "pipe", "ca_increase": "per_ack"},  # TcpNewReno
    "cubic": {"ssthresh_from": "cwnd"},  # TcpCubic
    "dctcp": {"ssthresh_from": "cwnd"},  # TcpDctcp
    "vegas": {"ssthresh_from": "cwnd", "ca_increase": "per_ack"},  # TcpVegas (TcpNewReno's growth)
    "bbr": {"ssthresh_from": "cwnd"},  # TcpBbr (never used: BBR sets its window from its model)
}


def ns3_controller_options(cca: str) -> dict[str, str]:
    """The `tcp` options that make a flow of controller `cca` (any spelling `cca` takes: TcpNewReno,
    newreno, ...) reduce and grow as ns-3 3.44's class of it; none for a controller ns-3 lacks."""
    from .fields import engine_controller

    return dict(NS3_CONTROLLER.get(engine_controller(cca), {}))
