"""Nucleus outlines by tile: the bytes a zoomed-in figure's nucleus layer sends, coded against uncoded, in one run;
and a shapes element past MAX_SHAPES indexed by tile against reading it whole.

Data: the demo (``sds-jupyter demo``: 100,000 cells with their ``nucleus_boundaries``; ``--quick``:
10,000 cells, a 2,048 px image). Its ``fig-transcripts`` figure is saved with the nuclei shown,
zoomed on one tumor nest, so opening it asks ``shapes`` (the element's index) and the nucleus tiles
its view meets (``shapes_tile``).

Bytes. A: those replies framed as the server frames them and coded as the REST API codes them for
Chromium (br, else gzip: ``server/encoding.py``); B: the same bodies as they are (identity: what
the widget's comm sends, and what REST sent before replies were coded). The view is the figure's
saved viewport on a 1,000 x 700 px canvas; headers are not counted.

Index. A: ``build_shape_index`` of the demo's cell outlines (``cell_boundaries``), the reader used for
an element past MAX_SHAPES (ranged reads a row group at a time, rings spilled to disk); B: geopandas'
``read_parquet`` of the same element whole (what a reader of the element without an index does),
alternating, three rounds each. Then the tiles of the same view, cut from that index (service time a tile).
Never fails on time; the load average is printed beside.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from _common import alternate, arg_parser, comparison, emit, fmt_time, load_average, quiet_warnings, workdir

#: The canvas the saved view is drawn on (CSS px), as a figure in a wide panel.
VIEW_PX = (1000, 700)


def build(root: Path, quick: bool) -> Path:
    from sds_jupyter.demo import build_demo

    return build_demo(root / "demo", **({"n_cells": 10_000, "side": 2048} if quick else {}))


def view_tiles(grid: dict[str, Any], viewport: dict[str, Any]) -> list[tuple[int, int]]:
    """The grid tiles the saved view meets (deck's orthographic zoom: 2**zoom px a data unit)."""
    scale = 2.0 ** float(viewport["zoom"])
    (x, y), (w, h) = viewport["target"], (VIEW_PX[0] / scale, VIEW_PX[1] / scale)
    size = grid["size"]
    columns = range(
        max(0, int((x - w / 2 - grid["x0"]) // size)), min(grid["columns"], int((x + w / 2 - grid["x0"]) // size) + 1)
    )
    rows = range(
        max(0, int((y - h / 2 - grid["y0"]) // size)), min(grid["rows"], int((y + h / 2 - grid["y0"]) // size) + 1)
    )
    return [(c, r) for r in rows for c in columns]


def nucleus_bytes(top: Path) -> dict[str, Any]:
    """The figure's nucleus replies (index and the view's tiles), coded for Chromium and as they are."""
    from sds_jupyter.demo.xenium import NUCLEI
    from sds_jupyter.protocol.framing import frame_reply
    from sds_jupyter.server.encoding import encode
    from sds_jupyter.service import StackService, dispatch

    service = StackService(top)
    canvas = dispatch(service, "canvas", {"figure": "fig-transcripts"}).data
    assert any(layer["element"] == NUCLEI and layer["visible"] for layer in canvas["shape_layers"])
    index_reply = dispatch(service, "shapes", {"element": NUCLEI})
    index = index_reply.data["index"]
    bodies = [frame_reply(index_reply)]
    tiles = view_tiles(index["grid"], canvas["viewport"])
    shapes = 0
    for column, row in tiles:
        reply = dispatch(service, "shapes_tile", {"element": NUCLEI, "key": index["key"], "column": column, "row": row})
        shapes += reply.data["n_shapes"]
        bodies.append(frame_reply(reply))
    plain = sum(len(body) for body in bodies)
    coded = sum(len(encode(body, ("br", "gzip"))[0]) for body in bodies)
    print(
        f"  nucleus layer of fig-transcripts: index + {len(tiles)} tiles ({shapes:,} nuclei, a nucleus on a tile edge "
        f"sent with each): {coded / 1e6:.3f} MB coded (br, gzip), {plain / 1e6:.3f} MB as they are: {coded / plain:.2f}"
    )
    return {
        "name": "nucleus tiles of a zoomed-in figure, coded / identity",
        "a": "br, gzip",
        "b": "identity",
        "measure": "bytes",
        "bytes_a": coded,
        "bytes_b": plain,
        "median_a_s": None,
        "median_b_s": None,
        "ratio": coded / plain,
        "ratio_of_medians": coded / plain,
        "ratio_q1": coded / plain,
        "ratio_q3": coded / plain,
        "rounds": 1,
        "unit": "view",
        "goal": None,
        "goal_seconds": None,
        "met": None,
    }


def index_against_whole(top: Path, rounds: int) -> dict[str, Any]:
    """The cells' outlines indexed as an element past MAX_SHAPES is, against geopandas reading them whole."""
    import geopandas as gpd
    import zarr

    from sds_jupyter.demo.xenium import SHAPES
    from sds_jupyter.service.pieces import OUTLINE_TILE_CELLS
    from sds_jupyter.stack import Stack, StackStore
    from sds_jupyter.studio.shapeindex import build_shape_index

    stack = Stack.resolve(top)
    root = zarr.open_group(StackStore(stack), mode="r")
    local = stack.base.path.as_local()
    assert local is not None
    parquet = Path(local) / "shapes" / SHAPES / "shapes.parquet"
    built: list[Any] = []

    def a() -> None:
        built.append(build_shape_index(root, SHAPES, None, OUTLINE_TILE_CELLS))

    def b() -> None:
        gpd.read_parquet(parquet)

    times_a, times_b = alternate(a, b, rounds, before_a=built.clear)  # an index dropped (its folder removed) untimed
    index = built[-1]
    print(
        f"  {SHAPES}: {index.n:,} shapes, grid {index.side} x {index.side}, {index.nbytes / 1e3:.1f} KB held in memory"
    )
    result = comparison(
        f"{SHAPES} indexed by tile (past MAX_SHAPES) / read whole by geopandas",
        "build_shape_index (ranged reads, rings on disk)",
        "geopandas.read_parquet",
        times_a,
        times_b,
        goal=None,
    )
    started = time.perf_counter()
    grid = index.grid
    column, row = grid["columns"] // 2, grid["rows"] // 2
    box = [grid["x0"] + column * grid["size"], grid["y0"] + row * grid["size"]]
    ids = index.near([box[0], box[1], box[0] + grid["size"], box[1] + grid["size"]], column, row)
    index.rings(ids)
    print(
        f"  a middle tile from the index: {len(ids):,} shapes near it, gathered in {fmt_time(time.perf_counter() - started)}"
    )
    built.clear()
    return result


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    quiet_warnings()
    print(load_average())
    with workdir(args.keep) as root:
        started = time.perf_counter()
        top = build(root, args.quick)
        print(f"demo built in {fmt_time(time.perf_counter() - started)} ({load_average()})")
        comparisons = [nucleus_bytes(top), index_against_whole(top, args.rounds or (1 if args.quick else 3))]
    print(load_average())
    emit("bench_shape_tiles", comparisons, load=load_average(), cells=10_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
