"""Cell geometry kept on disk between processes (issue 39): a new process maps the first tissue, never derives it again.

Real processes, a real demo store: the first builds the entry, the second opens it (its files
untouched: same inodes, same modification times, no build folder), and both send the same
bytes as a process that keeps nothing. A cache folder that is a link or open to others is not
used (nothing is written there); a truncated, garbled or inconsistent entry is rebuilt; a
version that changes the stored shapes misses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sds_jupyter.stack import Stack
from sds_jupyter.stack.write.writer import VersionWriter
from sds_jupyter.studio.keptarrays import GEOMETRY_CACHE_ENV, geometry_store, open_arrays

FIGURE = "fig-cell-types"
N_CELLS = 6000  # above pieces.OUTLINES_AT_ONCE: the outlines go by tile, so the entry holds the outline index too

_FIRST_TISSUE = """
import hashlib, json, sys
from sds_jupyter.service import StackService, dispatch
service, figure = StackService(sys.argv[1]), sys.argv[2]
key = dispatch(service, "canvas", {"figure": figure}).data["cells_key"]
cells = dispatch(service, "cells", {"figure": figure, "key": key})
grid = cells.data["shapes"].get("outlines")
middle = {"column": str(grid["columns"] // 2), "row": str(grid["rows"] // 2)} if grid else None
tile = dispatch(service, "cell_outlines", {"figure": figure, "key": key, **middle}) if middle else None
digest = hashlib.sha256()
for buffer in [*cells.buffers, *(tile.buffers if tile is not None else [])]:
    digest.update(bytes(buffer))
print(json.dumps({"key": key, "shapes": cells.data["shapes"], "quantum": cells.data.get("quantum"),
                  "bytes": digest.hexdigest()}))
"""


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("kept"), n_cells=N_CELLS, side=512)


def _first_tissue(version: Path, cache: Path | str) -> dict[str, Any]:
    """The first tissue (canvas, cells, one outline tile) as a new process serves it, with ``cache`` as its geometry cache."""
    env = {**os.environ, GEOMETRY_CACHE_ENV: str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_TISSUE, str(version), FIGURE],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _files(cache: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and folder under ``cache``: (inode, size, modification time) by relative path (links not followed)."""
    found = {}
    for path in sorted(cache.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(cache))] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return found


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def unkept(large: Path) -> dict[str, Any]:
    """The first tissue of a process that keeps nothing on disk: what every other must send."""
    return _first_tissue(large, "off")


@pytest.fixture(scope="module")
def built(large: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A geometry cache whose entry a first process built: each damage below is done to a copy."""
    cache = tmp_path_factory.mktemp("built") / "geometry"
    _first_tissue(large, cache)
    return cache


def test_a_second_process_maps_the_first_ones_entry_without_deriving_it_again(large, unkept, tmp_path) -> None:
    cache = tmp_path / "geometry"
    first = _first_tissue(large, cache)
    assert first == unkept  # the builder serves what a process without a cache serves
    [entry] = _entries(cache)
    assert (entry.stat().st_mode & 0o777) == 0o700 and (cache.stat().st_mode & 0o777) == 0o700
    names = {p.name for p in entry.iterdir()}
    assert {"entry.json", "x", "y", "shape_0", "shape_1", "boxes", "radius", "code_0"} <= names
    files = {
        name: value for name, value in _files(cache).items() if name != entry.name
    }  # the folder's own time is its last use
    second = _first_tissue(large, cache)
    assert second == unkept
    assert {name: value for name, value in _files(cache).items() if name != entry.name} == files  # opened, not rebuilt


def test_the_entry_opened_from_disk_says_so_and_holds_the_derived_arrays(large, tmp_path) -> None:
    cache = tmp_path / "geometry"
    _first_tissue(large, cache)
    [entry] = _entries(cache)
    header = json.loads((entry / "entry.json").read_text())
    fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
    try:
        kept = open_arrays(fd, entry, header["identity"])
    finally:
        os.close(fd)
    assert kept is not None and kept.source == "disk"
    assert kept.arrays["x"].shape == (N_CELLS,) and kept.arrays["boxes"].shape == (N_CELLS, 4)
    assert not kept.arrays["x"].flags.writeable  # mapped read-only
    again = geometry_store(cache).get(header["identity"], lambda: pytest.fail("derived again"))  # type: ignore[arg-type,return-value]
    assert again.source == "disk"


@pytest.mark.parametrize("how", ["link", "open-to-others"])
def test_a_cache_folder_that_is_a_link_or_open_to_others_is_not_used(large, unkept, tmp_path, how) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    if how == "link":
        cache = tmp_path / "linked"
        cache.symlink_to(real, target_is_directory=True)
        watched = real
    else:
        cache = watched = real
        real.chmod(0o755)
    assert _first_tissue(large, cache) == unkept
    assert list(watched.iterdir()) == []  # nothing written there


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "garbled-header",
        "header-claims-more",
        "rings-out-of-order",
        "linked-file",
        "retyped-boxes",
        "grid-not-numbers",
    ],
)
def test_a_damaged_entry_is_rebuilt_and_never_served(large, unkept, built, tmp_path, damage) -> None:
    cache = Path(shutil.copytree(built, tmp_path / "geometry", symlinks=True))  # modes kept: 0700
    [entry] = _entries(cache)
    if damage == "truncated":
        with (entry / "x").open("r+b") as file:
            file.truncate(100)
    elif damage == "garbled-header":
        (entry / "entry.json").write_bytes(b"\x00{not json")
    elif damage == "header-claims-more":
        header = json.loads((entry / "entry.json").read_text())
        for item in header["arrays"]:
            if item["name"] == "x":
                item["shape"] = [N_CELLS * 1000]
        (entry / "entry.json").write_text(json.dumps(header))
    elif damage == "retyped-boxes":  # the outline bounds' bytes read as uint64: sizes agree, types do not
        header = json.loads((entry / "entry.json").read_text())
        for item in header["arrays"]:
            if item["name"] == "boxes":
                item["dtype"] = "<u8"
        (entry / "entry.json").write_text(json.dumps(header))
    elif damage == "grid-not-numbers":
        header = json.loads((entry / "entry.json").read_text())
        header["meta"]["grid"]["columns"] = "many"
        header["meta"]["sent"]["outlines"]["columns"] = "many"
        (entry / "entry.json").write_text(json.dumps(header))
    elif damage == "rings-out-of-order":
        starts = np.fromfile(entry / "shape_0", dtype="<u4")
        starts[1], starts[2] = starts[2] + 5, starts[1]
        starts.tofile(entry / "shape_0")
    else:
        elsewhere = tmp_path / "elsewhere-x"
        (entry / "x").rename(elsewhere)
        (entry / "x").symlink_to(elsewhere)
    assert _first_tissue(large, cache) == unkept  # the same bytes as a process that keeps nothing
    [rebuilt] = _entries(cache)
    assert rebuilt.name == entry.name and not (rebuilt / "x").is_symlink()
    assert (rebuilt / "x").stat().st_size == N_CELLS * 4
    if damage == "linked-file":
        assert (tmp_path / "elsewhere-x").stat().st_size == N_CELLS * 4  # the link's target left alone


def test_a_version_that_changes_the_shapes_misses_the_kept_entry(large, tmp_path) -> None:
    cache = tmp_path / "geometry"
    before = _first_tissue(large, cache)
    writer = VersionWriter(Stack.resolve(large))
    from sds_jupyter.demo.xenium import SHAPES

    attrs = f"shapes/{SHAPES}/zarr.json"
    writer.store.write_raw(attrs, writer.store.read_raw(attrs))  # the element rewritten by a new version
    top = writer.commit(large.parent / "reshaped-1111", title="Reshaped")  # beside its parents
    after = _first_tissue(top, cache)
    assert after["key"] != before["key"]
    assert len(_entries(cache)) == 2  # a second entry: the first is not served for the new shapes


_FULL_DISK = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # no file past 64 KiB: writes fail with EFBIG
sys.argv = ["-c", *sys.argv[1:]]
exec(compile(sys.stdin.read(), "<first tissue>", "exec"))
"""


def test_a_cache_that_cannot_be_written_serves_what_was_computed_and_keeps_nothing(large, unkept, tmp_path) -> None:
    """A full disk (no file past 64 KiB here: the outlines' file cannot be written): the request is answered
    from memory, as with no cache, and no entry or build folder is left."""
    cache = tmp_path / "geometry"
    env = {**os.environ, GEOMETRY_CACHE_ENV: str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(large), FIGURE],
        input=_FIRST_TISSUE,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == unkept
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []
