"""store: the DuckDB result store. `writer` creates, migrates and writes it (one short
transaction per run, nothing computed there: step 4 of the pipeline, `persist`); `reader` is
`bufferlab.load`, the read-only view; `connection` lets many processes share one file.

`DEFAULT_DB` and `SCHEMA_VERSION` live here, so that the command line's options and a stored
run's look-up (`counters`) load neither polars nor numpy; the other names are imported on first
use (`bufferlab._lazy`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from .reader import Results, load
    from .writer import RUN_TABLES, TABLES, Store, StoreError, StudyPoint, persist, spec_hash

__all__ = ["Store", "StoreError", "StudyPoint", "Results", "load", "persist", "spec_hash", "DEFAULT_DB",
           "SCHEMA_VERSION", "TABLES", "RUN_TABLES"]

# Where results go unless --db (or a `db` argument) says otherwise.
DEFAULT_DB = Path("results") / "bufferlab.duckdb"
# 1: runs, flows, channels, series, captures. 2: studies, spec hash, metric tables, new series
# and counters (one-way delay, IDT EWMA, min RTT, sojourn/busy per channel, recovery episodes).
# 3: sweeps: study kind, sweep spec and axes; study_points.
# 4: the sub-buffers of split queues (SplitBuff): queue_classes, class_timeseries.
# 5: runs.run, a run's number in its store; the run tables keyed by it (`<table>_data`) and read
#    through views that join the run id back (issue 15).
SCHEMA_VERSION = 5

__getattr__, __dir__ = lazy_exports(globals(), {
    "Results": ".reader", "load": ".reader",
    **dict.fromkeys(["Store", "StoreError", "StudyPoint", "persist", "spec_hash", "TABLES",
                     "RUN_TABLES"], ".writer"),
})
