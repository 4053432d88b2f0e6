"""Checks of an image element's claimed metadata and of each read, against :mod:`sds_jupyter.limits`.

Why: an image element's metadata is written by whoever made the dataset. A claimed shape of
10^12 pixels, a scale of 0, a chunk the size of the image or thousands of levels would
otherwise become a division by zero, an overflow, gigabytes of memory or minutes of chunk
reads. Each check runs before any pixel is read and raises an :class:`ElementError` (a 400
with its reason over REST, the same ``kind`` in the widget). Every reader of an element's
claimed shape (:func:`~sds_jupyter.studio.elements.open_pyramid`, ``Pyramid.read``) calls
them, so the service's ``channels``, ``image_region``, ``image_tile`` and ``canvas`` all do.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from sds_jupyter.errors import ElementError
from sds_jupyter.limits import (
    MAX_CHUNK_BYTES,
    MAX_CONCURRENT_READS,
    MAX_IMAGE_AXIS,
    MAX_READ_BYTES,
    MAX_READ_CHUNKS,
    MAX_REGION_COORDINATE,
)

__all__ = ["READ_SLOTS", "check_level_shape", "check_read", "check_region", "check_scale"]

#: Held by every pixel read (``Pyramid.read``): the server answers tiles from several worker
#: threads, and each read may hold MAX_READ_BYTES, so only this many run at once.
READ_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_READS)


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
