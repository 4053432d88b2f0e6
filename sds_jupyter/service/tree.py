"""The ``tree`` request: every version of the datasets folder on the opened version's base.

Versions saved from an earlier version are branches; they never show in a
stack's history (which follows one chain of parents down), so the tree lists
the datasets folder (:func:`sds_jupyter.stack.listing.scan_versions`), follows each
version's parents among the versions found, and keeps those whose chain ends
where the opened version's does: the same base, or, for a broken chain, the
same missing dataset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sds_jupyter.errors import StackError, UnsafePathError
from sds_jupyter.protocol.types import BaseSummary, TreeData, TreeNode
from sds_jupyter.stack import (
    DATA_DIR,
    CirroRef,
    FolderMap,
    FoundVersion,
    StackCaches,
    depth_above_missing,
    in_cirro,
    is_version,
    is_within,
    scan_versions,
)
from sds_jupyter.studio.jsonable import jsonable

__all__ = ["build_tree", "chain_end", "sibling_folder"]

#: Where a chain ends: ("base", dataset id, path in the dataset) or ("missing", dataset id, "").
End = tuple[str, str, str]


def _store_path(path: str) -> str:
    """A base reference's path as the resolver finds it (``data/`` is tried too, see ``dataset_places``)."""
    return path.removeprefix(f"{DATA_DIR}/")


def chain_end(reference: str | None, missing_id: str | None = None) -> End | None:
    """Where the chain of a stack ends, from its base reference or its missing dataset."""
    if missing_id is not None:
        return ("missing", missing_id, "")
    if reference is None:
        return None
    ref = CirroRef.parse(reference)
    return ("base", ref.dataset_id, _store_path(ref.path))


def sibling_folder(
    datasets_dir: Path,
    folder: str | os.PathLike[str],
    relative_to: Path | None,
    beside: Sequence[Path] = (),
    caches: StackCaches | None = None,
) -> Path:
    """``folder`` (as the tree names it) when it is a version folder of ``datasets_dir`` or ``beside``; else refused.

    A browser moves to another version of the tree by its folder; that folder
    comes back from the front end, so it is checked like any other path. Its manifest
    is looked up in ``caches`` (the process's when None).
    """
    path = Path(folder)
    if not path.is_absolute() and relative_to is not None:
        path = relative_to / path
    real = Path(os.path.realpath(path))
    roots = [Path(os.path.realpath(root)) for root in (datasets_dir, *beside)]
    if not any(is_within(real, root) and real != root for root in roots):
        raise UnsafePathError(f"{folder} is not a folder of the datasets folder {datasets_dir}; open it directly")
    if not is_version(real, caches):
        raise StackError(f"{folder} holds no layer.json: it is not a version")
    return real


@dataclass
class _Node:
    found: FoundVersion
    parent_id: str | None
    base: End | None
    depth: int = 0
    end: End | None = None
    shown: dict[str, Any] | None = None
    """The payload's fields that depend on the manifest alone, made once per kept scan."""

    def fields(self) -> dict[str, Any]:
        """Why kept: a warm tree request is mostly its proof; converting every node's changes to
        JSON again on each request cost a third as much again (100 nodes a base)."""
        if self.shown is None:
            manifest = self.found.manifest
            self.shown = {
                "dataset_id": self.found.dataset_id,
                "parent": self.parent_id,
                "depth": self.depth,
                "title": manifest.title,
                "created_at": manifest.created_at,
                "created_by": manifest.created_by,
                "changes": [jsonable(change) for change in manifest.changes],
            }
        return self.shown


def _parents(scan_versions_: list[FoundVersion], notes: list[str]) -> dict[str, _Node]:
    """Each found version by dataset ID, with its parent's ID or the base it names."""
    nodes: dict[str, _Node] = {}
    for found in scan_versions_:
        try:
            ref = CirroRef.parse(found.manifest.parent)
        except StackError as exc:
            notes.append(f"skipped {os.path.basename(found.folder)!r}: {exc}")
            continue
        if found.dataset_id in nodes:
            notes.append(f"skipped {os.path.basename(found.folder)!r}: dataset {found.dataset_id} is listed twice")
            continue
        if ref.names_manifest:
            nodes[found.dataset_id] = _Node(found, ref.dataset_id, None)
        else:
            nodes[found.dataset_id] = _Node(found, None, ("base", ref.dataset_id, _store_path(ref.path)))
    return nodes


def _settle(nodes: dict[str, _Node], notes: list[str]) -> None:
    """Give every node its depth and where its chain ends (a loop ends nowhere)."""
    for start in nodes.values():
        path: list[_Node] = []
        on_path: set[str] = set()
        node: _Node | None = start
        end: End | None = None
        depth = 0
        while node is not None and node.end is None:
            if node.found.dataset_id in on_path:
                notes.append(f"skipped {os.path.basename(node.found.folder)!r}: its parent references form a loop")
                end, node = ("loop", node.found.dataset_id, ""), None
                break
            on_path.add(node.found.dataset_id)
            path.append(node)
            if node.base is not None:
                end, node = node.base, None
            elif node.parent_id in nodes:
                node = nodes[node.parent_id]
            else:
                end, node = ("missing", str(node.parent_id), ""), None
                # the versions keep their own numbers above the missing one (the stack's rule)
                depth = depth_above_missing(path[-1].found.manifest, missing_is_version=True) - 1
        if node is not None:  # reached a settled node
            end, depth = node.end, node.depth
        for item in reversed(path):
            depth += 1
            item.end, item.depth = end, depth


Graph = tuple[dict[End | None, list[_Node]], list[str]]


def _graph(versions: list[FoundVersion], scan_notes: list[str]) -> Graph:
    """The found versions grouped by where their chains end, newest first in each group."""
    notes = list(scan_notes)
    nodes = _parents(versions, notes)
    _settle(nodes, notes)
    by_end: dict[End | None, list[_Node]] = {}
    for node in nodes.values():
        by_end.setdefault(node.end, []).append(node)
    for group in by_end.values():
        group.sort(key=lambda n: (n.found.manifest.created_at or "", n.depth), reverse=True)
    return by_end, notes


def build_tree(
    datasets_dir: Path,
    folders: FolderMap,
    current: str,
    end: End | None,
    base: BaseSummary | None,
    folder_text: Callable[[Path], str],
    beside: Sequence[Path] = (),
    caches: StackCaches | None = None,
) -> TreeData:
    """The ``tree`` payload: the versions whose chain ends at ``end``, newest first.

    ``beside`` are further folders listed with ``datasets_dir`` (in a workspace: the
    versions folder and the mounted datasets, see :func:`~sds_jupyter.stack.workspace.listed_beside`).
    The scans are kept in ``caches`` (the process's when None).
    """
    scan = scan_versions(datasets_dir, folders, caches=caches)
    graph: Graph
    if beside:  # several folders: their versions are one graph, settled per request
        scans = [scan, *(scan_versions(folder, folders, caches=caches) for folder in beside)]
        graph = _graph([v for s in scans for v in s.versions], [n for s in scans for n in s.notes])
    else:
        cached = scan.derived.get("tree")
        if cached is None:  # settled once per scan; an unchanged folder reuses it
            cached = scan.derived["tree"] = _graph(scan.versions, scan.notes)
        graph = cached
    by_end, notes = graph
    kept = by_end.get(end, []) if end is not None else []
    out: list[TreeNode] = []
    for node in kept:
        item = cast(TreeNode, {**node.fields(), "folder": folder_text(Path(node.found.folder))})
        if not in_cirro(node.found.dataset_id, folders, Path(node.found.folder).parent):
            item["not_in_cirro"] = True
        out.append(item)
    return {"current": current, "nodes": out, "base": base, "notes": list(notes)}
