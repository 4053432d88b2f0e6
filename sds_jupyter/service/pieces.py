"""What a canvas view is drawn from, computed once per set of stored objects and kept.

Why: a figure's cells (positions, outlines) and its image's overview follow from a few
stored objects, which versions never change; every figure of the element, in every
version that leaves those objects alone, draws the same ones. So each is computed once,
named by the identity of the objects it was read from (:func:`node_identity`), and kept
in a process-wide cache bounded by bytes: the REST server's services (one per version
folder) and the widget's share the entries, and a version switch finds them there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sds_jupyter.service.lru import ByteLRU
from sds_jupyter.service.tables import TableView
from sds_jupyter.stack import StackStore
from sds_jupyter.stack.identity import node_identity
from sds_jupyter.studio.canvas import CellGeometry, cell_geometry, channel_planes, geometry_nodes
from sds_jupyter.studio.elements import coarsest_level
from sds_jupyter.studio.payloads import CanvasImage, ChannelInfo

__all__ = [
    "CELLS",
    "CELL_CACHE_BYTES",
    "IMAGE_CACHE_BYTES",
    "OVERVIEWS",
    "OVERVIEW_SIDE",
    "Overview",
    "cached_geometry",
    "cached_overview",
    "cells_key",
    "image_key",
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
_CELLS_FORMAT = "cells-1"
_OVERVIEW_FORMAT = "overview-2"


@dataclass(frozen=True)
class Overview:
    """An image's overview as the browser blends it: each channel's uint8 plane and settings."""

    infos: list[ChannelInfo]
    planes: list[np.ndarray]
    bounds: list[float]
    unit: str | None

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
        return {"width": self.width, "height": self.height, "bounds": self.bounds, "channels": shown}  # type: ignore[typeddict-item]


CELLS: ByteLRU[CellGeometry] = ByteLRU(CELL_CACHE_BYTES, lambda geometry: geometry.nbytes)
OVERVIEWS: ByteLRU[Overview] = ByteLRU(IMAGE_CACHE_BYTES, lambda overview: overview.nbytes)


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


def cached_geometry(view: TableView, spec: Mapping[str, Any]) -> tuple[str, CellGeometry]:
    """A figure's cell geometry and its key, computed only when no figure read the same objects before."""
    key = cells_key(view, spec)
    system = spec.get("coordinate_system") or None
    return key, CELLS.get_or_compute(key, lambda: cell_geometry(view, view.root, view.attrs, system))


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
        level = coarsest_level(view.root, "images", str(spec["image"]), max_side=OVERVIEW_SIDE, system=system)
        infos, planes = channel_planes(level, spec)
        extent_y, extent_x = level.extent_yx
        bounds = level.transform.box(0.0, 0.0, extent_x, extent_y)
        return Overview(infos, [np.ascontiguousarray(plane) for plane in planes], bounds, level.unit)

    return key, OVERVIEWS.get_or_compute(key, read)
