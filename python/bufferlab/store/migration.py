"""Bringing a store of an older schema version to the current one (`store.tables`).

A store is rebuilt, not altered in place: its rows are copied into a new file of the current
schema beside it (``<store>.migrating``), which then replaces the store by a rename. Until the
rename the store is the older one, untouched, so a migration killed or failing midway leaves it
as it was, usable by this bufferlab and the earlier one (the next migration removes the leftover
file); the rename makes the whole new store appear at once. The migrating writer holds the older
store's lock throughout (it has it attached, `store.connection`), so no other process writes into
it while it is copied; one waiting for the lock opens the new file once it is in place. A
migrator makes sure that the file it attached is the one the store's path names (the same inode
before and after its ATTACH): one that opened the older file just before another migrator
replaced it, and took its lock just after, would otherwise migrate it again and put its copy
over the store that others may have written into meanwhile.

Why a copy. Version 5 keys the tables of many rows per run (series, captures) by the run's
number instead of its id (`tables`' docstring). Made in place, in one transaction, the change held every run table's rows
uncompressed in memory until the commit (writers make no optimistic writes), and the file kept
the older tables' blocks as free space after it: a store of 10 reference dumbbell runs went from
28 to 56 MB. The copy is written with optimistic writes, so its row groups reach the new file
compressed as they fill, and the new file is as small as a store written by this version (64 kB
blocks, `connection.NEW_STORE_BLOCK_SIZE`, whatever the older store had).

What is copied, table by table, by column name: a column that the older version did not have
yet is NULL in its runs' rows (their metric tables are empty where the version had none), as the
earlier migrations left them (version 7's ECN counters and metrics among them: the runs of an
older store had no ECN, and their stored specs need no change, the engine taking an absent `ecn`
as off; version 8's delay histograms and percentiles likewise: an older run has no rows in
``delay_histograms`` and NULL percentiles, its engine having kept no distribution; version 9's
series of the AQM's controller, CE marks, AQM drops and DCTCP's α, and the CE marks per class,
likewise NULL: its engine sampled none of them). Runs of a
store before version 5 are numbered in the order they
were stored (`created_at`, then run id; a later store's keep their numbers), and a run table's
rows keep the order they were stored in.

What is rewritten: the stored engine specs (`runs.spec_json`), into the form the engine reads now
(version 6's keys; version 10's shared tables of TCP options, QUIC options and queues, which
flows and links refer to by index), each still under the run id and spec hash it was stored with.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import duckdb

from ..spec.resolved import canonical_json
from .connection import NEW_STORE_BLOCK_SIZE, ROW_GROUP_SIZE, connect, release_writer, sql_string
from .schema import SCHEMA_VERSION, StoreError, check_schema_version, stored_schema_version
from .tables import NEW_STORE_SCHEMA, NUMBERED_TABLES, TABLES, stored_table

__all__ = ["migrate", "migrating_path"]


def migrating_path(store: Path) -> Path:
    """Where the rebuilt store is made before it replaces `store` (beside it: one rename)."""
    return store.with_name(store.name + ".migrating")


def _log(path: Path) -> Path:
    """DuckDB's write-ahead log of the database file `path`."""
    return Path(f"{path}.wal")


def _identity(path: Path) -> tuple[int, int]:
    """Which file `path` names (device and inode)."""
    found = path.stat()
    return found.st_dev, found.st_ino


def migrate(path: Path) -> None:
    """Bring the store at `path` to the current schema, unless another process has meanwhile (see
    the module docstring). Waits for the store's lock as a writer does."""
    while True:
        before = _identity(path)
        con = connect(path, read_only=False)
        try:
            attached = _identity(path) == before  # else the path was replaced meanwhile: again
            if attached:
                version = stored_schema_version(con)
                check_schema_version(version, path)
                if version is not None and version < SCHEMA_VERSION:
                    _rebuild(con, path, version, before)
        except duckdb.Error as e:  # a damaged file that DuckDB opened but cannot read
            con.close()
            raise StoreError("--db", f"cannot migrate {path}: {' '.join(str(e).split())}") from None
        except BaseException:
            con.close()
            raise
        release_writer(con)
        if attached:
            return


def _rebuild(con: duckdb.DuckDBPyConnection, path: Path, version: int, identity: tuple[int, int]) -> None:
    """Rebuild the store attached to the writer's connection `con` (as ``store``, whose lock it
    holds; the file `identity` names), of schema `version`, in the current schema, and put it in
    the store's place (see the module docstring)."""
    target = path.resolve()
    new = migrating_path(target)
    # A large store takes a while to copy: say what the pause is.
    sys.stderr.write(f"note: {path}: rebuilding the store of schema version {version} in version {SCHEMA_VERSION} "
                     f"({target.stat().st_size / 1e6:.0f} MB, once; the store is left as it was until the copy "
                     "is complete)\n")
    for leftover in (new, _log(new)):
        leftover.unlink(missing_ok=True)
    # A write-ahead log belongs to its file: one left beside the store would be replayed into the
    # rebuilt store. A checkpoint folds it into the older file first.
    con.execute("CHECKPOINT store")
    if _log(target).exists():
        raise StoreError("--db", f"cannot migrate {path} (schema version {version}): its write-ahead log remains")
    con.execute(f"ATTACH {sql_string(str(new))} AS migrated "
                f"(BLOCK_SIZE {NEW_STORE_BLOCK_SIZE}, ROW_GROUP_SIZE {ROW_GROUP_SIZE})")
    try:
        con.execute("SET enable_optimistic_write = true")  # the new file is thrown away if this fails
        con.execute("USE migrated")
        con.execute("BEGIN TRANSACTION")
        con.execute(NEW_STORE_SCHEMA)
        _copy_rows(con, version)
        if version < 10:
            _rewrite_specs(con, version)
        con.execute("COMMIT")  # a checkpoint, as every writer's commit (`store.connection`)
    except BaseException:
        _abandon(con, new)
        raise
    finally:
        con.execute("SET enable_optimistic_write = false")  # the writer's setting, for its next write
    con.execute("USE store")
    con.execute("DETACH migrated")
    if _log(new).exists():
        new.unlink()
        _log(new).unlink()
        raise StoreError("--db", f"cannot migrate {path}: the rebuilt store kept a write-ahead log")
    os.chmod(new, stat.S_IMODE(target.stat().st_mode))
    if _identity(target) != identity:  # cannot happen while its lock is held (see the docstring)
        new.unlink()
        raise StoreError("--db", f"cannot migrate {path}: the store was replaced while it was copied")
    os.replace(new, target)
    _sync_directory(target.parent)


def _copy_rows(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Copy every table of the older store (``store``) of schema `version` into the new one (the
    default database), runs numbered, the numbered tables keyed by number (see the module
    docstring; a store of version 5 or later has both already)."""
    older = {name for (name,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'store' AND table_schema = 'main' "
        "AND table_type = 'BASE TABLE'").fetchall()}
    for table in TABLES:
        if table == "meta" or table in NUMBERED_TABLES or table not in older:  # meta: the new store's version
            continue
        numbered = ", CAST(row_number() OVER (ORDER BY created_at, run_id) AS UINTEGER) AS run" \
            if table == "runs" and version < 5 else ""
        con.execute(f"INSERT INTO {table} BY NAME SELECT *{numbered} FROM store.main.{table}")
    for table in NUMBERED_TABLES:
        kept = stored_table(table)
        if version >= 5 and kept in older:  # keyed by run number already, in the order stored
            con.execute(f"INSERT INTO {kept} BY NAME SELECT * FROM store.main.{kept}")
        elif table in older:
            # `runs` (a few rows per run) is the join's build side; the older table, scanned in
            # order on one thread, is streamed through it in the order its rows were stored.
            con.execute(f"INSERT INTO {kept} BY NAME SELECT r.run, o.* EXCLUDE (run_id) "
                        f"FROM store.main.{table} o JOIN runs r ON r.run_id = o.run_id")


# Up to version 5 the engine's input named a field by its base unit (`duration_ns`,
# `links[].rate_bps`); since version 6 it reads the scenario's own keys (`duration`, `rate`: the
# engine's spec.rs). What version 5 called each renamed field, by the table it sits in:
_VERSION_5_KEYS: dict[str, dict[str, str]] = {
    "spec": {"duration_ns": "duration", "sample_interval_ns": "sample_interval"},
    "link": {"rate_bps": "rate", "delay_ns": "delay"},
    "tbf": {"rate_bps": "rate", "bucket_bytes": "burst", "limit_bytes": "limit"},
    "splitbuff": {"update_interval_ns": "update_interval", "quantum_bytes": "quantum"},
    "blind_splitbuff": {"quantum_bytes": "quantum"},
    "datagram": {"rate_bps": "rate", "packet_bytes": "packet"},
    "flow": {"start_ns": "start", "stop_ns": "stop"},
    "poisson": {"rate_per_s": "arrivals_per_s"},
    "tcp": {"delayed_ack_timeout_ns": "delayed_ack_timeout", "min_rto_ns": "min_rto",
            "initial_rto_ns": "initial_rto", "max_rto_ns": "max_rto", "rwnd_bytes": "rwnd"},
    "quic": {"max_datagram_bytes": "max_datagram", "packet_overhead_bytes": "packet_overhead",
             "lower_layer_bytes": "lower_layer", "ack_packet_bytes": "ack_packet",
             "max_ack_delay_ns": "max_ack_delay", "initial_rtt_ns": "initial_rtt"},
}


def _renamed(table: Any, where: str) -> None:
    """Rename, in place, the version 5 keys of `table` (a JSON object of kind `where`)."""
    if isinstance(table, dict):
        for old, new in _VERSION_5_KEYS.get(where, {}).items():
            if old in table:
                table[new] = table.pop(old)


def version_5_spec_in_version_6(spec_json: str) -> str:
    """A run's engine spec as version 5 stored it, under version 6's keys (the same canonical JSON
    form). Its run id and spec hash stay the identities it was
    stored under."""
    spec = json.loads(spec_json)
    _renamed(spec, "spec")
    for link in spec.get("links", []):
        _renamed(link, "link")
        for side in ("queue_forward", "queue_backward"):
            queue = link.get(side)
            if isinstance(queue, dict):
                _renamed(queue, str(queue.get("kind")))
    for flow in spec.get("flows", []):
        _renamed(flow, "flow")
        traffic = flow.get("traffic")
        if isinstance(traffic, dict) and traffic.get("kind") in ("cbr", "on_off"):
            _renamed(traffic, "datagram")
        _renamed(flow.get("tcp"), "tcp")
        _renamed(flow.get("quic"), "quic")
    for generator in spec.get("generators", []):
        _renamed(generator, "flow")
        _renamed(generator.get("tcp"), "tcp")
        model = generator.get("model")
        if isinstance(model, dict):
            _renamed(model, str(model.get("kind")))
    return canonical_json(spec)


def version_9_spec_in_version_10(spec_json: str) -> str:
    """A run's engine spec as versions 6 to 9 stored it, each flow and link with its own option
    tables and queues, in version 10's form: each distinct TCP option set, QUIC option set and
    queue listed once (`tcp_options`, `quic_options`, `queues`, in the order the spec layer lists
    them: generators' options before flows', queues channel by channel) and referred to by index.
    Its run id and spec hash stay the identities it was stored under; a spec in version 10's form
    already is left as it is."""
    spec = json.loads(spec_json)
    if "tcp_options" in spec or "queues" in spec:
        return spec_json
    tables: dict[str, tuple[list[Any], dict[str, int]]] = {}

    def listed(table: str, entry: Any) -> int:
        entries, known = tables.setdefault(table, ([], {}))
        key = canonical_json(entry)
        if key not in known:
            known[key] = len(entries)
            entries.append(entry)
        return known[key]

    for generator in spec.get("generators", []):
        if isinstance(generator.get("tcp"), dict):
            generator["tcp"] = listed("tcp_options", generator["tcp"])
    for flow in spec.get("flows", []):
        for key, table in (("tcp", "tcp_options"), ("quic", "quic_options")):
            if isinstance(flow.get(key), dict):
                flow[key] = listed(table, flow[key])
    for link in spec.get("links", []):
        for side in ("queue_forward", "queue_backward"):
            if isinstance(link.get(side), dict):
                link[side] = listed("queues", link[side])
    for table in ("tcp_options", "queues"):  # written even when empty, as the spec layer does
        spec[table] = tables.get(table, ([], {}))[0]
    if "quic_options" in tables:
        spec["quic_options"] = tables["quic_options"][0]
    return canonical_json(spec)


def _rewrite_specs(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """The stored engine specs of the rebuilt store's runs, of schema `version`, in the current
    form: under version 6's keys, and with version 10's shared tables."""
    rows = con.execute("SELECT run_id, spec_json FROM runs").fetchall()
    if version < 6:
        rows = [(run_id, version_5_spec_in_version_6(spec)) for run_id, spec in rows]
    con.executemany("UPDATE runs SET spec_json = ? WHERE run_id = ?",
                    [(version_9_spec_in_version_10(spec), run_id) for run_id, spec in rows])


def _abandon(con: duckdb.DuckDBPyConnection, new: Path) -> None:
    """Leave a failed rebuild: its transaction rolled back, its file detached and removed."""
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:  # no transaction open (it failed before one began, or at its commit)
        pass
    con.execute("USE store")
    con.execute("DETACH migrated")
    for path in (new, _log(new)):
        path.unlink(missing_ok=True)


def _sync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable (POSIX: the directory's entry is written by its fsync)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:  # a system without directory handles (Windows): its rename is durable or not
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
