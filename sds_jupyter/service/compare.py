"""What differs between two versions of a table, in the terms of the cells.

Chunk stores can say which keys differ; a person wants to know that 85 cells
went from ``margin`` to ``stroma``. Cells are matched by obs index (by position
only when an index repeats names), missing equals missing, and categorical
values are compared by their text, so reordering categories changes nothing.
Only nodes that some version between the two wrote or deleted are read
(``touched``): anything else is the same object on both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.limits import MAX_COUNTS
from sds_jupyter.service.agreement import agreement, contingency_payload, crosstab, moved_cells
from sds_jupyter.service.columns import column_kind, column_summary, value_texts
from sds_jupyter.service.tables import TableView
from sds_jupyter.service.types import (
    Comparison,
    Delta,
    FigureChange,
    Histogram,
    ObsChange,
    ObsDelta,
    ObsmChange,
    PartStatus,
    ResultChange,
    Transition,
    UnsChange,
)
from sds_jupyter.studio.figures import parse_figure
from sds_jupyter.studio.jsonable import json_scalar, jsonable
from sds_jupyter.studio.results import MAIN_TABLE, read_results
from sds_jupyter.studio.uns import FIGURES_KEY, RESULTS_KEY, STUDIO_KEY, studio_part

__all__ = [
    "MAX_TRANSITIONS",
    "NEW_CELL",
    "NOT_SMALL",
    "RENAMED",
    "UNCHANGED",
    "compare_tables",
    "obs_change",
    "small_value",
    "transition_labels",
]

#: Transitions beyond this many pairs are cut (``n_transitions`` keeps the total).
MAX_TRANSITIONS = 200
#: Bins of the histogram of numeric differences.
HISTOGRAM_BINS = 20
#: uns values longer than this (text) or with more items (lists) are not shown.
MAX_TEXT = 400
MAX_ITEMS = 20

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


def _aligned(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The two columns over the cells both versions hold, in A's order."""
    if a.index.equals(b.index):  # the same cells in the same order: matched as they stand
        return a, b
    if a.index.is_unique and b.index.is_unique:
        common = a.index.intersection(b.index, sort=False)
        return a.loc[common], b.loc[common]
    n = min(len(a), len(b))
    return a.iloc[:n].reset_index(drop=True), b.iloc[:n].reset_index(drop=True)


def _kind(a: pd.Series, b: pd.Series) -> str:
    kinds = {column_kind(a), column_kind(b)}
    if len(kinds) == 1:
        return kinds.pop()
    return "categorical" if "categorical" in kinds else "string"


def obs_change(column: str, a: pd.Series, b: pd.Series) -> ObsChange | None:
    """How one column differs cell by cell; None when every shared cell holds the same value."""
    kind = _kind(a, b)
    a, b = _aligned(a, b)
    if kind == "numeric":
        return _numeric_change(column, a, b)
    texts_a, texts_b = _texts(a), _texts(b)
    differs = ~((texts_a == texts_b) | (pd.isna(texts_a) & pd.isna(texts_b)))
    n_changed = int(differs.sum())
    if not n_changed:
        return None
    pairs = pd.DataFrame({"a": texts_a[differs], "b": texts_b[differs]})
    counted = pairs.value_counts(dropna=False).reset_index(name="count")
    counted["a_sort"] = counted["a"].fillna("")
    counted["b_sort"] = counted["b"].fillna("")
    counted = counted.sort_values(["count", "a_sort", "b_sort"], ascending=[False, True, True], kind="stable")
    transitions: list[Transition] = [
        {"a": _or_none(row.a), "b": _or_none(row.b), "count": int(row.count)}
        for row in counted.iloc[:MAX_TRANSITIONS].itertuples(index=False)
    ]
    change: ObsChange = {
        "column": column,
        "kind": kind,  # type: ignore[typeddict-item]
        "n_changed": n_changed,
        "transitions": transitions,
        "n_transitions": len(counted),
    }
    for side, texts in (("a", texts_a), ("b", texts_b)):
        counts, other = _counts(texts)
        change[f"counts_{side}"] = counts  # type: ignore[literal-required]
        if other:
            change[f"counts_other_{side}"] = other  # type: ignore[literal-required]
    if kind == "categorical":
        _add_agreement(change, texts_a, texts_b)
    return change


def _add_agreement(change: ObsChange, texts_a: np.ndarray, texts_b: np.ndarray) -> None:
    """A clustering's agreement and whole contingency table (labels that differ may still group the same cells)."""
    table = crosstab(texts_a, texts_b)
    if table is not None:
        change["agreement"] = agreement(table)
        change["contingency"] = contingency_payload(table)


def _texts(series: pd.Series) -> np.ndarray:
    """Values as text, None for missing; categorical columns through their categories (fast)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = value_texts(pd.Series(series.cat.categories)).tolist()
        lookup = np.array([*categories, None], dtype=object)
        codes = series.cat.codes.to_numpy()
        return lookup[np.where(codes < 0, len(categories), codes)]
    texts: np.ndarray = value_texts(series).to_numpy(dtype=object)  # pandas is untyped here
    return texts


def _or_none(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _counts(texts: np.ndarray) -> tuple[dict[str, int], int]:
    """The MAX_COUNTS most frequent values with their cells, and how many cells hold the other values.

    Why: a column of hundreds of thousands of distinct values (cell names, say) would
    otherwise send each one; the reply stays small and says what it left out.
    """
    counts = pd.Series(texts, dtype=object).dropna().value_counts(sort=True)
    kept = counts.iloc[:MAX_COUNTS]
    return {str(k): int(v) for k, v in kept.items()}, int(counts.iloc[MAX_COUNTS:].sum())


def _numeric_change(column: str, a: pd.Series, b: pd.Series) -> ObsChange | None:
    va = a.to_numpy(dtype=float, na_value=np.nan)
    vb = b.to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        differs = ~((va == vb) | (np.isnan(va) & np.isnan(vb)))
    n_changed = int(differs.sum())
    if not n_changed:
        return None
    delta = (vb - va)[differs]
    delta = delta[np.isfinite(delta)]
    change: ObsChange = {
        "column": column,
        "kind": "numeric",
        "n_changed": n_changed,
        "max_abs_delta": float(np.abs(delta).max()) if delta.size else None,
    }
    if delta.size:
        change["delta_histogram"] = histogram(delta)
    return change


def histogram(values: np.ndarray, bins: int = HISTOGRAM_BINS) -> Histogram:
    """Counts of finite ``values`` in equal bins (fewer bins for few distinct values).

    Why: deltas near the float limits span more than a float holds (max - min overflows), and
    a range tiny beside its values cannot be cut into bins; such values are binned at half
    scale, or counted in one bin, instead of failing the whole comparison.
    """
    values = values[np.isfinite(values)]
    if not values.size:
        return {"edges": [], "counts": []}
    bins = max(1, min(bins, len(np.unique(values))))
    low, high = float(values.min()), float(values.max())
    scale = 1.0 if np.isfinite(high - low) else 0.5
    try:
        counts, edges = np.histogram(values * scale, bins=bins)
    except ValueError:  # too many bins for a range this narrow at this magnitude
        counts, edges = np.array([values.size]), np.array([low * scale, high * scale])
    limit = np.finfo(np.float64).max
    return {"edges": [float(np.clip(e / scale, -limit, limit)) for e in edges], "counts": [int(c) for c in counts]}


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


NOT_SMALL = object()


def small_value(value: Any) -> Any:
    """``value`` as JSON when a person can read it at a glance (text, a number, a short list); else a marker."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else NOT_SMALL
    if value is None or isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return json_scalar(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        items = (
            list(np.asarray(value, dtype=object).ravel())
            if isinstance(value, np.ndarray) and value.ndim == 1
            else value
        )
        if isinstance(value, np.ndarray) and value.ndim != 1:
            return NOT_SMALL
        if len(items) > MAX_ITEMS:
            return NOT_SMALL
        shown = [small_value(item) for item in items]
        return NOT_SMALL if any(item is NOT_SMALL or isinstance(item, (list, dict)) for item in shown) else shown
    return NOT_SMALL


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


#: The label of the cells whose value did not change ("Show on tissue" draws them grey).
UNCHANGED = "unchanged"
#: A cell of B that A does not hold.
NEW_CELL = "new cell"
#: A cell of a clustering whose label changed but which stayed with its group (on a matched pair).
RENAMED = "renamed, same group"


def transition_labels(column: str, a: pd.Series, b: pd.Series, *, moved_only: bool = False) -> pd.Series:
    """Each cell of B (in B's order) labeled by what happened to ``column`` from A to B.

    ``"a → b"`` for a changed categorical, boolean or string value (missing as ``(missing)``),
    ``"changed"`` for a changed number, ``unchanged`` or ``new cell``. With ``moved_only``, for
    a categorical column (a clustering), ``"a → b"`` marks only the cells off the matched label
    pairs (those that moved); a cell whose label was only renamed with its group is
    ``renamed, same group``.
    The categories come largest first with the quiet ones last, the order the legend shows. Cells are matched as
    ``compare`` matches them: by obs index, by position when an index repeats names.
    """
    if a.index.equals(b.index):  # same names in the same order: either rule matches by position
        where = np.arange(len(b))
    elif a.index.is_unique and b.index.is_unique:
        where = a.index.get_indexer(b.index)
    else:
        where = np.where(np.arange(len(b)) < len(a), np.arange(len(b)), -1)
    present = where >= 0
    labels = np.full(len(b), NEW_CELL, dtype=object)
    if _kind(a, b) == "numeric":
        va = pd.to_numeric(a, errors="coerce").to_numpy(dtype=float, na_value=np.nan)[where[present]]
        vb = pd.to_numeric(b, errors="coerce").to_numpy(dtype=float, na_value=np.nan)[present]
        with np.errstate(invalid="ignore"):
            same = (va == vb) | (np.isnan(va) & np.isnan(vb))
        labels[present] = np.where(same, UNCHANGED, "changed")
    else:
        ta = pd.Series(_texts(a)[where[present]], dtype=object)
        tb = pd.Series(_texts(b)[present], dtype=object)
        same = ((ta == tb) | (ta.isna() & tb.isna())).to_numpy()
        pairs = (ta.fillna("(missing)") + " → " + tb.fillna("(missing)")).to_numpy(dtype=object)
        labels[present] = np.where(same, UNCHANGED, pairs)
        # a clustering: only the cells that left their group moved (as ``n_moved`` counts them)
        moved = moved_cells(ta.to_numpy(), tb.to_numpy()) if moved_only and _kind(a, b) == "categorical" else None
        if moved is not None:
            labels[present] = np.where(moved, pairs, np.where(same, UNCHANGED, RENAMED))
    counts = pd.Series(labels, dtype=object).value_counts()
    quiet = (RENAMED, NEW_CELL, UNCHANGED)
    order = [str(k) for k in counts.index if k not in quiet]
    order += [k for k in quiet if k in counts.index]
    return pd.Series(pd.Categorical(labels, categories=order), index=b.index, name=column)
