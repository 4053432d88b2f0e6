"""Every version in a datasets folder: the one place that finds a version's manifest.

A folder is a version when it holds ``layer.json`` at its top or under ``data/``.
:func:`find_manifest` says so with a few ``lstat`` calls (no real-path walk unless a
symbolic link is on the way), so listing thousands of folders stays cheap.
:class:`ManifestCache` keeps parsed manifests keyed by real path, size and
modification time (ns): a rewritten manifest is read again, an unchanged one never.
Nothing here follows ``parent`` references; :mod:`sds_jupyter.stack.stack` does.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sds_jupyter.errors import StackError
from sds_jupyter.stack.manifest import MANIFEST_NAME, Manifest, read_manifest
from sds_jupyter.stack.paths import contained_path, is_within
from sds_jupyter.stack.refs import FolderMap

__all__ = [
    "Found",
    "FoundVersion",
    "ManifestCache",
    "PartialChain",
    "Scan",
    "find_manifest",
    "listing_fingerprint",
    "scan_versions",
]

#: How many parsed manifests one cache keeps before it starts over.
CACHE_LIMIT = 50_000


@dataclass(frozen=True)
class PartialChain:
    """The versions that resolved, top first, when a parent is missing below them."""

    versions: tuple  # tuple[Version, ...]; typed loosely so stack.py can import this module
    datasets_dir: Path
    folders: FolderMap
    missing_id: str


def _regular(path: str) -> os.stat_result | None:
    """``lstat`` of ``path`` when it is a regular file (not a link), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _plain_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _followed(data_dir: str) -> Found | None:
    """The manifest in ``data_dir`` when it is a file, following links."""
    path = os.path.join(data_dir, MANIFEST_NAME)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Found(data_dir, os.path.realpath(path), st) if stat.S_ISREG(st.st_mode) else None


@dataclass(frozen=True)
class Found:
    """Where a version folder keeps its manifest."""

    data_dir: str
    """The folder holding ``layer.json`` as given: the version folder or its ``data/``."""
    real_path: str
    """The manifest's real path."""
    stat: os.stat_result


def find_manifest(folder: str | os.PathLike[str], plain: bool = False) -> Found | None:
    """Where the ``layer.json`` of version folder ``folder`` is, or None for any other folder.

    ``layer.json`` at the folder's top wins over ``data/layer.json``. ``plain``
    says the caller knows ``folder`` is a real path with no link in it; then a
    manifest reached without links is returned without asking for its real path.
    """
    folder = os.fspath(folder)
    inner_dir = os.path.join(folder, "data")
    if plain:
        top = os.path.join(folder, MANIFEST_NAME)
        st = _regular(top)
        if st is not None:
            return Found(folder, top, st)
        if not os.path.lexists(top) and _plain_dir(inner_dir):
            inner = os.path.join(inner_dir, MANIFEST_NAME)
            st = _regular(inner)
            if st is not None:
                return Found(inner_dir, inner, st)
    return _followed(folder) or _followed(inner_dir)


class ManifestCache:
    """Parsed manifests by real path, re-read when the size or mtime (ns) changes."""

    def __init__(self, limit: int = CACHE_LIMIT) -> None:
        self._entries: dict[str, tuple[int, int, Manifest]] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def read(self, real_path: str, st: os.stat_result) -> Manifest:
        """The manifest at ``real_path`` whose ``stat`` is ``st`` (parsed once per change)."""
        key = (st.st_size, st.st_mtime_ns)
        entry = self._entries.get(real_path)
        if entry is not None and entry[:2] == key:
            return entry[2]
        manifest = read_manifest(Path(real_path))
        with self._lock:
            if len(self._entries) >= self._limit:
                self._entries.clear()
            self._entries[real_path] = (*key, manifest)
        return manifest

    def __len__(self) -> int:
        return len(self._entries)


#: The cache every scan shares unless given its own.
MANIFESTS = ManifestCache()


@dataclass(frozen=True)
class FoundVersion:
    """A version folder of the datasets folder and its parsed manifest."""

    dataset_id: str
    folder: Path
    manifest_path: str
    manifest: Manifest


@dataclass
class Scan:
    """What a scan found: versions, and one note per folder it had to skip."""

    versions: list[FoundVersion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _candidates(datasets_real: str, folders: FolderMap, notes: list[str]) -> Iterator[tuple[str, str, bool]]:
    """``(folder name, folder path, plain)`` of every folder that may be a version.

    The datasets folder's own entries, then the folder map's (which may be nested).
    ``plain`` is True for an entry that is a directory and not a link.
    """
    seen: set[str] = set()
    try:
        with os.scandir(datasets_real) as entries:
            listed = sorted(entries, key=lambda e: e.name)
    except OSError as exc:
        notes.append(f"cannot list {datasets_real}: {exc.strerror or exc}")
        listed = []
    for entry in listed:
        try:
            plain = entry.is_dir(follow_symlinks=False)
            if not plain and not entry.is_dir():
                continue
        except OSError:
            continue
        seen.add(entry.name)
        yield entry.name, entry.path, plain
    for dataset_id, name in folders.items():
        name = name.rstrip("/")
        if name in seen:
            continue
        seen.add(name)
        try:
            path = contained_path(Path(datasets_real), name, f"folder of dataset {dataset_id}")
        except StackError as exc:
            notes.append(f"skipped {name!r}: {exc}")
            continue
        if path.is_dir():
            yield name, str(path), False


def scan_versions(
    datasets_dir: str | os.PathLike[str], folders: FolderMap | None = None, cache: ManifestCache | None = None
) -> Scan:
    """Every version folder in ``datasets_dir``; unreadable or hostile manifests become notes.

    A folder's dataset ID is the folder map's ID for it, else its name. A manifest
    whose real path lies outside the datasets folder (a link out) is skipped.
    """
    folders = folders or FolderMap()
    cache = cache or MANIFESTS
    datasets_real = os.path.realpath(datasets_dir)
    ids = {name.rstrip("/"): dataset_id for dataset_id, name in folders.items()}
    scan = Scan()
    for name, path, plain in _candidates(datasets_real, folders, scan.notes):
        found = find_manifest(path, plain=plain)
        if found is None:
            continue
        real = found.real_path
        if not plain and not is_within(real, datasets_real):
            scan.notes.append(f"skipped {name!r}: its layer.json lies outside the datasets folder")
            continue
        try:
            manifest = cache.read(real, found.stat)
        except StackError as exc:
            scan.notes.append(f"skipped {name!r}: {exc}")
            continue
        scan.versions.append(FoundVersion(ids.get(name, name), Path(path), real, manifest))
    return scan


def listing_fingerprint(datasets_dir: str | os.PathLike[str], folders: FolderMap | None = None) -> str:
    """A short hash of which version folders there are and their manifests' size and mtime.

    Cheap enough to ask every few seconds: nothing is parsed. It changes when a
    version is added, removed or rewritten.
    """
    digest = hashlib.blake2b(digest_size=12)
    notes: list[str] = []
    for name, path, plain in _candidates(os.path.realpath(datasets_dir), folders or FolderMap(), notes):
        found = find_manifest(path, plain=plain)
        if found is not None:
            digest.update(f"{name}\0{found.stat.st_size}\0{found.stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()
