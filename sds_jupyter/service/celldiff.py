"""How one column of a table differs between two versions, in the terms of the cells; a value shown when small.

Shared by three features: ``compare`` (every changed column of a table), ``history`` (what one
operation changed) and ``cells`` (a figure coloured by what happened to each cell). Cells are
matched by obs index (by position only when an index repeats names), missing equals missing,
and categorical values are compared by their text, so reordering categories changes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.limits import MAX_COUNTS
from sds_jupyter.protocol.types import Histogram, ObsChange, Transition
from sds_jupyter.service.agreement import agreement, contingency_payload, crosstab, moved_cells
from sds_jupyter.service.columns import column_kind, value_texts
from sds_jupyter.studio.jsonable import json_scalar

__all__ = [
    "MAX_TRANSITIONS",
    "NEW_CELL",
    "NOT_SMALL",
    "RENAMED",
    "UNCHANGED",
    "histogram",
    "obs_change",
    "small_value",
    "transition_labels",
]

#: Transitions beyond this many pairs are cut (``n_transitions`` keeps the total).
MAX_TRANSITIONS = 200
#: Bins of the histogram of numeric differences.
HISTOGRAM_BINS = 20
#: Values longer than this (text) or with more items (lists) are not shown.
MAX_TEXT = 400
MAX_ITEMS = 20


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
