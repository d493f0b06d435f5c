"""What every figure shares: a matplotlib `Figure` without pyplot, colours, names of runs by what
differs between them, a title saying what was simulated, time windows, decimation, saving.

Figures are built on `matplotlib.figure.Figure` directly (no pyplot, no global state, no
display); writing one picks the renderer from the file's suffix (Agg for PNG).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

import numpy as np

from .. import units
from ..errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

    from ..store.reader import Results

__all__ = ["PlotError", "FORMATS", "DPI", "MAX_POINTS", "figure_function", "new_figure", "title", "save",
           "check_output", "flow_colour", "run_colour", "flatten", "differing_keys", "run_labels", "describe",
           "TimeWindow", "time_window", "decimate", "legend_below", "opened", "pick_names", "RunInfo", "run_info",
           "controller_name", "readable_value", "spec_term", "MetricAxis", "metric_axis", "PERCENT", "clip_to_bounds",
           "key_term", "bounded_band", "plain_log_ticks", "steady_state_ylim", "STARTUP_FRACTION", "require_data", "bytes_in_words",
           "CONTROLLER_NAMES", "run_infos"]

FORMATS = (".pdf", ".svg", ".png")
DPI = 150
# A line of more points than this is decimated for drawing (never for computing).
MAX_POINTS = 4000
# Keys of a user spec that never tell runs apart in a legend.
_NOT_A_DIFFERENCE = {"seed", "name"}


class PlotError(SpecError):
    """A figure cannot be drawn from what the store holds: `field` names what to add or change."""


# --- figures ------------------------------------------------------------------------------------

_STYLE: dict[RcKeyType, Any] = {
    "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 8, "xtick.labelsize": 8,
    "ytick.labelsize": 8, "axes.grid": True, "grid.alpha": 0.3, "lines.linewidth": 0.8, "figure.titlesize": 10,
    "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
    "svg.hashsalt": "bufferlab", "pdf.fonttype": 42,
}


P = ParamSpec("P")
R = TypeVar("R")
# How subplots share an axis: not at all, all of them, or by row or column.
Sharing = bool | Literal["none", "all", "row", "col"]


def figure_function(func: Callable[P, R]) -> Callable[P, R]:
    """Run a figure-making function under bufferlab's style (fonts, grid, line widths): artists
    take their style when created, so the whole drawing happens inside it."""

    @functools.wraps(func)
    def styled_call(*args: P.args, **kwargs: P.kwargs) -> R:
        import matplotlib

        with matplotlib.rc_context(_STYLE):
            return func(*args, **kwargs)

    return styled_call


def new_figure(nrows: int, ncols: int, *, size: tuple[float, float], sharex: Sharing = False,
               sharey: Sharing = False) -> tuple[Figure, np.ndarray]:
    """A figure of `size` inches (width, height) with a grid of axes (always a 2-D array)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, squeeze=False)
    return fig, axes


def title(fig: Figure, text: str) -> None:
    """The figure's title, lines wrapped to the figure's width (about 11 characters an inch at the
    title's 10 points)."""
    width = max(30, int(fig.get_figwidth() * 11))
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in text.splitlines()))


def check_output(path: str | Path) -> Path:
    """`path` if its suffix is a known format, else the -o error (checked before any drawing)."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise PlotError("-o", f'unknown format "{path.suffix or path.name}" (known: {", ".join(FORMATS)})')
    return path


@figure_function
def save(fig: Figure, path: str | Path, *, dpi: float = DPI) -> Path:
    """Write the figure as PDF, SVG or PNG (by suffix); files carry no date, so the same figure
    gives the same bytes."""
    path = check_output(path)
    suffix = path.suffix.lower()
    metadata = {".pdf": {"CreationDate": None}, ".svg": {"Date": None}, ".png": {"Software": None}}[suffix]
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata=metadata)
    return path


def flow_colour(index: int) -> str:
    """The colour of flow `index` of a run: the same in every panel and every figure."""
    palette = _palette()
    return palette[index % len(palette)]


def run_colour(position: int) -> str:
    """The colour of the run at `position` in a comparison (B_s, B_l, ...)."""
    return flow_colour(position)


@functools.cache
def _palette() -> tuple[str, ...]:
    """tab10's colours, looked up once: a report colours thousands of lines, and looking them up
    again for each would be much of its drawing."""
    from matplotlib import colormaps

    tab10 = colormaps["tab10"]  # a qualitative map: its N colours by index
    return tuple(_hex(tab10(i)) for i in range(tab10.N))


def _hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb[:3])


# --- the papers' terms ---------------------------------------------------------------------------

# Congestion controllers as the papers write them.
CONTROLLER_NAMES = {"reno": "Reno", "newreno": "NewReno", "cubic": "CUBIC", "highspeed": "HSTCP", "bbr": "BBR",
                    "bbr3": "BBRv3", "bbrv3": "BBRv3",
                    "dctcp": "DCTCP", "prague": "Prague", "vegas": "Vegas"}
# Spec keys in words, for legends and titles.
_SPEC_TERMS = {"topology.queue": "buffer", "topology.flows": "N", "topology.rtt": "RTT",
               "topology.bottleneck_rate": "C", "topology.bottleneck_delay": "bottleneck delay",
               "duration": "duration"}


def controller_name(cca: str) -> str:
    """A congestion controller as the papers write it: "highspeed" -> "HSTCP", "cubic" -> "CUBIC",
    "newreno" -> "NewReno"; a name bufferlab does not know comes back as written."""
    return CONTROLLER_NAMES.get(cca.lower(), cca)


def readable_value(text: str) -> str:
    """A spec value in words: "18p" -> "18 packets", "1310720B" -> "1.31 MB", "80Mbps" ->
    "80 Mb/s"; anything else (a time, a name) as written."""
    try:
        limit = units.parse_size(text)
    except (units.UnitError, TypeError):
        pass
    else:
        if limit.packets is not None:
            return f"{limit.packets} packet{'s' if limit.packets != 1 else ''}"
        return bytes_in_words(limit.bytes or 0)
    try:
        rate = units.parse_rate(text)
    except (units.UnitError, TypeError):
        return text
    return f"{rate / 1e6:g} Mb/s" if rate is not None else text


def bytes_in_words(n: int) -> str:
    """An amount of bytes with a decimal prefix and three significant digits: 1310720 -> "1.31 MB"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def spec_term(key: str, value: str) -> str:
    """One setting of a spec in words for a legend: a controller by its name ("HSTCP"), a queue or
    its limit as the buffer ("buffer = 18 packets"), a few topology keys by their symbol ("N = 16",
    "RTT = 20ms"); other keys as dotted paths, as nothing better is known of them."""
    if key_term(key) == "controller":
        return controller_name(value)
    return f"{key_term(key)} = {readable_value(value)}"


def key_term(key: str) -> str:
    """A spec key in words: "controller" for a `cca`, "buffer" for a queue or its limit, "N",
    "RTT", "C" for the dumbbell's flows, round trip and bottleneck rate; else the dotted key."""
    leaf = key.rsplit(".", 1)[-1].split("[", 1)[0]
    if leaf == "cca":
        return "controller"
    return _SPEC_TERMS.get(key) or ("buffer" if leaf == "limit" or leaf.startswith("queue") else key)


# --- runs ---------------------------------------------------------------------------------------

def opened(db: Results | str | Path) -> AbstractContextManager[Results]:
    """A `Results` as given, or the store at a path, opened for the duration (`store.reader.reading`):
    then the figure's queries (a dozen or more; `plot sweep` makes 35) share one connection instead
    of opening the store each (the lock is held while the figure is made)."""
    from ..store.reader import reading

    return reading(db)


@dataclass(frozen=True)
class RunInfo:
    """What a figure needs to know about a run besides its data."""

    run_id: str
    name: str
    seed: int
    end_ns: int
    user_spec: dict[str, Any]


def run_info(res: Results, run: str) -> RunInfo:
    run_id = res.run_id(run)
    row = res.query("SELECT name, seed, end_ns FROM runs WHERE run_id = ?", [run_id]).row(0, named=True)
    return RunInfo(run_id=run_id, name=str(row["name"]), seed=int(row["seed"]), end_ns=int(row["end_ns"] or 0),
                   user_spec=res.user_spec(run_id))


def run_infos(res: Results, run_ids: Sequence[str]) -> list[RunInfo]:
    """`run_info` of many runs (full ids), in their order, from one query: a study's figure
    describes every run of the study (not two queries per run, for each of a report's figures)."""
    rows = res.query("SELECT run_id, name, seed, end_ns, user_spec_json FROM runs WHERE run_id IN (SELECT unnest(?))",
                     [list(run_ids)])
    by_id = {row["run_id"]: row for row in rows.iter_rows(named=True)}
    return [RunInfo(run_id=run_id, name=str(by_id[run_id]["name"]), seed=int(by_id[run_id]["seed"]),
                    end_ns=int(by_id[run_id]["end_ns"] or 0),
                    user_spec=json.loads(by_id[run_id]["user_spec_json"]) if by_id[run_id]["user_spec_json"] else {})
            for run_id in run_ids]


def flatten(spec: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A nested spec as dotted keys: ``{"topology": {"queue": "18p"}}`` -> ``{"topology.queue": "18p"}``;
    list items are indexed (``flows[1].rtt``); values as compact JSON text (strings bare)."""
    flat: dict[str, str] = {}
    for key, value in spec.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        _flatten_value(value, path, flat)
    return flat


def _flatten_value(value: Any, path: str, flat: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            flat[path] = "{}"
        for key, item in value.items():
            _flatten_value(item, f"{path}.{key}", flat)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, item in enumerate(value):
            _flatten_value(item, f"{path}[{i}]", flat)
    else:
        flat[path] = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def differing_keys(specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Dotted keys whose values are not the same in every spec (a key missing counts as a value),
    in the order they first appear; `seed` and `name` left out."""
    flats = [flatten(s) for s in specs]
    keys: dict[str, None] = {}
    for flat in flats:
        keys.update(dict.fromkeys(flat))
    return [k for k in keys if k not in _NOT_A_DIFFERENCE and len({f.get(k) for f in flats}) > 1]


def run_labels(runs: Sequence[RunInfo], *, max_keys: int = 3) -> list[str]:
    """Legend names of runs by what differs between them, in words (`spec_term`): ``buffer = 18
    packets`` against ``buffer = 500 packets``, ``HSTCP`` against ``CUBIC``; runs that differ only
    in seed are ``seed 1``, ``seed 2``; runs with identical specs and seeds (other engines) by
    their scenario's name and their id's first 8 characters."""
    if len(runs) == 1:
        return [runs[0].name]
    keys = differing_keys([r.user_spec for r in runs])
    if not keys and len({r.name for r in runs}) > 1:
        return [r.name for r in runs]
    labels = []
    for r in runs:
        flat = flatten(r.user_spec)
        parts = [spec_term(k, flat.get(k, "—")) for k in keys[:max_keys]]
        if len(keys) > max_keys:
            parts.append(f"+{len(keys) - max_keys} more")
        if len({x.seed for x in runs}) > 1:
            parts.append(f"seed {r.seed}")
        labels.append(", ".join(parts))
    if len(set(labels)) < len(labels):
        labels = [f"{label or r.name}, run {r.run_id[:8]}" for label, r in zip(labels, runs)]
    return labels


# What a title says about a run, in this order: (dotted key, how to say it).
_TITLE_FACTS: tuple[tuple[str, str], ...] = (
    ("topology.kind", "{}"),
    ("topology.flows", "{} flows"),
    ("flow_defaults.cca", "{}"),
    ("topology.bottleneck_rate", "{} bottleneck"),
    ("topology.rtt", "RTT {}"),
    ("topology.queue", "buffer {}"),
    ("duration", "{} simulated"),
)


def describe(runs: Sequence[RunInfo]) -> str:
    """A title saying what was simulated, from what the runs have in common: the scenario's name,
    then topology, flows, controller, rate, RTT, queue and duration where the spec gives them."""
    names = sorted({r.name for r in runs})
    flats = [flatten(r.user_spec) for r in runs]
    common = {k: v for k, v in flats[0].items() if all(f.get(k) == v for f in flats[1:])}
    facts = []
    for key, text in _TITLE_FACTS:
        if key == "topology.kind" and common.get(key) in names:
            continue  # a dumbbell named "dumbbell"
        if key in common and not common[key].startswith(("{", "[")):
            value = controller_name(common[key]) if key == "flow_defaults.cca" else readable_value(common[key])
            facts.append(text.format(value))
        elif key == "topology.flows" and "topology.kind" not in common:
            counts = {len(r.user_spec.get("flows") or []) for r in runs}
            if counts != {0} and len(counts) == 1:
                n = counts.pop()
                facts.append(f"{n} flow{'s' if n != 1 else ''}")
    if "seed" in common and len(runs) == 1:
        facts.append(f"seed {common['seed']}")
    return f"{' vs '.join(names)}\n{', '.join(facts)}" if facts else " vs ".join(names)


# --- selections and windows ----------------------------------------------------------------------

def pick_names(wanted: Sequence[str] | None, known: Sequence[str], *, field: str, what: str,
               run_id: str) -> list[str]:
    """The names in `known` that `wanted` selects (exact names or shell patterns such as
    ``pers_h1_*``), in `known`'s order; every entry of `wanted` must select something."""
    if wanted is None:
        return list(known)
    chosen: set[str] = set()
    for pattern in wanted:
        hits = fnmatch.filter(known, pattern)
        if not hits:
            shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
            raise PlotError(field, f'run {run_id[:12]} has no {what} "{pattern}" (recorded: {shown or "none"})')
        chosen.update(hits)
    return [name for name in known if name in chosen]


@dataclass(frozen=True)
class TimeWindow:
    """[start, end] in ns of simulated time; None for an open end."""

    start_ns: int | None = None
    end_ns: int | None = None

    def mask(self, time_ns: np.ndarray) -> np.ndarray:
        keep = np.ones(time_ns.shape, dtype=bool)
        if self.start_ns is not None:
            keep &= time_ns >= self.start_ns
        if self.end_ns is not None:
            keep &= time_ns <= self.end_ns
        return keep

    def limits_s(self, end_ns: int) -> tuple[float, float]:
        return ((self.start_ns or 0) / 1e9, (self.end_ns if self.end_ns is not None else end_ns) / 1e9)


def time_window(start: str | int | None = None, end: str | int | None = None) -> TimeWindow:
    """A window from times with units ("5s", "500ms") or ns; `--from` must come before `--to`."""
    start_ns = _time(start, "--from")
    end_ns = _time(end, "--to")
    if start_ns is not None and end_ns is not None and end_ns <= start_ns:
        raise PlotError("--to", f"must be after --from ({units.format_time(start_ns)})")
    return TimeWindow(start_ns, end_ns)


def _time(value: str | int | None, field: str) -> int | None:
    if value is None or isinstance(value, int):
        return value
    try:
        return units.parse_time(value)
    except units.UnitError as e:
        raise PlotError(field, str(e)) from None


# --- drawing ---------------------------------------------------------------------------------------

def decimate(x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_points` points of a line for drawing: per bucket of consecutive points, the
    lowest and the highest (in their order), so peaks and troughs stay where they were. Lines
    that are short enough come back unchanged."""
    n = len(x)
    if n <= max_points:
        return x, y
    buckets = max_points // 2
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    keep: list[int] = []
    finite = np.where(np.isfinite(y), y, np.nan)
    for lo, hi in zip(edges[:-1], edges[1:]):
        chunk = finite[lo:hi]
        if hi <= lo or np.isnan(chunk).all():
            continue
        low, high = lo + int(np.nanargmin(chunk)), lo + int(np.nanargmax(chunk))
        keep.extend(sorted({low, high}))
    index = np.asarray(keep, dtype=np.int64)
    return x[index], y[index]


def legend_below(fig: Figure, axes: Axes, *, title: str | None = None, max_columns: int = 5) -> None:
    """One legend for the whole figure, below the panels, in up to `max_columns` columns (handles
    from `axes`)."""
    handles, labels = axes.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", title=title,
                   ncols=min(len(handles), max_columns))


def require_data(field: str, arrays: Iterable[np.ndarray], reason: str) -> None:
    """Refuse to draw an empty panel: a `PlotError` on `field` (the metric or quantity) with
    `reason` unless one of `arrays` holds a finite value."""
    if not any(np.isfinite(np.asarray(a, dtype=np.float64)).any() for a in arrays):
        raise PlotError(field, reason)


# --- axes in the papers' terms ---------------------------------------------------------------------

# A fraction shown in per cent is multiplied by this.
PERCENT = 100.0
# Of a run, the share at its start taken for the start-up (slow start, its overshoot and the first
# back-offs) when a time plot is scaled to the steady state.
STARTUP_FRACTION = 0.1


@dataclass(frozen=True)
class MetricAxis:
    """How a stored metric is shown on an axis: its label in words with the shown unit, the factor
    from stored to shown values (`PERCENT` for a fraction shown in %), and the bounds no shown
    value, nor any interval around one, can leave (utilisation within [0, 100] %)."""

    label: str
    scale: float = 1.0
    bounds: tuple[float, float] = (0.0, math.inf)

    def shown(self, values: np.ndarray | Sequence[float | None]) -> np.ndarray:
        """Stored values as the axis shows them (None as NaN)."""
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64) * self.scale


_METRIC_AXES = {
    "loss_rate_l4": MetricAxis("loss rate (%)", PERCENT, (0.0, 100.0)),
    "utilization_l1": MetricAxis("bottleneck utilisation (%)", PERCENT, (0.0, 100.0)),
    "mean_utilization_bw_l4": MetricAxis("throughput / path's slowest rate (%)", PERCENT, (0.0, 100.0)),
    "mean_agg_utilization_bw_l4": MetricAxis("aggregate throughput / bottleneck rate (%)", PERCENT, (0.0, 100.0)),
    "mean_jains_fairness_throughput_l4": MetricAxis("Jain's fairness index of throughput", 1.0, (0.0, 1.0)),
    "mean_qdisc_delay_l2": MetricAxis("mean queueing delay (ms)"),
}
# Metrics that can be negative (utilities are logarithms and negative reciprocals).
_SIGNED_METRICS = {"mean_utility_pf_l4", "mean_utility_mpdf_l4", "mean_agg_utility_pf_l4", "mean_agg_utility_mpdf_l4"}
_UNIT_WORDS = {"Mbps": "Mb/s", "Mbps/s": "Mb/s per s", "count": "", "-": ""}


def metric_axis(metric: str) -> MetricAxis:
    """The axis of a metric of the catalogue (`analysis.catalogue`): fractions that are rates in %
    (loss, utilisation), Jain's index within [0, 1], every other metric in its unit and words
    ("mean_qdisc_delay_l2" -> "mean queue delay (ms)"), non-negative unless it is a utility."""
    if metric in _METRIC_AXES:
        return _METRIC_AXES[metric]
    from ..analysis.catalogue import FLOW_METRICS, LINK_METRICS, NETWORK_METRICS

    stored_unit = {**FLOW_METRICS, **LINK_METRICS, **NETWORK_METRICS}[metric][0]
    unit = _UNIT_WORDS.get(stored_unit, stored_unit)
    words = metric.rsplit("_l", 1)[0].replace("qdisc", "queue").replace("_", " ")
    bounds = (-math.inf, math.inf) if metric in _SIGNED_METRICS else (0.0, math.inf)
    return MetricAxis(f"{words} ({unit})" if unit else words, 1.0, bounds)


def clip_to_bounds(low: np.ndarray, high: np.ndarray,
                   bounds: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """An interval's ends held within the metric's bounds: a confidence interval of utilisation
    never reaches past 100 %, one of a throughput never below 0 (NaN ends stay NaN)."""
    lo, hi = bounds
    return (np.clip(np.asarray(low, dtype=np.float64), lo, hi), np.clip(np.asarray(high, dtype=np.float64), lo, hi))


def bounded_band(ax: Axes, x: np.ndarray, low: np.ndarray, high: np.ndarray, bounds: tuple[float, float],
                 **style: Any) -> None:
    """A shaded interval (a 95 % confidence band) between `low` and `high`, clipped to `bounds`
    (`clip_to_bounds`); `style` goes to `fill_between` (colour, alpha, label)."""
    lo, hi = clip_to_bounds(low, high, bounds)
    ax.fill_between(np.asarray(x, dtype=np.float64), lo, hi, **{"linewidth": 0, "alpha": 0.2, **style})


def plain_log_ticks(ax: Axes, *, axis: Literal["x", "y"] = "x", ticks: Sequence[float] | None = None) -> None:
    """Make `axis` logarithmic with ticks labelled as plain numbers ("0.25", "1", "2", "100", not
    10^-0.6): at `ticks` (e.g. the values swept) or else at 1, 2 and 5 times the powers of ten in
    view; no minor ticks, so no labels overlap."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    ax.set_xscale("log") if axis == "x" else ax.set_yscale("log")
    target.set_major_locator(FixedLocator(list(ticks)) if ticks is not None else LogLocator(10, subs=(1, 2, 5)))
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())


def steady_state_ylim(ax: Axes, series: Sequence[tuple[np.ndarray, np.ndarray]], *, startup_end_s: float,
                      unit: str, headroom: float = 1.08) -> float | None:
    """Scale a time plot's y axis, from 0, to the steady state: to the highest value of the
    `series` ((times in s, values) pairs) after `startup_end_s`, with some headroom, so a slow-start
    overshoot does not squash the sawtooth under it. When the start-up rises above that, the panel
    says so ("start-up peak of 3250 kB clipped", `unit` after the number) and the peak is returned;
    None when nothing is clipped (the axis is then left as it was)."""
    arrays = [(np.asarray(t), np.asarray(y, dtype=np.float64)) for t, y in series]
    steady = [y[(t >= startup_end_s) & np.isfinite(y)] for t, y in arrays]
    values = [y[np.isfinite(y)] for _, y in arrays]
    if not any(s.size for s in steady):
        return None
    top = max(float(s.max()) for s in steady if s.size) * headroom
    peak = max(float(v.max()) for v in values if v.size)
    if top <= 0 or peak <= top:
        return None
    ax.set_ylim(0, top)
    ax.text(0.99, 0.97, f"start-up peak of {peak:.4g} {unit} clipped", transform=ax.transAxes, ha="right", va="top",
            fontsize="small", color="0.35")
    return peak
