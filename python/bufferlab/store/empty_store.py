"""An empty store of the current schema, kept beside the code and copied into place where the
store's writer process makes a new store (issue 15).

Why. A new store's tables, views and schema version cost its first write ~5 ms of CPU time (19
statements through DuckDB's parser, binder and catalogue: `writer.NEW_STORE_SCHEMA`), and the
writer process can make them only once the run is derived (`writer_process`: no store file is
made before then), so they lay on the path from the engine's end to the printed summary. A copy
of an empty store made earlier (208 kB at 64 kB blocks) is placed in a fraction of a millisecond,
and attaching it costs ~1.2 ms more than attaching a new file, its catalogue being read.

How. The writer process makes the original while it waits for the command's first request
(`prepare`): a `writer.Store` of a temporary file, closed without a run (its tables made and
committed), renamed to `path()` in this package's `__pycache__`, whose name holds a hash of the
schema script, DuckDB's version and the block size, so that a change of any of them makes a new
one. It is made only where the interpreter writes its bytecode, and read wherever it is there
(the rule of the interpreter's own cache, and of `codecache`).

A write into a store that does not exist yet then places a copy (`place`): written under a
hidden temporary name beside the store and linked to the store's name once whole, which never
replaces a file that appeared meanwhile, so that no half-written store is ever seen under the
store's name and another process's new store is never overwritten; the temporary name is removed
at once (only a process killed outright within that fraction of a millisecond leaves it; Ctrl-C
and SIGTERM wait for a write, `writer_process`). Linking an unnamed file (``O_TMPFILE``) would
leave no name at all, but the sandbox this was measured in refuses the link (EXDEV). Where any
of it cannot be done (no original yet, a read-only package, a file system without links, a full
disk) the write makes its store as before; a failure of the copy is never the write's.

What it changes: none of a store's contents (the same tables, views, encodings, settings and
block size), but a new store's tables are committed before its first run instead of with it, so a
write that fails after the copy leaves an empty store of the current schema where it left an
empty DuckDB file (the ATTACH makes one): no run either way.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

__all__ = ["path", "prepare", "place", "identity", "ABANDONED_AFTER_S"]

# A temporary original this much older than a finished `prepare` was left by a process killed
# while making it (the command kills an idle writer process at once).
ABANDONED_AFTER_S = 60.0
# A DuckDB file: three 4 kB headers, then whole blocks; its magic bytes after the checksum.
_HEADERS_BYTES = 3 * 4096
_MAGIC = (8, b"DUCK")


def path() -> Path:
    """Where the original is kept (see the module docstring)."""
    import duckdb

    from .connection import NEW_STORE_BLOCK_SIZE
    from .writer import NEW_STORE_SCHEMA

    key = hashlib.sha256(f"{duckdb.__version__}\n{NEW_STORE_BLOCK_SIZE}\n{NEW_STORE_SCHEMA}".encode()).hexdigest()
    return Path(__file__).with_name("__pycache__") / f"empty-store.{key[:16]}.duckdb"


def prepare() -> None:
    """Make the original if there is none, where the interpreter writes bytecode (see the module
    docstring); any failure leaves none."""
    if sys.dont_write_bytecode:
        return
    original = path()
    if original.exists():
        return
    from .writer import Store

    temporary = original.with_name(f"{original.name}.{os.getpid()}.tmp")
    try:
        original.parent.mkdir(exist_ok=True)
        _remove_abandoned(original)
        with Store(temporary):  # closed without a run: its tables are made and committed
            pass
        os.replace(temporary, original)
    except Exception:  # noqa: BLE001 - a read-only package, a full disk: the writes make their own
        temporary.unlink(missing_ok=True)


def _remove_abandoned(original: Path) -> None:
    for temporary in original.parent.glob(f"{original.name}.*.tmp"):
        try:
            if time.time() - temporary.stat().st_mtime > ABANDONED_AFTER_S:
                temporary.unlink()
        except OSError:  # removed by another process meanwhile
            pass


def identity(file: Path) -> tuple[int, ...] | None:
    """What changes whenever a file is written: its inode, size and times (a commit into a
    store grows it); None where there is no file."""
    try:
        status = file.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


def place(store: Path) -> tuple[int, ...] | None:
    """Copy the original to `store` if nothing is there (see the module docstring): the copy's
    `identity` as placed, or None where it placed none. A writer that finds the file with that
    identity once it holds the store's lock knows it as placed (`writer.Store`)."""
    if store.exists():
        return None
    try:
        data = path().read_bytes()
    except OSError:
        return None
    if not _whole(data):
        return None
    copy = store.with_name(f".{store.name}.{os.getpid()}.new")
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        with open(os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as written:  # umask applies
            written.write(data)
        os.link(copy, store)
    except OSError:  # made meanwhile, a full disk, no links here: the write makes its own
        return None
    finally:
        try:
            copy.unlink()
        except OSError:  # never made
            pass
    return identity(store)  # after the unlink, which changes the file's status time


def _whole(data: bytes) -> bool:
    """Whether `data` has the shape of a DuckDB file of `NEW_STORE_BLOCK_SIZE` blocks."""
    from .connection import NEW_STORE_BLOCK_SIZE

    offset, magic = _MAGIC
    blocks = len(data) - _HEADERS_BYTES
    return data[offset:offset + len(magic)] == magic and blocks > 0 and blocks % NEW_STORE_BLOCK_SIZE == 0
