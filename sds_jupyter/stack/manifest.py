"""``layer.json``: the one place that parses and validates a version's manifest.

Each supported ``(format, format_version)`` pair has one registered parser, so a
new manifest version is one decorated function, and an unknown one is refused
with the list of what this reader understands.
"""

from __future__ import annotations

import operator
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, overload

from sds_jupyter.errors import ManifestError, StackError
from sds_jupyter.jsontext import (
    MAX_JSON_DEPTH,
    JSONRefused,
    json_depth,
    loads_bounded,
)
from sds_jupyter.stack.storage.paths import (
    MANIFEST_NAME,
    PLAIN_RELATIVE,
    check_relative_path,
    check_whiteout,
    open_regular_file,
)

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "MAX_MANIFEST_BYTES",
    "MAX_STACK_MANIFEST_BYTES",
    "FileEntry",
    "FileList",
    "LayerFormat",
    "Manifest",
    "load_manifest",
    "parse_manifest",
    "read_manifest",
    "read_manifest_with_stat",
    "supported_formats",
    "unpacked_manifest",
]

FORMAT = "spatial-data-studio.layer"
#: Manifests are small; a larger file is refused before parsing.
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
#: All the manifests of one stack together, at most: 500 versions of 64 MiB each would not fit in memory.
MAX_STACK_MANIFEST_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class LayerFormat:
    """A manifest encoding, as ``format`` and ``format_version`` name it."""

    format: str
    version: int

    def __str__(self) -> str:
        return f"{self.format} v{self.version}"


@dataclass(frozen=True)
class FileEntry:
    """One object in a version's overlay, at its store key."""

    key: str
    size: int


class FileList(Sequence[FileEntry]):
    """A version's ``files``, held compactly: the keys in a list, the sizes in an integer array.

    A manifest of a million files would otherwise hold a million small objects; entries
    are made when asked for. Equal to any sequence of the same entries.
    """

    __slots__ = ("keys", "sizes")

    def __init__(self, keys: list[str], sizes: array[int]) -> None:
        self.keys = keys
        self.sizes = sizes

    @overload
    def __getitem__(self, index: int) -> FileEntry: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[FileEntry, ...]: ...
    def __getitem__(self, index: int | slice) -> FileEntry | tuple[FileEntry, ...]:
        if isinstance(index, slice):
            return tuple(FileEntry(k, s) for k, s in zip(self.keys[index], self.sizes[index]))
        return FileEntry(self.keys[index], self.sizes[index])

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[FileEntry]:
        return map(FileEntry, self.keys, self.sizes)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FileList):
            return self.keys == other.keys and self.sizes == other.sizes
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((len(self.keys), tuple(self.keys[:8])))

    def __repr__(self) -> str:
        return f"FileList({len(self)} files)"


@dataclass(frozen=True)
class Manifest:
    """A parsed, checked ``layer.json``. Paths in it are safe to join."""

    format: LayerFormat
    parent: str
    base: str | None
    depth: int | None
    title: str | None
    message: str | None
    created_at: str | None
    created_by: str | None
    app: dict[str, Any] | None
    overlay: str
    files: FileList
    deleted: tuple[str, ...]
    changes: tuple[dict[str, Any], ...]
    extra: dict[str, Any] = field(default_factory=dict)
    source_bytes: int = field(default=0, compare=False, repr=False)
    """How many bytes the ``layer.json`` read held (0 when parsed from a document)."""

    def to_json(self) -> dict[str, Any]:
        """The manifest as ``layer.json`` holds it (known fields first)."""
        doc: dict[str, Any] = {
            "format": self.format.format,
            "format_version": self.format.version,
            "parent": self.parent,
        }
        if self.base is not None:
            doc["base"] = self.base
        if self.depth is not None:
            doc["depth"] = self.depth
        for name in ("title", "message", "created_at", "created_by", "app"):
            value = getattr(self, name)
            if value is not None:
                doc[name] = value
        doc["overlay"] = self.overlay
        doc["files"] = [{"key": f.key, "size": f.size} for f in self.files]
        doc["deleted"] = list(self.deleted)
        doc["changes"] = [dict(c) for c in self.changes]
        doc.update(self.extra)
        return doc

    def packed(self) -> list[Any]:
        """Every field in one JSON list, files as two flat lists: how a stack's record on disk keeps it.

        Why not :meth:`to_json`: unpacking this takes no check and no object per file
        (see :func:`unpacked_manifest`), which is what makes a record quicker than a walk.
        """
        return [
            self.format.format,
            self.format.version,
            self.parent,
            self.base,
            self.depth,
            self.title,
            self.message,
            self.created_at,
            self.created_by,
            self.app,
            self.overlay,
            self.files.keys,
            self.files.sizes.tolist(),
            self.deleted,
            self.changes,
            self.extra,
            self.source_bytes,
        ]


def unpacked_manifest(row: list[Any]) -> Manifest:
    """The manifest :meth:`Manifest.packed` gave, unchecked.

    Only for a record this user's own process wrote from a manifest that passed
    :func:`parse_manifest`, whose file is proven unchanged since (see
    :mod:`sds_jupyter.stack.storage.ondisk`); anything else goes through :func:`parse_manifest`.
    A row of the wrong shape raises ``ValueError`` or ``TypeError``. The fields are set
    in one step (a frozen dataclass's ``__init__`` sets each through ``object.__setattr__``:
    a third of a deep stack's load from its record).
    """
    fmt, version, *fields, keys, sizes, deleted, changes, extra, source_bytes = row
    if len(fields) != len(_PACKED_BEFORE_FILES):
        raise ValueError("not a packed manifest")
    layer = _V1 if fmt == FORMAT and version == 1 else LayerFormat(fmt, version)
    manifest: Manifest = object.__new__(Manifest)
    manifest.__dict__.update(zip(_PACKED_BEFORE_FILES, fields))
    manifest.__dict__.update(
        format=layer,
        files=FileList(keys, array("q", sizes)),
        deleted=tuple(deleted),
        changes=tuple(changes),
        extra=extra,
        source_bytes=source_bytes,
    )
    return manifest


#: The fields :meth:`Manifest.packed` lists between the format and the files, in order.
_PACKED_BEFORE_FILES = ("parent", "base", "depth", "title", "message", "created_at", "created_by", "app", "overlay")


_Parser = Callable[[Mapping[str, Any], str], Manifest]
_PARSERS: dict[LayerFormat, _Parser] = {}


def register(fmt: LayerFormat) -> Callable[[_Parser], _Parser]:
    """Register the parser for one manifest format version."""

    def decorate(parser: _Parser) -> _Parser:
        if fmt in _PARSERS:
            raise RuntimeError(f"a parser for {fmt} is registered already")
        _PARSERS[fmt] = parser
        return parser

    return decorate


def supported_formats() -> list[LayerFormat]:
    return sorted(_PARSERS, key=lambda f: (f.format, f.version))


def read_manifest(path: Path) -> Manifest:
    """Read and parse the ``layer.json`` at ``path``."""
    return read_manifest_with_stat(path)[0]


def read_manifest_with_stat(path: Path) -> tuple[Manifest, os.stat_result]:
    """Read and parse the ``layer.json`` at ``path``, with the ``fstat`` of the file read (to key a cache on)."""
    try:
        with open_regular_file(path, "manifest") as handle:
            info = os.fstat(handle.fileno())
            if info.st_size > MAX_MANIFEST_BYTES:
                raise ManifestError(f"{path} is larger than {MAX_MANIFEST_BYTES} bytes; not a manifest")
            # read(n) sets n bytes aside first: ask for what is there, plus one to see growth.
            raw = handle.read(info.st_size + 1)
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror or exc}") from None
    return load_manifest(raw, str(path)), info


def load_manifest(raw: bytes, path: str) -> Manifest:
    """Parse the bytes of a ``layer.json`` read from ``path`` (a file or a URL)."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{path} is larger than {MAX_MANIFEST_BYTES} bytes; not a manifest")
    try:
        # Depth is checked by parse_manifest on what the manifest keeps, not on the whole document.
        doc = loads_bounded(raw, max_depth=None)
    except JSONRefused as exc:
        raise ManifestError(f"{path} is not valid JSON ({exc}); re-download the version") from None
    manifest = parse_manifest(doc, str(path))
    # Freshly made and not yet shared: recording its size in place spares a copy of the dataclass.
    object.__setattr__(manifest, "source_bytes", len(raw))
    return manifest


def parse_manifest(doc: object, where: str = "layer.json") -> Manifest:
    """Check a decoded ``layer.json`` document and return its :class:`Manifest`."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{where}: a manifest must be a JSON object")
    fmt_name = doc.get("format")
    fmt_version = doc.get("format_version")
    if fmt_name != FORMAT:
        raise ManifestError(f"{where}: format {fmt_name!r} is not a version layer (expected {FORMAT!r})")
    if not isinstance(fmt_version, int) or isinstance(fmt_version, bool):
        raise ManifestError(f"{where}: format_version must be an integer, got {fmt_version!r}")
    # format_version 1 is registered once at import (register refuses a second): no key to build
    parser = _parse_v1 if fmt_version == 1 else _PARSERS.get(LayerFormat(fmt_name, fmt_version))
    if parser is None:
        known = ", ".join(str(f.version) for f in supported_formats() if f.format == FORMAT)
        raise ManifestError(
            f"{where}: format_version {fmt_version} is not supported by this reader "
            f"(it reads {known}); upgrade sds-jupyter"
        )
    manifest = parser(doc, where)
    _check_kept_depth(manifest, where)
    return manifest


def _check_kept_depth(manifest: Manifest, where: str) -> None:
    """Refuse a manifest whose kept free-form values nest too deep for recursive walkers.

    Only ``app``, ``changes`` and unknown fields keep nested JSON; everything else is
    reduced to strings and integers while parsing, so measuring those (not the whole
    document, with its files list) is the check that matters and the cheap one.
    """
    # The manifest object is level 1: a field's value starts at level 2, a change at level 3.
    kept: list[tuple[Any, int]] = [(value, 1) for value in manifest.extra.values()]
    if manifest.app is not None and not _flat(manifest.app.values()):
        kept.append((manifest.app, 1))
    # A change holding only scalars (nearly all do) is 3 levels deep: one C-level pass over
    # every change's values settles them all; any nesting goes through the full count.
    if not _flat(chain.from_iterable(map(dict.values, manifest.changes))):
        kept += [(change, 2) for change in manifest.changes]
    for value, above in kept:
        if isinstance(value, (dict, list)) and json_depth(value, MAX_JSON_DEPTH) + above > MAX_JSON_DEPTH:
            raise ManifestError(f"{where}: it nests more than {MAX_JSON_DEPTH} levels deep; not a manifest")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat(values: Iterable[Any]) -> bool:
    """Whether every value is a JSON scalar (exact types: anything else is counted in full)."""
    return set(map(type, values)) <= _SCALARS


_V1 = LayerFormat(FORMAT, 1)


@register(_V1)
def _parse_v1(doc: Mapping[str, Any], where: str) -> Manifest:
    try:
        fields = {
            "format": _V1,
            "parent": _required_str(doc, "parent"),
            "base": _optional_str(doc, "base"),
            "depth": _optional_depth(doc),
            "title": _optional_str(doc, "title"),
            "message": _optional_str(doc, "message"),
            "created_at": _optional_str(doc, "created_at"),
            "created_by": _optional_str(doc, "created_by"),
            "app": _optional_object(doc, "app"),
            "overlay": check_relative_path(doc.get("overlay", "overlay"), "overlay folder"),
            "files": _files(doc.get("files", [])),
            "deleted": tuple(check_whiteout(e) for e in _list(doc, "deleted")),
            "changes": tuple(_change(c) for c in _list(doc, "changes")),
            "extra": {k: v for k, v in doc.items() if k not in _V1_FIELDS},
            "source_bytes": 0,
        }
    except StackError as exc:
        raise type(exc)(f"{where}: {exc}") from None
    # Every field set in one step, as unpacked_manifest does: the frozen dataclass's __init__
    # sets each through object.__setattr__ (a walk of 500 manifests makes 500).
    manifest: Manifest = object.__new__(Manifest)
    manifest.__dict__.update(fields)
    return manifest


_V1_FIELDS = frozenset(
    {
        "format",
        "format_version",
        "parent",
        "base",
        "depth",
        "title",
        "message",
        "created_at",
        "created_by",
        "app",
        "overlay",
        "files",
        "deleted",
        "changes",
    }
)


def _files(value: object) -> FileList:
    """The ``files`` list, checked: a million entries in a few C-level passes, not a loop of checks.

    A short list (most versions add a few objects) is checked in one loop, the passes' setup
    costing more than its entries; the rules are the same (what the loop does not take goes to
    the entry-by-entry checks, which word the refusal).
    """
    if not isinstance(value, list):
        raise ManifestError("files must be a list of {key, size} objects")
    if len(value) <= _FEW_FILES:
        return _few_files(value)
    try:
        if value and set(map(type, value)) != {dict}:
            raise TypeError
        keys = list(map(_KEY, value))
        sizes = list(map(_SIZE, value))
        if keys and set(map(type, keys)) != {str}:
            raise TypeError
        if sizes and (set(map(type, sizes)) != {int} or min(sizes) < 0):
            raise TypeError
        if keys and not _all_plain(keys):
            raise TypeError
        return FileList(keys, array("q", sizes))
    except (TypeError, KeyError, OverflowError):
        return _files_one_by_one(value)


#: Up to this many files a manifest's list is checked in one loop (see :func:`_files`).
_FEW_FILES = 16


def _few_files(value: list[Any]) -> FileList:
    keys: list[str] = []
    sizes: list[int] = []
    for item in value:
        if type(item) is not dict:
            break
        key, size = item.get("key"), item.get("size", 0)
        if type(key) is not str or type(size) is not int or size < 0 or PLAIN_RELATIVE.fullmatch(key) is None:
            break
        keys.append(key)
        sizes.append(size)
    else:
        try:
            return FileList(keys, array("q", sizes))
        except OverflowError:
            pass
    return _files_one_by_one(value)


_KEY = operator.itemgetter("key")
_SIZE = operator.methodcaller("get", "size", 0)


def _all_plain(keys: list[str]) -> bool:
    """Whether every key is a plain relative path, in a few C-level scans of all keys at once.

    Joined by NUL (which no key may hold: counted) and with every separator made ``/``,
    an empty, ``.`` or ``..`` segment anywhere shows as ``//``, ``/./`` or ``/../``.
    """
    joined = "\x00".join(keys)
    if joined.count("\x00") != len(keys) - 1 or "\\" in joined:
        return False
    text = f"/{joined.replace(chr(0), '/')}/"
    return "//" not in text and "/./" not in text and "/../" not in text


def _files_one_by_one(value: list[Any]) -> FileList:
    """The same checks entry by entry: what finds and words the first entry refused."""
    keys: list[str] = []
    sizes: list[int] = []
    for item in value:
        if not isinstance(item, dict):
            raise ManifestError("each files entry must be an object with key and size")
        key = check_relative_path(item.get("key"), "file key")
        size = item.get("size", 0)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ManifestError(f"file {key!r} has size {size!r}; sizes are non-negative integers")
        keys.append(key)
        sizes.append(size)
    try:
        return FileList(keys, array("q", sizes))
    except OverflowError:
        raise ManifestError("a file size is larger than any file can be") from None


def _change(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("op"), str):
        raise ManifestError("each changes entry must be an object with a string op")
    return value  # freshly decoded JSON: nobody else holds it


def _list(doc: Mapping[str, Any], name: str) -> list[Any]:
    value = doc.get(name, [])
    if not isinstance(value, list):
        raise ManifestError(f"{name} must be a list")
    return value


def _required_str(doc: Mapping[str, Any], name: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{name} is missing or not a string")
    return value


def _optional_str(doc: Mapping[str, Any], name: str) -> str | None:
    value = doc.get(name)
    if value is not None and not isinstance(value, str):
        raise ManifestError(f"{name} must be a string")
    return value


def _optional_object(doc: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = doc.get(name)
    if value is not None and not isinstance(value, dict):
        raise ManifestError(f"{name} must be an object")
    return value


def _optional_depth(doc: Mapping[str, Any]) -> int | None:
    value = doc.get("depth")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ManifestError(f"depth must be a positive integer, got {value!r}")
    return value
