"""What the canvas builder hands the front end, typed once.

The service's protocol re-exports these (``sds_jupyter.service.types``); they live
here so the studio's builders never import the service above them.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = ["CanvasImage", "CanvasPayload", "Viewport"]


class Viewport(TypedDict):
    target: list[float]
    zoom: float
    rotation: float


class CanvasImage(TypedDict):
    width: int
    height: int
    bounds: list[float]
    channels: list[dict[str, str]]


class CanvasPayload(TypedDict):
    n_cells: int
    bounds: list[float]
    viewport: Viewport
    color: dict[str, Any]
    point_size: float
    image: CanvasImage | None
    unit: NotRequired[str | None]
    obs_columns: NotRequired[list[str]]
