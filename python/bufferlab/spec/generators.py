"""Traffic generators (``[[generators]]``): a model imported, and so built, when a scenario
first lists one (`parsed.model_on_first_use`), not by every run of listed flows. The
keys each kind needs are checked when the scenario is resolved (`scenario.GENERATOR_KEYS`)."""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (see `spec.scenario`).

from typing import Literal

from pydantic import BaseModel, ConfigDict

from .fields import ByteCount, Controller, OptionalName, Rate, Time
from .scenario import FlowCount, Frequency, SizeDist, TcpOptions, TimeDist

__all__ = ["Generator"]


class Generator(BaseModel):
    """Traffic spread over source hosts, all toward `dst`; `sources` are host names or shell-style
    patterns ("h3_*"), by default every host but `dst`. Per source host:

    - ``persistent``: `flows` greedy (long-lived) flows, ``<name>_<host>_<k>``;
    - ``poisson``: mice arriving at `arrivals_per_s`, sizes from `size`, each a flow
      ``<name>_<host>#<k>`` created by the engine;
    - ``closed_loop``: `users` users, each think (`think`) → transfer (`size`) → think ...;
    - ``cbr`` / ``onoff``: one datagram source ``<name>_<host>`` at `rate` (`packet` bytes on the
      wire), on/off with periods from `on` and `off`.
    """

    model_config = ConfigDict(extra="forbid")

    name: OptionalName = None
    kind: Literal["persistent", "poisson", "closed_loop", "cbr", "onoff"]
    sources: str | list[str] | None = None
    dst: str
    flows: FlowCount = None
    arrivals_per_s: Frequency = None
    users: FlowCount = None
    size: SizeDist | None = None
    think: TimeDist | None = None
    rate: Rate | None = None
    packet: ByteCount | None = None
    on: TimeDist | None = None
    off: TimeDist | None = None
    cca: Controller | None = None
    tcp: TcpOptions | None = None
    start: Time | None = None
    stop: Time | None = None
