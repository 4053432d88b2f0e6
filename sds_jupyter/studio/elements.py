"""Reading SpatialData elements (images, labels, shapes) straight from a zarr group.

The stack store is read-only and not a local folder, so ``spatialdata.read_zarr``
cannot open it; these helpers read only what a canvas needs: a multiscale image
or label element through the one :class:`Pyramid` reader (the level and region a
view draws), and shape centroids from the element's parquet object, all through
the group's store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from sds_jupyter.errors import ElementError, shown
from sds_jupyter.limits import MAX_LEVELS, MAX_SHAPES, MAX_SHAPES_BYTES, item_bytes
from sds_jupyter.studio.bounds import READ_SLOTS, check_level_shape, check_read, check_scale
from sds_jupyter.studio.transforms import IDENTITY, Axial, element_transform, system_unit

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Level",
    "Pyramid",
    "PyramidLevel",
    "RegionLevel",
    "ShapesOverBound",
    "coarsest_level",
    "label_centroids",
    "label_plane",
    "level_pixels",
    "node_path",
    "open_pyramid",
    "read_shapes_frame",
    "read_shapes_table",
    "read_store_view",
    "region_level",
    "shape_centroids",
    "shapes_transform",
]


@dataclass(frozen=True)
class Level:
    """One pyramid level: its pixels, axis names, and the scale from its pixels to level 0."""

    data: np.ndarray
    axes: tuple[str, ...]
    scale_yx: tuple[float, float]
    channel_names: tuple[str, ...]
    extent_yx: tuple[float, float] = (0.0, 0.0)
    """Height and width the level covers in level-0 pixels (before any striding)."""
    transform: Axial = IDENTITY
    """From level-0 pixels to the coordinate system the canvas draws in."""
    unit: str | None = None
    """The unit of that coordinate system's x axis, when it names a physical one."""

    @property
    def height(self) -> int:
        return int(self.data.shape[self.axes.index("y")])

    @property
    def width(self) -> int:
        return int(self.data.shape[self.axes.index("x")])


def node_path(root: zarr.Group) -> str:
    """The store key prefix of the group ``root`` ("" at the store's root, else its path and "/")."""
    path = root.path
    return f"{path}/" if path else ""


def read_store_view(root: zarr.Group, key: str) -> memoryview | None:
    """The raw object at ``key`` (relative to ``root``) as a view of the bytes the store read, or None when absent.

    Why a view, not ``bytes``: a million cells' shapes parquet is 140 MB, and copying
    it into ``bytes`` before parsing took 0.3 to 0.4 s of a cold first tissue (2026-12-07, load 16).
    """
    buffer = sync(root.store.get(node_path(root) + key, prototype=default_buffer_prototype()))
    return None if buffer is None else buffer.as_numpy_array().data.cast("B")


def _list_prefix(root: zarr.Group, prefix: str) -> list[str]:
    async def collect() -> list[str]:
        return [key async for key in root.store.list_prefix(node_path(root) + prefix)]

    return sorted(sync(collect()))


def _element(root: zarr.Group, kind: str, name: str) -> zarr.Group:
    try:
        node = root[f"{kind}/{name}"]
    except KeyError:
        raise ElementError(f"No {kind[:-1]} element {name!r} in this store.") from None
    if not isinstance(node, zarr.Group):
        raise ElementError(f"The {kind[:-1]} element {name!r} is not a group.")
    return node


def _multiscales(element: zarr.Group) -> Mapping[str, Any]:
    attrs: dict[str, Any] = element.attrs.asdict()  # stored JSON: every level checked below
    ome = attrs.get("ome", attrs)
    scales = ome.get("multiscales") if isinstance(ome, Mapping) else None
    if not scales:
        raise ElementError(f"Element {element.path!r} has no multiscales metadata.")
    channels = ome.get("omero", {}).get("channels", []) if isinstance(ome.get("omero"), Mapping) else []
    return {**scales[0], "_channels": [str(c.get("label", i)) for i, c in enumerate(channels)]}


def _scale_yx(dataset: Mapping[str, Any], axes: tuple[str, ...]) -> tuple[float, float]:
    for transform in dataset.get("coordinateTransformations", []):
        if isinstance(transform, Mapping) and transform.get("type") == "scale":
            values = transform.get("scale")
            scale = dict(zip(axes, values if isinstance(values, list) else [], strict=False))
            try:
                return float(scale.get("y", 1.0)), float(scale.get("x", 1.0))
            except (TypeError, ValueError):
                raise ElementError(f"A level's scale {shown(values)} is not a list of numbers.") from None
    return 1.0, 1.0


@dataclass(frozen=True)
class RegionLevel:
    """The pixels of one pyramid level over a region, and where they sit."""

    level: Level
    index: int
    """Which level (0 the finest) of how many ``levels``."""
    levels: int
    bounds: list[float]
    """The read pixels' extent in the coordinate system the canvas draws in."""


def level_pixels(transform: Axial, region: Sequence[float]) -> tuple[float, float, float, float]:
    """``region`` (x0, y0, x1, y1 in the canvas's coordinate system) in level-0 pixels."""
    if transform.sx == 0 or transform.sy == 0:
        raise ElementError("The image's transformation collapses an axis; no region of it can be read.")
    xs = sorted(((region[0] - transform.tx) / transform.sx, (region[2] - transform.tx) / transform.sx))
    ys = sorted(((region[1] - transform.ty) / transform.sy, (region[3] - transform.ty) / transform.sy))
    return xs[0], ys[0], xs[1], ys[1]


#: The side of a tile: a 1,400 x 900 px view at one screen pixel per image pixel needs about 12
#: of them (9 MB of uint8 planes for 3 channels), where 1,024 px tiles would send 12 to 19 MB.
TILE_SIDE = 512
#: Chunks narrower than this are too small to be a tile each (a request per 128 px is too many).
MIN_TILE_SIDE = 256


@dataclass(frozen=True)
class PyramidLevel:
    """One level of an image pyramid, opened (its array is read lazily, chunk by chunk)."""

    array: zarr.Array
    scale_yx: tuple[float, float]
    """From this level's pixels to level-0 pixels."""
    height: int
    width: int
    tile: int
    """The side of this level's tiles in pixels (see _tile_side)."""


def _tile_side(array: zarr.Array, axes: tuple[str, ...]) -> int:
    """TILE_SIDE, or a chunk's width when that is 256 to 512 px: a tile then never straddles chunks
    along x when chunks are a multiple of it (one chunk read per tile and channel)."""
    chunk = int(array.chunks[axes.index("x")])
    return chunk if MIN_TILE_SIDE <= chunk <= TILE_SIDE else TILE_SIDE


@dataclass(frozen=True)
class Pyramid:
    """A multiscale image (or label) element, opened once: its levels, channels and place in a coordinate system.

    Why: every view of an image (the overview a canvas and its export show, the
    ``image_region`` detail, the ``image_tile`` grid) and the label centroids read through
    this one reader, which opens the arrays once and then reads only the chunks a
    request needs; pixel boxes are checked against each level so no read leaves the image.
    """

    name: str
    axes: tuple[str, ...]
    levels: tuple[PyramidLevel, ...]
    channel_names: tuple[str, ...]
    transform: Axial
    unit: str | None

    def level(self, index: int) -> PyramidLevel:
        """Level ``index`` (0 the finest); ElementError for one the image does not have."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.levels):
            raise ElementError(f"Image {self.name!r} has levels 0 to {len(self.levels) - 1}, not {index!r}.")
        return self.levels[index]

    def read(self, index: int, x0: int, y0: int, x1: int, y1: int, step: int = 1) -> Level:
        """Pixels [y0, y1) x [x0, x1) of level ``index``, every ``step``-th along y and x (other axes but
        channels at their first entry)."""
        found = self.level(index)
        if not (0 <= x0 < x1 <= found.width and 0 <= y0 < y1 <= found.height):
            raise ElementError(
                f"Pixels x {x0}-{x1}, y {y0}-{y1} are not inside level {index} of image {self.name!r} "
                f"({found.width} x {found.height})."
            )
        selection = tuple(
            slice(y0, y1, step)
            if axis == "y"
            else slice(x0, x1, step)
            if axis == "x"
            else slice(None)
            if axis == "c"
            else 0
            for axis in self.axes
        )
        kept = tuple(axis for axis in self.axes if axis in ("c", "y", "x"))
        spans = [
            (0, 1, 1) if isinstance(part, int) else part.indices(side)
            for part, side in zip(selection, found.array.shape)
        ]
        check_read(self.name, spans, found.array.chunks, item_bytes(found.array))
        with READ_SLOTS:  # at most MAX_CONCURRENT_READS reads hold pixels at once, in this process
            data = np.asarray(found.array[selection])
        channels: tuple[str, ...] = ()
        if "c" in kept:
            channels = self.channel_names or tuple(str(i) for i in range(data.shape[kept.index("c")]))
        sy, sx = found.scale_yx
        extent = (found.height * sy, found.width * sx)
        return Level(data, kept, (sy * step, sx * step), channels, extent, self.transform, self.unit)

    def fit(
        self,
        box: tuple[float, float, float, float],
        max_side: int | None,
        *,
        stride: bool = False,
        what: str = "The region",
    ) -> tuple[int, tuple[int, int, int, int], int]:
        """The finest level whose pixels over ``box`` (x0, y0, x1, y1 in level-0 pixels) fit in
        ``max_side`` each way: (level, its pixel box clipped to the image, step 1).

        ``max_side`` None: the coarsest level. When even the coarsest does not fit: ElementError,
        or with ``stride`` the coarsest read every ``step``-th pixel so it fits (a huge
        single-level image is never brought into memory whole). ``what`` names the box in errors.
        """
        boxes = []
        for found in self.levels:
            sy, sx = found.scale_yx
            x0, x1 = _pixel(np.floor(box[0] / sx), found.width), _pixel(np.ceil(box[2] / sx), found.width)
            y0, y1 = _pixel(np.floor(box[1] / sy), found.height), _pixel(np.ceil(box[3] / sy), found.height)
            if x1 <= x0 or y1 <= y0:
                raise ElementError(f"{what} does not overlap image {self.name!r}.")
            boxes.append((x0, y0, x1, y1))
        if max_side is None:
            return len(self.levels) - 1, boxes[-1], 1
        for index, (x0, y0, x1, y1) in enumerate(boxes):
            if max(x1 - x0, y1 - y0) <= max_side:
                return index, (x0, y0, x1, y1), 1
        if not stride:
            raise ElementError(
                f"{what} of image {self.name!r} is larger than {max_side} pixels even at its coarsest level; "
                "zoom in further."
            )
        x0, y0, x1, y1 = boxes[-1]
        return len(self.levels) - 1, boxes[-1], max(1, -(-max(x1 - x0, y1 - y0) // max_side))

    def whole(self) -> tuple[float, float, float, float]:
        """The image in level-0 pixels (x0, y0, x1, y1), as ``fit`` takes a box."""
        found = self.levels[0]
        sy, sx = found.scale_yx
        return 0.0, 0.0, found.width * sx, found.height * sy

    def overview(self, max_side: int | None = None) -> Level:
        """The whole image at the finest level that fits in ``max_side`` (None: the coarsest), read
        with a stride when none does."""
        index, (x0, y0, x1, y1), step = self.fit(self.whole(), max_side, stride=True)
        return self.read(index, x0, y0, x1, y1, step)

    def bounds(self, index: int, x0: float, y0: float, x1: float, y1: float) -> list[float]:
        """Pixels x0..x1, y0..y1 of level ``index`` in the coordinate system the canvas draws in."""
        sy, sx = self.level(index).scale_yx
        return self.transform.box(x0 * sx, y0 * sy, x1 * sx, y1 * sy)

    def tile_box(self, index: int, tx: int, ty: int) -> tuple[int, int, int, int]:
        """The pixels (x0, y0, x1, y1) of tile (tx, ty) of level ``index``; ElementError off the grid."""
        found = self.level(index)
        columns, rows = -(-found.width // found.tile), -(-found.height // found.tile)
        for value, count, axis in ((tx, columns, "x"), (ty, rows, "y")):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
                raise ElementError(
                    f"Level {index} of image {self.name!r} has tiles 0 to {count - 1} along {axis}, not {value!r}."
                )
        x0, y0 = tx * found.tile, ty * found.tile
        return x0, y0, min(found.width, x0 + found.tile), min(found.height, y0 + found.tile)


def _pixel(value: float, side: int) -> int:
    """A level-0 box edge as a pixel index clipped to [0, side] (an infinite or huge edge never overflows)."""
    return int(np.clip(np.nan_to_num(value, nan=0.0), 0, side))


def open_pyramid(root: zarr.Group, name: str, system: str | None = None, kind: str = "images") -> Pyramid:
    """Image (or, ``kind`` "labels", label) element ``name`` as a Pyramid: its levels opened
    (nothing read), finest first."""
    element = _element(root, kind, name)
    scales = _multiscales(element)
    axes = tuple(str(a["name"] if isinstance(a, Mapping) else a) for a in scales.get("axes", []))
    if "x" not in axes or "y" not in axes:
        raise ElementError(f"Element {name!r} has no x and y axes.")
    levels: list[PyramidLevel] = []
    datasets = scales.get("datasets")
    if not isinstance(datasets, list) or len(datasets) > MAX_LEVELS:
        count = len(datasets) if isinstance(datasets, list) else 0
        raise ElementError(f"Element {name!r} lists {count} levels; at most {MAX_LEVELS} (MAX_LEVELS) are opened.")
    for dataset in datasets:
        path = str(dataset.get("path")) if isinstance(dataset, Mapping) else ""
        array = element.get(path) if path else None
        if not isinstance(array, zarr.Array) or array.ndim != len(axes):
            raise ElementError(f"Element {name!r} lists a level {path!r} that is not an image array.")
        check_level_shape(name, path, array.shape, array.chunks, item_bytes(array))
        scale = _scale_yx(dataset, axes)
        check_scale(name, path, scale)
        height, width = int(array.shape[axes.index("y")]), int(array.shape[axes.index("x")])
        levels.append(PyramidLevel(array, scale, height, width, _tile_side(array, axes)))
    if not levels:
        raise ElementError(f"Element {name!r} lists no levels.")
    transforms = scales.get("coordinateTransformations")
    transform = element_transform(transforms, system)
    if not all(math.isfinite(value) for value in (transform.sx, transform.sy, transform.tx, transform.ty)):
        raise ElementError(f"Image {name!r} has a transformation that is not finite ({transform}).")
    return Pyramid(
        name,
        axes,
        tuple(levels),
        tuple(scales["_channels"]),
        transform,
        system_unit(transforms, system),
    )


def region_level(
    root: zarr.Group | Pyramid, name: str, region: Sequence[float], max_side: int, system: str | None = None
) -> RegionLevel:
    """The finest level of image ``name`` whose pixels over ``region`` fit in ``max_side`` each way.

    Why: a zoomed-in view needs the detail the coarse overview level lacks, but only the part
    on screen and never more pixels than the screen shows; reading is limited to that slice
    (other axes but channels at their first entry). The region is clipped to the image;
    ElementError when it misses the image or even the coarsest level is too large for it.
    """
    pyramid = root if isinstance(root, Pyramid) else open_pyramid(root, name, system)
    box = level_pixels(pyramid.transform, region)
    index, (x0, y0, x1, y1), _ = pyramid.fit(box, max_side, what=f"The region {list(region)}")
    level = pyramid.read(index, x0, y0, x1, y1)
    return RegionLevel(level, index, len(pyramid.levels), pyramid.bounds(index, x0, y0, x1, y1))


def coarsest_level(
    root: zarr.Group, kind: str, name: str, max_side: int | None = None, system: str | None = None
) -> Level:
    """The whole of image or label element ``name`` (``kind`` "images"/"labels") at its coarsest
    level, or with ``max_side`` at the finest that fits in it: :meth:`Pyramid.overview`."""
    return open_pyramid(root, name, system, kind).overview(max_side)


def label_plane(level: Level) -> np.ndarray:
    """The label level as a (y, x) array: other axes are collapsed to their first entry."""
    data = level.data
    index = tuple(slice(None) if axis in ("y", "x") else 0 for axis in level.axes)
    data = data[index]
    yx = [axis for axis in level.axes if axis in ("y", "x")]
    return data if yx == ["y", "x"] else data.T


def label_centroids(root: zarr.Group, name: str, system: str | None = None) -> pd.DataFrame:
    """Centroids (x, y in the canvas coordinate system) of each label id of label element ``name``."""
    level = coarsest_level(root, "labels", name, system=system)
    labels = label_plane(level)
    rows, cols = np.nonzero(labels)
    ids, inverse, counts = np.unique(labels[rows, cols], return_inverse=True, return_counts=True)
    scale_y, scale_x = level.scale_yx
    x = np.bincount(inverse, weights=cols + 0.5) / counts * scale_x
    y = np.bincount(inverse, weights=rows + 0.5) / counts * scale_y
    x, y = level.transform.apply(x, y)
    return pd.DataFrame({"x": x, "y": y}, index=pd.Index(ids.astype(str), name="instance"))


def _read_parquet_table(root: zarr.Group, prefix: str) -> pa.Table | None:
    """The parquet object at ``prefix`` as an Arrow table; None when it is stored in parts."""
    import pyarrow.parquet as pq

    whole = read_store_view(root, prefix)
    return None if whole is None else pq.read_table(_checked_parquet(whole, prefix))


class ShapesOverBound(ElementError):
    """A shapes parquet whose footer claims more shapes or bytes than are read (MAX_SHAPES, MAX_SHAPES_BYTES)."""


def _checked_parquet(data: bytes | memoryview, prefix: str, rows_before: int = 0) -> pa.BufferReader:
    """A shapes parquet object, refused when its footer claims more shapes or bytes than are read.

    Why: parquet stores a repeated polygon once, so 76 KB can hold 5,000,000 of them, and
    reading them builds gigabytes of geometry. The footer's row count and the decoded size
    its row groups claim are checked before a page is read (``rows_before``: the rows of the
    parts read so far).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = pa.BufferReader(pa.py_buffer(data))  # Arrow reads it in place (no Python file in between)
    try:
        meta = pq.ParquetFile(buffer).metadata
    except Exception as exc:  # noqa: BLE001 - any unreadable footer is the same refusal
        raise ElementError(
            f"{shown(prefix, 120)} is not a parquet file pyarrow can read ({type(exc).__name__})."
        ) from None
    rows = rows_before + int(meta.num_rows)
    claimed = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
    if rows > MAX_SHAPES or claimed > MAX_SHAPES_BYTES:
        raise ShapesOverBound(
            f"{shown(prefix, 120)} holds {rows:,} shapes of {claimed:,} bytes; at most {MAX_SHAPES:,} (MAX_SHAPES) "
            f"of {MAX_SHAPES_BYTES:,} bytes (MAX_SHAPES_BYTES) are read."
        )
    buffer.seek(0)
    return buffer


def _read_parquet(root: zarr.Group, prefix: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    table = _read_parquet_table(root, prefix)
    if table is not None:
        return table.to_pandas()
    parts = [key for key in _list_prefix(root, prefix + "/") if key.endswith(".parquet")]
    if not parts:
        raise ElementError(f"No parquet object at {prefix!r}.")
    frames, rows = [], 0
    for key in parts:
        checked = _checked_parquet(read_store_view(root, key.removeprefix(node_path(root))) or b"", key, rows)
        frames.append(pq.read_table(checked).to_pandas())
        rows += len(frames[-1])
    return pd.concat(frames)


def read_shapes_frame(root: zarr.Group, name: str) -> pd.DataFrame:
    """The GeoParquet table of shapes element ``name`` (geometry as WKB), as stored."""
    _element(root, "shapes", name)
    return _read_parquet(root, f"shapes/{name}/shapes.parquet")


def read_shapes_table(root: zarr.Group, name: str) -> pa.Table | None:
    """Shapes element ``name``'s GeoParquet as Arrow (the WKB left as one buffer); None when stored in parts.

    Why beside :func:`read_shapes_frame`: a million cells' WKB as a million Python ``bytes``
    costs seconds before any is parsed; the cells' outlines are read from the buffer as it is.
    """
    _element(root, "shapes", name)
    return _read_parquet_table(root, f"shapes/{name}/shapes.parquet")


def shapes_transform(root: zarr.Group, name: str, system: str | None = None) -> Axial:
    """The map from shapes element ``name``'s coordinates into coordinate system ``system``."""
    element = _element(root, "shapes", name)
    attrs: dict[str, Any] = element.attrs.asdict()  # stored JSON, as SpatialData writes it
    return element_transform(attrs.get("coordinateTransformations"), system)


def shape_centroids(root: zarr.Group, name: str, system: str | None = None) -> pd.DataFrame:
    """Centroids (x, y in the canvas coordinate system) of each shape of ``name``, by instance id."""
    import shapely

    transform = shapes_transform(root, name, system)
    frame = read_shapes_frame(root, name)
    if "geometry" not in frame.columns:
        raise ElementError(f"Shapes element {name!r} has no geometry column.")
    geometry = shapely.from_wkb(frame["geometry"].to_numpy())
    centroids = shapely.centroid(geometry)
    x, y = transform.apply(shapely.get_x(centroids), shapely.get_y(centroids))
    return pd.DataFrame(
        {"x": x, "y": y},
        index=pd.Index(frame.index.astype(str), name="instance"),
    )
