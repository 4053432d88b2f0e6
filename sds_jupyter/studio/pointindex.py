"""A spatial index over a points element: every point sorted once by gene and Z-order, on disk.

Why: a view of 30 million transcripts can neither receive nor draw them all, and a view
zoomed in to a few cells must show every transcript there. The index cuts the element's
extent (a square) into a quadtree of tiles, level ``k`` being ``2**k`` tiles a side down to
the finest level :attr:`PointIndex.level`, whose fullest tile holds at most
:data:`FULL_TILE_POINTS`. Points are stored sorted by block (a coarse tile), then gene, then
Morton code at the finest level, so the points of any tile and gene are one contiguous run
found by a binary search. A tile at the finest level is sent whole; a coarser one sends an
even sample of at most :data:`TILE_POINTS` of its points (evenly spaced in Z-order, so spread
over the tile), and says so.

Memory stays bounded whatever the element's size: the element is read a row group at a
time, the sort is an external one (points go to block files on disk, each block sorted on its
own, a block denser than about :data:`BUCKET_POINTS` points split by key ranges until each
part fits), and the sorted columns are memory-mapped. An index is a folder of plain files (the three sorted
columns, the offsets and ``index.json``) that :func:`open_point_index` maps again in another
process; :mod:`sds_jupyter.studio.pointstore` keeps them in the user's cache folder, keyed by
the element's identity. Beyond about 10^8 points the same build runs unchanged (it is a
stream). Where its time goes (3M points, profiled): reading the parts is about a tenth; the
rest is arithmetic on the records (Z-order codes, the scatter) and the sort, which sorts
packed values (:func:`_by_key`) rather than gathering records after an argsort; so reading
the parts in parallel would win little, and the sort is where time was won.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sds_jupyter.errors import ElementError, shown
from sds_jupyter.stack import map_private_array, read_private_json
from sds_jupyter.studio.pointparts import PointBatch, PointSample

__all__ = [
    "BUCKET_POINTS",
    "FULL_TILE_POINTS",
    "MAX_LEVEL",
    "TILE_POINTS",
    "BuildStopped",
    "IndexShape",
    "IndexSizes",
    "PointIndex",
    "PointTile",
    "PointsTooMany",
    "build_point_index",
    "memory_point_index",
    "open_point_index",
    "sample_index",
    "shape_tile",
    "write_point_index",
]

#: At most this many points in a coarse tile's sample (6 bytes each on the wire: ~100 KB).
TILE_POINTS = 16_384
#: The finest level is the coarsest whose fullest tile holds at most this many points.
FULL_TILE_POINTS = 32_768
#: The finest level there can be (1,024 tiles a side): past it a tile's points are sent however many.
MAX_LEVEL = 10
#: The most points a tile sends (a refusal beyond: points that dense are stacked on one spot).
MAX_TILE_POINTS = 1 << 20
#: About the most points sorted in memory at once (a block of the external sort).
BUCKET_POINTS = 4_000_000
#: The most block files the sort writes (4**5).
_MAX_BLOCK_LEVEL = 5
#: The most bytes the index's offsets (a row of genes a block) take in memory.
OFFSETS_BYTES = 64 * 1024 * 1024
#: The most distinct genes (codes are uint16 on the wire).
MAX_GENES = 65_535
#: Records read back from disk at once while counting and scattering.
_CHUNK = 1 << 20
#: How an index folder is laid out; an index of another layout is not opened.
INDEX_FORMAT = 1
#: The most bytes of an index's ``index.json`` read (65,535 genes of long names).
MAX_META_BYTES = 128 * 1024 * 1024
_META = "index.json"

_RAW = np.dtype([("gene", "<u2"), ("x", "<f4"), ("y", "<f4")])
_BUCKET = np.dtype([("code", "<u4"), ("gene", "<u2"), ("x", "<f4"), ("y", "<f4")])


def _spread(v: np.ndarray) -> np.ndarray:
    """The bits of ``v`` (< 2**10) spread to the even bit positions."""
    v = v.astype(np.uint32)
    v = (v | (v << 8)) & 0x00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F
    v = (v | (v << 2)) & 0x33333333
    spread: np.ndarray = (v | (v << 1)) & 0x55555555
    return spread


def morton(column: np.ndarray | int, row: np.ndarray | int) -> np.ndarray:
    """The Z-order code of tile (column, row): the bits of both interleaved (column lowest)."""
    code: np.ndarray = _spread(np.asarray(column)) | (_spread(np.asarray(row)) << 1)
    return code


@dataclass(frozen=True)
class PointTile:
    """One tile's points: positions as uint16 steps across ``bounds``, and each point's gene code."""

    level: int
    column: int
    row: int
    bounds: list[float]
    x: np.ndarray
    y: np.ndarray
    gene: np.ndarray
    #: Points of the asked genes in the tile (in the sample, for a partial index); more than sent when ``sampled``.
    total: int
    sampled: bool

    @property
    def nbytes(self) -> int:
        return int(self.x.nbytes + self.y.nbytes + self.gene.nbytes)


@dataclass
class PointIndex:
    """The sorted points of one element (memory-mapped, or in memory) and where each block and gene starts."""

    #: The folder its files are mapped from; None for an index built in memory (:func:`memory_point_index`).
    folder: Path | None
    n_points: int
    #: The indexed square: x0, y0 and its side, in the canvas coordinate system.
    origin: tuple[float, float]
    side: float
    level: int
    block_level: int
    genes: list[str]
    gene_counts: np.ndarray
    #: (4**block_level, n_genes + 1): where gene g of block b starts; column n_genes, where the block ends.
    offsets: np.ndarray
    codes: np.ndarray
    x: np.ndarray
    y: np.ndarray
    #: Points dropped for a coordinate that is not a finite number.
    skipped: int = 0
    #: The most points a coarse tile sends (its sample's size).
    tile_points: int = TILE_POINTS
    #: Whether this process built it (False: opened as another process, or an earlier run, left it).
    built: bool = False
    #: A sample of the element shown while its index builds (:func:`sample_index`): every tile says it is sampled.
    partial: bool = False
    #: The rows the element holds (its parquet footers' count): more than ``n_points`` for a sample.
    rows: int = 0
    _cleanup: weakref.finalize | None = field(default=None, repr=False)

    @property
    def nbytes(self) -> int:
        """What keeping it costs: its files on disk (12 bytes a point) and its offsets in memory."""
        return 12 * self.n_points + int(self.offsets.nbytes + self.gene_counts.nbytes) + 64 * len(self.genes)

    @property
    def bounds(self) -> list[float]:
        return [self.origin[0], self.origin[1], self.origin[0] + self.side, self.origin[1] + self.side]

    def tile_bounds(self, level: int, column: int, row: int) -> list[float]:
        size = self.side / (1 << level)
        x0, y0 = self.origin[0] + column * size, self.origin[1] + row * size
        return [x0, y0, x0 + size, y0 + size]

    def gene_codes(self, names: Sequence[str] | None) -> np.ndarray:
        """The codes of ``names`` (None: every gene); an unknown name is refused."""
        if names is None:
            return np.arange(len(self.genes))
        known = {name: code for code, name in enumerate(self.genes)}
        missing = [name for name in names if name not in known]
        if missing and self.partial:  # a rare gene the sample missed: none of it shown yet
            names = [name for name in names if name in known]
        elif missing:
            raise ElementError(f"No gene {shown(missing[0])} in these points; ask for genes the index lists.")
        return np.asarray(sorted({known[name] for name in names}), dtype=np.int64)

    def tile(self, level: int, column: int, row: int, genes: Sequence[str] | None = None) -> PointTile:
        """Tile (``column``, ``row``) of ``level``: every point of ``genes`` at the finest level, else a sample."""
        if not 0 <= level <= self.level:
            raise ElementError(f"Points level {level} is not in this index (levels 0 to {self.level}).")
        count = 1 << level
        if not (0 <= column < count and 0 <= row < count):
            raise ElementError(f"Points tile ({column}, {row}) is outside level {level}'s {count} x {count} tiles.")
        starts, lengths, owners = self._segments(level, column, row, self.gene_codes(genes))
        total = int(lengths.sum())
        sampled = level < self.level and total > self.tile_points
        if not sampled and total > MAX_TILE_POINTS:
            raise ElementError(
                f"Points tile ({column}, {row}) of level {level} holds {total:,} points, more than {MAX_TILE_POINTS:,}; "
                "ask for fewer genes."
            )
        taken = _sample(lengths, self.tile_points / total) if sampled else lengths
        index = np.repeat(starts - np.concatenate([[0], np.cumsum(taken)[:-1]]), taken) + np.arange(int(taken.sum()))
        if sampled:  # evenly spaced within each run, not its first points
            within = index - np.repeat(starts, taken)
            index = np.repeat(starts, taken) + (within * np.repeat(lengths, taken)) // np.maximum(
                np.repeat(taken, taken), 1
            )
        bounds = self.tile_bounds(level, column, row)
        return PointTile(
            level,
            column,
            row,
            bounds,
            _steps(np.asarray(self.x[index]), bounds[0], bounds[2]),
            _steps(np.asarray(self.y[index]), bounds[1], bounds[3]),
            np.repeat(owners, taken).astype(np.uint16),
            total,
            sampled or self.partial,
        )

    def _segments(
        self, level: int, column: int, row: int, genes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The runs of sorted points in the tile: their starts, lengths and genes."""
        code = int(morton(column, row))
        offsets = self.offsets
        if level <= self.block_level:
            shift = 2 * (self.block_level - level)
            blocks = np.arange(code << shift, (code + 1) << shift)
            starts = offsets[blocks[:, None], genes[None, :]]
            ends = offsets[blocks[:, None], genes[None, :] + 1]
            owners = np.broadcast_to(genes[None, :], starts.shape)
            return starts.ravel(), (ends - starts).ravel(), owners.ravel()
        block = code >> (2 * (level - self.block_level))
        shift = 2 * (self.level - level)
        low, high = code << shift, (code + 1) << shift
        starts, lengths = [], []
        for gene in genes:
            a, b = int(offsets[block, gene]), int(offsets[block, gene + 1])
            run = self.codes[a:b]
            first = a + int(np.searchsorted(run, low, side="left"))
            last = a + int(np.searchsorted(run, high, side="left"))
            starts.append(first)
            lengths.append(last - first)
        return np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64), genes.astype(np.int64)

    def close(self) -> None:
        """Remove the files of an index no cache keeps now (they are removed anyway when it is dropped)."""
        if self._cleanup is not None:
            self._cleanup()


@dataclass(frozen=True)
class IndexShape:
    """What the view knows of a whole index (its ``points`` reply): the square, the levels, the genes' order.

    Why kept apart: a tile of a whole index dropped from memory that cannot be made again (the
    disk refuses it, memory may not hold it) is answered from the element's sample
    (:func:`shape_tile`), cut to the tile the view asked for and coded as its genes are.
    """

    origin: tuple[float, float]
    side: float
    level: int
    genes: tuple[str, ...]
    tile_points: int

    @staticmethod
    def of(index: PointIndex) -> IndexShape:
        return IndexShape(index.origin, index.side, index.level, tuple(index.genes), index.tile_points)

    @property
    def nbytes(self) -> int:
        return 64 + sum(64 + len(name) for name in self.genes)

    def tile_bounds(self, level: int, column: int, row: int) -> list[float]:
        if not 0 <= level <= self.level:
            raise ElementError(f"Points level {level} is not in this index (levels 0 to {self.level}).")
        count = 1 << level
        if not (0 <= column < count and 0 <= row < count):
            raise ElementError(f"Points tile ({column}, {row}) is outside level {level}'s {count} x {count} tiles.")
        size = self.side / count
        x0, y0 = self.origin[0] + column * size, self.origin[1] + row * size
        return [x0, y0, x0 + size, y0 + size]


def shape_tile(
    sample: PointIndex, shape: IndexShape, level: int, column: int, row: int, genes: Sequence[str] | None
) -> PointTile:
    """Tile (``column``, ``row``) of ``level`` of the index ``shape`` describes, from ``sample``'s points only.

    The sample's points inside the tile, its gene codes as ``shape``'s (the view colours by
    those), at most ``shape.tile_points`` of them evenly spaced; always ``sampled``: a sample
    never holds every point of a tile. A gene ``shape`` does not name is refused, as
    :meth:`PointIndex.tile` refuses it.
    """
    bounds = shape.tile_bounds(level, column, row)
    known = {name: code for code, name in enumerate(shape.genes)}
    if genes is not None:
        missing = [name for name in genes if name not in known]
        if missing:
            raise ElementError(f"No gene {shown(missing[0])} in these points; ask for genes the index lists.")
    mapped = np.asarray([known.get(name, -1) for name in sample.genes], dtype=np.int64)
    n_genes = len(sample.genes)
    runs = (sample.offsets[:, 1:] - sample.offsets[:, :-1]).ravel() if n_genes else np.zeros(0, np.int64)
    codes = np.repeat(np.tile(mapped, len(sample.offsets)), runs) if n_genes else np.full(sample.n_points, -1)
    x, y = np.asarray(sample.x, dtype=np.float64), np.asarray(sample.y, dtype=np.float64)
    keep = (codes >= 0) & (x >= bounds[0]) & (x < bounds[2]) & (y >= bounds[1]) & (y < bounds[3])
    if genes is not None:
        keep &= np.isin(codes, [known[name] for name in genes])
    chosen = np.flatnonzero(keep)
    total = len(chosen)
    if total > shape.tile_points:
        chosen = chosen[(np.arange(shape.tile_points) * total) // shape.tile_points]
    return PointTile(
        level,
        column,
        row,
        bounds,
        _steps(x[chosen], bounds[0], bounds[2]),
        _steps(y[chosen], bounds[1], bounds[3]),
        codes[chosen].astype(np.uint16),
        total,
        True,
    )


def _sample(lengths: np.ndarray, fraction: float) -> np.ndarray:
    """How many of each run a sample of ``fraction`` takes: proportional, the remainders to the largest runs."""
    exact = lengths * fraction
    taken = np.floor(exact).astype(np.int64)
    short = round(float(exact.sum())) - int(taken.sum())
    if short > 0:
        taken[np.argsort(taken - exact)[:short]] += 1
    sample: np.ndarray = np.minimum(taken, lengths)
    return sample


def _steps(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Positions as uint16 steps from ``low`` to ``high`` (the browser maps them back)."""
    span = max(high - low, 1e-30)
    return np.clip(np.rint((values.astype(np.float64) - low) / span * 65535), 0, 65535).astype(np.uint16)


# ---------------------------------------------------------------------------- building


@dataclass
class _Survey:
    n: int = 0
    skipped: int = 0
    box: list[float] = field(default_factory=lambda: [np.inf, np.inf, -np.inf, -np.inf])
    genes: dict[str, int] = field(default_factory=dict)


def _codes(batch: PointBatch, genes: dict[str, int]) -> np.ndarray:
    """The batch's genes as the index's codes (a name seen first gets the next code)."""
    if batch.codes is None:
        names, codes = [""], np.zeros(len(batch.x), dtype=np.int64)
    elif (batch.codes < 0).any():  # a point without a gene: named ""
        names, codes = [*batch.names, ""], np.where(batch.codes < 0, len(batch.names), batch.codes)
    else:
        names, codes = batch.names, batch.codes
    for name in names:
        if name not in genes:
            if len(genes) >= MAX_GENES:
                raise ElementError(f"These points name more than {MAX_GENES:,} genes; at most that many are indexed.")
            genes[name] = len(genes)
    lookup = np.asarray([genes[name] for name in names], dtype=np.uint16)
    return lookup[codes]


def _surveyed(batch: PointBatch, survey: _Survey) -> np.ndarray:
    """The batch's finite points as (gene, x, y) records, counted into ``survey`` (bounds, gene names, skipped)."""
    keep = np.isfinite(batch.x) & np.isfinite(batch.y)
    survey.skipped += int(len(keep) - keep.sum())
    records = np.empty(int(keep.sum()), dtype=_RAW)
    records["gene"] = _codes(batch, survey.genes)[keep]
    records["x"], records["y"] = batch.x[keep], batch.y[keep]
    if len(records):
        box = survey.box
        box[:] = [
            min(box[0], float(records["x"].min())),
            min(box[1], float(records["y"].min())),
            max(box[2], float(records["x"].max())),
            max(box[3], float(records["y"].max())),
        ]
    survey.n += len(records)
    return records


class BuildStopped(Exception):  # noqa: N818 - it says what happened, as PointsTooMany does
    """A build asked to stop (its process is ending) stopped between two of its parts; nothing of it is kept."""


def _go_on(stop: threading.Event | None) -> None:
    """Raise :class:`BuildStopped` if ``stop`` is set: checked between a build's parts (a batch, a chunk, a block)."""
    if stop is not None and stop.is_set():
        raise BuildStopped("The points index build stopped: its process is ending.")


def _write_raw(batches: Iterable[PointBatch], path: Path, stop: threading.Event | None = None) -> _Survey:
    """Pass one: every finite point as (gene, x, y) records on disk, the bounds and gene names on the way."""
    survey = _Survey()
    with path.open("wb") as out:
        for batch in batches:
            _go_on(stop)
            out.write(_surveyed(batch, survey).tobytes())
    return survey


def _square(survey: _Survey) -> tuple[tuple[float, float], float]:
    """The indexed square of the surveyed points: its corner and side (a unit square when there are none)."""
    x0, y0, x1, y1 = survey.box if survey.n else [0.0, 0.0, 1.0, 1.0]
    return (x0, y0), max(x1 - x0, y1 - y0) * (1 + 1e-6) or 1.0


def _gene_names(survey: _Survey) -> list[str]:
    genes = [""] * len(survey.genes)
    for name, code in survey.genes.items():
        genes[code] = name
    return genes


def _chunks(path: Path, dtype: np.dtype, n: int, chunk: int = _CHUNK) -> Iterable[np.ndarray]:
    """The ``n`` records of ``path``, ``chunk`` at a time.

    Read, not memory-mapped: a mapping's pages stay resident (and counted) as it is walked, so
    the process would grow with the element; a read holds one chunk.
    """
    with path.open("rb") as handle:
        for start in range(0, n, chunk):
            yield np.fromfile(handle, dtype=dtype, count=min(chunk, n - start))


def _cell_codes(records: np.ndarray, origin: tuple[float, float], side: float, level: int) -> np.ndarray:
    count = 1 << level
    column = np.clip(((records["x"] - origin[0]) / side * count).astype(np.int64), 0, count - 1)
    row = np.clip(((records["y"] - origin[1]) / side * count).astype(np.int64), 0, count - 1)
    return morton(column, row)


def _levels(histogram: np.ndarray, full_tile: int, bucket: int, n_genes: int) -> tuple[int, int]:
    """The finest level (its fullest tile within ``full_tile`` points) and the sort's block level (``bucket``).

    The block level is also kept low enough that the offsets (a row of ``n_genes + 1`` a block)
    stay within OFFSETS_BYTES: a panel of 5,000 genes gets fewer, larger blocks.
    """

    def fullest(level: int) -> int:
        return int(histogram.reshape(-1, 4 ** (MAX_LEVEL - level)).sum(axis=1).max()) if histogram.sum() else 0

    level = next((k for k in range(MAX_LEVEL + 1) if fullest(k) <= full_tile), MAX_LEVEL)
    by_offsets = next((k for k in range(_MAX_BLOCK_LEVEL, 0, -1) if 4**k * (n_genes + 1) * 8 <= OFFSETS_BYTES), 0)
    cap = min(level, _MAX_BLOCK_LEVEL, by_offsets)
    block = next((k for k in range(cap + 1) if fullest(k) <= bucket), cap)
    return level, block


@dataclass(frozen=True)
class IndexSizes:
    """The sizes an index is cut to (the defaults above; tests make them small to see every level on little data)."""

    tile_points: int = TILE_POINTS
    full_tile_points: int = FULL_TILE_POINTS
    bucket_points: int = BUCKET_POINTS
    #: Records read back from disk at once while counting and scattering (not in the repr: it changes no index).
    chunk_points: int = field(default=_CHUNK, repr=False)


def build_point_index(
    batches: Iterable[PointBatch],
    where: str | Path | None = None,
    sizes: IndexSizes = IndexSizes(),
    stop: threading.Event | None = None,
) -> PointIndex:
    """Index ``batches`` (a points element read by :func:`~sds_jupyter.studio.pointparts.point_batches`).

    ``where``: the folder the private temporary folder is made in (default: the system's); the
    files go with the index (dropped and collected) or when the process ends.
    """
    folder = Path(tempfile.mkdtemp(prefix="sds-points-", dir=where))
    try:
        write_point_index(batches, folder, "", sizes, stop)
        index = _opened(folder, "")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return removed_with(index)


def sample_index(sample: PointSample) -> PointIndex:
    """An index of ``sample`` (:func:`~sds_jupyter.studio.pointparts.point_sample`) in memory, partial unless it read every row.

    Why an index of its own: the view asks for its tiles as for any index (a few levels, every
    tile saying it is sampled) while the element's own index builds. Why in memory: it is small
    (at most ``SAMPLE_POINTS``), comes before anything else, and must come on a full disk too.
    Why not partial when it holds every point (an element under ``SAMPLE_POINTS``): it is then
    the index :func:`memory_point_index` builds of the whole element, and a view calling it a
    sample ("60,000 of 60,000") would say something untrue.
    """
    index = memory_point_index(sample.batches)
    index.partial, index.rows = index.n_points < sample.rows, sample.rows
    return index


class PointsTooMany(ElementError):
    """More points than an index built in memory may hold (:func:`memory_point_index`'s ``max_points``).

    ``refused``: why the disk refused the index first, in the system's words (e.g. "No space
    left on device"), when that is why memory was tried; else empty.
    """

    def __init__(self, message: str, refused: str = "") -> None:
        super().__init__(message)
        self.refused = refused


def memory_point_index(
    batches: Iterable[PointBatch],
    sizes: IndexSizes = IndexSizes(),
    max_points: int | None = None,
    stop: threading.Event | None = None,
) -> PointIndex:
    """The index of ``batches`` built in memory, no file written: the same index as :func:`write_point_index`'s.

    For a sample and for an element whose index cannot be written (a full disk, a cache folder
    that refuses it): ``max_points`` bounds what it holds (about 26 bytes a point while it
    sorts, 12 kept), and an element past it raises :class:`PointsTooMany` as it is read.
    """
    survey, parts = _Survey(), []
    for batch in batches:
        _go_on(stop)
        parts.append(_surveyed(batch, survey))
        if max_points is not None and survey.n > max_points:
            raise PointsTooMany(f"These points are more than {max_points:,}: too many to index in memory.")
    records = np.concatenate(parts) if parts else np.zeros(0, dtype=_RAW)
    del parts
    origin, side = _square(survey)
    histogram = np.bincount(_cell_codes(records, origin, side, MAX_LEVEL), minlength=4**MAX_LEVEL)
    genes = _gene_names(survey)
    level, block_level = _levels(histogram, sizes.full_tile_points, sizes.bucket_points, len(genes))
    codes = _cell_codes(records, origin, side, level).astype(np.uint64)
    blocks = codes >> np.uint64(2 * (level - block_level))
    # the disk's order: block, then gene, then code, ties in reading order (its scatter and sort are stable)
    key = (blocks << np.uint64(36)) | (records["gene"].astype(np.uint64) << np.uint64(20)) | codes
    order = np.argsort(key, kind="stable")
    del key
    n_blocks, n_genes = 4**block_level, len(genes)
    counts = np.bincount(blocks.astype(np.int64) * n_genes + records["gene"], minlength=n_blocks * n_genes).reshape(
        n_blocks, n_genes
    )
    offsets = np.zeros((n_blocks, n_genes + 1), dtype=np.int64)
    offsets[:, :n_genes] = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(n_blocks, n_genes)
    offsets[:, n_genes] = np.cumsum(counts.sum(axis=1))
    return PointIndex(
        None,
        survey.n,
        origin,
        side,
        level,
        block_level,
        genes,
        counts.sum(axis=0) if n_genes else np.zeros(0, np.int64),
        offsets,
        codes[order].astype(np.uint32),
        np.ascontiguousarray(records["x"][order]),
        np.ascontiguousarray(records["y"][order]),
        skipped=survey.skipped,
        tile_points=sizes.tile_points,
        rows=survey.n + survey.skipped,
    )


def removed_with(index: PointIndex) -> PointIndex:
    """``index``, its folder removed when it is dropped (or the process ends): an index no cache keeps."""
    if index.folder is not None:
        index._cleanup = weakref.finalize(index, shutil.rmtree, str(index.folder), True)
    return index


def _opened(folder: Path, identity: str) -> PointIndex:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        index = open_point_index(fd, folder, identity)
    finally:
        os.close(fd)
    if index is None:
        raise ElementError(f"The points index just written in {shown(str(folder))} does not read back.")
    return index


def write_point_index(
    batches: Iterable[PointBatch], folder: Path, identity: str, sizes: IndexSizes, stop: threading.Event | None = None
) -> None:
    """Write the index of ``batches`` into ``folder`` (empty, the caller's own): columns, offsets, then ``index.json``.

    ``identity`` is kept in ``index.json`` and compared by :func:`open_point_index`, so a
    folder is only ever opened as the index of the element it was built from. ``stop``, once
    set, ends the build at its next part with :class:`BuildStopped` (the caller removes the folder).
    """
    raw = folder / "raw.bin"
    survey = _write_raw(batches, raw, stop)
    origin, side = _square(survey)
    histogram = np.zeros(4**MAX_LEVEL, dtype=np.int64)
    for records in _chunks(raw, _RAW, survey.n, sizes.chunk_points):
        histogram += np.bincount(_cell_codes(records, origin, side, MAX_LEVEL), minlength=4**MAX_LEVEL)
    level, block_level = _levels(histogram, sizes.full_tile_points, sizes.bucket_points, len(survey.genes))
    shift = 2 * (level - block_level)
    for records in _chunks(raw, _RAW, survey.n, sizes.chunk_points):
        _go_on(stop)
        _scatter(records, _cell_codes(records, origin, side, level), shift, folder)
    raw.unlink()
    genes = _gene_names(survey)
    offsets = _sort_blocks(folder, 4**block_level, len(genes), sizes, stop)
    (folder / "offsets").write_bytes(offsets.astype("<i8").tobytes())
    meta = {
        "format": INDEX_FORMAT,
        "identity": identity,
        "n_points": survey.n,
        "origin": list(origin),
        "side": side,
        "level": level,
        "block_level": block_level,
        "genes": genes,
        "skipped": survey.skipped,
        "tile_points": sizes.tile_points,
    }
    (folder / _META).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8", errors="surrogatepass")


def open_point_index(dir_fd: int, folder: Path, identity: str) -> PointIndex | None:
    """The index in the folder open as ``dir_fd``, if it is whole, this user's and built for ``identity``; else None.

    Every file is opened through ``dir_fd`` refusing links, must be this user's regular file
    of exactly the size ``index.json`` implies, and the offsets must run in order within the
    points: a folder that is anything else is not an index (the caller rebuilds).
    """
    meta = _read_meta(dir_fd)
    if meta is None or meta.get("format") != INDEX_FORMAT or meta.get("identity") != identity:
        return None
    try:
        n, genes = int(meta["n_points"]), [str(g) for g in meta["genes"]]
        level, block_level = int(meta["level"]), int(meta["block_level"])
        origin = (float(meta["origin"][0]), float(meta["origin"][1]))
        side, skipped, tile_points = float(meta["side"]), int(meta["skipped"]), int(meta["tile_points"])
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if not (0 <= block_level <= level <= MAX_LEVEL and n >= 0 and tile_points > 0):
        return None
    columns = [
        map_private_array(dir_fd, name, dtype, n) for name, dtype in (("codes", "<u4"), ("x", "<f4"), ("y", "<f4"))
    ]
    flat = map_private_array(dir_fd, "offsets", "<i8", 4**block_level * (len(genes) + 1))
    if flat is None or any(column is None for column in columns):
        return None
    offsets = flat.reshape(4**block_level, len(genes) + 1)
    if len(flat) and (flat[0] != 0 or flat[-1] != n or (np.diff(flat) < 0).any()):
        return None
    counts = (offsets[:, 1:] - offsets[:, :-1]).sum(axis=0) if genes else np.zeros(0, np.int64)
    codes, x, y = (c for c in columns if c is not None)
    return PointIndex(
        folder,
        n,
        origin,
        side,
        level,
        block_level,
        genes,
        counts,
        offsets,
        codes,
        x,
        y,
        skipped=skipped,
        tile_points=tile_points,
        rows=n + skipped,
    )


def _read_meta(dir_fd: int) -> dict | None:
    return read_private_json(dir_fd, _META, MAX_META_BYTES)


def _scatter(records: np.ndarray, codes: np.ndarray, shift: int, folder: Path) -> None:
    """Append each record to its block's file (the block: the code's top bits)."""
    blocks = (codes >> shift).astype(np.uint16)  # at most 4**5 blocks: a radix sort
    if blocks.size and blocks.max() > 0:
        order = np.argsort(blocks, kind="stable")
        blocks, codes, records = blocks[order], codes[order], records[order]
    bucket = np.empty(len(records), dtype=_BUCKET)
    bucket["code"], bucket["gene"], bucket["x"], bucket["y"] = codes, records["gene"], records["x"], records["y"]
    edges = np.flatnonzero(np.diff(blocks)) + 1
    for start, end in zip(np.concatenate([[0], edges]), np.concatenate([edges, [len(blocks)]]), strict=True):
        if end > start:
            with (folder / f"block-{int(blocks[start])}.bin").open("ab") as out:
                out.write(bucket[start:end].tobytes())


def _sort_blocks(
    folder: Path, n_blocks: int, n_genes: int, sizes: IndexSizes, stop: threading.Event | None = None
) -> np.ndarray:
    """Sort each block by gene then code into the three column files; where each block and gene starts.

    A block is sorted in runs of at most about ``bucket`` points (:func:`_sorted_runs`), so a
    block denser than that (10^9 points in 1,024 blocks, or a tissue's dense core) still holds
    no more than a bucket in memory.
    """
    offsets = np.zeros((n_blocks, n_genes + 1), dtype=np.int64)
    written = 0
    outputs = {name: (folder / name).open("wb") for name in ("codes", "x", "y")}
    try:
        for block in range(n_blocks):
            _go_on(stop)
            start, counts = written, np.zeros(n_genes, dtype=np.int64)
            for records in _sorted_runs(folder / f"block-{block}.bin", sizes.bucket_points, sizes.chunk_points):
                counts += np.bincount(records["gene"], minlength=n_genes)
                written += len(records)
                for name in ("codes", "x", "y"):
                    outputs[name].write(np.ascontiguousarray(records[name if name != "codes" else "code"]).tobytes())
            offsets[block, :n_genes] = start + np.concatenate([[0], np.cumsum(counts)[:-1]])
            offsets[block, n_genes] = written
    finally:
        for handle in outputs.values():
            handle.close()
    return offsets


#: The most files one split of a dense block writes (a split still too large is split again).
_MAX_SPLIT = 256
#: Keys kept from a dense block to choose where to split it.
_SAMPLE = 4096


def _keys(records: np.ndarray) -> np.ndarray:
    """The sort key: gene above the Z-order code, one uint64 (one sort instead of lexsort's two)."""
    key: np.ndarray = (records["gene"].astype(np.uint64) << np.uint64(32)) | records["code"].astype(np.uint64)
    return key


def _argsorted(records: np.ndarray) -> np.ndarray:
    """``records`` in key order by an argsort and a gather of whole records (how every run was sorted before the packed sort)."""
    ordered: np.ndarray = records[np.argsort(_keys(records), kind="stable")]
    return ordered


#: Bits of a packed sort value kept for the record's position (below the 16-bit gene and the 20-bit code).
_POSITION_BITS = 28


def _by_key(records: np.ndarray) -> np.ndarray:
    """``records`` sorted by key in memory (ties in their order, as a stable sort): the one place the build sorts.

    Why packed: gene, code and position fit one uint64 (16 + 20 + 28 bits), and sorting those
    values is several times quicker than an argsort of the keys followed by a gather of the
    14-byte records (13.5 s of a 3M build was that); gene and code come back out of the sorted
    values, so only x and y are gathered. A run of 2**28 records or more (never, with a bucket
    of millions) takes the argsort.
    """
    n = len(records)
    if n >= 1 << _POSITION_BITS:
        return _argsorted(records)
    packed = records["gene"].astype(np.uint64)
    packed <<= np.uint64(48)
    spare = records["code"].astype(np.uint64)  # in place from here on: two uint64 columns at most
    spare <<= np.uint64(_POSITION_BITS)
    packed |= spare
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    np.bitwise_and(packed, np.uint64((1 << _POSITION_BITS) - 1), out=spare)
    order = spare.view(np.int64)
    out = np.empty(n, dtype=_BUCKET)
    out["x"] = np.take(records["x"], order)
    out["y"] = np.take(records["y"], order)
    np.right_shift(packed, np.uint64(48), out=out["gene"], casting="unsafe")
    packed >>= np.uint64(_POSITION_BITS)
    packed &= np.uint64((1 << 20) - 1)
    out["code"] = packed
    return out


def _sorted_runs(path: Path, bucket: int, chunk: int = _CHUNK) -> Iterable[np.ndarray]:
    """The records of file ``path`` (removed on the way) in key order, in runs of at most about ``bucket``.

    An external sample sort: a file over ``bucket`` records is read a chunk at a time, split by
    key ranges (chosen from an even sample of its keys) into part files that are each sorted,
    or split again, in turn. Every split makes progress: its first range holds the smallest
    key and its last the largest, so no part is the whole file; a file of one key is in order.
    """
    n = path.stat().st_size // _BUCKET.itemsize if path.exists() else 0
    if n <= bucket:
        records = np.fromfile(path, dtype=_BUCKET) if n else np.zeros(0, dtype=_BUCKET)
        path.unlink(missing_ok=True)
        if n:
            yield _by_key(records)
        return
    low, high, sample = np.uint64(np.iinfo(np.uint64).max), np.uint64(0), []
    step = max(1, n // _SAMPLE)
    for records in _chunks(path, _BUCKET, n, chunk):
        keys = _keys(records)
        low, high = min(low, keys.min()), max(high, keys.max())
        sample.append(keys[::step])
    if low == high:  # one key: already in order
        for records in _chunks(path, _BUCKET, n, chunk):
            yield records
        path.unlink()
        return
    splitters = _splitters(np.concatenate(sample), low, high, min(_MAX_SPLIT, max(2, 2 * -(-n // bucket))))
    parts = [path.with_name(f"{path.name}.{i}") for i in range(len(splitters) + 1)]
    for records in _chunks(path, _BUCKET, n, chunk):
        which = np.searchsorted(splitters, _keys(records), side="right")
        order = np.argsort(which, kind="stable")
        which, records = which[order], records[order]
        edges = np.searchsorted(which, np.arange(len(parts) + 1))
        for part, (a, b) in zip(parts, itertools.pairwise(edges), strict=True):
            if b > a:
                with part.open("ab") as out:
                    out.write(records[a:b].tobytes())
    path.unlink()
    for part in parts:
        yield from _sorted_runs(part, bucket, chunk)


def _splitters(sample: np.ndarray, low: np.uint64, high: np.uint64, count: int) -> np.ndarray:
    """Up to ``count - 1`` keys in (low, high] cutting ``sample`` evenly; the middle of the range if none."""
    cuts = np.quantile(sample, np.linspace(0, 1, count + 1)[1:-1], method="lower").astype(np.uint64)
    cuts = np.unique(cuts[(cuts > low) & (cuts <= high)])
    if not len(cuts):
        cuts = np.asarray([low + (high - low) // np.uint64(2) + np.uint64(1)], dtype=np.uint64)
    return cuts
