"""Chunks checked before zarr decompresses them: none may inflate past what its array declares.

Why: a version is downloaded, so its chunks are hostile input. A gzip chunk of 10 MB can
inflate to 10 GB, and zarr's codecs inflate a chunk whole before they look at its size
(numcodecs' gzip and zlib have no output bound, zstd and blosc allocate what their header
claims, the vlen codecs allocate the item count their first four bytes claim). So every chunk
the stack's store hands to zarr is checked first, against :func:`~sds_jupyter.limits.chunk_bound`
of its array (what its metadata declares one chunk holds, capped by the array's own size):

- gzip, zlib, bz2 and lzma are inflated as a stream with a bounded output, counted and
  thrown away, stopping at the first byte past the bound (memory: one step, not the chunk);
- zstd, blosc and lz4 state their decompressed size in their header: the claim is checked;
  a zstd frame that states none is refused (numcodecs would inflate it without a bound);
- the vlen codecs' item count must be at most the chunk's values: a text chunk is decoded
  (its claim checked first) to read it, and zarr is handed those decoded bytes in the codec's
  own uncompressed framing (:func:`bounded_decode`), so the chunk is decompressed once, not twice;
- a chunk larger, as stored, than its bound could compress to is refused by its size;
- a codec that cannot be bounded (or ``pickle``, which runs code) is refused by name.

A refusal is an :class:`~sds_jupyter.errors.InflationError` (a ``StackError``) naming the array,
so a request answers 400 naming the column, and ``open_anndata`` refuses that version by name.
Arrays are found from a chunk's key (the nearest folder above it with array metadata), and
their rules are kept per resolved stack, which never changes.
"""

from __future__ import annotations

import bz2
import lzma
import math
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from sds_jupyter.errors import InflationError, shown
from sds_jupyter.limits import chunk_bound, with_headroom
from sds_jupyter.lru import ByteLRU

try:  # ISA-L inflates the same streams several times quicker
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover - the optional dependency is missing
    _zlib = zlib  # type: ignore[misc]

__all__ = [
    "METADATA_NAMES",
    "ChunkRule",
    "ChunkRules",
    "bounded_decode",
    "check_chunk",
    "check_shard_range",
    "check_stored_size",
    "rule_from_metadata",
]

#: The documents of a zarr node (v2 and v3): never chunks.
METADATA_NAMES: Final = frozenset({"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"})
#: How much of a stream is inflated at a time while counting (then thrown away).
_STEP: Final = 1024 * 1024
#: Codecs whose header states the decoded size (checked before decoding, then decoded whole).
_SIZED: Final = frozenset({"zstd", "blosc", "lz4"})
#: A zstd block holds at most this many bytes (RFC 8878, 3.1.1.2.3).
_ZSTD_BLOCK: Final = 128 * 1024
_VLEN: Final = frozenset({"vlen-utf8", "vlen-bytes", "vlen-array"})
_CHECKSUMS: Final = frozenset({"crc32c", "crc32", "adler32", "fletcher32", "jenkins_lookup3"})
#: Codecs that never make more bytes than they are given (or that act on decoded values).
_HARMLESS: Final = frozenset(
    {"bytes", "transpose", "shuffle", "bitshuffle", "delta", "fixedscaleoffset", "quantize", "bitround", "astype"}
    | {"categorize", "packbits", "json2", "msgpack2", "json", "msgpack", "base64"}
)
_V3_TEXT: Final = frozenset({"string", "bytes", "variable_length_utf8", "variable_length_bytes"})
_ZSTD_MAGIC: Final = 0xFD2FB528
_UNSEEN: Final = object()
#: Rules remembered per stack, at most (a stack has as many arrays as it has columns and levels).
_MAX_RULES: Final = 1 << 14
#: Bytes of shard indexes remembered per stack (16 bytes an inner chunk: a 4,096-chunk shard's is 64 KiB).
SHARD_INDEX_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True)
class Codec:
    """One codec of an array's chain: its numcodecs id (or zarr v3 name) and its configuration."""

    name: str
    config: Mapping[str, Any]


@dataclass(frozen=True)
class ChunkRule:
    """What one chunk of an array may inflate to, and through which codecs."""

    array: str
    """The array's path in the store (what a refusal names)."""
    bound: int
    """The most bytes one chunk may decompress to (:func:`~sds_jupyter.limits.chunk_bound`)."""
    items: int
    """Values in one chunk (the most a vlen codec may claim)."""
    compressors: tuple[Codec, ...]
    """The byte codecs in the order a read undoes them."""
    vlen: bool
    """Whether the decoded bytes start with a vlen item count."""
    shard: ShardLayout | None = None

    @property
    def stored_bound(self) -> int:
        """The most bytes one chunk may be stored as: the bound, plus what a compressor may add."""
        return with_headroom(self.bound)


@dataclass(frozen=True)
class ShardLayout:
    """A sharded array's shard: its inner chunks' rule and where its index of them lies."""

    inner: ChunkRule
    count: int
    index_at_end: bool
    index_checksum: bool

    @property
    def index_bytes(self) -> int:
        return self.count * 16 + (4 if self.index_checksum else 0)


def _refuse(array: str, why: str) -> InflationError:
    return InflationError(f"Array {shown(array, 120)} cannot be read: {why}; the dataset is damaged or hostile.")


def check_chunk(
    rule: ChunkRule, key: str, data: bytes | bytearray | memoryview, ranged: bool = False
) -> bytes | bytearray | memoryview:
    """The bytes zarr should read for chunk ``data`` of ``rule``'s array, once it is known not to
    inflate past its bound (else an :class:`InflationError`).

    That is ``data`` itself, or, for a chunk the check had to decode whole (text through zstd,
    blosc or lz4), the same values in the codec's uncompressed framing: zarr undoes it with a copy.
    ``ranged``: ``data`` is a byte range of the object (zarr reads a shard's index and inner
    chunks so), checked as one inner chunk unless it is exactly the shard's index.
    """
    if rule.shard is not None:
        return _check_shard(rule, rule.shard, key, data, ranged)
    decoded = bounded_decode(rule, key, data)
    if decoded is None or len(rule.compressors) != 1:
        return data
    return _stored_frame(rule.compressors[0], decoded)


def bounded_decode(rule: ChunkRule, key: str, data: bytes | bytearray | memoryview) -> bytes | None:
    """The one reader of the rule: refuse chunk ``data`` if it would inflate past ``rule.bound``
    (or, as text, claims more values than a chunk holds), decoding no more than the bound.

    Returns the decoded bytes when they had to be decoded whole to be checked (text through
    zstd, blosc or lz4, whose value count lies in the decoded bytes), so that the caller hands
    them on instead of having the chunk decompressed a second time; None otherwise.
    """
    check_stored_size(rule, key, len(data))
    size, head, whole = _decoded(rule, key, memoryview(data))
    if size > rule.bound:
        raise _refuse(rule.array, f"chunk {shown(key, 80)} inflates past the {rule.bound:,} bytes its array declares")
    if rule.vlen and len(head) >= 4 and struct.unpack("<I", head[:4])[0] > rule.items:
        claimed = struct.unpack("<I", head[:4])[0]
        raise _refuse(rule.array, f"chunk {shown(key, 80)} claims {claimed:,} values; its chunks hold {rule.items:,}")
    return whole


def check_stored_size(rule: ChunkRule, key: str, size: int | None) -> None:
    """Refuse a chunk (or shard) stored larger than its values could ever compress to (None: not known)."""
    limit = rule.stored_bound
    if rule.shard is not None:
        limit = rule.shard.count * rule.shard.inner.stored_bound + rule.shard.index_bytes
    if size is not None and size > limit:
        raise _refuse(
            rule.array,
            f"chunk {shown(key, 80)} is stored as {size:,} bytes, more than its "
            f"{rule.bound:,} bytes of values could need",
        )


def check_shard_range(
    rule: ChunkRule, key: str, data: bytes | bytearray | memoryview, start: int, index: bytes | None
) -> bytes | bytearray | memoryview:
    """The bytes zarr should read for ``data``, the range of shard ``key`` from byte ``start``,
    once each inner chunk in it is known not to inflate past its bound.

    Why: zarr 3.2+ reads the inner chunks a selection needs in one ranged read where they lie
    next to each other (zarr 3.1 reads one chunk a range). Measured as one chunk, such a range
    of honest chunks was refused (seen on zarr 3.4.2: a few rows of a sharded X). ``index`` is the
    shard's index of inner chunks (the bytes zarr read to plan this range; None if unreadable):
    every inner chunk it places wholly inside the range is checked on its own, so every chunk
    zarr decodes from the range is checked (zarr cuts the range by the same index). A range that
    holds no whole listed chunk, or exactly one, is checked as one inner chunk, as before.
    """
    shard = rule.shard
    assert shard is not None
    if len(data) == shard.index_bytes:
        return data
    if index is None or len(index) != shard.index_bytes:
        return check_chunk(shard.inner, key, data)
    end = start + len(data)
    pairs = np.frombuffer(index[: shard.count * 16], dtype="<u8").reshape(-1, 2).tolist()
    inside = [(offset, nbytes) for offset, nbytes in pairs if offset >= start and offset + nbytes <= end]
    if len(inside) <= 1:
        return check_chunk(shard.inner, key, data)
    view = memoryview(data)
    for offset, nbytes in inside:
        bounded_decode(shard.inner, key, view[offset - start : offset - start + nbytes])
    return data


def _check_shard(
    rule: ChunkRule, shard: ShardLayout, key: str, data: bytes | bytearray | memoryview, ranged: bool
) -> bytes | bytearray | memoryview:
    """A shard read whole (each inner chunk its index lists) or a range of it (the index, or one
    inner chunk, handed on as :func:`check_chunk` hands on a chunk); returns what zarr should read."""
    if ranged:
        return check_chunk(shard.inner, key, data) if len(data) != shard.index_bytes else data
    check_stored_size(rule, key, len(data))
    if len(data) < shard.index_bytes:
        return data  # no index: zarr refuses it without inflating anything
    view = memoryview(data)
    index = view[len(view) - shard.index_bytes :] if shard.index_at_end else view[: shard.index_bytes]
    pairs = np.frombuffer(index[: shard.count * 16], dtype="<u8").reshape(-1, 2)
    for offset, nbytes in pairs.tolist():
        if offset == 2**64 - 1 and nbytes == 2**64 - 1:
            continue  # an empty inner chunk
        if offset + nbytes > len(view):
            raise _refuse(rule.array, f"shard {shown(key, 80)} lists an inner chunk beyond its end")
        bounded_decode(shard.inner, key, view[offset : offset + nbytes])
    return data


def _decoded(rule: ChunkRule, key: str, data: memoryview) -> tuple[int, bytes, bytes | None]:
    """How many bytes ``data`` decodes to through the rule's compressors (at most one past the
    bound is ever counted), the first four of them, and all of them when the last compressor
    had to decode them whole (else None)."""
    stages = list(rule.compressors)
    payload: bytes | memoryview = data
    while stages:
        codec = stages.pop(0)
        if codec.name in _CHECKSUMS:
            payload = _strip_checksum(codec, payload)
            continue
        keep = any(c.name not in _CHECKSUMS for c in stages)  # another compressor needs these bytes
        size, out = _inflate(rule, codec, key, payload, keep)
        if not keep or size > rule.bound:
            whole = out if rule.vlen and codec.name in _SIZED and len(out) == size and not stages else None
            return size, out[:4], whole
        payload = out
    return len(payload), bytes(payload[:4]), None


def _strip_checksum(codec: Codec, data: bytes | memoryview) -> bytes | memoryview:
    at_start = codec.name in ("crc32", "adler32") and codec.config.get("location", "start") == "start"
    return data[4:] if at_start else data[: max(0, len(data) - 4)]


def _inflate(rule: ChunkRule, codec: Codec, key: str, data: bytes | memoryview, keep: bool) -> tuple[int, bytes]:
    """(decoded size, the decoded bytes when ``keep`` else at least the first four) of one compressor.

    zstd, blosc and lz4 chunks decoded for their text's value count are returned whole."""
    name, limit = codec.name, rule.bound
    if name in ("gzip", "zlib"):
        return _stream(lambda: _zlib.decompressobj(31 if name == "gzip" else 15), data, limit, keep, name == "gzip")
    if name == "bz2":
        return _stream(bz2.BZ2Decompressor, data, limit, keep, True)
    if name == "lzma":
        return _stream(lambda: _lzma(codec.config), data, limit, keep, True)
    if name in ("zstd", "blosc", "lz4"):
        claimed = _claimed_size(rule, name, key, data)
        if claimed <= limit and (keep or rule.vlen):  # a vlen count is in the decoded bytes
            return claimed, _decode_claimed(codec, data)
        return claimed, b""
    if name == "pickle":
        raise _refuse(rule.array, "its chunks are pickled, and sds-jupyter never unpickles stored data")
    raise _refuse(
        rule.array,
        f"its chunks are compressed with {shown(name, 40)}, whose output cannot be bounded "
        "before decompressing (gzip, zlib, bz2, lzma, zstd, blosc and lz4 can)",
    )


def _stream(
    make: Callable[[], Any], data: bytes | memoryview, limit: int, keep: bool, members: bool
) -> tuple[int, bytes]:
    """Inflate ``data`` a step at a time (every member of it when ``members``), counting the output.

    Stops one step past ``limit``; keeps the output only when ``keep`` (then it is at most
    ``limit`` plus a step), else its first four bytes.
    """
    total, kept = 0, bytearray()
    rest: bytes | memoryview = data
    while True:
        decoder = make()
        pending: bytes | memoryview = rest
        while not decoder.eof:
            out = _step(decoder, pending)
            pending = getattr(decoder, "unconsumed_tail", b"")
            total += len(out)
            if keep or len(kept) < 4:
                kept += out if keep else out[: 4 - len(kept)]
            if total > limit:
                return total, bytes(kept)
            if not out and not pending and (not hasattr(decoder, "needs_input") or decoder.needs_input):
                return total, bytes(kept)  # truncated: zarr's own decoder refuses it
        rest = bytes(decoder.unused_data).lstrip(b"\0")
        if not members or not rest:
            return total, bytes(kept)


def _step(decoder: Any, data: bytes | memoryview) -> bytes:
    """At most one step of output (zlib takes its input again each call, bz2 and lzma keep it)."""
    if hasattr(decoder, "unconsumed_tail"):
        return bytes(decoder.decompress(data, _STEP))
    if decoder.needs_input:
        return bytes(decoder.decompress(data, _STEP))
    return bytes(decoder.decompress(b"", _STEP))


def _lzma(config: Mapping[str, Any]) -> lzma.LZMADecompressor:
    fmt = int(config.get("format", lzma.FORMAT_AUTO) or lzma.FORMAT_AUTO)
    if fmt == lzma.FORMAT_RAW:
        return lzma.LZMADecompressor(format=fmt, filters=config.get("filters"))
    return lzma.LZMADecompressor(format=lzma.FORMAT_AUTO if fmt == lzma.FORMAT_XZ else fmt)


def _claimed_size(rule: ChunkRule, name: str, key: str, data: bytes | memoryview) -> int:
    """The decompressed size a zstd, blosc or lz4 chunk states in its header (what the decoder allocates)."""
    head = bytes(data[:18])
    if name == "blosc" and len(head) >= 16:
        return int(struct.unpack_from("<I", head, 4)[0])
    if name == "lz4" and len(head) >= 4:
        return int(struct.unpack_from("<I", head, 0)[0])
    if name == "zstd":
        size = _zstd_content_size(head)
        if size is not None and (size > 0 or rule.items == 0):
            return size
        raise _refuse(rule.array, f"zstd chunk {shown(key, 80)} does not state how large it inflates")
    raise _refuse(rule.array, f"{name} chunk {shown(key, 80)} is too short to hold its header")


def _zstd_content_size(head: bytes) -> int | None:
    """The Frame_Content_Size of a zstd frame (RFC 8878, 3.1.1.1), or None when it is absent."""
    if len(head) < 6 or struct.unpack_from("<I", head, 0)[0] != _ZSTD_MAGIC:
        return None
    descriptor = head[4]
    flag, single = descriptor >> 6, (descriptor >> 5) & 1
    offset = 5 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 3]
    width = (1 if single else 0, 2, 4, 8)[flag]
    if width == 0 or len(head) < offset + width:
        return None
    value = int.from_bytes(head[offset : offset + width], "little")
    return value + 256 if width == 2 else value


def _decode_claimed(codec: Codec, data: bytes | memoryview) -> bytes:
    """A chunk whose claimed size was checked, decoded (only when another compressor is under it)."""
    import numcodecs  # type: ignore[import-untyped]

    decoded = numcodecs.get_codec({"id": codec.name, **codec.config}).decode(bytes(data))
    return bytes(memoryview(decoded).cast("B"))


def _stored_frame(codec: Codec, decoded: bytes) -> bytes:
    """``decoded`` framed as ``codec`` stores bytes it does not compress, so that zarr's own decode
    of it is a copy: the chunk was already decompressed once, by :func:`bounded_decode`.

    zstd: one frame of raw blocks stating its size; lz4 (numcodecs' framing): the size, then a
    block of literals only; blosc: its own memcpy frame (level 0).
    """
    size = len(decoded)
    if codec.name == "zstd":
        blocks = [decoded[at : at + _ZSTD_BLOCK] for at in range(0, size, _ZSTD_BLOCK)] or [b""]
        parts = [struct.pack("<IB", _ZSTD_MAGIC, 0xE0), size.to_bytes(8, "little")]  # one segment, 8-byte size
        for number, block in enumerate(blocks):
            last = number == len(blocks) - 1
            parts += [((len(block) << 3) | int(last)).to_bytes(3, "little"), block]  # type 0: raw
        return b"".join(parts)
    if codec.name == "lz4":
        extra = b"" if size < 15 else b"\xff" * ((size - 15) // 255) + bytes([(size - 15) % 255])
        return b"".join([struct.pack("<I", size), bytes([min(size, 15) << 4]), extra, decoded])
    import numcodecs.blosc  # type: ignore[import-untyped]

    return bytes(numcodecs.blosc.compress(np.frombuffer(decoded, dtype="u1"), b"blosclz", 0, numcodecs.blosc.NOSHUFFLE))


# ------------------------------------------------------------------ rules, from an array's metadata


def rule_from_metadata(array: str, doc: Mapping[str, Any]) -> ChunkRule | None:
    """The rule of the array whose metadata document (``zarr.json`` or ``.zarray``, parsed) is ``doc``.

    None when ``doc`` is not an array's. Metadata too odd to read is given the loosest rule the
    array's chunk shape allows: zarr then refuses it itself.
    """
    if "zarr_format" not in doc:
        return None
    if int(doc.get("zarr_format") or 0) == 2:
        return _rule_v2(array, doc)
    if doc.get("node_type") != "array":
        return None
    return _rule_v3(array, doc)


def _rule_v2(array: str, doc: Mapping[str, Any]) -> ChunkRule:
    itemsize = _v2_itemsize(doc.get("dtype"))
    shape, chunks = _ints(doc.get("shape")), _ints(doc.get("chunks"))
    filters = [_codec(f) for f in doc.get("filters") or []]
    compressor = doc.get("compressor")
    stages = ([_codec(compressor)] if compressor else []) + [f for f in reversed(filters) if f.name not in _VLEN]
    if any(f.name == "pickle" for f in filters):
        stages.insert(0, Codec("pickle", {}))
    vlen = itemsize is None and any(f.name in _VLEN for f in filters)
    return _rule(array, shape, chunks, itemsize, stages, vlen)


def _rule_v3(array: str, doc: Mapping[str, Any]) -> ChunkRule:
    itemsize = _v3_itemsize(doc.get("data_type"))
    shape = _ints(doc.get("shape"))
    grid = doc.get("chunk_grid") or {}
    chunks = _ints((grid.get("configuration") or {}).get("chunk_shape") if isinstance(grid, Mapping) else None)
    codecs = [_codec(c) for c in doc.get("codecs") or []]
    sharding = next((c for c in codecs if c.name == "sharding_indexed"), None)
    if sharding is not None:
        return _sharded(array, shape, chunks, itemsize, sharding)
    return _chain(array, shape, chunks, itemsize, codecs)


def _chain(array: str, shape: list[int], chunks: list[int], itemsize: int | None, codecs: list[Codec]) -> ChunkRule:
    """A v3 codec chain: what follows the array-to-bytes codec is undone first, last one first."""
    names = [c.name for c in codecs]
    vlen = any(name in _VLEN for name in names)
    after = next((i for i, name in enumerate(names) if name in _VLEN or name == "bytes"), -1)
    return _rule(array, shape, chunks, itemsize, list(reversed(codecs[after + 1 :])), vlen)


def _sharded(array: str, shape: list[int], shard: list[int], itemsize: int | None, codec: Codec) -> ChunkRule:
    config = codec.config
    inner_shape = _ints(config.get("chunk_shape"))
    inner_codecs = [_codec(c) for c in config.get("codecs") or []]
    if any(c.name == "sharding_indexed" for c in inner_codecs):
        raise _refuse(array, "its shards hold shards")
    inner = _chain(array, shape, inner_shape, itemsize, inner_codecs)
    count = math.prod(-(-s // max(c, 1)) for s, c in zip(shard, inner_shape, strict=False)) if inner_shape else 1
    index_codecs = [_codec(c).name for c in config.get("index_codecs") or []]
    layout = ShardLayout(inner, count, config.get("index_location", "end") != "start", "crc32c" in index_codecs)
    return ChunkRule(array, inner.bound * count, inner.items * count, (), False, layout)


def _rule(
    array: str, shape: list[int], chunks: list[int], itemsize: int | None, stages: list[Codec], vlen: bool
) -> ChunkRule:
    items = math.prod(chunks) if chunks else 1
    array_items = math.prod(shape) if shape else 1
    return ChunkRule(array, chunk_bound(items, array_items, itemsize), items, tuple(_compressing(stages)), vlen)


def _compressing(stages: Iterable[Codec]) -> Iterable[Codec]:
    """The stages a check must undo: compressors and checksums (the others never grow their input)."""
    return (s for s in stages if s.name not in _HARMLESS and s.name not in _VLEN)


def _codec(value: Any) -> Codec:
    """A codec entry of either format: v2 ``{"id": ..., ...}``, v3 ``{"name": ..., "configuration": ...}`` or a name."""
    if isinstance(value, str):
        return Codec(_plain(value), {})
    if not isinstance(value, Mapping):
        return Codec("?", {})
    if "id" in value:
        return Codec(_plain(str(value["id"])), {k: v for k, v in value.items() if k != "id"})
    config = value.get("configuration")
    return Codec(_plain(str(value.get("name"))), config if isinstance(config, Mapping) else {})


def _plain(name: str) -> str:
    """numcodecs' id of a codec however zarr v3 names it (``numcodecs.zlib`` is ``zlib``)."""
    return name.removeprefix("numcodecs.")


def _ints(value: Any) -> list[int]:
    if not isinstance(value, list | tuple):
        return []
    return [int(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0 for v in value]


def _v2_itemsize(dtype: Any) -> int | None:
    """Bytes per value of a v2 dtype; None for objects (text) and anything numpy cannot read."""
    try:
        parsed = np.dtype([tuple(field) for field in dtype] if isinstance(dtype, list) else dtype)
    except (TypeError, ValueError):
        return None
    return None if parsed.hasobject or parsed.itemsize == 0 else int(parsed.itemsize)


def _v3_itemsize(data_type: Any) -> int | None:
    """Bytes per value of a v3 data type; None for variable-length ones and unknown names."""
    name = (
        data_type
        if isinstance(data_type, str)
        else (data_type or {}).get("name")
        if isinstance(data_type, Mapping)
        else None
    )
    config = data_type.get("configuration") if isinstance(data_type, Mapping) else None
    if not isinstance(name, str) or name in _V3_TEXT:
        return None
    if isinstance(config, Mapping) and isinstance(config.get("length_bytes"), int):
        return int(config["length_bytes"])
    if name.startswith(("numpy.datetime64", "numpy.timedelta64")):
        return 8
    if name[:1] == "r" and name[1:].isdigit():
        return max(1, int(name[1:]) // 8)
    try:
        return int(np.dtype(name).itemsize) or None
    except TypeError:
        return None


class ChunkRules:
    """The rules of a store's arrays, found from chunk keys and remembered.

    Why per stack and not per store: a store is made per request (``store_key``), and the
    arrays of a resolved stack never change.
    """

    def __init__(self) -> None:
        self._folders: dict[str, ChunkRule | str | None] = {}
        self._lock = threading.Lock()
        #: Shard indexes by store key: a stack's objects never change, so neither do their indexes.
        self._shard_indexes: ByteLRU[bytes] = ByteLRU(SHARD_INDEX_BYTES)

    def __reduce__(self) -> tuple[type[ChunkRules], tuple[()]]:
        """Pickled empty (a stack in object storage travels to Dask's workers): found again there."""
        return (ChunkRules, ())

    def rule_for(self, key: str, read: Callable[[str], bytes | None]) -> ChunkRule | None:
        """The rule of the array whose chunk ``key`` is, or None (a metadata document, or no array's key).

        ``read`` reads one key of the store as stored (None when absent).
        """
        parts = key.split("/")
        if parts[-1] in METADATA_NAMES:
            return None
        folders = ["/".join(parts[:depth]) for depth in range(len(parts) - 1, -1, -1)]
        for folder in folders:  # an array known above the key answers without a read (arrays hold no nodes)
            known = self._folders.get(folder, _UNSEEN)
            if isinstance(known, ChunkRule):
                return known
            if known is None:
                break  # a group: whether an array lies between is not known yet
        for folder in folders:
            found = self._folder(folder, read)
            if found != "none":
                return found if isinstance(found, ChunkRule) else None
        return None

    def shard_index(self, key: str, shard: ShardLayout, read: Callable[[], bytes | None]) -> bytes | None:
        """Shard ``key``'s index of inner chunks: remembered, else ``read()`` (None if unreadable).

        Why: a range of a shard is checked against the shard's index (:func:`check_shard_range`),
        and zarr reads a shard a range at a time (zarr 3.1 one inner chunk a range): reading the
        index again for each range doubled the reads of a sharded array.
        """
        found = self._shard_indexes.get(key)
        if found is not None:
            return found
        index = read()
        if index is not None:
            self.keep_shard_index(key, shard, index)
        return index

    def keep_shard_index(self, key: str, shard: ShardLayout, index: bytes) -> None:
        """Remember shard ``key``'s index, read whole from where ``shard`` says it lies."""
        if len(index) == shard.index_bytes:
            self._shard_indexes.put(key, bytes(index), len(index))

    def learn(self, key: str, raw: bytes) -> None:
        """Remember the rule of a node whose metadata document ``key`` zarr just read (no read of its own)."""
        folder, _, name = key.rpartition("/")
        if name in ("zarr.json", ".zarray") and folder not in self._folders:
            self._remember(folder, self._parse(folder, name, raw))

    def _folder(self, folder: str, read: Callable[[str], bytes | None]) -> ChunkRule | str | None:
        """The rule of an array folder, None for a group's, "none" for a folder with no metadata."""
        known = self._folders.get(folder, _UNSEEN)
        if known is not _UNSEEN:
            return known  # type: ignore[return-value]
        found = self._look(folder, read)
        self._remember(folder, found)
        return found

    def _remember(self, folder: str, found: ChunkRule | str | None) -> None:
        with self._lock:
            if len(self._folders) >= _MAX_RULES:
                self._folders.clear()  # rules never go stale; this bounds memory
            self._folders[folder] = found

    @classmethod
    def _look(cls, folder: str, read: Callable[[str], bytes | None]) -> ChunkRule | str | None:
        lead = f"{folder}/" if folder else ""
        for name in ("zarr.json", ".zarray"):
            raw = read(f"{lead}{name}")
            if raw is not None:
                return cls._parse(folder, name, raw)
        return None if read(f"{lead}.zgroup") is not None else "none"

    @staticmethod
    def _parse(folder: str, name: str, raw: bytes) -> ChunkRule | None:
        """The rule a node's metadata document gives (None: a group's, or a document zarr itself refuses)."""
        import json

        try:
            doc = json.loads(raw)
        except ValueError:
            return None
        if isinstance(doc, Mapping) and name == ".zarray":
            doc = {"zarr_format": 2, **doc}
        return rule_from_metadata(folder or "/", doc) if isinstance(doc, Mapping) else None
