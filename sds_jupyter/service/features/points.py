"""Transcripts: a version's points elements, their spatial index, and its tiles (``points``, ``points_tile``).

Why tiles: a Xenium run's 30 million transcripts are 180 MB even packed; the view asks for the
tiles on screen at the level its zoom needs, coarse ones as an even sample, the finest whole
(:mod:`sds_jupyter.studio.pointindex`). The index is built once per element and coordinate
system, named by the identity of the stored objects (versions never change them), and kept in
the session's caches, so every version that leaves the element alone shares it.
"""

from __future__ import annotations

import hashlib
import re

import zarr

from sds_jupyter.service.errors import RequestError
from sds_jupyter.service.layouts import reply_buffers
from sds_jupyter.service.reply import Reply
from sds_jupyter.service.session import Session
from sds_jupyter.service.types import PointsData, PointsInfo, PointsTileData
from sds_jupyter.stack import StackStore
from sds_jupyter.stack.identity import node_identity
from sds_jupyter.stack.lru import ByteLRU
from sds_jupyter.studio.errors import ElementError
from sds_jupyter.studio.pointindex import PointIndex, build_point_index
from sds_jupyter.studio.points import GENE_COLORS, open_points, point_batches, points_names

__all__ = ["MAX_TILE_GENES", "POINT_INDEX_BYTES", "points", "points_tile"]

#: What the kept indexes may cost, counted as their files on disk (12 bytes a point) and
#: their offsets in memory: 4 GiB keeps the indexes of about 350 million points.
POINT_INDEX_BYTES = 4 * 1024**3
#: The most genes one tile request names (the view colours a few; "all" is the empty list).
MAX_TILE_GENES = 64
#: Part of every key: a change of how the index is built gets new keys, never old entries.
_FORMAT = "points-index-1"
_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


def _indexes(session: Session) -> ByteLRU[PointIndex]:
    return session.caches.derived("point-index", POINT_INDEX_BYTES)


def _store(session: Session, version: int | str | None) -> StackStore:
    return StackStore(session.stack.at(session.depth(version)), caches=session.caches)


def _checked_name(element: str) -> str:
    if not _NAME.fullmatch(element or ""):
        raise RequestError(f"{element[:60]!r} is not a points element name: use letters, digits, '.', '_' and '-'.")
    return element


def _key(store: StackStore, element: str, system: str) -> str:
    parts = [_FORMAT, system, node_identity(store, f"points/{element}")]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


def _index(session: Session, version: int | str | None, element: str, system: str) -> tuple[str, PointIndex]:
    store = _store(session, version)
    key = _key(store, element, system)

    def build() -> PointIndex:
        root = zarr.open_group(store, mode="r")
        opened = open_points(root, element, system or None)
        return build_point_index(point_batches(root, opened))

    try:
        return key, _indexes(session).get_or_compute(key, build)
    except ElementError as exc:
        raise RequestError(str(exc)) from None


def _info(element: str, key: str, index: PointIndex) -> PointsInfo:
    return {
        "element": element,
        "key": key,
        "n_points": index.n_points,
        "bounds": index.bounds,
        "finest_level": index.level,
        "tile_points": index.tile_points,
        "genes": [
            {"name": name, "count": int(count)} for name, count in zip(index.genes, index.gene_counts, strict=True)
        ],
        "palette": list(GENE_COLORS),
    }


def points(
    session: Session, version: int | str | None = None, element: str = "", coordinate_system: str = ""
) -> PointsData:
    """The version's points elements and, for ``element``, its index: extent, levels and genes with counts.

    Why the index here: the first ask builds it (one pass over the element, a stream), so the
    tiles that follow are binary searches; a version that leaves the element alone shares it.
    """
    store = _store(session, version)
    names = points_names(zarr.open_group(store, mode="r"))
    payload: PointsData = {"elements": names, "index": None}
    if element:
        if _checked_name(element) not in names:
            raise RequestError(f"No points element {element!r} in this version; it has: {', '.join(names) or 'none'}.")
        key, index = _index(session, version, element, coordinate_system)
        payload["index"] = _info(element, key, index)
    return payload


def _genes(text: str) -> list[str] | None:
    """``text`` as gene names ("," separated; empty: every gene)."""
    if not text:
        return None
    if len(text) > 8192:
        raise RequestError("Parameter 'genes' is too long.")
    names = [name for name in text.split(",") if name]
    if len(names) > MAX_TILE_GENES:
        raise RequestError(f"A points tile shows at most {MAX_TILE_GENES} genes at once, not {len(names)}.")
    return names


def points_tile(
    session: Session,
    version: int | str | None = None,
    element: str = "",
    key: str = "",
    level: int = 0,
    x: int = 0,
    y: int = 0,
    genes: str = "",
    coordinate_system: str = "",
) -> Reply[PointsTileData]:
    """Tile (``x``, ``y``) of ``level`` of a points element's index: every point of ``genes`` at the finest level.

    ``key`` is the ``points`` reply's: the answer is named by it, the tile and the genes, so
    it never changes and the browser keeps it. Coarser levels send an even sample of at most
    ``tile_points`` points (``sampled`` says so; ``total`` is how many the tile holds).
    """
    if not key:
        raise RequestError("The points_tile request needs the key of the points reply.")
    current, index = _index(session, version, _checked_name(element), coordinate_system)
    if key != current:
        raise RequestError(f"The points of {element!r} are not the ones key {key[:40]!r} names; ask points again.")
    try:
        tile = index.tile(level, x, y, _genes(genes))
    except ElementError as exc:
        raise RequestError(str(exc)) from None
    payload: PointsTileData = {
        "key": key,
        "level": level,
        "x": x,
        "y": y,
        "bounds": tile.bounds,
        "n": len(tile.x),
        "total": tile.total,
        "sampled": tile.sampled,
    }
    name = hashlib.sha256(f"{key}\n{level}\n{x}\n{y}\n{genes}".encode()).hexdigest()[:32]
    return Reply(payload, reply_buffers("points_tile", payload, [tile.x, tile.y, tile.gene]), etag=name, addressed=True)
