"""Raw, read-only access to the objects of one folder or one zip file.

A stack reads its base through one of these, and each version's overlay through
a :class:`FolderSource`. Every read is confined to the source's root on the real
path, so a symbolic link inside a download cannot lead a read elsewhere.
"""

from __future__ import annotations

import os
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from sds_jupyter.errors import BaseStoreError, UnsafePathError
from sds_jupyter.stack.paths import check_relative_path, is_within, open_regular_file

if TYPE_CHECKING:
    from sds_jupyter.stack.remote import RemotePath

__all__ = [
    "CHUNK_BYTES",
    "MAX_ZIP_RATIO",
    "FolderSource",
    "Source",
    "ZipSource",
    "file_chunks",
    "open_folder",
    "open_source",
    "ranged_chunks",
    "slice_range",
]


class Source(Protocol):
    """What the stack store needs of a base: bytes, sizes and listings by key."""

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None: ...
    def size(self, key: str) -> int | None: ...
    def exists(self, key: str) -> bool: ...
    def keys(self, prefix: str = "") -> Iterator[str]: ...
    def children(self, prefix: str) -> Iterator[tuple[str, bool]]: ...
    def open_stream(self, key: str) -> Iterator[bytes] | None: ...
    def close(self) -> None: ...


#: Copies move this many bytes at a time, so no object is ever held whole.
CHUNK_BYTES = 4 * 1024 * 1024
#: A zip member may inflate to at most this many times its compressed size (once past
#: MIN_RATIO_CHECK_BYTES). Deflate's own ceiling is about 1032:1, which only a run of one
#: repeated byte reaches; stores hold compressed chunks (about 1:1) and JSON (about 10:1).
MAX_ZIP_RATIO = 1000
MIN_RATIO_CHECK_BYTES = 1024 * 1024
#: The local header before a member's data: 30 bytes and the name, at least.
_LOCAL_HEADER_BYTES = 30


def file_chunks(handle: BinaryIO, lock: threading.Lock | None = None) -> Iterator[bytes]:
    """The bytes of an open file, :data:`CHUNK_BYTES` at a time; closes it at the end."""
    with handle:
        while True:
            if lock is None:
                data = handle.read(CHUNK_BYTES)
            else:
                with lock:
                    data = handle.read(CHUNK_BYTES)
            if not data:
                return
            yield data


def ranged_chunks(source: Source, key: str) -> Iterator[bytes] | None:
    """A key's bytes by ranged reads of :data:`CHUNK_BYTES` (object storage), or None if missing."""
    first = source.read(key, RangeByteRequest(0, CHUNK_BYTES))
    if first is None:
        return None

    def rest() -> Iterator[bytes]:
        data, start = first, 0
        while data:
            yield data
            if len(data) < CHUNK_BYTES:
                return
            start += CHUNK_BYTES
            data = source.read(key, RangeByteRequest(start, start + CHUNK_BYTES)) or b""

    return rest()


def slice_range(data: bytes, byte_range: ByteRequest | None) -> bytes:
    """Apply a zarr byte request to bytes already in memory."""
    if byte_range is None:
        return data
    if isinstance(byte_range, RangeByteRequest):
        return data[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return data[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return data[max(0, len(data) - byte_range.suffix) :]
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


def read_range(handle: BinaryIO, byte_range: ByteRequest | None, size: int | None = None) -> bytes:
    """Read a zarr byte request from a seekable file; ``size`` spares a seek to the end."""
    if byte_range is None:
        return handle.read()
    if isinstance(byte_range, RangeByteRequest):
        handle.seek(byte_range.start)
        return handle.read(max(0, byte_range.end - byte_range.start))
    if isinstance(byte_range, OffsetByteRequest):
        handle.seek(byte_range.offset)
        return handle.read()
    if isinstance(byte_range, SuffixByteRequest):
        end = size if size is not None else handle.seek(0, os.SEEK_END)
        handle.seek(max(0, end - byte_range.suffix))
        return handle.read()
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


def _read_file(path: Path, byte_range: ByteRequest | None, what: str) -> bytes:
    with open_regular_file(path, what) as handle:
        return read_range(handle, byte_range)


class FolderSource:
    """Objects in a folder, keyed by their path relative to it."""

    def __init__(self, root: Path, *, what: str = "folder", resolved: bool = False) -> None:
        self.root = root if resolved else Path(os.path.realpath(root))
        self.what = what
        self._root_prefix = str(self.root) + os.sep

    def __repr__(self) -> str:
        return f"FolderSource({str(self.root)!r})"

    def path_of(self, key: str) -> Path | None:
        """The real file behind ``key``, or None if it is missing or escapes the root."""
        if "\x00" in key:
            return None
        joined = os.path.join(self._root_prefix, key)
        real = os.path.realpath(joined)
        if not real.startswith(self._root_prefix):
            if os.path.lexists(joined):
                raise UnsafePathError(
                    f"{self.what} object {key!r} leads outside {self.root} "
                    "through a symbolic link; refusing to read it"
                )
            return None
        return Path(real)

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        path = self.path_of(key)
        if path is None:
            return None
        try:
            return _read_file(path, byte_range, f"{self.what} object")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def open_stream(self, key: str) -> Iterator[bytes] | None:
        """The object's bytes in chunks, or None if it is missing."""
        path = self.path_of(key)
        if path is None:
            return None
        try:
            return file_chunks(open_regular_file(path, f"{self.what} object"))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def size(self, key: str) -> int | None:
        path = self.path_of(key)
        if path is None or not path.is_file():
            return None
        return path.stat().st_size

    def exists(self, key: str) -> bool:
        path = self.path_of(key)
        return path is not None and path.is_file()

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every object key starting with ``prefix``, links followed only inside the root."""
        start_dir = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        for key in self._walk(start_dir):
            if key.startswith(prefix):
                yield key

    def children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        """Immediate children of ``prefix``: ``(name, is_folder)``."""
        folder = self.path_of(prefix) if prefix else self.root
        if folder is None or not folder.is_dir():
            return
        for entry in os.scandir(folder):
            real = os.path.realpath(entry.path)
            if not is_within(real, self.root):
                continue
            yield entry.name, os.path.isdir(real)

    def _walk(self, start: str) -> Iterator[str]:
        top = self.path_of(start) if start else self.root
        if top is None or not top.is_dir():
            return
        seen: set[str] = set()
        stack: list[tuple[str, str]] = [(str(top), start)]
        while stack:
            folder, key_prefix = stack.pop()
            if folder in seen:
                continue
            seen.add(folder)
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in reversed(entries):
                key = f"{key_prefix}/{entry.name}" if key_prefix else entry.name
                real = os.path.realpath(entry.path) if entry.is_symlink() else entry.path
                if not is_within(real, self.root):
                    continue
                if os.path.isdir(real):
                    stack.append((real, key))
                else:
                    yield key

    def close(self) -> None:
        pass


class ZipSource:
    """Objects in a ``.zarr.zip``, read in place; directory entries are not keys."""

    def __init__(self, path: Path) -> None:
        self.path = Path(os.path.realpath(path))
        try:
            self._file = open_regular_file(self.path, "zip file")
        except OSError as exc:
            raise BaseStoreError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            self._zip = zipfile.ZipFile(self._file, "r")
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            self._file.close()
            raise BaseStoreError(f"{path} is not a readable zip file ({exc}); re-download it") from None
        self._lock = threading.Lock()
        self._members, self.problems = self._index_members(
            self._zip.infolist(), self.path.name, self._zip.start_dir
        )
        self._folders: dict[str, dict[str, bool]] = {}
        self._sorted = sorted(self._members)
        self._index_folders()

    @staticmethod
    def _index_members(
        infos: list[zipfile.ZipInfo], zip_name: str, data_end: int
    ) -> tuple[dict[str, zipfile.ZipInfo], dict[str, str]]:
        """Store keys to members (names checked, directory entries dropped, root found),
        and what is wrong with the members no real store holds, by key.

        ``data_end`` is where the central directory starts: every member's data lies before it.
        """
        members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename
            if name.endswith("/"):
                check_relative_path(name[:-1], f"zip member name in {zip_name}")
                continue
            members[check_relative_path(name, f"zip member name in {zip_name}")] = info
        problems = _member_problems(infos, data_end)
        root = _zip_root(members)
        keys = {name: name[len(root):] for name in members if name.startswith(root)}
        return (
            {keys[name]: info for name, info in members.items() if name in keys},
            {keys[name]: reason for name, reason in problems.items() if name in keys},
        )

    def _member(self, key: str) -> zipfile.ZipInfo | None:
        """The member holding ``key``; refuses one that is implausible (a zip bomb, an overlap)."""
        info = self._members.get(key)
        if info is not None and key in self.problems:
            raise BaseStoreError(f"{self.path}: member {key!r} {self.problems[key]}; refusing to read it")
        return info

    def __repr__(self) -> str:
        return f"ZipSource({str(self.path)!r})"

    def __getstate__(self) -> dict[str, object]:
        # Stores travel to dask workers by pickle: reopen the zip there.
        return {"path": self.path}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    def _index_folders(self) -> None:
        for key in self._sorted:
            parent = ""
            parts = key.split("/")
            for depth, part in enumerate(parts):
                is_folder = depth < len(parts) - 1
                self._folders.setdefault(parent, {})
                self._folders[parent][part] = self._folders[parent].get(part, False) or is_folder
                parent = f"{parent}/{part}" if parent else part

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        info = self._member(key)
        if info is None:
            return None
        with self._lock, self._zip.open(info) as handle:
            if info.compress_type == zipfile.ZIP_STORED and byte_range is not None:
                return read_range(handle, byte_range, info.file_size)
            return slice_range(handle.read(), byte_range)

    def open_stream(self, key: str) -> Iterator[bytes] | None:
        """The member's bytes in chunks, inflated as they are read; never more than its size."""
        info = self._member(key)
        if info is None:
            return None
        with self._lock:
            handle = self._zip.open(info)
        return file_chunks(handle, self._lock)  # type: ignore[arg-type]

    def size(self, key: str) -> int | None:
        info = self._members.get(key)
        return None if info is None else info.file_size

    def exists(self, key: str) -> bool:
        return key in self._members

    def keys(self, prefix: str = "") -> Iterator[str]:
        import bisect

        start = bisect.bisect_left(self._sorted, prefix)
        for key in self._sorted[start:]:
            if not key.startswith(prefix):
                break
            yield key

    def children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        yield from self._folders.get(prefix, {}).items()

    def close(self) -> None:
        self._zip.close()
        self._file.close()  # a ZipFile given an open file leaves closing it to its owner


_ROOT_DOCS = ("zarr.json", ".zgroup", ".zattrs", ".zmetadata")


def _member_problems(infos: list[zipfile.ZipInfo], data_end: int) -> dict[str, str]:
    """Members a real store never has, by name: what is wrong with each.

    Duplicated names (which copy is the store's?), data that overlaps another
    member's or runs into the central directory (a crafted zip reusing bytes),
    stored members whose two sizes differ, and members that inflate beyond
    :data:`MAX_ZIP_RATIO` (a zip bomb).
    """
    problems: dict[str, str] = {}
    seen: set[str] = set()
    for info in infos:
        if info.filename in seen:
            problems[info.filename] = "appears more than once in the zip"
        seen.add(info.filename)
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            problems[info.filename] = (
                f"is stored uncompressed but lists {info.file_size} bytes against {info.compress_size}"
            )
        elif info.file_size > MIN_RATIO_CHECK_BYTES and info.file_size > MAX_ZIP_RATIO * max(1, info.compress_size):
            problems[info.filename] = (
                f"inflates {info.compress_size} bytes to {info.file_size}, more than "
                f"{MAX_ZIP_RATIO} times (a zip bomb, not a store)"
            )
    extents = sorted(
        (info.header_offset, info.header_offset + _LOCAL_HEADER_BYTES + len(info.orig_filename.encode("utf-8", "replace")) + info.compress_size, info.filename)
        for info in infos
    )
    for (start, end, name), following in zip(extents, [*extents[1:], None]):
        if end > data_end:
            problems.setdefault(name, "runs past the end of the zip's data")
        if following is not None and following[0] < end:
            problems.setdefault(name, f"overlaps member {following[2]!r}")
            problems.setdefault(following[2], f"overlaps member {name!r}")
    return problems


def _zip_root(members: dict[str, zipfile.ZipInfo]) -> str:
    """The folder inside the zip that is the store's root: usually the zip's own root.

    Some tools zip the ``.zarr`` folder itself, so the store sits one level down.
    """
    if any(doc in members for doc in _ROOT_DOCS):
        return ""
    tops = {name.split("/", 1)[0] for name in members}
    if len(tops) == 1:
        (top,) = tops
        if any(f"{top}/{doc}" in members for doc in _ROOT_DOCS):
            return f"{top}/"
    return ""


def open_source(path: Path | RemotePath, kind: str | None = None) -> Source:
    """Open a store at the bottom of a stack: a folder, or a zip file, local or remote."""
    if not isinstance(path, Path):
        from sds_jupyter.stack.remote import open_remote_source

        return open_remote_source(path, kind)
    if path.is_dir():
        return FolderSource(path, what="base store")
    if path.is_file():
        return ZipSource(path)
    raise BaseStoreError(f"{path} is neither a store folder nor a .zarr.zip file")


def open_folder(path: Path | RemotePath, what: str) -> Source:
    """Open the folder of a version's overlay, local or remote.

    A version's overlay folder was resolved when the stack was, so it is not resolved again.
    """
    if not isinstance(path, Path):
        from sds_jupyter.stack.remote import RemoteSource

        return RemoteSource(path, what=what)
    return FolderSource(path, what=what, resolved=True)


def zarr_format_of(source: Source, where: str) -> int:
    """2 or 3, from the root documents; refuse anything that is not a Zarr store."""
    if source.exists("zarr.json"):
        return 3
    if any(source.exists(doc) for doc in (".zgroup", ".zmetadata", ".zattrs")):
        return 2
    raise BaseStoreError(
        f"{where} is not a Zarr store (no zarr.json or .zgroup at its root)"
    )
