"""bufferlab side by side with ns-3 3.44 on the same dumbbells (`make bench-ns3`).

Each case is one bufferlab dumbbell spec and the same network in ns-3 (benchmarks/ns3/dumbbell.cc,
compiled by `make bench-ns3` against the `ns3` wheel from PyPI, which lives in its own venv and is
never needed by `make test`). Both run with matched settings (MATCHED below): the same rates,
delays, queues in packets, segment size, initial window, SACK, delayed ACK, minimum and initial
RTO, and ns-3's TCP variant with the bufferlab options that model it.

Per case and simulator, over the whole run, measured the same way on both sides:
    goodput      bytes delivered to the receiving applications, all flows, / duration
    util         bottleneck busy time / duration (wire bytes: bufferlab 1500-byte packets,
                 ns-3 1502 with the 2-byte PPP header)
    drops        packets dropped by the bottleneck queue (tail and AQM drops)
    queue        time-averaged bottleneck queue in packets (ns-3: queue disc + device queue)
    Jain         Jain's index of the flows' goodputs
    retx, RTOs   retransmitted segments; expiries of the retransmission timer
    wall, CPU    wall time and CPU time of each simulator (ns-3: the whole process;
                 bufferlab: the engine call and the decoding of its result)
then ratios bufferlab / ns-3 and the notes that explain a gap (NOTES). A printed benchmark, not a
test: `python benchmarks/bench_ns3.py --ns3-binary benchmarks/ns3/build/dumbbell [--cases ...]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bufferlab.pipeline.plan import plan
from bufferlab.pipeline.simulate import simulate
from bufferlab.spec.ns3 import ns3_controller_options
from bufferlab.spec.scenario import Scenario


@dataclass(frozen=True)
class Case:
    key: str
    flows: int
    rate: str
    rate_bps: float
    queue_packets: int
    variant: str  # ns-3's TypeId; bufferlab's cca follows from it
    seconds: float
    access_rate: str
    bottleneck_delay: str = "10ms"
    rtt: str = "40ms"
    # An AQM at the bottleneck instead of the FIFO: bufferlab's queue table, and its ns-3 twin
    # (benchmarks/ns3/dumbbell.cc --qdisc, --qdiscAttributes). The limit is the FIFO's N - 1 on
    # ns-3's side, as the one-packet device queue holds the last one.
    queue: tuple[tuple[str, object], ...] = ()
    qdisc: str = ""
    qdisc_attributes: str = ""
    # ECN-capable TCP on every flow (RFC 3168; bufferlab tcp.ecn = "classic", ns-3 UseEcn On) and
    # an AQM that marks (the queue's `ecn`, ns-3's UseEcn=true).
    ecn: bool = False
    # Segments per ACK on both sides (ns-3's DelAckCount, bufferlab's ack_every).
    ack_every: int = 2
    # Controllers of the first flows, one each (ns-3's TypeIds); the others run `variant`.
    variants: tuple[str, ...] = ()


# The reference dumbbell (scenarios/dumbbell.toml: 40 ms RTT, 10 ms bottleneck delay, 100 packets
# ≈ 0.3 BDP at 100 Mb/s) and its 1 Gb/s version (1000 packets ≈ 0.3 BDP, 10 Gb/s access links).
CASES = [
    Case("1x100M", 1, "100Mbps", 100e6, 100, "TcpNewReno", 20, "1Gbps"),
    Case("10x100M", 10, "100Mbps", 100e6, 100, "TcpNewReno", 20, "1Gbps"),
    Case("100x100M", 100, "100Mbps", 100e6, 100, "TcpNewReno", 20, "1Gbps"),
    Case("100x1G", 100, "1Gbps", 1e9, 1000, "TcpNewReno", 10, "10Gbps"),
    Case("1000x1G", 1000, "1Gbps", 1e9, 1000, "TcpNewReno", 10, "10Gbps"),
    Case("10xCUBIC", 10, "100Mbps", 100e6, 100, "TcpCubic", 20, "1Gbps"),
]

# AQMs at a 100 ms RTT (BDP 833 packets at 100 Mb/s) with 1000 packets of room, where a FIFO
# would hold a standing queue of most of them: 10 flows, each AQM with the RFC's or the paper's
# defaults on both sides, except where ns-3's differ (its PIE and RED assume 1000- and 500-byte
# packets, RED's max_p is 1/LInterm; its RED by default waits between early drops, ns-2's `wait_`:
# no drop until count·p_b reaches 1, then p_b/(2 − count·p_b), gaps of 1/p_b to 2/p_b packets
# where the paper's p_b/(1 − count·p_b) spreads them over 1 to 1/p_b, so Wait=false; its FqCoDel
# and FqPie drop a batch of up to 64 packets at the limit, bufferlab's one by default, as RFC 8290
# §4.1: both set to one), each with drops and with ECN marks.
def _aqm_cases() -> list[Case]:
    twins = [
        ("codel", (("kind", "codel"), ("limit", "1000p")),
         "ns3::CoDelQueueDisc", "MaxSize=999p,Target=5ms,Interval=100ms"),
        ("fq_codel", (("kind", "fq_codel"), ("limit", "1000p")),
         "ns3::FqCoDelQueueDisc", "MaxSize=999p,Target=5ms,Interval=100ms,Flows=1024,DropBatchSize=1"),
        ("fq_pie", (("kind", "fq_pie"), ("limit", "1000p")),
         "ns3::FqPieQueueDisc", "MaxSize=999p,Flows=1024,DropBatchSize=1,MeanPktSize=1500,QueueDelayReference=15ms,"
                                "Tupdate=15ms,A=0.125,B=1.25,MaxBurstAllowance=150ms"),
        ("pie", (("kind", "pie"), ("limit", "1000p")),
         "ns3::PieQueueDisc", "MaxSize=999p,MeanPktSize=1500,QueueDelayReference=15ms,Tupdate=15ms,A=0.125,"
                              "B=1.25,MaxBurstAllowance=150ms"),
        ("red", (("kind", "red"), ("limit", "1000p"), ("min_th", "100p"), ("max_th", "300p"), ("max_p", 0.1),
                 ("w_q", 0.002), ("gentle", True)),
         "ns3::RedQueueDisc", "MaxSize=999p,MinTh=100,MaxTh=300,LInterm=10,QW=0.002,Gentle=true,Wait=false,"
                              "MeanPktSize=1500,LinkBandwidth=100Mbps"),
    ]
    cases = []
    for ecn in (False, True):
        for key, queue, qdisc, attributes in twins:
            cases.append(Case(
                f"{key}-ecn" if ecn else key, 10, "100Mbps", 100e6, 1000, "TcpNewReno", 20, "1Gbps", rtt="100ms",
                queue=(*queue, ("ecn", ecn)), qdisc=qdisc,
                qdisc_attributes=f"{attributes},UseEcn={'true' if ecn else 'false'}", ecn=ecn))
    return cases


AQM_CASES = _aqm_cases()
CASES += AQM_CASES

# DCTCP and Vegas, four flows at 100 Mb/s and 100 ms (BDP 833 packets), 1000 packets of room.
# DCTCP through a queue marking every arrival that finds more than K = C·RTT/7 = 120 packets
# queued (Alizadeh et al. 2010): ns-3's RED with QW = 1, MinTh = K, MaxTh = K + 1 and marks,
# not drops, at or above MaxTh (UseHardDrop false); bufferlab's RED with w_q = 1, min_th = K,
# max_p = 1 and byte mode over a 1-byte mean packet (docs/engine/index.md). ns-3's TcpDctcp turns
# ECN on by itself (sender and receiver); bufferlab's flows set tcp.ecn = "dctcp". Vegas through
# the FIFO: both sides with α = 2, β = 4, γ = 1. BBR (version 1, ns-3's TcpBbr) through the FIFO
# for 30 s, three ProbeRTT periods.
MODERN_CASES = [
    Case("dctcp", 4, "100Mbps", 100e6, 1000, "TcpDctcp", 20, "1Gbps", rtt="100ms",
         queue=(("kind", "red"), ("limit", "1000p"), ("min_th", "120p"), ("max_th", "1000p"), ("max_p", 1.0),
                ("w_q", 1.0), ("gentle", False), ("byte_mode", True), ("mean_packet", "1B"), ("ecn", True)),
         qdisc="ns3::RedQueueDisc", qdisc_attributes="MaxSize=999p,MinTh=120,MaxTh=121,QW=1,Gentle=false,"
                                                     "UseEcn=true,UseHardDrop=false,MeanPktSize=1500,"
                                                     "LinkBandwidth=100Mbps"),
    Case("vegas", 4, "100Mbps", 100e6, 1000, "TcpVegas", 20, "1Gbps", rtt="100ms"),
    Case("bbr", 4, "100Mbps", 100e6, 1000, "TcpBbr", 30, "1Gbps", rtt="100ms"),
]
CASES += MODERN_CASES

# ccperf's experiment #11 (seed 001: 5 NewReno flows, 80 Mb/s, 15 ms, a 10-packet FIFO, 15 s) as the
# ccperf form builds it (access links at ten times the bottleneck, a quarter of the RTT on it),
# with an ACK per segment: the regime its numbers show (python/bufferlab/spec/ccperf.py,
# CCPERF_TCP). The seed's ns-3 run: 61.48 Mb/s, 330 drops.
CASES.append(Case("ccperf11", 5, "80Mbps", 80e6, 10, "TcpNewReno", 15, "800Mbps", bottleneck_delay="3.75ms",
                  rtt="15ms", ack_every=1))

# One BBR flow against one CUBIC flow (Ware et al. 2019, the ware2019 reproduction's mix) at the
# paper's testbed rate and RTT, 10 Mb/s and 40 ms, behind 2 and 8 BDP of drop-tail buffer, 300 s:
# BBR's share of the goodput ("share" in the verdict line) is what the paper models.
CASES += [Case(f"bbr+cubic-{x}bdp", 2, "10Mbps", 10e6, round(x * 10e6 * 0.040 / 12000), "TcpCubic", 300, "100Mbps",
               bottleneck_delay="5ms", variants=("TcpBbr",)) for x in (2, 8)]

# The twins of bench_pipeline's two whole-command cases: the reference dumbbell itself (30 s) and one
# flow of it over 10 s (`benchmarks/bench_pipeline.py`), built with the matched settings below.
REFERENCE_TWIN = Case("dumbbell", 10, "100Mbps", 100e6, 100, "TcpNewReno", 30, "1Gbps")
ONE_FLOW_TWIN = Case("1flow10s", 1, "100Mbps", 100e6, 100, "TcpNewReno", 10, "1Gbps")

# Every setting that had to be matched: ns-3's value where its default differs (left), and the
# bufferlab tcp option that models the ns-3 behaviour (right).
MATCHED = {
    "segment size": ("TcpSocket::SegmentSize 1448 (default 536)", "mss 1448"),
    "initial window": ("TcpSocket::InitialCwnd 10 (default 10)", "initial_window 10"),
    "delayed ACK": ("DelAckCount 2, DelAckTimeout 40 ms (default 200 ms)", "ack_every 2, 40ms"),
    "minimum RTO": ("TcpSocketBase::MinRto 200 ms (default 1 s)", "min_rto 200ms"),
    "RTO rule": ("ClockGranularity 1 ns (default 1 ms): RTO = max(SRTT + 4 RTTVAR, MinRto)",
                 'rto = "rfc6298"'),
    "initial RTO": ("RttEstimator::InitialEstimation 1 s, ConnTimeout 1 s (default 3 s)", "initial_rto 1s"),
    "SACK": ("TcpSocketBase::Sack true", "sack true"),
    "timestamps": ("TcpSocketBase::Timestamp true", "timestamps true"),
    "recovery": ("TcpL4Protocol::RecoveryType TcpPrrRecovery", 'recovery "prr"'),
    "loss detection": ("RFC 6675 DupThresh 3 (ns-3 3.44 has no RACK-TLP)", "rack false"),
    "NewReno growth": ("TcpNewReno grows per ACK", 'ca_increase "per_ack"'),
    "HyStart": ("TcpCubic::HyStart false (ns-3's is HyStart, not HyStart++)", "hystart false"),
    "ssthresh basis": ("GetSsThresh(BytesInFlight): TcpNewReno halves RFC 6675 pipe, TcpCubic takes 0.7 cwnd",
                       'ssthresh_from "pipe" (NewReno), "cwnd" (CUBIC)'),
    "windows": ("Snd/RcvBufSize 64 MiB (default 128 KiB caps the window)", "rwnd none"),
    "queues": ("FifoQueueDisc N-1 + 1-packet device queue on every device (default FqCoDel)",
               "FIFO of N packets"),
}


def _listed_flows(case: Case) -> dict[str, object]:
    """A mix's flows, listed: the first ones with their own controllers, each reducing and growing
    as its ns-3 class does; nothing to list without `variants` (`topology.flows` counts them)."""
    if not case.variants:
        return {}
    flows: list[dict[str, object]] = [{"name": f"flow_{i}"} for i in range(case.flows)]
    for flow, variant in zip(flows, case.variants):
        flow.update(cca=variant, tcp=ns3_controller_options(variant))
    return {"flows": flows}


def bufferlab_scenario(case: Case, seed: int, ssthresh_from: str | None = None) -> Scenario:
    """`case` as a bufferlab scenario with ns-3's settings; `ssthresh_from` overrides the basis of
    the reduction that matches ns-3's (`bufferlab.spec.ns3`: each ns-3 class's basis and growth)."""
    tcp: dict[str, object] = {
        "mss": 1448,
        "initial_window": 10,
        "ack_every": case.ack_every,
        "delayed_ack_timeout": "40ms",
        "min_rto": "200ms",
        "initial_rto": "1s",
        "rto": "rfc6298",
        "sack": True,
        "timestamps": True,
        "recovery": "prr",
        "rack": False,
        "hystart": False,
    }
    if case.ecn:
        tcp["ecn"] = "classic"
    if case.variant == "TcpDctcp":
        tcp["ecn"] = "dctcp"
    tcp.update(ns3_controller_options(case.variant))
    if ssthresh_from is not None:
        tcp["ssthresh_from"] = ssthresh_from
    return Scenario.from_dict(
        {
            "name": f"ns3-{case.key}",
            "seed": seed,
            "duration": f"{case.seconds}s",
            "record": {"interval": "off"},
            "topology": {
                "kind": "dumbbell",
                **({} if case.variants else {"flows": case.flows}),
                "bottleneck_rate": case.rate,
                "bottleneck_delay": case.bottleneck_delay,
                "queue": dict(case.queue) if case.queue else f"{case.queue_packets}p",
                "access_rate": case.access_rate,
                "rtt": case.rtt,
            },
            "flow_defaults": {"cca": case.variant, "traffic": "greedy", "tcp": tcp},
            **_listed_flows(case),
        }
    )


def jain(values: list[float]) -> float:
    total = sum(values)
    squares = sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares else 0.0


def first_share(values: list[float]) -> float:
    """The first flow's share of the total (a mix's flow under test, listed first)."""
    total = sum(values)
    return values[0] / total if total else 0.0


def run_bufferlab(case: Case, seed: int, ssthresh_from: str | None = None) -> dict[str, float]:
    scenario = bufferlab_scenario(case, seed, ssthresh_from)
    cpu = time.process_time()
    raw = simulate(plan(scenario))
    cpu = time.process_time() - cpu
    result = raw.result.counters()
    seconds = result["end_ns"] / 1e9
    bottleneck = next(c for c in result["channels"] if c["name"] == "btl_forward")
    per_flow = [f["bytes_delivered"] * 8 / seconds for f in result["flows"]]
    return {
        "goodput": sum(per_flow),
        "util": bottleneck["busy_ns"] / result["end_ns"],
        "drops": bottleneck["dropped_queue_packets"] + bottleneck.get("dropped_aqm_packets", 0),
        "marks": bottleneck.get("ce_marked_packets", 0),
        "sojourn_ms": bottleneck["sojourn_sum_ns"] / max(bottleneck["sent_packets"], 1) / 1e6,
        "queue": int(bottleneck["queue_packet_ns"]) / result["end_ns"],
        "jain": jain(per_flow),
        "share": first_share(per_flow),
        "retx": sum(f["segments_retransmitted"] for f in result["flows"]),
        "rtos": sum(f["rtos"] for f in result["flows"]),
        "wall": raw.wall_time_s,
        "cpu": cpu,
    }


def run_ns3(case: Case, seed: int, binary: Path) -> dict[str, float]:
    arguments = [
        str(binary),
        f"--flows={case.flows}",
        f"--bottleneckRate={case.rate}",
        f"--bottleneckDelay={case.bottleneck_delay}",
        f"--accessRate={case.access_rate}",
        f"--rtt={case.rtt}",
        f"--queue={case.queue_packets}",
        "--accessQueue=1000",
        "--segmentSize=1448",
        "--initialCwnd=10",
        "--sack=true",
        f"--delAckCount={case.ack_every}",
        "--delAckTimeout=40ms",
        "--minRto=200ms",
        "--initialRto=1s",
        "--clockGranularity=1ns",
        f"--variant={case.variant}",
        *([f"--variants={','.join(case.variants)}"] if case.variants else []),
        "--recovery=TcpPrrRecovery",
        "--hystart=false",
        f"--duration={case.seconds}",
        f"--seed={seed}",
        *([f"--qdisc={case.qdisc}", f"--qdiscAttributes={case.qdisc_attributes}"] if case.qdisc else []),
        f"--ecn={'true' if case.ecn else 'false'}",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(arguments, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = json.loads(completed.stdout.strip().splitlines()[-1])
    seconds = out["duration_s"]
    per_flow = [b * 8 / seconds for b in out["flow_bytes_received"]]
    return {
        "goodput": sum(per_flow),
        "util": out["bottleneck_busy_s"] / seconds,
        "drops": out["queue_drops"] + out["device_drops"],
        "marks": out.get("queue_marks", 0),
        # Little's law: the mean time in queue disc and device queue is the time-averaged queue over
        # the departure rate (1502-byte frames with the PPP header, at the bottleneck's rate).
        "sojourn_ms": 1e3 * out["queue_packet_s"] / max(out["bottleneck_busy_s"] * case.rate_bps / (1502 * 8), 1),
        "queue": out["queue_packet_s"] / seconds,
        "jain": jain(per_flow),
        "share": first_share(per_flow),
        "retx": out["retransmissions"],
        "rtos": out["rtos"],
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }


def best_wall(case: Case, binary: Path, repetitions: int = 3) -> float:
    """ns-3's whole-process wall time for `case`, best of `repetitions`. The benchmarks' quoted
    ns-3 times are from another day; measured in the same session as bufferlab, the ratio does not
    depend on how fast the host happens to run that hour."""
    return min(run_ns3(case, 1, binary)["wall"] for _ in range(repetitions))


def best_walls(cases: list[Case], binary: Path, tool: str) -> list[float]:
    """`best_wall` of each case for benchmark `tool`, once `binary` is known to exist (else one
    line naming --ns3-binary, exit status 2)."""
    if not binary.exists():
        print(f"{tool}: --ns3-binary: {binary} is missing: run `make bench-ns3` (it compiles it)", file=sys.stderr)
        raise SystemExit(2)
    return [best_wall(case, binary) for case in cases]


# Why a case's figures may differ beyond goodput 3 % / drops 15 % (docs/engine/validation.md, "Side by
# side with ns-3", known modelling differences: the measurements behind each note).
NOTES = {
    "1x100M": "one flow leaving slow start: ns-3.44's PRR (RecoverFS from pipe, extra MSS per dupACK "
    "with SACK) recovers differently from RFC 6937",
    "10x100M": "the gap is the first 2 s (10 flows leaving slow start at once; ns-3.44's PRR deepens "
    "it): after 2 s drops differ by +11 %; classic recovery on both sides: -15 % over 20 s (both "
    "measured with ssthresh from FlightSize, -35 % over 20 s; from pipe, as ns-3, -45 %)",
    "100x100M": "with ssthresh from FlightSize (--ssthresh-from flight_size) drops are +25 %: ns-3's "
    "NewReno halves RFC 6675 pipe, 0.30 of the flight at ~8 segments against 0.5",
    "10xCUBIC": "ns-3.44's PRR with CUBIC (beta 0.7) holds ns-3's queue at half bufferlab's; with "
    "classic recovery on both sides the queue is within 3 % and drops +17 % over 5 s, the rest is "
    "ns-3's Linux-style CUBIC arithmetic (segment counter, cnt clamp, own Reno estimate) against RFC 9438",
    "red": "ns-3's RED waits between early drops by default (ns-2's wait_: gaps of 1/p_b to 2/p_b arrivals, "
    "about a third of the paper's rate), so the twin sets Wait=false: ns-3 75.63-79.23 Mb/s and 2.84-2.97 ms over "
    "seeds 1-4 (with wait 78.99-80.39 and 3.25-4.17), bufferlab 73.3-77.1 and 2.0-3.0 over seeds 1-16; the "
    "start-up overshoot decides the run (0-2 s 40.2 / 42.4 Mb/s, no drop in 2-10 s on either side)",
    "red-ecn": "ns-3's RED marks in the gentle region (max_th..2 max_th) where bufferlab drops, as Linux "
    "harddrop (with Gentle=false ns-3 drops 240 and marks 170, bufferlab 241 and 201); and ns-3's PRR-paced "
    "CWR marks its flows again in the start-up (427 marks in 0-2 s): with CWR at once (TcpClassicRecovery) "
    "ns-3 gives 85.43 Mb/s and 3.08 ms (bufferlab -3.6 %, +20.1 %)",
    "fq_codel-ecn": "no drop and no draw on either side: the run is the phase of the flows' synchronised "
    "sawtooth. ns-3's CWR lowers cwnd by PRR and halves nine flows twice by 1.2 s (ssthresh 41-42), bufferlab "
    "halves at once and takes its second halving at 2.84 s, all ten together (2-10 s 72.5 against 77.8 Mb/s); ns-3 "
    "with TcpClassicRecovery (CWR at once) matches the start-up (0-2 s 72.7 / 71.4 Mb/s) and gives 83.93 Mb/s, "
    "its flows halving in groups; CoDel's Newton law and a 1500-byte quantum ruled out",
    "pie-ecn": "ns-3's seed 1 tops its spread (seeds 1-4 80.7-89.4 Mb/s, 9.9-13.3 ms; bufferlab's 1-16 "
    "82.6-88.3 and 7.9-11.7: means +0.5 %, -12 %). ns-3 ignores duplicate ACKs in CWR, so every flow times out "
    "once, with ssthresh 54-128 from pipe; bufferlab halved a third time on a loss in the window its ECN-Echo "
    "had answered (against RFC 3168 6.1.2, fixed: 82.25 -> 85.19 Mb/s). 2-10 s 79.3 / 91.6 Mb/s, 10-20 s "
    "96.5 / 96.4 with 13.0 / 13.9 ms; burst allowance ruled out",
    "fq_pie": "within since duplicate ACKs with SACK count only when they SACK new data (RFC 6675 2; "
    "before, the ACKs for spurious post-timeout retransmissions started fast recoveries at a flight of ~16 "
    "in 3 flows: 80.05 Mb/s); what varies is how many flows lose a needed retransmission to PIE after "
    "their timeout (second RTO, ssthresh ~7): ns-3 1, 1, 0 x 6 in seeds 1-8, bufferlab 0 in 9 of seeds "
    "1-16 and 1-6 in the rest (75.7-87.5 Mb/s), as its flow queues' PIE probability at the timeouts is "
    "~3x ns-3's (0.105 / 0.032, seed 1); ns-3 ACKs the first data segment at once and its slow start runs "
    "ahead (a bufferlab build doing the same: 85.09 Mb/s, 11 RTOs and one flow losing again, as ns-3)",
    "fq_pie-ecn": "ns-3's TCP enters CWR on an ECE after a timeout and takes ssthresh from the 1-2 "
    "segments then in flight: 9-10 of its 10 flows leave the start-up with ssthresh 2 (seeds 1-4) and "
    "regrow by congestion avoidance (17.4 Mb/s in 2-5 s against bufferlab's 66.5); bufferlab reduces "
    "once per window of data (RFC 3168 6.1.2). No drops after 2 s on either side",
    "dctcp": "20 s is short at a 100 ms RTT: the first ECN response halves (α starts at 1) and the "
    "windows climb back at a segment per RTT, so both sides run below the link (79 % and 75 %), "
    "without a drop; ns-3's TcpDctcp reduces over a round trip in its CWR state, bufferlab at once",
    "bbr": "within the band, retransmissions too (1727 / 1709) since a timeout sends again what SACK reports "
    "missing and new data before the segments above the highest SACK (RFC 6675 5.1, as ns-3's NextSeg rule 1.b): "
    "before, every timeout inside a recovery behind the 1000-packet queue resent all unSACKed segments, "
    "400-600 still queued (3964 retransmitted, 2639 arriving twice; docs/engine/validation.md, The controllers' "
    "twins)",
    "bbr+cubic-2bdp": "the flows' timeouts, not BBR's model: ns-3's time out 17 times (BBR 7, CUBIC 10; 23 with a "
    "1 s floor), bufferlab's once; ns-3's CUBIC keeps a smaller window (27 against 43 packets), its BBR measures a "
    "smaller RTprop and takes more (0.68 against 0.52; at 8 BDP 0.26 against 0.11, where bufferlab's BBR times "
    "out 13 times under RFC 6298's 200 ms floor: with a 1 s floor on both sides 0.403 against 0.385). At 2 BDP "
    "ns-3's timeouts follow a dropped retransmission (11) or a burst of drops that delays the fast retransmit past "
    "the RFC 6298 timer (6): ns-3 has 374 recoveries against 260 and loses more in each, its PRR counting a "
    "SACKed duplicate ACK's segment twice, and its BBR alone holds a standing queue of one BDP where "
    "bufferlab's holds 3 packets (docs/engine/validation.md)",
    "vegas": "ns-3's TcpVegas (Linux's) grows in slow start every RTT and compares "
    "cwnd·(RTT − BaseRTT)/BaseRTT: its flows are still below their equilibrium at 20 s (utilisation "
    "66 %, queue 2.5 packets < N·α = 8); bufferlab's reach 94 % over the 20 s, without a drop",
}


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else ("=" if a == b else "inf")


HEADER = ("| case | sim | goodput Mb/s | util | drops | CE marks | mean queue p | mean sojourn ms | Jain | retx | RTOs "
          "| wall s | CPU s |")


def print_rows(case: Case, ours: dict[str, float], theirs: dict[str, float]) -> None:
    """One case's two rows and their ratios (bufferlab / ns-3; speed as ns-3 / bufferlab)."""
    for name, m in (("bufferlab", ours), ("ns-3", theirs)):
        print(
            f"| {case.key} | {name} | {m['goodput'] / 1e6:.2f} | {m['util']:.4f} | {m['drops']} | {m['marks']} | "
            f"{m['queue']:.1f} | {m['sojourn_ms']:.2f} | {m['jain']:.4f} | {m['retx']} | {m['rtos']} | "
            f"{m['wall']:.2f} | {m['cpu']:.2f} |"
        )
    print(
        f"| {case.key} | ratio | {ratio(ours['goodput'], theirs['goodput'])} | "
        f"{ratio(ours['util'], theirs['util'])} | {ratio(ours['drops'], theirs['drops'])} | "
        f"{ratio(ours['marks'], theirs['marks'])} | {ratio(ours['queue'], theirs['queue'])} | "
        f"{ratio(ours['sojourn_ms'], theirs['sojourn_ms'])} | {ratio(ours['jain'], theirs['jain'])} | "
        f"{ratio(ours['retx'], theirs['retx'])} | {ratio(ours['rtos'], theirs['rtos'])} | "
        f"{ratio(theirs['wall'], ours['wall'])}x faster | {ratio(theirs['cpu'], ours['cpu'])}x faster |",
        flush=True,
    )


def print_verdicts(rows: list[tuple[Case, dict[str, float], dict[str, float]]]) -> None:
    """Goodput within 3 % of ns-3 and, for a FIFO, drops within 15 %; for an AQM, whose drops
    and marks follow its transients, mean sojourn within 20 %; or the note that says why not."""
    for case, ours, theirs in rows:
        goodput_gap = ours["goodput"] / theirs["goodput"] - 1
        if case.qdisc:
            second, gap, band = "mean sojourn", ours["sojourn_ms"] / theirs["sojourn_ms"] - 1, 0.20
        else:
            second, band = "drops", 0.15
            gap = ours["drops"] / theirs["drops"] - 1 if theirs["drops"] else float(ours["drops"] > 0)
        verdict = "within" if abs(goodput_gap) <= 0.03 and abs(gap) <= band else "OUTSIDE"
        note = NOTES.get(case.key, "")
        # A mix of controllers: the first flow's share of the goodput, each side.
        share = f", {case.variants[0]}'s share {ours['share']:.3f} / {theirs['share']:.3f}" if case.variants else ""
        print(
            f"{case.key}: goodput {goodput_gap:+.1%}, {second} {gap:+.1%}{share}: {verdict} 3 %/{band:.0%}"
            + (f"; {note}" if note and verdict == "OUTSIDE" else "")
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns3-binary", type=Path, default=Path("benchmarks/ns3/build/dumbbell"))
    parser.add_argument("--cases", nargs="*", default=[c.key for c in CASES], choices=[c.key for c in CASES])
    parser.add_argument("--seconds", type=float, help="override every case's simulated seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settings", action="store_true", help="print the matched settings first")
    parser.add_argument("--ssthresh-from", choices=["flight_size", "pipe", "cwnd"],
                        help="bufferlab's tcp.ssthresh_from for every case (default: ns-3's rule per variant)")
    args = parser.parse_args()
    if not args.ns3_binary.exists():
        print(f"bench_ns3: {args.ns3_binary} is missing: run `make bench-ns3` (it compiles it)", file=sys.stderr)
        return 2
    if args.settings:
        print("| setting | ns-3 | bufferlab |\n|---|---|---|")
        for name, (ns3_value, bufferlab_value) in MATCHED.items():
            print(f"| {name} | {ns3_value} | {bufferlab_value} |")
        print()
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1), flush=True)
    rows = []
    for case in (c for c in CASES if c.key in args.cases):
        if args.seconds is not None:
            case = Case(**{**case.__dict__, "seconds": args.seconds})
        ours = run_bufferlab(case, args.seed, args.ssthresh_from)
        theirs = run_ns3(case, args.seed, args.ns3_binary)
        rows.append((case, ours, theirs))
        print_rows(case, ours, theirs)
    print()
    print_verdicts(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
