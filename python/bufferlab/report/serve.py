"""`bufferlab serve`: the report over HTTP on this machine only, rebuilt as the store grows.

The server binds 127.0.0.1 (never a public interface) and serves files of the report folder
only: a request path is percent-decoded, must not hold a ".." segment, a backslash or a NUL, and
the file it names, with symbolic links resolved, must lie inside the folder; anything else is
404. A watcher thread asks the store (one short read-only query, `store.connection`) for its
number of runs and studies and the latest times they changed, and rebuilds the report when any of
them moved; pages are written atomically, so a request never sees half a page.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..store.connection import connect

__all__ = ["LOOPBACK", "resolve_inside", "ReportHandler", "make_server", "store_state", "Watcher"]

LOOPBACK = "127.0.0.1"


def resolve_inside(root: Path, request_path: str) -> Path | None:
    """The file under `root` that `request_path` (as sent: "/runs/x/index.html?q") names, or None
    when it names nothing there or anything outside it."""
    path = unquote(urlsplit(request_path).path, errors="strict")
    if "\x00" in path or "\\" in path:
        return None
    parts = [p for p in path.split("/") if p]
    if any(p in ("..", ".") for p in parts):
        return None
    base = root.resolve()
    target = base.joinpath(*parts).resolve() if parts else base
    if target != base and base not in target.parents:
        return None
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


class ReportHandler(http.server.SimpleHTTPRequestHandler):
    """Static files of the report folder, through `resolve_inside` only."""

    def __init__(self, *args: Any, root: Path, **kwargs: Any) -> None:
        self.root = root
        super().__init__(*args, directory=str(root), **kwargs)

    def send_head(self) -> Any:
        try:
            target = resolve_inside(self.root, self.path)
        except UnicodeDecodeError:
            target = None
        if target is None:
            self.send_error(404, "Not found")
            return None
        path = urlsplit(self.path).path
        if target.name == "index.html" and not path.endswith(("/", "index.html")):
            # A folder without its trailing slash: redirect, so relative links on its page work.
            self.send_response(301)
            self.send_header("Location", path + "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        f = open(target, "rb")
        try:
            size = target.stat().st_size
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(target)))
            self.send_header("Content-Length", str(size))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            return f
        except Exception:
            f.close()
            raise

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: a report server is not an access log."""


def make_server(root: Path, port: int) -> http.server.ThreadingHTTPServer:
    """A server of `root` on 127.0.0.1:`port` (0: any free port)."""
    return http.server.ThreadingHTTPServer((LOOPBACK, port), partial(ReportHandler, root=root))


def store_state(db: Path) -> tuple[Any, ...]:
    """What changes when the store gains or finishes runs or study points: one short query."""
    con = connect(db, read_only=True)
    try:
        row = con.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT max(created_at) FROM runs), "
            "(SELECT count(*) FROM runs WHERE status = 'complete'), (SELECT count(*) FROM studies), "
            "(SELECT max(updated_at) FROM study_points)").fetchone()
    finally:
        con.close()
    return tuple(row or ())


class Watcher(threading.Thread):
    """Polls the store every `interval_s` and calls `rebuild` when `store_state` changed."""

    def __init__(self, db: Path, rebuild: Callable[[], None], *, interval_s: float = 2.0,
                 on_error: Callable[[Exception], None] | None = None) -> None:
        super().__init__(name="bufferlab-report-watcher", daemon=True)
        self.db = db
        self.rebuild = rebuild
        self.interval_s = interval_s
        self.on_error = on_error
        self.stopped = threading.Event()
        self.state = store_state(db)

    def check(self) -> bool:
        """Rebuild if the store changed since the last look; whether it did."""
        state = store_state(self.db)
        if state == self.state:
            return False
        self.rebuild()
        self.state = state
        return True

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            try:
                self.check()
            except Exception as e:  # noqa: BLE001 - a failed rebuild is reported; the server keeps serving
                if self.on_error is not None:
                    self.on_error(e)

    def stop(self) -> None:
        self.stopped.set()
