"""Step 1, plan: a validated Scenario becomes the engine's input, checked once.

`plan(scenario)` expands the topology and resolves every default (`Scenario.resolve`), asks the
engine to check what only it can (routes between endpoints, ...), and fixes the run's identity:
``sha256(canonical engine spec + "\\n" + engine version)``. A run whose time series are not
stored (`[record] store_series = false`) is another stored result of the same simulation: its
identity hashes ``"\\n" + SERIES_NOT_STORED`` after those, so that a later run of the spec that
keeps its series is not taken for it. A plan is plain data (picklable), so a sweep can send it to
any worker.

Seeds. A run's seed reaches the engine's random streams (link loss, generators, on/off periods,
BBR) and the draws made while resolving (RTTs from a distribution, jittered start times). When a
spec draws no random number anywhere, every seed gives the same run: its engine spec then carries
seed 0, so all of them share one identity (one stored run), and `Plan.seed_matters` is False.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..spec.resolved import Resolved, canonical_json, json_members
from .budget import check_memory
from .engine import core, engine_error, engine_version

if TYPE_CHECKING:  # pragma: no cover - a plan holds what it needs of its scenario, not the model
    from ..spec import Scenario

__all__ = ["Plan", "plan", "run_identity", "SERIES_NOT_STORED"]


# What a run id hashes last when the run's time series are not stored (see the module docstring).
SERIES_NOT_STORED = "series not stored"


def run_identity(engine_spec_json: str, version: str, store_series: bool = True) -> str:
    """The run id: what ran (canonical engine spec) on which engine, and whether its series are kept."""
    return _identities(engine_spec_json, version, store_series)[1]


def _identities(engine_spec_json: str, version: str, store_series: bool = True) -> tuple[str, str]:
    """(sha256 of the spec alone: the store's `spec_hash`, the run id) from one pass over the
    spec's bytes (~12 MB for 10,000 flows): the run id hashes the same bytes followed by
    ``"\n" + version``, and ``"\n" + SERIES_NOT_STORED`` for a run stored without
    its series."""
    import hashlib  # not before a plan kept by the plan cache is run: it loads OpenSSL

    digest = hashlib.sha256(engine_spec_json.encode())
    spec_hash = digest.hexdigest()
    digest.update(f"\n{version}".encode())
    if not store_series:
        digest.update(f"\n{SERIES_NOT_STORED}".encode())
    return spec_hash, digest.hexdigest()


@dataclass(frozen=True)
class Plan:
    """One run, ready to simulate: its resolved engine spec, its identity, and what the steps
    after the engine need of its scenario. Plain data, without the scenario's pydantic model, so
    that a plan read back from the plan cache (`plan_cache`) or sent to a sweep's worker needs no
    pydantic."""

    resolved: Resolved
    spec_json: str
    # sha256 of `spec_json` alone: the store's `spec_hash` (what ran, whatever the engine).
    spec_hash: str
    engine_version: str
    run_id: str
    # False when no seed could change the run (see the module docstring).
    seed_matters: bool
    name: str | None
    seed: int
    duration_ns: int
    # The scenario as the user wrote it (units as text), canonical JSON (`user_spec_json`).
    user_spec: str
    # The memory the run could need, as the budget estimates it (`budget.check_memory`).
    memory_bytes: int

    def user_spec_json(self) -> str:
        """The scenario as the user wrote it (units as text), canonical JSON."""
        return self.user_spec

    def random_elements(self) -> list[str]:
        """What makes the seed matter, for messages: the resolution's draws (the engine's own
        random streams are summarised as "engine random streams")."""
        out = list(self.resolved.random_draws)
        if self.seed_matters and not out:
            out.append("engine random streams (loss, generators, on/off sources or BBR)")
        return out


def _encoded_members(spec: dict[str, Any]) -> dict[str, str]:
    """Each top-level member of `spec` as canonical JSON, by key."""
    return {key: canonical_json(value) for key, value in spec.items()}


def _object_json(members: dict[str, str]) -> str:
    """The canonical JSON of the object whose members `_encoded_members` encoded: bit for bit
    `canonical_json(spec)` (keys sorted, no spaces), assembled from the members' text so that a
    changed seed does not encode the whole spec again (~12 MB of JSON for 10,000 flows)."""
    return "{" + ",".join(f"{canonical_json(key)}:{members[key]}" for key in sorted(members)) + "}"


def plan(scenario: Scenario, max_memory: int | None = None) -> Plan:
    """Resolve and validate `scenario` once; raises SpecError naming the user's field. A run whose
    memory could exceed `max_memory` bytes (default: `budget.default_budget()`) is refused."""
    resolved = scenario.resolve()
    _core = core()
    members = json_members(resolved)
    encoded = _encoded_members(members)
    spec_json = _object_json(encoded)
    try:
        # One call: every check (routes included, without building the simulator) and whether
        # the engine draws random numbers.
        engine_draws = bool(_core.plan(spec_json))
    except _core.EngineSpecError as e:
        raise engine_error(e, resolved) from None
    memory_bytes = check_memory(scenario, resolved, max_memory)
    if not engine_draws and members.get("seed", 0) != 0:
        members["seed"] = 0
        encoded["seed"] = canonical_json(0)
        spec_json = _object_json(encoded)
    # The listed nodes, links and flows are read no more before derive, which lists them again.
    resolved.compact(members)
    version = engine_version()
    spec_hash, run_id = _identities(spec_json, version, resolved.store_series)
    return Plan(resolved=resolved, spec_json=spec_json, spec_hash=spec_hash, engine_version=version, run_id=run_id,
                seed_matters=engine_draws or bool(resolved.random_draws), name=scenario.name, seed=scenario.seed,
                duration_ns=scenario.duration, user_spec=json.dumps(scenario.to_dict(), sort_keys=True),
                memory_bytes=memory_bytes)
