"""Analysis results kept in ``uns["spatial_data_studio"]["results"][<id>]``.

Each result holds its main dataframe under ``"table"``, optional further
dataframes beside it, and a JSON string ``"meta"`` saying what made it. A
result with no readable meta is still listed, with the reason in ``error``, so
the tables stay visible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from sds_jupyter.errors import ResultError
from sds_jupyter.jsontext import JSONRefused, loads_spec
from sds_jupyter.studio.uns import RESULTS_KEY, as_text, studio_part

__all__ = ["MAIN_TABLE", "META_KEY", "ResultEntry", "ResultTable", "as_dataframe", "read_result", "read_results"]

MAIN_TABLE = "table"
META_KEY = "meta"


@dataclass
class ResultEntry:
    """One result: its meta (parsed), its dataframes by name, and why meta is unusable."""

    id: str
    meta: dict[str, Any] | None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    error: str | None = None

    @property
    def kind(self) -> str | None:
        value = (self.meta or {}).get("kind")
        return value if isinstance(value, str) else None

    @property
    def title(self) -> str | None:
        value = (self.meta or {}).get("title")
        return value if isinstance(value, str) else None

    def table(self, name: str = MAIN_TABLE) -> pd.DataFrame:
        """A table of this result by name; ResultError naming the ones it has otherwise."""
        if name not in self.tables:
            have = ", ".join(sorted(self.tables)) or "none"
            raise ResultError(f"Result {self.id!r} has no table {name!r} (tables: {have}).")
        return self.tables[name]


class ResultTable(pd.DataFrame):
    """A result's table as a DataFrame that also carries the result's meta as ``.meta``.

    ``.meta`` is a dict (also in ``.attrs["meta"]``), so a notebook gets the
    table and what made it in one value.
    """

    _metadata: ClassVar[list[str]] = ["meta"]

    @property
    def _constructor(self) -> type[ResultTable]:
        return ResultTable

    @classmethod
    def of(cls, frame: pd.DataFrame, meta: dict[str, Any] | None) -> ResultTable:
        """A copy of ``frame`` with ``meta`` attached (an empty dict when the result has none)."""
        table = cls(frame.copy())
        table.meta = dict(meta or {})
        table.attrs["meta"] = table.meta
        return table


def as_dataframe(value: Any) -> pd.DataFrame | None:
    """``value`` as a pandas DataFrame, or None when it is not tabular.

    Lazily read AnnData hands back xarray-backed dataframes; those are brought
    into memory here, since result tables are small next to the cells.
    """
    if isinstance(value, pd.DataFrame):
        return value
    for method in ("to_memory", "to_pandas", "to_dataframe"):
        convert = getattr(value, method, None)
        if callable(convert):
            try:
                converted = convert()
            except Exception:  # noqa: BLE001 - a value we cannot convert is simply not a table
                continue
            if isinstance(converted, pd.DataFrame):
                return converted
    return None


def _parse_meta(result_id: str, raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    if raw is None:
        return None, f"Result {result_id!r} has no meta, so its kind and title are unknown."
    text = as_text(raw)
    if text is None:
        return None, f"The meta of result {result_id!r} is not a JSON string."
    try:
        meta = loads_spec(text)
    except JSONRefused as exc:
        return None, f"The meta of result {result_id!r} is not JSON this app reads: {exc}."
    if not isinstance(meta, dict):
        return None, f"The meta of result {result_id!r} is not a JSON object."
    return meta, None


def _read_entry(result_id: str, raw: Any) -> ResultEntry:
    if not isinstance(raw, Mapping):
        return ResultEntry(result_id, None, {}, f"Result {result_id!r} is not a group of tables.")
    meta, error = _parse_meta(result_id, raw.get(META_KEY))
    tables = {
        str(name): frame
        for name, value in raw.items()
        if name != META_KEY and (frame := as_dataframe(value)) is not None
    }
    if MAIN_TABLE in tables:
        tables = {MAIN_TABLE: tables.pop(MAIN_TABLE), **tables}
    elif error is None:
        error = f"Result {result_id!r} has no main table."
    return ResultEntry(result_id, meta, tables, error)


def read_results(uns: Mapping[str, Any]) -> list[ResultEntry]:
    """Every result in ``uns``, in stored order (none when the table has no studio section)."""
    return [_read_entry(str(key), value) for key, value in studio_part(uns, RESULTS_KEY).items()]


def read_result(uns: Mapping[str, Any], result_id: str) -> ResultEntry:
    """One result by id; ResultError when there is no such result."""
    results = studio_part(uns, RESULTS_KEY)
    if result_id not in results:
        raise ResultError(f"No result {result_id!r} in this version.")
    return _read_entry(result_id, results[result_id])
