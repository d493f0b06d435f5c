"""spec: what the user writes. Pydantic models of a scenario (`scenario`), their field types
(`fields`, `distributions`), topology builders (`topology`), ccperf's flag form (`ccperf`) and
the translation of a validated scenario into the engine's input (`engine_spec`).

The names below are imported on first use (`bufferlab._lazy`): importing a light submodule such
as `spec.ccperf_flags` does not load pydantic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from .generators import Generator
    from .quic import QuicOptions
    from .recording import Capture, Record
    from .resolved import Resolved
    from .scenario import (DEFAULT_SAMPLE_INTERVAL_NS, RTT_STREAM, Dumbbell, Flow, FlowDefaults, Link, Node,
                           Scenario, TcpOptions, draw_rtts, engine_quic_defaults, engine_tcp_defaults, load_scenario,
                           split_access_delays)

__all__ = ["Scenario", "Node", "Link", "Flow", "FlowDefaults", "TcpOptions", "QuicOptions", "Dumbbell", "Capture",
           "Generator", "Record", "Resolved", "load_scenario", "DEFAULT_SAMPLE_INTERVAL_NS", "RTT_STREAM",
           "draw_rtts", "engine_tcp_defaults", "engine_quic_defaults", "split_access_delays"]

__getattr__, __dir__ = lazy_exports(globals(), {**dict.fromkeys(__all__, ".scenario"), "Generator": ".generators",
                                                "QuicOptions": ".quic", "Capture": ".recording", "Record": ".recording",
                                                "Resolved": ".resolved"})
