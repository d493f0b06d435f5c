"""l4s — the DualQ Coupled AQM with TCP Prague and CUBIC sharing a bottleneck (RFC 9332; the L4S
architecture, RFC 9330; TCP Prague, draft-briscoe-iccrg-prague-congestion-control).

What RFC 9332 says, in the terms used here. An L4S flow (ECT(1), a scalable controller such as
Prague) and a Classic flow (Not-ECT, CUBIC) meet at one bottleneck. DualPI2 gives them two
queues: the L queue marks ECT(1) packets from a shallow 1 ms step on (and with the coupled
probability p_CL = k·p'), so that a scalable controller holds it near a millisecond; the C queue
runs PI2, which drives the Classic queue's delay to its 15 ms target by dropping with p_C = p'².
The coupling (k = 2) aims at rates of the same order for the two families: a scalable flow's
window goes as 1/p_CL and a Classic one's as 1/√p_C = 1/p', so equal p' gives comparable windows
(§2.1, §2.4). The comparison is with the queues an operator would otherwise deploy at the same
buffer: a FIFO, where every flow waits behind the full buffer and a loss-based CUBIC outgrows a
Prague flow that halves as Reno on loss; and FQ-CoDel, whose per-flow scheduling balances rates
by construction and whose CoDel holds each flow's queue near its 5 ms target.

The experiment. A dumbbell at 100 Mb/s with a base RTT of 100 ms (a BDP of 833 packets of
1500 bytes) and a buffer of one BDP in all three queues; eight Prague flows (`tcp.ecn = "l4s"`)
and eight CUBIC flows (no ECN), greedy, started within the first second. Eight of each, not one:
with a few CUBIC flows each halving drains the C queue, whose mean then sits well below PI2's
target (two CUBIC flows: about 9 ms), as the engine's DualPI2 tests found with four. DualPI2
runs with RFC 9332's defaults (target 15 ms, step 1 ms, k = 2), FQ-CoDel with its own (5 ms,
100 ms, ECN marking on: Prague's ECT(1) packets are marked, CUBIC's dropped). Every flow reduces
from its congestion window on a loss, as Linux does.

What is measured, after the warm-up (10 s quick, 20 s full): per family, the mean delivery rate a flow;
the L queue's delay as the 99th percentile of its per-sample mean sojourn (the sample interval
is 10 ms: a percentile of 10 ms means, not of single packets, whose distribution the store keeps
only per channel); the C queue's mean sojourn; and, for every queue, the queueing delay the Prague flows
see (their SRTT less their minimum RTT, averaged over the samples).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from ..study.sweep import Sweep
from .base import Observation, Precondition, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

PACKET = 1500
RATE_BPS = 100_000_000
RTT_S = 0.100
BDP_PACKETS = round(RATE_BPS * RTT_S / (PACKET * 8))  # 833
SAMPLE = "10ms"

KINDS = ("dualpi2", "fifo", "fq_codel")
KIND_NAMES = {"dualpi2": "DualPI2", "fifo": "FIFO", "fq_codel": "FQ-CoDel"}
FAMILIES = ("prague", "cubic")
# Flows of each family.
FLOWS_PER_FAMILY = 8
# RFC 9332's DualPI2 defaults: the Classic target and the L queue's marking step.
C_TARGET_MS = 15.0
STEP_MS = 1.0
FQ_CODEL_TARGET_MS = 5.0

# --- the tolerances ------------------------------------------------------------------------------

# The L queue's p99 (of 10 ms means) within three steps: the step is where marking starts, and
# a window's worth of paced packets arriving together stands above it for a moment.
L_P99_MAX_MS = 3 * STEP_MS
# The C queue's mean sojourn within ±5 ms of the target (PI2 drives the head's sojourn to the
# target; the mean over the packets sent wanders with the Classic sawtooth, as in the engine's
# tests/dualpi2.rs).
C_TOLERANCE_MS = 5.0
# Rates "of the same order": the Prague/CUBIC ratio a flow within a factor of two.
BALANCE = (0.5, 2.0)
# FQ-CoDel's per-flow scheduling: within 20 %.
FQ_BALANCE = (0.8, 1.25)
# DualPI2's L4S delay is a small fraction of the FIFO's.
FIFO_FACTOR = 10.0


def scale(quick: bool) -> dict[str, Any]:
    """The runs' length and number (the notes state both)."""
    if quick:
        return {"duration_s": 30, "warm_up_s": 10, "seeds": 1}
    return {"duration_s": 120, "warm_up_s": 20, "seeds": 3}


def queue_spec(kind: str) -> Any:
    """The bottleneck's queue of `kind`, one BDP deep."""
    limit = f"{BDP_PACKETS}p"
    if kind == "fifo":
        return limit
    if kind == "dualpi2":
        return {"kind": "dualpi2", "limit": limit, "target": f"{C_TARGET_MS:g}ms", "step_thresh": f"{STEP_MS:g}ms",
                "coupling": 2}
    return {"kind": "fq_codel", "limit": limit, "ecn": True}


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    flows: list[dict[str, Any]] = []
    for family in FAMILIES:
        for i in range(FLOWS_PER_FAMILY):
            flow: dict[str, Any] = {"name": f"{family}_{i}", "cca": family}
            # Prague with ECT(1) and AccECN's feedback, the accurate feedback its draft requires over TCP
            # (RFC 9331 §4.2); CUBIC without ECN.
            ecn: dict[str, Any] = {"ecn": "l4s", "accecn": True} if family == "prague" else {"ecn": "off"}
            flow["tcp"] = {**ecn, "ssthresh_from": "cwnd"}
            flows.append(flow)
    base = {
        "name": "l4s", "duration": f"{s['duration_s']}s", "sample_interval": SAMPLE,
        "record": {"flows": "all", "links": ["btl"]},
        "topology": {"kind": "dumbbell", "bottleneck_rate": f"{RATE_BPS // 1_000_000}Mbps", "bottleneck_delay": "5ms",
                     "rtt": f"{RTT_S * 1000:g}ms", "queue": "100p"},
        # Every flow reduces from its congestion window, as Linux does (`ssthresh_from = "cwnd"`): an
        # AQM that drops retransmissions makes recoveries last several round trips, and CUBIC's
        # β·FlightSize would then exceed the window it reduces and run away.
        "flow_defaults": {"traffic": "greedy", "start": {"dist": "uniform", "low": "0s", "high": "1s"},
                          "tcp": {"ssthresh_from": "cwnd"}},
        "flows": flows,
    }
    return {"sweep": Sweep.from_dict({
        "name": "l4s", "base": base, "seeds": s["seeds"],
        "axes": [{"zip": [{"key": "topology.queue", "values": [queue_spec(k) for k in KINDS]},
                          {"key": "meta.queue_kind", "values": list(KINDS)}]}]})}


# --- reading the store --------------------------------------------------------------------------

_STUDY_RUNS = "SELECT run_id FROM study_points WHERE study_id = ? AND status = 'complete'"


def _warm_up_ns(study: str) -> int:
    return int(scale(study.startswith("l4s-quick"))["warm_up_s"] * 1e9)


def measure(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    """One row per run: the queue, the seed, per family the mean rate a flow (Mb/s) and the
    Prague flows' queueing delay (ms); the bottleneck's utilisation; DualPI2's L p99 and C mean
    sojourn (ms); the CE marks, the Prague flows' ECN responses, and what each DualPI2 queue
    carried against what each family sent."""
    study = studies["sweep"]
    t0 = _warm_up_ns(study)
    runs = res.study_runs(study).filter(pl.col("status") == "complete").select(
        "run_id", "seed", pl.col("meta.queue_kind").alias("kind"))
    rates = res.query(
        "SELECT f.run_id, split_part(f.name, '_', 1) AS family, "
        "avg(s.srtt_ns - s.min_rtt_ns) FILTER (WHERE s.srtt_ns > 0 AND s.min_rtt_ns > 0) / 1e6 AS qdelay_ms "
        "FROM flow_timeseries s JOIN flows f ON f.run_id = s.run_id AND f.flow = s.flow "
        f"WHERE s.run_id IN ({_STUDY_RUNS}) AND s.time_ns >= ? GROUP BY f.run_id, family", [study, t0])
    per_flow = res.query(
        "WITH s AS (SELECT f.run_id, f.name, s.time_ns, s.delivered_bytes "
        "FROM flow_timeseries s JOIN flows f ON f.run_id = s.run_id AND f.flow = s.flow "
        f"WHERE s.run_id IN ({_STUDY_RUNS}) AND s.time_ns >= ?) "
        "SELECT run_id, split_part(name, '_', 1) AS family, "
        "avg(rate) AS rate_mbps FROM (SELECT run_id, name, (max(delivered_bytes) - min(delivered_bytes)) * 8.0 "
        "/ ((max(time_ns) - min(time_ns)) / 1e9) / 1e6 AS rate FROM s GROUP BY run_id, name) "
        "GROUP BY run_id, family", [study, t0])
    busy = res.query(
        "SELECT s.run_id, (max(s.busy_ns) - min(s.busy_ns)) * 1.0 / (max(s.time_ns) - min(s.time_ns)) AS u "
        "FROM channel_timeseries s JOIN channels c ON c.run_id = s.run_id AND c.channel = s.channel "
        f"WHERE c.name = 'btl_forward' AND s.run_id IN ({_STUDY_RUNS}) AND s.time_ns >= ? GROUP BY s.run_id",
        [study, t0])
    classes = res.query(
        "WITH s AS (SELECT s.run_id, s.sub_buffer, s.time_ns, "
        "s.sojourn_ns - lag(s.sojourn_ns) OVER w AS dsoj, s.sent_packets - lag(s.sent_packets) OVER w AS dsent "
        "FROM class_timeseries s JOIN channels c ON c.run_id = s.run_id AND c.channel = s.channel "
        f"WHERE c.name = 'btl_forward' AND s.run_id IN ({_STUDY_RUNS}) "
        "WINDOW w AS (PARTITION BY s.run_id, s.sub_buffer ORDER BY s.time_ns)) "
        "SELECT run_id, "
        "quantile_cont(dsoj / dsent, 0.99) FILTER (WHERE sub_buffer = 0 AND dsent > 0) / 1e6 AS l_p99_ms, "
        "sum(dsoj) FILTER (WHERE sub_buffer = 1) / sum(dsent) FILTER (WHERE sub_buffer = 1) / 1e6 AS c_mean_ms "
        "FROM s WHERE time_ns >= ? GROUP BY run_id", [study, t0])
    carried = res.query(
        "SELECT q.run_id, sum(q.enqueued_packets) FILTER (WHERE q.sub_buffer = 0) AS l_enqueued, "
        "sum(q.enqueued_packets) FILTER (WHERE q.sub_buffer = 1) AS c_enqueued, "
        "sum(q.dropped_packets) FILTER (WHERE q.sub_buffer = 1) AS c_dropped "
        "FROM queue_classes q JOIN channels c ON c.run_id = q.run_id AND c.channel = q.channel "
        f"WHERE c.name = 'btl_forward' AND q.run_id IN ({_STUDY_RUNS}) GROUP BY q.run_id", [study])
    sent = res.query(
        "SELECT run_id, sum(segments_sent) FILTER (WHERE name LIKE 'prague%') AS prague_sent, "
        "sum(segments_sent) FILTER (WHERE name LIKE 'cubic%') AS cubic_sent, "
        "sum(ecn_responses) FILTER (WHERE name LIKE 'prague%') AS prague_responses "
        f"FROM flows WHERE run_id IN ({_STUDY_RUNS}) GROUP BY run_id", [study])
    marks = res.query(
        "SELECT run_id, ce_marked_packets AS ce_marks FROM channels "
        f"WHERE name = 'btl_forward' AND run_id IN ({_STUDY_RUNS})", [study])

    def by_run(df: pl.DataFrame) -> dict[str, dict[str, Any]]:
        return {r["run_id"]: r for r in df.iter_rows(named=True)}

    fam = {(r["run_id"], r["family"]): r for r in per_flow.iter_rows(named=True)}
    delay = {(r["run_id"], r["family"]): r["qdelay_ms"] for r in rates.iter_rows(named=True)}
    u, cl, ca, se, mk = by_run(busy), by_run(classes), by_run(carried), by_run(sent), by_run(marks)
    rows = []
    for run in runs.iter_rows(named=True):
        rid = run["run_id"]
        prague = fam.get((rid, "prague"), {}).get("rate_mbps")
        cubic = fam.get((rid, "cubic"), {}).get("rate_mbps")
        rows.append({
            "run_id": rid, "kind": run["kind"], "seed": run["seed"], "prague_mbps": prague, "cubic_mbps": cubic,
            "ratio": prague / cubic if prague is not None and cubic else None,
            "prague_qdelay_ms": delay.get((rid, "prague")), "utilisation": u.get(rid, {}).get("u"),
            "l_p99_ms": cl.get(rid, {}).get("l_p99_ms"), "c_mean_ms": cl.get(rid, {}).get("c_mean_ms"),
            "l_enqueued": ca.get(rid, {}).get("l_enqueued"), "c_enqueued": ca.get(rid, {}).get("c_enqueued"),
            "c_dropped": ca.get(rid, {}).get("c_dropped"), "prague_sent": se.get(rid, {}).get("prague_sent"),
            "cubic_sent": se.get(rid, {}).get("cubic_sent"),
            "prague_responses": se.get(rid, {}).get("prague_responses"), "ce_marks": mk.get(rid, {}).get("ce_marks"),
        })
    schema = {"run_id": pl.Utf8, "kind": pl.Utf8, "seed": pl.Int64, "prague_mbps": pl.Float64,
              "cubic_mbps": pl.Float64, "ratio": pl.Float64, "prague_qdelay_ms": pl.Float64,
              "utilisation": pl.Float64, "l_p99_ms": pl.Float64, "c_mean_ms": pl.Float64, "l_enqueued": pl.Int64,
              "c_enqueued": pl.Int64, "c_dropped": pl.Int64, "prague_sent": pl.Int64, "cubic_sent": pl.Int64,
              "prague_responses": pl.Int64, "ce_marks": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row").sort("kind", "seed")


def _num(column: pl.Series, how: str) -> float:
    values = [float(v) for v in column.to_list() if v is not None and not math.isnan(float(v))]
    if not values:
        return float("nan")
    return {"min": min, "max": max}[how](values) if how in ("min", "max") else sum(values) / len(values)


# --- preconditions --------------------------------------------------------------------------------

L_CARRIED_KEY = "the L queue carried the Prague packets"
C_CARRIED_KEY = "the C queue held the CUBIC flows"
MARKS_KEY = "CE marks happened and Prague answered them"
RUNS_KEY = "every queue's runs completed"
# Of each family's segments, the share its own queue must have taken (the rest: the SYNs,
# which are Not-ECT and go to the C queue, and segments still unsent to the bottleneck).
CARRIED_SHARE = 0.95


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    m = measure(res, studies)
    d = m.filter(pl.col("kind") == "dualpi2")
    kinds = sorted(set(m["kind"].to_list()))
    out = [Precondition(RUNS_KEY, f"completed runs of every queue ({', '.join(KINDS)}) with both families' rates "
                        "measured", f"queues {', '.join(kinds) or 'none'}; {m.height} runs",
                        set(kinds) == set(KINDS) and m["ratio"].null_count() == 0)]
    l_share = _num(d["l_enqueued"] / d["prague_sent"], "min") if d.height else float("nan")
    out.append(Precondition(L_CARRIED_KEY, f"in every DualPI2 run the L queue enqueued ≥ {CARRIED_SHARE:.0%} of the "
                            "Prague flows' segments (ECT(1) is the L4S identifier)",
                            f"least share {l_share:.3f}", l_share >= CARRIED_SHARE))
    c_share = _num(d["c_enqueued"] / d["cubic_sent"], "min") if d.height else float("nan")
    c_drops = _num(d["c_dropped"].cast(pl.Float64), "min") if d.height else float("nan")
    out.append(Precondition(C_CARRIED_KEY, f"in every DualPI2 run the C queue enqueued ≥ {CARRIED_SHARE:.0%} of the "
                            "CUBIC flows' segments and PI2 dropped some of them (the Classic controller engaged)",
                            f"least share {c_share:.3f}; fewest C drops {c_drops:.0f}",
                            c_share >= CARRIED_SHARE and c_drops > 0))
    ce = _num(d["ce_marks"].cast(pl.Float64), "min") if d.height else float("nan")
    responses = _num(d["prague_responses"].cast(pl.Float64), "min") if d.height else float("nan")
    out.append(Precondition(MARKS_KEY, "in every DualPI2 run the bottleneck CE-marked packets and the Prague flows "
                            "reduced on ECN feedback", f"fewest marks {ce:.0f}; fewest Prague ECN responses "
                            f"{responses:.0f}", ce > 0 and responses > 0))
    return out


# --- observations ---------------------------------------------------------------------------------


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    m = measure(res, studies)
    d, fifo, fq = (m.filter(pl.col("kind") == k) for k in KINDS)
    l_p99 = _num(d["l_p99_ms"], "max")
    c_mean = _num(d["c_mean_ms"], "mean")
    ratio_lo, ratio_hi = _num(d["ratio"], "min"), _num(d["ratio"], "max")
    fifo_delay = _num(fifo["prague_qdelay_ms"], "mean")
    l_delay = _num(d["prague_qdelay_ms"], "mean")
    fq_lo, fq_hi = _num(fq["ratio"], "min"), _num(fq["ratio"], "max")
    fifo_ratio = _num(fifo["ratio"], "mean")
    fq_delay = _num(fq["prague_qdelay_ms"], "mean")
    dual = (L_CARRIED_KEY, C_CARRIED_KEY, MARKS_KEY)
    return [
        Observation("l-delay", "DualPI2's L queue holds L4S traffic at or below its 1 ms marking step (RFC 9332 §2.1)",
                    f"step {STEP_MS:g} ms", f"p99 of 10 ms means {l_p99:.2f} ms (worst run)",
                    l_p99 <= L_P99_MAX_MS, tolerance=f"≤ {L_P99_MAX_MS:g} ms (three steps)", requires=dual),
        Observation("c-delay", "the C queue sits near PI2's 15 ms target (RFC 9332 §2.4)",
                    f"{C_TARGET_MS:g} ms", f"mean sojourn {c_mean:.1f} ms",
                    abs(c_mean - C_TARGET_MS) <= C_TOLERANCE_MS, tolerance=f"±{C_TOLERANCE_MS:g} ms", requires=dual),
        Observation("balance", "the coupling gives Prague and CUBIC flows rates of the same order (RFC 9332 §2.1, "
                    "k = 2)", "ratio ≈ 1", f"Prague/CUBIC a flow {ratio_lo:.2f}–{ratio_hi:.2f}",
                    BALANCE[0] <= ratio_lo and ratio_hi <= BALANCE[1],
                    tolerance=f"within {BALANCE[0]:g}–{BALANCE[1]:g}", requires=dual),
        Observation("vs-fifo", "a FIFO of the same buffer queues Prague behind CUBIC's standing queue; DualPI2 "
                    "isolates it (RFC 9330 §4)", f"DualPI2 ≤ FIFO / {FIFO_FACTOR:g}",
                    f"Prague's queueing delay {l_delay:.1f} ms (DualPI2) vs {fifo_delay:.1f} ms (FIFO); FIFO "
                    f"Prague/CUBIC {fifo_ratio:.2f}", l_delay * FIFO_FACTOR <= fifo_delay,
                    tolerance=f"a factor of {FIFO_FACTOR:g}", requires=(L_CARRIED_KEY, RUNS_KEY)),
        Observation("vs-fq-codel", "FQ-CoDel balances the flows by scheduling, at its 5 ms target; DualPI2 balances "
                    "them by coupling with a shallower L4S queue", "FQ ratio ≈ 1; DualPI2 delay < FQ-CoDel's",
                    f"FQ-CoDel Prague/CUBIC {fq_lo:.2f}–{fq_hi:.2f}; Prague's queueing delay {fq_delay:.1f} ms "
                    f"(FQ-CoDel) vs {l_delay:.1f} ms (DualPI2)",
                    FQ_BALANCE[0] <= fq_lo and fq_hi <= FQ_BALANCE[1] and l_delay < fq_delay,
                    tolerance=f"FQ ratio within {FQ_BALANCE[0]:g}–{FQ_BALANCE[1]:g}", requires=(RUNS_KEY,)),
    ]


# --- figures --------------------------------------------------------------------------------------


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import PlotError, new_figure, title

    m = measure(res, studies)
    if m.height == 0:
        raise PlotError("--db", "no completed l4s run in the store")
    means = m.group_by("kind").agg(pl.col("prague_mbps").mean(), pl.col("cubic_mbps").mean(),
                                   pl.col("prague_qdelay_ms").mean(), pl.col("c_mean_ms").mean())
    kinds = [k for k in KINDS if k in set(means["kind"].to_list())]
    row = {r["kind"]: r for r in means.iter_rows(named=True)}
    fig, axes = new_figure(1, 2, size=(9.0, 3.8))
    rates, delays = axes[0, 0], axes[0, 1]
    x = list(range(len(kinds)))
    names = [KIND_NAMES[k] for k in kinds]
    rates.bar([i - 0.2 for i in x], [row[k]["prague_mbps"] for k in kinds], 0.4, label="Prague (ECT(1))")
    rates.bar([i + 0.2 for i in x], [row[k]["cubic_mbps"] for k in kinds], 0.4, label="CUBIC (Not-ECT)")
    rates.set_xticks(x, names)
    rates.set_ylabel("delivery rate a flow (Mb/s)")
    rates.legend()
    delays.bar(x, [row[k]["prague_qdelay_ms"] for k in kinds], 0.5, color="tab:green",
               label="Prague: SRTT − min RTT")
    delays.axhline(STEP_MS, color="tab:green", linestyle=":", label=f"L step {STEP_MS:g} ms")
    delays.axhline(C_TARGET_MS, color="tab:orange", linestyle=":", label=f"C target {C_TARGET_MS:g} ms")
    delays.set_yscale("log")
    delays.set_xticks(x, names)
    delays.set_ylabel("queueing delay (ms)")
    delays.legend(loc="upper left")
    title(fig, f"{FLOWS_PER_FAMILY} Prague and {FLOWS_PER_FAMILY} CUBIC flows, 100 Mb/s, 100 ms, one-BDP buffer: "
               "rates (left), the delay Prague's flows see (right)")
    return {"l4s_rates_and_delay": fig}


def _appendix(res: Results, studies: dict[str, str]) -> str:
    m = measure(res, studies)
    lines = ["## Per run", "", "| queue | seed | Prague Mb/s | CUBIC Mb/s | ratio | Prague queueing ms | "
             "utilisation | L p99 ms | C mean ms |", "|---|---|---|---|---|---|---|---|---|"]

    def f(v: Any, fmt: str) -> str:
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    for r in m.iter_rows(named=True):
        lines.append(f"| {KIND_NAMES.get(r['kind'], r['kind'])} | {r['seed']} | {f(r['prague_mbps'], '.1f')} | "
                     f"{f(r['cubic_mbps'], '.1f')} | {f(r['ratio'], '.2f')} | {f(r['prague_qdelay_ms'], '.2f')} | "
                     f"{f(r['utilisation'], '.3f')} | {f(r['l_p99_ms'], '.2f')} | {f(r['c_mean_ms'], '.1f')} |")
    return "\n".join(lines)


REPRODUCTION = Reproduction(
    name="l4s",
    seed="RFC 9332",
    title="L4S: DualPI2 with TCP Prague and CUBIC sharing a bottleneck",
    description="RFC 9332's DualQ Coupled AQM with eight TCP Prague and eight CUBIC flows at 100 Mb/s and 100 ms: "
                "the L4S queue's delay near its 1 ms step, the Classic queue's near its 15 ms target, the rate "
                "balance the coupling aims at; against a FIFO and FQ-CoDel of the same one-BDP buffer.",
    quick_estimate_s=3.0,
    full_estimate_s=7.0,
    sweeps=_sweeps,
    observe=_observe,
    draw=_draw,
    preconditions=_preconditions,
    appendix=_appendix,
    notes=[
        "Quick: one seed, 30 s runs measured from 10 s; full: three seeds, 120 s runs measured from 20 s.",
        "The L queue's delay is the 99th percentile of its 10 ms mean sojourns (the store keeps per-packet "
        "sojourn distributions per channel, not per DualPI2 queue).",
        "Prague runs with the draft's reference defaults: reduced RTT-dependence on (no effect at 100 ms, above "
        "its 25 ms reference RTT), the classic ECN AQM fall-back off, and AccECN's feedback (`tcp.accecn = true`, "
        "RFC 9768), which the draft specifies.",
        "FQ-CoDel marks ECN-capable packets (Prague's ECT(1)) at its 5 ms target and drops CUBIC's Not-ECT ones.",
    ],
)
