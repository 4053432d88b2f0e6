"""The member table of a ``.zarr.zip``, read from its central directory into compact arrays.

A zip of a million chunks has a million members. Python's ``zipfile`` makes one
``ZipInfo`` object per member (about 700 bytes each) and a dict on top; this
index keeps the store keys sorted in one ``bytes`` blob with an offsets array,
and each member's numbers in typed arrays (about 50 bytes a member in all).
Lookups and prefix listings bisect the sorted names.

The central directory is parsed with numpy when it can be: every entry starts
with a four-byte signature, so the entries are found by searching for it, and
the search is trusted only when the found entries chain exactly (each one ends
where the next begins, the last at the directory's end). A signature inside a
name or an extra field breaks the chain, and then the directory is walked entry
by entry, as ``zipfile`` does.

Every check ``zipfile`` and the stack applied before still applies: member names
are safe relative paths (checked in one pass over all names, and one by one only
to word a refusal), and members that are duplicated, overlap, run past the data,
list two sizes though stored, or inflate beyond :data:`MAX_ZIP_RATIO` are
recorded as problems that readers refuse.

Indexes of local zips are cached (in a :class:`ZipIndexes`, which the caller owns and
passes) by real path, device, inode, size, mtime and ctime (ctime cannot be set back
by hand), so reopening a stack reuses the index and a zip replaced or rewritten in
place is read again. A zip changed in the last :data:`FRESH_SECONDS` is not cached at all.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
import struct
import time
from array import array
from collections.abc import Iterator
from typing import IO, NamedTuple

import numpy as np
import numpy.typing as npt

from sds_jupyter.lru import ByteLRU
from sds_jupyter.stack.storage.paths import check_relative_path

__all__ = ["MAX_ZIP_RATIO", "MIN_RATIO_CHECK_BYTES", "ROOT_DOCS", "Member", "ZipIndex", "ZipIndexes", "read_index"]

#: The documents at the root of a Zarr store, v3 first, with the format each names.
ROOT_DOCS: tuple[tuple[str, int], ...] = (
    ("zarr.json", 3),
    (".zgroup", 2),
    (".zmetadata", 2),
    (".zattrs", 2),
)
#: A zip member may inflate to at most this many times its compressed size (once past
#: MIN_RATIO_CHECK_BYTES). Deflate's own ceiling is about 1032:1, which only a run of one
#: repeated byte reaches; stores hold compressed chunks (about 1:1) and JSON (about 10:1).
MAX_ZIP_RATIO = 1000
MIN_RATIO_CHECK_BYTES = 1024 * 1024
#: The local header before a member's data: 30 bytes and the name, at least.
LOCAL_HEADER_BYTES = 30
#: How many indexes stay cached (the most recently used); one per zip base in use.
CACHED_INDEXES = 4
#: A zip changed this recently is not cached: on a disk with coarse timestamps, a rewrite
#: within the same tick could keep every field of the identity.
FRESH_SECONDS = 2.0

_STORED, _DEFLATED = 0, 8
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # one central directory entry's fixed part (46 bytes)
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_END = struct.Struct("<4s4H2LH")  # end of central directory (22 bytes)
_END_SIGNATURE = b"PK\x05\x06"
_END64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_END64_LOCATOR_SIGNATURE = b"PK\x06\x07"
_END64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_END64_SIGNATURE = b"PK\x06\x06"
_MAX_COMMENT = 65535
_U32_MAX = 0xFFFFFFFF


class Member(NamedTuple):
    """What a read needs of one member."""

    header_offset: int
    compress_size: int
    file_size: int
    crc: int
    method: int
    extra_length: int


class _Entries(NamedTuple):
    """The central directory's entries, in its order, as parallel arrays."""

    names: list[bytes]
    flags: npt.NDArray[np.uint64]
    method: npt.NDArray[np.uint64]
    crc: npt.NDArray[np.uint64]
    compress_size: npt.NDArray[np.uint64]
    file_size: npt.NDArray[np.uint64]
    header_offset: npt.NDArray[np.uint64]
    extra_length: npt.NDArray[np.uint64]
    raw_name_length: npt.NDArray[np.uint64]


def _compact(values: npt.NDArray[np.uint64]) -> array[int]:
    """The smallest unsigned typed array that holds ``values`` (4 bytes when they fit)."""
    if values.size == 0 or int(np.max(values)) <= _U32_MAX:
        return array("I", values.astype(np.uint32).tobytes())
    return array("Q", values.astype(np.uint64).tobytes())


class ZipIndex:
    """Store keys of one zip, sorted, and their members' numbers: bisected, never a dict."""

    def __init__(self, entries: _Entries, data_end: int, zip_name: str) -> None:
        names, order, duplicates = _checked_order(entries.names, entries.flags, zip_name)
        problems = _problems(entries._replace(names=names), data_end, duplicates)
        root = _zip_root(names, order)
        keep = [i for i in order if names[i].startswith(root)] if root else order
        cut = len(root)
        keys = [names[i][cut:] for i in keep] if cut else list(map(names.__getitem__, keep))
        self.root = root.decode("utf-8")
        self._blob = b"".join(keys)
        ends = np.zeros(len(keys) + 1, dtype=np.uint64)
        np.cumsum(np.fromiter(map(len, keys), dtype=np.uint64, count=len(keys)), out=ends[1:])
        del keys
        self._ends = _compact(ends)
        picked = np.asarray(keep, dtype=np.int64)
        self._header_offset = _compact(entries.header_offset[picked])
        self._compress_size = _compact(entries.compress_size[picked])
        self._file_size = _compact(entries.file_size[picked])
        self._crc = array("I", entries.crc[picked].astype(np.uint32).tobytes())
        self._method = array("H", entries.method[picked].astype(np.uint16).tobytes())
        self._extra = array("H", entries.extra_length[picked].astype(np.uint16).tobytes())
        self.problems = {
            name[cut:].decode("utf-8"): reason
            for name, reason in problems.items()
            if name.startswith(root) and not name.endswith(b"/")
        }

    def __len__(self) -> int:
        return len(self._ends) - 1

    def nbytes(self) -> int:
        """The bytes the index holds (its arrays and names), for the memory bound."""
        arrays = (self._ends, self._header_offset, self._compress_size, self._file_size, self._crc)
        return len(self._blob) + sum(a.itemsize * len(a) for a in (*arrays, self._method, self._extra))

    def _name(self, index: int) -> bytes:
        return self._blob[self._ends[index] : self._ends[index + 1]]

    def _bisect(self, target: bytes) -> int:
        """The first position whose name is not below ``target``."""
        blob, ends = self._blob, self._ends
        low, high = 0, len(ends) - 1
        while low < high:
            middle = (low + high) // 2
            if blob[ends[middle] : ends[middle + 1]] < target:
                low = middle + 1
            else:
                high = middle
        return low

    def find(self, key: str) -> int:
        """The position of ``key``, or -1."""
        target = key.encode("utf-8")
        index = self._bisect(target)
        return index if index < len(self) and self._name(index) == target else -1

    def member(self, index: int) -> Member:
        return Member(
            self._header_offset[index],
            self._compress_size[index],
            self._file_size[index],
            self._crc[index],
            self._method[index],
            self._extra[index],
        )

    def file_size(self, index: int) -> int:
        return self._file_size[index]

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every key starting with ``prefix``, sorted."""
        lead = prefix.encode("utf-8")
        index = self._bisect(lead)
        while index < len(self):
            name = self._name(index)
            if not name.startswith(lead):
                return
            yield name.decode("utf-8")
            index += 1

    def children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        """``(name, is_folder)`` of each immediate child of ``prefix`` ("" for the root).

        A folder's keys are skipped in one bisect, so a listing costs the number
        of children, not the number of keys below them.
        """
        lead = f"{prefix}/".encode() if prefix else b""
        found: dict[bytes, bool] = {}
        index = self._bisect(lead)
        while index < len(self):
            name = self._name(index)
            if not name.startswith(lead):
                break
            rest = name[len(lead) :]
            slash = rest.find(b"/")
            if slash < 0:
                found.setdefault(rest, False)
                index += 1
            else:
                child = rest[:slash]
                found[child] = True
                index = self._bisect(lead + child + b"0")  # "0" follows "/": past every key under child/
        for child, is_folder in found.items():
            yield child.decode("utf-8"), is_folder


# -- reading the directory -------------------------------------------------------------------


def read_index(handle: IO[bytes], size: int, zip_name: str) -> tuple[ZipIndex, int]:
    """The index of the zip open as ``handle`` (``size`` bytes), and where its data ends."""
    cd_offset, cd_size, concat = _end_record(handle, size)
    start = cd_offset + concat
    if concat < 0:
        raise ValueError("the central directory points before the start of the file (its head is cut off)")
    if start + cd_size > size:
        raise ValueError("the central directory lies outside the file")
    handle.seek(start)
    directory = handle.read(cd_size)
    if len(directory) != cd_size:
        raise ValueError("the central directory is truncated")
    entries = _parse_fast(directory) or _parse_walk(directory)
    entries = _zip64_fields(entries, directory)
    if concat:
        entries = entries._replace(header_offset=entries.header_offset + np.uint64(concat))
    return ZipIndex(entries, start, zip_name), start


def _end_record(handle: IO[bytes], size: int) -> tuple[int, int, int]:
    """``(central directory offset, its size, bytes prepended to the zip)`` from the end records."""
    tail_size = min(size, _END.size + _MAX_COMMENT + _END64_LOCATOR.size + _END64.size)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = tail.rfind(_END_SIGNATURE, 0, max(0, len(tail) - _END.size + 4))
    if at < 0:
        raise ValueError("File is not a zip file")
    _, disk, disk_cd, _, _, cd_size, cd_offset, _ = _END.unpack_from(tail, at)
    if disk or disk_cd:
        raise ValueError("a zip split over several disks")
    end_at = size - tail_size + at
    concat = end_at - cd_size - cd_offset
    locator_at = at - _END64_LOCATOR.size
    if locator_at >= 0 and tail[locator_at : locator_at + 4] == _END64_LOCATOR_SIGNATURE:
        record_at = locator_at - _END64.size
        if record_at < 0 or tail[record_at : record_at + 4] != _END64_SIGNATURE:
            raise ValueError("the zip64 end record is missing")
        fields = _END64.unpack_from(tail, record_at)
        cd_size, cd_offset = fields[8], fields[9]
        concat = end_at - _END64.size - _END64_LOCATOR.size - cd_size - cd_offset
    return cd_offset, cd_size, concat


def _u(buffer: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], offset: int, width: int) -> npt.NDArray[np.uint64]:
    """Little-endian unsigned fields of ``width`` bytes at ``at + offset``, gathered at once."""
    value = np.zeros(at.shape, dtype=np.uint64)
    for byte in range(width):
        value |= buffer[at + (offset + byte)].astype(np.uint64) << np.uint64(8 * byte)
    return value


def _parse_fast(directory: bytes) -> _Entries | None:
    """The entries found by their signatures, or None when they do not chain exactly."""
    if len(directory) < _CENTRAL.size:
        return None if directory else _walked([], [])
    signature = int.from_bytes(_CENTRAL_SIGNATURE, "little")
    found = []
    for shift in range(4):
        words = np.frombuffer(directory, dtype="<u4", count=(len(directory) - shift) // 4, offset=shift)
        found.append(np.flatnonzero(words == signature).astype(np.int64) * 4 + shift)
    at = np.sort(np.concatenate(found))
    if at.size == 0 or at[0] != 0 or int(at[-1]) + _CENTRAL.size > len(directory):
        return None
    buffer = np.frombuffer(directory, dtype=np.uint8)
    name_length = _u(buffer, at, 28, 2)
    extra_length = _u(buffer, at, 30, 2)
    following = at.astype(np.uint64) + np.uint64(_CENTRAL.size) + name_length + extra_length + _u(buffer, at, 32, 2)
    if not (np.array_equal(following[:-1], at[1:].astype(np.uint64)) and int(following[-1]) == len(directory)):
        return None
    starts = (at + _CENTRAL.size).tolist()
    names = [directory[s : s + n] for s, n in zip(starts, name_length.tolist())]
    return _Entries(
        names=names,
        flags=_u(buffer, at, 8, 2),
        method=_u(buffer, at, 10, 2),
        crc=_u(buffer, at, 16, 4),
        compress_size=_u(buffer, at, 20, 4),
        file_size=_u(buffer, at, 24, 4),
        header_offset=_u(buffer, at, 42, 4),
        extra_length=extra_length,
        raw_name_length=name_length,
    )


def _parse_walk(directory: bytes) -> _Entries:
    """The entries, one after the other (what ``zipfile`` does)."""
    rows: list[tuple[int, ...]] = []
    names: list[bytes] = []
    at = 0
    while at < len(directory):
        if at + _CENTRAL.size > len(directory) or directory[at : at + 4] != _CENTRAL_SIGNATURE:
            raise ValueError("Bad magic number for central directory")
        fields = _CENTRAL.unpack_from(directory, at)
        name_length, extra_length, comment_length = fields[12], fields[13], fields[14]
        start = at + _CENTRAL.size
        names.append(directory[start : start + name_length])
        # flags, method, crc, compressed size, size, header offset, extra length, name length
        rows.append((fields[5], fields[6], fields[9], fields[10], fields[11], fields[18], extra_length, name_length))
        at = start + name_length + extra_length + comment_length
    return _walked(names, rows)


def _walked(names: list[bytes], rows: list[tuple[int, ...]]) -> _Entries:
    table = np.array(rows, dtype=np.uint64).reshape(len(rows), 8)
    return _Entries(names, *(np.ascontiguousarray(table[:, column]) for column in range(8)))


def _zip64_fields(entries: _Entries, directory: bytes) -> _Entries:
    """Sizes and offsets too large for 32 bits, from each such entry's zip64 extra field."""
    marked = (entries.compress_size == _U32_MAX) | (entries.file_size == _U32_MAX) | (entries.header_offset == _U32_MAX)
    if not marked.any():
        return entries
    starts = _entry_starts(directory, len(entries.names))
    file_size, compress_size, header_offset = (
        entries.file_size.copy(),
        entries.compress_size.copy(),
        entries.header_offset.copy(),
    )
    for index in np.flatnonzero(marked).tolist():
        extra_at = starts[index] + _CENTRAL.size + int(entries.raw_name_length[index])
        extra = directory[extra_at : extra_at + int(entries.extra_length[index])]
        values = iter(_zip64_values(extra))
        for column in (file_size, compress_size, header_offset):
            if column[index] == _U32_MAX:
                value = next(values, None)
                if value is None:
                    raise ValueError("a zip64 member lacks its sizes")
                column[index] = value
    return entries._replace(file_size=file_size, compress_size=compress_size, header_offset=header_offset)


def _entry_starts(directory: bytes, count: int) -> list[int]:
    starts, at = [], 0
    for _ in range(count):
        starts.append(at)
        fields = _CENTRAL.unpack_from(directory, at)
        at += _CENTRAL.size + fields[12] + fields[13] + fields[14]
    return starts


def _zip64_values(extra: bytes) -> list[int]:
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            body = extra[at + 4 : at + 4 + length]
            return [int.from_bytes(body[i : i + 8], "little") for i in range(0, len(body) - 7, 8)]
        at += 4 + length
    return []


# -- checking names and members ----------------------------------------------------------------


def _checked_order(
    raw: list[bytes], flags: npt.NDArray[np.uint64], zip_name: str
) -> tuple[list[bytes], list[int], set[bytes]]:
    """Names as UTF-8 (checked), the positions of file members sorted by name, and duplicated names."""
    joined = b"\x00".join(raw) + b"\x00"
    names = raw
    if not joined.isascii():
        names = [_utf8(name, int(flag)) for name, flag in zip(raw, flags.tolist())]
        joined = b"\x00".join(names) + b"\x00"
    files: list[int] | None = None
    if b"/\x00" in joined:  # folder entries ("a/"): checked without their slash, then dropped
        folders = {i for i, name in enumerate(names) if name.endswith(b"/")}
        joined = b"\x00".join(n[:-1] if i in folders else n for i, n in enumerate(names)) + b"\x00"
        files = [i for i in range(len(names)) if i not in folders]
    _check_names(joined, names, zip_name)
    if files is None:
        files = list(range(len(names)))
    files.sort(key=names.__getitem__)
    ordered = list(map(names.__getitem__, files))
    if not any(map(operator.eq, ordered, itertools.islice(ordered, 1, None))):
        return names, files, set()
    # A duplicate (refused on reading) is kept once: the last in the zip, as zipfile does.
    duplicates = {a for a, b in itertools.pairwise(ordered) if a == b}
    files = [i for k, i in enumerate(files) if k + 1 == len(files) or names[files[k + 1]] != names[i]]
    return names, files, duplicates


def _utf8(name: bytes, flags: int) -> bytes:
    """A name as UTF-8: bit 11 says it is already, else it is code page 437 (the zip default)."""
    if flags & 0x800:
        name.decode("utf-8")  # raises on bytes that are not UTF-8, as zipfile does
        return name
    return name.decode("cp437").encode("utf-8")


def _check_names(joined: bytes, names: list[bytes], zip_name: str) -> None:
    """Every name a safe relative path: a few searches over all of them, then the culprit worded.

    ``joined`` is the names, each followed by NUL. With every separator made a
    slash, an empty, ``.`` or ``..`` segment shows as ``//``, ``/./`` or ``/../``.
    """
    if not names:
        return
    slashed = b"/" + joined.replace(b"\x00", b"/")
    plain = joined.count(0) == len(names) and b"\\" not in joined
    if plain and b"//" not in slashed and b"/./" not in slashed and b"/../" not in slashed:
        return
    for name in names:
        text = name.decode("utf-8")
        check_relative_path(text[:-1] if text.endswith("/") else text, f"zip member name in {zip_name}")
    raise ValueError("a member name holds a NUL byte")  # names with NUL split differently


def _problems(entries: _Entries, data_end: int, duplicates: set[bytes]) -> dict[bytes, str]:
    """Members a real store never has, by name: what is wrong with each.

    Duplicated names (which copy is the store's?), data that overlaps another
    member's or runs into the central directory (a crafted zip reusing bytes),
    stored members whose two sizes differ, and members that inflate beyond
    :data:`MAX_ZIP_RATIO` (a zip bomb). Computed over all members at once.
    """
    names = entries.names
    problems = dict.fromkeys(duplicates, "appears more than once in the zip")
    size, packed = entries.file_size, entries.compress_size
    for index in np.flatnonzero((entries.method == _STORED) & (packed != size)).tolist():
        problems[names[index]] = f"is stored uncompressed but lists {size[index]} bytes against {packed[index]}"
    bombs = (size > MIN_RATIO_CHECK_BYTES) & (size > np.uint64(MAX_ZIP_RATIO) * np.maximum(packed, 1))
    for index in np.flatnonzero(bombs & ~((entries.method == _STORED) & (packed != size))).tolist():
        problems[names[index]] = (
            f"inflates {packed[index]} bytes to {size[index]}, more than {MAX_ZIP_RATIO} times (a zip bomb, not a store)"
        )
    _extent_problems(entries, data_end, problems)
    return problems


def _extent_problems(entries: _Entries, data_end: int, problems: dict[bytes, str]) -> None:
    """Members whose bytes run past the data or into the next member's."""
    names = entries.names
    start = entries.header_offset
    end = start + np.uint64(LOCAL_HEADER_BYTES) + entries.raw_name_length + entries.compress_size
    order = np.lexsort((end, start))
    start, end = start[order], end[order]
    for position in np.flatnonzero(end > np.uint64(data_end)).tolist():
        problems.setdefault(names[int(order[position])], "runs past the end of the zip's data")
    for position in np.flatnonzero(start[1:] < end[:-1]).tolist():
        first, second = names[int(order[position])], names[int(order[position + 1])]
        problems.setdefault(first, f"overlaps member {second.decode('utf-8')!r}")
        problems.setdefault(second, f"overlaps member {first.decode('utf-8')!r}")


def _zip_root(names: list[bytes], order: list[int]) -> bytes:
    """The folder inside the zip that is the store's root: usually the zip's own root.

    Some tools zip the ``.zarr`` folder itself, so the store sits one level down.
    """

    def has(name: bytes) -> bool:
        at = bisect.bisect_left(order, name, key=names.__getitem__)
        return at < len(order) and names[order[at]] == name

    if not order or any(has(doc) for doc in _DOC_NAMES):
        return b""
    tops = {names[i].split(b"/", 1)[0] for i in order}
    if len(tops) == 1:
        (top,) = tops
        if any(has(top + b"/" + doc) for doc in _DOC_NAMES):
            return top + b"/"
    return b""


_DOC_NAMES = tuple(doc.encode() for doc, _ in ROOT_DOCS)


# -- the cache ---------------------------------------------------------------------------------


class ZipIndexes:
    """Indexes of local zips read by their owner, while each file is unchanged (an LRU of ``limit``).

    Why an object and not a module dict: whoever opens stacks owns what they remember
    (:class:`~sds_jupyter.stack.caches.StackCaches` holds one of these, a service's
    session holds its caches), so two owners never serve each other's reads and a
    test or a benchmark empties exactly the one it made. Reopening a zip base then costs
    an ``fstat`` instead of reading its central directory.
    """

    def __init__(self, limit: int = CACHED_INDEXES) -> None:
        self._entries: ByteLRU[tuple[ZipIndex, int]] = ByteLRU(None, max_entries=limit)

    @property
    def limit(self) -> int:
        """How many indexes are kept at most."""
        return self._entries.max_entries or 0

    def index(self, handle: IO[bytes], real_path: str, zip_name: str) -> tuple[ZipIndex, int]:
        """The index of a local zip open as ``handle``, from the cache while the file is unchanged.

        The identity is taken with ``fstat`` of the open descriptor the directory is
        then read from, so the index always describes the file that was read.
        """
        info = os.fstat(handle.fileno())
        identity = (real_path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        hit = self._entries.get(identity)
        if hit is not None:
            return hit
        built = read_index(handle, info.st_size, zip_name)
        if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < FRESH_SECONDS * 1e9:
            return built
        self._entries.put(identity, built)
        return built

    def clear(self) -> None:
        """Forget every cached index (benchmarks time a cold open with it)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
