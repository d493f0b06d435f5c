"""Step 3, derive: from a raw result to everything that is stored and shown about a run.

The engine records facts only, as Arrow tables (`pipeline.result`); here they become the metric
catalogue's flow, link and network tables (`analysis.metrics`), the engine's flow and channel
tables with their summary columns (goodput, loss rate, utilisation, ... from `analysis.summary`)
and the run summary. The engine's other tables (time series, captures, queue classes) pass on
as they are. The store writes what this step returns and computes nothing itself.
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
from .result import ENGINE_TABLES, EngineResult, engine_schemas
from .simulate import RawRun

__all__ = ["DerivedRun", "derive", "metric_tables", "flow_rows", "channel_rows", "FLOW_SUMMARY", "CHANNEL_SUMMARY",
           "stored_schemas"]

# The summary columns derive adds to the engine's flow and channel tables (`analysis.summary`).
FLOW_SUMMARY: dict[str, type[pl.DataType]] = {
    "src": pl.String, "dst": pl.String, "goodput_bps": pl.Float64, "loss_rate": pl.Float64,
    "mean_srtt_ns": pl.Float64, "completion_time_ns": pl.UInt64,
}
CHANNEL_SUMMARY: dict[str, type[pl.DataType]] = {
    "direction": pl.String, "utilisation": pl.Float64, "mean_queue_packets": pl.Float64, "mean_sojourn_ns": pl.Float64,
}


@dataclass
class DerivedRun:
    """One run as the store keeps it: identity, specs, the engine's tables, derived tables."""

    run_id: str
    name: str | None
    seed: int
    duration_ns: int
    wall_time_s: float
    spec_json: str
    user_spec_json: str
    # The engine's result: its scalars and tables (time series, captures, queue classes, ...).
    result: EngineResult
    # The engine's flow and channel tables with their summary columns (`FLOW_SUMMARY`, `CHANNEL_SUMMARY`).
    flows: pl.DataFrame
    channels: pl.DataFrame
    # The metric catalogue's tables: flow_metrics, link_metrics, network_metrics.
    metric_tables: Mapping[str, pl.DataFrame]
    summary: summary.RunSummary
    bottleneck: int | None = None
    study: str | None = None
    notes: list[str] = field(default_factory=list)

    def stored_tables(self) -> dict[str, pl.DataFrame]:
        """Every table of the run as the store writes it (each a `run_id` short of its stored form)."""
        tables = {name: self.result.table(name) for name in ENGINE_TABLES}
        return {**tables, "flows": self.flows, "channels": self.channels, **self.metric_tables}


def stored_schemas() -> dict[str, dict[str, pl.DataType]]:
    """The columns and types of the engine's tables as `derive` hands them on: the engine's own,
    flows and channels followed by their summary columns."""
    schemas: dict[str, dict[str, pl.DataType]] = {name: dict(schema) for name, schema in engine_schemas().items()}
    for name, extra in (("flows", FLOW_SUMMARY), ("channels", CHANNEL_SUMMARY)):
        schemas[name].update({column: dtype() for column, dtype in extra.items()})
    return schemas


def metric_tables(counters: Mapping[str, Any], result: EngineResult, engine_spec: Mapping[str, Any],
                  endpoints: Sequence[tuple[str, str]], bottleneck: int | None) -> dict[str, pl.DataFrame]:
    """The catalogue's flow, link and network tables of a run (`counters`: `EngineResult.counters`)."""
    data = catalogue.RunData.from_result(counters, result.flow_timeseries, engine_spec, endpoints, bottleneck)
    return {"flow_metrics": catalogue.flow_metrics(data), "link_metrics": catalogue.link_metrics(data),
            "network_metrics": catalogue.network_metrics(data)}


def flow_rows(flows: pl.DataFrame, records: Sequence[Mapping[str, Any]], end_ns: int,
              endpoints: Sequence[tuple[str, str]]) -> pl.DataFrame:
    """The engine's flow table with each flow's endpoints' names and its summary columns
    (`records`: the same flows as dicts)."""
    values: dict[str, list[Any]] = {name: [] for name in FLOW_SUMMARY}
    for i, flow in enumerate(records):
        src, dst = endpoints[i]
        row = {"src": src, "dst": dst, "goodput_bps": summary.goodput_bps(flow, end_ns),
               "loss_rate": summary.loss_rate(flow), "mean_srtt_ns": summary.mean_srtt_ns(flow),
               "completion_time_ns": summary.completion_time_ns(flow)}
        for name, value in row.items():
            values[name].append(value)
    return flows.with_columns(pl.Series(name, values[name], dtype=dtype) for name, dtype in FLOW_SUMMARY.items())


def channel_rows(channels: pl.DataFrame, records: Sequence[Mapping[str, Any]], end_ns: int) -> pl.DataFrame:
    """The engine's channel table with each channel's direction and its summary columns."""
    values: dict[str, list[Any]] = {name: [] for name in CHANNEL_SUMMARY}
    for ch in records:
        row = {"direction": "forward" if ch["name"].endswith("_forward") else "backward",
               "utilisation": summary.utilisation(ch, end_ns),
               "mean_queue_packets": summary.mean_queue_packets(ch, end_ns),
               "mean_sojourn_ns": summary.mean_sojourn_ns(ch)}
        for name, value in row.items():
            values[name].append(value)
    return channels.with_columns(pl.Series(name, values[name], dtype=dtype)
                                 for name, dtype in CHANNEL_SUMMARY.items())


def derive(plan: Plan, raw: RawRun, *, study: str | None = None,
           user_spec: Mapping[str, Any] | None = None) -> DerivedRun:
    """Everything stored and shown about the run `plan` gave `raw`."""
    result = raw.result
    resolved = plan.resolved
    counters = result.counters()
    endpoints = resolved.endpoints_of(counters["flows"])
    engine_spec = json.loads(plan.spec_json)
    return DerivedRun(
        run_id=plan.run_id, name=plan.name, seed=plan.seed, duration_ns=plan.duration_ns,
        wall_time_s=raw.wall_time_s, spec_json=plan.spec_json,
        user_spec_json=json.dumps(dict(user_spec), sort_keys=True) if user_spec is not None else plan.user_spec_json(),
        result=result, flows=flow_rows(result.flows, counters["flows"], result.end_ns, endpoints),
        channels=channel_rows(result.channels, counters["channels"], result.end_ns),
        metric_tables=metric_tables(counters, result, engine_spec, endpoints, resolved.bottleneck),
        summary=summary.summarise(counters, endpoints=endpoints, bottleneck=resolved.bottleneck, run_id=plan.run_id,
                                  from_store=False, seed=plan.seed, wall_time_s=raw.wall_time_s,
                                  queues=resolved.queue_descriptions),
        bottleneck=resolved.bottleneck, study=study, notes=list(resolved.notes))
