"""Every bound on what one request may make the server read, hold, send or keep, in one place.

Why: what a request asks for is chosen by whoever sends it, and an element's metadata by
whoever wrote the dataset. A claimed shape of 10^12 pixels, a region reaching to infinity,
a results table that claims terabytes, a column of a million distinct values, a body of
100 MB or a client walking every version would otherwise become gigabytes of memory,
minutes of reads or a 500. Each number below says why it is that number; every layer
(the stack library, studio, the service, the server) imports it from here, and
docs/safety.md lists them all (tests/project/test_docs.py checks it). This module sits at the
bottom of the import layers (beside ``errors``) so that the stack library and studio may use it too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, cast

import numpy as np
import zarr

from sds_jupyter.lru import ByteLRU, Turn

__all__ = [
    "EXPORT_TIMEOUT_SECONDS",
    "EXPORT_WORKER_DATA_BYTES",
    "MAX_ANNOTATE_BODY_BYTES",
    "MAX_ANNOTATION_CELLS",
    "MAX_ANNOTATION_REGIONS",
    "MAX_ANNOTATION_VERTICES",
    "MAX_CACHED_ADATAS",
    "MAX_CACHED_BRANCHES",
    "MAX_CACHED_COLUMNS",
    "MAX_CACHED_COLUMN_BYTES",
    "MAX_CACHED_IMAGES",
    "MAX_CACHED_RESULTS",
    "MAX_CACHED_SERVICES",
    "MAX_CACHED_TABLES",
    "MAX_CELLS",
    "MAX_CHANNELS_PARAM_BYTES",
    "MAX_CHANNELS_PARAM_DEPTH",
    "MAX_CHUNK_BYTES",
    "MAX_COLUMN_BYTES",
    "MAX_CONCURRENT_READS",
    "MAX_COUNTS",
    "MAX_EXPORT_PIXELS",
    "MAX_FETCH_FILES",
    "MAX_IMAGE_AXIS",
    "MAX_INDEXED_SHAPES",
    "MAX_INDEXED_VERTICES",
    "MAX_LEVELS",
    "MAX_LISTED_VERSIONS",
    "MAX_OUTLINE_TILE_CELLS",
    "MAX_READ_BYTES",
    "MAX_READ_CHUNKS",
    "MAX_REGION_COORDINATE",
    "MAX_REQUEST_BODY_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_SHAPES",
    "MAX_SHAPES_BYTES",
    "MAX_SHAPES_GROUP_BYTES",
    "MAX_STORE_OBJECT",
    "MAX_TEXT_VALUE_BYTES",
    "MAX_TITLE_MANIFEST_BYTES",
    "MAX_UNS_BYTES",
    "MIN_WKB_BYTES",
    "SCANS_CACHE_BYTES",
    "BoundedCache",
    "chunk_bound",
    "claimed_bytes",
    "item_bytes",
]

# ------------------------------------------------------------------ images (channels, image_region, image_tile, canvas)

#: The longest side any axis of an image level may claim (pixels, channels, z, t): 2^20, about 20
#: times the width of a whole-slide scan at full resolution. A claimed 10^12 is refused before
#: anything is opened, so no later arithmetic on the shape can overflow.
MAX_IMAGE_AXIS = 2**20
#: The most levels a pyramid may list: each is opened when the image is, and 2^20 px halves to
#: one pixel in 20 levels, so 32 leaves room for any real pyramid.
MAX_LEVELS = 32
#: The largest chunk of a level, decompressed: a 512 px tile decompresses whole chunks, and the
#: server's worker threads may read several at once. 64 MiB holds a 4096 x 4096 chunk of 4 bytes
#: per pixel (far beyond the 256-1024 px chunks writers use) and keeps a handful of concurrent
#: tile reads well under a gigabyte.
MAX_CHUNK_BYTES = 64 * 1024 * 1024
#: The most bytes of pixels one read may bring into memory (all channels, before conversion). The
#: largest ordinary read is an overview or region of 2048 x 2048 px: 32 channels of 2 bytes fit.
MAX_READ_BYTES = 256 * 1024 * 1024
#: The most chunks one read may touch: a strided overview of a huge level fetches every chunk its
#: rows cross, which for 2^20 px levels in small chunks would be minutes of reads.
MAX_READ_CHUNKS = 4096
#: Pixel reads that may run at once in one process (the others wait): a browser asks for many
#: tiles together and the server answers from several threads, so without it the memory of
#: reads at once would be threads x MAX_READ_BYTES; with it, at most 4 x MAX_READ_BYTES.
MAX_CONCURRENT_READS = 4
#: The largest absolute coordinate of a requested region: no image lies beyond 10^15 (2^20 px at
#: any plausible scale), and smaller numbers keep every division and rounding finite.
MAX_REGION_COORDINATE = 1e15

# ------------------------------------------------------------------ exports (export)

#: The most pixels an exported figure's page may cover at its dpi (PNG, and SVG or PDF too: their
#: cells and image may be one picture at that dpi). The renderers allocate the whole canvas at
#: once, 4 bytes a pixel. 2^27 (134 Mpx, 512 MiB) holds a double-column figure (183 mm) the full
#: height of a journal page (247 mm) at 1,200 dpi, 8,646 x 11,669 px; a 5,000 mm wide figure at
#: 300 dpi (59,000 px across) is refused before anything is drawn.
MAX_EXPORT_PIXELS = 2**27
#: The memory (private writable data, RLIMIT_DATA) the export worker process may hold: the canvas
#: of MAX_EXPORT_PIXELS (512 MiB) and a few copies of it (a resampled image, the PNG encoder's
#: rows). Not an address-space bound: V8 (vl-convert) reserves far more address space than it uses.
EXPORT_WORKER_DATA_BYTES = 4 * 1024**3
#: The longest one export may take in the worker before it is stopped (the largest page of
#: MAX_EXPORT_PIXELS takes well under a minute on one core).
EXPORT_TIMEOUT_SECONDS = 300
#: The longest ``channels`` parameter of an export (the image channels as the view's controls set
#: them, JSON): a channel's settings take about 120 bytes, so 64 KiB holds hundreds.
MAX_CHANNELS_PARAM_BYTES = 64 * 1024
#: How deep that JSON may nest: a list of objects holding a list (contrast limits) is 3 levels.
MAX_CHANNELS_PARAM_DEPTH = 4

# ------------------------------------------------------------------ tables (canvas, cell, compare, palettes)

#: The most cells a table may claim to be read: 2^27 (134 million) is ten times the largest
#: spatial tables made today, and a canvas sends 8 bytes of position per cell.
MAX_CELLS = 2**27
#: The most bytes one stored obs column, obsm entry or obs index may claim (shape times item
#: size) to be read: 2 GiB holds 2^27 cells of 2 float64 coordinates, so only a claim beyond
#: any table MAX_CELLS allows is refused.
MAX_COLUMN_BYTES = 2 * 1024**3

#: What one value of variable length (a text or bytes value) may take in a chunk, on average,
#: where a chunk's declared shape says nothing of its bytes: cell names, categories and labels
#: are tens of bytes, so 1 KiB each is generous; see :func:`chunk_bound`.
MAX_TEXT_VALUE_BYTES = 1024

#: The most cells one outline tile (``cell_outlines``) may hold. The grid is made fine enough that
#: a tile holds about OUTLINE_TILE_CELLS (a few thousand), so a tile past 16,384 cells means the
#: cells pile on one spot (a degenerate or hostile table): its answer would be megabytes built
#: per request, so it is refused and the view keeps drawing those cells as points.
MAX_OUTLINE_TILE_CELLS = 16_384

#: The most shapes (cell outlines, spots) a shapes element may hold to be read, from its parquet
#: footer: 2^22 (4 million) outlines would already be past what a canvas sends as outlines
#: (studio.shapes.MAX_VERTICES at 4 or more vertices each), and parquet stores a repeated
#: polygon once, so a file of kilobytes may claim millions.
MAX_SHAPES = 2**22
#: The most decoded bytes a shapes parquet's row groups may claim: 4 million outlines of 16 points.
MAX_SHAPES_BYTES = 1024**3
#: The most shapes an element past MAX_SHAPES may hold to be outlined by tile (studio.shapeindex):
#: it is read a row group at a time and its rings spilled to a private folder on disk (about 28
#: bytes a shape and 8 a vertex there), so 2^25 (33 million) shapes of 16 vertices take ~5 GB.
MAX_INDEXED_SHAPES = 2**25
#: The most outline vertices such an element's rings may hold on disk (8 bytes each: 4 GiB).
MAX_INDEXED_VERTICES = 2**29
#: The most decoded bytes one row group's geometry (and radius) columns may claim in its footer
#: to be read for that index: one row group is what a step of the build holds.
MAX_SHAPES_GROUP_BYTES = 512 * 1024**2
#: The fewest bytes one stored WKB value takes (a point: 21). A geometry column whose row group
#: claims fewer decoded bytes than rows times this repeats a value by dictionary (kilobytes
#: claiming millions of polygons): refused before a row is read, as MAX_SHAPES refuses it whole.
MIN_WKB_BYTES = 21

# ------------------------------------------------------------------ results and compare

#: The most bytes a saved result's arrays may claim (shapes times item sizes) to be read: a page
#: of a results table reads the whole table first, so a claim of 10^12 rows is refused up front.
MAX_RESULT_BYTES = 128 * 1024 * 1024
#: The most bytes a table's uns may claim to be read whole (a compare reads both sides' uns, results
#: included): four results at their bound; a claim of 10^12 values is refused, not allocated.
MAX_UNS_BYTES = 4 * MAX_RESULT_BYTES
#: Value counts per side of a compared text column: the most frequent 200 are sent, the cells of
#: the rest as one number (a column of cell names would otherwise send every name twice).
MAX_COUNTS = 200

# ------------------------------------------------------------------ caches (each LRU, each bounded)

#: Opened image pyramids per service (one per figure and version viewed; metadata only).
MAX_CACHED_IMAGES = 8
#: Read results per table reader: at most this many, and together at most MAX_RESULT_BYTES.
MAX_CACHED_RESULTS = 8
#: Opened table readers per service (a version and table each; each keeps its columns read).
MAX_CACHED_TABLES = 16
#: Obs columns (and, apart, obsm entries) one table reader keeps once read: at most this many...
MAX_CACHED_COLUMNS = 64
#: ...and at most this many bytes of them together (a 10,000,000-cell float column is 80 MB,
#: its spatial coordinates 160 MB), so that views switching colors reread little.
MAX_CACHED_COLUMN_BYTES = 512 * 1024 * 1024
#: Whole AnnDatas per service (notebooks ask for one or two versions at a time).
MAX_CACHED_ADATAS = 2
#: Services of versions on other branches one service keeps for compare: each holds its own
#: readers, so walking eight branches must not keep eight stacks open.
MAX_CACHED_BRANCHES = 2
#: Services the Jupyter server keeps, one per opened path (the file browser opens a few at a time).
MAX_CACHED_SERVICES = 32

# ------------------------------------------------------------------ listings and requests

#: A file-browser listing names at most this many versions of one folder.
MAX_LISTED_VERSIONS = 2000
#: A manifest larger than this is not parsed for a listing's title (the folder is listed by name):
#: a title needs a few bytes, and a listing is sent for every folder the browser opens.
MAX_TITLE_MANIFEST_BYTES = 1024 * 1024
#: The manifests of the remembered folder scans together, at most (bytes as stored).
SCANS_CACHE_BYTES = 64 * 1024 * 1024
#: The most files a dataset fetched from Cirro may list (``sds-jupyter fetch``, the panel's fetch): a
#: version's overlay holds tens to thousands, a base as a folder of chunks tens of thousands; a
#: listing of more is refused before a file is downloaded.
MAX_FETCH_FILES = 100_000
#: The largest object ``store_key`` sends (a chunk or a metadata document, not a whole file),
#: checked by its size before it is read: a zarr reader in the browser asks for chunks, and a
#: chunk past 256 MiB is no tile a browser can use.
MAX_STORE_OBJECT = 256 * 1024 * 1024
#: The largest request body the server reads (``api/notebook`` takes a one-line JSON object).
MAX_REQUEST_BODY_BYTES = 64 * 1024
#: The largest ``api/annotate`` body read: drawn outlines, a few hundred thousand coordinates at most.
MAX_ANNOTATE_BODY_BYTES = 4 * 1024 * 1024
#: Regions one annotation may name (one category each).
MAX_ANNOTATION_REGIONS = 256
#: Points of all an annotation's outlines together: the containment test costs cells × points.
MAX_ANNOTATION_VERTICES = 50_000
#: Cells an annotation may list by position ({"cells": [...]}), all regions together. Why this
#: many: a listed cell takes at least 2 bytes of JSON, so no REST body within MAX_ANNOTATE_BODY_BYTES
#: lists more; the widget's comm has no body bound, so this holds it to the same.
MAX_ANNOTATION_CELLS = 4 * 1024 * 1024


def claimed_bytes(node: zarr.Group | zarr.Array) -> int:
    """The bytes every array under ``node`` claims (shape times item size), from metadata alone.

    Why: reading a stored table allocates what its arrays claim; a claim of 10^12 rows
    must be refused before anndata reads it, not after 14 s of swapping.
    """
    arrays = [node] if isinstance(node, zarr.Array) else [array for _, array in node.arrays()]
    total = sum(math.prod(array.shape) * item_bytes(array) for array in arrays)
    if isinstance(node, zarr.Group):
        total += sum(claimed_bytes(group) for _, group in node.groups())
    return total


#: Bytes a stored form of a chunk may hold beyond its values (and a sixty-fourth of them, what a
#: compressor adds to incompressible data): codec headers and checksums, blosc's and lz4's block
#: overhead, a shard's index, parquet's page headers and levels. The one allowance every size
#: check against :func:`chunk_bound` adds, through :func:`with_headroom`.
CODEC_HEADROOM_BYTES = 64 * 1024


def with_headroom(values: int) -> int:
    """The most bytes ``values`` bytes of values may take with their framing: the one headroom rule.

    Why one: the stack's chunk check (a chunk's stored size) and the points reader (a parquet
    column's decompressed size with its page headers) hold stored bytes to :func:`chunk_bound`;
    with two allowances the same bytes could pass one reader and be refused by the other.
    """
    return values + values // 64 + CODEC_HEADROOM_BYTES


def chunk_bound(chunk_items: int, array_items: int, itemsize: int | None) -> int:
    """The most bytes one chunk of an array may decompress to: the one rule every read is held to.

    Why: a chunk's codecs are chosen by whoever wrote the dataset, and a 10 MB gzip chunk can
    inflate to 10 GB. A chunk of fixed-size values decodes to exactly its declared shape times
    its item size. Where that declared chunk is larger than the whole array (a hostile chunk
    shape over a small array), it may still take MAX_CHUNK_BYTES, the most any image chunk may
    (writers pad chunks past an array's edge). Values of variable length (text) may take
    MAX_TEXT_VALUE_BYTES each, plus numcodecs' 4-byte length, and at least MAX_CHUNK_BYTES (a
    scalar string, a figure spec, is one value of up to a mebibyte). The stack's store checks
    every chunk it hands to zarr against this (:mod:`sds_jupyter.stack.inflate`); a request's
    reads are bounded further by what their arrays claim (MAX_COLUMN_BYTES, MAX_READ_BYTES).
    """
    if itemsize is None:
        return max(MAX_CHUNK_BYTES, min(chunk_items, max(array_items, 1)) * (4 + MAX_TEXT_VALUE_BYTES) + 4)
    return min(chunk_items * itemsize, max(array_items * itemsize, MAX_CHUNK_BYTES))


def item_bytes(array: zarr.Array) -> int:
    """Bytes per value of ``array`` (8 for a dtype without a fixed size, such as variable-length text)."""
    try:
        return max(1, int(np.dtype(array.dtype).itemsize))
    except TypeError:
        return 8


K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A least-recently-used map of at most ``max_entries`` values (each made by ``make`` on a miss),
    and, with ``max_bytes``, at most that many bytes by ``size`` (the newest value is always kept).

    Why: a service keeps opened readers per version and figure; a long session (or a
    client walking every version) must not grow the server without end. The eviction is
    :class:`~sds_jupyter.lru.ByteLRU`'s; this adds only make-on-miss.
    """

    def __init__(self, max_entries: int, max_bytes: int | None = None, size: Callable[[V], int] | None = None) -> None:
        self._entries: ByteLRU[V] = ByteLRU(max_bytes, size, max_entries, keep_newest=True)

    @property
    def max_entries(self) -> int:
        return self._entries.max_entries or 0

    @property
    def max_bytes(self) -> int | None:
        return self._entries.max_bytes

    def claim(self, key: K) -> Turn[V]:
        """The caller's turn at ``key`` (:meth:`~sds_jupyter.lru.ByteLRU.claim`): the value kept, or
        the duty to make it and ``fill`` it with its size (the oldest evicted past either bound)."""
        return self._entries.claim(key)

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``, made (and the oldest evicted past either bound) when absent."""
        with self._entries.claim(key) as turn:
            if turn.missing:
                turn.fill(make())  # outside the lock: a slow read holds up only this key
        return turn.value

    @property
    def bytes(self) -> int:
        """The sizes of the kept values together (0 without a ``size`` function)."""
        return self._entries.nbytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        """The kept keys, least recently used first (a snapshot)."""
        return iter(cast("list[K]", self._entries.keys()))
