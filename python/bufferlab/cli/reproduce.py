"""`bufferlab reproduce NAME [--quick] [--workers N | --dask ADDRESS] [--out DIR]` and `--list`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import SpecError
from .options import MAX_WORKERS, Number, writable_folder

if TYPE_CHECKING:  # pragma: no cover
    from ..study.execute import Listener

__all__ = ["reproduce_command"]


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


@click.command("reproduce", short_help="Reproduce a paper's experiment and judge its claims.")
@click.argument("name", required=False)
@click.option("--list", "list_them", is_flag=True, help="What each reproduction is and how long it takes.")
@click.option("--quick", is_flag=True, help="A small variant that finishes in seconds (CI); default: the seed's scale.")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=Path("results") / "bufferlab.duckdb",
              show_default=True, help="DuckDB result store (runs already there are not simulated again).")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Where summary.md and the figures go (default: results/reproduce/NAME[-quick]).")
@click.option("--workers", type=Number(1, MAX_WORKERS, whole=True), default=None,
              help="Worker processes (default: one per core).")
@click.option("--dask", "dask_address", default=None, metavar="local|tcp://HOST:PORT",
              help="Run the studies on dask.distributed.")
def reproduce_command(name: str | None, list_them: bool, quick: bool, db: Path, out: Path | None,
                      workers: int | None, dask_address: str | None) -> int:
    """Run one seed's experiment: its studies (stored, resumable), figures (PDF, SVG, PNG) and a
    summary.md that puts each of the seed's observations next to what was measured."""
    from rich.markup import escape

    from ..experiments.registry import reproductions
    from ..experiments.base import reproduce
    from ..study.executors import make_executor
    from .render import console as new_console

    REPRODUCTIONS = reproductions()

    console = new_console(160, highlight=False)
    if list_them or name is None:
        if name is None and not list_them:
            raise SpecError("NAME", f"missing: name a reproduction ({', '.join(REPRODUCTIONS)}) or give --list")
        from rich.table import Table

        table = Table(title="bufferlab reproduce NAME [--quick]", title_justify="left")
        for column in ("name", "seed", "what", "--quick", "full"):
            table.add_column(column, overflow="fold")
        for r in REPRODUCTIONS.values():
            table.add_row(r.name, r.seed, r.title, _duration(r.quick_estimate_s), _duration(r.full_estimate_s))
        console.print(table)
        return 0
    if name not in REPRODUCTIONS:
        raise SpecError("NAME", f'unknown reproduction "{name}" (known: {", ".join(REPRODUCTIONS)})')
    repro = REPRODUCTIONS[name]
    out = writable_folder("--out", out or Path("results") / "reproduce" / (name + ("-quick" if quick else "")))
    extra = [*([f"--workers={workers}"] if workers else []), *([f"--dask={dask_address}"] if dask_address else [])]
    listener_for: Callable[[str], AbstractContextManager[Listener]] | None = None
    if sys.stderr.isatty():
        from .progress import progress_listener

        listener_for = progress_listener
    report = reproduce(repro, db, out, quick=quick, executor_factory=lambda: make_executor(workers, dask_address),
                       listener_for=listener_for, command_extra=extra)
    if report.interrupted:
        sys.stderr.write("error: interrupted: finished runs are stored; run the same command again to finish\n")
        return 130
    held = sum(o.holds is True for o in report.observations)
    differs = [o for o in report.observations if o.holds is False]
    unjudged = [o for o in report.observations if o.holds is None]
    met = sum(p.met for p in report.preconditions)
    console.print(f"[bold]{repro.title}[/bold]: {held} of {len(report.observations)} observations hold"
                  + (f", {len(differs)} differ" if differs else "")
                  + (f", {len(unjudged)} not judged" if unjudged else ""))
    console.print(f"  preconditions: {met} of {len(report.preconditions)} met")
    for p in report.preconditions:
        mark = "[green]met[/green]" if p.met else "[yellow]not met[/yellow]"
        console.print(f"    {escape(p.key)}: {escape(p.requirement)}; here {escape(p.measured)} → {mark}")
    for o in report.observations:
        if o.holds is None:
            mark = "[yellow]not judged[/yellow]" + (f": {escape(o.not_judged)}" if o.not_judged else "")
        else:
            mark = "[green]holds[/green]" if o.holds else "[red]differs[/red]"
        console.print(f"  {escape(o.key)}: {escape(o.claim)}: seed {escape(o.seed_value)}; here {escape(o.measured)} → "
                      f"{mark}" + (f" ({escape(o.difference)})" if o.difference else "")
                      + (f" [dim](tolerance: {escape(o.tolerance)})[/dim]" if o.holds is not None and o.tolerance else ""))
    console.print(f"summary: {report.summary}; figures: {len(report.figures)} files in {out}")
    return 0
