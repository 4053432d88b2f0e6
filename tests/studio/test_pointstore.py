"""Points indexes kept on disk: built once per element, mapped by other processes, never through a link.

Small elements written by spatialdata and small index sizes (IndexSizes) keep these quick; the
second process is a real one (``python -c``), not a second object in this one.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr
from kit.points import SMALL, write_points

from sds_jupyter.service import StackService
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.requests import dispatch
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.studio.pointindex import PointIndex, build_point_index
from sds_jupyter.studio.pointparts import open_points, point_batches
from sds_jupyter.studio.pointstore import PointStore


@pytest.fixture(scope="module")
def element(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_points(tmp_path_factory.mktemp("points") / "p.zarr", 3_000, seed=1)


def _get(store: PointStore, path: Path, identity: str = "element-1") -> PointIndex:
    root = zarr.open_group(str(path), mode="r")
    return store.get(identity, lambda: point_batches(root, open_points(root, "transcripts")), SMALL)


_IN_ANOTHER_PROCESS = """
import json, sys, zarr
from sds_jupyter.studio.pointindex import IndexSizes
from sds_jupyter.studio.pointparts import open_points, point_batches
from sds_jupyter.studio.pointstore import PointStore
root = zarr.open_group(sys.argv[2], mode="r")
sizes = IndexSizes(tile_points=200, full_tile_points=300, bucket_points=1_000)
index = PointStore(sys.argv[1]).get("element-1", lambda: point_batches(root, open_points(root, "transcripts")), sizes)
tile = index.tile(index.level, 0, 0)
print(json.dumps({"built": index.built, "n": index.n_points, "x": tile.x.tolist(), "gene": tile.gene.tolist()}))
"""


def _in_another_process(cache: Path, path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _IN_ANOTHER_PROCESS, str(cache), str(path)], stdout=subprocess.PIPE, text=True
    )


def _answer(process: subprocess.Popen[str]) -> dict:
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0
    answer: dict = json.loads(out)
    return answer


def test_a_second_process_maps_the_index_the_first_built(tmp_path: Path, element: Path) -> None:
    cache = tmp_path / "points-cache"
    first = _answer(_in_another_process(cache, element))
    (entry,) = [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]
    stamp = {p.name: p.stat().st_ino for p in entry.iterdir()}
    second = _answer(_in_another_process(cache, element))
    assert first["built"] and not second["built"]
    assert first == {**second, "built": True}
    assert {p.name: p.stat().st_ino for p in entry.iterdir()} == stamp  # the same files, not written again
    assert oct(cache.stat().st_mode & 0o777) == "0o700" and oct(entry.stat().st_mode & 0o777) == "0o700"
    # and what it maps is the element's index: the same tiles as one built privately here
    here = _get(PointStore(cache), element)
    fresh = build_point_index(point_batches(*_opened(element)), sizes=SMALL)
    assert not here.built and here.n_points == fresh.n_points == 3_000
    for column, row in [(0, 0), (1, 2), (3, 3)]:
        a, b = here.tile(here.level, column, row), fresh.tile(fresh.level, column, row)
        assert np.array_equal(a.x, b.x) and np.array_equal(a.gene, b.gene)


def _opened(path: Path) -> tuple[zarr.Group, object]:
    root = zarr.open_group(str(path), mode="r")
    return root, open_points(root, "transcripts")


def test_two_processes_building_at_once_build_it_once(tmp_path: Path, element: Path) -> None:
    """Both start while the build lock is held; when it is let go one builds, the other maps its index."""
    cache = tmp_path / "points-cache"
    cache.mkdir(mode=0o700)
    name = PointStore.name_of(f"element-1\n{SMALL}")
    fd = os.open(cache / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    processes = [_in_another_process(cache, element) for _ in range(2)]
    os.close(fd)
    answers = [_answer(p) for p in processes]
    assert sorted(a["built"] for a in answers) == [False, True]
    assert answers[0]["x"] == answers[1]["x"] and answers[0]["n"] == 3_000
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no build folder left behind


def test_a_link_in_the_cache_folder_is_not_followed(tmp_path: Path, element: Path) -> None:
    """A link standing where an index would be is not opened (a good index behind it notwithstanding)."""
    elsewhere = tmp_path / "elsewhere"
    _get(PointStore(elsewhere), element)
    (planted,) = [p for p in elsewhere.iterdir() if p.is_dir() and not p.name.startswith(".")]
    before = sorted((p.name, p.stat().st_size) for p in planted.iterdir())
    cache = tmp_path / "points-cache"
    cache.mkdir(mode=0o700)
    (cache / planted.name).symlink_to(planted, target_is_directory=True)
    index = _get(PointStore(cache), element)
    assert index.built and not (cache / planted.name).is_symlink()
    assert sorted((p.name, p.stat().st_size) for p in planted.iterdir()) == before  # the link's target untouched
    # a cache folder that is itself a link is not used at all: built privately, nothing written there
    linked = tmp_path / "linked-cache"
    linked.symlink_to(elsewhere, target_is_directory=True)
    private = _get(PointStore(linked), element)
    assert private.built and not private.folder.is_relative_to(elsewhere) and private.folder.parent != linked
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted([planted.name, f"{planted.name}.lock"])


def test_a_broken_index_is_built_again(tmp_path: Path, element: Path) -> None:
    """A kept index whose column was cut short (a disk that filled) does not open: it is rebuilt."""
    cache = tmp_path / "points-cache"
    _get(PointStore(cache), element)
    (entry,) = [p for p in cache.iterdir() if p.is_dir()]
    with (entry / "x").open("r+b") as handle:
        handle.truncate(100)
    again = _get(PointStore(cache), element)
    assert again.built and again.n_points == 3_000 and (entry / "x").stat().st_size == 4 * 3_000


def test_the_bound_evicts_the_least_recently_used(tmp_path: Path, element: Path) -> None:
    cache = tmp_path / "points-cache"
    one = _get(PointStore(cache), element, "element-1")
    size = sum(p.stat().st_size for p in one.folder.iterdir())
    store = PointStore(cache, max_bytes=int(size * 2.5))
    _get(store, element, "element-2")
    os.utime(one.folder, ns=(1, 1))  # element-1 used long ago
    _get(store, element, "element-3")
    kept = {p.name for p in cache.iterdir() if p.is_dir()}
    assert kept == {PointStore.name_of(f"element-{i}\n{SMALL}") for i in (2, 3)}
    assert one.tile(one.level, 0, 0).total > 0  # a process still holding the evicted one keeps reading it
    # an index larger than the whole bound is served, then removed with it, never kept
    tiny = _get(PointStore(cache, max_bytes=size // 2), element, "element-4")
    assert tiny.built and PointStore.name_of(f"element-4\n{SMALL}") not in {p.name for p in cache.iterdir()}
    folder = tiny.folder
    del tiny
    assert not folder.exists()


def test_an_element_rewritten_in_place_gets_a_new_index(tmp_path: Path) -> None:
    """Same path, same identity of its holder, other points: the footers differ, so the index is rebuilt."""
    path = write_points(tmp_path / "base.zarr", 2_000, seed=2)

    def n_points() -> int:
        service = StackService(path, caches=StackCaches())  # a fresh process's caches
        return int(dispatch(service, "points", {"element": "transcripts"}).data["index"]["n_points"])

    assert n_points() == 2_000
    write_points(path, 2_500, seed=3)
    assert n_points() == 2_500
    cache = Path(os.environ["SDS_POINTS_CACHE"])
    assert len([p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 2


def test_an_element_rewritten_under_a_running_service_is_served_its_new_index(tmp_path: Path) -> None:
    """One service (one process's caches): the rewrite gets a new key and index; the old key is refused."""
    path = write_points(tmp_path / "base.zarr", 2_000, seed=4)
    service = StackService(path, caches=StackCaches())
    before = dispatch(service, "points", {"element": "transcripts"}).data["index"]
    assert before["n_points"] == 2_000
    write_points(path, 2_600, seed=5)
    after = dispatch(service, "points", {"element": "transcripts"}).data["index"]
    assert after["n_points"] == 2_600 and after["key"] != before["key"]
    truth = zarr.open_group(str(path), mode="r")
    total = sum(len(batch.x) for batch in point_batches(truth, open_points(truth, "transcripts")))
    tile = {"element": "transcripts", "level": 0, "x": 0, "y": 0}
    assert dispatch(service, "points_tile", {**tile, "key": after["key"]}).data["total"] == total == 2_600
    with pytest.raises(RequestError, match="ask points again"):
        dispatch(service, "points_tile", {**tile, "key": before["key"]})


def test_the_fingerprint_is_the_same_whatever_the_tail_read_at_once(element: Path, monkeypatch) -> None:
    """A footer longer than the tail read with the part's size takes a read of its own: the same digest."""
    from sds_jupyter.studio import pointparts

    root, opened = _opened(element)
    whole = pointparts.element_fingerprint(root, opened)
    monkeypatch.setattr(pointparts, "TAIL_BYTES", 16)  # shorter than any footer: every part read again
    assert pointparts.element_fingerprint(root, opened) == whole
    monkeypatch.setattr(pointparts, "TAIL_BYTES", 1 << 30)  # longer than any part: each read whole at once
    assert pointparts.element_fingerprint(root, opened) == whole
