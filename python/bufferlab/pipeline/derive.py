"""Step 3, derive: from a raw result to everything that is stored and shown about a run.

The engine records facts only; here they become the metric catalogue's flow, link and network
tables (`analysis.metrics`), the per-flow and per-channel rows with their summary columns
(goodput, loss rate, utilisation, ... from `analysis.summary`) and the run summary. The store
writes what this step returns and computes nothing itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ..analysis import metrics as catalogue
from ..analysis import summary
from .plan import Plan
from .simulate import RawRun

__all__ = ["DerivedRun", "derive", "metric_tables", "flow_rows", "channel_rows"]


@dataclass
class DerivedRun:
    """One run as the store keeps it: identity, specs, raw counters and columns, derived tables."""

    run_id: str
    name: str | None
    seed: int
    duration_ns: int
    wall_time_s: float
    spec_json: str
    user_spec_json: str
    # The engine's result: counters (flows, channels, end_ns, events, engine_version) and the
    # long columns (timeseries, captures) as numpy arrays.
    result: Mapping[str, Any]
    # Per flow / channel: the engine's counters plus summary columns (see `flow_rows`).
    flows: list[dict[str, Any]]
    channels: list[dict[str, Any]]
    # The metric catalogue's tables: flow_metrics, link_metrics, network_metrics.
    metric_tables: Mapping[str, pl.DataFrame]
    summary: summary.RunSummary
    bottleneck: int | None = None
    study: str | None = None
    notes: list[str] = field(default_factory=list)


def metric_tables(result: Mapping[str, Any], engine_spec: Mapping[str, Any], endpoints: Sequence[tuple[str, str]],
                  bottleneck: int | None) -> dict[str, pl.DataFrame]:
    """The catalogue's flow, link and network tables of a run."""
    data = catalogue.RunData.from_result(result, engine_spec, endpoints, bottleneck)
    return {"flow_metrics": catalogue.flow_metrics(data), "link_metrics": catalogue.link_metrics(data),
            "network_metrics": catalogue.network_metrics(data)}


def flow_rows(result: Mapping[str, Any], endpoints: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """Each flow's counters with its endpoints' names and its summary columns."""
    end_ns = int(result["end_ns"])
    rows = []
    for i, flow in enumerate(result["flows"]):
        src, dst = endpoints[i]
        rows.append({**flow, "src": src, "dst": dst, "goodput_bps": summary.goodput_bps(flow, end_ns),
                     "loss_rate": summary.loss_rate(flow), "mean_srtt_ns": summary.mean_srtt_ns(flow),
                     "completion_time_ns": summary.completion_time_ns(flow)})
    return rows


def channel_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each channel's counters with its direction and its summary columns."""
    end_ns = int(result["end_ns"])
    rows = []
    for ch in result["channels"]:
        rows.append({**ch, "direction": "forward" if ch["name"].endswith("_forward") else "backward",
                     "utilisation": summary.utilisation(ch, end_ns),
                     "mean_queue_packets": summary.mean_queue_packets(ch, end_ns),
                     "mean_sojourn_ns": summary.mean_sojourn_ns(ch)})
    return rows


def derive(plan: Plan, raw: RawRun, *, study: str | None = None,
           user_spec: Mapping[str, Any] | None = None) -> DerivedRun:
    """Everything stored and shown about the run `plan` gave `raw`."""
    result = raw.result
    resolved = plan.resolved
    endpoints = resolved.endpoints_of(result["flows"])
    engine_spec = json.loads(plan.spec_json)
    return DerivedRun(
        run_id=plan.run_id, name=plan.name, seed=plan.seed, duration_ns=plan.duration_ns,
        wall_time_s=raw.wall_time_s, spec_json=plan.spec_json,
        user_spec_json=json.dumps(dict(user_spec), sort_keys=True) if user_spec is not None else plan.user_spec_json(),
        result=result, flows=flow_rows(result, endpoints), channels=channel_rows(result),
        metric_tables=metric_tables(result, engine_spec, endpoints, resolved.bottleneck),
        summary=summary.summarise(result, endpoints=endpoints, bottleneck=resolved.bottleneck, run_id=plan.run_id,
                                  from_store=False, seed=plan.seed, wall_time_s=raw.wall_time_s,
                                  queues=resolved.queue_descriptions),
        bottleneck=resolved.bottleneck, study=study, notes=list(resolved.notes))
