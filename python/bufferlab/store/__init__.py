"""store: the DuckDB result store. Its modules, each importing only those below it (the
import-linter contract "the store's modules import only downward" in pyproject.toml):

  reader      `bufferlab.load`, the read-only view (`Results`) and what `bufferlab results` prints
  counters    a stored run's counters, the one look-up `bufferlab run` of a stored run needs
  writer      writes runs and study points (one short transaction per run, nothing computed
              there: step 4 of the pipeline, `persist`)
  migration   rebuilds a store of an older schema version in the current one
  tables      the tables: columns, keys, and the script that makes a new store
  schema      the schema version, the default path, run ids, `StoreError`, a store's version
  connection  opening the file so that many processes can share it

`DEFAULT_DB` and `SCHEMA_VERSION` come from `schema`, which loads neither DuckDB, polars nor numpy
(the command line's options read them); the other names are imported on first use
(`bufferlab._lazy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .schema import DEFAULT_DB, SCHEMA_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from .reader import Results, load
    from .schema import StoreError
    from .tables import RUN_TABLES, TABLES
    from .writer import Store, StudyPoint, persist, spec_hash

__all__ = ["Store", "StoreError", "StudyPoint", "Results", "load", "persist", "spec_hash", "DEFAULT_DB",
           "SCHEMA_VERSION", "TABLES", "RUN_TABLES"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "Results": ".reader", "load": ".reader", "StoreError": ".schema", "TABLES": ".tables", "RUN_TABLES": ".tables",
    **dict.fromkeys(["Store", "StudyPoint", "persist", "spec_hash"], ".writer"),
})
