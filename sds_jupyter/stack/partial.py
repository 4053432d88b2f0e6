"""The hidden folders a commit or a flatten writes into before renaming them into place.

A run that is killed (SIGKILL, a crash, a power cut) cannot remove its folder,
``.<name>.partial-<8 hex>``. Beside each one, before the folder exists, the run
writes ``.<name>.partial-<8 hex>.owner``: its host, process ID and the process's
start time. The next commit or flatten into the same folder removes every
partial folder whose owner file names this host and a process that is no longer
running (or whose ID now belongs to a later process), when this user owns both.
Anything else (another host's, a live run's, a folder with no owner file) is left
alone. The owner file sits beside the folder rather than in it, so nothing of it
ends up in a version or a flattened store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import uuid
from pathlib import Path

from sds_jupyter.errors import StackError
from sds_jupyter.stack.paths import open_regular_file

__all__ = ["new_partial", "release_partial", "remove_stale_partials"]

_OWNER = ".owner"
_OWNER_NAME = re.compile(r"\..+\.partial-[0-9a-f]{8}\.owner")
_MAX_OWNER_BYTES = 4096


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), or None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return None


# Read once, on import: a commit or flatten then opens nothing outside its own folders.
_OWN_START: tuple[int, str | None] = (os.getpid(), _start_time(os.getpid()))


def _own_start_time() -> str | None:
    global _OWN_START
    if _OWN_START[0] != os.getpid():  # a forked child is another process
        _OWN_START = (os.getpid(), _start_time(os.getpid()))
    return _OWN_START[1]


def _running(pid: int, started: str | None) -> bool:
    """Whether the process that wrote an owner file still runs (not merely its reused ID)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process has the ID: leave its folder alone
    except (OverflowError, ValueError):
        return False
    now = _start_time(pid)
    return started is None or now is None or now == started


def new_partial(parent: Path, name: str) -> Path:
    """Clear stale partial folders in ``parent``, then claim a new one for ``name`` and return it."""
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(parent)
    tmp = parent / f".{name}.partial-{uuid.uuid4().hex[:8]}"
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": _own_start_time()}
    with open(_owner_of(tmp), "x", encoding="utf-8") as handle:
        handle.write(json.dumps(owner))
    tmp.mkdir()
    return tmp


def release_partial(tmp: Path) -> None:
    """Forget a partial folder once it was renamed into place or removed."""
    try:
        os.unlink(_owner_of(tmp))
    except FileNotFoundError:
        pass


def _owner_of(tmp: Path) -> Path:
    return tmp.with_name(tmp.name + _OWNER)


def remove_stale_partials(parent: Path) -> list[Path]:
    """Remove this user's partial folders in ``parent`` left by runs that died; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not _OWNER_NAME.fullmatch(entry.name):
            continue
        tmp = Path(entry.path[: -len(_OWNER)])
        if _stale(Path(entry.path)):
            _remove_folder(tmp)
            release_partial(tmp)
            removed.append(tmp)
    return removed


def _stale(owner_file: Path) -> bool:
    try:
        info = os.lstat(owner_file)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_size > _MAX_OWNER_BYTES:
            return False
        with open_regular_file(owner_file, "partial owner file") as handle:
            owner = json.loads(handle.read(_MAX_OWNER_BYTES))
    except (OSError, ValueError, StackError):
        return False
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    pid, started = owner.get("pid"), owner.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    return not _running(pid, started if isinstance(started, str) else None)


def _remove_folder(tmp: Path) -> None:
    try:
        info = os.lstat(tmp)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
        shutil.rmtree(tmp, ignore_errors=True)  # rmtree never follows links out of it
