"""study: many runs compared. A sweep (`sweep`) is a base scenario, axes of overrides and seeds;
`execute` runs its points on a local process pool or a Dask cluster (`executors`), storing each
run as it finishes; `aggregate` gives the mean and a 95 % confidence interval over seeds."""

from .sweep import Axis, Sweep, SweepPoint

__all__ = ["Sweep", "Axis", "SweepPoint"]
