"""``describe`` (what a stack holds) and ``check`` (whether it is consistent)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sds_jupyter.errors import MissingDatasetError, SpecialFileError, StackError
from sds_jupyter.jsontext import JSONRefused, loads_bounded
from sds_jupyter.stack.stack import Stack, Version
from sds_jupyter.stack.store import StackStore

__all__ = ["MAX_DOCUMENT_BYTES", "CheckReport", "check", "describe"]


def _as_stack(
    path: str | os.PathLike[str] | Stack,
    folders: str | Mapping[str, str] | None,
    storage_options: Mapping[str, Any] | None = None,
) -> Stack:
    if isinstance(path, Stack):
        return path
    return Stack.resolve(path, folders=folders, storage_options=storage_options)


def describe(
    path: str | os.PathLike[str] | Stack,
    folders: str | Mapping[str, str] | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
    partial: bool = False,
) -> dict[str, Any]:
    """The stack's versions, top first, and its base, as JSON-able data.

    ``path`` may be a URL in object storage, with ``storage_options`` for fsspec.
    With ``partial``, a stack whose parent is missing is described as far as it
    resolves (the panel shows the same): ``base`` is None and ``missing`` names the
    dataset to attach and why, so a half-attached workspace can still be read.
    ``name`` is what the folder map calls a dataset (None when it does not name it).
    """
    try:
        stack = _as_stack(path, folders, storage_options)
    except MissingDatasetError as exc:
        found = getattr(exc, "partial", None)
        if not partial or found is None:
            raise
        return {
            "depth": found.versions[0].depth if found.versions else 0,
            "versions": [_version_info(v) for v in found.versions],
            "base": None,
            "missing": {
                "dataset_id": exc.dataset_id,
                "name": found.folders.name_of(exc.dataset_id),
                "message": str(exc),
            },
        }
    return {
        "depth": stack.depth,
        "versions": [_version_info(v) for v in stack.versions],
        "base": {
            "dataset_id": stack.base.dataset_id,
            "name": stack.folders.name_of(stack.base.dataset_id),
            "path": str(stack.base.path),
            "kind": stack.base.kind,
            "zarr_format": stack.base.zarr_format,
        },
    }


def _version_info(v: Version) -> dict[str, Any]:
    return {
        "depth": v.depth,
        "dataset_id": v.dataset_id,
        "folder": str(v.folder),
        "title": v.manifest.title,
        "message": v.manifest.message,
        "created_at": v.manifest.created_at,
        "created_by": v.manifest.created_by,
        "app": v.manifest.app,
        "changes": list(v.manifest.changes),
        "n_files": len(v.manifest.files),
        "deleted": list(v.manifest.deleted),
    }


@dataclass
class CheckReport:
    """What ``check`` found; ``ok`` when nothing."""

    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check(
    path: str | os.PathLike[str] | Stack,
    folders: str | Mapping[str, str] | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> CheckReport:
    """Verify the indexes readers rely on and every version's listed files.

    Problems in the data (a missing or oversized file, a document that is not
    JSON, a zip member no store has) are reported, never raised, and no object
    is read whole unless it is a metadata document of at most
    :data:`MAX_DOCUMENT_BYTES`.
    """
    stack = _as_stack(path, folders, storage_options)
    report = CheckReport()
    _check_files(stack, report)
    _check_manifest_fields(stack, report)
    store = StackStore(stack)
    try:
        report.problems.extend(store.base_problems())
        if stack.base.zarr_format == 3:
            _check_consolidated(store, report)
        _check_column_orders(store, report)
    finally:
        store.close()
    return report


#: The largest metadata document (``zarr.json``, ``.zattrs``) check reads.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


def _check_files(stack: Stack, report: CheckReport) -> None:
    for version in stack.versions:
        sizes = _overlay_sizes(version)
        for entry in version.manifest.files:
            size = sizes(entry.key)
            if size is None:
                report.problems.append(f"version {version.dataset_id}: {entry.key} is listed but missing")
            elif isinstance(size, str):
                report.problems.append(f"version {version.dataset_id}: {entry.key} {size}")
            elif size != entry.size:
                report.problems.append(
                    f"version {version.dataset_id}: {entry.key} is {size} bytes, listed as {entry.size}"
                )
    report.checked.append("every listed file exists with its size")


def _overlay_sizes(version: Any) -> Callable[[str], int | str | None]:
    """``key -> size, None (missing) or a problem`` for a version's overlay: stat locally, one LIST remotely."""
    lookup: Callable[[str], int | None] = version.overlay_dir.size_lookup()

    def size(key: str) -> int | str | None:
        try:
            return lookup(key)  # never follows a link out of the overlay
        except SpecialFileError:
            return "is a FIFO, socket or device, not a regular file"
        except StackError:
            return "leads outside the overlay folder through a symbolic link"

    return size


def _check_manifest_fields(stack: Stack, report: CheckReport) -> None:
    for version in stack.versions:
        declared = version.manifest.depth
        if declared is not None and declared != version.depth:
            report.problems.append(
                f"version {version.dataset_id}: layer.json says depth {declared}, but it sits at depth {version.depth}"
            )
        base = version.manifest.base
        if base is not None and stack.base.reference is not None and base != stack.base.reference:
            report.problems.append(
                f"version {version.dataset_id}: layer.json names base {base}, but its chain ends at {stack.base.reference}"
            )
    report.checked.append("depth and base fields match the chain")


def _depth_then_path(path: str) -> tuple[int, str]:
    return (path.count("/"), path)


def _document(store: StackStore, key: str, report: CheckReport) -> dict[str, Any] | None:
    """The JSON object at ``key``, or None (absent, or a problem reported): bounded, never raising."""
    try:
        size = store.size_raw(key)
        if size is None:
            return None
        if size > MAX_DOCUMENT_BYTES:
            report.problems.append(f"{key} is {size} bytes; no metadata document is that large")
            return None
        raw = store.read_raw(key)
    except StackError as exc:
        report.problems.append(f"{key} cannot be read: {exc}")
        return None
    if raw is None:
        return None
    try:
        doc = loads_bounded(raw[: MAX_DOCUMENT_BYTES + 1], strict=False)
    except JSONRefused as exc:
        report.problems.append(f"{key} is not valid JSON ({exc})")
        return None
    if not isinstance(doc, dict):
        report.problems.append(f"{key} is not a JSON object")
        return None
    return doc


def _check_consolidated(store: StackStore, report: CheckReport) -> None:
    root = _document(store, "zarr.json", report) or {}
    consolidated = root.get("consolidated_metadata")
    index = consolidated.get("metadata") if isinstance(consolidated, dict) else None
    report.checked.append("the root consolidated index lists exactly the store's nodes, sorted")
    if not isinstance(index, dict):
        report.problems.append("the root zarr.json has no consolidated index")
        return
    present = {k[: -len("/zarr.json")] for k in store.keys_raw("") if k.endswith("/zarr.json")}
    listed = list(index)
    for node in sorted(present - set(listed), key=_depth_then_path):
        report.problems.append(f"consolidated index misses node {node}")
    for node in sorted(set(listed) - present, key=_depth_then_path):
        report.problems.append(f"consolidated index lists {node}, which is gone")
    if listed != sorted(listed, key=_depth_then_path):
        report.problems.append("consolidated index is not sorted by depth, then path")
    for node in sorted(present & set(listed), key=_depth_then_path):
        doc = _document(store, f"{node}/zarr.json", report)
        entry = index[node]
        if doc is None:
            continue
        if (
            not isinstance(entry, dict)
            or entry.get("node_type") != doc.get("node_type")
            or (entry.get("attributes", {}) != doc.get("attributes", {}))
        ):
            report.problems.append(f"consolidated index entry for {node} differs from its zarr.json")


def _check_column_orders(store: StackStore, report: CheckReport) -> None:
    for table in store.children_raw("tables"):
        obs = f"tables/{table}/obs"
        attrs = _attributes(store, obs, report)
        if attrs is None:
            continue
        order = attrs.get("column-order", [])
        if not isinstance(order, list) or not all(isinstance(c, str) for c in order):
            report.problems.append(f"{obs}: column-order is not a list of names")
            continue
        index_name = attrs.get("_index", "_index")
        children = {
            name for name in store.children_raw(obs) if name not in (index_name, "zarr.json", ".zattrs", ".zgroup")
        }
        if len(order) != len(set(order)):
            report.problems.append(f"{obs}: column-order lists a column twice")
        for column in sorted(children - set(order)):
            report.problems.append(f"{obs}: column {column} is stored but not in column-order")
        for column in sorted(set(order) - children):
            report.problems.append(f"{obs}: column-order names {column}, which is not stored")
    report.checked.append("obs column-order matches the stored columns")


def _attributes(store: StackStore, node: str, report: CheckReport) -> dict[str, Any] | None:
    doc = _document(store, f"{node}/zarr.json", report)
    if doc is not None:
        attributes = doc.get("attributes", {})
        return attributes if isinstance(attributes, dict) else None
    if store.exists_raw(f"{node}/zarr.json"):
        return None
    return _document(store, f"{node}/.zattrs", report)
