"""The request table: protocol name → service method, and the one dispatcher.

Both transports call :func:`dispatch`. Parameters arrive as JSON values (the
widget) or strings (a query string); they are coerced here from each method's
annotations, so a new request is one line in :data:`REQUESTS`.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

from sds_jupyter.errors import shown
from sds_jupyter.service.errors import RequestError
from sds_jupyter.service.export import export_request
from sds_jupyter.service.service import Reply, StackService

__all__ = ["BINARY_REQUESTS", "REQUESTS", "WRITE_REQUESTS", "dispatch", "request_parameters"]

REQUESTS: dict[str, Callable[..., Any]] = {
    "history": StackService.history,
    "changes": StackService.changes,
    "figures": StackService.figures,
    "canvas": StackService.canvas,
    "cells": StackService.cells,
    "cell_outlines": StackService.cell_outlines,
    "embedding": StackService.embedding,
    "results": StackService.results,
    "result_page": StackService.result_page,
    "result_csv": StackService.result_csv,
    "compare": StackService.compare,
    "tree": StackService.tree,
    "fingerprint": StackService.fingerprint,
    "contents": StackService.contents,
    "cell": StackService.cell,
    "color_values": StackService.color_values,
    "genes": StackService.genes,
    "dot_plot": StackService.dot_plot,
    "channels": StackService.channels,
    "store_key": StackService.store_key,
    "image_region": StackService.image_region,
    "image_tile": StackService.image_tile,
    "export": export_request,
    "annotate": StackService.annotate,
}

#: Requests that write a new version: never answered to a GET (REST posts them with Jupyter's XSRF check).
WRITE_REQUESTS = frozenset({"annotate"})

#: Requests whose answers carry buffers (framed as octet-stream over REST).
BINARY_REQUESTS = frozenset(
    {
        "canvas",
        "cells",
        "cell_outlines",
        "embedding",
        "color_values",
        "channels",
        "store_key",
        "image_region",
        "image_tile",
        "export",
    }
)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

#: An integer as a query string writes it: ASCII digits, an optional sign, at most 18 of them
#: (every depth, offset and limit fits; ``int()`` alone also takes ``²``-like digits, ``_`` and
#: thousands of digits, and fails or stalls on them).
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
_MAX_INT = 10**18 - 1


def _coerce_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise RequestError(f"Parameter {name!r} must be true or false, not {shown(value)}.")


def _coerce_int(name: str, value: Any) -> int:
    """An int parameter: an int, or ASCII digits; anything longer than 18 digits is refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > _MAX_INT:
            raise RequestError(f"Parameter {name!r} is out of range ({shown(value)}).")
        return value
    text = str(value).strip() if isinstance(value, str) else ""
    if _INTEGER.fullmatch(text):
        return int(text)
    if text.lstrip("+-").isascii() and text.lstrip("+-").isdigit():
        raise RequestError(f"Parameter {name!r} is out of range ({len(text)} digits).")
    raise RequestError(f"Parameter {name!r} must be an integer (digits 0-9), not {shown(value)}.")


def _coerce_version(name: str, value: Any) -> int | str:
    """A version selector: a depth (int or ASCII digits) or a dataset ID or title (any other text).

    Text made of non-ASCII digits (``²``, ``٣``) is refused rather than passed on: it
    is neither a depth anyone types nor a dataset ID.
    """
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        text = str(value).strip()
        if isinstance(value, int) or text.lstrip("+-").isdigit():
            return _coerce_int(name, value)
        return value
    raise RequestError(f"Parameter {name!r} must be a depth, a dataset ID or a title, not {shown(value)}.")


def _coerce(name: str, value: Any, hint: Any) -> Any:
    """``value`` as the annotated type: ints, bools, strings, or (for versions) int | str."""
    if value is None:
        return None
    if typing.get_origin(hint) is Mapping:
        return value  # structured (regions): passed whole, checked by the method itself
    args = set(typing.get_args(hint)) or {hint}
    args.discard(type(None))
    if args == {bool}:
        return _coerce_bool(name, value)
    if args == {int}:
        return _coerce_int(name, value)
    if args == {int, str}:
        return _coerce_version(name, value)
    if isinstance(value, (dict, list)):
        raise RequestError(f"Parameter {name!r} must be a single value.")
    return str(value)


def request_parameters(method: Callable[..., Any]) -> list[inspect.Parameter]:
    """A request's parameters: its function's, less the first (the service it runs on).

    Why: a request is a StackService method or a function of a service (``export``); either
    way the first parameter is the service, never a client's to give.
    """
    return list(inspect.signature(method).parameters.values())[1:]


def dispatch(service: StackService, name: str, params: Mapping[str, Any] | None = None) -> Reply:
    """Run request ``name`` on ``service`` with ``params``; unknown names or params are refused."""
    method = REQUESTS.get(name)
    if method is None:
        raise RequestError(f"Unknown request {name!r}; known: {', '.join(REQUESTS)}.")
    hints = typing.get_type_hints(method)
    accepted = [p.name for p in request_parameters(method)]
    given = dict(params or {})
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise RequestError(
            f"Request {name!r} takes no parameter {unknown[0]!r}; it takes: {', '.join(accepted) or 'none'}."
        )
    kwargs = {key: _coerce(key, value, hints.get(key, str)) for key, value in given.items()}
    if "version" in kwargs:
        service, kwargs["version"] = service.serving(kwargs["version"])
    try:
        answer = method(service, **kwargs)
    except TypeError as exc:
        if re.search(r"missing \d+ required (positional|keyword-only) argument", str(exc)):
            raise RequestError(f"Request {name!r} is missing a parameter: {exc}.") from None
        raise
    return answer if isinstance(answer, Reply) else Reply(answer)
