"""The request table: protocol name → the function answering it, and the one dispatcher.

Both transports call :func:`dispatch`. A request is a function of a
:class:`~sds_jupyter.service.session.Session` in a feature module
(:mod:`sds_jupyter.service.features`); parameters arrive as JSON values (the widget)
or strings (a query string) and are coerced here from its annotations, and whether it
sends buffers is read from its return annotation, so a new request is its function and
one line in :data:`REQUESTS` (docs/contributing.md lists the rest).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

from sds_jupyter.errors import shown, sole_refusal
from sds_jupyter.protocol.reply import Reply, recording_sources
from sds_jupyter.service import branches
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.export import export_request
from sds_jupyter.service.features import (
    annotate,
    cells,
    cirro,
    compare,
    figures,
    history,
    images,
    labels,
    points,
    results,
    shapes,
)
from sds_jupyter.service.session import Opened, Session, session_of

__all__ = ["BINARY_REQUESTS", "REQUESTS", "WRITE_REQUESTS", "answers_buffers", "dispatch", "request_parameters"]

#: Request name -> the function answering it, called with the session and the request's parameters.
#: Its signature is the request's parameters (coerced from its annotations), its return
#: annotation the reply's payload type (``Reply[Payload]`` when it sends buffers).
REQUESTS: dict[str, Callable[..., Any]] = {
    "history": history.history,
    "changes": history.changes,
    "figures": figures.figures,
    "canvas": cells.canvas,
    "cells": cells.cells,
    "cell_outlines": cells.cell_outlines,
    "embedding": cells.embedding,
    "results": results.results,
    "result_page": results.result_page,
    "result_csv": results.result_csv,
    "compare": compare.compare,
    "tree": branches.tree,
    "fingerprint": branches.fingerprint,
    "contents": history.contents,
    "cell": cells.cell,
    "color_values": cells.color_values,
    "genes": cells.genes,
    "dot_plot": cells.dot_plot,
    "channels": images.channels,
    "store_key": images.store_key,
    "image_region": images.image_region,
    "image_tile": images.image_tile,
    "labels": labels.labels,
    "labels_tile": labels.labels_tile,
    "shapes": shapes.shapes,
    "shapes_tile": shapes.shapes_tile,
    "points": points.points,
    "points_tile": points.points_tile,
    "export": export_request,
    "annotate": annotate.annotate,
    "cirro_projects": cirro.cirro_projects,
    "cirro_plan": cirro.cirro_plan,
    "cirro_upload": cirro.cirro_upload,
    "cirro_fetch": cirro.cirro_fetch,
}

#: Requests that write a new version: never answered to a GET (REST posts them with Jupyter's XSRF check).
WRITE_REQUESTS = frozenset({"annotate", "cirro_upload", "cirro_fetch"})


def answers_buffers(function: Callable[..., Any]) -> bool:
    """Whether a request's function answers a :class:`Reply` (a payload with buffers), by its return annotation."""
    answer = typing.get_type_hints(function)["return"]
    return answer is Reply or typing.get_origin(answer) is Reply


#: Requests whose answers carry buffers (framed as octet-stream over REST): read from the table.
BINARY_REQUESTS = frozenset(name for name, function in REQUESTS.items() if answers_buffers(function))

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
    """A request's parameters: its function's, less the first (the session it runs on, never a client's to give)."""
    return list(inspect.signature(method).parameters.values())[1:]


def dispatch(service: Session | Opened, name: str, params: Mapping[str, Any] | None = None) -> Reply[Any]:
    """Run request ``name`` on ``service`` (a StackService or its session) with ``params``; unknown ones are refused."""
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
    session = session_of(service)
    if "version" in kwargs:
        session, kwargs["version"] = branches.serving(session, kwargs["version"])
    try:
        with recording_sources() as sources:
            answer = method(session, **kwargs)
    except TypeError as exc:
        if re.search(r"missing \d+ required (positional|keyword-only) argument", str(exc)):
            raise RequestError(f"Request {name!r} is missing a parameter: {exc}.") from None
        raise
    except BaseExceptionGroup as group:
        refusal = sole_refusal(group)
        if refusal is group:
            raise
        raise refusal from group
    reply = answer if isinstance(answer, Reply) else Reply(answer)
    return dataclasses.replace(reply, sources=sources) if sources else reply
