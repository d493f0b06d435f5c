"""The buffer advisor: the smallest bottleneck buffer that meets a set of targets, by simulation.

A target is a floor or a ceiling (`sizing.targets`): utilisation, per-flow throughput and (low)
loss come with more buffer, so each floor target holds from some buffer B_floor up; queueing
delay grows with the buffer, so a ceiling target holds up to some B_ceiling. The advice is the
smallest buffer meeting every floor target, if it also meets the ceilings; with ceilings only,
the largest buffer within them (the smallest would be one packet: no buffer at all). A delay
ceiling on a full queue is its drain time: B = d · C.

The search probes buffer sizes in packets. It starts from a rule of thumb (the Stanford buffer of
the link's long-lived flows for floors, the drain time of the tightest delay ceiling for
ceilings), brackets the boundary by doubling or halving, then bisects until the bracket is
narrower than `resolution` (relative) or one packet. The searched size is the queue's: a FIFO's
size, or an AQM's hard limit with the AQM kept as the scenario gives it (`sizing.limits` says what
the limit then means: the AQM, not the limit, sets the standing queue). Each probe is a point of a sweep over the
queue's size, run under every seed (`study.execute.run_sweep`) and stored in one study; probes
already stored are not simulated again, so asking the same question twice is instant. The metrics
are measured after a warm-up (`analysis.window`).

The decision. A target holds at a probe when the mean of its metric over the probe's seeds meets
it. The mean estimates the metric the buffer gives on average over replications, whatever their
number: more seeds narrow its 95 % interval (shown beside it, Student's t, `analysis.aggregate`)
but do not move it one way. A rule on the interval's bound instead ("holds when the whole
interval clears the target") asks for a margin of t_{0.975,n−1}·s/√n, which shrinks with the
number of seeds n (2.48·s at n = 3, 1.24·s at 5, 0.84·s at 8): the advice then fell with every
seed added (20 CUBIC flows at 1 Gb/s, utilisation ≥ 0.95: 171 packets with 3 seeds, 113 with 5,
108 with 8). With the mean, the advice scatters about the buffer where the mean curve crosses the
target, by about s/√n divided by the curve's slope there; a probe whose interval reaches across
the target is marked unsettled (`Target.settled`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import SpecError
from ..queues import FifoQueue, Queue
from ..spec import Scenario
from ..study.execute import Listener
from .limits import limit_meaning
from .rules import BufferSize
from .targets import Target

if TYPE_CHECKING:  # pragma: no cover
    from ..study.executors import Executor

__all__ = ["Advisor", "Advice", "Probe", "LinkContext", "link_context", "mix_scenario", "judge_probe", "searched_queue"]

# A rule of thumb's start when the link has no long-lived flow to size it by.
_DEFAULT_START = 16


@dataclass
class Probe:
    """One buffer size simulated under every seed: each target metric's mean and 95 % interval,
    whether each target holds (its mean meets it) and whether that is settled (the interval lies
    on one side of the target)."""

    packets: int
    point: int
    seeds: int
    metrics: dict[str, tuple[float | None, float | None, float | None]]
    holds: dict[str, bool | None]
    settled: dict[str, bool] = field(default_factory=dict)
    # The fast recoveries of the probe's runs, and those that set ssthresh above the window in use
    # (`analysis.summary.raising_reductions_note`).
    recoveries: int = 0
    raising_reductions: int = 0

    def meets(self, targets: Sequence[Target]) -> bool:
        return all(self.holds.get(t.text) is True for t in targets)


def judge_probe(packets: int, point: int, per_run: pl.DataFrame, targets: Sequence[Target]) -> Probe:
    """A probe from its runs' metrics (`per_run`: one row per seed, a column per metric): each
    metric's mean and 95 % interval over the seeds, each target judged on the mean (the module
    docstring's "The decision") and whether the interval settles it."""
    from ..analysis.aggregate import aggregate_over_seeds

    columns = [c for c in per_run.columns if c != "run_id"]
    row = aggregate_over_seeds(per_run.with_columns(pl.lit(point).alias("point")), ["point"], columns).row(
        0, named=True)
    metrics = {c: (row[c], row[f"{c}_ci_low"], row[f"{c}_ci_high"]) for c in columns}
    return Probe(packets=packets, point=point, seeds=int(row["seeds"]), metrics=metrics,
                 holds={t.text: t.holds(metrics[t.column][0]) for t in targets},
                 settled={t.text: t.settled(*metrics[t.column][1:]) for t in targets})


@dataclass
class LinkContext:
    """What the rules of thumb know about the searched queue's link."""

    rate_bps: int | None
    rtts_ns: list[int]
    packet_bytes: int
    # The long-lived flows' controllers that cut their window by a constant β (each once), whose
    # (1 − β)/β rule is among the rules of thumb.
    controllers: list[str] = field(default_factory=list)

    @property
    def bdp_packets(self) -> float | None:
        if self.rate_bps is None or not self.rtts_ns:
            return None
        return self.rate_bps / 8 * (sum(self.rtts_ns) / len(self.rtts_ns)) / 1e9 / self.packet_bytes


@dataclass
class Advice:
    """What the search found: the buffer (None when no buffer up to `max_packets` meets the
    targets, with `reason` and the `closest` probe), every probe, and the rules of thumb."""

    study: str
    targets: list[Target]
    link: LinkContext
    buffer_packets: int | None
    probes: list[Probe]
    max_packets: int
    resolution: float
    reason: str = ""
    closest: Probe | None = None
    rules: list[tuple[BufferSize, str]] = field(default_factory=list)
    simulated: int = 0
    reused: int = 0
    # The searched queue as the scenario gives it (its size aside), and what its size means.
    queue: str = "fifo"
    limit_meaning: str = ""

    @property
    def notes(self) -> list[str]:
        """What the probes' counters say the reader should know before trusting the advice: the
        fast recoveries that raised a window instead of reducing it."""
        from ..analysis.summary import raising_reductions_note

        raising = [p for p in self.probes if p.raising_reductions]
        if not raising:
            return []
        return [raising_reductions_note(sum(p.raising_reductions for p in raising),
                                        sum(p.recoveries for p in self.probes),
                                        f"in {len(raising)} of {len(self.probes)} probes")]

    @property
    def buffer_ms(self) -> float | None:
        if self.buffer_packets is None or self.link.rate_bps is None:
            return None
        return self.buffer_packets * self.link.packet_bytes * 8 / self.link.rate_bps * 1e3


def link_context(base: Scenario, queue_key: str) -> LinkContext:
    """The rate, long-lived flows' RTTs and packet size of the bottleneck link of `base` (the
    spec's bottleneck, else the slowest link that long-lived flows cross)."""
    from ..pipeline.plan import plan
    from ..spec.queue_sizes import DEFAULT_PACKET, link_loads

    resolved = plan(base).resolved
    engine = resolved.engine
    loads = link_loads(engine)
    if resolved.bottleneck is not None:
        load = loads[resolved.bottleneck // 2]
    else:
        crossed = [ld for ld in loads if ld.rtts_ns and ld.rate_bps is not None] or \
            [ld for ld in loads if ld.rate_bps is not None]
        if not crossed:
            raise SpecError(queue_key, "the scenario has no link of finite rate to size a buffer for")
        load = min(crossed, key=lambda ld: ld.rate_bps or 0)
    from .rules import MULTIPLICATIVE_DECREASE

    controllers = [c for c in dict.fromkeys(load.controllers) if c in MULTIPLICATIVE_DECREASE]
    return LinkContext(load.rate_bps, list(load.rtts_ns), load.packet_bytes or DEFAULT_PACKET, controllers)


def mix_scenario(*, rate: str, flows: int, rtt: str, ccas: Sequence[str], duration: str, mice_per_s: float = 0.0,
                 mice_size: str = "20kB", start_jitter: str = "1s", sample_interval: str = "10ms",
                 queue: str = "fifo") -> dict[str, Any]:
    """A dumbbell carrying a traffic mix: `flows` long-lived flows whose RTTs are `rtt` ("100ms")
    or uniform over a range ("20ms..200ms"), controllers assigned in turn, starts spread
    uniformly over `start_jitter` (so seeds are replications), and optionally Poisson mice
    (`mice_per_s` in all, Pareto sizes of shape 1.2 and mean `mice_size`) toward dst_0. The
    bottleneck's queue is a FIFO, or the AQM `queue` names with its defaults."""
    if ".." in rtt:
        low, high = (part.strip() for part in rtt.split("..", 1))
        rtt_field: Any = {"dist": "uniform", "low": low, "high": high}
    else:
        rtt_field = rtt.strip()
    scenario: dict[str, Any] = {
        "name": "mix",
        "seed": 1,
        "duration": duration,
        "sample_interval": sample_interval,
        "topology": {"kind": "dumbbell", "flows": flows, "bottleneck_rate": rate, "rtt": rtt_field,
                     "queue": "100p" if queue == "fifo" else {"kind": queue, "limit": "100p"}},
        "flow_defaults": {"traffic": "greedy", "start": {"dist": "uniform", "low": "0s", "high": start_jitter}},
        # The advisor reads the bottleneck's series and per-flow counters: no per-flow series.
        "record": {"flows": "none", "links": ["btl"]},
    }
    if len(ccas) == 1:
        scenario["flow_defaults"]["cca"] = ccas[0]
    else:
        scenario["flows"] = [{"cca": ccas[i % len(ccas)]} for i in range(flows)]
        del scenario["topology"]["flows"]
    if mice_per_s > 0:
        scenario["generators"] = [{"name": "mice", "kind": "poisson", "sources": "src_*", "dst": "dst_0",
                                   "arrivals_per_s": mice_per_s / flows,
                                   "size": {"dist": "pareto", "shape": 1.2, "mean": mice_size}}]
    return scenario


class Advisor:
    """The search of the module docstring over the size of `queue_key` in `base`."""

    def __init__(self, base: Scenario, targets: Sequence[Target], db: str | Path, *, queue_key: str = "topology.queue",
                 seeds: int = 1, warmup_ns: int = 0, resolution: float = 0.02, max_bdp: float = 64.0,
                 workers: int | None = 1, study: str | None = None,
                 listener_for: Callable[[int], AbstractContextManager[Listener]] | None = None) -> None:
        if not targets:
            raise SpecError("--target", "give at least one target, e.g. --target 'utilisation>=0.98'")
        if seeds < 1:
            raise SpecError("--seeds", f"expected 1 or more, got {seeds}")
        if not 0 < resolution < 1:
            raise SpecError("--resolution", f"expected a fraction between 0 and 1, got {resolution}")
        if warmup_ns >= base.duration:
            raise SpecError("--warmup", "the warm-up must end before the run does")
        if base.record is not None and not base.record.store_series:
            raise SpecError("record.store_series", "advise measures the bottleneck's stored time series after the "
                                                   "warm-up: a scenario with store_series = false cannot be advised")
        try:  # the searched queue must exist before a probe is stored under it
            base.with_overrides({queue_key: "100p"})
        except SpecError as e:
            raise SpecError("--queue-key", f'"{queue_key}" is no queue of the scenario: {e}') from None
        self.queue = searched_queue(base, queue_key)
        # A FIFO is replaced by FIFOs of each size; an AQM keeps its kind and settings, its limit searched.
        self.size_key = queue_key if isinstance(self.queue, FifoQueue) else f"{queue_key}.limit"
        try:  # the searched size must exist before a probe is stored under it
            base.with_overrides({self.size_key: "100p"})
        except SpecError as e:
            raise SpecError("--queue-key", f'"{queue_key}" has no size in packets to search: {e}') from None
        self.base, self.targets, self.db = base, list(targets), Path(db)
        self.queue_key, self.seeds, self.warmup_ns, self.resolution = queue_key, seeds, warmup_ns, resolution
        self.workers = workers
        self.listener_for = listener_for
        self.link = link_context(base, queue_key)
        bdp = self.link.bdp_packets
        self.max_packets = max(2, round(max_bdp * bdp)) if bdp else 100_000
        self.study = study or self._study_name()
        self.sizes: list[int] = []
        self.probes: dict[int, Probe] = {}
        self.simulated = 0
        self._executor: Executor | None = None

    def _study_name(self) -> str:
        """Named after the question, so that asking it again finds its probes."""
        question = json.dumps({"base": self.base.to_dict(), "queue": self.queue_key, "seeds": self.seeds,
                               "warmup": self.warmup_ns, "targets": [t.text for t in self.targets],
                               "resolution": self.resolution, "max": self.max_packets}, sort_keys=True, default=str)
        return f"advise-{self.base.name or 'scenario'}-{hashlib.sha256(question.encode()).hexdigest()[:8]}"

    # --- probes -------------------------------------------------------------------------------

    def probe(self, packets: int) -> Probe:
        """The targets' metrics at a buffer of `packets` (simulated now unless stored)."""
        if packets in self.probes:
            return self.probes[packets]
        from ..study.execute import run_sweep
        from ..study.sweep import Axis, Sweep

        self.sizes.append(packets)
        values = [f"{n}p" for n in self.sizes]
        seeds = [self.base.seed + k for k in range(self.seeds)]
        sweep = Sweep(name=self.study, base=self.base, axes=[Axis.of(self.size_key, values)], seeds=seeds,
                      description=f"bufferlab advise: {', '.join(t.text for t in self.targets)}",
                      written={"name": self.study, "advise": [t.text for t in self.targets],
                               "base": self.base.to_dict(), "axes": [{"key": self.size_key, "values": values}],
                               "seeds": seeds})
        # Within `advise`, every probe runs on its one executor (the workers start once, not per
        # probe); a probe asked for alone gets an executor of its own.
        shared = self._executor is not None
        executor = self._executor or self._new_executor()
        if self.listener_for is not None:
            with self.listener_for(packets) as listener:
                report = run_sweep(sweep, self.db, executor, listener, keep_executor=shared)
        else:
            report = run_sweep(sweep, self.db, executor, Listener(), keep_executor=shared)
        if report.interrupted:
            raise KeyboardInterrupt
        self.simulated += report.simulated
        probe = self._measure(packets, len(self.sizes) - 1, report)
        self.probes[packets] = probe
        return probe

    def _measure(self, packets: int, point: int, report: Any) -> Probe:
        from ..analysis.window import window_metrics
        from ..store.reader import load

        res = load(self.db)
        # A few queries per run (its bottleneck, series and flow metrics) on one connection: each
        # would open the store again.
        with res.one_connection():
            runs = res.study_runs(self.study).filter((pl.col("point") == point) & (pl.col("status") == "complete"))
            if runs.height == 0:
                errors = [e for p, e in report.failed if p.index == point]
                raise SpecError(self.queue_key,
                                f"the run at {packets}p failed: " + (errors[0] if errors else "unknown"))
            per_run = window_metrics(res, runs["run_id"].unique().to_list(), self.warmup_ns,
                                     delay_quantiles=sorted({t.quantile for t in self.targets
                                                             if t.quantile is not None and not t.floor}),
                                     throughput_quantiles=sorted({t.quantile for t in self.targets
                                                                  if t.quantile is not None and t.floor}))
            counts = res.recovery_counts(runs["run_id"].unique().to_list())
        per_run = runs.select("run_id").join(per_run, on="run_id", how="left", maintain_order="left")
        return replace(judge_probe(packets, point, per_run, self.targets), recoveries=counts.recoveries,
                       raising_reductions=counts.raised)

    # --- search -------------------------------------------------------------------------------

    def _narrow_enough(self, low: int, high: int) -> bool:
        return high - low <= max(1, int(self.resolution * high))

    def _smallest_meeting(self, targets: Sequence[Target], start: int) -> int | None:
        """The smallest buffer in [1, max] where every (floor) target holds, None if none does."""
        def ok(n: int) -> bool:
            return self.probe(n).meets(targets)

        n = min(max(1, start), self.max_packets)
        if ok(n):
            high = n
            while True:  # halve until a size fails
                if high == 1:
                    return 1
                low = max(1, high // 2)
                if not ok(low):
                    break
                high = low
        else:
            low = n
            while True:  # double until a size holds
                if low >= self.max_packets:
                    return None
                high = min(self.max_packets, 2 * low)
                if ok(high):
                    break
                low = high
        while not self._narrow_enough(low, high):
            mid = (low + high) // 2
            if ok(mid):
                high = mid
            else:
                low = mid
        return high

    def _largest_meeting(self, targets: Sequence[Target], start: int) -> int | None:
        """The largest buffer in [1, max] where every (ceiling) target holds, None if none does."""
        def ok(n: int) -> bool:
            return self.probe(n).meets(targets)

        n = min(max(1, start), self.max_packets)
        if ok(n):
            low = n
            while True:
                if low >= self.max_packets:
                    return self.max_packets
                high = min(self.max_packets, 2 * low)
                if not ok(high):
                    break
                low = high
        else:
            high = n
            while True:
                if high == 1:
                    return None
                low = max(1, high // 2)
                if ok(low):
                    break
                high = low
        while not self._narrow_enough(low, high):
            mid = (low + high) // 2
            if ok(mid):
                low = mid
            else:
                high = mid
        return low

    def _floor_start(self) -> int:
        from . import rules

        if self.link.rate_bps is None or not self.link.rtts_ns:
            return _DEFAULT_START
        return rules.stanford(self.link.rate_bps, self.link.rtts_ns, len(self.link.rtts_ns),
                              self.link.packet_bytes).packets

    def _ceiling_start(self, ceilings: Sequence[Target]) -> int:
        if self.link.rate_bps is None:
            return _DEFAULT_START
        tightest_ms = min(t.value for t in ceilings)
        return max(1, round(self.link.rate_bps * tightest_ms / 1e3 / 8 / self.link.packet_bytes))  # B = d · C

    def _new_executor(self) -> Executor:
        from ..study.executors import make_executor

        return make_executor(self.workers if self.workers is not None else min(self.seeds, _cores()), None)

    def advise(self) -> Advice:
        """The search of the module docstring, its probes on one executor."""
        self._executor = self._new_executor()
        try:
            return self._advise()
        finally:
            self._executor.close()
            self._executor = None

    def _advise(self) -> Advice:
        floors = [t for t in self.targets if t.floor]
        ceilings = [t for t in self.targets if not t.floor]
        buffer: int | None
        reason = ""
        if floors:
            buffer = self._smallest_meeting(floors, self._floor_start())
            if buffer is None:
                reason = f"no buffer up to {self.max_packets}p meets: " + ", ".join(
                    t.text for t in floors if self.probe(self.max_packets).holds.get(t.text) is not True)
            elif ceilings and not self.probe(buffer).meets(ceilings):
                broken = [t.text for t in ceilings if self.probe(buffer).holds.get(t.text) is not True]
                reason = (f"no buffer up to {self.max_packets}p meets: " + ", ".join(broken) + " together with "
                          + ", ".join(t.text for t in floors) + f" (these need at least {buffer}p)")
                buffer = None
        else:
            buffer = self._largest_meeting(ceilings, self._ceiling_start(ceilings))
            if buffer is None:
                reason = "no buffer of 1p or more meets: " + ", ".join(
                    t.text for t in ceilings if self.probe(1).holds.get(t.text) is not True)
        probes = sorted(self.probes.values(), key=lambda p: p.packets)
        closest = None
        if buffer is None:
            closest = max(probes, key=lambda p: (sum(v is True for v in p.holds.values()),
                                                 p.packets if floors else -p.packets))
        return Advice(study=self.study, targets=self.targets, link=self.link, buffer_packets=buffer, probes=probes,
                      max_packets=self.max_packets, resolution=self.resolution, reason=reason, closest=closest,
                      rules=self._rules(), simulated=self.simulated,
                      reused=max(0, len(probes) * self.seeds - self.simulated), queue=_without_size(self.queue),
                      limit_meaning=limit_meaning(self.queue, self.link.rate_bps, self.link.packet_bytes))

    def _rules(self) -> list[tuple[BufferSize, str]]:
        from .rules import size_rows

        if self.link.rate_bps is None or not self.link.rtts_ns:
            return []
        return size_rows(self.link.rate_bps, self.link.rtts_ns, self.link.packet_bytes, flows=len(self.link.rtts_ns),
                         controllers=self.link.controllers)


def _without_size(queue: Queue) -> str:
    """The queue's kind and settings, without the size the search replaces ("codel, target 5ms, …")."""
    if isinstance(queue, FifoQueue):
        return "fifo"
    return str(queue).replace(f" {queue.limit}", "", 1)


def searched_queue(base: Scenario, queue_key: str) -> Queue:
    """The queue at `queue_key` of `base` (a FIFO for a bare size), as its model."""
    from ..queues import parse_queue
    from ..spec.overrides import split_path

    value: Any = base.to_dict()
    for part in split_path(queue_key):
        if isinstance(part, int) and isinstance(value, list) and -len(value) <= part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise SpecError("--queue-key", f'"{queue_key}" is no queue of the scenario')
    try:
        return parse_queue(value)
    except SpecError as e:
        raise SpecError("--queue-key", f'"{queue_key}" is no queue of the scenario: {e}') from None


def _cores() -> int:
    from ..study.executors import default_workers

    return default_workers()
