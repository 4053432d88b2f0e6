"""Measure the walk: how often a request's path through the code returns to a room it left.

Issue 43's measure of the house. A *room* is where a module lives: its package
(``sds_jupyter.stack``, ``sds_jupyter.stack.storage``, ``sds_jupyter.protocol`` ...), except
that each feature under ``service/features/`` is a room of its own (a module or a package),
and the package root's modules (errors, limits, lru, the transports) are the room
``sds_jupyter``. Frames of other libraries (zarr, anndata, pandas) are transparent.

The script traces two walks with :func:`sys.setprofile` (every thread), each in a new process-state
(fresh ``StackCaches``) on the small demo stack: the ``cells`` request of the first canvas
figure, as a transport dispatches it, and a save (``open_anndata``, one obs column
changed, ``save_version``). Every Python call keeps the rooms its call chain passed through;
a call that enters a room already on that chain (and since left) is a *return*: the walk
went A -> B -> A. It prints, per walk, the distinct returns (caller function -> called
function, with the rooms) and how many calls made them. Run it against any checkout:
``PYTHONPATH=<checkout> .venv/bin/python tools/walk.py`` measures that tree.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any


def _package_dir() -> str:
    import sds_jupyter

    return os.path.dirname(os.path.abspath(sds_jupyter.__file__)) + os.sep


def room_of(filename: str, package_dir: str) -> str | None:
    """The room of a source file, or None for code outside the package (transparent)."""
    if not filename.startswith(package_dir) or not filename.endswith(".py"):
        return None
    parts = filename[len(package_dir) : -len(".py")].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        package = parts
    else:
        package = parts[:-1]
    if len(parts) >= 3 and parts[0] == "service" and parts[1] == "features":
        return "sds_jupyter.service.features." + parts[2]
    return ".".join(["sds_jupyter", *package])


class Walk:
    """The rooms every live frame's chain passed through, per thread, kept in step with call and return events.

    zarr reads a store on its own event-loop thread and codecs run on pools, so every thread is
    traced (its chains apart: a return is counted within one thread's chain).
    """

    def __init__(self, package_dir: str) -> None:
        self.package_dir = package_dir
        self.local = threading.local()
        self.rooms: dict[Any, str | None] = {}
        self.returns: Counter[tuple[str, str, str, str]] = Counter()
        self.calls = 0

    def _room(self, frame: FrameType) -> str | None:
        code = frame.f_code
        room = self.rooms.get(code, "?")
        if room == "?":
            room = self.rooms[code] = room_of(code.co_filename, self.package_dir)
        return room

    def event(self, frame: FrameType, event: str) -> None:
        paths: list[tuple[str, ...]] | None = getattr(self.local, "paths", None)
        if paths is None:
            paths = self.local.paths = []
        if event == "call":
            self.calls += 1
            path = paths[-1] if paths else ()
            room = self._room(frame)
            if room is not None and (not path or path[-1] != room):
                if room in path:
                    self.returns[(path[-1], room, _name(frame.f_back), _name(frame))] += 1
                path = (*path, room)
            paths.append(path)
        elif event == "return" and paths:
            paths.pop()


#: The walk being traced, if any: the one profile function every thread runs looks here.
_ACTIVE: list[Walk] = []


def _profile(frame: FrameType, event: str, _arg: Any) -> None:
    if _ACTIVE:
        _ACTIVE[0].event(frame, event)


def trace_threads() -> None:
    """Give every thread started from now on the profile function (zarr's loop thread among them)."""
    threading.setprofile(_profile)


def run(walk: Walk, work: Callable[[], Any]) -> None:
    """``work()`` traced into ``walk`` on this thread and every thread started after :func:`trace_threads`."""
    _ACTIVE.append(walk)
    sys.setprofile(_profile)
    try:
        work()
    finally:
        sys.setprofile(None)
        _ACTIVE.clear()


def _name(frame: FrameType | None) -> str:
    if frame is None:
        return "?"
    module = frame.f_globals.get("__name__", "?")
    return f"{module}.{frame.f_code.co_qualname}"


def _demo(folder: Path) -> Path:
    from sds_jupyter.demo.small import build_small_demo

    return Path(build_small_demo(folder))


def cells_walk(top: Path) -> Callable[[], Any]:
    """The ``cells`` request of the first canvas figure, dispatched as the transports do."""
    from sds_jupyter.service import StackService, dispatch

    figures = dispatch(StackService(top), "figures", {}).data
    canvas = next(f["id"] for f in figures["figures"] if f.get("kind") == "canvas")

    def work() -> Any:
        from sds_jupyter.stack import StackCaches

        service = StackService(top, caches=StackCaches())
        return dispatch(service, "cells", {"figure": canvas})

    return work


def save_walk(top: Path, into: Path) -> Callable[[], Any]:
    """A save: open the table, change one obs column, save it as a new version."""

    def work() -> Any:
        from sds_jupyter import open_anndata, save_version
        from sds_jupyter.stack import StackCaches

        caches = StackCaches()
        adata = open_anndata(top, caches=caches)
        adata.obs["walked"] = (adata.obs.index.str.len() % 3).astype(str)
        return save_version(top, adata, title="walked", into=into, caches=caches)

    return work


#: The one LRU and the bounded map over it: they call back into their caller's room (make on a
#: miss, size an entry), so returns through them are counted apart.
_CALLBACK_ROOM_MODULES = ("sds_jupyter.lru.", "sds_jupyter.limits.")


def _through_the_lru(caller: str, callee: str) -> bool:
    return caller.startswith(_CALLBACK_ROOM_MODULES) or callee.startswith(_CALLBACK_ROOM_MODULES)


def report(name: str, walk: Walk, verbose: bool) -> int:
    """Print the walk's count (and each return when ``verbose``); the count is returned."""
    total = len(walk.returns)
    lru = sum(1 for (_, _, caller, callee) in walk.returns if _through_the_lru(caller, callee))
    calls = sum(walk.returns.values())
    print(
        f"{name}: {total} returns to a room already left ({calls} calls, of {walk.calls} traced); "
        f"{lru} of them into or out of the one LRU's callbacks, {total - lru} others"
    )
    if verbose:
        for (left, back, caller, callee), count in sorted(walk.returns.items()):
            print(f"  {left} -> {back}: {caller} -> {callee} (x{count})")
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every return")
    parser.add_argument("--top", type=Path, help="walk this small demo's top version instead of building one")
    args = parser.parse_args(argv)
    package_dir = _package_dir()
    os.environ.setdefault("SDS_STACK_CACHE", "off")  # every walk reads from the files, not a record
    trace_threads()  # before zarr starts its loop thread (building the demo does)
    with tempfile.TemporaryDirectory() as tmp:
        top = args.top or _demo(Path(tmp) / "demo")
        into = Path(tmp) / "saved"
        into.mkdir()
        print(f"tree: {package_dir}")
        for name, work in (("cells request", cells_walk(top)), ("save", save_walk(top, into))):
            walk = Walk(package_dir)
            run(walk, work)
            report(name, walk, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
