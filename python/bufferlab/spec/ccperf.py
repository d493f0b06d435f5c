"""The ccperf command-line form (seed 001): ns-3 ccperf's static-dumbbell flags -> a Scenario.

    bufferlab ccperf --bw=80Mbps --rtts=15ms,15ms --qlen=10p --algs=TcpNewReno,TcpNewReno \\
        --start-times=0s,0s --stop-times=15s,15s --stop-time=15s --seed=42 --loss=0.0 \\
        '--traffic-models=Greedy(bytes=0),Greedy(bytes=0)'

One flow per entry of the per-flow lists (K = number of --rtts); every list given must have K
entries. The topology is bufferlab's dumbbell (see `spec`): bottleneck rate --bw, FIFO --qlen in
both directions, random loss --loss on the bottleneck link; access links run at ten times --bw
and the bottleneck carries a quarter of the smallest RTT (ccperf does not say where its
propagation delay sits; only the RTT is specified). The flows are ns-3 sockets: ns-3 3.44's TCP
defaults and its controllers' reductions and growth (`spec.ns3`), with an ACK per segment
(`CCPERF_TCP`); `--set flow_defaults.tcp.KEY=VALUE` changes one.

Flags that only label an experiment (--experiment-name, --db-path, --parameters, --aut) are kept
as metadata in the stored user spec; --db-path does not choose bufferlab's store (use --db).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import units
from ..errors import SpecError
from .ns3 import NS3_SOCKET

if TYPE_CHECKING:  # pragma: no cover
    from .scenario import Scenario

__all__ = ["CCPERF_FLAGS", "METADATA_FLAGS", "split_list", "parse_traffic_model", "scenario_from_ccperf"]

# Flag -> what it means (the --help text). Per-flow lists are comma separated.
CCPERF_FLAGS: dict[str, str] = {
    "bw": "bottleneck rate, e.g. 80Mbps",
    "rtts": "per-flow RTTs (two-way propagation), e.g. 15ms,15ms",
    "qlen": "bottleneck FIFO limit, e.g. 10p or 100KB",
    "qdisc": "bottleneck queue discipline: FifoQueueDisc",
    "loss": "random loss probability on the bottleneck link, e.g. 0.0",
    "algs": "per-flow congestion controllers: TcpNewReno, TcpReno, TcpCubic, TcpHighSpeed, TcpBbr, TcpBbrV3, TcpVegas, "
            "TcpDctcp, TcpPrague (with their ECN feedback; the FIFO marks nothing, so they answer losses)",
    "recoveries": "per-flow loss recovery: TcpPrrRecovery, TcpClassicRecovery",
    "protocols": "per-flow transport: TCP",
    "sources": "per-flow source host names (default src_0, src_1, ...)",
    "destinations": "per-flow destination host names (default dst_0, dst_1, ...)",
    "start-times": "per-flow start times, e.g. 0s,0s",
    "stop-times": "per-flow stop times, e.g. 15s,15s",
    "traffic-models": "per-flow traffic: Greedy(bytes=0) is greedy, Greedy(bytes=N) sends N bytes",
    "stop-time": "simulated duration, e.g. 15s (default: the latest --stop-times)",
    "seed": "random seed (default 1)",
    "sample-interval": "sampling interval of the time series behind every per-sample metric (default 100ms; "
                       "see SAMPLE_INTERVAL)",
}

# ccperf does not say how often it samples. Per-sample metrics depend on it: on shallow_buffers
# experiment #11 (seed 001) Jain's index over 10 ms samples is 0.65, over 100 ms samples 0.94, and
# the seed's table says 0.93: its tables are consistent with 100 ms, so that is the default here.
SAMPLE_INTERVAL = "100ms"
METADATA_FLAGS: dict[str, str] = {
    "experiment-name": "label stored with the run",
    "db-path": "ccperf's result file: stored as a label (bufferlab's store is --db)",
    "parameters": "ccperf's parameter summary, stored as a label",
    "aut": "algorithm under test, stored as a label",
}
PER_FLOW = ("rtts", "algs", "recoveries", "protocols", "sources", "destinations", "start-times",
            "stop-times", "traffic-models")


def split_list(text: str) -> list[str]:
    """Split "a,b(c,d),e" on the commas outside parentheses."""
    items, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        depth += (ch == "(") - (ch == ")")
        current += ch
    items.append(current.strip())
    return items


# Compiled by `re` at its first use (the ccperf command), not as every command starts.
_GREEDY = r"^greedy\(\s*bytes\s*=\s*(\d+)\s*\)$"


def parse_traffic_model(text: str) -> dict[str, Any] | str:
    """ccperf's "Greedy(bytes=0)" is greedy; "Greedy(bytes=N)", N > 0, a finite N-byte transfer."""
    match = re.match(_GREEDY, text.strip(), re.IGNORECASE)
    if match is None:
        raise ValueError(f'unknown traffic model "{text}" (known: Greedy(bytes=N), N = 0 for unlimited)')
    n = int(match.group(1))
    return "greedy" if n == 0 else {"kind": "finite", "bytes": n}


def _flag(name: str, parse: Any, text: str) -> Any:
    try:
        return parse(text)
    except ValueError as e:
        reason = e.reason if isinstance(e, SpecError) else str(e)
        raise SpecError(f"--{name}", reason) from None


def _per_flow(name: str, text: str, parse: Any) -> list[Any]:
    items = split_list(text)
    if any(item == "" for item in items):
        raise SpecError(f"--{name}", f'empty entry in "{text}"')
    return [_flag(name, parse, item) for item in items]


def _controller(text: str) -> str:
    """A controller of --algs, as `cca` names it."""
    from .fields import parse_controller

    return parse_controller(text)


# A flow whose --algs entry is absent: the engine's default controller (ns-3's TcpNewReno).
DEFAULT_CONTROLLER = "reno"

# ccperf's flows are ns-3 sockets: ns-3 3.44's TCP defaults (`spec.ns3.NS3_SOCKET`: no RACK, RFC
# 6298's timer with a 1 s floor), except the ACK policy. ccperf's page does not give it, and its
# experiment #11 has the fingerprint of an ACK per segment: ns-3 3.44 itself, run as this form runs
# it (benchmarks/ns3/dumbbell.cc, ns-3's defaults otherwise), gives 62.6-65.3 Mb/s and 345-553 drops
# with DelAckCount 1 and 65.3-68.8 Mb/s and 243-275 drops with ns-3's default of 2, over access
# links of 80 Mb/s to 10 Gb/s, against the seed's 61.48 Mb/s and 330 drops
# (docs/reproductions.md, "ccperf").
CCPERF_TCP: dict[str, Any] = {**NS3_SOCKET, "ack_every": 1}

# The ECN feedback a scalable controller of --algs is given (`tcp.ecn`), as ns-3's TcpDctcp turns
# ECN on by itself: DCTCP's per-packet echo (RFC 8257 §3.2), Prague's ECT(1) with it. ccperf's
# FifoQueueDisc marks nothing, so both answer its losses (RFC 8257 §3.4: as Reno).
SCALABLE_ECN = {"dctcp": "dctcp", "prague": "l4s"}


def _seed(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) >= 2**64:
        raise ValueError(f'not a seed (an integer in [0, 2^64)): "{text}"')
    return int(text)


def _loss(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f'not a probability: "{text}"') from None
    return units.parse_probability(value)


def _qdisc(text: str) -> str:
    if text.strip().lower() not in ("fifoqueuedisc", "fifo"):
        raise ValueError(f'unsupported queue discipline "{text}" (known: FifoQueueDisc)')
    return "fifo"


def _protocol(text: str) -> str:
    if text.strip().upper() != "TCP":
        raise ValueError(f'unsupported protocol "{text}" (known: TCP)')
    return "TCP"


def _name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.:-]+", text):
        raise ValueError(f'not a host name: "{text}"')
    return text


def scenario_from_ccperf(flags: Mapping[str, str | None]) -> Scenario:
    """Build the dumbbell Scenario of a ccperf command line; `flags` maps a flag name without its
    dashes (e.g. "start-times") to its text, or None when absent. Raises SpecError naming a flag."""
    from .fields import engine_controller, parse_recovery  # pydantic: not needed for --help
    from .ns3 import ns3_controller_options
    from .scenario import Scenario

    unknown = [k for k in flags if k not in CCPERF_FLAGS and k not in METADATA_FLAGS]
    if unknown:
        raise SpecError(f"--{unknown[0]}", "unknown flag")
    given = {k: v for k, v in flags.items() if v is not None}
    for required in ("bw", "rtts", "qlen"):
        if required not in given:
            raise SpecError(f"--{required}", "missing required flag")

    bw = _flag("bw", units.parse_rate, given["bw"])
    qlen = _flag("qlen", units.parse_size, given["qlen"])
    loss = _flag("loss", _loss, given.get("loss", "0.0"))
    seed = _flag("seed", _seed, given.get("seed", "1"))
    if "qdisc" in given:
        _flag("qdisc", _qdisc, given["qdisc"])

    parsers = {
        "rtts": lambda t: units.parse_time(t, positive=True),
        "algs": _controller,
        "recoveries": parse_recovery,
        "protocols": _protocol,
        "sources": _name,
        "destinations": _name,
        "start-times": units.parse_time,
        "stop-times": units.parse_time,
        "traffic-models": parse_traffic_model,
    }
    lists = {name: _per_flow(name, given[name], parsers[name]) for name in PER_FLOW if name in given}
    k = len(lists["rtts"])
    for name, values in lists.items():
        if len(values) != k:
            raise SpecError(f"--{name}", f"{len(values)} value(s), but --rtts gives {k} flow(s): "
                                         "every per-flow list needs one entry per flow")

    if "stop-time" in given:
        duration = _flag("stop-time", lambda t: units.parse_time(t, positive=True), given["stop-time"])
    elif "stop-times" in lists and max(lists["stop-times"]) > 0:
        duration = max(lists["stop-times"])
    else:
        raise SpecError("--stop-time", "missing required flag (the simulated duration)")

    flows = []
    for i in range(k):
        start = lists["start-times"][i] if "start-times" in lists else 0
        if start >= duration:
            raise SpecError("--start-times", f"flow {i} starts at {units.format_time(start)}, not before "
                                             f"--stop-time ({units.format_time(duration)})")
        # ccperf numbers its flows from 1 (flow_1 ... flow_K), its hosts from 0 (src_0 ...).
        flow: dict[str, Any] = {"name": f"flow_{i + 1}", "rtt": units.format_time(lists["rtts"][i]),
                                "start": units.format_time(start)}
        if "stop-times" in lists:
            stop = lists["stop-times"][i]
            if stop <= start:
                raise SpecError("--stop-times", f"flow {i} stops at {units.format_time(stop)}, not after its "
                                                f"start ({units.format_time(start)})")
            flow["stop"] = units.format_time(stop)
        for flag, key in (("sources", "src"), ("destinations", "dst"), ("algs", "cca"),
                          ("traffic-models", "traffic")):
            if flag in lists:
                flow[key] = lists[flag][i]
        # The flow reduces and grows as ns-3's class of its controller does (`spec.ns3`).
        cca = lists["algs"][i] if "algs" in lists else DEFAULT_CONTROLLER
        tcp = ns3_controller_options(cca)
        if "recoveries" in lists:
            tcp["recovery"] = lists["recoveries"][i]
        ecn = SCALABLE_ECN.get(engine_controller(cca))
        if ecn is not None:
            tcp["ecn"] = ecn
        if tcp:
            flow["tcp"] = tcp
        flows.append(flow)

    hosts = [f["src"] for f in flows if "src" in f] + [f["dst"] for f in flows if "dst" in f]
    for name in hosts:
        if hosts.count(name) > 1 or name in ("left", "right"):
            flag = "--sources" if name in lists.get("sources", []) else "--destinations"
            raise SpecError(flag, f'host name "{name}" is used twice (or is a router name)')

    meta: dict[str, Any] = {"form": "ccperf"}
    meta.update({k: v for k, v in given.items() if k in METADATA_FLAGS})
    data = {
        "name": given.get("experiment-name", "ccperf"),
        "flow_defaults": {"tcp": CCPERF_TCP},
        "seed": seed,
        "duration": units.format_time(duration),
        "sample_interval": _flag("sample-interval", lambda t: units.format_time(units.parse_time(t, positive=True)),
                                 given.get("sample-interval", SAMPLE_INTERVAL)),
        "topology": {"kind": "dumbbell", "bottleneck_rate": units.format_rate(bw), "queue": str(qlen),
                     "loss": loss},
        "flows": flows,
        "meta": meta,
    }
    return Scenario.from_dict(data)
