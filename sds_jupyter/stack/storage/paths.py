"""Path rules for anything a manifest names.

Manifests arrive with downloaded data, so every key, overlay folder, reference
path and zip member name is checked here, in one place, before it is joined to
a folder. Containment is checked again on the real path when a file is opened,
so a symbolic link cannot lead a read out of the folder it belongs to.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from sds_jupyter.errors import SpecialFileError, UnsafePathError

__all__ = [
    "DATA_DIR",
    "MANIFEST_NAME",
    "PLAIN_RELATIVE",
    "ancestors",
    "check_dataset_id",
    "check_relative_path",
    "check_whiteout",
    "contained_path",
    "contained_real",
    "dataset_places",
    "is_within",
    "linkless_opens",
    "open_linkless",
    "open_regular_fd",
    "open_regular_file",
]

_DATASET_ID = re.compile(r"[A-Za-z0-9-]+")
#: The whole relative-path rule as one compiled pattern: one or more segments joined by ``/``,
#: none empty, ``.`` or ``..``, no backslash or NUL anywhere. A manifest of a million keys is
#: checked at the regex engine's speed; the slow path below only words the refusal.
_SEGMENT = r"(?!\.\.?(?:/|\Z))[^/\\\x00]+"
PLAIN_RELATIVE = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")

#: The folder inside a dataset folder that a Cirro download keeps the dataset's files in.
DATA_DIR = "data"
#: The file that makes a folder a version: its manifest. Here, at the bottom, because both the
#: manifest parser and the reference parser (a reference naming it points at a version) name it.
MANIFEST_NAME = "layer.json"


def dataset_places(relative: str = "") -> tuple[str, str]:
    """Where ``relative`` (a path inside a dataset) is looked for, in this order: at the dataset
    folder's top, then under ``data/``. With no ``relative``: the folder itself, then ``data``.

    Why one function: a dataset may be laid out either way (a folder made by hand, or one
    Cirro downloaded), and the first place that holds it wins everywhere the format is read.
    """
    return (relative, f"{DATA_DIR}/{relative}" if relative else DATA_DIR)


def check_relative_path(value: object, what: str) -> str:
    """Return ``value`` if it is a safe relative POSIX path, else raise.

    Safe means: a non-empty string, not absolute, no empty, ``.`` or ``..``
    segment, no backslash and no NUL. ``what`` names the field for the message.
    """
    if isinstance(value, str) and PLAIN_RELATIVE.fullmatch(value) is not None:
        return value
    if not isinstance(value, str):
        raise UnsafePathError(f"{what} must be a string, got {type(value).__name__}")
    if value == "":
        raise UnsafePathError(f"{what} is empty; it must be a relative path")
    if "\\" in value or "\x00" in value:
        raise UnsafePathError(f"{what} {value!r} holds a backslash or NUL; use '/'-separated relative paths")
    for segment in value.split("/"):
        if segment in ("", ".", ".."):
            raise UnsafePathError(
                f"{what} {value!r} is not a plain relative path (it is absolute or has an empty, '.' or '..' segment)"
            )
    raise UnsafePathError(
        f"{what} {value!r} is not a plain relative path"
    )  # pragma: no cover - the pattern and the loop agree


def check_whiteout(value: object) -> str:
    """Check a ``deleted`` entry: a key, or a node prefix ending in one ``/``."""
    if isinstance(value, str) and value.endswith("/"):
        check_relative_path(value[:-1], "deleted entry")
        return value
    return check_relative_path(value, "deleted entry")


def check_dataset_id(value: object) -> str:
    """Dataset IDs name folders, so only letters, digits and hyphens pass."""
    if not isinstance(value, str) or not _DATASET_ID.fullmatch(value):
        raise UnsafePathError(f"dataset ID {value!r} may hold only letters, digits and hyphens")
    return value


def ancestors(key: str) -> Iterator[str]:
    """The nodes a key sits in: ``a`` and ``a/b`` for ``a/b/c``."""
    index = key.find("/")
    while index != -1:
        yield key[:index]
        index = key.find("/", index + 1)


def is_within(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``root`` or below it, both taken as given (no resolving)."""
    path_s, root_s = os.fspath(path), os.fspath(root)
    return path_s == root_s or path_s.startswith(root_s.rstrip(os.sep) + os.sep)


def _plain_below(root: str, relative: str, seen: list[os.stat_result] | None = None) -> bool:
    """Whether no segment of ``relative`` under ``root`` is a link (or a dot segment).

    ``seen``, when given, receives the ``lstat`` of the last segment (when it exists and
    is no link), so a caller that needs it does not ask the disk again.
    """
    probe = root
    info = None
    for segment in relative.split("/"):
        if segment in ("", ".", ".."):
            return False
        probe = f"{probe}/{segment}" if probe != "/" else f"/{segment}"
        try:
            info = os.lstat(probe)
        except OSError:
            return True  # nothing exists from here on, so nothing can lead elsewhere
        if stat.S_ISLNK(info.st_mode):
            return False
    if seen is not None and info is not None:
        seen.append(info)
    return True


def contained_real(root_real: str, relative: str, what: str, seen: list[os.stat_result] | None = None) -> str:
    """The real path of ``relative`` under the resolved folder ``root_real``; refuse if it escapes.

    This is the one containment rule on a local disk (what
    :meth:`~sds_jupyter.stack.storage.location.LocalLocation.join` and every local read
    apply). Only the segments below the root are looked at: when none is a link
    (the usual case), the join is already the real path and costs one ``lstat``
    a segment instead of a ``realpath`` of the whole path.
    """
    if _plain_below(root_real, relative, seen):
        return f"{root_real}/{relative}" if root_real != "/" else f"/{relative}"
    target = os.path.realpath(os.path.join(root_real, relative))
    if not is_within(target, root_real):
        raise UnsafePathError(
            f"{what} {relative!r} leads outside {root_real} (through a symbolic link); refusing to read it"
        )
    return target


def contained_path(root_real: Path, relative: str, what: str) -> Path:
    """:func:`contained_real` for :class:`~pathlib.Path` objects."""
    return Path(contained_real(os.fspath(root_real), relative, what))


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular_fd(path: str | os.PathLike[str], what: str = "file") -> tuple[int, os.stat_result]:
    """Open ``path`` for reading, refusing anything but a regular file: a descriptor and its stat.

    Every file of a stack is read through here. A FIFO would block a plain
    ``open`` until some writer came, and a device (``/dev/zero``) never ends, so
    the file is opened without blocking, checked with ``fstat`` on the open
    descriptor (no race with a rename), and only then handed out. Missing files
    raise ``FileNotFoundError`` as ``open`` does; a folder ``IsADirectoryError``.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise SpecialFileError(
                f"{what} {os.fspath(path)} is a FIFO, socket or device, not a regular file; "
                "refusing to read it (replace it with the real file)"
            )
        if _OPEN_FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return fd, info
    except BaseException:
        os.close(fd)
        raise


# -- one system call that refuses every link (Linux openat2) ------------------------------------

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (new system calls share one table)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_AT_FDCWD = -100


class _OpenAt2:
    """``openat2(AT_FDCWD, path, flags, RESOLVE_NO_SYMLINKS)``, or nothing where the kernel lacks it."""

    def __init__(self) -> None:
        self.call: Any = None
        self.how: Any = None
        if not sys.platform.startswith("linux"):
            return
        try:
            import ctypes

            class OpenHow(ctypes.Structure):
                _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

            libc = ctypes.CDLL(None, use_errno=True)
            syscall = libc.syscall
            syscall.restype = ctypes.c_long
            self.how = OpenHow(_OPEN_FLAGS, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
            how_ref, size = ctypes.byref(self.how), ctypes.c_size_t(ctypes.sizeof(OpenHow))
            number, cwd, get_errno = ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(_AT_FDCWD), ctypes.get_errno

            def call(path: bytes) -> tuple[int, int]:
                fd = syscall(number, cwd, path, how_ref, size)
                return (fd, 0) if fd >= 0 else (-1, get_errno())

            fd, _ = call(b"/")  # a probe: seccomp filters or old kernels answer ENOSYS or EPERM
            if fd < 0:
                return
            os.close(fd)
            self.call = call
        except (OSError, AttributeError, ImportError):  # pragma: no cover - no libc to call
            self.call = None


_OPENAT2: _OpenAt2 | None = None


def linkless_opens() -> bool:
    """Whether :func:`open_linkless` can answer here (Linux 5.6+, not filtered), rather than always None."""
    global _OPENAT2
    if _OPENAT2 is None:
        _OPENAT2 = _OpenAt2()
    return _OPENAT2.call is not None


def open_linkless(path: str) -> int | None:
    """A descriptor of ``path`` opened as :func:`open_regular_fd` opens, if no segment of it is a link.

    ``path`` is a folder's real path joined with a checked key: when the kernel finds no
    link anywhere along it (one ``openat2`` call with ``RESOLVE_NO_SYMLINKS``), the file is
    where the path says, so it is contained without an ``lstat`` per segment; this also
    notices a folder swapped for a link after it was resolved. None means: a link is on
    the way, or the kernel cannot say; the caller then resolves the path and checks it.
    Missing files raise ``FileNotFoundError``. The descriptor is not checked to be a
    regular file, and stays non-blocking (harmless for a regular file read with ``pread``).
    """
    global _OPENAT2
    if _OPENAT2 is None:
        _OPENAT2 = _OpenAt2()
    call = _OPENAT2.call
    if call is None:
        return None
    fd, error = call(path.encode("utf-8", "surrogateescape"))  # what os.fsencode does here, without its checks
    if fd >= 0:
        return int(fd)
    if error in (errno.ENOENT, errno.ENOTDIR):
        raise FileNotFoundError(error, os.strerror(error), path)
    if error == errno.EINTR:
        return open_linkless(path)
    return None  # ELOOP (a link on the way), EXDEV, EAGAIN, or anything unexpected: the careful path


def open_regular_file(path: str | os.PathLike[str], what: str = "file") -> BinaryIO:
    """:func:`open_regular_fd` as a binary file object."""
    fd, _ = open_regular_fd(path, what)
    return os.fdopen(fd, "rb")
