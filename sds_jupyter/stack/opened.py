"""What :func:`~sds_jupyter.stack.open.open_anndata` read, remembered for a later save.

Saving compares an AnnData with the version it came from. Reading the version's
X, var and layers again only to prove them unchanged costs far more than the
save writes. So when a version's table is opened, a fingerprint of every element
a version cannot change (and of each obs column and obsm entry) is taken from
the arrays just read: their dtype, shape and a CRC-32C of their bytes (a few
milliseconds for 40 MB). At save, an element whose fingerprint still matches is
unchanged; any other element, an in-place edit included (``adata.X[0, 0] = 1``
changes the bytes, so the checksum), is compared with the stored one as before.
A fingerprint only ever spares a read; it never decides that something changed.

A record belongs to one AnnData object (by identity, dropped when it is garbage
collected) and to the exact chain of manifests it was read from. It is kept in the
caches the open was given (``caches.opened``, an
:class:`~sds_jupyter.stack.caches.OpenedRecords`, which says why it is keyed so), so a
save given the same caches finds it; no module holds records.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.stack.caches import StackCaches, default_caches
from sds_jupyter.stack.stack import Stack

__all__ = [
    "Opened",
    "column_print",
    "exact_print",
    "fingerprint",
    "held_names",
    "opened_record",
    "remember_opened",
    "same_scalar_held",
]

#: Mappings whose entries are fingerprinted, each entry under ``"<name>/<key>"``.
MAPPINGS = ("layers", "obsm", "obsp", "varm", "varp", "uns")

#: Arrays of strings up to this many are printed by value (uns holds such small lists).
_MAX_STRINGS = 10_000


def _pick_checksum() -> Callable[[np.ndarray], int]:
    """The quickest 32-bit CRC here: ISA-L's CRC-32 (about twice google-crc32c's C build on
    40 MB), else google-crc32c's C build (zarr depends on it), else zlib's CRC-32."""
    try:
        from isal import isal_zlib

        return lambda data: int(isal_zlib.crc32(data))
    except ImportError:  # pragma: no cover - isal is a dependency
        pass
    try:
        from google_crc32c import cext

        return lambda data: int(cext.value(data))
    except ImportError:  # pragma: no cover - a pure-Python google-crc32c only
        return lambda data: zlib.crc32(data.data)


_checksum = _pick_checksum()


@dataclass
class Opened:
    """Fingerprints of one table of one version, as an AnnData was read from it."""

    stack_key: tuple[Any, ...]
    table: str
    obs_names: np.ndarray
    """A copy of the cells' names (the Index's array is writable in pandas 2)."""
    var: pd.DataFrame
    """A deep copy: var is small (one row per gene) and compared in full."""
    columns: dict[str, Hashable | None]
    """Obs columns in order, each with its fingerprint (None: compare with the stored one)."""
    exact: dict[str, Hashable] = field(default_factory=dict)
    """Float columns' prints of their bytes as read (:func:`exact_print`): the same bytes are
    the same column, without the copy that makes a column's print."""
    prints: dict[str, Hashable | None] = field(default_factory=dict)
    """``"X"``, ``"raw/X"`` and ``"<mapping>/<key>"``: fingerprint, or None."""
    keys: dict[str, frozenset[str]] = field(default_factory=dict)
    """The keys each aligned mapping had."""
    raw_var: pd.DataFrame | None = None
    has_raw: bool = False
    obs_index: str | None = None
    """The name obs stores the cell names under, as read (see :func:`stored_index_name`)."""
    held_names: np.ndarray | None = None
    """The AnnData's own array of cell names, made read-only at open (:func:`held_names`)."""

    def same_names_held(self, names: pd.Index) -> bool:
        """Whether ``names`` still hands out the very array read at open, still read-only: then it
        holds the same names without comparing them (200,000 names: milliseconds a save)."""
        held = self.held_names
        return held is not None and not held.flags.writeable and names.to_numpy() is held


def stack_key(stack: Stack) -> tuple[Any, ...]:
    """The exact chain a table was read from: the base's place and every manifest."""
    return (str(stack.base.path), tuple((str(v.data_dir), v.manifest) for v in stack.versions))


def stored_index_name(group: Any) -> str | None:
    """The name a table's obs stores the cell names under (``_index`` unless anndata kept the
    index's name), from the table's zarr ``group``; None when it is no text."""
    attrs = group["obs"].attrs if "obs" in group else {}
    name = attrs.get("_index", "_index")
    return name if isinstance(name, str) else None


def remember_opened(adata: Any, stack: Stack, table: str, caches: StackCaches | None = None, *, group: Any) -> None:
    """Fingerprint what ``adata`` holds, just read from table ``table`` of ``stack``; kept in ``caches``.

    ``group`` is the table's zarr group it was read from: its obs index name is kept too,
    so a save need not open the table again to learn it.
    """
    raw = adata.raw
    record = Opened(
        stack_key=stack_key(stack),
        table=table,
        obs_names=np.array(adata.obs_names, dtype=object, copy=True),
        var=adata.var.copy(deep=True),
        columns={str(name): column_print(adata.obs[name]) for name in adata.obs.columns},
        exact={str(name): found for name in adata.obs.columns if (found := exact_print(adata.obs[name])) is not None},
        prints={"X": fingerprint(adata.X)},
        raw_var=None if raw is None else raw.var.copy(deep=True),
        has_raw=raw is not None,
        obs_index=stored_index_name(group),
        held_names=held_names(adata.obs_names),
    )
    if raw is not None:
        record.prints["raw/X"] = fingerprint(raw.X)
    for name in MAPPINGS:
        mapping = getattr(adata, name)
        record.keys[name] = keys = _mapping_keys(mapping)
        for key in keys:
            record.prints[f"{name}/{key}"] = fingerprint(mapping[key])
    default_caches(caches).opened.remember(adata, record)


def held_names(index: pd.Index) -> np.ndarray | None:
    """The array of cell names ``index`` owns, made read-only; None when it owns none of its own.

    Why this is safe: an Index is immutable (pandas 3 hands out its values read-only itself), so
    no pandas or anndata operation writes into it; what would (``obs_names.values[0] = ...``) now
    raises, as under pandas 3. An array owning its buffer has no writable base to write through,
    and views made from it from now on are read-only too. A new Index (``obs_names = ...``) is
    another array, compared name by name.
    """
    names: np.ndarray = index.to_numpy()
    if names.dtype != object or names.base is not None:
        return None
    names.flags.writeable = False
    return names


def opened_record(adata: Any, stack: Stack, table: str, caches: StackCaches | None = None) -> Opened | None:
    """The record of ``adata`` kept in ``caches`` if it was opened from exactly this stack's table, else None."""
    record: Opened | None = default_caches(caches).opened.get(adata)
    if record is None:
        return None
    if record.table != table or record.stack_key != stack_key(stack):
        return None
    return record


def fingerprint(value: Any) -> Hashable | None:
    """What identifies a value: dtype, shape and checksums of an array or a sparse matrix,
    nested for a dict, the value itself for a string or a number; None for anything else."""
    import scipy.sparse

    if isinstance(value, Mapping):
        items = tuple((str(key), fingerprint(item)) for key, item in value.items())
        if any(not isinstance(key, str) for key in value) or any(item is None for _, item in items):
            return None
        return ("dict", tuple(sorted(items)))
    if isinstance(value, (str, bool, int, float, np.number, np.bool_)) and not isinstance(value, np.void):
        if isinstance(value, (float, np.floating)) and np.isnan(value):
            return ("nan",)
        return ("scalar", type(value).__name__, value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OU" and value.size <= _MAX_STRINGS:
        strings = value.reshape(-1).tolist()
        if all(isinstance(item, str) for item in strings):
            return ("strings", value.dtype.kind, value.shape, tuple(strings))
        return None
    if scipy.sparse.issparse(value) and value.format in ("csr", "csc"):
        parts = (_array_print(value.data), _array_print(value.indices), _array_print(value.indptr))
        if any(part is None for part in parts):
            return None
        return ("sparse", value.format, value.shape, *parts)
    if isinstance(value, np.ndarray):
        return _array_print(value)
    return None


def same_scalar_held(known: Hashable, value: Any) -> bool:
    """Whether ``known`` is the print :func:`fingerprint` took of the very object ``value``, a scalar.

    Why this is enough: a scalar's print holds the object itself (``("scalar", type, value)``),
    and every type printed so (``str``, ``bool``, ``int``, ``float``, numpy's numbers) is
    immutable, so the same object still has the value and type it was printed with. An uns of
    500 such entries is then proven unchanged by 500 identity checks, not 500 prints (a few
    milliseconds a save). Any other object, an equal one included, is printed and compared.
    """
    return type(known) is tuple and len(known) == 3 and known[0] == "scalar" and known[2] is value


def column_print(series: pd.Series) -> Hashable | None:
    """A numeric, boolean or categorical obs column's fingerprint; None for strings and the rest.

    Two columns the diff calls equal have the same print, so a different print is
    a changed column without reading the stored one: floats are printed with
    ``-0.0`` as ``0.0`` and every NaN alike, categories by value.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories
        if categories.dtype == object and not all(isinstance(c, str) for c in categories):
            return None
        codes = _array_print(np.asarray(series.cat.codes))
        return None if codes is None else ("categorical", dtype.ordered, tuple(categories), codes)
    if isinstance(dtype, np.dtype):
        values = series.to_numpy(copy=False)
        if dtype.kind in "fc":
            values = values + dtype.type(0)  # a copy, with -0.0 as 0.0
            values[np.isnan(values)] = np.nan
        return _array_print(values)
    return None


def exact_print(series: pd.Series) -> Hashable | None:
    """A float column's print of its bytes as they are (-0.0 and NaN payloads included); None for others.

    Why beside :func:`column_print`: that one prints a copy made with -0.0 as 0.0 and one
    NaN, several times the cost of the checksum alone. A save asks this first: the same
    bytes are the same column; only a column whose bytes differ pays for the copy.
    """
    dtype = series.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "fc":
        return None
    return _array_print(series.to_numpy(copy=False))


def _array_print(array: np.ndarray) -> Hashable | None:
    if array.dtype.hasobject or array.dtype.kind in "OUSV":
        return None  # strings and objects: compared with the stored values instead
    data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    data.flags.writeable = False  # the C checksum takes read-only buffers only
    return (array.dtype.str, array.shape, _checksum(data))


def _mapping_keys(mapping: Mapping[Any, Any]) -> frozenset[str]:
    """The keys of an aligned mapping; anndata 0.13 lists X as ``layers[None]``, X is not a layer."""
    return frozenset(key for key in mapping if key is not None)
