"""spang2021 — how big a buffer modern congestion controllers need (Spang, Arslan and McKeown,
"Updating the theory of buffer sizing", Performance Evaluation 2021).

What the paper says, in the terms used here. A loss-based controller that multiplies its window
by β at a loss keeps a link of capacity C fully busy only if the window left after the cut still
fills the pipe: the window that overflows a buffer of B holds the pipe and the full buffer,
W_max = BDP + B, and β·W_max ≥ BDP gives

    B ≥ (1 − β)/β · BDP                                   (one flow)

— one BDP for Reno (β = 1/2), the rule of thumb, and 3/7 ≈ 0.43 BDP for CUBIC (β = 0.7), 57 %
less. BBR (version 1) does not cut its window at a loss: it paces at its estimate of the
bottleneck's rate and only needs a buffer for the queue of its periodic probing, so it keeps the
link busy with a smaller buffer still (the paper: buffers 60–75 % smaller for the newer
controllers than for Reno). For N flows that reduce at different times (desynchronised), the
sum of their windows varies as 1/√N of its mean (Appenzeller, Keslassy and McKeown 2004), and
the paper finds that the √N reduction applies to each controller's single-flow rule:

    B ≥ (1 − β)/β · BDP / √N                              (N desynchronised flows)

Below the threshold, for one Reno flow the sawtooth gives the utilisation exactly. With
x = W_max/P = 1 + B/P (P the pipe in packets, W_max = P + B + 1: the overflowing window holds the
pipe, the full buffer and the packet dropped), the window grows one packet per RTT from W_max/2,
at the base RTT while it is below P and at W/C once the queue builds, so over one cycle

    U = 3x² / (4(1 − x + x²))    for 1 ≤ x ≤ 2, and 1 from B ≥ P

(the engine's `tests/buffer_theory.rs` checks the same formula). CUBIC's analogue is not exact
here: fast convergence (RFC 9438 §4.7) lowers its plateau at every other loss of a lone flow, so
its cycles alternate between two shapes; its threshold, which depends on β alone, is judged.

The experiment. A dumbbell with a drop-tail bottleneck, a base RTT of 100 ms, and a bottleneck
rate of 10 Mb/s per flow: a flow's share of the BDP is then 83 packets of 1500 bytes whatever N
(so is its congestion cycle), and the link runs at 10 Mb/s for one flow and 320 Mb/s for 32. At
100 Mb/s, the rate the paper's rule is usually quoted for, one Reno flow's sawtooth lasts
W_max/2 RTTs — 830 RTTs, about 110 s, at one BDP — and a run would have to last ten minutes for a
few cycles; at 10 Mb/s it lasts 4 s (B → 0) to 20 s (B = 1.5 BDP). The buffer is swept in
multiples m of BDP/√N, log-spaced from 0.05 to 1.5, for Reno, CUBIC and BBR. With one flow the
RTT is 100 ms exactly; with N > 1 each flow draws its RTT uniformly from 50–150 ms (BDP = C × the
mean, 100 ms) and starts within the first two seconds, so that the flows' cycles differ in length
and their losses fall at different times. Every TCP flow reduces from its congestion window
(`tcp.ssthresh_from = "cwnd"`, as Linux does): ssthresh = β·cwnd then makes the published β the
reduction the window actually takes (the preconditions measure it).

What is measured, per run, from `measure_from_s` on (the start-up, its overshoot and the first
reductions come before it): the bottleneck's busy fraction (its channel series); from each flow's
series its reductions (a fall of the window by more than a tenth between samples: each ends a
congestion cycle) with the ratio of the new ssthresh to the window sampled before it; and how
many of the other flows reduce in the same congestion event. A controller's threshold is the
buffer from which its utilisation stays at or above a level, interpolated in log(buffer) between
the two buffers of the sweep around it. For one flow the level is `FULL`, 99.9 % (a link that
idles one part in a thousand): the rule is the buffer at which it never idles. For N > 1 it is
`MANY_FLOWS_LEVEL`, 99 %: the √N rule is a Gaussian model of the summed windows, which at one
multiple of BDP/√N puts Reno at 98.9 % (Appenzeller et al.), not at 100 %. BBR's ProbeRTT pauses
keep it from 99 % whatever the buffer; its threshold is where it first comes within
`BBR_PLATEAU_GAP` of its utilisation in the deepest buffer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..sizing.rules import MULTIPLICATIVE_DECREASE, beta_rule_multiple
from ..study.sweep import Sweep
from .base import Observation, Precondition, Reproduction

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

# --- the dumbbell -------------------------------------------------------------------------------

PACKET = 1500
RTT_S = 0.100                  # the base RTT (one flow), and the mean RTT of N flows
RTT_SPREAD_S = (0.050, 0.150)  # N > 1: each flow's RTT uniform over this range
RATE_PER_FLOW_BPS = 10_000_000
FLOW_BDP_PACKETS = RATE_PER_FLOW_BPS * RTT_S / (PACKET * 8)  # 83.3
START_JITTER = "2s"
SAMPLE = "100ms"

CONTROLLERS = ("reno", "cubic", "bbr")
LOSS_BASED = ("reno", "cubic")
# The multiplicative decrease factor of each loss-based controller: Reno's half (RFC 5681) and
# CUBIC's 0.7 (RFC 9438 §4.6), the values the paper's rule takes (`sizing.rules`).
BETA = {cca: MULTIPLICATIVE_DECREASE[cca] for cca in LOSS_BASED}
# The controller states after start-up, in `cc_state`: Reno and CUBIC 1 congestion avoidance,
# 2 fast recovery; BBR 2 ProbeBW, 3 ProbeRTT.
STEADY_STATES = {"reno": (1, 2), "cubic": (1, 2), "bbr": (2, 3)}

# --- the thresholds of the preconditions and observations ---------------------------------------

FULL = 0.999              # "fully utilised": the link idles at most one part in a thousand
BBR_PLATEAU_GAP = 0.005   # BBR's threshold: within half a point of its deepest buffer's utilisation
MIN_CYCLES = 4            # congestion cycles of the slowest loss-based flow in the measured window
BBR_MIN_WINDOW_S = 30.0   # BBR: three ProbeRTT periods (10 s each) measured
BETA_TOLERANCE = 0.03     # the measured reduction within ±3 % of β
SATURATED = 0.95          # the deepest buffer keeps the link at least this busy


def bdp_packets(n: int) -> float:
    """The BDP of N flows' link, in packets: N × 10 Mb/s × 100 ms / 1500 bytes."""
    return n * FLOW_BDP_PACKETS


def rule_of_the_paper(cca: str, n: int) -> float:
    """(1 − β)/β · BDP/√N, as a multiple of the BDP (`sizing.rules.beta_rule_multiple`)."""
    return beta_rule_multiple(BETA[cca], n)


def queue_packets(n: int, multiple: float) -> int:
    """`multiple` × BDP/√N in packets (at least one)."""
    return max(1, round(multiple * bdp_packets(n) / math.sqrt(n)))


def reno_sawtooth_utilisation(x: float) -> float:
    """One Reno flow's utilisation for W_max/P = x (module docstring): 3x²/(4(1 − x + x²)) up to
    x = 2, then 1."""
    return 1.0 if x >= 2.0 else 3 * x * x / (4 * (1 - x + x * x))


def reno_buffer_for(utilisation: float, pipe: float) -> float:
    """The buffer, in packets, at which the sawtooth formula reaches `utilisation` (< 1) for a pipe
    of `pipe` packets: the root in [1, 2] of (3 − 4u)x² + 4ux − 4u = 0, less the packet dropped."""
    u = utilisation
    x = (-4 * u + math.sqrt(48 * u * (1 - u))) / (2 * (3 - 4 * u))
    return x * pipe - pipe - 1


def scale(quick: bool) -> dict[str, Any]:
    """The sweep's size (the notes state both)."""
    if quick:
        return {"flows": [1, 8], "multiples": [0.05, 0.1, 0.2, 0.3, 0.43, 0.6, 0.8, 1.0, 1.5],
                "duration_s": {"few": 150, "many": 80}, "measure_from_s": {"few": 30, "many": 20}}
    return {"flows": [1, 2, 4, 8, 16, 32], "multiples": [0.05, 0.1, 0.15, 0.2, 0.3, 0.43, 0.6, 0.8, 1.0, 1.5],
            "duration_s": {"few": 150, "many": 80}, "measure_from_s": {"few": 30, "many": 20}}


# Fewer flows than this run long ("few" above): with one to four flows sharing the buffer each
# flow's window, and so its cycle, is larger (up to ~20 s for one Reno flow at 1.5 BDP), and
# fewer flows make fewer congestion events to count.
MANY_FLOWS_FROM = 8


def _values(column: pl.Series) -> list[float]:
    """The finite values of a numeric column."""
    return [float(v) for v in column.to_list() if v is not None and not math.isnan(float(v))]


def _lo(column: pl.Series) -> float:
    """The smallest finite value of a numeric column (NaN for none)."""
    values = _values(column)
    return min(values) if values else float("nan")


def _hi(column: pl.Series) -> float:
    """The largest finite value of a numeric column (NaN for none)."""
    values = _values(column)
    return max(values) if values else float("nan")


def _mean(column: pl.Series) -> float:
    values = _values(column)
    return sum(values) / len(values) if values else float("nan")


def _median(column: pl.Series) -> float:
    values = sorted(_values(column))
    if not values:
        return float("nan")
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _by_n(values: dict[str, float], n: int) -> float:
    return values["few"] if n < MANY_FLOWS_FROM else values["many"]


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    points = [(n, m) for n in s["flows"] for m in s["multiples"]]
    spread = {"dist": "uniform", "low": f"{RTT_SPREAD_S[0] * 1000:g}ms", "high": f"{RTT_SPREAD_S[1] * 1000:g}ms"}
    base = {
        "name": "spang2021", "duration": "60s", "sample_interval": SAMPLE,
        # Every flow's series (its state for the warm-up, its window and ssthresh for the
        # reductions) and the bottleneck's (its busy time).
        "record": {"flows": "all", "links": ["btl"]},
        "topology": {"kind": "dumbbell", "flows": 1, "bottleneck_rate": "10Mbps", "bottleneck_delay": "5ms",
                     "rtt": f"{RTT_S * 1000:g}ms", "queue": "100p"},
        "flow_defaults": {"cca": "reno", "traffic": "greedy",
                          "start": {"dist": "uniform", "low": "0s", "high": START_JITTER},
                          "tcp": {"ssthresh_from": "cwnd"}},
    }
    return {"sweep": Sweep.from_dict({
        "name": "spang2021", "base": base, "seeds": 1,
        "axes": [{"key": "flow_defaults.cca", "values": list(CONTROLLERS)},
                 {"zip": [{"key": "topology.flows", "values": [n for n, _ in points]},
                          {"key": "topology.bottleneck_rate",
                           "values": [f"{n * RATE_PER_FLOW_BPS // 1_000_000}Mbps" for n, _ in points]},
                          {"key": "topology.rtt",
                           "values": [f"{RTT_S * 1000:g}ms" if n == 1 else spread for n, _ in points]},
                          {"key": "topology.queue", "values": [f"{queue_packets(n, m)}p" for n, m in points]},
                          {"key": "duration", "values": [f"{_by_n(s['duration_s'], n):g}s" for n, _ in points]},
                          {"key": "meta.multiple", "values": [m for _, m in points]}]}]})}


# --- reading the store --------------------------------------------------------------------------

_STUDY_RUNS = "SELECT run_id FROM study_points WHERE study_id = ? AND status = 'complete'"


SYNC_WINDOW_NS = 200_000_000  # reductions within two samples of each other: one congestion event
REDUCTION_FALL = 0.9  # a sample whose window is below 90 % of the one before is in a reduction


def _reductions(res: Results, study: str) -> pl.DataFrame:
    """Every reduction of every flow: the first of a run of samples whose window fell below
    `REDUCTION_FALL` of the one before, with its time and the ratio of the ssthresh set (at the
    start of the recovery, so in that sample) to the window sampled before the fall. (A fall of
    ssthresh would miss a lone Reno flow's reductions: it overflows at the same window every
    cycle, so its ssthresh is set to the same value each time.)"""
    return res.query(
        "WITH s AS (SELECT run_id, flow, time_ns, ssthresh_bytes, cwnd_bytes, "
        "lag(cwnd_bytes) OVER w AS prev_cwnd "
        f"FROM flow_timeseries WHERE run_id IN ({_STUDY_RUNS}) "
        "WINDOW w AS (PARTITION BY run_id, flow ORDER BY time_ns)), "
        f"f AS (SELECT *, cwnd_bytes < {REDUCTION_FALL} * prev_cwnd AS falling FROM s), "
        "g AS (SELECT *, lag(falling) OVER (PARTITION BY run_id, flow ORDER BY time_ns) AS was_falling FROM f) "
        "SELECT run_id, flow, time_ns, ssthresh_bytes::DOUBLE / prev_cwnd AS ratio FROM g "
        "WHERE falling AND NOT coalesce(was_falling, false)", [study])


def measure(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    """One row per run: controller, N, multiple (of BDP/√N), the buffer in BDP and in packets,
    the window measured (from `measure_from_s` to the end), the warm-up (when the last flow reached
    its steady states), the utilisation over the window, the reductions in it of the flow with the
    fewest, the median reduction ratio, the share of the flows reducing together, and the drops
    outside the bottleneck."""
    study = studies["sweep"]
    s = scale(study.startswith("spang2021-quick"))
    runs = res.study_runs(study).filter(pl.col("status") == "complete").select(
        "run_id", pl.col("flow_defaults.cca").alias("cca"), pl.col("topology.flows").alias("flows"),
        pl.col("meta.multiple").alias("multiple"))
    busy = res.query(
        "SELECT s.run_id, s.time_ns, s.busy_ns FROM channel_timeseries s JOIN channels c "
        "ON c.run_id = s.run_id AND c.channel = s.channel "
        f"WHERE c.name = 'btl_forward' AND s.run_id IN ({_STUDY_RUNS}) ORDER BY s.run_id, s.time_ns", [study])
    states = res.query(
        "SELECT run_id, flow, min(time_ns) FILTER (WHERE cc_state IN (1, 2)) AS loss_based_ns, "
        "min(time_ns) FILTER (WHERE cc_state IN (2, 3)) AS model_based_ns "
        f"FROM flow_timeseries WHERE run_id IN ({_STUDY_RUNS}) GROUP BY run_id, flow", [study])
    channels = res.query(
        "SELECT run_id, sum(dropped_queue_packets) FILTER (WHERE name = 'btl_forward') AS btl_drops, "
        "sum(dropped_queue_packets) FILTER (WHERE name <> 'btl_forward') AS other_drops, "
        f"max(queued_end_packets) AS _q FROM channels WHERE run_id IN ({_STUDY_RUNS}) GROUP BY run_id", [study])
    pipes = res.query(f"SELECT run_id, min(min_rtt_ns) AS min_rtt_ns FROM flows WHERE run_id IN ({_STUDY_RUNS}) "
                      "GROUP BY run_id", [study])
    reductions = _reductions(res, study)
    busy_by_run = {r: g for (r,), g in busy.group_by(["run_id"])}
    states_by_run = {r: g for (r,), g in states.group_by(["run_id"])}
    red_by_run = {r: g for (r,), g in reductions.group_by(["run_id"])}
    drops = {r["run_id"]: r for r in channels.iter_rows(named=True)}
    min_rtt = {r["run_id"]: r["min_rtt_ns"] for r in pipes.iter_rows(named=True)}
    rows = []
    for run in runs.iter_rows(named=True):
        rid, cca, n = run["run_id"], run["cca"], run["flows"]
        start_s = float(_by_n(s["measure_from_s"], n))
        b = busy_by_run.get(rid)
        utilisation, window_s = float("nan"), 0.0
        if b is not None and b.height > 1:
            t = b["time_ns"].to_numpy().astype(np.float64) / 1e9
            busy_s = b["busy_ns"].to_numpy().astype(np.float64) / 1e9
            i = int(np.searchsorted(t, start_s))
            if i < len(t) - 1:
                window_s = float(t[-1] - t[i])
                utilisation = float((busy_s[-1] - busy_s[i]) / window_s)
        st = states_by_run.get(rid)
        column = "model_based_ns" if cca == "bbr" else "loss_based_ns"
        warm_up = None if st is None or st[column].null_count() else _hi(st[column]) / 1e9
        red = red_by_run.get(rid)
        fewest, ratio, together = 0, float("nan"), float("nan")
        if red is not None:
            after = red.filter(pl.col("time_ns") >= int(start_s * 1e9))
            counts = after.group_by("flow").len()
            fewest = int(_lo(counts["len"])) if counts.height == n else 0
            ratios = after["ratio"].drop_nulls()
            ratio = _median(ratios)
            together = _together(after, n)
        pipe = bdp_packets(n) if min_rtt.get(rid) is None else n * RATE_PER_FLOW_BPS * min_rtt[rid] / 1e9 / (PACKET * 8)
        d = drops.get(rid, {})
        rows.append({"run_id": rid, "cca": cca, "flows": n, "multiple": run["multiple"],
                     "buffer_bdp": queue_packets(n, run["multiple"]) / bdp_packets(n),
                     "buffer_packets": queue_packets(n, run["multiple"]), "pipe_packets": pipe,
                     "measure_from_s": start_s, "window_s": window_s, "warm_up_s": warm_up,
                     "utilisation": utilisation, "fewest_reductions": fewest, "beta": ratio,
                     "together": together, "btl_drops": d.get("btl_drops"), "other_drops": d.get("other_drops")})
    schema = {"run_id": pl.Utf8, "cca": pl.Utf8, "flows": pl.Int64, "multiple": pl.Float64, "buffer_bdp": pl.Float64,
              "buffer_packets": pl.Int64, "pipe_packets": pl.Float64, "measure_from_s": pl.Float64,
              "window_s": pl.Float64, "warm_up_s": pl.Float64, "utilisation": pl.Float64,
              "fewest_reductions": pl.Int64, "beta": pl.Float64, "together": pl.Float64, "btl_drops": pl.Int64,
              "other_drops": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row").sort("cca", "flows", "multiple")


def _together(reductions: pl.DataFrame, n: int) -> float:
    """The mean share of the other N − 1 flows that reduce in the same congestion event as a flow:
    over the events, (k − 1)/(N − 1) for an event in which k flows reduce, reductions less than
    `SYNC_WINDOW_NS` after the one before belonging to the same event. 0 when every event takes
    one flow (desynchronised), 1 when every flow reduces at every event (synchronised); NaN for
    one flow."""
    ordered = reductions.sort("time_ns")
    times, flows_at = ordered["time_ns"].to_list(), ordered["flow"].to_list()
    if not times or n < 2:
        return float("nan")
    shares, event, last = [], {flows_at[0]}, times[0]
    for t, f in zip(times[1:], flows_at[1:]):
        if t - last <= SYNC_WINDOW_NS:
            event.add(f)
        else:
            shares.append((len(event) - 1) / (n - 1))
            event = {f}
        last = t
    shares.append((len(event) - 1) / (n - 1))
    return float(sum(shares) / len(shares))


def threshold(buffers: Sequence[float], utilisation: Sequence[float], level: float) -> float | None:
    """The buffer at which `utilisation` first reaches `level` and stays there for every larger
    buffer, interpolated linearly in log(buffer) between the sweep's buffers around it; the
    smallest buffer if all reach it; None if the largest does not."""
    pairs = sorted(zip(buffers, utilisation))
    b = [p[0] for p in pairs]
    u = [p[1] for p in pairs]
    if not u or not u[-1] >= level:
        return None
    i = len(u) - 1
    while i > 0 and u[i - 1] >= level:
        i -= 1
    if i == 0:
        return b[0]
    lo, hi = math.log(b[i - 1]), math.log(b[i])
    frac = (level - u[i - 1]) / (u[i] - u[i - 1])
    return math.exp(lo + frac * (hi - lo))


def _cca(cca: str) -> str:
    from ..plots.common import controller_name

    return controller_name(cca)


# --- preconditions --------------------------------------------------------------------------------

BOTTLENECK_KEY = "the bottleneck is the bottleneck"


def steady_key(cca: str, n: int) -> str:
    return f"steady state: {_cca(cca)}, N = {n}"


def desync_key(cca: str, n: int) -> str:
    return f"desynchronised: {_cca(cca)}, N = {n}"


def beta_key(cca: str) -> str:
    return f"β as assumed: {_cca(cca)}"


def _groups(m: pl.DataFrame) -> list[tuple[str, int, pl.DataFrame]]:
    """The runs per (controller, N), in the order of `CONTROLLERS` and of N."""
    order = {c: i for i, c in enumerate(CONTROLLERS)}
    groups = [(str(c), int(n), g) for (c, n), g in m.group_by(["cca", "flows"], maintain_order=True)]
    return sorted(groups, key=lambda t: (order.get(t[0], len(order)), t[1]))


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    m = measure(res, studies)
    out = []
    elsewhere = int(m["other_drops"].fill_null(0).sum())
    loss_runs = m.filter(pl.col("cca").is_in(LOSS_BASED))
    dry = loss_runs.filter(pl.col("btl_drops").fill_null(0) == 0).height
    deepest = [g.sort("buffer_bdp")["utilisation"][-1] for _, _, g in _groups(m)]
    lowest_deep = min(deepest) if deepest else float("nan")
    out.append(Precondition(
        BOTTLENECK_KEY, "no packet was dropped anywhere but at the bottleneck's queue, every Reno and CUBIC run "
        f"dropped there (its buffer filled), and for every controller and N the deepest buffer keeps it ≥ "
        f"{SATURATED:.0%} busy", f"{elsewhere} drops elsewhere; {dry} of {loss_runs.height} loss-based runs without "
        f"a drop at the bottleneck; deepest buffers' utilisation ≥ {lowest_deep:.3f}",
        m.height > 0 and elsewhere == 0 and dry == 0 and lowest_deep >= SATURATED))
    for cca, n, g in _groups(m):
        warm = g["warm_up_s"].to_list()
        start = float(g["measure_from_s"][0])
        latest = None if None in warm else max(warm)
        warm_text = "a flow never reached them" if latest is None else f"latest {latest:.1f} s"
        warm_ok = latest is not None and latest <= start
        if cca in LOSS_BASED:
            fewest = int(_lo(g["fewest_reductions"]))
            out.append(Precondition(
                steady_key(cca, n), f"in every run every flow reached congestion avoidance before the measurement "
                f"starts ({start:g} s), and the flow with the fewest went through ≥ {MIN_CYCLES} congestion cycles "
                "(reductions) after it", f"{warm_text}; fewest cycles {fewest}", warm_ok and fewest >= MIN_CYCLES))
        else:
            shortest = _lo(g["window_s"])
            out.append(Precondition(
                steady_key(cca, n), f"in every run every flow reached ProbeBW before the measurement starts "
                f"({start:g} s), and ≥ {BBR_MIN_WINDOW_S:g} s (three ProbeRTT periods of 10 s) are measured",
                f"{warm_text}; shortest window {shortest:.0f} s", warm_ok and shortest >= BBR_MIN_WINDOW_S))
    for cca, n, g in _groups(m):
        if cca not in LOSS_BASED or n < 2:
            continue
        together = _mean(g["together"])
        out.append(Precondition(
            desync_key(cca, n), "the flows do not reduce together: averaged over the runs, the share of the other "
            f"flows that reduce in the same congestion event as a flow is ≤ {DESYNC_MAX:g} (1: all reduce at every "
            "event, synchronised; 0: one flow per event)",
            f"{together:.2f} (runs {_span(g['together'].to_list(), '.2f')})", together <= DESYNC_MAX))
    for cca in LOSS_BASED:
        g = m.filter(pl.col("cca") == cca)
        if not g.height:
            continue
        ratios = g["beta"].drop_nans().drop_nulls()
        median = _median(ratios)
        out.append(Precondition(
            beta_key(cca), f"the window is cut to β = {BETA[cca]:g} of itself at a loss: the median, over every "
            "reduction after the warm-up, of the new ssthresh over the window sampled before it within "
            f"±{BETA_TOLERANCE:.0%} of β (`tcp.ssthresh_from = \"cwnd\"`)",
            f"median {median:.3f} (runs {_span(ratios.to_list(), '.3f')})",
            abs(median - BETA[cca]) <= BETA_TOLERANCE * BETA[cca]))
    return out


DESYNC_MAX = 0.5


def _span(values: Sequence[float | None], fmt: str) -> str:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite:
        return "none"
    low, high = min(finite), max(finite)
    return f"{low:{fmt}}" if f"{low:{fmt}}" == f"{high:{fmt}}" else f"{low:{fmt}}–{high:{fmt}}"


# --- observations ---------------------------------------------------------------------------------

ONE_FLOW_BAND = 0.15      # one flow: the threshold within 15 % of (1 − β)/β BDP (see the tolerance)
MANY_FLOWS_LEVEL = 0.99   # N > 1: the threshold read at 99 %, where the Gaussian model puts BDP/√N
MANY_FLOWS_FACTOR = 1.5   # N > 1: the threshold within a factor 1.5 of (1 − β)/β · BDP/√N
SAWTOOTH_TOLERANCE = 0.03  # the Reno formula: within 3 % at every buffer below the BDP
SLOPE_BAND = 0.15         # the threshold's slope against N on log axes: −1/2 ± 0.15
MIN_N_FOR_SLOPE = 3       # values of N > 1 the slope needs


def _threshold_at(m: pl.DataFrame, cca: str, n: int, level: float) -> float | None:
    g = m.filter((pl.col("cca") == cca) & (pl.col("flows") == n)).sort("buffer_bdp")
    g = g.filter(pl.col("utilisation").is_not_nan())
    return threshold(g["buffer_bdp"].to_list(), g["utilisation"].to_list(), level) if g.height else None


def bbr_threshold(m: pl.DataFrame, n: int) -> tuple[float | None, float]:
    """BBR's threshold for N flows (in BDP) and its plateau: where its utilisation first comes
    within `BBR_PLATEAU_GAP` of the deepest buffer's and stays there."""
    g = m.filter((pl.col("cca") == "bbr") & (pl.col("flows") == n)).sort("buffer_bdp")
    g = g.filter(pl.col("utilisation").is_not_nan())
    if not g.height:
        return None, float("nan")
    plateau = float(g["utilisation"][-1])
    return threshold(g["buffer_bdp"].to_list(), g["utilisation"].to_list(), plateau - BBR_PLATEAU_GAP), plateau


def level_for(n: int) -> float:
    """The utilisation a loss-based threshold is read at: `FULL` for one flow, where the rule is
    exact, and `MANY_FLOWS_LEVEL` for N > 1, where it is the Gaussian model's."""
    return FULL if n == 1 else MANY_FLOWS_LEVEL


def _fmt(value: float | None, fmt: str = ".3f") -> str:
    return "none in the sweep" if value is None else f"{value:{fmt}}"


def _not_run(key: str, claim: str, seed_value: str, what: str) -> Observation:
    return Observation(key, claim, seed_value, f"no {what} in this variant", None, requires=())


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    m = measure(res, studies)
    present = {(c, n) for c, n in zip(m["cca"].to_list(), m["flows"].to_list())}
    flows = sorted({n for _, n in present})
    obs = []

    # One flow: the threshold of each loss-based controller against (1 − β)/β.
    for cca in LOSS_BASED:
        beta = BETA[cca]
        rule = rule_of_the_paper(cca, 1)
        key = f"one {_cca(cca)} flow"
        claim = (f"one {_cca(cca)} flow (β = {beta:g}) keeps the link fully busy from B = (1 − β)/β · BDP = "
                 f"{rule:.2f} BDP" + (" on: the rule of thumb" if cca == "reno" else
                                       f", {1 - rule:.0%} less than Reno's BDP"))
        if (cca, 1) not in present:
            obs.append(_not_run(key, claim, f"{rule:.2f} BDP", f"{_cca(cca)} run of one flow"))
            continue
        t = _threshold_at(m, cca, 1, FULL)
        obs.append(Observation(
            key, claim, f"{rule:.3f} BDP", f"utilisation ≥ {FULL:.1%} from {_fmt(t)} BDP",
            t is not None and abs(t / rule - 1) <= ONE_FLOW_BAND, "" if t is None else _rel(t, rule),
            tolerance=f"within {ONE_FLOW_BAND:.0%}: the rule is where the link never idles; read here at {FULL:.1%}, "
                      "the threshold comes a little earlier (a Reno sawtooth reaches 99.9 % at "
                      f"{reno_buffer_for(FULL, FLOW_BDP_PACKETS) / FLOW_BDP_PACKETS:.2f} BDP, 10 % below), and it "
                      "is interpolated between buffers of the sweep",
            requires=(BOTTLENECK_KEY, steady_key(cca, 1), beta_key(cca))))

    # One Reno flow below the BDP: the sawtooth formula.
    key, claim = ("Reno sawtooth", "below one BDP, one Reno flow's utilisation is the sawtooth's, "
                                   "3x²/(4(1 − x + x²)) with x = 1 + B/P")
    reno_one = m.filter((pl.col("cca") == "reno") & (pl.col("flows") == 1) & (pl.col("buffer_bdp") < 1.0))
    if reno_one.height:
        expected = [reno_sawtooth_utilisation((p + b + 1) / p) for p, b in
                    zip(reno_one["pipe_packets"], reno_one["buffer_packets"])]
        off = [u / e - 1 for u, e in zip(reno_one["utilisation"], expected)]
        worst = max(range(len(off)), key=lambda i: abs(off[i]))
        obs.append(Observation(
            key, claim, "B/BDP: " + ", ".join(f"{b:.2f}: {e:.3f}" for b, e in zip(reno_one["buffer_bdp"], expected)),
            ", ".join(f"{b:.2f}: {u:.3f}" for b, u in zip(reno_one["buffer_bdp"], reno_one["utilisation"])),
            all(abs(o) <= SAWTOOTH_TOLERANCE for o in off), f"farthest {off[worst] * 100:+.1f} % at "
            f"{reno_one['buffer_bdp'][worst]:.2f} BDP",
            tolerance=f"every buffer within {SAWTOOTH_TOLERANCE:.0%} of the formula (the engine's own sawtooth test's "
                      "margin: the fluid formula leaves out the packet-level detail of recovery)",
            requires=(BOTTLENECK_KEY, steady_key("reno", 1), beta_key("reno"))))
    else:
        obs.append(_not_run(key, claim, "the formula", "Reno run of one flow below the BDP"))

    # BBR: less buffer than either loss-based controller, for every N.
    for n in flows:
        key = f"BBR, N = {n}"
        claim = (f"BBR (version 1) needs less buffer than CUBIC and Reno (N = {n}): its threshold, where its "
                 "utilisation stops rising with the buffer, lies below theirs")
        if not all((c, n) in present for c in CONTROLLERS):
            obs.append(_not_run(key, claim, "below both", f"run of all three controllers with N = {n}"))
            continue
        t_bbr, plateau = bbr_threshold(m, n)
        loss = {c: _threshold_at(m, c, n, level_for(n)) for c in LOSS_BASED}
        smallest = m.filter(pl.col("flows") == n).sort("buffer_bdp")["buffer_bdp"][0]
        at_smallest = {c: float(m.filter((pl.col("cca") == c) & (pl.col("flows") == n)
                                         & (pl.col("buffer_bdp") == smallest))["utilisation"][0]) for c in CONTROLLERS}
        below = t_bbr is not None and all(t is None or t_bbr < t for t in loss.values())
        obs.append(Observation(
            key, claim, "below CUBIC's and Reno's",
            f"BBR {_fmt(t_bbr)} BDP (within {BBR_PLATEAU_GAP * 100:g} points of its {plateau:.3f}); "
            + "; ".join(f"{_cca(c)} {_fmt(t)} BDP (≥ {level_for(n):.1%})" for c, t in loss.items())
            + f"; at the smallest buffer ({smallest:.3f} BDP) "
            + ", ".join(f"{_cca(c)} {u:.3f}" for c, u in at_smallest.items()),
            below, tolerance="strictly below, qualitatively (the paper gives no number for BBR that this engine's "
                             "version 1 can be held to); a loss-based controller that never reaches its level in the "
                             "sweep counts as above",
            requires=(BOTTLENECK_KEY, *(steady_key(c, n) for c in CONTROLLERS))))

    # N > 1: (1 − β)/β · BDP/√N per controller.
    for cca in LOSS_BASED:
        for n in [n for n in flows if n > 1 and (cca, n) in present]:
            rule = rule_of_the_paper(cca, n)
            t = _threshold_at(m, cca, n, MANY_FLOWS_LEVEL)
            obs.append(Observation(
                f"{_cca(cca)}, N = {n}", f"{n} desynchronised {_cca(cca)} flows keep the link busy from "
                f"(1 − β)/β · BDP/√N = {rule:.3f} BDP", f"{rule:.3f} BDP",
                f"utilisation ≥ {MANY_FLOWS_LEVEL:.0%} from {_fmt(t)} BDP",
                t is not None and 1 / MANY_FLOWS_FACTOR <= t / rule <= MANY_FLOWS_FACTOR,
                "" if t is None else _rel(t, rule),
                tolerance=f"within a factor {MANY_FLOWS_FACTOR:g} either way, read at {MANY_FLOWS_LEVEL:.0%}: the √N "
                          "rule is a Gaussian model of the summed windows, which puts 98.9 % at BDP/√N for Reno "
                          "(Appenzeller et al.) and holds only roughly for tens of flows",
                requires=(BOTTLENECK_KEY, steady_key(cca, n), desync_key(cca, n), beta_key(cca))))

    # The slope against N.
    for cca in LOSS_BASED:
        many = [n for n in flows if n > 1 and (cca, n) in present]
        key = f"√N: {_cca(cca)}"
        claim = f"the {_cca(cca)} threshold falls as 1/√N (slope −1/2 on log axes, N > 1)"
        if len(many) < MIN_N_FOR_SLOPE:
            obs.append(_not_run(key, claim, "−0.5", f"sweep of ≥ {MIN_N_FOR_SLOPE} values of N > 1 (runs: "
                                + (", ".join(f"N = {n}" for n in many) or "none") + ")"))
            continue
        points = [(n, _threshold_at(m, cca, n, MANY_FLOWS_LEVEL)) for n in many]
        found = [(n, t) for n, t in points if t is not None]
        slope = float(np.polyfit(np.log([n for n, _ in found]), np.log([t for _, t in found]), 1)[0]) \
            if len(found) >= 2 else float("nan")
        obs.append(Observation(
            key, claim, "−0.50", f"slope {slope:.2f} over " + ", ".join(f"N = {n}: {_fmt(t)}" for n, t in points),
            len(found) == len(points) and abs(slope + 0.5) <= SLOPE_BAND, f"{slope + 0.5:+.2f}",
            tolerance=f"±{SLOPE_BAND:g}: a least-squares line through the thresholds at {MANY_FLOWS_LEVEL:.0%} in "
                      "log–log; every N must have one",
            requires=(BOTTLENECK_KEY, beta_key(cca), *(steady_key(cca, n) for n in many),
                      *(desync_key(cca, n) for n in many))))
    return obs


def _rel(a: float, b: float) -> str:
    return f"{(a / b - 1) * 100:+.1f} %"


def thresholds(m: pl.DataFrame) -> pl.DataFrame:
    """Per (controller, N): the threshold buffer in BDP at the level each comparison reads it
    (`level_for`; BBR: its plateau less `BBR_PLATEAU_GAP`), the loss-based one at `FULL` too, and
    the paper's rule."""
    rows = []
    for cca, n, _ in _groups(m):
        if cca == "bbr":
            t, plateau = bbr_threshold(m, n)
            rows.append({"cca": cca, "flows": n, "level": plateau - BBR_PLATEAU_GAP, "threshold_bdp": t,
                         "full_bdp": None, "rule_bdp": None})
        else:
            rows.append({"cca": cca, "flows": n, "level": level_for(n),
                         "threshold_bdp": _threshold_at(m, cca, n, level_for(n)),
                         "full_bdp": _threshold_at(m, cca, n, FULL), "rule_bdp": rule_of_the_paper(cca, n)})
    return pl.DataFrame(rows, schema={"cca": pl.Utf8, "flows": pl.Int64, "level": pl.Float64,
                                      "threshold_bdp": pl.Float64, "full_bdp": pl.Float64, "rule_bdp": pl.Float64},
                        orient="row")


# --- the summary's table and the figures ----------------------------------------------------------


def _appendix(res: Results, studies: dict[str, str]) -> str:
    m = measure(res, studies)
    t = thresholds(m)
    lines = ["## Thresholds", "",
             f"The buffer (in BDP) from which the utilisation stays at or above the level: {FULL:.1%} for one "
             f"loss-based flow, {MANY_FLOWS_LEVEL:.0%} for N > 1, BBR's plateau less {BBR_PLATEAU_GAP * 100:g} points.",
             "", "| controller | N | rule (1 − β)/β · BDP/√N | threshold | read at | at 99.9 % |", "|---|---|---|---|---|---|"]
    for r in t.iter_rows(named=True):
        lines.append(f"| {_cca(r['cca'])} | {r['flows']} | {_fmt(r['rule_bdp']) if r['rule_bdp'] else '—'} | "
                     f"{_fmt(r['threshold_bdp'])} | {r['level']:.1%} | "
                     f"{_fmt(r['full_bdp']) if r['cca'] in LOSS_BASED else '—'} |")
    lines += ["", "## Measured, per run", "",
              "After the warm-up; reductions of the flow with the fewest, the median reduction ratio (new ssthresh over "
              "the window before), the mean share of the other flows reducing in the same congestion event.", "",
              "| controller | N | buffer (BDP/√N) | buffer (BDP) | packets | utilisation | fewest reductions | "
              "reduction ratio | reducing together | drops |", "|---|---|---|---|---|---|---|---|---|---|"]
    for cca, _, g in _groups(m):
        for r in g.sort("multiple").iter_rows(named=True):
            loss = cca in LOSS_BASED
            ratio = f"{r['beta']:.3f}" if loss and r["beta"] is not None and not math.isnan(r["beta"]) else "—"
            together = (f"{r['together']:.2f}" if loss and r["together"] is not None and not math.isnan(r["together"])
                        else "—")
            lines.append(f"| {_cca(cca)} | {r['flows']} | {r['multiple']:g} | {r['buffer_bdp']:.3f} | "
                         f"{r['buffer_packets']} | {r['utilisation']:.4f} | {r['fewest_reductions'] if loss else '—'} | "
                         f"{ratio} | {together} | {r['btl_drops']} |")
    return "\n".join(lines)


MARKERS = {"reno": "o", "cubic": "s", "bbr": "^"}


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import legend_below, new_figure, plain_log_ticks, require_data, run_colour, title

    m = measure(res, studies)
    require_data("spang2021", [m["utilisation"].to_numpy()], "no run of the sweep measured")
    t = thresholds(m)
    colour = {c: run_colour(i) for i, c in enumerate(CONTROLLERS)}
    flows = sorted(set(m["flows"].to_list()))
    shown = flows if len(flows) <= 3 else [flows[0], flows[len(flows) // 2], flows[-1]]
    figures = {}

    # 1. Utilisation against buffer/BDP, a panel per N, the rules marked.
    fig, grid = new_figure(1, len(shown), size=(4.4 * len(shown) + 0.6, 5.4), sharey="row")
    for col, n in enumerate(shown):
        ax = grid[0][col]
        g_all = m.filter(pl.col("flows") == n)
        for cca in CONTROLLERS:
            g = g_all.filter(pl.col("cca") == cca).sort("buffer_bdp")
            if not g.height:
                continue
            ax.plot(g["buffer_bdp"].to_numpy(), g["utilisation"].to_numpy() * 100, marker=MARKERS[cca],
                    color=colour[cca], label=_cca(cca))
            if cca in BETA:
                rule = rule_of_the_paper(cca, n)
                ax.axvline(rule, color=colour[cca], linestyle=":", linewidth=1.2,
                           label=f"{_cca(cca)}: (1 − β)/β · BDP/√N")
        if n == 1:
            pipe = float(g_all["pipe_packets"][0])
            x = np.geomspace(_lo(g_all["buffer_bdp"]), _hi(g_all["buffer_bdp"]), 200)
            ax.plot(x, [reno_sawtooth_utilisation((pipe + b * FLOW_BDP_PACKETS + 1) / pipe) * 100 for b in x],
                    color=colour["reno"], linestyle="--", linewidth=1, alpha=0.8, label="Reno sawtooth formula")
        ax.axhline(level_for(n) * 100, color="0.5", linewidth=0.8, linestyle="-.",
                   label="level read: 99.9 % (N = 1), 99 % (N > 1)")
        plain_log_ticks(ax, ticks=[v for v in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 1.5)
                                   if _lo(g_all["buffer_bdp"]) * 0.9 <= v <= _hi(g_all["buffer_bdp"]) * 1.1])
        ax.set_xlabel("buffer / BDP")
        ax.set_title(f"N = {n} ({n * RATE_PER_FLOW_BPS / 1e6:g} Mb/s)")
        if col == 0:
            ax.set_ylabel("bottleneck utilisation after the warm-up (%)")
    low = float(np.nanmin(m.filter(pl.col("flows").is_in(shown))["utilisation"].to_numpy())) * 100
    grid[0][0].set_ylim(max(low - 2, 0), 100.6)
    legend_below(fig, grid[0][0], max_columns=4)
    title(fig, "Utilisation against buffer size: Reno, CUBIC and BBR on a drop-tail bottleneck, 10 Mb/s per flow, "
               "mean RTT 100 ms\ndotted: the paper's rule (1 − β)/β · BDP/√N")
    figures["spang2021_utilisation_vs_buffer"] = fig

    # 2. The threshold against N on log axes, with the rule's lines.
    fig, grid = new_figure(1, 1, size=(8.4, 6.4))
    ax = grid[0][0]
    n_line = np.geomspace(min(flows), max(flows), 50)
    for cca in CONTROLLERS:
        g = t.filter(pl.col("cca") == cca).sort("flows")
        if not g.height:
            continue
        if cca in BETA:
            beta = BETA[cca]
            ax.plot(n_line, (1 - beta) / beta / np.sqrt(n_line), color=colour[cca], linestyle=":", linewidth=1.2,
                    label=f"{_cca(cca)}: (1 − β)/β · BDP/√N, β = {beta:g}")
            many = g.filter((pl.col("flows") > 1) & pl.col("threshold_bdp").is_not_null())
            ax.plot(many["flows"].to_numpy(), many["threshold_bdp"].to_numpy(), marker=MARKERS[cca],
                    color=colour[cca], linestyle="-", label=f"{_cca(cca)}: utilisation ≥ {MANY_FLOWS_LEVEL:.0%}")
            full = g.filter(pl.col("full_bdp").is_not_null())
            ax.plot(full["flows"].to_numpy(), full["full_bdp"].to_numpy(), marker=MARKERS[cca], color=colour[cca],
                    linestyle="none", markerfacecolor="none", markersize=8,
                    label=f"{_cca(cca)}: utilisation ≥ {FULL:.1%}")
        else:
            found = g.filter(pl.col("threshold_bdp").is_not_null())
            ax.plot(found["flows"].to_numpy(), found["threshold_bdp"].to_numpy(), marker=MARKERS[cca],
                    color=colour[cca], linestyle="-",
                    label=f"BBR: within {BBR_PLATEAU_GAP * 100:g} points of its deepest buffer's")
            # A threshold at the smallest buffer swept is only a bound: BBR may need less still.
            for n, b in zip(found["flows"], found["threshold_bdp"]):
                smallest = _lo(m.filter((pl.col("cca") == cca) & (pl.col("flows") == n))["buffer_bdp"])
                if b <= smallest * 1.0001:
                    ax.annotate("≤", (n, b), textcoords="offset points", xytext=(-7, 0), ha="right", va="center",
                                fontsize="small", color=colour[cca])
    plain_log_ticks(ax, ticks=flows)
    plain_log_ticks(ax, axis="y")
    ax.set_xlabel("N (flows)")
    ax.set_ylabel("threshold buffer / BDP")
    legend_below(fig, ax, max_columns=2)
    title(fig, "The buffer each controller needs against N (10 Mb/s per flow, mean RTT 100 ms)\n"
               "dotted: the paper's rule; ≤: BBR already at its plateau at the smallest buffer swept")
    figures["spang2021_threshold_vs_flows"] = fig
    return figures


REPRODUCTION = Reproduction(
    name="spang2021", seed="Spang, Arslan and McKeown 2021",
    title="Spang et al. 2021: B = (1 − β)/β · BDP/√N for Reno, CUBIC and BBR",
    description="Reno, CUBIC and BBR on a drop-tail dumbbell with a mean RTT of 100 ms and 10 Mb/s of bottleneck per "
                "flow, the buffer swept in multiples of BDP/√N for N flows: the buffer that keeps the link busy "
                "against the paper's (1 − β)/β · BDP/√N (one BDP for Reno, 0.43 BDP for CUBIC), BBR's below both, "
                "and one Reno flow's utilisation against the sawtooth formula. Every TCP flow reduces from cwnd "
                "(`tcp.ssthresh_from = \"cwnd\"`, as Linux).",
    quick_estimate_s=8, full_estimate_s=45, sweeps=_sweeps, preconditions=_preconditions, observe=_observe,
    draw=_draw, appendix=_appendix,
    notes=["Quick: N = 1 and 8, buffers 0.05 to 1.5 × BDP/√N (9), one seed, 54 runs; full: N = 1, 2, 4, 8, 16 and 32 "
           "(up to 320 Mb/s), 10 buffers, 180 runs. One to four flows run 150 s measured from 30 s, eight or more "
           "80 s measured from 20 s (their flows' windows, and cycles, are smaller).",
           "The bottleneck's rate is 10 Mb/s per flow, not the 100 Mb/s or more of the paper: one Reno flow's "
           "congestion cycle lasts W_max/2 RTTs, ~110 s at 100 Mb/s × 100 ms with one BDP of buffer, so a run would "
           "need ten minutes for a few cycles; at 10 Mb/s it lasts 4–20 s. Each flow's share of the BDP (83 "
           "packets) and its cycle are then the same for every N, as in the Stanford model's experiments.",
           "TCP reduces from cwnd (`tcp.ssthresh_from = \"cwnd\"`, Linux's rule): ssthresh = β·cwnd is then the "
           "published β of the window; the preconditions measure the ratio (0.500 and 0.701 in the quick run).",
           f"The thresholds are read at {FULL:.1%} for one flow, where the rule is exact (the link never idles), "
           f"and at {MANY_FLOWS_LEVEL:.0%} for N > 1, where the √N rule is the Gaussian model's (98.9 % at one "
           "multiple for Reno); the figure of the thresholds shows both levels.",
           "BBR version 1 drains to 4 packets for 200 ms every 10 s (ProbeRTT), ~2–5 % of the link whatever the "
           "buffer, so it never reaches 99.9 %; its threshold is where its utilisation comes within half a point of "
           "its deepest buffer's. With one flow that is about 0.24 BDP, near the 0.25 BDP of queue its 5/4 probing "
           "gain builds in one RTT.",
           "CUBIC's utilisation below its threshold is not judged against a formula: fast convergence lowers a lone "
           "flow's plateau at every other loss, so no single cycle shape describes it.",
           "Not yet: the paper's PRR analysis (the engine's recovery is compared as it is), its ECN cases, and "
           "unfair mixes of controllers."])
