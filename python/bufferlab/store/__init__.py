"""store: the DuckDB result store. `writer` creates, migrates and writes it (one short
transaction per run, nothing computed there); `reader` is `bufferlab.load`, the read-only view."""

from .reader import Results, load
from .writer import (DEFAULT_DB, RUN_TABLES, SCHEMA_VERSION, TABLES, Store, StoredRun, StoreError, run_identity,
                     spec_hash)

__all__ = ["Store", "StoredRun", "StoreError", "Results", "load", "run_identity", "spec_hash", "DEFAULT_DB",
           "SCHEMA_VERSION", "TABLES", "RUN_TABLES"]
