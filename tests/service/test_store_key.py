"""The store_key request: a version's raw store objects, for zarr readers in the browser, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zarr

from sds_jupyter.service import StackService
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.requests import dispatch
from sds_jupyter.stack import Stack, StackStore


@pytest.fixture(scope="module")
def service(demo_top: Path) -> StackService:
    return StackService(demo_top)


def test_answers_what_zarr_reads_at_that_version(service: StackService, demo_top: Path) -> None:
    reply = dispatch(service, "store_key", {"version": "2", "key": "tables/table/obs/zarr.json"})
    assert reply.data["found"] and reply.data["size"] == len(bytes(reply.buffers[0]))
    group = zarr.open_group(StackStore(Stack.resolve(demo_top).at(2)), mode="r", path="tables/table/obs")
    assert json.loads(bytes(reply.buffers[0]))["attributes"] == group.attrs.asdict()


def test_a_key_a_version_added_is_absent_below_it(service: StackService) -> None:
    key = "tables/table/obs/regions/zarr.json"  # the first version adds the regions column
    assert dispatch(service, "store_key", {"version": 1, "key": key}).data["found"]
    below = dispatch(service, "store_key", {"version": 0, "key": key})
    assert below.data == {"key": key, "found": False, "size": 0} and below.buffers == []


@pytest.mark.parametrize(
    "key",
    [
        "",
        "../layer.json",
        "/etc/passwd",
        "tables/../../layer.json",
        "tables//x",
        "a\\b",
        "./zarr.json",
        "x" * 2000,
        "é",
    ],
)
def test_anything_but_a_plain_relative_key_is_refused_in_one_line(service: StackService, key: str) -> None:
    with pytest.raises(RequestError) as refused:
        dispatch(service, "store_key", {"version": 1, "key": key})
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 200


def test_the_manifest_beside_the_store_is_not_a_key(service: StackService) -> None:
    # layer.json sits in the version's folder, not in its store: the store does not have it
    assert not dispatch(service, "store_key", {"version": 1, "key": "layer.json"}).data["found"]


def test_an_object_over_the_bound_is_refused_by_its_size_before_it_is_read(tmp_path: Path, demo_top: Path) -> None:
    """Issue 38 item 2: a 300 MB object (a sparse file: no disk used) is refused without being held."""
    import shutil
    import tracemalloc

    datasets = Path(shutil.copytree(demo_top.parent, tmp_path / "datasets", symlinks=True))
    base = Path(str(Stack.resolve(datasets / demo_top.name).base.path))
    with (base / "huge.bin").open("wb") as huge:
        huge.truncate(300 * 1024 * 1024)
    service = StackService(datasets / demo_top.name)
    tracemalloc.start()
    try:
        with pytest.raises(RequestError, match=r"'huge.bin' is 314,572,800 bytes; .*\(MAX_STORE_OBJECT\)"):
            dispatch(service, "store_key", {"version": 1, "key": "huge.bin"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"the refusal held {peak:,} bytes"
