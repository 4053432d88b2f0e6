"""A request's answer: a JSON payload and, for some requests, binary buffers.

It sits below every feature module and the transports' framing, so each can build or
read one without importing the others.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

__all__ = ["SOURCES", "Reply", "as_buffer", "recording_sources", "served_from"]

#: The payload type a Reply carries (a TypedDict of protocol.types or protocol.payloads).
P = TypeVar("P")


@dataclass
class Reply(Generic[P]):
    """A payload and its binary buffers (numpy-backed bytes, in protocol order).

    A request that sends buffers is annotated ``-> Reply[ItsPayload]``: the parameter is
    what the contract generates the reply type from and what marks the request binary.

    ``etag``: a name for the reply's content that changes whenever the content does (a
    content address); REST answers it as a strong ETag, and a repeat with it as 304.
    """

    data: P
    buffers: list[memoryview] = field(default_factory=list)
    etag: str | None = None
    #: The request named its content (a key checked against it), so the answer may be kept for good.
    addressed: bool = False
    #: Where the derived data it was made from came from: (what, source) pairs, source one of :data:`SOURCES`.
    sources: list[tuple[str, str]] = field(default_factory=list)

    def named_by_content(self) -> Reply[P]:
        """This reply with a digest of its payload and buffers as its ETag.

        Why: a reply whose inputs have no cheap name (a figure's colour column, its palette
        and settings) still never changes for an immutable version, so a revisit that
        revalidates gets a 304 instead of the bytes again.
        """
        digest = hashlib.blake2b(json.dumps(self.data, sort_keys=True, allow_nan=False).encode(), digest_size=16)
        for buffer in self.buffers:
            digest.update(buffer.nbytes.to_bytes(8, "little"))
            digest.update(buffer)
        return Reply(self.data, self.buffers, digest.hexdigest())


def as_buffer(array: np.ndarray) -> memoryview:
    """A numpy array's bytes without a copy (little-endian, as the browser reads them)."""
    contiguous = np.ascontiguousarray(array)
    if contiguous.dtype.byteorder == ">":
        contiguous = contiguous.astype(contiguous.dtype.newbyteorder("<"))
    return contiguous.data.cast("B")


#: Where derived data (a points index, cell geometry) came from: derived by this request, mapped
#: from an entry kept on disk, or found in this process's memory.
SOURCES = ("built", "disk", "memory")
_SOURCES: ContextVar[list[tuple[str, str]] | None] = ContextVar("sds_reply_sources", default=None)


def served_from(what: str, source: str) -> None:
    """Say that the request being answered took ``what`` from ``source`` (one of :data:`SOURCES`).

    Why a context variable: the piece that finds a kept entry is far below the request, which
    carries the word up in :attr:`Reply.sources` (the REST transport names it in ``Server-Timing``).
    Outside a request (a background build, a script), nothing is recorded.
    """
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {SOURCES}")
    sources = _SOURCES.get()
    if sources is not None and (what, source) not in sources:
        sources.append((what, source))


@contextlib.contextmanager
def recording_sources() -> Iterator[list[tuple[str, str]]]:
    """The list :func:`served_from` appends to while the block runs (this thread's request)."""
    sources: list[tuple[str, str]] = []
    token = _SOURCES.set(sources)
    try:
        yield sources
    finally:
        _SOURCES.reset(token)
