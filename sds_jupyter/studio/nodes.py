"""Children of a zarr group whose kind the AnnData and SpatialData formats fix.

zarr types every child as "array or group"; where the format says which one it
is (a table's ``obs`` is a group, a sparse matrix's ``indptr`` an array), these
name it, so the readers need no narrowing of their own.
"""

from __future__ import annotations

from typing import cast

import zarr

__all__ = ["child_array", "child_group", "element_length"]


def child_group(parent: zarr.Group, key: str) -> zarr.Group:
    """``parent[key]``, a group by the on-disk format (KeyError when absent, as indexing)."""
    return cast(zarr.Group, parent[key])


def child_array(parent: zarr.Group, key: str) -> zarr.Array:
    """``parent[key]``, an array by the on-disk format (KeyError when absent, as indexing)."""
    return cast(zarr.Array, parent[key])


def element_length(node: zarr.Array | zarr.Group) -> int:
    """How many entries a 1-d AnnData element holds, without reading it.

    An array answers by its shape; anndata encodes some columns and indexes as
    groups (categorical: ``codes``; nullable arrays, and string indexes from
    anndata 0.13 on: ``values`` beside a ``mask``), which answer by that member.
    """
    if isinstance(node, zarr.Array):
        return int(node.shape[0])
    for member in ("values", "codes"):
        if member in node:
            inner = node[member]
            if isinstance(inner, zarr.Array):
                return int(inner.shape[0])
    raise ValueError(f"cannot tell the length of {node.path!r} (encoding {node.attrs.get('encoding-type')!r})")
