"""The hidden folders a commit or a flatten writes into before renaming them into place.

A run that is killed (SIGKILL, a crash, a power cut) cannot remove its folder,
``.<name>.partial-<8 hex>``. Beside it, before the folder exists, the run creates
``.<name>.partial-<8 hex>.owner`` and holds an exclusive ``flock`` on it for as
long as it writes. The kernel drops that lock when the run's process ends, however
it ends, and a lock is seen from every process on the machine whatever its PID
namespace (another container on the same shared folder), which a host name and a
process ID are not. The next commit or flatten into the same folder removes a
partial folder only when it can take that lock itself, so a live run's folder is
never touched. Owner files written before this rule (no lock recorded) count as
dead only when older than :data:`LEGACY_AGE_SECONDS`, far beyond any save. The
owner file sits beside the folder rather than in it, so nothing of it ends up in a
version or a flattened store.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import stat
import time
import uuid
from pathlib import Path

__all__ = ["LEGACY_AGE_SECONDS", "new_partial", "release_partial", "remove_stale_partials"]

_OWNER = ".owner"
_OWNER_NAME = re.compile(r"\..+\.partial-[0-9a-f]{8}\.owner")
_MAX_OWNER_BYTES = 4096
#: What an owner file says when its run holds a lock on it (older ones hold none).
_LOCK_KIND = "flock"
#: An owner file without a lock is left alone until it is this old (two days).
LEGACY_AGE_SECONDS = 2 * 24 * 3600

#: The open, locked owner file of each partial folder this process is writing.
_HELD: dict[Path, int] = {}


def new_partial(parent: Path, name: str) -> Path:
    """Clear stale partial folders in ``parent``, then claim a new one for ``name`` and return it.

    The claim (a locked owner file) lasts until :func:`release_partial` or the end of the process.
    """
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(parent)
    tmp = parent / f".{name}.partial-{uuid.uuid4().hex[:8]}"
    _HELD[tmp] = _claim(_owner_of(tmp))
    try:
        tmp.mkdir()
    except BaseException:
        release_partial(tmp)
        raise
    return tmp


def _claim(owner_file: Path) -> int:
    """Create ``owner_file``, lock it, then say what holds the lock; returns the open descriptor."""
    fd = os.open(owner_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # Written under the lock: a cleaner that reads this and gets the lock knows the run is gone.
        owner = {"lock": _LOCK_KIND, "host": socket.gethostname(), "pid": os.getpid()}
        os.write(fd, json.dumps(owner).encode())
    except BaseException:
        os.close(fd)
        os.unlink(owner_file)
        raise
    return fd


def release_partial(tmp: Path) -> None:
    """Forget a partial folder once it was renamed into place or removed: its owner file goes, then its lock."""
    try:
        os.unlink(_owner_of(tmp))
    except FileNotFoundError:
        pass
    fd = _HELD.pop(tmp, None)
    if fd is not None:
        os.close(fd)


def _owner_of(tmp: Path) -> Path:
    return tmp.with_name(tmp.name + _OWNER)


def remove_stale_partials(parent: Path) -> list[Path]:
    """Remove this user's partial folders in ``parent`` whose runs have ended; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        # the suffix first: a datasets folder of 500 versions is 500 names the pattern need not try
        if not entry.name.endswith(_OWNER) or not _OWNER_NAME.fullmatch(entry.name):
            continue
        owner_file = Path(entry.path)
        tmp = owner_file.with_name(entry.name[: -len(_OWNER)])
        if tmp in _HELD:
            continue  # this process's own live run
        if _remove_if_dead(owner_file, tmp):
            removed.append(tmp)
    return removed


def _remove_if_dead(owner_file: Path, tmp: Path) -> bool:
    """Take the owner's lock without waiting; holding it, remove the folder and the owner file."""
    try:
        fd = os.open(owner_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_size > _MAX_OWNER_BYTES:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live run holds it
        if not _run_has_ended(fd, info) or not _same_file(owner_file, info):
            return False
        _remove_folder(tmp)
        os.unlink(owner_file)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _run_has_ended(fd: int, info: os.stat_result) -> bool:
    """With the lock taken: whether the owner file says its run held the lock, or is a very old one."""
    try:
        owner = json.loads(os.read(fd, _MAX_OWNER_BYTES))
    except ValueError:
        return False  # not written yet (the run locks before it writes) or not ours
    if not isinstance(owner, dict):
        return False
    if owner.get("lock") == _LOCK_KIND:
        return True
    return time.time() - info.st_mtime > LEGACY_AGE_SECONDS


def _same_file(path: Path, info: os.stat_result) -> bool:
    """Whether ``path`` still names the file that was locked (not a new one of the same name)."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


def _remove_folder(tmp: Path) -> None:
    try:
        info = os.lstat(tmp)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
        shutil.rmtree(tmp, ignore_errors=True)  # rmtree never follows links out of it
