"""Overrides: change a scenario's fields by path, validated exactly like the file.

A path names a field as the TOML file does, with dots between tables and ``[i]`` for an entry of
an array of tables: ``topology.queue``, ``flows[0].cca``, ``flows[2].tcp.min_rto``, ``duration``.
Tables that are missing on the way are created (``flows[0].tcp.sack`` on a flow without a ``tcp``
table); an array entry must exist (``flows[5]`` of three flows is an error). The value replaces
whatever was there, in its TOML form (``"500p"``, ``"cubic"``, ``10``, an inline table).

On the command line (``--set KEY=VALUE``) a VALUE is read as a TOML value when it is one
(``10``, ``true``, ``"1.5s"``, ``{dist = "uniform", low = "0s", high = "1s"}``, ``[1, 2]``) and as
plain text otherwise (``500p``, ``cubic``, ``25ms``).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping
from typing import Any

from ..errors import NoSuchField, SpecError

__all__ = ["apply_overrides", "parse_assignment", "parse_value", "split_path"]

_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)")


def split_path(path: str) -> list[str | int]:
    """'flows[0].tcp.sack' -> ['flows', 0, 'tcp', 'sack']; SpecError naming the path if malformed."""
    if not isinstance(path, str) or not path.strip():
        raise SpecError("--set", "empty key (expected KEY=VALUE, e.g. topology.queue=500p)")
    out: list[str | int] = []
    for piece in path.strip().split("."):
        match = _PART.fullmatch(piece)
        if match is None:
            raise SpecError(path, f'malformed key (at "{piece}"; expected names joined by dots, '
                                  'with [i] for an array entry, e.g. flows[0].cca)')
        out.append(match.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return out


def _where(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def _set(data: dict[str, Any], parts: list[str | int], value: Any) -> None:
    node: Any = data
    for depth, part in enumerate(parts[:-1]):
        nxt = parts[depth + 1]
        here = _where(parts[:depth + 1])
        if isinstance(part, int):
            if not isinstance(node, list):
                raise NoSuchField(here, "not an array: it has no entry [i]")
            if part >= len(node):
                raise NoSuchField(here, f"no such entry ({len(node)} listed)")
            child = node[part]
        else:
            if not isinstance(node, dict):
                raise NoSuchField(here, "not a table: it has no fields")
            child = node.get(part)
            if child is None:
                if isinstance(nxt, int):
                    raise NoSuchField(here, f"no such entry (nothing is listed under {here})")
                child = node[part] = {}
        if isinstance(nxt, str) and not isinstance(child, dict):
            raise NoSuchField(here, f"is {child!r}, not a table: it has no field {nxt!r}")
        node = child
    last = parts[-1]
    where = _where(parts)
    if isinstance(last, int):
        if not isinstance(node, list):
            raise NoSuchField(where, "not an array: it has no entry [i]")
        if last >= len(node):
            raise NoSuchField(where, f"no such entry ({len(node)} listed)")
        node[last] = value
    else:
        node[last] = value


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the TOML-form mapping `data` with every override applied, in order."""
    out = copy.deepcopy(dict(data))
    for key, value in overrides.items():
        _set(out, split_path(key), value)
    return out


def parse_value(text: str) -> Any:
    """A --set VALUE: a TOML value when it parses as one, else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_assignment(text: str) -> tuple[str, Any]:
    """'topology.queue=500p' -> ('topology.queue', '500p')."""
    key, sep, value = text.partition("=")
    if not sep:
        raise SpecError("--set", f'"{text}" is not KEY=VALUE (e.g. --set topology.queue=500p)')
    split_path(key)  # a malformed key is reported now, naming it
    return key.strip(), parse_value(value.strip())
