"""The command line's rich output: its console, a run summary (the human face of `--json`), the
metric catalogue's tables in ccperf's layout (one row per metric, one column per flow / link /
`net`), and DataFrames."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analysis.summary import RunSummary

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["console", "print_summary", "render_summary", "RenderedSummary", "summary_tables", "metric_tables", "frame_table",
           "rows_table"]

DASH = "—"
# Runs with traffic generators have thousands of flows: the table shows the first ones.
MAX_FLOW_ROWS = 40


def console(width: int = 160, **options: Any) -> Console:
    """A console for the command's output: the terminal's width, or on a pipe a fixed, roomy
    `width` instead of rich's 80-column default."""
    return Console(width=None if sys.stdout.isatty() else width, **options)


def _num(value: float | None, fmt: str) -> str:
    return DASH if value is None else format(value, fmt)


def _pct(value: float | None, digits: int = 2) -> str:
    return DASH if value is None else f"{value * 100:.{digits}f}%"


def summary_tables(summary: RunSummary) -> list[Table]:
    flows = Table(title="Flows", title_justify="left")
    for header in ("flow", "path", "goodput Mb/s", "loss rate", "retrans", "RTOs", "mean srtt ms", "completion s"):
        flows.add_column(header, justify="left" if header in ("flow", "path") else "right")
    for f in summary.flows[:MAX_FLOW_ROWS]:
        # Names are the user's text: "[...]" in one is not rich markup.
        flows.add_row(escape(f.name), escape(f"{f.src} → {f.dst}"), _num(f.goodput_mbps, ".3f"), _pct(f.loss_rate, 3),
                      str(f.retransmissions), str(f.rtos), _num(f.mean_srtt_ms, ".3f"),
                      _num(f.completion_time_s, ".4f"))
    hidden = len(summary.flows) - MAX_FLOW_ROWS
    if hidden > 0:
        flows.caption = f"… and {hidden} more flows (all of them in --json and in the store's flows table)"
    tables = [flows]
    b = summary.bottleneck
    if b is not None:
        btl = Table(title="Bottleneck", title_justify="left")
        for header in ("channel", "rate Mb/s", "utilisation", "drops", "random losses", "mean queue pkts",
                       "max queue pkts", "mean sojourn ms"):
            btl.add_column(header, justify="left" if header == "channel" else "right")
        drops = f"{b.drops} + {b.aqm_drops} AQM" if b.aqm_drops else str(b.drops)
        if b.ce_marks:
            drops += f" ({b.ce_marks} CE marks)"
        btl.add_row(escape(b.channel), _num(b.rate_mbps, "g"), _pct(b.utilisation), drops, str(b.random_losses),
                    _num(b.mean_queue_packets, ".2f"), str(b.max_queue_packets), _num(b.mean_sojourn_ms, ".3f"))
        if b.queue is not None:
            btl.caption = f"queue: {escape(b.queue)}"
            btl.caption_justify = "left"
        tables.append(btl)
    return tables


def _summary_console() -> Console:
    """A console on stdout for the summary. Piped output gets a fixed, roomy width instead of
    rich's 80-column default. No ":name:" in a name (of the scenario, the store, a flow or a
    host) becomes an emoji, and rich's table of emoji codes is not loaded."""
    return console(132, emoji=False)


@dataclass(frozen=True)
class RenderedSummary:
    """A summary rendered for `console` (its width and colours) but not printed yet."""

    console: Console
    text: str

    def print(self) -> None:
        """Write the text where the console prints, as its own printing would (a reader that went
        away, as in `bufferlab run ... | head`, ends the command quietly with status 1)."""
        try:
            self.console.file.write(self.text)
            self.console.file.flush()
        except BrokenPipeError:
            self.console.on_broken_pipe()


def render_summary(summary: RunSummary, *, scenario: str, db: str) -> RenderedSummary:
    """What `print_summary` prints on stdout, rendered now (in any thread) to be printed later:
    `bufferlab run` renders it while the run is being stored and prints it once stored."""
    console = _summary_console()
    with console.capture() as captured:
        print_summary(summary, scenario=scenario, db=db, console=console)
    return RenderedSummary(console, captured.get())


def print_summary(summary: RunSummary, *, scenario: str, db: str, console: Console | None = None) -> None:
    console = console or _summary_console()
    # Rich colours numbers, paths and the like in a printed line; without colours (a pipe, a
    # file) that shows nothing, so it is skipped (and its patterns are not compiled).
    highlight = console.color_system is not None
    origin = "served from the store" if summary.from_store else "simulated and stored"
    console.print(f"[bold]{escape(scenario)}[/bold]: {summary.simulated_s:g} s simulated, seed {summary.seed}, "
                  f"engine {summary.engine_version}; {origin} ({escape(db)}, run {summary.run_id[:12]})",
                  highlight=highlight)
    if not summary.from_store:
        console.print(f"wall time {summary.wall_time_s:.3f} s, {summary.events} events", highlight=highlight)
    for table in summary_tables(summary):
        console.print(table)
    if summary.bottleneck is None:
        console.print("no bottleneck: no rate-limited link carried traffic", highlight=highlight)
    for note in summary.notes:
        console.print(f"note: {escape(note)}", highlight=highlight)


def _cell(value: object) -> str:
    if value is None:
        return DASH
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 1e7 else f"{value:.4g}"
    return escape(str(value))


# Entity columns per metric table: more (many flows or links) continue in further tables.
COLUMNS_PER_TABLE = 6


def metric_tables(columns: Mapping[str, Sequence[object]], catalogue: Mapping[str, tuple[str, str]], *, title: str,
                  column_names: str = "name", per_table: int = COLUMNS_PER_TABLE) -> list[Table]:
    """One row per metric of `catalogue` (with its unit), one column per row of a metric table
    (given column by column: name -> values), named by its `column_names` column: ccperf's
    layout, `per_table` columns to a table."""
    tables = []
    height = len(columns[column_names]) if column_names in columns else 0
    for start in range(0, max(height, 1), per_table):
        end = min(start + per_table, height)
        suffix = "" if height <= per_table else f" ({start + 1}-{end} of {height})"
        table = Table(title=title + suffix, title_justify="left")
        table.add_column("metric", justify="left", no_wrap=True)
        table.add_column("unit", justify="left", no_wrap=True)
        for name in columns.get(column_names, [])[start:end]:
            table.add_column(escape(str(name)), justify="right", overflow="fold")
        for metric, (unit, _) in catalogue.items():
            if metric in columns:
                table.add_row(metric, unit, *(_cell(v) for v in columns[metric][start:end]))
        tables.append(table)
    return tables


def frame_table(frame: pl.DataFrame, *, title: str | None = None) -> Table:
    """Any DataFrame as a rich table."""
    columns = [(column, dtype.is_numeric()) for column, dtype in frame.schema.items()]
    return _table(columns, frame.iter_rows(), title)


def rows_table(columns: Sequence[str], rows: Sequence[Sequence[object]], *, title: str | None = None) -> Table:
    """Rows of Python values (a query's, without a DataFrame) as a rich table; like
    `frame_table`, a column whose values are all numbers (or missing) is aligned right."""
    numeric = [_all_numbers([row[i] for row in rows]) for i in range(len(columns))]
    return _table(list(zip(columns, numeric)), rows, title)


def _all_numbers(values: Sequence[object]) -> bool:
    """Whether a column holds numbers only (missing values aside), and at least one."""
    present = [v for v in values if v is not None]
    return bool(present) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present)


def _table(columns: Sequence[tuple[str, bool]], rows: Iterable[Sequence[object]], title: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    for column, numeric in columns:
        table.add_column(escape(column), justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(_cell(v) for v in row))
    return table
