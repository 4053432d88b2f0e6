"""Derived data kept on disk between processes: one folder per entry, named by the identity it was built from.

Why one module: points indexes (:mod:`~sds_jupyter.studio.pointstore`) and cell geometry
(:mod:`~sds_jupyter.studio.keptarrays`) are both costly to derive, never change for the stored
objects they come from, and are asked again by every new server or kernel. Both keep them the
same way, under the house rules of :mod:`sds_jupyter.stack.storage.ondisk`:

- The cache folder must be this user's, no link, closed to everyone else (0700); nothing in it
  is followed through a link. A folder that is not so is not used: the entry is built without
  it (privately) and nothing is written there.
- An entry is opened only by the caller's ``opener``, which checks that it names the identity
  asked for and that every file has the size its header implies; anything else is rebuilt.
- Publishing: an entry is written in ``.build-<name>-<random>`` beside the others and renamed to
  ``<name>`` whole, so a reader sees a complete entry or none, and a crash leaves only a build
  folder that the next build (of any entry) removes before it writes. Two processes building the same entry take turns on
  ``<name>.lock`` (``flock``): the second waits, then opens what the first published.
- The entries together stay within ``max_bytes``, the least recently used removed first (renamed
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from sds_jupyter.stack import open_private, own_regular

__all__ = ["FolderTurn", "KeptFolders", "Opener", "name_of"]

T = TypeVar("T")

#: Opens the entry in the folder open as ``dir_fd`` (its path, the identity asked), or None if it is not that whole entry.
Opener = Callable[[int, Path, str], "T | None"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LOCK = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_BUILD, _TRASH, _LOCKED = ".build-", ".trash-", ".lock"


def name_of(identity: str) -> str:
    """An entry's folder name: a digest of its identity (the identity itself is kept inside and compared)."""
    return hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class FolderTurn(Generic[T]):
    """What :meth:`KeptFolders.turn` hands its owner: the entry found (or None) and how to keep a new one."""

    def __init__(self, found: T | None, publish: Callable[[Callable[[Path], None], Callable[[T, Path], T]], T] | None):
        self.found = found
        #: ``publish(write, unkept)``: ``write`` fills a fresh build folder, which is renamed into place and
        #: opened (or, too large to keep, opened where it is and handed to ``unkept``). None: nothing is kept.
        self.publish = publish


class KeptFolders(Generic[T]):
    """Entries kept in one private folder (``folder()`` at each use; None: keep none), at most ``max_bytes``."""

    def __init__(self, folder: Callable[[], Path | None], max_bytes: int, what: str) -> None:
        self._folder = folder
        self.max_bytes = max_bytes
        self.what = what

    @property
    def folder(self) -> Path | None:
        return self._folder()

    def kept(self, identity: str, opener: Opener[T]) -> T | None:
        """The entry of ``identity`` if it is kept whole now, else None: never builds, never waits for a build."""
        folder = self.folder
        dir_fd = None if folder is None else open_private(folder, create=True)
        if folder is None or dir_fd is None:
            return None
        try:
            return _open_kept(dir_fd, folder, name_of(identity), identity, opener)
        finally:
            os.close(dir_fd)

    def get(
        self,
        identity: str,
        opener: Opener[T],
        write: Callable[[Path], None],
        private: Callable[[], T],
        unkept: Callable[[T, Path], T],
    ) -> tuple[T, bool]:
        """The entry of ``identity`` and whether it was built now: opened if kept, else written by ``write`` and kept.

        ``write(folder)`` fills an empty folder of this user's that ``opener`` then opens. Without
        a usable cache folder, ``private()`` is returned (built in memory or a private folder). An
        entry too large to keep, or one that cannot be published, is opened from its build folder
        and handed to ``unkept(entry, build folder)``, which removes that folder when it may.
        """
        folder = self.folder
        dir_fd = None if folder is None else open_private(folder, create=True)
        if folder is None or dir_fd is None:
            return private(), True
        try:
            name = name_of(identity)
            kept = _open_kept(dir_fd, folder, name, identity, opener)
            if kept is not None:
                return kept, False
            with _locked(dir_fd, name + _LOCKED, self.what):
                kept = _open_kept(dir_fd, folder, name, identity, opener)  # built by another process while we waited
                if kept is not None:
                    return kept, False
                return self._build(dir_fd, folder, name, identity, opener, write, unkept), True
        finally:
            os.close(dir_fd)

    @contextlib.contextmanager
    def turn(self, identity: str, opener: Opener[T]) -> Iterator[FolderTurn[T]]:
        """A turn at ``identity``, held under its lock: ``turn.found`` is the kept entry or None, ``turn.publish`` keeps a new one.

        Why a turn rather than callbacks: the owner checks what was found and makes what is
        missing in its own frame, between the two, so the cache never calls back into its owner
        (as ``ByteLRU.claim`` does in memory). One process builds an identity at a time: the
        others wait at the lock, then find what it kept. Without a usable cache folder, or when
        the lock cannot be taken, the turn finds nothing and keeps nothing (``publish`` is None).
        """
        held = self._held_turn(identity)
        if held is None:
            yield FolderTurn(None, None)
            return
        stack, dir_fd, folder, name = held
        with stack:
            found = _open_kept(dir_fd, folder, name, identity, opener)

            def publish(write: Callable[[Path], None], unkept: Callable[[T, Path], T]) -> T:
                return self._build(dir_fd, folder, name, identity, opener, write, unkept)

            yield FolderTurn(found, publish)

    def _held_turn(self, identity: str) -> tuple[contextlib.ExitStack, int, Path, str] | None:
        """The cache folder open and ``identity``'s lock held (closed and released by the stack), or None."""
        folder = self.folder
        dir_fd = None if folder is None else open_private(folder, create=True)
        if folder is None or dir_fd is None:
            return None
        stack = contextlib.ExitStack()
        stack.callback(os.close, dir_fd)
        name = name_of(identity)
        try:
            stack.enter_context(_locked(dir_fd, name + _LOCKED, self.what))
        except OSError:
            stack.close()
            return None
        return stack, dir_fd, folder, name

    def _build(
        self,
        dir_fd: int,
        folder: Path,
        name: str,
        identity: str,
        opener: Opener[T],
        write: Callable[[Path], None],
        unkept: Callable[[T, Path], T],
    ) -> T:
        """Build in a fresh ``.build-`` folder, then rename it to ``name`` (held: the name's lock).

        What processes killed midway left is removed first, so a disk they filled has room again:
        build folders of ``name`` (holding the name's lock, no other build of it is under way), and
        those of other names whose lock nobody holds.
        """
        _sweep(dir_fd, name)
        building = f"{_BUILD}{name}-{uuid.uuid4().hex}"
        os.mkdir(building, 0o700, dir_fd=dir_fd)
        try:
            write(folder / building)
        except BaseException:
            _remove(dir_fd, building)
            raise
        if _folder_bytes(dir_fd, building) <= self.max_bytes:
            _remove(dir_fd, name)  # whatever stood there did not open as this entry: a link, a stale or broken one
            try:
                os.rename(building, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except OSError:
                pass
            else:
                self._prune(dir_fd, keep=name)
                entry = _open_kept(dir_fd, folder, name, identity, opener)
                if entry is not None:
                    return entry
        # too large to keep, or not publishable: served from the build folder, removed by ``unkept``
        entry = _open_kept(dir_fd, folder, building, identity, opener)
        if entry is None:
            _remove(dir_fd, building)
            raise OSError(f"the {self.what} built in {folder / building} does not read back")
        return unkept(entry, folder / building)

    def _prune(self, dir_fd: int, keep: str) -> None:
        """Remove locks left without an entry, then the least recently used entries while over ``max_bytes``.

        (What crashed builds left was swept before this build: :func:`_sweep`.)
        """
        kept: list[tuple[int, int, str]] = []
        with os.scandir(dir_fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for entry, is_dir in names:
            if entry.endswith(_LOCKED) and not entry.startswith(".") and entry[: -len(_LOCKED)] not in dict(names):
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


def _sweep(dir_fd: int, held_name: str = "") -> None:
    """Remove what killed processes left: ``.trash-`` folders, and ``.build-`` folders no build holds.

    ``held_name``: an entry whose lock this process holds, so its build folders are dead (a
    second ``flock`` of that lock from here would fail as if another process held it).
    """
    with os.scandir(dir_fd) as entries:
        names = [entry.name for entry in entries if entry.name.startswith((_TRASH, _BUILD))]
    for entry in names:
        ours = bool(held_name) and entry.startswith(f"{_BUILD}{held_name}-")
        if entry.startswith(_TRASH) or ours or (entry.startswith(_BUILD) and not _held(dir_fd, _lock_of(entry))):
            _remove(dir_fd, entry)


def _lock_of(building: str) -> str:
    """The lock file of build folder ``.build-<name>-<random>``."""
    return building[len(_BUILD) :].rsplit("-", 1)[0] + _LOCKED


def _open_kept(dir_fd: int, folder: Path, name: str, identity: str, opener: Opener[T]) -> T | None:
    """Entry folder ``name`` if it is a private folder of this user holding ``identity``'s entry; marks it used."""
    try:
        fd = os.open(name, _DIR, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        entry = opener(fd, folder / name, identity)
        if entry is not None:
            with contextlib.suppress(OSError):  # a read-only folder still serves what it holds
                os.utime(fd)  # its last use, for the eviction's order
        return entry
    except OSError:
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(dir_fd: int, name: str, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on lock file ``name`` (made if missing; a lock file replaced meanwhile is taken again)."""
    while True:
        fd = os.open(name, _LOCK, 0o600, dir_fd=dir_fd)
        try:
            info = os.fstat(fd)
            if not own_regular(info):
                raise OSError(f"the {what} cache's lock {name} is not this user's file")
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
