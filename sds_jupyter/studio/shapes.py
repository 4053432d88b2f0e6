"""Cells as what they are: the polygons or circles of the shapes element a table annotates.

The canvas draws each cell as its outline (Xenium, MERSCOPE, CosMx boundaries)
or as a circle of its real radius (Visium spots) when the table annotates one
shapes element of such geometries; otherwise the cells stay points. The result
is in table order (one entry per obs row), in the canvas coordinate system, as
flat typed buffers the browser hands to WebGL as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.studio.cells import CellTable
from sds_jupyter.studio.elements import read_shapes_frame, shapes_transform
from sds_jupyter.studio.payloads import CanvasShapes

__all__ = ["MAX_VERTICES", "CellShapes", "cell_shapes"]

MAX_VERTICES = 12_000_000
"""Above this many outline vertices (~100 MB of float32 pairs) the cells are sent as points."""

CellShapes = tuple[CanvasShapes, list[np.ndarray]]
"""The payload's ``shapes`` entry and its buffers, in protocol order."""


def _annotated_shapes(root: zarr.Group, attrs: Mapping[str, Any]) -> str | None:
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
    import shapely

    if root is None:
        return None
    name = _annotated_shapes(root, attrs)
    if name is None:
        return None
    frame = read_shapes_frame(root, name)
    if "geometry" not in frame.columns or not len(frame):
        return None
    transform = shapes_transform(root, name, system)
    geometry = shapely.from_wkb(frame["geometry"].to_numpy())
    instance = cells.obs_column(attrs["instance_key"]).astype(str).to_numpy()
    row_of_cell = pd.Index(frame.index.astype(str)).get_indexer(instance)
    kinds = set(shapely.get_type_id(geometry).tolist())
    if kinds == {0} and "radius" in frame.columns:
        radius = frame["radius"].to_numpy(dtype=np.float64) * abs(transform.sx)
        per_cell = np.where(row_of_cell >= 0, radius[row_of_cell], np.nan).astype(np.float32)
        return {"kind": "circles", "element": name}, [per_cell]
    if not kinds <= {3, 6}:  # Polygon, MultiPolygon
        return None
    rings = shapely.get_exterior_ring(_largest_part(geometry))
    coords, owner = shapely.get_coordinates(rings, return_index=True)
    if len(coords) > MAX_VERTICES:
        return None
    counts = np.bincount(owner, minlength=len(geometry))
    first = np.concatenate([[0], np.cumsum(counts)])
    taken = np.where(row_of_cell >= 0, counts[np.maximum(row_of_cell, 0)], 0)
    starts = np.concatenate([[0], np.cumsum(taken)]).astype(np.uint32)
    valid = row_of_cell[row_of_cell >= 0]
    lengths = counts[valid]
    order = np.repeat(first[valid] - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
    x, y = transform.apply(coords[order, 0], coords[order, 1])
    vertices = np.column_stack([x, y]).astype(np.float32).ravel()
    return {"kind": "polygons", "element": name, "n_vertices": len(order)}, [starts, vertices]


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
