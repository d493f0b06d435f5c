"""Golden scenarios: a fixed set of short runs covering every controller, both
transports, every queue kind and every traffic generator, and the content hash of each one's
result. An optimisation of the engine must leave every hash unchanged (tests/engine/test_goldens.py).

    python tests/engine/goldens/regenerate.py --why "..."   # rewrite hashes.json and aggregates.json

Regenerate only when results are meant to change (a model fix, a new default, or an optimisation
that changes only the order of events at one instant): say why, here and in the commit. Beside
the hashes, aggregates.json keeps each golden's goodput, drops and RTOs. A regeneration compares
the new aggregates of every golden whose hash changed with the checked-in ones, and with the spread
that start-time jitter alone gives (the same golden with its flows or generators started at
`JITTER_RUNS` draws of up to `JITTER_NS` later): a move outside that spread refuses the
regeneration, writing nothing. The summary of the last regeneration is changes.json.

The hash covers what the engine computed (every counter of every flow and channel, every
time series and capture column), not how much work it took: the event count, the engine version
and wall times are left out, so that a faster scheduler keeps its goldens. It is taken over the
result's canonical form (`canonical_form`), the arrangement results had when the hashes were
first recorded, rebuilt from the engine's Arrow tables.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

HASHES = Path(__file__).resolve().parent / "hashes.json"
AGGREGATES = Path(__file__).resolve().parent / "aggregates.json"
CHANGES = Path(__file__).resolve().parent / "changes.json"
# Start-time jitter: each jittered run starts every flow (a dumbbell's) or generator (a tree's) at
# its own uniform draw in [0, JITTER_NS).
JITTER_RUNS = 8
JITTER_NS = 1_000_000


def _dumbbell(name: str, *, flows: int = 4, cca: str = "newreno", queue: Any = "60p", seconds: int = 3,
              **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name, "seed": 7, "duration": f"{seconds}s", "sample_interval": "50ms",
        "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": "20Mbps", "queue": queue,
                     "rtt": "60ms"},
        "flow_defaults": {"cca": cca, "traffic": "greedy"},
    }
    for key, value in extra.items():  # tables are merged one level deep: topology={"loss": ...}
        key = key.rstrip("_")  # flows_: the [[flows]] list, beside the topology's count
        spec[key] = {**spec[key], **value} if isinstance(spec.get(key), dict) else value
    return spec


def _generators(name: str, generators: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "seed": 7, "duration": "4s", "sample_interval": "100ms",
            "topology": {"kind": "tree", "fanout": [2, 2, 1], "queue": "30p"},
            "flow_defaults": {"cca": "reno"}, "generators": generators,
            "record": {"captures": [{"link": "btl", "direction": "forward"}]}}


# name -> scenario (the TOML form as a mapping). Fixed: add a golden, never change one silently.
GOLDENS: dict[str, dict[str, Any]] = {
    "reno": _dumbbell("reno", cca="reno"),
    "newreno_lossy": _dumbbell("newreno_lossy", topology={"loss": 0.002}),
    "cubic": _dumbbell("cubic", cca="cubic"),
    "highspeed": _dumbbell("highspeed", cca="highspeed", queue="200p"),
    "bbr": _dumbbell("bbr", cca="bbr", queue="200p"),
    "bbr3": _dumbbell("bbr3", cca="bbr3", queue="200p"),
    # DCTCP through a step marker at K = 20 packets (RED on the instantaneous queue, every ECT
    # arrival above K marked: docs/engine/index.md), Vegas through a deep FIFO.
    "dctcp": _dumbbell("dctcp", cca="dctcp", flow_defaults={"tcp": {"ecn": "dctcp"}},
                       queue={"kind": "red", "limit": "200p", "min_th": "20p", "max_th": "200p", "max_p": 1.0,
                              "w_q": 1.0, "gentle": False, "byte_mode": True, "mean_packet": "1B", "ecn": True}),
    "vegas": _dumbbell("vegas", cca="vegas", queue="200p"),
    "rack_tlp": _dumbbell("rack_tlp", flow_defaults={"tcp": {"rack": True}}),
    "finite_rtt_mix": _dumbbell("finite_rtt_mix", flows=6, flow_defaults={"traffic": {"kind": "finite",
                                                                                      "bytes": 300_000}},
                                topology={"rtt": {"dist": "uniform", "low": "20ms", "high": "200ms"}}),
    "quic": _dumbbell("quic", flows=2, flow_defaults={"transport": "quic", "cca": "newreno"}),
    "quic_cubic": _dumbbell("quic_cubic", flows=2, flow_defaults={"transport": "quic", "cca": "cubic"}),
    "tbf": _dumbbell("tbf", flows=2, cca="highspeed",
                     queue={"kind": "tbf", "rate": "10mbit", "burst": "16KiB", "limit": "100kB"}),
    "splitbuff": _dumbbell("splitbuff", flows=4, queue={"kind": "splitbuff", "sub_buffers": 2},
                           topology={"rtt": {"dist": "uniform", "low": "10ms", "high": "300ms"}}),
    "blind_splitbuff": _dumbbell("blind_splitbuff", flows=4,
                                 queue={"kind": "blind_splitbuff", "limit": "120p", "sub_buffers": 3}),
    "red": _dumbbell("red", queue={"kind": "red", "limit": "200p", "min_th": "15kB", "max_th": "45kB",
                                   "max_p": 0.1, "byte_mode": True}),
    "ared": _dumbbell("ared", queue={"kind": "ared", "limit": "200p", "target_delay": "10ms"}),
    "pie": _dumbbell("pie", queue={"kind": "pie", "limit": "200p", "target": "10ms"}),
    "codel": _dumbbell("codel", flows=4, cca="cubic", queue={"kind": "codel", "limit": "200p"}, seconds=5),
    "fq_codel": _dumbbell("fq_codel", flows=6, queue={"kind": "fq_codel", "limit": "100p", "flows": 4}, seconds=5),
    "dualpi2": _dumbbell("dualpi2", flows=4, cca="reno", queue={"kind": "dualpi2", "limit": "200p"}, seconds=5,
                         flows_=[{"tcp": {"ecn": "l4s"}}, {"tcp": {"ecn": "l4s"}}, {}, {"tcp": {"ecn": "classic"}}]),
    # Where the order of events at one instant shows: a buffer of two packets, where a packet
    # that starts as another arrives decides whether the arrival is dropped, and greedy flows of
    # unequal RTTs through a FIFO, whose arrivals meet departures at the same picosecond.
    "tiny_fifo": _dumbbell("tiny_fifo", flows=5, queue="2p", seconds=5),
    "greedy_rtt_mix": _dumbbell("greedy_rtt_mix", flows=8, seconds=5,
                                topology={"rtt": {"dist": "uniform", "low": "40ms", "high": "120ms"}}),
    "bytes_queue_gilbert": _dumbbell("bytes_queue_gilbert", queue="90kB",
                                     topology={"loss_model": {"kind": "gilbert_elliott", "p": 0.001, "r": 0.3,
                                                              "loss_good": 0.0, "loss_bad": 0.5}}),
    "persistent_and_poisson": _generators("persistent_and_poisson", [
        {"name": "pers", "kind": "persistent", "dst": "sink", "flows": 1},
        {"name": "mice", "kind": "poisson", "dst": "sink", "arrivals_per_s": 4.0,
         "size": {"dist": "pareto", "shape": 1.2, "mean": "20kB"}}]),
    "closed_loop": _generators("closed_loop", [
        {"name": "cl", "kind": "closed_loop", "dst": "sink", "users": 2,
         "size": {"dist": "lognormal", "median": "30kB", "sigma": 1.0},
         "think": {"dist": "exponential", "mean": "300ms"}}]),
    "cbr_and_onoff": _generators("cbr_and_onoff", [
        {"name": "pers", "kind": "persistent", "dst": "sink", "flows": 1, "sources": "h*_0"},
        {"name": "cbr", "kind": "cbr", "dst": "sink", "rate": "2Mbps", "sources": "h*_1"},
        {"name": "onoff", "kind": "onoff", "dst": "sink", "rate": "5Mbps", "sources": "h*_2",
         "on": {"dist": "exponential", "mean": "200ms"}, "off": {"dist": "exponential", "mean": "300ms"}}]),
}


# The canonical form names what the tables call otherwise by the engine's field names.
_CHANNEL_FIELDS = {"from_node": "from", "to_node": "to"}
_CLASS_FIELDS = {"size_limit": "limit"}
_CHANNEL_SERIES = {"sent_bytes": "channel_sent_bytes", "drops": "channel_drops", "sent_packets": "channel_sent_packets",
                   "sojourn_ns": "channel_sojourn_ns", "busy_ns": "channel_busy_ns"}
# Counters added to the engine's tables after the goldens were first hashed, left out of a row
# where they are zero (a discipline without them): the older goldens' hashes carry over, and a
# golden that has them (codel, fq_codel: their AQM drops) hashes them. The same for the flows'
# (ECN's, zero while no flow is ECN-capable; a reduction that raised the window, zero where
# none did).
_LATER_COUNTERS = ("dropped_aqm_packets", "dropped_aqm_bytes", "ce_marked_packets", "ce_marked_bytes")
_LATER_FLOW_COUNTERS = ("ce_received", "ecn_responses", "raising_reductions")
# Capture columns added after the goldens were first hashed, left out where every packet's is zero
# (the ECN field of captures without an ECN-capable flow).
_LATER_CAPTURE_COLUMNS = ("ecn",)
# Time series and class counters added after the goldens were first hashed (the AQM's controller,
# CE marks and AQM drops per channel, CE marks per sub-buffer, an ECN controller's α), left out
# where every value is null or zero (no AQM, no ECN): a golden without them keeps its hash, one
# with them (its AQM's state, its marks) hashes them.
_LATER_SERIES = ("aqm_probability", "aqm_signal", "aqm_state", "aqm_count", "ce_marks", "aqm_drops", "ecn_alpha",
                 "ce_marked_packets")
_LATER_CLASS_COUNTERS = ("ce_marked_packets", "ce_marked_bytes")
# Columns of the tables that place a row (its entity, its sample) rather than hold a value.
_PLACES = ("flow", "channel", "sub_buffer", "time_ns", "capture", "packet")


def _plain(value: Any) -> Any:
    """A counter as JSON has it: 128-bit integers (Arrow decimals) as integers."""
    return int(value) if isinstance(value, Decimal) else value


def _records(frame: Any, drop: tuple[str, ...], rename: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    rename = rename or {}
    return [{rename.get(k, k): _plain(v) for k, v in row.items() if k not in drop} for row in frame.iter_rows(named=True)]


def _recorded(frame: Any, column: str) -> bool:
    """Whether `column` of a time-series table belongs in the canonical form: always, unless it is
    one of `_LATER_SERIES` and holds nothing but nulls and zeros."""
    if column not in _LATER_SERIES:
        return True
    values = frame[column].drop_nulls()
    return bool(values.len()) and bool((values != 0).any())


def _rows(frame: Any, key: str, names: Mapping[str, str], columns: dict[str, Any]) -> Any:
    """Per-entity series of a time-series table as ``(entities, samples)`` arrays named `names`;
    returns the entities' keys in row order."""
    import numpy as np

    entities = frame[key].unique(maintain_order=True).to_numpy().astype(np.uint64)
    samples = frame.height // len(entities) if len(entities) else 0
    for column, name in names.items():
        values = frame[column].to_numpy()
        columns[f"timeseries.{name}"] = values.reshape(len(entities), samples) if len(entities) else values.reshape(0, 0)
    return entities


def canonical_form(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The engine's result (`pipeline.result.EngineResult`) in the form the goldens were first
    hashed in, when results crossed the binding as JSON counters and numpy columns: (counters,
    columns by name). Every value comes from the Arrow tables; only the arrangement is the old one,
    so the checked-in hashes carry over unchanged. (A capture of no packet leaves no row, so it
    has no entry here; every golden's capture has packets.)"""
    import numpy as np
    import polars as pl

    classes: dict[int, list[dict[str, Any]]] = {}
    for row in _records(result.queue_classes, drop=(), rename=_CLASS_FIELDS):
        classes.setdefault(row.pop("channel"), []).append(row)
        row.pop("sub_buffer")
        for name in _LATER_CLASS_COUNTERS:
            if row.get(name) == 0:
                del row[name]
    channels = _records(result.channels, drop=("channel",), rename=_CHANNEL_FIELDS)
    for channel in channels:
        for name in _LATER_COUNTERS:
            if channel.get(name) == 0:
                del channel[name]
    for i, channel in enumerate(channels):
        if i in classes:
            channel["classes"] = classes[i]
    flows = _records(result.flows, drop=("flow",))
    for flow in flows:
        for name in _LATER_FLOW_COUNTERS:
            if flow.get(name) == 0:
                del flow[name]
    counters: dict[str, Any] = {"end_ns": result.end_ns, "flows": flows,
                                "channels": channels, "timeseries": None, "captures": []}
    columns: dict[str, Any] = {}
    if result.sample_interval_ns is not None:
        counters["timeseries"] = {"interval_ns": result.sample_interval_ns}
        flow_ts, channel_ts, class_ts = result.flow_timeseries, result.channel_timeseries, result.class_timeseries
        timed, key = (flow_ts, "flow") if flow_ts.height else (channel_ts, "channel")
        first = timed.filter(pl.col(key) == timed[key][0]) if timed.height else timed
        columns["timeseries.time_ns"] = first["time_ns"].to_numpy()
        series = [c for c in flow_ts.columns if c not in _PLACES and _recorded(flow_ts, c)]
        columns["timeseries.flows"] = _rows(flow_ts, "flow", dict(zip(series, series)), columns)
        series = [c for c in channel_ts.columns if c not in _PLACES and _recorded(channel_ts, c)]
        columns["timeseries.channels"] = _rows(channel_ts, "channel", {c: _CHANNEL_SERIES.get(c, c) for c in series},
                                               columns)
        series = [c for c in class_ts.columns if c not in _PLACES and _recorded(class_ts, c)]
        keyed = class_ts.with_columns((pl.col("channel").cast(pl.UInt64) * 2**32 + pl.col("sub_buffer")).alias("row"))
        _rows(keyed, "row", {c: "class_" + _CLASS_FIELDS.get(c, c) for c in series}, columns)
        firsts = keyed.unique("row", maintain_order=True)
        columns["timeseries.class_channels"] = firsts["channel"].to_numpy().astype(np.uint64)
        columns["timeseries.class_indices"] = firsts["sub_buffer"].to_numpy().astype(np.uint64)
    captures = result.captures
    edges = [f"sack{k}_{edge}" for k in (1, 2, 3) for edge in ("start", "end")]
    for i, capture in enumerate(captures.partition_by("capture", maintain_order=True) if captures.height else []):
        counters["captures"].append({"channel": int(capture["channel"][0])})
        for name in capture.columns:
            if name in _LATER_CAPTURE_COLUMNS and not (capture[name] != 0).any():
                continue
            if name not in ("capture", "channel", "packet", *edges):
                columns[f"captures.{i}.{name}"] = capture[name].to_numpy()
        columns[f"captures.{i}.sack"] = np.stack([capture[e].to_numpy() for e in edges], axis=1)
    return counters, columns


def content_hash(result: Any) -> str:
    """sha256 of an engine result's canonical form (`canonical_form`): its counters as canonical
    JSON, then every column's name, dtype, shape and little-endian bytes, in name order."""
    import numpy as np

    counters, columns = canonical_form(result)
    digest = hashlib.sha256(json.dumps(counters, sort_keys=True, separators=(",", ":")).encode())
    for name in sorted(columns):
        array = np.ascontiguousarray(columns[name])
        digest.update(f"\n{name} {array.dtype.str} {array.shape}\n".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def simulated(scenario: Mapping[str, Any]) -> Any:
    """Plan and simulate a scenario given as a mapping; the engine's result."""
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import Scenario

    return simulate(plan(Scenario.from_dict(dict(scenario)))).result


def golden_hash(name: str) -> str:
    """Plan and simulate golden `name`; the content hash of its result."""
    return content_hash(simulated(GOLDENS[name]))


def aggregates(result: Any) -> dict[str, int]:
    """What a change of a golden is summarised by: bytes delivered to every receiver, packets
    dropped on every channel (by a full queue, an AQM or a lossy link), and RTOs of every flow."""
    channels = result.channels
    drops = sum(int(channels[c].sum()) for c in ("dropped_queue_packets", "dropped_aqm_packets",
                                                  "dropped_loss_packets"))
    return {"goodput_bytes": int(result.flows["bytes_delivered"].sum()), "drops": drops,
            "rtos": int(result.flows["rtos"].sum())}


def jittered(name: str, run: int) -> dict[str, Any]:
    """Golden `name` with start-time jitter alone: its seed, links and traffic kept, each flow
    (a dumbbell's, listed or counted) or each generator (a tree's) started at its own draw in
    [0, JITTER_NS) from a generator seeded with `run`."""
    import copy

    import numpy as np

    scenario = copy.deepcopy(GOLDENS[name])
    rng = np.random.default_rng(run)

    def start() -> str:
        return f"{int(rng.integers(0, JITTER_NS))}ns"

    if scenario.get("generators"):
        for generator in scenario["generators"]:
            generator["start"] = start()
    else:
        listed = scenario.get("flows") or [{} for _ in range(scenario["topology"]["flows"])]
        scenario["flows"] = [{**flow, "start": start()} for flow in listed]
    return scenario


def summarise(name: str, before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, Any]:
    """A changed golden's aggregates before and after, with the range of each over the
    jittered runs and the unjittered one after the change; `within` when every move is no
    larger than that range."""
    runs = [after] + [aggregates(simulated(jittered(name, k))) for k in range(1, JITTER_RUNS + 1)]
    summary: dict[str, Any] = {}
    for key in after:
        values = [r[key] for r in runs]
        spread = max(values) - min(values)
        summary[key] = {"before": before[key], "after": after[key], "jitter_min": min(values),
                        "jitter_max": max(values), "within": abs(after[key] - before[key]) <= spread}
    return summary


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--why", required=True, help="why results change (kept in changes.json)")
    args = parser.parse_args(argv)
    checked_in = json.loads(HASHES.read_text()) if HASHES.exists() else {}
    recorded = json.loads(AGGREGATES.read_text()) if AGGREGATES.exists() else {}
    hashes, totals, changes = {}, {}, {}
    for name in GOLDENS:
        result = simulated(GOLDENS[name])
        hashes[name], totals[name] = content_hash(result), aggregates(result)
        line = f"{name:<24} {hashes[name][:16]}"
        if name in recorded and hashes[name] != checked_in.get(name):
            changes[name] = summarise(name, recorded[name], totals[name])
            line += "  changed: " + ", ".join(
                f"{key} {c['before']} -> {c['after']} (jitter {c['jitter_min']}..{c['jitter_max']})"
                + ("" if c["within"] else " OUTSIDE") for key, c in changes[name].items())
        print(line, flush=True)
    outside = [name for name, change in changes.items() if not all(c["within"] for c in change.values())]
    if outside:
        print(f"refused: {', '.join(outside)} moved beyond the spread of start-time jitter; nothing written",
              file=sys.stderr)
        return 1
    HASHES.write_text(json.dumps(hashes, indent=2) + "\n")
    AGGREGATES.write_text(json.dumps(totals, indent=2) + "\n")
    if changes:
        CHANGES.write_text(json.dumps({"why": args.why, "jitter_runs": JITTER_RUNS, "jitter_ns": JITTER_NS,
                                       "changed": changes}, indent=2) + "\n")
    print(f"{len(hashes)} goldens, {len(changes)} changed -> {HASHES.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
