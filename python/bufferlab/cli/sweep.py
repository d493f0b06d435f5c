"""`bufferlab sweep SWEEP.toml` and `bufferlab results study NAME`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import SpecError
from .options import MAX_WORKERS, Number, db_option, listed, max_memory_option, read_input
from .progress import progress_listener

__all__ = ["sweep_command", "results_study_command", "DEFAULT_STUDY_COLUMNS"]

# What `results study` prints unless --metrics says otherwise: the quantities of buffer sizing.
DEFAULT_STUDY_COLUMNS = ("mean_agg_throughput_l4", "utilization_l1", "mean_qdisc_delay_l2", "mean_qdisc_length_l2",
                         "total_qdisc_drops_l2", "loss_rate_l4", "mean_jains_fairness_throughput_l4")


@click.command("sweep", short_help="Run every point of a sweep that the store does not have yet.")
@click.argument("sweep_file", metavar="SWEEP.toml", type=click.Path(path_type=Path))
@db_option
@click.option("--workers", type=Number(1, MAX_WORKERS, whole=True), default=None,
              help="Worker processes (default: one per core; 1 runs in this process).")
@click.option("--dask", "dask_address", default=None, metavar="local|tcp://HOST:PORT",
              help="Run on dask.distributed: a LocalCluster of --workers processes, or a running scheduler.")
@max_memory_option
@click.option("--json", "as_json", is_flag=True, help="Print what the sweep did as JSON.")
def sweep_command(sweep_file: Path, db: Path, workers: int | None, dask_address: str | None, max_memory: str | None,
                  as_json: bool) -> int:
    """Run every point of a sweep (base scenario x axes x seeds) that the store does not have yet,
    storing each run as it finishes in the study named after the sweep. Stopped and started
    again, it runs only what is missing."""
    from ..pipeline.budget import parse_budget
    from ..study.execute import run_sweep
    from ..study.executors import make_executor
    from ..study.sweep import Sweep

    budget = parse_budget(max_memory)
    read_input(sweep_file)  # a folder, a missing file or /dev/zero refused in the wording of every input
    sweep = Sweep.from_toml(sweep_file)
    executor = make_executor(workers, dask_address)
    if as_json or not sys.stderr.isatty():
        report = run_sweep(sweep, db, executor, max_memory=budget)
    else:
        with progress_listener(sweep.name) as listener:
            report = run_sweep(sweep, db, executor, listener, max_memory=budget)
    if as_json:
        click.echo(json.dumps({"study": report.study, "db": str(db), "executor": executor.name,
                               "workers": executor.workers, "runs": report.total, "simulated": report.simulated,
                               "reused": report.reused, "failed": [{"point": p.index, "seed": p.seed,
                                                                     "values": dict(p.values), "error": e}
                                                                    for p, e in report.failed],
                               "interrupted": report.interrupted, "wall_time_s": report.wall_time_s,
                               "runs_per_minute": report.runs_per_minute}, indent=2, default=str))
    else:
        _print_report(report, db, executor)
    if report.interrupted:
        by = " by SIGTERM" if report.interrupted_by == "SIGTERM" else ""
        sys.stderr.write(f"error: interrupted{by}: {report.simulated + report.reused} of {report.total} runs are "
                         "stored; run the same command again to finish the sweep\n")
        return 143 if report.interrupted_by == "SIGTERM" else 130
    return 0


def _print_report(report: Any, db: Path, executor: Any) -> None:
    from rich.markup import escape

    from .render import console as new_console

    # The study's name, the store's path, point values and errors are the user's text, not markup.
    study, where = escape(report.study), escape(str(db))
    console = new_console(160, highlight=False)
    console.print(f"study [bold]{study}[/bold] in {where}: {report.total} run(s) = points x seeds; "
                  f"{report.simulated} simulated now, {report.reused} already stored, {len(report.failed)} failed "
                  f"({executor.name}, {executor.workers} worker(s), {report.wall_time_s:.1f} s wall"
                  + (f", {report.runs_per_minute:.0f} runs/min)" if report.simulated else ")"))
    if report.seedless:
        console.print("note: the scenario has no random element, so its seeds give one identical run per point")
    for point, error in report.failed[:20]:
        values = ", ".join(f"{k}={v}" for k, v in point.values.items()) or "base"
        console.print(f"  failed: point {point.index} ({escape(values)}), seed {point.seed}: {escape(str(error))}")
    if len(report.failed) > 20:
        console.print(f"  ... and {len(report.failed) - 20} more failures")
    console.print(f"see it with: bufferlab results study {study} --db {where}")


@click.command("study", short_help="One row per point of a study: its axis values and metric means over seeds.")
@click.argument("name")
@db_option
@click.option("--metrics", "metric_names", default=None,
              help="Comma-separated metrics to show (default: throughput, utilisation, queue delay and length, "
                   "drops, loss, Jain).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def results_study_command(name: str, db: Path, metric_names: str | None, fmt: str) -> None:
    """One row per point of study NAME: its axis values and the mean of each metric over seeds
    with a 95 % confidence interval."""
    import polars as pl

    from ..analysis import metrics as catalogue
    from ..store.reader import load
    from .render import console, frame_table

    known = [*catalogue.FLOW_METRICS, *catalogue.LINK_METRICS, *catalogue.NETWORK_METRICS]
    chosen = listed("--metrics", metric_names, what="metric") if metric_names is not None else list(DEFAULT_STUDY_COLUMNS)
    for m in chosen:
        if m not in known:
            raise SpecError("--metrics", f'unknown metric "{m}" (known: the flow, link and network '
                                         'metrics of the catalogue, e.g. mean_throughput_l4, utilization_l1)')
    res = load(db)
    with res.one_connection():  # the study's queries on one connection (`Results.one_connection`)
        frame = res.study(name)
        axes = res.study_axes(name)
    if fmt == "json":
        from .results import json_rows

        click.echo(json_rows(frame.to_dicts()))
        return
    if fmt == "csv":
        from ..store.reader import flat_for_csv

        click.echo(flat_for_csv(frame).write_csv(), nl=False)
        return
    from ..analysis.aggregate import axis_label, distinct_axes

    columns = distinct_axes(frame, axes)
    shown = frame.select(["point", *[pl.col(a).alias(axis_label(a, n)) for a, n in columns], "seeds", *[
        pl.format("{} ± {}", pl.col(m).round_sig_figs(4), (pl.col(f"{m}_ci_high") - pl.col(m)).round_sig_figs(2))
        .fill_null(pl.col(m).round_sig_figs(4).cast(pl.Utf8)).alias(m) for m in chosen]])
    console(240).print(
        frame_table(shown, title=f"study {name}: mean ± half-width of the 95 % confidence interval over seeds, "
                                 f"{frame.height} point(s)"))
