"""Canvas figures: cells, their colors and an image, ready for the front end.

:func:`build_canvas` turns a validated canvas spec into the ``CanvasPayload``
of the protocol plus its binary buffers (x, y, value, RGBA image, then the
cells' polygons or radii when the table annotates such shapes). Cells sit at
``obsm["spatial"]`` when the table has it, else at the centroids of the shapes
or labels the table annotates. The table is read as a :class:`CellTable`: the
one color-by column and the positions, never the whole obs. The image is the
pyramid's overview (the finest level within 2,048 px, or the level an export's
print size needs), composited here so the browser receives one RGBA picture
instead of raw channels of unknown dtype.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.errors import ElementError, FigureError
from sds_jupyter.protocol.buffers import DRAWING, laid_out
from sds_jupyter.studio.cells import CellTable, cell_table
from sds_jupyter.studio.elements import Level, Pyramid, label_centroids, open_pyramid, shape_centroids
from sds_jupyter.studio.palette import column_palette
from sds_jupyter.studio.shapeindex import ShapesNote, cell_shapes_or_note
from sds_jupyter.studio.shapes import CellShapes, default_shape_color

if TYPE_CHECKING:
    from anndata import AnnData

    from sds_jupyter.protocol.payloads import (
        CanvasColor,
        CanvasImage,
        CanvasLabels,
        CanvasPayload,
        CanvasPoints,
        CanvasShapeLayer,
        CategoricalColor,
        ChannelInfo,
        ContinuousColor,
        ImageChannel,
        Viewport,
    )

__all__ = [
    "CanvasData",
    "CellGeometry",
    "build_canvas",
    "canvas_payload",
    "cell_coordinates",
    "cell_geometry",
    "channel_planes",
    "colormap_lut",
    "geometry_nodes",
    "region_attrs",
]

DEFAULT_POINT_SIZE = 4.0
DEFAULT_COLORMAP = "viridis"
MISSING_CATEGORY = "NA"
MISSING_COLOR = "#cccccc"
MAX_IMAGE_SIDE = 2048
LUT_SIZE = 256
DEFAULT_CHANNEL_COLORS = ("#ff0000", "#00ff00", "#0000ff", "#ff00ff", "#00ffff", "#ffff00")


@dataclass
class CanvasData:
    """A canvas payload and the buffers that go with it, in protocol order."""

    payload: CanvasPayload
    buffers: list[np.ndarray]


# ----------------------------------------------------------------- positions


def region_attrs(table: AnnData | CellTable, table_attrs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """region / region_key / instance_key of a table, from uns or the table group's attrs."""
    found: dict[str, Any] = {}
    for source in (table_attrs or {}, cell_table(table).uns_without_studio.get("spatialdata_attrs") or {}):
        for key in ("region", "region_key", "instance_key"):
            if key in source and key not in found:
                value = source[key]
                found[key] = value.tolist() if isinstance(value, np.ndarray) else value
    return found


def _element_centroids(root: zarr.Group, name: str, system: str | None) -> pd.DataFrame:
    if name in _children(root, "shapes"):
        return shape_centroids(root, name, system)
    if name in _children(root, "labels"):
        return label_centroids(root, name, system)
    raise ElementError(f"The table annotates {name!r}, which is neither a shapes nor a labels element here.")


def _children(root: zarr.Group, kind: str) -> set[str]:
    try:
        group = root[kind]
    except KeyError:
        return set()
    return set(group.group_keys()) if isinstance(group, zarr.Group) else set()


def _spatial_xy(spatial: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first two columns of ``obsm["spatial"]`` as float32.

    Floats are cast straight (float64 to float32 rounds as through float64 would; float32 is
    copied once, not widened to float64 first); other dtypes go through float64 as before.
    """
    if spatial.dtype.kind != "f":
        spatial = spatial.astype(np.float64)
    return spatial[:, 0].astype(np.float32), spatial[:, 1].astype(np.float32)


def cell_coordinates(
    table: AnnData | CellTable,
    root: zarr.Group | None,
    table_attrs: Mapping[str, Any] | None = None,
    system: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """x and y of every cell (float32, NaN where a cell has no position).

    ``obsm["spatial"]`` is taken as already in the canvas coordinate system;
    centroids are brought into ``system`` (default ``global``).
    """
    cells = cell_table(table)
    spatial = cells.obsm_array("spatial")
    if spatial is not None:
        return _spatial_xy(spatial)
    attrs = region_attrs(cells, table_attrs)
    if root is None or not {"region", "instance_key"} <= attrs.keys():
        raise FigureError("The table has no obsm['spatial'] and does not say which shapes or labels it annotates.")
    regions = [attrs["region"]] if isinstance(attrs["region"], str) else list(attrs["region"])
    instance = cells.obs_column(attrs["instance_key"]).astype(str).to_numpy()
    if attrs.get("region_key") in cells.obs_columns:
        cell_region = cells.obs_column(attrs["region_key"]).astype(str).to_numpy()
    else:
        cell_region = np.full(cells.n_obs, regions[0], dtype=object)
    x = np.full(cells.n_obs, np.nan, dtype=np.float32)
    y = np.full(cells.n_obs, np.nan, dtype=np.float32)
    for region in regions:
        mask = cell_region == region
        if not mask.any():
            continue
        centroids = _element_centroids(root, region, system).reindex(instance[mask])
        x[mask] = centroids["x"].to_numpy(dtype=np.float32)
        y[mask] = centroids["y"].to_numpy(dtype=np.float32)
    return x, y


# -------------------------------------------------------------------- colors


def _hex(rgba: Sequence[float]) -> str:
    return "#" + "".join(f"{round(float(v) * 255):02x}" for v in rgba[:3])


def colormap_lut(name: str, size: int = LUT_SIZE) -> list[str]:
    """``size`` hex colors sampled evenly from matplotlib colormap ``name``."""
    import matplotlib

    try:
        cmap = matplotlib.colormaps[name]
    except KeyError:
        raise FigureError(f"Unknown colormap {name!r}.") from None
    return [_hex(cmap(i / (size - 1))) for i in range(size)]


def _categorical_color(
    series: pd.Series, column: str, uns: Mapping[str, Any], spec: Mapping[str, Any]
) -> tuple[CategoricalColor, np.ndarray]:
    categorical = series.astype("category") if not isinstance(series.dtype, pd.CategoricalDtype) else series
    categories = [str(c) for c in categorical.cat.categories]
    codes = categorical.cat.codes.to_numpy().astype(np.int64)
    colors = column_palette(column, categories, uns, spec.get("category_colors"))
    if (codes < 0).any():
        codes = np.where(codes < 0, len(categories), codes)
        categories, colors = [*categories, MISSING_CATEGORY], [*colors, MISSING_COLOR]
    if len(categories) > np.iinfo(np.uint16).max:
        raise FigureError(f"Column {column!r} has too many categories ({len(categories)}) to color by.")
    dtype = np.uint8 if len(categories) <= 256 else np.uint16  # one byte a cell for all but huge palettes
    info: CategoricalColor = {
        "mode": "categorical",
        "column": column,
        "categories": categories,
        "colors": colors,
        "codes": "uint8" if dtype is np.uint8 else "uint16",
    }
    return info, codes.astype(dtype)


def _continuous_color(
    series: pd.Series, column: str, uns: Mapping[str, Any], spec: Mapping[str, Any]
) -> tuple[ContinuousColor, np.ndarray]:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float32)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    name = spec.get("colormap") or DEFAULT_COLORMAP
    info: ContinuousColor = {
        "mode": "continuous",
        "column": column,
        "colormap": name,
        "min": low,
        "max": high,
        "lut": colormap_lut(name),
    }
    return info, values


def cell_colors(table: AnnData | CellTable, spec: Mapping[str, Any]) -> tuple[CanvasColor, np.ndarray | None]:
    """The color description and the per-cell value buffer for ``spec["color_by"]``."""
    cells = cell_table(table)
    column = spec.get("color_by")
    if not column:
        return {"mode": "none"}, None
    if column not in cells.obs_columns:
        raise FigureError(f"The figure colors by {column!r}, which is not an obs column of this version.")
    series = cells.obs_column(column)
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    return (_continuous_color if numeric else _categorical_color)(series, column, cells.uns_without_studio, spec)


# --------------------------------------------------------------------- image


def _rgb(color: str) -> np.ndarray:
    text = color.lstrip("#")
    if len(text) == 3:
        text = "".join(ch * 2 for ch in text)
    return np.array([int(text[i : i + 2], 16) / 255 for i in (0, 2, 4)], dtype=np.float32)


def _channel_planes(level: Level) -> np.ndarray:
    """The level as (channel, y, x), other axes at their first entry."""
    order = [axis for axis in ("c", "y", "x") if axis in level.axes]
    index = tuple(slice(None) if axis in order else 0 for axis in level.axes)
    kept = [axis for axis in level.axes if axis in order]
    planes = np.transpose(level.data[index], [kept.index(axis) for axis in order])
    return planes if "c" in order else planes[np.newaxis]


def _visible_channels(
    spec: Mapping[str, Any], names: Sequence[str]
) -> list[tuple[int, str, str, tuple[float, float] | None]]:
    """(index, name, color, contrast limits) of each visible channel the spec draws."""
    chosen = spec.get("channels")
    if not chosen:
        count = min(len(names), 3) if len(names) > 1 else 1
        colors = DEFAULT_CHANNEL_COLORS if count > 1 else ("#ffffff",)
        return [(i, names[i] if names else "0", colors[i], None) for i in range(count)]
    drawn = []
    for position, channel in enumerate(chosen):
        if not channel.get("visible", True):
            continue
        name = str(channel.get("name", position))
        index = names.index(name) if name in names else position
        if index >= max(len(names), 1):
            raise FigureError(f"The figure shows channel {name!r}, which the image does not have.")
        limits = channel.get("contrast_limits")
        color = channel.get("color") or DEFAULT_CHANNEL_COLORS[position % len(DEFAULT_CHANNEL_COLORS)]
        drawn.append((index, name, color, tuple(limits) if limits else None))
    return drawn


def composite_image(level: Level, spec: Mapping[str, Any]) -> tuple[np.ndarray, list[ImageChannel]]:
    """The visible channels blended additively into one RGBA uint8 image."""
    planes = _channel_planes(level)
    rgb = np.zeros((*planes.shape[1:], 3), dtype=np.float32)
    drawn: list[ImageChannel] = []
    for index, name, color, limits in _visible_channels(spec, list(level.channel_names)):
        plane = planes[index].astype(np.float32)
        low, high = limits if limits else (float(np.nanmin(plane)), float(np.nanmax(plane)))
        scaled = np.clip((plane - low) / (high - low if high > low else 1.0), 0.0, 1.0)
        rgb += scaled[..., np.newaxis] * _rgb(color)
        drawn.append({"name": name, "color": color})
    rgba = np.empty((*rgb.shape[:2], 4), dtype=np.uint8)
    rgba[..., :3] = np.round(np.clip(rgb, 0.0, 1.0) * 255)
    rgba[..., 3] = 255
    return rgba, drawn


MAX_CHANNELS = 8


def channel_planes(level: Level, spec: Mapping[str, Any]) -> tuple[list[ChannelInfo], list[np.ndarray]]:
    """Each channel of ``level`` (up to MAX_CHANNELS) as uint8 over its own value range, with its settings.

    Why: the browser blends the channels itself, so a person can turn each one on and off and
    change its color and contrast limits without a round trip. ``range`` is the raw
    [min, max] the 0-255 steps span; ``contrast_limits`` are raw values (the figure's, else the range).
    """
    planes = _channel_planes(level)
    names = list(level.channel_names) or [str(i) for i in range(planes.shape[0])]
    saved = {str(c.get("name", i)): c for i, c in enumerate(spec.get("channels") or [])}
    drawn = {index for index, *_ in _visible_channels(spec, names)}
    infos: list[ChannelInfo] = []
    buffers: list[np.ndarray] = []
    for index in range(min(planes.shape[0], MAX_CHANNELS)):
        plane = planes[index].astype(np.float32)
        finite = plane[np.isfinite(plane)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        span = high - low if high > low else 1.0
        buffers.append(np.round(np.clip((plane - low) / span, 0.0, 1.0) * 255).astype(np.uint8))
        name = names[index] if index < len(names) else str(index)
        chosen = saved.get(name) or {}
        limits = chosen.get("contrast_limits") or [low, high]
        color = chosen.get("color") or DEFAULT_CHANNEL_COLORS[index % len(DEFAULT_CHANNEL_COLORS)]
        infos.append(
            {
                "name": name,
                "color": color,
                "visible": index in drawn,
                "contrast_limits": [float(limits[0]), float(limits[1])],
                "range": [low, high],
            }
        )
    return infos, buffers


def planes_over(level: Level, ranges: Sequence[tuple[float, float]]) -> list[np.ndarray]:
    """Each channel of ``level`` (up to MAX_CHANNELS) as uint8, ``ranges[k]`` mapped onto 0-255.

    Why: detail read for a zoomed-in region must use the value ranges the overview's planes
    were scaled with (the ``channels`` request's ``range``), or its colors and contrast would
    jump at the border between the two.
    """
    planes = _channel_planes(level)
    out: list[np.ndarray] = []
    for index in range(min(planes.shape[0], MAX_CHANNELS, len(ranges))):
        low, high = ranges[index]
        span = high - low if high > low else 1.0
        plane = planes[index].astype(np.float32)
        out.append(np.round(np.clip((np.nan_to_num(plane, nan=low) - low) / span, 0.0, 1.0) * 255).astype(np.uint8))
    return out


# ------------------------------------------------------------------- payload


def _cell_box(x: np.ndarray, y: np.ndarray) -> list[float] | None:
    """The bounds of the cells that have a position; None when none has."""
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.any():
        return None
    return [float(x[finite].min()), float(y[finite].min()), float(x[finite].max()), float(y[finite].max())]


def _union(boxes: Sequence[Sequence[float]]) -> list[float]:
    return [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)]


def _bounds(x: np.ndarray, y: np.ndarray, image_bounds: list[float] | None) -> list[float]:
    boxes = [box for box in (_cell_box(x, y), image_bounds) if box]
    return _union(boxes) if boxes else [0.0, 0.0, 1.0, 1.0]


def _viewport(spec: Mapping[str, Any], bounds: list[float]) -> Viewport:
    stored = spec.get("viewport") or {}
    target = stored.get("target") or [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2]
    return {
        "target": [float(target[0]), float(target[1])],
        "zoom": float(stored.get("zoom", 0)),
        "rotation": float(stored.get("rotation", 0)),
    }


def _image_level(pyramid: Pyramid, x: np.ndarray, y: np.ndarray, draw_px: int | None) -> Level:
    """The whole image at the level a drawing needs: the browser's overview (at most MAX_IMAGE_SIDE),
    or for a drawing ``draw_px`` pixels across the cells' and image's bounds, the finest level
    with no more pixels over the image than the drawing gives it (a 89 mm export at 300 dpi
    reads about 1,050 px of a 2,048 px level's)."""
    if draw_px is None:
        return pyramid.overview(MAX_IMAGE_SIDE)
    first = pyramid.levels[0]
    image = pyramid.bounds(0, 0.0, 0.0, float(first.width), float(first.height))
    whole = _bounds(x, y, image)
    across = max(whole[2] - whole[0], whole[3] - whole[1])
    side = max(abs(image[2] - image[0]), abs(image[3] - image[1]))
    wanted = max(1, math.ceil(draw_px * side / across)) if across > 0 else draw_px
    return pyramid.overview(wanted)


@dataclass
class CellGeometry:
    """Where each cell sits and what it is drawn as (x, y float32; polygons or radii).

    Why apart from the colors: it follows from the table's positions and the shapes element
    alone, so every figure of the element, in every version that leaves those alone, shares it.
    """

    x: np.ndarray
    y: np.ndarray
    shapes: CellShapes | None
    #: Why the cells have no shapes though their element has some (past MAX_SHAPES), else None.
    note: ShapesNote | None = None

    @property
    def buffers(self) -> list[np.ndarray]:
        """x, y, then the shapes' buffers, in protocol order."""
        return [self.x, self.y, *(self.shapes[1] if self.shapes is not None else [])]

    @property
    def nbytes(self) -> int:
        return sum(int(buffer.nbytes) for buffer in self.buffers)

    @property
    def box(self) -> list[float] | None:
        """The cells' bounds; None when no cell has a position."""
        return _cell_box(self.x, self.y)


def cell_geometry(
    table: AnnData | CellTable,
    root: zarr.Group | None,
    table_attrs: Mapping[str, Any] | None = None,
    system: str | None = None,
) -> CellGeometry:
    """The cells' positions and shapes in coordinate system ``system`` (see :func:`cell_coordinates`)."""
    cells = cell_table(table)
    x, y = cell_coordinates(cells, root, table_attrs, system)
    shapes, note = cell_shapes_or_note(cells, root, region_attrs(cells, table_attrs), system)
    return CellGeometry(np.ascontiguousarray(x), np.ascontiguousarray(y), shapes, note)


def geometry_nodes(table: AnnData | CellTable, table_path: str, table_attrs: Mapping[str, Any] | None) -> list[str]:
    """The store nodes :func:`cell_geometry` reads: what names its result (with the coordinate system).

    The table's own metadata (its region attributes), ``obsm/spatial``, the instance and
    region columns, and each element the table annotates; obs columns that only color are not among them.
    """
    attrs = region_attrs(table, table_attrs)
    region = attrs.get("region")
    regions = [region] if isinstance(region, str) else [str(r) for r in region or []]
    nodes = [f"{table_path}/zarr.json", f"{table_path}/.zattrs", f"{table_path}/obsm/spatial"]
    nodes += [f"{table_path}/obs/{attrs[key]}" for key in ("instance_key", "region_key") if attrs.get(key)]
    nodes += [f"{kind}/{name}" for name in regions for kind in ("shapes", "labels")]
    return nodes


def canvas_payload(
    spec: Mapping[str, Any],
    cells: CellTable,
    cells_box: list[float] | None,
    color: CanvasColor,
    image: CanvasImage | None,
    unit: str | None,
    shapes: CellShapes | None,
    shapes_note: ShapesNote | None = None,
) -> CanvasPayload:
    """The payload's fields that do not depend on how the buffers travel."""
    boxes = [box for box in (cells_box, image["bounds"] if image else None) if box]
    bounds = _union(boxes) if boxes else [0.0, 0.0, 1.0, 1.0]
    return {
        "n_cells": int(cells.n_obs),
        "bounds": bounds,
        "viewport": _viewport(spec, bounds),
        "color": color,
        "point_size": float(spec.get("point_size") or DEFAULT_POINT_SIZE),
        "image": image,
        "unit": unit,
        "obs_columns": [str(column) for column in cells.obs_columns],
        "color_columns": color_columns(cells),
        "shapes": shapes[0] if shapes is not None else None,
        "points": _points_layer(spec.get("points")),
        "labels": _labels_layer(spec.get("labels")),
        "shape_layers": shape_layers(spec.get("shapes")),
        "shapes_note": shapes_note.text if shapes_note else None,
        "shapes_by_tile": shapes_note.by_tile if shapes_note else None,
        "coordinate_system": str(spec.get("coordinate_system") or ""),
    }


def color_columns(cells: CellTable) -> list[str]:
    """The obs columns a view offers to colour by: all but those holding one value and IDs.

    Why: a column with a single category paints every cell alike, and one with a category
    per cell (a cell ID) paints noise; both only lengthen the menu. Known from a categorical's
    categories alone (their array's shape), so nothing is read; other columns are offered.
    """
    n = cells.n_obs
    offered = []
    for column in cells.obs_columns:
        count = cells.distinct_values(column)
        if count is not None and (count <= 1 or (n > 1 and count >= n)):
            continue
        offered.append(str(column))
    return offered


def _points_layer(saved: Any) -> CanvasPoints | None:
    """The spec's transcripts layer (validated by the schema) as the payload carries it."""
    if not isinstance(saved, Mapping) or not saved.get("element"):
        return None
    genes = [str(gene) for gene in saved.get("genes") or []]
    return {"element": str(saved["element"]), "genes": genes, "radius": float(saved.get("radius") or 1.5)}


def _labels_layer(saved: Any) -> CanvasLabels | None:
    """The spec's labels layer (validated by the schema) as the payload carries it: filled, shown, opaque unless said."""
    if not isinstance(saved, Mapping) or not saved.get("element"):
        return None
    style: Literal["fill", "outline"] = "outline" if saved.get("style") == "outline" else "fill"
    opacity = float(saved.get("opacity", 1.0))
    return {
        "element": str(saved["element"]),
        "style": style,
        "visible": saved.get("visible", True) is not False,
        "opacity": opacity,
    }


def shape_layers(saved: Any) -> list[CanvasShapeLayer]:
    """The spec's shapes layers (validated by the schema) as the payload carries them: each element once,
    in its default colour unless one is saved, shown and opaque unless said."""
    layers: list[CanvasShapeLayer] = []
    for entry in saved if isinstance(saved, list) else []:
        if not isinstance(entry, Mapping) or not entry.get("element"):
            continue
        element = str(entry["element"])
        if any(layer["element"] == element for layer in layers):
            continue
        layers.append(
            {
                "element": element,
                "color": str(entry.get("color") or default_shape_color(element)),
                "visible": entry.get("visible", True) is not False,
                "opacity": float(entry.get("opacity", 1.0)),
            }
        )
    return layers


def build_canvas(
    spec: Mapping[str, Any],
    table: AnnData | CellTable,
    root: zarr.Group | None,
    table_attrs: Mapping[str, Any] | None = None,
    draw_px: int | None = None,
) -> CanvasData:
    """The protocol's CanvasPayload and buffers for a validated canvas ``spec``, all in one.

    What exports and notebooks draw from; the browser asks for the parts apart (``canvas``
    with ``cells_key``). ``draw_px``: the pixels the drawing spans across (an export's width
    at its dpi); the image is then read at the level that gives about that many, not the
    browser's overview size.
    """
    cells = cell_table(table)
    system = spec.get("coordinate_system") or None
    x, y = cell_coordinates(cells, root, table_attrs, system)
    color, values = cell_colors(cells, spec)
    buffers: list[np.ndarray] = [x, y] + ([values] if values is not None else [])
    image_info: CanvasImage | None = None
    unit = None
    if spec.get("image"):
        if root is None:
            raise ElementError("This figure shows an image, but no store was given to read it from.")
        level = _image_level(open_pyramid(root, str(spec["image"]), system), x, y, draw_px)
        rgba, channels = composite_image(level, spec)
        extent_y, extent_x = level.extent_yx
        bounds = level.transform.box(0.0, 0.0, extent_x, extent_y)
        image_info = {"width": int(rgba.shape[1]), "height": int(rgba.shape[0]), "bounds": bounds, "channels": channels}
        unit = level.unit
        buffers.append(rgba)
    shapes, note = cell_shapes_or_note(cells, root, region_attrs(cells, table_attrs), system)
    if shapes is not None:
        buffers.extend(shapes[1])
    payload = canvas_payload(spec, cells, _cell_box(x, y), color, image_info, unit, shapes, note)
    laid = laid_out("a canvas drawing", DRAWING, payload, [np.ascontiguousarray(buffer) for buffer in buffers])
    return CanvasData(payload, laid)
