"""``describe`` (what a stack holds) and ``check`` (whether it is consistent)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.store import StackStore

__all__ = ["CheckReport", "check", "describe"]


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
) -> dict[str, Any]:
    """The stack's versions, top first, and its base, as JSON-able data.

    ``path`` may be a URL in object storage, with ``storage_options`` for fsspec.
    """
    stack = _as_stack(path, folders, storage_options)
    return {
        "depth": stack.depth,
        "versions": [
            {
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
            for v in stack.versions
        ],
        "base": {
            "dataset_id": stack.base.dataset_id,
            "path": str(stack.base.path),
            "kind": stack.base.kind,
            "zarr_format": stack.base.zarr_format,
        },
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
    """Verify the indexes readers rely on and every version's listed files."""
    stack = _as_stack(path, folders, storage_options)
    report = CheckReport()
    _check_files(stack, report)
    _check_manifest_fields(stack, report)
    store = StackStore(stack)
    try:
        if stack.base.zarr_format == 3:
            _check_consolidated(store, report)
        _check_column_orders(store, report)
    finally:
        store.close()
    return report


def _check_files(stack: Stack, report: CheckReport) -> None:
    for version in stack.versions:
        sizes = _overlay_sizes(version)
        for entry in version.manifest.files:
            size = sizes(entry.key)
            if size is None:
                report.problems.append(f"version {version.dataset_id}: {entry.key} is listed but missing")
            elif size != entry.size:
                report.problems.append(
                    f"version {version.dataset_id}: {entry.key} is {size} bytes, "
                    f"listed as {entry.size}"
                )
    report.checked.append("every listed file exists with its size")


def _overlay_sizes(version: Any) -> Any:
    """``key -> size or None`` for a version's overlay: stat locally, one LIST remotely."""
    return version.overlay_dir.size_lookup()


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


def _check_consolidated(store: StackStore, report: CheckReport) -> None:
    raw = store.read_raw("zarr.json")
    root = json.loads(raw) if raw else {}
    index = (root.get("consolidated_metadata") or {}).get("metadata")
    report.checked.append("the root consolidated index lists exactly the store's nodes, sorted")
    if index is None:
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
        doc = json.loads(store.read_raw(f"{node}/zarr.json") or b"{}")
        if index[node].get("node_type") != doc.get("node_type") or (
            index[node].get("attributes", {}) != doc.get("attributes", {})
        ):
            report.problems.append(f"consolidated index entry for {node} differs from its zarr.json")


def _check_column_orders(store: StackStore, report: CheckReport) -> None:
    for table in store.children_raw("tables"):
        obs = f"tables/{table}/obs"
        attrs = _attributes(store, obs)
        if attrs is None:
            continue
        order = list(attrs.get("column-order", []))
        index_name = attrs.get("_index", "_index")
        children = {
            name for name in store.children_raw(obs)
            if name not in (index_name, "zarr.json", ".zattrs", ".zgroup")
        }
        if len(order) != len(set(order)):
            report.problems.append(f"{obs}: column-order lists a column twice")
        for column in sorted(children - set(order)):
            report.problems.append(f"{obs}: column {column} is stored but not in column-order")
        for column in sorted(set(order) - children):
            report.problems.append(f"{obs}: column-order names {column}, which is not stored")
    report.checked.append("obs column-order matches the stored columns")


def _attributes(store: StackStore, node: str) -> dict[str, Any] | None:
    raw = store.read_raw(f"{node}/zarr.json")
    if raw is not None:
        attributes: dict[str, Any] = json.loads(raw).get("attributes", {})
        return attributes
    raw = store.read_raw(f"{node}/.zattrs")
    return json.loads(raw) if raw is not None else None
