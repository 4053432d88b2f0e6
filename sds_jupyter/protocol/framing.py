"""The binary framing of the protocol: one JSON header, then the buffers back to back.

``<u32 little-endian n><n bytes of UTF-8 JSON {"data", "buffers": [lengths]}><buffers>``.
It lives in the protocol package (not in the server) so tests and other transports
can frame and unframe without Jupyter.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from sds_jupyter.protocol.reply import Reply

__all__ = ["frame_reply", "unframe_reply"]


def frame_reply(reply: Reply) -> bytes:
    """``reply`` as one octet-stream body."""
    header = json.dumps(
        {"data": reply.data, "buffers": [buffer.nbytes for buffer in reply.buffers]},
        allow_nan=False,
        separators=(",", ":"),
    ).encode("utf-8")
    # the buffers are joined as they are (bytes-like): a copy of each first cost 100 MB more at 10M cells
    return b"".join([struct.pack("<I", len(header)), header, *reply.buffers])


def unframe_reply(body: bytes) -> tuple[Any, list[bytes]]:
    """The ``(data, buffers)`` of a framed body (used by tests and Python clients)."""
    (length,) = struct.unpack_from("<I", body, 0)
    header = json.loads(body[4 : 4 + length].decode("utf-8"))
    buffers, position = [], 4 + length
    for size in header["buffers"]:
        buffers.append(body[position : position + size])
        position += size
    if position != len(body):
        raise ValueError(f"framed body has {len(body) - position} trailing bytes")
    return header["data"], buffers
