"""What a run's flows are by its engine spec: the listed flows, then those its generators made,
and what a "segment" is for each (its MSS and header bytes). Plain Python: the metric catalogue
reads them on `bufferlab run`'s path, which loads no numpy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..spec.resolved import flow_quic, flow_tcp, listed_flows

__all__ = ["flow_descriptions", "segment_bytes"]


def flow_descriptions(engine: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every flow of a run (listed ones, then those its generators created), as the engine spec
    describes a listed flow: end nodes `src`/`dst`, `transport`, `traffic`, its `tcp` and `quic`
    options (the entries of the spec's `tcp_options` and `quic_options` it refers to; {} for none).
    `engine` is listed, or compact as a plan keeps it (a dumbbell's flows as columns, listed here
    without their hosts and access links: `spec.resolved.listed_flows`)."""
    listed = listed_flows(engine)
    generators = engine.get("generators") or []
    out: list[dict[str, Any]] = []
    for i, record in enumerate(records):
        if i < len(listed):
            # The flow with its option tables in place of their indices into the spec's tables.
            out.append({**listed[i], "tcp": flow_tcp(engine, listed[i]), "quic": flow_quic(engine, listed[i])})
            continue
        generator = generators[int(record["generator"])]
        out.append({"src": int(record["src_node"]), "dst": int(record["dst_node"]), "transport": "tcp",
                    "traffic": {"kind": "finite"}, "tcp": flow_tcp(engine, generator)})
    return out


def segment_bytes(spec: Mapping[str, Any]) -> tuple[int, int]:
    """A flow's (MSS, header bytes): what a "segment" is in the segment-counted metrics."""
    tcp = spec.get("tcp") or {}
    return int(tcp.get("mss", 1448)), int(tcp.get("header_bytes", 52))
