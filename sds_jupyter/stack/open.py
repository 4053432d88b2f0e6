"""Open a version as the objects analysts work with: AnnData and SpatialData."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sds_jupyter.errors import StackError, needs_extra
from sds_jupyter.stack.caches import StackCaches, default_caches
from sds_jupyter.stack.flatcopy import flatten
from sds_jupyter.stack.opened import remember_opened
from sds_jupyter.stack.rootindex import keep_root
from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.store import StackStore

if TYPE_CHECKING:
    import anndata
    import spatialdata

__all__ = ["default_cache_dir", "open_anndata", "open_spatialdata", "open_table_group"]

Folders = str | Mapping[str, str] | None


def _as_stack(
    path: str | os.PathLike[str] | Stack,
    folders: Folders,
    storage_options: Mapping[str, Any] | None = None,
    caches: StackCaches | None = None,
) -> Stack:
    if isinstance(path, Stack):
        return path
    return Stack.resolve(path, folders=folders, storage_options=storage_options, caches=caches)


def open_table_group(store: StackStore, table: str = "table") -> Any:
    """The zarr group of an AnnData table in the stack, refusing a missing one clearly."""
    import zarr

    # Naming the format spares zarr probing for Zarr v2 documents a v3 root lacks.
    root = zarr.open_group(store, mode="r", zarr_format=store.root_zarr_format)
    for path in (f"tables/{table}", f"table/{table}"):
        try:
            return root[path]
        except KeyError:
            continue
    holder = root.get("tables")
    tables = sorted(holder.group_keys()) if isinstance(holder, zarr.Group) else []
    raise StackError(f"this version has no table {table!r}; its tables are: {', '.join(tables) or 'none'}")


def open_anndata(
    path: str | os.PathLike[str] | Stack,
    table: str = "table",
    folders: Folders = None,
    lazy: bool = False,
    *,
    storage_options: Mapping[str, Any] | None = None,
    caches: StackCaches | None = None,
) -> anndata.AnnData:
    """Read one table of a version as AnnData, straight from the stack (no copy).

    ``path`` may be a URL in object storage (``s3://...``) with ``storage_options``
    for fsspec. With ``lazy=True`` the arrays are dask-backed (anndata's lazy
    reader): nothing but metadata is read until they are computed, and the store
    pickles, so a ``dask.distributed`` cluster's workers read chunks themselves.
    ``caches`` are as for :meth:`Stack.resolve`; what was read is remembered there
    for :func:`~sds_jupyter.stack.write.save.save_version` given the same caches.
    """
    import anndata

    if lazy:
        needs_extra("lazy", "open_anndata(lazy=True)")
    stack = _as_stack(path, folders, storage_options, caches)
    store = StackStore(stack, caches=caches)
    group = open_table_group(store, table)
    if lazy:
        from anndata.experimental import read_lazy

        return read_lazy(group)
    adata = anndata.read_zarr(group)
    remember_opened(adata, stack, table, caches, group=group)  # so that a save need not read X, var... again
    if stack.base.path.as_local() is not None:  # a save's root index, decoded now (saves are local only)
        keep_root(store.read_raw("zarr.json"), default_caches(caches))
    return adata


def default_cache_dir() -> Path:
    """Where flattened copies are kept: ``$SDS_WORK_DIR/.sds-cache`` or the user cache."""
    work = os.environ.get("SDS_WORK_DIR")
    if work:
        return Path(work) / ".sds-cache"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sds-jupyter"


def _cache_key(stack: Stack) -> str:
    """Changes whenever any manifest or the base changes, so a stale copy is never reused."""
    digest = hashlib.sha256()
    # The manifests as read (no request), and the base's root document (or zip) as stored.
    for version in stack.versions:
        doc = json.dumps(version.manifest.to_json(), sort_keys=True)
        digest.update(f"{version.manifest_path}|{doc}\n".encode())
    root_doc = "" if stack.base.kind == "zip" else _root_doc(stack)
    digest.update(f"{stack.base.path.fingerprint(root_doc)}\n".encode())
    return digest.hexdigest()[:20]


def _root_doc(stack: Stack) -> str:
    return "zarr.json" if stack.base.zarr_format == 3 else ".zgroup"


def open_spatialdata(
    path: str | os.PathLike[str] | Stack,
    folders: Folders = None,
    cache: str | os.PathLike[str] | None = None,
    *,
    link: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
    caches: StackCaches | None = None,
) -> spatialdata.SpatialData:
    """Read a version with spatialdata, through a flattened copy kept in ``cache``.

    spatialdata reads only local folders, so the stack is flattened once and the
    copy is reused while the stack is unchanged. With ``link=True`` the base's
    data files are linked (cheap); with ``link=False`` they are copied, so the
    store stands on its own and nothing a session later writes can reach the
    base. The default links, except in a workspace (``SDS_WORK_DIR`` set), where
    a version opens as a copy, as a checkpoint does. From object storage it is
    always a copy. ``caches`` are as for :meth:`Stack.resolve`.
    """
    needs_extra("spatialdata", "open_spatialdata")
    import spatialdata

    stack = _as_stack(path, folders, storage_options, caches)
    if link is None:
        link = not os.environ.get("SDS_WORK_DIR")
    cache_dir = Path(cache) if cache is not None else default_cache_dir()
    target = cache_dir / f"{_cache_key(stack)}{'' if link else '-copy'}.zarr"
    if not target.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        try:
            flatten(stack, target, link=link, progress=False)
        except (OSError, StackError):
            if not target.exists():
                raise
            # another process finished the same copy first
    return spatialdata.read_zarr(target)
