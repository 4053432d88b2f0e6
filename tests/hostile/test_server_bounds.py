"""Requests that would exhaust the server (issue 24, items 9-15): each answers a one-line refusal instead.

The stores are real: the Xenium-like demo (its base written by spatialdata) with hostile
metadata edited into the base's image (claimed shapes of 10^12, missing levels, zero sizes,
scales of 0), and versions saved by the VersionWriter with hostile results and obs columns.
A subprocess runs the service under an address-space limit and must answer every hostile
request with a refusal and live on.
"""

# ruff: noqa: F811 - the fixture hostile_versions of kit.hostile is imported by name, then requested
from __future__ import annotations

import csv
import io
import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from kit.hostile import (
    FIGURE,
    HOSTILE_IMAGES,
    IMAGE,
    IMAGE_REQUESTS,
    claims_10_12_rows,
    edit_nodes,
    hostile_datasets,
    hostile_versions,  # noqa: F401 - fixture
)

from sds_jupyter.errors import StackError
from sds_jupyter.limits import MAX_IMAGE_AXIS, MAX_READ_BYTES
from sds_jupyter.service import StackService, dispatch
from sds_jupyter.stack import Stack

pytest_plugins = ["kit.fixtures_service"]


# ------------------------------------------------------------------ hostile images


@pytest.fixture(scope="module")
def xenium(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's datasets folder (a 1,024 px, 3-channel pyramid under canvas figures); its top version."""
    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("bounds"), n_cells=300, side=1024)


def _hostile_copy(top: Path, tmp_path: Path, edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> StackService:
    """The service of a copy of the demo's top version whose base image metadata ``edit`` changed."""
    return StackService(hostile_datasets(top, tmp_path / "datasets", edit) / top.name)


@pytest.mark.parametrize("case", HOSTILE_IMAGES)
@pytest.mark.parametrize("request_name", IMAGE_REQUESTS)
def test_hostile_image_metadata_is_refused_before_reading(xenium, tmp_path, case: str, request_name: str) -> None:
    edit, reason = HOSTILE_IMAGES[case]
    service = _hostile_copy(xenium, tmp_path, edit)
    with pytest.raises(StackError, match=reason) as info:
        dispatch(service, request_name, IMAGE_REQUESTS[request_name])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"region": "0,0,1e300,1e300"}, "MAX_REGION_COORDINATE"),
        ({"region": "-1e300,-1e300,1e300,1e300"}, "MAX_REGION_COORDINATE"),
        ({"region": "0,0,inf,inf"}, "finite numbers"),
        ({"region": "5,5,5,5"}, "empty"),
        ({"region": "1e14,1e14,2e14,2e14"}, "does not overlap"),
    ],
)
def test_hostile_regions_are_refused(xenium, params: dict[str, Any], reason: str) -> None:
    service = StackService(xenium)
    with pytest.raises(StackError, match=reason):
        dispatch(service, "image_region", {"figure": FIGURE, **params})


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"level": 99}, "has levels 0 to"),
        ({"level": -1}, "has levels 0 to"),
        ({"x": 10**17}, "has tiles 0 to"),
        ({"y": -5}, "has tiles 0 to"),
    ],
)
def test_tiles_off_the_pyramid_are_refused(xenium, params: dict[str, Any], reason: str) -> None:
    service = StackService(xenium)
    with pytest.raises(StackError, match=reason):
        dispatch(service, "image_tile", {"figure": FIGURE, "level": 0, "x": 0, "y": 0, **params})


def test_a_read_larger_than_the_bound_is_refused_before_it_is_made(xenium, tmp_path) -> None:
    """A single-level image of 2^20 x 2^20 px read whole: refused by its bytes, not after allocating them."""

    def single_huge_level(element: dict[str, Any], level: dict[str, Any]) -> None:
        level["shape"] = [3, MAX_IMAGE_AXIS, MAX_IMAGE_AXIS]
        element["attributes"]["ome"]["multiscales"][0]["datasets"][1:] = []

    service = _hostile_copy(xenium, tmp_path, single_huge_level)
    from sds_jupyter.studio.elements import open_pyramid

    pyramid = open_pyramid(service.table_view().root, IMAGE)
    with pytest.raises(StackError, match="MAX_READ_BYTES"):
        pyramid.read(0, 0, 0, MAX_IMAGE_AXIS, MAX_IMAGE_AXIS // 8)
    assert 3 * MAX_IMAGE_AXIS * (MAX_IMAGE_AXIS // 8) > MAX_READ_BYTES
    # the overview strides such a level; the chunks it would touch are bounded too
    with pytest.raises(StackError, match="MAX_READ_CHUNKS"):
        dispatch(service, "channels", {"figure": FIGURE})


def test_pixel_reads_wait_for_a_free_slot(xenium) -> None:
    """With every read slot taken, a tile read waits; it runs as soon as one is given back.

    Only the waiting is asserted while the slots are held (a read that has not finished is
    still waiting however slow the machine), so no timing can fail this test.
    """
    import threading

    from sds_jupyter.limits import MAX_CONCURRENT_READS
    from sds_jupyter.studio.bounds import READ_SLOTS

    service = StackService(xenium)
    answers: list[Any] = []
    for _ in range(MAX_CONCURRENT_READS):
        READ_SLOTS.acquire()
    try:
        reader = threading.Thread(
            target=lambda: answers.append(dispatch(service, "image_tile", IMAGE_REQUESTS["image_tile"]))
        )
        reader.start()
        reader.join(timeout=2)
        assert reader.is_alive() and not answers
    finally:
        for _ in range(MAX_CONCURRENT_READS):
            READ_SLOTS.release()
    reader.join()
    assert len(answers) == 1 and answers[0].buffers


def test_the_image_cache_is_bounded(xenium, monkeypatch) -> None:
    """Tiles of the figure at every version that has it: at most MAX_CACHED_IMAGES pyramids stay open.

    The demo has fewer versions than the real bound, so the bound is lowered to 2 to be crossed.
    """
    from sds_jupyter.service import session as session_module

    monkeypatch.setattr(session_module, "MAX_CACHED_IMAGES", 2)
    service = StackService(xenium)
    served = 0
    for version in range(1, service.stack.depth + 1):
        try:
            dispatch(service, "image_tile", {"version": version, "figure": FIGURE, "level": 0, "x": 0, "y": 0})
        except StackError:
            continue  # versions before the figure was saved have none
        served += 1
    assert served > 2 and len(service.session.images) == 2


@pytest.mark.parametrize("column", ["obsm/spatial", "obs/cell_id", "obs/leiden/codes"])
def test_table_columns_claiming_huge_shapes_are_refused_before_reading(xenium, tmp_path, column: str) -> None:
    """A canvas reads positions, cell IDs and colors: a claim of 10^12 cells is refused by name, not allocated."""
    datasets = Path(shutil.copytree(xenium.parent, tmp_path / "datasets", symlinks=True))
    assert edit_nodes(datasets, column, claims_10_12_rows)
    service = StackService(datasets / xenium.name)
    with pytest.raises(StackError, match="MAX_COLUMN_BYTES") as info:
        dispatch(service, "canvas", {"figure": FIGURE})
    assert repr(column.split("/")[1]) in str(info.value)


# ------------------------------------------------------------------ results and compare


def test_csv_headers_are_defused_like_cells(hostile_versions) -> None:
    service = StackService(hostile_versions[0])
    answer = dispatch(service, "result_csv", {"result": "res_hostile"}).data
    header = next(csv.reader(io.StringIO(answer["csv"])))
    assert header[-4:] == ['\'=HYPERLINK("x")', "'+sum", "'@x", "ok"]


def test_a_result_claiming_a_huge_size_is_refused_before_reading(hostile_versions, tmp_path) -> None:
    folder = Path(shutil.copytree(hostile_versions[0].parent, tmp_path / "datasets")) / "hostile-3333"
    edited = edit_nodes(folder.parent, "res_big/table/value", lambda meta: meta.update(shape=[10**12]))
    assert edited, "the result's column is written in the version's overlay"
    service = StackService(folder)
    with pytest.raises(StackError, match="MAX_RESULT_BYTES"):
        dispatch(service, "result_page", {"result": "res_big"})
    with pytest.raises(StackError, match="MAX_RESULT_BYTES"):
        dispatch(service, "result_csv", {"result": "res_big"})
    # the other results of the version still read
    assert dispatch(service, "result_page", {"result": "res_hostile"}).data["total"] == 2


def test_compare_of_many_distinct_values_is_cut_and_says_so(hostile_versions, monkeypatch) -> None:
    """The stack has 26 cells: MAX_COUNTS is lowered to 10 so that the cut happens."""
    from sds_jupyter.service import celldiff as compare

    monkeypatch.setattr(compare, "MAX_COUNTS", 10)
    service = StackService(hostile_versions[1])
    comparison = json.loads(json.dumps(dispatch(service, "compare", {"a": 3, "b": 4}).data, allow_nan=False))
    by_column = {change["column"]: change for change in comparison["obs"]["changed"]}
    names = by_column["name"]
    n_obs = names["n_changed"]
    assert n_obs > 10 and len(names["counts_a"]) == 10
    assert sum(names["counts_a"].values()) + names["counts_other_a"] == n_obs
    assert len(names["transitions"]) <= compare.MAX_TRANSITIONS and names["n_transitions"] == n_obs
    extreme = by_column["extreme"]
    edges = extreme["delta_histogram"]["edges"]
    assert edges and all(np.isfinite(edges)) and sum(extreme["delta_histogram"]["counts"]) == n_obs


def test_histogram_of_extreme_values_is_finite() -> None:
    from sds_jupyter.service.celldiff import histogram

    for values in (np.array([-1.7e308, 1.7e308, 0.0]), np.array([1e300, np.nextafter(1e300, 2e300)])):
        binned = histogram(values)
        assert all(np.isfinite(binned["edges"])) and sum(binned["counts"]) == len(values)


# ------------------------------------------------------------------ caches


def test_a_table_reader_keeps_its_columns_within_the_bound(studio_stack, monkeypatch) -> None:
    """Columns read one after another: past the byte bound the least recently used are dropped, values stay right."""
    from sds_jupyter.studio import tableview as tables

    monkeypatch.setattr(tables, "MAX_CACHED_COLUMN_BYTES", 1)  # the newest entry is always kept
    view = StackService(studio_stack.v2).table_view(1)
    whole = StackService(studio_stack.v2).table_view(1).obs  # another reader, obs read whole
    names = view.obs_columns[:3]
    assert len(names) == 3
    for name in [*names, names[0]]:  # the first is read again after being dropped
        assert view.obs_column(name).tolist() == whole[name].tolist()
    assert list(view._obs_columns) == [names[0]] and "obs" not in view.__dict__


def test_the_bounded_cache_evicts_the_least_recently_used() -> None:
    from sds_jupyter.limits import BoundedCache

    cache: BoundedCache[str, bytes] = BoundedCache(3, max_bytes=10, size=len)
    for key in "abc":
        cache.get(key, lambda: b"xx")
    cache.get("a", lambda: b"never made")  # a is used again: b is now the oldest
    cache.get("d", lambda: b"xx")
    assert list(cache) == ["c", "a", "d"]
    cache.get("e", lambda: b"x" * 9)  # 2 + 2 + 2 + 9 > 10: the oldest go until it fits
    assert list(cache) == ["e"] and cache.bytes == 9


def test_services_of_other_branches_are_evicted(studio_stack, tmp_path) -> None:
    """Comparing against four branches keeps at most MAX_CACHED_BRANCHES of their services, and answers stay right."""
    from sds_jupyter.limits import MAX_CACHED_BRANCHES
    from sds_jupyter.stack.write.writer import VersionWriter

    datasets = Path(shutil.copytree(studio_stack.datasets, tmp_path / "datasets", symlinks=True))
    branches = [f"branch-{digit}{digit}{digit}{digit}" for digit in "3456"]
    for number, name in enumerate(branches):
        writer = VersionWriter(Stack.resolve(datasets / "studio-1111"))
        writer.set_obs("table", "region_class", pd.Categorical([f"label-{number}"] * writer.n_obs("table")))
        writer.commit(datasets / name, title=name, message="a branch", created_by="c@example.org")
    service = StackService(datasets / "edit-2222")

    def labels_of(branch: str) -> set[str]:
        data = dispatch(service, "compare", {"a": branch, "b": 2}).data
        change = next(c for c in data["obs"]["changed"] if c["column"] == "region_class")
        return set(change["counts_a"])

    assert [labels_of(name) for name in branches] == [{f"label-{n}"} for n in range(4)]
    assert 0 < len(service.session.branches) <= MAX_CACHED_BRANCHES < len(branches)
    assert labels_of(branches[0]) == {"label-0"}  # reopened after its eviction


def test_remembered_folder_scans_stay_within_their_bytes(studio_stack, tmp_path) -> None:
    """Two datasets folders scanned in turn with room for one folder's manifests: only the last is kept."""
    from sds_jupyter.limits import SCANS_CACHE_BYTES
    from sds_jupyter.stack import listing as tree
    from sds_jupyter.stack.caches import StackCaches

    assert StackCaches().scans.max_bytes == SCANS_CACHE_BYTES  # the bound's one home
    first = Path(shutil.copytree(studio_stack.datasets, tmp_path / "first", symlinks=True))
    second = Path(shutil.copytree(studio_stack.datasets, tmp_path / "second", symlinks=True))
    one_folder = sum((first / name / "layer.json").stat().st_size for name in ("studio-1111", "edit-2222"))
    caches = StackCaches(scan_bytes=one_folder + 1)
    assert len(tree.scan_versions(first, caches=caches).versions) == 2
    assert len(tree.scan_versions(second, caches=caches).versions) == 2
    kept = [folder for folder, _ in caches.scans.kept()]
    assert str(second.resolve()) in kept and str(first.resolve()) not in kept
    assert caches.scans.bytes == one_folder
