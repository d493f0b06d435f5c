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

    # The generator's name, the first part of its flows' names; default "gen_<i>", i its index.
    name: OptionalName = None
    # What each source host runs: "persistent" (greedy flows), "poisson" (open-loop transfers),
    # "closed_loop" (users who think, then transfer), "cbr" or "onoff" (a datagram source).
    kind: Literal["persistent", "poisson", "closed_loop", "cbr", "onoff"]
    # The source hosts: a host name or shell-style pattern ("h3_*"), or a list of them; default
    # every host but `dst`.
    sources: str | list[str] | None = None
    # The host every source sends to.
    dst: str
    # Greedy flows per source host (persistent; required).
    flows: FlowCount = None
    # Mean arrivals per second of a Poisson process of transfers, per source host (poisson;
    # required).
    arrivals_per_s: Frequency = None
    # Closed-loop users per source host, each with one transfer at a time (closed_loop; required).
    users: FlowCount = None
    # Distribution of transfer sizes, bytes (poisson and closed_loop; required).
    size: SizeDist | None = None
    # Distribution of a user's think time between the end of a transfer and the next (closed_loop;
    # required); a user starts with a think.
    think: TimeDist | None = None
    # Sending rate of each datagram source (cbr and onoff; required), during on periods for onoff.
    rate: Rate | None = None
    # Datagram size on the wire, IP and UDP headers included (cbr and onoff): default 1500 bytes.
    packet: ByteCount | None = None
    # Distribution of the lengths of the sending periods (onoff; required); a source starts with
    # one.
    on: TimeDist | None = None
    # Distribution of the lengths of the silent periods (onoff; required).
    off: TimeDist | None = None
    # Congestion controller of the TCP flows; default `[flow_defaults]`'s, else reno.
    cca: Controller | None = None
    # TCP options of the flows; an unset option takes `[flow_defaults]`'s, then the engine's.
    tcp: TcpOptions | None = None
    # When the generator starts: no flow or transfer starts before it. Default `[flow_defaults]`'s
    # start (a distribution: one draw per persistent or datagram flow, one for all the sources of
    # a poisson or closed-loop generator), else 0 s.
    start: Time | None = None
    # No transfer starts at or after it (transfers under way run on); persistent and datagram
    # flows stop then. Default `[flow_defaults]`'s stop, else the end of the run.
    stop: Time | None = None
