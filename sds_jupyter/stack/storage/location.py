"""Where a stack's objects are: a filesystem and a path on it.

Everything in :mod:`sds_jupyter.stack` that touches storage goes through a
:class:`Location`. There are two kinds, chosen once, in :func:`location_of`:

* :class:`LocalLocation`, a :class:`pathlib.Path` on the local disk (so every
  path a :class:`~sds_jupyter.stack.stack.Stack` exposes is still a ``Path``),
  read with plain system calls;
* :class:`FsspecLocation` (also known as :data:`RemotePath`), an fsspec
  filesystem and a path on it, for object storage (``s3://``, ``gs://``, ...).

Containment lives in one place, :meth:`Location.join` (and the private
``_contain`` each kind implements, which every relative read goes through):
locally the real path must stay under the root's real path, so a symbolic link
cannot lead out of it; remotely the joined path must stay under the prefix. Only
regular files are ever read. Readers above this module never ask which kind they
have: where the two differ in cost, a class flag (:attr:`Location.costly_requests`)
says so.
"""

from __future__ import annotations

import os
import stat
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from sds_jupyter.errors import SpecialFileError, StackError, UnsafePathError
from sds_jupyter.stack.storage.paths import (
    PLAIN_RELATIVE,
    check_relative_path,
    contained_real,
    is_within,
    open_linkless,
    open_regular_fd,
)

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = [
    "LOCAL_SCHEMES",
    "FsspecLocation",
    "LocalLocation",
    "Location",
    "RemotePath",
    "is_url",
    "location_of",
    "range_limits",
    "real_location",
]


#: URL schemes that name the local disk: read as plain paths, so links are confined.
LOCAL_SCHEMES = ("file://", "local://")


def is_url(path: object) -> bool:
    """Whether ``path`` names object storage: a string with ``://`` that is not ``file://``."""
    return isinstance(path, str) and "://" in path and not path.startswith(LOCAL_SCHEMES)


class Location(ABC):
    """A folder or object: a filesystem and a path on it.

    Methods taking ``key`` read below this location; ``""`` is the location
    itself. A key is joined with the same containment rules as :meth:`join`.
    """

    #: True when every request is a network round trip: readers then trade a
    #: bigger first read for fewer requests, and fetch several objects at a time.
    costly_requests: ClassVar[bool] = False

    @property
    @abstractmethod
    def url(self) -> str:
        """The location as a URL (``file://`` locally)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The last segment of the path."""

    @property
    @abstractmethod
    def parent(self) -> Location:
        """The folder holding this location (itself at the top)."""

    @abstractmethod
    def join(self, relative: str, what: str = "path") -> Location:
        """The location ``relative`` names below this one; refuses one that leads outside.

        ``relative`` must be a safe relative path (see :mod:`~sds_jupyter.stack.storage.paths`);
        ``what`` names it in the error.

        Raises
        ------
        UnsafePathError
            If ``relative`` is not a plain relative path or leads outside.
        """

    @abstractmethod
    def real(self) -> Location:
        """This location with every link resolved (itself where there are none)."""

    @abstractmethod
    def read_object(self, key: str = "", byte_range: ByteRequest | None = None) -> bytes | None:
        """The bytes of the regular file (object) ``key``, or a range of them; None if missing."""

    @abstractmethod
    def object_size(self, key: str = "") -> int | None:
        """The size of the object ``key``, or None if there is none."""

    @abstractmethod
    def has_object(self, key: str = "") -> bool:
        """Whether ``key`` is an object (a regular file)."""

    @abstractmethod
    def has_folder(self, key: str = "") -> bool:
        """Whether ``key`` is a folder (locally) or a prefix holding anything (remotely)."""

    @abstractmethod
    def list_folder(self, key: str = "") -> Iterator[tuple[str, bool]]:
        """Immediate children of the folder ``key``: ``(name, is_folder)``; nothing if missing."""

    @abstractmethod
    def walk_objects(self, key: str = "") -> Iterator[str]:
        """Every object below the folder ``key``, as a key relative to this location."""

    @abstractmethod
    def open_object(self) -> IO[bytes]:
        """This object opened for reading (seekable): for formats read through a file."""

    @abstractmethod
    def local_path(self, key: str = "") -> Path | None:
        """The real local file behind ``key``, or None (missing, or not on this disk)."""

    @abstractmethod
    def fingerprint(self, key: str = "") -> str:
        """Text that changes when the object ``key`` is replaced (size and time or tag)."""

    def size_lookup(self) -> Callable[[str], int | None]:
        """``key -> size or None`` for many keys below this folder."""
        return self.object_size

    def as_local(self) -> LocalLocation | None:
        """This location as a path on this machine's disk, or None in object storage.

        What only a local disk offers asks this, never the location's class: a
        ``stat`` that proves a cached manifest unchanged, a folder to save a
        version into, a store that pickles as where to open it again.
        """
        return None


# -- the local disk ----------------------------------------------------------------------


def range_limits(byte_range: ByteRequest | None, size: int) -> tuple[int, int]:
    """``(start, end)`` of a zarr byte request within an object of ``size`` bytes."""
    if byte_range is None:
        return 0, size
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(max(byte_range.end, byte_range.start), size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    if isinstance(byte_range, SuffixByteRequest):
        return max(0, size - byte_range.suffix), size
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


def _open_regular(path: str, what: str) -> tuple[int, os.stat_result] | None:
    """An open descriptor of the regular file at ``path`` and its stat; None if missing or a folder."""
    try:
        return open_regular_fd(path, what)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _read_regular(fd: int, path: str, byte_range: ByteRequest | None) -> bytes | None:
    """Read (a range of) the file open at ``fd`` and close it; refuse a FIFO or device, None for a folder."""
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return None
        if not stat.S_ISREG(info.st_mode):
            raise SpecialFileError(
                f"object {path} is a FIFO, socket or device, not a regular file; "
                "refusing to read it (replace it with the real file)"
            )
        start, end = range_limits(byte_range, info.st_size)
        return _pread_all(fd, start, end)
    finally:
        os.close(fd)


def _pread_all(fd: int, start: int, end: int) -> bytes:
    chunks = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


if TYPE_CHECKING:
    _LocalPath = Path
else:
    _LocalPath = type(Path())  # PosixPath (or WindowsPath): what Path() makes here


class LocalLocation(_LocalPath, Location):
    """A path on the local disk: a :class:`pathlib.Path` that reads like a location.

    Keys are contained on the real path: each segment below this location is
    checked, and a link anywhere along the way is resolved and must stay under
    this location's real path.
    """

    costly_requests: ClassVar[bool] = False

    @property
    def url(self) -> str:
        return self.as_uri()

    def _real_root(self) -> str:
        cached: str | None = self.__dict__.get("_sds_real")
        if cached is None:
            cached = os.path.realpath(self)
            try:
                self._sds_real = cached
            except AttributeError:  # pragma: no cover - a slotted subclass
                pass
        return cached

    def _contain(self, key: str, what: str) -> str:
        """The real path of ``key`` below this location; the one containment rule locally."""
        root = self._real_root()
        if key == "":
            return root
        return contained_real(root, check_relative_path(key, what), what)

    @property
    def parent(self) -> LocalLocation:
        """The folder holding this path; real when this path is (a real path's folders hold no link)."""
        folder: LocalLocation = super().parent
        real = self.__dict__.get("_sds_real")
        if real is not None and real == os.fspath(self) and folder is not self:
            folder._sds_real = os.fspath(folder)
        return folder

    def join(self, relative: str, what: str = "path") -> LocalLocation:
        # docstring inherited
        seen: list[os.stat_result] = []
        root = self._real_root()
        joined = real_location(
            root if relative == "" else contained_real(root, check_relative_path(relative, what), what, seen)
        )
        if seen:
            joined.__dict__["_sds_lstat"] = seen[0]  # what the containment check saw of it
        return joined

    def joined_lstat(self) -> os.stat_result | None:
        """The ``lstat`` of this path taken when :meth:`join` checked it (None if it was not).

        A record of what the path was then: a cache that must notice later changes keys on it.
        """
        found: os.stat_result | None = self.__dict__.get("_sds_lstat")
        return found

    def real(self) -> LocalLocation:
        # docstring inherited
        return self.join("")

    def as_local(self) -> LocalLocation:
        # docstring inherited
        return self

    def read_object(self, key: str = "", byte_range: ByteRequest | None = None) -> bytes | None:
        # docstring inherited
        root = self._real_root()
        if key and PLAIN_RELATIVE.fullmatch(key) is not None:
            # The usual case: one system call opens the file and proves no link is on the way.
            path = f"{root}/{key}" if root != "/" else f"/{key}"
            try:
                fd = open_linkless(path)
            except FileNotFoundError:
                return None
            if fd is not None:
                return _read_regular(fd, path, byte_range)
            path = self._contain_through_links(key)
        else:
            path = self._contain(key, "object")
        opened = _open_regular(path, "object")
        if opened is None:
            return None
        fd, info = opened
        try:
            start, end = range_limits(byte_range, info.st_size)
            return _pread_all(fd, start, end)
        finally:
            os.close(fd)

    def _contain_through_links(self, key: str) -> str:
        """The real path of ``key``, found to lead through a link: it must still lie below the root.

        The whole path is resolved, the root's own segments too, so a folder swapped for a
        link after it was resolved cannot lead a read elsewhere.
        """
        root = self._real_root()
        target = os.path.realpath(f"{root}/{key}")
        if not is_within(target, root):
            raise UnsafePathError(f"object {key!r} leads outside {root} (through a symbolic link); refusing to read it")
        return target

    def real_path(self) -> str:
        """This location's real path, as a string (resolved once)."""
        return self._real_root()

    def read_with_stat(self, limit: int) -> tuple[bytes, os.stat_result] | None:
        """At most ``limit`` bytes of this regular file and the ``fstat`` of what was read; None if missing."""
        real = self._real_root()
        try:
            fd = open_linkless(real)
        except FileNotFoundError:
            return None
        if fd is None:
            opened = _open_regular(real, "file")
            if opened is None:
                return None
            fd, info = opened
        else:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                if stat.S_ISDIR(info.st_mode):
                    return None
                raise SpecialFileError(f"file {real} is a FIFO, socket or device, not a regular file; refusing it")
        try:
            return _pread_all(fd, 0, min(info.st_size + 1, limit)), info
        finally:
            os.close(fd)

    def _stat(self, key: str) -> os.stat_result | None:
        try:
            return os.stat(self._contain(key, "object"))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def object_size(self, key: str = "") -> int | None:
        # docstring inherited
        info = self._stat(key)
        if info is None or stat.S_ISDIR(info.st_mode):
            return None
        if not stat.S_ISREG(info.st_mode):
            raise SpecialFileError(
                f"object {key!r} in {self} is a FIFO, socket or device, not a regular file; refusing it"
            )
        return info.st_size

    def has_object(self, key: str = "") -> bool:
        # docstring inherited
        info = self._stat(key)
        return info is not None and stat.S_ISREG(info.st_mode)

    def has_folder(self, key: str = "") -> bool:
        # docstring inherited
        info = self._stat(key)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def _inside(self, entry: os.DirEntry[str], root: str) -> str | None:
        """The real path of a listed entry, or None if a link leads it outside the root."""
        if not entry.is_symlink():
            return entry.path
        real = os.path.realpath(entry.path)
        return real if is_within(real, root) else None

    def list_folder(self, key: str = "") -> Iterator[tuple[str, bool]]:
        # docstring inherited
        root = self._real_root()
        try:
            entries = list(os.scandir(self._contain(key, "folder")))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            real = self._inside(entry, root)
            if real is not None:
                yield entry.name, os.path.isdir(real)

    def walk_objects(self, key: str = "") -> Iterator[str]:
        # docstring inherited
        root = self._real_root()
        top = self._contain(key, "folder")
        seen: set[str] = set()
        pending: list[tuple[str, str]] = [(top, key)]
        while pending:
            folder, lead = pending.pop()
            if folder in seen:
                continue
            seen.add(folder)
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in reversed(entries):
                child = f"{lead}/{entry.name}" if lead else entry.name
                real = self._inside(entry, root)
                if real is None:
                    continue
                if os.path.isdir(real):
                    pending.append((real, child))
                else:
                    yield child  # a FIFO or device too: reading it is what refuses it

    def open_object(self) -> IO[bytes]:
        # docstring inherited
        opened = _open_regular(self._real_root(), "file")
        if opened is None:
            raise FileNotFoundError(f"{self} is not a file")
        return os.fdopen(opened[0], "rb")

    def local_path(self, key: str = "") -> Path | None:
        # docstring inherited
        path = self._contain(key, "object")
        return Path(path) if os.path.lexists(path) else None

    def fingerprint(self, key: str = "") -> str:
        # docstring inherited
        path = self._contain(key, "object")
        info = os.stat(path)
        return f"{path}|{info.st_size}|{info.st_mtime_ns}"


#: Python 3.11's pathlib parses every new path in Python; a real path is already normalised, so its
#: parts are simply its segments. Later versions parse lazily and need no help.
_PARSED_PARTS = sys.version_info < (3, 12) and hasattr(_LocalPath, "_from_parsed_parts")


def real_location(real: str) -> LocalLocation:
    """A LocalLocation for ``real``: absolute, normalised and holding no link (what
    :func:`os.path.realpath` returns, or a path ``openat2`` opened refusing links)."""
    if _PARSED_PARTS and len(real) > 1 and real.startswith("/") and not real.endswith("/"):
        parts = real.split("/")
        parts[0] = "/"
        location: LocalLocation = LocalLocation._from_parsed_parts("", "/", parts)  # type: ignore[attr-defined]
        location._str = real  # type: ignore[attr-defined]  # what str() would format from the parts
    else:
        location = LocalLocation(real)
    location._sds_real = real
    return location


# -- object storage ------------------------------------------------------------------------


def _on_local_disk(fs: AbstractFileSystem) -> bool:
    """Whether an fsspec filesystem (or the one a caching layer wraps) is the local disk."""
    from fsspec.implementations.local import LocalFileSystem  # needed for URLs only

    return isinstance(fs, LocalFileSystem) or isinstance(getattr(fs, "fs", None), LocalFileSystem)


def _check_url_part(value: str, what: str) -> str:
    """A folder name or key that becomes part of a URL.

    Beyond the path rules, ``?`` and ``#`` are refused: a client may read them as
    a query or fragment and so cut the path short, onto another object.
    """
    check_relative_path(value, what)
    if "?" in value or "#" in value:
        raise UnsafePathError(
            f"{what} {value!r} holds '?' or '#', which object storage URLs treat specially; rename it"
        )
    return value


def _fs_limits(byte_range: ByteRequest | None) -> tuple[int, int | None]:
    """``(start, end)`` for ``fs.cat_file``: always a ranged GET, never a HEAD first."""
    if byte_range is None:
        return 0, None
    if isinstance(byte_range, RangeByteRequest):
        return byte_range.start, byte_range.end
    if isinstance(byte_range, OffsetByteRequest):
        return byte_range.offset, None
    if isinstance(byte_range, SuffixByteRequest):
        return -byte_range.suffix, None
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


def _unsatisfiable(exc: OSError) -> bool:
    text = str(exc).lower()
    return ("range" in text and ("satisf" in text or "invalid" in text)) or "416" in text


class FsspecLocation(Location):
    """A path on an fsspec filesystem (object storage), with no trailing slash.

    It offers the little of :class:`pathlib.Path` the stack uses (``/``, ``name``,
    ``parent``) and no ``__fspath__``, so it can never be opened as a local file.
    A read is one ranged GET (``Range: bytes=0-`` for a whole object, so no HEAD
    comes first); existence is a GET of one byte (a HEAD of a missing key would
    also LIST).
    """

    __slots__ = ("fs", "path")
    costly_requests: ClassVar[bool] = True

    def __init__(self, fs: AbstractFileSystem, path: str) -> None:
        self.fs = fs
        self.path = path.rstrip("/")

    @classmethod
    def from_url(cls, url: str, storage_options: Mapping[str, Any] | None = None) -> FsspecLocation:
        """The location a URL names; refuses a bare bucket."""
        from fsspec.core import url_to_fs  # an optional dependency, needed for URLs only

        try:
            fs, path = url_to_fs(url, **dict(storage_options or {}))
        except (ValueError, ImportError) as exc:
            raise StackError(f"cannot open {url!r}: {exc}") from None
        if _on_local_disk(fs):
            # The local reader confines links and refuses FIFOs and devices; this one could not.
            raise StackError(f"{url!r} is on the local disk; give it as a plain path instead of a URL")
        if not path.strip("/"):
            raise StackError(f"{url!r} names no folder; give a dataset folder under a bucket")
        return cls(fs, path)

    @property
    def url(self) -> str:
        return str(self.fs.unstrip_protocol(self.path))

    @property
    def protocol(self) -> str:
        protocol = self.fs.protocol
        return protocol if isinstance(protocol, str) else protocol[0]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> FsspecLocation:
        return FsspecLocation(self.fs, self.path.rsplit("/", 1)[0]) if "/" in self.path else self

    def __truediv__(self, relative: str) -> FsspecLocation:
        return self.join(relative)

    def joinpath(self, relative: str, what: str = "path") -> FsspecLocation:
        """Another name for :meth:`join`, as :class:`pathlib.Path` has it."""
        return self.join(relative, what)

    def _contain(self, key: str, what: str) -> str:
        """The path of ``key`` under this prefix; the one containment rule remotely."""
        if key == "":
            return self.path
        _check_url_part(key, what)
        if "?versionId=" in key:  # pragma: no cover - '?' is refused above
            raise UnsafePathError(f"{what} {key!r} holds '?versionId=', which S3 clients split off")
        return f"{self.path}/{key}"

    def join(self, relative: str, what: str = "path") -> FsspecLocation:
        # docstring inherited
        if relative == "":
            raise UnsafePathError(f"{what} is empty; it must be a relative path")
        return FsspecLocation(self.fs, self._contain(relative, what))

    def real(self) -> FsspecLocation:
        # docstring inherited
        return self

    def is_within(self, root: FsspecLocation) -> bool:
        return self.protocol == root.protocol and (self.path == root.path or self.path.startswith(root.path + "/"))

    def _cat(self, path: str, start: int = 0, end: int | None = None) -> bytes | None:
        """One GET of ``path`` (bytes ``start`` to ``end``), None if the object is missing."""
        if end is not None and end <= start and start >= 0:
            return b"" if self._exists(path) else None
        try:
            return bytes(self.fs.cat_file(path, start=start, end=end))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            if not _unsatisfiable(exc):
                raise
        # An empty object, or a range starting past the end: S3 answers 416.
        return b"" if self._exists(path) else None

    def _exists(self, path: str) -> bool:
        try:
            self.fs.info(path)
        except FileNotFoundError:
            return False
        return True

    def read_object(self, key: str = "", byte_range: ByteRequest | None = None) -> bytes | None:
        # docstring inherited
        path = self._contain(key, "object")
        if isinstance(byte_range, SuffixByteRequest) and byte_range.suffix == 0:
            return b"" if self._cat(path, 0, 1) is not None else None
        start, end = _fs_limits(byte_range)
        return self._cat(path, start, end)

    def object_size(self, key: str = "") -> int | None:
        # docstring inherited
        try:
            return int(self.fs.size(self._contain(key, "object")))
        except (FileNotFoundError, IsADirectoryError):
            return None

    def has_object(self, key: str = "") -> bool:
        # docstring inherited
        return self._cat(self._contain(key, "object"), 0, 1) is not None

    def has_folder(self, key: str = "") -> bool:
        # docstring inherited
        try:
            return bool(self.fs.ls(self._contain(key, "folder"), detail=False))
        except (FileNotFoundError, NotADirectoryError):
            return False

    def list_folder(self, key: str = "") -> Iterator[tuple[str, bool]]:
        # docstring inherited
        folder = self._contain(key, "folder")
        try:
            entries = self.fs.ls(folder, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return
        lead = folder + "/"
        for entry in entries:
            name = entry["name"].rstrip("/")
            if not name.startswith(lead):
                continue
            child = name[len(lead) :]
            if child and "/" not in child and _plain(child):
                yield child, entry.get("type") == "directory"

    def walk_objects(self, key: str = "") -> Iterator[str]:
        # docstring inherited
        top = self._contain(key, "folder")
        lead = self.path + "/"
        for path in sorted(self.fs.find(top)):
            if not path.startswith(lead) or path.endswith("/"):
                continue
            child = path[len(lead) :]
            if _plain(child):
                yield child

    def open_object(self) -> IO[bytes]:
        # docstring inherited
        handle: IO[bytes] = self.fs.open(self.path, "rb", block_size=256 * 1024, cache_type="readahead")
        return handle

    def local_path(self, key: str = "") -> Path | None:
        # docstring inherited
        return None

    def fingerprint(self, key: str = "") -> str:
        # docstring inherited
        path = self._contain(key, "object")
        info = self.fs.info(path)
        tag = info.get("ETag") or info.get("etag") or info.get("LastModified") or info.get("mtime")
        return f"{self.fs.unstrip_protocol(path)}|{info.get('size')}|{tag}"

    def size_lookup(self) -> Callable[[str], int | None]:
        """One LIST of everything below, instead of a request per key."""
        try:
            found = self.fs.find(self.path, detail=True)
        except FileNotFoundError:
            found = {}
        lead = self.path + "/"
        sizes = {name[len(lead) :]: int(info.get("size") or 0) for name, info in found.items() if name.startswith(lead)}
        return sizes.get

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FsspecLocation) and other.protocol == self.protocol and other.path == self.path

    def __hash__(self) -> int:
        return hash((FsspecLocation, self.protocol, self.path))

    def __reduce__(self) -> tuple[Any, ...]:
        # fsspec filesystems pickle by their arguments, so dask workers reconnect.
        return (FsspecLocation, (self.fs, self.path))


#: The name this type had when it was object storage's own reader; kept for users.
RemotePath = FsspecLocation


def _plain(key: str) -> bool:
    try:
        _check_url_part(key, "key")
    except UnsafePathError:
        return False
    return True


def location_of(
    path: str | os.PathLike[str] | Location,
    storage_options: Mapping[str, Any] | None = None,
) -> Location:
    """The location a path or URL names: the one place local and object storage part.

    A local path is made absolute (not resolved); ``file://`` URLs are local.
    """
    if isinstance(path, Location):
        return path
    if is_url(path):
        return FsspecLocation.from_url(str(path), storage_options)
    text = os.fspath(path)
    if text.startswith(LOCAL_SCHEMES):
        text = text.split("://", 1)[1]
    return LocalLocation(os.path.abspath(os.path.expanduser(text)))
