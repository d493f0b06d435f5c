"""study: many runs compared. A sweep (`sweep`) is a base scenario, axes of overrides and seeds;
`execute` runs its points on a local process pool or a Dask cluster (`executors`), storing each
run as it finishes; `analysis.aggregate` gives the mean and a 95 % confidence interval over seeds.

The names are imported on first use (`bufferlab._lazy`), so the `sweep` command's options cost
nothing at start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from .sweep import Axis, Sweep, SweepPoint

__all__ = ["Sweep", "Axis", "SweepPoint"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(__all__, ".sweep"))
