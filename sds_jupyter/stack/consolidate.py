"""The root's consolidated index of a new version: every node of the composed store.

Readers open a version's tables from this index without a request per node, so a
commit writes it into the root document; it is carried forward from the stack
below where that keeps one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sds_jupyter.stack.cow import CopyOnWriteStore
from sds_jupyter.stack.jsontext import loads_bounded

__all__ = ["consolidated_index", "write_root_index"]

_ROOT = "zarr.json"
#: Metadata documents: names in a group's listing that are no child node.
_DOCUMENTS = frozenset({"zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"})


def _depth_then_path(path: str) -> tuple[int, str]:
    return (path.count("/"), path)


def consolidated_index(store: CopyOnWriteStore, below_root: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every node of the composed store, by path, sorted by depth then path.

    When the stack below already keeps an index, it is carried forward with this
    version's changes applied (nodes it removed dropped, documents it wrote put
    in); otherwise the node tree is walked for its documents (see
    :func:`node_documents`). Groups carry an empty nested index, as zarr writes them.
    ``below_root`` is the stack's root document, when the caller decoded it already (it is
    read only, never changed).
    """
    if below_root is None:
        below_root = loads_bounded(store.below.read_raw(_ROOT) or b"{}", strict=False)
    below = below_root.get("consolidated_metadata")
    if isinstance(below, dict) and isinstance(below.get("metadata"), dict):
        entries = {path: doc for path, doc in below["metadata"].items() if store.exists_raw(f"{path}/zarr.json")}
        for key in store.staged:
            if key.endswith("/zarr.json"):
                entries[key[: -len("/zarr.json")]] = _index_entry(store.read_raw(key) or b"{}")
    else:
        entries = {path: _index_entry(raw) for path, raw in node_documents(store)}
    return {path: entries[path] for path in sorted(entries, key=_depth_then_path)}


def node_documents(store: CopyOnWriteStore) -> Iterator[tuple[str, bytes]]:
    """``(path, zarr.json bytes)`` of every node below the root, listing groups only.

    A base without a consolidated index may hold millions of chunk objects;
    listing the whole store to find its few documents costs seconds. Only the
    folders that are not arrays are listed (groups, and folders with no document
    of their own, as a listing of every key would have found documents below
    them): an array's chunks are never listed.
    """
    pending = [""]
    while pending:
        folder = pending.pop()
        for name in store.children_raw(folder):
            if name in _DOCUMENTS:
                continue
            path = f"{folder}/{name}" if folder else name
            raw = store.read_raw(f"{path}/zarr.json")
            if raw is not None:
                yield path, raw
                if _is_array(raw):
                    continue
            elif store.exists_raw(f"{path}/.zarray"):
                continue
            pending.append(path)


def _is_array(raw: bytes) -> bool:
    try:
        doc = loads_bounded(raw, strict=False)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("node_type") == "array"


def _index_entry(raw: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = loads_bounded(raw, strict=False)
    doc.pop("consolidated_metadata", None)
    if doc.get("node_type") == "group":
        doc["consolidated_metadata"] = {"kind": "inline", "must_understand": False, "metadata": {}}
    return doc


def write_root_index(store: CopyOnWriteStore) -> None:
    """Stage the root document with the composed store's consolidated index in it."""
    root = loads_bounded(store.read_raw(_ROOT) or b"{}", strict=False)
    # an unchanged root is the stack's: its index is decoded once (a deep stack's holds every node)
    metadata = consolidated_index(store, None if _ROOT in store.staged else root)
    root["consolidated_metadata"] = {"kind": "inline", "must_understand": False, "metadata": metadata}
    # compact: json's C encoder only runs without indent, 10x quicker on a big index
    store.write_raw(_ROOT, json.dumps(root, separators=(",", ":")).encode())
