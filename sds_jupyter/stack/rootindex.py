"""A root document decoded for carrying its consolidated index forward, kept by its bytes.

A save writes a new root whose index is the one below plus what it changed (see
:mod:`~sds_jupyter.stack.write.consolidate`). Decoding a deep stack's index (540 nodes,
0.25 MB) and encoding it again cost a one-column save more than writing the column, so it
is kept decoded, each entry as its encoded text, in the caller's
:class:`~sds_jupyter.stack.caches.StackCaches`, under the document's own bytes: the same bytes
decode the same, so an entry is never stale, whoever wrote the file. Kept when a table is
opened (the save that follows finds it) and when a commit writes a root (the next save does).
This module sits below the open and the write wing, which both keep entries.

A root this package wrote (compact, as the encoder writes) is decoded without encoding its
entries again: its text is checked as the full decode checks it (valid JSON, the nesting limit),
then read member by member with json's own scanner, each entry's text being its slice of the
document once the text is known to spell every value as the encoder would (see
:func:`~sds_jupyter.jsontext.compact_facts`; keys repeated in one object are looked for while
scanning). Any other text takes the full decode, so both give the same entries, byte for byte
(a property test compares them on generated documents).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sds_jupyter.jsontext import MAX_JSON_DEPTH, compact_facts, loads_bounded
from sds_jupyter.stack.caches import StackCaches

__all__ = [
    "COMPACT",
    "DISK_MIN_BYTES",
    "ROOT_INDEX_CACHE_BYTES",
    "CarriedIndex",
    "carried",
    "disk_key",
    "keep_root",
    "root_key",
]

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
        """``raw`` decoded: sliced when it is compact text as the encoder writes it, else in full.

        Both give the same ``head`` and ``entries`` (texts equal byte for byte) and refuse the
        same documents, with the same error: whatever the slicing cannot prove, it leaves to the
        full decode."""
        sliced = _sliced(raw)
        return sliced if sliced is not None else cls.decode_full(raw)

    @classmethod
    def decode_full(cls, raw: bytes) -> CarriedIndex:
        """``raw`` decoded whole, each index entry encoded again: what :meth:`decode` must equal."""
        doc = loads_bounded(raw, strict=False)
        head = doc if isinstance(doc, dict) else {}
        below = head.pop("consolidated_metadata", None)
        index = below.get("metadata") if isinstance(below, dict) else None
        entries = None
        if isinstance(index, dict):
            entries = {path: json.dumps(entry, separators=COMPACT) for path, entry in index.items()}
        return cls(raw, head, entries)


#: What the writer puts between the root's fields and its index's entries (see consolidate.py).
_INDEX_OPEN = '"consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{'
#: json's own scanners (C), untyped in typeshed: a string from just past its opening quote, and a
#: value at a position, each giving where it ends. Root fields are decoded as the full decode
#: decodes them (lenient: Zarr v2 fill values may be NaN).
_Scan = Callable[[str, int], tuple[Any, int]]
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_scan_field: _Scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _sliced(raw: bytes, bounds: list[int] | None = None) -> CarriedIndex | None:
    """``raw`` decoded with each index entry as its slice of the text; None when that cannot be proven equal.

    Takes only ``{fields,"consolidated_metadata":{"kind":"inline","must_understand":false,
    "metadata":{entries}}}`` with no space, in ASCII, whose tokens are all spelled as the encoder
    spells them (:func:`~sds_jupyter.jsontext.compact_facts`), nesting within the limit, and no
    key twice in one object (the objects' keys, as decoded, add up to the keys in the text).
    Every value is scanned by json's own scanner, as the full decode's, so what this accepts
    the full decode accepts.
    """
    if not raw.startswith(b"{") or not raw.isascii():
        return None
    text = raw.decode("ascii")
    if _INDEX_OPEN not in text:
        return None
    try:
        facts = compact_facts(text, MAX_JSON_DEPTH)
        if facts.depth > MAX_JSON_DEPTH or not facts.written:
            return None
        return _scan_root(raw, text, facts.keys, bounds)
    except (ValueError, StopIteration, IndexError, RecursionError):
        return None  # not JSON after all: the full decode says why


class _KeyCounter:
    """json's scanner (lenient, as the full decode's) counting the keys of the objects it decodes.

    The objects are handed to a list as they are made and counted after each value (their
    keys as decoded: a key repeated in one object counts once); the value scanned is not kept.
    """

    def __init__(self) -> None:
        self.objects: list[dict[str, Any]] = []
        self.keys = 0
        self._scan: _Scan = json.JSONDecoder(object_hook=self.objects.append).scan_once  # type: ignore[attr-defined]

    def skip(self, text: str, pos: int) -> int:
        """Scan the value at ``pos``, count its objects' keys; where it ends."""
        _, end = self._scan(text, pos)
        if self.objects:
            self.keys += sum(map(len, self.objects))
            self.objects.clear()
        return end


def _scan_root(raw: bytes, text: str, keys: int, bounds: list[int] | None = None) -> CarriedIndex | None:
    head: dict[str, Any] = {}
    entries: dict[str, str] | None = None
    counter = _KeyCounter()
    pos = 1
    while text[pos] == '"':
        if text.startswith(_INDEX_OPEN, pos):
            if entries is not None:
                return None  # the index twice: the full decode keeps the last
            members = _scan_members(text, pos + len(_INDEX_OPEN), counter, bounds)
            if members is None or text[members[1]] != "}":
                return None
            entries, pos = members[0], members[1] + 1
            counter.keys += 4 + len(entries)  # consolidated_metadata, kind, must_understand, metadata
        else:
            key, pos = _scanstring(text, pos + 1, True)
            if text[pos] != ":" or key in head or key == "consolidated_metadata":
                return None
            head[key], end = _scan_field(text, pos + 1)
            pos = counter.skip(text, pos + 1)
            counter.keys += 1
            if pos != end:
                return None
        if text[pos] == ",":
            pos += 1
        elif text[pos] == "}" and pos + 1 == len(text) and entries is not None:
            # a key repeated in one object leaves fewer keys decoded than written
            return CarriedIndex(raw, head, entries) if counter.keys == keys else None
        else:
            return None
    return None


def _scan_members(
    text: str, pos: int, counter: _KeyCounter, bounds: list[int] | None = None
) -> tuple[dict[str, str], int] | None:
    """The index's entries from ``pos`` (just inside its ``{``) as slices, and the position after its ``}``;
    each slice's start and end appended to ``bounds`` when given."""
    entries: dict[str, str] = {}
    if text[pos] == "}":
        return entries, pos + 1
    while text[pos] == '"':
        path, start = _scanstring(text, pos + 1, True)
        if text[start] != ":" or path in entries:
            return None
        start += 1
        pos = counter.skip(text, start)
        entries[path] = text[start:pos]
        if bounds is not None:
            bounds += (start, pos)
        if text[pos] == "}":
            return entries, pos + 1
        if text[pos] != ",":
            return None
        pos += 1
    return None


def carried(raw: bytes, cache: Any, disk: Any = None) -> CarriedIndex:
    """``raw`` decoded, from ``cache`` when the same bytes were decoded (or written) before.

    ``disk`` (a :class:`~sds_jupyter.stack.storage.ondisk.DiskStacks`, this user's records) is
    asked when ``cache`` misses, and given what was decoded: see :func:`_from_disk`.
    """
    if cache is None:
        return _decoded(raw, disk)
    with cache.claim(root_key(raw)) as turn:
        if turn.missing:
            decoded = _decoded(raw, disk)
            turn.fill(decoded, decoded.nbytes)
    found: CarriedIndex = turn.value
    return found if found.raw == raw else CarriedIndex.decode(raw)  # another text of the same checksum


# -- a root decoded, kept on disk for this user's next process ---------------------------------

#: The form of a record of a decoded root: a record of another form is not read.
_RECORD_FORM = "sds-jupyter root index record 1"
#: Roots smaller than this are decoded again rather than looked up (a lookup costs a file's read).
DISK_MIN_BYTES = 64 * 1024


def disk_key(raw: bytes) -> str:
    """The name a decoded root is kept under on disk: its bytes' length and BLAKE2b digest."""
    return f"root index {len(raw)} {hashlib.blake2b(raw, digest_size=32).hexdigest()}"


def _decoded(raw: bytes, disk: Any) -> CarriedIndex:
    """``raw`` decoded: from this user's record of it on disk when there is one, else decoded (and kept there).

    Why: a new process's first save on a version (or ``open_anndata``, which decodes its root
    for the save) decoded a deep stack's root again, 4 to 5 ms of a 20 ms save, although an
    earlier process had. Only a root the sliced decode takes is kept (its entries are slices of
    its text, so a record is their bounds), and only a large one.
    """
    if disk is None or len(raw) < DISK_MIN_BYTES or disk.folder is None:
        return CarriedIndex.decode(raw)  # no record to look up or keep (records off): no digest to take
    key = disk_key(raw)
    kept = _from_disk(raw, disk.load(key))
    if kept is not None:
        return kept
    bounds: list[int] = []
    sliced = _sliced(raw, bounds)
    if sliced is None:
        return CarriedIndex.decode_full(raw)
    if sliced.entries is not None and all(_an_object(text) for text in sliced.entries.values()):
        disk.save(key, {"form": _RECORD_FORM, "head": sliced.head, "paths": list(sliced.entries), "bounds": bounds})
    return sliced


def _an_object(text: str) -> bool:
    """Whether an entry's text is an object's (every node's metadata is: a record holds no other)."""
    return text[:1] == "{" and text[-1:] == "}"


def _from_disk(raw: bytes, record: dict[str, Any] | None) -> CarriedIndex | None:
    """The root ``raw`` as its record gives it, or None (no record, or one that does not fit ``raw``).

    Trust: the record is this user's own (the records folder is private, see
    :mod:`~sds_jupyter.stack.storage.ondisk`, as a stack's record is), kept under the digest of
    the very bytes it was decoded from, so it is never stale; its shape is checked all the
    same: every entry a distinct path, its bounds inside the text, in order and not overlapping,
    each slice an object's text (``{`` to ``}``), the head an object without the index.
    """
    if record is None or record.get("form") != _RECORD_FORM:
        return None
    head, paths, bounds = record.get("head"), record.get("paths"), record.get("bounds")
    if not isinstance(head, dict) or "consolidated_metadata" in head:
        return None
    if not isinstance(paths, list) or not isinstance(bounds, list) or len(bounds) != 2 * len(paths):
        return None
    if not all(type(p) is str for p in paths) or not all(type(b) is int for b in bounds):
        return None
    if len(set(paths)) != len(paths) or not raw.isascii():
        return None
    text = raw.decode("ascii")
    entries: dict[str, str] = {}
    end = 0
    for path, start, stop in zip(paths, bounds[::2], bounds[1::2], strict=True):
        if start < end or stop <= start or stop > len(text) or not _an_object(text[start:stop]):
            return None
        entries[path] = text[start:stop]
        end = stop
    return CarriedIndex(raw, head, entries)


def root_key(raw: bytes) -> tuple[str, int, int]:
    return ("root", len(raw), zlib.crc32(raw))


def keep_root(raw: bytes | None, caches: StackCaches) -> None:
    """Keep the root document ``raw`` decoded in ``caches``, for a save on the stack it tops."""
    if raw:
        carried(raw, caches.derived("root-indexes", ROOT_INDEX_CACHE_BYTES), caches.disk)
