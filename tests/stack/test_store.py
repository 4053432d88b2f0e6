"""The read-only stack store: the reader's rules, byte ranges, listings, zarr and anndata."""

from __future__ import annotations

import asyncio
import json
import os
import zipfile
from pathlib import Path

import anndata
import numpy as np
import pytest
import zarr
from kit.backends import Backend
from kit.stackkit import ROOT_DOC, write_base, write_version
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype

from sds_jupyter import Stack, StackStore, open_anndata, open_stack
from sds_jupyter.errors import BaseStoreError, UnsafePathError
from sds_jupyter.stack.store import BASE, HIDDEN

READ_ONLY = "store was opened in read-only mode and does not support writing"


def run(coro):  # noqa: ANN001, ANN201 - a tiny sync bridge for the async Store API
    return asyncio.run(coro)


def get(store: StackStore, key: str, byte_range=None) -> bytes | None:  # noqa: ANN001
    buffer = run(store.get(key, default_buffer_prototype(), byte_range))
    return None if buffer is None else buffer.to_bytes()


async def _collect(iterator):  # noqa: ANN001, ANN202
    return [item async for item in iterator]


def listing(store: StackStore, kind: str, prefix: str = "") -> list[str]:
    if kind == "list":
        return sorted(run(_collect(store.list())))
    method = getattr(store, kind)
    return sorted(run(_collect(method(prefix))))


@pytest.fixture
def layered(backend: Backend) -> StackStore:
    """base -> v1 -> v2 -> v3, exercising every rule of the reader, on every backend."""
    datasets = backend.datasets
    base = backend.base(
        "base",
        {
            "t/obs/old/zarr.json": b"old-meta",
            "t/obs/old/c/0": b"old-chunk",
            "t/obs/keep/c/0": b"keep",
            "t/obs/col/c/0": b"base-col",
            "t/obs/col/c/1": b"base-col-1",
            "a/b/x": b"ab",
            "a/bc/y": b"abc",
            "single": b"base-single",
            "gone": b"base-gone",
        },
    )
    v1 = write_version(
        datasets,
        "v1",
        base,
        {"single": b"v1-single", "v1only": b"v1", "t/obs/col/c/0": b"v1-col"},
        deleted=["gone"],
    )
    v2 = write_version(
        datasets,
        "v2",
        v1,
        # deletes a column and writes a new one of the same name in the same version
        {"t/obs/col/c/0": b"v2-col"},
        deleted=["t/obs/col/", "a/b/", "single", "t/obs/old/"],
    )
    write_version(datasets, "v3", v2, {"gone": b"v3-gone", "t/obs/old/zarr.json": b"re-added"})
    return backend.open("v3")


def test_the_top_most_version_answers(layered: StackStore) -> None:
    assert get(layered, "v1only") == b"v1"
    assert get(layered, "t/obs/keep/c/0") == b"keep"


def test_a_key_whiteout_hides_the_layers_below(layered: StackStore) -> None:
    assert get(layered, "single") is None
    assert not run(layered.exists("single"))


def test_a_whiteout_does_not_hide_its_own_versions_files(layered: StackStore) -> None:
    assert get(layered, "t/obs/col/c/0") == b"v2-col"
    assert get(layered, "t/obs/col/c/1") is None  # the old column's other chunk stays hidden


def test_a_node_whiteout_hides_everything_under_it_but_not_its_siblings(layered: StackStore) -> None:
    assert get(layered, "a/b/x") is None
    assert get(layered, "a/bc/y") == b"abc"
    assert listing(layered, "list_dir", "a") == ["bc"]


def test_a_key_re_added_above_a_lower_whiteout_shows_again(layered: StackStore) -> None:
    assert get(layered, "gone") == b"v3-gone"
    assert get(layered, "t/obs/old/zarr.json") == b"re-added"
    assert get(layered, "t/obs/old/c/0") is None


def test_locate_answers_from_one_index(layered: StackStore) -> None:
    index = layered.index
    assert index.locate("gone") == 0
    assert index.locate("t/obs/col/c/0") == 1
    assert index.locate("t/obs/col/c/1") == HIDDEN
    assert index.locate("t/obs/keep/c/0") == BASE


def test_listings_merge_layers_and_honour_whiteouts(layered: StackStore) -> None:
    everything = listing(layered, "list")
    assert everything == sorted(
        ["zarr.json", "t/obs/keep/c/0", "t/obs/col/c/0", "t/obs/old/zarr.json", "a/bc/y", "gone", "v1only"]
    )
    assert listing(layered, "list_prefix", "t/obs/") == ["t/obs/col/c/0", "t/obs/keep/c/0", "t/obs/old/zarr.json"]
    assert listing(layered, "list_dir", "") == ["a", "gone", "t", "v1only", "zarr.json"]
    assert listing(layered, "list_dir", "t/obs") == ["col", "keep", "old"]
    assert listing(layered, "list_dir", "t/obs/") == ["col", "keep", "old"]
    assert listing(layered, "list_dir", "t/obs/col/c") == ["0"]
    assert listing(layered, "list_dir", "a/b") == []


def test_list_dir_drops_a_folder_whose_every_key_is_whited_out(backend: Backend) -> None:
    base = backend.base("base", {"p/q/1": b"1", "p/r": b"2"})
    write_version(backend.datasets, "v1", base, {}, deleted=["p/q/1"])
    store = backend.open("v1")
    assert listing(store, "list_dir", "p") == ["r"]


def test_byte_ranges_on_overlays_and_bases(layered: StackStore) -> None:
    for key, data in (("v1only", b"v1"), ("a/bc/y", b"abc"), ("t/obs/col/c/0", b"v2-col")):
        assert get(layered, key, RangeByteRequest(1, 3)) == data[1:3]
        assert get(layered, key, OffsetByteRequest(1)) == data[1:]
        assert get(layered, key, SuffixByteRequest(2)) == data[-2:]
        assert get(layered, key, SuffixByteRequest(99)) == data


def test_partial_values_and_sizes(layered: StackStore) -> None:
    values = run(
        layered.get_partial_values(
            default_buffer_prototype(), [("a/bc/y", RangeByteRequest(0, 2)), ("single", None), ("gone", None)]
        )
    )
    assert [v.to_bytes() if v else None for v in values] == [b"ab", None, b"v3-gone"]
    assert run(layered.getsize("gone")) == len(b"v3-gone")
    assert run(layered.getsize("a/bc/y")) == 3
    with pytest.raises(FileNotFoundError):
        run(layered.getsize("single"))


def test_every_read_that_touches_storage_runs_off_the_event_loop(layered: StackStore) -> None:
    """exists, getsize and the listings may each be a request: none may block zarr's loop."""
    on_loop: dict[str, bool] = {}

    def spy(name: str) -> None:
        original = getattr(layered, name)

        def wrapped(*args: object) -> object:
            try:
                asyncio.get_running_loop()
                on_loop[name] = True
            except RuntimeError:
                on_loop.setdefault(name, False)
            return original(*args)

        setattr(layered, name, wrapped)

    for name in ("read_raw", "exists_raw", "size_raw", "keys_raw", "children_raw"):
        spy(name)
    assert get(layered, "gone") == b"v3-gone"
    assert run(layered.exists("gone")) and run(layered.getsize("gone")) == len(b"v3-gone")
    assert "gone" in listing(layered, "list") and listing(layered, "list_prefix", "t/obs/")
    assert "t" in listing(layered, "list_dir", "")
    assert on_loop == dict.fromkeys(("read_raw", "exists_raw", "size_raw", "keys_raw", "children_raw"), False)


def test_every_write_raises_zarrs_read_only_error(layered: StackStore) -> None:
    buffer = default_buffer_prototype().buffer.from_bytes(b"x")
    for attempt in (
        layered.set("k", buffer),
        layered.set_if_not_exists("k", buffer),
        layered.delete("gone"),
        layered.delete_dir("t"),
    ):
        with pytest.raises(ValueError, match=READ_ONLY):
            run(attempt)
    assert layered.read_only and not layered.supports_writes and not layered.supports_deletes
    with pytest.raises(ValueError, match="read-only"):
        layered.with_read_only(False)


def test_a_listed_file_missing_from_the_overlay_is_an_error(backend: Backend) -> None:
    base = backend.base("base", {})
    write_version(backend.datasets, "v1", base, {"k": b"1"})
    os.remove(backend.datasets / "v1" / "overlay" / "k")
    with pytest.raises(BaseStoreError, match="re-download"):
        get(backend.open("v1"), "k")


def test_an_overlay_object_linking_outside_is_never_read(datasets: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    base = write_base(datasets, "base", {})
    write_version(datasets, "v1", base, {"k": b"1"})
    target = datasets / "v1" / "overlay" / "k"
    target.unlink()
    os.symlink(secret, target)
    with pytest.raises(UnsafePathError, match="outside"):
        get(open_stack(datasets / "v1"), "k")


def test_a_base_object_linking_outside_is_never_read(datasets: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    write_base(datasets, "base", {})
    os.symlink(secret, datasets / "base" / "store.zarr" / "leak")
    write_version(datasets, "v1", "cirro:::dataset:base/store.zarr", {"k": b"1"})
    store = open_stack(datasets / "v1")
    with pytest.raises(UnsafePathError):
        get(store, "leak")
    assert "leak" not in listing(store, "list")


@pytest.fixture
def zipped(datasets: Path) -> StackStore:
    (datasets / "base").mkdir()
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w") as zf:
        zf.writestr("zarr.json", ROOT_DOC)
        zf.writestr("g/", b"")  # a directory entry: not a key
        zf.writestr("g/stored", b"0123456789", compress_type=zipfile.ZIP_STORED)
        zf.writestr("g/deflated", b"abcdefghij" * 10, compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr("h/x", b"hx")
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"h/y": b"hy"}, deleted=["h/x"])
    return open_stack(datasets / "v1")


def test_a_zip_base_is_read_in_place(zipped: StackStore) -> None:
    assert get(zipped, "g/stored") == b"0123456789"
    assert get(zipped, "g/stored", RangeByteRequest(2, 5)) == b"234"
    assert get(zipped, "g/stored", SuffixByteRequest(3)) == b"789"
    assert get(zipped, "g/deflated", OffsetByteRequest(95)) == b"fghij"
    assert get(zipped, "g/") is None and get(zipped, "g") is None
    assert listing(zipped, "list") == ["g/deflated", "g/stored", "h/y", "zarr.json"]
    assert listing(zipped, "list_dir", "") == ["g", "h", "zarr.json"]
    assert listing(zipped, "list_dir", "h") == ["y"]
    assert run(zipped.getsize("g/deflated")) == 100


def test_a_zip_holding_the_store_folder_is_read_from_that_folder(datasets: Path) -> None:
    (datasets / "base").mkdir()
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w") as zf:
        zf.writestr("s.zarr/zarr.json", ROOT_DOC)
        zf.writestr("s.zarr/k", b"k")
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"j": b"j"})
    store = open_stack(datasets / "v1")
    assert get(store, "k") == b"k"


# -- real zarr, anndata and spatialdata stores ---------------------------------------------


def test_zarr_and_anndata_read_the_demo_stack(demo_top: Path) -> None:
    store = open_stack(demo_top)
    root = zarr.open_group(store, mode="r")
    assert sorted(root.group_keys()) == ["images", "labels", "points", "shapes", "tables"]
    adata = anndata.read_zarr(root["tables/table"])
    assert list(adata.obs.columns) == ["instance_id", "region", "clusters", "regions"]
    assert list(adata.obs["regions"].cat.categories) == ["left", "right"]
    assert adata.obsm["spatial"].shape == (adata.n_obs, 2)
    studio = adata.uns["spatial_data_studio"]
    assert sorted(studio["figures"]) == ["fig-clusters", "fig-nhood", "fig-regions"]
    assert json.loads(studio["figures"]["fig-nhood"])["kind"] == "chart"
    assert sorted(studio["results"]["nhood-enrichment"]) == ["cells", "meta", "table"]


def test_each_version_of_the_demo_reads_as_it_was(demo_top: Path) -> None:
    stack = Stack.resolve(demo_top)
    columns = {d: list(open_anndata(stack.at(d)).obs.columns) for d in range(stack.depth + 1)}
    assert columns[0] == ["instance_id", "region"]
    assert columns[1] == ["instance_id", "region", "regions"]
    assert columns[2] == ["instance_id", "region", "regions", "clusters"]
    assert columns[3] == ["instance_id", "region", "clusters", "regions"]
    first, third = open_anndata(stack.at(1)), open_anndata(stack.at(3))
    assert set(first.obs["regions"].cat.categories) == {"tumor", "margin", "stroma"}
    assert set(third.obs["regions"].cat.categories) == {"left", "right"}


def test_the_lazy_reader_works_over_the_stack(demo_top: Path) -> None:
    pytest.importorskip("xarray")
    from anndata.experimental import read_lazy  # noqa: F401 - skip if this anndata lacks it

    lazy = open_anndata(demo_top, lazy=True)
    eager = open_anndata(demo_top)
    assert lazy.shape == eager.shape
    assert type(lazy.X).__module__.startswith("dask")
    computed = lazy.X.compute()
    dense = computed.toarray() if hasattr(computed, "toarray") else np.asarray(computed)
    expected = eager.X.toarray() if hasattr(eager.X, "toarray") else np.asarray(eager.X)
    np.testing.assert_allclose(dense, expected)
    assert list(lazy.obs["regions"].to_numpy()) == list(eager.obs["regions"])


def test_a_missing_table_is_refused_with_the_tables_there(demo_top: Path) -> None:
    with pytest.raises(ValueError, match="no table 'nope'; its tables are: table"):
        open_anndata(demo_top, table="nope")


def test_a_zarr_v2_base_with_a_version_on_it(datasets: Path) -> None:
    """Older stores are Zarr v2: the reader composes them the same way."""
    adata = anndata.AnnData(X=np.arange(12, dtype="float32").reshape(4, 3))
    adata.obs["kind"] = ["a", "b", "a", "b"]
    store_path = datasets / "base" / "old.zarr"
    store_path.parent.mkdir()
    root = zarr.open_group(store_path, mode="w", zarr_format=2)
    tables = root.create_group("tables")
    anndata.io.write_elem(tables, "table", adata)
    zarr.consolidate_metadata(store_path)
    write_version(
        datasets,
        "v1",
        "cirro:::dataset:base/old.zarr",
        {"tables/table/obs/.zattrs": (store_path / "tables/table/obs/.zattrs").read_bytes()},
    )
    stack = Stack.resolve(datasets / "v1")
    assert stack.base.zarr_format == 2
    read = open_anndata(stack)
    np.testing.assert_array_equal(read.X, adata.X)
    assert list(read.obs["kind"]) == ["a", "b", "a", "b"]
