"""Everything the version browser asks of a stack, answered from Python: the facade over the features.

One function per request of docs/service-protocol.md, in the feature modules of
:mod:`sds_jupyter.service.features`, named by the request table
(:data:`~sds_jupyter.service.requests.REQUESTS`). They return JSON-able payloads (typed in
:mod:`sds_jupyter.service.types`), or a :class:`Reply` with binary buffers. Problems with
what a version holds (a figure that is not JSON, a result without meta, a table the app
never saved) come back *inside* the payload so the rest still shows; problems with the
request itself raise StackError subclasses, which transports map with :func:`error_payload`.
Nothing but ``annotate`` writes: browsing never changes a version.

:class:`StackService` is what notebooks, the widget and the server hold: one opened
version (a :class:`Session`), every request of the table as a method, and the few
things notebooks ask that are no request (an AnnData, a result as a DataFrame).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from sds_jupyter.errors import StackError
from sds_jupyter.service import branches
from sds_jupyter.service.features import figures, results
from sds_jupyter.service.features.results import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from sds_jupyter.service.reply import Reply
from sds_jupyter.service.requests import REQUESTS
from sds_jupyter.service.session import Folders, Session
from sds_jupyter.service.tables import TableView
from sds_jupyter.stack import Stack
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.tree import PartialChain
from sds_jupyter.studio.figures import ParsedFigure
from sds_jupyter.studio.results import MAIN_TABLE, ResultTable

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "Reply", "StackService"]


class StackService:
    """Answers the browser's requests about one stack; one instance per opened version.

    ``path_or_stack`` is anything :meth:`Stack.resolve` takes (a local path, or an
    object-storage URL with ``storage_options``), a Stack, or an opened :class:`Session`.
    A stack that cannot be resolved (a missing parent, say) does not raise here:
    ``history`` reports it in place and every other request raises it. ``caches`` go to
    the :class:`Session` (see :class:`~sds_jupyter.stack.caches.StackCaches`).

    Each request of :data:`REQUESTS` is a method of the same name taking the request's
    parameters (``service.canvas(2, "fig")``), called as given: the dispatcher's coercion
    and its reading of other branches apply to :func:`~sds_jupyter.service.dispatch` only.
    """

    def __init__(
        self,
        path_or_stack: str | os.PathLike[str] | Stack | Session,
        folders: Folders = None,
        *,
        table: str = "table",
        relative_to: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        caches: StackCaches | None = None,
    ) -> None:
        self.session = (
            path_or_stack
            if isinstance(path_or_stack, Session)
            else Session(
                path_or_stack,
                folders,
                table=table,
                relative_to=relative_to,
                storage_options=storage_options,
                caches=caches,
            )
        )

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Request ``name`` of the table, bound to this service's session."""
        if name != "session" and name in REQUESTS:
            return functools.partial(REQUESTS[name], self.session)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *REQUESTS})

    @property
    def table_name(self) -> str:
        """The table this service reads unless a figure names another."""
        return self.session.table_name

    @property
    def error(self) -> StackError | None:
        """Why the stack could not be resolved (a missing parent, say), or None."""
        return self.session.error

    @property
    def stack(self) -> Stack:
        """The resolved stack; raises the resolution error when there is none."""
        return self.session.stack

    @property
    def partial(self) -> PartialChain | None:
        """The versions that resolved above a missing parent, or None."""
        return self.session.partial

    def fetch_missing(self) -> list[str]:
        """Download from Cirro the datasets this stack misses; their IDs (the caller then opens it again)."""
        return self.session.fetch_missing()

    def depth(self, version: int | str | None) -> int:
        """The depth ``version`` names (None: the top)."""
        return self.session.depth(version)

    def table_view(self, version: int | str | None = None, table: str | None = None) -> TableView:
        """The cached element reader of a table (default: this service's) at ``version``."""
        return self.session.table_view(version, table)

    def adata(self, version: int | str | None = None) -> Any:
        """The whole AnnData of the table at ``version`` (read once, for notebooks)."""
        return self.session.adata(version)

    def result_table(self, result: str, table: str = MAIN_TABLE, version: int | str | None = None) -> ResultTable:
        """One table of a saved result as a DataFrame with the result's meta as ``.meta`` (for notebooks)."""
        return results.result_table(self.session, result, table, version)

    def figure_table(self, version: int | str | None, figure: str) -> str:
        """The table a canvas figure draws (its spec's, else the one this service opens)."""
        return figures.figure_table(self.session, version, figure)

    def export_figure(
        self, version: int | str | None, figure: str, draw_px: int | None = None, channels: Any = None
    ) -> tuple[ParsedFigure, Any]:
        """A figure and what draws it: a Vega-Lite spec (charts) or CanvasData (canvas); see :func:`figure_drawing`."""
        return figures.figure_drawing(self.session, version, figure, draw_px, channels)

    def sibling(self, folder: str | os.PathLike[str]) -> StackService:
        """A service for another version of this datasets folder (a node of the tree)."""
        return StackService(self.session.sibling(folder))

    def serving(self, version: int | str | None) -> tuple[StackService, int | str | None]:
        """The service that reads ``version`` (another branch's for a dataset ID off this chain), and its name there."""
        session, name = branches.serving(self.session, version)
        return (self if session is self.session else StackService(session)), name
