"""The ops of the format (``set-obs`` ... ``delete-figure``), staged on a copy-on-write store.

Each op checks its names against the composed store, encodes its value
(:mod:`~sds_jupyter.stack.write.encode`), stages the objects, keeps the parent
group's index (``column-order``) right, and records the change for the manifest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.errors import StackError, WriteRefusedError, shown
from sds_jupyter.jsontext import loads_bounded
from sds_jupyter.stack.write.cow import CopyOnWriteStore
from sds_jupyter.stack.write.encode import STUDIO_KEY, encode_element, studio_path

__all__ = ["VersionOps"]


class VersionOps:
    """The changes of one new version, staged on ``store``; committing is the writer's job."""

    def __init__(self, store: CopyOnWriteStore) -> None:
        self.store = store
        self.changes: list[dict[str, Any]] = []
        self._committed = False

    # -- reading the composed store ---------------------------------------------------

    def _group(self, path: str) -> zarr.Group:
        try:
            node = zarr.open_group(self.store, mode="r", use_consolidated=False, path=path)
        except (KeyError, FileNotFoundError, zarr.errors.GroupNotFoundError):
            raise StackError(f"this version has no group {path!r}") from None
        return node

    def _doc(self, key: str) -> dict[str, Any]:
        raw = self.store.read_raw(key)
        if raw is None:
            raise StackError(f"this version has no {key!r}")
        doc: dict[str, Any] = loads_bounded(raw, strict=False)
        return doc

    def _table(self, table: str) -> str:
        path = f"tables/{table}"
        if not self.store.exists_raw(f"{path}/zarr.json"):
            tables = self.store.children_raw("tables")
            raise StackError(f"this version has no table {table!r}; its tables are: {', '.join(tables) or 'none'}")
        return path

    def n_obs(self, table: str) -> int:
        obs = f"{self._table(table)}/obs"
        index_name = self._doc(f"{obs}/zarr.json").get("attributes", {}).get("_index", "_index")
        doc = self._doc(f"{obs}/{index_name}/zarr.json")
        if doc.get("node_type") == "group":  # nullable-string-array index
            doc = self._doc(f"{obs}/{index_name}/values/zarr.json")
        return int(doc["shape"][0])

    def obs_columns(self, table: str) -> list[str]:
        attrs = self._doc(f"{self._table(table)}/obs/zarr.json").get("attributes", {})
        return list(attrs.get("column-order", []))

    # -- staging --------------------------------------------------------------------------

    def _put(self, path: str, value: Any, what: str | None = None) -> None:
        """Replace the node at ``path`` with ``value`` encoded as anndata would.

        A value anndata has no encoding for (a nullable Float64 column in anndata 0.12) is
        refused naming ``what`` (the column or key), before anything is staged.
        """
        try:
            objects = encode_element(value)
        except Exception as exc:
            if type(exc).__name__ != "IORegistryError":  # anndata's "no method registered for writing"
                raise
            kind = getattr(value, "dtype", type(value).__name__)
            raise StackError(
                f"{what or path} holds {kind} values, which this anndata cannot store; convert them "
                "(a nullable Float64 column: .astype('float64'), missing values becoming NaN) and save again"
            ) from None
        self.store.delete_node(path)
        for key, data in objects.items():
            self.store.write_raw(f"{path}/{key}", data)

    def _ensure_dict_group(self, path: str) -> None:
        """Create ``path`` and its missing parents as anndata ``dict`` groups."""
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            node = "/".join(parts[:end])
            if not self.store.exists_raw(f"{node}/zarr.json"):
                doc = {
                    "attributes": {"encoding-type": "dict", "encoding-version": "0.1.0"},
                    "zarr_format": 3,
                    "node_type": "group",
                }
                self.store.write_raw(f"{node}/zarr.json", json.dumps(doc, indent=2).encode())

    def _record(self, change: dict[str, Any]) -> None:
        self._check_open()
        self.changes.append(change)

    def _check_open(self) -> None:
        if self._committed:
            raise WriteRefusedError("this version was committed already; start a new VersionWriter")

    # -- the ops ------------------------------------------------------------------------

    def set_obs(self, table: str, column: str, values: Any) -> None:
        """Add or replace an obs column (``set-obs``)."""
        self._check_open()
        _check_name(column, "obs column")
        series = (
            pd.Series(values).reset_index(drop=True)
            if not isinstance(values, pd.Series)
            else values.reset_index(drop=True)
        )
        n_obs = self.n_obs(table)
        if len(series) != n_obs:
            raise StackError(f"obs column {column!r} has {len(series)} values; table {table!r} has {n_obs} rows")
        columns = self.obs_columns(table)
        _check_unique_name(column, columns, "obs column")
        obs = f"{self._table(table)}/obs"
        index_name = self._doc(f"{obs}/zarr.json").get("attributes", {}).get("_index", "_index")
        if column == index_name:
            raise StackError(
                f"obs column {column!r} has the name the table stores its cell names under; "
                "rename the column (a version cannot replace the cell names)"
            )
        self._put(f"{obs}/{column}", _column_values(column, series), f"obs column {column!r}")
        if column not in columns:
            self._set_column_order(obs, [*columns, column])
        self._record({"op": "set-obs", "table": table, "column": column, "kind": _kind_of(series)})

    def set_obs_index_name(self, table: str, name: str | None) -> None:
        """Name the obs index (the node anndata keeps the cell names under, its ``_index`` attribute).

        Recorded as a ``set-obs`` of that node, of kind ``index``: the cell names themselves are
        the same objects, moved to the new name (``None`` or ``_index``: unnamed).
        """
        self._check_open()
        obs = f"{self._table(table)}/obs"
        doc = self._doc(f"{obs}/zarr.json")
        attributes = doc.setdefault("attributes", {})
        old, new = attributes.get("_index", "_index"), "_index" if name is None else name
        if new == old:
            return
        if new != "_index":
            _check_name(new, "obs index name")
        if new in self.obs_columns(table):
            raise StackError(f"obs index name {new!r} is also the name of an obs column; rename one of them")
        for key in list(self.store.keys_raw(f"{obs}/{old}/")):
            data = self.store.read_raw(key)
            assert data is not None
            self.store.write_raw(f"{obs}/{new}/{key[len(obs) + len(old) + 2 :]}", data)
        self.store.delete_node(f"{obs}/{old}")
        attributes["_index"] = new
        self.store.write_raw(f"{obs}/zarr.json", json.dumps(doc, indent=2).encode())
        self._record({"op": "set-obs", "table": table, "column": new, "kind": "index"})

    def delete_obs(self, table: str, column: str) -> None:
        """Remove an obs column (``delete-obs``)."""
        self._check_open()
        columns = self.obs_columns(table)
        if column not in columns:
            raise StackError(f"table {table!r} has no obs column {column!r}; its columns are: {', '.join(columns)}")
        keys = self._doc(f"{self._table(table)}/zarr.json").get("attributes", {})
        if column in (keys.get("region_key"), keys.get("instance_key")):
            raise StackError(
                f"obs column {column!r} is the table's region or instance key, which ties it to "
                "its spatial elements; keep it (replace its values with set_obs instead)"
            )
        obs = f"{self._table(table)}/obs"
        self.store.delete_node(f"{obs}/{column}")
        self._set_column_order(obs, [c for c in columns if c != column])
        self._record({"op": "delete-obs", "table": table, "column": column})

    def set_obsm(self, table: str, key: str, value: Any) -> None:
        """Add or replace an obsm entry (``set-obsm``), e.g. an embedding."""
        self._check_open()
        _check_name(key, "obsm key", index_ok=True)
        _check_inner_names(value, f"obsm {key!r}")
        array = _aligned_value(value)
        rows = len(array) if _is_awkward(array) else array.shape[0]
        n_obs = self.n_obs(table)
        if rows != n_obs:
            raise StackError(f"obsm {key!r} has {rows} rows; table {table!r} has {n_obs}")
        path = f"{self._table(table)}/obsm"
        self._ensure_dict_group(path)
        self._put(f"{path}/{key}", array, f"obsm {key!r}")
        shape = [rows] if _is_awkward(array) else list(array.shape)
        self._record({"op": "set-obsm", "table": table, "key": key, "shape": shape})

    def set_uns(self, table: str, key: str, value: Any) -> None:
        """Add or replace a top-level uns entry (``set-uns``)."""
        self._check_open()
        _check_name(key, "uns key", index_ok=True)
        _check_inner_names(value, f"uns {key!r}")
        path = f"{self._table(table)}/uns"
        self._ensure_dict_group(path)
        self._put(f"{path}/{key}", value, f"uns {key!r}")
        self._record({"op": "set-uns", "table": table, "key": key})

    def delete_uns(self, table: str, key: str) -> None:
        """Remove a top-level uns entry (``delete-uns``)."""
        self._check_open()
        path = f"{self._table(table)}/uns/{key}"
        if not self.store.exists_raw(f"{path}/zarr.json"):
            raise StackError(f"table {table!r} has no uns entry {key!r}")
        self.store.delete_node(path)
        self._record({"op": "delete-uns", "table": table, "key": key})

    def set_figure(self, table: str, figure_id: str, spec: Mapping[str, Any] | str) -> None:
        """Save a figure spec (``set-figure``) as a JSON string in uns."""
        self._check_open()
        _check_name(figure_id, "figure ID")
        text = spec if isinstance(spec, str) else json.dumps(spec)
        title = None if isinstance(spec, str) else spec.get("title")
        self._table(table)
        self._ensure_dict_group(studio_path(table, "figures"))
        self._put(studio_path(table, "figures", figure_id), text)
        self._record({"op": "set-figure", "table": table, "figure": figure_id, "title": title})

    def delete_figure(self, table: str, figure_id: str) -> None:
        """Remove a figure (``delete-figure``)."""
        self._check_open()
        path = studio_path(table, "figures", figure_id)
        if not self.store.exists_raw(f"{path}/zarr.json"):
            raise StackError(f"table {table!r} has no figure {figure_id!r}")
        self.store.delete_node(path)
        self._record({"op": "delete-figure", "table": table, "figure": figure_id})

    def set_result(
        self,
        table: str,
        result_id: str,
        tables: Mapping[str, pd.DataFrame],
        meta: Mapping[str, Any],
    ) -> None:
        """Save an analysis result: its tables (``"table"`` first) and its ``meta``.

        Recorded as a ``set-uns`` of ``spatial_data_studio/results/<id>``.
        """
        self._check_open()
        _check_name(result_id, "result ID")
        if "table" not in tables:
            raise StackError("a result needs its main table under the name 'table'")
        if "meta" in tables:
            raise StackError("'meta' is reserved for the result's metadata; rename that table")
        self._table(table)
        self._ensure_dict_group(studio_path(table, "results"))
        content: dict[str, Any] = dict(tables)
        content["meta"] = json.dumps(dict(meta))
        self._put(studio_path(table, "results", result_id), content)
        self._record(
            {
                "op": "set-uns",
                "table": table,
                "key": f"{STUDIO_KEY}/results/{result_id}",
                "result": result_id,
                "kind": meta.get("kind"),
            }
        )

    def delete_result(self, table: str, result_id: str) -> None:
        """Remove an analysis result; recorded as a ``delete-uns`` of its key, as set_result records."""
        self._check_open()
        path = studio_path(table, "results", result_id)
        if not self.store.exists_raw(f"{path}/zarr.json"):
            raise StackError(f"table {table!r} has no result {result_id!r}")
        self.store.delete_node(path)
        self._record(
            {"op": "delete-uns", "table": table, "key": f"{STUDIO_KEY}/results/{result_id}", "result": result_id}
        )

    def _set_column_order(self, obs: str, columns: list[str]) -> None:
        doc = self._doc(f"{obs}/zarr.json")
        doc.setdefault("attributes", {})["column-order"] = columns
        self.store.write_raw(f"{obs}/zarr.json", json.dumps(doc, indent=2).encode())


def _column_values(column: str, series: pd.Series) -> Any:
    """What anndata encodes for a column: categoricals and nullable ints/booleans/strings keep
    their pandas arrays (so their encodings, missing values included), the rest as numpy.

    An object column must hold strings only: anndata would write other values in a way it
    does not read back as they were (or not at all), so such a column is refused by name.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        _check_categories(f"obs column {column!r}", dtype.categories)
        return series.array
    if pd.api.types.is_extension_array_dtype(dtype) and (
        pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype) or _nullable_strings(dtype)
    ):
        return series.array  # nullable: kept as it is, or refused by name when anndata has no encoding for it
    values = series.to_numpy()
    if values.dtype == object:
        odd = next((item for item in values if type(item) is not str), _ALL_STRINGS)
        if odd is not _ALL_STRINGS:
            raise StackError(
                f"obs column {column!r} holds {type(odd).__name__} values among its strings; anndata "
                "cannot store such a column as it is: convert it (.astype(str), .astype('string') for "
                "missing values, or .astype('category')) and save again"
            )
    return values


_ALL_STRINGS = object()


def _check_categories(what: str, categories: pd.Index) -> None:
    """Refuse categories of mixed types (``[1, '1', 1.5]``): a store keeps object categories as text,
    where 1 and '1' would be one category twice and the saved version would no longer open."""
    if categories.dtype != object:
        return
    kinds = sorted({type(item).__name__ for item in categories})
    if kinds != ["str"]:
        raise StackError(
            f"{what} is categorical with categories of mixed types ({', '.join(kinds)}), "
            "which a store keeps as text, where they may collide; make them one type "
            "(.cat.rename_categories(str), or .astype(str).astype('category')) and save again"
        )


def _nullable_strings(dtype: Any) -> bool:
    """pandas' nullable string dtype (``"string"``, missing values as ``pd.NA``), anndata's nullable-string-array."""
    return isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA


def _is_awkward(value: Any) -> bool:
    return type(value).__module__.split(".", 1)[0] == "awkward"


def _aligned_value(value: Any) -> Any:
    """An obsm value as anndata stores it: arrays, sparse matrices, data frames and awkward arrays as
    they are, anything else (a list, a dask array) as a numpy array."""
    import scipy.sparse

    if isinstance(value, (pd.DataFrame, np.ndarray)) or scipy.sparse.issparse(value) or _is_awkward(value):
        return value
    return np.asarray(value)


def _kind_of(series: pd.Series) -> str:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(series.dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(series.dtype):
        return "numeric"
    return "string"


_NAME_CHARS_EXTRA = set("-_.")


#: The longest element, column or key name, in bytes of UTF-8: each is a folder of the store,
#: and common file systems (ext4, XFS, APFS, NTFS) refuse a file name over 255 bytes.
MAX_NAME_BYTES = 255
#: Names that a store's own documents take: no column or key may have one (it would overwrite the document).
RESERVED_NAMES = frozenset({"zarr.json", ".zattrs", ".zgroup", ".zarray", ".zmetadata"})


def _check_name(name: str, what: str, *, index_ok: bool = False) -> None:
    """The SpatialData naming rules for element, column and key names.

    ``_index`` is refused only where anndata keeps a data frame's index under that name (obs
    columns, figure and result IDs stay as they were); an obsm or uns key may be ``_index``
    (``index_ok``), as anndata and spatialdata write and read such keys.
    """
    size = len(name.encode("utf-8", "surrogatepass")) if isinstance(name, str) else 0
    if size > MAX_NAME_BYTES:
        raise StackError(
            f"{what} {shown(name, 40)} is {size:,} bytes long; a name is stored as a file name, "
            f"so it may be at most {MAX_NAME_BYTES} bytes (MAX_NAME_BYTES): shorten it"
        )
    if isinstance(name, str) and name.lower() in RESERVED_NAMES:
        raise StackError(f"{what} {name!r} is the name of a store's metadata document; rename it")
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or (name == "_index" and not index_ok)
        or name.startswith("__")
        or not all(ch.isalnum() or ch in _NAME_CHARS_EXTRA for ch in name)
    ):
        raise StackError(
            f"{what} {name!r} is not a valid name: use letters, digits, '-', '_' and '.', "
            "not starting with '__'" + ("" if index_ok else " (and not '_index')")
        )


def _check_inner_names(value: Any, what: str) -> None:
    """Refuse names inside a value that anndata stores as nodes of their own (a data frame's columns
    and index name, a mapping's keys at any depth) when one is named like a metadata document: the
    node's document and the named child would be one file, and one of them would be lost."""
    if isinstance(value, pd.Categorical):
        _check_categories(what, value.categories)
    elif isinstance(value, pd.DataFrame):
        for column, dtype in value.dtypes.items():
            if isinstance(dtype, pd.CategoricalDtype):
                _check_categories(f"{what}[{column!r}]", dtype.categories)
        for name in [*value.columns, value.index.name]:
            if isinstance(name, str) and name.lower() in RESERVED_NAMES:
                raise StackError(f"{what} has a column {name!r}, the name of a store's metadata document; rename it")
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if isinstance(key, str) and key.lower() in RESERVED_NAMES:
                raise StackError(f"{what} holds a key {key!r}, the name of a store's metadata document; rename it")
            _check_inner_names(inner, f"{what}[{key!r}]")


def _check_unique_name(name: str, existing: list[str], what: str) -> None:
    for other in existing:
        if other != name and other.lower() == name.lower():
            raise StackError(f"{what} {name!r} differs from existing {other!r} only in case; pick another name")
