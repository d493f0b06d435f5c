"""No issue numbers in code or docs: a comment, docstring or page states the fact or rule itself,
never which issue asked for it (the word "issue" or "issues" followed by a number, with or without
a "#"). Checked over every
tracked text file of the package, the crates, the tests, the benchmarks, the tools, the scenarios
and the docs, and over README.md, pyproject.toml and the Makefile."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Folders whose tracked files are checked, and single files at the root.
FOLDERS = ("python", "crates", "tests", "benchmarks", "tools", "scenarios", "docs")
ROOT_FILES = ("README.md", "pyproject.toml", "Makefile")
ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+\b", re.IGNORECASE)
# No allow-list: nothing legitimate in the repository names an issue by number.


def tracked_text_files() -> list[Path]:
    """The git-tracked files under FOLDERS and of ROOT_FILES that are text (UTF-8, no NUL byte)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *FOLDERS, *ROOT_FILES], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    files = []
    for name in filter(None, listed):
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree, not yet in the index
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def issue_references(text: str) -> list[tuple[int, str]]:
    """(line number, the matched text) of every issue reference in `text`."""
    return [(text.count("\n", 0, m.start()) + 1, m.group()) for m in ISSUE_REFERENCE.finditer(text)]


def test_the_pattern_finds_issue_references_and_nothing_else() -> None:
    # The examples are put together here, so that this file itself holds no reference.
    issue, issues = "issue", "Issues"
    found = issue_references(f"a rule ({issue} 15)\n{issues} 12 and 15\n{issue} #4; {issue.title()} 38's\n")
    assert found == [(1, f"{issue} 15"), (2, f"{issues} 12"), (3, f"{issue} #4"), (3, f"{issue.title()} 38")]
    assert issue_references("RFC 9438 section 4; the issue's case; issues in router buffer sizing; "
                            "tissue 5; experiment #11") == []


def test_the_checked_files_include_code_tests_and_the_root_files() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in tracked_text_files()}
    assert {"pyproject.toml", "Makefile", "python/bufferlab/__init__.py",
            "crates/bufferlab-core/src/lib.rs", "tests/codebase/test_no_patching.py"} <= names


def test_no_tracked_file_names_an_issue_by_number() -> None:
    offences = [f"{path.relative_to(ROOT)}:{line}: {match}"
                for path in tracked_text_files()
                for line, match in issue_references(path.read_text(encoding="utf-8"))]
    assert offences == [], "issue numbers (state the rule instead):\n" + "\n".join(offences)
