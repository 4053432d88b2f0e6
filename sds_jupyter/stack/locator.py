"""From a reference to a location: the one place a stack's parents are found.

A version names its parent with a Cirro reference. Where the datasets were
downloaded (or uploaded, or mounted), each one is a folder of the datasets
folder, named by its ID or by the folder map. :class:`DatasetLocator` finds
them there, on a local disk or in object storage alike, without listing: a
manifest exists when reading it succeeds (so every manifest is read exactly
once), and a store when one of its root documents does.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from zarr.abc.store import RangeByteRequest

from sds_jupyter.errors import (
    BaseStoreError,
    MissingDatasetError,
    ReferenceError_,
    StackError,
    UnsafePathError,
)
from sds_jupyter.stack import prefetch
from sds_jupyter.stack.location import Location
from sds_jupyter.stack.manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest, load_manifest
from sds_jupyter.stack.refs import CirroRef, FolderMap
from sds_jupyter.stack.sources import ROOT_DOCS, Source, ZipSource

__all__ = ["DatasetLocator", "ManifestReader", "locate_version"]

#: Enough to tell an oversized manifest from a manifest, without reading all of it.
_MANIFEST_RANGE = RangeByteRequest(0, MAX_MANIFEST_BYTES + 1)


class ManifestReader:
    """Reads each ``layer.json`` once: reading one is also how its existence is learned."""

    def __init__(self) -> None:
        self._read: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def fetch(self, location: Location) -> bytes | None:
        """The bytes of the manifest at ``location``, or None if there is none."""
        key = str(location)
        with self._lock:
            cached = self._read.get(key)
        if cached is not None:
            return cached
        data = location.read_object("", _MANIFEST_RANGE)
        if data is not None:
            with self._lock:
                self._read[key] = data
        return data

    def manifest(self, location: Location) -> Manifest:
        """The parsed manifest at ``location``; refuses a missing one."""
        raw = self.fetch(location)
        if raw is None:
            raise StackError(f"{location} does not exist; give a version folder or a store")
        return load_manifest(raw, str(location))


def locate_version(path: Location, reader: ManifestReader | None = None) -> tuple[Location, Location] | None:
    """``(dataset folder, folder holding layer.json)`` of the version at ``path``; None for a store.

    ``path`` is a version's folder (``layer.json`` at its top or under ``data/``),
    its ``data/`` folder, or its ``layer.json``. This is the one statement of that rule.
    """
    reader = reader or ManifestReader()
    if path.name == MANIFEST_NAME:
        if reader.fetch(path) is None:
            return None
        data_dir = path.parent
        if data_dir.name != "data":
            return data_dir, data_dir
        # data/ is confined to the dataset folder, as the parents' are.
        return data_dir.parent, data_dir.parent.join("data", "data folder")
    if reader.fetch(path.join(MANIFEST_NAME, "manifest")) is not None:
        if path.name == "data":  # a dataset's data/ folder opened directly: the dataset is its parent
            return path.parent, path.parent.join("data", "data folder")
        return path, path
    data_dir = path.join("data", "data folder")
    if reader.fetch(data_dir.join(MANIFEST_NAME, "manifest")) is not None:
        return path, data_dir
    return None


class DatasetLocator:
    """Finds datasets, by ID, in one datasets folder, and never outside it."""

    def __init__(self, datasets_dir: Location, folders: FolderMap, reader: ManifestReader | None = None) -> None:
        self.datasets_dir = datasets_dir.real()
        self.folders = folders
        self.reader = reader or ManifestReader()
        self._stores: dict[Location, tuple[str, int]] = {}
        self._zips: dict[Location, ZipSource] = {}
        self._resolved_folders: dict[str, Location] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._base_hint: tuple[str, Future[Location | None]] | None = None
        self._followed = 0
        self._prefetched: prefetch.ManifestPrefetch | None = None

    # -- what the walk asks ------------------------------------------------------------------

    def candidate_folders(self, dataset_id: str) -> list[Location]:
        """Where ``dataset_id`` may be: its folder-map name, then its ID."""
        names = [self.folders[dataset_id]] if dataset_id in self.folders else []
        names.append(dataset_id)
        folders = []
        for name in dict.fromkeys(names):
            folder = self.datasets_dir.join(name, f"folder of dataset {dataset_id}")
            if folder == self.datasets_dir:
                raise UnsafePathError(
                    f"the folder of dataset {dataset_id} is the datasets folder itself; map it to a folder inside it"
                )
            folders.append(folder)
        return folders

    def dataset_folder(self, dataset_id: str) -> Location:
        """The folder a reference to ``dataset_id`` was found in."""
        folder = self._resolved_folders.get(dataset_id)
        return folder if folder is not None else self.candidate_folders(dataset_id)[-1]

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
            names = ", ".join(repr(folder.name) for folder in candidates)
            raise MissingDatasetError(
                f"dataset {ref.dataset_id} is not in {self.datasets_dir} (looked for {names}); "
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
            for relative in (ref.path, f"data/{ref.path}"):
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
            for relative in (ref.path, f"data/{ref.path}"):
                target = folder.join(relative, f"reference {ref}")
                if target.has_object():
                    ZipSource(target)  # raises, saying why this is no readable zip
                if target.has_object() or target.has_folder():
                    raise BaseStoreError(
                        f"the base store {ref} is not a Zarr store (no zarr.json or .zgroup at its root)"
                    )

    def _find(self, ref: CirroRef) -> Location | None:
        for folder in self.candidate_folders(ref.dataset_id):
            for relative in (ref.path, f"data/{ref.path}"):
                target = folder.join(relative, f"reference {ref}")
                if ref.names_manifest:
                    found = self.reader.fetch(target) is not None
                else:
                    found = self._probe(target)
                if found:
                    self._resolved_folders[ref.dataset_id] = folder
                    return target
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
            source = ZipSource(target)
        except BaseStoreError:
            return None
        for doc, zarr_format in ROOT_DOCS:
            if source.exists(doc):
                self._zips[target] = source
                return zarr_format
        return None
