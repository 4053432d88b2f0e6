"""Transcripts: the spatial index of a points element and its tiles, beside reading the element whole.

Data: a points element of N transcripts (default 3,000,000, the 100k demo's count; ``--points
30000000`` for the million-cell demo's) over a 1,740 µm tissue, 300 genes of skewed frequency,
written by spatialdata (dask-parquet parts of 2M rows), as a stack's base.

A: the service's path. Cold: ``points`` builds the index (one stream over the parts). Then the
   first view (the fit view, 800 px: the tiles ``levelFor`` picks, all genes), and a pan at full
   zoom: the view moved by its width at the finest level, the bytes of the tiles it newly needs.
B: what a viewer without an index does first: spatialdata reads the element and computes it
   into pandas (napari-spatialdata then keeps a 100,000-point sample).

Goals (issue 39): the first points on screen <= 1 s after the tissue; a pan at full zoom
<= 1 MB; the server's memory bounded whatever the element's size (its peak RSS is printed).
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np
from _common import alternate, arg_parser, comparison, emit, fmt_time, median, quiet_warnings, settle, workdir

SIDE_UM = 1740.0
N_GENES = 300
VIEW_PX = 800
TILE_PX = 512  # js/src/app/spatial/pointtiles.ts
PAN_GOAL_BYTES = 1_000_000
FIRST_GOAL_S = 1.0


def write_element(path: Path, n: int) -> None:
    """N clustered transcripts written by spatialdata as points element ``transcripts``."""
    import dask.dataframe as dd
    import pandas as pd
    import spatialdata
    from spatialdata.models import PointsModel
    from spatialdata.transformations import Identity

    rng = np.random.default_rng(39)
    centres = rng.uniform(0.05, 0.95, (n // 30 + 1, 2)) * SIDE_UM  # "cells" of 30 transcripts
    owner = rng.integers(0, len(centres), n)
    xy = centres[owner] + rng.normal(0, 3.0, (n, 2))
    weights = 1 / np.arange(1, N_GENES + 1)
    genes = rng.choice(N_GENES, n, p=weights / weights.sum()).astype(np.int16)
    frame = pd.DataFrame(
        {
            "x": xy[:, 0].astype(np.float32),
            "y": xy[:, 1].astype(np.float32),
            "gene": pd.Categorical.from_codes(genes, categories=[f"GENE{i:03d}" for i in range(N_GENES)]),
        }
    )
    points = PointsModel.parse(
        dd.from_pandas(frame, npartitions=max(1, n // 2_000_000), sort=False),
        coordinates={"x": "x", "y": "y"},
        feature_key="gene",
        transformations={"global": Identity()},
    )
    spatialdata.SpatialData(points={"transcripts": points}).write(path)


def tiles_bytes(service: object, info: dict, tiles: list[tuple[int, int, int]]) -> int:
    from sds_jupyter.service.requests import dispatch

    total = 0
    for level, x, y in tiles:
        params = {"element": "transcripts", "key": info["key"], "level": level, "x": x, "y": y}
        reply = dispatch(service, "points_tile", params)  # type: ignore[arg-type]
        total += sum(b.nbytes for b in reply.buffers) + len(str(reply.data))
    return total


def view_tiles(info: dict, region: tuple[float, float, float, float], level: int) -> list[tuple[int, int, int]]:
    x0, y0, x1, _ = info["bounds"]
    size = (x1 - x0) / 2**level
    count = 2**level
    cols = range(max(0, int((region[0] - x0) // size)), min(count - 1, int((region[2] - x0) // size)) + 1)
    rows = range(max(0, int((region[1] - y0) // size)), min(count - 1, int((region[3] - y0) // size)) + 1)
    return [(level, c, r) for r in rows for c in cols]


def main() -> None:
    parser = arg_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--points", type=int, default=3_000_000, help="transcripts (30000000: the million-cell demo's)")
    parser_args = parser.parse_args()
    quiet_warnings()
    import spatialdata

    from sds_jupyter.service import StackService
    from sds_jupyter.service.requests import dispatch

    n = 300_000 if parser_args.quick else (30_000_000 if parser_args.full else parser_args.points)
    rounds = parser_args.rounds or (3 if parser_args.quick else 5)
    print(f"bench_points: a points element of {n:,} transcripts")
    with workdir(parser_args.keep) as root:
        path = root / "base.sdata.zarr"
        start = time.perf_counter()
        write_element(path, n)
        print(f"  written by spatialdata in {time.perf_counter() - start:.1f} s")
        settle()
        service = StackService(path)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        info = dispatch(service, "points", {"element": "transcripts"}).data["index"]
        build = time.perf_counter() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"  index: {build:.2f} s, finest level {info['finest_level']}, peak RSS {rss_before:.0f} -> {rss_after:.0f} MB"
        )
        side = info["bounds"][2] - info["bounds"][0]
        fit_level = max(0, min(info["finest_level"], int(np.ceil(np.log2(max(1, VIEW_PX / TILE_PX))))))
        fit = view_tiles(info, (0, 0, SIDE_UM, SIDE_UM), fit_level)

        def first_view() -> None:
            tiles_bytes(service, info, fit)

        def peer() -> None:
            spatialdata.read_zarr(path).points["transcripts"].compute()

        ta, tb = alternate(first_view, peer, rounds)
        first_bytes = tiles_bytes(service, info, fit)
        # full zoom: the finest level's tiles are TILE_PX across, the view 800 px; pan by one view width
        finest = info["finest_level"]
        span = side / 2**finest * VIEW_PX / TILE_PX
        cx, cy = SIDE_UM / 2, SIDE_UM / 2
        here = set(view_tiles(info, (cx, cy, cx + span, cy + span), finest))
        there = set(view_tiles(info, (cx + span, cy, cx + 2 * span, cy + span), finest))
        pan_bytes = tiles_bytes(service, info, sorted(there - here))
    first = median(ta)
    results = [
        comparison(
            "first points of the fit view (index built)",
            f"points_tile x{len(fit)} (level {fit_level})",
            "spatialdata read + compute",
            ta,
            tb,
            goal=None,
            unit="view",
        )
    ]
    print(
        f"  first view: {fmt_time(first)}, {first_bytes / 1e6:.2f} MB; goal <= {FIRST_GOAL_S} s after the tissue (warm index)"
    )
    print(
        f"  pan at full zoom: {pan_bytes / 1e6:.3f} MB; goal <= 1 MB: {'met' if pan_bytes <= PAN_GOAL_BYTES else 'MISSED'}"
    )
    emit(
        "bench_points",
        results,
        points=n,
        index_build_s=build,
        peak_rss_mb=rss_after,
        first_view_s=first,
        first_view_bytes=first_bytes,
        pan_bytes=pan_bytes,
        pan_met=pan_bytes <= PAN_GOAL_BYTES,
        first_met=first <= FIRST_GOAL_S,
    )


if __name__ == "__main__":
    main()
