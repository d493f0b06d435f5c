"""Distributions in the scenario spec: flow sizes, think times, on/off periods and RTTs.

A distribution is a TOML table with a ``dist`` key and its parameters, quantities written with
units (sizes as "20kB", times as "500ms"; shapes and sigmas are plain numbers):

=================  ========================================================================
``dist``           parameters
=================  ========================================================================
fixed              ``value``
uniform            ``low``, ``high``
exponential        ``mean``
pareto             ``shape`` and either ``mean`` (needs shape > 1) or ``scale`` (the minimum)
bounded_pareto     ``shape``, ``low``, ``high``
lognormal          ``sigma`` and one of ``median``, ``mean`` or ``mu`` (ln of the median in base units)
empirical          ``file`` (two columns: value, cumulative probability; ``#`` comments) or
                   ``points = [[value, p], ...]``; ``unit`` scales the values (default: base unit)
mixture            ``components = [{weight = w, dist = ...}, ...]`` (RTTs only, see below)
=================  ========================================================================

`parse_distribution` turns a table into a `Dist`: the engine form (numbers in base units, bytes
or ns, see crates/bufferlab-core/src/traffic/dist.rs) and the table as written. The engine draws
sizes and times itself, from seeded streams; RTTs are drawn here (`Dist.draw`), with numpy.

A mixture draws component by component in fixed proportions: of N draws, component k gets its
share w_k·N (largest remainders round it), in the order listed, as the SplitBuff paper gives each RTT mode
N/2 flows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import units
from ..errors import NoSuchField, SpecError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Dist", "parse_distribution", "Quantity"]

Quantity = Literal["bytes", "time"]

_KNOWN = ("fixed", "uniform", "exponential", "pareto", "bounded_pareto", "lognormal", "empirical", "mixture")
_EMPIRICAL_UNITS = {"bytes": "B", "time": "ns"}


@dataclass(frozen=True, eq=False)
class Dist:
    """A parsed distribution: `engine` is the engine's JSON form, `written` the user's table."""

    engine: dict[str, Any]
    written: dict[str, Any]
    components: tuple[tuple[float, Dist], ...] = field(default=())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dist) and self.written == other.written

    def __hash__(self) -> int:  # pragma: no cover - dicts are not hashed in practice
        return id(self)

    def mean(self) -> float | None:
        """The mean in base units, where it is finite (as `Distribution::mean` in
        crates/bufferlab-core/src/traffic/dist.rs computes it)."""
        e = self.engine
        match e["dist"]:
            case "fixed":
                return float(e["value"])
            case "uniform":
                return (float(e["low"]) + float(e["high"])) / 2
            case "exponential":
                return float(e["mean"])
            case "pareto":
                shape, scale = float(e["shape"]), float(e["scale"])
                return None if shape <= 1 else shape * scale / (shape - 1)
            case "bounded_pareto":
                a, lo, hi = float(e["shape"]), float(e["low"]), float(e["high"])
                # E[X] = l^a / (1 − (l/h)^a) · a/(a − 1) · (l^(1−a) − h^(1−a)); a = 1: l^a/(1 − l/h) · ln(h/l).
                norm = math.pow(lo, a) / (1.0 - math.pow(lo / hi, a))
                if abs(a - 1.0) < 1e-12:
                    return norm * math.log(hi / lo)
                return norm * a / (a - 1.0) * (math.pow(lo, 1.0 - a) - math.pow(hi, 1.0 - a))
            case "lognormal":
                return math.exp(float(e["mu"]) + float(e["sigma"]) ** 2 / 2)
            case "empirical":
                # A piecewise-linear CDF: the mass below the first point sits on it, then each
                # segment is uniform, contributing its probability times its midpoint.
                points = [(float(v), float(p)) for v, p in e["points"]]
                mean = points[0][0] * points[0][1]
                for (v0, p0), (v1, p1) in zip(points, points[1:]):
                    mean += (p1 - p0) * (v0 + v1) / 2
                return mean
            case "mixture":
                total, weighted = 0.0, 0.0
                for weight, component in self.components:
                    m = component.mean()
                    if m is None:
                        return None
                    total += weight
                    weighted += weight * m
                return weighted / total
        return None

    def minimum(self) -> float:
        """The smallest value a draw can take (the lower end of the support), in base units."""
        e = self.engine
        match e["dist"]:
            case "fixed":
                return float(e["value"])
            case "uniform" | "bounded_pareto":
                return float(e["low"])
            case "pareto":
                return float(e["scale"])
            case "empirical":
                return float(e["points"][0][0])
            case "mixture":
                return min(component.minimum() for _, component in self.components)
        return 0.0  # exponential, lognormal: any positive value down to 0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """`n` variates in base units (float64), from `rng`."""
        import numpy as np

        e = self.engine
        match e["dist"]:
            case "fixed":
                return np.full(n, float(e["value"]))
            case "uniform":
                return rng.uniform(float(e["low"]), float(e["high"]), n)
            case "exponential":
                return rng.exponential(float(e["mean"]), n)
            case "pareto":
                # numpy's pareto is the Lomax form: (X + 1) · scale is Pareto type I.
                return (rng.pareto(float(e["shape"]), n) + 1.0) * float(e["scale"])
            case "bounded_pareto":
                a, lo, hi = float(e["shape"]), float(e["low"]), float(e["high"])
                u = rng.random(n)
                return np.minimum(lo * (1.0 - u * (1.0 - math.pow(lo / hi, a))) ** (-1.0 / a), hi)
            case "lognormal":
                return rng.lognormal(float(e["mu"]), float(e["sigma"]), n)
            case "empirical":
                points = np.asarray(e["points"], dtype=np.float64)  # (value, cumulative probability) rows
                return np.interp(rng.random(n), points[:, 1], points[:, 0])
            case "mixture":
                counts = _shares([w for w, _ in self.components], n)
                return np.concatenate([d.draw(rng, k) for (_, d), k in zip(self.components, counts)])
        raise AssertionError(e["dist"])  # pragma: no cover


def _shares(weights: list[float], n: int) -> list[int]:
    """Split n into parts proportional to `weights` (largest remainders)."""
    total = sum(weights)
    exact = [w / total * n for w in weights]
    counts = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: n - sum(counts)]:
        counts[i] += 1
    return counts


def _quantity(value: Any, quantity: Quantity, key: str) -> float:
    try:
        if quantity == "bytes":
            return float(units.parse_bytes(value, allow_zero=True))
        return float(units.parse_time(value))
    except units.UnitError as e:
        raise SpecError(key, str(e)) from None


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(key, f"expected a number, got {value!r}")
    return float(value)


# The files a spec's validation reads besides the spec itself (empirical distributions' tables),
# while `files_read` watches: a plan kept by the plan cache is valid only while they are unchanged.
_files_read: ContextVar[list[Path] | None] = ContextVar("bufferlab_spec_files_read", default=None)


@contextmanager
def files_read() -> Iterator[list[Path]]:
    """The files that the validation in the ``with`` block reads (absolute paths, in order)."""
    files: list[Path] = []
    token = _files_read.set(files)
    try:
        yield files
    finally:
        _files_read.reset(token)


def _read_points(path: Path, scale: float, key: str) -> list[list[float]]:
    if (watching := _files_read.get()) is not None:
        watching.append(path.resolve())
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SpecError(key, f"cannot read {path}: {e.strerror or e}") from None
    points = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].replace(",", " ").split()
        if not text:
            continue
        try:
            value, p = (float(x) for x in text)
        except ValueError:
            raise SpecError(key, f"{path}:{number}: expected two numbers (value, cumulative probability)") from None
        points.append([value * scale, p])
    return points


def parse_distribution(value: Any, quantity: Quantity, base_dir: Path | None = None,
                       *, allow_mixture: bool = False) -> Dist:
    """Parse a distribution table of sizes (`quantity` "bytes") or times ("time")."""
    if isinstance(value, Dist):
        return value
    if not isinstance(value, dict):
        raise SpecError("", f'expected a distribution table like {{dist = "exponential", mean = ...}}, got {value!r}')
    kind = value.get("dist")
    if kind not in _KNOWN or (kind == "mixture" and not allow_mixture):
        known = [k for k in _KNOWN if allow_mixture or k != "mixture"]
        raise SpecError("dist", f"unknown distribution {kind!r} (known: {', '.join(known)})")
    allowed = {"fixed": {"value"}, "uniform": {"low", "high"}, "exponential": {"mean"},
               "pareto": {"shape", "mean", "scale"}, "bounded_pareto": {"shape", "low", "high"},
               "lognormal": {"sigma", "median", "mean", "mu"}, "empirical": {"file", "points", "unit"},
               "mixture": {"components"}}[kind]
    for key in value:
        if key != "dist" and key not in allowed:
            raise NoSuchField(str(key), f"unknown key for a {kind} distribution (known: {', '.join(sorted(allowed))})")

    def need(key: str) -> Any:
        if key not in value:
            raise SpecError(key, "missing required key")
        return value[key]

    def q(key: str) -> float:
        return _quantity(need(key), quantity, key)

    components: tuple[tuple[float, Dist], ...] = ()
    # The engine form's parameters, in base units.
    parameters: dict[str, float | list[list[float]]]
    match kind:
        case "fixed":
            parameters = {"value": q("value")}
        case "uniform":
            parameters = {"low": q("low"), "high": q("high")}
        case "exponential":
            parameters = {"mean": q("mean")}
        case "pareto":
            shape = _number(need("shape"), "shape")
            if ("mean" in value) == ("scale" in value):
                raise SpecError("scale", "give either mean or scale")
            if "scale" in value:
                scale = q("scale")
            else:
                if shape <= 1:
                    raise SpecError("mean", f"a Pareto of shape {shape} <= 1 has no finite mean: give its scale")
                scale = q("mean") * (shape - 1) / shape  # mean = shape·scale/(shape − 1)
            parameters = {"shape": shape, "scale": scale}
        case "bounded_pareto":
            parameters = {"shape": _number(need("shape"), "shape"), "low": q("low"), "high": q("high")}
        case "lognormal":
            sigma = _number(need("sigma"), "sigma")
            given = [k for k in ("median", "mean", "mu") if k in value]
            if len(given) != 1:
                raise SpecError("median", "give exactly one of median, mean or mu")
            if given[0] == "mu":
                mu = _number(value["mu"], "mu")
            else:
                x = q(given[0])
                if x <= 0:
                    raise SpecError(given[0], "must be positive")
                # median = e^mu; mean = e^(mu + sigma²/2).
                mu = math.log(x) if given[0] == "median" else math.log(x) - sigma**2 / 2
            parameters = {"mu": mu, "sigma": sigma}
        case "empirical":
            unit = value.get("unit", _EMPIRICAL_UNITS[quantity])
            scale = _quantity(f"1{unit}", quantity, "unit")
            if ("file" in value) == ("points" in value):
                raise SpecError("file", "give either file or points")
            if "file" in value:
                path = Path(need("file"))
                if not path.is_absolute() and base_dir is not None:
                    path = base_dir / path
                points = _read_points(path, scale, "file")
                # The table keeps the path it was read from, so it reads the same from anywhere.
                value = dict(value, file=str(path.resolve()))
            else:
                raw = value["points"]
                if not isinstance(raw, list) or not all(isinstance(p, list) and len(p) == 2 for p in raw):
                    raise SpecError("points", "expected a list of [value, cumulative probability] pairs")
                points = [[_number(v, "points") * scale, _number(p, "points")] for v, p in raw]
            parameters = {"points": points}
        case "mixture":
            raw = need("components")
            if not isinstance(raw, list) or not raw:
                raise SpecError("components", "expected a non-empty list of {weight = w, dist = ...} tables")
            parsed = []
            for i, c in enumerate(raw):
                if not isinstance(c, dict) or "weight" not in c:
                    raise SpecError(f"components[{i}].weight", "missing required key")
                weight = _number(c["weight"], f"components[{i}].weight")
                if weight <= 0:
                    raise SpecError(f"components[{i}].weight", "must be positive")
                rest = {k: v for k, v in c.items() if k != "weight"}
                try:
                    parsed.append((weight, parse_distribution(rest, quantity, base_dir)))
                except SpecError as e:
                    raise type(e)(f"components[{i}].{e.field}" if e.field else f"components[{i}]", e.reason) from None
            components = tuple(parsed)
            parameters = {}
    engine: dict[str, Any] = {"dist": kind, **parameters}
    if kind != "mixture":
        from .. import _core

        reason = _core.check_distribution(_json(engine))
        if reason:
            raise SpecError("", reason)
    return Dist(engine=engine, written=dict(value), components=components)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)
