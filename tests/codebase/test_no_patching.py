"""No module of the package changes another module: no assignment, deletion or
`setattr`/`delattr` on anything reached through an imported name (the standard library's
internals, a third-party package's, another bufferlab module's), no `unittest.mock` in the
package, no tuning of the interpreter's thread switching and no forked helper process. Each module does its own work
through the public functions of the others.

The one exception is the interpreter's documented way to replace a standard stream:
assigning `sys.stdout` or `sys.stderr` (the `sys` module's documentation; `contextlib.redirect_stdout`
does the same), which the command does when it was started with one closed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "bufferlab"

# (module, attribute) a program may assign: the standard streams (see the module docstring).
REPLACEABLE = {("sys", "stdout"), ("sys", "stderr")}
# Calls that change how the interpreter runs every module of the process, or fork a helper
# process beside it (the executors' pools of workers are the standard library's).
PROCESS_TRICKS = {("sys", "setswitchinterval"), ("os", "fork")}
PATCHING_MODULES = ("unittest.mock", "mock")


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Each name an import binds anywhere in `tree`, and the module (or module.object) it names."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return names


def _root_and_first_attribute(node: ast.expr) -> tuple[str, str | None] | None:
    """The name an attribute or item chain starts from, and its first attribute (`sys` and
    `modules` for ``sys.modules["x"]``); None for a chain that starts elsewhere (a call, a literal)."""
    first: str | None = None
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            first = node.attr
        node = node.value
    return (node.id, first) if isinstance(node, ast.Name) else None


def _changed_targets(node: ast.AST) -> list[ast.expr]:
    """What a statement assigns or deletes, as attribute or item expressions."""
    if isinstance(node, ast.Assign):
        targets = [t for target in node.targets for t in _unpacked(target)]
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    else:
        return []
    return [t for t in targets if isinstance(t, ast.Attribute | ast.Subscript)]


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _unpacked(element)]
    return [target]


def patches(source: str) -> list[str]:
    """Each place in `source` (a module's text) that changes another module, as
    ``line: what``."""
    tree = ast.parse(source)
    imported = imported_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        for target in _changed_targets(node):
            chain = _root_and_first_attribute(target)
            if chain is not None and chain[0] in imported and chain not in REPLACEABLE:
                found.append(f"{node.lineno}: changes {ast.unparse(target)}")
        if isinstance(node, ast.Call):
            call = _root_and_first_attribute(node.func)
            if isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") and node.args:
                chain = _root_and_first_attribute(node.args[0])
                if chain is not None and chain[0] in imported:
                    found.append(f"{node.lineno}: {node.func.id} on {ast.unparse(node.args[0])}")
            elif call is not None and call[0] in imported and (imported[call[0]], call[1]) in PROCESS_TRICKS:
                found.append(f"{node.lineno}: calls {ast.unparse(node.func)}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            if any(m in PATCHING_MODULES for m in modules):
                found.append(f"{node.lineno}: imports {' '.join(modules)}")
    return found


@pytest.mark.parametrize("module", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_of_the_package_changes_another_module(module: Path) -> None:
    assert patches(module.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("source", [
    "import dataclasses\ndataclasses._create_fn = lambda *a: None",               # codecache's kind
    "import re._compiler\nre._compiler.compile = None",
    "import collections\nsetattr(collections, 'eval', eval)",
    "import sys\nsys.modules['pydantic.plugin._loader'] = object()",            # a module put in place
    "import sys\n\ndef f():\n    sys.setswitchinterval(0.0002)",                # the switch interval
    "import os\npid = os.fork()",                                                # a helper process
    "from . import connection\nconnection.prepare_writer = None",                # another bufferlab module
    "import typing as t\ndel t.ForwardRef",
    "from pydantic import BaseModel\nBaseModel.model_config['x'], y = 1, 2",
    "from unittest import mock",
])
def test_the_scan_finds_each_kind_of_patch(source: str) -> None:
    assert len(patches(source)) == 1, source


@pytest.mark.parametrize("source", [
    "import sys\nsys.stdout = open('/dev/null', 'w')",                           # a documented replacement
    "import os\nos.environ.setdefault('X', '1')",                                # a call, not an assignment
    "def f(bar):\n    bar.tasks[-1].start_time = 0",                             # an object of the module's own
    "import gc\ngc.set_threshold(1000)",
])
def test_the_scan_leaves_a_module_s_own_objects_and_public_calls_alone(source: str) -> None:
    assert patches(source) == []
