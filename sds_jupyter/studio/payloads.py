"""What the canvas builder hands the front end, typed once.

The service's protocol re-exports these (``sds_jupyter.service.types``); they live
here so the studio's builders never import the service above them.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = ["CanvasImage", "CanvasPayload", "CanvasShapes", "Viewport"]


class Viewport(TypedDict):
    target: list[float]
    zoom: float
    rotation: float


class CanvasImage(TypedDict):
    width: int
    height: int
    bounds: list[float]
    channels: list[dict[str, str]]


class CanvasShapes(TypedDict):
    """What the cells are drawn as, when not points: their polygons, or circles of their radius.

    Buffers after the image: polygons send ``starts`` (uint32, n_cells + 1: cell i's
    vertices are ``starts[i]`` to ``starts[i + 1]``) and ``vertices`` (float32 x, y
    pairs); circles send one float32 radius per cell, in data units (NaN: no shape).
    """

    kind: Literal["polygons", "circles"]
    element: str
    n_vertices: NotRequired[int]


class CanvasPayload(TypedDict):
    n_cells: int
    bounds: list[float]
    viewport: Viewport
    color: dict[str, Any]
    point_size: float
    image: CanvasImage | None
    unit: NotRequired[str | None]
    obs_columns: NotRequired[list[str]]
    shapes: NotRequired[CanvasShapes | None]
