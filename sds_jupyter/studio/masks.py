"""Segmentation masks (labels elements) as RGBA: each label id a stable colour, filled or outlined.

Why RGBA on the server: a labels tile is an integer raster of any width (uint8 to uint64), which
WebGL cannot sample as such; colouring it here sends the browser a picture it draws like an image
tile, and the colour of an id depends on the id alone, so neighbouring tiles and levels agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sds_jupyter.errors import ElementError
from sds_jupyter.studio.elements import label_plane, level_pixels

if TYPE_CHECKING:
    from sds_jupyter.studio.elements import Pyramid

__all__ = ["FILL_ALPHA", "LABEL_STYLES", "ExportLabels", "export_labels", "label_colors", "labels_rgba"]

#: How a tile draws its labels: "fill" (a translucent fill and an opaque outline) or "outline" alone.
LABEL_STYLES = ("fill", "outline")
#: The opacity of a label's fill (its outline is opaque): the cells and image stay readable under it.
FILL_ALPHA = 96


def label_colors(ids: np.ndarray) -> np.ndarray:
    """An (n, 3) uint8 colour for each label id: a hash of the id, each channel in 64..255 (never black)."""
    mixed = np.asarray(ids).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # wraps: a multiplicative hash
    mixed ^= mixed >> np.uint64(29)
    channels = [(mixed >> np.uint64(shift)) & np.uint64(0xFF) for shift in (8, 24, 40)]
    return np.stack([64 + (c % np.uint64(192)) for c in channels], axis=-1).astype(np.uint8)


def _boundary(labels: np.ndarray) -> np.ndarray:
    """Pixels of a label that touch another value left, right, above or below (the edge pixel repeated outside)."""
    padded = np.pad(labels, 1, mode="edge")
    centre = padded[1:-1, 1:-1]
    differs = (
        (padded[:-2, 1:-1] != centre)
        | (padded[2:, 1:-1] != centre)
        | (padded[1:-1, :-2] != centre)
        | (padded[1:-1, 2:] != centre)
    )
    edge: np.ndarray = differs & (centre != 0)
    return edge


def labels_rgba(labels: np.ndarray, style: str, margin: tuple[int, int, int, int] = (0, 0, 0, 0)) -> np.ndarray:
    """``labels`` (2-D integers, 0 the background) as (height, width, 4) uint8 RGBA, ``margin`` cut off.

    ``margin`` (left, top, right, bottom) counts pixels read around a tile only so its outlines
    are the ones the whole mask has at the tile's edges; they are not drawn.
    """
    if style not in LABEL_STYLES:
        raise ElementError(f"A labels style is one of {', '.join(LABEL_STYLES)}, not {style[:40]!r}.")
    if labels.ndim != 2 or not np.issubdtype(labels.dtype, np.integer):
        raise ElementError(f"A labels element holds 2-D integers, not {labels.ndim}-D {labels.dtype}.")
    left, top, right, bottom = margin
    edge = _boundary(labels)[top : labels.shape[0] - bottom, left : labels.shape[1] - right]
    inner = labels[top : labels.shape[0] - bottom, left : labels.shape[1] - right]
    ids, inverse = np.unique(inner, return_inverse=True)
    rgba = np.zeros((*inner.shape, 4), dtype=np.uint8)
    rgba[..., :3] = label_colors(ids)[inverse.reshape(inner.shape)]
    alpha = np.where(edge, 255, FILL_ALPHA if style == "fill" else 0)
    rgba[..., 3] = np.where(inner != 0, alpha, 0)
    return rgba


@dataclass(frozen=True)
class ExportLabels:
    """A labels layer as an export draws it: the mask's RGBA over ``bounds`` (x0, y0, x1, y1), at ``opacity``."""

    rgba: np.ndarray
    bounds: tuple[float, float, float, float]
    opacity: float


def export_labels(
    pyramid: Pyramid, style: str, region: tuple[float, float, float, float], max_side: int, opacity: float
) -> ExportLabels | None:
    """The mask over ``region`` at the finest level whose pixels there fit in ``max_side``, coloured as the tiles are.

    Why the same colouring as ``labels_tile``: an export shows each label in the colour the view
    shows it (the colour of an id is the id's alone), outlined where the mask has an edge; the
    region's cut is no edge (``labels_rgba`` repeats the border pixel outside). A mask too large
    even at its coarsest level is read every few pixels; None when the region misses the mask.
    """
    try:
        index, (x0, y0, x1, y1), step = pyramid.fit(level_pixels(pyramid.transform, region), max_side, stride=True)
    except ElementError:
        return None  # the region does not overlap the mask: nothing of it to draw
    rgba = labels_rgba(label_plane(pyramid.read(index, x0, y0, x1, y1, step)), style)
    left, top, right, bottom = pyramid.bounds(index, x0, y0, x1, y1)
    return ExportLabels(rgba, (float(left), float(top), float(right), float(bottom)), float(opacity))
