"""One AnnData table of one version, read element by element.

Browsing asks for uns (figures, results), a few obs columns and obsm keys,
never X. Reading the whole AnnData for that would pull the largest arrays of
the store for nothing, so this view reads each element on first use through
anndata's element reader and keeps it.

It is the studio's :class:`~sds_jupyter.studio.cells.CellTable` over a stored table, so it lives
beside that protocol: the canvas, charts and exports read it within their own layer, and the
service opens one per version and hands it down (before, the studio called back up into the
service through it on every canvas request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
import zarr
from anndata.io import read_elem

from sds_jupyter.errors import ElementError, ResultError
from sds_jupyter.limits import (
    MAX_CACHED_COLUMN_BYTES,
    MAX_CACHED_COLUMNS,
    MAX_CACHED_RESULTS,
    MAX_CELLS,
    MAX_COLUMN_BYTES,
    MAX_RESULT_BYTES,
    MAX_UNS_BYTES,
    BoundedCache,
    claimed_bytes,
    item_bytes,
)
from sds_jupyter.stack import StackCaches, default_caches
from sds_jupyter.studio.nodes import child_array, child_group, element_length
from sds_jupyter.studio.palette import series_categories
from sds_jupyter.studio.uns import FIGURES_KEY, RESULTS_KEY, STUDIO_KEY

__all__ = ["TableView"]


class TableView:
    """Lazy, cached access to the parts of an AnnData group the browser reads."""

    def __init__(self, root: zarr.Group, group: zarr.Group, name: str, caches: StackCaches | None = None) -> None:
        self.root = root
        self.group = group
        self.name = name
        #: Where what is drawn from this table (cells, overviews, embeddings) is kept: the
        #: session's caches, so two sessions given different ones share nothing.
        self.caches = default_caches(caches)
        self._obsm: BoundedCache[str, np.ndarray] = BoundedCache(MAX_CACHED_COLUMNS, MAX_CACHED_COLUMN_BYTES)
        self._obs_columns: BoundedCache[str, pd.Series] = BoundedCache(MAX_CACHED_COLUMNS, MAX_CACHED_COLUMN_BYTES)
        self._results: BoundedCache[str, Any] = BoundedCache(MAX_CACHED_RESULTS, MAX_RESULT_BYTES)
        # A stored categorical's categories (None: numeric), read once: every figure's colours ask.
        # Each cache is told the size of what is put in it (``Turn.fill``), never calls back to size it.
        self._categories: BoundedCache[str, list[str] | None] = BoundedCache(
            MAX_CACHED_COLUMNS, MAX_CACHED_COLUMN_BYTES
        )

    @cached_property
    def attrs(self) -> dict[str, Any]:
        return self.group.attrs.asdict()

    @cached_property
    def uns(self) -> dict[str, Any]:
        """The whole uns, refused up front when its arrays claim more than MAX_UNS_BYTES (a compare reads it)."""
        if "uns" not in self.group:
            return {}
        node = child_group(self.group, "uns")
        claimed = claimed_bytes(node)
        if claimed > MAX_UNS_BYTES:
            raise ElementError(
                f"The table's uns claims {claimed:,} bytes; an uns over {MAX_UNS_BYTES:,} (MAX_UNS_BYTES) is not read whole."
            )
        return cast(dict[str, Any], read_elem(node))

    @cached_property
    def uns_without_studio(self) -> dict[str, Any]:
        """Every uns entry but the app's section (colors, spatialdata_attrs): what drawing needs."""
        if "uns" in self.__dict__:
            return {k: v for k, v in self.uns.items() if k != STUDIO_KEY}
        if "uns" not in self.group:
            return {}
        node = child_group(self.group, "uns")
        return {key: read_elem(node[key]) for key in node if key != STUDIO_KEY}

    def _studio_group(self) -> zarr.Group | None:
        """The ``uns/spatial_data_studio`` group, or None when the table has none."""
        try:
            node = self.group[f"uns/{STUDIO_KEY}"]
        except KeyError:
            return None
        return node if isinstance(node, zarr.Group) else None

    @cached_property
    def _studio_figures(self) -> Any:
        node = self._studio_group()
        return read_elem(node[FIGURES_KEY]) if node is not None and FIGURES_KEY in set(node.keys()) else None

    @cached_property
    def _result_ids(self) -> list[str]:
        node = self._studio_group()
        if node is None or RESULTS_KEY not in set(node.keys()):
            return []
        results = node[RESULTS_KEY]
        return sorted(results.keys()) if isinstance(results, zarr.Group) else []

    def _result(self, result_id: str) -> Any:
        group = self._studio_group()
        assert group is not None

        with self._results.claim(result_id) as turn:
            if turn.missing:
                node = child_group(group, RESULTS_KEY)[result_id]
                claimed = claimed_bytes(node)
                if claimed > MAX_RESULT_BYTES:
                    raise ResultError(
                        f"Result {result_id!r} claims {claimed:,} bytes; results over {MAX_RESULT_BYTES:,} "
                        "(MAX_RESULT_BYTES) are not read."
                    )
                turn.fill(read_elem(node), claimed)
        return turn.value

    def studio_uns(self, results: Iterable[str] | Literal["all"] = ()) -> dict[str, Any]:
        """An uns holding only the studio figures and the named results (``"all"``: every one).

        Listing figures or paging one result must not read every other result's
        tables, so the section is read piece by piece unless uns is already in memory.
        """
        if "uns" in self.__dict__:
            return self.uns
        if self._studio_group() is None:
            return {}
        known = self._result_ids
        wanted = known if results == "all" else [r for r in dict.fromkeys(results) if r in known]
        section: dict[str, Any] = {RESULTS_KEY: {r: self._result(r) for r in wanted}}
        if self._studio_figures is not None:
            section[FIGURES_KEY] = self._studio_figures
        return {STUDIO_KEY: section}

    @cached_property
    def obs(self) -> pd.DataFrame:
        node = self.group["obs"]
        if isinstance(node, zarr.Group):
            for name, child in node.members():
                check_claim(child, f"Obs column {name!r}")
        return read_elem(node)

    @cached_property
    def obsm_keys(self) -> list[str]:
        return sorted(child_group(self.group, "obsm").keys()) if "obsm" in self.group else []

    def obsm(self, key: str) -> np.ndarray:
        """One obsm entry as an array (dataframe entries become their values)."""

        with self._obsm.claim(key) as turn:
            if turn.missing:
                node = self.group[f"obsm/{key}"]
                check_claim(node, f"Obsm entry {key!r}")
                value = read_elem(node)
                array = value.to_numpy() if isinstance(value, pd.DataFrame) else np.asarray(value)
                turn.fill(array, int(array.nbytes))
        return turn.value

    # the CellTable a canvas reads (sds_jupyter.studio.cells): one column at a time, no cell names

    def _obs_group(self) -> zarr.Group | None:
        """The obs group when its columns can be read one by one (anndata's dataframe encoding 0.2.0)."""
        if "obs" in self.__dict__:
            return None
        node = child_group(self.group, "obs")
        return node if str(node.attrs.get("encoding-version", "")) == "0.2.0" else None

    @staticmethod
    def _obs_index(node: zarr.Group) -> zarr.Array | zarr.Group:
        """Obs's index element: an array, or (anndata 0.13 on) a nullable string group of values and mask."""
        return node[str(node.attrs.get("_index", "_index"))]

    @cached_property
    def n_obs(self) -> int:
        """How many cells, from the shape of obs's index array (the names are not read)."""
        node = self._obs_group()
        count = len(self.obs) if node is None else element_length(self._obs_index(node))
        if count > MAX_CELLS:
            raise ElementError(
                f"Table {self.name!r} claims {count:,} cells; at most {MAX_CELLS:,} (MAX_CELLS) are read."
            )
        return count

    @cached_property
    def obs_columns(self) -> list[str]:
        """The obs column names, in obs order (its ``column-order``)."""
        node = self._obs_group()
        if node is None:
            return [str(column) for column in self.obs.columns]
        return [str(column) for column in cast("list[Any]", node.attrs.get("column-order", []))]

    def obs_column(self, name: str) -> pd.Series:
        """One obs column, read alone (KeyError when obs has no such column)."""
        if name not in self._obs_columns and name not in self.obs_columns:
            raise KeyError(name)

        with self._obs_columns.claim(name) as turn:
            if turn.missing:
                node = self._obs_group()
                if node is not None:
                    check_claim(node[name], f"Obs column {name!r}")
                series = self.obs[name] if node is None else pd.Series(read_elem(node[name]), name=name)
                turn.fill(series, int(series.memory_usage(index=False)))
        return turn.value

    def obs_named_column(self, name: str) -> pd.Series:
        """One obs column indexed by the cell names, as ``obs[name]`` (matching cells across versions needs them)."""
        column = self.obs_column(name)
        return column if column.index is self.obs_names else column.set_axis(self.obs_names)

    def obs_categories(self, name: str) -> list[str] | None:
        """A column's categories as text when it is categorical, text or boolean; None when numeric.

        Why: a palette needs the categories only. A categorical column's categories are read
        without its codes, and a numeric array is known by its dtype without being read, so
        the figures of a 10,000,000-cell table do not read obs whole for their colors.
        """
        if name not in self.obs_columns:
            raise KeyError(name)
        node = self._obs_group()
        if node is not None and name not in self._obs_columns:
            element = node[name]
            if isinstance(element, zarr.Group) and element.attrs.get("encoding-type") == "categorical":
                with self._categories.claim(name) as turn:
                    if turn.missing:
                        names = [str(c) for c in read_elem(element["categories"])]
                        turn.fill(names, sum(map(len, names)))
                return turn.value
            if isinstance(element, zarr.Array) and element.dtype.kind in "iuf":
                return None
        return series_categories(self.obs_column(name))

    def distinct_values(self, name: str) -> int | None:
        """A categorical column's number of categories, from its array's shape (nothing read); else None."""
        node = self._obs_group()
        if node is None or name not in node:
            return None
        element = node[name]
        if isinstance(element, zarr.Group) and element.attrs.get("encoding-type") == "categorical":
            categories = element["categories"]
            return int(categories.shape[0]) if isinstance(categories, zarr.Array) else None
        return None

    def obs_row(self, position: int) -> pd.DataFrame:
        """Obs row ``position`` as a one-row frame, each column read at that position alone.

        Why: a hover asks for one cell; reading obs whole (every column, every cell name)
        took seconds at 10,000,000 cells. Each column keeps its dtype, so the row comes out
        as ``obs.iloc[[position]]`` would give it (cell names aside: a RangeIndex).
        """
        if not 0 <= position < self.n_obs:
            raise IndexError(position)
        node = self._obs_group()
        if node is None:
            return self.obs.iloc[[position]].reset_index(drop=True)
        return pd.DataFrame({name: _value_at(node[name], position) for name in self.obs_columns})

    def obs_name(self, position: int) -> str:
        """The name of the cell at ``position``, read alone (no index of every name is built)."""
        if not 0 <= position < self.n_obs:
            raise IndexError(position)
        node = self._obs_group()
        if node is None:
            return str(self.obs.index[position])
        index = self._obs_index(node)
        names = index if isinstance(index, zarr.Array) else child_array(index, "values")
        return str(np.asarray(names[position : position + 1], dtype=object)[0])

    @cached_property
    def obs_names(self) -> pd.Index:
        """Every cell name, read from obs's index array alone (matching cells across versions needs them)."""
        node = self._obs_group()
        if node is None:
            return self.obs.index
        index = self._obs_index(node)
        check_claim(index, "The obs index")
        return pd.Index(read_elem(index))

    def obsm_array(self, key: str) -> np.ndarray | None:
        """Obsm entry ``key``, None when the table has none."""
        return self.obsm(key) if key in self.obsm_keys else None

    @cached_property
    def var_names(self) -> pd.Index:
        """The variable (gene) names, read from var's index alone."""
        var = child_group(self.group, "var")
        index_key = str(var.attrs.get("_index", "_index"))
        check_claim(var[index_key], "The var index")
        return pd.Index([str(name) for name in read_elem(var[index_key])])

    def matrix_column(self, position: int, layer: str | None = None) -> np.ndarray:
        """One column of X (or of ``layers/<layer>``) for every cell, as float32, in obs order.

        Dense matrices are read by a column slice (only the chunks that hold it);
        a CSC matrix by its one column's range; a CSR matrix has to be scanned.
        """
        key = "X" if layer is None else f"layers/{layer}"
        node = self.group[key]
        if isinstance(node, zarr.Array):
            check_bytes(slice_chunks_bytes(node, 1), f"Column {position} of {key}")
            return np.asarray(node[:, position], dtype=np.float32)
        encoding = str(node.attrs.get("encoding-type", ""))
        n_obs, _ = (int(n) for n in cast("list[int]", node.attrs["shape"]))  # a sparse matrix's [rows, columns]
        for part in ("indptr", "indices", "data"):  # a CSR scan reads all three whole
            check_claim(child_array(node, part), f"{key}'s {part}")
        indptr = np.asarray(child_array(node, "indptr")[:])
        column = np.zeros(n_obs, dtype=np.float32)
        if encoding == "csc_matrix":
            start, stop = int(indptr[position]), int(indptr[position + 1])
            column[np.asarray(child_array(node, "indices")[start:stop])] = np.asarray(
                child_array(node, "data")[start:stop], dtype=np.float32
            )
            return column
        if encoding != "csr_matrix":
            raise ValueError(f"{key} is stored as {encoding or 'an unknown encoding'}, not a matrix this view reads.")
        indices = np.asarray(child_array(node, "indices")[:])
        hit = indices == position
        rows = np.repeat(np.arange(n_obs), np.diff(indptr))[hit]
        column[rows] = np.asarray(child_array(node, "data")[:], dtype=np.float32)[hit]
        return column

    def layer_names(self) -> list[str]:
        return sorted(child_group(self.group, "layers").keys()) if "layers" in self.group else []

    def gene_values(self, gene: str, layer: str | None = None) -> np.ndarray:
        """``gene``'s expression for every cell (from X or ``layer``, float32, obs order); KeyError when absent."""
        matches = np.flatnonzero(self.var_names == gene)
        if not len(matches):
            raise KeyError(gene)
        return self.matrix_column(int(matches[0]), layer)

    def obs_counts(self, column: str) -> Mapping[str, int] | None:
        """Value counts of a categorical-like obs column; None for numeric columns."""
        series = self.obs[column]
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            return None
        counts = series.astype(str).value_counts(sort=False)
        return {str(k): int(v) for k, v in counts.items()}


def _value_at(node: zarr.Array | zarr.Group, position: int) -> pd.Series:
    """An obs column's value at ``position`` as a one-value Series of the column's dtype.

    Plain arrays and the codes of a categorical are read at that position; the categories
    (few) are read whole. Other encodings (nullable columns) are read whole, that column only.
    """
    if isinstance(node, zarr.Array):
        return pd.Series(node[position : position + 1])
    if node.attrs.get("encoding-type") == "categorical":
        codes = np.asarray(child_array(node, "codes")[position : position + 1])
        categories = read_elem(node["categories"])
        return pd.Series(pd.Categorical.from_codes(codes, categories, ordered=bool(node.attrs.get("ordered", False))))
    return pd.Series(read_elem(node)[position : position + 1])


def slice_chunks_bytes(node: zarr.Array, width: int) -> int:
    """The bytes of the chunks that reading ``width`` columns of a 2-D array (every row) decompresses.

    Why: a slice decompresses every chunk it touches whole, and a version stores an array in
    one chunk, so one column of a 10^9-column matrix would read all of it.
    """
    rows, chunk_rows, chunk_columns = int(node.shape[0]), max(int(node.chunks[0]), 1), max(int(node.chunks[1]), 1)
    return -(-rows // chunk_rows) * chunk_rows * -(-width // chunk_columns) * chunk_columns * item_bytes(node)


def check_claim(node: zarr.Group | zarr.Array, what: str) -> None:
    """Refuse to read a stored column whose arrays claim more than MAX_COLUMN_BYTES (from metadata alone).

    Why: anndata allocates what the shapes claim; an edited shape of 10^12 would be a
    MemoryError (a 500) after swapping, instead of a refusal that names the column.
    """
    check_bytes(claimed_bytes(node), what)


def check_bytes(claimed: int, what: str) -> None:
    """Refuse a read whose arrays claim more than MAX_COLUMN_BYTES, naming what it reads."""
    if claimed > MAX_COLUMN_BYTES:
        raise ElementError(
            f"{what} claims {claimed:,} bytes; at most {MAX_COLUMN_BYTES:,} (MAX_COLUMN_BYTES) are read."
        )
