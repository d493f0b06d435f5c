"""mkdocs hook: adds the reference pages, written from the code at build time
(`reference_pages`), to the site. Nothing is written into the repository.

The package is imported from this checkout's python/ directory, so that the pages describe the
code being built whichever bufferlab the environment has installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

import reference_pages  # noqa: E402 - mkdocs puts this directory on the path while it loads the hook

from mkdocs.structure.files import File, Files  # noqa: E402


def on_files(files: Files, config: Any) -> Files:
    for uri, write in reference_pages.PAGES.items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            raise ValueError(f"docs/{uri} is written from the code at build time: remove the file")
        files.append(File.generated(config, uri, content=write()))
    return files


# An option without a default: click (8.3 and later) gives it a sentinel, which mkdocs-click
# prints as it is ("Sentinel.UNSET"), and mkdocs-click prints a default of None as "None". The
# table shows neither.
_NO_DEFAULT = ("<td><code>Sentinel.UNSET</code></td>", "<td>None</td>")


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri == "reference/cli.md":
        for text in _NO_DEFAULT:
            html = html.replace(text, "<td></td>")
    return html
