"""REST transport of the version browser: thin handlers over the StackService.

Routes live under ``{base_url}sds-jupyter/api/``: one GET per reading request in
:data:`REQUESTS`, a POST for each that writes (``annotate``), and ``notebook`` to
create (or find again) a notebook that opens a version. Every handler is authenticated and
authorized against the ``contents`` resource, like the contents API, since
it reads files under the server root. Errors are mapped once, in
:meth:`StackAPIHandler.fail`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any, TypeVar

from sds_jupyter.errors import StackError, needs_extra

try:
    from jupyter_core.utils import ensure_async
    from jupyter_server.auth.decorator import authorized
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import url_path_join
    from tornado import web
except ImportError:
    needs_extra("jupyter", "the JupyterLab server extension")
    raise

from sds_jupyter.jsontext import JSONRefused, loads_bounded
from sds_jupyter.limits import MAX_ANNOTATE_BODY_BYTES, MAX_REQUEST_BODY_BYTES
from sds_jupyter.protocol.types import VersionSummary
from sds_jupyter.server.cache import ServiceCache
from sds_jupyter.server.confine import (
    FolderUnreadableError,
    OutsideRootError,
    PathNotFoundError,
    unreadable,
    within_root,
)
from sds_jupyter.server.encoding import encode, negotiate
from sds_jupyter.server.notebook import (
    candidate_names,
    is_made_for,
    is_plain_file_in_root,
    is_unchanged,
    name_is_free,
    notebook_for,
    notebook_name,
    path_from_notebook,
    work_dir_in_root,
)
from sds_jupyter.server.timing import ServerTiming
from sds_jupyter.service import (
    BINARY_REQUESTS,
    REQUESTS,
    WRITE_REQUESTS,
    RequestError,
    dispatch,
    error_payload,
    frame_reply,
    version_listing,
)

__all__ = ["NAMESPACE", "SETTINGS_KEY", "NotebookWriteError", "setup_handlers", "status_for"]

NAMESPACE = "sds-jupyter"
SETTINGS_KEY = "sds_jupyter_services"
AUTH_RESOURCE = "contents"

T = TypeVar("T")

#: How a content-addressed reply may be kept: a year, never revalidated, by this browser only.
IMMUTABLE = "private, max-age=31536000, immutable"

#: A notebook bigger than this is never read to see whether it is one we made (it is then left alone).
MAX_REUSED_NOTEBOOK_BYTES = 64 * 1024 * 1024


class BodyTooLargeError(StackError):
    """A request body over MAX_REQUEST_BODY_BYTES (HTTP 413), refused before it is parsed."""

    kind = "too-large"


class NotebookWriteError(StackError):
    """The notebook could not be written where the server keeps new notebooks."""

    kind = "not-writable"

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


def status_for(exc: BaseException) -> int:
    """The HTTP status of an exception: 403 outside the root, 404 missing, 400 refused, 500 else."""
    if isinstance(exc, NotebookWriteError):
        return exc.status
    if isinstance(exc, BodyTooLargeError):
        return 413
    if isinstance(exc, (OutsideRootError, FolderUnreadableError)):
        return 403
    if isinstance(exc, PathNotFoundError):
        return 404
    if isinstance(exc, StackError):
        return 400
    if isinstance(exc, web.HTTPError):
        return exc.status_code
    return 500


class StackAPIHandler(APIHandler):
    """Base handler: the shared ServiceCache, work off the event loop, one error mapping."""

    auth_resource = AUTH_RESOURCE

    @property
    def services(self) -> ServiceCache:
        services: ServiceCache = self.settings[SETTINGS_KEY]  # put there by the extension's loader
        return services

    async def in_thread(self, work: Callable[..., T], *args: Any) -> T:
        """Run blocking stack reads in a worker thread (zarr's sync API cannot run on the loop)."""
        return await asyncio.get_running_loop().run_in_executor(None, work, *args)

    def fail(self, exc: BaseException) -> None:
        """Answer ``exc`` as JSON ``{kind, message}`` with its status."""
        if isinstance(exc, PermissionError):
            exc = unreadable(self.services.root_dir, exc.filename)
        status = status_for(exc)
        if status == 500:
            self.log.error("sds-jupyter: %s failed", self.request.path, exc_info=exc)
        self.set_status(status)
        payload = {"kind": "http", "message": _reason(exc)} if isinstance(exc, web.HTTPError) else error_payload(exc)
        payload["message"] = within_root(payload["message"], self.services.root_dir)
        self.finish(json.dumps(payload))

    def root_relative(self, data: Any) -> Any:
        """A reply whose ``error`` (a stack it could not open, a figure above a missing dataset)
        names folders relative to the root, as :meth:`fail` does for refusals."""
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            message = within_root(error["message"], self.services.root_dir)
            data = {**data, "error": {**error, "message": message}}
        return data

    def reply_json(self, data: Any) -> None:
        body = json.dumps(data, allow_nan=False).encode("utf-8")
        self.finish(self.coded(body, self.coding(), "application/json"))

    def coding(self) -> tuple[str, ...]:
        """The content-codings this request's ``Accept-Encoding`` takes, best first; says so in ``Vary``."""
        self.set_header("Vary", "Accept-Encoding")
        return negotiate(self.request.headers.get("Accept-Encoding"))

    def coded(self, body: bytes, coding: tuple[str, ...], media_type: str | None) -> bytes:
        """``body`` in ``coding`` with its ``Content-Encoding`` when that makes it shorter, else as it is."""
        sent, used = encode(body, coding, media_type)
        if used is not None:
            self.set_header("Content-Encoding", used)
        return sent


#: Query keys Jupyter itself reads (authentication): they reach every handler and are not service parameters.
AUTH_PARAMETERS = frozenset({"token", "_xsrf"})


def _is_parameter(key: str) -> bool:
    """Query keys passed to the service: not ``path``, not auth, not a bare cache-busting timestamp.

    Jupyter authenticates ``?token=`` (and checks ``_xsrf``) before the handler runs;
    JupyterLab's ``cache: "no-store"`` appends ``?<milliseconds>`` to a URL. Those
    keys carry no meaning here, so they are dropped rather than refused.
    """
    return key != "path" and key not in AUTH_PARAMETERS and not (key.isascii() and key.isdigit())


class RequestHandler(StackAPIHandler):
    """``GET api/<request>?path=<version>&<params>``: one protocol request."""

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        params = {key: self.get_argument(key) for key in self.request.arguments if _is_parameter(key)}
        coding = self.coding()
        timing = ServerTiming()  # each part's time goes in the Server-Timing header (timing.py)
        try:
            service = await self.in_thread(self.services.service, self.get_argument("path", ""))
            timing.lap("open")
            reply = await self.in_thread(dispatch, service, name, params)
            timing.lap("work")
            timing.sources = reply.sources
            self.set_header("Server-Timing", timing.header())  # a 304 ends here; set again below
            if reply.etag is not None and self.answered_by_etag(
                reply.etag, reply.addressed or params.get("key") == reply.etag, weak=bool(coding)
            ):
                return
            binary = name in BINARY_REQUESTS
            if binary:
                body = frame_reply(reply)
            else:
                body = json.dumps(self.root_relative(reply.data), allow_nan=False).encode("utf-8")
            timing.lap("frame")
            media_type = reply.data.get("media_type") if isinstance(reply.data, dict) else None
            body, used = await self.in_thread(encode, body, coding, media_type)  # off the loop: 12 MB take ms
            timing.lap("code")
            if used is not None:
                self.set_header("Content-Encoding", used)
        except Exception as exc:  # noqa: BLE001 - mapped once, in fail()
            self.fail(exc)
            return
        self.set_header("Server-Timing", timing.header())
        self.finish(body, set_content_type="application/octet-stream" if binary else "application/json")

    def answered_by_etag(self, etag: str, addressed: bool, weak: bool = False) -> bool:
        """Set the reply's ETag; True after answering 304 when the browser already holds it.

        ``addressed``: the URL names the content (its ``key`` is the ETag), so the answer under it
        never changes and the browser may keep it without asking again (``immutable``); otherwise
        it asks each time and gets a 304 while the content is the same. ``weak``: the body may go
        content-coded, and a strong ETag would promise the same bytes in every coding (nginx
        weakens it too); If-None-Match compares weakly, so a 304 still answers either.
        """
        self.set_header("Etag", f'W/"{etag}"' if weak else f'"{etag}"')
        self.set_header("Cache-Control", IMMUTABLE if addressed else "private, no-cache")
        if self.check_etag_header():
            self.set_status(304)
            self.finish()
            return True
        return False


def _reason(exc: web.HTTPError) -> str:
    """What a tornado HTTPError says, on one line (its message is already formatted when it has no args)."""
    text = exc.log_message or exc.reason or f"HTTP {exc.status_code}"
    if exc.args:
        try:
            text = text % exc.args
        except (TypeError, ValueError):
            pass
    return " ".join(str(text).split())


def _version_key(relative: str, top: VersionSummary | None) -> str:
    """The version's folder relative to the root: its history entry's, else the path as asked (normalized)."""
    folder = top.get("folder") if top else None
    if isinstance(folder, str) and folder:
        pure = PurePosixPath(folder)
        if not pure.is_absolute() and ".." not in pure.parts:
            return pure.as_posix()
    return PurePosixPath(relative.strip()).as_posix()


class VersionsHandler(StackAPIHandler):
    """``GET api/versions?path=<folder>``: which entries of a folder are versions, with their titles.

    One request per listing of the file browser, answered by :func:`~sds_jupyter.stack.listing.version_listing`
    (the listing form of :func:`~sds_jupyter.stack.locator.locate_version`'s rule, with its manifest
    cache; a test holds the two to the same answer). Folders whose manifest is unreadable come apart,
    under ``unreadable`` with the reason, so the browser marks them as such; a listing
    shows at most MAX_LISTED_VERSIONS, and a manifest over MAX_TITLE_MANIFEST_BYTES without its title.
    """

    @web.authenticated
    @authorized
    async def get(self) -> None:
        relative = self.get_argument("path", "")
        try:
            folder = await self.in_thread(self.services.resolve, relative)
            if not folder.is_dir():
                raise RequestError(f"{relative or '/'} is not a folder.")
            if not os.access(folder, os.R_OK | os.X_OK):  # the listing would skip it silently: say why
                raise unreadable(self.services.root_dir, folder)
            titles, broken = await self.in_thread(version_listing, folder)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        versions = [{"name": name, "title": title} for name, title in titles]
        corrupt = [{"name": name, "reason": reason} for name, reason in broken]
        self.reply_json({"path": relative, "versions": versions, "unreadable": corrupt})


@web.stream_request_body
class BodyHandler(StackAPIHandler):
    """A POST whose body is streamed: at most ``max_body`` bytes of it are kept.

    So a huge body costs no memory and answers 413 (Jupyter itself would buffer up to 512 MiB).
    """

    max_body = MAX_REQUEST_BODY_BYTES
    max_body_name = "MAX_REQUEST_BODY_BYTES"
    _body: bytearray
    _body_bytes: int

    async def prepare(self) -> None:  # type: ignore[override]
        self._body, self._body_bytes = bytearray(), 0
        await super().prepare()
        announced = self.request.headers.get("Content-Length", "")
        if announced.isdigit() and int(announced) > self.max_body:
            self._body_bytes = int(announced)  # refused before a byte of it is read (the rest is dropped)
            self.fail(self._too_large())

    def data_received(self, chunk: bytes) -> None:
        """Keep the body while it is within the bound; past it only count (and drop what was kept)."""
        self._body_bytes += len(chunk)
        if self._body_bytes > self.max_body:
            self._body.clear()
        else:
            self._body.extend(chunk)

    def body(self) -> bytes:
        """The body as received; BodyTooLargeError (413) when it was over the bound."""
        if self._body_bytes > self.max_body:
            raise self._too_large()
        return bytes(self._body)

    def _too_large(self) -> BodyTooLargeError:
        return BodyTooLargeError(
            f"The request body is {self._body_bytes:,} bytes; at most {self.max_body:,} ({self.max_body_name}) are read."
        )


class NotebookHandler(BodyHandler):
    """``POST api/notebook {path}``: the notebook that opens the version, in a writable folder.

    Answers 201 with a new notebook, or 200 with the one made earlier for the same version;
    ``run`` says whether it still holds only the cells it was made with (the lab extension
    runs it then, and only opens a notebook someone has edited since).
    """

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            relative = _path_from_body(self.body())
            await self.in_thread(self.services.resolve, relative)
            service = await self.in_thread(self.services.service, relative)
            history = await self.in_thread(service.history)
            if history.get("error") and not history["versions"]:
                raise StackError(history["error"]["message"])
            top = history["versions"][0] if history["versions"] else None
            title = top["title"] if top and top["title"] else None
            notebook_path, created, run = await self._find_or_create(_version_key(relative, top), title)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        self.set_status(201 if created else 200)
        self.reply_json({"notebook_path": notebook_path, "created": created, "run": run})

    async def _find_or_create(self, version_key: str, title: str | None) -> tuple[str, bool, bool]:
        """``(notebook path, created, run)``: the notebook made before for this version, or a new one."""
        manager = self.contents_manager
        directory = work_dir_in_root(self.services.root_dir)
        made = notebook_for(path_from_notebook(version_key, directory), title, version_key)
        first = notebook_name(title or PurePosixPath(version_key).name)
        for filename in candidate_names(first):
            notebook_path = f"{directory}/{filename}" if directory else filename
            if name_is_free(self.services.root_dir, notebook_path):
                model = {"type": "notebook", "format": "json", "content": made}
                await self._contents(manager.save, model, notebook_path)
                return notebook_path, True, True
            if not is_plain_file_in_root(self.services.root_dir, notebook_path):
                continue  # a link (even dangling) or not a regular file: never reused, never written through
            existing = await self._existing_notebook(notebook_path)
            if existing is not None and is_made_for(existing, version_key):
                return notebook_path, False, is_unchanged(existing, made)
        where = directory or "the server root"
        raise NotebookWriteError(
            f"{where} already holds {len(candidate_names(first))} notebooks named like {first!r}; "
            "move some away and try again.",
            status=409,
        )

    async def _contents(self, call: Callable[..., Any], *args: Any) -> Any:
        """A contents-manager call whose refusal (an HTTPError: 403 read-only, 500 disk full) reads as one line."""
        try:
            return await ensure_async(call(*args))
        except web.HTTPError as exc:
            status = exc.status_code if exc.status_code in (400, 403, 404, 409) else 500
            hint = "; set SDS_WORK_DIR to a writable folder under the server root" if status == 403 else ""
            raise NotebookWriteError(f"Cannot write the notebook: {_reason(exc)}{hint}.", status=status) from None

    async def _existing_notebook(self, notebook_path: str) -> dict[str, Any] | None:
        """The content of a notebook already at ``notebook_path``; None if it is not a readable notebook."""
        manager = self.contents_manager
        try:
            listed = await ensure_async(manager.get(notebook_path, content=False))
            size = listed.get("size") if isinstance(listed, dict) else None
            if not isinstance(listed, dict) or listed.get("type") != "notebook":
                return None
            if isinstance(size, int) and size > MAX_REUSED_NOTEBOOK_BYTES:
                return None
            model = await ensure_async(manager.get(notebook_path, content=True, type="notebook"))
        except web.HTTPError:
            return None
        content = model.get("content") if isinstance(model, dict) else None
        return content if isinstance(content, dict) else None


class AnnotateHandler(BodyHandler):
    """``POST api/annotate {path, column, regions, title, message?, figure?, version?}``: regions saved as a version.

    A write, so a POST (Jupyter checks its XSRF token) and never a GET; the service's
    ``annotate`` does the rest. Answers 201 with the new version's ``folder`` (relative to
    the server root, as the panel opens it) and ``dataset_id``.
    """

    max_body = MAX_ANNOTATE_BODY_BYTES
    max_body_name = "MAX_ANNOTATE_BODY_BYTES"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            params = _object_from_body(self.body(), _ANNOTATE_USAGE)
            relative = params.pop("path", None)
            if not isinstance(relative, str) or not relative.strip():
                raise RequestError(f"The request body names no path; {_ANNOTATE_USAGE}")
            service = await self.in_thread(self.services.service, relative)
            reply = await self.in_thread(dispatch, service, "annotate", params)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        self.set_status(201)
        self.reply_json(reply.data)


class WriteRequestHandler(BodyHandler):
    """``POST api/<write request> {path, ...params}``: the writes other than ``annotate`` (upload to, fetch from Cirro).

    A POST (Jupyter checks its XSRF token), its body at most MAX_REQUEST_BODY_BYTES; the
    service's request of that name does the rest and its answer is the reply.
    """

    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        usage = f'POST a JSON body {{"path": <version folder>, ...the parameters of {name}}}.'
        try:
            params = _object_from_body(self.body(), usage)
            relative = params.pop("path", None)
            if not isinstance(relative, str) or not relative.strip():
                raise RequestError(f"The request body names no path; {usage}")
            service = await self.in_thread(self.services.service, relative)
            reply = await self.in_thread(dispatch, service, name, params)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        self.reply_json(self.root_relative(reply.data))


_ANNOTATE_USAGE = (
    'POST a JSON body {"path": <version folder>, "column": <obs column>, '
    '"regions": {<label>: [[x, y], ...]}, "title": <new version title>}.'
)


def _object_from_body(body: bytes, usage: str) -> dict[str, Any]:
    """A JSON object body (a key given twice is refused); NaN is let through for the service to name."""
    try:
        data = loads_bounded(body, strict=False, checked=True) if body.strip() else None
    except JSONRefused as exc:
        raise RequestError(f"The request body is not JSON ({exc}); {usage}") from None
    if not isinstance(data, dict):
        raise RequestError(f"The request body is not a JSON object; {usage}")
    return data


def _path_from_body(body: bytes) -> str:
    """The version path of a notebook request's JSON body, refusing any other body with how to fix it."""
    usage = 'POST a JSON body {"path": <version folder relative to the server root>}.'
    try:
        data = loads_bounded(body) if body.strip() else {}
    except JSONRefused:
        raise RequestError(f"The request body is not JSON; {usage}") from None
    relative = data.get("path") if isinstance(data, dict) else None
    if not isinstance(relative, str) or not relative.strip():
        raise RequestError(f"The request body is JSON but names no path; {usage}")
    return relative


class UnknownRequestHandler(BodyHandler):
    """``api/<name>`` for a name no route serves: a JSON 404, not Jupyter's HTML page.

    A body handler, so that a POST to no route (``api/fetch`` of an older release) is never
    held: a body announced over MAX_REQUEST_BODY_BYTES is refused (413) before it is read, and
    a streamed one is dropped. The 404 quotes the name only when it is short and plain, as a
    request's name is (what else a client sent is not echoed).
    """

    def _unknown(self, name: str) -> None:
        plain = re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) is not None  # a name a request could have
        named = f"{name!r}" if plain else "of that name"
        self.fail(web.HTTPError(404, f"There is no request {named} here (an old or misspelt name?)"))

    @web.authenticated
    @authorized
    def get(self, name: str) -> None:
        self._unknown(name)

    @web.authenticated
    @authorized
    def post(self, name: str) -> None:
        self._unknown(name)


def setup_handlers(web_app: Any, services: ServiceCache) -> None:
    """Register the routes under ``{base_url}sds-jupyter/api/`` and share one service cache."""
    web_app.settings[SETTINGS_KEY] = services
    base = url_path_join(web_app.settings.get("base_url", "/"), NAMESPACE, "api")
    names = "|".join(re.escape(name) for name in REQUESTS if name not in WRITE_REQUESTS)
    writes = "|".join(re.escape(name) for name in REQUESTS if name in WRITE_REQUESTS and name != "annotate")
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "versions"), VersionsHandler),
            (url_path_join(base, "notebook"), NotebookHandler),
            (url_path_join(base, "annotate"), AnnotateHandler),
            (url_path_join(base, f"({names})"), RequestHandler),
            (url_path_join(base, f"({writes})"), WriteRequestHandler),
            (url_path_join(base, "([^/]+)"), UnknownRequestHandler),  # last: what no route above serves
        ],
    )
