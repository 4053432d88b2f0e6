"""Points indexes kept on disk between processes, each under the identity of the element it indexes.

Why: indexing 30 million transcripts reads and sorts them all (minutes on a busy machine),
and a server restarted, a second kernel or another notebook would otherwise do it again. The
index of an element is built once per user and element, then mapped from the cache folder by
every process that asks (a few ``open`` and ``mmap`` calls).

The house rules of :mod:`sds_jupyter.stack.storage.ondisk` hold here too: the folder
(``$SDS_POINTS_CACHE``, else ``$XDG_CACHE_HOME/sds-jupyter/points``) must be this user's, no
link, closed to everyone else (0700), and nothing in it is followed through a link; an index is
opened only if its ``index.json`` names the identity asked for and every file has the size it
implies (:func:`~sds_jupyter.studio.pointindex.open_point_index`). A folder that is not so is
not used: the index is built in a private temporary folder instead and removed with it.

The folder, publishing, locking and eviction are :mod:`sds_jupyter.studio.keptfolders`'s (shared
with the cell geometry kept on disk). Publishing: an index is written in ``.build-<name>-<random>`` beside the others and renamed to
``<name>`` whole, so a reader sees a complete index or none, and a crash leaves only a build
folder that the next build removes. Two processes building the same element take turns
on ``<name>.lock`` (``flock``): the second waits, then opens what the first published. The
indexes together stay within ``max_bytes``, the least recently used removed first (renamed
aside, then deleted: a process still reading one keeps its mappings).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from sds_jupyter.errors import ElementError
from sds_jupyter.stack import cache_dir
from sds_jupyter.studio.keptfolders import KeptFolders, name_of
from sds_jupyter.studio.pointindex import (
    IndexSizes,
    PointIndex,
    PointsTooMany,
    build_point_index,
    memory_point_index,
    open_point_index,
    removed_with,
    write_point_index,
)
from sds_jupyter.studio.pointparts import PointBatch

__all__ = [
    "MAX_MEMORY_INDEX_POINTS",
    "MEMORY_INDEX_POINTS",
    "MEMORY_POINTS_ENV",
    "POINTS_CACHE_BYTES",
    "POINTS_CACHE_ENV",
    "PointStore",
    "memory_index_points",
    "points_cache_dir",
]

#: Where indexes are kept: a folder, or ``off`` to keep none. Unset: ``$XDG_CACHE_HOME/sds-jupyter/points``.
POINTS_CACHE_ENV = "SDS_POINTS_CACHE"
#: The bytes the kept indexes may take together (12 bytes a point: about 700 million points).
POINTS_CACHE_BYTES = 8 * 1024**3

#: The most points indexed in memory when no index can be written (about 26 bytes a point while it
#: sorts: 8,000,000 points take about 210 MB, then 96 MB kept). A larger element shows its sample.
MEMORY_INDEX_POINTS = 8_000_000
#: The setting that changes it: a whole number of points from 0 (never index in memory) to
#: :data:`MAX_MEMORY_INDEX_POINTS`. Unset or empty: :data:`MEMORY_INDEX_POINTS`.
MEMORY_POINTS_ENV = "SDS_POINTS_MEMORY"
#: The most it may be set to: 100,000,000 points take about 2.6 GB while they sort, 1.2 GB kept.
MAX_MEMORY_INDEX_POINTS = 100_000_000

_DEFAULT_SIZES = IndexSizes()


def memory_index_points() -> int:
    """The most points indexed in memory when the disk refuses an index: ``$SDS_POINTS_MEMORY``, else the default.

    A value that is not a whole number from 0 to :data:`MAX_MEMORY_INDEX_POINTS` is refused in
    one line (:class:`~sds_jupyter.errors.ElementError`), never read as another number.
    """
    text = os.environ.get(MEMORY_POINTS_ENV, "").strip()
    if not text:
        return MEMORY_INDEX_POINTS
    try:
        value = int(text) if text.isascii() else -1
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_MEMORY_INDEX_POINTS:
        raise ElementError(
            f"{MEMORY_POINTS_ENV}={text[:40]!r} is not a whole number of points from 0 to "
            f"{MAX_MEMORY_INDEX_POINTS:,} (the most points indexed in memory when the disk refuses an index)."
        )
    return value


def points_cache_dir() -> Path | None:
    """The folder indexes are kept in, or None when ``$SDS_POINTS_CACHE`` is ``off``."""
    return cache_dir(POINTS_CACHE_ENV, "points")


class PointStore:
    """Indexes kept in one private folder (``folder``, or :func:`points_cache_dir` at each use)."""

    def __init__(
        self,
        folder: str | os.PathLike[str] | None = None,
        max_bytes: int = POINTS_CACHE_BYTES,
        memory_points: int | None = None,
    ) -> None:
        #: The most points indexed in memory when the disk refuses an index (see :meth:`get`; None:
        #: :func:`memory_index_points`, read at each use).
        self._memory_points = memory_points
        chosen = None if folder is None else Path(os.path.abspath(folder))
        self._folders: KeptFolders[PointIndex] = KeptFolders(
            lambda: chosen if chosen is not None else points_cache_dir(), max_bytes, "points index"
        )

    @property
    def memory_points(self) -> int:
        return memory_index_points() if self._memory_points is None else self._memory_points

    @property
    def folder(self) -> Path | None:
        return self._folders.folder

    @property
    def max_bytes(self) -> int:
        return self._folders.max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._folders.max_bytes = value

    @staticmethod
    def name_of(identity: str) -> str:
        """An index's folder name: a digest of its identity (the identity itself is kept inside and compared)."""
        return name_of(identity)

    def kept(self, identity: str, sizes: IndexSizes = _DEFAULT_SIZES) -> PointIndex | None:
        """The index of ``identity`` if it is kept whole now, else None: never builds, never waits for a build.

        Why: the view asks whether an index is ready without joining a build another process
        (or this one, in the background) has under way; only a published folder is opened.
        """
        return self._folders.kept(f"{identity}\n{sizes}", open_point_index)

    def get(
        self,
        identity: str,
        batches: Callable[[], Iterable[PointBatch]],
        sizes: IndexSizes = _DEFAULT_SIZES,
        stop: threading.Event | None = None,
    ) -> PointIndex:
        """The index of the element ``identity`` names: opened if kept, else built from ``batches()`` and kept.

        ``PointIndex.built`` says which. Without a usable folder it is built privately and
        removed when dropped. When the disk refuses it (no space, a quota, a read-only or unusable
        folder, for the cache and the private folder alike), it is built in memory if it holds at
        most ``memory_points`` points, else :class:`~sds_jupyter.studio.pointindex.PointsTooMany`
        is raised: the request does not fail, the view keeps the element's sample. ``stop``, once
        set, ends a build at its next part (:class:`~sds_jupyter.studio.pointindex.BuildStopped`),
        its build folder removed.
        """
        identity = f"{identity}\n{sizes}"
        try:
            index, built = self._folders.get(
                identity,
                open_point_index,
                lambda folder: write_point_index(batches(), folder, identity, sizes, stop),
                lambda: build_point_index(batches(), sizes=sizes, stop=stop),
                lambda index, _folder: removed_with(index),
            )
        except OSError as refused:
            # the disk refused it (full, over quota, read-only, a folder that cannot be used): built in
            # memory if it fits, else PointsTooMany (the view keeps its sample); a reading error comes again
            try:
                index, built = memory_point_index(batches(), sizes, self.memory_points, stop), True
            except PointsTooMany:
                why = refused.strerror or str(refused)
                raise PointsTooMany(
                    f"The points index could not be written ({why}) and these points are "
                    f"more than {self.memory_points:,}, too many to index in memory: a sample is shown.",
                    refused=why,
                ) from refused
        index.built = built
        return index
