"""The binding's type stub (python/bufferlab/_core.pyi, written by hand) against the compiled
module: the same functions, classes and methods, with the same parameters, so that mypy checks
calls against what the engine really takes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import bufferlab
from bufferlab import _core

STUB = Path(bufferlab.__file__).with_name("_core.pyi")


def _stub() -> dict[str, ast.FunctionDef | ast.ClassDef]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    return {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def _parameters(node: ast.FunctionDef) -> list[str]:
    args = node.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _compiled_parameters(obj: object) -> list[str]:
    return [name for name in inspect.signature(obj).parameters]  # type: ignore[arg-type]


def test_the_stub_declares_every_public_name_of_the_compiled_module_and_no_other() -> None:
    compiled = {name for name in dir(_core) if not name.startswith("__")}
    assert set(_stub()) == compiled


@pytest.mark.parametrize("name", sorted(n for n, node in _stub().items() if isinstance(node, ast.FunctionDef)))
def test_a_stubbed_function_takes_the_compiled_functions_parameters(name: str) -> None:
    node = _stub()[name]
    assert isinstance(node, ast.FunctionDef)
    assert _parameters(node) == _compiled_parameters(getattr(_core, name))


@pytest.mark.parametrize("name", sorted(n for n, node in _stub().items() if isinstance(node, ast.ClassDef)))
def test_a_stubbed_class_has_the_compiled_classes_methods(name: str) -> None:
    node = _stub()[name]
    assert isinstance(node, ast.ClassDef)
    compiled = getattr(_core, name)
    stubbed = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    public = {m for m in dir(compiled) if not m.startswith("_") and m not in dir(ValueError)}
    assert {m for m in stubbed if not m.startswith("_")} == public
    for method, definition in stubbed.items():
        member = inspect.getattr_static(compiled, method)
        if isinstance(member, staticmethod) or not callable(member) or method.startswith("__"):
            continue  # properties (getters) and dunders; static methods are checked by name
        # The compiled methods' signatures start at `self`, as the stub's do.
        assert _parameters(definition) == _compiled_parameters(member), method
