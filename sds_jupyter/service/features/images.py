"""A canvas figure's image: ``channels``, ``image_region``, ``image_tile``; and raw store bytes, ``store_key``."""

from __future__ import annotations

import re

import numpy as np
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from sds_jupyter.limits import MAX_STORE_OBJECT
from sds_jupyter.protocol.layouts import reply_buffers
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.protocol.types import ChannelsData, ImageRegionData, ImageTileData, StoreKeyData
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.pieces import cached_level_overview, cached_overview
from sds_jupyter.service.session import Session
from sds_jupyter.stack import StackStore
from sds_jupyter.studio.bounds import check_region
from sds_jupyter.studio.canvas import MAX_IMAGE_SIDE, planes_over
from sds_jupyter.studio.elements import Pyramid, open_pyramid, region_level

__all__ = ["MAX_STORE_OBJECT", "channels", "checked_store_key", "image_region", "image_tile", "store_key"]

#: A plain zarr key: segments of letters, digits, ".", "_" and "-", joined by "/".
_STORE_KEY = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")


def channels(
    session: Session, version: int | str | None = None, figure: str = "", level: int | None = None
) -> Reply[ChannelsData]:
    """A canvas figure's image channels, each as uint8 planes the browser blends (toggle, color, contrast).

    ``levels`` describes the image's pyramid, so the browser can ask ``image_tile`` for
    the tiles of the level a zoom needs. Without ``level`` the planes are the finest level
    within OVERVIEW_SIDE; with it, that pyramid level (at most OVERVIEW_SIDE a side), which
    the browser picks from the canvas reply's ``image.levels`` for the pixels its view has.
    """
    if not figure:
        raise RequestError("The channels request needs a figure id.")
    spec = session.canvas_spec(version, figure)
    if not spec.get("image"):
        raise RequestError(f"Figure {figure!r} shows no image.")
    view = session.table_view(version, spec.get("table"))
    shown, overview = cached_overview(view, spec) if level is None else cached_level_overview(view, spec, level)
    payload: ChannelsData = {
        "width": overview.width,
        "height": overview.height,
        "bounds": overview.bounds,
        "channels": overview.infos,
        "levels": overview.levels,
    }
    return Reply(payload, reply_buffers("channels", payload, overview.planes), etag=shown)


def _figure_image(
    session: Session, version: int | str | None, figure: str
) -> tuple[Pyramid, list[tuple[float, float]]]:
    """The pyramid a canvas figure shows and its channels' value ranges (the overview's), opened once.

    Why: a zoom asks for a dozen tiles at once; parsing the figure, opening the arrays and
    scanning the overview for its ranges once per version keeps each tile to its chunk reads.
    """
    if not figure:
        raise RequestError("This request needs a figure id.")
    key = (session.depth(version), figure)

    def opened() -> tuple[Pyramid, list[tuple[float, float]]]:
        spec = session.canvas_spec(version, figure)
        if not spec.get("image"):
            raise RequestError(f"Figure {figure!r} shows no image.")
        view = session.table_view(version, spec.get("table"))
        system = spec.get("coordinate_system") or None
        name = str(spec["image"])
        _, overview = cached_overview(view, spec)
        spans = [(float(info["range"][0]), float(info["range"][1])) for info in overview.infos]
        return open_pyramid(view.root, name, system), spans

    return session.images.get(key, opened)


def _floats(text: str, name: str, count: int) -> list[float]:
    """``count`` finite numbers from comma-separated ``text``; a one-line refusal otherwise."""
    parts = text.split(",")
    try:
        values = [float(p) for p in parts if len(p.strip()) <= 32]
    except ValueError:
        values = []
    if len(values) != count or len(parts) != count or not all(np.isfinite(values)):
        raise RequestError(f"Parameter {name!r} must be {count} finite numbers separated by commas, not {text[:80]!r}.")
    return values


def _spans(ranges: str, default: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``ranges`` ("low,high;low,high;...") as pairs, else ``default`` (the overview's)."""
    if not ranges:
        return default
    if len(ranges) > 4096:
        raise RequestError("Parameter 'ranges' is too long.")
    return [(span[0], span[1]) for span in (_floats(part, "ranges", 2) for part in ranges.split(";"))]


def image_region(
    session: Session,
    version: int | str | None = None,
    figure: str = "",
    region: str = "",
    max_side: int = MAX_IMAGE_SIDE,
    ranges: str = "",
) -> Reply[ImageRegionData]:
    """The detail of a canvas figure's image over ``region``, as uint8 planes per channel.

    Why: one picture of a region at the finest level that fits ``max_side`` (at most
    MAX_IMAGE_SIDE), for a drawing without a tile grid. ``region`` is "x0,y0,x1,y1" in the
    figure's coordinate system; ``ranges`` ("low,high;low,high;...", the ``channels`` reply's
    ranges) says which raw values 0 and 255 stand for, so the detail matches the overview's colors.
    """
    if not figure:
        raise RequestError("The image_region request needs a figure id.")
    box = _floats(region, "region", 4)
    check_region(box)
    if not (box[2] > box[0] and box[3] > box[1]):
        raise RequestError(f"The region {box} is empty: give x0,y0,x1,y1 with x1 > x0 and y1 > y0.")
    if not 16 <= max_side <= MAX_IMAGE_SIDE:
        raise RequestError(f"max_side must be between 16 and {MAX_IMAGE_SIDE}, not {max_side}.")
    pyramid, default = _figure_image(session, version, figure)
    spans = _spans(ranges, default)
    found = region_level(pyramid, pyramid.name, box, max_side)
    planes = planes_over(found.level, spans)
    payload: ImageRegionData = {
        "level": found.index,
        "levels": found.levels,
        "width": int(planes[0].shape[1]) if planes else 0,
        "height": int(planes[0].shape[0]) if planes else 0,
        "bounds": found.bounds,
        "channels": len(planes),
    }
    return Reply(payload, reply_buffers("image_region", payload, planes))


def image_tile(
    session: Session,
    version: int | str | None = None,
    figure: str = "",
    level: int = 0,
    x: int = 0,
    y: int = 0,
    ranges: str = "",
) -> Reply[ImageTileData]:
    """Tile (``x``, ``y``) of pyramid level ``level`` of a canvas figure's image, as uint8 planes per channel.

    Why: a zoomed view draws the tiles on screen of the level its zoom needs, each asked for
    once and cached in the browser; a tile is a chunk's worth of pixels (the ``channels``
    reply's ``levels`` give each level's size and tile side), so it costs one chunk read per
    channel. ``ranges`` as for ``image_region``. A level or tile off the pyramid is refused.
    """
    pyramid, default = _figure_image(session, version, figure)
    spans = _spans(ranges, default)
    x0, y0, x1, y1 = pyramid.tile_box(level, x, y)
    planes = planes_over(pyramid.read(level, x0, y0, x1, y1), spans)
    payload: ImageTileData = {
        "level": level,
        "x": x,
        "y": y,
        "width": x1 - x0,
        "height": y1 - y0,
        "bounds": pyramid.bounds(level, x0, y0, x1, y1),
        "channels": len(planes),
    }
    return Reply(payload, reply_buffers("image_tile", payload, planes))


def checked_store_key(key: str) -> str:
    """``key`` when it is a plain relative zarr key (no "." or ".." segment, at most 1,024 characters)."""
    if not isinstance(key, str) or not key:
        raise RequestError("The store_key request needs a key, e.g. 'images/morphology_focus/zarr.json'.")
    if len(key) > 1024 or not _STORE_KEY.fullmatch(key) or any(part in (".", "..") for part in key.split("/")):
        shown = key if len(key) <= 60 else key[:57] + "..."
        raise RequestError(
            f"{shown!r} is not a store key: use '/'-separated names of letters, digits, '.', '_' and '-'."
        )
    return key


def store_key(session: Session, version: int | str | None = None, key: str = "") -> Reply[StoreKeyData]:
    """The raw bytes of one key of a version's store, as zarr sees the stack at that version.

    Why: one request through which a zarr reader in the browser (zarrita, Viv's OME-Zarr
    loaders) can read any array of a version, over the widget or the server alike. Only
    plain relative keys are answered, and only from the version's own store (its overlays
    over the base): never a manifest, a sibling folder or a path outside the store.
    """
    checked = checked_store_key(key)
    store = StackStore(session.stack.at(session.depth(version)), caches=session.caches)
    _check_object_size(checked, store.size_raw(checked))  # before reading: the object is never held
    data = sync(store.get(checked, prototype=default_buffer_prototype()))
    raw = b"" if data is None else data.to_bytes()
    _check_object_size(checked, len(raw))  # a file that grew since its size was taken
    payload: StoreKeyData = {"key": checked, "found": data is not None, "size": len(raw)}
    return Reply(payload, reply_buffers("store_key", payload, [raw] if data is not None else []))


def _check_object_size(key: str, size: int | None) -> None:
    """Refuse an object over MAX_STORE_OBJECT (None: absent, nothing to refuse)."""
    if size is not None and size > MAX_STORE_OBJECT:
        raise RequestError(
            f"{key!r} is {size:,} bytes; objects over {MAX_STORE_OBJECT:,} (MAX_STORE_OBJECT) are not sent."
        )
