"""Cells as what they are: the polygons or circles of the shapes element a table annotates.

The canvas draws each cell as its outline (Xenium, MERSCOPE, CosMx boundaries)
or as a circle of its real radius (Visium spots) when the table annotates one
shapes element of such geometries; otherwise the cells stay points. The result
is in table order (one entry per obs row), in the canvas coordinate system, as
flat typed buffers the browser hands to WebGL as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.errors import ElementError
from sds_jupyter.protocol.payloads import CanvasShapes
from sds_jupyter.studio.cells import CellTable
from sds_jupyter.studio.elements import read_shapes_frame, read_shapes_table, shapes_transform

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CIRCLE_SIDES",
    "MAX_VERTICES",
    "SHAPE_COLORS",
    "CellShapes",
    "ElementRings",
    "ExportShapes",
    "annotated_shapes",
    "cell_shapes",
    "default_shape_color",
    "element_rings",
    "export_shapes",
    "exteriors_of",
]

MAX_VERTICES = 12_000_000
"""Above this many outline vertices (~100 MB of float32 pairs) the cells are sent as points."""

CellShapes = tuple[CanvasShapes, list[np.ndarray]]
"""The payload's ``shapes`` entry and its buffers, in protocol order."""

CIRCLE_SIDES = 24
"""Sides of the ring a circle (a Visium spot) is outlined by: round at any zoom a spot is drawn at."""


SHAPE_COLORS = ("#00e5ff", "#ffd400", "#ff3dd4", "#7dff3a", "#ff8a1f", "#b69cff")
"""Outline colours a shapes element is given unless its figure saved one: bright hues that show over a
dark image and, as lines one pixel wide, over the light background too."""


def default_shape_color(element: str) -> str:
    """Shapes element ``element``'s outline colour unless a figure saved one: its name's alone.

    Why by name: the view's layer row, the figure's payload and its export all show the same
    colour for an element, without knowing what other elements the store holds.
    """
    import hashlib

    digest = hashlib.sha256(element.encode("utf-8")).digest()
    return SHAPE_COLORS[digest[0] % len(SHAPE_COLORS)]


@dataclass(frozen=True)
class ElementRings:
    """Every shape of one shapes element as an outline, in the element's own order.

    Why apart from :func:`cell_shapes`: a nucleus element is annotated by no table, so it has
    no table order; it is drawn as outlines of its own (one layer per element), ring i the
    element's row i, in the canvas coordinate system (x, y float32 pairs, ``starts`` uint32).
    """

    kind: str
    starts: np.ndarray
    vertices: np.ndarray

    @property
    def n(self) -> int:
        return len(self.starts) - 1

    @property
    def nbytes(self) -> int:
        return int(self.starts.nbytes + self.vertices.nbytes)


def element_rings(root: zarr.Group, name: str, system: str | None = None) -> ElementRings | None:
    """Shapes element ``name``'s outlines (circles as CIRCLE_SIDES-gons); None when neither polygons nor circles.

    The element is read through the bounded readers (MAX_SHAPES from its footer), and refused
    past MAX_VERTICES as the cells are.
    """
    found = _shapes_columns(root, name)
    if found is None:
        return ElementRings("polygons", np.zeros(1, np.uint32), np.zeros(0, np.float32))
    wkb, _, radius = found
    transform = shapes_transform(root, name, system)
    outlined = exteriors_of(wkb, radius)
    if outlined is None:
        return None
    kind, coords, counts = outlined
    if len(coords) > MAX_VERTICES:
        raise ElementError(
            f"Shapes element {name!r} has {len(coords):,} outline vertices; at most {MAX_VERTICES:,} (MAX_VERTICES) are drawn."
        )
    x, y = transform.apply(coords[:, 0], coords[:, 1])
    vertices = np.empty(2 * len(coords), dtype=np.float32)
    vertices[0::2], vertices[1::2] = x, y
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint32)
    return ElementRings(kind, starts, vertices)


def exteriors_of(wkb: Any, radius: np.ndarray | None) -> tuple[str, np.ndarray, np.ndarray] | None:
    """Geometries ``wkb`` (Arrow or an array of WKB) as outlines: their kind ("polygons" or "circles"),
    every ring's coordinates (n x 2 float64) and vertices a ring; None when neither polygons nor circles.

    Why one function: a whole element (:func:`element_rings`) and one batch of an element past
    MAX_SHAPES (:mod:`~sds_jupyter.studio.shapeindex`) are outlined the same way.
    """
    import pyarrow as pa

    if isinstance(wkb, pa.Array):
        wkb = pa.chunked_array([wkb])
    exteriors = _polygon_exteriors(wkb) if isinstance(wkb, pa.ChunkedArray) else None
    if exteriors is not None:
        return "polygons", exteriors[0], exteriors[1]
    made = _shapely_exteriors(
        np.asarray(wkb.to_numpy(zero_copy_only=False) if isinstance(wkb, pa.ChunkedArray) else wkb)
    )
    if made is None or (isinstance(made, str) and radius is None):
        return None
    if isinstance(made, str):
        assert radius is not None
        return ("circles", *_circle_rings(wkb, radius))
    return "polygons", made[0], made[1]


def _circle_rings(wkb: Any, radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each circle (a point and its radius) as a closed ring of CIRCLE_SIDES sides, in the element's units."""
    import pyarrow as pa
    import shapely

    values = np.asarray(wkb.to_numpy(zero_copy_only=False) if isinstance(wkb, pa.ChunkedArray) else wkb)
    centre = shapely.get_coordinates(shapely.from_wkb(values))
    angle = np.linspace(0, 2 * np.pi, CIRCLE_SIDES + 1)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    coords = centre[:, None, :] + radius[:, None, None] * ring[None, :, :]
    return coords.reshape(-1, 2), np.full(len(centre), CIRCLE_SIDES + 1, dtype=np.int64)


def annotated_shapes(root: zarr.Group, attrs: Mapping[str, Any]) -> str | None:
    """The one shapes element the table annotates, if it annotates exactly one and it is a shapes element."""
    region = attrs.get("region")
    regions = [region] if isinstance(region, str) else list(region or [])
    if len(regions) != 1 or "instance_key" not in attrs:
        return None
    try:
        shapes = root["shapes"]
    except KeyError:
        return None
    if not isinstance(shapes, zarr.Group) or regions[0] not in set(shapes.group_keys()):
        return None
    return str(regions[0])


def cell_shapes(
    cells: CellTable, root: zarr.Group | None, attrs: Mapping[str, Any], system: str | None = None
) -> CellShapes | None:
    """Polygons (``starts`` uint32, ``vertices`` float32 x,y pairs) or circle radii (float32), by obs row.

    None when the table annotates no single shapes element, or its geometries are
    neither polygons nor circles, or there are too many vertices to send.
    """
    import pyarrow as pa

    if root is None:
        return None
    name = annotated_shapes(root, attrs)
    if name is None:
        return None
    found = _shapes_columns(root, name)
    if found is None:
        return None
    wkb, index, radius = found
    transform = shapes_transform(root, name, system)
    row_of_cell = _rows_of(cells.obs_column(attrs["instance_key"]), index)
    exteriors = _polygon_exteriors(wkb) if isinstance(wkb, pa.ChunkedArray) else None
    if exteriors is None:  # not plain little-endian polygons: shapely reads them
        made = _shapely_exteriors(
            np.asarray(wkb.to_numpy(zero_copy_only=False) if isinstance(wkb, pa.ChunkedArray) else wkb)
        )
        if made is None:
            return None
        if isinstance(made, str):  # points: circles of their radius
            if radius is None:
                return None
            scaled = radius * abs(transform.sx)
            per_cell = np.where(row_of_cell >= 0, scaled[row_of_cell], np.nan).astype(np.float32)
            return {"kind": "circles", "element": name}, [per_cell]
        exteriors = made
    coords, counts = exteriors
    if len(coords) > MAX_VERTICES:
        return None
    first = np.concatenate([[0], np.cumsum(counts)])
    taken = np.where(row_of_cell >= 0, counts[np.maximum(row_of_cell, 0)], 0)
    starts = np.concatenate([[0], np.cumsum(taken)]).astype(np.uint32)
    if len(row_of_cell) == len(counts) and np.array_equal(row_of_cell, np.arange(len(counts))):
        ordered = coords  # the table lists the shapes in their own order
    else:
        valid = row_of_cell[row_of_cell >= 0]
        lengths = counts[valid]
        order = np.repeat(first[valid] - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        ordered = coords[order]
    x, y = transform.apply(ordered[:, 0], ordered[:, 1])
    vertices = np.empty(2 * len(ordered), dtype=np.float32)  # x,y pairs, written in place (no float64 n x 2 copy)
    vertices[0::2] = x
    vertices[1::2] = y
    return {"kind": "polygons", "element": name, "n_vertices": len(ordered)}, [starts, vertices]


def _shapes_columns(
    root: zarr.Group, name: str
) -> tuple[pa.ChunkedArray | np.ndarray, pd.Index, np.ndarray | None] | None:
    """A shapes element's WKB (Arrow when stored as one object), its index, and its radius column (or None)."""
    table = read_shapes_table(root, name)
    if table is None:
        frame = read_shapes_frame(root, name)
        if "geometry" not in frame.columns or not len(frame):
            return None
        radius = frame["radius"].to_numpy(dtype=np.float64) if "radius" in frame.columns else None
        return frame["geometry"].to_numpy(), frame.index, radius
    if "geometry" not in table.column_names or not table.num_rows:
        return None
    rest = table.drop_columns(["geometry"]).to_pandas()  # the index and the other columns, without the WKB
    radius = rest["radius"].to_numpy(dtype=np.float64) if "radius" in rest.columns else None
    return table.column("geometry"), rest.index, radius


def _rows_of(instance: pd.Series, index: pd.Index) -> np.ndarray:
    """Each cell's row in the shapes element (-1: none), matching instance ids as text.

    Integer ids on both sides match as integers (the same answer as their text, without
    making a million strings), and ids in the same order match without a lookup.
    """
    if instance.dtype.kind in "iu" and index.dtype.kind in "iu":
        values = instance.to_numpy()
        if len(values) == len(index) and np.array_equal(values, index.to_numpy()):
            return np.arange(len(values), dtype=np.intp)
        return np.asarray(index.get_indexer(values))
    return np.asarray(pd.Index(index.astype(str)).get_indexer(instance.astype(str).to_numpy()))


def _shapely_exteriors(wkb: np.ndarray) -> tuple[np.ndarray, np.ndarray] | str | None:
    """Each geometry's exterior (coordinates, count a geometry) through shapely; "points" for circles; None otherwise."""
    import shapely

    geometry = shapely.from_wkb(wkb)
    kinds = set(shapely.get_type_id(geometry).tolist())
    if kinds == {0}:
        return "points"
    if not kinds <= {3, 6}:  # Polygon, MultiPolygon
        return None
    rings = shapely.get_exterior_ring(_largest_part(geometry))
    coords, owner = shapely.get_coordinates(rings, return_index=True)
    return coords, np.bincount(owner, minlength=len(geometry))


#: WKB's header: byte order (1: little-endian), geometry type (uint32), ring count (uint32).
_WKB_POLYGON = 3
_WKB_HEAD = 9


def _polygon_exteriors(wkb: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each polygon's exterior ring read straight from the WKB buffers: coordinates (n x 2 float64), count a polygon.

    Why not shapely: making a million geometries to take their outer ring costs seconds (a
    million-cell tissue: about 7 s of the first figure); the coordinates are already in the
    buffer, after a 13-byte header. None unless every value is a little-endian 2D Polygon
    (shapely then reads them: multipolygons, points, other encodings).
    """
    if wkb.null_count:
        return None
    parts = [_chunk_exteriors(chunk) for chunk in wkb.chunks]
    if any(part is None for part in parts):
        return None
    found = [part for part in parts if part is not None]
    if not found:
        return np.zeros((0, 2)), np.zeros(0, dtype=np.int64)
    return np.concatenate([c for c, _ in found]), np.concatenate([n for _, n in found])


def _chunk_exteriors(array: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_polygon_exteriors` of one Arrow chunk."""
    import pyarrow as pa

    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if not (pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)):
        return None
    _, offset_buffer, data_buffer = array.buffers()
    width = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    offsets = np.frombuffer(offset_buffer, dtype=width)[array.offset : array.offset + len(array) + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    start, size = offsets[:-1], np.diff(offsets)
    if (size < _WKB_HEAD).any():
        return None
    head = data[start[:, None] + np.arange(_WKB_HEAD)]
    kinds = np.ascontiguousarray(head[:, 1:5]).view("<u4").ravel()
    if (head[:, 0] != 1).any() or (kinds != _WKB_POLYGON).any():
        return None
    rings = np.ascontiguousarray(head[:, 5:9]).view("<u4").ravel()
    has = rings > 0
    if (size[has] < _WKB_HEAD + 4).any():
        return None
    counts = np.zeros(len(start), dtype=np.int64)
    counts[has] = np.ascontiguousarray(data[start[has, None] + _WKB_HEAD + np.arange(4)]).view("<u4").ravel()
    first = start + _WKB_HEAD + 4
    if (first[has] + 16 * counts[has] > (start + size)[has]).any():
        return None  # a ring longer than its value: not WKB as written here
    # every point's 16 bytes (x, y float64), polygon after polygon
    at = np.repeat(first - 16 * (np.cumsum(counts) - counts), counts) + 16 * np.arange(int(counts.sum()))
    points = np.lib.stride_tricks.sliding_window_view(data, 16)[at] if len(at) else np.zeros((0, 16), np.uint8)
    return np.ascontiguousarray(points).view("<f8").reshape(-1, 2), counts


def _largest_part(geometry: np.ndarray) -> np.ndarray:
    """Each MultiPolygon by its largest polygon (a cell is drawn as one outline)."""
    import shapely

    multi = np.flatnonzero(shapely.get_type_id(geometry) == 6)
    if not len(multi):
        return geometry
    out = geometry.copy()
    for index in multi:
        parts = shapely.get_parts(geometry[index])
        out[index] = parts[int(np.argmax(shapely.area(parts)))] if len(parts) else shapely.Polygon()
    return out


@dataclass(frozen=True)
class ExportShapes:
    """A shapes layer as an export draws it: the rings that meet the region, their colour and opacity."""

    element: str
    color: str
    opacity: float
    starts: np.ndarray
    vertices: np.ndarray

    def rings(self) -> list[np.ndarray]:
        """Each ring as an (n, 2) array of x, y (what a matplotlib LineCollection takes)."""
        xy = self.vertices.reshape(-1, 2)
        return [xy[a:b] for a, b in zip(self.starts[:-1].tolist(), self.starts[1:].tolist(), strict=True)]


def export_shapes(
    element: str,
    rings: ElementRings,
    boxes: np.ndarray,
    region: tuple[float, float, float, float],
    color: str,
    opacity: float,
) -> ExportShapes:
    """The rings of ``element`` whose bounds (``boxes``, one row of x0, y0, x1, y1 a ring) meet ``region``.

    Why the bounds alone: a ring whose box meets the region but not the ring itself draws outside the
    axes, which clip it, so the picture is the one the tiles give, with less work than an exact test.
    """
    x0, y0, x1, y1 = region
    meets = (boxes[:, 0] <= x1) & (boxes[:, 2] >= x0) & (boxes[:, 1] <= y1) & (boxes[:, 3] >= y0)
    near = np.flatnonzero(meets)
    lengths = (rings.starts[near + 1] - rings.starts[near]).astype(np.int64)
    taken = np.repeat(rings.starts[near].astype(np.int64) - (np.cumsum(lengths) - lengths), lengths)
    taken = taken + np.arange(int(lengths.sum()))
    xy = rings.vertices.reshape(-1, 2)[taken]
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return ExportShapes(element, color, opacity, starts, np.ascontiguousarray(xy).ravel())
