"""Icechunk, the peer: the same data in an Icechunk repository, for side-by-side rounds.

Icechunk 1.x runs on Python 3.11 (2.x needs 3.12); it is in the ``bench`` extra.
A benchmark that finds it missing prints so and measures its own side alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Icechunk warns (on stderr) that local repositories are not for concurrent writers: known.
os.environ.setdefault("ICECHUNK_LOG", "error")


def available() -> bool:
    try:
        import icechunk  # noqa: F401
    except ImportError:
        print("  (icechunk is not installed: pip install 'sds-jupyter[bench]' to compare with it)")
        return False
    return True


def version() -> str:
    import icechunk

    return str(icechunk.__version__)


def repository(path: Path) -> Any:
    import icechunk

    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))


def open_repository(path: Path) -> Any:
    import icechunk

    return icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))


def copy_store(source: Path, repo: Any, message: str = "base") -> None:
    """Every object of the local Zarr store ``source`` into the repository, in one commit."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    session = repo.writable_session("main")
    store = session.store
    buffer = default_buffer_prototype().buffer
    keys = [f.relative_to(source).as_posix() for f in source.rglob("*") if f.is_file()]
    # Icechunk wants a node's metadata before anything below it: documents first, shallowest first.
    keys.sort(key=lambda k: (not k.endswith("zarr.json"), k.count("/"), k))
    for key in keys:
        sync(store.set(key, buffer.from_bytes((source / key).read_bytes())))
    session.commit(message)


def commit_objects(repo: Any, objects: dict[str, bytes], message: str) -> None:
    """One commit setting ``objects`` (store keys to bytes)."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    session = repo.writable_session("main")
    buffer = default_buffer_prototype().buffer
    for key, data in objects.items():
        sync(session.store.set(key, buffer.from_bytes(data)))
    session.commit(message)
