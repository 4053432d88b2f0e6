"""The values behind a version's ops, so its changes read as sentences.

An op in layer.json names what it set ("set-obs regions"), not what it set
it to. The browser wants "Set obs regions (categorical: core 80, margin 75)",
so each op is paired here with the value it left in the version: a column's
counts or summary, a short uns value, a figure's or a result's title. A
clustering set again is read against the one below it, so a renaming reads as
one ("same cells, new names") rather than as every cell changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import zarr
from anndata.io import read_elem

from sds_jupyter.errors import StackError
from sds_jupyter.protocol.types import OpDetail
from sds_jupyter.service.celldiff import NOT_SMALL, obs_change, small_value
from sds_jupyter.service.columns import column_kind, column_summary
from sds_jupyter.studio.figurespecs import read_figure
from sds_jupyter.studio.resultstore import MAIN_TABLE, read_result
from sds_jupyter.studio.tableview import TableView
from sds_jupyter.studio.uns import FIGURES_KEY, RESULTS_KEY, STUDIO_KEY

__all__ = ["op_details"]


ViewOf = Callable[[str | None], TableView]


def op_details(ops: list[dict[str, Any]], view_of: ViewOf, below_of: ViewOf) -> list[OpDetail]:
    """One detail per op (empty when there is nothing more to say or it cannot be read).

    ``below_of`` opens the table in the version below, which says whether a
    figure or result was added or replaced, and the title of a deleted figure.
    """
    out: list[OpDetail] = []
    for op in ops:
        table = op.get("table")
        name = table if isinstance(table, str) else None
        try:
            detail = _detail(op, view_of(name))
        except (StackError, KeyError, ValueError, TypeError):
            detail = {}
        try:
            below = below_of(name)
            detail.update(_below(op, below))
            detail.update(_regrouped(op, view_of(name), below))
        except (StackError, KeyError, ValueError, TypeError):
            pass
        out.append(detail)
    return out


def _has(view: TableView, path: str) -> bool:
    try:
        view.group[path]
    except KeyError:
        return False
    return True


def _below(op: dict[str, Any], below: TableView) -> OpDetail:
    """What the version below says about the op's target: did it exist, what was its title."""
    name = op.get("op")
    if name == "set-figure" and isinstance(op.get("figure"), str):
        return {"existed": _has(below, f"uns/{STUDIO_KEY}/{FIGURES_KEY}/{op['figure']}")}
    if name == "set-uns" and isinstance(op.get("result"), str):
        return {"existed": _has(below, f"uns/{STUDIO_KEY}/{RESULTS_KEY}/{op['result']}")}
    if name == "delete-figure" and isinstance(op.get("figure"), str):
        return {"title": read_figure(below.studio_uns(), op["figure"]).title}
    return {}


def _regrouped(op: dict[str, Any], view: TableView, below: TableView) -> OpDetail:
    """A categorical column set over one below: how its groups relate (renamed only, or cells moved)."""
    column = op.get("column")
    if op.get("op") != "set-obs" or not isinstance(column, str):
        return {}
    now, before = view.obs_named_column(column), below.obs_named_column(column)
    if column_kind(now) != "categorical" or column_kind(before) != "categorical":
        return {}
    change = obs_change(column, before, now)
    return {"agreement": change["agreement"]} if change is not None and "agreement" in change else {}


def _detail(op: dict[str, Any], view: TableView) -> OpDetail:
    name = op.get("op")
    if name == "set-obs" and isinstance(op.get("column"), str) and op.get("kind") != "index":  # the index: no column
        return {"column": column_summary(op["column"], view.obs_column(op["column"]))}
    if name == "set-obsm" and isinstance(op.get("key"), str):
        node = view.group[f"obsm/{op['key']}"]
        return {"shape": [int(n) for n in node.shape]} if isinstance(node, zarr.Array) else {}
    if name == "set-figure" and isinstance(op.get("figure"), str):
        figure = read_figure(view.studio_uns(), op["figure"])
        return {"title": figure.title, "kind": figure.kind}
    if name == "set-uns" and isinstance(op.get("result"), str):
        result = read_result(view.studio_uns([op["result"]]), op["result"])
        method = (result.meta or {}).get("method")
        detail: OpDetail = {
            "title": result.title,
            "kind": result.kind,
            "method": method if isinstance(method, str) else None,
        }
        if MAIN_TABLE in result.tables:
            detail["n_rows"] = len(result.tables[MAIN_TABLE])
        return detail
    if name == "set-uns" and isinstance(op.get("key"), str):
        value = small_value(read_elem(view.group[f"uns/{op['key']}"]))
        return {} if value is NOT_SMALL else {"value": value}
    return {}
