"""`bufferlab results list|show|query|export|monitor|csv|pcap ... [--db PATH]`: what a result
store holds, listed, shown, queried and exported.

Imported when it is asked for (`lazy.LazyGroup`): declaring its seven commands and their options
would slow every other command's start."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from ..errors import SpecError
from .lazy import LazyGroup
from .metrics import metrics_json, print_metrics
from .options import db_option, json_option, writable_file

__all__ = ["results_group", "json_rows"]


@click.group("results", cls=LazyGroup, lazy={"study": ".sweep:results_study_command"})
def results_group() -> None:
    """List, show, query and export what a result store holds."""


_run_argument = click.argument("run", metavar="RUN")
_link_option = click.option("--link", required=True, help="Link name (its capture must be in the spec: [[captures]]).")
_direction_option = click.option("--direction", type=click.Choice(["forward", "backward"]), default="forward",
                                 show_default=True)


@results_group.command("list", short_help="One line per stored run.")
@db_option
@click.option("--study", default=None, help="Only the runs of this study.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the runs as JSON: a list of objects with the whole run id (run_id).")
def results_list(db: Path, study: str | None, as_json: bool) -> None:
    """One line per stored run."""
    from ..store.reader import load

    # The table shows the ids' first 12 characters, enough to name a run (any unique prefix does);
    # a script gets them whole.
    run = "r.run_id" if as_json else "left(r.run_id, 12) AS run"
    with load(db) as res:  # rows, not a DataFrame: a listing needs neither polars nor numpy
        columns, rows = res.rows(
            f"SELECT {run}, r.name, r.study_id AS study, r.seed, r.status, "
            "r.created_at, r.end_ns / 1e9 AS simulated_s, r.wall_time_s, "
            "(SELECT count(*) FROM flows f WHERE f.run_id = r.run_id) AS flows "
            "FROM runs r WHERE ? IS NULL OR r.study_id = ? ORDER BY r.created_at, r.run_id", [study, study])
    if as_json:
        click.echo(json_rows([dict(zip(columns, row)) for row in rows]))
        return
    from .render import console, rows_table

    console().print(rows_table(columns, rows, title=f"{len(rows)} run(s) in {db}"))


@results_group.command("show", short_help="A stored run's flow, link and network metric tables.")
@_run_argument
@db_option
@click.option("--all-links", is_flag=True, help="Every link direction that carried traffic, not only the bottleneck.")
@json_option
def results_show(run: str, db: Path, all_links: bool, as_json: bool) -> None:
    """The flow, link and network metric tables of RUN (a run id or a unique prefix)."""
    from ..store.reader import load

    with load(db) as res, res.one_connection():  # a few rows: read without polars (see `results list`)
        run_id = res.run_id(run)
        names, rows = res.rows("SELECT name, seed, engine_version, end_ns, wall_time_s FROM runs WHERE run_id = ?",
                               [run_id])
        row = dict(zip(names, rows[0]))
        if as_json:
            click.echo(json.dumps({"run_id": run_id, **row, "metrics": metrics_json(res, run_id, all_links)},
                                  indent=2, default=str))
            return
        from rich.markup import escape

        from ..analysis.summary import notes_of_counts
        from .render import console

        console().print(f"run {run_id[:12]} ({escape(str(row['name']))}, seed {row['seed']}, "
                         f"engine {row['engine_version']}, {row['end_ns'] / 1e9:g} s simulated)")
        print_metrics(res, run_id, all_links=all_links)
        counts = res.recovery_counts([run_id])
        for note in notes_of_counts(counts.flows, counts.raising_flows, counts.recoveries, counts.raised):
            console().print(f"note: {escape(note)}", highlight=False)


def json_rows(rows: Any) -> str:
    """Rows as JSON text that any JSON reader takes: a number JSON cannot write (NaN, ±Infinity)
    becomes null; dates and other values their text."""
    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(rows), default=str, indent=2, allow_nan=False)


@results_group.command("query", short_help="Run read-only SQL over the store.")
@click.argument("sql")
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="json: a list of rows, each an object of columns; NaN and ±Infinity, which JSON cannot "
                   "write, are null.")
def results_query(sql: str, db: Path, fmt: str) -> None:
    """Run SQL over the store and print the result. The query reads the store and nothing
    else: the store is opened read-only, and DuckDB's access to files, other databases and
    extensions is off (COPY ... TO a file, read_csv, ATTACH fail with one line). A result of
    more than 10 million rows is refused (aggregate, add a LIMIT, or use `results export`)."""
    import duckdb

    from ..store.reader import load
    from .render import console, frame_table

    if not sql.strip():
        raise SpecError("SQL", "empty query (e.g. \"SELECT name, seed FROM runs\")")
    with load(db) as res:
        try:
            frame = res.user_query(sql)
        except duckdb.Error as e:
            raise SpecError("SQL", str(e).splitlines()[0]) from None
    if fmt == "csv":
        from ..store.reader import flat_for_csv

        click.echo(flat_for_csv(frame).write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json_rows(frame.to_dicts()))
    else:
        console().print(frame_table(frame))


@results_group.command("export", short_help="Export a table of the store to CSV or Parquet.")
@click.argument("run", metavar="[RUN]", required=False)
@db_option
@click.option("--table", "table", required=True, help="flow_metrics, link_metrics, network_metrics, runs, flows, "
                                                       "channels, flow_timeseries, channel_timeseries, captures, studies")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True)
def results_export(run: str | None, db: Path, table: str, fmt: str, output: Path) -> None:
    """Write a table (of RUN, or of every run) as Parquet or CSV."""
    from ..store.reader import export_frame, load

    writable_file("--output", output)
    with load(db) as res:
        frame = res.table(table, run)
    export_frame(frame, output, fmt)
    click.echo(f"{frame.height} rows of {table} -> {output}")


@results_group.command("monitor", short_help="A captured link's middlebox monitor: per-flow throughput and loss.")
@_run_argument
@db_option
@_link_option
@_direction_option
@click.option("--split", default="100KB", show_default=True, help="Size that separates small and large flows.")
@json_option
def results_monitor(run: str, db: Path, link: str, direction: str, split: str, as_json: bool) -> None:
    """Seed 000's middlebox table: per-flow throughput and loss seen on a captured link."""
    from .. import units
    from ..analysis import monitor
    from ..store.reader import load
    from .render import console, frame_table

    try:
        split_bytes = units.parse_bytes(split)
    except ValueError as e:
        raise SpecError("--split", str(e)) from None
    with load(db) as res:
        flows = res.monitor(run, link=link, direction=direction, split_bytes=split_bytes)
    classes = monitor.size_class_summary(flows)
    if as_json:
        click.echo(json.dumps({"flows": flows.to_dicts(), "size_classes": classes.to_dicts()}, indent=2))
        return
    out = console()
    out.print(frame_table(flows, title=f"Flows seen on {link}_{direction}"))
    out.print(frame_table(classes, title=f"By size (large: more than {split_bytes} bytes seen)"))


def _capture_file_options(command: Any) -> Any:
    """The run, store, link, direction and output file of a command that writes a captured link."""
    options = (_run_argument, db_option, _link_option, _direction_option,
               click.option("-o", "--output", type=click.Path(path_type=Path), required=True))
    for option in reversed(options):
        command = option(command)
    return command


@results_group.command("csv", short_help="A captured link's packets as CSV.")
@_capture_file_options
@click.option("--no-header", is_flag=True, help="No header line (exactly what tshark -T fields prints).")
def results_csv(run: str, db: Path, link: str, direction: str, output: Path, no_header: bool) -> None:
    """A captured link as CSV with seed 000's tshark fields."""
    from ..store.reader import load

    writable_file("--output", output)
    with load(db) as res:
        n = res.write_capture_csv(run, output, link=link, direction=direction, header=not no_header)
    click.echo(f"{n} packets -> {output}")


@results_group.command("pcap", short_help="A captured link's packets as a pcap file.")
@_capture_file_options
@click.option("--full-payload", is_flag=True, help="Write the (zero) payload bytes too, not only the headers.")
def results_pcap(run: str, db: Path, link: str, direction: str, output: Path, full_payload: bool) -> None:
    """A captured link as a pcap file (IPv4 + TCP headers) for tshark and Wireshark."""
    from ..store.reader import load

    writable_file("--output", output)
    with load(db) as res:
        n = res.write_pcap(run, output, link=link, direction=direction, full_payload=full_payload)
    click.echo(f"{n} packets -> {output}")
