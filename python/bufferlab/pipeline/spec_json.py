"""The canonical JSON of an engine spec's member, bit for bit `canonical_json`, made faster for the
long lists of near-identical tables a large spec holds (issue 15).

A 10,000-flow dumbbell's engine spec is ~12 MB of JSON, and `json.dumps` spends most of its time
in tables every flow repeats: each flow's `tcp` and `quic` table (10,000 flows: 57 -> 38 CPU ms;
a link's three-member queue tables cost more to check than to encode, see `_MIN_ITEMS`). The
resolver hands these out as shallow copies of one table per source (`engine_spec._Tables`), so
their keys and values are the very same objects. `list_json` encodes such a table once, puts a
placeholder string in its place in a shallow copy of each row, encodes the smaller rows, and puts
the table's text back in place of each placeholder's.

Why the result is byte-identical to `canonical_json(items)`:
- a table stands for another only when it is equal to it and holds its very value objects, place
  by place (`_copies_of`, `_distinct_unequal`), so both encode to the same text (a merely equal
  table, such as one with ``0`` for ``0.0``, is encoded on its own);
- the placeholder is a string value, so it sits exactly where the table's text belongs (keys are
  sorted either way, and the row keeps its keys);
- a placeholder is replaced only when the text holds it exactly as many times as it was put in,
  so a name that happens to encode to a placeholder's text cannot be altered: the rows are then
  encoded as they are (and likewise when a table's own text holds a placeholder's).
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import is_
from typing import Any

from ..spec.scenario import canonical_json

__all__ = ["list_json"]

# Placeholders: a NUL-led string encodes as "\u0000..." (JSON escapes control characters even
# without ensure_ascii), which no resolved name or kind is expected to hold; see the module
# docstring for why one that does cannot change the result.
_MARK = "\x00bufferlab-table-"
# Distinct tables replaced in one list, and tries per key: each costs a pass over the rows (and
# one of `str.replace` over the text), so a list whose tables all differ (e.g. each flow its own
# TCP options) keeps the rest inline after a few.
_MAX_TABLES = 8
# Smaller tables are encoded in place: checking a copy costs about what encoding it does (a
# link's three-member queue tables: 20,000 links 45 -> 56 CPU ms with placeholders).
_MIN_ITEMS = 6


def _distinct_unequal(table: dict[str, Any]) -> bool:
    """True when `table`'s keys are strings and no two distinct value objects of it compare
    equal (as ``1`` and ``True``, ``0`` and ``0.0`` do)."""
    values = list({id(v): v for v in table.values()}.values())
    return (all(type(key) is str for key in table)
            and not any(a == b for i, a in enumerate(values) for b in values[i + 1:]))


def _copies_of(table: dict[str, Any], tables: list[dict[str, Any]]) -> list[int]:
    """The indices of `tables` that encode exactly like `table` (which `_distinct_unequal`
    accepted): equal to it, and holding its very value objects in its order.

    Equality gives the same keys (strings, so the same text) and values that compare equal;
    equal values can still encode differently (``0.0`` and ``0``, ``1`` and ``True``), hence the
    identity of each value with the template's at its place. Were a copy's keys in another order,
    its values could sit at another key's place only if two of the template's distinct values
    were equal, which `_distinct_unequal` excludes."""
    members = [i for i, equal in enumerate(map(table.__eq__, tables)) if equal]
    values = chain.from_iterable(map(dict.values, [tables[i] for i in members]))
    if all(map(is_, values, chain.from_iterable(repeat(table.values(), len(members))))):
        return members
    return []


def list_json(items: list[Any]) -> str:
    """`canonical_json(items)`, faster when `items` are rows (dicts) that repeat tables."""
    if len(items) < 2 or set(map(type, items)) != {dict}:
        return canonical_json(items)
    rows: list[dict[str, Any]] | None = None
    marks: list[tuple[str, str, int]] = []  # (placeholder text, table text, uses)
    for key, first in items[0].items():
        if type(first) is not dict or len(first) < _MIN_ITEMS:
            continue
        tables = [row.get(key) for row in items]
        if set(map(type, tables)) != {dict}:
            continue
        left = list(range(len(tables)))
        # Each try is a pass over the rows left: a bounded number, so that rows whose tables
        # all differ cost a few passes, not one per row.
        for _ in range(_MAX_TABLES):
            if not left or len(marks) == _MAX_TABLES:
                break
            table = tables[left[0]]
            members = _copies_of(table, [tables[i] for i in left]) if _distinct_unequal(table) else []
            if len(members) < 2:
                left = left[1:]
                continue
            mark = f"{_MARK}{len(marks)}"
            marks.append((canonical_json(mark), canonical_json(table), len(members)))
            if rows is None:
                rows = list(map(dict, items))
            for i in members:
                rows[left[i]][key] = mark
            taken = set(members)
            left = [index for j, index in enumerate(left) if j not in taken]
    if rows is None:
        return canonical_json(items)
    text = canonical_json(rows)
    escaped = canonical_json(_MARK)[1:-1]
    if (any(text.count(placeholder) != uses for placeholder, _, uses in marks)
            or any(escaped in table_text for _, table_text, _ in marks)):
        return canonical_json(items)
    for placeholder, table_text, _ in marks:
        text = text.replace(placeholder, table_text)
    return text
