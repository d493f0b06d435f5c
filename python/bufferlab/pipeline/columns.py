"""The columns of a run's tables as `derive` hands them on to the store: the engine's own
(`result`), and the summary columns derive adds to the flow and channel tables. Data only, like
`analysis.catalogue`: the store's schema (`store.tables`) needs them, not derive's catalogue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .result import engine_column_types, engine_schemas, polars_type

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["FLOW_SUMMARY", "CHANNEL_SUMMARY", "stored_column_types", "stored_schemas"]

# The summary columns derive adds to the engine's flow and channel tables (`analysis.figures`),
# with their Arrow types. Derived tables are Arrow tables (`_core.Table`): a fresh run is derived
# and stored without polars (`pipeline.result`).
FLOW_SUMMARY: dict[str, str] = {
    "src": "Utf8", "dst": "Utf8", "goodput_bps": "Float64", "loss_rate": "Float64", "mean_srtt_ns": "Float64",
    "completion_time_ns": "UInt64",
}
CHANNEL_SUMMARY: dict[str, str] = {
    "direction": "Utf8", "utilisation": "Float64", "mean_queue_packets": "Float64", "mean_sojourn_ns": "Float64",
}


def stored_column_types() -> dict[str, dict[str, str]]:
    """The columns and Arrow types of the engine's tables as `derive` hands them on: the engine's
    own, flows and channels followed by their summary columns."""
    types = engine_column_types()
    for name, extra in (("flows", FLOW_SUMMARY), ("channels", CHANNEL_SUMMARY)):
        types[name].update(extra)
    return types


def stored_schemas() -> dict[str, dict[str, pl.DataType]]:
    """`stored_column_types` as polars types."""
    schemas: dict[str, dict[str, pl.DataType]] = {name: dict(schema) for name, schema in engine_schemas().items()}
    for name, extra in (("flows", FLOW_SUMMARY), ("channels", CHANNEL_SUMMARY)):
        schemas[name].update({column: polars_type(kind) for column, kind in extra.items()})
    return schemas
