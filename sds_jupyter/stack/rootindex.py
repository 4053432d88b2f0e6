"""A root document decoded for carrying its consolidated index forward, kept by its bytes.

A save writes a new root whose index is the one below plus what it changed (see
:mod:`~sds_jupyter.stack.write.consolidate`). Decoding a deep stack's index (540 nodes,
0.25 MB) and encoding it again cost a one-column save more than writing the column, so it
is kept decoded, each entry as its encoded text, in the caller's
:class:`~sds_jupyter.stack.caches.StackCaches`, under the document's own bytes: the same bytes
decode the same, so an entry is never stale, whoever wrote the file. Kept when a table is
opened (the save that follows finds it) and when a commit writes a root (the next save does).
This module sits below the open and the write wing, which both keep entries.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from sds_jupyter.jsontext import loads_bounded
from sds_jupyter.stack.caches import StackCaches

__all__ = ["COMPACT", "ROOT_INDEX_CACHE_BYTES", "CarriedIndex", "carried", "keep_root", "root_key"]

#: Decoded root documents kept per :class:`StackCaches` (counted as twice their text: the
#: raw bytes kept to compare, and the entries' texts).
ROOT_INDEX_CACHE_BYTES = 32 * 1024 * 1024

COMPACT = (",", ":")  # json's C encoder only runs without indent, 10x quicker on a big index


@dataclass(frozen=True)
class CarriedIndex:
    """A root document decoded: its fields but the index, and each index entry as encoded text."""

    raw: bytes
    """The document's bytes, compared in full before an entry is used (a checksum only finds it)."""
    head: dict[str, Any]
    """The root's fields without ``consolidated_metadata``; read only."""
    entries: dict[str, str] | None
    """``path`` -> the entry's compact JSON text; None when the root keeps no index."""

    @property
    def nbytes(self) -> int:
        return 2 * len(self.raw)

    @classmethod
    def decode(cls, raw: bytes) -> CarriedIndex:
        doc = loads_bounded(raw, strict=False)
        head = doc if isinstance(doc, dict) else {}
        below = head.pop("consolidated_metadata", None)
        index = below.get("metadata") if isinstance(below, dict) else None
        entries = None
        if isinstance(index, dict):
            entries = {path: json.dumps(entry, separators=COMPACT) for path, entry in index.items()}
        return cls(raw, head, entries)


def carried(raw: bytes, cache: Any) -> CarriedIndex:
    """``raw`` decoded, from ``cache`` when the same bytes were decoded (or written) before."""
    if cache is None:
        return CarriedIndex.decode(raw)
    with cache.claim(root_key(raw)) as turn:
        if turn.missing:
            decoded = CarriedIndex.decode(raw)
            turn.fill(decoded, decoded.nbytes)
    found: CarriedIndex = turn.value
    return found if found.raw == raw else CarriedIndex.decode(raw)  # another text of the same checksum


def root_key(raw: bytes) -> tuple[str, int, int]:
    return ("root", len(raw), zlib.crc32(raw))


def keep_root(raw: bytes | None, caches: StackCaches) -> None:
    """Keep the root document ``raw`` decoded in ``caches``, for a save on the stack it tops."""
    if raw:
        carried(raw, caches.derived("root-indexes", ROOT_INDEX_CACHE_BYTES))
