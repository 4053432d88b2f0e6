"""Everything the version browser asks of a stack, answered from Python: the facade over the features.

One function per request of docs/service-protocol.md, in the feature modules of
:mod:`sds_jupyter.service.features`, named by the request table
(:data:`~sds_jupyter.service.requests.REQUESTS`). They return JSON-able payloads (typed in
:mod:`sds_jupyter.protocol.types`), or a :class:`Reply` with binary buffers. Problems with
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
from collections.abc import Callable
from typing import Any, Unpack

from sds_jupyter.errors import StackError
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.service import branches
from sds_jupyter.service.features import figures, results
from sds_jupyter.service.features.results import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from sds_jupyter.service.requests import REQUESTS
from sds_jupyter.service.session import Folders, Opening, Session
from sds_jupyter.stack import PartialChain, Stack
from sds_jupyter.studio.figurespecs import ParsedFigure
from sds_jupyter.studio.resultstore import MAIN_TABLE, ResultTable
from sds_jupyter.studio.tableview import TableView

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "Reply", "StackService"]


class StackService:
    """Answers the browser's requests about one stack; one instance per opened version.

    It is opened as its :class:`Session` is (the same arguments, :class:`Opening`), or
    over an opened one.

    Each request of :data:`REQUESTS` is a method of the same name taking the request's
    parameters (``service.canvas(2, "fig")``), called as given: the dispatcher's coercion
    and its reading of other branches apply to :func:`~sds_jupyter.service.dispatch` only.
    """

    def __init__(
        self,
        path_or_stack: str | os.PathLike[str] | Stack | Session,
        folders: Folders = None,
        **options: Unpack[Opening],
    ) -> None:
        if isinstance(path_or_stack, Session):
            self.session = path_or_stack
        else:
            self.session = Session(path_or_stack, folders, **options)

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
