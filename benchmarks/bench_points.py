"""Transcripts: the points index built, kept on disk and served, beside reading the element whole.

Data: a points element of N transcripts (default 3,000,000, the 100k demo's count; ``--full``:
30,000,000, the million-cell demo's) over a 1,740 µm tissue, 300 genes of skewed frequency,
written by spatialdata a part at a time (dask-parquet parts of 2M rows); or ``--element PATH``,
a SpatialData store's points element ``transcripts`` (the million-cell demo's base).

Each side runs in its own process, so its peak memory (RSS) is its own:
- build (cold, before): a new server process with an empty points cache asks ``points`` and
  waits: the index is built (one stream over the parts, an external sort) and kept on disk;
  the first points come after the whole build.
- first visit (cold, after): a new process with an empty cache asks ``points`` with
  ``sample`` (as the view does): a strided sample's index at once and the fit view's tiles
  from it, while the whole index builds in the background; then the time until the whole
  index is ready (its build's thread ended) and the process's peak memory with both.
  ``--sort-before`` adds the build as it sorted before 2026-12-07 (``pointindex._argsorted``).
- A, first points (warm): a new server process asks ``points`` (the index mapped from disk) and
  the fit view's tiles (800 px: the tiles ``levelFor`` picks, all genes); then a pan at full
  zoom: the view moved by its width at the finest level, the bytes of the tiles it newly needs.
- B, the peer: spatialdata reads the element and computes it into pandas, then keeps a
  100,000-point sample (what napari-spatialdata shows).

Goals (issue 39): the first points on screen <= 1 s after the tissue; a pan at full zoom
<= 1 MB; the server's memory bounded whatever the element's size (compare two sizes' peaks).
The run ends with the goals' table, each figure beside its peer's and the load it was taken at.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import (
    Timings,
    arg_parser,
    comparison,
    emit,
    fmt_time,
    load_average,
    median,
    quiet_warnings,
    settle,
    workdir,
)

SIDE_UM = 1740.0
N_GENES = 300
VIEW_PX = 800
TILE_PX = 512  # js/src/app/spatial/pointtiles.ts
PAN_GOAL_BYTES = 1_000_000
FIRST_GOAL_S = 1.0
PART_ROWS = 2_000_000
PEER_SAMPLE = 100_000
ELEMENT = "transcripts"


def _part(index: int, n: int) -> object:
    """Rows ``index * PART_ROWS`` on of N clustered transcripts ("cells" of 30), one seeded stream a part."""
    import pandas as pd

    rng = np.random.default_rng([39, index])
    rows = min(PART_ROWS, n - index * PART_ROWS)
    centres = rng.uniform(0.05, 0.95, (rows // 30 + 1, 2)) * SIDE_UM
    xy = centres[rng.integers(0, len(centres), rows)] + rng.normal(0, 3.0, (rows, 2))
    weights = 1 / np.arange(1, N_GENES + 1)
    genes = rng.choice(N_GENES, rows, p=weights / weights.sum()).astype(np.int16)
    start = index * PART_ROWS
    return pd.DataFrame(
        {
            "x": xy[:, 0].astype(np.float32),
            "y": xy[:, 1].astype(np.float32),
            "gene": pd.Categorical.from_codes(genes, categories=[f"GENE{i:03d}" for i in range(N_GENES)]),
        },
        index=pd.RangeIndex(start, start + rows),
    )


def write_element(path: Path, n: int) -> None:
    """N clustered transcripts written by spatialdata as points element ``transcripts``, a part at a time."""
    import dask.dataframe as dd
    import spatialdata
    from spatialdata.models import PointsModel
    from spatialdata.transformations import Identity

    parts = range(max(1, -(-n // PART_ROWS)))
    frame = dd.from_map(_part, parts, args=(n,), meta=_part(0, 0))
    points = PointsModel.parse(
        frame, coordinates={"x": "x", "y": "y"}, feature_key="gene", transformations={"global": Identity()}
    )
    spatialdata.SpatialData(points={ELEMENT: points}).write(path)


def tiles_bytes(service: object, info: dict, tiles: list[tuple[int, int, int]]) -> int:
    from sds_jupyter.service.requests import dispatch

    total = 0
    for level, x, y in tiles:
        params = {"element": ELEMENT, "key": info["key"], "level": level, "x": x, "y": y}
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


def _memory_mb(field: str) -> float:
    """This process's ``VmRSS`` (now) or ``VmHWM`` (its peak) in MB, from /proc (the new program's own, not the parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(mode: str, path: Path) -> dict:
    """One side, in this (fresh) process: what it measured, with its memory and CPU time, as a dict."""
    quiet_warnings()
    import spatialdata

    from sds_jupyter.service import StackService
    from sds_jupyter.service.requests import dispatch

    base, cpu = _memory_mb("VmRSS"), time.process_time()
    if mode == "build-before":  # the sort as it was: an argsort of the keys, then a gather of the records
        from sds_jupyter.studio import pointindex

        pointindex._by_key = pointindex._argsorted
    result = _peer(path) if mode == "peer" else _server(mode, path, StackService, dispatch)
    return {
        **result,
        "cpu_s": time.process_time() - cpu,
        "base_rss_mb": base,
        "peak_rss_mb": _memory_mb("VmHWM"),
        "spatialdata": spatialdata.__version__,
    }


def _peer(path: Path) -> dict:
    import spatialdata

    start = time.perf_counter()
    frame = spatialdata.read_zarr(path, selection=("points",)).points[ELEMENT].compute()
    sample = frame.sample(n=min(PEER_SAMPLE, len(frame)), random_state=0)
    return {"s": time.perf_counter() - start, "rows": len(frame), "sample": len(sample)}


def _fit(info: dict) -> tuple[list[tuple[int, int, int]], float, float, float]:
    """The fit view's tiles (800 px over the whole square), the square's side and corner."""
    side = info["bounds"][2] - info["bounds"][0]
    x0, y0 = info["bounds"][0], info["bounds"][1]
    fit_level = max(0, min(info["finest_level"], int(np.ceil(np.log2(max(1, VIEW_PX / TILE_PX))))))
    return view_tiles(info, (x0, y0, x0 + side, y0 + side), fit_level), side, x0, y0


def _first_visit(service: object, dispatch: object, start: float) -> dict:
    """As the view: a sample's index and the fit view's tiles at once, then wait for the whole index's build."""
    import threading

    ask = {"element": ELEMENT, "sample": True}
    cpu = time.thread_time()  # this thread's: the build runs in another
    info = dispatch(service, "points", ask).data["index"]  # type: ignore[operator]
    fit = _fit(info)[0]
    first_bytes = tiles_bytes(service, info, fit)
    first, first_cpu = time.perf_counter() - start, time.thread_time() - cpu
    for thread in [t for t in threading.enumerate() if t.name.startswith("sds-points-")]:
        thread.join()
    whole = dispatch(service, "points", ask).data["index"]  # type: ignore[operator]
    assert not whole["partial"], "the whole index is ready once its build's thread ended"
    return {
        "s": first,
        "first_cpu_s": first_cpu,
        "partial": info["partial"],
        "sample_points": info["n_points"],
        "first_bytes": first_bytes,
        "whole_s": time.perf_counter() - start,
        "n": whole["n_points"],
        "finest": whole["finest_level"],
    }


def _server(mode: str, path: Path, StackService: type, dispatch: object) -> dict:  # noqa: N803 - the imported class
    start = time.perf_counter()
    service = StackService(path)
    if mode == "first-visit":
        return _first_visit(service, dispatch, start)
    info = dispatch(service, "points", {"element": ELEMENT}).data["index"]  # type: ignore[operator]
    opened = time.perf_counter() - start
    if mode.startswith("build"):
        return {"s": opened, "n": info["n_points"], "finest": info["finest_level"]}
    fit, side, x0, y0 = _fit(info)
    first_bytes = tiles_bytes(service, info, fit)
    first = time.perf_counter() - start
    finest = info["finest_level"]
    span = side / 2**finest * VIEW_PX / TILE_PX
    cx, cy = x0 + side / 2, y0 + side / 2
    here = set(view_tiles(info, (cx, cy, cx + span, cy + span), finest))
    there = set(view_tiles(info, (cx + span, cy, cx + 2 * span, cy + span), finest))
    pan = tiles_bytes(service, info, sorted(there - here))
    return {"s": first, "open_s": opened, "tiles": len(fit), "first_bytes": first_bytes, "pan_bytes": pan}


def run_child(mode: str, path: Path, cache: Path) -> dict:
    """Run ``child(mode)`` in a new process with points cache ``cache``."""
    env = {**os.environ, "SDS_POINTS_CACHE": str(cache)}
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", mode, "--element", str(path)], env=env, stdout=subprocess.PIPE, text=True
    )
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"bench_points: the {mode} process failed ({process.returncode})")
    answer: dict = json.loads(out.strip().splitlines()[-1])
    return answer


def element_bytes(path: Path) -> int:
    folder = path / "points" / ELEMENT
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main() -> None:
    parser = arg_parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--points", type=int, default=3_000_000, help="transcripts (--full: 30,000,000)")
    parser.add_argument("--element", type=Path, default=None, help="a SpatialData store whose points element to use")
    parser.add_argument(
        "--child",
        choices=("build", "build-before", "first-visit", "serve", "peer"),
        default=None,
        help=argparse_hidden(),
    )
    parser.add_argument("--sort-before", action="store_true", help="also build with the sort before 2026-12-07")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.element)))
        return
    quiet_warnings()
    n = 300_000 if args.quick else (30_000_000 if args.full else args.points)
    rounds = args.rounds or (2 if args.quick else 3)
    with workdir(args.keep) as root:
        path = args.element
        if path is None:
            path = root / "base.sdata.zarr"
            start = time.perf_counter()
            write_element(path, n)
            print(f"bench_points: {n:,} transcripts written by spatialdata in {time.perf_counter() - start:.1f} s")
            settle()
        size = element_bytes(path)
        print(f"bench_points: points element of {path} ({size / 1e6:.0f} MB stored); {load_average()}")
        cache = root / "points-cache"
        if args.sort_before:
            sorted_before = run_child("build-before", path, root / "points-cache-before")
            sorted_before["load"] = load_average()
            _print_build("index build, sort before 2026-12-07 (cold, new process)", sorted_before)
        visit = run_child("first-visit", path, root / "points-cache-visit")
        visit["load"] = load_average()
        _print_visit(visit)
        build = run_child("build", path, cache)
        build["load"] = load_average()
        _print_build("first visit before: points waits for the whole build (cold, new process)", build)
        print(
            f"  first points, after / before: {visit['s'] / build['s']:.3f}; "
            f"whole index ready after / before: {visit['whole_s'] / build['s']:.2f}"
        )
        serve, peer = [], []
        times_a, times_b = Timings(), Timings()
        for index in range(rounds):
            pair = [("serve", serve, times_a), ("peer", peer, times_b)]
            for mode, sink, times in pair[:: -1 if index % 2 else 1]:
                result = run_child(mode, path, cache)
                sink.append(result)
                times.append(result["s"])
                times.cpu.append(result["cpu_s"])
        rounds_load = load_average()
        print(f"  load after the rounds: {rounds_load}")
        results = [
            comparison(
                "first points of the fit view (index on disk, new process)",
                f"points + points_tile x{serve[0]['tiles']}",
                f"spatialdata read + compute + {PEER_SAMPLE:,} sample",
                times_a,
                times_b,
                goal=None,
                unit="view",
                goal_seconds=FIRST_GOAL_S,
            )
        ]
    last = serve[-1]
    pan_met = last["pan_bytes"] <= PAN_GOAL_BYTES
    print(
        f"  first view: {fmt_time(median(times_a))} (index mapped in {fmt_time(median([r['open_s'] for r in serve]))}), "
        f"{last['first_bytes'] / 1e6:.2f} MB; pan at full zoom {last['pan_bytes'] / 1e6:.3f} MB "
        f"(goal <= 1 MB: {'met' if pan_met else 'MISSED'})"
    )
    print(
        f"  peak RSS: build {build['peak_rss_mb']:.0f} MB, serving {max(r['peak_rss_mb'] for r in serve):.0f} MB, "
        f"peer {max(r['peak_rss_mb'] for r in peer):.0f} MB; element {size / 1e6:.0f} MB stored, "
        f"{build['n']:,} points; each process {build['base_rss_mb']:.0f} MB after its imports"
    )
    _goals_table(build, visit, serve, peer, median(times_a), median(times_b), rounds_load)
    emit(
        "bench_points",
        results,
        points=build["n"],
        element_bytes=size,
        index_build_s=build["s"],
        first_visit_s=visit["s"],
        first_visit_whole_s=visit["whole_s"],
        first_visit_peak_rss_mb=visit["peak_rss_mb"],
        peer_s=median(times_b),
        build_peak_rss_mb=build["peak_rss_mb"],
        serve_peak_rss_mb=max(r["peak_rss_mb"] for r in serve),
        peer_peak_rss_mb=max(r["peak_rss_mb"] for r in peer),
        first_view_s=median(times_a),
        first_view_bytes=last["first_bytes"],
        pan_bytes=last["pan_bytes"],
        pan_met=pan_met,
        first_met=median(times_a) <= FIRST_GOAL_S,
    )


def _print_visit(visit: dict) -> None:
    print(
        f"  first visit after: a sample of {visit['sample_points']:,} points and the fit view's tiles "
        f"({visit['first_bytes'] / 1e6:.2f} MB) in {fmt_time(visit['s'])} (CPU {fmt_time(visit['first_cpu_s'])}); the whole index ready at "
        f"{fmt_time(visit['whole_s'])} (CPU {fmt_time(visit['cpu_s'])} in all); peak RSS {visit['peak_rss_mb']:.0f} MB; "
        f"{visit['load']}"
    )


def _print_build(label: str, build: dict) -> None:
    print(
        f"  {label}: {fmt_time(build['s'])} (CPU {fmt_time(build['cpu_s'])}) for {build['n']:,} points, "
        f"finest level {build['finest']}; peak RSS {build['peak_rss_mb']:.0f} MB "
        f"({build['base_rss_mb']:.0f} MB after imports); {build['load']}"
    )


def _goals_table(
    build: dict, visit: dict, serve: list[dict], peer: list[dict], first_s: float, peer_s: float, load: str
) -> None:
    """Issue 39's transcript goals, each beside its peer (spatialdata read + a 100k sample) and the load."""
    pan = serve[-1]["pan_bytes"]
    rows = [
        (
            "first points (server, index on disk)",
            f"{fmt_time(first_s)} ({'met' if first_s <= FIRST_GOAL_S else 'MISSED'}: <= 1 s)",
            f"{fmt_time(peer_s)}",
            load,
        ),
        (
            "first visit ever: first points (sample)",
            f"{fmt_time(visit['s'])} (whole at {fmt_time(visit['whole_s'])}; before: {fmt_time(build['s'])})",
            f"{fmt_time(peer_s)} (every visit)",
            visit["load"],
        ),
        (
            "a pan at full zoom",
            f"{pan / 1e6:.3f} MB ({'met' if pan <= PAN_GOAL_BYTES else 'MISSED'}: <= 1 MB)",
            "0 MB (its 100k sample is all it shows)",
            load,
        ),
        (
            "server peak RSS: serving / building / first visit",
            f"{max(r['peak_rss_mb'] for r in serve):.0f} / {build['peak_rss_mb']:.0f} / {visit['peak_rss_mb']:.0f} MB",
            f"{max(r['peak_rss_mb'] for r in peer):.0f} MB",
            load,
        ),
    ]
    print(f"  goals (issue 39), {build['n']:,} transcripts:")
    print(f"  {'goal':<50} | {'sds-jupyter':<36} | {'peer':<34} | load")
    for row in rows:
        print(f"  {row[0]:<50} | {row[1]:<36} | {row[2]:<34} | {row[3]}")


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
