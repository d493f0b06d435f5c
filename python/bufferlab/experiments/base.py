"""What a reproduction is, and how one runs: its studies through the sweep machinery, then its
verdicts and figures from the store, then `summary.md`.

A `Reproduction` names the seed it reproduces, the sweeps that make its runs (a quick variant for
CI, and the seed's scale), the preconditions its comparisons rest on, the observations of the seed
it checks, and the figures it draws. `reproduce` runs it: every sweep is stored as a study named
``<reproduction>[-quick]/<part>`` and is resumable like any sweep; preconditions, observations and
figures read only the store.

A verdict is evidence only if the experiment did what it claims. So before any observation is
judged, `assess` checks the reproduction's preconditions in the stored data: the mechanism under
test engaged (SplitBuff's sub-buffers each carried a share of the packets), the seed's regime was
reached (link load, loss range), the runs were long enough (congestion cycles of the slowest
flow). One precondition is every reproduction's (`tcp_reductions`): its flows' fast recoveries
reduced their windows, as the seeds' TCPs do, rather than set ssthresh above the window in use.
An observation resting on a failed precondition is "not judged", with what failed and the value
measured, never "holds" or "differs". Every observation that is judged states its tolerance
and where it comes from (the seed's own spread, the spread over seeds, a number of the paper).
"""

from __future__ import annotations

import datetime as _dt
import shlex
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..study.execute import Listener, SweepReport, run_sweep
from ..study.executors import Executor
from ..study.sweep import Sweep

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["Assessment", "Observation", "Precondition", "Reproduction", "ReproductionReport", "judge", "reproduce",
           "precondition_table", "verdict_table", "tcp_reductions", "FIGURE_FORMATS", "MAX_RAISING_REDUCTIONS",
           "TCP_REDUCTIONS_KEY"]

FIGURE_FORMATS = ("pdf", "svg", "png")


@dataclass(frozen=True)
class Precondition:
    """What must be true of the stored runs for a comparison with the seed to mean anything: the
    mechanism under test engaged, the seed's regime reached, the steady state long enough.
    `requirement` says what must hold (with its threshold), `measured` what the store says."""

    key: str
    requirement: str
    measured: str
    met: bool
    # Every observation rests on it, whatever its `requires` names (`tcp_reductions`).
    universal: bool = False

    @property
    def status(self) -> str:
        return "met" if self.met else "not met"


# The share of fast recoveries that may set ssthresh above the window in use. The seeds' TCPs
# reduce their windows at a loss; the FIFO reproductions measure at most 1 % (barman2004, 2 of
# 209; dhamdhere2006, 4 of 71,604), RFC 5681's FlightSize chaining recoveries behind an AQM 20-80 %
# (docs: engine, "The reduction's basis").
MAX_RAISING_REDUCTIONS = 0.05
TCP_REDUCTIONS_KEY = "TCP reductions"


def tcp_reductions(res: Results, studies: dict[str, str]) -> Precondition:
    """The precondition of every reproduction: its flows' fast recoveries reduced their windows
    (`flows.raising_reductions`, counted by the engine at each congestion event, at most
    `MAX_RAISING_REDUCTIONS` of them), over every complete run of its studies."""
    import polars as pl

    run_ids = [r for name in studies.values()
               for r in res.study_runs(name).filter(pl.col("status") == "complete")["run_id"].to_list()]
    counts = res.recovery_counts(sorted(set(run_ids)))
    requirement = (f"at most {MAX_RAISING_REDUCTIONS:.0%} of the fast recoveries set ssthresh above the window in "
                   "use (the seed's TCP reduces its window at a loss)")
    if counts.uncounted_runs:
        return Precondition(TCP_REDUCTIONS_KEY, requirement,
                            f"not counted: {counts.uncounted_runs} runs were stored by a bufferlab before store schema "
                            "11; run the reproduction again to count them", False, universal=True)
    if not counts.recoveries:
        return Precondition(TCP_REDUCTIONS_KEY, requirement, "no fast recovery", True, universal=True)
    flows = counts.raising_flows
    return Precondition(TCP_REDUCTIONS_KEY, requirement,
                        f"{counts.raised:,} of {counts.recoveries:,} ({counts.raised / counts.recoveries:.2%}"
                        + (f"; in {flows:,} flow{'' if flows == 1 else 's'})" if flows else ")"),
                        counts.raised <= MAX_RAISING_REDUCTIONS * counts.recoveries, universal=True)

@dataclass(frozen=True)
class Observation:
    """One statement of the seed next to what this reproduction measured.

    `holds` is True (the seed's statement holds here), False (it differs) or None (it cannot be
    judged from these runs); `difference` says by how much; `tolerance` the margin the comparison
    allowed and why. `requires` names the preconditions the verdict rests on (None: all of the
    reproduction's; () none); when one of them failed, `assess` makes the observation not judged
    and `not_judged` says what failed, measured.
    """

    key: str
    claim: str
    seed_value: str
    measured: str
    holds: bool | None
    difference: str = ""
    tolerance: str = ""
    requires: tuple[str, ...] | None = None
    not_judged: str = ""

    @property
    def verdict(self) -> str:
        if self.holds is None:
            return "not judged" + (f": {self.not_judged}" if self.not_judged else "")
        return "holds" if self.holds else "differs"


def judge(observations: Sequence[Observation], preconditions: Sequence[Precondition]) -> list[Observation]:
    """The observations with every one that rests on a failed precondition made "not judged",
    naming what failed and the value measured."""
    failed = [p for p in preconditions if not p.met]
    out = []
    for o in observations:
        against = [p for p in failed if p.universal or o.requires is None or p.key in o.requires]
        if against:
            reason = "; ".join(f"{p.key}: {p.measured} (needs {p.requirement})" for p in against)
            o = replace(o, holds=None, difference="", not_judged=reason)
        out.append(o)
    return out


@dataclass(frozen=True)
class Assessment:
    """A reproduction's preconditions, checked, and its observations judged under them."""

    preconditions: list[Precondition]
    observations: list[Observation]


@dataclass
class Reproduction:
    """A seed's experiment as studies, observations and figures (see the module docstring)."""

    name: str
    seed: str
    title: str
    description: str
    # Wall time of `bufferlab reproduce NAME [--quick]` on the default workers of this project's
    # 2-core machines, whole command, into a new store, for `reproduce --list`: measured by
    # benchmarks/bench_reproduce.py, which marks an estimate that has drifted past a factor of two.
    quick_estimate_s: float
    full_estimate_s: float
    # The studies, keyed by part name: `sweeps(quick)`.
    sweeps: Callable[[bool], dict[str, Sweep]]
    # Observations from the stored studies: `observe(results, studies)` with part -> study name.
    observe: Callable[[Results, dict[str, str]], list[Observation]]
    # Figures: `draw(results, studies)` -> file stem -> Figure.
    draw: Callable[[Results, dict[str, str]], dict[str, Figure]]
    # What the comparisons rest on, checked in the stored studies: `preconditions(results, studies)`.
    preconditions: Callable[[Results, dict[str, str]], list[Precondition]]
    notes: list[str] = field(default_factory=list)
    # More of the summary (e.g. metric tables): `appendix(results, studies)` -> Markdown.
    appendix: Callable[[Results, dict[str, str]], str] | None = None

    def study_names(self, quick: bool) -> dict[str, str]:
        suffix = "-quick" if quick else ""
        return {part: f"{self.name}{suffix}/{part}" for part in self.sweeps(quick)}

    def assess(self, res: Results, studies: dict[str, str]) -> Assessment:
        """Its preconditions checked in the store (its own, then `tcp_reductions`), then its
        observations judged under them."""
        preconditions = [*self.preconditions(res, studies), tcp_reductions(res, studies)]
        return Assessment(preconditions, judge(self.observe(res, studies), preconditions))


@dataclass
class ReproductionReport:
    name: str
    quick: bool
    studies: dict[str, str]
    sweeps: dict[str, SweepReport]
    preconditions: list[Precondition]
    observations: list[Observation]
    figures: list[Path]
    summary: Path
    interrupted: bool = False
    appendix: str = ""
    # Why the figures are missing, if they are.
    figure_note: str = ""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def verdict_table(observations: Sequence[Observation]) -> str:
    """The observations as a Markdown table."""
    lines = ["| # | the seed says | seed's value | measured here | tolerance | verdict |",
             "|---|---|---|---|---|---|"]
    for o in observations:
        verdict = o.verdict + (f" ({o.difference})" if o.difference else "")
        lines.append(f"| {_cell(o.key)} | {_cell(o.claim)} | {_cell(o.seed_value)} | {_cell(o.measured)} | "
                     f"{_cell(o.tolerance) if o.holds is not None else ''} | {_cell(verdict)} |")
    return "\n".join(lines)


def precondition_table(preconditions: Sequence[Precondition]) -> str:
    """The preconditions as a Markdown table."""
    lines = ["| precondition | what must hold | measured | |", "|---|---|---|---|"]
    for p in preconditions:
        lines.append(f"| {_cell(p.key)} | {_cell(p.requirement)} | {_cell(p.measured)} | {p.status} |")
    return "\n".join(lines)


def _command_line(name: str, quick: bool, extra: Sequence[str]) -> str:
    words = ["bufferlab", "reproduce", name, *(["--quick"] if quick else []), *extra]
    return " ".join(shlex.quote(w) for w in words)


def write_summary(repro: Reproduction, report: ReproductionReport, path: Path, command: str) -> None:
    held = sum(o.holds is True for o in report.observations)
    differs = sum(o.holds is False for o in report.observations)
    met = sum(p.met for p in report.preconditions)
    lines = [
        f"# {repro.title}",
        "",
        f"Reproduction `{repro.name}` of seed {repro.seed}{' (quick variant)' if report.quick else ''}, "
        f"written {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        repro.description,
        "",
        "Reproduce with:",
        "",
        f"    {command}",
        "",
        "## Studies",
        "",
        "| part | study | runs | simulated now | from the store | failed |",
        "|---|---|---|---|---|---|",
    ]
    for part, study in report.studies.items():
        s = report.sweeps[part]
        lines.append(f"| {part} | `{study}` | {s.total} | {s.simulated} | {s.reused} | {len(s.failed)} |")
    lines += ["", f"## Preconditions: {met} of {len(report.preconditions)} met", "",
              "What the comparisons rest on, checked in the stored runs; an observation resting on one not met "
              "is not judged.", "", precondition_table(report.preconditions), ""]
    lines += ["", f"## Observations: {held} hold, {differs} differ, "
                  f"{len(report.observations) - held - differs} not judged", "",
              verdict_table(report.observations), ""]
    if repro.appendix is not None:
        lines += [report.appendix, ""]
    if repro.notes:
        lines += ["## Choices and known differences", ""] + [f"- {n}" for n in repro.notes] + [""]
    if report.figure_note:
        lines += ["## Figures", "", report.figure_note, ""]
    if report.figures:
        lines += ["## Figures", ""]
        for fig in report.figures:
            if fig.suffix == ".png":
                lines.append(f"![{fig.stem}]({fig.name})")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def reproduce(repro: Reproduction, db: str | Path, out: str | Path, *, quick: bool,
              executor_factory: Callable[[], Executor],
              listener_for: Callable[[str], AbstractContextManager[Listener]] | None = None,
              command_extra: Sequence[str] = ()) -> ReproductionReport:
    """Run `repro`'s sweeps (one after another, on one executor: its workers start once), then
    its observations and figures."""
    from ..plots import save
    from ..plots.common import PlotError
    from ..store.reader import load

    db, out = Path(db), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    studies = repro.study_names(quick)
    reports: dict[str, SweepReport] = {}
    executor = executor_factory()
    try:
        for part, sweep in repro.sweeps(quick).items():
            sweep.name = studies[part]
            listener: Listener | None = None
            if listener_for is not None:
                with listener_for(f"{repro.name}: {part}") as listener:
                    reports[part] = run_sweep(sweep, db, executor, listener, keep_executor=True)
            else:
                reports[part] = run_sweep(sweep, db, executor, keep_executor=True)
            if reports[part].interrupted:
                return ReproductionReport(repro.name, quick, studies, reports, [], [], [], out / "summary.md", True)
    finally:
        executor.close()
    res = load(db)
    # The observations, the figures' data and the appendix read the store on one connection:
    # each query would open it again (ccperf's make ~280 queries). The figures are saved
    # after the block, so the store's lock is not held while they are rendered.
    with res.one_connection():
        assessment = repro.assess(res, studies)
        try:
            drawn = repro.draw(res, studies)
        except PlotError as e:  # a figure without data: the verdicts stand, the summary says why
            drawn, figure_note = {}, f"No figure drawn: {e}"
        else:
            figure_note = ""
        appendix = repro.appendix(res, studies) if repro.appendix is not None else ""
    figures: list[Path] = []
    for stem, fig in drawn.items():
        for fmt in FIGURE_FORMATS:
            path = out / f"{stem}.{fmt}"
            save(fig, path)
            figures.append(path)
    report = ReproductionReport(repro.name, quick, studies, reports, assessment.preconditions,
                                assessment.observations, figures, out / "summary.md", appendix=appendix,
                                figure_note=figure_note)
    write_summary(repro, report, report.summary, _command_line(repro.name, quick, command_extra))
    return report


def relative(a: float, b: float) -> str:
    """a against b as a signed percentage, for `Observation.difference`."""
    if b == 0:
        return "n/a"
    change = (a - b) / abs(b) * 100
    return "" if abs(change) < 0.05 else f"{change:+.1f} %"


def stdout_is_terminal() -> bool:
    return sys.stderr.isatty()
