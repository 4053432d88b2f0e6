"""A stack: the chain of versions from an opened one down to its base store.

:meth:`Stack.resolve` is the one place that walks ``parent`` references. It reads
each manifest once, checks it, and records where every version's overlay and the
base store are, so that readers never follow a reference again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from sds_jupyter._version import __version__
from sds_jupyter.errors import (
    ManifestError,
    MissingDatasetError,
    StackCycleError,
    StackError,
    StackTooDeepError,
    WriteRefusedError,
    shown,
)
from sds_jupyter.stack.caches import StackCaches, default_caches
from sds_jupyter.stack.listing import PartialChain
from sds_jupyter.stack.locator import (
    DatasetLocator,
    Identity,
    ManifestReader,
    NotPlain,
    identity,
    is_version_folder,
    locate_version,
    settled,
)
from sds_jupyter.stack.manifest import MANIFEST_NAME, MAX_STACK_MANIFEST_BYTES, Manifest, unpacked_manifest
from sds_jupyter.stack.refs import CirroRef, FolderMap, parse_folder_map
from sds_jupyter.stack.storage.location import LocalLocation, Location, location_of, real_location
from sds_jupyter.stack.storage.paths import dataset_places, is_within, linkless_opens
from sds_jupyter.stack.workspace import parent_roots, workspace_key

__all__ = [
    "MAX_DEPTH",
    "BaseInfo",
    "Proofs",
    "Stack",
    "Version",
    "depth_above_missing",
    "is_version",
    "parents_inside",
]

#: The longest chain of versions a reader follows.
MAX_DEPTH = 500


@dataclass(frozen=True)
class Version:
    """One version of the stack: its manifest and where its objects are."""

    dataset_id: str
    folder: Location
    """The dataset's folder (what a download names by the dataset ID)."""
    data_dir: Location
    """The folder holding ``layer.json``: the dataset folder or its ``data/``."""
    overlay_dir: Location
    manifest: Manifest
    depth: int
    """1 for the version directly on the base, counting up to the top."""

    @cached_property
    def manifest_path(self) -> Location:
        """The version's ``layer.json`` (joined once: a join checks containment)."""
        return self.data_dir.join(MANIFEST_NAME, "manifest")

    # Every manifest field, straight from the version, for convenience.
    title = property(lambda self: self.manifest.title)
    message = property(lambda self: self.manifest.message)
    created_at = property(lambda self: self.manifest.created_at)
    created_by = property(lambda self: self.manifest.created_by)
    app = property(lambda self: self.manifest.app)
    parent = property(lambda self: self.manifest.parent)
    base_reference = property(lambda self: self.manifest.base)
    files = property(lambda self: self.manifest.files)
    deleted = property(lambda self: self.manifest.deleted)
    changes = property(lambda self: self.manifest.changes)

    @property
    def label(self) -> str:
        """What a person calls this version: its title, else its dataset ID."""
        return self.manifest.title or self.dataset_id


@dataclass(frozen=True)
class BaseInfo:
    """The store at the bottom of the stack."""

    dataset_id: str | None
    path: Location
    """A :class:`~pathlib.Path` on a local disk, a :data:`RemotePath` in object storage."""
    reference: str | None
    kind: str
    """``"folder"`` or ``"zip"``."""
    zarr_format: int
    opened: Any = field(default=None, compare=False, repr=False)
    """A source the resolve already opened and that may be shared (a zip in object
    storage, with its central directory read), so a store need not open it again."""


@dataclass(frozen=True)
class Stack:
    """Versions top first, then the base they all sit on."""

    versions: tuple[Version, ...]
    base: BaseInfo
    datasets_dir: Location
    folders: FolderMap = field(default_factory=FolderMap)

    @classmethod
    def resolve(
        cls,
        path: str | os.PathLike[str] | Location,
        folders: str | Mapping[str, str] | None = None,
        *,
        storage_options: Mapping[str, Any] | None = None,
        caches: StackCaches | None = None,
    ) -> Stack:
        """Open the stack whose top is the version at ``path``.

        ``path`` is a version's folder (``layer.json`` at its top or under
        ``data/``), its ``layer.json``, or a store (a stack of no versions).
        Parents are looked up in the folder holding the version's folder, by the
        folder map ``folders`` (``{dataset id: folder}``, a mapping or JSON text;
        when ``None``, the ``SDS_CIRRO_DATASETS`` variable) or else by their ID.

        ``path`` may be a URL in object storage (``s3://bucket/prefix/<dataset
        folder>``, or any fsspec URL but ``file://``); ``storage_options`` go to
        the fsspec filesystem. Nothing is listed: each manifest is fetched once.

        ``caches`` (a :class:`~sds_jupyter.stack.caches.StackCaches`) is where parsed
        manifests, zip indexes and resolved local stacks are looked up and kept; the
        process's own when None. A stack opened before through the same caches, and
        proven unchanged on disk, is returned without a walk.

        Raises
        ------
        StackError
            For anything that cannot be followed safely: the message says what.
        """
        caches = default_caches(caches)
        folder_map = parse_folder_map(folders)
        top = location_of(path, storage_options)
        if top.parent == top:
            raise StackError(f"{top} is a bucket or a root, not a dataset folder under a datasets folder")
        cache_key = (
            (str(top), tuple(sorted(folder_map.items())), workspace_key()) if top.as_local() is not None else None
        )
        if cache_key is not None:
            cached: Stack | None = caches.stacks.lookup(cache_key) or _from_disk(caches, cache_key, folder_map)
            if cached is not None:
                return cached
        began = time.time_ns()
        reader = ManifestReader(caches.manifests)
        located = locate_version(top, reader)
        if located is None:
            return cls._store_only(top, folder_map, reader, caches)
        dataset_folder, data_dir = located
        datasets_dir = dataset_folder.parent
        if datasets_dir == dataset_folder:
            raise StackError(f"{dataset_folder} is a bucket or a root, not a dataset folder under a datasets folder")
        locator = DatasetLocator(
            datasets_dir, folder_map, reader, parent_roots(datasets_dir), indexes=caches.zip_indexes
        )
        top_id = folder_map.id_for_folder(dataset_folder.name) or dataset_folder.name
        stack = _walk(top_id, dataset_folder, data_dir, locator, folder_map)
        if cache_key is not None:
            # kept only with what proves it unchanged; a manifest changed too recently to be
            # sure of (see :func:`~sds_jupyter.stack.locator.settled`) leaves it uncached
            proofs = _proofs(stack, reader, began)
            if proofs is not None:
                caches.stacks.store(cache_key, stack, proofs)
                _to_disk(caches, cache_key, stack, proofs)
        return stack

    @classmethod
    def _store_only(cls, top: Location, folder_map: FolderMap, reader: ManifestReader, caches: StackCaches) -> Stack:
        """A stack of no versions: ``top`` is a store (a folder or a ``.zarr.zip``)."""
        dataset_folder = top.parent
        locator = DatasetLocator(dataset_folder.parent, folder_map, reader, indexes=caches.zip_indexes)
        target = top.real()
        try:
            kind, zarr_format = locator.probe_store(target, str(top))
        except StackError:
            if not (target.has_object() or target.has_folder()):
                raise StackError(f"{top} does not exist; give a version folder (with layer.json) or a store") from None
            raise StackError(
                f"{top} holds no layer.json and is not a Zarr store; give a version folder, its layer.json, or a store"
            ) from None
        base = BaseInfo(
            dataset_id=folder_map.id_for_folder(dataset_folder.name) or dataset_folder.name,
            path=target,
            reference=None,
            kind=kind,
            zarr_format=zarr_format,
            opened=locator.opened_source(target),
        )
        return cls(versions=(), base=base, datasets_dir=dataset_folder.parent, folders=folder_map)

    # -- views --------------------------------------------------------------------------

    @property
    def protected_folders(self) -> list[LocalLocation]:
        """Every local folder of the stack: the base and each version's folder, data and overlay.

        Nothing sds-jupyter writes (a new version, a flattened store, an exported
        figure) may land inside one of them.
        """
        folders = [self.base.path] + [p for v in self.versions for p in (v.folder, v.data_dir, v.overlay_dir)]
        return [local for folder in folders if (local := folder.as_local()) is not None]

    def refuse_output_inside(self, out: os.PathLike[str] | str, what: str) -> None:
        """Raise WriteRefusedError if ``out`` (followed through links) lies inside the stack.

        The stack's folders are real paths already (resolved once, when the stack was),
        so only ``out`` is resolved, and each folder it lies in is looked up in the
        stack's set of folders: the cost is the depth of ``out``, not of the stack.
        """
        real_out = os.path.realpath(out)
        protected = self._protected_by_real_path()
        probe = real_out
        while True:
            folder = protected.get(probe)
            if folder is not None:
                raise WriteRefusedError(
                    f"{out} is inside {folder}, part of the stack; versions and bases are never "
                    f"written to: write the {what} outside them"
                )
            above = os.path.dirname(probe)
            if above == probe:
                return
            probe = above

    def _protected_by_real_path(self) -> dict[str, LocalLocation]:
        """:attr:`protected_folders` by real path, built once per stack: a stack's folders never change,
        and a save 500 versions up asks this of 1,500 folders (a few milliseconds each time otherwise)."""
        cached: dict[str, LocalLocation] | None = self.__dict__.get("_sds_protected")
        if cached is None:
            cached = {folder.real_path(): folder for folder in self.protected_folders}
            object.__setattr__(self, "_sds_protected", cached)  # a frozen dataclass: derived data only
        return cached

    def outside(self, root: str | os.PathLike[str]) -> str | None:
        """The name of the first place this stack reads (a version's overlay or data, the base) that is
        not on this disk inside ``root`` (followed through links); None when every place is.

        Why here: a server confines what it opens to its root, and only the stack knows its places
        and which of them are on this disk (a place in object storage is never inside a local root).
        """
        root_real = os.path.realpath(root)
        places = [(version.dataset_id, version.overlay_dir) for version in self.versions]
        places += [(version.dataset_id, version.data_dir) for version in self.versions]
        places.append((self.base.dataset_id or "the base", self.base.path))
        for name, place in places:
            local = place.as_local()
            if local is None or not is_within(os.path.realpath(local), root_real):
                return name
        return None

    def file_times(self) -> tuple[tuple[str, int], ...] | None:
        """Each manifest's and the base's path with its modification time in ns; None when any of
        them is in object storage (no times to watch) or cannot be read.

        Why: whoever keeps a resolved stack compares two of these to notice a new download over an
        old one, without knowing where the files are kept.
        """
        files = [version.manifest_path for version in self.versions] + [self.base.path]
        local = [found for path in files if (found := path.as_local()) is not None]
        if len(local) != len(files):
            return None
        try:
            return tuple((str(path), path.stat().st_mtime_ns) for path in local)
        except (OSError, ValueError):
            return None

    @property
    def listing_dir(self) -> LocalLocation | None:
        """The datasets folder this stack's other versions are listed in; None in object storage,
        where nothing is listed (the tree is the opened chain)."""
        return self.datasets_dir.as_local()

    def fingerprint(self) -> str:
        """Text that changes when any manifest of the stack or the base's root document changes.

        A digest of each version's real manifest path and parsed content and of the base's
        path, kind and root document's size and time; computed once per resolved stack. A
        pickled store carries it, so unpickling into a stack that changed since is refused.
        """
        cached: str | None = self.__dict__.get("_sds_fingerprint")
        if cached is None:
            digest = hashlib.sha256()
            for version in self.versions:
                doc = json.dumps(version.manifest.to_json(), sort_keys=True, separators=(",", ":"))
                digest.update(f"{version.manifest_path}|{doc}\n".encode())
            root_doc = "" if self.base.kind == "zip" else ("zarr.json" if self.base.zarr_format == 3 else ".zgroup")
            try:
                base = self.base.path.fingerprint(root_doc)
            except (OSError, StackError):
                base = f"{self.base.path}|missing"
            digest.update(f"{self.base.kind}|{base}\n".encode())
            cached = digest.hexdigest()[:32]
            object.__setattr__(self, "_sds_fingerprint", cached)  # a frozen dataclass: derived data only
        return cached

    @property
    def opened_from(self) -> Location:
        """Where to open this stack again: the top version's dataset folder, or the base store."""
        return self.versions[0].folder if self.versions else self.base.path

    @property
    def depth(self) -> int:
        """How many versions sit on the base (0 for a store alone)."""
        return len(self.versions)

    @property
    def top(self) -> Version | None:
        return self.versions[0] if self.versions else None

    def at(self, selector: int | str) -> Stack:
        """The stack whose top is one of this stack's versions.

        ``selector`` is a depth (0 is the base alone), a dataset ID or a title.
        """
        depth = self.depth_of(selector)
        return Stack(
            versions=self.versions[self.depth - depth :],
            base=self.base,
            datasets_dir=self.datasets_dir,
            folders=self.folders,
        )

    def depth_of(self, selector: int | str) -> int:
        """The depth a selector names; refuses one that names nothing here."""
        if isinstance(selector, bool):
            raise StackError(f"no version {shown(selector)} in this stack")
        if isinstance(selector, int):
            if 0 <= selector <= self.depth:
                return selector
            raise StackError(f"no version at depth {selector}: this stack has depths 0 (the base) to {self.depth}")
        if isinstance(selector, str):
            # ASCII digits only ("²".isdigit() is true, int("²") fails), and few of them:
            # a selector arrives from a person or a message, never as a huge number.
            if selector.isascii() and selector.isdigit() and len(selector) <= 18:
                return self.depth_of(int(selector))
            for version in self.versions:
                if selector in (version.dataset_id, version.manifest.title):
                    return version.depth
            if selector in ("base", self.base.dataset_id):
                return 0
        raise StackError(f"no version {shown(selector)} in this stack; give a depth, a dataset ID or a title")


class Proofs(NamedTuple):
    """What must still hold on the disk for a resolved local stack to resolve the same.

    * ``files``: every manifest read, by real path, with the identity of what was read
      (device, inode, size, mtime, ctime: a rewrite in place, a replacement, a link
      swapped in all change it);
    * ``folders``: every folder from the datasets folder down to each manifest (and an overlay
      folder not right inside its data folder), by device and inode; still that folder, not a link.
      Their mtimes are no part of it: a save adds a folder to the datasets folder, and must not
      void other stacks;
    * ``missing``: every place looked at first and found empty (a manifest at a dataset
      folder's top before its ``data/``, a folder-map name before the ID): still empty;
    * ``exact``: the base store (its folder or zip) with its full identity: nothing
      sds-jupyter writes touches it, and its root document's presence shows in its mtime; and
      each version's data folder holding its overlay, with its full identity: nothing writes
      into a saved version's folder, and its overlay folder removed, renamed or swapped (for
      another folder or a link) changes its mtime and ctime (:func:`_overlay_proof`).
    """

    files: list[tuple[str, Identity]]
    folders: list[tuple[str, tuple[int, int]]]
    missing: list[str]
    exact: list[tuple[str, Identity, int]]

    def hold(self) -> bool:
        """Whether the disk still matches: one ``lstat`` per entry."""
        for path, expected in self.files:
            info = _lstat(path)
            if info is None or not stat.S_ISREG(info.st_mode) or identity(info) != expected:
                return False
        for path, (device, inode) in self.folders:
            info = _lstat(path)
            if info is None or not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) != (device, inode):
                return False
        if not self.still_missing():
            return False
        for path, expected, kind in self.exact:
            info = _lstat(path)
            if info is None or stat.S_IFMT(info.st_mode) != kind or identity(info) != expected:
                return False
        return True

    def still_missing(self) -> bool:
        """Whether every place found empty is still empty."""
        for path in self.missing:
            try:
                os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return False
            return False
        return True


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _proofs(stack: Stack, reader: ManifestReader, began_ns: int) -> Proofs | None:
    """The :class:`Proofs` of a local stack just walked; None if unsure (then it is not cached)."""
    root = stack.datasets_dir.as_local()
    if root is None:
        return None
    root_s = str(root)
    files: list[tuple[str, Identity]] = []
    leaves: list[str] = [str(stack.base.path)]
    for version in stack.versions:
        read = reader.identity_of(version.manifest_path)
        if read is None or not settled(read[3], read[4], now_ns=began_ns):
            return None
        files.append((str(version.manifest_path), read))
        leaves += [str(version.manifest_path), str(version.overlay_dir)]
    # The walk's containment checks saw most folders already: their lstat then is the record.
    seen = {
        str(local): local.joined_lstat()
        for v in stack.versions
        for loc in (v.folder, v.data_dir)
        if (local := loc.as_local()) is not None
    }
    folders: dict[str, tuple[int, int]] = {}
    for leaf in [root_s, *leaves]:
        folder = leaf if leaf == root_s else os.path.dirname(leaf)
        while folder not in folders and is_within(folder, root_s):
            info = seen.get(folder) or _lstat(folder)
            if info is None or not stat.S_ISDIR(info.st_mode):
                return None
            seen[folder] = info  # a version's data folder is proven below by this same lstat
            folders[folder] = (info.st_dev, info.st_ino)
            if folder == root_s:
                break
            folder = os.path.dirname(folder)
    missing = list(dict.fromkeys(reader.missing))
    base = _lstat(str(stack.base.path))
    if base is None or stat.S_ISLNK(base.st_mode) or not settled(base.st_mtime_ns, base.st_ctime_ns, now_ns=began_ns):
        return None
    exact = [(str(stack.base.path), identity(base), stat.S_IFMT(base.st_mode))]
    for version in stack.versions:  # each overlay folder itself: a link swapped in for it must show
        if not _overlay_proof(version, seen, folders, missing, exact, began_ns):
            return None
    proofs = Proofs(files, list(folders.items()), missing, exact)
    # What was found empty during the walk must be empty now, or the walk raced a writer.
    return proofs if proofs.still_missing() else None


def _overlay_proof(
    version: Version,
    seen: dict[str, os.stat_result | None],
    folders: dict[str, tuple[int, int]],
    missing: list[str],
    exact: list[tuple[str, Identity, int]],
    began_ns: int,
) -> bool:
    """Add what proves ``version``'s overlay folder is still the one walked; False if unsure.

    An overlay right inside its data folder is proven by that folder's full identity, kept in
    ``exact`` in place of its device and inode in ``folders``: an overlay removed, renamed, or
    swapped for another folder or a link changes the data folder's mtime and ctime, so one
    ``lstat`` proves both (a save 500 versions up proves 1,000 paths instead of 1,500; see
    docs/safety.md). Any other overlay (nested deeper, or missing) is proven by itself.
    """
    overlay = str(version.overlay_dir)
    data_dir = str(version.data_dir)
    if os.path.dirname(overlay) == data_dir and data_dir in folders:
        # as the walk's join saw it, else now: either way a change since the walk began is unsettled
        held = seen.get(data_dir) or _lstat(data_dir)
        if held is None or not stat.S_ISDIR(held.st_mode):
            return False
        if not settled(held.st_mtime_ns, held.st_ctime_ns, now_ns=began_ns):
            return False
        del folders[data_dir]
        exact.append((data_dir, identity(held), stat.S_IFDIR))
        return True
    local_overlay = version.overlay_dir.as_local()
    seen_overlay = local_overlay.joined_lstat() if local_overlay is not None else None
    info = seen_overlay or _lstat(overlay)  # the walk's join saw it already, as it was then
    if info is None:
        missing.append(overlay)
    elif stat.S_ISDIR(info.st_mode):
        folders[overlay] = (info.st_dev, info.st_ino)
    else:
        return False
    return True


# -- a resolved stack kept on disk, for this user's next process ------------------------------

#: The form of a record and the release that wrote it: a record of another is not read.
_RECORD_FORM = f"sds-jupyter {__version__} stack record 2"


def _to_disk(caches: StackCaches, cache_key: tuple[Any, ...], stack: Stack, proofs: Proofs) -> None:
    """Keep a stack just walked, with its proofs, in the caches' records on disk (if they have any).

    Only a stack whose base nothing had to open (a folder: a zip's open index is not kept).
    Why this shape: loading a record is what a cold open costs, and decoding JSON costs per
    object. So each path is written once, in a table the rest names by position (a version's
    folder, its data folder, the proofs all share them), and identities are flat runs of integers.
    """
    if caches.disk is None or stack.base.opened is not None:
        return
    paths: dict[str, int] = {}
    unreal: list[int] = []

    def at(location: Location | str) -> int:
        text = str(location)
        number = paths.get(text)
        if number is None:
            number = paths[text] = len(paths)
            # not known to be real: rebuilt as a path to resolve, never as a real one
            if not isinstance(location, str) and location.__dict__.get("_sds_real") != text:
                unreal.append(number)
        return number

    base = stack.base
    versions = [
        [
            v.dataset_id,
            at(v.folder),
            at(v.data_dir),
            at(v.overlay_dir),
            at(v.manifest_path),
            v.depth,
            v.manifest.packed(),
        ]
        for v in stack.versions
    ]
    record = {
        "form": _RECORD_FORM,
        "real_top": os.path.realpath(cache_key[0]),
        "datasets_dir": at(stack.datasets_dir),
        "base": [base.dataset_id, at(base.path), base.reference, base.kind, base.zarr_format],
        "versions": versions,
        "files": [at(path) for path, _ in proofs.files],
        "file_ids": [n for _, ident in proofs.files for n in ident],
        "folders": [at(path) for path, _ in proofs.folders],
        "folder_ids": [n for _, ident in proofs.folders for n in ident],
        "missing": proofs.missing,
        "exact": proofs.exact,
        "paths": list(paths),
        "unreal": unreal,
    }
    caches.disk.save(repr(cache_key), record)


def _from_disk(caches: StackCaches, cache_key: tuple[Any, ...], folder_map: FolderMap) -> Stack | None:
    """The stack a record on disk keeps under ``cache_key``, if its proofs hold now; else None (walk).

    The manifests in it are not checked again: they passed when walked, the record is this
    user's own (:mod:`~sds_jupyter.stack.storage.ondisk`), and each file is proven unchanged since.
    The stack then joins the in-memory caches, as if this process had walked it.
    """
    record = None if caches.disk is None else caches.disk.load(repr(cache_key))
    if record is None or record.get("form") != _RECORD_FORM:
        return None
    try:
        paths: list[str] = record["paths"]
        if not all(isinstance(p, str) for p in paths):
            return None
        name = paths.__getitem__
        proofs = Proofs(
            list(zip(map(name, record["files"]), zip(*[iter(record["file_ids"])] * 5), strict=True)),
            list(zip(map(name, record["folders"]), zip(*[iter(record["folder_ids"])] * 2), strict=True)),
            [str(path) for path in record["missing"]],
            [(str(path), tuple(ident), kind) for path, ident, kind in record["exact"]],
        )
        if os.path.realpath(cache_key[0]) != record["real_top"] or not proofs.hold():
            return None
        stack = _stack_from_record(record, paths, folder_map)
    except (KeyError, TypeError, ValueError, IndexError):
        return None  # not a record this code wrote: walk
    caches.stacks.store(cache_key, stack, proofs)
    for version, (path, ident) in zip(stack.versions, proofs.files):
        caches.manifests.keep(path, ident, version.manifest)
    return stack


def _stack_from_record(record: dict[str, Any], paths: list[str], folder_map: FolderMap) -> Stack:
    unreal = set(record["unreal"])
    made: dict[int, Location] = {}  # one object per path: a version's folder is often its data folder

    def place(number: int) -> Location:
        found = made.get(number)
        if found is None:
            path = paths[number]
            found = made[number] = location_of(path) if number in unreal else real_location(path)
        return found

    versions = []
    for dataset_id, folder, data_dir, overlay_dir, manifest_path, depth, packed in record["versions"]:
        version = Version(
            dataset_id=dataset_id,
            folder=place(folder),
            data_dir=place(data_dir),
            overlay_dir=place(overlay_dir),
            manifest=unpacked_manifest(packed),
            depth=depth,
        )
        version.__dict__["manifest_path"] = place(manifest_path)
        versions.append(version)
    base_id, base_path, reference, kind, zarr_format = record["base"]
    base = BaseInfo(base_id, place(base_path), reference, kind, zarr_format)
    return Stack(tuple(versions), base, place(record["datasets_dir"]), folder_map)


#: One walked version: its dataset ID, folder, data folder, overlay folder, manifest and the
#: manifest's location (both walks build the chain of these, top first).
_ChainLink = tuple[str, Location, Location, Location, Manifest, Location]


def _walk(
    top_id: str,
    dataset_folder: Location,
    data_dir: Location,
    locator: DatasetLocator,
    folder_map: FolderMap,
) -> Stack:
    """Follow parents from the version in ``data_dir`` down to the base.

    The same walk on a local disk and in object storage: ``locator`` reads through locations.
    """
    try:
        quick = _walk_plain(top_id, dataset_folder, data_dir, locator, folder_map)
        return quick if quick is not None else _walk_chain(top_id, dataset_folder, data_dir, locator, folder_map)
    finally:
        locator.close()


def _walk_plain(
    top_id: str,
    dataset_folder: Location,
    data_dir: Location,
    locator: DatasetLocator,
    folder_map: FolderMap,
) -> Stack | None:
    """The walk of :func:`_walk_chain` for the usual local stack, in about half the time; None: walk that way.

    Why: a cold open of a 500-deep stack spent most of its time checking each path
    segment by segment and building locations for places that were never there. Here
    each parent's manifest is opened with one ``openat2`` that refuses any link on the
    way, so the path is known to be contained without more checks. Whatever is not the
    usual case (a link, a parent missing or only in a fallback folder, an unreadable or
    changing manifest, a loop, too deep) hands over to the careful walk, from the top:
    it finds the same versions in the same places and words every refusal.
    """
    root = locator.datasets_dir.as_local()
    if root is None or root.real_path() == "/" or not linkless_opens():
        return None
    missing_before = len(locator.reader.missing)
    try:
        return _plain_chain(top_id, dataset_folder, data_dir, locator, folder_map, root.real_path())
    except NotPlain:
        del locator.reader.missing[missing_before:]  # the careful walk records its own tries
        return None


def _plain_chain(
    top_id: str,
    dataset_folder: Location,
    data_dir: Location,
    locator: DatasetLocator,
    folder_map: FolderMap,
    root: str,
) -> Stack:
    chain: list[_ChainLink] = []
    seen: set[str] = set()
    manifest_bytes = 0
    dataset_id, folder = top_id, dataset_folder
    try:
        manifest_path = data_dir.join(MANIFEST_NAME, f"manifest of {dataset_id}")
        manifest = locator.read_manifest(manifest_path)
    except StackError:
        raise NotPlain(top_id) from None
    real_data_dir = manifest_path.parent
    while True:
        if len(chain) == MAX_DEPTH or str(manifest_path) in seen:
            raise NotPlain(dataset_id)
        seen.add(str(manifest_path))
        manifest_bytes += manifest.source_bytes
        if manifest_bytes > MAX_STACK_MANIFEST_BYTES:
            raise NotPlain(dataset_id)
        try:
            overlay_dir = real_data_dir.join(manifest.overlay, f"overlay folder of {dataset_id}")
            ref = CirroRef.parse(manifest.parent)
        except StackError:
            raise NotPlain(dataset_id) from None
        chain.append((dataset_id, folder, real_data_dir, overlay_dir, manifest, manifest_path))
        if not ref.names_manifest:
            break
        dataset_id = ref.dataset_id
        folder, real_data_dir, manifest_path, manifest = _plain_parent(ref, locator, root)
    try:
        base = _base_info(ref, locator.resolve(ref), locator)
    except StackError:
        raise NotPlain(ref.dataset_id) from None
    return Stack(versions=_versions(chain), base=base, datasets_dir=locator.datasets_dir, folders=folder_map)


def _plain_parent(ref: CirroRef, locator: DatasetLocator, root: str) -> tuple[Location, Location, Location, Manifest]:
    """``(dataset folder, data folder, manifest location, manifest)`` of the version ``ref`` names, in
    the datasets folder ``root``, tried in the order :meth:`DatasetLocator.candidate_folders` gives.

    The data folder is the dataset folder's own location when the manifest sits at its top (the
    usual layout), as a stack loaded from its record shares them: one location made, not two."""
    names = [locator.folders[ref.dataset_id]] if ref.dataset_id in locator.folders else []
    for name in dict.fromkeys([*names, ref.dataset_id]):
        for place in dataset_places(ref.path):
            path = f"{root}/{name}/{place}"
            manifest = locator.reader.read_plain(path)
            if manifest is not None:
                folder = real_location(f"{root}/{name}")
                data_dir = os.path.dirname(path)
                return (
                    folder,
                    folder if data_dir == str(folder) else real_location(data_dir),
                    real_location(path),
                    manifest,
                )
    raise NotPlain(ref.dataset_id)  # elsewhere or nowhere: the careful walk looks in the fallbacks and says which


def _walk_chain(
    top_id: str,
    dataset_folder: Location,
    data_dir: Location,
    locator: DatasetLocator,
    folder_map: FolderMap,
) -> Stack:
    chain: list[_ChainLink] = []
    seen: set[str] = set()
    manifest_bytes = 0
    dataset_id = top_id
    manifest_path = data_dir.join(MANIFEST_NAME, f"manifest of {dataset_id}")
    while True:
        if str(manifest_path) in seen:
            raise StackCycleError(
                f"the parent chain comes back to {dataset_id} ({manifest_path}); "
                "the versions' parent references form a loop"
            )
        if len(chain) == MAX_DEPTH:
            raise StackTooDeepError(
                f"the parent chain runs more than {MAX_DEPTH} versions deep; flatten a lower version and build on that"
            )
        seen.add(str(manifest_path))
        manifest = locator.read_manifest(manifest_path)
        manifest_bytes += manifest.source_bytes
        if manifest_bytes > MAX_STACK_MANIFEST_BYTES:
            raise ManifestError(
                f"the manifests of this stack add up to more than {MAX_STACK_MANIFEST_BYTES} bytes "
                f"(reached at {dataset_id}); no real stack has manifests this large"
            )
        if not chain:
            locator.hint_base(manifest.base)
        real_data_dir = manifest_path.parent
        overlay_dir = real_data_dir.join(manifest.overlay, f"overlay folder of {dataset_id}")
        chain.append((dataset_id, dataset_folder, real_data_dir, overlay_dir, manifest, manifest_path))
        ref = CirroRef.parse(manifest.parent)
        try:
            target = locator.resolve(ref)
        except MissingDatasetError as exc:
            # keep what did resolve: a browser still shows it, down to the break
            # errors.py sits below the stack and cannot name PartialChain: a dynamic attribute
            exc.partial = PartialChain(  # type: ignore[attr-defined]
                _versions(chain, depth_above_missing(chain[-1][4], missing_is_version=ref.names_manifest)),
                locator.datasets_dir,
                folder_map,
                exc.dataset_id,
            )
            raise
        if not ref.names_manifest:
            base = _base_info(ref, target, locator)
            break
        dataset_id = ref.dataset_id
        dataset_folder = locator.dataset_folder(ref.dataset_id)
        manifest_path = target  # resolve() gave its real location already
    return Stack(versions=_versions(chain), base=base, datasets_dir=locator.datasets_dir, folders=folder_map)


def parents_inside(
    path: str | os.PathLike[str], root: str | os.PathLike[str], caches: StackCaches | None = None
) -> bool:
    """Whether the version at ``path`` would look for its parents inside ``root`` on this disk.

    Parents are found beside the version's dataset folder, so that folder's parent must be inside
    ``root`` (a version at ``root`` itself is not); a store has no parents, so nothing is looked up.
    Asked before resolving, so a server never reads a manifest outside its root. Manifests are read
    through ``caches`` (the process's when None).
    """
    located = locate_version(location_of(path), ManifestReader(default_caches(caches).manifests))
    if located is None:
        return True
    parents_dir = located[0].parent.local_path()
    return parents_dir is not None and is_within(os.path.realpath(parents_dir), os.path.realpath(root))


def is_version(path: str | os.PathLike[str], caches: StackCaches | None = None) -> bool:
    """Whether ``path`` is a version (its folder, ``data/`` or ``layer.json``), its manifest read
    through ``caches`` (the process's when None): the locator's one answer, for callers above."""
    return is_version_folder(location_of(path), ManifestReader(default_caches(caches).manifests))


def depth_above_missing(manifest: Manifest, *, missing_is_version: bool) -> int:
    """The depth of the lowest version that resolved above a missing parent.

    Why: the versions keep their own numbers when a dataset below them is missing (a v6 is
    not shown as v3). Its manifest's depth counts from the base, the missing ones included;
    without one, the missing parent counts as one version (none when it is the base store).
    """
    floor = 2 if missing_is_version else 1
    known = isinstance(manifest.depth, int) and floor <= manifest.depth <= MAX_DEPTH
    return manifest.depth if known else floor  # type: ignore[return-value]


def _versions(chain: list[_ChainLink], lowest: int = 1) -> tuple[Version, ...]:
    """The walked chain as Versions, top first, the lowest at depth ``lowest`` (1: on the base)."""
    depth = len(chain) + lowest - 1
    versions = []
    for index, (dataset_id, folder, data, overlay, manifest, manifest_path) in enumerate(chain):
        version = Version(
            dataset_id=dataset_id,
            folder=folder,
            data_dir=data,
            overlay_dir=overlay,
            manifest=manifest,
            depth=depth - index,
        )
        # The walk read the manifest there (a contained, real location): no need to join it again.
        version.__dict__["manifest_path"] = manifest_path
        versions.append(version)
    return tuple(versions)


def _base_info(ref: CirroRef, target: Location, locator: DatasetLocator) -> BaseInfo:
    kind, zarr_format = locator.probe_store(target, f"the base store {ref}")
    return BaseInfo(
        dataset_id=ref.dataset_id,
        path=target,
        reference=str(ref),
        kind=kind,
        zarr_format=zarr_format,
        opened=locator.opened_source(target),
    )
