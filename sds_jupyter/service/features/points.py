"""Transcripts: a version's points elements, their spatial index, and its tiles (``points``, ``points_tile``).

Why tiles: a Xenium run's 30 million transcripts are 180 MB even packed; the view asks for the
tiles on screen at the level its zoom needs, coarse ones as an even sample, the finest whole
(:mod:`sds_jupyter.studio.pointindex`). The index is built once per element and coordinate
system, named by the identity of the stored objects (versions never change them), and kept in
the session's caches, so every version that leaves the element alone shares it. On disk it is
kept in the user's cache folder (:mod:`sds_jupyter.studio.pointstore`). Both caches key it by
one identity that includes the element's parquet footers, so another process or a restarted
server maps it instead of building it again, and an element rewritten in place, even under a
running server, gets a new index and a new key.
"""

from __future__ import annotations

import atexit
import hashlib
import re
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import zarr

from sds_jupyter.errors import ElementError
from sds_jupyter.lru import ByteLRU
from sds_jupyter.protocol.layouts import reply_buffers
from sds_jupyter.protocol.reply import Reply, served_from
from sds_jupyter.protocol.types import PointsData, PointsInfo, PointsTileData
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.session import Session
from sds_jupyter.stack import StackStore, node_identity
from sds_jupyter.studio.pointindex import BuildStopped, IndexShape, PointIndex, PointsTooMany, sample_index, shape_tile
from sds_jupyter.studio.pointparts import (
    GENE_COLORS,
    PointsElement,
    element_fingerprint,
    open_points,
    point_batches,
    point_sample,
    points_names,
)
from sds_jupyter.studio.pointstore import PointStore, memory_index_points

__all__ = [
    "MAX_TILE_GENES",
    "POINT_INDEX_BYTES",
    "REFUSED_RETRY_SECONDS",
    "SAMPLE_INDEX_BYTES",
    "SHAPE_BYTES",
    "STOP_WAIT_SECONDS",
    "points",
    "points_tile",
]

#: What the kept indexes may cost, counted as their files on disk (12 bytes a point) and
#: their offsets in memory: 4 GiB keeps the indexes of about 350 million points.
POINT_INDEX_BYTES = 4 * 1024**3
#: What the samples shown while indexes build may cost together (a sample is about 3 MB).
SAMPLE_INDEX_BYTES = 256 * 1024**2
#: After a build the disk refused (an element too large to index in memory), how long its sample is
#: served before another build is tried (the view asks every second while it shows a sample).
REFUSED_RETRY_SECONDS = 60.0
#: The most genes one tile request names (the view colours a few; "all" is the empty list).
MAX_TILE_GENES = 64
#: What the shapes of the whole indexes handed out may cost (a few KB each: their genes' names).
SHAPE_BYTES = 16 * 1024**2
#: Part of every key: a change of how the index is built gets new keys, never old entries.
_FORMAT = "points-index-1"
_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
#: Before a sample's key: the key of the sample of the element whose index has the rest of the key.
_SAMPLE = "sample-"
_STARTING = threading.Lock()
#: The most seconds a process that is ending waits for its background builds to stop (each stops
#: at its next part: a row group read, a chunk scattered, a block sorted; about a second).
STOP_WAIT_SECONDS = 60.0
#: Set when the process ends: every build stops at its next part, its build folder removed.
_STOP = threading.Event()
#: The names of the build threads begin so (the exit finds them by it: no registry to keep).
_THREAD = "sds-points-"


def _stop_builds() -> None:
    """At exit: ask every background build to stop and wait for it (bounded), so none is cut midway.

    Why: a build is a daemon thread (a server does not wait minutes for an index no one will
    see), and the interpreter freezes daemon threads where they stand when it ends: that left a
    ``.build-`` folder in the cache and could abort the exit (a thread in buffered I/O then).
    ``atexit`` runs before that, while the threads still run.
    """
    with _STARTING:  # no build starts after this
        _STOP.set()
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    for thread in [t for t in threading.enumerate() if t.name.startswith(_THREAD)]:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


atexit.register(_stop_builds)


def _indexes(session: Session) -> ByteLRU[PointIndex]:
    return session.caches.derived("point-index", POINT_INDEX_BYTES)


def _store(session: Session, version: int | str | None) -> StackStore:
    return StackStore(session.stack.at(session.depth(version)), caches=session.caches)


def _checked_name(element: str) -> str:
    if not _NAME.fullmatch(element or ""):
        raise RequestError(f"{element[:60]!r} is not a points element name: use letters, digits, '.', '_' and '-'.")
    return element


def _identity(store: StackStore, root: zarr.Group, opened: PointsElement, system: str) -> str:
    """Everything that names the element's points: the layout, the system, who holds it and its parquet footers.

    Why the footers too: the holder names where the element is stored, not what it holds, and a
    base rewritten in place under a running server keeps its holder; its footers (row counts,
    sizes, statistics) change. One identity serves both caches (this process's and the disk's).
    """
    parts = [_FORMAT, system, node_identity(store, f"points/{opened.name}"), element_fingerprint(root, opened)]
    return "\n".join(parts)


@dataclass(frozen=True)
class _Element:
    """A points element of a version, opened: where to read it and the key its index goes by."""

    root: zarr.Group
    opened: PointsElement
    identity: str
    key: str

    def build(self) -> PointIndex:
        """Its whole index: mapped from the disk's cache, else built there (one stream over the parts)."""
        return PointStore().get(self.identity, lambda: point_batches(self.root, self.opened), stop=_STOP)


def _element(session: Session, version: int | str | None, element: str, system: str) -> _Element:
    store = _store(session, version)
    root = zarr.open_group(store, mode="r")
    try:
        opened = open_points(root, element, system or None)
        identity = _identity(store, root, opened, system)
    except ElementError as exc:
        raise RequestError(str(exc)) from None
    key = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return _Element(root, opened, identity, key)


def _whole(session: Session, found: _Element) -> PointIndex:
    """The element's whole index, built here and now if no cache holds it (the caller waits).

    :class:`PointsTooMany` (the disk refused it, memory cannot hold it) is the caller's to say.
    """
    made: list[PointIndex] = []

    def build() -> PointIndex:
        made.append(found.build())
        return made[-1]

    try:
        index = _indexes(session).get_or_compute(found.key, build)
        served_from("points", _origin(made[-1]) if made else "memory")
        return index
    except PointsTooMany:
        raise
    except ElementError as exc:
        raise RequestError(str(exc)) from None


class _Build(Future[PointIndex]):
    """A background build of an element's index; ``ended``: when it failed (``time.monotonic``)."""

    ended = 0.0


def _origin(index: PointIndex) -> str:
    """Where an index this process had not held came from: built here, or mapped from the disk's cache."""
    return "built" if index.built else "disk"


def _builds(session: Session) -> ByteLRU[_Build]:
    return session.caches.derived("point-builds", 1 << 20)


class _Refused(Exception):
    """The disk refused an element's index and memory may not hold it (``too_many``); another build in ``retry`` seconds."""

    def __init__(self, too_many: PointsTooMany, retry: float) -> None:
        super().__init__(str(too_many))
        self.too_many = too_many
        self.retry = retry


def _ready(session: Session, found: _Element) -> PointIndex | None:
    """The element's whole index if it is ready (its background build ended, or kept here or on disk), else None.

    A background build that failed is said here, once: the next ask starts another. A build
    that ended is forgotten here, so only the cache of indexes holds what it made. A build the
    disk refused (:class:`PointsTooMany`) is not an error: :class:`_Refused` says so (the sample
    is served and the reply says why), and another build is tried after :data:`REFUSED_RETRY_SECONDS`.
    """
    build = _builds(session).peek(found.key)
    if build is not None:
        if not build.done():
            return None
        error = build.exception()
        if isinstance(error, PointsTooMany):
            left = REFUSED_RETRY_SECONDS - (time.monotonic() - build.ended)
            if left > 0:
                raise _Refused(error, left)  # the build stays: no other starts meanwhile
        _builds(session).discard(found.key)
        if isinstance(error, PointsTooMany):
            return None
        if isinstance(error, ElementError):
            raise RequestError(str(error))
        served_from("points", _origin(build.result()))  # the background build's: its first reply
        return build.result()
    indexes = _indexes(session)
    index = indexes.get(found.key)
    if index is not None:
        served_from("points", "memory")
    else:
        index = PointStore().kept(found.identity)  # another process built it
        if index is not None:
            served_from("points", "disk")
            indexes.put(found.key, index)
    return index


def _start(session: Session, found: _Element) -> None:
    """Start building the element's whole index in a thread of its own, unless a build of it is under way."""
    with _STARTING:
        if _builds(session).peek(found.key) is not None:
            return
        build = _Build()
        _builds(session).put(found.key, build, 1)
    thread = threading.Thread(
        target=_build, args=(session, found, build), name=f"{_THREAD}{found.key[:8]}", daemon=True
    )
    with _STARTING:
        if _STOP.is_set():  # the process is ending: no build starts
            build.ended = time.monotonic()
            build.set_exception(BuildStopped("The points index build stopped: its process is ending."))
            return
        thread.start()


def _build(session: Session, found: _Element, build: _Build) -> None:
    """Build (or wait for) the element's whole index into the session's cache; ``build`` gets it or the error."""
    try:
        build.set_result(_indexes(session).get_or_compute(found.key, found.build))
    except BaseException as exc:  # handed to the request that asks next
        build.ended = time.monotonic()
        build.set_exception(exc)


def _samples(session: Session) -> ByteLRU[PointIndex]:
    return session.caches.derived("point-sample", SAMPLE_INDEX_BYTES)


def _sample(session: Session, found: _Element) -> PointIndex:
    """The element's sample index (:func:`~sds_jupyter.studio.pointparts.point_sample`), made once and kept."""
    made: list[PointIndex] = []

    def build() -> PointIndex:
        made.append(sample_index(point_sample(found.root, found.opened)))
        return made[-1]

    try:
        index = _samples(session).get_or_compute(_SAMPLE + found.key, build)
        served_from("points sample", "built" if made else "memory")
        return index
    except ElementError as exc:
        raise RequestError(str(exc)) from None


def _shapes(session: Session) -> ByteLRU[IndexShape]:
    """The shapes of the whole indexes this process answered ``points`` with, by key: their tiles, should the index go."""
    return session.caches.derived("point-shape", SHAPE_BYTES)


def _info(element: str, key: str, index: PointIndex, refused: _Refused | None = None) -> PointsInfo:
    info: PointsInfo = {
        "element": element,
        "key": key,
        "partial": index.partial,
        "rows": index.rows,
        "n_points": index.n_points,
        "bounds": index.bounds,
        "finest_level": index.level,
        "tile_points": index.tile_points,
        "genes": [
            {"name": name, "count": int(count)} for name, count in zip(index.genes, index.gene_counts, strict=True)
        ],
        "palette": list(GENE_COLORS),
    }
    if refused is not None:
        info["partial_reason"] = "refused"
        info["refused"] = refused.too_many.refused or str(refused.too_many)
        info["memory_points"] = PointStore().memory_points
        info["retry_seconds"] = round(refused.retry, 1)
    elif index.partial:
        info["partial_reason"] = "building"
    return info


def points(
    session: Session,
    version: int | str | None = None,
    element: str = "",
    coordinate_system: str = "",
    sample: bool = False,
) -> PointsData:
    """The version's points elements and, for ``element``, its index: extent, levels and genes with counts.

    Why the index here: the first ask builds it (one pass over the element, a stream), so the
    tiles that follow are binary searches; a version that leaves the element alone shares it.
    With ``sample``, an index not ready yet is not waited for: its build goes on in the
    background and the reply describes a sample of the element (``partial``), whose tiles
    answer at once; asking again says when the whole index is ready.
    """
    store = _store(session, version)
    names = points_names(zarr.open_group(store, mode="r"))
    payload: PointsData = {"elements": names, "index": None}
    if element:
        if _checked_name(element) not in names:
            raise RequestError(f"No points element {element!r} in this version; it has: {', '.join(names) or 'none'}.")
        found = _element(session, version, element, coordinate_system)
        try:
            memory_index_points()  # a bad setting is said now, not when a disk first refuses an index
        except ElementError as exc:
            raise RequestError(str(exc)) from None
        refused: _Refused | None = None
        try:
            index = _ready(session, found) if sample else _whole(session, found)
        except _Refused as exc:  # a background build the disk refused: the sample until another is tried
            index, refused = None, exc
        except PointsTooMany as exc:  # waited for: the disk refused its index and memory cannot hold it
            index, refused = None, _Refused(exc, 0.0)  # the next ask waits for another build
        if index is None:  # the sample first (it is quick), then the whole index's build behind it
            shown = _sample(session, found)
            if not shown.partial:  # the sample read every point: nothing is left to build or to refuse
                payload["index"] = _info(element, _SAMPLE + found.key, shown)
            else:
                payload["index"] = _info(element, _SAMPLE + found.key, shown, refused)
                if refused is None:
                    _start(session, found)
        else:
            _shapes(session).put(found.key, IndexShape.of(index))
            payload["index"] = _info(element, found.key, index)
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
    found = _element(session, version, _checked_name(element), coordinate_system)
    if key == _SAMPLE + found.key:
        index = _sample(session, found)
    elif key == found.key:
        try:
            held = _tile_index(session, found)
        except _Refused as exc:  # its index was dropped here and cannot be made again now: the sample
            return _stand_in_tile(session, found, exc.too_many, key, level, x, y, genes)
        if held is None:  # dropped here and on disk: built again in the background, the sample meanwhile
            return _stand_in_tile(session, found, None, key, level, x, y, genes)
        index = held
    else:
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
        "partial": index.partial,
    }
    name = hashlib.sha256(f"{key}\n{level}\n{x}\n{y}\n{genes}".encode()).hexdigest()[:32]
    return Reply(payload, reply_buffers("points_tile", payload, [tile.x, tile.y, tile.gene]), etag=name, addressed=True)


def _tile_index(session: Session, found: _Element) -> PointIndex | None:
    """The whole index a tile's key names if this process or the disk holds it; else None, its build started.

    Why never built inside the tile's request: at tens of millions of points that takes tens of
    seconds, with the view's tiles waiting on it. The sample answers meanwhile (marked partial,
    so the view asks ``points`` again and follows the build as on a first visit). A build the
    disk refused is :class:`_Refused` until :data:`REFUSED_RETRY_SECONDS` have passed, as for
    ``points``, so each tile does not read the element again.
    """
    index = _ready(session, found)
    if index is None:
        _start(session, found)
    return index


def _stand_in_tile(
    session: Session,
    found: _Element,
    refused: PointsTooMany | None,
    key: str,
    level: int,
    x: int,
    y: int,
    genes: str,
) -> Reply[PointsTileData]:
    """A tile of a whole index this process no longer holds: the sample's points in it, saying why.

    Why not an error: the view asked for a tile of an index it was told is whole. Either it is
    being built again (``refused`` None: memory and disk dropped it) or the disk now refuses
    it and memory may not hold it (``refused``), so the sample is all there is, as ``points``
    would answer. The tile is cut from the sample to the whole index's tile (its shape, kept
    since ``points`` answered with it), coded as its genes, and says ``partial`` and why, so
    the view asks ``points`` again. Without the shape (a server that never answered with this
    index) the tile is empty, saying the same. Never kept by the browser: it is not the tile
    its key names.
    """
    sample = _sample(session, found)
    shape = _shapes(session).get(found.key)
    chosen = _genes(genes)
    try:
        if shape is not None:
            tile = shape_tile(sample, shape, level, x, y, chosen)
            bounds, n, total = tile.bounds, len(tile.x), tile.total
            buffers = [tile.x, tile.y, tile.gene]
        else:
            bounds, n, total = sample.bounds, 0, 0
            buffers = [np.zeros(0, np.uint16)] * 3
    except ElementError as exc:
        raise RequestError(str(exc)) from None
    payload: PointsTileData = {
        "key": key,
        "level": level,
        "x": x,
        "y": y,
        "bounds": bounds,
        "n": n,
        "total": total,
        "sampled": True,
        "partial": True,
        "partial_reason": "building" if refused is None else "refused",
    }
    if refused is not None:
        payload["refused"] = refused.refused or str(refused)
    known = shape is not None  # the shape is the whole key's: whether it is known is all it adds
    reason = payload["partial_reason"]
    name = hashlib.sha256(f"{_SAMPLE}{key}\n{level}\n{x}\n{y}\n{genes}\n{known}\n{reason}".encode()).hexdigest()[:32]
    return Reply(payload, reply_buffers("points_tile", payload, buffers), etag=name)
