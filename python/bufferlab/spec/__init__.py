"""spec: what the user writes. Pydantic models of a scenario (`scenario`), their field types
(`fields`, `distributions`), topology builders (`topology`), ccperf's flag form (`ccperf`) and
the translation of a validated scenario into the engine's input (`engine_spec`).

The names below are imported on first use (`bufferlab._lazy`): importing a light submodule such
as `spec.ccperf_flags` does not load pydantic."""

from __future__ import annotations

import os
import sys
import types
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

__getattr__, __dir__ = lazy_exports(__name__, {**dict.fromkeys(__all__, ".scenario"), "Generator": ".generators",
                                                "QuicOptions": ".quic", "Capture": ".recording", "Record": ".recording",
                                                "Resolved": ".resolved"})

# pydantic's documented switch: plugins are off when PYDANTIC_DISABLE_PLUGINS is one of these.
PYDANTIC_PLUGINS_OFF = ("__all__", "1", "true")
# The module in which pydantic looks its plugins up (`get_plugins`) when it builds a validator.
PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"


def without_pydantic_plugins() -> None:
    """Build the spec's validators without looking for pydantic plugins, as pydantic itself does
    under ``PYDANTIC_DISABLE_PLUGINS=__all__`` (the default this sets; any other value set in
    the environment is left to pydantic).

    pydantic looks for plugins when it builds its first validator: its loader imports
    `importlib.metadata` (email, zipfile, csv...: 10 ms of CPU time) and reads the entry points
    of every installed distribution (3 ms), a fifth of the spec stage of a fresh `bufferlab run`
    (issue 15), to find none the command uses. With plugins off, its `get_plugins` answers "none"
    without reading anything; the loader put in its place here gives that answer without the
    import. For the command's process (`cli.prepare_process`), before pydantic builds a model."""
    if os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__") not in PYDANTIC_PLUGINS_OFF:
        return
    if PYDANTIC_PLUGIN_LOADER in sys.modules:  # a validator was built already: nothing to save
        return
    loader = types.ModuleType(PYDANTIC_PLUGIN_LOADER, "pydantic's plugin loader with plugins off (bufferlab.spec)")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[PYDANTIC_PLUGIN_LOADER] = loader


def _no_plugins() -> tuple[()]:
    return ()
