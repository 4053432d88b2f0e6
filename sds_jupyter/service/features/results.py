"""Saved results: ``results``, ``result_page`` and ``result_csv``; and one table as a DataFrame for notebooks."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.errors import ResultError, StackError
from sds_jupyter.protocol.types import (
    Column,
    ResultCsv,
    ResultMeta,
    ResultPage,
    ResultsData,
    ResultSummary,
    ResultTableSummary,
)
from sds_jupyter.service.errormap import RequestError, error_payload
from sds_jupyter.service.session import Session
from sds_jupyter.studio.charts import default_chart, with_index_column
from sds_jupyter.studio.figurespecs import read_figures
from sds_jupyter.studio.jsonable import json_scalar, jsonable
from sds_jupyter.studio.palette import recolor_chart
from sds_jupyter.studio.resultstore import MAIN_TABLE, ResultEntry, ResultTable, read_result, read_results

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "csv_name",
    "csv_text",
    "result_csv",
    "result_page",
    "result_table",
    "results",
    "sorted_rows",
]

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

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


def _columns(frame: pd.DataFrame) -> list[Column]:
    return [{"name": str(name), "dtype": str(dtype)} for name, dtype in frame.dtypes.items()]


def _result_summary(
    result: ResultEntry, palettes: Callable[[], Mapping[str, Mapping[str, str]]] | None = None
) -> ResultSummary:
    tables: list[ResultTableSummary] = [
        {"name": name, "n_rows": len(frame), "columns": _columns(with_index_column(frame))}
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


def results(session: Session, version: int | str | None = None) -> ResultsData:
    """Every saved result with its tables' shapes and a default chart for its kind."""
    try:
        uns = session.studio_uns(version, "all")
    except StackError as exc:
        return {"results": [], "error": error_payload(exc)}
    palettes = session.lazy_palettes(version, read_figures(uns))
    return {"results": [_result_summary(result, palettes) for result in read_results(uns)]}


def result_table(
    session: Session, result: str, table: str = MAIN_TABLE, version: int | str | None = None
) -> ResultTable:
    """One table of a saved result as a DataFrame with the result's meta as ``.meta`` (for notebooks)."""
    entry = read_result(session.studio_uns(version, [result]), result)
    return ResultTable.of(entry.table(table), entry.meta)


def _result_frame(
    session: Session,
    version: int | str | None,
    result: str,
    table: str,
    sort: str | None,
    descending: bool,
    filter: str | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A result table (index as a column), and the same filtered and sorted as shown."""
    if not result:
        raise RequestError("The request needs a result id.")
    full = with_index_column(read_result(session.studio_uns(version, [result]), result).table(table))
    frame = full
    if filter:
        frame = _filtered(frame, filter)
    if sort:
        if sort not in frame.columns:
            raise RequestError(f"Cannot sort by {sort!r}: the table has no such column.")
        frame = sorted_rows(frame, sort, descending)
    return full, frame


def result_page(
    session: Session,
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
    full, frame = _result_frame(session, version, result, table, sort, descending, filter)
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
    session: Session,
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
    _, frame = _result_frame(session, version, result, table, sort, descending, filter)
    return {"csv": csv_text(frame), "filename": csv_name(result, table), "rows": len(frame)}


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


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV: every float with all its digits, formula-like texts (cells and headers) defused."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(_csv_safe)
    # headers are written as text too: a column named "=cmd()" is data, never a formula
    safe.columns = [_csv_safe(str(name)) for name in safe.columns]
    text: str = safe.to_csv(index=False, lineterminator="\n", float_format=None)  # pandas is untyped here
    return text


def csv_name(result: str, table: str) -> str:
    """A download file name from the result id and table name (safe characters only)."""
    stem = f"{result}" if table == MAIN_TABLE else f"{result}-{table}"
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).strip("._") or "result"
    return f"{cleaned[:100]}.csv"


def sorted_rows(frame: pd.DataFrame, column: str, descending: bool) -> pd.DataFrame:
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
