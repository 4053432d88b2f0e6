"""What one version holds: its SpatialData elements and its tables' columns.

Read from metadata documents, parquet footers and the obs dataframe only:
never an image chunk, a shape geometry or X. That keeps a 100,000-cell
version under half a second. Each element, column and key this version wrote
(``status`` ``"added"`` or ``"changed"``) is marked from its manifest, and the
obs columns it deleted are named, against the version below it.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

import pandas as pd
import zarr
from anndata.io import read_elem
from zarr.abc.store import SuffixByteRequest

from sds_jupyter.jsontext import JSONRefused, loads_bounded
from sds_jupyter.protocol.types import (
    ContentsData,
    ElementSummary,
    KeyEntry,
    TableContents,
)
from sds_jupyter.service.columns import column_summary
from sds_jupyter.stack import Stack, StackCaches, StackStore
from sds_jupyter.studio.nodes import child_group, element_length

__all__ = ["ELEMENT_KINDS", "read_contents"]

ElementKind = Literal["images", "labels", "shapes", "points", "tables"]
NodeStatus = Literal["added", "changed"]

ELEMENT_KINDS: tuple[ElementKind, ...] = ("images", "labels", "shapes", "points", "tables")
_FOOTER = 8  # a parquet file ends with the footer's length (4 bytes) and "PAR1"
#: A GeoParquet footer's "geo" document, at most: it names a few columns and their geometry types.
MAX_GEO_BYTES = 1024 * 1024


class Marks:
    """Which nodes one version wrote, and which existed in the version below it."""

    def __init__(self, stack: Stack, depth: int, caches: StackCaches | None = None) -> None:
        self.below: StackStore | None = None
        self.keys: list[str] = []
        self.deleted: list[str] = []
        if depth > 0:
            version = stack.versions[stack.depth - depth]
            self.keys = sorted(f.key for f in version.manifest.files)
            self.deleted = list(version.manifest.deleted)
            self.below = StackStore(stack.at(depth - 1), caches=caches)

    def status(self, node: str) -> NodeStatus | None:
        """``"added"`` (absent below), ``"changed"`` (written here), or None (inherited)."""
        if self.below is None:
            return None
        prefix = f"{node}/"
        if not any(key.startswith(prefix) for key in self.keys) and not any(d.startswith(prefix) for d in self.deleted):
            return None
        return "changed" if self.below.exists_raw(f"{node}/zarr.json") else "added"

    def removed_children(self, node: str, now: list[str]) -> list[str]:
        """Children of ``node`` below that this version no longer has."""
        if self.below is None or not any(d.startswith(f"{node}/") for d in self.deleted):
            return []
        present = set(now)
        return [name for name in self.below.children_raw(node) if name not in present and name != "zarr.json"]


def read_contents(stack: Stack, depth: int, caches: StackCaches | None = None) -> ContentsData:
    """Every element of the version at ``depth`` and, for each table, its columns and keys (read through ``caches``)."""
    store = StackStore(stack.at(depth), caches=caches)
    root = zarr.open_group(store, mode="r", zarr_format=store.root_zarr_format)
    marks = Marks(stack, depth, caches)
    elements: list[ElementSummary] = []
    tables: list[TableContents] = []
    for kind in ELEMENT_KINDS:
        kind_node = root.get(kind)
        if not isinstance(kind_node, zarr.Group):
            continue
        for name in sorted(kind_node.group_keys()):
            path = f"{kind}/{name}"
            node = child_group(root, path)  # one of group_keys()
            entry: ElementSummary = {"kind": kind, "name": name}
            status = marks.status(path)
            if status:
                entry["status"] = status
            try:
                if kind in ("images", "labels"):
                    entry.update(_raster(node))
                elif kind in ("shapes", "points"):
                    entry.update(_parquet(store, path, node))
                else:
                    table = _table(node, path, marks)
                    tables.append(table)
                    entry["n_obs"], entry["n_vars"] = table["n_obs"], table["n_vars"]
                    entry["annotates"] = table["annotates"]
            except (KeyError, ValueError, OSError, TypeError, struct.error) as exc:
                entry["error"] = f"cannot describe this element: {exc}"
            elements.append(entry)
    return {"depth": depth, "elements": elements, "tables": tables}


class _RasterFacts(TypedDict, total=False):
    """What :func:`_raster` adds to an :class:`ElementSummary`."""

    levels: int
    axes: list[str]
    shape: list[int]
    dtype: str
    channels: list[str]


class _ParquetFacts(TypedDict, total=False):
    """What :func:`_parquet` adds to an :class:`ElementSummary`."""

    n: int
    geometry: list[str]
    axes: list[str]


def _raster(node: zarr.Group) -> _RasterFacts:
    """Size, levels, axes and channel names of an image or labels element (metadata only)."""
    attrs: dict[str, Any] = node.attrs.asdict()  # stored JSON: read defensively below
    ome = attrs.get("ome", attrs)
    scales = ome.get("multiscales") or []
    datasets = scales[0].get("datasets", []) if scales else []
    axes = [
        str(a.get("name", a) if isinstance(a, Mapping) else a) for a in (scales[0].get("axes", []) if scales else [])
    ]
    out: _RasterFacts = {"levels": len(datasets), "axes": axes}
    if datasets:
        level0 = node[str(datasets[0]["path"])]
        if not isinstance(level0, zarr.Array):
            raise ValueError(f"its level {datasets[0]['path']!r} is a group, not an array")
        out["shape"], out["dtype"] = [int(n) for n in level0.shape], str(level0.dtype)
    omero = ome.get("omero")
    if isinstance(omero, Mapping):
        out["channels"] = [str(c.get("label", i)) for i, c in enumerate(omero.get("channels", []))]
    return out


def _parquet_footer(store: StackStore, key: str) -> Any:
    """The metadata of a parquet file from its footer alone (two small reads)."""
    import pyarrow.parquet as pq

    tail = store.read_raw(key, SuffixByteRequest(_FOOTER))
    if tail is None or len(tail) < _FOOTER or tail[4:] != b"PAR1":
        raise ValueError(f"{key} is not a parquet file")
    (length,) = struct.unpack("<I", tail[:4])
    footer = store.read_raw(key, SuffixByteRequest(length + _FOOTER))
    assert footer is not None
    return pq.read_metadata(io.BytesIO(b"PAR1" + footer))


def _geometry_types(geo: bytes) -> list[str]:
    """The geometry types a GeoParquet ``geo`` footer names; none when it is not readable JSON (it is the dataset's)."""
    try:
        doc = loads_bounded(geo, max_bytes=MAX_GEO_BYTES)
    except JSONRefused:
        return []
    columns = doc.get("columns") if isinstance(doc, dict) else None
    found: list[str] = []
    for column in columns.values() if isinstance(columns, dict) else ():
        types = column.get("geometry_types") if isinstance(column, dict) else None
        found += [str(t) for t in types if str(t) not in found] if isinstance(types, list) else []
    return found


def _parquet(store: StackStore, path: str, node: zarr.Group) -> _ParquetFacts:
    """Row count (and geometry types, for shapes) of a shapes or points element."""
    files = sorted(k for k in store.keys_raw(f"{path}/") if k.endswith(".parquet"))
    n = 0
    geometry: list[str] = []
    for key in files:
        meta = _parquet_footer(store, key)
        n += meta.num_rows
        geo = (meta.metadata or {}).get(b"geo")
        if geo:
            geometry += [t for t in _geometry_types(geo) if t not in geometry]
    out: _ParquetFacts = {"n": n}
    if geometry:
        out["geometry"] = geometry
    attrs: dict[str, Any] = node.attrs.asdict()
    if isinstance(attrs.get("axes"), list):
        out["axes"] = [str(a) for a in attrs["axes"]]
    return out


def _table(node: zarr.Group, path: str, marks: Marks) -> TableContents:
    attrs: dict[str, Any] = node.attrs.asdict()
    obs_node = child_group(node, "obs")
    obs_attrs: dict[str, Any] = obs_node.attrs.asdict()
    index_name = str(obs_attrs.get("_index", "_index"))
    names = [str(c) for c in obs_attrs.get("column-order", [])]
    region = attrs.get("region")
    annotates = [str(r) for r in region] if isinstance(region, list) else ([str(region)] if region else [])
    columns = []
    for column in names:
        # column by column: the cell names (the index) are never read, only counted
        summary = column_summary(column, pd.Series(read_elem(obs_node[column])))
        status = marks.status(f"{path}/obs/{column}")
        if status:
            summary["status"] = status
        columns.append(summary)
    return {
        "name": path.split("/", 1)[1],
        "n_obs": element_length(obs_node[index_name]),
        "n_vars": _n_vars(node),
        "annotates": annotates,
        "status": marks.status(path),
        "obs": columns,
        "removed_obs": marks.removed_children(f"{path}/obs", [*names, index_name]),
        "obsm": _keys(node, "obsm", path, marks, shapes=True),
        "uns": _keys(node, "uns", path, marks, shapes=False),
    }


def _n_vars(node: zarr.Group) -> int:
    var = child_group(node, "var")
    index = var.attrs.get("_index", "_index")
    return element_length(var[str(index)])


def _keys(node: zarr.Group, part: str, path: str, marks: Marks, *, shapes: bool) -> list[KeyEntry]:
    if part not in node:
        return []
    group = child_group(node, part)
    out: list[KeyEntry] = []
    for key in sorted(group.keys()):
        entry: KeyEntry = {"key": key}
        child = group[key]
        if shapes and isinstance(child, zarr.Array):
            entry["shape"] = [int(n) for n in child.shape]
        status = marks.status(f"{path}/{part}/{key}")
        if status:
            entry["status"] = status
        out.append(entry)
    return out
