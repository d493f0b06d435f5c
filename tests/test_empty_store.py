"""A new store copied from an empty one (`store.empty_store`): the copy is a store of the current
schema like one the writer makes, takes a run exactly as a new store does, never replaces a file
that is there, never leaves a half-written store under the store's name, and is made only where
the interpreter writes bytecode."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import duckdb
import pytest

from bufferlab.pipeline.derive import derive
from bufferlab.pipeline.plan import plan
from bufferlab.pipeline.simulate import simulate
from bufferlab.spec import Scenario
from bufferlab.store import SCHEMA_VERSION, empty_store
from bufferlab.store import writer as store
from conftest import SMALL_DUMBBELL, store_block_size, stored_tables


@pytest.fixture
def original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The original kept in a directory of the test's, made as the writer process makes it."""
    kept = tmp_path / "cache" / "empty-store.duckdb"
    monkeypatch.setattr(empty_store, "path", lambda: kept)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    empty_store.prepare()
    assert kept.exists() and not list(kept.parent.glob("*.tmp"))
    return kept


def _schema(db: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT name, sql FROM (SELECT table_name AS name, sql FROM duckdb_tables() UNION ALL "
                           "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal) ORDER BY name").fetchall()
    finally:
        con.close()


def test_a_placed_copy_takes_a_run_exactly_as_a_new_store(original: Path, tmp_path: Path) -> None:
    planned = plan(Scenario.from_toml_text(SMALL_DUMBBELL))
    run = derive(planned, simulate(planned))
    placed, made = tmp_path / "placed" / "r.duckdb", tmp_path / "made.duckdb"
    assert empty_store.place(placed)  # its directory made too, as the writer makes it
    with store.Store(placed) as copy:
        assert copy.run_ids() == []
        copy.save(run)
    store.persist(run, made)
    assert _schema(placed) == _schema(made)
    assert store_block_size(placed) == store_block_size(made)
    assert stored_tables(placed) == stored_tables(made)
    con = duckdb.connect(str(placed), read_only=True)
    try:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert con.execute("SELECT run FROM runs").fetchall() == [(1,)]
    finally:
        con.close()
    assert sorted(p.name for p in placed.parent.iterdir()) == ["r.duckdb"]  # no temporary name left


def test_a_file_that_is_there_is_never_replaced(original: Path, tmp_path: Path) -> None:
    there = tmp_path / "r.duckdb"
    there.write_bytes(b"someone else's")
    assert empty_store.place(there) is None
    assert there.read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "r.duckdb"]


def test_without_an_original_or_with_a_damaged_one_nothing_is_placed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "empty-store.duckdb"
    monkeypatch.setattr(empty_store, "path", lambda: kept)
    target = tmp_path / "r.duckdb"
    assert empty_store.place(target) is None
    kept.write_bytes(b"\0" * 4096 * 20)  # not a DuckDB file of the writer's blocks
    assert empty_store.place(target) is None
    assert not target.exists()


def test_a_copy_that_cannot_be_linked_leaves_nothing(original: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A file system without hard links (or a full disk while copying): the write makes its own store.
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(empty_store.os, "link", refuse)
    directory = tmp_path / "d"
    assert empty_store.place(directory / "r.duckdb") is None
    assert list(directory.iterdir()) == []


def test_the_original_is_made_only_where_bytecode_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "cache" / "empty-store.duckdb"
    monkeypatch.setattr(empty_store, "path", lambda: kept)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    empty_store.prepare()
    assert not kept.exists()


def test_the_original_s_name_changes_with_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    before = empty_store.path()
    monkeypatch.setattr(store, "NEW_STORE_SCHEMA", store.NEW_STORE_SCHEMA + ";\nSELECT 1")
    assert empty_store.path() != before and empty_store.path().parent == before.parent


def test_a_writer_takes_an_untouched_copy_as_placed_and_reads_one_written_meanwhile(
        original: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planned = plan(Scenario.from_toml_text(SMALL_DUMBBELL))
    run = derive(planned, simulate(planned))
    untouched, written = tmp_path / "untouched.duckdb", tmp_path / "written.duckdb"
    as_placed = {db: empty_store.place(db) for db in (untouched, written)}
    assert all(as_placed.values())
    store.persist(dataclasses.replace(run, run_id="e" * 64), written)  # another writer, in between
    read = store.stored_schema_version
    looked: list[Path] = []
    monkeypatch.setattr(store, "stored_schema_version", lambda con: looked.append(con) or read(con))
    for db in (untouched, written):
        with store.Store(db, copy_as_placed=as_placed[db]) as s:
            s.save(run)
    assert len(looked) == 1  # the written copy's version was read; the untouched one's was known
    numbers = {}
    for db in (untouched, written):
        con = duckdb.connect(str(db), read_only=True)
        try:
            numbers[db.stem] = con.execute("SELECT run_id, run FROM runs ORDER BY run").fetchall()
        finally:
            con.close()
    assert numbers == {"untouched": [(run.run_id, 1)], "written": [("e" * 64, 1), (run.run_id, 2)]}
