"""`bufferlab report [DB] [-o DIR]` and `bufferlab serve [DB] [--port N]`: the store as an argument, or by
`--db FILE` as every other command takes it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import SpecError, writing
from ..store import DEFAULT_DB
from ..report import DEFAULT_OUT
from .options import Number, writable_folder

__all__ = ["report_command", "serve_command"]

_db_argument = click.argument("db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                              required=False)
_db_flag = click.option("--db", "db_flag", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help=f"The store, as the other commands take it (the same as DB).  [default: {DEFAULT_DB}]")


def _store(db: Path | None, db_flag: Path | None) -> Path:
    """The store given as DB or as --db (once), else the default; it must exist."""
    if db is not None and db_flag is not None and db != db_flag:
        raise SpecError("--db", f"the store is given twice, as DB ({db}) and as --db ({db_flag}): give one")
    field, store = ("--db", db_flag) if db_flag is not None else ("DB", db if db is not None else Path(DEFAULT_DB))
    if not store.exists():
        raise SpecError(field, f"no store at {store} (run something first: bufferlab run SCENARIO.toml --db {store})")
    return store


def _check_out(out: Path) -> None:
    writable_folder("--output", out)


@click.command("report", short_help="Write an HTML report of a store.")
@_db_argument
@_db_flag
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="Folder of the site (index.html inside).")
@click.option("--no-figures", is_flag=True, help="Leave out figures and charts (faster for big stores).")
@click.option("--force", is_flag=True, help="Rebuild every page, not only those whose runs or studies changed.")
def report_command(db: Path | None, db_flag: Path | None, out: Path, no_figures: bool, force: bool) -> None:
    """Write an HTML report of the store DB (or --db): an index of studies and runs, a page per run
    (its command, flows, metric tables, figures), a page per study and per reproduction."""
    from ..report.site import build_site

    db = _store(db, db_flag)
    _check_out(out)
    with writing(out):
        report = build_site(db, out, figures=not no_figures, force=force)
    click.echo(f"{report.runs} run(s), {report.studies} study(ies), {report.reproductions} reproduction(s); "
               f"{len(report.rebuilt)} page(s) written -> {out / 'index.html'}")
    for note in report.notes[:20]:
        click.echo(f"note: {note}", err=True)


@click.command("serve", short_help="Serve a store's HTML report on this machine, kept up to date.")
@_db_argument
@_db_flag
@click.option("--port", type=Number(0, 65535, whole=True), default=8000, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="Folder the report is built in.")
@click.option("--interval", type=Number(0.1, 3600), default=2.0, show_default=True,
              help="Seconds between looks at the store for new runs.")
@click.option("--no-figures", is_flag=True, help="Leave out figures and charts.")
def serve_command(db: Path | None, db_flag: Path | None, port: int, out: Path, interval: float,
                  no_figures: bool) -> None:
    """Serve the report of the store DB (or --db) on http://127.0.0.1:PORT/ (this machine only),
    rebuilding its pages when the store gains runs. Ctrl-C stops it."""
    from ..report.serve import LOOPBACK, Watcher, make_server
    from ..report.site import build_site

    db = _store(db, db_flag)
    _check_out(out)
    with writing(out):
        build_site(db, out, figures=not no_figures)
    try:
        server = make_server(out, port)
    except OSError as e:
        raise SpecError("--port", f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from None

    def rebuild() -> None:
        report = build_site(db, out, figures=not no_figures)
        click.echo(f"rebuilt: {len(report.rebuilt)} page(s) ({report.runs} runs)")

    watcher = Watcher(db, rebuild, interval_s=interval,
                      on_error=lambda e: click.echo(f"warning: rebuild failed: {e}", err=True))
    watcher.start()
    click.echo(f"serving {out}/ on http://{LOOPBACK}:{server.server_port}/ (Ctrl-C stops)")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        watcher.stop()
        server.server_close()
