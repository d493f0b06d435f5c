"""A sweep: a base scenario, axes of overrides, and seeds (a TOML file or Python).

    name = "queue_vs_cca"                 # the study's name (default: the file's stem)
    description = "utilisation vs buffer"
    base = "../scenarios/dumbbell.toml"   # relative to this file; or a [base] table (a scenario)
    seeds = 3                             # replications: the base seed, +1, +2 (or a list of seeds)

    [set]                                 # overrides every point gets
    duration = "10s"

    [[axes]]                              # a list of values
    key = "topology.queue"
    values = ["18p", "100p", "500p"]

    [[axes]]                              # a numeric range, stop included: 1, 4, 7, 10
    key = "topology.flows"
    range = { start = 1, stop = 10, step = 3 }

    [[axes]]                              # a log range: 10, 100, 1000, with a unit appended
                                          # (whole start and stop: values rounded to whole numbers)
    key = "topology.bottleneck_rate"
    log = { start = 10, stop = 1000, num = 3 }
    unit = "Mbps"

    [[axes]]                              # zipped axes: values that move together
    zip = [{ key = "topology.queue", values = ["18p", "500p"] },
           { key = "meta.label", values = ["B_s", "B_l"] }]

The points are the Cartesian product of the axes (the first axis varies slowest), each run once
per seed. Keys are override paths (`spec.overrides`). A point whose values do not make a valid
scenario is not an error of the sweep: it fails alone, with its one-line reason, when it runs. A key
that names no field of the scenario is the sweep's error (`Sweep.check_keys`): the sweep is refused
before any point runs.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NoSuchField, SpecError
from ..spec import Scenario
from ..spec.overrides import split_path
from ..spec.scenario import parse_toml, read_text_file

__all__ = ["Axis", "Sweep", "SweepPoint", "MAX_POINTS"]

# A guard against a typo that asks for millions of runs (e.g. a step of 0.001).
MAX_POINTS = 100_000


@dataclass(frozen=True)
class Axis:
    """One axis: one key and its values, or several keys whose values move together (zip)."""

    keys: tuple[str, ...]
    # values[i] is the i-th step: one value per key.
    values: tuple[tuple[Any, ...], ...]

    @classmethod
    def of(cls, key: str, values: Sequence[Any]) -> Axis:
        return cls((key,), tuple((v,) for v in values))

    @classmethod
    def zipped(cls, columns: Mapping[str, Sequence[Any]]) -> Axis:
        lengths = {len(v) for v in columns.values()}
        if len(lengths) != 1:
            raise SpecError("zip", f"zipped axes need equally many values, got {sorted(lengths)}")
        return cls(tuple(columns), tuple(zip(*columns.values())))


@dataclass(frozen=True)
class SweepPoint:
    """One (point, seed) of a sweep: `index` numbers the point (the same for all its seeds)."""

    index: int
    values: Mapping[str, Any]
    seed: int


def _number_text(x: float, unit: str | None) -> Any:
    """A generated number as the spec wants it: an int where it is whole, else 12 significant
    digits; with a unit, the text "<number><unit>"."""
    value: Any = int(round(x)) if math.isclose(x, round(x), rel_tol=0, abs_tol=1e-9 * max(1.0, abs(x))) else \
        float(f"{x:.12g}")
    return f"{value}{unit}" if unit else value


def _finite(table: Mapping[str, Any], key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"{where}.{key}", f"expected a finite number, got {value!r}")
    return float(value)


def _range_values(table: Any, unit: str | None, where: str) -> list[Any]:
    if not isinstance(table, dict):
        raise SpecError(where, "expected a table {start, stop, step}")
    for key in table:
        if key not in ("start", "stop", "step"):
            raise SpecError(f"{where}.{key}", "unknown key (known: start, stop, step)")
    start, stop, step = (_finite(table, k, where) for k in ("start", "stop", "step"))
    if step == 0 or (stop - start) / step < 0:
        raise SpecError(f"{where}.step", f"step {step:g} never gets from {start:g} to {stop:g}")
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    if n > MAX_POINTS:
        raise SpecError(where, f"{n} values (at most {MAX_POINTS})")
    return [_number_text(start + k * step, unit) for k in range(n)]


def _log_values(table: Any, unit: str | None, where: str) -> list[Any]:
    if not isinstance(table, dict):
        raise SpecError(where, "expected a table {start, stop, num}")
    for key in table:
        if key not in ("start", "stop", "num"):
            raise SpecError(f"{where}.{key}", "unknown key (known: start, stop, num)")
    start, stop = (_finite(table, k, where) for k in ("start", "stop"))
    num = table.get("num")
    if isinstance(num, bool) or not isinstance(num, int) or not 1 <= num <= MAX_POINTS:
        raise SpecError(f"{where}.num", f"expected a whole number of values from 1 to {MAX_POINTS}, got {num!r}")
    if start <= 0 or stop <= 0:
        raise SpecError(where, "a log range needs start and stop above 0")
    if num == 1:
        return [_number_text(start, unit)]
    ratio = (stop / start) ** (1 / (num - 1))
    values = [start * ratio ** k for k in range(num)]
    if start.is_integer() and stop.is_integer():
        # Whole ends give whole values (packets, flows): rounded, repeats dropped.
        values = list(dict.fromkeys(float(round(v)) for v in values))
    return [_number_text(v, unit) for v in values]


def _axis_values(table: Mapping[str, Any], where: str) -> list[Any]:
    """The values of one (non-zipped) axis table: values, range or log."""
    unit = table.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise SpecError(f"{where}.unit", f"expected text such as \"Mbps\", got {unit!r}")
    given = [k for k in ("values", "range", "log") if k in table]
    if len(given) != 1:
        raise SpecError(where, "give exactly one of values, range or log" if given else
                        "missing values (give values = [...], range = {start, stop, step} or log = {start, stop, num})")
    kind = given[0]
    if kind == "values":
        values = table["values"]
        if not isinstance(values, list) or not values:
            raise SpecError(f"{where}.values", "expected a non-empty list")
        return [f"{v}{unit}" if unit and isinstance(v, int | float) and not isinstance(v, bool) else v
                for v in values]
    if kind == "range":
        return _range_values(table["range"], unit, f"{where}.range")
    return _log_values(table["log"], unit, f"{where}.log")


def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str):
        raise SpecError(where, f"expected an override key such as \"topology.queue\", got {key!r}")
    if key == "seed":
        raise SpecError(where, "the seed is not an axis: give seeds = N (or a list of seeds)")
    try:
        split_path(key)
    except SpecError as e:
        raise SpecError(where, e.reason) from None
    return key


def parse_axis(table: Any, where: str) -> Axis:
    if not isinstance(table, dict):
        raise SpecError(where, "expected a table with key and values (or zip)")
    if "zip" in table:
        for key in table:
            if key != "zip":
                raise SpecError(f"{where}.{key}", "unknown key beside zip")
        members = table["zip"]
        if not isinstance(members, list) or not members:
            raise SpecError(f"{where}.zip", "expected a non-empty list of axes")
        columns: dict[str, list[Any]] = {}
        for j, member in enumerate(members):
            member_where = f"{where}.zip[{j}]"
            if not isinstance(member, dict):
                raise SpecError(member_where, "expected a table with key and values")
            key = _check_key(member.get("key"), f"{member_where}.key")
            if key in columns:
                raise SpecError(f"{member_where}.key", f'"{key}" appears twice in this zip')
            _only(member, {"key", "values", "range", "log", "unit"}, member_where)
            columns[key] = _axis_values(member, member_where)
        try:
            return Axis.zipped(columns)
        except SpecError as e:
            raise SpecError(f"{where}.zip", e.reason) from None
    _only(table, {"key", "values", "range", "log", "unit"}, where)
    key = _check_key(table.get("key"), f"{where}.key")
    return Axis.of(key, _axis_values(table, where))


def _only(table: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in table:
        if key not in known:
            raise SpecError(f"{where}.{key}" if where else str(key), f"unknown key (known: {', '.join(sorted(known))})")


@dataclass
class Sweep:
    """A base scenario swept over axes of overrides, each point run under `seeds`."""

    name: str
    base: Scenario
    axes: list[Axis] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)
    description: str | None = None
    # The sweep as written (for the store: a study keeps the sweep that made it).
    written: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.seeds:
            self.seeds = [self.base.seed]
        keys = [k for axis in self.axes for k in axis.keys]
        for key in keys:
            if keys.count(key) > 1:
                raise SpecError("axes", f'"{key}" is swept by more than one axis')
        n = self.point_count() * len(self.seeds)
        if n > MAX_POINTS:
            raise SpecError("axes", f"{n} runs (points x seeds) is more than {MAX_POINTS}")

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, base_dir: Path | None = None, default_name: str = "sweep") -> Sweep:
        if not isinstance(data, dict):
            raise SpecError("sweep", "expected a table")
        _only(data, {"name", "description", "base", "seeds", "set", "axes"}, "")
        name = data.get("name", default_name)
        if not isinstance(name, str) or not name.strip():
            raise SpecError("name", f"expected a non-empty text, got {name!r}")
        description = data.get("description")
        if description is not None and not isinstance(description, str):
            raise SpecError("description", f"expected text, got {description!r}")
        base = _base(data.get("base"), base_dir)
        seeds = _seeds(data.get("seeds", 1), base.seed)
        overrides = data.get("set", {})
        if not isinstance(overrides, dict):
            raise SpecError("set", "expected a table of overrides (KEY = VALUE)")
        for key in overrides:
            _check_key(key, f"set.{key}")
        axes_data = data.get("axes", [])
        if not isinstance(axes_data, list):
            raise SpecError("axes", "expected a list of axes ([[axes]] tables)")
        axes = [parse_axis(a, f"axes[{i}]") for i, a in enumerate(axes_data)]
        if overrides:
            try:
                base = base.with_overrides(overrides)
            except SpecError as e:
                raise SpecError(f"set.{e.field}" if e.field else "set", e.reason) from None
        written = dict(data)
        if isinstance(data.get("base"), str) and base_dir is not None:
            written["base"] = str((base_dir / data["base"]).resolve())
        return cls(name=name.strip(), base=base, axes=axes, seeds=seeds, overrides=dict(overrides),
                   description=description, written=written)

    @classmethod
    def from_toml(cls, path: str | Path) -> Sweep:
        path = Path(path)
        data = parse_toml(read_text_file(path), str(path))
        return cls.from_dict(data, base_dir=path.parent, default_name=path.stem)

    # --- expansion --------------------------------------------------------------------------

    @property
    def axis_keys(self) -> list[str]:
        return [k for axis in self.axes for k in axis.keys]

    def point_count(self) -> int:
        return math.prod(len(axis.values) for axis in self.axes)

    def point_values(self) -> list[dict[str, Any]]:
        """The values of every point, in order: the product of the axes, first axis slowest."""
        out = []
        for steps in itertools.product(*(axis.values for axis in self.axes)):
            values: dict[str, Any] = {}
            for axis, step in zip(self.axes, steps):
                values.update(zip(axis.keys, step))
            out.append(values)
        return out

    def points(self) -> list[SweepPoint]:
        """Every (point, seed), point by point."""
        return [SweepPoint(index=i, values=values, seed=seed)
                for i, values in enumerate(self.point_values()) for seed in self.seeds]

    def scenario(self, point: SweepPoint) -> Scenario:
        """The scenario of one (point, seed); SpecError if its overrides do not make a valid one."""
        scenario = self.base.with_overrides(dict(point.values)) if point.values else self.base
        return scenario.with_seed(point.seed) if point.seed != scenario.seed else scenario

    def check_keys(self, error: SpecError) -> None:
        """Refuse the sweep if `error`, a point's, says that one of the sweep's keys names no field
        of the scenario (a typo in an axis key): it would fail at every point alike."""
        if not isinstance(error, NoSuchField):
            return
        for where, key in self._key_places():
            if error.field == key or key.startswith((error.field + ".", error.field + "[")):
                raise SpecError(where, f'"{key}" names no field of the scenario ({error})')

    def _key_places(self) -> list[tuple[str, str]]:
        """Every key an axis sweeps, and where the sweep's file gives it (`axes[i].key`, or
        `axes[i].zip[j].key`)."""
        places = []
        for i, axis in enumerate(self.axes):
            if len(axis.keys) == 1:
                places.append((f"axes[{i}].key", axis.keys[0]))
            else:
                places.extend((f"axes[{i}].zip[{j}].key", key) for j, key in enumerate(axis.keys))
        return places

    def to_json(self) -> str:
        return json.dumps(self.written or {"name": self.name}, sort_keys=True, default=str)


def _base(value: Any, base_dir: Path | None) -> Scenario:
    if isinstance(value, Scenario):
        return value
    if isinstance(value, str):
        path = Path(value)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            return Scenario.from_toml(path)
        except SpecError as e:
            raise SpecError(f"base ({e.field})" if e.field and e.field != str(path) else "base", e.reason) from None
    if isinstance(value, dict):
        try:
            return Scenario.from_dict(value, base_dir)
        except SpecError as e:
            raise SpecError(f"base.{e.field}" if e.field else "base", e.reason) from None
    if value is None:
        raise SpecError("base", "missing: the scenario to sweep (a file name or a [base] table)")
    raise SpecError("base", f"expected a file name or a [base] table, got {value!r}")


def _seeds(value: Any, base_seed: int) -> list[int]:
    if isinstance(value, bool):
        raise SpecError("seeds", f"expected a number of seeds or a list of seeds, got {value!r}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_POINTS:
            raise SpecError("seeds", f"expected 1 to {MAX_POINTS} seeds, got {value}")
        return [base_seed + k for k in range(value)]
    if isinstance(value, list) and value:
        for i, s in enumerate(value):
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**64:
                raise SpecError(f"seeds[{i}]", f"expected a seed from 0 to 2^64 - 1, got {s!r}")
        if len(set(value)) != len(value):
            raise SpecError("seeds", "a seed is listed twice")
        return list(value)
    raise SpecError("seeds", f"expected a number of seeds or a non-empty list of seeds, got {value!r}")
