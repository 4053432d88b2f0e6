"""The service's canvas request at 1M and 10M cells, beside zarr's plain read of the same arrays.

Data: the stacks ``bench_canvas.py`` builds (a spatialdata table of N cells, one version
adding float32 ``obsm["spatial"]``, a 12-category ``cell_type`` column and a canvas
figure coloured by it), for N = 1,000,000 and 10,000,000 (``--quick``: 100,000 and
1,000,000), and a flattened copy of each (``flatten``: one plain store, base chunks linked).

A: ``StackService(top).canvas(None, figure)`` on a new service (cold: the table's elements
read from disk, as the first open of a version in the server) and ``frame_reply`` of its
reply, the body the server sends.

B: the least a reader of the flattened copy has to do for the same bytes: zarr's
``LocalStore``, ``obsm/spatial[:]`` and the column's ``codes[:]`` and ``categories[:]``,
x and y split into float32 arrays, the codes as uint16, the buffers joined. Before the
timing, A's buffers are checked to be byte for byte B's.

Printed per size: medians of A and B and the ratio (alternating rounds); then how A and
B grow from the smaller size to the larger (the goal: about 10x for 10x the cells, where
the request took 126 s at 10M before). Never fails on time.

``--data DIR`` builds the stacks there once and reuses them on later runs (building 10M
cells takes one to two minutes).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    alternate,
    comparison,
    emit,
    fmt_time,
    load_average,
    machine,
    quiet_warnings,
    settle,
    versions,
    workdir,
)

sys.path.insert(0, str(Path(__file__).parent))
import bench_canvas as canvas  # noqa: E402 - the stack builder

SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (100_000, 1_000_000)


def parse_args(doc: str | None = __doc__) -> argparse.Namespace:
    """The options of this benchmark and of ``bench_cell_request.py``, which runs on the same stacks."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 and 1,000,000 cells, 2 rounds")
    parser.add_argument("--full", action="store_true", help="(no larger size; accepted for run_all)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds per size")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    parser.add_argument("--data", type=Path, default=None, help="build the stacks here once and reuse them")
    return parser.parse_args()


def stacks(root: Path, n_cells: int) -> tuple[Path, Path]:
    """The top of the N-cell stack and its flattened copy, built under ``root`` unless already there."""
    from sds_jupyter.stack.flatcopy import flatten

    top = root / "datasets" / f"cells-{n_cells}-v1"
    flat = root / "flat" / f"cells-{n_cells}.zarr"
    if not (top / "layer.json").exists():
        start = time.perf_counter()
        top = canvas.build(root, f"cells-{n_cells}", n_cells)
        print(f"  built the {n_cells:,}-cell stack in {time.perf_counter() - start:.1f} s")
    if not (flat / "zarr.json").exists():
        flat.parent.mkdir(parents=True, exist_ok=True)
        flatten(top, flat)
    return top, flat


def request(top: Path) -> bytes:
    """A: the canvas request on a new service, framed as the server sends it."""
    from sds_jupyter.service import StackService, frame_reply

    return frame_reply(StackService(top).canvas(None, canvas.FIGURE))


def plain_read(flat: Path) -> bytes:
    """B: the same buffers from the flattened copy with zarr alone."""
    import numpy as np
    import zarr
    from zarr.storage import LocalStore

    table = zarr.open_group(LocalStore(flat, read_only=True), mode="r")[f"tables/{canvas.TABLE}"]
    spatial = np.asarray(table["obsm/spatial"][:])
    codes = np.asarray(table["obs/cell_type/codes"][:])
    np.asarray(table["obs/cell_type/categories"][:])
    x = np.ascontiguousarray(spatial[:, 0], dtype=np.float32)
    y = np.ascontiguousarray(spatial[:, 1], dtype=np.float32)
    return b"".join([x.data, y.data, codes.astype(np.uint16).data])


def same_bytes(top: Path, flat: Path) -> bool:
    from sds_jupyter.protocol.framing import unframe_reply

    _payload, buffers = unframe_reply(request(top))
    return b"".join(buffers) == plain_read(flat)


def side_by_side(
    name: str, label_a: str, label_b: str, check: str, a: Callable[[], Any], b: Callable[[], Any], rounds: int
) -> dict[str, Any]:
    """A and B alternated in ``rounds`` on a settled machine, with the load before and after and ``check`` (A's answer is B's)."""
    settle()
    print(f"{name} ({load_average()}): {check}")
    times_a, times_b = alternate(a, b, rounds)
    result = comparison(name, label_a, label_b, times_a, times_b, goal=None)
    print(f"  ({load_average()})")
    return result


def measure(root: Path, n_cells: int, rounds: int) -> dict[str, Any]:
    top, flat = stacks(root, n_cells)
    return side_by_side(
        f"canvas request, {n_cells:,} cells",
        "StackService.canvas + frame_reply (cold)",
        "zarr LocalStore read of the flattened copy",
        f"A's buffers are B's bytes: {same_bytes(top, flat)}",
        lambda: request(top),
        lambda: plain_read(flat),
        rounds,
    )


def ladder(
    args: argparse.Namespace, measure: Callable[[Path, int, int], dict[str, Any]]
) -> tuple[tuple[int, int], list[dict[str, Any]]]:
    """``measure`` at each size (both stacks built under ``--data`` or a temporary folder)."""
    quiet_warnings()
    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = args.rounds or (2 if args.quick else 3)
    print(f"machine: {machine()}; {versions()}")
    with workdir(args.keep) as work:
        root = args.data or work
        (root / "datasets").mkdir(parents=True, exist_ok=True)
        return sizes, [measure(root, n_cells, rounds) for n_cells in sizes]


def main() -> None:
    sizes, results = ladder(parse_args(), measure)
    small, large = results
    growth_a = large["median_a_s"] / small["median_a_s"]
    growth_b = large["median_b_s"] / small["median_b_s"]
    factor = sizes[1] // sizes[0]
    print(
        f"{sizes[0]:,} -> {sizes[1]:,} cells ({factor}x): A {fmt_time(small['median_a_s'])} -> "
        f"{fmt_time(large['median_a_s'])} ({growth_a:.1f}x), B {fmt_time(small['median_b_s'])} -> "
        f"{fmt_time(large['median_b_s'])} ({growth_b:.1f}x); linear would be {factor}x"
    )
    emit("canvas_request", results, growth_a=growth_a, growth_b=growth_b, sizes=list(sizes))


if __name__ == "__main__":
    main()
