"""The metric catalogue has one list, the engine's (bufferlab-core's metrics/catalogue.rs): Python's
names, units and definitions are read from it (`analysis.catalogue`), and a stored run's metric
tables have its metrics as their columns, no more and no fewer."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlab import _core, runner
from bufferlab.analysis import catalogue
from bufferlab.spec import Scenario
from conftest import SMALL_DUMBBELL

# Each stored table of the catalogue, its metrics and all its columns in Python.
TABLES = {"flow_metrics": (catalogue.FLOW_METRICS, catalogue.FLOW_TABLE),
          "link_metrics": (catalogue.LINK_METRICS, catalogue.LINK_TABLE),
          "network_metrics": (catalogue.NETWORK_METRICS, catalogue.NETWORK_TABLE)}


def test_the_python_catalogue_is_the_engine_s_in_order_with_units_and_definitions() -> None:
    engine = _core.metric_catalogue()
    assert set(engine) == set(TABLES)
    for table, (metrics, _) in TABLES.items():
        assert [(name, unit, definition) for name, (unit, definition) in metrics.items()] == engine[table], table


def test_a_table_s_columns_are_its_keys_then_its_metrics_in_order_as_float64() -> None:
    for table, (metrics, columns) in TABLES.items():
        floats = [name for name in columns if name in metrics]
        assert floats == list(metrics), table
        assert all(columns[name] == "Float64" for name in metrics), table
        # The metrics lie together: the key columns before them, the flows' delivery-rate source after.
        names = list(columns)
        first = names.index(floats[0])
        assert names[first:first + len(floats)] == floats, table


def test_a_metric_name_is_never_in_two_tables() -> None:
    names = [name for metrics, _ in TABLES.values() for name in metrics]
    assert len(names) == len(set(names))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="MEAN_METRICS"):
        catalogue.MEAN_METRICS  # noqa: B018 - the lookup is the test


def test_a_stored_run_s_metric_tables_are_the_catalogue_s_columns(tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "r.duckdb"
    runner.run(Scenario.from_toml_text(SMALL_DUMBBELL), db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        for table, (_, columns) in TABLES.items():
            described = con.execute(f"SELECT * FROM {table}").description
            rows = con.execute(f"SELECT count(*) FROM {table}").fetchone()
            stored = [column[0] for column in described if column[0] != "run_id"]  # the run's key
            assert stored == list(columns), table
            assert rows is not None and rows[0] > 0, table
    finally:
        con.close()
