"""bufferbloat — buffer size or AQM, and with which congestion controller: the question of the
active-queue-management literature, with verdicts taken from its RFCs.

A drop-tail FIFO sized for throughput (one bandwidth-delay product or more) fills whenever
loss-based TCP is greedy: every packet, including those of a sparse, latency-sensitive flow
sharing the link, waits behind the standing queue, up to limit/C. The AQMs replace the limit as
the control of delay: RED (Floyd and Jacobson 1993) drops early as its average queue moves
between two thresholds; CoDel (RFC 8289) drops at the head while the sojourn time has stayed above
TARGET = 5 ms for an INTERVAL of 100 ms; PIE (RFC 8033) drops arrivals with a probability its PI
controller drives toward a queueing delay of QDELAY_REF = 15 ms; FQ-CoDel (RFC 8290) runs CoDel
in a queue per flow and serves queues that were empty (new, sparse flows) before the backlogged
ones, so a sparse flow's packets meet no queue at all. Whatever the limit, then, an AQM should
hold the delay at its own target, not at limit/C, and keep the link busy.

The experiment. A dumbbell whose bottleneck is 100 Mb/s with a base RTT of 100 ms, the middle of
the 20-300 ms that users of the Internet see to their servers: BDP = 1.25 MB = 833 packets of
1500 bytes. Eight greedy bulk flows (starts jittered over the first second, each seed an
independent replication) and one sparse flow, a constant-bit-rate datagram flow of 64 kb/s in
200-byte packets (a G.711 voice call's rate, 40 packets a second), which stops writing two
seconds before the end so that every packet it sent was either delivered or lost. The
bottleneck's queue limit is swept log-spaced from 0.1 to 10 BDP, for each queue kind {FIFO, RED,
CoDel, FQ-CoDel, PIE} and each controller {Reno, CUBIC, BBR, BBRv3}. The AQMs take their RFCs' defaults
(CoDel and FQ-CoDel 5 ms / 100 ms, PIE 15 ms / 15 ms); RED takes thresholds of 10 and 30 ms at
C (83 and 249 packets: max_th = 3 min_th, Floyd's guideline, the band between CoDel's and PIE's
targets), max_p = 0.1 and w_q = 0.002 (Floyd's recommendations), gentle.

Every TCP flow reduces from cwnd at a congestion event (`tcp.ssthresh_from = "cwnd"`, as Linux
and ns-3 do): the engine's default, RFC 5681's FlightSize, lets a CUBIC flow behind a head-drop
AQM raise its window at every reduction once its recoveries overlap (docs/engine/index.md, "The
reduction's basis"), which would measure that pathology instead of the AQM.

What is measured, per run, after a warm-up (`scale`'s ``warm_up_s``) that every bulk flow's
start-up must have ended in (a precondition): the bottleneck's utilisation (busy time), its
standing delay (the mean sojourn of the packets that left it) and the 99th percentile of those
sojourns, its time-average queue in packets, and the sparse flow's one-way delay at its 99th
percentile with its loss over the run. The percentiles are the metric catalogue's
(`p99_qdisc_delay_l2`, `p99_one_way_delay_l3`) over the packets after the warm-up: the runs
record their delay distributions from it (`record.warmup`), so slow start's overshoot is not
in them and a p99 is the steady state's, which is how a voice call judges a queue: by the delay
that all but one packet in a hundred stays under, not by the mean. Each quantity is one function
(`utilisation`, `standing_delay_ms`, `p99_sojourn_ms`, `mean_queue_packets`,
`sparse_flow_delay_ms`, `sparse_flow_loss`).

The delays are also drawn as the AQM literature draws them (CoDel's and PIE's evaluations, RFC
7928 §2.2): the CDF of the bottleneck's sojourn times, one line per queue discipline, here under
a limit of one BDP and under the largest, where a FIFO's delay is its limit's and an AQM's its
target's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from ..study.sweep import Sweep
from .base import Observation, Precondition, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..store.reader import Results

# --- the dumbbell -------------------------------------------------------------------------------

RATE_BPS = 100_000_000
RTT_S = 0.100
PACKET = 1500
BDP_PACKETS = round(RATE_BPS * RTT_S / (PACKET * 8))  # 833
BULK_FLOWS = 8
SPARSE = "voip"
SPARSE_RATE_BPS = 64_000
SPARSE_PACKET = 200  # bytes on the wire
SPARSE_STOPS_BEFORE_END_S = 2.0  # longer than any one-way delay here (at most 10 BDP + 50 ms)
SAMPLE = "100ms"

# --- the queues (their RFCs' defaults; RED's as the module docstring says) ----------------------

KINDS = ("fifo", "red", "codel", "fq_codel", "pie")
AQMS = ("red", "codel", "fq_codel", "pie")
KIND_NAMES = {"fifo": "FIFO", "red": "RED", "codel": "CoDel", "fq_codel": "FQ-CoDel", "pie": "PIE"}
CODEL_TARGET_MS = 5.0     # RFC 8289 §4.4
PIE_TARGET_MS = 15.0      # RFC 8033 §4, QDELAY_REF
RED_MIN_TH = round(0.010 * RATE_BPS / (PACKET * 8))  # 10 ms at C: 83 packets
RED_MAX_TH = 3 * RED_MIN_TH                          # 30 ms at C: 249 packets
MTU_TIME_MS = PACKET * 8 / RATE_BPS * 1000           # 0.12 ms: one full-size packet at C

CONTROLLERS = ("reno", "cubic", "bbr", "bbr3")
LOSS_BASED = ("reno", "cubic")
MODEL_BASED = ("bbr", "bbr3")
# The controller states after start-up, in `cc_state`: Reno and CUBIC 1 congestion avoidance,
# 2 fast recovery; BBR 2 ProbeBW, 3 ProbeRTT; BBRv3 3 ProbeRTT, 4-7 ProbeBW's DOWN, CRUISE, REFILL
# and UP (docs/engine/index.md, the flows' series).
STEADY_STATES = {"reno": (1, 2), "cubic": (1, 2), "bbr": (2, 3), "bbr3": (3, 4, 5, 6, 7)}

# --- the thresholds of the preconditions and observations ---------------------------------------

SATURATED = 0.95          # a FIFO of ≥ 1 BDP keeps the link at least this busy
MIN_WINDOW_RTTS = 200     # base RTTs measured after the warm-up
MAX_SPARSE_LOSS = 0.05    # the sparse flow's loss: its delay is that of ≥ 95 % of its packets
HIGH_UTILISATION = 0.95   # an AQM keeps the link this busy with Reno and CUBIC
CODEL_BAND = 2.0          # CoDel: mean sojourn at most this many targets
PIE_BAND = 0.5            # PIE: mean sojourn within ±50 % of its target
SHARED_BAND = (0.10, 0.5)  # a sparse flow in one shared queue: its p99 queueing within 10 % + 0.5 ms of the link's
FQ_SPARSE_MTUS = 2        # FQ-CoDel: the sparse flow's p99 queueing at most two full-size packets at C
QUANTILE_ERROR = 1 / 64   # a stored distribution's quantile is within this fraction of the value (record::histogram)


def scale(quick: bool) -> dict[str, Any]:
    """The sweep's size: the quick variant runs three limits and two controllers for CI."""
    if quick:
        return {"multiples": [0.1, 1.0, 10.0], "controllers": ["cubic", "bbr"], "duration_s": 40, "warm_up_s": 10,
                "seeds": 1}
    return {"multiples": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], "controllers": list(CONTROLLERS), "duration_s": 120,
            "warm_up_s": 20, "seeds": 3}


def limit_packets(multiple: float) -> int:
    """`multiple` × BDP in packets of 1500 bytes."""
    return max(1, round(multiple * BDP_PACKETS))


def red_thresholds(multiple: float) -> tuple[int, int]:
    """RED's (min_th, max_th) in packets under a limit of `multiple` × BDP: 10 and 30 ms at C, or,
    under a limit below max_th, max_th at the limit and min_th a third of it."""
    limit = limit_packets(multiple)
    if limit >= RED_MAX_TH:
        return RED_MIN_TH, RED_MAX_TH
    return max(1, limit // 3), limit


def queue_spec(kind: str, multiple: float) -> Any:
    """The bottleneck's queue of `kind` with a limit of `multiple` × BDP."""
    limit = f"{limit_packets(multiple)}p"
    if kind == "fifo":
        return limit
    spec: dict[str, Any] = {"kind": kind, "limit": limit}
    if kind == "red":
        min_th, max_th = red_thresholds(multiple)
        spec.update(min_th=f"{min_th}p", max_th=f"{max_th}p", max_p=0.1, w_q=0.002)
    return spec


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    points = [(kind, m) for kind in KINDS for m in s["multiples"]]
    flows: list[dict[str, Any]] = [{"name": f"bulk_{i}"} for i in range(BULK_FLOWS)]
    flows.append({"name": SPARSE, "start": "0s", "stop": f"{s['duration_s'] - SPARSE_STOPS_BEFORE_END_S:g}s",
                  "traffic": {"kind": "cbr", "rate": f"{SPARSE_RATE_BPS // 1000}kbps", "packet": f"{SPARSE_PACKET}B"}})
    base = {
        "name": "bufferbloat", "duration": f"{s['duration_s']}s", "sample_interval": SAMPLE,
        # Every flow's series (the bulk flows' states for the warm-up) and the bottleneck's (its
        # busy time, sojourn and queue after the warm-up); the delay distributions from the
        # warm-up on (the p99 metrics of the steady state).
        "record": {"flows": "all", "links": ["btl"], "warmup": f"{s['warm_up_s']}s"},
        "topology": {"kind": "dumbbell", "bottleneck_rate": f"{RATE_BPS // 1_000_000}Mbps", "bottleneck_delay": "5ms",
                     "rtt": f"{RTT_S * 1000:g}ms", "queue": "100p"},
        "flow_defaults": {"cca": "cubic", "traffic": "greedy", "start": {"dist": "uniform", "low": "0s", "high": "1s"},
                          "tcp": {"ssthresh_from": "cwnd"}},
        "flows": flows,
    }
    return {"sweep": Sweep.from_dict({
        "name": "bufferbloat", "base": base, "seeds": s["seeds"],
        "axes": [{"key": "flow_defaults.cca", "values": s["controllers"]},
                 {"zip": [{"key": "topology.queue", "values": [queue_spec(k, m) for k, m in points]},
                          {"key": "meta.queue_kind", "values": [k for k, _ in points]},
                          {"key": "meta.limit_bdp", "values": [m for _, m in points]}]}]})}


# --- the measured quantities, one function each ---------------------------------------------------
#
# Each takes the run's row of `_run_table`: its bottleneck's cumulative counters at the warm-up's
# end and at the run's end, and the run's metrics ("link.<metric>" of the bottleneck,
# "sparse.<metric>" of the sparse flow), whose delay percentiles count the packets after the
# warm-up (`record.warmup`).


def utilisation(run: dict[str, Any]) -> float:
    """The bottleneck's busy fraction after the warm-up."""
    return float((run["busy1"] - run["busy0"]) / (run["t1_ns"] - run["t0_ns"]))


def standing_delay_ms(run: dict[str, Any]) -> float:
    """The bottleneck's standing delay: the mean sojourn of the packets that left its queue after
    the warm-up, ms."""
    sent = run["sent1"] - run["sent0"]
    return float((run["sojourn1"] - run["sojourn0"]) / sent / 1e6) if sent > 0 else float("nan")


def p99_sojourn_ms(run: dict[str, Any]) -> float:
    """The 99th percentile of the bottleneck's sojourn times after the warm-up, ms."""
    value = run["link.p99_qdisc_delay_l2"]
    return float("nan") if value is None else float(value)


def mean_queue_packets(run: dict[str, Any]) -> float:
    """The bottleneck's queue after the warm-up, packets: the mean of its samples."""
    return float(run["queue_mean"])


def sparse_flow_delay_ms(run: dict[str, Any]) -> float:
    """The sparse flow's one-way delay after the warm-up, ms: the 99th percentile of its packets'
    (send to arrival)."""
    value = run["sparse.p99_one_way_delay_l3"]
    return float("nan") if value is None else float(value)


def sparse_flow_loss(run: dict[str, Any]) -> float:
    """The sparse flow's loss over the run: the share of its bytes sent that never arrived (it
    stops writing before the end, so none is still on its way)."""
    return 1 - run["sparse_delivered"] / run["sparse_sent"] if run["sparse_sent"] else float("nan")


# --- reading the store --------------------------------------------------------------------------

_STUDY_RUNS = "SELECT run_id FROM study_points WHERE study_id = ? AND status = 'complete'"


def _run_table(res: Results, study: str, warm_up_s: float) -> pl.DataFrame:
    """One row per complete run: its point, the bottleneck's cumulative counters at the first
    sample from `warm_up_s` on and at the last, the bulk flows' warm-up (when each first reached
    a steady state), and the run's counters and metrics."""
    runs = res.study_runs(study).filter(pl.col("status") == "complete").select(
        "run_id", "seed", pl.col("flow_defaults.cca").alias("cca"), pl.col("meta.queue_kind").alias("kind"),
        pl.col("meta.limit_bdp").alias("multiple"))
    start_ns = int(warm_up_s * 1e9)
    link = res.query(
        "SELECT s.run_id, min(s.time_ns) AS t0_ns, max(s.time_ns) AS t1_ns, "
        "arg_min(s.busy_ns, s.time_ns) AS busy0, arg_max(s.busy_ns, s.time_ns) AS busy1, "
        "arg_min(s.sojourn_ns, s.time_ns) AS sojourn0, arg_max(s.sojourn_ns, s.time_ns) AS sojourn1, "
        "arg_min(s.sent_packets, s.time_ns) AS sent0, arg_max(s.sent_packets, s.time_ns) AS sent1, "
        "avg(s.queue_packets) AS queue_mean "
        "FROM channel_timeseries s JOIN channels c ON c.run_id = s.run_id AND c.channel = s.channel "
        f"WHERE c.name = 'btl_forward' AND s.time_ns >= ? AND s.run_id IN ({_STUDY_RUNS}) GROUP BY s.run_id",
        [start_ns, study])
    # When each bulk flow first reached a steady state, for each family of controllers (loss-based,
    # BBR, BBRv3: `STEADY_STATES`); the warm-up is the latest of its flows' (null if one never did).
    warm = res.query(
        "SELECT s.run_id, s.flow, min(s.time_ns) FILTER (WHERE s.cc_state IN (1, 2)) AS loss_based_ns, "
        "min(s.time_ns) FILTER (WHERE s.cc_state IN (2, 3)) AS bbr_ns, "
        "min(s.time_ns) FILTER (WHERE s.cc_state IN (3, 4, 5, 6, 7)) AS bbr3_ns "
        "FROM flow_timeseries s JOIN flows f ON f.run_id = s.run_id AND f.flow = s.flow "
        f"WHERE f.name <> ? AND s.run_id IN ({_STUDY_RUNS}) GROUP BY s.run_id, s.flow",
        [SPARSE, study])
    counters = res.query(
        "SELECT c.run_id, c.dropped_aqm_packets AS aqm_drops, c.ce_marked_packets AS ce_marks, "
        "c.dropped_queue_packets AS tail_drops, f.payload_bytes_sent AS sparse_sent, "
        "f.bytes_delivered AS sparse_delivered, f.path AS sparse_path "
        "FROM channels c JOIN flows f ON f.run_id = c.run_id AND f.name = ? "
        f"WHERE c.name = 'btl_forward' AND c.run_id IN ({_STUDY_RUNS})", [SPARSE, study])
    # The run's whole-run metrics too, the bottleneck's as "link.<metric>" and the sparse flow's as
    # "sparse.<metric>", for the functions above to read whichever they judge on.
    link_metrics = res.query(f"SELECT * FROM link_metrics WHERE bottleneck AND run_id IN ({_STUDY_RUNS})", [study])
    link_metrics = link_metrics.rename({c: f"link.{c}" for c in link_metrics.columns if c != "run_id"})
    sparse_metrics = res.query(f"SELECT * FROM flow_metrics WHERE name = ? AND run_id IN ({_STUDY_RUNS})",
                               [SPARSE, study])
    sparse_metrics = sparse_metrics.rename({c: f"sparse.{c}" for c in sparse_metrics.columns if c != "run_id"})
    table = runs.join(link, on="run_id", how="left") \
        .join(counters, on="run_id", how="left").join(link_metrics, on="run_id", how="left") \
        .join(sparse_metrics, on="run_id", how="left")
    warm_ups: dict[str, tuple[int | None, ...]] = {}
    for (run_id,), g in warm.group_by(["run_id"]):
        warm_ups[run_id] = tuple(None if g[col].null_count() else int(_hi(g[col]))
                                 for col in ("loss_based_ns", "bbr_ns", "bbr3_ns"))
    index = {"bbr": 1, "bbr3": 2}
    family = [warm_ups.get(r, (None, None, None))[index.get(c, 0)] for r, c in zip(table["run_id"], table["cca"])]
    return table.with_columns(pl.Series("warm_up_ns", family, dtype=pl.Int64),
                              (pl.col("t0_ns") / 1e9).alias("t0"), (pl.col("t1_ns") / 1e9).alias("t1"))


def sparse_floor_ms(res: Results, run_id: str, path: Sequence[int]) -> float:
    """The sparse flow's one-way delay without any queue: the propagation of every channel of its
    path and its packet's serialisation on each, ms."""
    channels = res.query("SELECT channel, delay_ns, rate_bps FROM channels WHERE run_id = ?", [run_id])
    by_id: dict[int, tuple[int, int]] = {c: (d, r) for c, d, r in channels.iter_rows()}
    return sum(by_id[c][0] / 1e6 + SPARSE_PACKET * 8 / by_id[c][1] * 1000 for c in path)


def measure(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    """One row per run: controller, queue kind, limit (× BDP), seed; the warm-up and the window
    after it; utilisation, standing delay and p99 sojourn, mean queue, the sparse flow's p99
    delay, its floor and its loss; the AQM's signals and the tail drops."""
    study = studies["sweep"]
    warm_up_s = float(scale(study.startswith("bufferbloat-quick"))["warm_up_s"])
    table = _run_table(res, study, warm_up_s)
    floor = None
    rows = []
    for run in table.iter_rows(named=True):
        if floor is None and run["sparse_path"] is not None:
            floor = sparse_floor_ms(res, run["run_id"], run["sparse_path"])  # one dumbbell: the same in every run
        measured = run["t0"] is not None
        rows.append({
            "run_id": run["run_id"], "cca": run["cca"], "kind": run["kind"], "multiple": run["multiple"],
            "seed": run["seed"], "warm_up_s": None if run["warm_up_ns"] is None else run["warm_up_ns"] / 1e9,
            "window_start_s": warm_up_s, "window_s": (run["t1"] - run["t0"]) if measured else 0.0,
            "utilisation": utilisation(run) if measured else None,
            "delay_ms": standing_delay_ms(run) if measured else None,
            "p99_delay_ms": p99_sojourn_ms(run) if measured else None,
            "queue_packets": mean_queue_packets(run) if measured else None,
            "sparse_ms": sparse_flow_delay_ms(run) if measured else None,
            "sparse_loss": sparse_flow_loss(run), "aqm_signals": run["aqm_drops"] + run["ce_marks"],
            "tail_drops": run["tail_drops"]})
    schema = {"run_id": pl.Utf8, "cca": pl.Utf8, "kind": pl.Utf8, "multiple": pl.Float64, "seed": pl.Int64,
              "warm_up_s": pl.Float64, "window_start_s": pl.Float64, "window_s": pl.Float64,
              "utilisation": pl.Float64, "delay_ms": pl.Float64, "p99_delay_ms": pl.Float64,
              "queue_packets": pl.Float64, "sparse_ms": pl.Float64,
              "sparse_loss": pl.Float64, "aqm_signals": pl.Int64, "tail_drops": pl.Int64}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.with_columns(pl.lit(floor if floor is not None else float("nan")).alias("sparse_floor_ms")) \
        .with_columns((pl.col("sparse_ms") - pl.col("sparse_floor_ms")).alias("sparse_queueing_ms"))


def limit_delay_ms(multiple: float) -> float:
    """limit/C, ms: the delay of a full queue of `multiple` × BDP."""
    return limit_packets(multiple) * PACKET * 8 / RATE_BPS * 1000


# --- preconditions --------------------------------------------------------------------------------


def steady_key(cca: str) -> str:
    return f"steady state: {_cca(cca)}"


def engaged_key(kind: str) -> str:
    return f"AQM engaged: {KIND_NAMES[kind]}"


SATURATED_KEY = "bottleneck saturated"
SPARSE_FQ_KEY = "sparse flow delivered: FQ-CoDel"
SPARSE_SHARED_KEY = "sparse flow delivered: shared queues"


def _cca(cca: str) -> str:
    from ..plots.common import controller_name

    return controller_name(cca)


def _deep(m: pl.DataFrame) -> pl.DataFrame:
    """The runs with a limit of at least one BDP."""
    return m.filter(pl.col("multiple") >= 1.0)


def _lo(column: pl.Series) -> float:
    """The smallest value of a numeric column (NaN for none)."""
    values = [float(v) for v in column.to_list() if v is not None]
    return min(values) if values else float("nan")


def _hi(column: pl.Series) -> float:
    """The largest value of a numeric column (NaN for none)."""
    values = [float(v) for v in column.to_list() if v is not None]
    return max(values) if values else float("nan")


def _mean(column: pl.Series) -> float:
    values = [float(v) for v in column.to_list() if v is not None]
    return sum(values) / len(values) if values else float("nan")


def _range(values: Sequence[float], fmt: str = ".3f") -> str:
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "none"
    low, high = min(values), max(values)
    return f"{low:{fmt}}" if low == high else f"{low:{fmt}}–{high:{fmt}}"


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    m = measure(res, studies)
    out = []
    fifo = _deep(m).filter(pl.col("kind") == "fifo")
    lowest = _lo(fifo["utilisation"]) if fifo.height else None
    out.append(Precondition(
        SATURATED_KEY, f"the bottleneck is the bottleneck: with a FIFO of ≥ 1 BDP every run keeps it ≥ {SATURATED:.0%} "
        "busy after the warm-up", f"lowest {lowest:.3f} over {fifo.height} runs" if lowest is not None else "no run",
        lowest is not None and lowest >= SATURATED))
    for kind in AQMS:
        runs = _deep(m).filter(pl.col("kind") == kind)
        fewest = _lo(runs["aqm_signals"]) if runs.height else None
        out.append(Precondition(
            engaged_key(kind), f"every {KIND_NAMES[kind]} run with a limit of ≥ 1 BDP dropped early or marked CE "
            "(> 0 AQM drops and CE marks; the tail drops of its limit do not count)",
            f"fewest {fewest:.0f} over {runs.height} runs" if fewest is not None else "no run",
            fewest is not None and fewest > 0))
    for key, runs, what in (
            (SPARSE_FQ_KEY, m.filter(pl.col("kind") == "fq_codel"), "every FQ-CoDel run"),
            (SPARSE_SHARED_KEY, _deep(m).filter(pl.col("kind").is_in(["fifo", "red", "codel", "pie"])
                                                & pl.col("cca").is_in(LOSS_BASED)),
             "every Reno and CUBIC run of a shared queue (FIFO, RED, CoDel, PIE) with a limit of ≥ 1 BDP")):
        worst = _hi(runs["sparse_loss"]) if runs.height else None
        out.append(Precondition(
            key, f"the sparse flow delivered its packets: in {what} it lost ≤ {MAX_SPARSE_LOSS:.0%} (its delay is "
            "then that of nearly all its packets)", f"most lost {worst:.2%} over {runs.height} runs"
            if worst is not None else "no run", worst is not None and worst <= MAX_SPARSE_LOSS))
    for cca in [c for c in CONTROLLERS if c in set(m["cca"].to_list())]:
        runs = m.filter(pl.col("cca") == cca)
        warm = runs["warm_up_s"].to_list()
        start = runs["window_start_s"][0]
        shortest = _lo(runs["window_s"])
        latest = None if None in warm else max(warm)
        ok = latest is not None and latest <= start and shortest >= MIN_WINDOW_RTTS * RTT_S
        out.append(Precondition(
            steady_key(cca), f"in every {_cca(cca)} run every bulk flow's start-up ended before the measurement starts "
            f"({start:g} s) and ≥ {MIN_WINDOW_RTTS} base RTTs ({MIN_WINDOW_RTTS * RTT_S:g} s) are measured after it",
            ("a bulk flow never left its start-up" if latest is None else f"latest start-up end {latest:.1f} s")
            + f"; shortest window {shortest:.1f} s", ok))
    return out


# --- observations ---------------------------------------------------------------------------------


def _steady(m: pl.DataFrame, ccas: Sequence[str]) -> tuple[str, ...]:
    present = set(m["cca"].to_list())
    return tuple(steady_key(c) for c in ccas if c in present)


def _not_run(key: str, claim: str, seed_value: str, what: str) -> Observation:
    return Observation(key, claim, seed_value, f"no {what} run in this variant", None, requires=())


def _points(runs: pl.DataFrame, column: str, fmt: str) -> str:
    """`column` per (controller, limit), the range over seeds."""
    parts = []
    for (cca,), g in runs.group_by(["cca"], maintain_order=True):
        cells = [f"{x:g}: {_range(h[column].to_list(), fmt)}" for (x,), h in g.group_by(["multiple"], maintain_order=True)]
        parts.append(f"{_cca(cca)} " + ", ".join(cells))
    return "; ".join(parts)


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    m = measure(res, studies).sort("cca", "kind", "multiple", "seed")
    deep_loss = _deep(m).filter(pl.col("cca").is_in(LOSS_BASED))
    loss_steady = _steady(m, LOSS_BASED)
    per_bdp = "limits in BDP: mean sojourn ms"
    obs = []

    # FIFO: the standing delay grows with the limit, as limit/C.
    fifo = deep_loss.filter(pl.col("kind") == "fifo")
    claim = ("a drop-tail FIFO's standing delay grows with its limit, as limit/C once the limit exceeds the BDP "
             "(Reno and CUBIC)")
    if fifo.height:
        in_band = all((b - 1) / 2 * RTT_S * 1000 * 0.999 <= d <= limit_delay_ms(b) * 1.001
                      for b, d in zip(fifo["multiple"], fifo["delay_ms"]))
        means = fifo.group_by("cca", "multiple", maintain_order=True).agg(pl.col("delay_ms").mean())
        rises = all(g["delay_ms"].is_sorted() for _, g in means.group_by("cca"))
        obs.append(Observation(
            "FIFO", claim, "(limit − BDP)/2C ≤ delay ≤ limit/C: " + ", ".join(
                f"{b:g}: {(b - 1) / 2 * RTT_S * 1000:.0f}–{limit_delay_ms(b):.0f} ms" for b in sorted(set(fifo["multiple"]))),
            f"{per_bdp}: " + _points(fifo, "delay_ms", ".0f"), in_band and rises,
            tolerance="between the bounds of a halving sawtooth at any phase: the summed windows swing between "
                      "(limit + BDP)/2 and limit + BDP, so the queue between (limit − BDP)/2 and the limit; and the "
                      "mean over seeds rises with the limit",
            requires=(SATURATED_KEY, *loss_steady)))
    else:
        obs.append(_not_run("FIFO", claim, "≈ limit/C", "Reno or CUBIC FIFO"))

    # CoDel: the standing queue at TARGET whatever the limit.
    codel = deep_loss.filter(pl.col("kind") == "codel")
    claim = ("CoDel holds the standing queue near TARGET = 5 ms whatever the limit, nowhere near limit/C (RFC 8289; "
             "Reno and CUBIC, limits ≥ 1 BDP)")
    if codel.height:
        worst = _hi(codel["delay_ms"])
        obs.append(Observation(
            "CoDel", claim, f"≈ {CODEL_TARGET_MS:g} ms (limit/C: {limit_delay_ms(1):.0f}–"
            f"{limit_delay_ms(max(codel['multiple'])):.0f} ms)", f"{per_bdp}: " + _points(codel, "delay_ms", ".2f"),
            worst <= CODEL_BAND * CODEL_TARGET_MS, f"largest {worst:.2f} ms",
            tolerance=f"the mean sojourn of every run ≤ {CODEL_BAND:g} × TARGET ({CODEL_BAND * CODEL_TARGET_MS:g} ms): "
                      "CoDel controls the minimum sojourn over an INTERVAL (the standing queue) at TARGET, so the "
                      "mean over packets lies below TARGET plus the bursts it lets through",
            requires=(engaged_key("codel"), *loss_steady)))
    else:
        obs.append(_not_run("CoDel", claim, "≈ 5 ms", "Reno or CUBIC CoDel"))

    # PIE: the mean queueing delay at QDELAY_REF.
    pie = deep_loss.filter(pl.col("kind") == "pie")
    claim = ("PIE holds the mean queueing delay near QDELAY_REF = 15 ms whatever the limit (RFC 8033; Reno and "
             "CUBIC, limits ≥ 1 BDP)")
    if pie.height:
        low, high = _lo(pie["delay_ms"]), _hi(pie["delay_ms"])
        obs.append(Observation(
            "PIE", claim, f"≈ {PIE_TARGET_MS:g} ms", f"{per_bdp}: " + _points(pie, "delay_ms", ".1f"),
            (1 - PIE_BAND) * PIE_TARGET_MS <= low and high <= (1 + PIE_BAND) * PIE_TARGET_MS,
            f"{(low / PIE_TARGET_MS - 1) * 100:+.0f} % to {(high / PIE_TARGET_MS - 1) * 100:+.0f} % of the target",
            tolerance=f"every run's mean sojourn within ±{PIE_BAND:.0%} of QDELAY_REF "
                      f"({(1 - PIE_BAND) * PIE_TARGET_MS:g}–{(1 + PIE_BAND) * PIE_TARGET_MS:g} ms): PIE's gains are "
                      "scaled down while its drop probability is small, as it is for a few flows at 100 ms, so its "
                      "delay settles slowly around the target",
            requires=(engaged_key("pie"), *loss_steady)))
    else:
        obs.append(_not_run("PIE", claim, "≈ 15 ms", "Reno or CUBIC PIE"))

    # RED: the average queue between the thresholds.
    red = deep_loss.filter(pl.col("kind") == "red")
    claim = (f"RED keeps the average queue between its thresholds, min_th = {RED_MIN_TH} and max_th = {RED_MAX_TH} "
             "packets, whatever the limit (Floyd and Jacobson; Reno and CUBIC, limits ≥ 1 BDP)")
    if red.height:
        low, high = _lo(red["queue_packets"]), _hi(red["queue_packets"])
        obs.append(Observation(
            "RED", claim, f"{RED_MIN_TH}–{RED_MAX_TH} packets",
            "limits in BDP: mean queue packets: " + _points(red, "queue_packets", ".0f"),
            RED_MIN_TH <= low and high <= RED_MAX_TH,
            f"lowest {low:.0f} packets, {(low / RED_MIN_TH - 1) * 100:+.0f} % against min_th" if low < RED_MIN_TH
            else f"highest {high:.0f} packets",
            tolerance="the time-average queue after the warm-up (RED's average is the same queue, smoothed) within "
                      "the thresholds, exactly",
            requires=(engaged_key("red"), *loss_steady)))
    else:
        obs.append(_not_run("RED", claim, "between the thresholds", "Reno or CUBIC RED"))

    # FQ-CoDel: the sparse flow meets no queue.
    fq = m.filter(pl.col("kind") == "fq_codel")
    claim = ("FQ-CoDel serves a sparse flow's packets ahead of the backlogged flows: its p99 delay stays at the "
             "base delay plus its own serialisation, far below the bulk flows' sojourn (RFC 8290, the scheduler's "
             "new flows; every limit and controller)")
    if fq.height:
        floor = fq["sparse_floor_ms"][0]
        bound = FQ_SPARSE_MTUS * MTU_TIME_MS + QUANTILE_ERROR * (floor + FQ_SPARSE_MTUS * MTU_TIME_MS)
        worst = _hi(fq["sparse_queueing_ms"])
        below = all(s < d for s, d in zip(fq["sparse_queueing_ms"], fq["delay_ms"]))
        obs.append(Observation(
            "FQ-CoDel sparse flow", claim, f"{floor:.3f} ms (propagation and serialisation of its 200-byte packets)",
            f"sparse flow's p99 queueing {_range(fq['sparse_queueing_ms'].to_list(), '.3f')} ms; bulk flows' mean "
            f"sojourn {_range(fq['delay_ms'].to_list(), '.2f')} ms", worst <= bound and below,
            f"at most {worst:.3f} ms above the base delay",
            tolerance=f"in every run, the p99 one-way delay within {FQ_SPARSE_MTUS} full-size packets at C "
                      f"({FQ_SPARSE_MTUS * MTU_TIME_MS:.2f} ms: the packet in service when it arrives, and one of "
                      f"rounding) of the base delay, plus the stored quantile's resolution (1/64 of the delay: "
                      f"{bound - FQ_SPARSE_MTUS * MTU_TIME_MS:.2f} ms), and below the link's mean sojourn",
            requires=(SPARSE_FQ_KEY, *_steady(m, CONTROLLERS))))
    else:
        obs.append(_not_run("FQ-CoDel sparse flow", claim, "base delay", "FQ-CoDel"))

    # A shared queue: the sparse flow waits as long as the bulk flows.
    shared = deep_loss.filter(pl.col("kind").is_in(["fifo", "red", "codel", "pie"]))
    claim = ("in one shared queue (FIFO, RED, CoDel, PIE) the sparse flow waits as long as the bulk flows: its "
             "p99 queueing delay is the link's p99 sojourn (Reno and CUBIC, limits ≥ 1 BDP)")
    if shared.height:
        rel, add = SHARED_BAND
        off = [abs(s - d) - (rel * d + add + QUANTILE_ERROR * (floor_ms + s + d))
               for s, d, floor_ms in zip(shared["sparse_queueing_ms"], shared["p99_delay_ms"],
                                         shared["sparse_floor_ms"])]
        worst_i = max(range(len(off)), key=lambda i: off[i])
        w = shared.row(worst_i, named=True)
        obs.append(Observation(
            "shared queue sparse flow", claim, "its p99 queueing = the link's p99 sojourn",
            ", ".join(f"{KIND_NAMES[k]} {_range(g['sparse_queueing_ms'].to_list(), '.1f')} ms against "
                      f"{_range(g['p99_delay_ms'].to_list(), '.1f')} ms"
                      for (k,), g in shared.group_by(["kind"], maintain_order=True)),
            off[worst_i] <= 0, f"farthest: {KIND_NAMES[w['kind']]} {_cca(w['cca'])} {w['multiple']:g} BDP, "
            f"{w['sparse_queueing_ms']:.2f} ms against {w['p99_delay_ms']:.2f} ms",
            tolerance=f"in every run within {rel:.0%} + {add:g} ms of the link's p99 sojourn, plus the stored "
                      "quantiles' resolution (1/64 of each delay): a periodic flow samples the queue at its own "
                      "instants, not at every packet's",
            requires=(SPARSE_SHARED_KEY, *loss_steady)))
    else:
        obs.append(_not_run("shared queue sparse flow", claim, "the link's sojourn", "Reno or CUBIC shared-queue"))

    # Utilisation under each AQM.
    for kind in AQMS:
        runs = deep_loss.filter(pl.col("kind") == kind)
        claim = (f"{KIND_NAMES[kind]} keeps the link busy while it holds the delay down (Reno and CUBIC, limits ≥ 1 "
                 "BDP)")
        key = f"utilisation: {KIND_NAMES[kind]}"
        if not runs.height:
            obs.append(_not_run(key, claim, f"≥ {HIGH_UTILISATION:.0%}", f"Reno or CUBIC {KIND_NAMES[kind]}"))
            continue
        lowest = _lo(runs["utilisation"])
        obs.append(Observation(
            key, claim, f"≥ {HIGH_UTILISATION:.0%}", "limits in BDP: utilisation: " + _points(runs, "utilisation", ".3f"),
            lowest >= HIGH_UTILISATION, f"lowest {lowest:.3f}",
            tolerance=f"every run ≥ {HIGH_UTILISATION:.0%} after the warm-up: within 5 points of the full link a FIFO "
                      "of a BDP gives",
            requires=(engaged_key(kind), *loss_steady)))

    # BBR (versions 1 and 3) in a deep FIFO: qualitative. BBRv3 answers loss, but eight flows in a
    # FIFO of five or ten BDP lose nothing once started, so its window's cap sets its queue as
    # version 1's does; its ProbeBW_DOWN phases (pacing gain 0.9) drain part of it.
    for cca in MODEL_BASED:
        name = _cca(cca)
        deep = m.filter((pl.col("cca") == cca) & (pl.col("kind") == "fifo") & (pl.col("multiple") >= 5.0))
        claim = (f"{name} bounds its own queue in a deep FIFO: in flight at most 2 BDP (its cwnd gain), so about one "
                 "BDP (one base RTT) of standing queue whatever the limit beyond (limits ≥ 5 BDP)")
        if deep.height:
            low, high = _lo(deep["delay_ms"]), _hi(deep["delay_ms"])
            obs.append(Observation(
                f"{name} deep FIFO", claim, f"≈ {RTT_S * 1000:g} ms, not limit/C ({limit_delay_ms(5):.0f}–"
                f"{limit_delay_ms(max(deep['multiple'])):.0f} ms)", f"{per_bdp}: " + _points(deep, "delay_ms", ".0f"),
                0.5 * RTT_S * 1000 <= low and high <= 1.5 * RTT_S * 1000,
                tolerance="every run's mean sojourn within 0.5–1.5 base RTTs (50–150 ms): its window's cap of twice "
                          "the estimated BDP, qualitatively",
                requires=(SATURATED_KEY, steady_key(cca))))
        else:
            obs.append(_not_run(f"{name} deep FIFO", claim, "≈ one base RTT", f"{name} FIFO of ≥ 5 BDP"))
    shallow_bbr = m.filter((pl.col("cca") == "bbr") & (pl.col("kind") == "fifo") & (pl.col("multiple") < 0.15))
    shallow_cubic = m.filter((pl.col("cca") == "cubic") & (pl.col("kind") == "fifo") & (pl.col("multiple") < 0.15))
    claim = ("BBR, which does not take loss as congestion, drops far more than CUBIC in a shallow FIFO (0.1 BDP), "
             "and the sparse flow loses with it")
    if shallow_bbr.height and shallow_cubic.height:
        b, c = _mean(shallow_bbr["tail_drops"]), _mean(shallow_cubic["tail_drops"])
        obs.append(Observation(
            "BBR shallow FIFO", claim, "≥ 10 × CUBIC's drops",
            f"drops BBR {b:.0f}, CUBIC {c:.0f} (mean over seeds); sparse flow's loss BBR "
            f"{_range(shallow_bbr['sparse_loss'].to_list(), '.2%')}, CUBIC {_range(shallow_cubic['sparse_loss'].to_list(), '.2%')}",
            b >= 10 * max(c, 1), f"{b / max(c, 1):.0f} ×",
            tolerance="an order of magnitude, qualitatively (BBR version 1 paces at its bandwidth estimate whatever "
                      "the loss, while CUBIC backs off at each one)",
            requires=(steady_key("bbr"), steady_key("cubic"))))
    else:
        obs.append(_not_run("BBR shallow FIFO", claim, "≥ 10 × CUBIC's drops", "BBR and CUBIC 0.1-BDP FIFO"))
    return obs


# --- the summary's table --------------------------------------------------------------------------


def _means(m: pl.DataFrame) -> pl.DataFrame:
    """Per (controller, queue kind, limit): the means over seeds."""
    return m.group_by("cca", "kind", "multiple", maintain_order=True).agg(
        pl.col("utilisation").mean(), pl.col("delay_ms").mean(), pl.col("p99_delay_ms").mean(),
        pl.col("queue_packets").mean(),
        pl.col("sparse_ms").mean(), pl.col("sparse_loss").mean(), pl.col("aqm_signals").mean(),
        pl.col("tail_drops").mean(), pl.len().alias("seeds"))


def _appendix(res: Results, studies: dict[str, str]) -> str:
    m = measure(res, studies)
    start = m["window_start_s"][0] if m.height else 0
    lines = ["## Measured, per point", "",
             f"After the warm-up (from {start:g} s), mean over seeds. Every TCP flow reduces from cwnd "
             "(`tcp.ssthresh_from = \"cwnd\"`, as Linux).", "",
             "| controller | queue | limit (BDP) | utilisation | standing delay ms | p99 sojourn ms | mean queue pkts "
             "| sparse flow p99 delay ms | sparse flow loss | AQM drops + marks | tail drops |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {k: i for i, k in enumerate(CONTROLLERS)}
    kinds = {k: i for i, k in enumerate(KINDS)}
    rows = sorted(_means(m).iter_rows(named=True), key=lambda r: (order[r["cca"]], kinds[r["kind"]], r["multiple"]))
    for r in rows:
        lines.append(f"| {_cca(r['cca'])} | {KIND_NAMES[r['kind']]} | {r['multiple']:g} | {r['utilisation']:.3f} | "
                     f"{r['delay_ms']:.2f} | {r['p99_delay_ms']:.2f} | {r['queue_packets']:.1f} | {r['sparse_ms']:.2f} | "
                     f"{r['sparse_loss']:.2%} | "
                     f"{r['aqm_signals']:.0f} | {r['tail_drops']:.0f} |")
    return "\n".join(lines)


# --- figures --------------------------------------------------------------------------------------


KIND_MARKERS = {"fifo": "s", "red": "v", "codel": "o", "fq_codel": "D", "pie": "^"}


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _controllers(m: pl.DataFrame) -> list[str]:
    present = set(m["cca"].to_list())
    return [c for c in CONTROLLERS if c in present]


def _kind_lines(ax: Axes, points: pl.DataFrame, column: str, scale_by: float = 1.0) -> None:
    from ..plots.common import run_colour

    for i, kind in enumerate(KINDS):
        g = points.filter(pl.col("kind") == kind).sort("multiple")
        if g.height:
            ax.plot(g["multiple"].to_numpy(), g[column].to_numpy() * scale_by, marker=KIND_MARKERS[kind],
                    color=run_colour(i), label=KIND_NAMES[kind])


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    import numpy as np

    from ..plots.cdf import NO_WAIT_MS, cdf_points, quantile_ms
    from ..plots.common import legend_below, new_figure, plain_log_ticks, require_data, run_colour, title

    m = measure(res, studies)
    require_data("bufferbloat", [m["delay_ms"].drop_nulls().to_numpy()], "no run of the sweep measured")
    means = _means(m)
    ccas = _controllers(m)
    multiples = sorted(set(m["multiple"].to_list()))
    x_limits = np.array(multiples)
    limit_ms = np.array([limit_delay_ms(b) for b in multiples])
    start = m["window_start_s"][0]
    seeds = int(_hi(means["seeds"]))
    mean_note = f", mean over {seeds} seeds" if seeds > 1 else ""
    setup = (f"{BULK_FLOWS} bulk flows and one 64 kb/s sparse flow, 100 Mb/s, base RTT 100 ms (BDP {BDP_PACKETS} "
             f"packets), after the first {start:g} s{mean_note}")
    figures = {}

    # 1. Delay against buffer size, with utilisation beside.
    fig, grid = new_figure(2, len(ccas), size=(4.2 * len(ccas) + 0.8, 7.2), sharex=True, sharey="row")
    for col, cca in enumerate(ccas):
        p = means.filter(pl.col("cca") == cca)
        delay, util = grid[0][col], grid[1][col]
        _kind_lines(delay, p, "delay_ms")
        delay.plot(x_limits, limit_ms, color="0.4", linestyle="--", linewidth=1, label="limit / C (a full queue)")
        for target, name in ((CODEL_TARGET_MS, "CoDel"), (PIE_TARGET_MS, "PIE")):
            delay.axhline(target, color="0.6", linestyle=":", linewidth=1)
            delay.annotate(f"{name} target {target:g} ms", (x_limits[-1], target), textcoords="offset points",
                           xytext=(-2, 2), ha="right", fontsize="x-small", color="0.4")
        plain_log_ticks(delay, axis="y")
        delay.set_title(_cca(cca))
        _kind_lines(util, p, "utilisation", 100.0)
        util.set_ylim(max(0.0, float(np.nanmin(means["utilisation"].to_numpy())) * 100 - 3), 101)
        util.set_xlabel("queue limit (× BDP)")
        for ax in (delay, util):
            plain_log_ticks(ax, ticks=multiples)
        if col == 0:
            delay.set_ylabel("standing delay: mean sojourn (ms)")
            util.set_ylabel("bottleneck utilisation (%)")
    legend_below(fig, grid[0][0], max_columns=6)
    title(fig, f"Delay against buffer size, per queue discipline: {setup}")
    figures["bufferbloat_delay_vs_buffer"] = fig

    # 2. Delay against throughput: one point per queue kind and limit, larger for larger limits.
    fig, grid = new_figure(1, len(ccas), size=(4.2 * len(ccas) + 0.8, 4.6), sharex="row", sharey="row")
    sizes = {b: 14 + 26 * i for i, b in enumerate(multiples)}
    for col, cca in enumerate(ccas):
        ax = grid[0][col]
        p = means.filter(pl.col("cca") == cca)
        for i, kind in enumerate(KINDS):
            g = p.filter(pl.col("kind") == kind).sort("multiple")
            if not g.height:
                continue
            ax.plot(g["delay_ms"].to_numpy(), g["utilisation"].to_numpy() * 100, color=run_colour(i), linewidth=0.8,
                    alpha=0.6)
            ax.scatter(g["delay_ms"].to_numpy(), g["utilisation"].to_numpy() * 100,
                       s=[sizes[b] for b in g["multiple"]], marker=KIND_MARKERS[kind], color=run_colour(i),
                       label=KIND_NAMES[kind], zorder=3)
            if kind == "fifo":
                labelled = 0.0  # the delay of the last point labelled: points closer than 15 % share its label
                for b, d, u in zip(g["multiple"], g["delay_ms"], g["utilisation"]):
                    if d < labelled * 1.15:
                        continue
                    labelled = d
                    ax.annotate(f"{b:g}", (d, u * 100), textcoords="offset points", xytext=(0, -13),
                                ha="center", fontsize="x-small", color=run_colour(i))
        plain_log_ticks(ax)
        ax.set_title(_cca(cca))
        ax.set_xlabel("standing delay: mean sojourn (ms)")
        if col == 0:
            ax.set_ylabel("bottleneck utilisation (%)")
    legend_below(fig, grid[0][0], title="queue discipline (marker size grows with the limit; FIFO's limits in BDP "
                                        "beside its points)", max_columns=5)
    title(fig, f"Delay against throughput, one point per queue discipline and limit ({', '.join(f'{b:g}' for b in multiples)} "
               f"BDP): {setup}")
    figures["bufferbloat_delay_vs_throughput"] = fig

    # 3. The sparse flow's delay against buffer size: what it waits above its base delay.
    fig, grid = new_figure(1, len(ccas), size=(4.2 * len(ccas) + 0.8, 4.6), sharey="row")
    floor = float(m["sparse_floor_ms"][0])
    for col, cca in enumerate(ccas):
        ax = grid[0][col]
        p = means.filter(pl.col("cca") == cca).with_columns((pl.col("sparse_ms") - floor).alias("sparse_queueing"))
        _kind_lines(ax, p, "sparse_queueing")
        ax.plot(x_limits, limit_ms, color="0.4", linestyle="--", linewidth=1, label="limit / C (a full queue)")
        ax.axhline(MTU_TIME_MS, color="0.6", linestyle=":", linewidth=1,
                   label=f"one 1500-byte packet at C ({MTU_TIME_MS:.2f} ms)")
        plain_log_ticks(ax, ticks=multiples)
        plain_log_ticks(ax, axis="y")
        ax.set_title(_cca(cca))
        ax.set_xlabel("queue limit (× BDP)")
        if col == 0:
            ax.set_ylabel("sparse flow's p99 delay above its base (ms)")
    legend_below(fig, grid[0][0], max_columns=7)
    title(fig, f"What the sparse flow (64 kb/s in 200-byte packets) waits: the 99th percentile of its one-way delay "
               f"less its base delay of {floor:.2f} ms, against buffer size: {setup}")
    figures["bufferbloat_sparse_flow_delay"] = fig

    # 4. The CDF of the bottleneck's sojourn times per queue discipline, under a limit of one BDP
    # and under the largest (the AQM literature's figure: a FIFO's delay is its limit's, an
    # AQM's its target's).
    deep_limits = [b for b in multiples if b >= 1.0]
    limits = sorted({deep_limits[0], multiples[-1]}) if deep_limits else [multiples[-1]]
    sojourns = _sojourn_buckets(res, studies["sweep"])
    fig, grid = new_figure(len(limits), len(ccas), size=(4.2 * len(ccas) + 0.8, 1.2 + 3.2 * len(limits)),
                           sharex=True, sharey=True)
    for row, b in enumerate(limits):
        for col, cca in enumerate(ccas):
            ax = grid[row][col]
            for i, kind in enumerate(KINDS):
                runs = m.filter((pl.col("cca") == cca) & (pl.col("kind") == kind) & (pl.col("multiple") == b))
                buckets = sojourns.filter(pl.col("run_id").is_in(runs["run_id"].to_list())).sort("lower_ns",
                                                                                               "upper_ns")
                if buckets.height:
                    x, y = cdf_points(buckets)
                    ax.plot(x, y, color=run_colour(i), label=KIND_NAMES[kind])
                    # The 99th percentile, by the catalogue's rule, where the line reaches 0.99.
                    ax.plot(max(quantile_ms(buckets, 0.99), NO_WAIT_MS), 0.99, marker="o", markersize=4,
                            color=run_colour(i), clip_on=False)
            for target, name in ((CODEL_TARGET_MS, "CoDel"), (PIE_TARGET_MS, "PIE")):
                ax.axvline(target, color="0.6", linestyle=":", linewidth=1)
                ax.annotate(f"{name} {target:g} ms", (target, 0.02), textcoords="offset points", xytext=(2, 0),
                            fontsize="x-small", color="0.4", rotation=90, va="bottom")
            ax.axvline(limit_delay_ms(b), color="0.4", linestyle="--", linewidth=1,
                       label="limit / C (a full queue)")
            ax.set_xscale("log")
            ax.set_xlim(NO_WAIT_MS, limit_delay_ms(max(multiples)) * 1.5)
            ax.set_ylim(0, 1.0)
            if row == 0:
                ax.set_title(_cca(cca))
            if row == len(limits) - 1:
                ax.set_xlabel("sojourn time at the bottleneck (ms)")
            if col == 0:
                ax.set_ylabel(f"CDF, limit {b:g} BDP")
    legend_below(fig, grid[0][0], max_columns=7)
    pooled = setup.replace(mean_note, f", {seeds} seeds pooled" if seeds > 1 else "") if mean_note else setup
    title(fig, f"The bottleneck's sojourn times after the warm-up, per queue discipline (packets sent without "
               f"waiting at {NO_WAIT_MS:g} ms; a dot marks each 99th percentile): {pooled}")
    figures["bufferbloat_sojourn_cdf"] = fig
    return figures


def _sojourn_buckets(res: Results, study: str) -> pl.DataFrame:
    """The stored sojourn distribution of every run's bottleneck (btl_forward), from the warm-up
    on: run_id, lower_ns, upper_ns, count."""
    return res.query(
        "SELECT h.run_id, h.lower_ns, h.upper_ns, h.count FROM delay_histograms h JOIN channels c "
        "ON c.run_id = h.run_id AND c.channel = h.id WHERE h.subject = 'channel' AND c.name = 'btl_forward' "
        f"AND h.run_id IN ({_STUDY_RUNS})", [study])


REPRODUCTION = Reproduction(
    name="bufferbloat", seed="(the AQM RFCs)",
    title="Bufferbloat: buffer size or AQM, and with which controller",
    description="Eight greedy bulk flows and one 64 kb/s sparse datagram flow on a 100 Mb/s dumbbell with a base RTT of "
                "100 ms; the bottleneck's queue limit from 0.1 to 10 BDP for FIFO, RED, CoDel, FQ-CoDel and PIE, with "
                "Reno, CUBIC, BBR and BBRv3: utilisation, standing delay and the sparse flow's p99 one-way delay after the warm-up, judged against RFC 8289 "
                "(CoDel), RFC 8033 (PIE), RFC 8290 (FQ-CoDel) and RED's thresholds. Every TCP flow reduces from cwnd "
                "at a congestion event (`tcp.ssthresh_from = \"cwnd\"`, as Linux).",
    quick_estimate_s=10, full_estimate_s=140, sweeps=_sweeps, preconditions=_preconditions, observe=_observe,
    draw=_draw, appendix=_appendix,
    notes=["Quick: limits 0.1, 1 and 10 BDP, CUBIC and BBR, 40 s, measured from 10 s, one seed (30 runs); full: 0.1, "
           "0.2, 0.5, 1, 2, 5 and 10 BDP, Reno, CUBIC, BBR and BBRv3, 120 s, measured from 20 s, three seeds (420 runs). "
           "BBRv3 stays out of the quick variant, which would take half as long again.",
           "TCP reduces from cwnd (`tcp.ssthresh_from = \"cwnd\"`, Linux's rule) and not from RFC 5681's FlightSize, "
           "the engine's default: behind a head-drop AQM (CoDel, FQ-CoDel) CUBIC's overlapping recoveries then raise "
           "its window at each reduction (docs/engine/index.md measures it: 29 % retransmitted, a median sojourn of "
           "95 ms behind CoDel), which would judge that pathology instead of the AQM. Drop-tail runs hardly depend on "
           "the choice.",
           f"RED's parameters are not from an RFC: thresholds of 10 and 30 ms at C ({RED_MIN_TH} and {RED_MAX_TH} "
           "packets, max_th = 3 min_th), max_p = 0.1, w_q = 0.002, gentle, Floyd's recommendations. With eight flows "
           "at 100 ms one early drop takes 30-55 packets off the queue (a CUBIC or Reno flow's reduction of a window of "
           "~115 packets), most of min_th: after each the queue falls well below min_th while RED's smoothed "
           "average, lagging it, still drops, so the time-average queue sits under min_th.",
           f"RED's max_th may not exceed the limit: under limits below {RED_MAX_TH} packets (0.1 and 0.2 BDP) "
           "max_th is the limit and min_th a third of it.",
           "The sparse flow's base delay is computed from the stored path: the propagation of its four channels and "
           "the serialisation of a 200-byte packet on each.",
           "The limits of RED, CoDel and PIE are hard limits (tail drops); below the BDP they, not the AQM, bound the "
           "queue (PIE at 0.1 BDP never drops early: 83 packets are 10 ms, under its 15 ms target). The AQMs' "
           "observations read the limits of at least one BDP.",
           "The delay percentiles (the bottleneck's p99 sojourn, the sparse flow's p99 one-way delay) and the "
           "sojourn CDFs count the packets after the warm-up (`record.warmup`): slow start's overshoot, which fills "
           "any queue to its limit once, is not the steady state they judge. They are read from the stored "
           "distributions, whose quantiles are within 1/64 of the value."])
