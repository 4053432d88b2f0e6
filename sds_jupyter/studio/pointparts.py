"""Reading a SpatialData points element (transcripts) a batch at a time, straight from a zarr group.

A points element is a folder of parquet parts (dask's ``to_parquet``) with the element's
attributes beside them (``spatialdata_attrs.feature_key`` names the gene column). A
Xenium or CosMx run holds tens to hundreds of millions of rows, so nothing here reads a
part whole: each part is opened through ranged reads of the store (its footer, then one
row group's columns at a time), and each column's size in a row group, as the footer
claims it, is checked against the house rule for one chunk (:func:`sds_jupyter.limits.chunk_bound`)
before it is decompressed.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from sds_jupyter import limits
from sds_jupyter.errors import ElementError, shown
from sds_jupyter.studio.elements import node_path
from sds_jupyter.studio.transforms import Axial, element_transform

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = [
    "SAMPLE_GROUPS",
    "SAMPLE_PAGE_BYTES",
    "SAMPLE_POINTS",
    "SAMPLE_READ_ROWS",
    "PointBatch",
    "PointSample",
    "PointsElement",
    "StoreFile",
    "element_fingerprint",
    "open_points",
    "point_batches",
    "point_sample",
    "points_names",
]

#: Value sizes of parquet's fixed-width physical types (None: variable-length bytes, text).
_PHYSICAL_BYTES: dict[str, int | None] = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12}
#: Rows handed on at once: bounds the reader's temporaries whatever a row group holds.
BATCH_ROWS = 1 << 20
#: The most parts an element may list (dask writes one a partition).
MAX_PARTS = 100_000
#: The most bytes of a part's footer read for the element's fingerprint (a footer is kilobytes).
FOOTER_BYTES = 1024 * 1024


@dataclass(frozen=True)
class PointsElement:
    """A points element opened (nothing read but its attributes and the list of its parts)."""

    name: str
    #: Store keys (relative to the group) of its parquet parts, in order.
    parts: tuple[str, ...]
    #: The gene column (``feature_key``), None when the element names none.
    feature_key: str | None
    transform: Axial


@dataclass(frozen=True)
class PointBatch:
    """Up to BATCH_ROWS points: positions in the canvas system and each one's gene as text codes."""

    x: np.ndarray
    y: np.ndarray
    #: Index into ``names`` (int32), or None without a gene column.
    codes: np.ndarray | None
    names: list[str]


def points_names(root: zarr.Group) -> list[str]:
    """The points elements of the store, sorted."""
    try:
        group = root["points"]
    except KeyError:
        return []
    return sorted(group.group_keys()) if isinstance(group, zarr.Group) else []


def open_points(root: zarr.Group, name: str, system: str | None = None) -> PointsElement:
    """Points element ``name``: its parts, gene column and transformation into ``system``."""
    try:
        element = root[f"points/{name}"]
    except KeyError:
        raise ElementError(f"No points element {name!r} in this store.") from None
    if not isinstance(element, zarr.Group):
        raise ElementError(f"The points element {name!r} is not a group.")
    attrs: dict[str, Any] = element.attrs.asdict()
    meta = attrs.get("spatialdata_attrs")
    feature = meta.get("feature_key") if isinstance(meta, Mapping) else None
    prefix = f"{node_path(root)}points/{name}/points.parquet"

    async def listed() -> list[str]:
        return [key async for key in root.store.list_prefix(prefix)]

    keys = sorted(k for k in sync(listed()) if k.endswith(".parquet") and (k == prefix or k.startswith(prefix + "/")))
    if not keys:
        raise ElementError(f"Points element {name!r} has no parquet parts.")
    if len(keys) > MAX_PARTS:
        raise ElementError(f"Points element {name!r} lists {len(keys):,} parts; at most {MAX_PARTS:,} are read.")
    transform = element_transform(attrs.get("coordinateTransformations"), system)
    parts = tuple(_natural(k) for k in keys)
    return PointsElement(name, tuple(k for _, k in sorted(parts)), str(feature) if feature else None, transform)


def _natural(key: str) -> tuple[tuple[int, str], str]:
    """Sort key putting ``part.10`` after ``part.9`` (dask numbers its parts)."""
    stem = key.rsplit("/", 1)[-1].removesuffix(".parquet")
    number = stem.rsplit(".", 1)[-1]
    return ((int(number), stem) if number.isdigit() else (-1, stem)), key


class StoreFile(io.RawIOBase):
    """One store object as a seekable file read by ranges: pyarrow reads the footer and the row groups it needs."""

    def __init__(self, store: Any, key: str) -> None:
        self.store, self.key, self.position = store, key, 0
        self.size = int(sync(store.getsize(key)))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        end = min(self.size, self.position + len(view))
        if end <= self.position:
            return 0
        found = sync(
            self.store.get(
                self.key, prototype=default_buffer_prototype(), byte_range=RangeByteRequest(self.position, end)
            )
        )
        data = b"" if found is None else found.to_bytes()
        view[: len(data)] = data
        self.position += len(data)
        return len(data)


def element_fingerprint(root: zarr.Group, element: PointsElement) -> str:
    """A digest of what the element's parts hold: each part's name and size and its parquet footer.

    Why the footers: they name every row group's row count, sizes and column statistics, so a
    part rewritten with other points (a demo built again at the same path) fingerprints
    differently, for a size and one small ranged read a part instead of reading the points.
    Every request for points asks it again (an element rewritten under a running server gets a
    new key), so the parts are asked all at once: one hop to zarr's event loop a request, not
    three a part (45 hops for 15 parts, each a wait for a core on a loaded machine).
    """
    keys = [node_path(root) + key for key in element.parts]
    tails = sync(_tails(root.store, keys))
    digest = hashlib.sha256()
    for key, path, (size, tail) in zip(element.parts, keys, tails, strict=True):
        end = tail[-8:]
        length = int.from_bytes(end[:4], "little") if len(end) == 8 and end[4:] == b"PAR1" else 0
        take = min(size, length + 8, FOOTER_BYTES)
        if take > len(tail):  # a footer longer than the tail read: its own ranged read
            handle = StoreFile(root.store, path)
            handle.seek(-take, io.SEEK_END)
            tail = handle.read(take) or b""
        digest.update(f"{key}\n{size}\n".encode("utf-8", "surrogatepass"))
        digest.update(tail[len(tail) - take :] if take else b"")
    return digest.hexdigest()


#: The bytes read from the end of every part at once for its fingerprint (a footer of a few row groups fits).
TAIL_BYTES = 64 * 1024


async def _tails(store: Any, keys: list[str]) -> list[tuple[int, bytes]]:
    """Each object's size and its last ``TAIL_BYTES`` bytes (fewer when it is smaller), asked concurrently."""
    import asyncio

    async def tail(key: str) -> tuple[int, bytes]:
        size = int(await store.getsize(key))
        take = min(size, TAIL_BYTES)
        if not take:
            return size, b""
        found = await store.get(
            key, prototype=default_buffer_prototype(), byte_range=RangeByteRequest(size - take, size)
        )
        return size, b"" if found is None else found.to_bytes()

    return list(await asyncio.gather(*(tail(key) for key in keys)))


def _columns(schema: pa.Schema, feature: str | None, name: str) -> list[str]:
    missing = [c for c in ("x", "y") if c not in schema.names]
    if missing:
        raise ElementError(f"Points element {name!r} has no {missing[0]!r} column.")
    return ["x", "y", *([feature] if feature and feature in schema.names else [])]


def _parts(
    root: zarr.Group, element: PointsElement, page_bytes: int | None = None
) -> Iterator[tuple[str, pq.ParquetFile, list[str]]]:
    """Each part of ``element`` opened (its footer read through ranged reads) with the columns to read.

    ``page_bytes``: read the column chunks ``page_bytes`` at a time, as their pages are decoded
    (a reader that wants the head of a row group reads its head only); else each is read whole,
    in reads of 1 MB (a reader of every row).
    """
    import pyarrow.parquet as pq

    for key in element.parts:
        raw = StoreFile(root.store, node_path(root) + key)
        if page_bytes:  # unbuffered here: pyarrow's own buffer, not a 1 MB one dropped at every seek between columns
            handle = pq.ParquetFile(raw, buffer_size=page_bytes, pre_buffer=False)
        else:
            handle = pq.ParquetFile(io.BufferedReader(raw, 1 << 20))
        yield key, handle, _columns(handle.schema_arrow, element.feature_key, element.name)


def _group_batches(
    part: tuple[str, pq.ParquetFile, list[str]], group: int, element: PointsElement, rows: int
) -> Iterator[PointBatch]:
    """Row group ``group`` of one part, checked against the chunk rule, ``rows`` points at a time."""
    key, handle, columns = part
    _check_row_group(handle.metadata, group, columns, element.name, key)
    for batch in handle.iter_batches(batch_size=rows, row_groups=[group], columns=columns):
        yield _batch(batch, element)


def point_batches(root: zarr.Group, element: PointsElement, rows: int = BATCH_ROWS) -> Iterator[PointBatch]:
    """Every point of ``element``, a row group (at most ``rows`` rows) at a time.

    Why ranged reads: a part of 2M rows is tens of MB; only the three columns the view draws
    are read, one row group at a time, so memory stays bounded however large the element is.
    """
    for part in _parts(root, element):
        for group in range(part[1].metadata.num_row_groups):
            yield from _group_batches(part, group, element, rows)


#: The most points of the sample shown while an element's index builds (4 coarse tiles: a fit view, as dense as the whole index shows it).
SAMPLE_POINTS = 65_536
#: The most rows that sample reads, from row groups spread over the element: quick whatever its size.
SAMPLE_READ_ROWS = 1_048_576
#: The most row groups it reads them from (evenly spaced over the element's): its reads stay bounded
#: whatever the element's size (a float column's dictionary page alone is up to 1 MB a row group).
SAMPLE_GROUPS = 32
#: The sample reads its row groups' heads this many bytes at a time (pyarrow's buffered page reads).
SAMPLE_PAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class PointSample:
    """A strided sample of an element: its batches, and how many rows the element holds (its footers' count)."""

    rows: int
    batches: Iterator[PointBatch]


def point_sample(
    root: zarr.Group, element: PointsElement, points: int | None = None, read_rows: int | None = None
) -> PointSample:
    """An even, deterministic sample of about ``points`` of ``element``'s points, reading at most ``read_rows``.

    (Defaults: :data:`SAMPLE_POINTS` and :data:`SAMPLE_READ_ROWS`, read at each call.)
    Why strided: the view shows it while the whole element is indexed (minutes at 10^8), so it
    must come in about a second at any size. It reads the first ``read_rows / groups`` rows of
    every row group of every part (of at most :data:`SAMPLE_GROUPS` row groups evenly spaced
    over them, when the element has more) and keeps every k-th point: the whole element, thinned,
    when it is small; else bands spread over the element's order (dask writes the frame's order,
    so an element stored sorted by place gives evenly spaced bands of it, never one corner).
    Only a row group's head is read, its pages :data:`SAMPLE_PAGE_BYTES` at a time: at 30
    million points (30 row groups of 1M rows) 74 MB of the 331 MB a whole read of those
    column chunks takes (their dictionary pages are most of it).
    """
    points = SAMPLE_POINTS if points is None else points
    read_rows = SAMPLE_READ_ROWS if read_rows is None else read_rows
    parts = list(_parts(root, element, SAMPLE_PAGE_BYTES))
    groups = [(p, g) for p in parts for g in range(p[1].metadata.num_row_groups)]
    if len(groups) > SAMPLE_GROUPS:
        groups = [groups[i * len(groups) // SAMPLE_GROUPS] for i in range(SAMPLE_GROUPS)]
    rows = sum(p[1].metadata.num_rows for p in parts)
    if not groups or rows == 0:
        return PointSample(rows, iter(()))
    per_group = max(1, -(-read_rows // len(groups)))
    readable = sum(min(p[1].metadata.row_group(g).num_rows, per_group) for p, g in groups)
    step = max(1, -(-readable // points))
    return PointSample(rows, _strided(groups, element, per_group, step))


def _strided(
    chosen: list[tuple[tuple[str, pq.ParquetFile, list[str]], int]], element: PointsElement, per_group: int, step: int
) -> Iterator[PointBatch]:
    """Every ``step``-th point of the first ``per_group`` rows of each chosen row group (one count across batches)."""
    seen = 0
    for part, group in chosen:
        read = 0
        for batch in _group_batches(part, group, element, min(BATCH_ROWS, per_group)):
            batch = _head(batch, per_group - read)
            read += len(batch.x)
            keep = slice((-seen) % step, None, step)
            seen += len(batch.x)
            yield PointBatch(
                batch.x[keep], batch.y[keep], None if batch.codes is None else batch.codes[keep], batch.names
            )
            if read >= per_group:
                break


def _head(batch: PointBatch, n: int) -> PointBatch:
    if len(batch.x) <= n:
        return batch
    return PointBatch(batch.x[:n], batch.y[:n], None if batch.codes is None else batch.codes[:n], batch.names)


def _check_row_group(metadata: pq.FileMetaData, group: int, columns: list[str], name: str, key: str) -> None:
    """Refuse a row group whose read columns claim to inflate past :func:`~sds_jupyter.limits.chunk_bound`.

    Why this rule: a column of a row group is to parquet what a chunk is to zarr, so it is held
    to the same bound (its rows, within the part's, at its value size; text at the house's
    bytes a value). Twice that, with the house's one headroom (:func:`~sds_jupyter.limits.with_headroom`,
    for page headers and levels): a writer may store a dictionary attempt and then the plain
    values, each at most the values' own size.
    """
    row_group = metadata.row_group(group)
    for index in range(row_group.num_columns):
        column = row_group.column(index)
        if column.path_in_schema not in columns:
            continue
        width = column.physical_type == "FIXED_LEN_BYTE_ARRAY" and metadata.schema.column(index).length
        itemsize = int(width) if width else _PHYSICAL_BYTES.get(column.physical_type)
        bound = limits.with_headroom(2 * limits.chunk_bound(row_group.num_rows, metadata.num_rows, itemsize))
        if column.total_uncompressed_size > bound:
            raise ElementError(
                f"Points element {name!r}: column {shown(column.path_in_schema)} of a row group of {shown(key)} "
                f"decompresses to {column.total_uncompressed_size:,} bytes, more than {bound:,}; "
                "rewrite it with smaller row groups."
            )


def _batch(batch: pa.RecordBatch, element: PointsElement) -> PointBatch:
    """One Arrow batch as canvas positions and gene codes (dictionary-encoded whatever the stored type)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    x = batch.column("x").to_numpy(zero_copy_only=False).astype(np.float64)
    y = batch.column("y").to_numpy(zero_copy_only=False).astype(np.float64)
    x, y = element.transform.apply(x, y)
    codes: np.ndarray | None = None
    names: list[str] = []
    if element.feature_key and element.feature_key in batch.schema.names:
        genes = batch.column(element.feature_key)
        if not pa.types.is_dictionary(genes.type):
            genes = pc.dictionary_encode(genes.cast(pa.string()))
        names = [str(v) for v in genes.dictionary.to_pylist()]
        codes = genes.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return PointBatch(np.asarray(x), np.asarray(y), codes, names)


#: The genes' colours (Tableau 10, then its lighter half): a gene's colour is its place among the
#: genes shown (or, showing every gene, its rank by count). The view gets them in the ``points``
#: reply and exports draw with them, so a gene has one colour on screen and on paper.
GENE_COLORS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#a0cbe8",
    "#ffbe7d",
    "#ff9d9a",
    "#86bcb6",
    "#8cd17d",
    "#f1ce63",
    "#d4a6c8",
    "#fabfd2",
    "#d7b5a6",
    "#79706e",
)
#: The most transcripts an export draws (beyond: an even sample of the region's, said in the legend).
MAX_EXPORT_POINTS = 400_000


@dataclass(frozen=True)
class ExportPoints:
    """The transcripts an export draws over its region: positions, a colour each, the legend's genes."""

    x: np.ndarray
    y: np.ndarray
    colors: list[str]
    #: (gene, colour) in the legend's order.
    legend: list[tuple[str, str]]
    radius: float
    #: How many the region held (more than drawn when sampled).
    total: int


def export_points(
    root: zarr.Group,
    element: str,
    genes: list[str],
    region: tuple[float, float, float, float],
    radius: float,
    system: str | None = None,
) -> ExportPoints:
    """The transcripts of ``genes`` (empty: every gene) in ``region``, read a row group at a time.

    Why a stream and a cap: an export of a whole 30M-transcript section must not hold them all;
    past MAX_EXPORT_POINTS in the region every k-th is kept (k doubling as they come), an even
    sample in the element's order.
    """
    opened = open_points(root, element, system)
    chosen = list(dict.fromkeys(genes))
    counts: dict[str, int] = {}
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    names: list[np.ndarray] = []
    step, total = 1, 0
    for batch in point_batches(root, opened):
        names_here = np.asarray([*batch.names, ""], dtype=object)
        codes = np.where(batch.codes < 0, len(batch.names), batch.codes) if batch.codes is not None else None
        if codes is not None:
            for name, count in zip(names_here, np.bincount(codes, minlength=len(names_here)), strict=True):
                counts[str(name)] = counts.get(str(name), 0) + int(count)
        keep = (batch.x >= region[0]) & (batch.x <= region[2]) & (batch.y >= region[1]) & (batch.y <= region[3])
        if chosen and codes is not None:
            keep &= np.isin(codes, [code for code, name in enumerate(names_here) if name in chosen])
        index = np.flatnonzero(keep)
        start = (-total) % step  # the global every-k-th, across batches
        total += len(index)
        index = index[start::step]
        xs.append(batch.x[index])
        ys.append(batch.y[index])
        names.append(names_here[codes[index]] if codes is not None else np.full(len(index), "", dtype=object))
        while sum(len(a) for a in xs) > MAX_EXPORT_POINTS:
            step *= 2
            xs, ys, names = [a[::2] for a in xs], [a[::2] for a in ys], [a[::2] for a in names]
    order = chosen or sorted(counts, key=lambda name: -counts[name])
    colour = {name: GENE_COLORS[i % len(GENE_COLORS)] for i, name in enumerate(order)}
    label_all = np.concatenate(names) if names else np.zeros(0, dtype=object)
    return ExportPoints(
        np.concatenate(xs) if xs else np.zeros(0),
        np.concatenate(ys) if ys else np.zeros(0),
        [colour.get(str(name), "#808080") for name in label_all],
        [(name, colour[name]) for name in order],
        radius,
        total,
    )
