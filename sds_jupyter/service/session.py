"""One opened version and what every request about it shares: the stack, its readers, its caches.

Why a class of its own: the feature modules (:mod:`sds_jupyter.service.features`) answer
requests as functions of a :class:`Session`, so none of them holds state or imports
another; the caches they share (tables, AnnData, pyramids, other branches' sessions)
live here, once per opened version. What the stack library remembers of the disk
(parsed manifests, zip indexes, folder scans, resolved stacks) is a
:class:`~sds_jupyter.stack.caches.StackCaches` the session is given (the process's
when none is) and passes to every call that reads: two sessions given different
caches share nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, Unpack, runtime_checkable

import zarr

from sds_jupyter.errors import MissingDatasetError, NoStudioDataError, StackError
from sds_jupyter.limits import (
    MAX_CACHED_ADATAS,
    MAX_CACHED_BRANCHES,
    MAX_CACHED_IMAGES,
    MAX_CACHED_TABLES,
    BoundedCache,
)
from sds_jupyter.protocol.types import BaseSummary
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.tree import sibling_folder
from sds_jupyter.stack import (
    FolderMap,
    Location,
    PartialChain,
    Stack,
    StackCaches,
    StackStore,
    Version,
    default_caches,
    listed_beside,
    open_anndata,
    open_table_group,
)
from sds_jupyter.studio.elements import Pyramid
from sds_jupyter.studio.figurespecs import ParsedFigure, read_figure, read_figures
from sds_jupyter.studio.palette import obs_palettes, saved_category_colors
from sds_jupyter.studio.tableview import TableView
from sds_jupyter.studio.uns import STUDIO_KEY, studio_section

__all__ = ["Folders", "Opened", "Opening", "Session", "partial_depth", "session_of"]

Folders = str | Mapping[str, str] | None


class Opening(TypedDict, total=False):
    """How a version is opened: the one statement of the options a :class:`Session` (and the
    :class:`~sds_jupyter.service.StackService` over it) takes, each optional."""

    #: The table read unless a figure names another ("table").
    table: str
    #: The folder paths are named relative to in replies (a server's root), or None.
    relative_to: str | os.PathLike[str] | None
    #: fsspec options for a stack in object storage.
    storage_options: Mapping[str, Any] | None
    #: Where the stack library keeps what it read for this session; the process's own when None.
    #: The sessions opened for other versions (:meth:`Session.sibling`, other branches) share it.
    caches: StackCaches | None


class Session:
    """The stack of one opened version, its readers and caches; what each feature function takes.

    ``path_or_stack`` is anything :meth:`Stack.resolve` takes (a local path, or an
    object-storage URL with ``storage_options``), or a Stack; ``folders`` is its folder map and
    the rest is :class:`Opening`. A stack that cannot be resolved (a missing parent, say) does
    not raise here: ``history`` reports it in place and every other request raises it.
    """

    def __init__(
        self, path_or_stack: str | os.PathLike[str] | Stack, folders: Folders = None, **options: Unpack[Opening]
    ) -> None:
        #: What the stack library remembers of the disk for this session: passed to every read.
        self.caches = default_caches(options.get("caches"))
        self.table_name = options.get("table", "table")
        relative_to = options.get("relative_to")
        self.relative_to = Path(relative_to) if relative_to is not None else None
        #: The resolved stack, or None when it could not be resolved (then ``error`` says why).
        self.resolved: Stack | None = None
        self._error: StackError | None = None
        #: The versions that resolved above a missing parent, or None.
        self.partial: PartialChain | None = None
        self.tables: BoundedCache[tuple[int, str], TableView] = BoundedCache(MAX_CACHED_TABLES)
        self.adatas: BoundedCache[int, Any] = BoundedCache(MAX_CACHED_ADATAS)
        #: Sessions of versions on other branches (compare): the least recently used is dropped.
        self.branches: BoundedCache[str, Session] = BoundedCache(MAX_CACHED_BRANCHES)
        #: The tree's dataset ID -> folder, with the listing fingerprint it was read under.
        self.branch_folders: tuple[str, dict[str, str]] | None = None
        #: A figure's image, opened once per version: (depth, figure) -> its pyramid and value ranges.
        self.images: BoundedCache[tuple[int, str], tuple[Pyramid, list[tuple[float, float]]]] = BoundedCache(
            MAX_CACHED_IMAGES
        )
        #: The folder asked for (None for a stack given whole): what a fetch completes.
        self.path: str | os.PathLike[str] | None = None if isinstance(path_or_stack, Stack) else path_or_stack
        self.folders = folders
        if isinstance(path_or_stack, Stack):
            self.resolved = path_or_stack
        else:
            try:
                self.resolved = Stack.resolve(
                    path_or_stack, folders=folders, storage_options=options.get("storage_options"), caches=self.caches
                )
            except StackError as exc:
                self._error = exc
                self.partial = getattr(exc, "partial", None)

    @property
    def error(self) -> StackError | None:
        """Why the stack could not be resolved (a missing parent, say), or None."""
        return self._error

    @property
    def stack(self) -> Stack:
        """The resolved stack; raises the resolution error when there is none."""
        if self.resolved is None:
            assert self._error is not None
            if self.partial is not None:
                missing = self.partial.missing_id
                raise MissingDatasetError(
                    f"the data cannot be read: dataset {missing}, below the versions shown, is missing; "
                    "add it to the workspace to read the data (or point SDS_CIRRO_DATASETS at its folder)",
                    missing,
                )
            # the same error object is raised on every request: drop the last traceback
            raise self._error.with_traceback(None)
        return self.resolved

    def fetch_missing(self, project: str | None = None) -> list[str]:
        """Download from Cirro the datasets this stack misses; their IDs (the caller then opens it again).

        What the panel's "missing" row offers; see :func:`~sds_jupyter.stack.exchange.fetch_missing`.
        """
        from sds_jupyter.stack import fetch_missing

        if self.path is None:
            raise StackError("this stack was given whole: fetch by its folder")
        return [folder.name for folder in fetch_missing(self.path, project=project, folders=self.folders)]

    def depth(self, version: int | str | None) -> int:
        """The depth ``version`` names (None: the top)."""
        return self.stack.depth if version is None else self.stack.depth_of(version)

    def table_view(self, version: int | str | None = None, table: str | None = None) -> TableView:
        """The cached element reader of a table (default: this session's) at ``version``."""
        key = (self.depth(version), table or self.table_name)
        if not key[1] or "/" in key[1] or key[1] in (".", ".."):
            raise RequestError(f"{key[1]!r} is not a table name.")

        with self.tables.claim(key) as turn:
            if turn.missing:
                store = StackStore(self.stack.at(key[0]), caches=self.caches)
                group = open_table_group(store, key[1])
                turn.fill(TableView(zarr.open_group(store, mode="r"), group, key[1], self.caches))
        return turn.value

    def adata(self, version: int | str | None = None) -> Any:
        """The whole AnnData of the table at ``version`` (read once, for notebooks)."""
        depth = self.depth(version)
        return self.adatas.get(
            depth, lambda: open_anndata(self.stack.at(depth), table=self.table_name, caches=self.caches)
        )

    def studio_uns(self, version: int | str | None, results: Iterable[str] | Literal["all"] = ()) -> dict[str, Any]:
        """The table's studio figures and the named results, refusing a table the app never saved into."""
        uns = self.table_view(version).studio_uns(results)
        if studio_section(uns) is None:
            raise NoStudioDataError(
                "This version keeps no saved figures or results "
                f"(table {self.table_name!r} has no {STUDIO_KEY!r} section in uns)."
            )
        return uns

    def canvas_spec(self, version: int | str | None, figure: str) -> dict[str, Any]:
        """The saved spec of canvas figure ``figure`` at ``version`` (refused when it is no canvas)."""
        return read_figure(self.studio_uns(version), figure).require("canvas")

    def category_colors(
        self, version: int | str | None, spec: Mapping[str, Any], columns: Iterable[str]
    ) -> dict[str, dict[str, str]]:
        """The category colours canvas figure ``spec`` sets for each of ``columns``: the one rule its view and export follow.

        A category's colour is the one this figure saved when it colours by the column, else the
        one another canvas figure of the version saved (the first wins), else the column's uns
        colours or the fixed palette (:func:`~sds_jupyter.studio.palette.column_palette`). Why one
        rule: the view, its ``color_values`` and the figure's export all ask here, so a category
        has one colour on screen and on paper.
        """
        figures = read_figures(self.studio_uns(version))
        saved = saved_category_colors(f.spec for f in figures if f.kind == "canvas")
        own = spec.get("category_colors") or {}
        return {
            column: {**saved.get(column, {}), **(own if spec.get("color_by") == column else {})} for column in columns
        }

    def palettes(self, version: int | str | None, figures: Iterable[ParsedFigure]) -> dict[str, dict[str, str]]:
        """Each categorical obs column's colors at ``version`` (see :mod:`sds_jupyter.studio.palette`)."""
        view = self.table_view(version)
        saved = saved_category_colors(f.spec for f in figures if f.kind == "canvas")
        categories = {column: view.obs_categories(column) for column in view.obs_columns}
        return obs_palettes(categories, view.uns_without_studio, saved)

    def lazy_palettes(
        self, version: int | str | None, figures: Iterable[ParsedFigure]
    ) -> Callable[[], dict[str, dict[str, str]]]:
        """:meth:`palettes`, computed on the first call only (they read obs: only when a chart needs them)."""
        kept: list[dict[str, dict[str, str]]] = []

        def get() -> dict[str, dict[str, str]]:
            if not kept:
                kept.append(self.palettes(version, list(figures)))
            return kept[0]

        return get

    def folder_text(self, folder: Location | Path) -> str:
        """A folder as the browser is shown it: relative to the server root when there is one."""
        if self.relative_to is not None and isinstance(folder, Path):
            try:
                return Path(os.path.relpath(folder, self.relative_to)).as_posix()
            except ValueError:
                pass
        return str(folder)

    def base_summary(self) -> BaseSummary:
        """The base store at the bottom of the stack, as ``history`` and ``tree`` show it."""
        base = self.stack.base
        summary: BaseSummary = {
            "depth": 0,
            "dataset_id": base.dataset_id,
            "path": self.folder_text(base.path),
            "kind": base.kind,
            "zarr_format": base.zarr_format,
        }
        name = self.stack.folders.name_of(base.dataset_id)
        if name:
            summary["name"] = name
        return summary

    def chain(self) -> tuple[tuple[Version, ...], Path | None, FolderMap]:
        """The opened chain's versions, the datasets folder its versions are listed in (None in
        object storage, where nothing is listed) and its folder map (a broken chain's too)."""
        if self.resolved is not None:
            return self.resolved.versions, self.resolved.listing_dir, self.resolved.folders
        if self.partial is not None:
            return self.partial.versions, self.partial.listing_dir, self.partial.folders
        return self.stack.versions, self.stack.listing_dir, self.stack.folders  # raises

    def sibling(self, folder: str | os.PathLike[str]) -> Session:
        """A session for another version of this datasets folder (a node of the tree)."""
        _, local, folders = self.chain()
        if local is None:
            raise StackError("moving to another version is not done in object storage; open it by its URL")
        path = sibling_folder(local, folder, self.relative_to, listed_beside(local), self.caches)
        return Session(
            path, dict(folders) or None, table=self.table_name, relative_to=self.relative_to, caches=self.caches
        )


@runtime_checkable
class Opened(Protocol):
    """Anything holding an opened session (a :class:`~sds_jupyter.service.StackService`)."""

    @property
    def session(self) -> Session:
        """The session it answers from."""
        ...


def session_of(opened: Session | Opened) -> Session:
    """The session of a StackService, or the session itself."""
    return opened if isinstance(opened, Session) else opened.session


def partial_depth(partial: PartialChain, version: int | str) -> int:
    """The depth ``version`` names above a missing parent (a depth, a dataset ID or a title)."""
    if isinstance(version, int) or (str(version).isascii() and str(version).isdigit()):
        return int(version)
    found: int | None = next(
        (int(v.depth) for v in partial.versions if version in (v.dataset_id, v.manifest.title)), None
    )
    if found is None:
        raise RequestError(f"no version {version!r} above the missing dataset {partial.missing_id}")
    return found
