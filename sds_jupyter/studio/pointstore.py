"""Points indexes kept on disk between processes, each under the identity of the element it indexes.

Why: indexing 30 million transcripts reads and sorts them all (minutes on a busy machine),
and a server restarted, a second kernel or another notebook would otherwise do it again. The
index of an element is built once per user and element, then mapped from the cache folder by
every process that asks (a few ``open`` and ``mmap`` calls).

The house rules of :mod:`sds_jupyter.stack.storage.ondisk` hold here too: the folder
(``$SDS_POINTS_CACHE``, else ``$XDG_CACHE_HOME/sds-jupyter/points``) must be this user's, no
link, closed to everyone else (0700), and nothing in it is followed through a link; an index is
opened only if its ``index.json`` names the identity asked for and every file has the size it
implies (:func:`~sds_jupyter.studio.pointindex.open_point_index`). A folder that is not so is
not used: the index is built in a private temporary folder instead and removed with it.

Publishing: an index is written in ``.build-<name>-<random>`` beside the others and renamed to
``<name>`` whole, so a reader sees a complete index or none, and a crash leaves only a build
folder that the next publish removes. Two processes building the same element take turns
on ``<name>.lock`` (``flock``): the second waits, then opens what the first published. The
indexes together stay within ``max_bytes``, the least recently used removed first (renamed
aside, then deleted: a process still reading one keeps its mappings).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from sds_jupyter.stack import cache_dir, open_private, own_regular
from sds_jupyter.studio.pointindex import (
    IndexSizes,
    PointIndex,
    build_point_index,
    open_point_index,
    removed_with,
    write_point_index,
)
from sds_jupyter.studio.pointparts import PointBatch

__all__ = ["POINTS_CACHE_BYTES", "POINTS_CACHE_ENV", "PointStore", "points_cache_dir"]

#: Where indexes are kept: a folder, or ``off`` to keep none. Unset: ``$XDG_CACHE_HOME/sds-jupyter/points``.
POINTS_CACHE_ENV = "SDS_POINTS_CACHE"
#: The bytes the kept indexes may take together (12 bytes a point: about 700 million points).
POINTS_CACHE_BYTES = 8 * 1024**3

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LOCK = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_BUILD, _TRASH, _LOCKED = ".build-", ".trash-", ".lock"
_DEFAULT_SIZES = IndexSizes()


def points_cache_dir() -> Path | None:
    """The folder indexes are kept in, or None when ``$SDS_POINTS_CACHE`` is ``off``."""
    return cache_dir(POINTS_CACHE_ENV, "points")


class PointStore:
    """Indexes kept in one private folder (``folder``, or :func:`points_cache_dir` at each use)."""

    def __init__(self, folder: str | os.PathLike[str] | None = None, max_bytes: int = POINTS_CACHE_BYTES) -> None:
        self._folder = None if folder is None else Path(os.path.abspath(folder))
        self.max_bytes = max_bytes

    @property
    def folder(self) -> Path | None:
        return self._folder if self._folder is not None else points_cache_dir()

    @staticmethod
    def name_of(identity: str) -> str:
        """An index's folder name: a digest of its identity (the identity itself is kept inside and compared)."""
        return hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

    def kept(self, identity: str, sizes: IndexSizes = _DEFAULT_SIZES) -> PointIndex | None:
        """The index of ``identity`` if it is kept whole now, else None: never builds, never waits for a build.

        Why: the view asks whether an index is ready without joining a build another process
        (or this one, in the background) has under way; only a published folder is opened.
        """
        identity = f"{identity}\n{sizes}"
        folder = self.folder
        dir_fd = None if folder is None else open_private(folder, create=True)
        if folder is None or dir_fd is None:
            return None
        try:
            return _open_kept(dir_fd, folder, self.name_of(identity), identity)
        finally:
            os.close(dir_fd)

    def get(
        self, identity: str, batches: Callable[[], Iterable[PointBatch]], sizes: IndexSizes = _DEFAULT_SIZES
    ) -> PointIndex:
        """The index of the element ``identity`` names: opened if kept, else built from ``batches()`` and kept.

        ``PointIndex.built`` says which. Without a usable folder it is built privately and
        removed when dropped.
        """
        identity = f"{identity}\n{sizes}"
        folder = self.folder
        dir_fd = None if folder is None else open_private(folder, create=True)
        if folder is None or dir_fd is None:
            return _built(build_point_index(batches(), sizes=sizes))
        try:
            name = self.name_of(identity)
            kept = _open_kept(dir_fd, folder, name, identity)
            if kept is not None:
                return kept
            with _locked(dir_fd, name + _LOCKED):
                kept = _open_kept(dir_fd, folder, name, identity)  # built by another process while we waited
                if kept is not None:
                    return kept
                return self._build(dir_fd, folder, name, identity, batches, sizes)
        finally:
            os.close(dir_fd)

    def _build(
        self,
        dir_fd: int,
        folder: Path,
        name: str,
        identity: str,
        batches: Callable[[], Iterable[PointBatch]],
        sizes: IndexSizes,
    ) -> PointIndex:
        """Build in a fresh ``.build-`` folder, then rename it to ``name`` (held: the name's lock).

        Build folders of ``name`` left by a process killed midway are removed first: holding the
        name's lock, no other build of it is under way.
        """
        with os.scandir(dir_fd) as entries:
            dead = [e.name for e in entries if e.name.startswith(f"{_BUILD}{name}-")]
        for entry in dead:
            _remove(dir_fd, entry)
        building = f"{_BUILD}{name}-{uuid.uuid4().hex}"
        os.mkdir(building, 0o700, dir_fd=dir_fd)
        try:
            write_point_index(batches(), folder / building, identity, sizes)
        except BaseException:
            _remove(dir_fd, building)
            raise
        if _folder_bytes(dir_fd, building) <= self.max_bytes:
            _remove(dir_fd, name)  # whatever stood there did not open as this index: a link, a stale or broken one
            try:
                os.rename(building, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except OSError:
                pass
            else:
                self._prune(dir_fd, keep=name)
                index = _open_kept(dir_fd, folder, name, identity)
                if index is not None:
                    return _built(index)
        # too large to keep, or not publishable: served from the build folder, removed when dropped
        index = _open_kept(dir_fd, folder, building, identity)
        if index is None:
            _remove(dir_fd, building)
            raise OSError(f"the points index built in {folder / building} does not read back")
        return _built(removed_with(index))

    def _prune(self, dir_fd: int, keep: str) -> None:
        """Remove leftovers of crashed builds, then the least recently used indexes while over ``max_bytes``."""
        kept: list[tuple[int, int, str]] = []
        with os.scandir(dir_fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for entry, is_dir in names:
            if entry.startswith(_TRASH) or (entry.startswith(_BUILD) and not _held(dir_fd, _lock_of(entry))):
                _remove(dir_fd, entry)
            elif entry.endswith(_LOCKED) and not entry.startswith(".") and entry[: -len(_LOCKED)] not in dict(names):
                _drop_lock(dir_fd, entry)
            elif is_dir and not entry.startswith("."):
                try:
                    used = os.stat(entry, dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns
                except OSError:
                    continue
                kept.append((used, _folder_bytes(dir_fd, entry), entry))
        total = sum(size for _, size, _ in kept)
        for _, size, entry in sorted(kept):
            if total <= self.max_bytes:
                break
            if entry != keep:
                _remove(dir_fd, entry)
                total -= size


def _lock_of(building: str) -> str:
    """The lock file of build folder ``.build-<name>-<random>``."""
    return building[len(_BUILD) :].rsplit("-", 1)[0] + _LOCKED


def _built(index: PointIndex) -> PointIndex:
    index.built = True
    return index


def _open_kept(dir_fd: int, folder: Path, name: str, identity: str) -> PointIndex | None:
    """Index folder ``name`` if it is a private folder of this user holding ``identity``'s index; marks it used."""
    try:
        fd = os.open(name, _DIR, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        index = open_point_index(fd, folder / name, identity)
        if index is not None:
            os.utime(fd)  # its last use, for the eviction's order
        return index
    except OSError:
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(dir_fd: int, name: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on lock file ``name`` (made if missing; a lock file replaced meanwhile is taken again)."""
    while True:
        fd = os.open(name, _LOCK, 0o600, dir_fd=dir_fd)
        try:
            info = os.fstat(fd)
            if not own_regular(info):
                raise OSError(f"the points cache's lock {name} is not this user's file")
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _held(dir_fd: int, name: str) -> bool:
    """Whether some process holds lock file ``name`` now (a build under way)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _drop_lock(dir_fd: int, name: str) -> None:
    """Unlink lock file ``name`` if no process holds it (taken while unlinking: a waiter then takes the new one)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _folder_bytes(dir_fd: int, name: str) -> int:
    """The bytes of the files directly in folder ``name`` (not following links)."""
    try:
        fd = os.open(name, _DIR, dir_fd=dir_fd)
    except OSError:
        return 0
    try:
        with os.scandir(fd) as entries:
            return sum(e.stat(follow_symlinks=False).st_size for e in entries if e.is_file(follow_symlinks=False))
    finally:
        os.close(fd)


def _remove(dir_fd: int, name: str) -> None:
    """Remove entry ``name``: a link or file unlinked (never followed), a folder renamed aside then deleted."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        return
    trash = f"{_TRASH}{uuid.uuid4().hex}"
    try:
        os.rename(name, trash, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        return
    shutil.rmtree(trash, dir_fd=dir_fd, ignore_errors=True)
