"""What the stack library remembers between calls, in one object the caller owns: :class:`StackCaches`.

Why an object and not module globals: a cache answers "have I read this before?", and
the answer belongs to whoever did the reading. A service's session (or a notebook, a
test, a benchmark) makes one :class:`StackCaches` and passes it to every call that
reads manifests, zips or folder listings (``Stack.resolve(..., caches=...)``, the
listing functions of :mod:`sds_jupyter.stack.listing`, ``open_anndata``...); two owners
then never serve each other's reads, and each empties exactly its own with
:meth:`StackCaches.clear`. This follows Icechunk's ``Session`` (the state of a read
lives in the handle you read through) and zarr's store kept apart from its
implementation: the code below takes what it remembers as an argument and reads no
module global. A caller that passes nothing gets :func:`default_caches`, the one
object of the process, so a plain ``Stack.resolve(path)`` behaves as it always did.

Every entry is still proven before use, by the identity of what it was read from
(device, inode, size, mtime, ctime; see :func:`~sds_jupyter.stack.locator.identity`),
never by time or by trust: the owner only decides who shares the savings, not whether
a stale answer could be given.

The pieces, each bounded (each bound has one home, named below):

* ``manifests``: parsed ``layer.json`` by real path
  (:class:`~sds_jupyter.stack.locator.ParsedManifests`, at most
  :data:`~sds_jupyter.stack.locator.CACHE_BYTES` of manifests);
* ``zip_indexes``: central directories of local ``.zarr.zip`` bases
  (:class:`~sds_jupyter.stack.storage.zipindex.ZipIndexes`, at most
  :data:`~sds_jupyter.stack.storage.zipindex.CACHED_INDEXES`);
* ``scans``: the last scan of each datasets folder (:class:`TreeScans`, at most
  :data:`MAX_SCANS` scans and :data:`~sds_jupyter.limits.SCANS_CACHE_BYTES` of their
  manifests), and the folders seen keeping their manifest under ``data/``;
* ``stacks``: resolved local stacks with what proves them unchanged
  (:class:`ResolvedStacks`, at most :data:`MAX_RESOLVED_STACKS`);
* ``disk``: records of resolved stacks on disk, shared by this user's processes
  (:class:`~sds_jupyter.stack.storage.ondisk.DiskStacks`, at most
  :data:`~sds_jupyter.stack.storage.ondisk.MAX_RECORDS` records and
  :data:`~sds_jupyter.stack.storage.ondisk.RECORDS_BYTES`): only the process's own caches
  have one unless a caller gives one;
* ``opened``: what ``open_anndata`` read, kept for a later save (:class:`OpenedRecords`);
* what callers compute from stored objects and name by those objects' identity (a tissue's
  cell geometry, an image's overview: :meth:`StackCaches.derived`), one
  :class:`~sds_jupyter.lru.ByteLRU` per kind, each bounded by the bytes its caller
  names. Versions never change what they store, so such an entry is never stale; keeping it
  here means whoever owns the reads owns what was made from them too.

The module sits just above the locator in the stack's import layers: it composes the
cache types defined below it, and holds the ones whose users (the listing, the resolve)
sit above it, typed loosely so that it need not import them.
"""

from __future__ import annotations

import operator
import os
import threading
import weakref
from typing import Any, Generic, Protocol, TypeVar

from sds_jupyter.limits import SCANS_CACHE_BYTES
from sds_jupyter.lru import ByteLRU
from sds_jupyter.stack.locator import CACHE_BYTES, ParsedManifests
from sds_jupyter.stack.storage.ondisk import DiskStacks
from sds_jupyter.stack.storage.zipindex import CACHED_INDEXES, ZipIndexes

__all__ = [
    "MAX_RESOLVED_STACKS",
    "MAX_SCANS",
    "MAX_UNDER_DATA_HINTS",
    "OpenedRecords",
    "ResolvedStacks",
    "StackCaches",
    "TreeScans",
    "default_caches",
]

#: Scans kept at most (one per datasets folder and folder map listed), whatever their size.
MAX_SCANS = 64
#: Folders remembered as keeping their manifest under ``data/`` (a hint: every answer is checked).
MAX_UNDER_DATA_HINTS = 50_000
#: Resolved local stacks kept at most (one per version opened; each proven before reuse).
MAX_RESOLVED_STACKS = 32

T = TypeVar("T")


class TreeScans(Generic[T]):
    """The last scan of each datasets folder (and folder map), reused while nothing changed.

    Kept in a :class:`~sds_jupyter.lru.ByteLRU` while the kept scans' manifests stay
    within ``max_bytes`` and there are at most ``max_scans`` of them; the least recently used
    is dropped first. A scan is stored whole or not at all (one larger than ``max_bytes`` is
    not kept). The scan type is the
    listing's (:class:`~sds_jupyter.stack.listing.Scan`); this module sits below it.

    ``under_data`` is the listing's hint of folders last seen keeping ``layer.json``
    under ``data/`` (so their top is asked about without an exception); a hint only,
    every answer is checked, at most ``max_hints`` folders.
    """

    def __init__(
        self, max_scans: int = MAX_SCANS, max_bytes: int = SCANS_CACHE_BYTES, max_hints: int = MAX_UNDER_DATA_HINTS
    ) -> None:
        self.max_scans = max_scans
        self.max_bytes = max_bytes
        self.max_hints = max_hints
        self.under_data: set[str] = set()
        # each entry is (scan, size): the size is the scan's manifests, given by the listing
        self._scans: ByteLRU[tuple[T, int]] = ByteLRU(max_bytes, _SECOND, max_entries=max_scans)

    def get(self, key: Any) -> T | None:
        """The scan kept under ``key`` (a datasets folder's real path and folder map), or None."""
        entry = self._scans.get(key)
        return None if entry is None else entry[0]

    def remember(self, key: Any, scan: T, size: int) -> None:
        """Keep ``scan``, whose manifests are ``size`` bytes, for the next listing of ``key``."""
        self._scans.put(key, (scan, size))

    def note_under_data(self, folder: str) -> None:
        """Remember that ``folder`` kept its manifest under ``data/`` (while there is room)."""
        if len(self.under_data) < self.max_hints:
            self.under_data.add(folder)

    @property
    def bytes(self) -> int:
        """The kept scans' manifests together (bytes as stored)."""
        return self._scans.nbytes

    def kept(self) -> list[Any]:
        """The kept scans' keys, least recently used first (a snapshot)."""
        return self._scans.keys()

    def clear(self) -> None:
        self._scans.clear()
        self.under_data.clear()

    def __len__(self) -> int:
        return len(self._scans)


class _Proof(Protocol):
    def hold(self) -> bool:
        """Whether the disk still matches what was read."""
        ...


class ResolvedStacks(Generic[T]):
    """Local stacks resolved, with what proves each still resolves the same.

    Opening the same stack again costs one ``realpath`` of the path opened and one
    ``lstat`` per manifest, per folder on the way and per place found empty, instead of
    a walk. A stack is reused only if the path opened still resolves to the same real
    path and its proofs hold (:class:`~sds_jupyter.stack.stack.Proofs`, which the resolve
    computes: this module sits below it). Freshness is proven per file the stack read, so
    a version saved beside it (which changes the datasets folder's mtime) leaves it
    cached, while any change to one of its own manifests is seen.

    ``hits`` and ``stored`` count lookups served and stacks stored.
    """

    def __init__(self, limit: int = MAX_RESOLVED_STACKS) -> None:
        self._entries: ByteLRU[tuple[T, str, _Proof]] = ByteLRU(None, max_entries=limit)
        self._lock = threading.Lock()  # guards the counts
        self.hits = 0
        self.stored = 0

    @property
    def limit(self) -> int:
        """How many stacks are kept at most."""
        return self._entries.max_entries or 0

    def lookup(self, key: tuple[Any, ...]) -> T | None:
        """The stack kept under ``key`` (its first item the path opened), if its proofs still hold."""
        entry = self._entries.peek(key)
        if entry is None:
            return None
        stack, real_top, proofs = entry
        if os.path.realpath(key[0]) != real_top or not proofs.hold():
            return None
        self._entries.get(key)  # proven to resolve the same: now the most recently used
        with self._lock:
            self.hits += 1
        return stack

    def store(self, key: tuple[Any, ...], stack: T, proofs: _Proof) -> None:
        """Keep ``stack``, resolved from the path ``key[0]``, while ``proofs`` hold."""
        self._entries.put(key, (stack, os.path.realpath(key[0]), proofs))
        with self._lock:
            self.stored += 1

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class OpenedRecords(Generic[T]):
    """What was read into an in-memory object (an AnnData), kept with the object for as long as it lives.

    ``open_anndata`` records fingerprints of what it read
    (:class:`~sds_jupyter.stack.opened.Opened`); a later save of that same object
    compares against them instead of reading the version again.

    Why keyed by ``id()`` with a weak reference, and kept here: the record belongs to
    one object, so the key must be that object's identity, and the record must go when
    the object does. A ``WeakKeyDictionary`` would say both, but AnnData defines ``__eq__``
    without ``__hash__`` (it cannot be a dict key). Setting the record as an attribute of
    the AnnData would make it travel where it does not belong (into pickles sent to dask
    workers, into shallow copies, across an anndata change of its attributes). So the
    weak reference's callback drops the entry when the object is collected, and a lookup
    also checks that the reference still points at the very object asked about, so an
    ``id()`` reused by a later object never finds an older record. Living in
    :class:`StackCaches` (not a module dict) makes the record the opener's: a save given
    the same caches finds it; one given other caches compares the slow way, with the
    same result.
    """

    def __init__(self) -> None:
        self._records: dict[int, tuple[weakref.ref[Any], T]] = {}

    def remember(self, obj: Any, record: T) -> None:
        """Keep ``record`` for ``obj`` until ``obj`` is collected (or :meth:`clear`)."""
        key, records = id(obj), self._records

        def forget(ref: weakref.ref[Any]) -> None:
            entry = records.get(key)
            if entry is not None and entry[0] is ref:  # not a newer record of a later object
                records.pop(key, None)

        records[key] = (weakref.ref(obj, forget), record)

    def get(self, obj: Any) -> T | None:
        """The record kept for ``obj`` (this very object), or None."""
        entry = self._records.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        return entry[1]

    def clear(self) -> None:
        self._records.clear()

    def __len__(self) -> int:
        return len(self._records)


class StackCaches:
    """Everything the stack library remembers between calls, owned by whoever makes it.

    Pass one to ``Stack.resolve``, ``open_stack``, ``open_anndata``, ``save_version`` and
    the listing functions (each takes ``caches=``); pass the same one to share what was
    read, another to share nothing. The bounds default to the library's (see the module
    docstring); a test may make a small one.
    """

    def __init__(
        self,
        *,
        manifest_bytes: int = CACHE_BYTES,
        zip_indexes: int = CACHED_INDEXES,
        scans: int = MAX_SCANS,
        scan_bytes: int = SCANS_CACHE_BYTES,
        stacks: int = MAX_RESOLVED_STACKS,
        disk: DiskStacks | None = None,
    ) -> None:
        self.manifests = ParsedManifests(manifest_bytes)
        #: Records of resolved stacks shared with this user's other processes; None: none
        #: (the process's own caches use the user's folder, see :mod:`~sds_jupyter.stack.storage.ondisk`).
        self.disk = disk
        self.zip_indexes = ZipIndexes(zip_indexes)
        self.scans: TreeScans[Any] = TreeScans(scans, scan_bytes)
        self.stacks: ResolvedStacks[Any] = ResolvedStacks(stacks)
        self.opened: OpenedRecords[Any] = OpenedRecords()
        self._derived: dict[str, ByteLRU[Any]] = {}
        self._derived_lock = threading.Lock()

    def derived(self, kind: str, max_bytes: int) -> ByteLRU[Any]:
        """The cache of values of ``kind`` computed from stored objects (each has ``nbytes``).

        Made on first use with ``max_bytes`` (the caller's bound, defined where the kind is
        computed); keys are the identities of the objects read, so a value is never stale.
        """
        with self._derived_lock:
            cache = self._derived.get(kind)
            if cache is None:
                cache = self._derived[kind] = ByteLRU(max_bytes, _NBYTES)
            return cache

    def clear(self) -> None:
        """Forget everything in memory: the next open, listing or save reads afresh (benchmarks time a
        cold open so). Records on disk are other processes' too: ``disk.clear()`` removes them."""
        self.manifests.clear()
        self.zip_indexes.clear()
        self.scans.clear()
        self.stacks.clear()
        self.opened.clear()
        with self._derived_lock:
            for cache in self._derived.values():
                cache.clear()

    def __repr__(self) -> str:
        return (
            f"StackCaches(manifests={len(self.manifests)}, zip_indexes={len(self.zip_indexes)}, "
            f"scans={len(self.scans)}, stacks={len(self.stacks)}, opened={len(self.opened)})"
        )


#: A derived value's size: every kind kept by :meth:`StackCaches.derived` says its ``nbytes``.
_NBYTES: Any = operator.attrgetter("nbytes")
#: A kept scan's size: the second of its (scan, size) entry.
_SECOND: Any = operator.itemgetter(1)

_PROCESS_CACHES = StackCaches(disk=DiskStacks())


def default_caches(caches: StackCaches | None = None) -> StackCaches:
    """``caches`` when given, else the process's own: what a caller that passes none shares.

    The public entry points call this once and pass the result down; nothing below them
    asks for the default.
    """
    return _PROCESS_CACHES if caches is None else caches
