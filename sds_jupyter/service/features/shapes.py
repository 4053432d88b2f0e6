"""Every shapes element of a coordinate system as outlines: ``shapes`` and ``shapes_tile``.

Why beside the cells: the cells are the shapes element a table annotates, drawn in table order
and coloured by it; a nucleus element (Xenium's ``nucleus_boundaries``) is annotated by no table
yet belongs in the same picture. Each element is read once (bounded by MAX_SHAPES from its
parquet footer), indexed on the grid the cells' outlines use (:func:`~sds_jupyter.service.pieces.outline_grid`),
named by its stored objects' identity and kept; the view asks only the tiles on screen.
An element past MAX_SHAPES (millions of polygons) is not read whole: it is indexed once a row
group at a time, its rings kept on disk (:mod:`~sds_jupyter.studio.shapeindex`), and its tiles
are cut from the shapes near each, with the same bound per tile.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr

from sds_jupyter.errors import ElementError
from sds_jupyter.limits import MAX_OUTLINE_TILE_CELLS, MAX_SHAPES
from sds_jupyter.lru import ByteLRU
from sds_jupyter.protocol.layouts import reply_buffers
from sds_jupyter.protocol.payloads import Bounds, OutlineTiles
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.protocol.types import ShapesData, ShapesIndex, ShapesTileData
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.pieces import (
    OUTLINE_CACHE_BYTES,
    OUTLINE_TILE_CELLS,
    OutlineTile,
    check_tile,
    outline_boxes,
    outline_grid,
    outline_tiles_cache,
    rings_in_tile,
    too_dense,
)
from sds_jupyter.service.session import Session
from sds_jupyter.stack import StackCaches, StackStore, node_identity
from sds_jupyter.studio.elements import ShapesOverBound
from sds_jupyter.studio.shapeindex import ShapeIndex, kept_shape_index
from sds_jupyter.studio.shapes import ElementRings, default_shape_color, element_rings
from sds_jupyter.studio.transforms import DEFAULT_SYSTEM

__all__ = ["ElementOutlines", "IndexedOutlines", "element_outlines", "shapes", "shapes_tile", "system_shapes"]

_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
#: Part of every key: a change of how an element is indexed gets new keys, never old entries.
_FORMAT = "shapes-element-2"
_TILE_FORMAT = "shapes-tile-1"


@dataclass(frozen=True)
class ElementOutlines:
    """One shapes element's rings, each ring's bounds, and the grid its tiles are cut on."""

    key: str
    rings: ElementRings
    boxes: np.ndarray
    grid: OutlineTiles

    @property
    def nbytes(self) -> int:
        return self.rings.nbytes + int(self.boxes.nbytes)

    def index(self, element: str) -> ShapesIndex:
        known = self.boxes[~np.isnan(self.boxes[:, 0])]
        bounds: Bounds | None = None
        if len(known):
            bounds = [
                float(known[:, 0].min()),
                float(known[:, 1].min()),
                float(known[:, 2].max()),
                float(known[:, 3].max()),
            ]
        return {
            "element": element,
            "key": self.key,
            "kind": self.rings.kind,
            "n_shapes": self.rings.n,
            "bounds": bounds,
            "grid": self.grid,
        }

    def in_region(self, region: list[float]) -> tuple[ElementRings, np.ndarray]:
        """Rings and their bounds an export of ``region`` draws from: all of them (it picks by bounds)."""
        return self.rings, self.boxes

    def tile(self, column: int, row: int) -> OutlineTile:
        """The outlines of the shapes that meet tile (column, row), in the element's order."""
        return rings_in_tile(self.boxes, self.grid, self.rings.starts, self.rings.vertices, column, row)


@dataclass(frozen=True)
class IndexedOutlines:
    """A shapes element past MAX_SHAPES: its rings on disk, its shapes found by tile (the same replies)."""

    key: str
    shapes: ShapeIndex

    @property
    def grid(self) -> OutlineTiles:
        return self.shapes.grid

    @property
    def nbytes(self) -> int:
        return self.shapes.nbytes

    def index(self, element: str) -> ShapesIndex:
        return {
            "element": element,
            "key": self.key,
            "kind": self.shapes.kind,
            "n_shapes": self.shapes.n,
            "bounds": self.shapes.bounds,
            "grid": self.shapes.grid,
        }

    def in_region(self, region: list[float]) -> tuple[ElementRings, np.ndarray]:
        """The rings whose bounds meet ``region`` and those bounds (at most MAX_SHAPES: an export's view)."""
        try:
            ids = self.shapes.within(region, MAX_SHAPES)
        except ElementError as exc:
            raise RequestError(str(exc)) from None
        starts, vertices = self.shapes.rings(ids)
        return ElementRings(self.shapes.kind, starts, vertices), np.asarray(self.shapes.boxes[ids], dtype=np.float64)

    def tile(self, column: int, row: int) -> OutlineTile:
        """The outlines of the shapes that meet tile (column, row), in the element's order (ids its own)."""
        grid = self.grid
        x0, y0 = grid["x0"] + column * grid["size"], grid["y0"] + row * grid["size"]
        ids = self.shapes.near([x0, y0, x0 + grid["size"], y0 + grid["size"]], column, row)
        if len(ids) > MAX_OUTLINE_TILE_CELLS:
            raise too_dense(column, row, len(ids), "shapes")
        starts, vertices = self.shapes.rings(ids)
        found = rings_in_tile(np.asarray(self.shapes.boxes[ids], dtype=np.float64), grid, starts, vertices, column, row)
        return OutlineTile(ids[found.index].astype(np.uint32), found.starts, found.vertices, found.box)


def _root(session: Session, version: int | str | None) -> zarr.Group:
    return zarr.open_group(StackStore(session.stack.at(session.depth(version)), caches=session.caches), mode="r")


def system_shapes(root: zarr.Group, system: str) -> list[str]:
    """The shapes elements with a transformation into ``system`` (``global`` when unsaid), or none at all, sorted."""
    try:
        group = root["shapes"]
    except KeyError:
        return []
    if not isinstance(group, zarr.Group):
        return []
    wanted = system or DEFAULT_SYSTEM
    found = []
    for name in sorted(group.group_keys()):
        attrs: dict[str, Any] = group[name].attrs.asdict()  # stored JSON, as SpatialData writes it
        transforms = attrs.get("coordinateTransformations") or []
        outputs = {(t.get("output") or {}).get("name") for t in transforms if isinstance(t, dict)}
        if not transforms or wanted in outputs:
            found.append(name)
    return found


def element_outlines(
    caches: StackCaches, root: zarr.Group, element: str, system: str
) -> ElementOutlines | IndexedOutlines:
    """Shapes element ``element`` indexed for tiles in ``system``, read once per identity of its stored objects.

    Why the identity (:func:`node_identity`): a version that leaves the element alone shares
    the entry, and one that rewrites it gets a new key, so an entry is never stale.
    """
    if not _NAME.fullmatch(element or ""):
        raise RequestError(f"{element[:60]!r} is not a shapes element name: use letters, digits, '.', '_' and '-'.")
    names = system_shapes(root, system)
    if element not in names:
        raise RequestError(
            f"No shapes element {element!r} in coordinate system {system or DEFAULT_SYSTEM!r}; "
            f"it has: {', '.join(names) or 'none'}."
        )
    store = root.store
    assert isinstance(store, StackStore)
    identity = node_identity(store, f"shapes/{element}")
    key = hashlib.sha256("\n".join([_FORMAT, system, identity]).encode("utf-8")).hexdigest()[:32]

    def read() -> ElementOutlines | IndexedOutlines:
        try:
            rings = element_rings(root, element, system or None)
        except ShapesOverBound:
            return _indexed(root, element, system, key, identity)
        except ElementError as exc:
            raise RequestError(str(exc)) from None
        if rings is None:
            raise RequestError(
                f"Shapes element {element!r} holds neither polygons nor circles; it has no outlines to draw."
            )
        boxes, _ = outline_boxes(rings.starts, rings.vertices)
        grid = outline_grid(boxes)
        grid["n_vertices"] = len(rings.vertices) // 2
        return ElementOutlines(key, rings, boxes, grid)

    cache: ByteLRU[ElementOutlines | IndexedOutlines] = caches.derived("shape-elements", OUTLINE_CACHE_BYTES)
    return cache.get_or_compute(key, read)


def _indexed(root: zarr.Group, element: str, system: str, key: str, identity: str) -> IndexedOutlines:
    """Element ``element`` past MAX_SHAPES indexed by tile (read once, a row group at a time; kept on disk by identity)."""
    try:
        kept = f"{system}\n{identity}"
        return IndexedOutlines(key, kept_shape_index(root, element, system or None, OUTLINE_TILE_CELLS, kept))
    except ElementError as exc:
        raise RequestError(str(exc)) from None


def shapes(
    session: Session, version: int | str | None = None, element: str = "", coordinate_system: str = ""
) -> ShapesData:
    """The coordinate system's shapes elements and, for ``element``, its index (what ``shapes_tile`` serves)."""
    root = _root(session, version)
    names = system_shapes(root, coordinate_system)
    colors = [default_shape_color(name) for name in names]
    payload: ShapesData = {"elements": names, "colors": colors, "element": element, "index": None}
    if element:
        payload["index"] = element_outlines(session.caches, root, element, coordinate_system).index(element)
    return payload


def shapes_tile(
    session: Session,
    version: int | str | None = None,
    element: str = "",
    key: str = "",
    column: int = 0,
    row: int = 0,
    coordinate_system: str = "",
) -> Reply[ShapesTileData]:
    """The outlines of one shapes element's shapes that meet tile (column, row) of its grid.

    ``key`` is the ``shapes`` reply's: the answer is named by it and the tile, so it never
    changes and the browser keeps it; a key that no longer names the element is refused.
    """
    if not element or not key:
        raise RequestError("The shapes_tile request needs a shapes element and its key (from the shapes request).")
    if len(key) > 64:
        raise RequestError("Parameter 'key' is too long (a shapes key has 32 characters).")
    outlines = element_outlines(session.caches, _root(session, version), element, coordinate_system)
    if key != outlines.key:
        raise RequestError(f"Shapes element {element!r} is not the one key {key!r} names; ask shapes again.")
    check_tile(outlines.grid, column, row)
    name = hashlib.sha256("\n".join([_TILE_FORMAT, key, str(column), str(row)]).encode("utf-8")).hexdigest()[:32]

    tile = outline_tiles_cache(session.caches).get_or_compute(name, lambda: outlines.tile(column, row))
    payload: ShapesTileData = {
        "element": element,
        "key": key,
        "column": column,
        "row": row,
        "box": tile.box,
        "n_shapes": len(tile.index),
        "n_vertices": len(tile.vertices) // 2,
    }
    return Reply(payload, reply_buffers("shapes_tile", payload, tile.buffers), etag=name, addressed=True)
