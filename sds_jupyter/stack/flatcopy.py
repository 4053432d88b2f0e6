"""Write a stack out as one ordinary store.

spatialdata reads only a local folder, so a stack is flattened before it reaches
spatialdata. Over a folder base, the base's data files are **symbolic links** to
the base (cheap, and they work across file systems: in a workspace the datasets
are read-only mounts, where hard links cannot reach). Metadata documents and
every version's objects are **copied**: they are small, and they are what tools
rewrite in place, so a later write into the flattened store never reaches a
version or the base. (zarr writes through a temporary file and a rename, which
replaces a link rather than writing through it.) A ``.zarr.zip`` base is extracted.

Everything is written into a hidden temporary folder beside ``out`` and renamed
at the end, so an interrupted flatten leaves nothing under ``out``; one left by a
killed run is removed by the next (see :mod:`~sds_jupyter.stack.storage.partial`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sds_jupyter.errors import StackError, WriteRefusedError
from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.storage.partial import new_partial, release_partial
from sds_jupyter.stack.storage.paths import is_within
from sds_jupyter.stack.store import BASE, StackStore

__all__ = ["METADATA_DOCUMENTS", "flatten"]

METADATA_DOCUMENTS = frozenset({"zarr.json", ".zattrs", ".zgroup", ".zarray", ".zmetadata"})

Progress = Callable[[int, int], None]

#: How many objects flatten fetches at a time from object storage.
_REMOTE_WORKERS = 16


def flatten(
    path: str | os.PathLike[str] | Stack,
    out: str | os.PathLike[str],
    folders: str | Mapping[str, str] | None = None,
    *,
    link: bool = True,
    progress: Progress | bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Path:
    """Write the stack whose top is the version at ``path`` as one store at ``out``.

    ``out`` must not exist, or be an empty folder, and must not lie inside any
    folder of the stack. With ``link=False`` the base's objects are copied too,
    for a store that stands on its own. ``progress`` is a callback ``(done, total)``; ``True``
    prints progress to standard error, ``None`` does so only on a terminal.
    Returns the path of the new store.

    ``path`` may be a URL in object storage (with ``storage_options`` for fsspec):
    ``out`` is then a local folder, every object is copied (links cannot reach
    object storage), and objects are fetched several at a time.
    """
    stack = path if isinstance(path, Stack) else Stack.resolve(path, folders=folders, storage_options=storage_options)
    out_path = Path(os.path.abspath(os.path.expanduser(os.fspath(out))))
    _check_destination(stack, out_path)
    report = _progress_reporter(progress)
    store = StackStore(stack)
    tmp: Path | None = None
    # Where each read is a round trip, several are kept in flight.
    costly = stack.base.path.costly_requests
    pool = ThreadPoolExecutor(max_workers=_REMOTE_WORKERS) if costly else None
    try:
        keys = list(store.keys_raw(""))
        tmp = new_partial(out_path.parent, out_path.name)
        root = tmp
        if pool is None:
            written: Iterator[None] = (_write_one(store, key, root, link) for key in keys)  # type: ignore[func-returns-value]
        else:
            written = pool.map(lambda key: _write_one(store, key, root, link), keys)
        for done, _ in enumerate(written, 1):
            if report and (done == len(keys) or done % 200 == 0):
                report(done, len(keys))
        if out_path.is_dir():
            out_path.rmdir()
        os.rename(tmp, out_path)
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if tmp is not None:
            release_partial(tmp)
        if pool is not None:
            pool.shutdown(wait=True)
        store.close()
    return out_path


def _write_one(store: StackStore, key: str, root: Path, link: bool) -> None:
    dest = root / key
    if not is_within(os.path.realpath(dest.parent), os.path.realpath(root)):
        raise WriteRefusedError(f"key {key!r} would be written outside the output folder; refusing")
    dest.parent.mkdir(parents=True, exist_ok=True)
    source, number = store.source_path(key)
    basename = key.rsplit("/", 1)[-1]
    if link and number == BASE and source is not None and basename not in METADATA_DOCUMENTS:
        os.symlink(source, dest)
        return
    chunks = store.stream_raw(key)
    if chunks is None:
        raise StackError(f"{key!r} vanished while flattening; is the stack being changed?")
    with open(dest, "xb") as handle:
        handle.writelines(chunks)  # a few MiB at a time, however large the object


def _check_destination(stack: Stack, out: Path) -> None:
    if (out.exists() or out.is_symlink()) and (out.is_symlink() or not out.is_dir() or any(out.iterdir())):
        raise WriteRefusedError(f"{out} exists and is not an empty folder; choose a new output path")
    real_out = os.path.realpath(out)
    # A folder in object storage cannot overlap a local output.
    for folder in stack.protected_folders:
        real = os.path.realpath(folder)
        if is_within(real_out, real) or is_within(real, real_out):
            raise WriteRefusedError(
                f"{out} overlaps {folder}, part of the stack; versions and bases are never "
                "written to: choose an output outside them"
            )


def _progress_reporter(progress: Progress | bool | None) -> Progress | None:
    if callable(progress):
        return progress
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rflatten: {done}/{total} objects", end=end, file=sys.stderr, flush=True)  # noqa: T201

    return report
