"""What a canvas view is drawn from, computed once per set of stored objects and kept.

Why: a figure's cells (positions, outlines) and its image's overview follow from a few
stored objects, which versions never change; every figure of the element, in every
version that leaves those objects alone, draws the same ones. So each is computed once,
named by the identity of the objects it was read from (:func:`node_identity`), and kept
in the session's :class:`~sds_jupyter.stack.caches.StackCaches` (``derived``), bounded by
bytes: the REST server's services (one per version folder) and the widget's are given the
process's caches, so they share the entries and a version switch finds them there.

Cell geometry (positions, outlines, and for a tissue whose outlines go by tile their bounds,
areas, grid and wire codes) is also kept on disk under the same name
(:func:`~sds_jupyter.studio.keptarrays.geometry_store`), so a new server or kernel maps the
first tissue of a million cells from there rather than deriving it again (issue 39).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sds_jupyter.limits import MAX_OUTLINE_TILE_CELLS
from sds_jupyter.lru import ByteLRU
from sds_jupyter.protocol.payloads import CanvasImage, ChannelInfo, ImageLevel, OutlineTiles
from sds_jupyter.protocol.reply import served_from
from sds_jupyter.protocol.types import CellQuantum
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.stack import StackCaches, StackStore, node_identity
from sds_jupyter.studio.canvas import CellGeometry, cell_geometry, channel_planes, geometry_nodes, planes_over
from sds_jupyter.studio.elements import Pyramid, open_pyramid
from sds_jupyter.studio.keptarrays import KeptArrays, geometry_store
from sds_jupyter.studio.shapeindex import ShapesNote
from sds_jupyter.studio.tableview import TableView

__all__ = [
    "CELL_CACHE_BYTES",
    "IMAGE_CACHE_BYTES",
    "NO_POSITION",
    "OUTLINES_AT_ONCE",
    "OUTLINE_CACHE_BYTES",
    "OUTLINE_TILE_CELLS",
    "OVERVIEW_SIDE",
    "OutlineTile",
    "Outlines",
    "Overview",
    "cached_geometry",
    "cached_level_overview",
    "cached_outline_tile",
    "cached_outlines",
    "cached_overview",
    "cells_cache",
    "cells_key",
    "cells_sent",
    "check_tile",
    "image_key",
    "outline_boxes",
    "outline_grid",
    "outline_tiles_cache",
    "outlines_cache",
    "overviews_cache",
    "quantized",
    "rings_in_tile",
    "too_dense",
]

#: Bytes of cell geometry kept (a 100,000-cell tissue with outlines is about 20 MB).
CELL_CACHE_BYTES = 512 * 1024 * 1024
#: Bytes of image overviews kept (at most 8 channels of 2,048 x 2,048 uint8 each).
IMAGE_CACHE_BYTES = 256 * 1024 * 1024
#: The side the browser's image overview fits in (pixels). Why not MAX_IMAGE_SIDE, as exports use:
#: a fitted figure is rarely wider than this on screen, and detail beyond it comes by tile for
#: the part in view, so the first view of an 8,192 px image costs 3 MB of planes rather than 12.
OVERVIEW_SIDE = 1024
#: Part of every key: a change of what is computed (or how) gets new keys, never old entries.
_CELLS_FORMAT = "cells-4"
_OVERVIEW_FORMAT = "overview-2"
_TILE_FORMAT = "outline-tile-1"
#: Part of the disk cache's identity of cell geometry: a change of what is kept there gets new entries.
_DISK_FORMAT = "cells-disk-1"
#: Tissues of more cells than this send their outlines by tile, and circles of their cells' area
#: with the positions. Why 5,000: the demo's outlines cost about 76 bytes a cell, so up to here
#: they add at most ~0.4 MB to the first figure (less than one outline tile of a large tissue
#: and one request fewer), while the 100,000-cell demo's would add 7.6 MB.
OUTLINES_AT_ONCE = 5_000
#: About how many cells one outline tile holds: the grid is made this fine (see MAX_OUTLINE_TILE_CELLS).
#: A few thousand keeps a tile near 200 KB, so the handful a zoomed-in view needs arrive quickly.
OUTLINE_TILE_CELLS = 2_048
#: The finest grid (tiles a side): past it the cells pile up too densely for tiles to separate them.
_MAX_GRID = 1024
#: Bytes of outline grids (4 floats a cell) and of outline tiles kept.
OUTLINE_CACHE_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class Overview:
    """An image's overview as the browser blends it: each channel's uint8 plane and settings."""

    infos: list[ChannelInfo]
    planes: list[np.ndarray]
    bounds: list[float]
    unit: str | None
    #: The image's pyramid, finest first (what the browser picks an overview level and tiles from).
    levels: list[ImageLevel]

    @property
    def width(self) -> int:
        return int(self.planes[0].shape[1]) if self.planes else 0

    @property
    def height(self) -> int:
        return int(self.planes[0].shape[0]) if self.planes else 0

    @property
    def nbytes(self) -> int:
        return sum(int(plane.nbytes) for plane in self.planes)

    def canvas_image(self) -> CanvasImage:
        """The canvas payload's ``image``: size, place and the channels drawn."""
        shown = [{"name": info["name"], "color": info["color"]} for info in self.infos if info["visible"]]
        image = {"width": self.width, "height": self.height, "bounds": self.bounds, "channels": shown}
        return {**image, "levels": self.levels, "level": self.level}  # type: ignore[typeddict-item]

    @property
    def level(self) -> int | None:
        """The pyramid level these planes are (None: read with a stride, no level that size)."""
        sizes = [(found["width"], found["height"]) for found in self.levels]
        return sizes.index((self.width, self.height)) if (self.width, self.height) in sizes else None


def cells_cache(caches: StackCaches) -> ByteLRU[CellGeometry]:
    """Cell geometry kept in ``caches``, at most :data:`CELL_CACHE_BYTES`."""
    return caches.derived("cells", CELL_CACHE_BYTES)


def overviews_cache(caches: StackCaches) -> ByteLRU[Overview]:
    """Image overviews kept in ``caches``, at most :data:`IMAGE_CACHE_BYTES`."""
    return caches.derived("overviews", IMAGE_CACHE_BYTES)


def _digest(parts: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


def _store(view: TableView) -> StackStore:
    store = view.root.store
    if not isinstance(store, StackStore):  # every service view reads a stack
        raise TypeError(f"a table view over {type(store).__name__}, not a stack")
    return store


def _system(spec: Mapping[str, Any]) -> str:
    return str(spec.get("coordinate_system") or "")


def cells_key(view: TableView, spec: Mapping[str, Any]) -> str:
    """The name of a figure's cell geometry: the stored objects it is read from and the coordinate system."""
    store = _store(view)
    nodes = geometry_nodes(view, view.group.path, view.attrs)
    return _digest([_CELLS_FORMAT, _system(spec), *(node_identity(store, node) for node in nodes)])


def _full_geometry(view: TableView, spec: Mapping[str, Any]) -> tuple[str, CellGeometry]:
    key = cells_key(view, spec)
    with cells_cache(view.caches).claim(key) as turn:
        if turn.missing:
            full, outlines = _kept_on_disk(view, spec, key)
            if outlines is not None:
                outlines_cache(view.caches).put(key, outlines)
            turn.fill(full)
        else:
            served_from("cells", "memory")
    return key, turn.value


def _kept_on_disk(
    view: TableView, spec: Mapping[str, Any], key: str, what: str = "cells"
) -> tuple[CellGeometry, Outlines | None]:
    """A figure's cell geometry (and outline index, when tiled) mapped from the disk cache, else derived and kept there.

    ``what`` the request took from it (``cells``, or the ``outlines`` index) is said with its source.
    """

    with geometry_store().claim(f"{_DISK_FORMAT}\n{key}") as turn:
        found = _from_entry(turn.entry) if turn.entry is not None else None
        served_from(what, "disk" if found is not None else "built")
        if found is None:  # none kept, or one that does not hold together: derived here, kept (replacing it)
            full = cell_geometry(view, view.root, view.attrs, spec.get("coordinate_system") or None)
            found = _from_entry(turn.fill(*_entry_of(full, _outlines(full) if _tiled(full) else None)))
    if found is None:  # derived just now, so this does not happen unless the derivation itself is wrong
        raise RequestError("The cell geometry derived for this figure does not hold together.")
    return found


def _entry_of(full: CellGeometry, outlines: Outlines | None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """What the disk cache keeps of ``full`` (and its outline index): JSON and named arrays."""
    shapes = full.shapes
    meta: dict[str, Any] = {
        "descriptor": shapes[0] if shapes is not None else None,
        "n_shape_buffers": len(shapes[1]) if shapes is not None else 0,
        "note": list(full.note) if full.note is not None else None,
        "tiled": outlines is not None,
    }
    arrays = {"x": full.x, "y": full.y}
    arrays.update({f"shape_{i}": buffer for i, buffer in enumerate(shapes[1] if shapes is not None else [])})
    if outlines is not None:
        meta.update({"grid": outlines.grid, "sent": outlines.sent.shapes[0], "quantum": outlines.quantum})  # type: ignore[index]
        arrays.update({"boxes": outlines.boxes, "radius": outlines.sent.buffers[2]})
        arrays.update({f"code_{i}": codes for i, codes in enumerate(outlines.codes)})
    return meta, arrays


def _from_entry(entry: KeptArrays) -> tuple[CellGeometry, Outlines | None] | None:
    """The geometry (and outline index) an entry holds; None for one that does not hold together (rebuilt)."""
    meta, arrays = entry.meta, entry.arrays
    try:
        x, y = arrays["x"], arrays["y"]
        buffers = [arrays[f"shape_{i}"] for i in range(int(meta["n_shape_buffers"]))]
        descriptor, note = meta["descriptor"], meta["note"]
        shapes = (descriptor, buffers) if descriptor is not None else None
        full = CellGeometry(x, y, shapes, ShapesNote(str(note[0]), note[1]) if note is not None else None)
        kind = None if descriptor is None else descriptor["kind"]
        wanted = {"polygons": ["<u4", "<f4"], "circles": ["<f4"], None: []}[kind]
        if [b.dtype.str for b in [x, y, *buffers]] != ["<f4", "<f4", *wanted] or len(x) != len(y):
            raise ValueError("the kept cell geometry is not what is sent")
        if (kind == "polygons" and not _rings_hold(full)) or (kind == "circles" and len(buffers[0]) != len(x)):
            raise ValueError("the kept cell geometry does not hold together")
        if not meta["tiled"]:
            return full, None
        radius, boxes, codes = arrays["radius"], arrays["boxes"], [arrays[f"code_{i}"] for i in range(3)]
        if boxes.shape != (len(x), 4) or any(len(c) != len(x) for c in [radius, *codes]):
            raise ValueError("the kept outline index does not match its cells")
        if [a.dtype.str for a in [boxes, radius, *codes]] != ["<f8", "<f4", "<u2", "<u2", "<u2"]:
            raise ValueError("the kept outline index is not what is sent")
        grid, quantum = meta["grid"], meta["quantum"]
        numbers = [grid[k] for k in ("x0", "y0", "size")] + [quantum[k] for k in ("x0", "y0", "step", "radius_step")]
        counts = [grid[k] for k in ("columns", "rows", "n_vertices")]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
            raise ValueError("the kept grid or quantum is not numbers")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
            raise ValueError("the kept grid's counts are not counts")
        if meta["sent"].get("outlines") != grid or meta["sent"].get("kind") != "circles":
            raise ValueError("the kept circles do not name the kept grid")
        sent = CellGeometry(x, y, (meta["sent"], [radius]))
        return full, Outlines(full, boxes, grid, sent, quantum, codes)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def _rings_hold(full: CellGeometry) -> bool:
    """Whether polygons' ``starts`` run in order from 0 to their vertices, one ring a cell: what tiles index by."""
    assert full.shapes is not None
    starts, vertices = full.shapes[1]
    return (
        len(starts) == len(full.x) + 1
        and (len(starts) == 0 or (int(starts[0]) == 0 and int(starts[-1]) * 2 == len(vertices)))
        and not (np.diff(starts.astype(np.int64)) < 0).any()
    )


def cached_geometry(view: TableView, spec: Mapping[str, Any]) -> tuple[str, CellGeometry]:
    """A figure's cell geometry as sent, and its key, computed only when no figure read the same objects before.

    A large tissue's polygons are sent as circles of their area, the outlines by tile (:class:`Outlines`).
    """
    key, full = _full_geometry(view, spec)
    if not _tiled(full):
        return key, full
    return key, _kept_outlines(view, spec, key, full).sent


def _kept_outlines(view: TableView, spec: Mapping[str, Any], key: str, full: CellGeometry) -> Outlines:
    """A tiled tissue's outline index, built once per cells key (mapped from disk when kept there)."""
    with outlines_cache(view.caches).claim(key) as turn:
        if turn.missing:
            turn.fill(_kept_on_disk(view, spec, key, "outlines")[1] or _outlines(full))
        else:
            served_from("outlines", "memory")
    return turn.value


def image_key(view: TableView, spec: Mapping[str, Any]) -> str:
    """The name of a figure's image overview: the image element, the coordinate system, the channel settings."""
    store = _store(view)
    settings = json.dumps(spec.get("channels") or [], sort_keys=True, allow_nan=False)
    node = node_identity(store, f"images/{spec['image']}")
    return _digest([_OVERVIEW_FORMAT, _system(spec), node, settings])


def cached_overview(view: TableView, spec: Mapping[str, Any]) -> tuple[str, Overview]:
    """A figure's image overview (the finest level within OVERVIEW_SIDE) and its key, read once."""
    key = image_key(view, spec)

    def read() -> Overview:
        system = spec.get("coordinate_system") or None
        pyramid = open_pyramid(view.root, str(spec["image"]), system)
        level = pyramid.overview(OVERVIEW_SIDE)
        infos, planes = channel_planes(level, spec)
        extent_y, extent_x = level.extent_yx
        bounds = level.transform.box(0.0, 0.0, extent_x, extent_y)
        planes = [np.ascontiguousarray(plane) for plane in planes]
        return Overview(infos, planes, bounds, level.unit, _levels(pyramid))

    return key, overviews_cache(view.caches).get_or_compute(key, read)


def _levels(pyramid: Pyramid) -> list[ImageLevel]:
    """Each level's size, tile side and place in the figure's coordinates, finest first."""
    return [
        {
            "width": found.width,
            "height": found.height,
            "tile": found.tile,
            "bounds": pyramid.bounds(index, 0, 0, found.width, found.height),
        }
        for index, found in enumerate(pyramid.levels)
    ]


def cached_level_overview(view: TableView, spec: Mapping[str, Any], level: int) -> tuple[str, Overview]:
    """The overview at pyramid ``level`` (the browser's choice for its view) and its key, read once.

    Why: a view a few hundred pixels wide shows no more of the image than a coarse level holds,
    and OVERVIEW_SIDE's planes are four to sixteen times its bytes. The planes are scaled over the
    OVERVIEW_SIDE overview's value ranges, as every tile is, so colours and contrast agree across
    levels. A level over OVERVIEW_SIDE a side is refused: finer detail comes by tile.
    """
    shown, whole = cached_overview(view, spec)
    if level == whole.level:
        return shown, whole  # the default overview, asked by its level: the same reply
    key = f"{shown}/level-{level}"

    def read() -> Overview:
        pyramid = open_pyramid(view.root, str(spec["image"]), spec.get("coordinate_system") or None)
        found = pyramid.level(level)
        if max(found.width, found.height) > OVERVIEW_SIDE:
            raise RequestError(
                f"Level {level} of image {pyramid.name!r} is {found.width} x {found.height} px; an overview is at most "
                f"{OVERVIEW_SIDE} px a side (OVERVIEW_SIDE): ask a coarser level, and image_tile for detail."
            )
        spans = [(float(info["range"][0]), float(info["range"][1])) for info in whole.infos]
        planes = planes_over(pyramid.read(level, 0, 0, found.width, found.height), spans)
        bounds = pyramid.bounds(level, 0, 0, found.width, found.height)
        return Overview(whole.infos, [np.ascontiguousarray(p) for p in planes], bounds, whole.unit, whole.levels)

    return key, overviews_cache(view.caches).get_or_compute(key, read)


# ------------------------------------------------------------------ level of detail: outlines by tile


@dataclass(frozen=True)
class Outlines:
    """A large tissue's polygons, indexed for tiles, and what is sent instead of them at first.

    Why: the fit view of 100,000 cells cannot show their outlines (a cell is a pixel or two), so
    the first figure draws circles of each cell's area and the outlines of the part in view come
    by tile once the view is zoomed in; never all of them at once.
    """

    full: CellGeometry
    #: Each cell's outline bounds (NaN for a cell without one), float64 x0, y0, x1, y1 columns.
    boxes: np.ndarray
    grid: OutlineTiles
    #: What ``cells`` and ``canvas`` send: positions and circles, the grid in the shapes' entry.
    sent: CellGeometry
    #: How ``sent``'s x, y and radii go on the wire, and their uint16 codes (``quantized``).
    quantum: CellQuantum
    codes: list[np.ndarray]

    @property
    def nbytes(self) -> int:
        kept = [*self.sent.buffers[2:], *self.codes]
        return int(self.boxes.nbytes) + sum(int(b.nbytes) for b in kept)


@dataclass(frozen=True)
class OutlineTile:
    """The outlines of the cells that meet one tile: their indices, starts and vertices."""

    index: np.ndarray
    starts: np.ndarray
    vertices: np.ndarray
    box: list[float]

    @property
    def buffers(self) -> list[np.ndarray]:
        return [self.index, self.starts, self.vertices]

    @property
    def nbytes(self) -> int:
        return sum(int(buffer.nbytes) for buffer in self.buffers)


def outlines_cache(caches: StackCaches) -> ByteLRU[Outlines]:
    """Outline grids kept in ``caches``, at most :data:`OUTLINE_CACHE_BYTES`."""
    return caches.derived("outlines", OUTLINE_CACHE_BYTES)


def outline_tiles_cache(caches: StackCaches) -> ByteLRU[OutlineTile]:
    """Outline tiles kept in ``caches``, at most :data:`OUTLINE_CACHE_BYTES`."""
    return caches.derived("outline-tiles", OUTLINE_CACHE_BYTES)


def _tiled(geometry: CellGeometry) -> bool:
    shapes = geometry.shapes
    return shapes is not None and shapes[0]["kind"] == "polygons" and len(geometry.x) > OUTLINES_AT_ONCE


def outline_boxes(starts: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's outline bounds (n x 4) and the radius of a circle of its area (NaN: no outline)."""
    xy = vertices.reshape(-1, 2).astype(np.float64)
    counts = np.diff(starts.astype(np.int64))
    has = counts > 0
    boxes = np.full((len(counts), 4), np.nan)
    area = np.full(len(counts), np.nan)
    if len(xy):
        first = starts[:-1][has].astype(np.int64)
        for column, (reduce, axis) in enumerate([(np.minimum, 0), (np.minimum, 1), (np.maximum, 0), (np.maximum, 1)]):
            boxes[has, column] = reduce.reduceat(xy[:, axis], first)
        nxt = np.roll(xy, -1, axis=0)
        last = starts[1:][has].astype(np.int64) - 1
        nxt[last] = xy[first]  # each ring closes on its own first vertex
        cross = xy[:, 0] * nxt[:, 1] - nxt[:, 0] * xy[:, 1]
        area[has] = np.abs(np.add.reduceat(cross, first)) / 2
    return boxes, np.sqrt(area / np.pi).astype(np.float32)


def outline_grid(boxes: np.ndarray) -> OutlineTiles:
    """The coarsest square grid (a power of two a side) whose fullest tile holds about OUTLINE_TILE_CELLS."""
    known = boxes[~np.isnan(boxes[:, 0])]
    x0, y0 = (float(known[:, 0].min()), float(known[:, 1].min())) if len(known) else (0.0, 0.0)
    x1, y1 = (float(known[:, 2].max()), float(known[:, 3].max())) if len(known) else (1.0, 1.0)
    side = max(x1 - x0, y1 - y0, 1e-9)
    cx, cy = (known[:, 0] + known[:, 2]) / 2, (known[:, 1] + known[:, 3]) / 2
    tiles = 1
    while tiles < _MAX_GRID:
        size = side / tiles
        cols = np.minimum(((cx - x0) / size).astype(np.int64), tiles - 1)
        rows = np.minimum(((cy - y0) / size).astype(np.int64), tiles - 1)
        fullest = np.bincount(rows * tiles + cols).max() if len(known) else 0
        if fullest <= OUTLINE_TILE_CELLS:
            break
        tiles *= 2
    size = side / tiles
    columns = max(1, int(np.ceil((x1 - x0) / size - 1e-9)))
    rows_n = max(1, int(np.ceil((y1 - y0) / size - 1e-9)))
    return {"x0": x0, "y0": y0, "size": size, "columns": columns, "rows": rows_n, "n_vertices": 0}


def _outlines(full: CellGeometry) -> Outlines:
    assert full.shapes is not None
    descriptor, (starts, vertices) = full.shapes
    boxes, radius = outline_boxes(starts, vertices)
    grid = outline_grid(boxes)
    grid["n_vertices"] = int(descriptor.get("n_vertices", len(vertices) // 2))
    circles = {"kind": "circles", "element": descriptor["element"], "outlines": grid}
    sent = CellGeometry(full.x, full.y, (circles, [radius]))  # type: ignore[arg-type]
    quantum, codes = quantized(full.x, full.y, radius)
    return Outlines(full, boxes, grid, sent, quantum, codes)


#: The uint16 code of NaN (no position, no shape); real values take codes 0 to NO_POSITION - 1.
NO_POSITION = 65535


def _codes(values: np.ndarray, origin: float, step: float) -> np.ndarray:
    """``values`` as the nearest uint16 codes of ``origin + code * step`` (NaN: NO_POSITION)."""
    scaled = np.rint((np.asarray(values, dtype=np.float64) - origin) / step)
    finite = np.isfinite(scaled)
    codes = np.full(len(scaled), NO_POSITION, dtype=np.uint16)
    codes[finite] = np.clip(scaled[finite], 0, NO_POSITION - 1)
    return codes


def quantized(x: np.ndarray, y: np.ndarray, radius: np.ndarray) -> tuple[CellQuantum, list[np.ndarray]]:
    """A large tissue's positions and radii as uint16 codes, and the quantum that reads them back.

    Why: a million cells' float32 x, y and radius are 12 MB that gzip barely shrinks (random
    low bits); as codes on a grid of 65,534 steps over the tissue's longer side they are 6 MB,
    each position within half a step (:class:`~sds_jupyter.protocol.types.CellQuantum`), and
    x and y go as differences from the cell before (:func:`_delta`), which compress.
    """
    finite = np.isfinite(x) & np.isfinite(y)
    x0 = float(np.min(x[finite])) if finite.any() else 0.0
    y0 = float(np.min(y[finite])) if finite.any() else 0.0
    extent = max(float(np.max(x[finite])) - x0, float(np.max(y[finite])) - y0) if finite.any() else 0.0
    step = extent / (NO_POSITION - 1) if extent > 0 else 1.0
    sized = radius[np.isfinite(radius)]
    top = float(np.max(sized)) if sized.size else 0.0
    radius_step = top / (NO_POSITION - 1) if top > 0 else 1.0
    quantum: CellQuantum = {"x0": x0, "y0": y0, "step": step, "radius_step": radius_step}
    return quantum, [_delta(_codes(x, x0, step)), _delta(_codes(y, y0, step)), _codes(radius, 0.0, radius_step)]


def _delta(codes: np.ndarray) -> np.ndarray:
    """Each code less the one before it, modulo 2^16 (the first as it is): lossless, read back by a running sum.

    Why: tables list cells roughly in scan order, so neighbours' codes differ by a little and the
    differences compress (0.57 of the codes under brotli on the demo, against 1.0 for the codes).
    """
    return np.diff(codes, prepend=np.uint16(0)).astype(np.uint16)


def cells_sent(
    view: TableView, spec: Mapping[str, Any]
) -> tuple[str, CellGeometry, CellQuantum | None, list[np.ndarray]]:
    """What the ``cells`` reply sends: its key, the geometry, and its buffers (uint16 codes with
    their quantum for a tissue whose outlines come by tile; else float32, quantum None)."""
    key, full = _full_geometry(view, spec)
    if not _tiled(full):
        return key, full, None, full.buffers
    outlines = _kept_outlines(view, spec, key, full)
    return key, outlines.sent, outlines.quantum, outlines.codes


def cached_outlines(view: TableView, spec: Mapping[str, Any]) -> tuple[str, Outlines | None]:
    """A figure's cells key and, when its outlines go by tile, their index (None when sent at once)."""
    key, full = _full_geometry(view, spec)
    if not _tiled(full):
        return key, None
    return key, _kept_outlines(view, spec, key, full)


def _tile(outlines: Outlines, column: int, row: int) -> OutlineTile:
    """The outlines of the cells whose polygon meets tile (column, row), in table order."""
    assert outlines.full.shapes is not None
    starts, vertices = outlines.full.shapes[1]
    return rings_in_tile(outlines.boxes, outlines.grid, starts, vertices, column, row, what="cells")


def rings_in_tile(
    boxes: np.ndarray,
    grid: OutlineTiles,
    starts: np.ndarray,
    vertices: np.ndarray,
    column: int,
    row: int,
    what: str = "shapes",
) -> OutlineTile:
    """The rings (``starts``, ``vertices``; their bounds ``boxes``) that meet tile (column, row) of ``grid``, in order.

    Why one function for cells and shapes elements: a nucleus element's tiles are cut as the
    cells' are, so both layers load the same way and hold the same bound per tile.
    """
    import shapely

    x0, y0 = grid["x0"] + column * grid["size"], grid["y0"] + row * grid["size"]
    box = [x0, y0, x0 + grid["size"], y0 + grid["size"]]
    b = boxes
    near = np.flatnonzero((b[:, 0] <= box[2]) & (b[:, 2] >= box[0]) & (b[:, 1] <= box[3]) & (b[:, 3] >= box[1]))
    if len(near) > MAX_OUTLINE_TILE_CELLS:
        raise too_dense(column, row, len(near), what)
    xy = vertices.reshape(-1, 2)
    lengths = (starts[near + 1] - starts[near]).astype(np.int64)
    taken = np.repeat(starts[near].astype(np.int64) - (np.cumsum(lengths) - lengths), lengths) + np.arange(
        int(lengths.sum())
    )
    rings = shapely.linearrings(xy[taken].astype(np.float64), indices=np.repeat(np.arange(len(near)), lengths))
    meets = shapely.intersects(shapely.polygons(rings), shapely.box(*box))
    index = near[meets].astype(np.uint32)
    lengths = lengths[meets]
    keep = np.repeat(meets, (starts[near + 1] - starts[near]).astype(np.int64))
    own = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint32)
    return OutlineTile(index, own, np.ascontiguousarray(xy[taken][keep]).ravel(), box)


def too_dense(column: int, row: int, count: int, what: str) -> RequestError:
    """The refusal of an outline tile that meets more than MAX_OUTLINE_TILE_CELLS rings."""
    return RequestError(
        f"Outline tile ({column}, {row}) meets {count} {what}, more than {MAX_OUTLINE_TILE_CELLS}; "
        f"the {what} there pile up too densely for outlines, so they are drawn as circles."
    )


def cached_outline_tile(
    caches: StackCaches, outlines: Outlines, key: str, column: int, row: int
) -> tuple[str, OutlineTile]:
    """Tile (column, row) of a tissue's outlines and its name (the cells key and the tile), built once."""
    check_tile(outlines.grid, column, row)
    name = _digest([_TILE_FORMAT, key, str(column), str(row)])
    return name, outline_tiles_cache(caches).get_or_compute(name, lambda: _tile(outlines, column, row))


def check_tile(grid: OutlineTiles, column: int, row: int) -> None:
    """Refuse a tile outside ``grid``, saying how large it is."""
    if not (0 <= column < grid["columns"] and 0 <= row < grid["rows"]):
        raise RequestError(
            f"Outline tile ({column}, {row}) is outside the grid of {grid['columns']} x {grid['rows']} tiles; "
            "ask for a column and row within it."
        )
