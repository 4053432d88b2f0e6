"""Every version in a datasets folder, listed fast.

A folder is a version when :func:`~sds_jupyter.stack.locator.is_version_folder` says so;
:func:`find_manifest` gives the same answer for a local folder with a few
``lstat`` calls (no real-path walk unless a symbolic link is on the way), so listing
thousands of folders stays cheap.
Parsed manifests are kept in the caller's caches (``caches=``, a
:class:`~sds_jupyter.stack.caches.StackCaches`; the process's own when none is given),
under their rule (the file's identity, nothing changed too recently to be sure of): the
listing and ``Stack.resolve`` given the same caches parse a manifest once between them.
So are the last scan of each folder and the hint of which folders keep ``data/layer.json``.
Nothing here follows ``parent`` references; :mod:`sds_jupyter.stack.stack` does.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from sds_jupyter.errors import StackError
from sds_jupyter.limits import MAX_LISTED_VERSIONS, MAX_TITLE_MANIFEST_BYTES
from sds_jupyter.stack.caches import StackCaches, TreeScans, default_caches
from sds_jupyter.stack.locator import Identity, identity, settled
from sds_jupyter.stack.manifest import MANIFEST_NAME, Manifest
from sds_jupyter.stack.refs import FolderMap
from sds_jupyter.stack.storage.location import LocalLocation, Location
from sds_jupyter.stack.storage.paths import DATA_DIR, contained_path, is_within

__all__ = [
    "Found",
    "FoundVersion",
    "PartialChain",
    "Scan",
    "find_manifest",
    "listing_fingerprint",
    "scan_versions",
    "version_listing",
    "version_titles",
]


@dataclass(frozen=True)
class PartialChain:
    """The versions that resolved, top first, when a parent is missing below them."""

    versions: tuple  # tuple[Version, ...]; typed loosely so stack.py can import this module
    datasets_dir: Location
    folders: FolderMap
    missing_id: str

    @property
    def listing_dir(self) -> LocalLocation | None:
        """The datasets folder the chain's other versions are listed in; None in object storage."""
        return self.datasets_dir.as_local()


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


class Found(NamedTuple):
    """Where a version folder keeps its manifest (a tuple: thousands are made per listing)."""

    data_dir: str
    """The folder holding ``layer.json`` as given: the version folder or its ``data/``."""
    real_path: str
    """The manifest's real path."""
    stat: os.stat_result


def find_manifest(
    folder: str | os.PathLike[str], plain: bool = False, *, caches: StackCaches | None = None
) -> Found | None:
    """Where the ``layer.json`` of version folder ``folder`` is, or None for any other folder.

    The listing form of :func:`~sds_jupyter.stack.locator.is_version_folder`, in the
    same order (:func:`~sds_jupyter.stack.storage.paths.dataset_places`: ``layer.json`` at the
    folder's top wins over ``data/layer.json``), with ``lstat`` calls instead of a real-path walk. ``plain``
    says the caller knows ``folder`` is a real path with no link in it; then a
    manifest reached without links is returned without asking for its real path, and
    ``caches`` keep the hint of folders seen with ``data/layer.json``.
    """
    return _find_manifest(os.fspath(folder), plain, default_caches(caches).scans)


def _find_manifest(folder: str, plain: bool, scans: TreeScans[Any]) -> Found | None:
    inner_dir = folder + os.sep + DATA_DIR
    if plain:
        top = folder + os.sep + MANIFEST_NAME
        st: os.stat_result | None = None
        # a folder seen with data/layer.json: ask whether a top one exists without an exception
        if folder not in scans.under_data or os.access(top, os.F_OK, follow_symlinks=False):
            try:
                st = os.lstat(top)
            except FileNotFoundError:
                st = None
            except OSError:
                return _followed(folder) or _followed(inner_dir)
        if st is not None:
            if stat.S_ISREG(st.st_mode):
                return Found(folder, top, st)
        elif _plain_dir(inner_dir):
            inner = inner_dir + os.sep + MANIFEST_NAME
            st = _regular(inner)
            if st is not None:
                scans.note_under_data(folder)
                return Found(inner_dir, inner, st)
            if not os.path.lexists(inner):
                return None
    return _followed(folder) or _followed(inner_dir)


@dataclass(frozen=True)
class FoundVersion:
    """A version folder of the datasets folder and its parsed manifest."""

    dataset_id: str
    folder: str
    """The version folder's path (as listed: the datasets folder's real path, then its name)."""
    manifest_path: str
    manifest: Manifest


@dataclass(eq=False)
class Scan:
    """What a scan found: versions, and one note per folder it had to skip.

    ``derived`` is free for a caller to keep what it computed from this scan: the
    same Scan object comes back while the folder's listing and manifests are unchanged.
    """

    versions: list[FoundVersion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    signature: list = field(default_factory=list)
    derived: dict = field(default_factory=dict)
    proof: tuple[list[str], list[Identity]] | None = None
    """Paths and the identities whose ``lstat`` proves the folder still lists the same (see
    :func:`_listing_proof`); None when only a full listing can tell."""


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
        if entry.name.startswith("."):
            continue  # a writer's temporary folder (renamed into place when complete), or hidden
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
    datasets_dir: str | os.PathLike[str], folders: FolderMap | None = None, *, caches: StackCaches | None = None
) -> Scan:
    """Every version folder in ``datasets_dir``; unreadable or hostile manifests become notes.

    A folder's dataset ID is the folder map's ID for it, else its name. A manifest
    whose real path lies outside the datasets folder or its version folder (a link out)
    is skipped, as opening it would be refused. The scan is kept in ``caches`` (the
    process's when None) and returned again while the folder is proven unchanged.
    """
    caches = default_caches(caches)
    folders = folders or FolderMap()
    datasets_real = os.path.realpath(datasets_dir)
    key = (datasets_real, tuple(folders.items()))
    last: Scan | None = caches.scans.get(key)
    if last is not None and last.proof is not None and _holds(last.proof):
        return last  # proven unchanged without listing again
    began = time.time_ns()
    notes: list[str] = []
    listed = _listing(datasets_real, folders, notes, caches.scans)
    signature = _signature(listed)
    if last is not None and last.signature == signature and last.notes == notes and _all_settled(listed):
        last.proof = _listing_proof(datasets_real, folders, listed, notes, began)
        return last  # nothing was added, removed or rewritten
    ids = {name.rstrip("/"): dataset_id for dataset_id, name in folders.items()}
    scan = Scan(notes=notes, signature=signature, proof=_listing_proof(datasets_real, folders, listed, notes, began))
    for name, path, found in listed:
        try:
            manifest = caches.manifests.read(found.real_path, found.stat)
        except StackError as exc:
            scan.notes.append(f"skipped {name!r}: {exc}")
            continue
        scan.versions.append(FoundVersion(ids.get(name, name), path, found.real_path, manifest))
    # kept while the kept scans' manifests stay within their bound (the oldest dropped first)
    caches.scans.remember(key, scan, sum(found.stat.st_size for _, _, found in listed))
    return scan


def _listing_proof(
    datasets_real: str, folders: FolderMap, listed: list[tuple[str, str, Found]], notes: list[str], began_ns: int
) -> tuple[list[str], list[Identity]] | None:
    """What a warm listing checks instead of listing: one ``lstat`` per version folder, about.

    * the datasets folder: its mtime and ctime change when an entry is added, removed or renamed;
    * a version keeping ``layer.json`` at its top: that manifest (a rewrite, even in place, shows);
    * a version keeping it under ``data/``: the manifest, and the version folder (a ``layer.json``
      added at its top, or ``data/`` swapped, changes the folder's times);
    * any other folder: the folder, and its ``data/`` if there is one (a manifest added shows).

    Only for a plain folder (no folder map, no links among its entries, nothing noted) whose every stamp is
    settled since ``began_ns`` (so no change during the listing can hide); else None.
    """
    if len(folders) or notes:
        return None
    versions = {path: found for _, path, found in listed}
    try:
        checks = [(datasets_real, identity(os.lstat(datasets_real)))]
        with os.scandir(datasets_real) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue  # the listing skips these; renaming one into place changes the folder's times
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    return None
                if not stat.S_ISDIR(info.st_mode):
                    continue
                found = versions.get(entry.path)
                if found is None or found.data_dir != entry.path:
                    checks.append((entry.path, identity(info)))
                if found is not None:
                    if found.real_path != found.data_dir + os.sep + MANIFEST_NAME:
                        return None  # reached through a link: only a full listing follows it again
                    checks.append((found.real_path, identity(found.stat)))
                    continue
                inner = entry.path + os.sep + DATA_DIR
                if os.path.lexists(inner):
                    inner_info = os.lstat(inner)
                    if not stat.S_ISDIR(inner_info.st_mode):
                        return None
                    checks.append((inner, identity(inner_info)))
    except OSError:
        return None
    if not settled(*(t for _, found in checks for t in found[3:]), now_ns=began_ns):
        return None
    return [path for path, _ in checks], [found for _, found in checks]


def _holds(proof: tuple[list[str], list[Identity]]) -> bool:
    """Whether every path of a listing proof still ``lstat``-s to the identity recorded."""
    paths, expected = proof
    try:
        # map, not a comprehension: 6,700 paths for 5,000 folders, and the loop is most of the request
        return list(map(identity, map(os.lstat, paths))) == expected
    except OSError:
        return False


def version_titles(
    datasets_dir: str | os.PathLike[str], *, caches: StackCaches | None = None
) -> list[tuple[str, str | None]]:
    """``(folder name, title)`` of the version folders of ``datasets_dir``, for a file browser's listing.

    Unreadable manifests are left out, as ``scan_versions`` does; see :func:`version_listing`.
    """
    return version_listing(datasets_dir, caches=caches)[0]


def version_listing(
    datasets_dir: str | os.PathLike[str], *, caches: StackCaches | None = None
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """The version folders of ``datasets_dir`` with their titles, and the folders whose manifest is unreadable.

    Why: the listing shows a name and a title, so it reads no more: at most
    MAX_LISTED_VERSIONS folders, and only manifests up to MAX_TITLE_MANIFEST_BYTES are
    parsed (through the manifest cache of ``caches``); a larger one is listed without a title.
    A folder with a layer.json that cannot be parsed is no version, yet it is not a plain
    folder either: it comes back apart, ``(folder name, why)``, so a browser can say so.
    """
    caches = default_caches(caches)
    listed = _listing(os.path.realpath(datasets_dir), FolderMap(), [], caches.scans)
    titles: list[tuple[str, str | None]] = []
    broken: list[tuple[str, str]] = []
    for name, _, found in listed[:MAX_LISTED_VERSIONS]:
        if found.stat.st_size > MAX_TITLE_MANIFEST_BYTES:
            titles.append((name, None))
            continue
        try:
            titles.append((name, caches.manifests.read(found.real_path, found.stat).title))
        except StackError as exc:
            # the reason without the server's absolute path: the browser knows the folder
            broken.append((name, str(exc).replace(found.real_path, MANIFEST_NAME)))
    return titles, broken


def _listing(
    datasets_real: str, folders: FolderMap, notes: list[str], scans: TreeScans[Any]
) -> list[tuple[str, str, Found]]:
    """``(name, folder, where its manifest is)`` of every version folder; links out become notes."""
    listed: list[tuple[str, str, Found]] = []
    for name, path, plain in _candidates(datasets_real, folders, notes):
        found = _find_manifest(path, plain, scans)
        if found is None:
            continue
        if not plain and not is_within(found.real_path, datasets_real):
            notes.append(f"skipped {name!r}: its layer.json lies outside the datasets folder")
            continue
        # as locate_version opens it: the manifest stays inside the version folder, links included
        if found.real_path != found.data_dir + os.sep + MANIFEST_NAME and not is_within(
            found.real_path, path if plain else os.path.realpath(path)
        ):
            notes.append(f"skipped {name!r}: its layer.json lies outside its folder (a link out)")
            continue
        listed.append((name, path, found))
    return listed


def listing_fingerprint(
    datasets_dir: str | os.PathLike[str], folders: FolderMap | None = None, *, caches: StackCaches | None = None
) -> str:
    """A short hash of which version folders there are and their manifests' identity (size, times, inode).

    Cheap enough to ask every few seconds: nothing is parsed. It changes when a
    version is added, removed or rewritten. The last scan kept in ``caches`` (the
    process's when None), proven unchanged, answers without listing.
    """
    caches = default_caches(caches)
    folders = folders or FolderMap()
    datasets_real = os.path.realpath(datasets_dir)
    last: Scan | None = caches.scans.get((datasets_real, tuple(folders.items())))
    if last is not None and last.proof is not None and _holds(last.proof):
        known: str | None = last.derived.get("fingerprint")
        if known is None:  # the last scan's listing, proven unchanged: hashed once
            known = last.derived["fingerprint"] = _fingerprint(last.signature)
        return known
    return _fingerprint(_signature(_listing(datasets_real, folders, [], caches.scans)))


def _fingerprint(signature: list[tuple[str, tuple[int, ...]]]) -> str:
    return hashlib.blake2b(repr(signature).encode(), digest_size=12).hexdigest()


def _signature(listed: list[tuple[str, str, Found]]) -> list[tuple[str, tuple[int, ...]]]:
    """What identifies a listing: each version folder's name and its manifest's identity (as the cache keys it)."""
    return [(name, identity(found.stat)) for name, _, found in listed]


def _all_settled(listed: list[tuple[str, str, Found]]) -> bool:
    """Whether no manifest changed too recently for its identity to prove it unchanged."""
    return not listed or settled(*(max(f.stat.st_mtime_ns, f.stat.st_ctime_ns) for _, _, f in listed))
