"""Children of a zarr group whose kind the AnnData and SpatialData formats fix.

zarr types every child as "array or group"; where the format says which one it
is (a table's ``obs`` is a group, a sparse matrix's ``indptr`` an array), these
name it, so the readers need no narrowing of their own.
"""

from __future__ import annotations

from typing import cast

import zarr

__all__ = ["child_array", "child_group"]


def child_group(parent: zarr.Group, key: str) -> zarr.Group:
    """``parent[key]``, a group by the on-disk format (KeyError when absent, as indexing)."""
    return cast(zarr.Group, parent[key])


def child_array(parent: zarr.Group, key: str) -> zarr.Array:
    """``parent[key]``, an array by the on-disk format (KeyError when absent, as indexing)."""
    return cast(zarr.Array, parent[key])
