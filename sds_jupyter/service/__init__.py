"""The version browser's questions, answered in Python with no Jupyter imports.

Transports (:mod:`sds_jupyter.widget`, :mod:`sds_jupyter.server`) only translate:
they call :func:`dispatch` with a request name from :data:`REQUESTS` and map any
exception once with :func:`error_payload`.
"""

from __future__ import annotations

from sds_jupyter.service.errors import RequestError, error_payload
from sds_jupyter.service.framing import frame_reply, unframe_reply
from sds_jupyter.service.requests import BINARY_REQUESTS, REQUESTS, WRITE_REQUESTS, dispatch
from sds_jupyter.service.service import Reply, StackService

__all__ = [
    "BINARY_REQUESTS",
    "REQUESTS",
    "WRITE_REQUESTS",
    "Reply",
    "RequestError",
    "StackService",
    "dispatch",
    "error_payload",
    "frame_reply",
    "unframe_reply",
]
