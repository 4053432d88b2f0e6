"""Raw, read-only access to the objects of one folder or one zip file, anywhere.

A stack reads its base through one of these, and each version's overlay through
a :class:`FolderSource`. Both are written once, against
:class:`~sds_jupyter.stack.storage.location.Location`: every read is contained there
(on the real path locally, under the prefix remotely), so nothing here asks
where the objects are.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from sds_jupyter.errors import BaseStoreError, StackError
from sds_jupyter.jsontext import loads_bounded
from sds_jupyter.stack.storage.location import Location
from sds_jupyter.stack.storage.zipindex import MAX_ZIP_RATIO, ROOT_DOCS, Member, ZipIndex, ZipIndexes, read_index

__all__ = [
    "CHUNK_BYTES",
    "MAX_ZIP_RATIO",
    "ROOT_DOCS",
    "FolderSource",
    "Source",
    "ZipSource",
    "open_source",
    "ranged_chunks",
    "slice_range",
    "zarr_format_of",
]


class Source(Protocol):
    """What the stack store needs of a base: bytes, sizes and listings by key."""

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None: ...
    def size(self, key: str) -> int | None: ...
    def exists(self, key: str) -> bool: ...
    def keys(self, prefix: str = "") -> Iterator[str]: ...
    def children(self, prefix: str) -> Iterator[tuple[str, bool]]: ...
    def path_of(self, key: str) -> Path | None: ...
    def open_stream(self, key: str) -> Iterator[bytes] | None: ...
    def close(self) -> None: ...


#: Copies move this many bytes at a time, so no object is ever held whole.
CHUNK_BYTES = 4 * 1024 * 1024


def ranged_chunks(source: Source, key: str) -> Iterator[bytes] | None:
    """A key's bytes by ranged reads of :data:`CHUNK_BYTES`, or None if missing."""
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


class FolderSource:
    """Objects in a folder (or under a prefix), keyed by their path relative to it."""

    def __init__(self, root: Location, *, what: str = "folder") -> None:
        self.root = root
        self.what = what
        self._nodes: frozenset[str] | None = None
        self._nodes_loaded = False

    def __repr__(self) -> str:
        return f"FolderSource({str(self.root)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "what": self.what, "nodes": self._nodes, "loaded": self._nodes_loaded}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root, self.what = state["root"], state["what"]
        self._nodes, self._nodes_loaded = state["nodes"], state["loaded"]

    def path_of(self, key: str) -> Path | None:
        """The real local file behind ``key``, or None (missing, or not on this disk)."""
        return self.root.local_path(key)

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        return self.root.read_object(key, byte_range)

    def open_stream(self, key: str) -> Iterator[bytes] | None:
        """The object's bytes in chunks of :data:`CHUNK_BYTES`, or None if it is missing."""
        return ranged_chunks(self, key)

    def size(self, key: str) -> int | None:
        return self.root.object_size(key)

    def exists(self, key: str) -> bool:
        if self.root.costly_requests and (key == "zarr.json" or key.endswith("/zarr.json")):
            # A request saved per node: the root's consolidated index names them all.
            nodes = self._consolidated_nodes()
            if nodes is not None:
                return key == "zarr.json" or key[: -len("/zarr.json")] in nodes
        return self.root.has_object(key)

    def _consolidated_nodes(self) -> frozenset[str] | None:
        """The nodes the root's consolidated index lists (Zarr v3), fetched once."""
        if not self._nodes_loaded:
            self._nodes_loaded = True
            try:
                doc = loads_bounded(self.root.read_object("zarr.json") or b"{}", strict=False)
                metadata = doc.get("consolidated_metadata") or {}
                index = metadata.get("metadata") if isinstance(metadata, dict) else None
            except (ValueError, AttributeError):
                index = None
            if isinstance(index, dict):
                self._nodes = frozenset(index)
        return self._nodes

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every object key starting with ``prefix`` (remotely, this LISTs)."""
        start = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        for key in self.root.walk_objects(start):
            if key.startswith(prefix):
                yield key

    def children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        """Immediate children of ``prefix``: ``(name, is_folder)`` (remotely, this LISTs)."""
        return self.root.list_folder(prefix)

    def close(self) -> None:
        pass


_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_STORED, _DEFLATED = 0, 8
_LOCAL_SIGNATURE = b"PK\x03\x04"


class ZipSource:
    """Objects in a ``.zarr.zip``, read in place with ranged reads; directory entries are not keys.

    The central directory is read once into a compact :class:`ZipIndex` (for a
    local zip, taken from ``indexes`` while the file is unchanged; without them it
    is read, and remembered nowhere). After that, each key is one
    read of the member's local header and data together; the data offset is
    remembered for byte ranges. The source holds no open file, so one source
    serves every store over a stack, and it pickles with its index.
    """

    def __init__(
        self,
        location: Location,
        index: ZipIndex | None = None,
        data_end: int | None = None,
        *,
        indexes: ZipIndexes | None = None,
    ) -> None:
        self.path = location
        self._data_offsets: dict[str, int] = {}
        if index is None:
            index, data_end = self._read_directory(location, indexes)
        self._index = index
        self._data_end = data_end
        self.problems: dict[str, str] = index.problems

    @staticmethod
    def _read_directory(location: Location, indexes: ZipIndexes | None) -> tuple[ZipIndex, int]:
        """The member index, and where the central directory starts (every member's data is before it)."""
        try:
            with location.open_object() as handle:
                local = location.local_path()
                if local is not None and indexes is not None:
                    return indexes.index(handle, os.fspath(local), location.name)
                size = location.object_size() if local is None else os.fstat(handle.fileno()).st_size
                if size is None:
                    raise FileNotFoundError(str(location))
                return read_index(handle, size, location.name)
        except FileNotFoundError:
            raise BaseStoreError(f"{location} does not exist") from None
        except (OSError, ValueError, EOFError, OverflowError, struct.error) as exc:
            if isinstance(exc, StackError):
                raise
            raise BaseStoreError(f"{location} is not a readable zip file ({exc}); re-download it") from None

    def _member(self, key: str) -> Member | None:
        """The member holding ``key``; refuses one that is implausible (a zip bomb, an overlap)."""
        index = self._index.find(key)
        if index < 0:
            return None
        if key in self.problems:
            raise BaseStoreError(f"{self.path}: member {key!r} {self.problems[key]}; refusing to read it")
        return self._index.member(index)

    def __repr__(self) -> str:
        return f"ZipSource({str(self.path)!r})"

    def __getstate__(self) -> dict[str, object]:
        # The index travels too (compact arrays), so a dask worker never reads the central directory.
        return {"path": self.path, "index": self._index, "data_end": self._data_end}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["index"], state["data_end"])  # type: ignore[misc]

    def path_of(self, key: str) -> Path | None:
        """Members of a zip are no files of their own."""
        return None

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        info = self._member(key)
        if info is None:
            return None
        if byte_range is not None and info.method == _STORED:
            start = self._data_offsets.get(key)
            if start is None:
                start = self._data_offset(key, info)
            begin, end = _member_range(info.file_size, byte_range)
            if end <= begin:
                return b""
            data = self.path.read_object("", RangeByteRequest(start + begin, start + end))
            return b"" if data is None else data
        return slice_range(self._whole_member(key, info), byte_range)

    def open_stream(self, key: str) -> Iterator[bytes] | None:
        """Stored members by ranged reads; a deflated one whole (its size passed the ratio check)."""
        info = self._member(key)
        if info is None:
            return None
        if info.method == _STORED:
            return ranged_chunks(self, key)
        return iter((self._whole_member(key, info),))

    def _span(self, start: int, end: int) -> bytes:
        return self.path.read_object("", RangeByteRequest(start, end)) or b""

    def _data_offset(self, key: str, info: Member) -> int:
        header = self._span(info.header_offset, info.header_offset + _LOCAL_HEADER.size)
        offset = info.header_offset + self._header_length(header, key)
        self._data_offsets[key] = offset
        return offset

    def _header_length(self, header: bytes, key: str) -> int:
        if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
            raise BaseStoreError(f"{self.path}: member {key!r} has no local header; re-download it")
        fields = _LOCAL_HEADER.unpack(header[: _LOCAL_HEADER.size])
        return int(_LOCAL_HEADER.size + fields[9] + fields[10])

    def _whole_member(self, key: str, info: Member) -> bytes:
        # Guess the local header's length from the central one, with slack: usually one read.
        name_bytes = len((self._index.root + key).encode("utf-8"))
        guess = _LOCAL_HEADER.size + name_bytes + info.extra_length + 256
        blob = self._span(info.header_offset, info.header_offset + guess + info.compress_size)
        length = self._header_length(blob, key)
        self._data_offsets[key] = info.header_offset + length
        data = blob[length : length + info.compress_size]
        if len(data) < info.compress_size:
            start = info.header_offset + length
            data += self._span(start + len(data), start + info.compress_size)
        if len(data) != info.compress_size:
            raise BaseStoreError(f"{self.path}: member {key!r} is truncated; re-download it")
        return self._inflate(key, info, data)

    def _inflate(self, key: str, info: Member, data: bytes) -> bytes:
        if info.method == _DEFLATED:
            # Never more than the central directory promises: no zip bomb gets through.
            try:
                data = zlib.decompressobj(-15).decompress(data, info.file_size + 1)
            except zlib.error:
                raise BaseStoreError(f"{self.path}: member {key!r} does not inflate; re-download it") from None
        elif info.method != _STORED:
            raise BaseStoreError(
                f"{self.path}: member {key!r} uses zip compression {info.method}; "
                "only stored and deflated members are read: re-zip the store without compression"
            )
        if len(data) != info.file_size or zlib.crc32(data) != info.crc:
            raise BaseStoreError(f"{self.path}: member {key!r} fails its CRC check; re-download it")
        return data

    def size(self, key: str) -> int | None:
        index = self._index.find(key)
        return None if index < 0 else self._index.file_size(index)

    def exists(self, key: str) -> bool:
        return self._index.find(key) >= 0

    def keys(self, prefix: str = "") -> Iterator[str]:
        return self._index.keys(prefix)

    def children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        return self._index.children(prefix)

    def close(self) -> None:
        pass


def _member_range(size: int, byte_range: ByteRequest) -> tuple[int, int]:
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(byte_range.end, size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    if isinstance(byte_range, SuffixByteRequest):
        return max(0, size - byte_range.suffix), size
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


def open_source(
    location: Location, kind: str | None = None, *, what: str = "base store", indexes: ZipIndexes | None = None
) -> Source:
    """Open a store: a folder (prefix), or a ``.zarr.zip`` file (object).

    ``kind`` is ``"folder"`` or ``"zip"``; without it, a name ending in ``.zip`` is a zip,
    whose index is taken from (and kept in) ``indexes`` when given.
    """
    if kind == "zip" or (kind is None and location.name.endswith(".zip")):
        return ZipSource(location, indexes=indexes)
    return FolderSource(location, what=what)


def zarr_format_of(source: Source, where: str) -> int:
    """2 or 3, from the root documents; refuse anything that is not a Zarr store."""
    for doc, zarr_format in ROOT_DOCS:
        if source.exists(doc):
            return zarr_format
    raise BaseStoreError(f"{where} is not a Zarr store (no zarr.json or .zgroup at its root)")
