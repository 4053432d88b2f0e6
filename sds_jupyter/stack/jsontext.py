"""Parsing JSON that arrives with data: manifests, folder maps, store documents.

Python's decoder and every recursive walker after it (``json.dumps``, a deep
copy, the service's answers) hit the recursion limit on JSON nested a few
hundred levels deep, so one small hostile file could break every request on a
stack. Documents are therefore parsed here, once, and refused when they nest
deeper than :data:`MAX_JSON_DEPTH`; the depth is measured without recursion.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "JSONRefused", "json_depth", "loads_bounded"]

#: Objects and lists inside one another, at most. Manifests and Zarr documents nest a few levels.
MAX_JSON_DEPTH = 64


class JSONRefused(ValueError):
    """Text that is not JSON, or JSON this reader refuses (too deep, a non-finite number)."""


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        # 1e999 decodes to infinity, which no JSON writer can write back.
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


# Built once. Strict: NaN, Infinity and numbers that overflow to infinity are
# refused, so what is parsed can always be written back as strict JSON.
_STRICT = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_LENIENT = json.JSONDecoder()


def json_depth(doc: Any, limit: int | None = None) -> int:
    """How many objects and lists nest in ``doc`` (0 for a scalar); stops counting past ``limit``."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(doc, 1)]
    while pending:
        node, level = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if limit is not None and deepest > limit:
            return deepest
        pending.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def loads_bounded(raw: str | bytes, *, strict: bool = True, max_depth: int | None = MAX_JSON_DEPTH) -> Any:
    """Decode ``raw``; refuse it (``JSONRefused``) if it is not JSON or nests too deep.

    ``strict`` also refuses ``NaN``, ``Infinity`` and numbers too large for a
    float; Zarr v2 documents may hold ``NaN`` fill values, so they are read lenient.
    ``max_depth=None`` leaves the depth to a caller that checks what it keeps
    (the decoder's own recursion limit is still caught).
    """
    try:
        text = raw.decode(json.detect_encoding(raw)) if isinstance(raw, bytes) else raw
        doc = (_STRICT if strict else _LENIENT).decode(text)
    except RecursionError:
        raise JSONRefused(f"it nests more than {max_depth or MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise JSONRefused(_short(exc)) from None
    if max_depth is not None and json_depth(doc, max_depth) > max_depth:
        raise JSONRefused(f"it nests more than {max_depth} levels deep")
    return doc


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."
