"""A run's time series as the store keeps them: each run of repeated samples as one row.

An entity's series (a flow's, a channel's, a sub-buffer's) often holds the same values sample
after sample: a link with nothing to send keeps its counters and its empty queue. On the
reference dumbbell (10 flows over 42 channels, 3,000 samples each) half of `channel_timeseries`'
125,000 rows repeat the row before them, a flow's access links idle between its bursts. The
store keeps each run of such rows as its first row and the number of samples it stands for,
``samples`` (in the data table, `tables.stored_table`); the view of the table's own name and
`Results` give every sample its row back at its time, ``time_ns + k * runs.sample_interval_ns``
for k from 0 to ``samples - 1`` (`expanded_columns`), so a query reads exactly the rows it read
before (schema version 11).

A row repeats the one before it when it holds the same value in every column (a null as a null)
but ``time_ns``, which is exactly the run's sampling interval later: the same entity's next
sample. The engine's table does the folding (`_core.Table.fold_repeats`). A sweep's workers fold
their runs before handing them over (`study.executors`), so that fewer rows cross to the sweep's
one writer, which only appends them.
"""

from __future__ import annotations

from typing import Any

from ..pipeline.engine import core

__all__ = ["SAMPLES", "folded", "expanded_columns"]

# The data table's column of how many samples a stored row stands for.
SAMPLES = "samples"


def folded(table: Any, interval_ns: int | None) -> Any:
    """The engine's series table `table` as the store keeps it: each run of rows that repeat the
    one before folded into its first, with their number in `SAMPLES` (see the module docstring).
    `interval_ns` is the run's sampling interval (None: nothing was sampled, the table is empty).
    A polars DataFrame (a result's table replaced by a caller) is read as the engine's table."""
    if not hasattr(table, "fold_repeats"):
        import io

        import polars as pl

        stream = io.BytesIO()
        pl.DataFrame(table).write_ipc(stream)
        table = core().Table.from_ipc(getattr(table, "name", "series"), stream.getvalue())
    return table.fold_repeats("time_ns", interval_ns or 0, SAMPLES)


def expanded_columns(data: str, runs: str) -> str:
    """The columns of a series table's view over its data table (aliased `data`) joined to
    `runs` (aliased `runs`): a row per sample, as the engine's table had them (see the module
    docstring). DuckDB expands each stored row in place (`unnest`), so a query of some runs'
    rows reads only theirs, in the order stored; a run of an older store, whose rows stand for
    one sample each, may have no interval."""
    return (f"{data}.* EXCLUDE (run, {SAMPLES}) REPLACE (CAST({data}.time_ns + unnest(range({data}.{SAMPLES})) "
            f"* coalesce({runs}.sample_interval_ns, 0) AS UBIGINT) AS time_ns)")
