"""A table's embeddings (obsm entries such as ``X_umap``, ``X_pca``) as the figure view draws them.

Why here: the figure view shows an embedding beside the tissue, linked cell by cell, so it
needs the first two columns of an obsm entry in table order, nothing else. They are read as
a slice (a 50-column PCA is never read whole), checked against the table's cell count from
metadata first, and kept in the session's caches (``StackCaches.derived``), named by the
stored entry's identity (as cell geometry is, :mod:`sds_jupyter.service.pieces`): a version that leaves the entry alone
shares it, one that rewrites it gets a new name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import zarr
from anndata.io import read_elem

from sds_jupyter.lru import ByteLRU
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.stack import StackCaches, StackStore, node_identity
from sds_jupyter.studio.tableview import TableView, check_bytes, check_claim, slice_chunks_bytes

__all__ = [
    "EMBEDDING_CACHE_BYTES",
    "SPATIAL",
    "Embedding",
    "cached_embedding",
    "embedding_keys",
    "embedding_name",
    "embedding_positions",
    "embeddings_cache",
]

#: Bytes of embedding coordinates kept (8 bytes a cell: 32 embeddings of 1,000,000 cells).
EMBEDDING_CACHE_BYTES = 256 * 1024 * 1024
#: Part of every key: a change of what is computed gets new keys, never old entries.
_FORMAT = "embedding-1"
#: The obsm entry of the cells' positions on the tissue: the tissue view itself, never offered.
SPATIAL = "spatial"


@dataclass(frozen=True)
class Embedding:
    """An embedding's first two columns (float32, table order), its column count and finite bounds."""

    x: np.ndarray
    y: np.ndarray
    columns: int
    bounds: list[float] | None

    @property
    def nbytes(self) -> int:
        return int(self.x.nbytes + self.y.nbytes)


def embeddings_cache(caches: StackCaches) -> ByteLRU[Embedding]:
    """Embeddings kept in ``caches``, at most :data:`EMBEDDING_CACHE_BYTES`."""
    return caches.derived("embeddings", EMBEDDING_CACHE_BYTES)


def _shape(node: zarr.Array | zarr.Group) -> tuple[int, int] | None:
    """(rows, columns) of a numeric 2-D array or a dataframe entry, from metadata; None for anything else."""
    if isinstance(node, zarr.Array):
        if len(node.shape) != 2 or node.dtype.kind not in "iuf":
            return None
        return int(node.shape[0]), int(node.shape[1])
    if node.attrs.get("encoding-type") != "dataframe":
        return None
    columns = cast("list[Any]", node.attrs.get("column-order", []))
    if not all(_holds_numbers(node.get(str(column))) for column in columns[:2]):
        return None  # text in the first two columns: no coordinates to draw
    index = node.get(str(node.attrs.get("_index", "_index")))
    rows = int(index.shape[0]) if isinstance(index, zarr.Array) else -1
    return rows, len(columns)


def _holds_numbers(column: zarr.Array | zarr.Group | None) -> bool:
    """Whether a dataframe entry's stored column holds numbers, from its metadata alone (an array
    of integers or floats, or anndata's nullable integers or floats); text and categories do not."""
    if isinstance(column, zarr.Array):
        return column.dtype.kind in "iuf"
    encoding = column.attrs.get("encoding-type") if column is not None else None
    return encoding in ("nullable-integer", "nullable-float")


def embedding_keys(view: TableView) -> list[str]:
    """The table's obsm entries of at least 2 columns and one row a cell (``spatial`` aside), sorted."""
    if "obsm" not in view.group:
        return []
    obsm = view.group["obsm"]
    if not isinstance(obsm, zarr.Group):
        return []
    out = []
    for key in sorted(obsm.keys()):
        shape = _shape(obsm[key]) if key != SPATIAL else None
        if shape is not None and shape[1] >= 2 and shape[0] in (view.n_obs, -1):
            out.append(key)
    return out


def _read(view: TableView, key: str) -> Embedding:
    node = view.group[f"obsm/{key}"]
    if isinstance(node, zarr.Array):
        check_bytes(slice_chunks_bytes(node, 2), f"Obsm entry {key!r} (the chunks of its first two columns)")
        first = np.asarray(node[:, :2], dtype=np.float32)  # the two columns' chunks only
        columns = int(node.shape[1])
    else:
        check_claim(node, f"Obsm entry {key!r}")
        frame = read_elem(node)
        try:
            first = frame.iloc[:, :2].to_numpy(dtype=np.float32)
        except (TypeError, ValueError):
            raise RequestError(f"Obsm entry {key!r} does not hold numbers in its first two columns.") from None
        columns = int(frame.shape[1])
    if first.shape != (view.n_obs, 2):
        raise RequestError(f"Obsm entry {key!r} has {first.shape[0]:,} rows; the table has {view.n_obs:,} cells.")
    x, y = np.ascontiguousarray(first[:, 0]), np.ascontiguousarray(first[:, 1])
    finite = np.isfinite(x) & np.isfinite(y)
    bounds = (
        [float(x[finite].min()), float(y[finite].min()), float(x[finite].max()), float(y[finite].max())]
        if finite.any()
        else None
    )
    return Embedding(x, y, columns, bounds)


def embedding_name(view: TableView, key: str) -> str:
    """The name of an embedding's coordinates: the stored entry's identity (equal names, equal coordinates)."""
    store = view.root.store
    if not isinstance(store, StackStore):  # every service view reads a stack
        raise TypeError(f"a table view over {type(store).__name__}, not a stack")
    node = node_identity(store, f"{view.group.path}/obsm/{key}")
    return hashlib.sha256(f"{_FORMAT}\n{node}".encode()).hexdigest()[:32]


def cached_embedding(view: TableView, key: str) -> tuple[str, Embedding]:
    """Embedding ``key`` of the table (a refusal naming the ones it has), read once per stored entry."""
    keys = embedding_keys(view)
    if key not in keys:
        have = ", ".join(keys) or "none"
        raise RequestError(
            f"Table {view.name!r} has no embedding {key[:80]!r} (obsm entries of 2 or more columns, "
            f"spatial aside: {have})."
        )
    name = embedding_name(view, key)
    return name, embeddings_cache(view.caches).get_or_compute(name, lambda: _read(view, key))


def embedding_positions(view: TableView) -> Callable[[str], tuple[np.ndarray, np.ndarray]]:
    """Where each embedding of the table puts its cells, by name: what ``annotate`` tests drawn polygons on."""

    def positions(key: str) -> tuple[np.ndarray, np.ndarray]:
        found = cached_embedding(view, key)[1]
        return found.x, found.y

    return positions
