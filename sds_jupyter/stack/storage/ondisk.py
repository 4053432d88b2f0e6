"""Resolved stacks kept on disk between processes: a new process opens a stack proven before without a walk.

Why: a cold open of a deep stack reads and checks every manifest, each naming the next
(500 opens, reads and parses for a 500-deep stack), while a reopen in the same process
only proves what the walk read unchanged (an ``lstat`` each). A record on disk lets a new
process, or one whose caches were emptied, do the second instead of the first.

This module only keeps records, JSON documents the resolve writes and reads
(:mod:`sds_jupyter.stack.stack` says what is in one): where they live, who may have
written them, how many, and never through a link. Freshness is not taken from here:
every record carries the proofs of its walk and is used only while they hold, as the
in-memory cache of resolved stacks is.

Trust: a record is believed without checking its manifests again (that is the saving),
so it must have been written by this user. The folder must be the user's own, no link,
and closed to everyone else (mode 0700), and each record the user's own regular file,
opened through the folder's descriptor refusing links. A folder that is not so is not
used: nothing is read from it or written to it. That is also why records are never
shared between users: a record another user could write could hand this one a manifest
that never passed the checks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "RECORDS_BYTES",
    "STACK_CACHE_ENV",
    "DiskStacks",
    "cache_dir",
    "map_private_array",
    "open_private",
    "own_regular",
    "read_private_json",
    "stack_cache_dir",
]

#: Where records are kept: a folder, or ``off`` to keep none. Unset: ``$XDG_CACHE_HOME/sds-jupyter/stacks``.
STACK_CACHE_ENV = "SDS_STACK_CACHE"
#: A record larger than this is neither written nor read (a 500-deep stack's is about 0.5 MiB).
MAX_RECORD_BYTES = 8 * 1024 * 1024
#: Records kept at most, and their bytes together; the least recently written go first.
MAX_RECORDS = 256
RECORDS_BYTES = 64 * 1024 * 1024

_SUFFIX = ".json"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def cache_dir(env: str, leaf: str) -> Path | None:
    """A per-user cache folder: ``$env`` if set (``off`` for none), else ``$XDG_CACHE_HOME/sds-jupyter/leaf``.

    Why one rule: every cache the package keeps on disk (resolved stacks, points indexes)
    lives beside the others and is switched off the same way.
    """
    configured = os.environ.get(env)
    if configured is not None and configured.strip().lower() in ("off", "0", "no", "false"):
        return None
    if configured:
        return Path(os.path.abspath(os.path.expanduser(configured)))
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.path.abspath(cache)) / "sds-jupyter" / leaf


def stack_cache_dir() -> Path | None:
    """The folder records are kept in (``$SDS_STACK_CACHE``, else the user's cache folder), or None when off."""
    return cache_dir(STACK_CACHE_ENV, "stacks")


class DiskStacks:
    """Records of resolved stacks in one private folder (``folder``, or :func:`stack_cache_dir` at each use).

    ``load`` and ``save`` never raise for a folder or record that is missing, foreign,
    unreadable or full: a cache that cannot help just does not.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self._folder = None if folder is None else Path(os.path.abspath(folder))

    @property
    def folder(self) -> Path | None:
        return self._folder if self._folder is not None else stack_cache_dir()

    @staticmethod
    def name_of(key: str) -> str:
        """A record's file name: a digest of its key (the key itself is kept inside and compared)."""
        return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest() + _SUFFIX

    def load(self, key: str) -> dict[str, Any] | None:
        """The record kept under ``key``, or None (none, foreign, too large, or not this key's)."""
        folder = self.folder
        if folder is None:
            return None
        dir_fd = open_private(folder, create=False)
        if dir_fd is None:
            return None
        try:
            record = read_private_json(dir_fd, self.name_of(key), MAX_RECORD_BYTES)
        finally:
            os.close(dir_fd)
        return record if record is not None and record.get("key") == key else None

    def save(self, key: str, record: dict[str, Any]) -> bool:
        """Keep ``record`` (JSON, ``key`` added) under ``key``, replacing any; whether it was kept.

        Written to a new file renamed into place, so a reader sees the old record or the
        new one, never half of one; then the oldest records go while there are too many.
        """
        folder = self.folder
        if folder is None:
            return False
        # No check for cycles: a record is made of lists, tuples and dicts built for it or decoded from
        # JSON, which hold none; the check keeps every container's id, 0.4 of the 2.6 ms of CPU that
        # encoding a 500-deep stack's record took (which a first open ever pays; issue 42).
        data = json.dumps(
            {**record, "key": key}, separators=(",", ":"), ensure_ascii=False, check_circular=False
        ).encode("utf-8", "surrogatepass")
        if len(data) > MAX_RECORD_BYTES:
            return False
        dir_fd = open_private(folder, create=True)
        if dir_fd is None:
            return False
        tmp = f".{uuid.uuid4().hex}.tmp"
        try:
            fd = os.open(tmp, _WRITE_FLAGS, 0o600, dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb", closefd=False) as handle:
                    handle.write(data)
            finally:
                os.close(fd)
            os.replace(tmp, self.name_of(key), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            _prune(dir_fd)
            return True
        except OSError:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            return False
        finally:
            os.close(dir_fd)

    def clear(self) -> None:
        """Remove every record (the folder stays)."""
        folder = self.folder
        dir_fd = None if folder is None else open_private(folder, create=False)
        if dir_fd is None:
            return
        try:
            for name in os.listdir(dir_fd):
                if name.endswith(_SUFFIX):
                    try:
                        os.unlink(name, dir_fd=dir_fd)
                    except OSError:
                        pass
        finally:
            os.close(dir_fd)


def own_regular(info: os.stat_result) -> bool:
    """Whether ``info`` is a regular file of this user (not a link, device or someone else's)."""
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()


def open_private(folder: Path, *, create: bool) -> int | None:
    """A descriptor of ``folder`` if it is this user's, no link, and closed to others; made so when ``create``."""
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            return None
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
        return open_private(folder, create=False)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def _prune(dir_fd: int) -> None:
    """Drop the least recently written records while there are more than MAX_RECORDS or RECORDS_BYTES."""
    records = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            if entry.name.endswith(_SUFFIX):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                records.append((info.st_mtime_ns, info.st_size, entry.name))
    total = sum(size for _, size, _ in records)
    if len(records) <= MAX_RECORDS and total <= RECORDS_BYTES:
        return
    records.sort()
    count = len(records)
    for _, size, name in records:
        if count <= MAX_RECORDS and total <= RECORDS_BYTES:
            break
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
        count -= 1
        total -= size


@contextlib.contextmanager
def _open_own(dir_fd: int, name: str, fits: Callable[[int], bool]) -> Iterator[tuple[int, int] | None]:
    """File ``name`` of the private folder ``dir_fd`` as ``(descriptor, size)``, or None.

    Why one opener: everything kept on disk is opened the same guarded way: no link followed,
    this user's regular file only, and its size judged by ``fits`` before a byte is read.
    Anything else reads as absent, so the caller rebuilds instead of failing.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        yield None
        return
    try:
        try:
            info = os.fstat(fd)
        except OSError:
            info = None
        yield (fd, info.st_size) if info is not None and own_regular(info) and fits(info.st_size) else None
    finally:
        os.close(fd)


def read_private_json(dir_fd: int, name: str, max_bytes: int) -> dict[str, Any] | None:
    """The JSON object in file ``name`` of the private folder ``dir_fd`` (at most ``max_bytes``), else None.

    Every record kept on disk (stack records, points indexes' metadata) is read this way.
    """
    with _open_own(dir_fd, name, lambda size: size <= max_bytes) as opened:
        if opened is None:
            return None
        fd, size = opened
        try:
            raw = os.pread(fd, size + 1, 0)
        except OSError:
            return None
    try:
        value = json.loads(raw.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def map_private_array(dir_fd: int, name: str, dtype: str, n: int) -> np.ndarray | None:
    """File ``name`` of the private folder ``dir_fd`` as ``n`` values of ``dtype``, mapped read-only; else None.

    Arrays kept on disk (points indexes, cell geometry) are opened as records are
    (:func:`_open_own`), and only a file of exactly the size ``n`` values take is mapped.
    The mapping outlives the descriptor and the file's name: an eviction unlinks it, readers keep reading.
    """
    nbytes = n * np.dtype(dtype).itemsize
    with _open_own(dir_fd, name, lambda size: size == nbytes) as opened:
        if opened is None:
            return None
        if n == 0:
            return np.zeros(0, dtype=dtype)
        try:
            return np.frombuffer(mmap.mmap(opened[0], nbytes, access=mmap.ACCESS_READ), dtype=dtype)
        except (OSError, ValueError):
            return None
