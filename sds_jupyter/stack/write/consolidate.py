"""The root's consolidated index of a new version: every node of the composed store.

Readers open a version's tables from this index without a request per node, so a
commit writes it into the root document; it is carried forward from the stack
below where that keeps one.

A deep stack's index holds every node its versions added (500 versions each adding
an uns entry: 540 nodes, 0.25 MB of JSON), and decoding and encoding it all again
cost a one-column save more than writing the column. So the index below is kept
decoded, each entry as its encoded text (:class:`CarriedIndex`), in the caller's
:class:`~sds_jupyter.stack.caches.StackCaches` under the root document's own bytes: the
same bytes decode the same, so an entry can never be stale, whoever wrote the file.
A commit writes the new root from those texts and keeps it under the bytes it wrote,
so the next save on the new version finds it too; an open of a table keeps the root it
opened (:mod:`~sds_jupyter.stack.rootindex`), so the first save after it does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from sds_jupyter.jsontext import loads_bounded
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.rootindex import COMPACT, ROOT_INDEX_CACHE_BYTES, CarriedIndex, carried, root_key
from sds_jupyter.stack.write.cow import CopyOnWriteStore

__all__ = ["consolidated_index", "write_root_index"]


_ROOT = "zarr.json"
#: A path as ``json.dumps`` writes it (ASCII, its escapes), without the encoder's set-up per call.
_quoted: Callable[[str], str] = json.encoder.encode_basestring_ascii
#: Metadata documents: names in a group's listing that are no child node.
_DOCUMENTS = frozenset({"zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata"})


def _depth_then_path(path: str) -> tuple[int, str]:
    return (path.count("/"), path)


def consolidated_index(store: CopyOnWriteStore) -> dict[str, Any]:
    """Every node of the composed store, by path, sorted by depth then path.

    When the stack below already keeps an index, it is carried forward with this
    version's changes applied (nodes it removed dropped, documents it wrote put
    in); otherwise the node tree is walked for its documents (see
    :func:`node_documents`). Groups carry an empty nested index, as zarr writes them.
    What :func:`write_root_index` writes, decoded.
    """
    entries = _carried_entries(store, CarriedIndex.decode(store.below.read_raw(_ROOT) or b"{}"))
    return {path: json.loads(entries[path]) for path in sorted(entries, key=_depth_then_path)}


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


def _carried_entries(store: CopyOnWriteStore, below: CarriedIndex) -> dict[str, str]:
    """The index of the composed store as entry texts: the one below less what is gone, plus what
    this version wrote; walked from the node tree when the stack below keeps none."""
    if below.entries is None:
        return {path: json.dumps(_index_entry(raw), separators=COMPACT) for path, raw in node_documents(store)}
    present = store.existing_raw(f"{path}/zarr.json" for path in below.entries)
    entries = {path: text for path, text in below.entries.items() if f"{path}/zarr.json" in present}
    for key in store.staged:
        if key.endswith("/zarr.json"):
            entries[key[: -len("/zarr.json")]] = json.dumps(
                _index_entry(store.read_raw(key) or b"{}"), separators=COMPACT
            )
    return entries


def write_root_index(store: CopyOnWriteStore, caches: StackCaches | None = None) -> None:
    """Stage the root document with the composed store's consolidated index in it.

    ``caches`` keep decoded roots (see the module's docstring); without them the
    stack's root is decoded here, once.
    """
    cache = None if caches is None else caches.derived("root-indexes", ROOT_INDEX_CACHE_BYTES)
    below = carried(store.below.read_raw(_ROOT) or b"{}", cache, None if caches is None else caches.disk)
    staged = store.staged.get(_ROOT)
    head = below.head if staged is None else CarriedIndex.decode(staged).head
    entries = _carried_entries(store, below)
    # json.dumps of a string with its defaults is this C function's text (540 paths a deep save)
    members = ",".join(f"{_quoted(path)}:{entries[path]}" for path in sorted(entries, key=_depth_then_path))
    fields = json.dumps(head, separators=COMPACT)[1:-1]
    text = (
        f"{{{fields}{',' if fields else ''}"
        f'"consolidated_metadata":{{"kind":"inline","must_understand":false,"metadata":{{{members}}}}}}}'
    ).encode()
    store.write_raw(_ROOT, text)
    if cache is not None:  # the next save, on the version this one commits, reads these bytes
        cache.put(root_key(text), CarriedIndex(text, head, entries))
