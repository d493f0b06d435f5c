"""`bufferlab plot KIND RUN... [-o FILE.pdf|.svg|.png]`: the figures of `bufferlab.plots` from the
command line. Anything missing (a run, a series, a capture) is one line ``error: <field>: <reason>``
naming what to add to the spec, exit status 2, and no file written.

The command lives in `cli`, not in the `plots` package: importing anything of `plots` loads the
whole figure API (numpy, polars), which `bufferlab --help` must not pay for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .options import db_option

__all__ = ["plot_command"]


def _names(values: tuple[str, ...]) -> list[str] | None:
    """Repeated or comma-separated names (``--flows a,b --flows c``); None when not given."""
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


def _size(text: str | None) -> tuple[float, float] | None:
    from ..plots.common import PlotError

    if text is None:
        return None
    try:
        width, height = (float(x) for x in text.lower().split("x"))
    except ValueError:
        raise PlotError("--size", f'"{text}" is not WIDTHxHEIGHT in inches (e.g. 7x5)') from None
    if width <= 0 or height <= 0:
        raise PlotError("--size", f'"{text}": width and height must be positive')
    return width, height


@click.command("plot")
@click.argument("kind", metavar="KIND")
@click.argument("targets", metavar="RUN...", nargs=-1, required=True)
@db_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Figure file: .pdf, .svg or .png (default figures/<kind>-<run>.pdf).")
@click.option("--flows", multiple=True, help="Flow names or patterns, comma-separated (default: the first 10).")
@click.option("--links", multiple=True, help="Links (their forward direction) or channels, comma-separated "
                                              "(default: the bottleneck).")
@click.option("--from", "start", default=None, help='Start of the time window, e.g. "5s".')
@click.option("--to", "end", default=None, help='End of the time window, e.g. "12.5s".')
@click.option("--quantities", multiple=True, help="timeseries: cwnd, in_flight, srtt, throughput, delivery_rate, "
                                                   "pacing_rate, queue, queue_bytes, sojourn, link_rate, drops.")
@click.option("--source", type=click.Choice(["monitor", "flows"]), default="monitor", show_default=True,
              help="cdf: the middlebox monitor of a captured link, or the flow table.")
@click.option("--link", default=None, help="cdf: the captured link (default: the bottleneck's).")
@click.option("--direction", type=click.Choice(["forward", "backward"]), default="forward", show_default=True)
@click.option("--split", default="100KB", show_default=True, help="cdf: size that separates small and large flows.")
@click.option("--x", "x_axis", default=None, help="sweep: the spec key on the x axis, e.g. topology.queue.")
@click.option("--metric", default=None, help="sweep: a flow, link or network metric, e.g. mean_throughput_l4.")
@click.option("--by", default=None, help="sweep: a second spec key, one line per value.")
@click.option("--size", "size_text", default=None, help="Figure size in inches, WIDTHxHEIGHT (e.g. 7x5).")
@click.option("--dpi", type=click.IntRange(10, 1200), default=None, show_default="the figures' own, 150",
              help="PNG resolution.")
def plot_command(kind: str, targets: tuple[str, ...], db: Path, output: Path | None, flows: tuple[str, ...],
                 links: tuple[str, ...], start: str | None, end: str | None, quantities: tuple[str, ...],
                 source: str, link: str | None, direction: str, split: str, x_axis: str | None, metric: str | None,
                 by: str | None, size_text: str | None, dpi: int | None) -> None:
    """Draw a figure of stored runs: KIND is one of timeseries, operating-point,
    inflight, ecdf, plane, cdf, sweep, cwnd (the guide "Figures and the report" shows each)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from ..plots import KINDS, PlotError, save
    from ..plots.common import DPI, check_output

    if kind not in KINDS:
        raise PlotError("KIND", f'unknown kind "{kind}" (known: {", ".join(KINDS)})')
    path = check_output(output or Path("figures") / f"{kind}-{targets[0][:12]}.pdf")
    options: dict[str, Any] = {
        "flows": _names(flows), "links": _names(links), "start": start, "end": end,
        "quantities": _names(quantities), "source": source, "link": link, "direction": direction,
        "split": split, "x": x_axis, "metric": metric, "by": by, "size": _size(size_text),
    }
    fig = KINDS[kind].draw(db, list(targets), options)
    save(fig, path, dpi=dpi or DPI)
    click.echo(f"{kind} -> {path}")
