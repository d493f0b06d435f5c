"""quic_sizing — seed 003: a single QUIC flow and the buffer that keeps its bottleneck busy.

The seed (INET's QUIC buffer-sizing example) derives B ≥ (2Tp + Tt + Tt')·C: after a loss the
sender halves W_max and pauses for (W_max/2)/C while the router drains its buffer in B/C; with
B = 22 packets (20.47 rounded up, +1 for arrivals and departures out of step) the pause equals the
drain time, ACKs keep arriving at rate C, and goodput is the full 100 Mb/s.

The run is the seed's network (scenarios/quic_sizing.toml): client — router1 —(100 Mb/s, 1 ms,
22-packet buffer)— router2 — server, unlimited zero-delay access links, 1287-byte frames (1280-byte
MTU plus 7 bytes of PPP), 58-byte ACK frames, an ACK for every ack-eliciting packet, NewReno over
QUIC. Captures of the client's link and both directions of the bottleneck give the pauses, the
drain and the ACK spacing; time series every 1 ms give the window.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..spec import Scenario
from ..study.sweep import Sweep
from .base import Observation, Precondition, Reproduction, relative

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "quic_sizing.toml"
RATE_BPS = 100_000_000
TP_S = 0.001
DATA_FRAME = 1287  # bytes on the wire: 1252-byte QUIC packet + 28 IP/UDP + 7 PPP
ACK_FRAME = 58
QUIC_PACKET = 1252  # the window counts QUIC packets (UDP payloads), RFC 9002
SEED_PAUSE_S = 0.00226512
FRAME_S = DATA_FRAME * 8 / RATE_BPS
TRANSIENT_PAUSES = 3


def buffer_bound_packets() -> float:
    """Seed 003: B ≥ (2Tp + Tt + Tt')·C, C in frames per second."""
    tt = DATA_FRAME * 8 / RATE_BPS
    tt_ack = ACK_FRAME * 8 / RATE_BPS
    return (2 * TP_S + tt + tt_ack) * RATE_BPS / (DATA_FRAME * 8)


def sized_buffer() -> int:
    """The bound rounded up, plus one packet for arrivals and departures out of step (the seed's +1)."""
    return math.ceil(buffer_bound_packets()) + 1


def _sweeps(quick: bool) -> dict[str, Sweep]:
    base = Scenario.from_toml(SCENARIO).to_dict()
    base["duration"] = "5s" if quick else "11s"
    base.pop("sample_interval", None)
    # The window every 1 ms (it grows one packet per ~2.5 ms round trip), and captures of the
    # client's sends and of both directions of the bottleneck.
    base["record"] = {"interval": "1ms", "captures": [{"link": "access", "direction": "forward"},
                                                      {"link": "bottleneck", "direction": "forward"},
                                                      {"link": "bottleneck", "direction": "backward"}]}
    base["links"][1]["queue"] = f"{sized_buffer()}p"
    return {"run": Sweep.from_dict({"name": "quic_sizing", "base": base, "seeds": 1})}


def _window(quick: bool) -> tuple[float, float]:
    """The goodput window: the seed's 5–10 s; the quick run's 3–5 s."""
    return (3.0, 5.0) if quick else (5.0, 10.0)


def _pauses(times_ns: np.ndarray) -> list[tuple[int, int]]:
    """Gaps in the client's data transmissions longer than five frame times, after its start (2 s)."""
    t = times_ns[times_ns >= 2_000_000_000]
    gaps = np.diff(t)
    idx = np.nonzero(gaps > 5 * FRAME_S * 1e9)[0]
    return [(int(t[i]), int(t[i + 1])) for i in idx]


def _measure(res: Results, run_id: str, quick: bool) -> dict[str, Any]:
    sends = res.capture(run_id, link="access", direction="forward")
    data = sends.filter(pl.col("is_data") & (pl.col("payload_bytes") > 0))["time_ns"].to_numpy()
    # The first pauses are the start-up transient (slow start's overshoot, then two cycles that
    # settle): the seed looks at one at 8 s; the steady state begins with the third pause.
    pauses = _pauses(np.asarray(data, dtype=np.int64))[TRANSIENT_PAUSES:]
    acks = res.capture(run_id, link="bottleneck", direction="backward")["time_ns"].to_numpy().astype(np.int64)
    btl = res.capture(run_id, link="bottleneck", direction="forward")
    btl_t = btl["time_ns"].to_numpy().astype(np.int64)
    ack_gaps, busy_gaps = [], []
    for t0, t1 in pauses:
        inside = acks[(acks > t0) & (acks <= t1)]
        ack_gaps.extend(np.diff(inside).tolist())
        sent = btl_t[(btl_t > t0) & (btl_t <= t1)]
        busy_gaps.extend(np.diff(sent).tolist())
    series = res.timeseries(run_id, kind="flow")
    cwnd = series.filter(series["cc_state"] == 1)["cwnd_bytes"].to_numpy()  # congestion avoidance
    lo, hi = _window(quick)
    in_window = (btl_t >= lo * 1e9) & (btl_t <= hi * 1e9)
    wire = btl["wire_bytes"].to_numpy()[in_window].astype(np.int64)
    times = btl_t[in_window]
    # The seed: bytes received in the window x 8 over the time from the first to the last packet.
    goodput = float(wire[:-1].sum() * 8 / ((times[-1] - times[0]) / 1e9)) if len(times) > 1 else float("nan")
    return {"pauses_s": [(t1 - t0) / 1e9 for t0, t1 in pauses], "ack_gaps_s": np.asarray(ack_gaps) / 1e9,
            "busy_gaps_s": np.asarray(busy_gaps) / 1e9, "w_max": int(cwnd.max() // QUIC_PACKET) if cwnd.size else 0,
            "wire_mbps": goodput / 1e6}


def _measured(res: Results, studies: dict[str, str]) -> dict[str, Any]:
    runs = res.study_runs(studies["run"]).filter(res.study_runs(studies["run"])["status"] == "complete")
    run_id = runs["run_id"][0]
    return _measure(res, run_id, studies["run"].startswith("quic_sizing-quick"))


# The seed's regime: a saturated sender in its steady sawtooth, every cycle's loss followed by a
# pause. Fewer than this many steady-state pauses judge nothing about them.
MIN_PAUSES = 3


def _preconditions(res: Results, studies: dict[str, str]) -> list[Precondition]:
    m = _measured(res, studies)
    n = len(m["pauses_s"])
    return [
        Precondition("steady sawtooth", f"at least {MIN_PAUSES} loss pauses after the {TRANSIENT_PAUSES} of the "
                     "start-up transient (each a congestion cycle of the saturated sender)", f"{n} pauses", n >= MIN_PAUSES),
        Precondition("congestion avoidance", "the sender's window sampled in congestion avoidance (W_max is read there)",
                     f"largest window there {m['w_max']} packets", m["w_max"] > 0),
    ]


def _observe(res: Results, studies: dict[str, str]) -> list[Observation]:
    quick = studies["run"].startswith("quic_sizing-quick")
    m = _measured(res, studies)
    bound, b = buffer_bound_packets(), sized_buffer()
    w_max = m["w_max"]
    pause_theory = (w_max / 2) * FRAME_S
    drain = b * FRAME_S
    pauses = np.asarray(m["pauses_s"])
    lo, hi = _window(quick)
    obs = [
        Observation("B", "buffer bound B ≥ (2Tp + Tt + Tt')·C, rounded up, +1", "20.47 → 22 packets",
                    f"{bound:.2f} → {b} packets", round(bound, 2) == 20.47 and b == 22,
                    tolerance="exact: the seed's arithmetic to its two decimals", requires=()),
        Observation("W_max", "largest window in congestion avoidance", "44 packets (55 138 B / 1252 B)",
                    f"{w_max} packets", w_max == 44, relative(w_max, 44) if w_max != 44 else "",
                    tolerance="exact: a whole number of packets, the seed's",
                    requires=("steady sawtooth", "congestion avoidance")),
        Observation("pause", "pause after a loss = (W_max/2)/C", f"{SEED_PAUSE_S * 1e3:.5f} ms",
                    f"{len(pauses)} pauses, {pauses.min() * 1e3:.5f}–{pauses.max() * 1e3:.5f} ms" if pauses.size
                    else "no pause", bool(pauses.size) and bool(np.allclose(pauses, pause_theory, atol=1e-9)),
                    relative(float(pauses.mean()), SEED_PAUSE_S) if pauses.size else "",
                    tolerance="every pause within 1 ns of (W_max/2)/C: the theory is exact for a lone sender"),
        Observation("drain", "the router drains its buffer in B/C, the length of the pause", f"{drain * 1e3:.5f} ms",
                    f"bottleneck never idle during a pause (largest gap between sends {m['busy_gaps_s'].max() * 1e6:.2f} µs, "
                    f"one frame is {FRAME_S * 1e6:.2f} µs)" if m["busy_gaps_s"].size else "no pause",
                    bool(m["busy_gaps_s"].size) and float(m["busy_gaps_s"].max()) <= FRAME_S + 1e-9,
                    tolerance="no gap between the bottleneck's sends longer than one frame time (+1 ns)"),
        Observation("ACK rate", "ACKs reach the sender at rate C during a pause", f"one per {FRAME_S * 1e6:.2f} µs",
                    f"median ACK spacing {np.median(m['ack_gaps_s']) * 1e6:.2f} µs" if m["ack_gaps_s"].size else "no ACKs",
                    bool(m["ack_gaps_s"].size) and abs(float(np.median(m["ack_gaps_s"])) - FRAME_S) < 1e-8,
                    tolerance="median spacing within 10 ns of one frame time at C"),
        Observation("throughput", f"wire throughput at the server, {lo:g}–{hi:g} s", "exactly 100 Mb/s",
                    f"{m['wire_mbps']:.3f} Mb/s", abs(m["wire_mbps"] - 100) < 0.1, relative(m["wire_mbps"], 100),
                    tolerance="within 0.1 Mb/s (0.1 %): one frame in the window's edges"),
    ]
    return obs


def _draw(res: Results, studies: dict[str, str]) -> dict[str, Figure]:
    from ..plots import cwnd

    runs = res.study_runs(studies["run"])
    run_id = runs["run_id"][0]
    # Two congestion cycles (0.2 s) from 4 s, or the run's last 0.2 s if it ends sooner.
    end_s = float(res.query("SELECT duration_ns FROM runs WHERE run_id = ?", [run_id])["duration_ns"][0]) / 1e9
    start_s = max(0.0, min(4.0, end_s - 0.2))
    heading = (f"Seed 003: one QUIC NewReno flow, 100 Mb/s bottleneck, B = {sized_buffer()} packets\n"
               f"window and router queue, two congestion cycles ({start_s:.1f}–{start_s + 0.2:.1f} s)")
    return {"quic_sizing_window_and_queue": cwnd(res, [run_id], start=f"{start_s:.1f}s", end=f"{start_s + 0.2:.1f}s",
                                                 heading=heading)}


REPRODUCTION = Reproduction(
    name="quic_sizing", seed="003", title="Seed 003: sizing the router buffer for one QUIC flow",
    description="One saturated QUIC NewReno flow over a 100 Mb/s, 1 ms bottleneck with the buffer the seed "
                "derives, B = ⌈(2Tp + Tt + Tt')·C⌉ + 1 = 22 packets: the pause after a loss, the drain "
                "time, the ACK spacing and the throughput, next to the seed's numbers.",
    quick_estimate_s=2, full_estimate_s=3, sweeps=_sweeps, preconditions=_preconditions, observe=_observe,
    draw=_draw,
    notes=["Frames as the seed's: 1287-byte data frames (1252-byte QUIC packet, 28 bytes of IP and UDP, 7 of PPP) "
           "and 58-byte ACK frames; QUIC's window counts 1252-byte packets (RFC 9002).",
           f"Pauses are judged in the steady state: the first {TRANSIENT_PAUSES} after the start (slow start's "
           "loss and two settling cycles, 1.08 and 2.26544 ms) are left out; every later one is measured.",
           "The quick variant runs 5 s (client from 2 s) and measures throughput over 3–5 s; the full one runs "
           "the seed's 11 s and measures over 5–10 s."])
