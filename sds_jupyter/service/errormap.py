"""Errors of the service, and the one mapping from any exception to ``{kind, message}``."""

from __future__ import annotations

from sds_jupyter.errors import MissingDatasetError, StackError, shown
from sds_jupyter.protocol.types import ErrorInfo

__all__ = ["RequestError", "error_payload"]


class RequestError(StackError):
    """A request the service does not know, or a parameter it cannot use."""

    kind = "bad-request"


def error_payload(exc: BaseException) -> ErrorInfo:
    """What a transport shows for ``exc``: the stable kind and the one-line message.

    Refusals (StackError) keep their own kind; anything else is a bug or an
    unreadable store and is reported as ``internal`` with its type, so the
    browser shows it in place instead of failing silently.
    """
    if isinstance(exc, StackError):
        payload: ErrorInfo = {"kind": exc.kind, "message": str(exc)}
        if isinstance(exc, MissingDatasetError):
            payload["dataset_id"] = exc.dataset_id
        return payload
    if isinstance(exc, PermissionError):
        where = exc.filename if exc.filename is not None else "a file it needs"
        return {"kind": "permission-denied", "message": f"Permission denied: cannot read {shown(str(where), 200)}."}
    message = str(exc) or type(exc).__name__
    return {"kind": "internal", "message": f"{type(exc).__name__}: {message}"}
