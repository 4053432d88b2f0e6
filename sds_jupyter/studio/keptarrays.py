"""Named arrays and a little JSON kept on disk between processes, under the identity of what they were derived from.

Why: a million cells' geometry (positions, outlines, their bounds, areas and the outline grid)
takes seconds of reading and arithmetic to derive from the stored objects, which never change
for their identity; a new server or kernel would otherwise derive it all again before its first
tissue. An entry is one folder: ``entry.json`` (the identity, the caller's JSON, each array's
name, dtype and shape) and one raw little-endian file per array, mapped read-only on open.

The folder (``$SDS_GEOMETRY_CACHE``, else ``$XDG_CACHE_HOME/sds-jupyter/geometry``) follows the
rules of :mod:`sds_jupyter.studio.keptfolders`: private, no links, published by rename, one
builder at a time, least recently used evicted past :data:`GEOMETRY_CACHE_BYTES`. An entry opens
only if its header names the identity asked for, lists only known dtypes and sane shapes, and
every file is this user's regular file of exactly the size the header implies; anything else is
rebuilt (and replaced), never read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sds_jupyter.stack import cache_dir, map_private_array, read_private_json
from sds_jupyter.studio.keptfolders import FolderTurn, KeptFolders

__all__ = [
    "GEOMETRY_CACHE_BYTES",
    "GEOMETRY_CACHE_ENV",
    "KEPT_HEADER_BYTES",
    "ArrayTurn",
    "KeptArrays",
    "geometry_cache_dir",
    "geometry_store",
]

#: Where derived cell geometry is kept: a folder, or ``off`` to keep none. Unset: ``$XDG_CACHE_HOME/sds-jupyter/geometry``.
GEOMETRY_CACHE_ENV = "SDS_GEOMETRY_CACHE"
#: The bytes the kept geometry may take together (the million-cell demo's is about 130 MB).
GEOMETRY_CACHE_BYTES = 4 * 1024**3
#: The largest ``entry.json`` read (it lists a few arrays and a little JSON).
KEPT_HEADER_BYTES = 1024 * 1024

_FORMAT = "kept-arrays-1"
_HEADER = "entry.json"
_DTYPES = frozenset({"<f4", "<f8", "<u2", "<u4", "<u8", "<i4", "<i8", "|u1"})
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


@dataclass
class KeptArrays:
    """An entry: the caller's JSON and arrays, and where they came from (``disk``, or ``built`` now)."""

    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]
    source: str = "built"
    folder: Path | None = field(default=None, repr=False)

    @property
    def nbytes(self) -> int:
        return sum(int(array.nbytes) for array in self.arrays.values())


def geometry_cache_dir() -> Path | None:
    """The folder cell geometry is kept in, or None when ``$SDS_GEOMETRY_CACHE`` is ``off``."""
    return cache_dir(GEOMETRY_CACHE_ENV, "geometry")


class ArrayStore:
    """Entries of named arrays kept in one private folder (``folder``, or ``default()`` at each use)."""

    def __init__(
        self,
        default: Callable[[], Path | None],
        folder: str | os.PathLike[str] | None = None,
        max_bytes: int = GEOMETRY_CACHE_BYTES,
        what: str = "cell geometry",
    ) -> None:
        chosen = None if folder is None else Path(os.path.abspath(folder))
        self._folders: KeptFolders[KeptArrays] = KeptFolders(
            lambda: chosen if chosen is not None else default(), max_bytes, what
        )

    @property
    def folder(self) -> Path | None:
        return self._folders.folder

    @contextlib.contextmanager
    def claim(self, identity: str) -> Iterator[ArrayTurn]:
        """A turn at ``identity``: ``turn.entry`` is the kept entry, mapped (or None); ``turn.fill`` keeps a new one.

        The owner checks the entry (what sizes cannot tell: that its arrays hold together) and,
        when there is none or it does not, makes the arrays in its own frame and hands them to
        ``fill``, which replaces what stood there. Held under the identity's lock, so one process
        derives while the others wait, then map what it kept. A cache that cannot be used or
        written (a full disk, a folder that refuses a build) does not fail the owner: ``fill``
        gives back what it was handed, from memory, and leaves nothing in the folder.
        """
        with self._folders.turn(identity, open_arrays) as turn:
            yield ArrayTurn(identity, turn)

    def get(
        self,
        identity: str,
        compute: Callable[[], tuple[Mapping[str, Any], Mapping[str, np.ndarray]]],
        accept: Callable[[KeptArrays], bool] = lambda _entry: True,
    ) -> KeptArrays:
        """The entry of ``identity``: mapped from disk if kept (and ``accept``ed), else ``compute()``d, kept and mapped.

        For owners in the studio itself (the shapes index); an owner above it takes a
        :meth:`claim`, so that the studio does not call it back.
        """
        with self.claim(identity) as turn:
            if turn.entry is not None and accept(turn.entry):
                return turn.entry
            return turn.fill(*compute())


class ArrayTurn:
    """A turn at one identity of an :class:`ArrayStore` (see :meth:`ArrayStore.claim`)."""

    def __init__(self, identity: str, turn: FolderTurn[KeptArrays]) -> None:
        self._identity = identity
        self._turn = turn
        #: The kept entry, mapped from disk (``source`` "disk"), or None.
        self.entry = turn.found

    def fill(self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> KeptArrays:
        """Keep ``meta`` and ``arrays`` for this identity; the entry as mapped back (or from memory when not kept)."""
        made = KeptArrays(dict(meta), {name: np.asarray(array) for name, array in arrays.items()})
        if self._turn.publish is None:
            return made

        def write(folder: Path) -> None:
            write_arrays(folder, self._identity, made.meta, made.arrays)

        def unkept(entry: KeptArrays, folder: Path) -> KeptArrays:
            shutil.rmtree(folder, ignore_errors=True)  # the mappings outlive the files' names
            entry.folder = None
            return entry

        try:
            entry = self._turn.publish(write, unkept)
        except OSError:
            return made  # made, then not written (a full disk): served from memory
        entry.source = "built"
        return entry


def geometry_store(folder: str | os.PathLike[str] | None = None) -> ArrayStore:
    """The store of derived cell geometry (``folder``, else :func:`geometry_cache_dir`)."""
    return ArrayStore(geometry_cache_dir, folder)


def write_arrays(folder: Path, identity: str, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` (one raw little-endian file each) then ``entry.json`` into ``folder`` (empty, the caller's own)."""
    listed = []
    for name, array in arrays.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"array name {name!r} is not a plain lower-case word")
        data = np.ascontiguousarray(array)
        data = data.astype(data.dtype.newbyteorder("<"), copy=False)
        if data.dtype.str not in _DTYPES:
            raise ValueError(f"array {name!r} is {data.dtype.str}, not one of {sorted(_DTYPES)}")
        with (folder / name).open("xb") as out:
            data.tofile(out)
        listed.append({"name": name, "dtype": data.dtype.str, "shape": [int(side) for side in data.shape]})
    header = {"format": _FORMAT, "identity": identity, "meta": dict(meta), "arrays": listed}
    (folder / _HEADER).write_text(json.dumps(header, allow_nan=False, ensure_ascii=False), encoding="utf-8")


def open_arrays(dir_fd: int, folder: Path, identity: str) -> KeptArrays | None:
    """The entry in the folder open as ``dir_fd`` if it is whole, this user's and built for ``identity``; else None.

    Each file's size is checked against the header's dtype and shape before it is mapped.
    """
    header = read_private_json(dir_fd, _HEADER, KEPT_HEADER_BYTES)
    if header is None or header.get("format") != _FORMAT or header.get("identity") != identity:
        return None
    meta, listed = header.get("meta"), header.get("arrays")
    if not isinstance(meta, dict) or not isinstance(listed, list):
        return None
    arrays: dict[str, np.ndarray] = {}
    for item in listed:
        try:
            name, dtype, shape = str(item["name"]), str(item["dtype"]), [int(side) for side in item["shape"]]
        except (KeyError, TypeError, ValueError):
            return None
        if not _NAME.fullmatch(name) or name in arrays or dtype not in _DTYPES or not 1 <= len(shape) <= 2:
            return None
        if any(side < 0 for side in shape):
            return None
        mapped = map_private_array(dir_fd, name, dtype, int(np.prod(shape, dtype=object)))
        if mapped is None:
            return None
        arrays[name] = mapped.reshape(shape)
    return KeptArrays(meta, arrays, "disk", folder)
