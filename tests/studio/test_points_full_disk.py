"""Points on a disk that refuses the index (issue 39): the request does not fail.

A real process whose files may not grow past 64 KiB (``RLIMIT_FSIZE``: every write past it
fails with EFBIG, as on a full disk) serves a real element written by spatialdata: the sample
comes at once (built in memory, no file), the whole index is built in memory when it fits, the
same index as one written to disk; an element past what memory may hold keeps its sample
(``partial``), and nothing is left in the cache folder.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr
from kit.points import SMALL, write_points

from sds_jupyter.errors import ElementError
from sds_jupyter.service import StackService
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.requests import dispatch
from sds_jupyter.studio.pointindex import PointsTooMany, build_point_index, memory_point_index, sample_index
from sds_jupyter.studio.pointparts import open_points, point_batches, point_sample
from sds_jupyter.studio.pointstore import MEMORY_INDEX_POINTS, MEMORY_POINTS_ENV, PointStore, memory_index_points

N = 20_000  # 200 KB of scratch records: past the 64 KiB a file may grow to


@pytest.fixture(scope="module")
def element(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_points(tmp_path_factory.mktemp("points-full") / "p.zarr", N, seed=3)


def _batches(path: Path, rows: int | None = None):  # type: ignore[no-untyped-def]
    root = zarr.open_group(str(path), mode="r")
    opened = open_points(root, "transcripts")
    return point_batches(root, opened) if rows is None else point_batches(root, opened, rows=rows)


def test_the_index_built_in_memory_is_the_index_written_to_disk(element: Path) -> None:
    on_disk = build_point_index(_batches(element), sizes=SMALL)
    in_memory = memory_point_index(_batches(element, rows=3_000), SMALL)  # other batches: the same index
    assert in_memory.folder is None and on_disk.folder is not None
    assert (in_memory.n_points, in_memory.level, in_memory.block_level) == (N, on_disk.level, on_disk.block_level)
    assert in_memory.bounds == on_disk.bounds and in_memory.genes == on_disk.genes
    assert np.array_equal(in_memory.offsets, on_disk.offsets)
    for name in ("codes", "x", "y"):
        assert np.array_equal(getattr(in_memory, name), getattr(on_disk, name)), name
    for level in range(on_disk.level + 1):
        a, b = in_memory.tile(level, 0, 0, ["G1", "G3"]), on_disk.tile(level, 0, 0, ["G1", "G3"])
        assert np.array_equal(a.x, b.x) and np.array_equal(a.gene, b.gene) and a.total == b.total


def test_memory_refuses_more_points_than_it_may_hold(element: Path) -> None:
    with pytest.raises(PointsTooMany, match="more than 5,000"):
        memory_point_index(_batches(element, rows=1_000), SMALL, max_points=5_000)


def test_the_sample_writes_no_file(element: Path) -> None:
    root = zarr.open_group(str(element), mode="r")
    index = sample_index(point_sample(root, open_points(root, "transcripts"), points=2_000))
    assert index.partial and index.folder is None and index.rows == N and 0 < index.n_points <= 2_000


def test_a_cache_folder_that_cannot_be_used_builds_in_memory(tmp_path: Path, element: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("a file where the cache folder should be")
    index = PointStore(taken / "points").get("element-1", lambda: _batches(element), SMALL)
    assert index.built and index.n_points == N
    assert index.folder is None or not index.folder.is_relative_to(taken)


_FULL_DISK = """
import json, resource, sys, threading
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # no file past 64 KiB: writes fail with EFBIG
from sds_jupyter.service import StackService
from sds_jupyter.service.requests import dispatch
from sds_jupyter.service.features import points
from sds_jupyter.studio import pointparts, pointstore
pointparts.SAMPLE_POINTS = 2_000
pointstore.MEMORY_INDEX_POINTS = int(sys.argv[2])
points.REFUSED_RETRY_SECONDS = float(sys.argv[3])
service = StackService(sys.argv[1])
ask = {"element": "transcripts", "sample": True}
answers = []
def asked(params):
    info = dispatch(service, "points", params).data["index"]
    tile = dispatch(service, "points_tile", {"element": "transcripts", "key": info["key"], "level": 0, "x": 0, "y": 0})
    said = {k: info[k] for k in ("partial_reason", "refused", "memory_points", "retry_seconds") if k in info}
    answers.append({"partial": info["partial"], "n": info["n_points"], "key": info["key"], "tile": tile.data["n"], **said})
def built():
    for thread in [t for t in threading.enumerate() if t.name.startswith("sds-points-")]:
        thread.join(timeout=300)
asked(ask)
built()
asked(ask)
asked({"element": "transcripts"})
asked(ask)  # past REFUSED_RETRY_SECONDS when it is 0: another build starts
built()
asked(ask)
built()  # a build the last ask started ends (and removes its folder) before the process does
print(json.dumps(answers))
"""


def _full_disk(
    element: Path, cache: Path, memory_points: int, retry_seconds: float = 3600.0, setting: str | None = None
) -> list[dict]:
    env = {**os.environ, "SDS_POINTS_CACHE": str(cache)}
    if setting is not None:
        env["SDS_POINTS_MEMORY"] = setting
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(element), str(memory_points), str(retry_seconds)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers: list[dict] = json.loads(done.stdout.strip().splitlines()[-1])
    return answers


def _left(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) if cache.exists() else []


def test_a_full_disk_serves_the_sample_then_the_index_built_in_memory(tmp_path: Path, element: Path) -> None:
    cache = tmp_path / "points-cache"
    first, ready, waited, *later = _full_disk(element, cache, memory_points=N)
    assert first["partial"] and 0 < first["n"] <= 2_000 and first["key"].startswith("sample-")
    assert first["partial_reason"] == "building" and "refused" not in first
    assert not ready["partial"] and ready["n"] == N and ready["tile"] > 0  # built in memory
    assert "partial_reason" not in ready
    assert waited == ready and later == [ready, ready]
    assert _left(cache) == []  # no entry, no build folder


def test_a_full_disk_and_too_many_points_for_memory_keep_the_sample(tmp_path: Path, element: Path) -> None:
    cache = tmp_path / "points-cache"
    first, again, waited, later, rebuilt = _full_disk(element, cache, memory_points=N // 4)
    assert first["partial"] and first["partial_reason"] == "building"
    sample = {k: first[k] for k in ("partial", "n", "key", "tile")}
    # no error: the sample still, and the reply says why it will stay a sample and for how long
    assert {k: again[k] for k in sample} == sample and again["partial_reason"] == "refused"
    assert again["refused"] == os.strerror(errno.EFBIG) and again["memory_points"] == N // 4
    assert 0 < again["retry_seconds"] <= 3600  # no timing: the wait is an hour here
    # asked without sample, the same: no error either; that ask built again, so no wait is said
    assert {k: waited[k] for k in sample} == sample and waited["partial_reason"] == "refused"
    assert waited["retry_seconds"] == 0
    assert later == again | {"retry_seconds": later["retry_seconds"]} and rebuilt["partial_reason"] == "refused"
    assert _left(cache) == []


def test_a_refused_build_is_tried_again_after_its_wait(tmp_path: Path, element: Path) -> None:
    """REFUSED_RETRY_SECONDS 0: each ask after a refusal starts another build, and the reply says it builds."""
    cache = tmp_path / "points-cache"
    first, again, _waited, later, rebuilt = _full_disk(element, cache, memory_points=N // 4, retry_seconds=0)
    assert first["partial_reason"] == "building"
    assert again["partial_reason"] == "building"  # the refused build was over its wait: another started
    assert later["partial_reason"] == "building" and rebuilt["partial_reason"] == "building"
    assert _left(cache) == []


def test_the_setting_bounds_what_memory_indexes(tmp_path: Path, element: Path) -> None:
    """SDS_POINTS_MEMORY below the element's points (the default above them): the sample stays, and the reply says the setting's bound."""
    cache = tmp_path / "points-cache"
    first, again, *_ = _full_disk(element, cache, memory_points=N, setting=f"{N // 4}")
    assert first["partial_reason"] == "building"
    assert again["partial_reason"] == "refused" and again["memory_points"] == N // 4
    assert _left(cache) == []


@pytest.mark.parametrize("text", ["lots", "-1", "1e7", "8,000,000", "100000001", "\u0663"])
def test_a_bad_memory_setting_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, element: Path, text: str) -> None:
    monkeypatch.setenv(MEMORY_POINTS_ENV, text)
    with pytest.raises(
        ElementError, match="SDS_POINTS_MEMORY=.* is not a whole number of points from 0 to 100,000,000"
    ) as got:
        memory_index_points()
    assert "\n" not in str(got.value)
    service = StackService(str(element))  # the points request says it at once, not when a disk first refuses
    with pytest.raises(RequestError, match="SDS_POINTS_MEMORY="):
        dispatch(service, "points", {"element": "transcripts", "sample": True})


@pytest.mark.parametrize(
    ("text", "value"), [("", MEMORY_INDEX_POINTS), ("0", 0), (" 5000 ", 5_000), ("8_000_000", 8_000_000)]
)
def test_a_memory_setting_is_read(monkeypatch: pytest.MonkeyPatch, text: str, value: int) -> None:
    monkeypatch.setenv(MEMORY_POINTS_ENV, text)
    assert memory_index_points() == value == PointStore().memory_points


_READ_ONLY = """
import json, sys, zarr
from kit.points import SMALL
from sds_jupyter.studio.pointparts import open_points, point_batches
from sds_jupyter.studio.pointstore import MEMORY_INDEX_POINTS, MEMORY_POINTS_ENV, PointStore, memory_index_points
root = zarr.open_group(sys.argv[2], mode="r")
index = PointStore(sys.argv[1]).get("element-1", lambda: point_batches(root, open_points(root, "transcripts")), SMALL)
print(json.dumps({"built": index.built, "n": index.n_points, "mapped": index.folder is not None}))
"""


def _can_mount_read_only(folder: Path) -> bool:
    """Whether this process may bind-mount ``folder`` read-only in a mount namespace of its own (root, unshare, the capability)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    folder.mkdir(exist_ok=True)
    command = f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && ! touch {folder}/x 2>/dev/null"
    return subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, timeout=60).returncode == 0


def test_a_read_only_cache_folder_still_serves_the_index_it_holds(tmp_path: Path, element: Path) -> None:
    """The cache folder mounted read-only (a bind mount in a mount namespace of its own): its index is mapped, not built again."""
    if not _can_mount_read_only(tmp_path / "probe"):
        pytest.skip("a read-only bind mount needs root, unshare and the capability to mount")
    cache = tmp_path / "points-cache"
    root = zarr.open_group(str(element), mode="r")
    PointStore(cache).get("element-1", lambda: point_batches(root, open_points(root, "transcripts")), SMALL)
    script = tmp_path / "read_only.py"
    script.write_text(_READ_ONLY)
    kit = Path(__file__).resolve().parents[1]
    command = (
        f"mount --bind {cache} {cache} && mount -o remount,ro,bind {cache} && "
        f"PYTHONPATH={kit} {sys.executable} {script} {cache} {element}"
    )
    done = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"built": False, "n": N, "mapped": True}


_DROPPED = """
import json, resource, shutil, sys, threading
import numpy as np
from sds_jupyter.service import StackService
from sds_jupyter.service.requests import dispatch
from sds_jupyter.service.features import points
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.studio import pointparts, pointstore
from sds_jupyter.protocol.buffers import named_buffers
from sds_jupyter.protocol.layouts import LAYOUTS
pointparts.SAMPLE_POINTS = 2_000
pointstore.MEMORY_INDEX_POINTS = int(sys.argv[3])
service = StackService(sys.argv[1])
whole = dispatch(service, "points", {"element": "transcripts"}).data["index"]  # built and kept on disk
# the disk's entry goes (another process's eviction), the memory's too, and from now on no file grows past 64 KiB
for entry in pointstore.PointStore(sys.argv[2]).folder.iterdir():
    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
points._indexes(service.session).clear()
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
def tile(service, level, x, y, genes=""):
    params = {"element": "transcripts", "key": whole["key"], "level": level, "x": x, "y": y, "genes": genes}
    reply = dispatch(service, "points_tile", params)
    parts = {k: np.frombuffer(v, np.uint16) for k, v in named_buffers("points_tile", LAYOUTS["points_tile"], reply.data, reply.buffers).items()}
    data = dict(reply.data)
    bounds = data["bounds"]
    data["xs"] = (bounds[0] + np.asarray(parts["x"], float) / 65535 * (bounds[2] - bounds[0])).tolist()
    data["ys"] = (bounds[1] + np.asarray(parts["y"], float) / 65535 * (bounds[3] - bounds[1])).tolist()
    data["genes"] = [whole["genes"][code]["name"] for code in parts["gene"]]
    data["etag"], data["addressed"] = reply.etag, reply.addressed
    return data
def build_ended():  # the background build the first tile started: its thread's end is the condition
    for thread in threading.enumerate():
        if thread.name.startswith("sds-points-"):
            thread.join(timeout=300)
level = whole["finest_level"]
side = 1 << level
first = tile(service, level, 0, 0)  # starts the build again, in the background: the sample meanwhile
build_ended()
tiles = [tile(service, level, x, y) for x in range(side) for y in range(side)]
coarse = tile(service, 0, 0, 0, "G1,G3")
sample = dispatch(service, "points", {"element": "transcripts", "sample": True}).data["index"]
other = StackService(sys.argv[1], caches=StackCaches())  # a server that never answered with it
fresh = [tile(other, level, 0, 0)]
build_ended()
fresh.append(tile(other, level, 0, 0))
print(json.dumps({"whole": whole, "first": first, "tiles": tiles, "coarse": coarse, "sample": sample, "fresh": fresh}))
"""


def test_a_tile_of_a_dropped_index_the_disk_refuses_is_the_sample_in_it(tmp_path: Path, element: Path) -> None:
    """The whole index was served from disk, then dropped from memory and the disk; the disk now refuses it and memory may not hold it.

    The first tile asked starts its build again in the background and answers the sample in it
    (``building``); once that build is refused, its tiles (the view still shows the whole index) answer the sample's points inside each
    tile, coded as the whole index's genes, marked partial with the disk's reason, never kept
    by the browser; ``points`` answers the same sample; a server that never answered with the
    index answers an empty tile saying the same.
    """
    cache = tmp_path / "points-cache"
    done = subprocess.run(
        [sys.executable, "-c", _DROPPED, str(element), str(cache), str(N // 4)],
        env={**os.environ, "SDS_POINTS_CACHE": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    whole, first, tiles, coarse, sample, fresh = (
        got[k] for k in ("whole", "first", "tiles", "coarse", "sample", "fresh")
    )
    assert not whole["partial"] and whole["n_points"] == N
    # the first tile asked after the drop: built again in the background, the sample in it meanwhile
    assert first["partial"] and first["partial_reason"] == "building" and "refused" not in first
    assert first["key"] == whole["key"] and not first["addressed"] and first["etag"] != tiles[0]["etag"]
    assert first["n"] == tiles[0]["n"] and first["xs"] == tiles[0]["xs"]
    assert sample["partial"] and sample["partial_reason"] == "refused" and sample["refused"] == os.strerror(errno.EFBIG)
    for t in tiles:
        assert t["key"] == whole["key"] and t["partial"] and t["sampled"]
        assert t["partial_reason"] == "refused" and t["refused"] == os.strerror(errno.EFBIG)
        assert t["etag"] and not t["addressed"]
        x0, y0, x1, y1 = t["bounds"]
        tol = (x1 - x0) / 65535
        assert all(x0 - tol <= x <= x1 + tol for x in t["xs"]) and all(y0 - tol <= y <= y1 + tol for y in t["ys"])
    # every point of the sample, once, in the tile holding it, under its own gene
    assert sum(t["n"] for t in tiles) == sum(t["total"] for t in tiles) == sample["n_points"]
    counts: dict[str, int] = {}
    for t in tiles:
        for name in t["genes"]:
            counts[name] = counts.get(name, 0) + 1
    assert counts == {g["name"]: g["count"] for g in sample["genes"] if g["count"]}
    assert coarse["partial_reason"] == "refused" and set(coarse["genes"]) <= {"G1", "G3"}
    assert coarse["total"] == sum(g["count"] for g in sample["genes"] if g["name"] in ("G1", "G3"))
    assert [t["partial_reason"] for t in fresh] == ["building", "refused"] and [t["n"] for t in fresh] == [0, 0]
    assert _left(cache) == []
