"""What a buffer must achieve: targets such as "utilisation>=0.98" or "p99_delay<=50ms".

    utilisation>=0.98        bottleneck busy fraction (a number, or "98%")
    loss<=1%                 packets dropped by the bottleneck queue / packets arriving at it
    delay<=20ms              mean queueing delay (sojourn) of the packets the bottleneck sent
    p99_delay<=50ms          the 99th percentile of the queueing delay (any pNN, 1 ≤ NN ≤ 99)
    p10_throughput>=2Mbps    the 10th percentile of the flows' mean throughputs (any pNN)

Each metric has one meaningful direction for a buffer, and the parser accepts only it: more
buffer raises utilisation and throughput and lowers loss ("floors": ≥ for the first two, ≤ for
loss), and more buffer lengthens queueing delay ("ceilings": ≤). A floor target asks for a buffer
at least so large, a ceiling target for one at most so large (see `sizing.advisor`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .. import units
from ..errors import SpecError

__all__ = ["Target", "parse_target", "TARGET_FORMS"]

TARGET_FORMS = ('utilisation>=0.98, loss<=1%, delay<=20ms, p99_delay<=50ms, p10_throughput>=2Mbps')
_TARGET = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(>=|<=|≥|≤)\s*(\S.*?)\s*$")
_PERCENTILE = re.compile(r"^p([1-9][0-9]?)_(delay|throughput)$")


@dataclass(frozen=True)
class Target:
    """One target: `column` (the per-run metric it reads, in `unit`) `op` `value`."""

    text: str
    metric: str  # "utilisation", "loss", "delay", "p99_delay", "p10_throughput", ...
    op: Literal[">=", "<="]
    value: float
    column: str  # the metric's column: "utilisation", "loss", "delay_ms", "p99_delay_ms", ...
    unit: str  # "", "ms", "Mbps"
    # Floor targets hold from some buffer up; ceiling targets up to some buffer.
    floor: bool
    # The percentile of a pNN_ metric, else None.
    quantile: int | None = None

    def holds(self, mean: float | None) -> bool | None:
        """Whether the target holds at a probe: the metric's mean over the probe's seeds meets it
        (`sizing.advisor`, "The decision"); None when the metric is undefined."""
        if mean is None:
            return None
        return mean >= self.value if self.op == ">=" else mean <= self.value

    def settled(self, ci_low: float | None, ci_high: float | None) -> bool:
        """Whether the 95 % interval of the mean lies wholly on one side of the target, so that
        more seeds would hardly turn the verdict; False without an interval (one seed)."""
        if ci_low is None or ci_high is None:
            return False
        return not ci_low < self.value < ci_high

    def describe_value(self) -> str:
        if self.metric in ("utilisation", "loss"):
            return f"{self.value:.4g}"
        return f"{self.value:.4g} {self.unit}"


def _fraction(text: str) -> float:
    text = text.strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise units.UnitError(f'expected a fraction such as 0.98 or "98%", got "{text}"') from None
    if not 0.0 <= value <= 1.0:
        raise units.UnitError(f'a fraction lies in [0, 1], got "{text}"')
    return value


def parse_target(text: str, flag: str = "--target") -> Target:
    """A target from its text; a SpecError naming `flag` on anything else."""
    match = _TARGET.match(text)
    if match is None:
        raise SpecError(flag, f'cannot read "{text}": expected METRIC>=VALUE or METRIC<=VALUE, e.g. {TARGET_FORMS}')
    metric, op, value_text = match.group(1).lower(), match.group(2), match.group(3)
    op = {"≥": ">=", "≤": "<="}.get(op, op)
    metric = "utilisation" if metric == "utilization" else metric
    percentile = _PERCENTILE.match(metric)
    kind = percentile.group(2) if percentile else metric
    if kind not in ("utilisation", "loss", "delay", "throughput"):
        raise SpecError(flag, f'unknown metric "{metric}" in "{text}" (known: utilisation, loss, delay, '
                              "pNN_delay, pNN_throughput)")
    if kind == "throughput" and not percentile:
        raise SpecError(flag, f'"{text}": give a percentile of the per-flow throughputs, e.g. p10_throughput>=2Mbps')
    wanted: Literal[">=", "<="] = ">=" if kind in ("utilisation", "throughput") else "<="
    if op != wanted:
        raise SpecError(flag, f'"{text}": {metric} takes {wanted} (more buffer '
                              + ("raises" if kind in ("utilisation", "throughput") else "lowers" if kind == "loss"
                                 else "lengthens") + f" it), not {op}")
    try:
        if kind in ("utilisation", "loss"):
            value, column, unit = _fraction(value_text), kind, ""
        elif kind == "delay":
            value, column, unit = units.parse_time(value_text, positive=True) / 1e6, f"{metric}_ms", "ms"
        else:
            bps = units.parse_rate(value_text)
            assert bps is not None
            value, column, unit = bps / 1e6, f"{metric}_mbps", "Mbps"
    except units.UnitError as e:
        raise SpecError(flag, f'"{text}": {e}') from None
    return Target(text=text.strip(), metric=metric, op=wanted, value=value, column=column, unit=unit,
                  floor=kind != "delay", quantile=int(percentile.group(1)) if percentile else None)
