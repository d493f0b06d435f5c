"""Every example of the documentation runs: the `console` and `python` blocks of README.md and of
every page under docs/.

A page's examples run in document order, in a fresh temporary directory holding a copy of the
repository's scenarios/ and sweeps/ (so the default store, results/bufferlab.duckdb, is new), with the
running interpreter's bin directory first on PATH (its `bufferlab`). Each `$ ` line of a
`console` block is run with bash in that directory, and must exit 0; the lines without the
prompt are output, not checked. The `python` blocks of one page share one namespace and run with
that directory as the working directory. Blocks of any other language (`bash`, `text`, none) are
not run: a command that must not run in tests (a minutes-long reproduction, a `make` target) is
written in one of those.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
# Pages whose examples take more than ten seconds in all.
SLOW_PAGES = {"README.md", "docs/guides/report.md", "docs/guides/sweep.md", "docs/guides/results.md",
              "docs/guides/advise.md", "docs/guides/reproduce.md"}
COMMAND_TIMEOUT_S = 300


@dataclass(frozen=True)
class Example:
    """One thing to run: a console command or a python block, and the line of the page it starts on."""

    language: str  # "console" or "python"
    line: int
    code: str


def examples(markdown: str) -> list[Example]:
    """The runnable examples of a Markdown text, in document order: each `$ ` command of a
    ```console block (a line ending in a backslash goes on with the next), each ```python block."""
    found = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type != "fence" or token.map is None:
            continue
        language = token.info.split()[0] if token.info.strip() else ""
        first = token.map[0] + 2  # the fence's line, 1-based, then its first line of code
        if language == "python":
            found.append(Example("python", first, token.content))
        elif language == "console":
            lines = token.content.splitlines()
            i = 0
            while i < len(lines):
                if lines[i].startswith("$ "):
                    start, command = i, lines[i][2:]
                    while command.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        command += "\n" + lines[i]
                    found.append(Example("console", first + start, command))
                i += 1
    return found


def documentation_pages() -> list[Path]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p for p in pages if p.is_file() and "hooks" not in p.relative_to(REPO).parts]


def run_page(page: Path, workdir: Path) -> None:
    """Run the examples of `page` in `workdir`; fail naming the page's line at the first that fails."""
    run_examples(page.read_text(encoding="utf-8"), str(page.relative_to(REPO)), workdir)


def run_examples(markdown: str, where: str, workdir: Path) -> None:
    """Run the examples of the Markdown text of page `where` in `workdir` (see the module docstring)."""
    # The example scenarios and sweeps side by side, as in the repository (a sweep names its
    # scenario as ../scenarios/...).
    shutil.copytree(REPO / "scenarios", workdir / "scenarios")
    shutil.copytree(REPO / "sweeps", workdir / "sweeps")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # The package the tests import, also for the commands (a checkout's python/ on PYTHONPATH).
    import bufferlab

    package_root = str(Path(bufferlab.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    namespace: dict[str, object] = {"__name__": "__docs__"}
    cwd = Path.cwd()
    os.chdir(workdir)
    try:
        for example in examples(markdown):
            if example.language == "console":
                done = subprocess.run(["bash", "-c", example.code], cwd=workdir, env=env, capture_output=True,
                                      text=True, timeout=COMMAND_TIMEOUT_S, check=False)
                if done.returncode != 0:
                    pytest.fail(f"{where}:{example.line}: `{example.code}` exited {done.returncode}\n"
                                f"stderr:\n{done.stderr}\nstdout:\n{done.stdout[-2000:]}", pytrace=False)
            else:
                try:
                    exec(compile(example.code, f"{where}:{example.line}", "exec"), namespace)
                except Exception as e:  # noqa: BLE001 - any failure of an example fails its page
                    pytest.fail(f"{where}:{example.line}: the python block raised {type(e).__name__}: {e}",
                                pytrace=False)
    finally:
        os.chdir(cwd)


def _params() -> list[object]:
    params = []
    for page in documentation_pages():
        if not examples(page.read_text(encoding="utf-8")):
            continue
        name = str(page.relative_to(REPO))
        marks = [pytest.mark.slow] if name in SLOW_PAGES else []
        params.append(pytest.param(page, id=name, marks=marks))
    return params


@pytest.mark.engine
@pytest.mark.parametrize("page", _params())
def test_the_examples_of_the_page_run(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path)


# --- the parser and the runner, on a page written here -------------------------------------------

PAGE = """\
# A page

Some text with `inline code`.

```console
$ bufferlab --version
bufferlab 1.0 (engine 1.0)
$ echo one \\
  two > out.txt
```

```bash
make test
```

```text
$ not run either
```

```
$ no language: not run
```

```python
total = 1 + 1
```

    $ an indented block: not run

```python
assert total == 2
with open("out.txt") as f:
    assert f.read() == "one two\\n"
```
"""


def test_console_commands_and_python_blocks_are_found_in_order_with_their_lines():
    found = examples(PAGE)
    assert [(e.language, e.line, e.code) for e in found] == [
        ("console", 6, "bufferlab --version"),
        ("console", 8, "echo one \\\n  two > out.txt"),
        ("python", 25, "total = 1 + 1\n"),
        ("python", 31, 'assert total == 2\nwith open("out.txt") as f:\n    assert f.read() == "one two\\n"\n'),
    ]


def test_a_page_runs_in_order_in_a_directory_with_the_scenarios(tmp_path):
    text = PAGE + "\n```console\n$ test -f scenarios/dumbbell.toml && test ! -e results\n```\n"
    run_examples(text, "docs/page.md", tmp_path)
    assert (tmp_path / "out.txt").read_text() == "one two\n"


def test_a_failing_command_fails_the_page_naming_its_line_and_its_stderr(tmp_path):
    text = "# Page\n\n```console\n$ true\n$ echo 'no such thing' >&2; exit 3\n```\n"
    with pytest.raises(pytest.fail.Exception) as failure:
        run_examples(text, "docs/broken.md", tmp_path)
    message = str(failure.value)
    assert "docs/broken.md:5" in message and "exited 3" in message and "no such thing" in message


def test_a_failing_python_block_fails_the_page_naming_its_line(tmp_path):
    text = "# Page\n\n```python\nx = 1\n```\n\n```python\nraise ValueError(x)\n```\n"
    with pytest.raises(pytest.fail.Exception) as failure:
        run_examples(text, "docs/broken.md", tmp_path)
    assert "docs/broken.md:8" in str(failure.value) and "ValueError: 1" in str(failure.value)
