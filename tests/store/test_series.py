"""A run's series are stored with each run of repeated samples as one row (`store.series`), and
read back, through the views and `Results` alike, exactly as the engine made them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlab import load
from bufferlab.analysis.derive import derive
from bufferlab.pipeline.engine import core
from bufferlab.pipeline.plan import plan
from bufferlab.pipeline.result import SERIES_TABLES
from bufferlab.pipeline.simulate import simulate
from bufferlab.spec import Scenario
from bufferlab.store import writer as store
from bufferlab.store.series import SAMPLES, folded
from bufferlab.store.tables import stored_table
from conftest import SCENARIOS

MS = 1_000_000


def series(times: list[int], values: list[float | None], entities: list[int] | None = None) -> object:
    """A series table of one or more entities (`channel`), a time and a nullable value per row."""
    return core().Table.from_columns("channel_timeseries", [
        ("channel", "UInt32", entities or [0] * len(times)), ("time_ns", "UInt64", times),
        ("value", "Float64", values)])


def rows(table: object) -> list[tuple[object, ...]]:
    return [tuple(row.values()) for row in table.to_pylist()]  # type: ignore[attr-defined]


def test_a_run_of_repeated_samples_is_folded_into_its_first_row_with_their_number() -> None:
    table = series([0, 10 * MS, 20 * MS, 30 * MS, 40 * MS], [1.0, 1.0, 1.0, 2.0, 2.0])
    assert rows(folded(table, 10 * MS)) == [(0, 0, 1.0, 3), (0, 30 * MS, 2.0, 2)]


def test_a_null_repeats_a_null_and_nothing_else() -> None:
    table = series([0, 10 * MS, 20 * MS, 30 * MS], [None, None, 0.0, None])
    assert rows(folded(table, 10 * MS)) == [(0, 0, None, 2), (0, 20 * MS, 0.0, 1), (0, 30 * MS, None, 1)]


def test_another_entity_or_a_gap_in_time_starts_a_new_row() -> None:
    table = series([0, 10 * MS, 30 * MS, 30 * MS, 40 * MS], [5.0] * 5, entities=[0, 0, 0, 1, 1])
    assert rows(folded(table, 10 * MS)) == [(0, 0, 5.0, 2), (0, 30 * MS, 5.0, 1), (1, 30 * MS, 5.0, 2)]


def test_a_table_with_a_column_of_text_cannot_be_folded() -> None:
    table = core().Table.from_columns("t", [("time_ns", "UInt64", [0, 1]), ("name", "Utf8", ["a", "a"])])
    with pytest.raises(ValueError, match="not a number"):
        folded(table, 1)


@pytest.fixture(scope="module")
def reference_run():  # type: ignore[no-untyped-def]
    """The reference dumbbell for 5 simulated seconds, its flows' starts spread over the first
    second (as the sweep benchmark runs it): many of its access links' samples repeat."""
    text = (SCENARIOS / "dumbbell.toml").read_text().replace('duration = "30s"', 'duration = "5s"')
    scenario = Scenario.from_toml_text(text + '\n[flow_defaults.start]\ndist = "uniform"\nlow = "0s"\nhigh = "1s"\n')
    planned = plan(scenario)
    return derive(planned, simulate(planned))


def test_the_store_keeps_fewer_series_rows_and_reads_back_every_sample_as_the_engine_made_it(
        reference_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "results.duckdb"
    store.persist(reference_run, db)
    results = load(db)
    for table in SERIES_TABLES:
        engine = reference_run.result.table(table)
        data_rows, samples = results.rows(f"SELECT count(*), coalesce(sum({SAMPLES}), 0) FROM {stored_table(table)}")[1][0]
        assert samples == engine.height
        if table == "channel_timeseries":
            assert data_rows < 0.7 * engine.height  # the idle access links' repeated samples
        # Through the view, in the order the engine made them, and through `Results`.
        assert results.query(f"SELECT * EXCLUDE (run_id) FROM {table}").equals(engine), table
        assert results.table(table, reference_run.run_id).drop("run_id").equals(engine), table
    assert results.rows("SELECT sample_interval_ns FROM runs")[1] == [(10 * MS,)]


def test_a_sweep_worker_hands_over_its_run_folded_and_the_store_holds_the_same_rows(
        reference_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from bufferlab.study.executors import handed_over
    from conftest import stored_tables

    handed = handed_over(reference_run)
    assert handed.folded_series is not None
    for table in SERIES_TABLES:
        assert len(handed.result.arrow(table)) == 0  # only the folded rows cross to the writer
        assert len(handed.folded_series[table]) < len(reference_run.result.arrow(table)) or table == "class_timeseries"
    direct, via_worker = tmp_path / "direct.duckdb", tmp_path / "worker.duckdb"
    store.persist(reference_run, direct)
    store.persist(handed, via_worker)
    assert stored_tables(direct) == stored_tables(via_worker)
