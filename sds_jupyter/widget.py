"""The version browser as an anywidget: a transport over the StackService.

The JS side is built from ``js/`` into ``sds_jupyter/static``: ``widget.js`` is the
anywidget entry (``_esm``), small so that anywidget's 2 s limit on loading a model's
module holds on a loaded machine; the app itself (``widget-app.js``, deck.gl and vega,
~1.9 MB) is not in the model's state: the entry asks for it once per page with an
``{type: "app", id}`` message when it renders and imports the answer's buffer (the
``_app_hash`` trait names it, so every widget of the page shares one copy). A state
holding the app would travel once per widget whenever JupyterLab restores a notebook's
widgets from the kernel, in the one reply its 4 s restore window waits for. The app sends
``{type: "request", id, name, params}`` custom messages; this side answers
``{type: "response", id, ok, data | error}`` with the buffers alongside. The
"Bind as `adata`" button sends ``{type: "open_adata", id, version}``, which binds
that version's AnnData here (``browser.adata``) and, in a notebook, to a name
in the user namespace; the ``bound`` trait tells the front end which version
that is. :meth:`VersionBrowser.save` saves the bound AnnData's edits as a new
version and moves the browser onto it (the ``path`` trait changes, and the front
end reloads the history). Everything else is the service's business.
"""

from __future__ import annotations

import functools
import hashlib
import html
import logging
import os
import weakref
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np

from sds_jupyter.errors import needs_extra

try:
    import anywidget
    import traitlets
except ImportError:
    needs_extra("jupyter", "the notebook widget (VersionBrowser)")
    raise

from sds_jupyter.protocol.types import (
    OpenAdataData,
    OpenVersionData,
    WidgetAnswered,
    WidgetApp,
    WidgetAskApp,
    WidgetOpenAdata,
    WidgetOpenVersion,
    WidgetRequest,
    WidgetResponse,
    message_kind,
)
from sds_jupyter.service import Reply, StackService, dispatch, error_payload
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.warm import warm_once
from sds_jupyter.stack import Stack

__all__ = ["STATIC_DIR", "VersionBrowser", "bound_browser"]

STATIC_DIR = Path(__file__).parent / "static"
_ESM_PATH = STATIC_DIR / "widget.js"
_APP_PATH = STATIC_DIR / "widget-app.js"
_CSS_PATH = STATIC_DIR / "widget.css"


def _require_static() -> None:
    missing = [path.name for path in (_ESM_PATH, _APP_PATH, _CSS_PATH) if not path.is_file()]
    if missing:
        raise RuntimeError(
            f"The version browser's front end is not built ({', '.join(missing)} missing in {STATIC_DIR}); "
            "build the package (cd js && npm ci && npm run build) or install a built wheel."
        )


def _app_module() -> tuple[str, bytes]:
    """The app's module source and a digest naming it, read again only when the file changes."""
    stat = _APP_PATH.stat()
    return _read_app_module(stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1)
def _read_app_module(_mtime_ns: int, _size: int) -> tuple[str, bytes]:
    source = _APP_PATH.read_bytes()
    return hashlib.sha256(source).hexdigest()[:16], source


# Which browser bound which name in which namespace, so that `%sds_save --from NAME`
# finds the version NAME came from. Weak: a browser nobody holds is forgotten.
_BINDINGS: weakref.WeakValueDictionary[tuple[int, str], VersionBrowser] = weakref.WeakValueDictionary()

# The text/HTML history summary lists at most this many versions.
_SUMMARY_ROWS = 50


def bound_browser(namespace: MutableMapping[str, Any], name: str) -> VersionBrowser | None:
    """The browser that last bound ``name`` in ``namespace``, if it is still alive."""
    return _BINDINGS.get((id(namespace), name))


def _user_namespace() -> MutableMapping[str, Any] | None:
    """The running IPython's user namespace, if there is one (no IPython needed otherwise)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.user_ns if shell is not None else None


_LOG = logging.getLogger("sds_jupyter.widget")

#: Version folders left whose services are kept for views still showing them: a move is followed
#: at once by the new folder's history, so the views of one or two folders back are all that ask.
LEFT_KEPT = 2


class VersionBrowser(anywidget.AnyWidget):
    """Browse a stack's versions, figures and results; bind any version's AnnData.

    Parameters
    ----------
    path
        A version folder, its ``layer.json``, or a base store. A leading ``~`` is the home
        folder (JupyterLab names its server root that way, and the panel's "Copy code" joins it).
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
    _app_hash = traitlets.Unicode().tag(sync=True)
    """Names the app's module source, which the small ``_esm`` asks for (once per page) when it renders."""

    path = traitlets.Unicode(read_only=True).tag(sync=True)
    selected = traitlets.Int(0).tag(sync=True)
    """The depth of the version whose AnnData ``adata`` returns (the top, at first)."""
    bound = traitlets.Int(-1).tag(sync=True)
    """The depth of the version whose AnnData is bound in the namespace (-1: none yet)."""
    bound_name = traitlets.Unicode("adata").tag(sync=True)
    """The variable the bind button binds (shown on the button)."""
    selected_cells = traitlets.Dict().tag(sync=True)
    """The cells in the regions drawn on a spatial view: ``{version, figure, cells: [table positions]}``."""

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
        warm_once(_LOG)  # the first figure's libraries, while the front end loads
        if isinstance(path, str) and (path == "~" or path.startswith("~/")):
            path = os.path.expanduser(path)
        self.service = StackService(path, folders=folders, table=table, storage_options=storage_options)
        self.variable_name = name
        self._namespace = namespace
        self._folders = folders
        self._storage_options = storage_options
        #: The version each AnnData this browser handed out was read from (by identity): a save goes there.
        self._read_from: dict[int, tuple[weakref.ref[Any], Stack]] = {}
        #: Services of the folders left lately, by path, oldest first (see ``_request``).
        self._left: dict[str, StackService] = {}
        top = 0 if self.service.error is not None else self.service.stack.depth
        super().__init__(_app_hash=_app_module()[0], **kwargs)
        self.set_trait("path", os.fspath(path))
        self.selected = top
        self.bound_name = name
        self.on_msg(self._on_custom_message)

    # ------------------------------------------------------------------ notebook API

    @property
    def adata(self) -> Any:
        """The selected version's AnnData (read once per version, then cached)."""
        return self._read(self.selected)

    @property
    def selection(self) -> np.ndarray:
        """The cells inside the regions drawn on the tissue, as a boolean mask over the table's cells.

        In table order, so ``adata[browser.selection]`` takes them from the AnnData of the
        version they were drawn on (``browser.selection_version``); all False when nothing is drawn.
        """
        drawn = self.selected_cells or {}
        version = drawn.get("version", self.selected)
        figure = drawn.get("figure")
        table = self.service.table_name
        if isinstance(figure, str) and figure:
            table = self.service.figure_table(version, figure)
        n_obs = self.service.table_view(version, table).n_obs
        cells = np.asarray(drawn.get("cells") or [], dtype=np.int64)
        if cells.size and (cells.min() < 0 or cells.max() >= n_obs):
            raise RequestError(f"the drawn selection names cells outside the table's {n_obs} rows; draw it again")
        mask = np.zeros(n_obs, dtype=bool)
        mask[cells] = True
        return mask

    @property
    def selection_version(self) -> int | str:
        """The version the selection was drawn on (the selected one when nothing is drawn)."""
        version = (self.selected_cells or {}).get("version", self.selected)
        return version if isinstance(version, (int, str)) else self.selected

    def _read(self, depth: int) -> Any:
        """Version ``depth``'s AnnData, remembered with the version it came from."""
        adata = self.service.adata(depth)
        self._remember(adata, self.service.stack.at(depth))
        return adata

    def _remember(self, adata: Any, stack: Stack) -> None:
        self._read_from = {k: v for k, v in self._read_from.items() if v[0]() is not None}
        self._read_from[id(adata)] = (weakref.ref(adata), stack)

    def _source_of(self, adata: Any) -> Stack | None:
        entry = self._read_from.get(id(adata))
        return entry[1] if entry is not None and entry[0]() is adata else None

    def open(self, version: int | str | None = None) -> Any:
        """Select a version (depth, dataset ID or title), bind its AnnData, and return it.

        ipywidgets calls ``open()`` with no argument to open the widget's comm, so
        that call still does exactly that.
        """
        if version is None:
            return super().open()
        self.selected = self.service.depth(version)
        adata = self.adata
        namespace = self._target_namespace()
        if namespace is not None and self.variable_name:
            namespace[self.variable_name] = adata
            _BINDINGS[(id(namespace), self.variable_name)] = self
            self.bound = self.selected
        return adata

    def result(self, result: str, table: str = "table", version: int | str | None = None) -> Any:
        """A saved result's table as a DataFrame, with the result's meta as ``.meta`` (a dict).

        ``version`` (depth, dataset ID or title) defaults to the selected version;
        the result view's "Copy code" button copies the line that calls this.
        """
        return self.service.result_table(result, table, self.selected if version is None else version)

    def save(self, title: str, message: str | None = None, adata: Any = None) -> Path:
        """Save what ``adata`` changed as a new version, and show that version here.

        ``adata`` defaults to the AnnData bound by :meth:`open` (the notebook's
        ``adata``, edits and all), else the selected version's. The new version sits
        on the version that AnnData was read from, whatever is selected in the tree
        since (saving onto another version would record changes it never made); an
        AnnData this browser did not read goes onto the selected version. See
        :func:`sds_jupyter.save_version` for what is saved and what is refused.
        Returns the new version's folder.
        """
        from sds_jupyter.stack import save_version

        if adata is None:
            adata = self._bound_value()
        parent = self._source_of(adata) or self.service.stack.at(self.selected)
        top = save_version(
            parent,
            adata,
            title=title,
            message=message,
            table=self.service.table_name,
            caches=self.service.session.caches,  # where its open remembered what it read
        )
        self._move_to(top)
        self._remember(adata, self.service.stack)  # saved as it is: the next save goes on top of it
        return top

    def upload(
        self, version: int | str | None = None, *, project: str | None = None, process: str | None = None
    ) -> str:
        """Create a Cirro dataset from one of this stack's versions; return its Cirro ID.

        ``version`` is a depth, dataset ID or title (default: the selected version).
        See :func:`sds_jupyter.stack.exchange.upload_version` for what is sent and
        how versions saved on a not-yet-uploaded one keep resolving.
        """
        from sds_jupyter.stack import upload_version

        stack = self.service.stack
        top = stack.at(self.selected if version is None else version).versions[0]
        return upload_version(str(top.folder), project=project, process=process, folders=dict(stack.folders))

    def export(
        self, figure: str, path: str | os.PathLike[str], *, dpi: int = 300, view: str | Sequence[float] | None = None
    ) -> Path:
        """Draw saved figure ``figure`` of the selected version to ``path`` (.svg, .png or .pdf).

        The same file the panel's export buttons and ``sds-jupyter export`` make. ``path`` may be
        a folder: a PNG is then written in it, named after the version and figure. ``view``: None (the
        figure's saved view), "whole" (all cells and the image) or the region x0, y0, x1, y1.
        Returns the file written.
        """
        from sds_jupyter.service.export import export_figure

        return export_figure(self.service, figure, path, version=self.selected, dpi=dpi, view=view, format=".png")

    def bound_message(self) -> str:
        """One line saying which variable holds which version's AnnData (safe to print)."""
        return _printable(self._bound_message(self.adata))

    def _target_namespace(self) -> MutableMapping[str, Any] | None:
        return self._namespace if self._namespace is not None else _user_namespace()

    def _bound_object(self) -> Any | None:
        """What this browser bound in the namespace (even when the history shown now lacks its version)."""
        namespace = self._target_namespace()
        if namespace is None or self.variable_name not in namespace:
            return None
        return namespace[self.variable_name] if _BINDINGS.get((id(namespace), self.variable_name)) is self else None

    def _bound_value(self) -> Any:
        bound = self._bound_object()
        return self.adata if bound is None else bound

    def _move_to(self, top: Path) -> None:
        """Browse the stack topped by ``top`` (a version just saved), bound and selected."""
        self._leave()
        self.service = StackService(
            top, folders=self._folders, table=self.service.table_name, storage_options=self._storage_options
        )
        depth = self.service.stack.depth
        namespace = self._target_namespace()
        binds = namespace is not None and bool(self.variable_name)
        if binds:
            _BINDINGS[(id(namespace), self.variable_name)] = self
        with self.hold_sync():
            self.selected = depth
            self.bound = depth if binds else -1
            self.set_trait("path", os.fspath(top))  # the front end reloads the history on this

    # ------------------------------------------------------------------ messages

    def answer(self, content: Mapping[str, Any]) -> Reply:
        """The reply to one message from the front end (raises what the service raises)."""
        handlers: dict[str, Callable[[Mapping[str, Any]], Reply]] = {
            message_kind(WidgetRequest): self._request,
            message_kind(WidgetOpenVersion): lambda message: self._open_version(message.get("folder")),
            message_kind(WidgetOpenAdata): self._open_adata,
        }
        kind = content.get("type")
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise RequestError(f"Unknown message type {kind!r}.")
        return handler(content)

    def _request(self, content: Mapping[str, Any]) -> Reply:
        """One request of the table, dispatched as every transport does, to the version it names.

        Why a path: the front end moves the widget to another version folder before that folder's
        history is shown, and meanwhile a view of the version left (a rested key, a tile, a poll)
        still asks about it; asked of the new stack, a depth it lacks was an error on the page. Such
        a view names its folder, and a folder left lately is still answered (:data:`LEFT_KEPT`).
        """
        params = content.get("params") or {}
        if not isinstance(params, Mapping):
            raise RequestError("Request params must be an object.")
        return dispatch(self._service_of(content.get("path")), str(content.get("name")), params)

    def _service_of(self, path: Any) -> StackService:
        """The service of version folder ``path``: the open one, or one left lately (None: the open one)."""
        if path is None or path == self.path:
            return self.service
        left = self._left.get(path) if isinstance(path, str) else None
        if left is None:
            raise RequestError("This view shows a version the browser has left; it is redrawn with the one open now.")
        return left

    def _leave(self) -> None:
        """Keep the open folder's service for the views still showing it (the last LEFT_KEPT folders)."""
        self._left.pop(self.path, None)
        self._left[self.path] = self.service
        while len(self._left) > LEFT_KEPT:
            self._left.pop(next(iter(self._left)))

    def _open_adata(self, content: Mapping[str, Any]) -> Reply:
        """Bind a version's table (the top when none is named) and say what was bound."""
        version = content.get("version")
        adata = self.open(self.service.depth(version) if version is not None else self.service.stack.depth)
        bound: OpenAdataData = {
            "message": self._bound_message(adata) if self._binds() else self._unbound_message(adata)
        }
        return Reply(bound)

    def _open_version(self, folder: Any) -> Reply:
        """Move to another version of the datasets folder (a node of the tree); binds nothing."""
        if not isinstance(folder, str) or not folder:
            raise RequestError("open_version needs the version's folder.")
        held = self._bound_object()
        bound = self._source_of(held) if held is not None else None
        self._leave()
        self.service = self.service.sibling(folder)
        self.set_trait("path", folder)
        self.selected = 0 if self.service.error is not None else self.service.stack.depth
        # The bound AnnData stays with its version: marked only where this history holds that version.
        self.bound = self._depth_in_history(bound) if bound is not None else -1
        opened: OpenVersionData = {"path": folder}
        return Reply(opened)

    def _depth_in_history(self, stack: Stack) -> int:
        """The depth ``stack``'s top has in the history shown now, or -1 if it is not in it."""
        if self.service.error is not None or stack.depth > self.service.stack.depth:
            return -1
        same = self.service.stack.at(stack.depth).fingerprint() == stack.fingerprint()
        return stack.depth if same else -1

    def _binds(self) -> bool:
        """Whether "Bind" sets a variable: only with a namespace (IPython's, or one given) and a name."""
        return self._target_namespace() is not None and bool(self.variable_name)

    def _selected_label(self) -> str:
        top = self.service.stack.at(self.selected).top if self.selected else None  # the base alone has no top version
        return "the base" if top is None else f"v{self.selected} “{top.label}”"

    def _unbound_message(self, adata: Any) -> str:
        """What "Bind" did where there is no IPython (plain Python, marimo, voila): selected, bound nothing."""
        return (
            f"Not bound: no IPython kernel here, so no variable `{self.variable_name or 'adata'}` was set. "
            f"{self._selected_label()} is selected: use `browser.adata` ({adata.n_obs} cells × "
            f"{adata.n_vars} variables), or give VersionBrowser a namespace=."
        )

    def _bound_message(self, adata: Any) -> str:
        label = self._selected_label()
        where = f"`{self.variable_name}`" if self.variable_name else "`browser.adata`"
        return (
            f"{where} is the AnnData of {label}: {adata.n_obs} cells × {adata.n_vars} variables. "
            f"Saving it puts its edits in a new version on {label}, whatever is selected later."
        )

    # ------------------------------------------------------------------ saved notebooks

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, plus a text and an HTML summary of the history.

        A notebook saved without widget state (GitHub, nbviewer, nbconvert) shows
        the summary instead of ``<VersionBrowser object at 0x…>``.
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        rows = self._summary_rows()
        data = {**data, "text/plain": _summary_text(self.path, rows), "text/html": _summary_html(self.path, rows)}
        return data, metadata

    def _summary_rows(self) -> list[dict[str, str]]:
        if self.service.error is not None:
            return [{"version": "error", "title": str(self.service.error)}]
        stack = self.service.stack
        rows = []
        for version in stack.versions[:_SUMMARY_ROWS]:
            manifest = version.manifest
            marks = [
                m
                for m, on in (
                    ("selected", version.depth == self.selected),
                    (f"bound as {self.variable_name}", version.depth == self.bound),
                )
                if on
            ]
            rows.append(
                {
                    "version": f"v{version.depth}",
                    "title": version.label,
                    "message": manifest.message or "",
                    "by": manifest.created_by or "",
                    "at": manifest.created_at or "",
                    "changes": str(len(manifest.changes)),
                    "marks": ", ".join(marks),
                }
            )
        if len(stack.versions) > _SUMMARY_ROWS:
            rows.append({"version": "…", "title": f"{len(stack.versions) - _SUMMARY_ROWS} more versions"})
        rows.append({"version": "base", "title": str(stack.base.dataset_id or stack.base.path)})
        return rows

    def _on_custom_message(self, _widget: Any, content: Any, buffers: list[Any]) -> None:
        if isinstance(content, Mapping) and content.get("type") == message_kind(WidgetAskApp):
            digest, source = _app_module()
            asked = content.get("id")
            app: WidgetApp = {"type": "app", "id": asked if isinstance(asked, str) else "", "hash": digest}
            self.send(app, [source])
            return
        if not isinstance(content, Mapping) or content.get("type") not in _ANSWERED:
            return
        message_id = _message_id(content)
        try:
            reply = self.answer(content)
        except Exception as exc:  # noqa: BLE001 - every failure is shown in the browser, in place
            failed: WidgetResponse = {"type": "response", "id": message_id, "ok": False, "error": error_payload(exc)}
            self.send(failed)
            return
        answered: WidgetResponse = {"type": "response", "id": message_id, "ok": True, "data": reply.data}
        self.send(answered, reply.buffers)


#: The kinds of message answered with a WidgetResponse, read from their declared types.
_ANSWERED = frozenset(message_kind(message) for message in get_args(WidgetAnswered))


def _message_id(content: Mapping[str, Any]) -> int:
    """The id to answer under: the browser's own (an int); anything else is answered as -1, matched by nobody."""
    value = content.get("id")
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


_COLUMNS = (
    ("version", "Version"),
    ("title", "Title"),
    ("message", "Message"),
    ("by", "By"),
    ("at", "Saved"),
    ("changes", "Changes"),
    ("marks", ""),
)


def _summary_text(path: str, rows: list[dict[str, str]]) -> str:
    """The history as plain lines; control characters in data are shown escaped."""
    lines = [f"VersionBrowser: {_printable(path)}"]
    for row in rows:
        parts = [_printable(row.get(key, "")) for key, _ in _COLUMNS]
        lines.append("  " + "  ".join(p for p in parts if p))
    return "\n".join(lines)


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


def _summary_html(path: str, rows: list[dict[str, str]]) -> str:
    """The history as an HTML table; every value is escaped, none is markup."""
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in _COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(row.get(key, ''))}</td>" for key, _ in _COLUMNS) + "</tr>" for row in rows
    )
    return (
        f'<div class="sds-history-summary"><p>Versions of <code>{html.escape(path)}</code>'
        " (the interactive browser needs a running kernel)</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )
