"""ware2019 — BBR's share of a bottleneck against loss-based flows (Ware, Mukerjee, Seshan and
Sherry, "Modeling BBR's interactions with loss-based congestion control", IMC 2019).

What the paper says, in the terms used here. BBR (version 1) is meant to pace at its estimate of
the bottleneck's rate, but against loss-based flows that keep a drop-tail queue full it is
limited by its window: its in-flight cap of twice its estimated BDP,

    inflight_cap = 2 · RTT_est · BtlBw_est                                          (Eq. 1)

With p the loss-based flows' share of the link of capacity c (packets per second), BBR's
bandwidth estimate is what is left to it, BtlBw_est = (1 − p)·c (Eq. 2). Its RTT estimate comes
from ProbeRTT: every 10 s it lowers its window to 4 packets, so its own packets leave the queue,
but the loss-based flows' do not, and it measures their queue. In a bloated buffer of q packets
RTT_est = p·q/c (Eq. 3), the cap is 2q(p − p²), and setting it equal to BBR's in-flight data
(1 − p)·q gives p = 1/2 (Eqs. 4-5): one BBR flow takes half the link whatever the number of
loss-based flows. The extended model keeps the base RTT l and the 4 packets of each of N BBR
flows left in the queue during ProbeRTT, RTT_est = (p·q + 4N)/c + l (Eq. 7, from Eq. 6), so the
cap is 2(1 − p)·c·((p·q + 4N)/c + l) (Eq. 8); equal to BBR's share of the pipe and the queue,
(1 − p)(q + c·l), it gives, with X = q/(c·l) the buffer in BDPs,

    p = 1/2 − 1/(2X) − 4N/q                                                         (Eq. 9)

(p < 0: BBR's cap exceeds the pipe and the queue, and it takes the link). While BBR is in
ProbeRTT it sends next to nothing: the queue must drain (q/c), then 200 ms and a round trip (l),
about once every 10 s, so over a time d its fraction of the link is

    BBR_frac = (1 − p) · (d − Probe_time)/d,  Probe_time = (q/c + 0.2 + l) · d/10   (Eqs. 10-11)

Nothing in Eqs. 9-11 depends on the number of loss-based flows: one BBR flow's share is set by
the buffer, so against many CUBIC flows it takes far more than its fair share. The paper
validates the model against CUBIC and Reno on a testbed of 40 ms × 10 Mb/s (and 30 ms × 50 Mb/s)
with buffers of 1-64 BDP, a median error of 5 % against CUBIC and 8 % against Reno.

The experiment. A dumbbell with a drop-tail bottleneck of 100 Mb/s and the paper's base RTT of
40 ms (BDP 333 packets of 1500 bytes; the paper's 10 Mb/s would make the 4N/q term of Eq. 9 ten
times larger, 0.012 at one BDP here), one BBR flow against N = 1, 2, 4, 8 CUBIC flows, all
starting together as in the paper, the buffer swept over 1-64 BDP in powers of two. The same grid
runs with BBRv3 (`cca = "bbr3"`) in place of BBR: the paper's model is for version 1, and BBRv3
adds a loss response (its short-term model cuts to 0.7 after a round with loss, and a probe that
sees more than 2 % loss bounds its inflight), so its share is reported beside version 1's and
judged only against it. Every TCP flow reduces from cwnd at a congestion event
(`tcp.ssthresh_from = "cwnd"`, as Linux).

What is measured, per run, over the window after the warm-up (`warm_up_s`, the paper's "after
convergence"): BBR's share of the bytes delivered by all flows (with the link saturated, its
fraction of the link), the same over each half of the window (the share has settled when the
halves agree), the bottleneck's utilisation and its largest queue. In a deep buffer the shares
move for hundreds of seconds: BBR's bandwidth estimate is a maximum over 10 round trips, and a
round trip is up to 2.6 s with 64 BDP of queue; a buffer whose shares have not settled is not
judged.
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

# --- the dumbbell -------------------------------------------------------------------------------

RATE_BPS = 100_000_000
RTT_S = 0.040              # the paper's base RTT
PACKET = 1500
BDP_PACKETS = RATE_BPS * RTT_S / (PACKET * 8)  # 333.3
SAMPLE = "500ms"
BBR = "bbr"
VERSIONS = ("bbr", "bbr3")
VERSION_NAMES = {"bbr": "BBRv1", "bbr3": "BBRv3"}
# The controller states after start-up, in `cc_state`: BBR 2 ProbeBW, 3 ProbeRTT; BBRv3 3 ProbeRTT,
# 4-7 ProbeBW's DOWN, CRUISE, REFILL, UP (docs/engine/index.md, the flows' series).
STEADY_STATES = {"bbr": (2, 3), "bbr3": (3, 4, 5, 6, 7)}

# --- BBR's ProbeRTT, as the model takes it (draft-cardwell-iccrg-bbr-congestion-control-00) ----

PROBE_RTT_INTERVAL_S = 10.0   # RTprop's filter: ProbeRTT when it is 10 s old
PROBE_RTT_DURATION_S = 0.2    # 200 ms at 4 packets
PROBE_RTT_PACKETS = 4

# --- the thresholds of the preconditions and observations ---------------------------------------

SATURATED = 0.95        # the loss-based flows keep the link at least this busy
QUEUE_FILLED = 0.9      # the largest queue after the warm-up reaches this fraction of the limit
SETTLED = 0.05          # BBR's shares over the two halves of the window differ by at most this
MODEL_TOLERANCE = 0.10  # measured share within this of the model's, in fractions of the link
N_SPREAD = 0.10         # BBR's shares over N within this of one another
RTT_EST_TOLERANCE = 0.30  # BBRv1's RTT estimate within this of Eq. 7's (CUBIC's β = 0.7: its queue's swing)
DEEP_BDP = 8.0          # "deep": buffers of at least this many BDP


def scale(quick: bool) -> dict[str, Any]:
    """The sweep's size: the quick variant runs two buffers and two flow counts for CI."""
    if quick:
        return {"multiples": [2.0, 8.0], "cubic_flows": [1, 4], "duration_s": 240, "warm_up_s": 120}
    return {"multiples": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], "cubic_flows": [1, 2, 4, 8], "duration_s": 1200,
            "warm_up_s": 600}


def queue_packets(multiple: float) -> int:
    """`multiple` × BDP in packets of 1500 bytes."""
    return max(1, round(multiple * BDP_PACKETS))


def loss_based_share(multiple: float, bbr_flows: int = 1) -> float:
    """p of Eq. 9: the loss-based flows' share of the link at the BBR flows' in-flight cap,
    1/2 − 1/(2X) − 4N/q, at least 0 (BBR's cap beyond the pipe and the queue)."""
    q = queue_packets(multiple)
    return max(0.0, 0.5 - 1 / (2 * multiple) - PROBE_RTT_PACKETS * bbr_flows / q)


def probe_rtt_fraction(multiple: float) -> float:
    """Probe_time/d of Eq. 11: the time BBR spends in ProbeRTT, (q/c + 0.2 s + l) every 10 s."""
    q_s = queue_packets(multiple) * PACKET * 8 / RATE_BPS
    return min(1.0, (q_s + PROBE_RTT_DURATION_S + RTT_S) / PROBE_RTT_INTERVAL_S)


def model_rtt_estimate_s(multiple: float, bbr_flows: int = 1) -> float:
    """RTT_est of Eq. 7 at Eq. 9's p: the loss-based flows' queue and the BBR flows' 4 packets
    each, drained at c, plus the base RTT, seconds."""
    c = RATE_BPS / (PACKET * 8)
    p = loss_based_share(multiple, bbr_flows)
    return (p * queue_packets(multiple) + PROBE_RTT_PACKETS * bbr_flows) / c + RTT_S


def model_share(multiple: float, bbr_flows: int = 1) -> float:
    """BBR_frac of Eq. 10: the BBR flows' fraction of the link, (1 − p)(1 − Probe_time/d). It
    does not depend on the number of loss-based flows."""
    return (1 - loss_based_share(multiple, bbr_flows)) * (1 - probe_rtt_fraction(multiple))


def _flows(version: str, cubic: int) -> list[dict[str, Any]]:
    return [{"name": BBR, "cca": version}] + [{"name": f"cubic_{i}", "cca": "cubic"} for i in range(cubic)]


def _sweeps(quick: bool) -> dict[str, Sweep]:
    s = scale(quick)
    points = [(v, n, m) for v in VERSIONS for n in s["cubic_flows"] for m in s["multiples"]]
    base = {
        "name": "ware2019", "duration": f"{s['duration_s']}s", "sample_interval": SAMPLE,
        # Every flow's series (BBR's state for its start-up, everyone's deliveries for the shares)
        # and the bottleneck's (its busy time and queue).
        "record": {"flows": "all", "links": ["btl"]},
        "topology": {"kind": "dumbbell", "bottleneck_rate": f"{RATE_BPS // 1_000_000}Mbps", "bottleneck_delay": "5ms",
                     "rtt": f"{RTT_S * 1000:g}ms", "queue": "100p"},
        # All flows start together, as in the paper.
        "flow_defaults": {"traffic": "greedy", "tcp": {"ssthresh_from": "cwnd"}},
        "flows": _flows("bbr", 1),
    }
    return {"sweep": Sweep.from_dict({
        "name": "ware2019", "base": base, "seeds": 1,
        "axes": [{"zip": [{"key": "flows", "values": [_flows(v, n) for v, n, _ in points]},
                          {"key": "topology.queue", "values": [f"{queue_packets(m)}p" for _, _, m in points]},
                          {"key": "meta.version", "values": [v for v, _, _ in points]},
                          {"key": "meta.cubic_flows", "values": [n for _, n, _ in points]},
                          {"key": "meta.multiple", "values": [m for _, _, m in points]}]}]})}


# --- reading the store --------------------------------------------------------------------------

_STUDY_RUNS = "SELECT run_id FROM study_points WHERE study_id = ? AND status = 'complete'"


def measure(res: Results, studies: dict[str, str]) -> pl.DataFrame:
    """One row per run: version, CUBIC flows, buffer (× BDP); BBR's share of the deliveries over
    the window after the warm-up and over each of its halves; the bottleneck's utilisation and
    largest queue there (and its limit); when BBR first reached its steady states."""
    study = studies["sweep"]
    s = scale(study.startswith("ware2019-quick"))
    start_ns, end_ns = int(s["warm_up_s"] * 1e9), int(s["duration_s"] * 1e9)
    mid_ns = (start_ns + end_ns) // 2
    runs = res.study_runs(study).filter(pl.col("status") == "complete").select(
        "run_id", pl.col("meta.version").alias("version"), pl.col("meta.cubic_flows").alias("cubic_flows"),
        pl.col("meta.multiple").alias("multiple"))
    # Each flow's delivered bytes at the three instants (the last sample at or before each).
    delivered = res.query(
        "SELECT s.run_id, f.name = ? AS is_bbr, "
        "sum(s.delivered_bytes) FILTER (WHERE s.time_ns = ?) AS d0, "
        "sum(s.delivered_bytes) FILTER (WHERE s.time_ns = ?) AS d1, "
        "sum(s.delivered_bytes) FILTER (WHERE s.time_ns = ?) AS d2 "
        "FROM flow_timeseries s JOIN flows f ON f.run_id = s.run_id AND f.flow = s.flow "
        f"WHERE s.time_ns IN (?, ?, ?) AND s.run_id IN ({_STUDY_RUNS}) GROUP BY 1, 2",
        [BBR, start_ns, mid_ns, end_ns, start_ns, mid_ns, end_ns, study])
    startup = res.query(
        "SELECT s.run_id, min(s.time_ns) FILTER (WHERE s.cc_state IN (2, 3)) AS v1_ns, "
        "min(s.time_ns) FILTER (WHERE s.cc_state IN (3, 4, 5, 6, 7)) AS v3_ns "
        "FROM flow_timeseries s JOIN flows f ON f.run_id = s.run_id AND f.flow = s.flow "
        f"WHERE f.name = ? AND s.run_id IN ({_STUDY_RUNS}) GROUP BY 1", [BBR, study])
    # How BBR sat against its window in ProbeBW after the warm-up: the median of in-flight over
    # cwnd (1: bounded by its in-flight cap, the model's premise), and, for version 1, the RTT
    # estimate its window implies, (cwnd − 3 send quanta)/(2·BtlBw) with BtlBw the pacing rate over
    # the cycle's gain (the median sample is at gain 1).
    window = res.query(
        "SELECT s.run_id, median(s.in_flight_bytes / s.cwnd_bytes) AS fill, "
        "median((s.cwnd_bytes - 3 * 1500) * 8.0 / (2 * s.pacing_rate_bps)) FILTER (WHERE s.cc_state = 2) AS rtt_est "
        "FROM flow_timeseries s JOIN flows f ON f.run_id = s.run_id AND f.flow = s.flow "
        f"WHERE f.name = ? AND s.time_ns >= ? AND s.cc_state IN (2, 4, 5, 6, 7) AND s.cwnd_bytes > 0 "
        f"AND s.pacing_rate_bps > 0 AND s.run_id IN ({_STUDY_RUNS}) GROUP BY 1", [BBR, start_ns, study])
    link = res.query(
        "SELECT s.run_id, (max(s.busy_ns) - min(s.busy_ns)) / (max(s.time_ns) - min(s.time_ns)) AS utilisation, "
        "max(s.queue_packets) AS max_queue "
        "FROM channel_timeseries s JOIN channels c ON c.run_id = s.run_id AND c.channel = s.channel "
        f"WHERE c.name = 'btl_forward' AND s.time_ns >= ? AND s.run_id IN ({_STUDY_RUNS}) GROUP BY 1",
        [start_ns, study])
    rows = []
    by_run: dict[str, dict[bool, tuple[Any, Any, Any]]] = {}
    for run_id, is_bbr, d0, d1, d2 in delivered.iter_rows():
        by_run.setdefault(run_id, {})[bool(is_bbr)] = (d0, d1, d2)
    starts = {r: (v1, v3) for r, v1, v3 in startup.iter_rows()}
    links = {r: (u, q) for r, u, q in link.iter_rows()}
    windows = {r: (f, e) for r, f, e in window.iter_rows()}
    for run in runs.iter_rows(named=True):
        d = by_run.get(run["run_id"], {})
        shares: list[float | None] = [None, None, None]
        if True in d and False in d and None not in (*d[True], *d[False]):
            (b0, b1, b2), (o0, o1, o2) = d[True], d[False]
            for i, (b, o) in enumerate(((b2 - b0, o2 - o0), (b1 - b0, o1 - o0), (b2 - b1, o2 - o1))):
                shares[i] = b / (b + o) if b + o > 0 else None
        v1_ns, v3_ns = starts.get(run["run_id"], (None, None))
        steady_ns = v1_ns if run["version"] == "bbr" else v3_ns
        util, max_queue = links.get(run["run_id"], (None, None))
        limit = queue_packets(run["multiple"])
        fill, rtt_est = windows.get(run["run_id"], (None, None))
        rows.append({**run, "share": shares[0], "share_first": shares[1], "share_second": shares[2],
                     "model": model_share(run["multiple"]), "fair": 1 / (run["cubic_flows"] + 1),
                     "utilisation": util, "max_queue": max_queue, "limit": limit, "fill": fill,
                     "rtt_est_ms": None if rtt_est is None or run["version"] != "bbr" else rtt_est * 1000,
                     "model_rtt_est_ms": model_rtt_estimate_s(run["multiple"]) * 1000,
                     "startup_end_s": None if steady_ns is None else steady_ns / 1e9,
                     "warm_up_s": float(s["warm_up_s"]), "window_s": float(s["duration_s"] - s["warm_up_s"])})
    schema = {"run_id": pl.Utf8, "version": pl.Utf8, "cubic_flows": pl.Int64, "multiple": pl.Float64,
              "share": pl.Float64, "share_first": pl.Float64, "share_second": pl.Float64, "model": pl.Float64,
              "fair": pl.Float64, "utilisation": pl.Float64, "max_queue": pl.Float64, "limit": pl.Float64,
              "fill": pl.Float64, "rtt_est_ms": pl.Float64, "model_rtt_est_ms": pl.Float64,
              "startup_end_s": pl.Float64, "warm_up_s": pl.Float64, "window_s": pl.Float64}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.with_columns((pl.col("share_second") - pl.col("share_first")).abs().alias("drift")) \
        .sort("version", "cubic_flows", "multiple")


# --- preconditions ------------------------------------------------------------------------------

SATURATED_KEY = "bottleneck saturated"
FILLED_KEY = "queue filled"


def _name(version: str) -> str:
    return VERSION_NAMES[version]


def startup_key(version: str) -> str:
    return f"left Startup: {_name(version)}"


def settled_key(version: str, multiple: float) -> str:
    return f"settled: {_name(version)}, {multiple:g} BDP"


def _values(column: pl.Series) -> list[float]:
    return [float(v) for v in column.to_list() if v is not None and not math.isnan(v)]


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    m = measure(res, studies)
    out = []
    util = _values(m["utilisation"])
    out.append(Precondition(
        SATURATED_KEY, f"the link is the bottleneck: every run keeps it ≥ {SATURATED:.0%} busy after the warm-up",
        f"lowest {min(util):.3f} over {len(util)} runs" if util else "no run", bool(util) and min(util) >= SATURATED
        and len(util) == m.height))
    filled = [q / lim for q, lim in zip(m["max_queue"], m["limit"]) if q is not None and lim]
    out.append(Precondition(
        FILLED_KEY, f"the queue reached the depth asked: in every run the largest queue after the warm-up is ≥ "
        f"{QUEUE_FILLED:.0%} of its limit (the loss-based flows fill it, the model's premise)",
        f"lowest {min(filled):.2f} of the limit over {len(filled)} runs" if filled else "no run",
        bool(filled) and min(filled) >= QUEUE_FILLED and len(filled) == m.height))
    for version in [v for v in VERSIONS if v in set(m["version"].to_list())]:
        runs = m.filter(pl.col("version") == version)
        ends = runs["startup_end_s"].to_list()
        warm = float(runs["warm_up_s"][0])
        latest = None if None in ends else max(ends)
        out.append(Precondition(
            startup_key(version), f"in every {_name(version)} run the BBR flow left Startup and Drain (reached ProbeBW "
            f"or ProbeRTT) before the measurement starts ({warm:g} s)",
            "a BBR flow never left Startup" if latest is None else f"latest {latest:.1f} s",
            latest is not None and latest <= warm))
        for (multiple,), g in runs.group_by(["multiple"], maintain_order=True):
            drift = _values(g["drift"])
            out.append(Precondition(
                settled_key(version, multiple), f"BBR's share has settled: over the two halves of the window "
                f"({float(g['window_s'][0]) / 2:g} s each) it moved by ≤ {SETTLED:g} of the link in every run at "
                f"{multiple:g} BDP", f"largest move {max(drift):.3f}" if drift else "no run",
                len(drift) == g.height and bool(drift) and max(drift) <= SETTLED))
    return out


# --- observations -------------------------------------------------------------------------------

BASE_KEYS = (SATURATED_KEY, FILLED_KEY)


def _shares(g: pl.DataFrame, column: str = "share") -> str:
    return ", ".join(f"N = {n}: {v:.3f}" for n, v in zip(g["cubic_flows"], g[column]) if v is not None)


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    m = measure(res, studies)
    v1 = m.filter(pl.col("version") == "bbr")
    v3 = m.filter(pl.col("version") == "bbr3")
    obs = []

    # Eqs. 9-11 at each buffer: BBRv1's share against every N.
    for (multiple,), g in v1.group_by(["multiple"], maintain_order=True):
        model = model_share(multiple)
        shares = _values(g["share"])
        worst = max((s - model for s in shares), key=abs, default=float("nan"))
        obs.append(Observation(
            f"model: {multiple:g} BDP", f"one BBR flow's fraction of the link against N CUBIC flows is Eq. 10's "
            f"(1 − p)(1 − Probe_time/d), with p from Eq. 9, whatever N ({multiple:g} BDP of buffer)",
            f"{model:.3f} (p = {loss_based_share(multiple):.3f}, ProbeRTT {probe_rtt_fraction(multiple):.1%} of the "
            "time)", "BBRv1's share: " + _shares(g), bool(shares) and abs(worst) <= MODEL_TOLERANCE,
            f"farthest {worst:+.3f}" if shares else "",
            tolerance=f"every N within ±{MODEL_TOLERANCE:g} of the link: twice the paper's median error against CUBIC "
                      "(5 %), for one seed's spread",
            requires=(*BASE_KEYS, startup_key("bbr"), settled_key("bbr", multiple))))

    # The rest is judged over the buffers whose shares settled (all N) in every version it reads.
    settled = {v: [x for (x,), g in m.filter(pl.col("version") == v).group_by(["multiple"], maintain_order=True)
                   if _settled(g)] for v in VERSIONS}
    unsettled = sorted(set(v1["multiple"].to_list()) - set(settled["bbr"]))
    left_out = f" ({', '.join(f'{x:g}' for x in unsettled)} BDP not settled, left out)" if unsettled else ""

    # Eq. 7: the RTT estimate inflated by the loss-based flows' queue.
    claim = ("BBR's RTT estimate is inflated by the loss-based flows' queue, which ProbeRTT does not drain: "
             "RTT_est = (p·q + 4N)/c + l (Eq. 7), the mechanism behind the share")
    est = v1.filter(pl.col("rtt_est_ms").is_not_null() & pl.col("multiple").is_in(settled["bbr"]))
    if est.height:
        off = [(r["multiple"], r["cubic_flows"], r["rtt_est_ms"] / r["model_rtt_est_ms"] - 1)
               for r in est.iter_rows(named=True)]
        far = max(off, key=lambda t: abs(t[2]))
        obs.append(Observation(
            "RTT_est (Eq. 7)", claim, "Eq. 7 per buffer: " + ", ".join(
                f"{x:g} BDP {model_rtt_estimate_s(x) * 1000:.0f} ms" for x in sorted(set(est["multiple"].to_list()))),
            "BBRv1's RTT estimate (from its window) per buffer (BDP) / N: " + ", ".join(
                f"{x:g}/{n}: {e:.0f} ms" for x, n, e in zip(est["multiple"], est["cubic_flows"], est["rtt_est_ms"]))
            + left_out, abs(far[2]) <= RTT_EST_TOLERANCE,
            f"farthest {far[2] * 100:+.0f} % ({far[0]:g} BDP, N = {far[1]})",
            tolerance=f"every run within ±{RTT_EST_TOLERANCE:.0%} of Eq. 7: the model takes the loss-based flows' queue "
                      "as full, while the estimate is a minimum over 10 s, taken as CUBIC's sawtooth (β = 0.7) "
                      "moves that queue by up to 30 %",
            requires=(*BASE_KEYS, startup_key("bbr"))))
    else:
        obs.append(Observation("RTT_est (Eq. 7)", claim, "Eq. 7", "no settled BBRv1 buffer sampled in ProbeBW", None,
                               requires=()))

    # The share does not depend on N; so against several flows it is more than a fair share.
    ns = sorted(set(v1["cubic_flows"].to_list()))
    judged = [x for x in settled["bbr"] if v1.filter(pl.col("multiple") == x)["cubic_flows"].n_unique() > 1]
    claim = ("one BBR flow's share does not depend on the number of CUBIC flows it competes with: the model has no "
             "term for it")
    if judged:
        spreads = {x: max(vals) - min(vals) for x in judged
                   if (vals := _values(v1.filter(pl.col("multiple") == x)["share"]))}
        worst_x = max(spreads, key=lambda x: spreads[x])
        obs.append(Observation(
            "independent of N", claim, f"the same share for N = {', '.join(map(str, ns))}",
            "spread of BBRv1's share over N, per buffer: " + ", ".join(f"{k:g} BDP {v:.3f}" for k, v in spreads.items())
            + left_out, spreads[worst_x] <= N_SPREAD, f"largest spread {spreads[worst_x]:.3f} ({worst_x:g} BDP)",
            tolerance=f"at every settled buffer the shares over N within {N_SPREAD:g} of one another (the fair share "
                      f"1/(N + 1) moves by {1 / (min(ns) + 1) - 1 / (max(ns) + 1):.2f} over the same N)",
            requires=(*BASE_KEYS, startup_key("bbr"))))
    else:
        obs.append(Observation("independent of N", claim, "the same share for every N",
                               "no buffer with more than one N whose BBRv1 shares settled", None, requires=()))
    claim = "so against two or more CUBIC flows one BBR flow takes more than its fair share 1/(N + 1)"
    several = v1.filter(pl.col("multiple").is_in(settled["bbr"]) & (pl.col("cubic_flows") >= 2))
    if several.height:
        margins = [(r["multiple"], r["cubic_flows"], r["share"] - r["fair"]) for r in several.iter_rows(named=True)
                   if r["share"] is not None]
        low = min(margins, key=lambda t: t[2])
        obs.append(Observation(
            "above fair share", claim, "share > 1/(N + 1) for N ≥ 2",
            "BBRv1's share less its fair share, smallest per N: " + ", ".join(
                f"N = {n}: {min(d for _, k, d in margins if k == n):+.3f}" for n in sorted({k for _, k, _ in margins}))
            + left_out, low[2] > 0, f"smallest {low[2]:+.3f} ({low[0]:g} BDP, N = {low[1]})",
            tolerance="every settled point strictly above, an ordering",
            requires=(*BASE_KEYS, startup_key("bbr"))))
    else:
        obs.append(Observation("above fair share", claim, "share > 1/(N + 1)", "no settled BBRv1 run with N ≥ 2",
                               None, requires=()))

    # BBRv3 beside BBRv1: its loss response should keep it below v1 in deep buffers.
    claim = (f"BBRv3 (not the paper's: its short-term model cuts after loss) takes less of a deep buffer's link "
             f"(≥ {DEEP_BDP:g} BDP) than BBRv1 against the same CUBIC flows")
    both = [x for x in settled["bbr"] if x in settled["bbr3"] and x >= DEEP_BDP]
    pairs = v1.filter(pl.col("multiple").is_in(both)).join(
        v3.filter(pl.col("multiple").is_in(both)), on=["cubic_flows", "multiple"], suffix="_v3")
    pairs = pairs.filter(pl.col("share").is_not_null() & pl.col("share_v3").is_not_null())
    if pairs.height:
        below = sum(b3 < b1 for b1, b3 in zip(pairs["share"], pairs["share_v3"]))
        skipped = sorted({x for x in m.filter(pl.col("multiple") >= DEEP_BDP)["multiple"].to_list()} - set(both))
        obs.append(Observation(
            "BBRv3 below BBRv1", claim, "BBRv3's share < BBRv1's",
            "BBRv3 vs BBRv1 per buffer (BDP) / N: " + "; ".join(
                f"{x:g}/{n}: {b3:.3f} vs {b1:.3f}" for x, n, b1, b3 in
                zip(pairs["multiple"], pairs["cubic_flows"], pairs["share"], pairs["share_v3"]))
            + (f" ({', '.join(f'{x:g}' for x in skipped)} BDP not settled, left out)" if skipped else ""),
            below == pairs.height, f"below at {below} of {pairs.height} points",
            tolerance="every deep point where both settled, strictly: an ordering, no model of BBRv3 to compare with",
            requires=(*BASE_KEYS, startup_key("bbr"), startup_key("bbr3"))))
    else:
        obs.append(Observation("BBRv3 below BBRv1", claim, "BBRv3's share < BBRv1's",
                               f"no buffer of ≥ {DEEP_BDP:g} BDP where both versions' shares settled", None,
                               requires=()))
    return obs


def _settled(g: pl.DataFrame) -> bool:
    drift = _values(g["drift"])
    return len(drift) == g.height and bool(drift) and max(drift) <= SETTLED


# --- the summary's table ------------------------------------------------------------------------


def _appendix(res: Results, studies: dict[str, str]) -> str:
    m = measure(res, studies)
    warm = float(m["warm_up_s"][0]) if m.height else 0.0
    lines = ["## Measured, per point", "",
             f"BBR's share of the bytes delivered from {warm:g} s to the end, over the two halves of that window, "
             "and Eq. 10's prediction (for BBRv1; BBRv3 beside it has no model). The model's premise, that BBR is "
             "bounded by its in-flight cap, is the median of BBR's in-flight over its cwnd in ProbeBW (1: always at "
             "the cap); BBRv1's RTT estimate is the one its window implies, (cwnd − 3 packets)/(2 · pacing rate) at "
             "the median sample, beside Eq. 7's (p·q + 4)/c + l.", "",
             "| controller | CUBIC flows | buffer (BDP) | model | share | first half | second half | fair share | "
             "utilisation | largest queue / limit | in-flight / cwnd | RTT_est ms | Eq. 7 ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in m.iter_rows(named=True):
        def f(v: float | None, fmt: str = ".3f") -> str:
            return "—" if v is None else f"{v:{fmt}}"
        fill = None if r["max_queue"] is None or not r["limit"] else r["max_queue"] / r["limit"]
        lines.append(f"| {_name(r['version'])} | {r['cubic_flows']} | {r['multiple']:g} | {r['model']:.3f} | "
                     f"{f(r['share'])} | {f(r['share_first'])} | {f(r['share_second'])} | {r['fair']:.3f} | "
                     f"{f(r['utilisation'])} | {f(fill, '.2f')} | {f(r['fill'], '.2f')} | {f(r['rtt_est_ms'], '.0f')} | "
                     f"{r['model_rtt_est_ms']:.0f} |")
    return "\n".join(lines)


# --- figures ------------------------------------------------------------------------------------


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots.common import figure_function

    return figure_function(_figures)(res, studies)


def _figures(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    import numpy as np

    from ..plots.common import legend_below, new_figure, plain_log_ticks, require_data, run_colour, title

    m = measure(res, studies)
    require_data("ware2019", [m["share"].drop_nulls().to_numpy()], "no run of the sweep measured")
    ns = sorted(set(m["cubic_flows"].to_list()))
    multiples = sorted(set(m["multiple"].to_list()))
    xs = np.geomspace(min(multiples), max(multiples), 200)
    fig, grid = new_figure(1, len(ns), size=(3.6 * len(ns) + 0.8, 4.4), sharey="row")
    for col, n in enumerate(ns):
        ax = grid[0][col]
        ax.plot(xs, [model_share(x) for x in xs], color="0.2", linewidth=1.2, label="model (Eqs. 9-11, BBRv1)")
        ax.axhline(1 / (n + 1), color="0.6", linestyle=":", linewidth=1, label="fair share 1/(N + 1)")
        for i, version in enumerate(VERSIONS):
            g = m.filter((pl.col("version") == version) & (pl.col("cubic_flows") == n)).sort("multiple")
            if not g.height:
                continue
            settled = [d is not None and d <= SETTLED for d in g["drift"]]
            x, y = g["multiple"].to_numpy(), g["share"].to_numpy()
            ax.plot(x, y, color=run_colour(i), linewidth=0.8, alpha=0.6)
            for filled in (True, False):
                pick = [s == filled for s in settled]
                if any(pick):
                    ax.scatter(x[pick], y[pick], zorder=3, **_marker(i, version, filled))
        if col == 0:
            # The legend is the first panel's: one entry for each kind of point drawn in any panel.
            for i, version in enumerate(VERSIONS):
                g = m.filter(pl.col("version") == version)
                for filled in (True, False):
                    if any((d is not None and d <= SETTLED) == filled for d in g["drift"]):
                        ax.scatter([], [], label=f"{_name(version)} measured" + ("" if filled else " (not settled)"),
                                   **_marker(i, version, filled))
        plain_log_ticks(ax, ticks=multiples)
        ax.set_ylim(0, 1)
        ax.set_xlabel("buffer (× BDP)")
        ax.set_title(f"1 BBR vs {n} CUBIC")
        if col == 0:
            ax.set_ylabel("BBR's fraction of the link")
    legend_below(fig, grid[0][0], max_columns=4)
    warm = float(m["warm_up_s"][0])
    title(fig, f"BBR's share against CUBIC flows, by buffer: 100 Mb/s, base RTT {RTT_S * 1000:g} ms (BDP "
               f"{BDP_PACKETS:.0f} packets), measured after the first {warm:g} s")
    return {"ware2019_share_vs_buffer": fig}


def _marker(i: int, version: str, settled: bool) -> dict[str, Any]:
    """A measured point's style: filled if its share settled, a circle for BBRv1, a square for BBRv3."""
    from ..plots.common import run_colour

    return {"color": run_colour(i) if settled else "white", "edgecolors": run_colour(i),
            "marker": "o" if version == "bbr" else "s"}


def _note_scale() -> str:
    q, f = scale(True), scale(False)

    def runs(s: dict[str, Any]) -> int:
        return len(VERSIONS) * len(s["cubic_flows"]) * len(s["multiples"])

    def grid(s: dict[str, Any]) -> str:
        return (f"buffers {', '.join(f'{x:g}' for x in s['multiples'])} BDP, N = {', '.join(map(str, s['cubic_flows']))}"
                f" CUBIC flows, {s['duration_s']} s measured from {s['warm_up_s']} s ({runs(s)} runs)")
    return f"Quick: {grid(q)}; full: {grid(f)}."


REPRODUCTION = Reproduction(
    name="ware2019", seed="Ware, Mukerjee, Seshan and Sherry 2019",
    title="Ware et al. 2019: one BBR flow's share against CUBIC flows, and the in-flight cap model",
    description="One BBR flow against 1-8 CUBIC flows on a 100 Mb/s drop-tail dumbbell with the paper's base RTT of "
                "40 ms, buffers of 1-64 BDP: BBR's measured share of the link after the warm-up against the paper's "
                "model (its in-flight cap of twice its estimated BDP, with the RTT estimate inflated by the "
                "loss-based flows' queue, less its time in ProbeRTT; Eqs. 9-11), which does not depend on the number "
                "of CUBIC flows; and the same grid with BBRv3, reported beside BBRv1.",
    quick_estimate_s=6, full_estimate_s=120, sweeps=_sweeps, preconditions=_preconditions, observe=_observe,
    draw=_draw, appendix=_appendix,
    notes=[_note_scale(),
           "The paper's testbed ran 40 ms × 10 Mb/s (and 30 ms × 50 Mb/s); here 100 Mb/s with its 40 ms. The rate "
           "enters Eq. 9 only through 4N/q, the ProbeRTT packets against the queue (0.012 at one BDP here).",
           "All flows start together, as in the paper; which flow gets ahead in Startup decides where the shares "
           "begin, and in deep buffers they move for hundreds of seconds (a round trip is 2.6 s at 64 BDP and BBR's "
           "bandwidth filter spans 10 of them). A buffer whose shares still move between the window's halves is not "
           "judged.",
           "BBR's share is its part of the bytes delivered by all flows; with the link saturated (a precondition) "
           "this is its fraction of the link, Eq. 10's BBR_frac.",
           "BBRv3 has no model here: the paper's is for version 1, and version 3's loss response (the short-term "
           "cut to 0.7 after a lossy round, the inflight bound after a probe with more than 2 % loss) changes the "
           "premise that BBR is bounded by its in-flight cap alone."])
