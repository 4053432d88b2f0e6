"""Regions drawn on the tissue turned into an obs column: the checks and the geometry of ``annotate``.

A region is a label and a polygon in the coordinates the canvas view draws its
cells at, a polygon on one of the table's embeddings, or a list of cells. Why here and not in the stack library: the positions are the figure's
(its coordinate system, its table), which only the service knows; the stack
library then saves the column like any other ``set-obs``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.errors import shown
from sds_jupyter.limits import MAX_ANNOTATION_CELLS, MAX_ANNOTATION_REGIONS, MAX_ANNOTATION_VERTICES, MAX_CELLS
from sds_jupyter.service.columns import column_kind
from sds_jupyter.service.errormap import RequestError

__all__ = [
    "REGIONS_KEY",
    "Positions",
    "Region",
    "annotated_column",
    "annotation_message",
    "checked_regions",
    "region_codes",
    "regions_record",
]

#: The uns entry that keeps the regions an annotation was drawn as: ``uns[REGIONS_KEY][column]``.
REGIONS_KEY = "sds_regions"

#: Where an embedding's cells are: its name -> (x, y) in table order (the service reads them).
Positions = Callable[[str], tuple[np.ndarray, np.ndarray]]

_USAGE = (
    "give regions as {label: polygon}, a polygon being [[x, y], [x, y], [x, y], ...] on the tissue, "
    '{"embedding": key, "polygon": [[x, y], ...]} on an embedding, or {"cells": [index, ...]}'
)
#: The keys of a region given as a mapping: an embedding's polygon, or the cells' table positions.
_ON_EMBEDDING = frozenset({"embedding", "polygon"})
_BY_CELLS = frozenset({"cells"})


@dataclass(frozen=True)
class Region:
    """A labelled region: a polygon on the tissue (``embedding`` None) or on an embedding, or listed cells.

    Why three forms: a selection drawn on the embedding beside the tissue is a polygon in the
    embedding's coordinates, and a selection made elsewhere (a notebook, the other panel) is
    simply its cells; all three are saved by the same rule (the last region holding a cell wins).
    """

    label: str
    polygon: np.ndarray | None = None
    embedding: str | None = None
    cells: np.ndarray | None = None


def checked_regions(regions: Any) -> list[Region]:
    """``regions`` as :class:`Region` in their given order; one-line refusals otherwise."""
    if not isinstance(regions, Mapping):
        raise RequestError(
            f"Parameter 'regions' must be a mapping from label to polygon, not {shown(regions)}; {_USAGE}."
        )
    if not regions:
        raise RequestError(f"Parameter 'regions' is empty: draw at least one region; {_USAGE}.")
    if len(regions) > MAX_ANNOTATION_REGIONS:
        raise RequestError(
            f"{len(regions)} regions is too many; at most {MAX_ANNOTATION_REGIONS} (MAX_ANNOTATION_REGIONS)."
        )
    out = [_region(_label(label), given) for label, given in regions.items()]
    vertices = sum(len(r.polygon) for r in out if r.polygon is not None)
    if vertices > MAX_ANNOTATION_VERTICES:
        raise RequestError(
            f"The regions have {vertices:,} points; at most {MAX_ANNOTATION_VERTICES:,} (MAX_ANNOTATION_VERTICES): "
            "simplify the outlines."
        )
    listed = sum(len(r.cells) for r in out if r.cells is not None)
    if listed > MAX_ANNOTATION_CELLS:
        raise RequestError(
            f"The regions list {listed:,} cells; at most {MAX_ANNOTATION_CELLS:,} (MAX_ANNOTATION_CELLS): "
            "give a polygon instead."
        )
    return out


def _region(label: str, given: Any) -> Region:
    """One region from what the request gave for ``label``: a polygon, or a mapping of one of two shapes."""
    if not isinstance(given, Mapping):
        return Region(label, polygon=_polygon(label, given))
    where = f"Region {label[:80]!r}"
    keys = set(given)
    if keys == _ON_EMBEDDING:
        key = given["embedding"]
        if not isinstance(key, str) or not key or len(key) > 256:
            raise RequestError(f"{where} names its embedding by {shown(key)}; give the obsm key as text.")
        return Region(label, polygon=_polygon(label, given["polygon"]), embedding=key)
    if keys == _BY_CELLS:
        return Region(label, cells=_cells(where, given["cells"]))
    raise RequestError(f"{where} is a mapping with keys {sorted(map(str, keys))[:4]}; {_USAGE}.")


def _cells(where: str, cells: Any) -> np.ndarray:
    """Listed cells as int64 table positions (their range is checked against the table later)."""
    if isinstance(cells, (str, bytes, Mapping)) or not hasattr(cells, "__len__"):
        raise RequestError(f"{where} must list its cells as [index, ...], not {shown(cells)}.")
    if len(cells) > MAX_ANNOTATION_CELLS:
        raise RequestError(f"{where} lists {len(cells):,} cells; at most {MAX_ANNOTATION_CELLS:,}.")
    for cell in cells:
        if not isinstance(cell, (int, np.integer)) or isinstance(cell, bool):
            raise RequestError(f"{where} lists {shown(cell)}, not a cell's position (an integer).")
        if not -MAX_CELLS <= cell < MAX_CELLS:  # also what keeps int64 from overflowing below
            raise RequestError(
                f"{where} lists cell {shown(cell, 40)}; no table has a cell there (at most {MAX_CELLS:,}, MAX_CELLS)."
            )
    return np.asarray(cells, dtype=np.int64).reshape(-1)


def _label(label: Any) -> str:
    if not isinstance(label, str):
        raise RequestError(f"Region name {shown(label)} is not a string; name every region with text.")
    if not label.strip():
        raise RequestError("A region has an empty name; name every region with text.")
    return label


def _polygon(label: str, polygon: Any) -> np.ndarray:
    """The polygon's points as float64 (n, 2); refused unless at least 3 finite [x, y] pairs."""
    where = f"Region {label[:80]!r}"
    if isinstance(polygon, (str, bytes, Mapping)) or not hasattr(polygon, "__len__"):
        raise RequestError(f"{where} must be a list of [x, y] points, not {shown(polygon)}.")
    if len(polygon) > MAX_ANNOTATION_VERTICES:
        raise RequestError(f"{where} has {len(polygon):,} points; at most {MAX_ANNOTATION_VERTICES:,}.")
    points = []
    for point in polygon:
        pair = list(point) if isinstance(point, (list, tuple)) else None
        if pair is None or len(pair) != 2 or not all(_is_number(v) for v in pair):
            raise RequestError(f"{where} has a point that is not two numbers [x, y]: {shown(point)}.")
        points.append(pair)
    array = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(array) < 3:
        raise RequestError(f"{where} has {len(array)} points; a polygon needs at least 3.")
    if not np.isfinite(array).all():
        raise RequestError(f"{where} has a coordinate that is not a finite number (NaN or infinity).")
    return array


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _inside(x: np.ndarray, y: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Which points lie inside ``polygon`` (even-odd rule; NaN positions never do).

    Only points inside the polygon's box are tested, sorted by y once: an edge can
    only cross the horizontal ray of points within its own y-span, found by binary
    search, so the cost follows the points near each edge, not cells × vertices.
    """
    inside = np.zeros(len(x), dtype=bool)
    (x0, y0), (x1, y1) = polygon.min(axis=0), polygon.max(axis=0)
    with np.errstate(invalid="ignore"):
        candidates = np.flatnonzero((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))
    order = np.argsort(y[candidates], kind="stable")
    candidates = candidates[order]
    px, py = x[candidates].astype(np.float64), y[candidates].astype(np.float64)
    hit = np.zeros(len(candidates), dtype=bool)
    ax, ay = polygon[:, 0], polygon[:, 1]
    bx, by = np.roll(ax, -1), np.roll(ay, -1)
    for xa, ya, xb, yb in zip(ax, ay, bx, by, strict=True):
        if ya == yb:
            continue  # a horizontal edge never crosses the ray
        # the points with min(ya, yb) <= y < max(ya, yb): those whose ray the edge spans
        lo, hi = np.searchsorted(py, [min(ya, yb), max(ya, yb)], side="left")
        if lo == hi:
            continue
        band = slice(lo, hi)
        at_x = xa + (py[band] - ya) * (xb - xa) / (yb - ya)
        hit[band] ^= px[band] < at_x
    inside[candidates] = hit
    return inside


def region_codes(x: np.ndarray, y: np.ndarray, regions: list[Region], embedding: Positions | None = None) -> np.ndarray:
    """Per cell, the index of the last region containing it, else -1 (a later region is drawn over).

    ``x``, ``y``: where the tissue view draws the cells; ``embedding`` gives an embedding's
    coordinates for regions drawn on one (refusing a name the table lacks).
    """
    codes = np.full(len(x), -1, dtype=np.int64)
    for index, region in enumerate(regions):
        if region.cells is not None:
            outside = region.cells[(region.cells < 0) | (region.cells >= len(x))]
            if len(outside):
                raise RequestError(
                    f"Region {region.label[:80]!r} lists cell {int(outside[0])}; the table has {len(x):,} cells "
                    f"(0 to {len(x) - 1:,})."
                )
            codes[region.cells] = index
            continue
        assert region.polygon is not None
        if region.embedding is None:
            px, py = x, y
        elif embedding is None:
            raise RequestError(f"Region {region.label[:80]!r} is drawn on an embedding; this table has none.")
        else:
            px, py = embedding(region.embedding)
        codes[_inside(px, py, region.polygon)] = index
    return codes


def annotated_column(existing: pd.Series | None, codes: np.ndarray, labels: list[str], column: str) -> pd.Series:
    """The column after annotating: a new categorical (NaN outside), or ``existing`` with the regions' cells relabelled.

    An existing column must be categorical: its other cells keep their values and
    the labels it lacks become new categories after its own.
    """
    if existing is None:
        return pd.Series(pd.Categorical.from_codes(codes, categories=labels))  # labels are keys: distinct
    kind = column_kind(existing)
    if kind != "categorical":
        raise RequestError(
            f"obs column {column[:80]!r} is {kind}, not categorical; annotate into a categorical column or a new name."
        )
    old = existing.reset_index(drop=True)
    categories = list(old.cat.categories) + [label for label in labels if label not in set(old.cat.categories)]
    out = old.cat.set_categories(categories)
    mask = codes >= 0
    out[mask] = np.asarray(labels, dtype=object)[codes[mask]]
    return out


def annotation_message(column: str, labels: list[str], codes: np.ndarray) -> str:
    """What the new version's Changes say: the column and each region's cells."""
    counts = np.bincount(codes[codes >= 0], minlength=len(labels))
    regions = ", ".join(f"{label} ({int(n):,} cells)" for label, n in zip(labels, counts, strict=True))
    return f"Annotated obs column {column!r} from {len(labels)} drawn region{'s' * (len(labels) != 1)}: {regions}."


def regions_record(regions: list[Region], coordinate_system: str, figure: str) -> dict[str, Any]:
    """The drawn regions as they are kept beside the column they made, so they can be shown and redrawn.

    Plain arrays (anndata writes them as such; labels may hold any text, so they are values, not
    keys): ``labels``; ``spaces``, the coordinate system each polygon is in (the figure's, in its
    own units, for one drawn on the tissue; ``obsm/<key>`` for one on an embedding; ``cells`` for a
    list of cells); ``vertices``, every polygon's points one after the other (x, y) and
    ``offsets``, where each region's points start (the last one: their count). A list of cells
    keeps no points. ``figure`` names the view they were drawn on.
    """
    labels, spaces, offsets, points = [], [], [0], []
    for region in regions:
        labels.append(region.label)
        if region.polygon is None:
            spaces.append("cells")
        else:
            spaces.append(f"obsm/{region.embedding}" if region.embedding else coordinate_system)
            points.append(np.asarray(region.polygon, dtype=np.float64).reshape(-1, 2))
        offsets.append(offsets[-1] + (len(points[-1]) if region.polygon is not None else 0))
    vertices = np.concatenate(points) if points else np.zeros((0, 2), dtype=np.float64)
    return {
        "labels": np.array(labels, dtype=object),
        "spaces": np.array(spaces, dtype=object),
        "offsets": np.array(offsets, dtype=np.int64),
        "vertices": vertices,
        "figure": figure,
    }
