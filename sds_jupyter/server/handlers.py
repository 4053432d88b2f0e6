"""REST transport of the version browser: thin handlers over the StackService.

Routes live under ``{base_url}sds-jupyter/api/``: one GET per request in
:data:`REQUESTS`, ``is_version`` for the file browser, and ``notebook`` to
create a notebook that opens a version. Every handler is authenticated and
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
from typing import Any, TypeVar

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from sds_jupyter.errors import StackError
from sds_jupyter.service import BINARY_REQUESTS, REQUESTS, RequestError, dispatch, error_payload, frame_reply
from sds_jupyter.server.cache import ServiceCache
from sds_jupyter.server.notebook import notebook_for, notebook_name, work_dir_in_root
from sds_jupyter.server.paths import OutsideRootError, PathNotFoundError
from sds_jupyter.stack.tree import scan_versions

__all__ = ["NAMESPACE", "SETTINGS_KEY", "setup_handlers", "status_for"]

NAMESPACE = "sds-jupyter"
SETTINGS_KEY = "sds_jupyter_services"
AUTH_RESOURCE = "contents"

T = TypeVar("T")


def status_for(exc: BaseException) -> int:
    """The HTTP status of an exception: 403 outside the root, 404 missing, 400 refused, 500 else."""
    if isinstance(exc, OutsideRootError):
        return 403
    if isinstance(exc, PathNotFoundError):
        return 404
    if isinstance(exc, StackError):
        return 400
    return 500


class StackAPIHandler(APIHandler):
    """Base handler: the shared ServiceCache, work off the event loop, one error mapping."""

    auth_resource = AUTH_RESOURCE

    @property
    def services(self) -> ServiceCache:
        return self.settings[SETTINGS_KEY]

    async def in_thread(self, work: Callable[..., T], *args: Any) -> T:
        """Run blocking stack reads in a worker thread (zarr's sync API cannot run on the loop)."""
        return await asyncio.get_running_loop().run_in_executor(None, work, *args)

    def fail(self, exc: BaseException) -> None:
        """Answer ``exc`` as JSON ``{kind, message}`` with its status."""
        status = status_for(exc)
        if status == 500:
            self.log.error("sds-jupyter: %s failed", self.request.path, exc_info=exc)
        self.set_status(status)
        self.finish(json.dumps(error_payload(exc)))

    def reply_json(self, data: Any) -> None:
        self.finish(json.dumps(data, allow_nan=False))


def _is_parameter(key: str) -> bool:
    """Query keys passed to the service: not ``path``, not a bare cache-busting timestamp.

    JupyterLab's ``cache: "no-store"`` appends ``?<milliseconds>`` to a URL; that
    key carries no meaning here, so it is dropped rather than refused.
    """
    return key != "path" and not key.isdigit()


class RequestHandler(StackAPIHandler):
    """``GET api/<request>?path=<version>&<params>``: one protocol request."""

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        params = {key: self.get_argument(key) for key in self.request.arguments if _is_parameter(key)}
        try:
            service = await self.in_thread(self.services.service, self.get_argument("path", ""))
            reply = await self.in_thread(dispatch, service, name, params)
            binary = name in BINARY_REQUESTS
            body = frame_reply(reply) if binary else json.dumps(reply.data, allow_nan=False)
        except Exception as exc:  # noqa: BLE001 - mapped once, in fail()
            self.fail(exc)
            return
        self.finish(body, set_content_type="application/octet-stream" if binary else "application/json")


class IsVersionHandler(StackAPIHandler):
    """``GET api/is_version?path=``: whether a folder is a version (for the file browser)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        relative = self.get_argument("path", "")
        try:
            path = await self.in_thread(self.services.resolve, relative)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        folder = path.parent if path.name == "layer.json" else path
        manifest = next((p for p in (folder / "layer.json", folder / "data" / "layer.json") if p.is_file()), None)
        answer: dict[str, Any] = {"path": relative, "is_version": manifest is not None, "title": None}
        if manifest is not None:
            answer["title"] = await self.in_thread(_title_of, manifest)
        self.reply_json(answer)


def _title_of(manifest: Any) -> str | None:
    try:
        title = json.loads(manifest.read_text(encoding="utf-8")).get("title")
    except (OSError, ValueError, AttributeError):
        return None
    return title if isinstance(title, str) else None


class VersionsHandler(StackAPIHandler):
    """``GET api/versions?path=<folder>``: which entries of a folder are versions, with their titles.

    One request per listing of the file browser; the rule and the manifest cache
    are :mod:`sds_jupyter.stack.tree`'s. Unreadable manifests are left out.
    """

    @web.authenticated
    @authorized
    async def get(self) -> None:
        relative = self.get_argument("path", "")
        try:
            folder = await self.in_thread(self.services.resolve, relative)
            if not folder.is_dir():
                raise RequestError(f"{relative or '/'} is not a folder.")
            scan = await self.in_thread(scan_versions, folder)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        versions = [{"name": os.path.basename(v.folder), "title": v.manifest.title} for v in scan.versions]
        self.reply_json({"path": relative, "versions": versions})


class NotebookHandler(StackAPIHandler):
    """``POST api/notebook {path}``: a new notebook that opens the version, in a writable folder."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            body = self.get_json_body() or {}
            relative = body.get("path") if isinstance(body, dict) else None
            if not isinstance(relative, str) or not relative.strip():
                raise RequestError("POST a JSON body {\"path\": <version folder relative to the server root>}.")
            path = await self.in_thread(self.services.resolve, relative)
            service = await self.in_thread(self.services.service, relative)
            history = await self.in_thread(service.history)
            if history.get("error") and not history["versions"]:
                raise StackError(history["error"]["message"])
            notebook_path = await self._create(path, history)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return
        self.set_status(201)
        self.reply_json({"notebook_path": notebook_path})

    async def _create(self, path: Any, history: dict[str, Any]) -> str:
        manager = self.contents_manager
        directory = work_dir_in_root(self.services.root_dir)
        top = history["versions"][0] if history["versions"] else None
        filename = notebook_name(top["title"] if top and top["title"] else path.name)
        filename = await ensure_async(manager.increment_filename(filename, directory, insert="-"))
        notebook_path = f"{directory}/{filename}" if directory else filename
        model = {"type": "notebook", "format": "json", "content": notebook_for(path, top["title"] if top else None)}
        await ensure_async(manager.save(model, notebook_path))
        return notebook_path


def setup_handlers(web_app: Any, services: ServiceCache) -> None:
    """Register the routes under ``{base_url}sds-jupyter/api/`` and share one service cache."""
    web_app.settings[SETTINGS_KEY] = services
    base = url_path_join(web_app.settings.get("base_url", "/"), NAMESPACE, "api")
    names = "|".join(re.escape(name) for name in REQUESTS)
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "is_version"), IsVersionHandler),
            (url_path_join(base, "versions"), VersionsHandler),
            (url_path_join(base, "notebook"), NotebookHandler),
            (url_path_join(base, f"({names})"), RequestHandler),
        ],
    )
