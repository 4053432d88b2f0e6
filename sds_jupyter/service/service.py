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

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.errors import StackError
from sds_jupyter.service.errors import RequestError, error_payload
from sds_jupyter.service.tables import TableView
from sds_jupyter.service.types import (
    BaseSummary,
    ChangesData,
    Column,
    Comparison,
    Delta,
    FiguresData,
    FigureSummary,
    HistoryData,
    KeySize,
    ObsChange,
    ResultCsv,
    ResultPage,
    ResultsData,
    ResultSummary,
    VersionSummary,
    Whiteout,
)
from sds_jupyter.stack import Stack, StackStore
from sds_jupyter.stack.open import open_anndata, open_table_group
from sds_jupyter.studio.canvas import build_canvas
from sds_jupyter.studio.charts import chart_for_figure, default_chart, with_index_column
from sds_jupyter.studio.errors import NoStudioDataError, ResultError
from sds_jupyter.studio.figures import ParsedFigure, read_figure, read_figures
from sds_jupyter.studio.jsonable import json_scalar, jsonable
from sds_jupyter.studio.results import MAIN_TABLE, ResultEntry, ResultTable, read_result, read_results
from sds_jupyter.studio.uns import FIGURES_KEY, RESULTS_KEY, STUDIO_KEY, studio_part, studio_section

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "Reply", "StackService"]

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
Folders = str | Mapping[str, str] | None


@dataclass
class Reply:
    """A payload and its binary buffers (numpy-backed bytes, in protocol order)."""

    data: Any
    buffers: list[memoryview] = field(default_factory=list)


def as_buffer(array: np.ndarray) -> memoryview:
    """A numpy array's bytes without a copy (little-endian, as the browser reads them)."""
    contiguous = np.ascontiguousarray(array)
    if contiguous.dtype.byteorder == ">":
        contiguous = contiguous.astype(contiguous.dtype.newbyteorder("<"))
    return memoryview(contiguous).cast("B")


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
        self._tables: dict[tuple[int, str], TableView] = {}
        self._adatas: dict[int, Any] = {}
        if isinstance(path_or_stack, Stack):
            self._stack = path_or_stack
        else:
            try:
                self._stack = Stack.resolve(path_or_stack, folders=folders, storage_options=storage_options)
            except StackError as exc:
                self._stack_error = exc

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
            # the same error object is raised on every request: drop the last traceback
            raise self._stack_error.with_traceback(None)
        return self._stack

    def depth(self, version: int | str | None) -> int:
        """The depth ``version`` names (None: the top)."""
        return self.stack.depth if version is None else self.stack.depth_of(version)

    def table_view(self, version: int | str | None = None, table: str | None = None) -> TableView:
        """The cached element reader of a table (default: this service's) at ``version``."""
        key = (self.depth(version), table or self.table_name)
        if not key[1] or "/" in key[1] or key[1] in (".", ".."):
            raise RequestError(f"{key[1]!r} is not a table name.")
        if key not in self._tables:
            store = StackStore(self.stack.at(key[0]))
            group = open_table_group(store, key[1])
            self._tables[key] = TableView(zarr.open_group(store, mode="r"), group, key[1])
        return self._tables[key]

    def adata(self, version: int | str | None = None) -> Any:
        """The whole AnnData of the table at ``version`` (read once, for notebooks)."""
        depth = self.depth(version)
        if depth not in self._adatas:
            self._adatas[depth] = open_anndata(self.stack.at(depth), table=self.table_name)
        return self._adatas[depth]

    def result_table(self, result: str, table: str = MAIN_TABLE, version: int | str | None = None) -> ResultTable:
        """One table of a saved result as a DataFrame with the result's meta as ``.meta`` (for notebooks)."""
        entry = read_result(self._studio_uns(version, [result]), result)
        return ResultTable.of(entry.table(table), entry.meta)

    def _studio_uns(self, version: int | str | None, results: Iterable[str] | Literal["all"] = ()) -> dict[str, Any]:
        """The table's studio figures and the named results, refusing a table the app never saved into."""
        uns = self.table_view(version).studio_uns(results)
        if studio_section(uns) is None:
            raise NoStudioDataError(
                f"Table {self.table_name!r} of this version keeps no {STUDIO_KEY!r} section in uns: "
                "it holds no saved figures or results."
            )
        return uns

    def _folder_text(self, folder: Path) -> str:
        if self._relative_to is not None:
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
            return {"top_depth": 0, "versions": [], "base": None, "error": error_payload(self._stack_error)}
        return {
            "top_depth": self.stack.depth,
            "versions": [self._version_summary(version) for version in self.stack.versions],
            "base": self._base_summary(),
        }

    # ------------------------------------------------------------------ changes

    def changes(self, version: int | str | None = None) -> ChangesData:
        """What one version wrote: its ops, the keys it added or replaced, its whiteouts."""
        depth = self.depth(version)
        if depth == 0:
            return {"ops": [], "added": [], "replaced": [], "deleted": []}
        entry = self.stack.versions[self.stack.depth - depth]
        below = StackStore(self.stack.at(depth - 1))
        added: list[KeySize] = []
        replaced: list[KeySize] = []
        for file in entry.manifest.files:
            (replaced if below.exists_raw(file.key) else added).append({"key": file.key, "size": file.size})
        deleted: list[Whiteout] = [{"entry": item, "node": item.endswith("/")} for item in entry.manifest.deleted]
        return {
            "ops": [jsonable(change) for change in entry.manifest.changes],
            "added": added,
            "replaced": replaced,
            "deleted": deleted,
        }

    # ------------------------------------------------------------------ figures

    def _figure_summary(self, figure: ParsedFigure, uns: Mapping[str, Any]) -> FigureSummary:
        summary: FigureSummary = {
            "id": figure.id,
            "title": figure.title,
            "caption": figure.caption,
            "print_width": figure.print_width,
            "kind": figure.kind,
            "spec": jsonable(figure.spec),
        }
        if figure.kind == "chart":
            try:
                result = read_result(uns, str(figure.spec["result"]))
                summary["vega_lite"] = chart_for_figure(figure.spec, result, titled=False)
            except StackError as exc:
                summary.update(kind="unsupported", reason=str(exc))
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
            return {"figures": [], "error": error_payload(exc)}
        return {"figures": [self._figure_summary(figure, uns) for figure in figures]}

    def canvas(self, version: int | str | None = None, figure: str = "") -> Reply:
        """A canvas figure's payload and buffers (x, y, value?, image?)."""
        if not figure:
            raise RequestError("The canvas request needs a figure id.")
        spec = read_figure(self._studio_uns(version), figure).require("canvas")
        view = self.table_view(version, spec.get("table"))
        drawn = build_canvas(spec, view.as_anndata(), view.root, view.attrs)
        return Reply(drawn.payload, [as_buffer(buffer) for buffer in drawn.buffers])

    def expression(self, version: int | str | None = None, gene: str = "", layer: str | None = None) -> Reply:
        """One gene's value for every cell (float32, obs order: the canvas's cells), from X or a layer.

        The data side of "click a gene, see it on the tissue": the canvas colours
        its cells by this buffer without another round trip per cell.
        """
        if not gene:
            raise RequestError("The expression request needs a gene name.")
        view = self.table_view(version)
        names = view.var_names
        matches = np.flatnonzero(names == gene)
        if not len(matches):
            raise RequestError(f"Gene {gene!r} is not among the {len(names)} variables of table {view.name!r}.")
        if layer is not None and layer not in view.layer_names():
            have = ", ".join(view.layer_names()) or "none"
            raise RequestError(f"Table {view.name!r} has no layer {layer!r} (layers: {have}).")
        values = view.matrix_column(int(matches[0]), layer)
        finite = values[np.isfinite(values)]
        data = {
            "gene": gene,
            "layer": layer,
            "n_cells": int(values.size),
            "min": float(finite.min()) if finite.size else None,
            "max": float(finite.max()) if finite.size else None,
            "dtype": "float32",
        }
        return Reply(data, [as_buffer(values)])

    def cell_mask(self, version: int | str | None = None, column: str = "", value: str = "") -> Reply:
        """Which cells have ``value`` in obs ``column`` (a cluster, a group, a niche): one uint8 per cell, obs order."""
        if not column:
            raise RequestError("The cell_mask request needs an obs column.")
        view = self.table_view(version)
        if column not in view.obs.columns:
            raise RequestError(f"Table {view.name!r} has no obs column {column!r}.")
        series = view.obs[column]
        mask = (series.astype(str) == value).to_numpy() & series.notna().to_numpy()
        data = {"column": column, "value": value, "n_cells": int(mask.size), "n_selected": int(mask.sum()), "dtype": "uint8"}
        return Reply(data, [as_buffer(mask.astype(np.uint8))])

    def export_figure(self, version: int | str | None, figure: str) -> tuple[ParsedFigure, Any]:
        """A figure and what draws it: a Vega-Lite spec (charts) or CanvasData (canvas)."""
        parsed = read_figure(self._studio_uns(version), figure)
        if parsed.kind == "chart":
            spec = parsed.require("chart")
            uns = self._studio_uns(version, [str(spec["result"])])
            return parsed, chart_for_figure(spec, read_result(uns, str(spec["result"])))
        spec = parsed.require("canvas")
        view = self.table_view(version, spec.get("table"))
        return parsed, build_canvas(spec, view.as_anndata(), view.root, view.attrs)

    # ------------------------------------------------------------------ results

    @staticmethod
    def _columns(frame: pd.DataFrame) -> list[Column]:
        return [{"name": str(name), "dtype": str(dtype)} for name, dtype in frame.dtypes.items()]

    def _result_summary(self, result: ResultEntry) -> ResultSummary:
        tables = [
            {"name": name, "n_rows": int(len(frame)), "columns": self._columns(with_index_column(frame))}
            for name, frame in result.tables.items()
        ]
        summary: ResultSummary = {
            "id": result.id,
            "kind": result.kind,
            "title": result.title,
            "meta": jsonable(result.meta) if result.meta is not None else None,
            "tables": tables,
        }
        if result.error:
            summary["error"] = error_payload(ResultError(result.error))
        chart = default_chart(result)
        if chart is not None:
            summary["chart"] = chart
        return summary

    def results(self, version: int | str | None = None) -> ResultsData:
        """Every saved result with its tables' shapes and a default chart for its kind."""
        try:
            uns = self._studio_uns(version, "all")
        except StackError as exc:
            return {"results": [], "error": error_payload(exc)}
        return {"results": [self._result_summary(result) for result in read_results(uns)]}

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

        Text cells that a spreadsheet would run as a formula (``=``, ``+``, ``-``,
        ``@``, tab, carriage return first) get a leading apostrophe: table values
        are data, never code.
        """
        _, frame = self._result_frame(version, result, table, sort, descending, filter)
        return {"csv": _csv_text(frame), "filename": _csv_name(result, table), "rows": len(frame)}

    # ------------------------------------------------------------------ compare

    def compare(self, a: int | str, b: int | str) -> Comparison:
        """What differs in the table between versions ``a`` and ``b`` (b relative to a)."""
        depth_a, depth_b = self.depth(a), self.depth(b)
        view_a, view_b = self.table_view(depth_a), self.table_view(depth_b)
        touched = self._touched(depth_a, depth_b)
        table = view_b.group.path
        return {
            "a": depth_a,
            "b": depth_b,
            "obs": _obs_delta(view_a, view_b, lambda column: touched(f"{table}/obs/{column}")),
            "obsm": _delta(
                view_a.obsm_keys,
                view_b.obsm_keys,
                lambda key: touched(f"{table}/obsm/{key}") and not _same_array(view_a.obsm(key), view_b.obsm(key)),
            ),
            "uns": _delta(
                list(view_a.uns),
                list(view_b.uns),
                lambda key: touched(f"{table}/uns/{key}") and not _same_value(view_a.uns[key], view_b.uns[key]),
            ),
            "figures": _part_delta(view_a.uns, view_b.uns, FIGURES_KEY),
            "results": _part_delta(view_a.uns, view_b.uns, RESULTS_KEY),
        }

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
                if any(entry.startswith(prefix) or prefix.startswith(entry) or entry == node for entry in manifest.deleted):
                    return True
            return False

        return touched


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
    """``frame`` as CSV: every float with all its digits, formula-like texts defused."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(_csv_safe)
    return safe.to_csv(index=False, lineterminator="\n", float_format=None)


def _csv_name(result: str, table: str) -> str:
    """A download file name from the result id and table name (safe characters only)."""
    stem = f"{result}" if table == MAIN_TABLE else f"{result}-{table}"
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).strip("._") or "result"
    return f"{cleaned[:100]}.csv"


def _sorted(frame: pd.DataFrame, column: str, descending: bool) -> pd.DataFrame:
    """Rows by ``column``, missing values last; mixed-type columns sort by their text."""
    try:
        return frame.sort_values(column, ascending=not descending, na_position="last", kind="stable")
    except TypeError:
        return frame.sort_values(
            column, ascending=not descending, na_position="last", kind="stable", key=lambda s: s.astype(str).where(s.notna())
        )


# ---------------------------------------------------------------------- comparing


def _delta(keys_a: list[str], keys_b: list[str], differs: Any) -> Delta:
    set_a, set_b = set(keys_a), set(keys_b)
    return {
        "added": [key for key in keys_b if key not in set_a],
        "removed": [key for key in keys_a if key not in set_b],
        "changed": [key for key in keys_b if key in set_a and differs(key)],
    }


def _same_array(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc"))
    except TypeError:
        return bool(np.array_equal(a.astype(str), b.astype(str)))


def _same_value(a: Any, b: Any) -> bool:
    """Deep equality for uns values: dicts, dataframes, arrays, scalars."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and a.equals(b)
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        return _same_array(a, b)
    return bool(a == b) if type(a) is type(b) else jsonable(a) == jsonable(b)


def _part_delta(uns_a: Mapping[str, Any], uns_b: Mapping[str, Any], part: str) -> Delta:
    items_a, items_b = studio_part(uns_a, part), studio_part(uns_b, part)
    return _delta(list(items_a), list(items_b), lambda key: not _same_value(items_a[key], items_b[key]))


def _obs_delta(view_a: TableView, view_b: TableView, touched: Any) -> dict[str, Any]:
    cols_a, cols_b = list(view_a.obs.columns), list(view_b.obs.columns)
    delta = _delta(cols_a, cols_b, lambda c: touched(c) and not _same_series(view_a.obs[c], view_b.obs[c]))
    changed: list[ObsChange] = []
    for column in delta["changed"]:
        change: ObsChange = {"column": column}
        counts_a, counts_b = view_a.obs_counts(column), view_b.obs_counts(column)
        if counts_a is not None and counts_b is not None:
            change.update(counts_a=dict(counts_a), counts_b=dict(counts_b))
        changed.append(change)
    return {"added": delta["added"], "removed": delta["removed"], "changed": changed}


def _same_series(a: pd.Series, b: pd.Series) -> bool:
    """Same values in the same order (NaN equals NaN; categories compared by value)."""
    if len(a) != len(b):
        return False
    return a.astype(object).reset_index(drop=True).equals(b.astype(object).reset_index(drop=True))
