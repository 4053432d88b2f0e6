"""Building a points index: a build killed midway leaves nothing that is served; memory stays flat as the element grows.

Elements are written by spatialdata in parts of 10,000 rows (dask partitions, as a Xenium
conversion writes them), so the reader's share of memory is one part whatever the element.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import zarr
from kit.points import SMALL as SIZES
from kit.points import write_points as write_kit_points

from sds_jupyter.studio.pointindex import IndexSizes, build_point_index
from sds_jupyter.studio.pointparts import open_points, point_batches, point_sample
from sds_jupyter.studio.pointstore import PointStore

PART_ROWS = 10_000
#: Small enough that every stage of the sort is held to it on this little data.
TIGHT = IndexSizes(tile_points=200, full_tile_points=2_000, bucket_points=5_000, chunk_points=5_000)


def write_points(path: Path, n: int, seed: int) -> Path:
    """``n`` points of 20 genes in parts of PART_ROWS rows."""
    return write_kit_points(path, n, seed, genes=20, part_rows=PART_ROWS)


def _peak(path: Path) -> tuple[int, int]:
    """The most bytes Python and numpy held at once while indexing the element at ``path``, and its points."""
    root = zarr.open_group(str(path), mode="r")
    batches = point_batches(root, open_points(root, "transcripts"), rows=PART_ROWS)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        index = build_point_index(batches, sizes=TIGHT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    n = index.n_points
    index.close()
    return peak, n


def test_memory_stays_flat_as_the_element_grows(tmp_path: Path) -> None:
    """Four times the points, the same peak: the build holds a part, a chunk and a bucket, never the element."""
    small = _peak(write_points(tmp_path / "small.zarr", 40_000, seed=1))
    large = _peak(write_points(tmp_path / "large.zarr", 160_000, seed=2))
    assert (small[1], large[1]) == (40_000, 160_000)
    # the fixed part (the 4**10 histogram and its bincount, 16 MiB) and a few chunks, parts and buckets
    assert large[0] <= small[0] * 1.05 + 256 * 1024, (small, large)
    assert large[0] < 24 * 1024**2, large


_KILLED = """
import sys, zarr
from sds_jupyter.studio.pointindex import IndexSizes
from sds_jupyter.studio.pointparts import open_points, point_batches
from sds_jupyter.studio.pointstore import PointStore
root = zarr.open_group(sys.argv[2], mode="r")

def batches():
    for count, batch in enumerate(point_batches(root, open_points(root, "transcripts"), rows=1_000)):
        if count == 2:
            print("midway", flush=True)
            sys.stdin.read()  # held here until killed
        yield batch

PointStore(sys.argv[1]).get("element-1", batches, IndexSizes(tile_points=200, full_tile_points=300, bucket_points=1_000))
"""


def test_a_build_killed_midway_leaves_no_index_that_is_served(tmp_path: Path) -> None:
    """A process killed while building leaves its build folder only; no one opens it; the next build replaces it."""
    element = write_points(tmp_path / "p.zarr", 20_000, seed=3)
    cache = tmp_path / "points-cache"
    process = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(cache), str(element)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "midway\n"
    finally:
        process.kill()
        process.communicate(timeout=60)
    left = [p.name for p in cache.iterdir() if p.is_dir()]
    assert len(left) == 1 and left[0].startswith(".build-")
    store = PointStore(cache)
    assert store.kept("element-1", SIZES) is None
    root = zarr.open_group(str(element), mode="r")
    index = store.get("element-1", lambda: point_batches(root, open_points(root, "transcripts")), SIZES)
    assert index.built and index.n_points == 20_000
    assert [p.name for p in cache.iterdir() if p.is_dir() and p.name.startswith(".")] == []  # the half one removed
    assert store.kept("element-1", SIZES) is not None


_EXITS = """
import sys, threading
from sds_jupyter.service import StackService
from sds_jupyter.service.requests import dispatch
from sds_jupyter.service.features import points
from sds_jupyter.studio import pointparts
pointparts.SAMPLE_POINTS = 2_000  # below the element's 20,000: a sample, with the whole index built behind it
real, where, midway = points.point_batches, sys.argv[2], threading.Event()
def batches(*args, **kwargs):  # the element's real stream, held at a point of the build until the process ends
    for count, batch in enumerate(real(*args, **kwargs, rows=1_000)):
        if where == "reading" and count == 1:
            midway.set()
            points._STOP.wait()
        yield batch
    if where == "sorting":  # every point read: the scatter and the sort are next
        midway.set()
        points._STOP.wait()
points.point_batches = batches
info = dispatch(StackService(sys.argv[1]), "points", {"element": "transcripts", "sample": True}).data["index"]
assert info["partial"] and midway.wait(300)
print("midway", flush=True)
# the script ends here: the process exits with its index's build under way in a daemon thread
"""


@pytest.mark.parametrize("where", ["reading", "sorting"])
def test_a_process_exiting_mid_build_stops_it_and_leaves_no_build_folder(tmp_path: Path, where: str) -> None:
    """A server process ending while its background build reads the element, or sorts it: the build stops
    at its next part and removes its folder; the process exits cleanly (no abort at shutdown)."""
    element = write_points(tmp_path / "p.zarr", 20_000, seed=5)
    cache = tmp_path / "points-cache"
    done = subprocess.run(
        [sys.executable, "-c", _EXITS, str(element), where],
        env={**os.environ, "SDS_POINTS_CACHE": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and done.stdout == "midway\n", done.stderr[-2000:]
    assert "Fatal Python error" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []  # no build folder, no index


@pytest.mark.parametrize("points", [500, 5_000])
def test_the_sample_reads_the_head_of_every_part_and_is_deterministic(tmp_path: Path, points: int) -> None:
    """A sample of ``points`` reading at most 40,000 of 80,000 rows: the first rows of every part, the same twice."""
    import spatialdata

    element = write_points(tmp_path / "p.zarr", 80_000, seed=4)
    root = zarr.open_group(str(element), mode="r")
    opened = open_points(root, "transcripts")

    def drawn() -> np.ndarray:
        sample = point_sample(root, opened, points=points, read_rows=40_000)
        assert sample.rows == 80_000
        return np.concatenate([np.column_stack([batch.x, batch.y]) for batch in sample.batches])

    first = drawn()
    assert abs(len(first) - points) <= points * 0.05 + 8
    assert np.array_equal(first, drawn())
    stored = spatialdata.read_zarr(element).points["transcripts"].compute()[["x", "y"]].to_numpy()  # in part order
    where = {(float(x), float(y)): i for i, (x, y) in enumerate(stored)}
    rows = np.asarray([where[(float(x), float(y))] for x, y in first.astype(np.float32)])
    assert (rows % PART_ROWS < 5_000).all() and set(rows // PART_ROWS) == set(range(8))  # every part's head


def test_the_sample_reads_a_bounded_set_of_row_groups_evenly_spaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An element of more row groups than SAMPLE_GROUPS: the sample reads that many, spread over the element's order."""
    import spatialdata

    from sds_jupyter.studio import pointparts

    monkeypatch.setattr(pointparts, "SAMPLE_GROUPS", 4)
    element = write_points(tmp_path / "p.zarr", 80_000, seed=4)  # 8 parts of one row group each
    root = zarr.open_group(str(element), mode="r")
    sample = point_sample(root, open_points(root, "transcripts"), points=2_000, read_rows=40_000)
    assert sample.rows == 80_000
    got = np.concatenate([np.column_stack([batch.x, batch.y]) for batch in sample.batches])
    stored = spatialdata.read_zarr(element).points["transcripts"].compute()[["x", "y"]].to_numpy()
    where = {(float(x), float(y)): i for i, (x, y) in enumerate(stored)}
    rows = np.asarray([where[(float(x), float(y))] for x, y in got.astype(np.float32)])
    assert set(rows // PART_ROWS) == {0, 2, 4, 6} and (rows % PART_ROWS < 10_000).all()
    assert abs(len(got) - 2_000) <= 2_000 * 0.05 + 8


def test_the_sample_reads_the_head_of_its_row_groups_not_their_whole_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two row groups of a million rows: a sample of their first 10,000 rows each reads well under their columns' bytes.

    Before, every column chunk was read whole (a 1 MB buffer dropped at each seek between the
    columns read it more than once): a sample of a 30M element read 331 MB.
    """
    import pyarrow.parquet as pq

    from sds_jupyter.studio import pointparts

    element = write_kit_points(tmp_path / "p.zarr", 2_000_000, seed=6, genes=50, part_rows=1_000_000)
    folder = element / "points" / "transcripts" / "points.parquet"
    stored = 0
    for part in sorted(folder.glob("*.parquet")):
        meta = pq.ParquetFile(part).metadata
        assert meta.num_row_groups == 1
        group = meta.row_group(0)
        stored += sum(
            group.column(i).total_compressed_size
            for i in range(group.num_columns)
            if group.column(i).path_in_schema in ("x", "y", "gene")
        )
    read: list[int] = []
    real = pointparts.StoreFile.readinto

    def counted(self: pointparts.StoreFile, buffer: object) -> int:
        n = real(self, buffer)
        read.append(n)
        return n

    monkeypatch.setattr(pointparts.StoreFile, "readinto", counted)
    root = zarr.open_group(str(element), mode="r")
    sample = point_sample(root, open_points(root, "transcripts"), points=2_000, read_rows=20_000)
    assert sum(len(batch.x) for batch in sample.batches) == 2_000
    # the float columns' dictionary pages (1 MB each) and the first pages: under half of 9 MB a part
    assert sum(read) < 0.5 * stored, (sum(read), stored)
