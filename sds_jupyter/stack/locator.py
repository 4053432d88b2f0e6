"""From a reference to a location: the one place a stack's parents are found.

A version names its parent with a Cirro reference. Where the datasets were
downloaded (or uploaded, or mounted), each one is a folder of the datasets
folder, named by its ID or by the folder map. :class:`DatasetLocator` finds
them there, on a local disk or in object storage alike, without listing: a
manifest exists when reading it succeeds (so every manifest is read exactly
once), and a store when one of its root documents does.
"""

from __future__ import annotations

import operator
import os
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from zarr.abc.store import RangeByteRequest

from sds_jupyter.errors import (
    BaseStoreError,
    MissingDatasetError,
    ReferenceError_,
    StackError,
    UnsafePathError,
)
from sds_jupyter.lru import ByteLRU
from sds_jupyter.stack import prefetch
from sds_jupyter.stack.manifest import (
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    Manifest,
    load_manifest,
    read_manifest_with_stat,
)
from sds_jupyter.stack.refs import CirroRef, FolderMap
from sds_jupyter.stack.storage.location import Location
from sds_jupyter.stack.storage.paths import DATA_DIR, dataset_places, open_linkless
from sds_jupyter.stack.storage.sources import ROOT_DOCS, Source, ZipSource
from sds_jupyter.stack.storage.zipindex import ZipIndexes

__all__ = [
    "RACY_FINE_SECONDS",
    "RACY_SECONDS",
    "DatasetLocator",
    "Identity",
    "ManifestReader",
    "NotPlain",
    "ParsedManifests",
    "identity",
    "is_version_folder",
    "locate_version",
    "settled",
]

#: Enough to tell an oversized manifest from a manifest, without reading all of it.
_MANIFEST_RANGE = RangeByteRequest(0, MAX_MANIFEST_BYTES + 1)


#: How long after its last change a file may still change again without its identity
#: (size, mtime, ctime) changing, when its timestamps are whole seconds (FAT and some
#: network mounts stamp to the second, FAT's mtime to two seconds).
RACY_SECONDS = 2.0
#: The same, when its timestamps carry sub-second parts: the kernel stamps a change with
#: its coarse clock (one tick, 1 to 10 ms), so a second change in the same tick keeps the
#: stamp. Five ticks of the slowest clock, with room for a mount's clock a little behind.
RACY_FINE_SECONDS = 0.05
#: The parsed-manifest cache holds at most this many bytes of manifests (as read).
CACHE_BYTES = 64 * 1024 * 1024

Identity = tuple[int, int, int, int, int]


def settled(*times_ns: int | float, now_ns: int | None = None) -> bool:
    """Whether a file stamped ``times_ns`` cannot change again and keep its identity: safe to cache.

    A later change is stamped later than the identity recorded, unless it falls in the
    same timestamp tick; so the newest stamp must be older than ``now_ns`` (taken before
    the file was read; else the present) by more than a tick of the file's clock. The
    ctime shows that clock's grain: whole seconds need :data:`RACY_SECONDS`, finer stamps
    :data:`RACY_FINE_SECONDS` (never more than the former, so setting it to 0 turns the
    rule off). A stamp in the future (a clock ahead) is never settled.
    """
    newest = max(times_ns)
    now = time.time_ns() if now_ns is None else now_ns
    if now - newest >= RACY_SECONDS * 1e9:
        return True  # older than the longer window: settled whatever the clock's grain (the usual case)
    coarse = all(int(t) % 1_000_000_000 == 0 for t in times_ns)
    window = RACY_SECONDS if coarse else min(RACY_FINE_SECONDS, RACY_SECONDS)
    return now - newest >= window * 1e9


#: What changes when a file is replaced or rewritten: device, inode, size, mtime, ctime.
#: The ctime cannot be set back by a program, so a rewrite that restores the size and the
#: mtime (``os.utime``) still shows. One C-level call (``attrgetter``), not a Python
#: function: a warm tree proves 6,700 paths with it per request.
identity: Callable[[os.stat_result], Identity] = operator.attrgetter(
    "st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"
)


class ParsedManifests:
    """Manifests parsed, by real path and file identity (an LRU under a byte budget).

    Opening the same stack again costs an ``lstat`` per manifest instead of a read and a
    parse. An entry is used only when the file at the same real path is still a regular file
    (not a link) with the same identity; a file changed too recently to be sure of
    (:data:`RACY_SECONDS`) is never stored.

    Why no instance lives here: whoever opens stacks owns one and hands it to each
    :class:`ManifestReader` (see :class:`~sds_jupyter.stack.caches.StackCaches`), so the
    listing and ``Stack.resolve`` of one owner parse a manifest once between them, and
    two owners share nothing.
    """

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self._entries: ByteLRU[tuple[Identity, Manifest]] = ByteLRU(budget)

    @property
    def budget(self) -> int:
        """The bytes of manifest text kept at most."""
        return self._entries.max_bytes or 0

    @property
    def nbytes(self) -> int:
        """The bytes of manifest text kept now."""
        return self._entries.nbytes

    _bytes = nbytes  # the name it had when this class kept its own count

    def lookup(self, real_path: str) -> tuple[Manifest, Identity] | None:
        """The cached manifest of the file at ``real_path`` and its identity if it is unchanged, else None."""
        entry = self._entries.peek(real_path)
        if entry is None:
            return None
        try:
            info = os.lstat(real_path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or identity(info) != entry[0]:
            return None
        self._entries.get(real_path)  # proven unchanged: now the most recently used
        return entry[1], entry[0]

    def parsed_as(self, real_path: str, file_identity: Identity) -> Manifest | None:
        """The cached manifest of ``real_path`` if it was parsed from a file of ``file_identity``.

        For a caller that opened the file itself (and so knows its identity and how it got there).
        """
        entry = self._entries.peek(real_path)
        if entry is None or entry[0] != file_identity:
            return None
        self._entries.get(real_path)
        return entry[1]

    def read(self, real_path: str, info: os.stat_result) -> Manifest:
        """The manifest in the local file at ``real_path``, whose ``lstat`` the caller just took as ``info``.

        The listing's way in (it has the ``lstat`` already, so no second one is asked
        for): parsed when the cached entry's identity differs, kept under the same rule.
        """
        entry = self._entries.peek(real_path)
        if entry is not None and entry[0] == identity(info):
            self._entries.get(real_path)
            return entry[1]
        began = time.time_ns()
        manifest, read_info = read_manifest_with_stat(Path(real_path))
        self.store(real_path, read_info, manifest, began)
        return manifest

    def store(self, real_path: str, info: os.stat_result, manifest: Manifest, read_at_ns: int) -> None:
        """Keep ``manifest``, parsed from the file ``info`` describes (``fstat`` of what was read).

        ``read_at_ns`` is the time just before the read began: see :func:`settled`.
        """
        if settled(info.st_mtime_ns, info.st_ctime_ns, now_ns=read_at_ns):
            self.keep(real_path, identity(info), manifest)

    def keep(self, real_path: str, file_identity: Identity, manifest: Manifest) -> None:
        """Keep ``manifest`` as parsed from the file of ``file_identity``, already proven settled and unchanged.

        For a stack's record from disk, whose proofs held just now: the listing then finds
        these manifests as if this process had parsed them.
        """
        # weighed by the bytes of its text (its parsed form grows with it); one over the budget is not kept
        self._entries.put(real_path, (file_identity, manifest), manifest.source_bytes)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class NotPlain(Exception):  # noqa: N818 - a signal between two walks, never shown to anyone
    """The quick local walk met what only the careful walk handles (or words): walk that way."""


class ManifestReader:
    """Reads each ``layer.json`` once: reading one is also how its existence is learned.

    On a local disk a manifest parsed before through ``manifests``, and unchanged since,
    is not read again (see :class:`ParsedManifests`). Without ``manifests`` the reader
    keeps a cache of its own, shared with nobody: a caller that wants reads remembered
    across stacks passes the cache it owns.
    """

    def __init__(self, manifests: ParsedManifests | None = None) -> None:
        self.manifests = manifests if manifests is not None else ParsedManifests()
        self._read: dict[str, bytes] = {}
        self._stat: dict[str, os.stat_result] = {}
        self._parsed: dict[str, Manifest] = {}
        self._identity: dict[str, Identity] = {}
        self._read_at: dict[str, int] = {}
        #: Local paths looked at for a manifest and found holding none, in the order asked:
        #: a resolved stack stays right only while they stay empty.
        self.missing: list[str] = []
        self._lock = threading.Lock()

    def exists(self, location: Location) -> bool:
        """Whether there is a manifest at ``location`` (read, or found unchanged in the cache)."""
        key = str(location)
        if key in self._parsed:
            return True
        local = location.as_local()
        if local is not None:
            cached = self.manifests.lookup(local.real_path())
            if cached is not None:
                with self._lock:
                    self._parsed[key], self._identity[key] = cached
                return True
        return self.fetch(location) is not None

    def identity_of(self, location: Location) -> Identity | None:
        """The identity of the local file the manifest at ``location`` was read from (or cached as)."""
        return self._identity.get(str(location))

    def fetch(self, location: Location) -> bytes | None:
        """The bytes of the manifest at ``location``, or None if there is none."""
        key = str(location)
        with self._lock:
            cached = self._read.get(key)
        if cached is not None:
            return cached
        began = time.time_ns()
        local = location.as_local()
        if local is not None:
            found = local.read_with_stat(MAX_MANIFEST_BYTES + 1)
            data, info = (None, None) if found is None else found
        else:
            data, info = location.read_object("", _MANIFEST_RANGE), None
        with self._lock:
            if data is None:
                if local is not None:
                    self.missing.append(key)
                return None
            self._read[key] = data
            if info is not None:
                self._stat[key] = info
                self._identity[key] = identity(info)
                self._read_at[key] = began
        return data

    def read_plain(self, path: str) -> Manifest | None:
        """The manifest in the local file at ``path`` (a real path), read when no link lies on the way.

        The quick way in for a local walk: one ``openat2`` proves the path holds no link, so
        no segment is looked at alone. None when nothing is there (recorded as missing, as
        :meth:`fetch` records it). :class:`NotPlain` for anything else (a link, no regular
        file, a file too large, changing or not a manifest): the caller then walks the
        careful way, which also words the refusal.
        """
        began = time.time_ns()
        try:
            fd = open_linkless(path)
        except FileNotFoundError:
            with self._lock:
                self.missing.append(path)
            return None
        if fd is None:
            raise NotPlain(path)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_MANIFEST_BYTES:
                raise NotPlain(path)
            # Asked only now: the open proved no link on the way, which a cached path alone does not
            file_identity = identity(info)
            known = self.manifests.parsed_as(path, file_identity)
            if known is not None:
                with self._lock:
                    self._parsed[path], self._identity[path] = known, file_identity
                return known
            raw = os.pread(fd, info.st_size + 1, 0)
        finally:
            os.close(fd)
        if len(raw) != info.st_size:
            raise NotPlain(path)  # it changed while read (or a short read): the careful way reads it again
        try:
            manifest = load_manifest(raw, path)
        except StackError:
            raise NotPlain(path) from None
        with self._lock:
            self._read[path], self._stat[path], self._identity[path] = raw, info, file_identity
            self._read_at[path] = began
        if settled(info.st_mtime_ns, info.st_ctime_ns, now_ns=began):  # as ParsedManifests.store keeps it
            self.manifests.keep(path, file_identity, manifest)
        return manifest

    def read_at(self, location: Location) -> int | None:
        """When the read of the local manifest at ``location`` began (ns), if this reader read it."""
        return self._read_at.get(str(location))

    def manifest(self, location: Location) -> Manifest:
        """The parsed manifest at ``location``; refuses a missing one."""
        key = str(location)
        parsed = self._parsed.get(key)
        if parsed is not None:
            return parsed
        raw = self.fetch(location)
        if raw is None:
            raise StackError(f"{location} does not exist; give a version folder or a store")
        manifest = load_manifest(raw, str(location))
        info = self._stat.get(key)
        local = location.as_local()
        if info is not None and local is not None:
            self.manifests.store(local.real_path(), info, manifest, self._read_at[key])
        return manifest


def locate_version(path: Location, reader: ManifestReader | None = None) -> tuple[Location, Location] | None:
    """``(dataset folder, folder holding layer.json)`` of the version at ``path``; None for a store.

    ``path`` is a version's folder (``layer.json`` at its top or under ``data/``, in
    the order of :func:`~sds_jupyter.stack.storage.paths.dataset_places`), its ``data/``
    folder, or its ``layer.json``. This is the one statement of that rule.
    """
    reader = reader or ManifestReader()
    if path.name == MANIFEST_NAME:
        if not reader.exists(path):
            return None
        data_dir = path.parent
        if data_dir.name != DATA_DIR:
            return data_dir, data_dir
        # data/ is confined to the dataset folder, as the parents' are.
        return data_dir.parent, data_dir.parent.join(DATA_DIR, "data folder")
    for inner in dataset_places():
        data_dir = path.join(inner, "data folder") if inner else path
        if reader.exists(data_dir.join(MANIFEST_NAME, "manifest")):
            if not inner and path.name == DATA_DIR:  # a dataset's data/ opened directly: the dataset is its parent
                return path.parent, path.parent.join(DATA_DIR, "data folder")
            return path, data_dir
    return None


def is_version_folder(path: Location, reader: ManifestReader | None = None) -> bool:
    """Whether ``path`` is a version (its folder, ``data/`` or ``layer.json``): the one answer.

    :func:`~sds_jupyter.stack.listing.find_manifest` is its fast form for listing a local
    folder of thousands; tests/service/test_tree.py and tests/server/test_server.py keep the two equal.
    A path a reference could not lead to (unsafe, a link out) is no version.
    """
    try:
        return locate_version(path, reader) is not None
    except StackError:
        return False


class DatasetLocator:
    """Finds datasets, by ID, in one datasets folder (then in the ``fallbacks``), and never outside them.

    The fallbacks are the folders a workspace keeps datasets in besides the version's
    own (:func:`~sds_jupyter.stack.workspace.parent_roots`): each is searched the same way.
    A zip probed as a base takes its index from ``indexes`` (the caller's cache of zip
    indexes), when given.
    """

    def __init__(
        self,
        datasets_dir: Location,
        folders: FolderMap,
        reader: ManifestReader | None = None,
        fallbacks: tuple[Location, ...] = (),
        *,
        indexes: ZipIndexes | None = None,
    ) -> None:
        self.datasets_dir = datasets_dir.real()
        self.fallbacks = fallbacks
        self.folders = folders
        self.reader = reader or ManifestReader()
        self.indexes = indexes
        self._stores: dict[Location, tuple[str, int]] = {}
        self._zips: dict[Location, ZipSource] = {}
        self._resolved_folders: dict[str, Location] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._base_hint: tuple[str, Future[Location | None]] | None = None
        self._followed = 0
        self._prefetched: prefetch.ManifestPrefetch | None = None

    # -- what the walk asks ------------------------------------------------------------------

    def candidate_folders(self, dataset_id: str) -> list[Location]:
        """Where ``dataset_id`` may be: its folder-map name, then its ID; in the datasets folder, then the fallbacks."""
        return [
            folder for root in (self.datasets_dir, *self.fallbacks) for folder in self._folders_in(root, dataset_id)
        ]

    def _folders_in(self, root: Location, dataset_id: str) -> list[Location]:
        names = [self.folders[dataset_id]] if dataset_id in self.folders else []
        names.append(dataset_id)
        folders = []
        for name in dict.fromkeys(names):
            folder = root.join(name, f"folder of dataset {dataset_id}")
            if str(folder) == str(root):  # both real: the string says it, no pathlib compare
                raise UnsafePathError(
                    f"the folder of dataset {dataset_id} is the datasets folder itself; map it to a folder inside it"
                )
            folders.append(folder)
        return folders

    def dataset_folder(self, dataset_id: str) -> Location:
        """The folder a reference to ``dataset_id`` was found in."""
        folder = self._resolved_folders.get(dataset_id)
        return folder if folder is not None else self._folders_in(self.datasets_dir, dataset_id)[-1]

    def resolve(self, ref: CirroRef) -> Location:
        """The location a reference names: under the dataset folder or its ``data/``."""
        if ref.names_manifest:
            prefetched = self._from_prefetch(ref)
            if prefetched is not None:
                return prefetched
        else:
            hinted = self._hinted(ref)
            if hinted is not None:
                return hinted
        found = self._find(ref)
        if found is not None:
            return found
        candidates = self.candidate_folders(ref.dataset_id)
        if not ref.names_manifest:
            self._explain_missing_store(ref, candidates)
        if not any(folder.has_folder() for folder in candidates):
            names = ", ".join(repr(name) for name in dict.fromkeys(folder.name for folder in candidates))
            places = " or ".join(str(root) for root in (self.datasets_dir, *self.fallbacks))
            raise MissingDatasetError(
                f"dataset {ref.dataset_id} is not in {places} (looked for {names}); "
                "download, upload or attach it, or give its folder in the folder map",
                ref.dataset_id,
            )
        raise ReferenceError_(
            f"dataset {ref.dataset_id} has no {ref.path!r} (reference {ref}); the download may be incomplete"
        )

    def _from_prefetch(self, ref: CirroRef) -> Location | None:
        """Where the manifest ``ref`` names is, by the prefetched answers (object storage, deep stacks).

        The same places in the same order as :meth:`_find`; None when the answers
        do not settle it (then :meth:`_find` asks, as without a prefetch).
        """
        if not self.datasets_dir.costly_requests:
            return None
        self._followed += 1
        if self._prefetched is None:
            if self._followed < prefetch.AFTER:
                return None
            with self.reader._lock:
                known = set(self.reader._read)
            self._prefetched = prefetch.ManifestPrefetch(self.datasets_dir, known)
        for folder in self.candidate_folders(ref.dataset_id):
            for relative in dataset_places(ref.path):
                target = folder.join(relative, f"reference {ref}")
                answer = self._prefetched.answer(target)
                if answer is prefetch.ManifestPrefetch.UNKNOWN:
                    return None
                if isinstance(answer, bytes):
                    with self.reader._lock:
                        self.reader._read.setdefault(str(target), answer)
                    self._resolved_folders[ref.dataset_id] = folder
                    return target
        return None

    def _explain_missing_store(self, ref: CirroRef, candidates: list[Location]) -> None:
        """Say why a store reference that names something is not a store (error path only)."""
        for folder in candidates:
            for relative in dataset_places(ref.path):
                target = folder.join(relative, f"reference {ref}")
                if target.has_object():
                    ZipSource(target, indexes=self.indexes)  # raises, saying why this is no readable zip
                if target.has_object() or target.has_folder():
                    raise BaseStoreError(
                        f"the base store {ref} is not a Zarr store (no zarr.json or .zgroup at its root)"
                    )

    def _find(self, ref: CirroRef) -> Location | None:
        for folder in self.candidate_folders(ref.dataset_id):
            for relative in dataset_places(ref.path):
                target = folder.join(relative, f"reference {ref}")
                if ref.names_manifest:
                    found = self.reader.exists(target)
                else:
                    found = self._probe(target)
                if found:
                    self._resolved_folders[ref.dataset_id] = folder
                    return target
                if not ref.names_manifest and target.as_local() is not None:
                    with self.reader._lock:
                        self.reader.missing.append(str(target))  # a place tried first must stay empty
        return None

    def read_manifest(self, location: Location) -> Manifest:
        return self.reader.manifest(location)

    def probe_store(self, target: Location, where: str) -> tuple[str, int]:
        """``(kind, zarr format)`` of the store at ``target``: ``"folder"`` or ``"zip"``."""
        if not self._probe(target):
            raise BaseStoreError(f"{where} is not a Zarr store (no zarr.json or .zgroup at its root)")
        return self._stores[target]

    def opened_source(self, target: Location) -> Source | None:
        """The zip the probe opened (its central directory read): every store may share it."""
        return self._zips.get(target)

    # -- the base, probed while the chain is walked (object storage only) --------------------

    def hint_base(self, base: str | None) -> None:
        """Start finding the base the top manifest names while the chain is walked."""
        if base is None or self._base_hint is not None or not self.datasets_dir.costly_requests:
            return
        try:
            ref = CirroRef.parse(base)
        except StackError:
            return
        if ref.names_manifest:
            return
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sds-base-probe")
        self._base_hint = (str(ref), self._pool.submit(self._quiet_find, ref))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _quiet_find(self, ref: CirroRef) -> Location | None:
        # A hint that leads nowhere costs its probes only: the walk words any error.
        try:
            return self._find(ref)
        except StackError:
            return None

    def _hinted(self, ref: CirroRef) -> Location | None:
        if self._base_hint is None or self._base_hint[0] != str(ref):
            return None
        _, future = self._base_hint
        self._base_hint = None
        return future.result()

    # -- probing a store ----------------------------------------------------------------------

    def _probe(self, target: Location) -> bool:
        if target in self._stores:
            return True
        order = ("zip", "folder") if target.name.endswith(".zip") else ("folder", "zip")
        for kind in order:
            found = self._probe_folder(target) if kind == "folder" else self._probe_zip(target)
            if found is not None:
                self._stores[target] = (kind, found)
                return True
        return False

    def _probe_folder(self, target: Location) -> int | None:
        # Existence is all a probe needs: one byte (or one stat) of each root document.
        for doc, zarr_format in ROOT_DOCS:
            if target.has_object(doc):
                return zarr_format
        return None

    def _probe_zip(self, target: Location) -> int | None:
        if not target.has_object():
            return None  # one request, where opening a missing object may cost more
        try:
            source = ZipSource(target, indexes=self.indexes)
        except BaseStoreError:
            return None
        for doc, zarr_format in ROOT_DOCS:
            if source.exists(doc):
                self._zips[target] = source
                return zarr_format
        return None
