"""The metric catalogue's names, units and table columns, as the engine lists them.

The catalogue has one list: the engine's (crates/bufferlab-core/src/metrics/catalogue.rs), every
metric of the flow, link and network tables in the tables' order with its unit and definition
(the definitions the docs' metrics reference is generated from). This module reads it through
the binding (`_core.metric_catalogue`) on first use, once, and adds the columns that say what
each row is. `metrics` computes the tables; this module only names them, so that what needs their
columns and not their computation (the store's schema, `store.tables`) loads no numpy.

FLOW_METRICS, LINK_METRICS, NETWORK_METRICS: name -> (unit, definition), in the table's order.
FLOW_TABLE, LINK_TABLE, NETWORK_TABLE: every column of the table -> its Arrow type
(`_core.Table.from_columns`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ..pipeline.engine import core

__all__ = ["FLOW_METRICS", "LINK_METRICS", "NETWORK_METRICS", "FLOW_TABLE", "LINK_TABLE", "NETWORK_TABLE"]

if TYPE_CHECKING:  # pragma: no cover - made on first use (`__getattr__`)
    FLOW_METRICS: dict[str, tuple[str, str]]
    LINK_METRICS: dict[str, tuple[str, str]]
    NETWORK_METRICS: dict[str, tuple[str, str]]
    FLOW_TABLE: dict[str, str]
    LINK_TABLE: dict[str, str]
    NETWORK_TABLE: dict[str, str]

# Each table's columns before and after its metrics (which flow, link or run a row is; where a
# flow's delivery rate came from), with their Arrow types; every metric is a Float64.
_KEYS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "flow_metrics": ({"flow": "UInt32", "name": "Utf8", "src": "Utf8", "dst": "Utf8"},
                     {"delivery_rate_source": "Utf8"}),
    "link_metrics": ({"channel": "UInt32", "name": "Utf8", "rate_mbps": "Float64", "bottleneck": "Boolean"}, {}),
    "network_metrics": ({"name": "Utf8"}, {}),
}
# The public names of each table's metrics and columns.
_NAMES = {"flow_metrics": ("FLOW_METRICS", "FLOW_TABLE"), "link_metrics": ("LINK_METRICS", "LINK_TABLE"),
          "network_metrics": ("NETWORK_METRICS", "NETWORK_TABLE")}


@functools.cache
def _catalogue() -> dict[str, dict[str, tuple[str, str]] | dict[str, str]]:
    """The public names' values, from the engine's list."""
    values: dict[str, dict[str, tuple[str, str]] | dict[str, str]] = {}
    for table, listed in core().metric_catalogue().items():
        metrics = {name: (unit, definition) for name, unit, definition in listed}
        before, after = _KEYS[table]
        metrics_name, table_name = _NAMES[table]
        values[metrics_name] = metrics
        values[table_name] = {**before, **dict.fromkeys(metrics, "Float64"), **after}
    return values


def __getattr__(name: str) -> object:
    """A public name, made on its first use (PEP 562)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _catalogue()[name]
