"""Step 3, derive: from a raw result to everything that is stored and shown about a run.

The engine records facts only, as Arrow tables (`pipeline.result`); here they become the metric
catalogue's flow, link and network tables (`analysis.metrics`), the engine's flow and channel
tables with their summary columns (goodput, loss rate, utilisation, ...: `analysis.figures`) and
the run summary, which reads the same figures. The catalogue's numbers are computed by the engine
crate's `metrics` module (`_core.catalogue`, called here through `analysis.metrics.RunData`) from
the result's tables, in one call without the GIL: deriving a fresh run imports neither numpy nor
polars. The engine's other tables (time series, captures, queue classes) pass on as
they are, but for a run that keeps no series (`[record] store_series = false`): its time-series
tables are emptied once the catalogue has read them, so that neither a sweep's worker hands them
over nor the store writes them. The store writes what this step returns (`analysis.record`'s
`DerivedRun`) and computes nothing itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..pipeline.columns import CHANNEL_SUMMARY, FLOW_SUMMARY, stored_column_types, stored_schemas
from ..pipeline.engine import core
from ..pipeline.result import EngineResult, polars_type, record_values
from . import metrics as catalogue
from . import summary
from .figures import ChannelFigures, FlowFigures
from .record import DerivedRun

if TYPE_CHECKING:  # pragma: no cover
    # Annotations only: a run served from its plan cache loads no spec layer (pydantic).
    from ..pipeline.plan import Plan
    from ..pipeline.simulate import RawRun

# The engine's time-series tables: what `[record] store_series = false` keeps out of the store.
SERIES_TABLES = ("flow_timeseries", "channel_timeseries", "class_timeseries")

__all__ = ["derive", "SERIES_TABLES", "without_series", "metric_tables", "flow_rows", "channel_rows",
           "FLOW_SUMMARY", "CHANNEL_SUMMARY", "stored_schemas", "stored_column_types"]


def _arrow_table(name: str, rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> Any:
    """`rows` (dicts) as an Arrow table of `columns` (name to Arrow type)."""
    return core().Table.from_columns(name, [(column, kind, [row[column] for row in rows])
                                            for column, kind in columns.items()])


def _arrow_columns(name: str, values: Mapping[str, Sequence[Any]], columns: Mapping[str, str]) -> Any:
    """`values` (by column) as an Arrow table of `columns` (name to Arrow type)."""
    return core().Table.from_columns(name, [(column, kind, values[column]) for column, kind in columns.items()])


def metric_tables(counters: Mapping[str, Any], result: EngineResult, engine_spec: Mapping[str, Any],
                  endpoints: Sequence[tuple[str, str]], bottleneck: int | None,
                  data: catalogue.RunData | None = None) -> dict[str, Any]:
    """The catalogue's flow, link and network tables of a run as Arrow tables (`counters`:
    `EngineResult.counters`; `data`: the `RunData` of them, if made already)."""
    if data is None:
        data = run_data(counters, result, engine_spec, endpoints, bottleneck)
    return {"flow_metrics": _arrow_columns("flow_metrics", catalogue.flow_metric_columns(data), catalogue.FLOW_TABLE),
            "link_metrics": _arrow_columns("link_metrics", catalogue.link_metric_columns(data), catalogue.LINK_TABLE),
            "network_metrics": _arrow_table("network_metrics", [catalogue.network_metric_row(data)],
                                            catalogue.NETWORK_TABLE)}


def run_data(counters: Mapping[str, Any], result: EngineResult, engine_spec: Mapping[str, Any],
             endpoints: Sequence[tuple[str, str]], bottleneck: int | None) -> catalogue.RunData:
    """What the metric catalogue computes a run's tables from."""
    return catalogue.RunData.from_result(counters, result.arrow("flow_timeseries"), engine_spec, endpoints, bottleneck,
                                         flow_table=result.arrow("flows"), channel_table=result.arrow("channels"),
                                         delay_histograms=result.arrow("delay_histograms"))


def _with_columns(table: Any, columns: Mapping[str, str], values: Mapping[str, list[Any]]) -> Any:
    """`table` with `columns` (name to Arrow type) of `values` after its own: an engine table
    (`_core.Table`) stays one; a polars DataFrame (a test's changed fact) stays one."""
    if hasattr(table, "column_types"):
        return table.with_columns([(name, kind, values[name]) for name, kind in columns.items()])
    import polars as pl

    return table.with_columns(pl.Series(name, values[name], dtype=polars_type(kind)) for name, kind in columns.items())


def flow_rows(flows: Any, records: Sequence[Mapping[str, Any]], end_ns: int,
              endpoints: Sequence[tuple[str, str]], figures: FlowFigures | None = None) -> Any:
    """The engine's flow table (Arrow) with each flow's endpoints' names and its summary columns
    (`records`: the same flows as dicts; `figures`: their figures, if taken already)."""
    if figures is None:
        figures = FlowFigures.of(records, end_ns, flows)
    n = len(records)
    values: dict[str, list[Any]] = {
        "src": [src for src, _ in endpoints[:n]], "dst": [dst for _, dst in endpoints[:n]],
        "goodput_bps": figures.goodput_bps, "loss_rate": figures.loss_rate, "mean_srtt_ns": figures.mean_srtt_ns,
        "completion_time_ns": figures.completion_time_ns}
    return _with_columns(flows, FLOW_SUMMARY, values)


def channel_rows(channels: Any, records: Sequence[Mapping[str, Any]], end_ns: int,
                 figures: ChannelFigures | None = None) -> Any:
    """The engine's channel table (Arrow) with each channel's direction and its summary columns
    (`figures`: the channels' summary figures, if taken already)."""
    if figures is None:
        figures = ChannelFigures.of(records, end_ns, channels)
    directions = ["forward" if name.endswith("_forward") else "backward" for name in record_values(records, "name")]
    values: dict[str, list[Any]] = {"direction": directions, "utilisation": figures.utilisation,
                                    "mean_queue_packets": figures.mean_queue_packets,
                                    "mean_sojourn_ns": figures.mean_sojourn_ns}
    return _with_columns(channels, CHANNEL_SUMMARY, values)


def without_series(result: EngineResult) -> EngineResult:
    """`result` with its time-series tables emptied (their columns kept: the engine's own empty
    tables, `_core.result_schemas`)."""
    empty = core().result_schemas()
    return result.with_tables(**{name: empty[name] for name in SERIES_TABLES})


def derive(plan: Plan, raw: RawRun, *, study: str | None = None,
           user_spec: Mapping[str, Any] | None = None) -> DerivedRun:
    """Everything stored and shown about the run `plan` gave `raw`."""
    result = raw.result
    resolved = plan.resolved
    counters = result.counters()
    endpoints = resolved.endpoints_of(counters["flows"])
    # The engine spec as planned (its JSON is `plan.spec_json`), not decoded from that text again:
    # compact, a dumbbell's flows as columns, of which the metrics list the flows alone.
    engine_spec = resolved.members
    data = run_data(counters, result, engine_spec, endpoints, resolved.bottleneck)
    metrics = metric_tables(counters, result, engine_spec, endpoints, resolved.bottleneck, data)
    if not resolved.store_series:
        result = without_series(result)
    return DerivedRun(
        run_id=plan.run_id, name=plan.name, seed=plan.seed, duration_ns=plan.duration_ns,
        wall_time_s=raw.wall_time_s, spec_json=plan.spec_json, spec_hash=plan.spec_hash,
        user_spec_json=json.dumps(dict(user_spec), sort_keys=True) if user_spec is not None else plan.user_spec_json(),
        result=result, flows=flow_rows(result.arrow("flows"), counters["flows"], result.end_ns, endpoints,
                                       data.flow_figures),
        channels=channel_rows(result.arrow("channels"), counters["channels"], result.end_ns, data.channel_figures),
        metric_tables=metrics,
        summary=summary.summarise(counters, endpoints=endpoints, bottleneck=data.bottleneck, run_id=plan.run_id,
                                  from_store=False, seed=plan.seed, wall_time_s=raw.wall_time_s,
                                  queues=resolved.queue_descriptions, flow_figures=data.flow_figures,
                                  channel_figures=data.channel_figures),
        bottleneck=resolved.bottleneck, study=study, notes=list(resolved.notes))
