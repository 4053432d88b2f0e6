"""A shapes element's outline index kept on disk between processes (issue 39), beside the cells' geometry.

A real spatialdata store; a real second process maps the first one's entry (its files untouched)
and finds the same shapes by tile as a fresh build; an entry whose ids run past its shapes is
built again; another identity gets its own entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

from sds_jupyter.studio.keptarrays import geometry_store
from sds_jupyter.studio.shapeindex import build_shape_index, kept_shape_index

_PROBE = """
import json, sys
import numpy as np, zarr
from sds_jupyter.studio.keptarrays import geometry_store
from sds_jupyter.studio.shapeindex import kept_shape_index
root = zarr.open_group(sys.argv[1], mode="r")
index = kept_shape_index(root, "nuclei", None, 16, "nuclei@test", geometry_store(sys.argv[2]))
grid = index.grid
found = []
for row in range(grid["rows"]):
    for column in range(grid["columns"]):
        x0, y0 = grid["x0"] + column * grid["size"], grid["y0"] + row * grid["size"]
        found.append(index.near([x0, y0, x0 + grid["size"], y0 + grid["size"]], column, row).tolist())
starts, vertices = index.rings(np.arange(index.n))
print(json.dumps({"n": index.n, "grid": grid, "near": found, "vertices": float(np.asarray(vertices, np.float64).sum())}))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 small polygons and one across the whole square, written by spatialdata."""
    import geopandas as gpd
    import shapely
    import spatialdata
    from spatialdata.models import ShapesModel

    rng = np.random.default_rng(3)
    centres, sides = rng.uniform(20, 980, (300, 2)), rng.uniform(2, 12, 300)
    polygons = [
        shapely.Polygon([(x - s, y - s), (x + s, y - s), (x + s * 1.2, y + s), (x - s, y + s * 0.8)])
        for (x, y), s in zip(centres, sides, strict=True)
    ]
    polygons.append(shapely.box(100, 480, 900, 520))
    path = tmp_path_factory.mktemp("shapes") / "many.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(shapes={"nuclei": ShapesModel.parse(gpd.GeoDataFrame(geometry=polygons))}).write(path)
    return path


def _probe(store: Path, cache: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(store), str(cache)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith("."))


def _files(entry: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.lstat().st_ino, p.lstat().st_mtime_ns) for p in entry.iterdir()}


def test_a_second_process_maps_the_index_the_first_built_and_finds_the_same_shapes(store, tmp_path) -> None:
    cache = tmp_path / "geometry"
    first = _probe(store, cache)
    [entry] = _entries(cache)
    files = _files(entry)
    second = _probe(store, cache)
    assert second == first and _files(entry) == files  # mapped, not built again
    fresh = build_shape_index(zarr.open_group(str(store), mode="r"), "nuclei", None, 16)  # no cache at all
    assert first["n"] == fresh.n == 301 and first["grid"] == fresh.grid
    grid = fresh.grid
    column, row = grid["columns"] // 2, grid["rows"] // 2
    x0, y0 = grid["x0"] + column * grid["size"], grid["y0"] + row * grid["size"]
    box = [x0, y0, x0 + grid["size"], y0 + grid["size"]]
    assert first["near"][row * grid["columns"] + column] == fresh.near(box, column, row).tolist()


def test_an_entry_whose_ids_run_past_its_shapes_is_built_again(store, tmp_path) -> None:
    cache = tmp_path / "geometry"
    root = zarr.open_group(str(store), mode="r")
    kept = kept_shape_index(root, "nuclei", None, 16, "nuclei@test", geometry_store(cache))
    [entry] = _entries(cache)
    order = np.fromfile(entry / "order", dtype="<u4")
    order[0] = 10**6  # the size the header implies, an id no shape has
    order.tofile(entry / "order")
    again = kept_shape_index(root, "nuclei", None, 16, "nuclei@test", geometry_store(cache))
    assert int(np.asarray(again.order).max()) < again.n == kept.n
    assert int(np.fromfile(entry / "order", dtype="<u4").max()) < kept.n  # replaced on disk


def test_another_identity_or_tile_size_gets_its_own_entry(store, tmp_path) -> None:
    cache = tmp_path / "geometry"
    root = zarr.open_group(str(store), mode="r")
    kept_shape_index(root, "nuclei", None, 16, "nuclei@one", geometry_store(cache))
    kept_shape_index(root, "nuclei", None, 16, "nuclei@two", geometry_store(cache))
    kept_shape_index(root, "nuclei", None, 64, "nuclei@one", geometry_store(cache))
    assert len(_entries(cache)) == 3
    assert all((entry.stat().st_mode & 0o777) == 0o700 for entry in _entries(cache))


def test_without_a_usable_folder_the_index_is_built_privately(store, tmp_path) -> None:
    linked = tmp_path / "linked"
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    linked.symlink_to(real, target_is_directory=True)
    index = kept_shape_index(zarr.open_group(str(store), mode="r"), "nuclei", None, 16, "x", geometry_store(linked))
    assert index.n == 301 and os.listdir(real) == []
