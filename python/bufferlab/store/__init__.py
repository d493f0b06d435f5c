"""store: the DuckDB result store. `writer` creates, migrates and writes it (one short
transaction per run, nothing computed there: step 4 of the pipeline, `persist`); `reader` is
`bufferlab.load`, the read-only view; `connection` lets many processes share one file."""

from .reader import Results, load
from .writer import (DEFAULT_DB, RUN_TABLES, SCHEMA_VERSION, TABLES, Store, StoreError, StudyPoint, persist,
                     spec_hash)

__all__ = ["Store", "StoreError", "StudyPoint", "Results", "load", "persist", "spec_hash", "DEFAULT_DB",
           "SCHEMA_VERSION", "TABLES", "RUN_TABLES"]
