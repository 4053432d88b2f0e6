"""The bounds on what one request may make the server read, hold or send, in one place.

Why: an image element's metadata is written by whoever made the dataset, and a request's
parameters by whoever sends it. A claimed shape of 10^12 pixels, a scale of 0 or infinity,
a chunk the size of the image or a pyramid of thousands of levels would otherwise turn
into a division by zero, an overflow, gigabytes of memory or minutes of chunk reads. Each
check here runs before any pixel is read and raises an :class:`ElementError` (a 400 with its
reason over REST, the same ``kind`` in the widget). The service's requests (``channels``,
``image_region``, ``image_tile``, ``canvas``) and every reader of an element's claimed
shape (:func:`~sds_jupyter.studio.elements.open_pyramid`, ``Pyramid.read``) call them, so a
reshaped request keeps them. The README's Safety section lists every value.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import numpy as np
import zarr

from sds_jupyter.studio.errors import ElementError

__all__ = [
    "MAX_CACHED_IMAGES",
    "MAX_CHUNK_BYTES",
    "MAX_IMAGE_AXIS",
    "MAX_LEVELS",
    "MAX_READ_BYTES",
    "MAX_READ_CHUNKS",
    "MAX_RESULT_BYTES",
    "MAX_CACHED_RESULTS",
    "MAX_REGION_COORDINATE",
    "BoundedCache",
    "check_level_shape",
    "check_read",
    "check_region",
    "claimed_bytes",
    "item_bytes",
    "check_scale",
]

#: The longest side any axis of an image level may claim (pixels, channels, z, t): 2^20, 20 times a
#: whole-slide scan's width. A claimed 10^12 is refused before anything is opened.
MAX_IMAGE_AXIS = 2**20
#: The most levels a pyramid may list (each is opened when the image is).
MAX_LEVELS = 32
#: The largest chunk of a level, decompressed (a tile read decompresses whole chunks).
MAX_CHUNK_BYTES = 256 * 1024 * 1024
#: The most bytes of pixels one read may bring into memory (all channels, before conversion).
MAX_READ_BYTES = 256 * 1024 * 1024
#: The most chunks one read may touch (a strided read of a huge level touches every chunk row it crosses).
MAX_READ_CHUNKS = 4096
#: The largest absolute coordinate a requested region may have (beyond it no image can lie).
MAX_REGION_COORDINATE = 1e15
#: How many opened image pyramids one service keeps (one per figure and version viewed).
MAX_CACHED_IMAGES = 8
#: The most bytes a saved result's arrays may claim (their shapes times their item sizes) to be read.
MAX_RESULT_BYTES = 128 * 1024 * 1024
#: Read results one table reader keeps: at most this many, and at most MAX_RESULT_BYTES together.
MAX_CACHED_RESULTS = 8


def check_level_shape(name: str, path: str, shape: Sequence[int], chunks: Sequence[int], itemsize: int) -> None:
    """Refuse a level whose claimed shape or chunks are empty, absurd, or too big to read a chunk of."""
    if any(side <= 0 for side in shape):
        raise ElementError(f"Level {path!r} of image {name!r} is empty (shape {tuple(shape)}).")
    if any(side > MAX_IMAGE_AXIS for side in shape):
        raise ElementError(
            f"Level {path!r} of image {name!r} claims shape {tuple(shape)}; "
            f"no axis may exceed {MAX_IMAGE_AXIS:,} (MAX_IMAGE_AXIS)."
        )
    if any(side <= 0 for side in chunks):
        raise ElementError(f"Level {path!r} of image {name!r} has an empty chunk shape {tuple(chunks)}.")
    chunk_bytes = math.prod(min(c, s) for c, s in zip(chunks, shape, strict=False)) * itemsize
    if chunk_bytes > MAX_CHUNK_BYTES:
        raise ElementError(
            f"Level {path!r} of image {name!r} has chunks of {chunk_bytes:,} bytes; "
            f"at most {MAX_CHUNK_BYTES:,} (MAX_CHUNK_BYTES) are read at once."
        )


def check_scale(name: str, path: str, scale_yx: tuple[float, float]) -> None:
    """Refuse a level scale that is not a finite positive number (it divides every box)."""
    if not all(math.isfinite(value) and value > 0 for value in scale_yx):
        raise ElementError(
            f"Level {path!r} of image {name!r} has scale {scale_yx}; a scale must be a finite positive number."
        )


def check_read(name: str, spans: Sequence[tuple[int, int, int]], chunks: Sequence[int], itemsize: int) -> None:
    """Refuse a read of ``spans`` ((start, stop, step) per axis) that would hold or touch too much.

    Why: the bound is checked on the selection before zarr allocates the result or
    fetches a chunk, so a request can never make the server hold more than
    MAX_READ_BYTES of pixels or decompress more than MAX_READ_CHUNKS chunks.
    """
    counts = [len(range(start, stop, step)) for start, stop, step in spans]
    size = math.prod(counts) * itemsize
    if size > MAX_READ_BYTES:
        raise ElementError(
            f"Reading {' x '.join(map(str, counts))} values of image {name!r} needs {size:,} bytes; "
            f"at most {MAX_READ_BYTES:,} (MAX_READ_BYTES) are read at once."
        )
    touched = math.prod(_chunks_touched(span, chunk) for span, chunk in zip(spans, chunks, strict=False))
    if touched > MAX_READ_CHUNKS:
        raise ElementError(
            f"Reading that part of image {name!r} touches {touched:,} chunks; "
            f"at most {MAX_READ_CHUNKS:,} (MAX_READ_CHUNKS) are read at once."
        )


def _chunks_touched(span: tuple[int, int, int], chunk: int) -> int:
    """How many chunks along one axis a (start, stop, step) selection reads from."""
    start, stop, step = span
    if stop <= start:
        return 0
    if step <= chunk:
        return (stop - 1) // chunk - start // chunk + 1
    return len(range(start, stop, step))


def check_region(box: Sequence[float]) -> None:
    """Refuse a requested region with a coordinate so large no image can lie there (it would overflow)."""
    if not all(math.isfinite(value) and abs(value) <= MAX_REGION_COORDINATE for value in box):
        raise ElementError(
            f"The region {list(box)} reaches beyond ±{MAX_REGION_COORDINATE:g} (MAX_REGION_COORDINATE); "
            "give coordinates near the image."
        )


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


def item_bytes(array: zarr.Array) -> int:
    """Bytes per value of ``array`` (8 for a dtype without a fixed size, such as variable-length text)."""
    try:
        return max(1, int(np.dtype(array.dtype).itemsize))  # type: ignore[arg-type]
    except TypeError:
        return 8


K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A least-recently-used map of at most ``max_entries`` values (each made by ``make`` on a miss),
    and, with ``max_bytes``, at most that many bytes by ``size`` (the newest value is always kept).

    Why: a service keeps opened readers per version and figure; a long session (or a
    client walking every version) must not grow the server without end.
    """

    def __init__(self, max_entries: int, max_bytes: int | None = None, size: Callable[[V], int] | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size = size or (lambda value: 0)
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``, made (and the oldest evicted past either bound) when absent."""
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key][0]
        value = make()
        size = self._size(value)
        self._entries[key] = (value, size)
        self._bytes += size
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_entries or (self.max_bytes is not None and self._bytes > self.max_bytes)
        ):
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped
        return value

    @property
    def bytes(self) -> int:
        """The sizes of the kept values together (0 without a ``size`` function)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
