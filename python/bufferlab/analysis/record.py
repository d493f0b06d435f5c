"""The record of one run that step 3 (`analysis.derive`) makes and step 4 (`store.writer`)
writes as it is, and that a sweep's workers hand back (`study.executors`): one type for all
three. Plain data, cheap to import: the engine's result and the run summary are named here for
the type checker only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..pipeline.result import ENGINE_TABLES

if TYPE_CHECKING:  # pragma: no cover
    from ..pipeline.result import EngineResult
    from .summary import RunSummary

__all__ = ["DerivedRun"]


@dataclass
class DerivedRun:
    """One run as the store keeps it: identity, specs, the engine's tables, derived tables."""

    run_id: str
    name: str | None
    seed: int
    duration_ns: int
    wall_time_s: float
    spec_json: str
    # sha256 of `spec_json` (`Plan.spec_hash`), stored beside it.
    spec_hash: str
    user_spec_json: str
    # The engine's result: its scalars and tables (time series, captures, queue classes, ...).
    result: EngineResult
    # The engine's flow and channel tables with their summary columns (`FLOW_SUMMARY`,
    # `CHANNEL_SUMMARY`), as Arrow tables.
    flows: Any
    channels: Any
    # The metric catalogue's tables as Arrow tables: flow_metrics, link_metrics, network_metrics.
    metric_tables: Mapping[str, Any]
    summary: RunSummary
    bottleneck: int | None = None
    study: str | None = None
    notes: list[str] = field(default_factory=list)

    def stored_tables(self) -> dict[str, Any]:
        """Every table of the run as the store writes it (each a `run_id` short of its stored form),
        as Arrow tables."""
        tables = {name: self.result.arrow(name) for name in ENGINE_TABLES}
        return {**tables, "flows": self.flows, "channels": self.channels, **self.metric_tables}
