"""Metric tables as the report shows them: ccperf's layout (seed 001: one row per metric, one
column per flow, link or `net`) with the best value of each row in bold.

Which value is best depends on the metric: more throughput, utility, utilisation and fairness is
better; less delay, queueing, loss, drops, retransmissions and timeouts is better; for the rest
(windows, sending rates, variation) neither is, and no cell of their row is bold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..analysis import metrics as catalogue

__all__ = ["HIGHER_IS_BETTER", "LOWER_IS_BETTER", "better", "Cell", "Row", "MetricTable", "metric_table",
           "format_value", "best_positions"]

HIGHER_IS_BETTER = frozenset({
    "mean_throughput_l4", "mean_throughput_l7", "mean_delivery_rate_l4", "mean_network_power_l4",
    "mean_utility_pf_l4", "mean_utility_mpdf_l4", "mean_utilization_bw_l4", "mean_utilization_bdp_l4",
    "mean_sending_rate_l1", "utilization_l1",
    "mean_agg_throughput_l4", "mean_agg_utility_pf_l4", "mean_agg_utility_mpdf_l4", "mean_agg_utilization_bw_l4",
    "mean_agg_utilization_bdp_l4", "mean_jains_fairness_throughput_l4", "mean_entropy_fairness_throughput_l4",
    "mean_product_fairness_throughput_l4",
})
LOWER_IS_BETTER = frozenset({
    "mean_srtt_l4", "mean_est_qdelay_l4", "mean_one_way_delay_l7", "mean_recovery_time_l4",
    "flow_completion_time_l4", "total_retransmissions_l4", "total_rtos_l4", "loss_rate_l4",
    "mean_qdisc_length_l2", "max_qdisc_length_l2", "mean_qdisc_delay_l2", "total_qdisc_drops_l2",
    "total_random_losses_l1",
    "p50_qdisc_delay_l2", "p95_qdisc_delay_l2", "p99_qdisc_delay_l2",
    "p50_one_way_delay_l3", "p95_one_way_delay_l3", "p99_one_way_delay_l3",
})
# Neither direction: how a flow behaves, not how well it is served.
NEITHER = frozenset({
    "mean_sending_rate_l4", "mean_sending_rate_l7", "mean_cwnd_l4", "mean_in_flight_l4", "mean_idt_ewma_l4",
    "cov_throughput_l4", "cov_throughput_l7", "cov_in_flight_l4", "cov_cwnd_l4", "cov_srtt_l4",
    "mean_agg_in_flight_l4",
    # ECN marks and the responses to them are the AQM's signal, not a loss: fewer is not better.
    "total_ce_marks_l2", "total_ce_received_l4", "total_ecn_responses_l4",
})

# A run with traffic generators has thousands of flows: its table shows the first ones.
MAX_COLUMNS = 40


def better(metric: str) -> str | None:
    """"higher", "lower" or None: which values of `metric` are the better ones."""
    if metric in HIGHER_IS_BETTER:
        return "higher"
    if metric in LOWER_IS_BETTER:
        return "lower"
    return None


def format_value(value: float | None) -> str:
    """A metric value as ccperf prints it (two decimals; large or tiny magnitudes in 4 significant
    digits); a dash for no value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    v = float(value)
    if v != 0 and (abs(v) >= 1e7 or abs(v) < 0.005):
        return f"{v:.4g}"
    return f"{v:.2f}"


def best_positions(values: Sequence[float | None], direction: str | None) -> set[int]:
    """The columns holding the best value of a row: none when the metric has no direction, when
    fewer than two columns have a value, or when all of them are equal (nothing to compare)."""
    present = [(i, float(v)) for i, v in enumerate(values) if v is not None and not math.isnan(float(v))]
    if direction is None or len(present) < 2:
        return set()
    numbers = [v for _, v in present]
    if min(numbers) == max(numbers):
        return set()
    target = max(numbers) if direction == "higher" else min(numbers)
    return {i for i, v in present if v == target}


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None
    best: bool


@dataclass(frozen=True)
class Row:
    metric: str
    unit: str
    description: str
    better: str | None
    cells: list[Cell]


@dataclass(frozen=True)
class MetricTable:
    title: str
    columns: list[str]
    rows: list[Row]
    hidden_columns: int


def metric_table(frame: pl.DataFrame, metrics: Mapping[str, tuple[str, str]], *, title: str,
                 column_names: str = "name", max_columns: int = MAX_COLUMNS) -> MetricTable:
    """`frame` (one row per flow, link or `net`) turned around: one row per metric of `metrics`
    that the frame has, one column per entity, the best cell of each row marked."""
    shown = frame.head(max_columns)
    rows = []
    for metric, (unit, description) in metrics.items():
        if metric not in shown.columns:
            continue
        values: list[Any] = shown[metric].to_list()
        direction = better(metric)
        best = best_positions(values, direction)
        cells = [Cell(format_value(v), None if v is None else float(v), i in best) for i, v in enumerate(values)]
        rows.append(Row(metric, unit, description, direction, cells))
    return MetricTable(title, [str(n) for n in shown[column_names].to_list()], rows, frame.height - shown.height)


def run_metric_tables(flows: pl.DataFrame, links: pl.DataFrame, net: pl.DataFrame) -> list[MetricTable]:
    """The three tables of a run page: flow, link and network metrics. The link table shows the
    bottleneck, as ccperf's page does (every link direction: `bufferlab results show RUN --all-links`)."""
    links = links.filter(pl.col("bottleneck")) if "bottleneck" in links.columns else links
    return [metric_table(flows, catalogue.FLOW_METRICS, title="Flow metrics"),
            metric_table(links, catalogue.LINK_METRICS, title="Link metrics"),
            metric_table(net, catalogue.NETWORK_METRICS, title="Network metrics")]
