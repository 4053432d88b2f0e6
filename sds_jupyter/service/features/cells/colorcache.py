"""A figure's colour column, computed once per set of stored objects and kept (issue 39).

Why: two figures coloured by the same column, or two versions that leave that column
alone, colour the same cells the same way. Versions never change what they store, so the
colours are named by the identity of the objects they are read from (the obs column, the
column's ``uns`` palette, or the matrix and var a gene is read from) and the settings that
shape them, and kept in the session's derived caches like cell geometry
(:mod:`sds_jupyter.service.pieces`). The name is also the reply's ETag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sds_jupyter.lru import ByteLRU
from sds_jupyter.protocol.payloads import CanvasColor
from sds_jupyter.stack import StackCaches, StackStore, node_identity
from sds_jupyter.studio.tableview import TableView

__all__ = ["COLOR_CACHE_BYTES", "ColorColumn", "cached_colors", "colors_cache", "column_color_key", "gene_color_key"]

#: Bytes of colour columns kept (a million cells' float32 values are 4 MB; uint8 codes 1 MB).
COLOR_CACHE_BYTES = 128 * 1024 * 1024
#: Part of every key: a change of how colours are computed gets new keys, never old entries.
_COLOR_FORMAT = "colors-1"


@dataclass(frozen=True)
class ColorColumn:
    """A colour description and its per-cell buffer (None when nothing is coloured)."""

    color: CanvasColor
    values: np.ndarray | None

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes) if self.values is not None else 0


def colors_cache(caches: StackCaches) -> ByteLRU[ColorColumn]:
    """Colour columns kept in ``caches``, at most :data:`COLOR_CACHE_BYTES`."""
    return caches.derived("colors", COLOR_CACHE_BYTES)


def _key(store: StackStore, nodes: Sequence[str], settings: Mapping[str, Any], extra: str = "") -> str:
    parts = [_COLOR_FORMAT, extra, json.dumps(settings, sort_keys=True, allow_nan=False)]
    parts += [node_identity(store, node) for node in nodes]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


def _store(view: TableView) -> StackStore | None:
    store = view.root.store
    return store if isinstance(store, StackStore) else None


def column_color_key(view: TableView, column: str, settings: Mapping[str, Any]) -> str | None:
    """The name of an obs column's colours: its stored column, its uns palette, the settings; None off a stack."""
    store = _store(view)
    if store is None:
        return None
    path = view.group.path
    return _key(store, [f"{path}/obs/{column}", f"{path}/uns/{column}_colors"], settings)


def gene_color_key(view: TableView, typed: str, layer: str | None, settings: Mapping[str, Any]) -> str | None:
    """The name of a gene's colours: the matrix (X or ``layer``) and var they are read from, what was typed."""
    store = _store(view)
    if store is None:
        return None
    path = view.group.path
    matrix = f"{path}/layers/{layer}" if layer is not None else f"{path}/X"
    return _key(store, [matrix, f"{path}/var"], settings, extra=f"gene:{typed}")


def cached_colors(caches: StackCaches, key: str | None, compute: Callable[[], ColorColumn]) -> ColorColumn:
    """The colours under ``key``, computed only when no figure of any version asked for them before."""
    return compute() if key is None else colors_cache(caches).get_or_compute(key, compute)
