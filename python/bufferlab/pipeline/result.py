"""A run's result in Python: the engine's counters as dicts, its long columns as numpy arrays.

The engine hands over a result in two parts (crates/bufferlab-py/src/lib.rs): JSON text with the
counters of `RunResult` (crates/bufferlab-core/src/record/result.rs), and every long numeric
column as little-endian bytes, described in the JSON's ``columns`` by dtype and shape. `decode`
puts them back together: ``result["timeseries"]["cwnd_bytes"]`` is a ``(flows, samples)`` uint64
array, ``result["captures"][0]["seq"]`` a uint64 array with one entry per captured packet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["decode"]

# The engine's column dtypes as numpy spells them (little-endian).
DTYPES = {"u64": "<u8", "u32": "<u4", "u8": "u1"}
# Capture fields the engine sends as 0/1 bytes.
BOOLEAN_FIELDS = frozenset({"is_data", "retransmission"})


def _array(description: Mapping[str, Any], data: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(data, dtype=DTYPES[description["dtype"]]).reshape(description["shape"])


def decode(json_text: str, arrays: Mapping[str, bytes]) -> dict[str, Any]:
    """The result of `bufferlab._core.run` as one dict, columns as read-only numpy arrays."""
    result: dict[str, Any] = json.loads(json_text)
    columns: dict[str, Any] = result.pop("columns")
    for name, description in columns.items():
        kind, _, rest = name.partition(".")
        value = _array(description, arrays[name])
        if kind == "timeseries":
            result["timeseries"][rest] = value
        elif kind == "captures":
            index, _, field = rest.partition(".")
            result["captures"][int(index)][field] = value.astype(bool) if field in BOOLEAN_FIELDS else value
        else:
            raise ValueError(f"engine result: unknown column {name!r}")
    return result
