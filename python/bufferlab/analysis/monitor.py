"""The middlebox monitor of seed 000: what a tcpdump on one link direction tells about each flow.

Seed 000 captures at the router before the bottleneck and computes, per flow, from the packets
seen there: throughput = bytes seen / (last packet time - first packet time), and loss =
retransmitted segments seen / segments seen; flows are split at 100 KB into large and small.
Here the capture is the engine's (every packet that starts transmission on the channel, see
`[[captures]]`), and a retransmission is what the sender knows it is, so the loss of a flow is
exactly the retransmissions that crossed the link. Only a flow's data direction (sender to
receiver) counts; bytes are wire bytes (IP length, tshark's ``frame.len``), SYN and FIN included.

`capture_csv` writes the same packets with the tshark fields of seed 000::

    tshark -T fields -e frame.time_epoch -e ip.src -e ip.dst -e tcp.srcport -e tcp.dstport
           -e frame.len -e tcp.analysis.retransmission -E separator=,

with times since the start of the run as epoch seconds, the addresses and ports of `pcap`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import polars as pl

from .pcap import check_tcp_only, flow_ports, node_address

__all__ = ["DEFAULT_SPLIT_BYTES", "CSV_FIELDS", "middlebox_flows", "size_class_summary", "capture_frame",
           "capture_csv"]

# Seed 000: "large flows (> 100 KB) and small flows (< 100 KB)".
DEFAULT_SPLIT_BYTES = 100_000
CSV_FIELDS = ("frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "frame.len",
              "tcp.analysis.retransmission")


def middlebox_flows(capture: pl.DataFrame, flow_names: Sequence[str], *,
                    split_bytes: int = DEFAULT_SPLIT_BYTES) -> pl.DataFrame:
    """One row per flow whose data crossed the captured channel: first/last packet time (s),
    packets, segments (packets with payload), bytes and payload bytes seen, retransmissions seen,
    throughput (Mb/s) = bytes x 8 / (last - first), loss = retransmissions / segments, and its
    size class ("large" if more than `split_bytes` bytes were seen, else "small")."""
    data = capture.filter(pl.col("is_data"))
    has_payload = pl.col("payload_bytes") > 0
    per_flow = (
        data.group_by("flow")
        .agg(first_ns=pl.col("time_ns").min(), last_ns=pl.col("time_ns").max(), packets=pl.len(),
             segments=has_payload.sum(), bytes=pl.col("wire_bytes").cast(pl.UInt64).sum(),
             payload_bytes=pl.col("payload_bytes").cast(pl.UInt64).sum(),
             retransmissions=(pl.col("retransmission") & has_payload).sum())
        .sort("flow")
    )
    span_s = (pl.col("last_ns") - pl.col("first_ns")).cast(pl.Float64) / 1e9
    return per_flow.select(
        pl.col("flow").cast(pl.UInt32),
        pl.col("flow").map_elements(lambda i: flow_names[i], return_dtype=pl.String).alias("name"),
        (pl.col("first_ns").cast(pl.Float64) / 1e9).alias("first_s"),
        (pl.col("last_ns").cast(pl.Float64) / 1e9).alias("last_s"),
        pl.col("packets").cast(pl.UInt64), pl.col("segments").cast(pl.UInt64), "bytes", "payload_bytes",
        pl.col("retransmissions").cast(pl.UInt64),
        pl.when(span_s > 0).then(pl.col("bytes").cast(pl.Float64) * 8 / span_s / 1e6).alias("throughput_mbps"),
        pl.when(pl.col("segments") > 0)
        .then(pl.col("retransmissions").cast(pl.Float64) / pl.col("segments").cast(pl.Float64)).alias("loss"),
        pl.when(pl.col("bytes") > split_bytes).then(pl.lit("large")).otherwise(pl.lit("small")).alias("size_class"),
    )


def size_class_summary(flows: pl.DataFrame) -> pl.DataFrame:
    """Per size class: flow count, and the median and 10th/90th percentiles of throughput and loss
    (the quantiles of seed 000's CDFs)."""
    stats = []
    for column in ("throughput_mbps", "loss"):
        for q, label in ((0.1, "p10"), (0.5, "median"), (0.9, "p90")):
            stats.append(pl.col(column).quantile(q, interpolation="linear").alias(f"{label}_{column}"))
    return flows.group_by("size_class").agg(pl.len().alias("flows"), *stats).sort("size_class")


def capture_frame(capture: pl.DataFrame, flows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """The captured packets (rows of the engine's captures table) as tshark's fields of seed 000
    (column names as tshark's -e names)."""
    check_tcp_only(capture, flows)
    frame = capture
    flow = frame["flow"].to_numpy()
    is_data = frame["is_data"].to_numpy()
    src_nodes = np.array([int(f["src"]) for f in flows], dtype=np.int64)
    dst_nodes = np.array([int(f["dst"]) for f in flows], dtype=np.int64)
    sender = src_nodes[flow] if len(flow) else np.array([], dtype=np.int64)
    receiver = dst_nodes[flow] if len(flow) else np.array([], dtype=np.int64)
    ports = np.array([flow_ports(i) for i in range(len(flows))], dtype=np.int64).reshape(-1, 2)
    sport = ports[flow, 0] if len(flow) else np.array([], dtype=np.int64)
    dport = ports[flow, 1] if len(flow) else np.array([], dtype=np.int64)
    addresses = [node_address(i) for i in range(int(max(src_nodes.max(initial=0), dst_nodes.max(initial=0))) + 1)]
    t = frame["time_ns"].to_numpy()
    return pl.DataFrame({
        "frame.time_epoch": [f"{s}.{ns:09d}" for s, ns in zip((t // 1_000_000_000).tolist(),
                                                                (t % 1_000_000_000).tolist())],
        "ip.src": [addresses[n] for n in np.where(is_data, sender, receiver).tolist()],
        "ip.dst": [addresses[n] for n in np.where(is_data, receiver, sender).tolist()],
        "tcp.srcport": np.where(is_data, sport, dport),
        "tcp.dstport": np.where(is_data, dport, sport),
        "frame.len": frame["wire_bytes"].to_numpy().astype(np.int64),
        # tshark prints 1 for a flagged retransmission and nothing otherwise.
        "tcp.analysis.retransmission": ["1" if r else "" for r in
                                        (frame["retransmission"] & (frame["payload_bytes"] > 0)).to_list()],
    })


def capture_csv(out: str | Path | TextIO, capture: pl.DataFrame, flows: Sequence[Mapping[str, Any]], *,
                header: bool = True) -> int:
    """Write the capture as CSV with the tshark fields of seed 000; returns the rows written."""
    frame = capture_frame(capture, flows)
    text = frame.write_csv(include_header=header, quote_style="never")
    if isinstance(out, (str, Path)):
        Path(out).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return frame.height
