"""A stored run's flow, link and network metric tables as the commands show them (`run --metrics`,
`ccperf`, `results show`): printed as rich tables, or as JSON (without rich)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..store.reader import Results

__all__ = ["print_metrics", "metrics_json"]


def _metric_columns(db: Path | Results, run_id: str, all_links: bool) -> tuple[dict[str, list[Any]], ...]:
    """The run's flow, link (the bottleneck's, or `all_links`) and network metric tables, column
    by column: a few rows, read without polars (`Results.table_columns`), from the store at `db`
    or through a `Results` already open."""
    from ..store.reader import reading

    with reading(db) as res:
        flows, links, net = (res.table_columns(name, run_id)
                             for name in ("flow_metrics", "link_metrics", "network_metrics"))
    if not all_links:
        keep = [i for i, bottleneck in enumerate(links.get("bottleneck", [])) if bottleneck]
        links = {column: [values[i] for i in keep] for column, values in links.items()}
    return flows, links, net


def _records(columns: dict[str, list[Any]], drop: str = "run_id") -> list[dict[str, Any]]:
    """Column-wise values as one dict per row, without the `drop` column."""
    names = [name for name in columns if name != drop]
    return [dict(zip(names, row)) for row in zip(*(columns[name] for name in names))]


def print_metrics(db: Path | Results, run_id: str, *, all_links: bool) -> None:
    from ..analysis import metrics
    from . import render

    flows, links, net = _metric_columns(db, run_id, all_links)
    console = render.console()
    if not flows.get("run_id"):
        console.print("no metric tables stored for this run (stored by an older bufferlab: run it again "
                      "with --force)")
        return
    tables = render.metric_tables(flows, metrics.FLOW_METRICS, title="Flow metrics")
    if links.get("run_id"):
        tables += render.metric_tables(links, metrics.LINK_METRICS, title="Link metrics")
    tables += render.metric_tables(net, metrics.NETWORK_METRICS, title="Network metrics")
    for table in tables:
        console.print(table)


def metrics_json(db: Path | Results, run_id: str, all_links: bool = False) -> dict[str, Any]:
    flows, links, net = _metric_columns(db, run_id, all_links)
    network = _records(net)
    return {"flows": _records(flows), "links": _records(links), "network": network[0] if network else None}
