"""Stacks in object storage: the same reader over any fsspec URL (``s3://``, ``gs://``, ...).

A datasets location in object storage is a prefix holding one folder per dataset,
``<datasets url>/<folder map name or dataset id>``, laid out like a download. The
pieces here mirror the local ones and plug into the same code paths:

* :class:`RemotePath` is a location (a filesystem and a path under it). It joins
  only relative paths that passed :mod:`~sds_jupyter.stack.paths`, and every join
  is checked to stay under the prefix it started from.
* :class:`RemoteSource` and :class:`RemoteZipSource` implement the raw-read
  ``Source`` protocol of :mod:`~sds_jupyter.stack.sources`. A read is one ranged
  GET (``Range: bytes=0-`` for a whole object, so no HEAD comes first); a key in a
  ``.zarr.zip`` is one GET of its local header and data, found from the central
  directory read once with range requests. Listing is used only by flatten and
  listings, never to open a table.
* :class:`RemoteLocator` resolves references without listing: a manifest's
  existence is its fetch, so every manifest is fetched exactly once, and the base
  named by the top manifest's ``base`` field is probed while the chain is walked.
"""

from __future__ import annotations

import json
import struct
import threading
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from sds_jupyter.errors import (
    BaseStoreError,
    MissingDatasetError,
    ReferenceError_,
    StackError,
    UnsafePathError,
)
from sds_jupyter.stack.manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest, load_manifest
from sds_jupyter.stack.paths import check_relative_path
from sds_jupyter.stack.refs import CirroRef, FolderMap
from sds_jupyter.stack.sources import ZipSource, ranged_chunks

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from sds_jupyter.stack.stack import Stack

__all__ = [
    "RemoteLocator",
    "RemotePath",
    "RemoteSource",
    "RemoteZipSource",
    "is_url",
    "open_remote_source",
    "resolve_remote",
]

_ROOT_DOCS_V2 = (".zgroup", ".zmetadata", ".zattrs")


#: URL schemes that name the local disk: read as plain paths, so links are confined.
LOCAL_SCHEMES = ("file://", "local://")


def is_url(path: object) -> bool:
    """Whether ``path`` names object storage: a string with ``://`` that is not ``file://``."""
    return isinstance(path, str) and "://" in path and not path.startswith(LOCAL_SCHEMES)


def _on_local_disk(fs: AbstractFileSystem) -> bool:
    """Whether an fsspec filesystem (or the one a caching layer wraps) is the local disk."""
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem) or isinstance(getattr(fs, "fs", None), LocalFileSystem)


def _check_url_part(value: str, what: str) -> str:
    """A folder name or reference path that becomes part of a URL.

    Beyond the path rules, ``?`` and ``#`` are refused: a client may read them as
    a query or fragment and so cut the path short, onto another dataset.
    """
    check_relative_path(value, what)
    if "?" in value or "#" in value:
        raise UnsafePathError(
            f"{what} {value!r} holds '?' or '#', which object storage URLs treat specially; "
            "rename the folder"
        )
    return value


def _check_key(key: object, what: str) -> str:
    key = check_relative_path(key, what)
    if "?versionId=" in key:
        # s3fs cuts a path at "?versionId=": the key would read another object.
        raise UnsafePathError(f"{what} {key!r} holds '?versionId=', which S3 clients split off")
    return key


class RemotePath:
    """A location in object storage: an fsspec filesystem and a path on it (no trailing slash).

    It offers the little of :class:`pathlib.Path` the stack uses (``/``, ``name``,
    ``parent``) and no ``__fspath__``, so it can never be opened as a local file.
    """

    __slots__ = ("fs", "path")

    def __init__(self, fs: AbstractFileSystem, path: str) -> None:
        self.fs = fs
        self.path = path.rstrip("/")

    @classmethod
    def from_url(cls, url: str, storage_options: Mapping[str, Any] | None = None) -> RemotePath:
        from fsspec.core import url_to_fs

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
        return self.fs.unstrip_protocol(self.path)

    @property
    def protocol(self) -> str:
        protocol = self.fs.protocol
        return protocol if isinstance(protocol, str) else protocol[0]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> RemotePath:
        return RemotePath(self.fs, self.path.rsplit("/", 1)[0]) if "/" in self.path else self

    def __truediv__(self, relative: str) -> RemotePath:
        return self.joinpath(relative)

    def joinpath(self, relative: str, what: str = "path") -> RemotePath:
        """The location ``relative`` names under this one; refuses anything but a safe path."""
        _check_url_part(relative, what)
        joined = RemotePath(self.fs, f"{self.path}/{relative}")
        if not joined.is_within(self) or joined.path == self.path:
            raise UnsafePathError(f"{what} {relative!r} leads outside {self.url}; refusing it")
        return joined

    def is_within(self, root: RemotePath) -> bool:
        return self.protocol == root.protocol and (
            self.path == root.path or self.path.startswith(root.path + "/")
        )

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RemotePath)
            and other.protocol == self.protocol
            and other.path == self.path
        )

    def __hash__(self) -> int:
        return hash((RemotePath, self.protocol, self.path))

    def __reduce__(self) -> tuple[Any, ...]:
        # fsspec filesystems pickle by their arguments, so dask workers reconnect.
        return (RemotePath, (self.fs, self.path))


def _limits(byte_range: ByteRequest | None) -> tuple[int, int | None]:
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
    return "range" in text and ("satisf" in text or "invalid" in text) or "416" in text


def cat_object(fs: AbstractFileSystem, path: str, start: int = 0, end: int | None = None) -> bytes | None:
    """One GET of ``path`` (bytes ``start`` to ``end``), None if the object is missing."""
    if end is not None and end <= start and start >= 0:
        return b"" if _exists(fs, path) else None
    try:
        return fs.cat_file(path, start=start, end=end)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as exc:
        if not _unsatisfiable(exc):
            raise
    # An empty object, or a range starting past the end: S3 answers 416.
    return b"" if _exists(fs, path) else None


def _exists(fs: AbstractFileSystem, path: str) -> bool:
    try:
        fs.info(path)
    except FileNotFoundError:
        return False
    return True


class RemoteSource:
    """Objects under a prefix in object storage, keyed by their path relative to it."""

    def __init__(self, root: RemotePath, *, what: str = "folder") -> None:
        self.root = root
        self.what = what
        self._nodes: frozenset[str] | None = None
        self._nodes_loaded = False

    def __repr__(self) -> str:
        return f"RemoteSource({self.root.url!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "what": self.what, "nodes": self._nodes, "loaded": self._nodes_loaded}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root, self.what = state["root"], state["what"]
        self._nodes, self._nodes_loaded = state["nodes"], state["loaded"]

    def object_path(self, key: str) -> str:
        """The path on the filesystem of ``key``; refuses a key that is not a plain relative path."""
        return f"{self.root.path}/{_check_key(key, f'{self.what} key')}"

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        start, end = _limits(byte_range)
        if isinstance(byte_range, SuffixByteRequest) and byte_range.suffix == 0:
            return b"" if self.exists(key) else None
        return cat_object(self.root.fs, self.object_path(key), start, end)

    def open_stream(self, key: str) -> Iterator[bytes] | None:
        """The object's bytes by ranged GETs of a few MiB, or None if it is missing."""
        return ranged_chunks(self, key)

    def size(self, key: str) -> int | None:
        try:
            return int(self.root.fs.size(self.object_path(key)))
        except (FileNotFoundError, IsADirectoryError):
            return None

    def exists(self, key: str) -> bool:
        if key == "zarr.json" or key.endswith("/zarr.json"):
            nodes = self._consolidated_nodes()
            if nodes is not None:
                return key == "zarr.json" or key[: -len("/zarr.json")] in nodes
        # One ranged GET of one byte: a HEAD of a missing key would also LIST.
        return cat_object(self.root.fs, self.object_path(key), 0, 1) is not None

    def _consolidated_nodes(self) -> frozenset[str] | None:
        """The nodes the root's consolidated index lists (Zarr v3), fetched once."""
        if not self._nodes_loaded:
            self._load_nodes(cat_object(self.root.fs, self.object_path("zarr.json")))
        return self._nodes

    def _load_nodes(self, root_doc: bytes | None) -> None:
        self._nodes_loaded = True
        try:
            metadata = json.loads(root_doc or b"{}").get("consolidated_metadata") or {}
        except (ValueError, AttributeError):
            return
        index = metadata.get("metadata") if isinstance(metadata, dict) else None
        if isinstance(index, dict):
            self._nodes = frozenset(index)

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every object key under the root starting with ``prefix`` (this LISTs)."""
        start = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        top = f"{self.root.path}/{check_relative_path(start, 'prefix')}" if start else self.root.path
        lead = self.root.path + "/"
        for path in sorted(self.root.fs.find(top)):
            if not path.startswith(lead) or path.endswith("/"):
                continue
            key = path[len(lead):]
            if key.startswith(prefix) and _plain(key):
                yield key

    def children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        """Immediate children of ``prefix``: ``(name, is_folder)`` (this LISTs)."""
        folder = f"{self.root.path}/{check_relative_path(prefix, 'prefix')}" if prefix else self.root.path
        try:
            entries = self.root.fs.ls(folder, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return
        lead = folder + "/"
        for entry in entries:
            name = entry["name"].rstrip("/")
            if not name.startswith(lead):
                continue
            child = name[len(lead):]
            if child and "/" not in child and _plain(child):
                yield child, entry.get("type") == "directory"

    def close(self) -> None:
        pass


def _plain(key: str) -> bool:
    try:
        _check_key(key, "key")
    except UnsafePathError:
        return False
    return True


_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class RemoteZipSource(ZipSource):
    """A ``.zarr.zip`` in object storage, read in place with range requests.

    The central directory is read once, when the source opens (a HEAD and a
    couple of ranged GETs). After that, each key is one GET of the member's local
    header and data together; the data offset is remembered for byte ranges.
    """

    def __init__(
        self,
        location: RemotePath,
        members: dict[str, zipfile.ZipInfo] | None = None,
        problems: dict[str, str] | None = None,
    ) -> None:
        self.path = location  # type: ignore[assignment]
        self._lock = threading.Lock()
        self._data_offsets: dict[str, int] = {}
        if members is None:
            try:
                with location.fs.open(location.path, "rb", block_size=256 * 1024, cache_type="readahead") as handle:
                    with zipfile.ZipFile(handle, "r") as archive:
                        infos = archive.infolist()
                        data_end = archive.start_dir
            except FileNotFoundError:
                raise BaseStoreError(f"{location.url} does not exist") from None
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                raise BaseStoreError(
                    f"{location.url} is not a readable zip file ({exc}); re-upload it"
                ) from None
            members, problems = self._index_members(infos, location.name, data_end)
        self._members = members
        self.problems = problems or {}
        self._sorted = sorted(self._members)
        self._folders = {}
        self._index_folders()

    def __repr__(self) -> str:
        return f"RemoteZipSource({self.path.url!r})"

    def __getstate__(self) -> dict[str, object]:
        # The member table travels too, so a dask worker reads the central directory never.
        return {"path": self.path, "members": self._members, "problems": self.problems}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["path"], state["members"], state.get("problems"))  # type: ignore[misc, arg-type]

    def open_stream(self, key: str) -> Iterator[bytes] | None:
        """Stored members by ranged GETs; a deflated one whole (its size passed the ratio check)."""
        info = self._member(key)
        if info is None:
            return None
        if info.compress_type == zipfile.ZIP_STORED:
            return ranged_chunks(self, key)
        return iter((self._whole_member(key, info),))

    def read(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        info = self._member(key)
        if info is None:
            return None
        if byte_range is not None and info.compress_type == zipfile.ZIP_STORED:
            start = self._data_offsets.get(key)
            if start is None:
                start = self._data_offset(key, info)
            begin, end = _member_range(info.file_size, byte_range)
            if end <= begin:
                return b""
            data = cat_object(self.path.fs, self.path.path, start + begin, start + end)
            return b"" if data is None else data
        from sds_jupyter.stack.sources import slice_range

        return slice_range(self._whole_member(key, info), byte_range)

    def _data_offset(self, key: str, info: zipfile.ZipInfo) -> int:
        header = cat_object(
            self.path.fs, self.path.path, info.header_offset, info.header_offset + _LOCAL_HEADER.size
        )
        offset = info.header_offset + self._header_length(header or b"", key)
        self._data_offsets[key] = offset
        return offset

    def _header_length(self, header: bytes, key: str) -> int:
        if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
            raise BaseStoreError(f"{self.path.url}: member {key!r} has no local header; re-upload it")
        fields = _LOCAL_HEADER.unpack(header[: _LOCAL_HEADER.size])
        return _LOCAL_HEADER.size + fields[9] + fields[10]

    def _whole_member(self, key: str, info: zipfile.ZipInfo) -> bytes:
        fs, path = self.path.fs, self.path.path
        # Guess the local header's length from the central one, with slack: usually one GET.
        guess = _LOCAL_HEADER.size + len(info.orig_filename.encode("utf-8")) + len(info.extra) + 256
        blob = cat_object(fs, path, info.header_offset, info.header_offset + guess + info.compress_size)
        blob = blob or b""
        length = self._header_length(blob, key)
        self._data_offsets[key] = info.header_offset + length
        data = blob[length : length + info.compress_size]
        if len(data) < info.compress_size:
            rest = cat_object(
                fs, path, info.header_offset + length + len(data),
                info.header_offset + length + info.compress_size,
            )
            data += rest or b""
        if len(data) != info.compress_size:
            raise BaseStoreError(f"{self.path.url}: member {key!r} is truncated; re-upload it")
        if info.compress_type == zipfile.ZIP_DEFLATED:
            # Never more than the central directory promises: no zip bomb gets through.
            try:
                data = zlib.decompressobj(-15).decompress(data, info.file_size + 1)
            except zlib.error:
                raise BaseStoreError(
                    f"{self.path.url}: member {key!r} does not inflate; re-upload it"
                ) from None
        elif info.compress_type != zipfile.ZIP_STORED:
            raise BaseStoreError(
                f"{self.path.url}: member {key!r} uses zip compression {info.compress_type}; "
                "only stored and deflated members are read from object storage"
            )
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            raise BaseStoreError(f"{self.path.url}: member {key!r} fails its CRC check; re-upload it")
        return data

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


def open_remote_source(location: RemotePath, kind: str | None = None, *, what: str = "base store") -> RemoteSource | RemoteZipSource:
    """Open a store in object storage: a folder (prefix) or a ``.zarr.zip`` object."""
    if kind == "zip" or (kind is None and location.name.endswith(".zip")):
        return RemoteZipSource(location)
    return RemoteSource(location, what=what)


class RemoteLocator:
    """Finds datasets, by ID, under one datasets prefix, and never outside it.

    Nothing is listed: a candidate location exists when fetching it succeeds, and
    every fetched manifest is kept so it is fetched once.
    """

    def __init__(self, datasets_dir: RemotePath, folders: FolderMap, fetched: dict[str, bytes] | None = None) -> None:
        self.datasets_dir = datasets_dir
        self.folders = folders
        self._fetched: dict[str, bytes] = dict(fetched or {})
        self._stores: dict[RemotePath, tuple[str, int]] = {}
        self._zips: dict[RemotePath, RemoteZipSource] = {}
        self._resolved_folders: dict[str, RemotePath] = {}
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._base_hint: tuple[str, Future[RemotePath | None]] | None = None

    # -- fetching -----------------------------------------------------------------------

    def fetch(self, location: RemotePath) -> bytes | None:
        with self._lock:
            cached = self._fetched.get(location.path)
        if cached is not None:
            return cached
        data = cat_object(location.fs, location.path, 0, MAX_MANIFEST_BYTES + 1)
        if data is not None:
            with self._lock:
                self._fetched[location.path] = data
        return data

    # -- what Stack.resolve asks of a locator ---------------------------------------------

    def candidate_folders(self, dataset_id: str) -> list[RemotePath]:
        names = [self.folders[dataset_id]] if dataset_id in self.folders else []
        names.append(dataset_id)
        return [
            self.datasets_dir.joinpath(name, f"folder of dataset {dataset_id}")
            for name in dict.fromkeys(names)
        ]

    def dataset_folder(self, dataset_id: str) -> RemotePath:
        folder = self._resolved_folders.get(dataset_id)
        if folder is None:
            folder = self.candidate_folders(dataset_id)[-1]
        return folder

    def resolve(self, ref: CirroRef) -> RemotePath:
        """The location a reference names: under the dataset folder or its ``data/``."""
        if not ref.names_manifest:
            hinted = self._hinted(ref)
            if hinted is not None:
                return hinted
        found = self._find(ref)
        if found is not None:
            return found
        if not any(_prefix_exists(folder) for folder in self.candidate_folders(ref.dataset_id)):
            names = ", ".join(repr(f.name) for f in self.candidate_folders(ref.dataset_id))
            raise MissingDatasetError(
                f"dataset {ref.dataset_id} is not in {self.datasets_dir.url} (looked for {names}); "
                "upload it, or give its folder in the folder map",
                ref.dataset_id,
            )
        raise ReferenceError_(
            f"dataset {ref.dataset_id} has no {ref.path!r} (reference {ref}); "
            "the upload may be incomplete"
        )

    def _find(self, ref: CirroRef) -> RemotePath | None:
        for folder in self.candidate_folders(ref.dataset_id):
            for relative in (ref.path, f"data/{ref.path}"):
                target = folder.joinpath(relative, f"reference {ref}")
                found = self.fetch(target) is not None if ref.names_manifest else self._probe(target)
                if found:
                    self._resolved_folders[ref.dataset_id] = folder
                    return target
        return None

    def manifest_location(self, dataset_folder: RemotePath, data_dir: RemotePath) -> RemotePath:
        return data_dir / MANIFEST_NAME

    def read_manifest(self, location: RemotePath) -> Manifest:
        raw = self.fetch(location)
        if raw is None:
            raise StackError(f"{location.url} does not exist; give a version folder or a store")
        return load_manifest(raw, location.url)

    def contained(self, root: RemotePath, relative: str, what: str) -> RemotePath:
        return root.joinpath(relative, what)

    def probe_store(self, target: RemotePath, where: str) -> tuple[str, int]:
        """``(kind, zarr format)`` of the store at ``target``; refuses anything else."""
        if not self._probe(target):
            raise BaseStoreError(f"{where} is not a Zarr store (no zarr.json or .zgroup at its root)")
        return self._stores[target]

    def opened_source(self, target: RemotePath) -> RemoteZipSource | None:
        """The zip the probe opened: stateless, so every store over the stack shares it."""
        return self._zips.get(target)

    def hint_base(self, base: str | None) -> None:
        """Start resolving the base a manifest names while the chain is walked."""
        if base is None or self._base_hint is not None:
            return
        try:
            ref = CirroRef.parse(base)
        except StackError:
            return
        if ref.names_manifest:
            return
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sds-base-probe")
        self._base_hint = (str(ref), self._pool.submit(self._quiet_resolve, ref))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _quiet_resolve(self, ref: CirroRef) -> RemotePath | None:
        # A hint that leads nowhere costs its probes only: the walk words any error.
        try:
            return self._find(ref)
        except StackError:
            return None

    def _hinted(self, ref: CirroRef) -> RemotePath | None:
        if self._base_hint is None or self._base_hint[0] != str(ref):
            return None
        _, future = self._base_hint
        self._base_hint = None
        return future.result()

    def _probe(self, target: RemotePath) -> bool:
        if target in self._stores:
            return True
        if target.name.endswith(".zip"):
            order = ("zip", "folder")
        else:
            order = ("folder", "zip")
        for kind in order:
            found = self._probe_folder(target) if kind == "folder" else self._probe_zip(target)
            if found is not None:
                self._stores[target] = (kind, found)
                return True
        return False

    def _probe_folder(self, target: RemotePath) -> int | None:
        # Existence is all a probe needs: one byte of each root document.
        for doc, zarr_format in (("zarr.json", 3), *((d, 2) for d in _ROOT_DOCS_V2)):
            location = target / doc
            if cat_object(location.fs, location.path, 0, 1) is not None:
                return zarr_format
        return None

    def _probe_zip(self, target: RemotePath) -> int | None:
        if cat_object(target.fs, target.path, 0, 1) is None:
            return None  # one GET, where opening a missing object would HEAD and LIST
        try:
            source = RemoteZipSource(target)
        except BaseStoreError:
            return None
        self._zips[target] = source
        if source.exists("zarr.json"):
            return 3
        if any(source.exists(doc) for doc in _ROOT_DOCS_V2):
            return 2
        return None


def _prefix_exists(folder: RemotePath) -> bool:
    """Whether anything is stored under ``folder`` (one LIST, only to word an error)."""
    try:
        return bool(folder.fs.ls(folder.path, detail=False))
    except (FileNotFoundError, NotADirectoryError):
        return False


def resolve_remote(
    url: str | RemotePath,
    folder_map: FolderMap,
    storage_options: Mapping[str, Any] | None = None,
) -> Stack:
    """:meth:`Stack.resolve` for a URL: the same walk, over a :class:`RemoteLocator`."""
    from sds_jupyter.stack.stack import BaseInfo, Stack, _walk

    top = url if isinstance(url, RemotePath) else RemotePath.from_url(url, storage_options)
    if "/" not in top.path.strip("/"):
        raise StackError(f"{top.url} is a bucket, not a dataset folder under a datasets prefix")
    fetched: dict[str, bytes] = {}

    def fetch(location: RemotePath) -> bytes | None:
        data = cat_object(location.fs, location.path, 0, MAX_MANIFEST_BYTES + 1)
        if data is not None:
            fetched[location.path] = data
        return data

    data_dir: RemotePath | None = None
    if top.name == MANIFEST_NAME:
        if fetch(top) is None:
            raise StackError(f"{top.url} does not exist; give a version folder, its layer.json, or a store")
        data_dir = top.parent
        folder = data_dir.parent if data_dir.name == "data" else data_dir
    else:
        folder = top
        for candidate in (top, top / "data"):
            if fetch(candidate / MANIFEST_NAME) is not None:
                data_dir = candidate
                break
    if data_dir is not None:
        datasets = folder.parent
        if datasets == folder:
            raise StackError(f"{folder.url} is a bucket, not a dataset folder under a datasets prefix")
        dataset_id = folder_map.id_for_folder(folder.name) or folder.name
        locator = RemoteLocator(datasets, folder_map, fetched)
        return _walk(dataset_id, folder, data_dir, locator, folder_map)  # type: ignore[arg-type]
    datasets = top.parent.parent
    dataset_id = folder_map.id_for_folder(top.parent.name) or top.parent.name
    locator = RemoteLocator(datasets, folder_map, fetched)
    try:
        kind, zarr_format = locator.probe_store(top, top.url)
    except BaseStoreError:
        raise StackError(
            f"{top.url} holds no layer.json and is not a Zarr store; "
            "give a version folder, its layer.json, or a store"
        ) from None
    base = BaseInfo(
        dataset_id=dataset_id, path=top, reference=None, kind=kind,  # type: ignore[arg-type]
        zarr_format=zarr_format, opened=locator.opened_source(top),
    )
    return Stack(versions=(), base=base, datasets_dir=datasets, folders=folder_map)  # type: ignore[arg-type]
