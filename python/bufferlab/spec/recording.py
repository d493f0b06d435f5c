"""What a run records beyond its default series: ``[record]`` (the sampling interval, which
flows and links) and packet captures (``[[captures]]``), models imported, and so built, when a
scenario first gives one (`parsed.model_on_first_use`), not by every run that records the
default."""

# No `from __future__ import annotations` in this module: pydantic would evaluate every field's
# annotation from its text when it builds the models (see `spec.scenario`).

from typing import Literal

from pydantic import BaseModel, ConfigDict

from .fields import SampleInterval, Time

__all__ = ["Capture", "Record"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Capture(_Model):
    """Record every packet that starts transmission on one direction of a link."""

    # The name of the link whose packets are captured.
    link: str
    # The direction captured: "forward" (from the link's `a` to its `b`) or "backward".
    direction: Literal["forward", "backward"] = "forward"


class Record(_Model):
    """What a run records in its time series: how often, and which flows and links.

    ``interval`` is the sampling interval ("10ms"; "off" records no series). ``flows`` is "all",
    "none" or a list of flow names; ``links`` is "all", "none" or a list of link names (both
    directions) and channel names ("btl_forward"). Whatever is left out costs nothing.
    ``captures`` adds packet captures, as top-level ``[[captures]]`` does.

    ``store_series = false`` keeps the series out of the store: they are still sampled, because
    the metric catalogue's flow means are taken over them (`metrics/catalogue.rs`), but only the run's
    metrics, summaries and captures are stored. A sweep of hundreds of runs with hundreds of
    flows then stores kilobytes per run instead of a hundred megabytes (SplitBuff's full grid:
    ~68 GB of series). Such a run is a stored result of its own (`pipeline.plan`: the run id
    says what was kept), so a later run of the same spec that keeps its series simulates again.
    """

    # Time-series sampling interval ("10ms"); "off" records no time series. The same setting as
    # the top-level `sample_interval` (give one of the two), default 10 ms.
    interval: SampleInterval | None = None
    # The flows whose series are sampled: "all", "none" or a list of flow names. Transfers of
    # poisson and closed-loop generators are never sampled.
    flows: Literal["all", "none"] | list[str] = "all"
    # The link directions whose series are sampled: "all", "none" or a list of link names (both
    # directions) and channel names ("btl_forward").
    links: Literal["all", "none"] | list[str] = "all"
    # Packet captures, as the top-level `[[captures]]`.
    captures: list[Capture] = []  # copied for each model, as `Scenario`'s lists
    # false keeps the series out of the store: they are still sampled (the flow means of the
    # metric catalogue are taken over them), but only metrics, summaries and captures are stored.
    store_series: bool = True
    # The warm-up ("20s"): the delay distributions, and so the delay percentiles of the metric
    # catalogue (p50/p95/p99_qdisc_delay_l2, p50/p95/p99_one_way_delay_l3), count the packets
    # from this time on, leaving the start-up transient (slow start's overshoot) out, so that a
    # p99 is the steady state's. Before the end of the run; default 0, every packet.
    warmup: Time = 0
