"""Everything the version browser asks of a stack, answered from Python.

One method per request of docs/service-protocol.md. Methods return JSON-able
payloads (typed in :mod:`sds_jupyter.service.types`); ``canvas`` also returns
binary buffers. Problems with what a version holds (a figure that is not JSON,
a result without meta, a table the app never saved) come back *inside* the
payload so the rest still shows; problems with the request itself raise
StackError subclasses, which transports map with :func:`error_payload`.
Nothing here writes: browsing never changes a version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from sds_jupyter.errors import MissingDatasetError, StackError
from sds_jupyter.limits import (
    MAX_CACHED_ADATAS,
    MAX_CACHED_BRANCHES,
    MAX_CACHED_IMAGES,
    MAX_CACHED_TABLES,
    BoundedCache,
)
from sds_jupyter.service.annotate import annotated_column, annotation_message, checked_regions, region_codes
from sds_jupyter.service.compare import NEW_CELL, RENAMED, UNCHANGED, compare_tables, transition_labels
from sds_jupyter.service.contents import read_contents
from sds_jupyter.service.embedding import cached_embedding, embedding_keys, embedding_positions
from sds_jupyter.service.errors import RequestError, error_payload
from sds_jupyter.service.genes import dot_plot, gene_names, gene_position, typed_genes
from sds_jupyter.service.opdetails import op_details
from sds_jupyter.service.pieces import cached_geometry, cached_outline_tile, cached_outlines, cached_overview
from sds_jupyter.service.tables import TableView
from sds_jupyter.service.tree import build_tree, chain_end, sibling_folder
from sds_jupyter.service.types import (
    AnnotateData,
    BaseSummary,
    CellOutlinesData,
    CellRow,
    CellsData,
    ChangesData,
    ChannelsData,
    Column,
    Comparison,
    ContentsData,
    DotPlot,
    EmbeddingData,
    FiguresData,
    FigureSummary,
    Fingerprint,
    GeneNames,
    HistoryData,
    ImageLevel,
    ImageRegionData,
    ImageTileData,
    KeySize,
    ResultCsv,
    ResultMeta,
    ResultPage,
    ResultsData,
    ResultSummary,
    ResultTableSummary,
    StoreKeyData,
    TreeData,
    TreeNode,
    VersionSummary,
    Whiteout,
)
from sds_jupyter.stack import Stack, StackStore, Version
from sds_jupyter.stack.location import Location
from sds_jupyter.stack.open import open_anndata, open_table_group
from sds_jupyter.stack.refs import FolderMap
from sds_jupyter.stack.tree import PartialChain, listing_fingerprint
from sds_jupyter.stack.workspace import listed_beside
from sds_jupyter.studio.bounds import check_region
from sds_jupyter.studio.canvas import (
    MAX_IMAGE_SIDE,
    MISSING_COLOR,
    build_canvas,
    canvas_payload,
    cell_colors,
    planes_over,
    region_attrs,
)
from sds_jupyter.studio.cells import CellTable, FrameCells
from sds_jupyter.studio.charts import chart_for_figure, default_chart, with_index_column
from sds_jupyter.studio.elements import Pyramid, open_pyramid, region_level
from sds_jupyter.studio.errors import NoStudioDataError, ResultError
from sds_jupyter.studio.figures import ParsedFigure, declared_fields, parse_figure, read_figure, read_figures
from sds_jupyter.studio.jsonable import json_scalar, jsonable
from sds_jupyter.studio.palette import obs_palettes, recolor_chart, saved_category_colors
from sds_jupyter.studio.results import (
    MAIN_TABLE,
    ResultEntry,
    ResultTable,
    read_result,
    read_results,
)
from sds_jupyter.studio.uns import STUDIO_KEY, studio_section

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "Reply", "StackService"]

DEFAULT_PAGE_SIZE = 100
#: Cells a recoloring leaves out (unchanged, not highlighted).
GREY = "#c8c8c8"
#: Cells of a clustering renamed with their group: a darker grey than unchanged ones, still quiet.
RENAMED_GREY = "#8c8c8c"
MAX_PAGE_SIZE = 1000
Folders = str | Mapping[str, str] | None


#: The runtime type each named field of a result's meta must have (the rest pass as stored).
_META_TYPES = {name: typing.get_origin(hint) or hint for name, hint in typing.get_type_hints(ResultMeta).items()}


def _result_meta(meta: Mapping[str, Any]) -> ResultMeta:
    """A result's stored meta as JSON, less a named field of another type than ResultMeta says.

    Meta is written by whatever app saved the result: a ``title`` that is a number or a
    ``parameters`` that is a list would reach the browser typed as something it is not.
    """
    plain = jsonable(meta)
    return typing.cast(
        ResultMeta,
        {key: value for key, value in plain.items() if key not in _META_TYPES or isinstance(value, _META_TYPES[key])},
    )


@dataclass
class Reply:
    """A payload and its binary buffers (numpy-backed bytes, in protocol order).

    ``etag``: a name for the reply's content that changes whenever the content does (a
    content address); REST answers it as a strong ETag, and a repeat with it as 304.
    """

    data: Any
    buffers: list[memoryview] = field(default_factory=list)
    etag: str | None = None
    #: The request named its content (a key checked against it), so the answer may be kept for good.
    addressed: bool = False

    def named_by_content(self) -> Reply:
        """This reply with a digest of its payload and buffers as its ETag.

        Why: a reply whose inputs have no cheap name (a figure's colour column, its palette
        and settings) still never changes for an immutable version, so a revisit that
        revalidates gets a 304 instead of the bytes again.
        """
        digest = hashlib.blake2b(json.dumps(self.data, sort_keys=True, allow_nan=False).encode(), digest_size=16)
        for buffer in self.buffers:
            digest.update(buffer.nbytes.to_bytes(8, "little"))
            digest.update(buffer)
        return Reply(self.data, self.buffers, digest.hexdigest())


#: A plain zarr key: segments of letters, digits, ".", "_" and "-", joined by "/".
_STORE_KEY = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")
#: The largest object ``store_key`` sends (a chunk or a metadata document, not a whole file).
MAX_STORE_OBJECT = 256 * 1024 * 1024


def checked_store_key(key: str) -> str:
    """``key`` when it is a plain relative zarr key (no "." or ".." segment, at most 1,024 characters)."""
    if not isinstance(key, str) or not key:
        raise RequestError("The store_key request needs a key, e.g. 'images/morphology_focus/zarr.json'.")
    if len(key) > 1024 or not _STORE_KEY.fullmatch(key) or any(part in (".", "..") for part in key.split("/")):
        shown = key if len(key) <= 60 else key[:57] + "..."
        raise RequestError(
            f"{shown!r} is not a store key: use '/'-separated names of letters, digits, '.', '_' and '-'."
        )
    return key


def as_buffer(array: np.ndarray) -> memoryview:
    """A numpy array's bytes without a copy (little-endian, as the browser reads them)."""
    contiguous = np.ascontiguousarray(array)
    if contiguous.dtype.byteorder == ">":
        contiguous = contiguous.astype(contiguous.dtype.newbyteorder("<"))
    return contiguous.data.cast("B")


def cell_row(cells: CellTable, index: int) -> CellRow:
    """Cell ``index``'s name and obs row, read at that position alone (no whole obs, no index of names)."""
    count = cells.n_obs
    if not 0 <= index < count:
        raise RequestError(f"Cell {index} does not exist; the table has {count} cells (0 to {count - 1}).")
    return {
        "index": index,
        "name": cells.obs_name(index),
        "columns": cells.obs_columns,
        "values": [json_scalar(value) for value in cells.obs_row(index).iloc[0].tolist()],
    }


def _floats(text: str, name: str, count: int) -> list[float]:
    """``count`` finite numbers from comma-separated ``text``; a one-line refusal otherwise."""
    parts = text.split(",")
    try:
        values = [float(p) for p in parts if len(p.strip()) <= 32]
    except ValueError:
        values = []
    if len(values) != count or len(parts) != count or not all(np.isfinite(values)):
        raise RequestError(f"Parameter {name!r} must be {count} finite numbers separated by commas, not {text[:80]!r}.")
    return values


class StackService:
    """Answers the browser's requests about one stack; one instance per opened version.

    ``path_or_stack`` is anything :meth:`Stack.resolve` takes (a local path, or an
    object-storage URL with ``storage_options``), or a Stack. A stack
    that cannot be resolved (a missing parent, say) does not raise here: ``history``
    reports it in place and every other request raises it.
    """

    def __init__(
        self,
        path_or_stack: str | os.PathLike[str] | Stack,
        folders: Folders = None,
        *,
        table: str = "table",
        relative_to: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.table_name = table
        self._relative_to = Path(relative_to) if relative_to is not None else None
        self._stack: Stack | None = None
        self._stack_error: StackError | None = None
        self._partial: PartialChain | None = None
        self._tables: BoundedCache[tuple[int, str], TableView] = BoundedCache(MAX_CACHED_TABLES)
        self._adatas: BoundedCache[int, Any] = BoundedCache(MAX_CACHED_ADATAS)
        #: Services of versions on other branches (compare): the least recently used is dropped.
        self._branches: BoundedCache[str, StackService] = BoundedCache(MAX_CACHED_BRANCHES)
        #: The tree's dataset ID -> folder, with the listing fingerprint it was read under.
        self._branch_folders: tuple[str, dict[str, str]] | None = None
        #: A figure's image, opened once per version: (depth, figure) -> its pyramid and value ranges.
        self._images: BoundedCache[tuple[int, str], tuple[Pyramid, list[tuple[float, float]]]] = BoundedCache(
            MAX_CACHED_IMAGES
        )
        #: The folder asked for (None for a stack given whole): what a fetch completes.
        self._path: str | os.PathLike[str] | None = None if isinstance(path_or_stack, Stack) else path_or_stack
        self._folders = folders
        if isinstance(path_or_stack, Stack):
            self._stack = path_or_stack
        else:
            try:
                self._stack = Stack.resolve(path_or_stack, folders=folders, storage_options=storage_options)
            except StackError as exc:
                self._stack_error = exc
                self._partial = getattr(exc, "partial", None)

    # ------------------------------------------------------------------ plumbing

    @property
    def error(self) -> StackError | None:
        """Why the stack could not be resolved (a missing parent, say), or None."""
        return self._stack_error

    @property
    def stack(self) -> Stack:
        """The resolved stack; raises the resolution error when there is none."""
        if self._stack is None:
            assert self._stack_error is not None
            if self._partial is not None:
                missing = self._partial.missing_id
                raise MissingDatasetError(
                    f"the data cannot be read: dataset {missing}, below the versions shown, is missing; "
                    "add it to the workspace to read the data (or point SDS_CIRRO_DATASETS at its folder)",
                    missing,
                )
            # the same error object is raised on every request: drop the last traceback
            raise self._stack_error.with_traceback(None)
        return self._stack

    @property
    def partial(self) -> PartialChain | None:
        """The versions that resolved above a missing parent, or None."""
        return self._partial

    def fetch_missing(self) -> list[str]:
        """Download from Cirro the datasets this stack misses; their IDs (the caller then opens it again).

        What the panel's "missing" row offers; see :func:`~sds_jupyter.stack.exchange.fetch_missing`.
        """
        from sds_jupyter.stack.exchange import fetch_missing

        if self._path is None:
            raise StackError("this stack was given whole: fetch by its folder")
        return [folder.name for folder in fetch_missing(self._path, folders=self._folders)]

    def depth(self, version: int | str | None) -> int:
        """The depth ``version`` names (None: the top)."""
        return self.stack.depth if version is None else self.stack.depth_of(version)

    def table_view(self, version: int | str | None = None, table: str | None = None) -> TableView:
        """The cached element reader of a table (default: this service's) at ``version``."""
        key = (self.depth(version), table or self.table_name)
        if not key[1] or "/" in key[1] or key[1] in (".", ".."):
            raise RequestError(f"{key[1]!r} is not a table name.")

        def opened() -> TableView:
            store = StackStore(self.stack.at(key[0]))
            group = open_table_group(store, key[1])
            return TableView(zarr.open_group(store, mode="r"), group, key[1])

        return self._tables.get(key, opened)

    def adata(self, version: int | str | None = None) -> Any:
        """The whole AnnData of the table at ``version`` (read once, for notebooks)."""
        depth = self.depth(version)
        return self._adatas.get(depth, lambda: open_anndata(self.stack.at(depth), table=self.table_name))

    def result_table(self, result: str, table: str = MAIN_TABLE, version: int | str | None = None) -> ResultTable:
        """One table of a saved result as a DataFrame with the result's meta as ``.meta`` (for notebooks)."""
        entry = read_result(self._studio_uns(version, [result]), result)
        return ResultTable.of(entry.table(table), entry.meta)

    def _studio_uns(self, version: int | str | None, results: Iterable[str] | Literal["all"] = ()) -> dict[str, Any]:
        """The table's studio figures and the named results, refusing a table the app never saved into."""
        uns = self.table_view(version).studio_uns(results)
        if studio_section(uns) is None:
            raise NoStudioDataError(
                "This version keeps no saved figures or results "
                f"(table {self.table_name!r} has no {STUDIO_KEY!r} section in uns)."
            )
        return uns

    def _folder_text(self, folder: Location | Path) -> str:
        if self._relative_to is not None and isinstance(folder, Path):
            try:
                return Path(os.path.relpath(folder, self._relative_to)).as_posix()
            except ValueError:
                pass
        return str(folder)

    # ------------------------------------------------------------------ history

    def _version_summary(self, version: Any) -> VersionSummary:
        manifest = version.manifest
        return {
            "depth": version.depth,
            "dataset_id": version.dataset_id,
            "title": manifest.title,
            "message": manifest.message,
            "created_at": manifest.created_at,
            "created_by": manifest.created_by,
            "app": jsonable(manifest.app) if manifest.app is not None else None,
            "changes": [jsonable(change) for change in manifest.changes],
            "n_files": len(manifest.files),
            "n_deleted": len(manifest.deleted),
            "folder": self._folder_text(version.folder),
        }

    def _base_summary(self) -> BaseSummary:
        base = self.stack.base
        return {
            "depth": 0,
            "dataset_id": base.dataset_id,
            "path": self._folder_text(base.path),
            "kind": base.kind,
            "zarr_format": base.zarr_format,
        }

    def history(self) -> HistoryData:
        """The versions top first and the base, or the reason the stack cannot be followed."""
        if self._stack is None:
            assert self._stack_error is not None  # set whenever no stack resolved
            versions = self._partial.versions if self._partial is not None else ()
            return {
                "top_depth": versions[0].depth if versions else 0,
                "versions": [self._version_summary(version) for version in versions],
                "base": None,
                "error": error_payload(self._stack_error),
            }
        return {
            "top_depth": self.stack.depth,
            "versions": [self._version_summary(version) for version in self.stack.versions],
            "base": self._base_summary(),
        }

    # ------------------------------------------------------------------ changes

    def changes(self, version: int | str | None = None) -> ChangesData:
        """What one version wrote: its ops, the keys it added or replaced, its whiteouts."""
        if self._stack is None and self._partial is not None:
            return _partial_changes(self._partial, version)
        depth = self.depth(version)
        if depth == 0:
            return {"ops": [], "details": [], "added": [], "replaced": [], "deleted": []}
        entry = self.stack.versions[self.stack.depth - depth]
        below = StackStore(self.stack.at(depth - 1))
        added: list[KeySize] = []
        replaced: list[KeySize] = []
        for file in entry.manifest.files:
            (replaced if below.exists_raw(file.key) else added).append({"key": file.key, "size": file.size})
        deleted: list[Whiteout] = [{"entry": item, "node": item.endswith("/")} for item in entry.manifest.deleted]
        ops = [jsonable(change) for change in entry.manifest.changes]
        return {
            "ops": ops,
            "details": op_details(
                ops, lambda table: self.table_view(depth, table), lambda table: self.table_view(depth - 1, table)
            ),
            "added": added,
            "replaced": replaced,
            "deleted": deleted,
        }

    # ------------------------------------------------------------------ tree

    def _chain(self) -> tuple[tuple[Version, ...], Location, FolderMap]:
        """The opened chain's versions, datasets folder and folder map (a broken chain's too)."""
        if self._stack is not None:
            return self._stack.versions, self._stack.datasets_dir, self._stack.folders
        if self._partial is not None:
            return self._partial.versions, self._partial.datasets_dir, self._partial.folders
        return self.stack.versions, self.stack.datasets_dir, self.stack.folders  # raises

    def tree(self) -> TreeData:
        """Every version in the datasets folder whose chain ends where this one's does.

        In object storage nothing is listed: the tree is the opened chain.
        """
        versions, datasets_dir, folders = self._chain()
        current = versions[0].dataset_id if versions else None
        if self._stack is not None:
            end = chain_end(self._stack.base.reference)
            base = self._base_summary() if self._stack.base.reference is not None else None
        else:
            assert self._partial is not None
            end, base = chain_end(None, self._partial.missing_id), None
        local = datasets_dir.as_local()
        if local is None or not versions:  # object storage: nothing is listed
            nodes = [self._tree_node(v, versions) for v in versions]
            note = ["object storage is not listed: only the opened chain is shown"] if versions else []
            return {"current": current, "nodes": nodes, "base": base, "notes": note}
        return build_tree(local, folders, current or "", end, base, self._folder_text, listed_beside(local))

    def _tree_node(self, version: Any, versions: tuple[Any, ...]) -> TreeNode:
        below = [v for v in versions if v.depth == version.depth - 1]
        return {
            "dataset_id": version.dataset_id,
            "parent": below[0].dataset_id if below else None,
            "depth": version.depth,
            "title": version.manifest.title,
            "folder": self._folder_text(version.folder),
            "created_at": version.manifest.created_at,
            "created_by": version.manifest.created_by,
            "changes": [jsonable(change) for change in version.manifest.changes],
        }

    def sibling(self, folder: str | os.PathLike[str]) -> StackService:
        """A service for another version of this datasets folder (a node of the tree)."""
        _, datasets_dir, folders = self._chain()
        local = datasets_dir.as_local()
        if local is None:
            raise StackError("moving to another version is not done in object storage; open it by its URL")
        path = sibling_folder(local, folder, self._relative_to, listed_beside(local))
        return StackService(path, dict(folders) or None, table=self.table_name, relative_to=self._relative_to)

    def fingerprint(self) -> Fingerprint:
        """A hash of the datasets folder's version folders and their manifests' mtimes.

        The browser asks for it every few seconds and reloads the tree when it changes.
        """
        _, datasets_dir, folders = self._chain()
        local = datasets_dir.as_local()
        if local is None:  # object storage is not listed
            return {"fingerprint": ""}
        listed = [local, *listed_beside(local)]
        return {"fingerprint": "+".join(listing_fingerprint(folder, folders) for folder in listed)}

    # ------------------------------------------------------------------ figures

    def _palettes(self, version: int | str | None, figures: Iterable[ParsedFigure]) -> dict[str, dict[str, str]]:
        """Each categorical obs column's colors at ``version`` (see :mod:`sds_jupyter.studio.palette`)."""
        view = self.table_view(version)
        saved = saved_category_colors(f.spec for f in figures if f.kind == "canvas")
        categories = {column: view.obs_categories(column) for column in view.obs_columns}
        return obs_palettes(categories, view.uns_without_studio, saved)

    def _figure_summary(
        self, figure: ParsedFigure, uns: Mapping[str, Any], palettes: Callable[[], Mapping[str, Mapping[str, str]]]
    ) -> FigureSummary:
        summary: FigureSummary = {
            "id": figure.id,
            "title": figure.title,
            "caption": figure.caption,
            "print_width": figure.print_width,
            "kind": figure.kind,
            # a drawable spec as far as this reader declares it; an unreadable one is shown as text
            "spec": jsonable(declared_fields(figure.spec) if figure.kind != "unsupported" else figure.spec),
        }
        if figure.kind == "chart":
            try:
                result = read_result(uns, str(figure.spec["result"]))
                summary["vega_lite"] = recolor_chart(
                    chart_for_figure(figure.spec, result, titled=False), palettes(), result.meta
                )
            except StackError as exc:
                summary["kind"] = "unsupported"
                summary["reason"] = str(exc)
        elif figure.kind == "canvas":
            summary["canvas"] = {
                "table": str(figure.spec.get("table") or self.table_name),
                "color_by": figure.spec.get("color_by"),
                "image": figure.spec.get("image"),
            }
        else:
            summary["reason"] = figure.reason or "cannot be drawn"
        return summary

    def figures(self, version: int | str | None = None) -> FiguresData:
        """Every saved figure, drawable or with the reason it is not."""
        try:
            figures = read_figures(self._studio_uns(version))
            charted = [str(f.spec.get("result")) for f in figures if f.kind == "chart"]
            uns = self._studio_uns(version, charted)
        except StackError as exc:
            return {"figures": _figures_named_above_missing(self._partial, version), "error": error_payload(exc)}
        palettes = _once(lambda: self._palettes(version, figures))
        return {"figures": [self._figure_summary(figure, uns, palettes) for figure in figures]}

    def canvas(self, version: int | str | None = None, figure: str = "") -> Reply:
        """A canvas figure's payload and its color column (value?), the one buffer a figure owns.

        Why only that: the cells' positions and shapes are the element's (``cells``, named by
        ``cells_key``) and the image's pixels come through ``channels`` and ``image_tile``
        (``image_key``), so each is sent once and kept by the browser, whatever figure asks.
        """
        if not figure:
            raise RequestError("The canvas request needs a figure id.")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        view = self.table_view(version, spec.get("table"))
        key, geometry = cached_geometry(view, spec)
        color, values = cell_colors(view, spec)
        image, unit, shown = None, None, None
        if spec.get("image"):
            shown, overview = cached_overview(view, spec)
            image, unit = overview.canvas_image(), overview.unit
        payload = canvas_payload(spec, view, geometry.box, color, image, unit, geometry.shapes)
        payload["cells_key"] = key
        if shown is not None:
            payload["image_key"] = shown
        buffers = [as_buffer(np.ascontiguousarray(values))] if values is not None else []
        return Reply(payload, buffers).named_by_content()

    def cells(self, version: int | str | None = None, figure: str = "", key: str = "") -> Reply:
        """The positions and shapes of a canvas figure's cells: x, y, then polygons or radii.

        A tissue past OUTLINES_AT_ONCE cells gets radii (circles of each polygon's area) and the
        grid its outlines come by (``cell_outlines``): its fit view cannot show them anyway.

        ``key`` (the canvas reply's ``cells_key``) makes the request content-addressed: it is
        refused when the figure's cells are no longer the ones it names, so an answer under a
        key never changes and may be kept forever. Equal keys in two versions, equal cells.
        """
        if not figure:
            raise RequestError("The cells request needs a figure id.")
        if len(key) > 64:
            raise RequestError("Parameter 'key' is too long (a cells key has 32 characters).")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        view = self.table_view(version, spec.get("table"))
        current, geometry = cached_geometry(view, spec)
        if key and key != current:
            raise RequestError(f"The cells of figure {figure!r} are not the ones key {key!r} names; ask canvas again.")
        payload: CellsData = {
            "key": current,
            "n_cells": int(view.n_obs),
            "bounds": geometry.box,
            "shapes": geometry.shapes[0] if geometry.shapes is not None else None,
        }
        return Reply(payload, [as_buffer(buffer) for buffer in geometry.buffers], etag=current)

    def cell_outlines(
        self, version: int | str | None = None, figure: str = "", key: str = "", column: int = 0, row: int = 0
    ) -> Reply:
        """The outlines of the cells that meet one tile of a large tissue's grid (``shapes.outlines``).

        Why by tile: the fit view draws circles; only a zoomed-in view, which sees a few tiles,
        needs outlines. ``key`` is the ``cells`` reply's: the answer is named by it and the tile,
        so it never changes and the browser keeps it.
        """
        if not figure or not key:
            raise RequestError("The cell_outlines request needs a figure id and its cells key.")
        if len(key) > 64:
            raise RequestError("Parameter 'key' is too long (a cells key has 32 characters).")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        current, outlines = cached_outlines(self.table_view(version, spec.get("table")), spec)
        if key != current:
            raise RequestError(f"The cells of figure {figure!r} are not the ones key {key!r} names; ask canvas again.")
        if outlines is None:
            raise RequestError(f"Figure {figure!r} sends its outlines with its cells; there are no outline tiles.")
        name, tile = cached_outline_tile(outlines, key, column, row)
        payload: CellOutlinesData = {
            "key": key,
            "column": column,
            "row": row,
            "box": tile.box,
            "n_cells": len(tile.index),
            "n_vertices": len(tile.vertices) // 2,
        }
        return Reply(payload, [as_buffer(buffer) for buffer in tile.buffers], etag=name, addressed=True)

    def embedding(self, version: int | str | None = None, figure: str = "", key: str = "") -> Reply:
        """The embeddings of a canvas figure's table and, for ``key``, its first two columns (x, y).

        Why beside the figure: the view links the embedding to the tissue cell by cell, so the
        coordinates come in the order the ``cells`` buffers have (table order). Without ``key``
        only the list is answered (no buffers), so a view learns whether to offer the panel for
        a few bytes. The answer is named by the stored entry (cached like cells), so it is sent
        once per entry and version.
        """
        if not figure:
            raise RequestError("The embedding request needs a figure id.")
        if len(key) > 256:
            raise RequestError("Parameter 'key' is too long for an obsm entry's name (at most 256 characters).")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        view = self.table_view(version, spec.get("table"))
        payload: EmbeddingData = {
            "keys": embedding_keys(view),
            "key": None,
            "name": None,
            "n_cells": int(view.n_obs),
            "columns": 0,
            "bounds": None,
        }
        if not key:
            return Reply(payload).named_by_content()
        name, found = cached_embedding(view, key)
        payload = {**payload, "key": key, "name": name, "columns": found.columns, "bounds": found.bounds}
        # the buffers are named by the entry's identity: no need to hash their bytes for the ETag
        etag = hashlib.blake2b(json.dumps(payload, sort_keys=True).encode(), digest_size=16).hexdigest()
        return Reply(payload, [as_buffer(found.x), as_buffer(found.y)], etag=etag)

    def cell(self, version: int | str | None = None, figure: str = "", index: int = 0) -> CellRow:
        """One cell's obs row (its ID and every column), for the canvas view's hover and pin.

        ``index`` is the cell's position in the table, as the canvas buffers order cells.
        """
        if not figure:
            raise RequestError("The cell request needs a figure id.")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        return cell_row(self.table_view(version, spec.get("table")), index)

    def color_values(
        self,
        version: int | str | None = None,
        figure: str = "",
        column: str = "",
        gene: str = "",
        layer: str | None = None,
        highlight: str | None = None,
        against: int | str | None = None,
    ) -> Reply:
        """A canvas figure's cells colored another way, in the order of the canvas buffers.

        By an obs ``column``; by a ``gene``'s expression (from X, or ``layer``); the cells
        whose ``column`` is ``highlight`` against grey (a cluster, a group, a niche); or by
        how ``column`` went from version ``against`` to this one (unchanged cells grey).
        Answers the ``color`` part of a CanvasPayload and one buffer (uint8 or uint16 category codes
        or float32 values).
        """
        if not figure:
            raise RequestError("The color_values request needs a figure id.")
        if bool(column) == bool(gene):
            raise RequestError("Give either an obs column or a gene to color by.")
        if gene and (highlight is not None or against is not None):
            raise RequestError("highlight and against go with an obs column, not a gene.")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        view = self.table_view(version, spec.get("table"))
        cells: CellTable = view
        saved = saved_category_colors(f.spec for f in read_figures(self._studio_uns(version)) if f.kind == "canvas")
        colors = {
            **saved.get(column, {}),
            **(spec.get("category_colors") or {} if spec.get("color_by") == column else {}),
        }
        if gene:
            gene, values = self._gene_values(view, gene, layer)
            cells = FrameCells(pd.DataFrame({gene: values}))
            column = gene
        elif column not in view.obs_columns:
            raise RequestError(f"No obs column {column!r} in this version's table.")
        elif against is not None:
            service, depth = self._version_at(against)
            before = service.table_view(depth, view.name)
            if column not in before.obs_columns:
                raise RequestError(f"Version {against!r} has no obs column {column!r} to compare with.")
            labels = transition_labels(
                column, before.obs_named_column(column), view.obs_named_column(column), moved_only=True
            )
            column = f"{column} (change)"
            cells = FrameCells(pd.DataFrame({column: labels}))
            colors = {UNCHANGED: GREY, RENAMED: RENAMED_GREY, NEW_CELL: MISSING_COLOR}
        elif highlight is not None:
            values = view.obs_column(column)
            chosen = (values.astype(str) == highlight).to_numpy() & values.notna().to_numpy()
            if not chosen.any():
                raise RequestError(f"No cell has {column} = {highlight!r} in this version.")
            color = colors.get(highlight) or "#d62728"
            other = "other cells"
            column = f"{column} = {highlight}"
            categories = pd.Categorical(np.where(chosen, highlight, other), categories=[highlight, other])
            cells = FrameCells(pd.DataFrame({column: categories}))
            colors = {highlight: color, other: GREY}
        color_spec = {
            "color_by": column,
            "category_colors": colors,
            "colormap": spec.get("colormap") if spec.get("color_by") == column else None,
        }
        color, buffer = cell_colors(cells, color_spec)
        return Reply(color, [as_buffer(np.ascontiguousarray(buffer))])

    @staticmethod
    def _gene_values(view: TableView, gene: str, layer: str | None) -> tuple[str, np.ndarray]:
        """What the cells are colored by for ``gene``, and its value for every cell, from X or ``layer``.

        ``gene`` names one gene, or up to ``MAX_SCORE_GENES`` (3) separated by commas
        (colored by their mean, a score). Each is found as a person types it (any case,
        or its symbol); a one-line refusal names the nearest genes, or the layers.
        """
        if layer is not None and layer not in view.layer_names():
            have = ", ".join(view.layer_names()) or "none"
            raise RequestError(f"Table {view.name!r} has no layer {layer!r} (layers: {have}).")
        typed = typed_genes(gene)
        positions = list(dict.fromkeys(gene_position(view, name) for name in typed))
        names = [str(view.var_names[p]) for p in positions]
        if len(positions) == 1:
            return names[0], view.matrix_column(positions[0], layer)
        columns = np.stack([view.matrix_column(p, layer) for p in positions])
        return f"mean of {', '.join(names)}", columns.mean(axis=0, dtype=np.float64).astype(np.float32)

    def dot_plot(
        self,
        version: int | str | None = None,
        figure: str = "",
        gene: str = "",
        groupby: str = "",
        layer: str | None = None,
    ) -> DotPlot:
        """Per group of an obs column, the fraction of cells expressing each gene (up to 3, commas) and its mean."""
        table = read_figure(self._studio_uns(version), figure).require("canvas").get("table") if figure else None
        view = self.table_view(version, table)
        if layer is not None and layer not in view.layer_names():
            raise RequestError(f"Table {view.name!r} has no layer {layer!r}.")
        return dot_plot(view, gene, groupby, layer)

    def genes(self, version: int | str | None = None, figure: str = "") -> GeneNames:
        """The var names (and gene symbols, when var's index holds IDs) of a canvas figure's table, for the gene box.

        Without a figure, of this service's table.
        """
        table = read_figure(self._studio_uns(version), figure).require("canvas").get("table") if figure else None
        return gene_names(self.table_view(version, table))

    def channels(self, version: int | str | None = None, figure: str = "") -> Reply:
        """A canvas figure's image channels, each as uint8 planes the browser blends (toggle, color, contrast).

        ``levels`` describes the image's pyramid, so the browser can ask ``image_tile`` for
        the tiles of the level a zoom needs.
        """
        if not figure:
            raise RequestError("The channels request needs a figure id.")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        if not spec.get("image"):
            raise RequestError(f"Figure {figure!r} shows no image.")
        view = self.table_view(version, spec.get("table"))
        shown, overview = cached_overview(view, spec)
        pyramid, _ = self._figure_image(version, figure)
        levels: list[ImageLevel] = [
            {
                "width": found.width,
                "height": found.height,
                "tile": found.tile,
                "bounds": pyramid.bounds(index, 0, 0, found.width, found.height),
            }
            for index, found in enumerate(pyramid.levels)
        ]
        payload: ChannelsData = {
            "width": overview.width,
            "height": overview.height,
            "bounds": overview.bounds,
            "channels": overview.infos,
            "levels": levels,
        }
        planes = overview.planes
        return Reply(payload, [as_buffer(plane) for plane in planes], etag=shown)

    def _figure_image(self, version: int | str | None, figure: str) -> tuple[Pyramid, list[tuple[float, float]]]:
        """The pyramid a canvas figure shows and its channels' value ranges (the overview's), opened once.

        Why: a zoom asks for a dozen tiles at once; parsing the figure, opening the arrays and
        scanning the overview for its ranges once per version keeps each tile to its chunk reads.
        """
        if not figure:
            raise RequestError("This request needs a figure id.")
        key = (self.depth(version), figure)

        def opened() -> tuple[Pyramid, list[tuple[float, float]]]:
            spec = read_figure(self._studio_uns(version), figure).require("canvas")
            if not spec.get("image"):
                raise RequestError(f"Figure {figure!r} shows no image.")
            view = self.table_view(version, spec.get("table"))
            system = spec.get("coordinate_system") or None
            name = str(spec["image"])
            _, overview = cached_overview(view, spec)
            spans = [(float(info["range"][0]), float(info["range"][1])) for info in overview.infos]
            return open_pyramid(view.root, name, system), spans

        return self._images.get(key, opened)

    @staticmethod
    def _spans(ranges: str, default: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """``ranges`` ("low,high;low,high;...") as pairs, else ``default`` (the overview's)."""
        if not ranges:
            return default
        if len(ranges) > 4096:
            raise RequestError("Parameter 'ranges' is too long.")
        return [(span[0], span[1]) for span in (_floats(part, "ranges", 2) for part in ranges.split(";"))]

    def image_region(
        self,
        version: int | str | None = None,
        figure: str = "",
        region: str = "",
        max_side: int = MAX_IMAGE_SIDE,
        ranges: str = "",
    ) -> Reply:
        """The detail of a canvas figure's image over ``region``, as uint8 planes per channel.

        Why: one picture of a region at the finest level that fits ``max_side`` (at most
        MAX_IMAGE_SIDE), for a drawing without a tile grid. ``region`` is "x0,y0,x1,y1" in the
        figure's coordinate system; ``ranges`` ("low,high;low,high;...", the ``channels`` reply's
        ranges) says which raw values 0 and 255 stand for, so the detail matches the overview's colors.
        """
        if not figure:
            raise RequestError("The image_region request needs a figure id.")
        box = _floats(region, "region", 4)
        check_region(box)
        if not (box[2] > box[0] and box[3] > box[1]):
            raise RequestError(f"The region {box} is empty: give x0,y0,x1,y1 with x1 > x0 and y1 > y0.")
        if not 16 <= max_side <= MAX_IMAGE_SIDE:
            raise RequestError(f"max_side must be between 16 and {MAX_IMAGE_SIDE}, not {max_side}.")
        pyramid, default = self._figure_image(version, figure)
        spans = self._spans(ranges, default)
        found = region_level(pyramid, pyramid.name, box, max_side)
        planes = planes_over(found.level, spans)
        payload: ImageRegionData = {
            "level": found.index,
            "levels": found.levels,
            "width": int(planes[0].shape[1]) if planes else 0,
            "height": int(planes[0].shape[0]) if planes else 0,
            "bounds": found.bounds,
            "channels": len(planes),
        }
        return Reply(payload, [as_buffer(np.ascontiguousarray(plane)) for plane in planes])

    def image_tile(
        self,
        version: int | str | None = None,
        figure: str = "",
        level: int = 0,
        x: int = 0,
        y: int = 0,
        ranges: str = "",
    ) -> Reply:
        """Tile (``x``, ``y``) of pyramid level ``level`` of a canvas figure's image, as uint8 planes per channel.

        Why: a zoomed view draws the tiles on screen of the level its zoom needs, each asked for
        once and cached in the browser; a tile is a chunk's worth of pixels (the ``channels``
        reply's ``levels`` give each level's size and tile side), so it costs one chunk read per
        channel. ``ranges`` as for ``image_region``. A level or tile off the pyramid is refused.
        """
        pyramid, default = self._figure_image(version, figure)
        spans = self._spans(ranges, default)
        x0, y0, x1, y1 = pyramid.tile_box(level, x, y)
        planes = planes_over(pyramid.read(level, x0, y0, x1, y1), spans)
        payload: ImageTileData = {
            "level": level,
            "x": x,
            "y": y,
            "width": x1 - x0,
            "height": y1 - y0,
            "bounds": pyramid.bounds(level, x0, y0, x1, y1),
            "channels": len(planes),
        }
        return Reply(payload, [as_buffer(np.ascontiguousarray(plane)) for plane in planes])

    def store_key(self, version: int | str | None = None, key: str = "") -> Reply:
        """The raw bytes of one key of a version's store, as zarr sees the stack at that version.

        Why: one request through which a zarr reader in the browser (zarrita, Viv's OME-Zarr
        loaders) can read any array of a version, over the widget or the server alike. Only
        plain relative keys are answered, and only from the version's own store (its overlays
        over the base): never a manifest, a sibling folder or a path outside the store.
        """
        checked = checked_store_key(key)
        store = StackStore(self.stack.at(self.depth(version)))
        data = sync(store.get(checked, prototype=default_buffer_prototype()))
        raw = b"" if data is None else data.to_bytes()
        if len(raw) > MAX_STORE_OBJECT:
            raise RequestError(f"{checked!r} is {len(raw):,} bytes; objects over {MAX_STORE_OBJECT:,} are not sent.")
        payload: StoreKeyData = {"key": checked, "found": data is not None, "size": len(raw)}
        return Reply(payload, [memoryview(raw)] if data is not None else [])

    def export_figure(
        self, version: int | str | None, figure: str, draw_px: int | None = None, channels: Any = None
    ) -> tuple[ParsedFigure, Any]:
        """A figure and what draws it: a Vega-Lite spec (charts) or CanvasData (canvas).

        ``draw_px``: the pixels a canvas's whole drawing spans in an export, so its image is read
        at the level that many pixels need (see ``build_canvas``), not the browser's overview.
        ``channels``: the image channels as a view set them (name, color, visible, contrast
        limits), checked as a saved figure's channels are, in place of the saved ones.
        """
        parsed = read_figure(self._studio_uns(version), figure)
        if parsed.kind == "chart":
            spec = parsed.require("chart")
            uns = self._studio_uns(version, [str(spec["result"])])
            result = read_result(uns, str(spec["result"]))
            palettes = self._palettes(version, read_figures(uns))
            return parsed, recolor_chart(chart_for_figure(spec, result), palettes, result.meta)
        spec = parsed.require("canvas")
        if channels is not None:
            spec = parse_figure(figure, {**spec, "channels": channels}).require("canvas")
        view = self.table_view(version, spec.get("table"))
        return parsed, build_canvas(spec, view, view.root, view.attrs, draw_px)

    # ------------------------------------------------------------------ results

    @staticmethod
    def _columns(frame: pd.DataFrame) -> list[Column]:
        return [{"name": str(name), "dtype": str(dtype)} for name, dtype in frame.dtypes.items()]

    def _result_summary(
        self, result: ResultEntry, palettes: Callable[[], Mapping[str, Mapping[str, str]]] | None = None
    ) -> ResultSummary:
        tables: list[ResultTableSummary] = [
            {"name": name, "n_rows": len(frame), "columns": self._columns(with_index_column(frame))}
            for name, frame in result.tables.items()
        ]
        summary: ResultSummary = {
            "id": result.id,
            "kind": result.kind,
            "title": result.title,
            "meta": _result_meta(result.meta) if result.meta is not None else None,
            "tables": tables,
        }
        if result.error:
            summary["error"] = error_payload(ResultError(result.error))
        chart = default_chart(result)
        if chart is not None:
            summary["chart"] = recolor_chart(chart, palettes(), result.meta) if palettes else chart
        return summary

    def results(self, version: int | str | None = None) -> ResultsData:
        """Every saved result with its tables' shapes and a default chart for its kind."""
        try:
            uns = self._studio_uns(version, "all")
        except StackError as exc:
            return {"results": [], "error": error_payload(exc)}
        figures = read_figures(uns)
        palettes = _once(lambda: self._palettes(version, figures))
        return {"results": [self._result_summary(result, palettes) for result in read_results(uns)]}

    def _result_frame(
        self, version: int | str | None, result: str, table: str, sort: str | None, descending: bool, filter: str | None
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """A result table (index as a column), and the same filtered and sorted as shown."""
        if not result:
            raise RequestError("The request needs a result id.")
        full = with_index_column(read_result(self._studio_uns(version, [result]), result).table(table))
        frame = full
        if filter:
            frame = _filtered(frame, filter)
        if sort:
            if sort not in frame.columns:
                raise RequestError(f"Cannot sort by {sort!r}: the table has no such column.")
            frame = _sorted(frame, sort, descending)
        return full, frame

    def result_page(
        self,
        version: int | str | None = None,
        result: str = "",
        table: str = MAIN_TABLE,
        offset: int = 0,
        limit: int = DEFAULT_PAGE_SIZE,
        sort: str | None = None,
        descending: bool = False,
        filter: str | None = None,
    ) -> ResultPage:
        """One page of one result table, filtered and sorted here so the browser never holds the whole table.

        ``filter`` keeps the rows where any cell's text contains it (ignoring case).
        Numeric columns carry their range over the whole table, so every page of a
        column is printed with the same precision.
        """
        if offset < 0 or not 0 < limit <= MAX_PAGE_SIZE:
            raise RequestError(f"offset must be >= 0 and limit between 1 and {MAX_PAGE_SIZE}.")
        full, frame = self._result_frame(version, result, table, sort, descending, filter)
        page = frame.iloc[offset : offset + limit]
        rows = [[json_scalar(value) for value in row] for row in page.itertuples(index=False, name=None)]
        return {
            "columns": _ranged_columns(full),
            "rows": rows,
            "total": len(frame),
            "offset": offset,
            "unfiltered": len(full),
        }

    def result_csv(
        self,
        version: int | str | None = None,
        result: str = "",
        table: str = MAIN_TABLE,
        sort: str | None = None,
        descending: bool = False,
        filter: str | None = None,
    ) -> ResultCsv:
        """A whole result table as CSV text (full precision), filtered and sorted as the browser shows it.

        Text cells and column headers that a spreadsheet would run as a formula (``=``,
        ``+``, ``-``, ``@``, tab, carriage return first) get a leading apostrophe: table
        values are data, never code.
        """
        _, frame = self._result_frame(version, result, table, sort, descending, filter)
        return {"csv": _csv_text(frame), "filename": _csv_name(result, table), "rows": len(frame)}

    # ------------------------------------------------------------------ annotate

    def annotate(
        self,
        column: str,
        regions: Mapping[str, list[list[float]] | Mapping[str, Any]],
        *,
        title: str,
        message: str | None = None,
        figure: str = "",
        version: int | str | None = None,
    ) -> AnnotateData:
        """Save regions drawn on the tissue as obs ``column`` of a new version on ``version`` (default: the top).

        ``regions`` maps each label to a polygon ``[[x, y], ...]`` in the coordinates canvas
        ``figure`` draws its cells at (default: the version's first canvas figure), to
        ``{"embedding": key, "polygon": [...]}`` (a polygon on obsm ``key``, as ``embedding``
        sends it) or to ``{"cells": [index, ...]}``; a cell takes the label of the last region
        containing it. A new column is missing elsewhere; an
        existing one must be categorical and keeps its other values. One ``set-obs``, written
        by the same path as :func:`~sds_jupyter.stack.save.save_version` (so a read-only
        datasets folder sends it to the versions folder). The message defaults to what was
        annotated, so the version's Changes say it.
        """
        from sds_jupyter.stack.save import commit_plan, obs_column_plan

        if not isinstance(column, str) or not column.strip():
            raise RequestError("Parameter 'column' must name an obs column (a new or a categorical one).")
        if not isinstance(title, str) or not title.strip():
            raise RequestError("Parameter 'title' must be the new version's title (some text).")
        checked = checked_regions(regions)
        spec = self._annotated_figure(version, figure)
        table = str(spec.get("table") or self.table_name)
        view = self.table_view(version, table)
        keys = region_attrs(view, view.attrs)
        if column in (keys.get("region_key"), keys.get("instance_key")):
            raise RequestError(
                f"obs column {column[:80]!r} ties the table to its spatial elements; annotate into another column."
            )
        _, geometry = cached_geometry(view, spec)
        codes = region_codes(geometry.x, geometry.y, checked, embedding_positions(view))
        labels = [region.label for region in checked]
        existing = view.obs_column(column) if column in view.obs_columns else None
        values = annotated_column(existing, codes, labels, column)
        plan = obs_column_plan(table, column, values, existed=existing is not None)
        stack = self.stack.at(self.depth(version))
        text = message if isinstance(message, str) and message.strip() else annotation_message(column, labels, codes)
        folder = commit_plan(stack, plan, title=title, message=text)
        return {"folder": self._folder_text(folder), "dataset_id": folder.name}

    def figure_table(self, version: int | str | None, figure: str) -> str:
        """The table a canvas figure draws (its spec's, else the one this service opens)."""
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        return str(spec.get("table") or self.table_name)

    def _annotated_figure(self, version: int | str | None, figure: str) -> dict[str, Any]:
        """The canvas figure whose drawn positions regions are in: ``figure``, else the first canvas one, else none."""
        if figure:
            return read_figure(self._studio_uns(version), figure).require("canvas")
        try:
            figures = read_figures(self._studio_uns(version))
        except NoStudioDataError:
            return {}
        return next((dict(f.spec) for f in figures if f.kind == "canvas" and isinstance(f.spec, Mapping)), {})

    # ------------------------------------------------------------------ compare

    def compare(self, a: int | str, b: int | str) -> Comparison:
        """What differs in the table between versions ``a`` and ``b`` (b relative to a), cell by cell.

        Either may be a version on another branch of the tree (by dataset ID): then every
        node is compared, since no chain of manifests says what lies between them.
        """
        (service_a, depth_a), (service_b, depth_b) = self._version_at(a), self._version_at(b)
        if service_a is service_b:
            touched = service_a._touched(depth_a, depth_b)
        else:
            touched = _everything
        return compare_tables(depth_a, depth_b, service_a.table_view(depth_a), service_b.table_view(depth_b), touched)

    def _version_at(self, selector: int | str) -> tuple[StackService, int]:
        """The service and depth of a version: in the opened chain, or on another branch of the tree.

        A version off the chain is found only among the ``tree`` request's nodes (the
        datasets folder's versions on this base) by its dataset ID, and opened through
        :meth:`sibling`, which keeps it inside the datasets folder.
        """
        try:
            return self, self.depth(selector)
        except StackError:
            if not isinstance(selector, str) or self._stack is None:
                raise
        folder = self._tree_folders().get(selector)
        if folder is None:
            raise RequestError(
                f"No version {selector[:60]!r} in this stack or on another branch of its base; "
                "give a depth, or the dataset ID of a version in the tree."
            )
        other = self._branches.get(folder, lambda: self.sibling(folder))
        return other, other.stack.depth

    def serving(self, version: int | str | None) -> tuple[StackService, int | str | None]:
        """The service that reads ``version``, and the version as that service names it.

        A version of the opened chain is this service's. A dataset ID found only on another
        branch of the tree (the B of a side-by-side, a compare against a branch) is that
        branch's service at its depth, so every per-version request reads other branches
        the way ``compare`` does. Anything else stays here, to be refused as before.
        """
        if not isinstance(version, str) or self._stack is None:
            return self, version
        try:
            self.depth(version)
            return self, version
        except StackError:
            pass
        try:
            folder = self._tree_folders().get(version)
        except StackError:
            return self, version
        if folder is None:
            return self, version
        other = self._branches.get(folder, lambda: self.sibling(folder))
        return other, other.stack.depth

    def _tree_folders(self) -> dict[str, str]:
        """Each tree version's folder by dataset ID, built again only when the listing's fingerprint changes.

        Building the tree settles every version's parent; the fingerprint only
        stats the manifests, so a compare against a branch costs what one inside the chain does.
        """
        key = self.fingerprint()["fingerprint"]
        if self._branch_folders is None or self._branch_folders[0] != key:
            self._branch_folders = (key, {n["dataset_id"]: n["folder"] for n in self.tree()["nodes"]})
        return self._branch_folders[1]

    # ------------------------------------------------------------------ contents

    def contents(self, version: int | str | None = None) -> ContentsData:
        """The version's elements and its tables' columns, marked where this version wrote them."""
        return read_contents(self.stack, self.depth(version))

    def _touched(self, depth_a: int, depth_b: int) -> Any:
        """A test whether any version between two depths wrote or deleted under a node.

        A node no version in between touched is the same object in both, so
        comparing it would only re-read identical data.
        """
        low, high = sorted((depth_a, depth_b))
        manifests = [v.manifest for v in self.stack.versions if low < v.depth <= high]

        def touched(node: str) -> bool:
            prefix = node.rstrip("/") + "/"
            for manifest in manifests:
                if any(f.key.startswith(prefix) for f in manifest.files):
                    return True
                if any(
                    entry.startswith(prefix) or prefix.startswith(entry) or entry == node for entry in manifest.deleted
                ):
                    return True
            return False

        return touched


def _everything(node: str) -> bool:
    """A ``touched`` test that reads every node (two versions on different branches)."""
    return True


def _filtered(frame: pd.DataFrame, text: str) -> pd.DataFrame:
    """Rows where any cell, as text, contains ``text`` (ignoring case)."""
    needle = text.strip().lower()
    if not needle or frame.empty:
        return frame
    hit = np.zeros(len(frame), dtype=bool)
    for column in frame.columns:
        cells = frame[column].astype(str).str.lower()
        hit |= cells.str.contains(needle, regex=False, na=False).to_numpy()
    return frame[hit]


def _ranged_columns(frame: pd.DataFrame) -> list[Column]:
    """Columns with their dtype; numeric ones with their finite range."""
    columns: list[Column] = []
    for name, dtype in frame.dtypes.items():
        column: Column = {"name": str(name), "dtype": str(dtype)}
        series = frame[name]
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
            finite = values[np.isfinite(values)]
            column["min"] = float(finite.min()) if finite.size else None
            column["max"] = float(finite.max()) if finite.size else None
        columns.append(column)
    return columns


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_safe(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def _csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV: every float with all its digits, formula-like texts (cells and headers) defused."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(_csv_safe)
    # headers are written as text too: a column named "=cmd()" is data, never a formula
    safe.columns = [_csv_safe(str(name)) for name in safe.columns]
    text: str = safe.to_csv(index=False, lineterminator="\n", float_format=None)  # pandas is untyped here
    return text


def _csv_name(result: str, table: str) -> str:
    """A download file name from the result id and table name (safe characters only)."""
    stem = f"{result}" if table == MAIN_TABLE else f"{result}-{table}"
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).strip("._") or "result"
    return f"{cleaned[:100]}.csv"


def _partial_changes(partial: PartialChain, version: int | str | None) -> ChangesData:
    """A version's changes above a missing parent: what it wrote, unsorted into added or replaced."""
    versions = {v.depth: v for v in partial.versions}
    depth = max(versions, default=None) if version is None else _partial_depth(partial, version)
    entry = versions.get(depth) if depth is not None else None
    if entry is None:
        raise RequestError(f"no version {version!r} above the missing dataset {partial.missing_id}")
    manifest = entry.manifest
    return {
        "ops": [jsonable(change) for change in manifest.changes],
        "details": [],
        "added": [{"key": f.key, "size": f.size} for f in manifest.files],
        "replaced": [],
        "deleted": [{"entry": item, "node": item.endswith("/")} for item in manifest.deleted],
        "note": (
            f"Dataset {partial.missing_id} below this version is missing, so keys it replaced "
            "cannot be told from keys it added: all are listed as added."
        ),
    }


def _figures_named_above_missing(partial: PartialChain | None, version: int | str | None) -> list[FigureSummary]:
    """The figures the readable versions up to ``version`` saved, each saying it needs the missing dataset.

    Why: above a missing parent no figure can be drawn, yet the user should see which figures
    the version holds (by their manifests' ops) rather than "no figures". Figures saved in the
    missing versions themselves cannot be named; the error beside the list says what is missing.
    """
    if partial is None:
        return []
    top = max((v.depth for v in partial.versions), default=0)
    depth = top if version is None else _partial_depth(partial, version)
    named: dict[str, str | None] = {}
    for entry in sorted(partial.versions, key=lambda v: v.depth):
        if entry.depth > depth:
            break
        for op in entry.manifest.changes:
            figure = op.get("figure") if isinstance(op, Mapping) else None
            if not isinstance(figure, str):
                continue
            if op.get("op") == "set-figure":
                title = op.get("title")
                named[figure] = title if isinstance(title, str) else None
            elif op.get("op") == "delete-figure":
                named.pop(figure, None)
    reason = (
        f"needs dataset {partial.missing_id}, which is missing, to draw; add it to the workspace to see this figure"
    )
    return [
        {
            "id": figure,
            "title": title,
            "caption": None,
            "print_width": None,
            "kind": "unsupported",
            "reason": reason,
            "spec": None,
        }
        for figure, title in named.items()
    ]


def _partial_depth(partial: PartialChain, version: int | str) -> int:
    """The depth ``version`` names above a missing parent (a depth, a dataset ID or a title)."""
    if isinstance(version, int) or (str(version).isascii() and str(version).isdigit()):
        return int(version)
    found: int | None = next(
        (int(v.depth) for v in partial.versions if version in (v.dataset_id, v.manifest.title)), None
    )
    if found is None:
        raise RequestError(f"no version {version!r} above the missing dataset {partial.missing_id}")
    return found


def _once(compute: Callable[[], Any]) -> Callable[[], Any]:
    """``compute`` run on first call only (palettes read obs: only when a chart needs them)."""
    cache: list[Any] = []

    def get() -> Any:
        if not cache:
            cache.append(compute())
        return cache[0]

    return get


def _sorted(frame: pd.DataFrame, column: str, descending: bool) -> pd.DataFrame:
    """Rows by ``column``, missing values last; mixed-type columns sort by their text."""
    try:
        return frame.sort_values(column, ascending=not descending, na_position="last", kind="stable")
    except TypeError:
        return frame.sort_values(
            column,
            ascending=not descending,
            na_position="last",
            kind="stable",
            key=lambda s: s.astype(str).where(s.notna()),
        )
