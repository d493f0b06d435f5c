"""`bufferlab advise`: the smallest buffer that meets targets, found by simulation.

    bufferlab advise --rate 100Mbps --flows 20 --rtt 20ms..200ms --cca cubic \\
        --target 'utilisation>=0.98' --target 'p99_delay<=50ms' --seeds 3 -o advice.png
    bufferlab advise --scenario scenarios/dumbbell.toml --target 'loss<=1%' --target 'delay<=20ms'
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import units
from ..errors import SpecError, writing
from ..sizing.limits import SIZED_KINDS
from ..sizing.targets import TARGET_FORMS, Target, parse_target
from .options import MAX_WORKERS, Number, db_option, figure_output, listed, parsed

if TYPE_CHECKING:  # pragma: no cover
    from ..study.execute import Listener
    from ..sizing.advisor import Advice, Probe

__all__ = ["advise_command", "advice_json", "draw_advice"]


def _value_text(target: Target, value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.4g}" + (f" {target.unit}" if target.unit else "")


# What a ✓ means, in the command's help and above its table of probes (`sizing.advisor`, "The
# decision").
RULE = ("✓: the target's metric, measured after the warm-up, averaged over the probe's seeds, meets the "
        "target (✗: it misses); ± is the 95 % interval of that mean (Student's t over the seeds); ? marks "
        "a verdict whose interval reaches across the target, which more --seeds would settle")


def _cell(target: Target, probe: Probe) -> str:
    """A probe's mean (± the half width of its interval, with two seeds or more) and verdict."""
    mean, low, high = probe.metrics[target.column]
    if mean is None:
        return "undefined ✗"
    spread = ""
    if high is not None:
        half = 0.0 if abs(high - mean) < 1e-9 * max(1.0, abs(mean)) else high - mean
        spread = f" ± {half:.2g}"
    unsettled = "" if high is None or probe.settled.get(target.text, True) else "?"
    return f"{mean:.4g}{spread} " + ("✓" if probe.holds[target.text] else "✗") + unsettled


def _probes_title(advice: Advice) -> str:
    """The probes table's heading: what its numbers and marks are (no interval with one seed)."""
    if max((p.seeds for p in advice.probes), default=1) < 2:
        return "probes: one seed each, so no interval; ✓ the run's metric after the warm-up meets the target"
    return "probes: " + RULE


def _size_text(advice: Advice, packets: int) -> str:
    link = advice.link
    parts = [f"{packets} packets", units.format_bytes(packets * link.packet_bytes)]
    if link.rate_bps:
        parts.append(f"{packets * link.packet_bytes * 8 / link.rate_bps * 1e3:.3g} ms at "
                     f"{units.format_rate(link.rate_bps)}")
    if link.bdp_packets:
        parts.append(f"{packets / link.bdp_packets:.3g} BDP")
    return " = ".join(parts[:2]) + (f" ({', '.join(parts[2:])})" if len(parts) > 2 else "")


def _print(advice: Advice, figure: Path | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from .render import console as new_console

    console = new_console(132, highlight=False)
    link = advice.link
    rtts = sorted(link.rtts_ns)
    rtt_text = (units.format_time(rtts[0]) if rtts and rtts[0] == rtts[-1] else
                f"{rtts[0] / 1e6:.4g}–{rtts[-1] / 1e6:.4g} ms" if rtts else "none")
    console.print(f"link {units.format_rate(link.rate_bps)}, {len(rtts)} long-lived flow(s), RTT {rtt_text}, "
                  f"packets of {units.format_bytes(link.packet_bytes)}"
                  + (f", BDP {link.bdp_packets:.1f} packets" if link.bdp_packets else ""))
    console.print("targets: " + ", ".join(t.text for t in advice.targets))
    console.print(f"queue: {escape(advice.queue)}; the size searched is {escape(advice.limit_meaning)}")
    if advice.buffer_packets is not None:
        what = "buffer" if advice.queue == "fifo" else "limit"
        console.print(f"[bold]recommended {what}: {_size_text(advice, advice.buffer_packets)}[/bold]")
    else:
        closest = advice.closest
        console.print(f"[bold]{advice.reason}[/bold]" + (
            f"; closest: {closest.packets}p (" + ", ".join(
                f"{t.metric} {_value_text(t, closest.metrics[t.column][0])}" for t in advice.targets) + ")"
            if closest else ""))
    if advice.rules:
        rules = Table(title="rules of thumb for this link", title_justify="left")
        for header in ("rule", "packets", "ms at rate", "× advice"):
            rules.add_column(header, justify="left" if header == "rule" else "right")
        for size, _ in advice.rules:
            if len(set(link.rtts_ns)) == 1 and size.rule in ("bdp (harmonic RTT)", "bdp (max RTT)"):
                continue  # one RTT: every average is the mean
            ratio = f"{size.packets / advice.buffer_packets:.2f}" if advice.buffer_packets else "–"
            rules.add_row(size.rule, str(size.packets), f"{size.ms:.3f}", ratio)
        console.print(rules)
    probes = Table(title=_probes_title(advice), title_justify="left")
    for header in ("buffer", "ms at rate", "seeds", *[t.text for t in advice.targets]):
        probes.add_column(header, justify="right")
    for probe in advice.probes:
        mark = " ←" if probe.packets == advice.buffer_packets else ""
        ms = (f"{probe.packets * link.packet_bytes * 8 / link.rate_bps * 1e3:.3g}" if link.rate_bps else "–")
        probes.add_row(f"{probe.packets}p{mark}", ms, str(probe.seeds), *[_cell(t, probe) for t in advice.targets])
    console.print(probes)
    console.print(f"study {escape(advice.study)}: {len(advice.probes)} probe(s), {advice.simulated} run(s) simulated now, "
                  f"{advice.reused} already stored; search resolution {advice.resolution:.0%} or 1 packet"
                  + (f"; figure {escape(str(figure))}" if figure else ""))
    for note in advice.notes:
        console.print(f"note: {escape(note)}")


def advice_json(advice: Advice, figure: Path | None = None) -> dict[str, Any]:
    link = advice.link

    def probe_json(p: Probe) -> dict[str, Any]:
        return {"packets": p.packets, "seeds": p.seeds, "meets": p.meets(advice.targets),
                "metrics": {c: {"mean": m, "ci_low": lo, "ci_high": hi} for c, (m, lo, hi) in p.metrics.items()},
                "holds": p.holds, "settled": p.settled, "recoveries": p.recoveries,
                "raising_reductions": p.raising_reductions}

    return {"study": advice.study, "met": advice.buffer_packets is not None, "buffer_packets": advice.buffer_packets,
            "buffer_bytes": None if advice.buffer_packets is None else advice.buffer_packets * link.packet_bytes,
            "buffer_ms": advice.buffer_ms, "reason": advice.reason or None,
            "closest_packets": advice.closest.packets if advice.closest else None,
            "rate_bps": link.rate_bps, "packet_bytes": link.packet_bytes, "rtts_ns": link.rtts_ns,
            "queue": advice.queue, "limit_meaning": advice.limit_meaning,
            "bdp_packets": link.bdp_packets, "max_packets": advice.max_packets, "resolution": advice.resolution,
            "targets": [{"text": t.text, "metric": t.metric, "op": t.op, "value": t.value, "unit": t.unit,
                         "column": t.column} for t in advice.targets],
            "rules": [{"rule": s.rule, "packets": s.packets, "ms": s.ms, "from": source} for s, source in advice.rules],
            "rule": RULE, "probes": [probe_json(p) for p in advice.probes], "simulated": advice.simulated,
            "reused": advice.reused, "figure": str(figure) if figure else None, "notes": advice.notes}


def draw_advice(advice: Advice, path: Path) -> None:
    from ..plots.common import figure_function

    figure_function(_draw_advice)(advice, path)


def _draw_advice(advice: Advice, path: Path) -> None:
    """Every target metric against the buffer (log x): the mean over seeds, its 95 % interval as a
    band, each probe marked by whether the panel's target holds there, the target as a dashed line,
    the recommendation and the rules of thumb (BDP, Stanford) as verticals."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    from ..plots.common import new_figure, save, title

    columns: dict[str, list[Target]] = {}
    for t in advice.targets:
        columns.setdefault(t.column, []).append(t)
    fig, grid = new_figure(len(columns), 1, size=(6.4, 2.2 * len(columns) + 0.7), sharex=True)
    axes = grid[:, 0]
    rules: dict[int, list[str]] = {}
    for size, _ in advice.rules:
        if size.rule.startswith(("bdp (mean", "stanford")):
            rules.setdefault(size.packets, []).append(size.rule.split(" (")[0] if size.rule.startswith("bdp")
                                                      else size.rule)
    for k, (ax, (column, targets)) in enumerate(zip(axes, columns.items())):
        probes = [p for p in advice.probes if p.metrics[column][0] is not None]
        x = [p.packets for p in probes]
        mean = [p.metrics[column][0] for p in probes]
        if any(p.metrics[column][1] is not None for p in probes):
            ax.fill_between(x, [p.metrics[column][1] if p.metrics[column][1] is not None else p.metrics[column][0]
                                for p in probes],
                            [p.metrics[column][2] if p.metrics[column][2] is not None else p.metrics[column][0]
                             for p in probes], color="C0", alpha=0.2, linewidth=0, label="95 % interval over seeds")
        ax.plot(x, mean, color="C0", linewidth=1.0, label="mean over seeds")
        held = [all(p.holds[t.text] for t in targets) for p in probes]
        ax.scatter([xi for xi, h in zip(x, held) if h], [m for m, h in zip(mean, held) if h], color="C2", s=16,
                   zorder=3, label="probe: target holds")
        ax.scatter([xi for xi, h in zip(x, held) if not h], [m for m, h in zip(mean, held) if not h], color="C3",
                   marker="x", s=18, zorder=3, label="probe: target missed")
        for t in targets:
            ax.axhline(t.value, color="C3", linestyle="--", linewidth=0.9, label=f"target {t.text}")
        if advice.buffer_packets is not None:
            ax.axvline(advice.buffer_packets, color="C2", linewidth=1.4, label=f"advice: {advice.buffer_packets}p")
        for packets, names in rules.items():
            ax.axvline(packets, color="0.45", linestyle=":", linewidth=0.9)
            if k == len(columns) - 1:
                ax.annotate(" = ".join(names), (packets, 0.03), xycoords=("data", "axes fraction"), rotation=90,
                            fontsize=7, ha="right", va="bottom", color="0.35")
        unit = targets[0].unit
        ax.set_ylabel(targets[0].metric.replace("_", " ") + (f" ({unit})" if unit else ""), fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(ScalarFormatter() if max(x, default=1) / max(min(x, default=1), 1) < 20
                                     else NullFormatter())
        ax.grid(True, which="both", alpha=0.25)
        ax.tick_params(labelsize=7, which="both")
        handles, labels = ax.get_legend_handles_labels()
        if k > 0:  # the shared entries once, in the top panel
            keep = [i for i, label in enumerate(labels) if label.startswith("target")]
            handles, labels = [handles[i] for i in keep], [labels[i] for i in keep]
        ax.legend(handles, labels, fontsize=7, loc="best", frameon=False)
    axes[-1].set_xlabel(f"bottleneck buffer (packets of {units.format_bytes(advice.link.packet_bytes)}, log scale)",
                        fontsize=8)
    head = (f"recommended {advice.buffer_packets}p" if advice.buffer_packets is not None else
            advice.reason.split(":")[0])
    title(fig, f"bufferlab advise, {units.format_rate(advice.link.rate_bps)}: {head}")
    save(fig, path)


# The fields of the mix's scenario (`sizing.advisor.mix_scenario`) and the flags that set them.
MIX_FLAGS = {"topology.bottleneck_rate": "--rate", "topology.rtt": "--rtt", "topology.flows": "--flows",
             "duration": "--duration"}


@contextmanager
def _mix_flags(active: bool = True) -> Iterator[None]:
    """An error about a field of the mix's scenario as one about the flag that set it."""
    try:
        yield
    except SpecError as e:
        if not active or e.field.startswith("-"):
            raise
        field = e.field
        flag = MIX_FLAGS.get(field) or ("--cca" if "cca" in field else "--mice" if "arrivals_per_s" in field else
                                        "--mice-size" if field.startswith("generators") else
                                        "--flows" if field.startswith("flows") else "--rate")
        raise SpecError(flag, e.reason) from None


def _progress_per_size(packets: int) -> AbstractContextManager[Listener]:
    """A progress bar for the probes of one buffer size (on a terminal)."""
    from .progress import progress_listener

    return progress_listener(f"{packets}p")


@click.command("advise", short_help="Find the smallest buffer that meets your targets, by simulation.")
@click.option("--scenario", "scenario_file", type=click.Path(path_type=Path), default=None,
              help="Take the traffic mix from this scenario; its --queue-key queue is searched.")
@click.option("--queue-key", default="topology.queue", show_default=True,
              help="The searched queue's override path in the scenario.")
@click.option("--rate", default=None, help='Bottleneck rate of a dumbbell mix, e.g. "10Gbps".')
@click.option("--flows", type=Number(1, whole=True), default=1, show_default=True, help="Long-lived flows of the mix.")
@click.option("--rtt", default="100ms", show_default=True, help='RTT of every flow ("100ms") or a uniform range ("20ms..200ms").')
@click.option("--cca", default="newreno", show_default=True,
              help="Congestion controller(s), comma-separated: assigned to the flows in turn.")
@click.option("--mice", "mice_per_s", type=Number(0), default=0.0, show_default=True,
              help="Poisson short flows per second in all (Pareto sizes, shape 1.2).")
@click.option("--mice-size", default="20kB", show_default=True, help="Mean size of a short flow.")
@click.option("--queue", "queue_kind", default="fifo", show_default=True,
              help=f"The mix's bottleneck queue: {', '.join(SIZED_KINDS)} (an AQM with its RFC defaults; its "
                   "hard limit is searched).")
@click.option("--target", "target_texts", multiple=True, metavar="METRIC>=|<=VALUE",
              help=f"A target (repeatable): {TARGET_FORMS}.")
@click.option("--seeds", type=Number(1, 1000, whole=True), default=3, show_default=True,
              help="Runs per probe (replications, their flows' starts and RTT draws apart). A target holds on the "
                   "mean over them; more seeds narrow its interval but do not move it one way.")
@click.option("--duration", default=None, help="Simulated time per run (default: 30s, or the scenario's).")
@click.option("--warmup", default=None, help="Time left out of the metrics at the start (default: a fifth of the run).")
@click.option("--resolution", type=Number(above=0, below=1), default=0.02, show_default=True,
              help="Stop bisecting when the bracket is narrower than this fraction of the buffer (or one packet).")
@click.option("--max-bdp", type=Number(above=0, high=1e6), default=64.0, show_default=True, help="The largest buffer tried, in BDPs.")
@click.option("--workers", type=Number(1, MAX_WORKERS, whole=True), default=None,
              help="Worker processes (default: one per seed, up to the cores).")
@db_option
@click.option("--study", default=None, help="The study the probes are stored in (default: named after the question).")
@click.option("--json", "as_json", is_flag=True, help="Print the advice as JSON.")
@click.option("-o", "--output", "figure", type=click.Path(path_type=Path), default=None,
              help="Write a figure of every target metric against the buffer (PNG, PDF or SVG).")
def advise_command(scenario_file: Path | None, queue_key: str, rate: str | None, flows: int, rtt: str, cca: str,
                   mice_per_s: float, mice_size: str, queue_kind: str, target_texts: tuple[str, ...], seeds: int,
                   duration: str | None,
                   warmup: str | None, resolution: float, max_bdp: float, workers: int | None, db: Path,
                   study: str | None, as_json: bool, figure: Path | None) -> None:
    """The smallest bottleneck buffer meeting every --target, by simulation: a search over the
    buffer (bracketing, then bisection), several seeds per probe; with delay targets only, the
    largest buffer within them. Prints the advice, the rules of thumb and every probe.

    \b
    A target holds at a probe (✓) when its metric, measured after
    --warmup and averaged over the probe's --seeds, meets it (✗: it
    misses). Each mean comes with its 95 % interval (Student's t over the
    seeds); ? marks a verdict whose interval reaches across the target,
    which more --seeds would settle. The mean does not drift with the
    number of seeds as the interval's bound would: more seeds make the
    advice less scattered, not smaller."""
    from ..spec import Scenario
    from ..sizing.advisor import Advisor, mix_scenario

    targets = [parse_target(text) for text in target_texts]
    if not targets:
        raise SpecError("--target", f"give at least one target, e.g. {TARGET_FORMS}")
    if figure is not None:  # before anything is simulated: a figure that cannot be written stores nothing
        figure_output("--output", figure)
    if scenario_file is not None:
        if rate is not None:
            raise SpecError("--rate", "give either --scenario or a mix (--rate, --flows, --rtt, --cca), not both")
        if queue_kind != "fifo":
            raise SpecError("--queue", "the scenario's queue is searched: give the AQM in the scenario, or --queue "
                                       "with a mix (--rate ...)")
        base = Scenario.from_toml(scenario_file)
        if duration is not None:
            base = base.with_overrides({"duration": duration})
    else:
        if rate is None:
            raise SpecError("--rate", "give the bottleneck rate of the mix (or --scenario FILE)")
        ccas = listed("--cca", cca, what="controller")
        if queue_kind not in SIZED_KINDS:
            raise SpecError("--queue", f'"{queue_kind}": expected one of {", ".join(SIZED_KINDS)}')
        with _mix_flags():
            base = Scenario.from_dict(mix_scenario(rate=rate, flows=flows, rtt=rtt, ccas=ccas,
                                                   duration=duration or "30s", mice_per_s=mice_per_s,
                                                   mice_size=mice_size, queue=queue_kind))
    warmup_ns = base.duration // 5 if warmup is None else parsed("--warmup", units.parse_time, warmup)
    listener_for = _progress_per_size if not as_json and sys.stderr.isatty() else None
    with _mix_flags(scenario_file is None):  # its checks of the mix (the memory budget) name the mix's flags
        advisor = Advisor(base, targets, db, queue_key=queue_key, seeds=seeds, warmup_ns=warmup_ns,
                          resolution=resolution, max_bdp=max_bdp, workers=workers, study=study,
                          listener_for=listener_for)
    advice = advisor.advise()
    if figure is not None:
        with writing(figure):
            draw_advice(advice, figure)
    if as_json:
        click.echo(json.dumps(advice_json(advice, figure), indent=1))
    else:
        _print(advice, figure)
