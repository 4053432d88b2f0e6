"""The version browser's questions, answered in Python with no Jupyter imports.

Transports (:mod:`sds_jupyter.widget`, :mod:`sds_jupyter.server`) only translate:
they call :func:`dispatch` with a request name from :data:`REQUESTS` and map any
exception once with :func:`error_payload`.
"""

from __future__ import annotations

from sds_jupyter.protocol.framing import frame_reply, unframe_reply
from sds_jupyter.service.errormap import RequestError, error_payload
from sds_jupyter.service.requests import BINARY_REQUESTS, REQUESTS, WRITE_REQUESTS, dispatch
from sds_jupyter.service.service import Reply, StackService

# What a transport asks of the library before it opens a service: whether a version's parents are
# looked up inside its root, and the file browser's listing of a folder. Offered here so that the
# transports reach the stack only through the service.
from sds_jupyter.stack import parents_inside, version_listing

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
    "parents_inside",
    "unframe_reply",
    "version_listing",
]
