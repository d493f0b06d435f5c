"""`bufferlab plot KIND RUN... [-o FILE.pdf|.svg|.png]`: the figures of `bufferlab.plots` from the
command line. Anything missing (a run, a series, a capture) is one line ``error: <field>: <reason>``
naming what to add to the spec, exit status 2, and no file written.

The command lives in `cli`, not in the `plots` package: importing anything of `plots` loads the
whole figure API (numpy, polars), which `bufferlab --help` must not pay for."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from ..errors import writing
from .options import Number, db_option, figure_output, listed

__all__ = ["plot_command"]


def _names(option: str, values: tuple[str, ...]) -> list[str] | None:
    """Repeated or comma-separated names (``--flows a,b --flows c``); None when not given."""
    return listed(option, values, what="name") if values else None


# The largest figure drawn, in inches a side, and in pixels a side of a PNG: beyond them the
# renderer refuses (Agg draws at most 2^16 pixels a side) or needs gigabytes for one image.
MAX_INCHES = 100.0
MAX_PIXELS = 10_000


def _size(text: str | None, png_dpi: float | None) -> tuple[float, float] | None:
    """--size WIDTHxHEIGHT in inches: finite, positive, and for a PNG (`png_dpi` its resolution)
    no more pixels a side than `MAX_PIXELS`."""
    from ..plots.common import PlotError

    if text is None:
        return None
    try:
        width, height = (float(x) for x in text.lower().split("x"))
    except ValueError:
        raise PlotError("--size", f'"{text}" is not WIDTHxHEIGHT in inches (e.g. 7x5)') from None
    if not all(math.isfinite(x) and 1.0 <= x <= MAX_INCHES for x in (width, height)):
        raise PlotError("--size", f'"{text}": width and height must be from 1 to {MAX_INCHES:g} inches')
    if png_dpi is not None and max(width, height) * png_dpi > MAX_PIXELS:
        raise PlotError("--size", f'"{text}" at {png_dpi:g} dpi is {max(width, height) * png_dpi:.0f} pixels a side, '
                                  f"more than a PNG of {MAX_PIXELS} (lower --size or --dpi)")
    return width, height


@click.command("plot", short_help="Draw a figure of stored runs or a study.")
@click.argument("kind", metavar="KIND")
@click.argument("targets", metavar="RUN...", nargs=-1, required=True)
@db_option
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Figure file: .pdf, .svg or .png (default figures/<kind>-<run>.pdf).")
@click.option("--flows", multiple=True, help="Flow names or patterns, comma-separated (default: the first 10; "
                                              "delay: the datagram flows).")
@click.option("--links", multiple=True, help="Links (their forward direction) or channels, comma-separated "
                                              "(default: the bottleneck).")
@click.option("--from", "start", default=None, help='Start of the time window, e.g. "5s".')
@click.option("--to", "end", default=None, help='End of the time window, e.g. "12.5s".')
@click.option("--quantities", multiple=True, help="timeseries: cwnd, in_flight, srtt, throughput, delivery_rate, "
                                                   "pacing_rate, ecn_alpha (DCTCP's α), queue, queue_bytes, sojourn, "
                                                   "link_rate, drops, and the AQM's aqm_probability, aqm_signal, "
                                                   "aqm_state, aqm_count, ce_marks, aqm_drops, tail_drops.")
@click.option("--source", type=click.Choice(["monitor", "flows"]), default="monitor", show_default=True,
              help="cdf: the middlebox monitor of a captured link, or the flow table.")
@click.option("--link", default=None, help="cdf: the captured link (default: the bottleneck's).")
@click.option("--direction", type=click.Choice(["forward", "backward"]), default="forward", show_default=True)
@click.option("--split", default="100KB", show_default=True, help="cdf: size that separates small and large flows.")
@click.option("--x", "x_axis", default=None, help="sweep: the spec key on the x axis, e.g. topology.queue.")
@click.option("--metric", default=None, help="sweep: a flow, link or network metric, e.g. mean_throughput_l4.")
@click.option("--by", default=None, help="sweep: a second spec key, one line per value.")
@click.option("--size", "size_text", default=None,
              help="Figure size in inches, WIDTHxHEIGHT (e.g. 7x5; each side from 1 to 100).")
@click.option("--dpi", type=Number(10, 1200, whole=True), default=None, show_default="the figures' own, 150",
              help="PNG resolution.")
def plot_command(kind: str, targets: tuple[str, ...], db: Path, output: Path | None, flows: tuple[str, ...],
                 links: tuple[str, ...], start: str | None, end: str | None, quantities: tuple[str, ...],
                 source: str, link: str | None, direction: str, split: str, x_axis: str | None, metric: str | None,
                 by: str | None, size_text: str | None, dpi: int | None) -> None:
    """Draw a figure of stored runs: KIND is one of timeseries, operating-point,
    inflight, ecdf, plane, cdf, delay, sweep, cwnd (the guide "Figures and the report" shows each)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from ..plots import KINDS, PlotError
    from ..plots.common import DPI

    if kind not in KINDS:
        raise PlotError("KIND", f'unknown kind "{kind}" (known: {", ".join(KINDS)})')
    if any(not t.strip() for t in targets):
        raise PlotError("RUN", "empty run id (give a run id or a unique prefix, see bufferlab results list)")
    path = figure_output("--output", output or Path("figures") / f"{kind}-{targets[0][:12]}.pdf")
    options: dict[str, Any] = {
        "flows": _names("--flows", flows), "links": _names("--links", links), "start": start, "end": end,
        "quantities": _names("--quantities", quantities), "source": source, "link": link, "direction": direction,
        "split": split, "x": x_axis, "metric": metric, "by": by,
        "size": _size(size_text, (dpi or DPI) if path.suffix.lower() == ".png" else None),
    }
    fig = KINDS[kind].draw(db, list(targets), options)
    _save(fig, path, dpi or DPI, size_text)
    click.echo(f"{kind} -> {path}")


def _save(fig: Any, path: Path, dpi: int, size_text: str | None) -> None:
    """Write the figure; one whose --size leaves its panels no room (matplotlib's layout then
    collapses them and warns) is refused, and no file of it is left."""
    import warnings

    from ..plots import PlotError, save

    existed, missing = path.exists(), [p for p in path.parents if not p.exists()]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="constrained_layout not applied", category=UserWarning)
        try:
            with writing(path):
                save(fig, path, dpi=dpi)
        except UserWarning:
            if not existed:
                path.unlink(missing_ok=True)
            for folder in missing:  # deepest first: the folders `save` made for it
                folder.rmdir()
            raise PlotError("--size", f'"{size_text}" leaves the panels of the figure no room (give a larger --size)'
                            ) from None
