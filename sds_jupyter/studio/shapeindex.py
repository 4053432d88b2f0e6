"""A shapes element past MAX_SHAPES, outlined by tile: read once a row group at a time, its rings
kept on disk, its shapes found by tile through a grid of ids.

Why: MAX_SHAPES refuses reading an element whole (millions of polygons as one table take
gigabytes), yet a zoomed-in view shows a few thousand of them. So such an element is read once
per identity through ranged reads of its parquet (the footer, then one row group's geometry at
a time, each checked against MAX_SHAPES_GROUP_BYTES and MIN_WKB_BYTES before it is decompressed);
each shape's ring goes to ``vertices`` on disk and its bounds to ``boxes``. The shapes are then
counted by the tile their box's centre falls in, on the coarsest power-of-two grid whose fullest
tile holds about ``tile_shapes`` (as the cells' outline grid is chosen), and their ids sorted by
tile (a counting sort over the boxes on disk). A tile's shapes are those of its own and the
neighbouring tiles (a shape is at most a tile from its centre, unless it is one of the few wider
ones, kept apart) whose boxes meet it, read back from the mapped files.

Memory: one row group's batch and a 1024 x 1024 histogram while building, the tile offsets
after; the rings, boxes and ids are files in a private folder (0700), removed with the index.
:func:`kept_shape_index` keeps the index on disk between processes instead, under the element's
identity, beside the cells' geometry (:mod:`~sds_jupyter.studio.keptarrays`), so a new server
maps it rather than reading the element again (issue 39).
"""

from __future__ import annotations

import io
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import zarr

from sds_jupyter.errors import ElementError, shown
from sds_jupyter.limits import (
    MAX_INDEXED_SHAPES,
    MAX_INDEXED_VERTICES,
    MAX_SHAPES_GROUP_BYTES,
    MIN_WKB_BYTES,
)
from sds_jupyter.protocol.payloads import OutlineTiles
from sds_jupyter.studio.cells import CellTable
from sds_jupyter.studio.elements import ShapesOverBound, node_path, shapes_transform
from sds_jupyter.studio.keptarrays import ArrayStore, KeptArrays, geometry_store
from sds_jupyter.studio.pointparts import StoreFile
from sds_jupyter.studio.shapes import CellShapes, annotated_shapes, cell_shapes, exteriors_of

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = [
    "FINEST_GRID",
    "ShapeIndex",
    "ShapesNote",
    "build_shape_index",
    "cell_shapes_or_note",
    "kept_shape_index",
    "refusal",
]

#: The finest grid (tiles a side) shapes are counted on, as the cells' outline grid's finest.
FINEST_GRID = 1024
#: Rows outlined at once: bounds the temporaries of one step whatever a row group holds.
_BATCH_ROWS = 1 << 16
#: Boxes sorted into tiles at once.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ShapeIndex:
    """One shapes element's rings on disk and its shapes' ids by tile of ``grid``."""

    kind: str
    n: int
    bounds: list[float] | None
    grid: OutlineTiles
    #: Tiles a side of the square grid the ids are sorted on (``grid``'s columns and rows are within it).
    side: int
    #: Each tile's first id in ``order`` (tile ``row * side + column``), and the end.
    offsets: np.ndarray
    #: Shapes wider than a tile (their box's half side past the tile's): checked for every tile.
    wide: np.ndarray
    folder: Path
    boxes: np.ndarray = field(repr=False)
    starts: np.ndarray = field(repr=False)
    vertices: np.ndarray = field(repr=False)
    order: np.ndarray = field(repr=False)

    @property
    def nbytes(self) -> int:
        """What the index holds in memory (the files are mapped, not held)."""
        return int(self.offsets.nbytes + self.wide.nbytes)

    def near(self, box: list[float], column: int, row: int) -> np.ndarray:
        """The ids (ascending) of the shapes whose bounds meet ``box``, tile (column, row) of the grid."""
        side = self.side
        parts = [self.wide]
        for r in range(max(0, row - 1), min(side, row + 2)):
            first, last = r * side + max(0, column - 1), r * side + min(side - 1, column + 1)
            parts.append(np.asarray(self.order[self.offsets[first] : self.offsets[last + 1]]))
        ids = np.unique(np.concatenate(parts).astype(np.int64))
        b = np.asarray(self.boxes[ids])
        return ids[(b[:, 0] <= box[2]) & (b[:, 2] >= box[0]) & (b[:, 1] <= box[3]) & (b[:, 3] >= box[1])]

    def within(self, region: list[float], most: int) -> np.ndarray:
        """The ids of the shapes whose bounds meet ``region``, refused past ``most`` (an export's whole view)."""
        found = []
        for start in range(0, self.n, _CHUNK):
            b = np.asarray(self.boxes[start : start + _CHUNK])
            meets = (b[:, 0] <= region[2]) & (b[:, 2] >= region[0]) & (b[:, 1] <= region[3]) & (b[:, 3] >= region[1])
            found.append(start + np.flatnonzero(meets))
            if sum(len(part) for part in found) > most:
                raise ElementError(
                    f"More than {most:,} shapes meet this view (MAX_SHAPES); export a view zoomed in further."
                )
        return np.concatenate(found) if found else np.zeros(0, np.int64)

    def rings(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Shapes ``ids``' rings as ``starts`` (uint32, from 0) and ``vertices`` (x, y float32 pairs)."""
        first = np.asarray(self.starts[ids]).astype(np.int64)
        lengths = np.asarray(self.starts[ids + 1]).astype(np.int64) - first
        own = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint32)
        at = np.repeat(first - own[:-1], lengths) + np.arange(int(own[-1]))
        pairs = np.asarray(self.vertices).reshape(-1, 2)
        return own, np.ascontiguousarray(pairs[at]).ravel()


def _parts(root: zarr.Group, name: str) -> list[str]:
    """The parquet objects of shapes element ``name``: one object, or the parts of a folder."""
    from zarr.core.sync import sync

    key = f"{node_path(root)}shapes/{name}/shapes.parquet"
    if sync(root.store.exists(key)):
        return [key]

    async def listed() -> list[str]:
        return [k async for k in root.store.list_prefix(key + "/") if k.endswith(".parquet")]

    parts = sorted(sync(listed()))
    if not parts:
        raise ElementError(f"No parquet object at {shown(key, 120)}.")
    return parts


def _check_group(metadata: pq.FileMetaData, group: int, columns: list[str], name: str) -> None:
    """Refuse a row group whose read columns claim more than MAX_SHAPES_GROUP_BYTES decoded, or a
    geometry column claiming fewer bytes than its rows' WKB must take (values repeated by dictionary)."""
    row_group = metadata.row_group(group)
    claimed, geometry = 0, 0
    for index in range(row_group.num_columns):
        column = row_group.column(index)
        if column.path_in_schema in columns:
            claimed += int(column.total_uncompressed_size)
            geometry += int(column.total_uncompressed_size) if column.path_in_schema == "geometry" else 0
    rows = int(row_group.num_rows)
    if claimed > MAX_SHAPES_GROUP_BYTES:
        raise ElementError(
            f"Shapes element {name!r}: a row group of {rows:,} shapes claims {claimed:,} decoded bytes, more than "
            f"{MAX_SHAPES_GROUP_BYTES:,} (MAX_SHAPES_GROUP_BYTES); rewrite it with smaller row groups."
        )
    if geometry < rows * MIN_WKB_BYTES:
        raise ElementError(
            f"Shapes element {name!r} is past MAX_SHAPES and its geometry repeats: {rows:,} shapes in "
            f"{geometry:,} decoded bytes, fewer than {MIN_WKB_BYTES} a shape (MIN_WKB_BYTES); it is not outlined."
        )


def _footers(root: zarr.Group, name: str) -> list[pq.ParquetFile]:
    """Shapes element ``name``'s parquet objects opened by ranged reads (their footers read), refused
    past MAX_INDEXED_SHAPES or without a geometry column."""
    import pyarrow.parquet as pq

    handles = [pq.ParquetFile(io.BufferedReader(StoreFile(root.store, key), 1 << 20)) for key in _parts(root, name)]
    rows = sum(int(handle.metadata.num_rows) for handle in handles)
    if rows > MAX_INDEXED_SHAPES:
        raise ElementError(
            f"Shapes element {name!r} holds {rows:,} shapes; at most {MAX_INDEXED_SHAPES:,} (MAX_INDEXED_SHAPES) "
            "are outlined by tile."
        )
    if any("geometry" not in handle.schema_arrow.names for handle in handles):
        raise ElementError(f"Shapes element {name!r} has no geometry column.")
    return handles


def _columns(handle: pq.ParquetFile) -> list[str]:
    return ["geometry", *(["radius"] if "radius" in handle.schema_arrow.names else [])]


def refusal(root: zarr.Group, name: str) -> str | None:
    """Why shapes element ``name`` cannot be outlined by tile, from its footers alone; None when it can.

    Why before building: a figure's line says whether zoomed-in outlines will come, and a
    refused element (too many shapes, repeated geometry, huge row groups) says so at once.
    """
    try:
        for handle in _footers(root, name):
            for group in range(handle.metadata.num_row_groups):
                _check_group(handle.metadata, group, _columns(handle), name)
    except ElementError as exc:
        return str(exc)
    return None


def _batches(root: zarr.Group, name: str) -> Iterator[tuple[pa.Array, np.ndarray | None]]:
    """Every shape's geometry (and radius, when stored), a bounded batch at a time, by ranged reads."""
    for handle in _footers(root, name):
        columns = _columns(handle)
        for group in range(handle.metadata.num_row_groups):
            _check_group(handle.metadata, group, columns, name)
            for batch in handle.iter_batches(batch_size=_BATCH_ROWS, row_groups=[group], columns=columns):
                radius = batch.column("radius").to_numpy(zero_copy_only=False) if "radius" in columns else None
                yield batch.column("geometry"), None if radius is None else np.asarray(radius, dtype=np.float64)


@dataclass
class _Spill:
    """What the first pass leaves: counts, the element's bounds, its kind."""

    n: int = 0
    n_vertices: int = 0
    kind: str = ""
    low: list[float] = field(default_factory=lambda: [np.inf, np.inf])
    high: list[float] = field(default_factory=lambda: [-np.inf, -np.inf])


def _ring_boxes(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each ring's bounds (n x 4 float32: x0, y0, x1, y1; NaN for a ring without vertices)."""
    boxes = np.full((len(counts), 4), np.nan, dtype=np.float32)
    has = counts > 0
    first = (np.cumsum(counts) - counts)[has]
    if len(first):
        boxes[has, 0], boxes[has, 1] = np.minimum.reduceat(x, first), np.minimum.reduceat(y, first)
        boxes[has, 2], boxes[has, 3] = np.maximum.reduceat(x, first), np.maximum.reduceat(y, first)
    return boxes


def _spill(root: zarr.Group, name: str, system: str | None, folder: Path) -> _Spill:
    """Pass one: every ring to ``vertices``, its end to ``starts`` and its bounds to ``boxes`` (files in ``folder``)."""
    transform = shapes_transform(root, name, system)
    out = _Spill()
    with open(folder / "vertices", "wb") as fv, open(folder / "starts", "wb") as fs, open(folder / "boxes", "wb") as fb:
        fs.write(np.zeros(1, np.uint64).tobytes())
        for wkb, radius in _batches(root, name):
            outlined = exteriors_of(wkb, radius)
            if outlined is None or (out.kind and outlined[0] != out.kind):
                raise ElementError(
                    f"Shapes element {name!r} holds neither polygons nor circles alone; it is not outlined."
                )
            out.kind, coords, counts = outlined
            if out.n_vertices + len(coords) > MAX_INDEXED_VERTICES:
                raise ElementError(
                    f"Shapes element {name!r} has more than {MAX_INDEXED_VERTICES:,} outline vertices "
                    "(MAX_INDEXED_VERTICES); it is not outlined."
                )
            x, y = transform.apply(coords[:, 0], coords[:, 1])
            pairs = np.empty(2 * len(coords), dtype=np.float32)
            pairs[0::2], pairs[1::2] = x, y
            fv.write(pairs.tobytes())
            fs.write((out.n_vertices + np.cumsum(counts)).astype(np.uint64).tobytes())
            boxes = _ring_boxes(pairs[0::2], pairs[1::2], counts)
            fb.write(boxes.tobytes())
            known = boxes[~np.isnan(boxes[:, 0])]
            if len(known):
                out.low = [min(out.low[0], float(known[:, 0].min())), min(out.low[1], float(known[:, 1].min()))]
                out.high = [max(out.high[0], float(known[:, 2].max())), max(out.high[1], float(known[:, 3].max()))]
            out.n += len(counts)
            out.n_vertices += len(coords)
    return out


def _fine_cells(boxes: np.ndarray, x0: float, y0: float, side: float) -> tuple[np.ndarray, np.ndarray]:
    """Known boxes' positions in ``boxes`` and their centres' cells (row * FINEST_GRID + column) on the finest grid."""
    known = np.flatnonzero(~np.isnan(boxes[:, 0]))
    b = boxes[known].astype(np.float64)
    column = np.clip(((b[:, 0] + b[:, 2]) / 2 - x0) / side * FINEST_GRID, 0, FINEST_GRID - 1).astype(np.int64)
    row = np.clip(((b[:, 1] + b[:, 3]) / 2 - y0) / side * FINEST_GRID, 0, FINEST_GRID - 1).astype(np.int64)
    return known, row * FINEST_GRID + column


def _coarse(cells: np.ndarray, tiles: int) -> np.ndarray:
    """Finest-grid cells as tiles of a ``tiles``-a-side grid (row * tiles + column)."""
    step = FINEST_GRID // tiles
    return np.asarray((cells // FINEST_GRID // step) * tiles + (cells % FINEST_GRID) // step)


def build_shape_index(
    root: zarr.Group, name: str, system: str | None, tile_shapes: int, folder: Path | None = None
) -> ShapeIndex:
    """Shapes element ``name`` in ``system`` indexed for tiles of about ``tile_shapes`` shapes.

    Its files go to a new private folder (under ``folder``, else the temporary folder), removed
    when the index is dropped or the build fails.
    """
    place = Path(tempfile.mkdtemp(prefix="sds-shapes-", dir=folder))
    try:
        return _build(root, name, system, tile_shapes, place)
    except BaseException:
        shutil.rmtree(place, ignore_errors=True)
        raise


def _build(root: zarr.Group, name: str, system: str | None, tile_shapes: int, place: Path) -> ShapeIndex:
    spill = _spill(root, name, system, place)
    n = spill.n
    boxes = np.memmap(place / "boxes", dtype=np.float32, mode="r", shape=(n, 4)) if n else np.zeros((0, 4), np.float32)
    known_any = np.isfinite(spill.low[0])
    x0, y0 = (spill.low[0], spill.low[1]) if known_any else (0.0, 0.0)
    x1, y1 = (spill.high[0], spill.high[1]) if known_any else (1.0, 1.0)
    span = max(x1 - x0, y1 - y0, 1e-9)
    histogram = np.zeros(FINEST_GRID * FINEST_GRID, dtype=np.int64)
    for start in range(0, n, _CHUNK):
        _, cells = _fine_cells(np.asarray(boxes[start : start + _CHUNK]), x0, y0, span)
        histogram += np.bincount(cells, minlength=len(histogram))
    square = histogram.reshape(FINEST_GRID, FINEST_GRID)
    tiles = 1
    while tiles < FINEST_GRID:
        step = FINEST_GRID // tiles
        if square.reshape(tiles, step, tiles, step).sum(axis=(1, 3)).max() <= tile_shapes:
            break
        tiles *= 2
    step = FINEST_GRID // tiles
    counts = square.reshape(tiles, step, tiles, step).sum(axis=(1, 3)).ravel()
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    size = span / tiles
    order = np.memmap(place / "order", dtype=np.uint32, mode="w+", shape=(max(int(offsets[-1]), 1),))
    cursor, wide = offsets[:-1].copy(), []
    for start in range(0, n, _CHUNK):
        chunk = np.asarray(boxes[start : start + _CHUNK])
        known, cells = _fine_cells(chunk, x0, y0, span)
        codes = _coarse(cells, tiles)
        sort = np.argsort(codes, kind="stable")
        ordered = codes[sort]
        found, first, many = np.unique(ordered, return_index=True, return_counts=True)
        rank = np.arange(len(ordered)) - np.repeat(first, many)
        order[cursor[ordered] + rank] = (start + known[sort]).astype(np.uint32)
        cursor[found] += many
        b = chunk[known]
        wide.append(start + known[np.maximum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) / 2 > size])
    order.flush()
    grid: OutlineTiles = {
        "x0": x0,
        "y0": y0,
        "size": size,
        "columns": max(1, int(np.ceil((x1 - x0) / size - 1e-9))),
        "rows": max(1, int(np.ceil((y1 - y0) / size - 1e-9))),
        "n_vertices": spill.n_vertices,
    }
    index = ShapeIndex(
        kind=spill.kind or "polygons",
        n=n,
        bounds=[x0, y0, x1, y1] if known_any else None,
        grid=grid,
        side=tiles,
        offsets=offsets,
        wide=np.concatenate(wide).astype(np.int64) if wide else np.zeros(0, np.int64),
        folder=place,
        boxes=boxes,
        starts=_mapped(place / "starts", np.uint64, n + 1),
        vertices=_mapped(place / "vertices", np.float32, 2 * spill.n_vertices),
        order=np.memmap(place / "order", dtype=np.uint32, mode="r"),
    )
    weakref.finalize(index, shutil.rmtree, place, True)
    return index


#: Part of a kept index's identity: a change of what is kept gets new entries.
_KEPT_FORMAT = "shape-index-1"
_KEPT_ARRAYS = ("boxes", "starts", "vertices", "order", "offsets", "wide")


def kept_shape_index(
    root: zarr.Group, name: str, system: str | None, tile_shapes: int, identity: str, store: ArrayStore | None = None
) -> ShapeIndex:
    """:func:`build_shape_index`, kept on disk under ``identity`` (the element's, with its system) by ``store``
    (default: the cell geometry's folder): mapped from there when kept, else built once and kept.

    An entry that does not hold together (rings out of order, ids past the shapes) is built again.
    """

    def build() -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        index = build_shape_index(root, name, system, tile_shapes)
        meta = {"kind": index.kind, "n": index.n, "bounds": index.bounds, "grid": index.grid, "side": index.side}
        return meta, {part: getattr(index, part) for part in _KEPT_ARRAYS}

    chosen = store if store is not None else geometry_store()
    entry = chosen.get(f"{_KEPT_FORMAT}\n{identity}\n{tile_shapes}", build, lambda e: _index_of(e) is not None)
    index = _index_of(entry)
    if index is None:  # built just now: only a wrong build itself lands here
        raise ElementError(f"The outline index of shapes element {name!r} does not hold together.")
    return index


def _index_of(entry: KeptArrays) -> ShapeIndex | None:
    """The shape index an entry holds; None unless its arrays agree with each other and its header."""
    meta, arrays = entry.meta, entry.arrays
    try:
        n, side = int(meta["n"]), int(meta["side"])
        boxes, starts, vertices, order, offsets, wide = (arrays[part] for part in _KEPT_ARRAYS)
        if not (n >= 0 and 1 <= side <= FINEST_GRID) or boxes.shape != (n, 4) or len(starts) != n + 1:
            return None
        typed = [a.dtype.str for a in (boxes, starts, vertices, order, offsets, wide)]
        if typed != ["<f4", "<u8", "<f4", "<u4", "<i8", "<i8"]:
            return None
        if int(starts[0]) != 0 or int(starts[-1]) * 2 != len(vertices) or (np.diff(starts.astype(np.int64)) < 0).any():
            return None
        if len(offsets) != side * side + 1 or int(offsets[0]) != 0 or (np.diff(offsets) < 0).any():
            return None
        if int(offsets[-1]) > len(order) or (n and len(order) and int(order.max()) >= n):
            return None
        if len(wide) and (int(wide.min()) < 0 or int(wide.max()) >= n):
            return None
        bounds = meta["bounds"]
        return ShapeIndex(
            kind=str(meta["kind"]),
            n=n,
            bounds=None if bounds is None else [float(v) for v in bounds],
            grid=meta["grid"],
            side=side,
            offsets=np.asarray(offsets, dtype=np.int64),
            wide=np.asarray(wide, dtype=np.int64),
            folder=entry.folder or Path(),
            boxes=boxes,
            starts=starts,
            vertices=vertices,
            order=order,
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def _mapped(path: Path, dtype: Any, n: int) -> np.ndarray:
    """File ``path`` as ``n`` values of ``dtype``, mapped read-only (an empty array for none)."""
    found: np.ndarray = np.memmap(path, dtype=dtype, mode="r", shape=(n,)) if n else np.zeros(0, dtype)
    return found


class ShapesNote(NamedTuple):
    """What a figure says of cells whose shapes element is past MAX_SHAPES, and that element when
    its outlines come by tile (the view shows it as a layer), else None."""

    text: str
    by_tile: str | None


def cell_shapes_or_note(
    cells: CellTable, root: zarr.Group | None, attrs: Mapping[str, Any], system: str | None = None
) -> tuple[CellShapes | None, ShapesNote | None]:
    """The cells' shapes (:func:`~sds_jupyter.studio.shapes.cell_shapes`), or none and a note when their element is past MAX_SHAPES.

    Why not refuse the canvas: the cells still have their positions (``obsm["spatial"]``), so the
    figure draws them as points; their outlines come by tile once zoomed in when the element
    can be indexed (:func:`refusal` reads its footers), and the line says which.
    """
    try:
        return cell_shapes(cells, root, attrs, system), None
    except ShapesOverBound as exc:
        name = annotated_shapes(root, attrs) if root is not None else None
        why = "no element" if root is None or name is None else refusal(root, name)
        if why is None and name is not None:
            return None, ShapesNote(
                f"{exc} The cells are drawn at their positions; zoomed in, their outlines come by tile.", name
            )
        return None, ShapesNote(f"{exc} The cells are drawn at their positions, without outlines.", None)
