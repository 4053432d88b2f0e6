"""flatten: one ordinary store, links to a folder base, atomic, and confined."""

from __future__ import annotations

import os
import warnings
import zipfile
from pathlib import Path

import pytest
from kit.stackkit import ROOT_DOC, write_base, write_version

from sds_jupyter import Stack, open_spatialdata
from sds_jupyter.errors import UnsafePathError, WriteRefusedError
from sds_jupyter.stack.flatcopy import flatten
from sds_jupyter.stack.store import StackStore


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_flat_store_holds_exactly_what_the_stack_reads(demo_top: Path, tmp_path: Path) -> None:
    out = flatten(demo_top, tmp_path / "flat.zarr")
    store = StackStore(Stack.resolve(demo_top))
    expected = {key: store.read_raw(key) for key in store.keys_raw("")}
    assert files_of(out) == expected


def test_base_data_is_linked_and_metadata_and_versions_are_copied(demo_top: Path, tmp_path: Path) -> None:
    out = flatten(demo_top, tmp_path / "flat.zarr")
    stack = Stack.resolve(demo_top)
    chunk = out / "images/blobs_image/s0/c/0/0/0"
    assert chunk.is_symlink() and Path(os.readlink(chunk)) == stack.base.path / "images/blobs_image/s0/c/0/0/0"
    assert not (out / "images/blobs_image/zarr.json").is_symlink()
    assert not (out / "zarr.json").is_symlink()
    assert not (out / "tables/table/obs/regions/codes/c/0").is_symlink()


def test_copy_mode_stands_on_its_own(demo_top: Path, tmp_path: Path) -> None:
    out = flatten(demo_top, tmp_path / "copy.zarr", link=False)
    assert not any(p.is_symlink() for p in out.rglob("*"))
    linked = flatten(demo_top, tmp_path / "linked.zarr")
    assert files_of(out) == files_of(linked)


def test_spatialdata_reads_the_flat_store_and_open_spatialdata_caches_it(demo_top: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = open_spatialdata(demo_top, cache=tmp_path / "cache")
        copies = list((tmp_path / "cache").iterdir())
        second = open_spatialdata(demo_top, cache=tmp_path / "cache")
    assert len(copies) == 1 and list((tmp_path / "cache").iterdir()) == copies
    assert "regions" in first.tables["table"].obs and "blobs_image" in second.images


def test_in_a_workspace_open_spatialdata_copies_into_sds_work_dir(
    demo_top: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SDS_WORK_DIR", str(tmp_path / "work"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdata = open_spatialdata(demo_top)
    (copy,) = (tmp_path / "work" / ".sds-cache").iterdir()
    assert not any(p.is_symlink() for p in copy.rglob("*"))
    assert "regions" in sdata.tables["table"].obs


def test_a_zip_base_is_extracted(datasets: Path, tmp_path: Path) -> None:
    (datasets / "base").mkdir()
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w") as zf:
        zf.writestr("zarr.json", ROOT_DOC)
        zf.writestr("a/c/0", b"chunk")
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"b": b"v1"})
    out = flatten(datasets / "v1", tmp_path / "out")
    assert files_of(out) == {"zarr.json": ROOT_DOC, "a/c/0": b"chunk", "b": b"v1"}
    assert not any(p.is_symlink() for p in out.rglob("*"))


def test_an_existing_non_empty_output_is_refused(demo_top: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(WriteRefusedError, match="not an empty folder"):
        flatten(demo_top, out)
    assert files_of(out) == {"keep.txt": b"mine"}
    (tmp_path / "file").write_text("x")
    with pytest.raises(WriteRefusedError):
        flatten(demo_top, tmp_path / "file")


def test_an_empty_output_folder_is_used(demo_top: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert (flatten(demo_top, tmp_path / "empty") / "zarr.json").is_file()


def test_an_output_inside_the_stack_is_refused(demo_top: Path) -> None:
    stack = Stack.resolve(demo_top)
    for out in (demo_top / "flat", stack.base.path / "flat", stack.versions[-1].data_dir / "overlay" / "x"):
        with pytest.raises(WriteRefusedError, match="part of the stack"):
            flatten(demo_top, out)
        assert not out.exists()


def test_an_interrupted_flatten_leaves_nothing(demo_top: Path, tmp_path: Path) -> None:
    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        flatten(demo_top, tmp_path / "out", progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_an_overlay_object_linking_outside_stops_flatten(datasets: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("secret")
    base = write_base(datasets, "base", {})
    write_version(datasets, "v1", base, {"k": b"1"})
    (datasets / "v1" / "overlay" / "k").unlink()
    os.symlink(tmp_path / "secret", datasets / "v1" / "overlay" / "k")
    with pytest.raises(UnsafePathError, match="outside"):
        flatten(datasets / "v1", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_progress_is_reported(demo_top: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    flatten(demo_top, tmp_path / "out", progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 0


def test_writing_into_the_flat_store_never_reaches_the_base(demo_top: Path, tmp_path: Path) -> None:
    import zarr

    out = flatten(demo_top, tmp_path / "out")
    base_chunk = Stack.resolve(demo_top).base.path / "images/blobs_image/s0/c/0/0/0"
    before = base_chunk.read_bytes()
    array = zarr.open_array(zarr.storage.LocalStore(out), path="images/blobs_image/s0", mode="r+")
    array[...] = 0
    assert base_chunk.read_bytes() == before
