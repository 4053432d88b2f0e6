"""A request's answer: a JSON payload and, for some requests, binary buffers.

It sits below every feature module and the transports' framing, so each can build or
read one without importing the others.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

__all__ = ["Reply", "as_buffer"]

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
