"""Obs columns described the way a biologist reads them: kind, counts or a summary.

Shared by ``compare`` (columns added or removed, transitions of a changed
column) and ``contents`` (every column of a table), so both say the same thing
about the same column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.protocol.types import ColumnSummary, NumericSummary

__all__ = ["MAX_VALUES", "column_kind", "column_summary", "numeric_summary", "value_texts"]

#: Value counts beyond this many distinct values are cut (the count of the rest is kept).
MAX_VALUES = 50


def column_kind(series: pd.Series) -> str:
    """``categorical``, ``boolean``, ``numeric`` or ``string``: how the column's values read."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_numeric_dtype(series):
        return "numeric"
    return "string"


def value_texts(series: pd.Series) -> pd.Series:
    """Each value as text (object dtype), missing values as None: the form transitions use."""
    values = series.astype(object)
    missing = pd.isna(values)
    texts = values.map(_text)
    texts[missing] = None
    return texts


def _text(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value)) if abs(float(value)) < 1e15 else str(value)
    return str(value)


def numeric_summary(values: np.ndarray) -> NumericSummary | None:
    """min, median, mean and max of the finite values; None when there are none."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return None
    return {
        "min": float(finite.min()),
        "median": float(np.median(finite)),
        "mean": float(finite.mean()),
        "max": float(finite.max()),
    }


def column_summary(name: str, series: pd.Series) -> ColumnSummary:
    """One column: its kind, dtype, missing count, and value counts or a numeric summary."""
    kind = column_kind(series)
    summary: ColumnSummary = {
        "column": name,
        "kind": kind,  # type: ignore[typeddict-item]
        "dtype": str(series.dtype),
        "n": len(series),
        "n_missing": int(series.isna().sum()),
    }
    if kind == "numeric":
        numeric = numeric_summary(series.to_numpy(dtype=float, na_value=np.nan))
        if numeric is not None:
            summary["summary"] = numeric
        return summary
    counts = _counts(series)
    summary["n_values"] = len(counts)
    summary["counts"] = [{"value": value, "count": n} for value, n in counts[:MAX_VALUES]]
    return summary


def _counts(series: pd.Series) -> list[tuple[str, int]]:
    """(value as text, cells) pairs: categories in their stored order, else most frequent first.

    Values are counted first and only the distinct ones turned into text: a
    100,000-cell column costs one pass in numpy or pandas, not 100,000 calls.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        n = np.bincount(codes[codes >= 0], minlength=len(series.cat.categories))
        # every category, even unused ones, in the stored category order
        return [(_text(c), int(k)) for c, k in zip(series.cat.categories, n, strict=True)]
    counted = series.value_counts(dropna=True, sort=True)
    merged: dict[str, int] = {}
    for value, n in counted.items():
        text = _text(value)
        merged[text] = merged.get(text, 0) + int(n)
    return sorted(merged.items(), key=lambda item: -item[1])
