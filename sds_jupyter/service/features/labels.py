"""Segmentation masks: a version's labels elements and their tiles as RGBA (``labels``, ``labels_tile``).

Why tiles like an image's: a labels element is an integer pyramid as large as the image it
segments; the view asks for the tiles on screen of the level its zoom needs, each read through
the one :class:`~sds_jupyter.studio.elements.Pyramid` reader (bounded chunk reads) and coloured
here (:mod:`sds_jupyter.studio.masks`), one stable colour per label id.
"""

from __future__ import annotations

import re

import zarr

from sds_jupyter.errors import ElementError
from sds_jupyter.protocol.layouts import reply_buffers
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.protocol.types import ImageLevel, LabelsData, LabelsTileData
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.session import Session
from sds_jupyter.stack import StackStore
from sds_jupyter.studio.elements import Pyramid, open_pyramid
from sds_jupyter.studio.masks import labels_rgba

__all__ = ["labels", "labels_tile"]

_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


def _names(root: zarr.Group) -> list[str]:
    try:
        group = root["labels"]
    except KeyError:
        return []
    return sorted(group.group_keys()) if isinstance(group, zarr.Group) else []


def _pyramid(session: Session, version: int | str | None, element: str, system: str) -> Pyramid:
    """Labels element ``element`` opened once per version and coordinate system (nothing read)."""
    if not _NAME.fullmatch(element or ""):
        raise RequestError(f"{element[:60]!r} is not a labels element name: use letters, digits, '.', '_' and '-'.")

    def opened() -> tuple[Pyramid, list[tuple[float, float]]]:
        root = zarr.open_group(StackStore(session.stack.at(session.depth(version)), caches=session.caches), mode="r")
        names = _names(root)
        if element not in names:
            raise RequestError(f"No labels element {element!r} in this version; it has: {', '.join(names) or 'none'}.")
        try:
            return open_pyramid(root, element, system or None, kind="labels"), []
        except ElementError as exc:
            raise RequestError(str(exc)) from None

    return session.images.get((session.depth(version), f"labels\n{system}\n{element}"), opened)[0]


def labels(
    session: Session, version: int | str | None = None, element: str = "", coordinate_system: str = ""
) -> LabelsData:
    """The version's labels elements and, for ``element``, its pyramid's levels (what ``labels_tile`` serves)."""
    root = zarr.open_group(StackStore(session.stack.at(session.depth(version)), caches=session.caches), mode="r")
    payload: LabelsData = {"elements": _names(root), "element": element, "levels": []}
    if element:
        payload["levels"] = _levels(_pyramid(session, version, element, coordinate_system))
    return payload


def _levels(pyramid: Pyramid) -> list[ImageLevel]:
    return [
        {
            "width": found.width,
            "height": found.height,
            "tile": found.tile,
            "bounds": pyramid.bounds(index, 0, 0, found.width, found.height),
        }
        for index, found in enumerate(pyramid.levels)
    ]


def labels_tile(
    session: Session,
    version: int | str | None = None,
    element: str = "",
    level: int = 0,
    x: int = 0,
    y: int = 0,
    style: str = "fill",
    coordinate_system: str = "",
) -> Reply[LabelsTileData]:
    """Tile (``x``, ``y``) of ``level`` of a labels element as RGBA: each id its colour, ``style`` fill or outline.

    The tile grid is the ``labels`` reply's ``levels`` (as ``image_tile``'s). A one-pixel margin
    is read around the tile so a label's outline at the tile's edge is the mask's, not the cut's.
    """
    pyramid = _pyramid(session, version, element, coordinate_system)
    try:
        x0, y0, x1, y1 = pyramid.tile_box(level, x, y)
        found = pyramid.level(level)
        a0, b0, a1, b1 = max(0, x0 - 1), max(0, y0 - 1), min(found.width, x1 + 1), min(found.height, y1 + 1)
        raw = pyramid.read(level, a0, b0, a1, b1)
        rgba = labels_rgba(raw.data, style, (x0 - a0, y0 - b0, a1 - x1, b1 - y1))
    except ElementError as exc:
        raise RequestError(str(exc)) from None
    payload: LabelsTileData = {
        "element": element,
        "level": level,
        "x": x,
        "y": y,
        "width": x1 - x0,
        "height": y1 - y0,
        "bounds": pyramid.bounds(level, x0, y0, x1, y1),
        "style": style,
    }
    return Reply(payload, reply_buffers("labels_tile", payload, [rgba.reshape(-1)]))
