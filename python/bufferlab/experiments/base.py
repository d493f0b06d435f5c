"""What a reproduction is, and how one runs: its studies through the sweep machinery, then its
verdicts and figures from the store, then `summary.md`.

A `Reproduction` names the seed it reproduces, the sweeps that make its runs (a quick variant for
CI, and the seed's scale), the observations of the seed it checks, and the figures it draws.
`reproduce` runs it: every sweep is stored as a study named ``<reproduction>[-quick]/<part>`` and
is resumable like any sweep; observations and figures read only the store.
"""

from __future__ import annotations

import datetime as _dt
import shlex
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..study.execute import Listener, SweepReport, run_sweep
from ..study.executors import Executor
from ..study.sweep import Sweep

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..store.reader import Results

__all__ = ["Observation", "Reproduction", "ReproductionReport", "reproduce", "verdict_table", "FIGURE_FORMATS"]

FIGURE_FORMATS = ("pdf", "svg", "png")


@dataclass(frozen=True)
class Observation:
    """One statement of the seed next to what this reproduction measured.

    `holds` is True (the seed's statement holds here), False (it differs) or None (it cannot be
    judged from these runs, e.g. a quick run too short for it); `difference` says by how much.
    """

    key: str
    claim: str
    seed_value: str
    measured: str
    holds: bool | None
    difference: str = ""

    @property
    def verdict(self) -> str:
        return {True: "holds", False: "differs", None: "not judged"}[self.holds]


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
    notes: list[str] = field(default_factory=list)
    # More of the summary (e.g. metric tables): `appendix(results, studies)` -> Markdown.
    appendix: Callable[[Results, dict[str, str]], str] | None = None

    def study_names(self, quick: bool) -> dict[str, str]:
        suffix = "-quick" if quick else ""
        return {part: f"{self.name}{suffix}/{part}" for part in self.sweeps(quick)}


@dataclass
class ReproductionReport:
    name: str
    quick: bool
    studies: dict[str, str]
    sweeps: dict[str, SweepReport]
    observations: list[Observation]
    figures: list[Path]
    summary: Path
    interrupted: bool = False
    appendix: str = ""


def verdict_table(observations: Sequence[Observation]) -> str:
    """The observations as a Markdown table."""
    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = ["| # | the seed says | seed's value | measured here | verdict |", "|---|---|---|---|---|"]
    for o in observations:
        verdict = o.verdict + (f" ({cell(o.difference)})" if o.difference else "")
        lines.append(f"| {cell(o.key)} | {cell(o.claim)} | {cell(o.seed_value)} | {cell(o.measured)} | {verdict} |")
    return "\n".join(lines)


def _command_line(name: str, quick: bool, extra: Sequence[str]) -> str:
    words = ["bufferlab", "reproduce", name, *(["--quick"] if quick else []), *extra]
    return " ".join(shlex.quote(w) for w in words)


def write_summary(repro: Reproduction, report: ReproductionReport, path: Path, command: str) -> None:
    held = sum(o.holds is True for o in report.observations)
    differs = sum(o.holds is False for o in report.observations)
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
    lines += ["", f"## Observations: {held} hold, {differs} differ, "
                  f"{len(report.observations) - held - differs} not judged", "",
              verdict_table(report.observations), ""]
    if repro.appendix is not None:
        lines += [report.appendix, ""]
    if repro.notes:
        lines += ["## Choices and known differences", ""] + [f"- {n}" for n in repro.notes] + [""]
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
                return ReproductionReport(repro.name, quick, studies, reports, [], [], out / "summary.md", True)
    finally:
        executor.close()
    res = load(db)
    # The observations, the figures' data and the appendix read the store on one connection:
    # each query would open it again (~15 ms each; ccperf's make ~280). The figures are saved
    # after the block, so the store's lock is not held while they are rendered.
    with res.one_connection():
        observations = repro.observe(res, studies)
        drawn = repro.draw(res, studies)
        appendix = repro.appendix(res, studies) if repro.appendix is not None else ""
    figures: list[Path] = []
    for stem, fig in drawn.items():
        for fmt in FIGURE_FORMATS:
            path = out / f"{stem}.{fmt}"
            save(fig, path)
            figures.append(path)
    report = ReproductionReport(repro.name, quick, studies, reports, observations, figures, out / "summary.md",
                                appendix=appendix)
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
