"""The middlebox monitor (seed 000), its tshark-field CSV and the pcap export.

The scenario: two finite transfers (50 KB and 600 KB) from hosts s0, s1 through a router to d0,
d1 over a 5 Mb/s, 20-packet bottleneck, captured at the senders' shared access link (where every
segment a sender puts on the wire passes) and at the bottleneck (after the drops of its queue).
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import dpkt
import numpy as np
import polars as pl
import pytest

from bufferlab import runner
from bufferlab.analysis import monitor, pcap
from bufferlab.pipeline.result import EngineResult
from bufferlab.spec import Scenario

SCENARIO = """
name = "monitored"
duration = "20s"
sample_interval = "off"
[[nodes]]
name = "s0"
kind = "host"
[[nodes]]
name = "s1"
kind = "host"
[[nodes]]
name = "sw"
kind = "router"
[[nodes]]
name = "r"
kind = "router"
[[nodes]]
name = "d0"
kind = "host"
[[nodes]]
name = "d1"
kind = "host"
[[links]]
name = "s0_sw"
a = "s0"
b = "sw"
rate = "1Gbps"
delay = "1ms"
[[links]]
name = "s1_sw"
a = "s1"
b = "sw"
rate = "1Gbps"
delay = "1ms"
[[links]]
name = "access"
a = "sw"
b = "r"
rate = "1Gbps"
delay = "1ms"
[[links]]
name = "btl"
a = "r"
b = "d0"
rate = "5Mbps"
delay = "10ms"
queue = "20p"
[[links]]
name = "d1_r"
a = "r"
b = "d1"
rate = "5Mbps"
delay = "10ms"
queue = "20p"
[[flows]]
name = "mouse"
src = "s0"
dst = "d0"
traffic = { kind = "finite", bytes = "50KB" }
[[flows]]
name = "elephant"
src = "s1"
dst = "d0"
start = "10ms"
traffic = { kind = "finite", bytes = "600KB" }
[[captures]]
link = "access"
[[captures]]
link = "btl"
[[captures]]
link = "btl"
direction = "backward"
"""


@pytest.fixture(scope="module")
def run() -> tuple[EngineResult, dict]:
    scenario = Scenario.from_toml_text(SCENARIO)
    result, _ = runner.simulate(scenario)
    return result, scenario.resolve().engine


def capture_on(result: EngineResult, engine: dict, link: str, backward: bool = False) -> pl.DataFrame:
    index = [link_spec["name"] for link_spec in engine["links"]].index(link)
    return result.captures.filter(pl.col("channel") == 2 * index + backward)


def test_both_transfers_complete_with_losses_at_the_bottleneck(run) -> None:
    result, _ = run
    assert all(f["completed_ns"] is not None for f in result.counters()["flows"])
    btl = next(c for c in result.counters()["channels"] if c["name"] == "btl_forward")
    assert btl["dropped_queue_packets"] > 0
    assert result.counters()["flows"][1]["segments_retransmitted"] > 0


def test_upstream_monitor_sees_every_segment_and_retransmission_the_senders_sent(run) -> None:
    result, engine = run
    flows = monitor.middlebox_flows(capture_on(result, engine, "access"), ["mouse", "elephant"])
    for row, f in zip(flows.iter_rows(named=True), result.counters()["flows"]):
        assert row["segments"] == f["segments_sent"]
        assert row["retransmissions"] == f["segments_retransmitted"]
        assert row["payload_bytes"] == f["payload_bytes_sent"]
        assert row["loss"] == pytest.approx(f["segments_retransmitted"] / f["segments_sent"])


def test_bottleneck_monitor_loss_is_the_retransmissions_that_crossed_it(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    flows = monitor.middlebox_flows(cap, ["mouse", "elephant"])
    for row in flows.iter_rows(named=True):
        mine = (cap["flow"] == row["flow"]) & cap["is_data"] & (cap["payload_bytes"] > 0)
        assert row["segments"] == int(mine.sum())
        assert row["retransmissions"] == int((mine & cap["retransmission"]).sum())
        assert row["loss"] == pytest.approx(row["retransmissions"] / row["segments"])
        # Every byte arrived, so every segment crossed the bottleneck at least once.
        f = result.counters()["flows"][row["flow"]]
        assert row["segments"] - row["retransmissions"] <= f["segments_sent"] - f["segments_retransmitted"]
        assert row["retransmissions"] <= f["segments_retransmitted"]


def test_flows_split_at_the_configured_size(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    default = monitor.middlebox_flows(cap, ["mouse", "elephant"])
    assert default["size_class"].to_list() == ["small", "large"]  # 50 KB vs 600 KB at 100 KB
    assert monitor.middlebox_flows(cap, ["mouse", "elephant"], split_bytes=1_000_000)["size_class"].to_list() \
        == ["small", "small"]
    summary = monitor.size_class_summary(default)
    assert summary["size_class"].to_list() == ["large", "small"] and summary["flows"].to_list() == [1, 1]


def test_capture_throughput_equals_bytes_over_span_of_the_exported_csv(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    text = io.StringIO()
    rows = monitor.capture_csv(text, cap, engine["flows"])
    assert rows == len(cap["time_ns"])
    csv = pl.read_csv(io.StringIO(text.getvalue()), schema_overrides={"frame.time_epoch": pl.Float64,
                                                                        "tcp.analysis.retransmission": pl.String})
    assert tuple(csv.columns) == monitor.CSV_FIELDS
    per_flow = (csv.group_by("tcp.srcport", "ip.src")
                .agg(bytes=pl.col("frame.len").sum(), first=pl.col("frame.time_epoch").min(),
                     last=pl.col("frame.time_epoch").max(),
                     retrans=pl.col("tcp.analysis.retransmission").is_not_null().sum())
                .sort("tcp.srcport"))
    flows = monitor.middlebox_flows(cap, ["mouse", "elephant"])
    expected = per_flow["bytes"] * 8 / (per_flow["last"] - per_flow["first"]) / 1e6
    assert flows["throughput_mbps"].to_list() == pytest.approx(expected.to_list(), rel=1e-9)
    assert flows["retransmissions"].to_list() == per_flow["retrans"].to_list()
    # Addresses per node, ports per flow.
    assert per_flow["ip.src"].to_list() == [pcap.node_address(0), pcap.node_address(1)]
    assert per_flow["tcp.srcport"].to_list() == [pcap.flow_ports(0)[0], pcap.flow_ports(1)[0]]


def test_pcap_headers_are_real_ipv4_and_tcp(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    out = io.BytesIO()
    n = pcap.write_pcap(out, cap, engine["flows"], full_payload=True)
    reader = dpkt.pcap.Reader(io.BytesIO(out.getvalue()))
    assert reader.datalink() == pcap.LINKTYPE_RAW and n == len(cap["time_ns"])
    packets = list(reader)
    assert len(packets) == n
    for k, (ts, buf) in enumerate(packets):
        ip = dpkt.ip.IP(buf)
        tcp = ip.data
        assert isinstance(tcp, dpkt.tcp.TCP)
        assert ip.len == len(buf) == cap["wire_bytes"][k]
        assert int(ts * 10**9) == cap["time_ns"][k]  # nanosecond pcap: dpkt gives an exact Decimal
        assert len(tcp.data) == cap["payload_bytes"][k]
        assert tcp.flags == cap["flags"][k]
        assert tcp.seq == cap["seq"][k] % 2**32
        # Checksums: recomputing over the packet as written gives what it carries.
        carried_ip, carried_tcp = ip.sum, tcp.sum
        ip.sum, tcp.sum = 0, 0
        again = dpkt.ip.IP(bytes(ip))
        assert (again.sum, again.data.sum) == (carried_ip, carried_tcp)
        if tcp.flags & dpkt.tcp.TH_SYN:
            options = dict(dpkt.tcp.parse_opts(tcp.opts))
            assert int.from_bytes(options[dpkt.tcp.TCP_OPT_MSS], "big") == 1448
    ports = {(dpkt.ip.IP(buf).data.sport, dpkt.ip.IP(buf).data.dport) for _, buf in packets}
    assert ports == {pcap.flow_ports(0), pcap.flow_ports(1)}


def test_pcap_puts_accurate_ecn_s_flag_in_its_place_in_the_header(run) -> None:
    # RFC 9768's AE bit is the TCP header's bit just above the eight flags (the low bit of the
    # data offset's byte; dpkt reads it as the ninth bit of `flags`, 0x100); the engine keeps it in
    # URG's place, which the pcap must not show.
    result, engine = run
    cap = capture_on(result, engine, "btl").head(2)
    cap = cap.with_columns(pl.Series("flags", [cap["flags"][0] | pcap.ENGINE_AE, cap["flags"][1]], dtype=cap["flags"].dtype))
    out = io.BytesIO()
    pcap.write_pcap(out, cap, engine["flows"])
    first, second = (dpkt.ip.IP(buf).data for _, buf in dpkt.pcap.Reader(io.BytesIO(out.getvalue())))
    assert first.flags == 0x100 | (cap["flags"][0] & ~pcap.ENGINE_AE)
    assert not first.flags & dpkt.tcp.TH_URG and second.flags == cap["flags"][1]


def test_pcap_acks_carry_their_sack_blocks(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl", backward=True)
    assert not cap["is_data"].any() and (cap["sack_blocks"] > 0).any(), "losses make the receiver SACK"
    out = io.BytesIO()
    pcap.write_pcap(out, cap, engine["flows"])
    for k, (_, buf) in enumerate(dpkt.pcap.Reader(io.BytesIO(out.getvalue()))):
        tcp = dpkt.ip.IP(buf).data
        assert tcp.ack == cap["ack"][k] % 2**32
        options = dict(dpkt.tcp.parse_opts(tcp.opts))
        n = int(cap["sack_blocks"][k])
        if n == 0:
            assert dpkt.tcp.TCP_OPT_SACK not in options
            continue
        edges = np.frombuffer(options[dpkt.tcp.TCP_OPT_SACK], dtype=">u4").tolist()
        assert edges == [int(e) % 2**32 for e in cap.select(pcap.SACK_EDGES).row(k)[:2 * n]]
        assert all(cap["ack"][k] < start < end for start, end in zip(edges[::2], edges[1::2]))


def test_headers_only_pcap_keeps_original_lengths(run, tmp_path: Path) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    path = tmp_path / "btl.pcap"
    pcap.write_pcap(path, cap, engine["flows"])
    data = path.read_bytes()
    # Global header, then records of 16 + 40 + options bytes: the payload is not written.
    assert data[:4] == (pcap.PCAP_MAGIC_NS).to_bytes(4, "little")
    assert len(data) < 24 + len(cap["time_ns"]) * (16 + 80)
    origlens = []
    offset = 24
    while offset < len(data):
        incl, orig = np.frombuffer(data, dtype="<u4", count=2, offset=offset + 8)
        origlens.append(int(orig))
        offset += 16 + int(incl)
    assert origlens == cap["wire_bytes"].to_list()


def test_header_bytes_that_cannot_be_ipv4_tcp_are_refused(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl").with_columns(wire_bytes=pl.col("payload_bytes") + 30)
    with pytest.raises(pcap.PcapError, match=r"flows\[\d\]\.tcp\.header_bytes: a 30-byte header"):
        pcap.write_pcap(io.BytesIO(), cap, engine["flows"])


def test_packet_export_refuses_quic_flows(run) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    flows = [dict(f) for f in engine["flows"]]
    flows[1]["transport"] = "quic"
    for export in (lambda: pcap.write_pcap(io.BytesIO(), cap, flows),
                   lambda: monitor.capture_csv(io.StringIO(), cap, flows)):
        with pytest.raises(pcap.PcapError, match=r"flows\[1\]\.transport: packet export \(pcap, CSV\) supports TCP"):
            export()
    # The middlebox table needs no headers: it works for any transport.
    assert monitor.middlebox_flows(cap, ["mouse", "elephant"]).height == 2


TSHARK = shutil.which("tshark")


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (apt-get install tshark)")
def test_tshark_reads_every_tcp_packet_and_flow_and_agrees_with_the_csv(run, tmp_path: Path) -> None:
    result, engine = run
    cap = capture_on(result, engine, "btl")
    path = tmp_path / "btl.pcap"
    pcap.write_pcap(path, cap, engine["flows"], full_payload=True)
    fields = [arg for name in monitor.CSV_FIELDS for arg in ("-e", name)]
    out = subprocess.run([TSHARK, "-n", "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-T", "fields", *fields,
                          "-e", "tcp.checksum.status", "-e", "tcp.stream", "-E", "separator=,"],
                         capture_output=True, text=True, timeout=120, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == len(cap["time_ns"])
    rows = [line.split(",") for line in lines]
    assert {row[-1] for row in rows} == {"0", "1"}, "two TCP conversations"
    assert all(row[-2] == "1" for row in rows), "every TCP checksum verifies as good"
    ours = io.StringIO()
    monitor.capture_csv(ours, cap, engine["flows"], header=False)
    # Time, addresses, ports and length agree field for field. (tshark infers retransmissions
    # from sequence numbers and misses those whose original was dropped before this link.)
    assert [row[:6] for row in rows] == [line.split(",")[:6] for line in ours.getvalue().splitlines()]
    tshark_retransmissions = sum(row[6] == "1" for row in rows)
    assert 0 < tshark_retransmissions <= int((cap["retransmission"] & (cap["payload_bytes"] > 0)).sum())


# Two ECN-capable flows (RFC 3168, classic feedback) through a marking CoDel queue, both
# directions of the bottleneck captured: data packets ECT(0) or CE, ACKs with ECE, data with CWR.
ECN_SCENARIO = """
name = "ecn"
duration = "3s"
sample_interval = "off"
[topology]
kind = "dumbbell"
flows = 2
bottleneck_rate = "10Mbps"
rtt = "40ms"
queue = { kind = "codel", limit = "200p", ecn = true }
[flow_defaults]
tcp = { ecn = "classic" }
[[captures]]
link = "btl"
[[captures]]
link = "btl"
direction = "backward"
"""


@pytest.fixture(scope="module")
def ecn_run() -> tuple[pl.DataFrame, dict]:
    scenario = Scenario.from_toml_text(ECN_SCENARIO)
    result, _ = runner.simulate(scenario)
    return result.captures, scenario.resolve().engine


def test_pcap_carries_the_ecn_field_and_the_ece_and_cwr_flags(ecn_run) -> None:
    captures, engine = ecn_run
    out = io.BytesIO()
    pcap.write_pcap(out, captures, engine["flows"])
    seen = []
    for _, buf in dpkt.pcap.Reader(io.BytesIO(out.getvalue())):
        ip = dpkt.ip.IP(buf)
        seen.append((ip.tos & 0b11, ip.data.flags))
    assert seen == list(zip(captures["ecn"].to_list(), captures["flags"].to_list()))
    codepoints = {ecn for ecn, _ in seen}
    assert {2, 3} <= codepoints, f"ECT(0) and CE data packets: {codepoints}"
    assert any(flags & 0x40 for _, flags in seen) and any(flags & 0x80 for _, flags in seen), "ECE and CWR"


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (apt-get install tshark)")
def test_tshark_reads_the_ecn_field_and_the_ece_and_cwr_flags(ecn_run, tmp_path: Path) -> None:
    captures, engine = ecn_run
    path = tmp_path / "ecn.pcap"
    pcap.write_pcap(path, captures, engine["flows"])
    out = subprocess.run([TSHARK, "-n", "-r", str(path), "-T", "fields", "-e", "ip.dsfield.ecn", "-e",
                          "tcp.flags.ece", "-e", "tcp.flags.cwr", "-E", "separator=,"],
                         capture_output=True, text=True, timeout=120, check=True)
    rows = [line.split(",") for line in out.stdout.splitlines()]
    flag = {"0": 0, "1": 1, "False": 0, "True": 1}
    assert [(int(ecn), flag[ece], flag[cwr]) for ecn, ece, cwr in rows] == [
        (ecn, (flags >> 6) & 1, flags >> 7) for ecn, flags in zip(captures["ecn"].to_list(), captures["flags"].to_list())]
