"""Save an edited AnnData as a new version: only what differs, through the writer.

An analyst opens a version's table, computes, and wants the result back as a
version. :func:`save_version` compares the AnnData with the table it came from,
element by element, and turns each difference into one of the format's ops on
a :class:`~sds_jupyter.stack.write.writer.VersionWriter`. Objects that did not change
are never rewritten. A change the ops cannot express (X, layers, var, cells...)
is refused as a whole before anything is written, so a save either keeps every
edit or writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.errors import StackError
from sds_jupyter.jsontext import JSONRefused, loads_spec
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.open import open_table_group
from sds_jupyter.stack.opened import (
    Opened,
    column_print,
    exact_print,
    fingerprint,
    opened_record,
    same_scalar_held,
    stored_index_name,
)
from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.store import StackStore
from sds_jupyter.stack.write.writer import STUDIO_KEY, VersionWriter

__all__ = ["SavePlan", "commit_plan", "obs_column_plan", "plan_save", "save_version"]

Folders = str | Mapping[str, str] | None
Op = Callable[[VersionWriter], None]

# Elements of an AnnData that no op of the format can change.
_FIXED_MATRICES = ("X",)
_FIXED_MAPPINGS = ("layers", "obsp", "varm", "varp")


@dataclass
class SavePlan:
    """What a save would write (``ops``, in order) and what it cannot (``refused``)."""

    ops: list[Op] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def add(self, text: str, op: Op) -> None:
        self.summary.append(text)
        self.ops.append(op)


def save_version(
    path: str | os.PathLike[str] | Stack,
    adata: Any,
    *,
    title: str,
    message: str | None = None,
    table: str = "table",
    folders: Folders = None,
    created_by: str | None = None,
    into: str | os.PathLike[str] | None = None,
    caches: StackCaches | None = None,
) -> Path:
    """Save what ``adata`` changed in the version at ``path`` as a new version on it.

    Returns the new version's folder, beside its parent in the same datasets folder;
    in ``into`` if given, or in the versions folder (``$SDS_VERSIONS_DIR``, else
    ``~/sds-versions``) when the parent's folder is read-only, as in a Cirro workspace.
    ``created_by`` defaults to ``$SDS_USER``, then ``$JUPYTERHUB_USER``, then the
    login name. Raises :class:`~sds_jupyter.errors.StackError` naming every change
    a version cannot hold (X, layers, var, obsp, varm, varp, raw, removed obsm
    keys, cells added, removed or reordered), or when nothing changed; nothing
    is written then. ``caches`` are those ``adata`` was opened with (see
    :func:`~sds_jupyter.stack.open.open_anndata`; the process's when None): what the
    open remembered there spares reading the version again to compare.
    """
    stack = path if isinstance(path, Stack) else Stack.resolve(path, folders=folders, caches=caches)
    VersionWriter(stack)  # refuses object storage and Zarr v2 bases before anything is compared
    plan = plan_save(stack, adata, table, caches)
    label = _label(stack)
    if plan.refused:
        raise StackError(
            f"cannot save this AnnData as a version of {label}: {'; '.join(plan.refused)}. "
            "A version can add, change or delete obs columns, obsm entries, uns entries, figures and "
            "results only; undo those changes, or write a new store with spatialdata"
        )
    if not plan.ops:
        raise StackError(f"nothing to save: this AnnData is the same as table {table!r} of {label}")
    return commit_plan(stack, plan, title=title, message=message, created_by=created_by, into=into, caches=caches)


def commit_plan(
    stack: Stack,
    plan: SavePlan,
    *,
    title: str,
    message: str | None = None,
    created_by: str | None = None,
    into: str | os.PathLike[str] | None = None,
    caches: StackCaches | None = None,
) -> Path:
    """Write ``plan``'s ops as one new version on ``stack``'s top; return its folder.

    The one place a save writes, whoever planned it (:func:`save_version` from an
    AnnData, an annotation drawn on the tissue from a column): so both go to the same
    folder, by the workspace's rules when the parent's folder is read-only.
    """
    if plan.refused or not plan.ops:
        raise StackError("nothing to save: the plan has no change a version can hold")
    writer = VersionWriter(stack, caches=caches)
    for op in plan.ops:
        op(writer)
    return writer.commit(into=into, title=title, message=message, created_by=created_by)


def obs_column_plan(table: str, column: str, values: pd.Series, *, existed: bool) -> SavePlan:
    """A plan of one ``set-obs``: ``column`` of table ``table`` set to ``values``."""
    plan = SavePlan()
    plan.add(f"obs column {column!r} {'changed' if existed else 'added'}", _set_obs(table, column, values))
    return plan


def plan_save(stack: Stack, adata: Any, table: str = "table", caches: StackCaches | None = None) -> SavePlan:
    """Compare ``adata`` with table ``table`` of ``stack``'s top; return the ops and refusals.

    ``caches`` hold the record of ``adata``'s open, if it was opened with them.
    """
    _check_in_memory(adata)
    parent = _Parent(stack, table, opened_record(adata, stack, table, caches), caches)
    if not parent.has_obs():
        raise StackError(f"table {table!r} of this version has no obs; it is not an AnnData table")
    plan = SavePlan()
    if not _diff_fixed(parent, adata, plan):
        return plan  # per-cell values cannot be compared across different cells
    _diff_obs(parent, adata, table, plan)
    _diff_obsm(parent, adata, table, plan)
    _diff_uns(parent, adata, table, plan)
    return plan


class _Parent:
    """The version's table as the diff asks about it: from what was read at open, else from the store.

    With a record of the AnnData's open (:mod:`~sds_jupyter.stack.opened`) an element
    whose fingerprint still matches is the same without reading it; every other
    element is read from the store, alone, and compared value by value.
    """

    def __init__(self, stack: Stack, table: str, record: Opened | None, caches: StackCaches | None = None) -> None:
        self.stack = stack
        self.table = table
        self.record = record
        self.caches = caches
        self._obs: pd.DataFrame | None = None
        self._group: Any = None

    @property
    def group(self) -> Any:
        """The table's zarr group, opened when something must be read (never, when all prints match)."""
        if self._group is None:
            self._group = open_table_group(StackStore(self.stack, caches=self.caches), self.table)
        return self._group

    def has_obs(self) -> bool:
        return self.record is not None or "obs" in self.group

    def obs(self) -> pd.DataFrame:
        if self._obs is None:
            self._obs = _read(self.group, "obs")  # read once: the cell check and the column diff both need it
        return self._obs

    def obs_names(self) -> pd.Index:
        return pd.Index(self.record.obs_names) if self.record else self.obs().index

    def same_cells(self, names: pd.Index) -> bool:
        if self.record is None:
            return bool(names.equals(self.obs().index))
        if self.record.same_names_held(names):
            return True  # the very array read, still read-only: no name can differ
        mine, known = names.to_numpy(), self.record.obs_names
        # a plain comparison of the names is several times quicker than Index.equals
        if mine.dtype == object and len(mine) == len(known) and np.array_equal(mine, known):
            return True
        return bool(names.equals(pd.Index(self.record.obs_names)))

    def obs_columns(self) -> list[str]:
        return list(self.record.columns) if self.record else [str(c) for c in self.obs().columns]

    def same_column(self, column: str, values: pd.Series) -> bool:
        if self.record is not None:
            known = self.record.columns.get(column)
            exact = self.record.exact.get(column)
            if exact is not None and exact_print(values) == exact:
                return True  # the very bytes read: no copy to print
            if known is not None:  # a numeric or categorical column: its print decides
                return bool(column_print(values) == known)
            return _same_series(values, pd.Series(_read(self.group["obs"], column)))
        return _same_series(values, self.obs()[column])

    def obs_index_name(self) -> str | None:
        """The name obs stores the cell names under (``_index`` unless anndata kept the index's name)."""
        if self.record is not None:
            return self.record.obs_index
        return stored_index_name(self.group)

    def var(self) -> pd.DataFrame | None:
        return self.record.var if self.record else _read(self.group, "var")

    def keys(self, name: str) -> set[str]:
        if self.record is not None:
            return set(self.record.keys[name])
        return set(self.group[name].keys()) if name in self.group else set()

    def read(self, path: str) -> Any:
        return _read(self.group, path)

    def same(self, path: str, value: Any, compare: Callable[[Any, Any], bool] | None = None) -> bool:
        """Whether ``value`` is what the version holds at ``path`` (``X``, ``layers/counts``...)."""
        if self.record is not None:
            known = self.record.prints.get(path)
            if known is not None and (same_scalar_held(known, value) or fingerprint(value) == known):
                return True
        return (compare or _same_value)(value, _read(self.group, path))

    def has_raw(self) -> bool:
        if self.record is not None:
            return self.record.has_raw
        return "raw" in self.group and "X" in self.group["raw"]  # anndata writes an empty group for no raw

    def raw_var(self) -> pd.DataFrame | None:
        return self.record.raw_var if self.record else _read(self.group, "raw/var")


def _label(stack: Stack) -> str:
    top = stack.top
    return "the base store" if top is None else f"v{stack.depth} {top.label!r}"


def _check_in_memory(adata: Any) -> None:
    import anndata

    if not isinstance(adata, anndata.AnnData):
        raise StackError(f"save_version needs an AnnData, not {type(adata).__name__}")
    if getattr(adata, "isbacked", False) or not isinstance(adata.obs, pd.DataFrame):
        raise StackError(
            "this AnnData is read lazily or backed by a file; load it first (adata.to_memory()) and save that"
        )


# -- reading the parent's elements -------------------------------------------------------


def _read(group: Any, key: str) -> Any:
    """The parent's element ``key`` as anndata reads it, or None when absent."""
    import anndata

    if key not in group:
        return None
    return anndata.io.read_elem(group[key])


# -- what no op can change ----------------------------------------------------------------


def _diff_fixed(parent: _Parent, adata: Any, plan: SavePlan) -> bool:
    """Refuse changes to what no op can write; return whether the cells are the same."""
    names = adata.obs_names
    same_cells = False
    if len(names) != len(parent.obs_names()):
        plan.refused.append(f"cells added or removed ({len(parent.obs_names())} in the version, {len(names)} here)")
    elif not parent.same_cells(names):
        same_set = set(names) == set(parent.obs_names())
        plan.refused.append("cells reordered" if same_set else "cells renamed or replaced (obs_names differ)")
    else:
        same_cells = True
    var = parent.var()
    if var is None or not _same_frame(adata.var, var, check_index=True):
        plan.refused.append("var changed (genes or their annotations)")
    if same_cells and not parent.same("X", adata.X, _same_matrix):
        plan.refused.append("X changed")
    for name in _FIXED_MAPPINGS:
        changed = _changed_keys(getattr(adata, name), parent, name)
        if changed:
            plan.refused.append(f"{name} changed ({', '.join(repr(k) for k in changed)})")
    if not _same_raw(adata, parent):
        plan.refused.append("raw changed")
    return same_cells


def _changed_keys(mine: Mapping[str, Any], parent: _Parent, name: str) -> list[str]:
    """Keys of an aligned mapping (layers, obsp...) that differ from the parent's."""
    parent_keys = parent.keys(name)
    # anndata 0.13 lists X as layers[None]: X is compared on its own
    keys = {key for key in mine if key is not None}
    changed = sorted(keys ^ parent_keys)
    for key in sorted(keys & parent_keys):
        if not parent.same(f"{name}/{key}", mine[key]):
            changed.append(key)
    return changed


def _same_raw(adata: Any, parent: _Parent) -> bool:
    raw = adata.raw
    has_raw = parent.has_raw()
    if raw is None or not has_raw:
        return raw is None and not has_raw
    return parent.same("raw/X", raw.X, _same_matrix) and _same_frame(raw.var, parent.raw_var(), check_index=True)


# -- obs, obsm, uns: the ops ----------------------------------------------------------------


def _diff_obs(parent: _Parent, adata: Any, table: str, plan: SavePlan) -> None:
    parent_columns = parent.obs_columns()
    if not _obs_names_fit(adata.obs, parent, plan):
        return
    _diff_index_name(parent, adata.obs, table, plan)
    for column in adata.obs.columns:
        values = adata.obs[column]
        if column not in parent_columns:
            plan.add(f"obs column {column!r} added", _set_obs(table, column, values))
        elif not parent.same_column(column, values):
            plan.add(f"obs column {column!r} changed", _set_obs(table, column, values))
    for column in parent_columns:
        if column not in adata.obs.columns:
            plan.add(f"obs column {column!r} deleted", _op(VersionWriter.delete_obs, table, column))
    kept = [c for c in parent_columns if c in adata.obs.columns]
    saved_order = kept + [c for c in adata.obs.columns if c not in parent_columns]
    if saved_order != list(adata.obs.columns):
        plan.refused.append(
            "obs columns reordered (a version keeps the order of its parent's columns, new ones after "
            f"them: {', '.join(repr(c) for c in saved_order)}); put them in that order"
        )


def _diff_index_name(parent: _Parent, obs: pd.DataFrame, table: str, plan: SavePlan) -> None:
    """The obs index's name, as anndata keeps it (the node of the cell names; None is ``_index``)."""
    stored, name = parent.obs_index_name(), obs.index.name
    if stored is None or (name if name is not None else "_index") == stored:
        return
    if name is not None and not isinstance(name, str):
        plan.refused.append(f"obs index named by a {type(name).__name__} ({name!r}); name it with text")
        return
    if name in obs.columns:
        plan.refused.append(
            f"obs index name {name!r} is also the name of an obs column (anndata cannot write that either); "
            "rename one of them"
        )
        return
    shown = "no name" if name in (None, "_index") else repr(name)
    plan.add(f"obs index renamed to {shown}", _op(VersionWriter.set_obs_index_name, table, name))


def _obs_names_fit(obs: pd.DataFrame, parent: _Parent, plan: SavePlan) -> bool:
    """Refuse obs column names a version cannot store apart: not text, or the same once written."""
    fit = True
    for column in obs.columns:
        if not isinstance(column, str):
            plan.refused.append(
                f"obs column {column!r} is named by a {type(column).__name__}, stored as {str(column)!r}; "
                "name it with text"
            )
            fit = False
    for column in sorted({c for c in obs.columns if isinstance(c, str) and list(obs.columns).count(c) > 1}):
        plan.refused.append(f"obs has two columns named {column!r}; a version stores one: rename one")
        fit = False
    index_name = parent.obs_index_name()
    if index_name is not None and index_name in obs.columns:
        plan.refused.append(
            f"obs column {index_name!r} has the name the version stores its cell names under; rename the column"
        )
        fit = False
    return fit


def _op(method: Callable[..., object], *args: Any) -> Op:
    """``method(writer, *args)`` as an op: the arguments are bound now, not when the plan runs."""

    def run(writer: VersionWriter) -> None:
        method(writer, *args)

    return run


def _set_obs(table: str, column: Any, values: pd.Series) -> Op:
    return lambda writer: writer.set_obs(table, str(column), values)


def _diff_obsm(parent: _Parent, adata: Any, table: str, plan: SavePlan) -> None:
    parent_keys = parent.keys("obsm")
    for key, value in adata.obsm.items():
        if key not in parent_keys:
            plan.add(f"obsm {key!r} added", _op(VersionWriter.set_obsm, table, key, value))
        elif not parent.same(f"obsm/{key}", value):
            plan.add(f"obsm {key!r} changed", _op(VersionWriter.set_obsm, table, key, value))
    removed = sorted(parent_keys - set(adata.obsm.keys()))
    if removed:
        plan.refused.append(f"obsm {', '.join(repr(k) for k in removed)} removed (a version cannot delete obsm)")


def _diff_uns(parent: _Parent, adata: Any, table: str, plan: SavePlan) -> None:
    parent_keys = parent.keys("uns")
    for key, value in adata.uns.items():
        if key == STUDIO_KEY:
            if key in parent_keys and parent.same(f"uns/{key}", value):
                continue
            studio = parent.read(f"uns/{key}") if key in parent_keys else {}
            _diff_studio(value, studio if isinstance(studio, Mapping) else {}, table, plan)
        elif key not in parent_keys:
            plan.add(f"uns {key!r} added", _op(VersionWriter.set_uns, table, key, value))
        elif not parent.same(f"uns/{key}", value):
            plan.add(f"uns {key!r} changed", _op(VersionWriter.set_uns, table, key, value))
    for key in sorted(parent_keys - set(adata.uns.keys())):
        plan.add(f"uns {key!r} deleted", _op(VersionWriter.delete_uns, table, key))


def _diff_studio(mine: Any, parent: Mapping[str, Any], table: str, plan: SavePlan) -> None:
    if not isinstance(mine, Mapping):
        plan.refused.append(f"uns[{STUDIO_KEY!r}] is a {type(mine).__name__}, not a dict of figures and results")
        return
    for key in sorted(set(mine) | set(parent)):
        if key in ("figures", "results"):
            continue
        if key not in mine or key not in parent or not _same_value(mine[key], parent[key]):
            plan.refused.append(f"uns[{STUDIO_KEY!r}][{key!r}] changed (only figures and results are saved there)")
    _diff_figures(_section(mine, "figures", plan), _section(parent, "figures", None), table, plan)
    _diff_results(_section(mine, "results", plan), _section(parent, "results", None), table, plan)


def _section(studio: Mapping[str, Any], name: str, plan: SavePlan | None) -> Mapping[str, Any]:
    value = studio.get(name, {})
    if isinstance(value, Mapping):
        return value
    if plan is not None:
        plan.refused.append(f"uns[{STUDIO_KEY!r}][{name!r}] is a {type(value).__name__}, not a dict")
    return {}


def _diff_figures(mine: Mapping[str, Any], parent: Mapping[str, Any], table: str, plan: SavePlan) -> None:
    for figure_id, spec in mine.items():
        if figure_id in parent and _same_figure(spec, parent[figure_id]):
            continue
        if not isinstance(spec, (str, Mapping)):
            plan.refused.append(f"figure {figure_id!r} is a {type(spec).__name__}; a figure is a JSON string or a dict")
            continue
        verb = "changed" if figure_id in parent else "added"
        plan.add(f"figure {figure_id!r} {verb}", _op(VersionWriter.set_figure, table, figure_id, spec))
    for figure_id in sorted(set(parent) - set(mine)):
        plan.add(f"figure {figure_id!r} deleted", _op(VersionWriter.delete_figure, table, figure_id))


def _same_figure(mine: Any, parent: Any) -> bool:
    if isinstance(mine, Mapping) and isinstance(parent, str):
        try:
            return bool(loads_spec(parent) == mine)
        except JSONRefused:
            return False
    return _same_value(mine, parent)


def _diff_results(mine: Mapping[str, Any], parent: Mapping[str, Any], table: str, plan: SavePlan) -> None:
    for result_id, result in mine.items():
        if result_id in parent and _same_value(result, parent[result_id]):
            continue
        parts = _result_parts(result_id, result)
        if isinstance(parts, str):
            plan.refused.append(parts)
            continue
        tables, meta = parts
        verb = "changed" if result_id in parent else "added"
        plan.add(
            f"result {result_id!r} {verb}",
            _op(VersionWriter.set_result, table, result_id, tables, meta),
        )
    for result_id in sorted(set(parent) - set(mine)):
        plan.add(f"result {result_id!r} deleted", _op(VersionWriter.delete_result, table, result_id))


def _result_parts(result_id: str, result: Any) -> tuple[dict[str, pd.DataFrame], dict[str, Any]] | str:
    """A result's tables and meta as the writer takes them, or why it cannot be saved."""
    if not isinstance(result, Mapping):
        return f"result {result_id!r} is a {type(result).__name__}; a result is a dict of tables and 'meta'"
    meta = result.get("meta")
    if isinstance(meta, str):
        try:
            meta = loads_spec(meta)
        except JSONRefused as exc:
            return f"result {result_id!r} has a 'meta' text that is not read as JSON ({exc}); fix it"
    if not isinstance(meta, Mapping):
        return f"result {result_id!r} has no 'meta' (a JSON object of what made it); add one"
    tables = {name: value for name, value in result.items() if name != "meta"}
    if not all(isinstance(value, pd.DataFrame) for value in tables.values()) or "table" not in tables:
        return f"result {result_id!r} needs its main table as a DataFrame under 'table' (and only DataFrames beside it)"
    return tables, dict(meta)


# -- equality, the way a reader would see it ------------------------------------------------


def _same_value(a: Any, b: Any) -> bool:
    """Whether two uns/obsm/layer values would be saved as the same objects."""
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)) or set(a) != set(b):
            return False
        return all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and _same_frame(a, b, check_index=True)
    if isinstance(a, pd.Categorical) or isinstance(b, pd.Categorical):
        return (
            isinstance(a, pd.Categorical) and isinstance(b, pd.Categorical) and _same_series(pd.Series(a), pd.Series(b))
        )
    if _is_awkward(a) or _is_awkward(b):
        return _is_awkward(a) and _is_awkward(b) and _same_awkward(a, b)
    if _is_array(a) or _is_array(b):
        return _same_matrix(a, b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    try:
        if a is None or b is None:
            return a is b
        if np.isscalar(a) and np.isscalar(b) and pd.isna(a) and pd.isna(b):
            return True
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _is_awkward(value: Any) -> bool:
    return type(value).__module__.split(".", 1)[0] == "awkward"


def _same_awkward(a: Any, b: Any) -> bool:
    """Same type and values: an awkward array read back equals the one written."""
    import awkward as ak

    return bool(str(a.type) == str(b.type) and ak.array_equal(a, b, equal_nan=True))


def _is_array(value: Any) -> bool:
    import scipy.sparse

    return isinstance(value, (np.ndarray, list, tuple)) or scipy.sparse.issparse(value)


def _same_matrix(a: Any, b: Any) -> bool:
    """Same shape, dtype and values (NaN equal to NaN); sparse equals sparse only."""
    import scipy.sparse

    if a is None or b is None:
        return a is None and b is None
    if scipy.sparse.issparse(a) or scipy.sparse.issparse(b):
        if not (scipy.sparse.issparse(a) and scipy.sparse.issparse(b)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.format != b.format:
            return False
        return bool((a != b).nnz == 0)
    if hasattr(a, "compute") or hasattr(b, "compute"):  # dask: compare what it holds
        a = np.asarray(a)
        b = np.asarray(b)
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.array_equal(a, b):
        return True
    # only arrays that differ pay for the NaN-aware comparison (several times slower)
    return a.dtype.kind in "fc" and bool(np.array_equal(a, b, equal_nan=True))


def _same_frame(a: pd.DataFrame, b: pd.DataFrame | None, *, check_index: bool) -> bool:
    if b is None or list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    if check_index and not a.index.equals(b.index):
        return False
    return all(_same_series(a[c], b[c]) for c in a.columns)


def _same_series(a: pd.Series, b: pd.Series) -> bool:
    """Same kind, same categories in the same order, same values (NaN equal to NaN)."""
    if isinstance(a.dtype, pd.CategoricalDtype) or isinstance(b.dtype, pd.CategoricalDtype):
        if not (isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype)):
            return False
        return (
            a.cat.ordered == b.cat.ordered
            and a.cat.categories.equals(b.cat.categories)
            and np.array_equal(a.cat.codes.to_numpy(), b.cat.codes.to_numpy())
        )
    if _plain_strings(a) and _plain_strings(b):
        # object and pandas 3's str dtype hold the same strings: a read-back column is unchanged
        a, b = a.astype(object), b.astype(object)
    elif a.dtype != b.dtype:
        return False
    return bool(a.reset_index(drop=True).equals(b.reset_index(drop=True)))


def _plain_strings(series: pd.Series) -> bool:
    """A column of strings, not categorical (object in pandas 2, ``str`` in pandas 3)."""
    return not isinstance(series.dtype, pd.CategoricalDtype) and pd.api.types.is_string_dtype(series)
