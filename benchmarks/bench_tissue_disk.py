"""The first tissue of a new server process: cell geometry derived cold vs. mapped from the disk cache (issue 39).

Data: the demo (``sds-jupyter demo``: 100,000 cells with outlines) and its million-cell variant
(``--quick``: 10,000 and 100,000 cells), built once (``--data DIR`` keeps and reuses them).

Each side runs in a new Python process (the imports done before its clock starts, the server's
warmed modules among them: ``server/warm.py``'s ``WARM_MODULES``), on the top
version's ``fig-cell-types``, as a restarted server or a new kernel meets it:

A cold: ``canvas`` then ``cells`` through ``dispatch`` and ``frame_reply`` of the ``cells`` reply,
with an empty ``$SDS_GEOMETRY_CACHE`` (read the table and shapes, derive rings, bounds, areas,
the outline grid and codes; write the entry).
A disk: the same requests in another new process on the cache the cold run of the round left
(the entry mapped; nothing derived).
B: spatialdata's own read of the same shapes element (``read_zarr(base, selection=("shapes",))``
and the element's geometry), what any reader of those outlines pays first.

Rounds alternate cold, disk, peer; a check first: the disk process's ``cells`` bytes are the cold
one's. Printed per size: medians, ratios to the peer, the entry's size, the load before and after.
Never fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import comparison, emit, fmt_time, load_average, machine, median, quiet_warnings, settle, versions

FIGURE = "fig-cell-types"
SIZES = (100_000, 1_000_000)
QUICK_SIZES = (10_000, 100_000)

_SERVE = """
import hashlib, importlib, json, sys, time
from sds_jupyter.service import StackService, dispatch, frame_reply
from sds_jupyter.server.warm import WARM_MODULES
for module in WARM_MODULES:  # as the server imports them while JupyterLab loads (server/warm.py)
    importlib.import_module(module)
start = time.perf_counter()
service = StackService(sys.argv[1])
canvas = dispatch(service, "canvas", {"figure": sys.argv[2]})
at_canvas = time.perf_counter()
cells = dispatch(service, "cells", {"figure": sys.argv[2], "key": canvas.data["cells_key"]})
body = frame_reply(cells)
end = time.perf_counter()
print(json.dumps({"s": end - start, "canvas_s": at_canvas - start, "cells_s": end - at_canvas,
                  "bytes": len(body), "digest": hashlib.sha256(body).hexdigest()}))
"""

_PEER = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
import spatialdata
start = time.perf_counter()
sdata = spatialdata.read_zarr(sys.argv[1], selection=("shapes",))
shapes = sdata.shapes[sys.argv[2]]
n = len(shapes.geometry.values)
end = time.perf_counter()
print(json.dumps({"s": end - start, "n": n}))
"""


def _run(script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _demo(root: Path, n_cells: int) -> Path:
    """The top version of the demo of ``n_cells`` under ``root`` (built unless already there)."""
    from sds_jupyter.demo import build_demo

    folder = root / f"demo-{n_cells}"
    marker = folder / "top.txt"
    if marker.exists():
        return Path(marker.read_text().strip())
    if folder.exists():
        shutil.rmtree(folder)
    start = time.perf_counter()
    top = build_demo(folder, n_cells=n_cells)
    marker.write_text(str(top))
    print(f"  built the {n_cells:,}-cell demo in {time.perf_counter() - start:.1f} s")
    return top


def _base_and_shapes(top: Path) -> tuple[Path, str]:
    from sds_jupyter.demo.xenium import SHAPES
    from sds_jupyter.stack import Stack

    local = Stack.resolve(top).base.path.as_local()
    assert local is not None
    return local, SHAPES


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def measure(root: Path, n_cells: int, rounds: int) -> list[dict[str, Any]]:
    top = _demo(root, n_cells)
    base, shapes = _base_and_shapes(top)
    settle()
    env = dict(os.environ)
    cold_s: list[float] = []
    disk_s: list[float] = []
    peer_s: list[float] = []
    parts: dict[str, list[float]] = {"cold canvas": [], "cold cells": [], "disk canvas": [], "disk cells": []}
    entry_bytes = body_bytes = 0
    print(f"first tissue, {n_cells:,} cells ({load_average()})")
    for round_ in range(rounds + 1):  # the first round warms the file system's cache, untimed
        cache = Path(tempfile.mkdtemp(prefix="sds-geometry-")) / "geometry"
        try:
            side_env = {**env, "SDS_GEOMETRY_CACHE": str(cache)}
            cold = _run(_SERVE, str(top), FIGURE, env=side_env)
            disk = _run(_SERVE, str(top), FIGURE, env=side_env)
            peer = _run(_PEER, str(base), shapes, env=env)
            if disk["digest"] != cold["digest"]:
                raise RuntimeError("the cells reply from disk is not the cold one's")
            entry_bytes, body_bytes = _folder_bytes(cache), cold["bytes"]
        finally:
            shutil.rmtree(cache.parent, ignore_errors=True)
        if round_ == 0:
            print(
                f"  check: the disk process's cells reply is the cold one's ({body_bytes:,} bytes); {peer['n']:,} shapes"
            )
            continue
        cold_s.append(cold["s"])
        disk_s.append(disk["s"])
        peer_s.append(peer["s"])
        parts["cold canvas"].append(cold["canvas_s"])
        parts["cold cells"].append(cold["cells_s"])
        parts["disk canvas"].append(disk["canvas_s"])
        parts["disk cells"].append(disk["cells_s"])
    print("  " + ", ".join(f"{name} {fmt_time(median(values))}" for name, values in parts.items()))
    print(f"  the kept entry: {entry_bytes / 1e6:.1f} MB on disk")
    peer_label = "spatialdata read_zarr of the shapes element"
    results = [
        comparison(
            f"first tissue from disk, {n_cells:,} cells",
            "new process: canvas + cells, geometry on disk",
            peer_label,
            disk_s,
            peer_s,
            goal=None,
        ),
        comparison(
            f"first tissue cold, {n_cells:,} cells",
            "new process: canvas + cells, geometry derived",
            peer_label,
            cold_s,
            peer_s,
            goal=None,
        ),
    ]
    load = load_average()
    print(f"  ({load})")
    for result in results:
        result.update({"entry_bytes": entry_bytes, "load": load, "n_cells": n_cells})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 and 100,000 cells, 2 rounds")
    parser.add_argument("--full", action="store_true", help="(no larger size; accepted for run_all)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds per size")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    parser.add_argument("--data", type=Path, default=None, help="build the demos here once and reuse them")
    parser.add_argument(
        "--cells", type=int, nargs="+", default=None, help="the demo sizes (default 100,000 and 1,000,000)"
    )
    args = parser.parse_args()
    quiet_warnings()
    sizes = tuple(args.cells) if args.cells else QUICK_SIZES if args.quick else SIZES
    rounds = args.rounds or (2 if args.quick else 3)
    print(f"machine: {machine()}; {versions()}")
    work = Path(tempfile.mkdtemp(prefix="sds-bench-"))
    try:
        root = args.data or work
        root.mkdir(parents=True, exist_ok=True)
        results = [result for n_cells in sizes for result in measure(root, n_cells, rounds)]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    emit("tissue_disk", results, sizes=list(sizes))


if __name__ == "__main__":
    main()
