"""The report: a static site of a result store, built from `bufferlab.load(db)` only.

    out/index.html                      studies, reproductions and runs, with search and filter
    out/runs/<id>/index.html            one run in seed 001's shape; spec.toml reproduces it
    out/studies/<slug>/index.html       one study: its points, metrics vs the swept axes, CDFs
    out/reproductions/<name>/index.html a reproduction's observations next to the seed's
    out/assets/                         the CSS and JS every page uses (no network needed)

Pages of runs and studies are rebuilt only when what they show changed (a stamp beside each
page), so `bufferlab serve` can rebuild after every new run. Every file is written atomically
(a temporary file renamed into place): a page being served is never half written.
Files and folders get the modes the umask leaves, as `open()` and `mkdir` give them, so a web
server can read them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from . import DEFAULT_OUT
from ..errors import SpecError
from ..store.reader import Results, load, series_stored
from ..analysis.aggregate import axis_label, distinct_axes
from ..analysis.summary import notes_of_counts
from .tables import MetricTable, best_positions, better, format_value, run_metric_tables

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["build_site", "BuildReport", "run_dir_name", "study_dir_name", "DEFAULT_OUT"]

PACKAGE = Path(__file__).resolve().parent
# A run's interactive charts, of the first flows and the bottleneck: the quantities of `bufferlab
# plot timeseries` (cwnd, sRTT, throughput, queue) and of seed 001's operating point (in flight,
# sRTT, throughput). Drawn in the browser from the page's JSON, they replace static figures of
# the same series, which are slow to draw and save.
CHART_QUANTITIES = ("cwnd", "in_flight", "srtt", "throughput", "queue")
# Charts of what an AQM and an ECN controller do over time, drawn where they ran: a chart whose
# series hold no value (a FIFO keeps no AQM state, Reno no α) or only zeros (no CE mark, no AQM
# drop) is left out without a word, as the run had nothing of the kind.
AQM_CHART_QUANTITIES = ("aqm_probability", "aqm_signal", "aqm_state", "aqm_count", "ce_marks", "aqm_drops",
                        "ecn_alpha")
# Why a chart whose stored series hold no value is left out.
EMPTY_CHART_REASONS = {"srtt": "no flow took an RTT sample (datagram flows take none)"}
DEFAULT_EMPTY_REASON = "its stored series hold no value"
# Points per line in an interactive chart (the static figure keeps matplotlib's own decimation).
CHART_POINTS = 2000
# A study page compares its points on these metrics (network, bottleneck and mean flow metrics).
STUDY_METRICS = ("mean_agg_throughput_l4", "utilization_l1", "mean_qdisc_delay_l2", "total_qdisc_drops_l2",
                 "loss_rate_l4", "mean_srtt_l4", "mean_jains_fairness_throughput_l4")
STUDY_FIGURE_METRICS = ("utilization_l1", "mean_qdisc_delay_l2", "mean_jains_fairness_throughput_l4")
# CDFs overlay at most this many runs (the first seed of the first points).
MAX_CDF_RUNS = 8
# ... and only when a run has this many flows: fewer values make no distribution worth a figure.
MIN_CDF_FLOWS = 5
MAX_FLOW_ROWS = 40
# The columns of `Results.study_runs` that are not axes.
STUDY_RUN_COLUMNS = ("run_id", "point", "seed", "status", "error")
# Part of every page's stamp: a page written by a bufferlab whose pages differ from today's (their
# layout, or the 0600 files of mkstemp before version 2) is rebuilt once, even if its runs did not
# change. Raise it whenever what a page shows or how it is written changes.
PAGES_VERSION = 3


@dataclass
class BuildReport:
    """What a build wrote: page counts, pages rebuilt, and figures that could not be drawn."""

    out: Path
    runs: int = 0
    studies: int = 0
    reproductions: int = 0
    rebuilt: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_dir_name(run_id: str) -> str:
    return run_id[:16]


def study_dir_name(study: str) -> str:
    """A folder name for a study name (which may hold "/" and anything else): readable, and unique
    by a short hash of the exact name."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", study).strip("-.")[:60] or "study"
    return f"{readable}-{hashlib.sha1(study.encode()).hexdigest()[:6]}"


def _beside(path: Path) -> Path:
    """A fresh name next to `path` for writing it aside: hidden, unique to this write, with
    `path`'s suffix (which picks a figure's format)."""
    return path.with_name(f".tmp-{secrets.token_hex(6)}-{path.name}")


@contextmanager
def _written_aside(path: Path) -> Iterator[Path]:
    """Yield a path to write `path`'s new content to, then rename it into place: whole or not at
    all, so a page being served is never half written. The file is created as `open()` creates
    one, with the modes the umask leaves (0644 under umask 022), unlike `tempfile.mkstemp`'s 0600
    that a web server running as another user could not read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _beside(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` aside, then rename it into place (`_written_aside`)."""
    with _written_aside(path) as tmp, open(tmp, "xb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(PACKAGE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["value"] = format_value
    return env


# --- reading the store ---------------------------------------------------------------------------

def _runs(res: Results) -> pl.DataFrame:
    return res.query(
        "SELECT r.run_id, r.name, r.status, r.created_at, r.seed, r.end_ns, r.events, r.wall_time_s, "
        "r.engine_version, r.study_id, (SELECT count(*) FROM flows f WHERE f.run_id = r.run_id) AS flows "
        "FROM runs r ORDER BY r.created_at, r.run_id")


def _studies(res: Results) -> pl.DataFrame:
    return res.query("SELECT study_id, created_at, description, kind, axes_json, "
                     "(SELECT count(*) FROM runs r WHERE r.study_id = s.study_id) AS runs "
                     "FROM studies s ORDER BY study_id")


def _stamp_matches(page_dir: Path, stamp: str) -> bool:
    path = page_dir / ".stamp"
    return path.exists() and path.read_text(encoding="utf-8") == stamp and (page_dir / "index.html").exists()


def _without_nulls(value: Any) -> Any:
    """A JSON spec for TOML, which has no null: absent keys mean the same as null ones."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def spec_toml(user_spec: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(_without_nulls(user_spec))


def _json_numbers(values: np.ndarray) -> list[float | None]:
    """Values for JSON, which has no NaN: rounded to 6 decimals, null where not finite (rounded as
    one array: a report's charts hold ~600 000 numbers)."""
    return [v if math.isfinite(v) else None for v in np.round(values.astype(np.float64), 6).tolist()]


# --- figures -------------------------------------------------------------------------------------

def _figure(notes: list[str], what: str, draw: Callable[[], Figure], path: Path) -> str | None:
    """Draw and save one figure; a figure the store cannot give (no series recorded, no
    capture) is left out with a note saying what to record."""
    try:
        fig = draw()
    except SpecError as e:
        notes.append(f"{what}: {e}")
        return None
    return _save_figure(fig, path)


def _save_figure(fig: Figure, path: Path) -> str:
    """Save a drawn figure (whole or not at all: written aside, then renamed); its file name."""
    from ..plots import save

    with _written_aside(path) as tmp:
        save(fig, tmp)
    return path.name


def _finite(values: Iterable[float | None]) -> bool:
    return any(v is not None for v in values)


def _chart_title(quantity: str) -> str:
    """A chart's title without its unit: "sRTT" of "sRTT (ms)"."""
    from ..plots.series import QUANTITIES

    return QUANTITIES[quantity].label.split(" (")[0]


def _charts(res: Results, run_id: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The run's time series as JSON for the interactive charts (one per quantity), and one line
    for each chart left out, saying why: a chart with nothing to show is not drawn."""
    from ..plots.common import run_info, time_window
    from ..plots.series import FLOW_QUANTITIES, LINK_QUANTITIES, default_flows, default_links, flow_lines, link_lines

    info = run_info(res, run_id)
    window = time_window()
    lines: dict[str, Any] = {}
    missing: dict[str, str] = {}  # flow or link charts, and why their series are not there
    flow_quantities = [FLOW_QUANTITIES[q] for q in CHART_QUANTITIES if q in FLOW_QUANTITIES]
    link_quantities = [LINK_QUANTITIES[q] for q in CHART_QUANTITIES if q in LINK_QUANTITIES]
    flow_aqm = [FLOW_QUANTITIES[q] for q in AQM_CHART_QUANTITIES if q in FLOW_QUANTITIES]
    link_aqm = [LINK_QUANTITIES[q] for q in AQM_CHART_QUANTITIES if q in LINK_QUANTITIES]
    try:
        flows, _ = default_flows(res, info, None)
        lines.update(flow_lines(res, info, flow_quantities + flow_aqm, flows, window))
    except SpecError as e:
        missing["flow"] = e.reason
    try:
        lines.update(link_lines(res, info, link_quantities + link_aqm, default_links(res, info, None), window))
    except SpecError as e:
        missing["link"] = e.reason
    if len(missing) == 2:
        return [], ['no time series stored for this run, so no charts (record them: [record] interval = "100ms")']
    left_out = [f"no {', '.join(_chart_title(q.name) for q in quantities)} chart{'s' if len(quantities) > 1 else ''}: "
                f"{missing[kind]}"
                for kind, quantities in (("flow", flow_quantities), ("link", link_quantities)) if kind in missing]
    charts = []
    for name in CHART_QUANTITIES:
        if name not in lines:
            continue
        chart = _chart(name, lines[name])
        if chart is None:
            left_out.append(f"no {_chart_title(name)} chart: {EMPTY_CHART_REASONS.get(name, DEFAULT_EMPTY_REASON)}")
        else:
            charts.append(chart)
    for name in AQM_CHART_QUANTITIES:
        if any(np.nan_to_num(line.y).any() for line in lines.get(name, ())):
            chart = _chart(name, lines[name])
            if chart is not None:
                charts.append(chart)
    return charts, left_out


def _chart(name: str, lines: Sequence[Any]) -> dict[str, Any] | None:
    """One interactive chart of `lines` (`plots.series.Line`), each decimated to `CHART_POINTS`;
    None when no line has a value to show."""
    from ..plots.common import decimate, flow_colour
    from ..plots.series import QUANTITIES

    series = []
    for k, line in enumerate(lines):
        x, y = decimate(line.t_s, line.y, CHART_POINTS)
        colour = flow_colour(line.index) if QUANTITIES[name].kind == "flow" else ("#222222", "#777777")[k % 2]
        series.append({"name": line.name, "colour": colour, "x": _json_numbers(x), "y": _json_numbers(y)})
    if not any(_finite(s["y"]) for s in series):
        return None
    return {"id": name, "title": QUANTITIES[name].label, "x_label": "time (s)", "series": series}


# --- pages ---------------------------------------------------------------------------------------

def _flow_rows(res: Results, run_id: str, spec: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    frame = res.query("SELECT flow, name, src, dst, start_ns, completed_ns, bytes_acked, segments_retransmitted, "
                      "rtos, goodput_bps, generator FROM flows WHERE run_id = ? ORDER BY flow", [run_id])
    engine_flows = spec.get("flows", [])
    rows = []
    for row in frame.head(MAX_FLOW_ROWS).iter_rows(named=True):
        listed = engine_flows[row["flow"]] if row["generator"] is None and row["flow"] < len(engine_flows) else {}
        cca = listed.get("cca") if isinstance(listed, dict) else None
        if isinstance(cca, dict):  # a controller with options: {"kind": "cubic", ...}
            cca = cca.get("kind")
        rows.append({**row, "cca": cca or "—"})
    return rows, frame.height - min(frame.height, MAX_FLOW_ROWS)


def _parameters(user_spec: dict[str, Any]) -> list[tuple[str, str]]:
    from ..plots.common import flatten

    return [(k, v) for k, v in flatten(user_spec).items() if k not in ("name", "description")]


def _build_run(env: Any, res: Results, run: dict[str, Any], out: Path, study_dirs: dict[str, str],
               report: BuildReport, figures: bool) -> None:
    run_id = run["run_id"]
    page_dir = out / "runs" / run_dir_name(run_id)
    stamp = f"{PAGES_VERSION}|{run['created_at']}|{run['status']}|{run['study_id']}|{int(figures)}"
    if _stamp_matches(page_dir, stamp):
        return
    page_dir.mkdir(parents=True, exist_ok=True)
    user_spec = res.user_spec(run_id)
    engine_spec = res.spec(run_id)
    write_atomic(page_dir / "spec.toml", spec_toml(user_spec))
    command = "bufferlab run spec.toml" + (f" --study {_shell_word(run['study_id'])}" if run["study_id"] else "")
    tables: list[MetricTable] = []
    # Charts left out are the spec's choice (what it recorded), not a failure: said on the page,
    # not on the console, where a sweep's hundreds of such runs would print a line each.
    notes: list[str] = []
    charts: list[dict[str, Any]] = []
    if run["status"] == "complete":
        tables = run_metric_tables(res.table("flow_metrics", run_id), res.table("link_metrics", run_id),
                                   res.table("network_metrics", run_id))
        if figures and not series_stored(user_spec):
            notes.append("no charts: its time series were not stored ([record] store_series = false)")
        elif figures:
            charts, notes = _charts(res, run_id)
        # What `bufferlab run` notes under its summary (`analysis.summary.notes_of`), first.
        counts = res.recovery_counts([run_id])
        notes = notes_of_counts(counts.flows, counts.raising_flows, counts.recoveries, counts.raised) + notes
    for stale in page_dir.glob("*.png"):  # the static figures older reports drew here
        stale.unlink()
    flows, hidden_flows = _flow_rows(res, run_id, engine_spec)
    html = env.get_template("run.html").render(
        root="../../", run=run, short_id=run_id[:12], description=user_spec.get("description"),
        parameters=_parameters(user_spec), command=command, flows=flows, hidden_flows=hidden_flows,
        tables=tables, charts=charts, notes=notes,
        study_href=(f"../../studies/{study_dirs[run['study_id']]}/index.html" if run["study_id"] in study_dirs
                    else None))
    write_atomic(page_dir / "index.html", html)
    write_atomic(page_dir / ".stamp", stamp)
    report.rebuilt.append(f"runs/{run_dir_name(run_id)}")


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _point_tables(frame: pl.DataFrame, axes: Sequence[str], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Per-point tables of a study: one per controller when an axis sets the CCA, else one; each
    metric column with its best mean in bold. `axes` are the axes worth a column
    (`distinct_axes`), `labels` their headings."""
    cca_axes = [a for a in axes if a.endswith("cca") or ".cca" in a]
    group_axis = cca_axes[0] if cca_axes else None
    groups: Iterable[tuple[Any, pl.DataFrame]] = (
        ((key[0], part) for key, part in frame.group_by(group_axis, maintain_order=True)) if group_axis
        else [(None, frame)])
    shown_axes = [a for a in axes if a != group_axis]
    metrics = [m for m in STUDY_METRICS if m in frame.columns]
    tables = []
    for key, part in groups:
        rows = list(part.iter_rows(named=True))
        best = {m: best_positions([r[m] for r in rows], better(m)) for m in metrics}
        tables.append({
            "title": f"{group_axis} = {key}" if group_axis else "Points",
            "axes": [labels[a] for a in shown_axes], "metrics": metrics,
            "rows": [{"axes": [r[a] for a in shown_axes], "seeds": r["seeds"],
                      "cells": [{"mean": format_value(r[m]), "value": r[m],
                                 "ci": (f"[{format_value(r[m + '_ci_low'])}, {format_value(r[m + '_ci_high'])}]"
                                        if r.get(m + "_ci_low") is not None else ""),
                                 "best": i in best[m]} for m in metrics]} for i, r in enumerate(rows)],
        })
    return tables


def _has_interval(points: pl.DataFrame) -> bool:
    """Whether a study's table of points has a 95 % interval to show: a point needs two seeds or
    more for one (`analysis.aggregate`); with one seed its values are one run's."""
    return bool(points.height) and max(points["seeds"].to_list()) >= 2


def _build_study(env: Any, res: Results, study: dict[str, Any], runs: pl.DataFrame, out: Path, run_dirs: set[str],
                 repro_links: dict[str, tuple[str, str]], report: BuildReport, figures: bool) -> None:
    """A study's page; `runs` is `Results.study_runs` of it."""
    from .. import plots

    name = study["study_id"]
    page_dir = out / "studies" / study_dir_name(name)
    stamp = hashlib.sha1(json.dumps([PAGES_VERSION, runs.select("run_id", "status").rows(), int(figures),
                                     repro_links.get(name)], default=str).encode()).hexdigest()
    if _stamp_matches(page_dir, stamp):
        return
    page_dir.mkdir(parents=True, exist_ok=True)
    every_axis = res.study_axes(name)
    points = res.study(name)
    # The keys of a zipped axis that move together share a column (`distinct_axes`).
    kept = distinct_axes(runs, every_axis)
    axes = [axis for axis, _ in kept]
    labels = {axis: axis_label(axis, folded) for axis, folded in kept}
    notes: list[str] = []
    images: list[dict[str, str]] = []
    complete = runs.filter(pl.col("status") == "complete")
    interval = _has_interval(points)
    if figures and complete.height:
        if axes and points.height > 1:
            for metric in STUDY_FIGURE_METRICS:
                file = _figure(notes, f"sweep {metric}", functools.partial(plots.sweep, res, [name], metric=metric),
                               page_dir / f"sweep-{metric}.svg")
                if file is not None:
                    images.append({"file": file, "caption": f"{metric} against {axes[0]} " + (
                        "(95 % CI over seeds)" if interval else "(one seed per point, so no interval)")})
        first_seed = complete.unique("point", keep="first", maintain_order=True).head(MAX_CDF_RUNS)
        flows_per_run = res.query("SELECT count(*) AS n FROM flows WHERE run_id IN (SELECT unnest(?)) GROUP BY run_id",
                                  [first_seed["run_id"].to_list()])["n"].to_list()
        file = None if max(flows_per_run, default=0) < MIN_CDF_FLOWS else _figure(notes, "cdf", lambda: plots.cdf(res, first_seed["run_id"].to_list(), source="flows"),
                       page_dir / "cdf.svg")
        if file is not None:
            images.append({"file": file, "caption": f"CDFs of per-flow throughput and loss, overlaid "
                                                    f"({first_seed.height} point(s), first seed each)"})
    run_rows = [{**r, "href": (f"../../runs/{run_dir_name(r['run_id'])}/index.html"
                               if r["run_id"] and run_dir_name(r["run_id"]) in run_dirs else None)}
                for r in runs.iter_rows(named=True)]
    html = env.get_template("study.html").render(
        root="../../", study=study, axes=axes, axis_labels=[labels[a] for a in axes], runs=run_rows,
        tables=_point_tables(points, axes, labels) if axes else [], interval=interval,
        images=images, notes=notes, reproduction=repro_links.get(name))
    write_atomic(page_dir / "index.html", html)
    write_atomic(page_dir / ".stamp", stamp)
    report.rebuilt.append(f"studies/{study_dir_name(name)}")
    report.notes.extend(f"study {name}: {n}" for n in notes)


def _reproductions(res: Results, study_names: set[str]) -> list[dict[str, Any]]:
    """Every reproduction (`bufferlab reproduce`) whose studies are all in the store, with its
    preconditions and observations assessed from them (the same as its summary.md)."""
    try:
        from ..experiments.registry import reproductions
    except ImportError:  # a bufferlab without reproductions
        return []
    found = []
    for repro in reproductions().values():
        for quick in (True, False):
            studies = repro.study_names(quick)
            if not studies or not set(studies.values()) <= study_names:
                continue
            key = f"{repro.name}{'-quick' if quick else ''}"
            try:
                with res.one_connection():  # its studies' queries on one connection (see build_site)
                    assessment = repro.assess(res, studies)
                preconditions, observations, error = assessment.preconditions, assessment.observations, None
            except Exception as e:  # noqa: BLE001 - an incomplete study is shown, not fatal to the report
                preconditions, observations, error = [], [], f"{type(e).__name__}: {e}"
            found.append({"key": key, "repro": repro, "quick": quick, "studies": studies,
                          "preconditions": preconditions, "observations": observations, "error": error,
                          "held": sum(o.holds is True for o in observations),
                          "differ": sum(o.holds is False for o in observations)})
    return found


def _build_reproduction(env: Any, res: Results, r: dict[str, Any], out: Path, study_dirs: dict[str, str],
                        report: BuildReport, figures: bool) -> None:
    """A reproduction's page: its observations, its studies linked, and its own figures (the
    seed's, drawn by the reproduction from the store as `bufferlab reproduce` draws them)."""
    page_dir = out / "reproductions" / r["key"]
    states = [res.study_runs(s).select("run_id", "status").rows() for s in r["studies"].values()]
    stamp = hashlib.sha1(json.dumps([PAGES_VERSION, states, int(figures)], default=str).encode()).hexdigest()
    if _stamp_matches(page_dir, stamp):
        return
    page_dir.mkdir(parents=True, exist_ok=True)
    images: list[dict[str, str]] = []
    notes: list[str] = []
    if figures and r["error"] is None:
        try:
            drawn = r["repro"].draw(res, r["studies"])
        except Exception as e:  # noqa: BLE001 - as for the observations: shown, not fatal
            drawn = {}
            notes.append(f"figures: {type(e).__name__}: {e}")
        for stem, fig in drawn.items():
            images.append({"file": _save_figure(fig, page_dir / f"{stem}.png"), "caption": stem})
    html = env.get_template("reproduction.html").render(
        root="../../", r=r, images=images, notes=notes,
        study_hrefs={part: f"../../studies/{study_dirs[s]}/index.html" for part, s in r["studies"].items()})
    write_atomic(page_dir / "index.html", html)
    write_atomic(page_dir / ".stamp", stamp)
    report.rebuilt.append(f"reproductions/{r['key']}")


def _run_groups(runs: pl.DataFrame, study_runs: dict[str, pl.DataFrame]) -> list[dict[str, Any]]:
    """The index's runs, a table per study and one of the runs in none: a study's table has a
    column per axis whose value differs between its runs (the buffer of a buffer sweep), so
    that two runs can be told apart without opening them."""
    by_id = {r["run_id"]: {**r, "href": f"runs/{run_dir_name(r['run_id'])}/index.html"}
             for r in runs.iter_rows(named=True)}
    groups: list[dict[str, Any]] = []
    listed: set[str] = set()
    for name, points in study_runs.items():
        stored = points.filter(pl.col("run_id").is_in(list(by_id)))
        if stored.height == 0:
            continue
        kept = [(axis, folded) for axis, folded in distinct_axes(stored, [c for c in stored.columns
                                                                        if c not in STUDY_RUN_COLUMNS])
                if stored[axis].n_unique() > 1]
        groups.append({"study": name, "axes": [axis_label(axis, folded) for axis, folded in kept],
                       "rows": [{**by_id[r["run_id"]], "values": [r[axis] for axis, _ in kept]}
                                for r in stored.iter_rows(named=True)]})
        listed.update(stored["run_id"].to_list())
    alone = [row for run_id, row in by_id.items() if run_id not in listed]
    if alone:
        groups.append({"study": None, "axes": [], "rows": [{**row, "values": []} for row in alone]})
    return groups


def build_site(db: str | Path, out: str | Path = DEFAULT_OUT, *, figures: bool = True,
               force: bool = False) -> BuildReport:
    """Write (or bring up to date) the report of the store `db` in the folder `out`."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    out = Path(out)
    res = load(db)
    report = BuildReport(out=out)
    if force and out.exists():
        for stamp in out.glob("*/*/.stamp"):
            stamp.unlink()
    env = _environment()
    for asset in sorted((PACKAGE / "assets").iterdir()):
        if asset.is_file():
            target = out / "assets" / asset.name
            if not target.exists() or target.read_bytes() != asset.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(asset, target)
    # Each page's queries (about ten for a run's) share one connection, opened once rather than per
    # query. The store's lock is held for one
    # page at a time (seconds where its figures are drawn), so a writer waits at most that long.
    with res.one_connection():
        runs = _runs(res)
        studies = _studies(res)
        # Read once: the index shows them, and so does each study's page.
        study_runs = {name: res.study_runs(name) for name in studies["study_id"].to_list()}
    study_dirs = {s: study_dir_name(s) for s in studies["study_id"].to_list()}
    repros = _reproductions(res, set(study_dirs))
    repro_links: dict[str, tuple[str, str]] = {}
    for r in repros:
        for study in r["studies"].values():
            repro_links[study] = (r["key"], f"../../reproductions/{r['key']}/index.html")
    for run in runs.iter_rows(named=True):
        with res.one_connection():
            _build_run(env, res, run, out, study_dirs, report, figures)
    run_dirs = {run_dir_name(r) for r in runs["run_id"].to_list()}
    for study in studies.iter_rows(named=True):
        with res.one_connection():
            _build_study(env, res, study, study_runs[study["study_id"]], out, run_dirs, repro_links, report, figures)
    for r in repros:
        with res.one_connection():
            _build_reproduction(env, res, r, out, study_dirs, report, figures)
    report.runs, report.studies, report.reproductions = runs.height, studies.height, len(repros)
    index = env.get_template("index.html").render(
        root="", db=str(db), run_groups=_run_groups(runs, study_runs), runs=runs.height,
        studies=[{**s, "axes": json.loads(s["axes_json"]) if s["axes_json"] else [],
                  "href": f"studies/{study_dirs[s['study_id']]}/index.html"} for s in studies.iter_rows(named=True)],
        reproductions=[{**r, "href": f"reproductions/{r['key']}/index.html"} for r in repros])
    write_atomic(out / "index.html", index)
    return report
