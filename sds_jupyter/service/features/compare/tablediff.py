"""What differs between two versions of a table, part by part: obs, obsm, uns, figures, results.

Chunk stores can say which keys differ; a person wants to know that 85 cells
went from ``margin`` to ``stroma``. Each obs column is compared cell by cell by the shared
:mod:`sds_jupyter.service.celldiff` (history and the cells feature use it too). Only nodes
that some version between the two wrote or deleted are read (``touched``): anything else is
the same object on both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.protocol.types import (
    Comparison,
    Delta,
    FigureChange,
    ObsChange,
    ObsDelta,
    ObsmChange,
    PartStatus,
    ResultChange,
    UnsChange,
)
from sds_jupyter.service.celldiff import NOT_SMALL, obs_change, small_value
from sds_jupyter.service.columns import column_summary
from sds_jupyter.studio.figurespecs import parse_figure
from sds_jupyter.studio.jsonable import jsonable
from sds_jupyter.studio.resultstore import MAIN_TABLE, read_results
from sds_jupyter.studio.tableview import TableView
from sds_jupyter.studio.uns import FIGURES_KEY, RESULTS_KEY, STUDIO_KEY, studio_part

__all__ = ["compare_tables"]

Touched = Callable[[str], bool]


def compare_tables(depth_a: int, depth_b: int, view_a: TableView, view_b: TableView, touched: Touched) -> Comparison:
    """The whole comparison payload of B against A."""
    table = view_b.group.path
    obs = _obs_delta(view_a, view_b, lambda column: touched(f"{table}/obs/{column}"))
    obsm_changes = _obsm_changes(view_a, view_b, lambda key: touched(f"{table}/obsm/{key}"))
    uns_changes = _uns_changes(view_a.uns, view_b.uns, lambda key: touched(f"{table}/uns/{key}"))
    figure_changes = _figure_changes(view_a.uns, view_b.uns)
    result_changes = _result_changes(view_a.uns, view_b.uns)
    return {
        "a": depth_a,
        "b": depth_b,
        "obs": obs,
        "obsm": _as_delta(obsm_changes, "key"),
        "uns": _as_delta(uns_changes, "key"),
        "figures": _as_delta(figure_changes, "id"),
        "results": _as_delta(result_changes, "id"),
        "obsm_changes": obsm_changes,
        "uns_changes": uns_changes,
        "figure_changes": figure_changes,
        "result_changes": result_changes,
    }


def _as_delta(changes: list[Any], name: str) -> Delta:
    """The plain added/removed/changed name lists, derived from the detailed entries."""

    def named(status: PartStatus) -> list[str]:
        return [str(entry[name]) for entry in changes if entry["change"] == status]

    return {"added": named("added"), "removed": named("removed"), "changed": named("changed")}


def _statuses(keys_a: list[str], keys_b: list[str], differs: Callable[[str], bool]) -> list[tuple[str, PartStatus]]:
    """(key, status) for keys added (B's order), removed (A's order) and changed (B's order)."""
    set_a, set_b = set(keys_a), set(keys_b)
    return (
        [(key, "added") for key in keys_b if key not in set_a]
        + [(key, "removed") for key in keys_a if key not in set_b]
        + [(key, "changed") for key in keys_b if key in set_a and differs(key)]
    )


# ---------------------------------------------------------------------- obs


def _obs_delta(view_a: TableView, view_b: TableView, touched: Callable[[str], bool]) -> ObsDelta:
    """The columns added, removed and changed, each read alone (obs is never read whole)."""
    cols_a, cols_b = view_a.obs_columns, view_b.obs_columns
    set_a, set_b = set(cols_a), set(cols_b)
    changed: list[ObsChange] = []
    for column in cols_b:
        if column in set_a and touched(column):
            change = obs_change(column, view_a.obs_named_column(column), view_b.obs_named_column(column))
            if change is not None:
                changed.append(change)
    return {
        "added": [c for c in cols_b if c not in set_a],
        "removed": [c for c in cols_a if c not in set_b],
        "changed": changed,
        "added_columns": [column_summary(c, view_b.obs_column(c)) for c in cols_b if c not in set_a],
        "removed_columns": [column_summary(c, view_a.obs_column(c)) for c in cols_a if c not in set_b],
        "n_cells_a": view_a.n_obs,
        "n_cells_b": view_b.n_obs,
        "n_common": len(_common_index(view_a.obs_names, view_b.obs_names)),
    }


def _common_index(a: pd.Index, b: pd.Index) -> pd.Index:
    if a.equals(b):  # the usual case, the same cells in the same order: no hashing of every name
        return a
    if a.is_unique and b.is_unique:
        return a.intersection(b, sort=False)
    return pd.RangeIndex(min(len(a), len(b)))


# ---------------------------------------------------------------------- obsm


def _obsm_shape(view: TableView, key: str) -> list[int]:
    node = view.group[f"obsm/{key}"]
    if isinstance(node, zarr.Array):
        return [int(n) for n in node.shape]
    return [int(n) for n in view.obsm(key).shape]


def _obsm_changes(view_a: TableView, view_b: TableView, touched: Callable[[str], bool]) -> list[ObsmChange]:
    changes: list[ObsmChange] = []

    def differs(key: str) -> bool:
        return touched(key) and not _same_array(view_a.obsm(key), view_b.obsm(key))

    for key, status in _statuses(view_a.obsm_keys, view_b.obsm_keys, differs):
        entry: ObsmChange = {
            "key": key,
            "change": status,
            "shape_a": _obsm_shape(view_a, key) if status != "added" else None,
            "shape_b": _obsm_shape(view_b, key) if status != "removed" else None,
        }
        if status == "changed":
            entry.update(_rows_changed(key, view_a.obsm(key), view_b.obsm(key)))
        changes.append(entry)
    return changes


class _RowsChanged(TypedDict, total=False):
    """The row counts merged into an :class:`ObsmChange`."""

    n_rows_changed: int
    max_displacement: float


class _TableChange(TypedDict, total=False):
    """The table facts merged into a :class:`ResultChange`."""

    table_changed: bool
    n_rows_changed: int


def _rows_changed(key: str, a: np.ndarray, b: np.ndarray) -> _RowsChanged:
    """Rows that differ (same shape only); for ``spatial``, the largest displacement."""
    if a.shape != b.shape or a.ndim != 2:
        return {}
    try:
        fa, fb = a.astype(float), b.astype(float)
    except (TypeError, ValueError):
        return {"n_rows_changed": int((a.astype(str) != b.astype(str)).any(axis=1).sum())}
    with np.errstate(invalid="ignore"):
        same = (fa == fb) | (np.isnan(fa) & np.isnan(fb))
    out: _RowsChanged = {"n_rows_changed": int((~same).any(axis=1).sum())}
    if key == "spatial":
        moved = np.hypot.reduce(fb - fa, axis=1) if fa.shape[1] > 1 else np.abs(fb - fa)[:, 0]
        moved = moved[np.isfinite(moved)]
        out["max_displacement"] = float(moved.max()) if moved.size else 0.0
    return out


def _same_array(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc"))
    except TypeError:
        return bool(np.array_equal(a.astype(str), b.astype(str)))


# ---------------------------------------------------------------------- uns, figures, results


def same_value(a: Any, b: Any) -> bool:
    """Deep equality for uns values: dicts, dataframes, arrays, scalars."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and a.equals(b)
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        return _same_array(a, b)
    return bool(a == b) if type(a) is type(b) else jsonable(a) == jsonable(b)


def _uns_changes(uns_a: Mapping[str, Any], uns_b: Mapping[str, Any], touched: Callable[[str], bool]) -> list[UnsChange]:
    """uns keys other than the app's section (figures and results are reported by title)."""
    keys_a = [str(k) for k in uns_a if k != STUDIO_KEY]
    keys_b = [str(k) for k in uns_b if k != STUDIO_KEY]
    changes: list[UnsChange] = []
    for key, status in _statuses(keys_a, keys_b, lambda k: touched(k) and not same_value(uns_a[k], uns_b[k])):
        entry: UnsChange = {"key": key, "change": status}
        for side, uns in (("a", uns_a), ("b", uns_b)):
            if key in uns:
                shown = small_value(uns[key])
                if shown is not NOT_SMALL:
                    entry[side] = shown  # type: ignore[literal-required]
        changes.append(entry)
    return changes


def _figure_changes(uns_a: Mapping[str, Any], uns_b: Mapping[str, Any]) -> list[FigureChange]:
    items_a, items_b = studio_part(uns_a, FIGURES_KEY), studio_part(uns_b, FIGURES_KEY)
    changes: list[FigureChange] = []
    for key, status in _statuses(list(items_a), list(items_b), lambda k: not same_value(items_a[k], items_b[k])):
        stored = items_b[key] if key in items_b else items_a[key]
        changes.append({"id": key, "change": status, "title": parse_figure(key, stored).title})
    return changes


def _result_changes(uns_a: Mapping[str, Any], uns_b: Mapping[str, Any]) -> list[ResultChange]:
    items_a, items_b = studio_part(uns_a, RESULTS_KEY), studio_part(uns_b, RESULTS_KEY)
    entries_a = {entry.id: entry for entry in read_results(uns_a)}
    entries_b = {entry.id: entry for entry in read_results(uns_b)}
    changes: list[ResultChange] = []
    for key, status in _statuses(list(items_a), list(items_b), lambda k: not same_value(items_a[k], items_b[k])):
        entry = entries_b.get(key) or entries_a[key]
        change: ResultChange = {"id": key, "change": status, "title": entry.title, "kind": entry.kind}
        table_a = entries_a[key].tables.get(MAIN_TABLE) if key in entries_a else None
        table_b = entries_b[key].tables.get(MAIN_TABLE) if key in entries_b else None
        if table_a is not None:
            change["n_rows_a"] = len(table_a)
        if table_b is not None:
            change["n_rows_b"] = len(table_b)
        if status == "changed" and table_a is not None and table_b is not None:
            change.update(_table_change(table_a, table_b))
        changes.append(change)
    return changes


def _table_change(a: pd.DataFrame, b: pd.DataFrame) -> _TableChange:
    """Whether a result's main table changed and, with the same shape and columns, in how many rows."""
    if a.equals(b):
        return {"table_changed": False}
    out: _TableChange = {"table_changed": True}
    if a.shape == b.shape and list(a.columns) == list(b.columns):
        left, right = a.reset_index(drop=True).astype(object), b.reset_index(drop=True).astype(object)
        same = (left == right) | (left.isna() & right.isna())
        out["n_rows_changed"] = int((~same.all(axis=1)).sum())
    return out
