"""The version browser as an anywidget: a transport over the StackService.

The JS side (``sds_jupyter/static/widget.js``, built from ``js/``) sends
``{type: "request", id, name, params}`` custom messages; this side answers
``{type: "response", id, ok, data | error}`` with the buffers alongside. The
"Open AnnData" button sends ``{type: "open_adata", id, version}``, which binds
that version's AnnData here (``browser.adata``) and, in a notebook, to a name
in the user namespace. Everything else is the service's business.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from sds_jupyter.service import Reply, StackService, dispatch, error_payload
from sds_jupyter.service.errors import RequestError

__all__ = ["STATIC_DIR", "VersionBrowser"]

STATIC_DIR = Path(__file__).parent / "static"
_ESM_PATH = STATIC_DIR / "widget.js"
_CSS_PATH = STATIC_DIR / "widget.css"


def _require_static() -> None:
    missing = [path.name for path in (_ESM_PATH, _CSS_PATH) if not path.is_file()]
    if missing:
        raise RuntimeError(
            f"The version browser's front end is not built ({', '.join(missing)} missing in {STATIC_DIR}); "
            "build the package (cd js && npm ci && npm run build) or install a built wheel."
        )


def _user_namespace() -> MutableMapping[str, Any] | None:
    """The running IPython's user namespace, if there is one (no IPython needed otherwise)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.user_ns if shell is not None else None


class VersionBrowser(anywidget.AnyWidget):
    """Browse a stack's versions, figures and results; bind any version's AnnData.

    Parameters
    ----------
    path
        A version folder, its ``layer.json``, or a base store.
    folders
        ``{dataset id: folder}`` (mapping or JSON); ``None`` reads ``SDS_CIRRO_DATASETS``.
    name
        The user-namespace variable "Open AnnData" binds (default ``adata``).
    namespace
        Where to bind it; defaults to the running IPython's user namespace.
    storage_options
        fsspec options when ``path`` is an object-storage URL (``s3://...``).
    """

    _esm = _ESM_PATH
    _css = _CSS_PATH

    path = traitlets.Unicode(read_only=True).tag(sync=True)
    selected = traitlets.Int(0).tag(sync=True)
    """The depth of the version whose AnnData ``adata`` returns (the top, at first)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        folders: str | Mapping[str, str] | None = None,
        *,
        table: str = "table",
        name: str = "adata",
        namespace: MutableMapping[str, Any] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        _require_static()
        self.service = StackService(path, folders=folders, table=table, storage_options=storage_options)
        self.variable_name = name
        self._namespace = namespace
        top = 0 if self.service.error is not None else self.service.stack.depth
        super().__init__(**kwargs)
        self.set_trait("path", os.fspath(path))
        self.selected = top
        self.on_msg(self._on_custom_message)

    # ------------------------------------------------------------------ notebook API

    @property
    def adata(self) -> Any:
        """The selected version's AnnData (read once per version, then cached)."""
        return self.service.adata(self.selected)

    def open(self, version: int | str | None = None) -> Any:
        """Select a version (depth, dataset ID or title), bind its AnnData, and return it.

        ipywidgets calls ``open()`` with no argument to open the widget's comm, so
        that call still does exactly that.
        """
        if version is None:
            return super().open()
        self.selected = self.service.depth(version)
        adata = self.adata
        namespace = self._namespace if self._namespace is not None else _user_namespace()
        if namespace is not None and self.variable_name:
            namespace[self.variable_name] = adata
        return adata

    def result(self, result: str, table: str = "table", version: int | str | None = None) -> Any:
        """A saved result's table as a DataFrame, with the result's meta as ``.meta`` (a dict).

        ``version`` (depth, dataset ID or title) defaults to the selected version;
        the result view's "Copy code" button copies the line that calls this.
        """
        return self.service.result_table(result, table, self.selected if version is None else version)

    # ------------------------------------------------------------------ messages

    def answer(self, content: Mapping[str, Any]) -> Reply:
        """The reply to one message from the front end (raises what the service raises)."""
        kind = content.get("type")
        if kind == "request":
            params = content.get("params") or {}
            if not isinstance(params, Mapping):
                raise RequestError("Request params must be an object.")
            return dispatch(self.service, str(content.get("name")), params)
        if kind == "open_adata":
            version = content.get("version")
            adata = self.open(self.service.depth(version) if version is not None else self.service.stack.depth)
            return Reply({"message": self._bound_message(adata)})
        raise RequestError(f"Unknown message type {kind!r}.")

    def _bound_message(self, adata: Any) -> str:
        stack = self.service.stack
        label = "the base" if self.selected == 0 else f"v{self.selected} “{stack.at(self.selected).top.label}”"
        where = f"`{self.variable_name}`" if self.variable_name else "`browser.adata`"
        return f"{where} is the AnnData of {label}: {adata.n_obs} cells × {adata.n_vars} variables."

    def _on_custom_message(self, _widget: Any, content: Any, buffers: list[Any]) -> None:
        if not isinstance(content, Mapping) or content.get("type") not in ("request", "open_adata"):
            return
        message_id = content.get("id")
        try:
            reply = self.answer(content)
        except Exception as exc:  # noqa: BLE001 - every failure is shown in the browser, in place
            self.send({"type": "response", "id": message_id, "ok": False, "error": error_payload(exc)})
            return
        self.send({"type": "response", "id": message_id, "ok": True, "data": reply.data}, reply.buffers)
