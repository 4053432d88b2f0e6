"""Walking parent references down to the base: layouts, folder maps and refusals."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from kit.backends import Backend
from kit.stackkit import ROOT_DOC, chain, write_base, write_version

from sds_jupyter import Stack, StackStore
from sds_jupyter.errors import (
    BaseStoreError,
    ManifestError,
    MissingDatasetError,
    ReferenceError_,
    StackCycleError,
    StackError,
    StackTooDeepError,
    UnsafePathError,
)
from sds_jupyter.stack import MAX_DEPTH


def test_a_two_version_stack_resolves_top_first(backend: Backend) -> None:
    datasets = backend.datasets
    base = backend.base("base-1", {"a/zarr.json": ROOT_DOC})
    v1 = write_version(datasets, "v1", base, {"b": b"1"}, manifest={"depth": 1, "message": "m1"})
    write_version(datasets, "v2", v1, {"c": b"2"}, manifest={"depth": 2, "created_by": "me"})
    top = backend.at("v2")
    stack = Stack.resolve(top, storage_options=backend.storage_options)
    assert [v.dataset_id for v in stack.versions] == ["v2", "v1"]
    assert [v.depth for v in stack.versions] == [2, 1]
    assert stack.versions[0].manifest.created_by == "me"
    assert stack.versions[1].manifest.message == "m1"
    assert stack.base.dataset_id == "base-1"
    in_datasets = str(top).rsplit("/", 1)[0] if backend.remote else str(datasets.resolve())
    assert str(stack.base.path) == f"{in_datasets}/base-1/{backend.base_name()}"
    assert (stack.base.kind, stack.base.zarr_format) == ("zip" if backend.zipped else "folder", 3)
    assert stack.top is stack.versions[0]
    if not backend.remote:
        assert stack.base.path == (datasets / "base-1" / backend.base_name()).resolve()


def test_layer_json_under_data_and_the_manifest_path_itself(backend: Backend) -> None:
    datasets = backend.datasets
    base = backend.base("base", {"x": b"base-x"})
    v1 = write_version(datasets, "v1", base, {"k": b"1"}, under_data=True)
    write_version(datasets, "v2", v1, {"j": b"2"}, under_data=True)
    for path in ("v2", "v2/data", "v2/data/layer.json"):
        stack = backend.resolve(path)
        assert [v.dataset_id for v in stack.versions] == ["v2", "v1"]
        assert str(stack.versions[1].data_dir).endswith("/v1/data")
        assert str(stack.versions[0].overlay_dir).endswith("/v2/data/overlay")
        if not backend.remote:
            assert stack.versions[1].data_dir == (datasets / "v1" / "data").resolve()
    store = StackStore(stack)
    assert [store.read_raw(k) for k in ("x", "k", "j")] == [b"base-x", b"1", b"2"]


def test_a_base_inside_a_data_folder(datasets: Path) -> None:
    (datasets / "b" / "data" / "s.zarr").mkdir(parents=True)
    (datasets / "b" / "data" / "s.zarr" / "zarr.json").write_bytes(ROOT_DOC)
    write_version(datasets, "v1", "cirro:::dataset:b/s.zarr", {"k": b"1"})
    assert Stack.resolve(datasets / "v1").base.path == (datasets / "b" / "data" / "s.zarr").resolve()


def test_a_store_alone_is_a_stack_of_no_versions(backend: Backend) -> None:
    backend.base("base", {"k": b"base-k"})
    stack = backend.resolve(f"base/{backend.base_name()}")
    assert stack.depth == 0 and stack.top is None and stack.base.dataset_id == "base"
    assert stack.base.kind == ("zip" if backend.zipped else "folder")
    assert StackStore(stack).read_raw("k") == b"base-k"


def test_at_selects_a_lower_version(datasets: Path) -> None:
    top = chain(datasets, 3, write_base(datasets, "base", {}))
    stack = Stack.resolve(top)
    assert stack.at(1).top.dataset_id == "v1"
    assert stack.at("v2").depth == 2
    assert stack.at("version v3").depth == 3
    assert stack.at(0).versions == () and stack.at("base").depth == 0
    with pytest.raises(StackError, match="depth 9"):
        stack.at(9)
    with pytest.raises(StackError, match="no version 'nope'"):
        stack.at("nope")


def test_the_folder_map_names_folders_of_parents(backend: Backend) -> None:
    datasets = backend.datasets
    base = backend.base("0d13", {}, name="p.zarr")
    os.rename(datasets / "0d13", datasets / "Pancreas results")
    write_version(datasets, "5f1c", base, {"k": b"1"}, folder_name="Tumor margin regions")
    folders = {"0d13": "Pancreas results", "5f1c": "Tumor margin regions"}
    top = backend.at("Tumor margin regions")
    stack = Stack.resolve(top, folders=folders, storage_options=backend.storage_options)
    assert stack.top.dataset_id == "5f1c"
    assert stack.base.path.name == backend.base_name("p.zarr") and stack.base.dataset_id == "0d13"
    assert str(stack.base.path).endswith(f"/Pancreas results/{backend.base_name('p.zarr')}")
    stack = Stack.resolve(top, folders=json.dumps(folders), storage_options=backend.storage_options)
    assert stack.base.dataset_id == "0d13"
    with pytest.raises(MissingDatasetError):
        Stack.resolve(top, storage_options=backend.storage_options)


def test_the_folder_map_comes_from_the_environment(datasets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_base(datasets, "0d13", {})
    os.rename(datasets / "0d13", datasets / "Named base")
    write_version(datasets, "v1", "cirro:::dataset:0d13/store.zarr", {"k": b"1"})
    with pytest.raises(MissingDatasetError):
        Stack.resolve(datasets / "v1")
    monkeypatch.setenv("SDS_CIRRO_DATASETS", json.dumps({"0d13": "Named base"}))
    assert Stack.resolve(datasets / "v1").base.dataset_id == "0d13"


def test_a_missing_parent_names_its_dataset_id(backend: Backend) -> None:
    write_version(backend.datasets, "v2", "cirro:::dataset:5f1c-0000-missing/layer.json", {"k": b"1"})
    with pytest.raises(MissingDatasetError, match="5f1c-0000-missing") as caught:
        backend.resolve("v2")
    assert caught.value.dataset_id == "5f1c-0000-missing"
    assert isinstance(caught.value, ValueError)


def test_a_missing_path_inside_a_present_dataset(backend: Backend) -> None:
    backend.base("base", {})
    write_version(backend.datasets, "v1", "cirro:::dataset:base/other.zarr", {"k": b"1"})
    with pytest.raises(ReferenceError_, match="has no 'other.zarr'"):
        backend.resolve("v1")


def test_a_cycle_is_refused(backend: Backend) -> None:
    write_version(backend.datasets, "a", "cirro:::dataset:b/layer.json", {"k": b"1"})
    write_version(backend.datasets, "b", "cirro:::dataset:a/layer.json", {"k": b"2"})
    with pytest.raises(StackCycleError, match="loop"):
        backend.resolve("a")


def test_a_version_that_is_its_own_parent_is_a_cycle(backend: Backend) -> None:
    write_version(backend.datasets, "a", "cirro:::dataset:a/layer.json", {"k": b"1"})
    with pytest.raises(StackCycleError):
        backend.resolve("a")


def test_exactly_the_maximum_depth_resolves_and_one_more_is_refused(datasets: Path) -> None:
    base = write_base(datasets, "base", {})
    top = chain(datasets, MAX_DEPTH, base)
    assert Stack.resolve(top).depth == MAX_DEPTH == 500
    write_version(datasets, "over", f"cirro:::dataset:v{MAX_DEPTH}/layer.json", {"k": b"1"})
    with pytest.raises(StackTooDeepError, match="500"):
        Stack.resolve(datasets / "over")


def test_a_dataset_folder_linking_outside_the_datasets_folder_is_refused(datasets: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_base(outside, "base", {})
    os.symlink(outside / "base", datasets / "base")
    write_version(datasets, "v1", "cirro:::dataset:base/store.zarr", {"k": b"1"})
    with pytest.raises(UnsafePathError, match="outside"):
        Stack.resolve(datasets / "v1")


def test_a_store_path_linking_out_of_its_dataset_is_refused(datasets: Path, tmp_path: Path) -> None:
    write_base(tmp_path / "elsewhere", "x", {})
    (datasets / "base").mkdir()
    os.symlink(tmp_path / "elsewhere" / "x" / "store.zarr", datasets / "base" / "store.zarr")
    write_version(datasets, "v1", "cirro:::dataset:base/store.zarr", {"k": b"1"})
    with pytest.raises(UnsafePathError):
        Stack.resolve(datasets / "v1")


def test_an_overlay_folder_linking_outside_its_version_is_refused(datasets: Path, tmp_path: Path) -> None:
    base = write_base(datasets, "base", {})
    (tmp_path / "secret").mkdir()
    write_version(datasets, "v1", base, {}, overlay="ov")
    os.symlink(tmp_path / "secret", datasets / "v1" / "ov")
    with pytest.raises(UnsafePathError, match="overlay"):
        Stack.resolve(datasets / "v1")


@pytest.mark.parametrize("folder", ["../outside", "/etc", "a/../../x", ""])
def test_folder_map_entries_must_be_safe_paths(datasets: Path, folder: str) -> None:
    write_version(datasets, "v1", "cirro:::dataset:base/store.zarr", {"k": b"1"})
    with pytest.raises(UnsafePathError):
        Stack.resolve(datasets / "v1", folders={"base": folder})


def test_a_folder_map_entry_linking_outside_is_refused(datasets: Path, tmp_path: Path) -> None:
    write_base(tmp_path / "out", "base", {})
    os.symlink(tmp_path / "out" / "base", datasets / "mapped")
    write_version(datasets, "v1", "cirro:::dataset:base/store.zarr", {"k": b"1"})
    with pytest.raises(UnsafePathError, match="outside"):
        Stack.resolve(datasets / "v1", folders={"base": "mapped"})


def test_a_zip_base_resolves(datasets: Path) -> None:
    (datasets / "base").mkdir()
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w") as zf:
        zf.writestr("zarr.json", ROOT_DOC)
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"k": b"1"})
    stack = Stack.resolve(datasets / "v1")
    assert (stack.base.kind, stack.base.zarr_format) == ("zip", 3)


@pytest.mark.parametrize("member", ["../evil", "/abs", "a//b", "a\\b", "./x"])
def test_a_zip_base_with_unsafe_member_names_is_refused(datasets: Path, member: str) -> None:
    (datasets / "base").mkdir()
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w") as zf:
        zf.writestr("zarr.json", ROOT_DOC)
        zf.writestr(member, b"x")
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"k": b"1"})
    with pytest.raises(UnsafePathError, match="zip member"):
        Stack.resolve(datasets / "v1")


def test_a_base_that_is_not_a_store_is_refused(datasets: Path) -> None:
    (datasets / "base" / "notes").mkdir(parents=True)
    write_version(datasets, "v1", "cirro:::dataset:base/notes", {"k": b"1"})
    with pytest.raises(BaseStoreError, match="not a Zarr store"):
        Stack.resolve(datasets / "v1")
    (datasets / "base" / "file.zarr.zip").write_bytes(b"not a zip")
    write_version(datasets, "v2", "cirro:::dataset:base/file.zarr.zip", {"k": b"1"})
    with pytest.raises(BaseStoreError, match="zip"):
        Stack.resolve(datasets / "v2")


def test_a_parent_with_a_bad_manifest_is_refused_with_its_path(backend: Backend) -> None:
    base = backend.base("base", {})
    v1 = write_version(backend.datasets, "v1", base, {"k": b"1"}, manifest={"format_version": 99})
    write_version(backend.datasets, "v2", v1, {"j": b"1"})
    with pytest.raises(ManifestError, match=r"v1.*format_version 99"):
        backend.resolve("v2")


def test_a_folder_that_is_neither_version_nor_store(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(StackError, match="no layer.json"):
        Stack.resolve(tmp_path / "plain")
    with pytest.raises(StackError, match="does not exist"):
        Stack.resolve(tmp_path / "missing")
