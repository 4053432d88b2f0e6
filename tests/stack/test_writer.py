"""Saving versions: each op, the indexes a writer keeps, the array layout, and refusals."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import anndata
import numpy as np
import pandas as pd
import pytest
import zarr

from sds_jupyter import Stack, open_anndata, open_stack
from sds_jupyter.errors import StackError, WriteRefusedError
from sds_jupyter.stack.flatcopy import flatten
from sds_jupyter.stack.inspect import check
from sds_jupyter.stack.manifest import read_manifest
from sds_jupyter.stack.write.writer import VersionWriter


@pytest.fixture
def demo_copy(demo_top: Path, tmp_path: Path) -> Path:
    """A private copy of the demo's datasets folder; returns its top version."""
    shutil.copytree(demo_top.parent, tmp_path / "datasets", symlinks=True)
    return tmp_path / "datasets" / demo_top.name


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_op_round_trips_through_anndata_spatialdata_and_check(demo_copy: Path, tmp_path: Path) -> None:
    stack = Stack.resolve(demo_copy)
    before = {v.dataset_id: snapshot(v.folder) for v in stack.versions}
    base_before = snapshot(stack.base.path)
    n = open_anndata(stack).n_obs
    writer = VersionWriter(stack)
    writer.set_obs("table", "score", np.linspace(0, 1, n))
    writer.set_obs("table", "flag", np.arange(n) % 2 == 0)
    writer.set_obs("table", "label", [f"cell-{i}" for i in range(n)])
    writer.set_obs("table", "clusters", pd.Categorical(["a"] * n))  # replaces an existing column
    writer.delete_obs("table", "regions")
    writer.set_obsm("table", "X_umap", np.ones((n, 2)))
    writer.set_uns("table", "params", {"resolution": 0.8, "method": "leiden"})
    writer.delete_uns("table", "notes")
    writer.set_figure("table", "fig-new", {"kind": "chart", "title": "New", "result": "r1"})
    writer.delete_figure("table", "fig-clusters")
    writer.set_result(
        "table", "r1", {"table": pd.DataFrame({"g": ["x", "y"], "v": [1.0, 2.0]})}, {"kind": "markers", "title": "R"}
    )
    top = writer.commit(title="All ops", message="every op once", created_by="tester@example.org")

    adata = open_anndata(top)
    assert list(adata.obs.columns) == ["instance_id", "region", "clusters", "score", "flag", "label"]
    np.testing.assert_allclose(adata.obs["score"], np.linspace(0, 1, n))
    assert adata.obs["flag"].dtype == bool and adata.obs["label"].iloc[3] == "cell-3"
    assert list(adata.obs["clusters"].cat.categories) == ["a"]
    assert adata.obsm["X_umap"].shape == (n, 2)
    assert adata.uns["params"] == {"resolution": 0.8, "method": "leiden"}
    assert "notes" not in adata.uns
    figures = adata.uns["spatial_data_studio"]["figures"]
    assert "fig-clusters" not in figures and json.loads(figures["fig-new"])["title"] == "New"
    result = adata.uns["spatial_data_studio"]["results"]["r1"]
    assert json.loads(result["meta"])["kind"] == "markers"
    assert list(result["table"]["g"]) == ["x", "y"]

    report = check(top)
    assert report.ok, report.problems
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import spatialdata

        sdata = spatialdata.read_zarr(flatten(top, tmp_path / "flat.zarr"))
    assert "score" in sdata.tables["table"].obs

    manifest = read_manifest(top / "layer.json")
    assert manifest.parent == f"cirro:::dataset:{demo_copy.name}/layer.json"
    assert manifest.base == stack.versions[0].manifest.base and manifest.depth == stack.depth + 1
    assert manifest.created_by == "tester@example.org" and manifest.app["id"] == "sds-jupyter"
    assert manifest.created_at.endswith("Z")
    assert [c["op"] for c in manifest.changes] == [
        "set-obs",
        "set-obs",
        "set-obs",
        "set-obs",
        "delete-obs",
        "set-obsm",
        "set-uns",
        "delete-uns",
        "set-figure",
        "delete-figure",
        "set-uns",
    ]
    assert {"op": "set-obs", "table": "table", "column": "label", "kind": "string"} in manifest.changes
    for entry in manifest.files:
        assert (top / "overlay" / entry.key).stat().st_size == entry.size
    assert "tables/table/obs/regions/" in manifest.deleted
    assert "tables/table/uns/notes/" in manifest.deleted
    # nothing below was touched
    assert {v.dataset_id: snapshot(v.folder) for v in stack.versions} == before
    assert snapshot(stack.base.path) == base_before


def test_arrays_are_single_chunk_zarr_v3_with_gzip(demo_copy: Path) -> None:
    writer = VersionWriter(demo_copy)
    n = writer.n_obs("table")
    writer.set_obs("table", "score", np.arange(n, dtype="float64"))
    writer.set_obs("table", "name", [f"c{i}" for i in range(n)])
    top = writer.commit(title="t")
    for column, serializer in (("score", "bytes"), ("name", "vlen-utf8")):
        doc = json.loads((top / "overlay" / f"tables/table/obs/{column}/zarr.json").read_text())
        assert doc["zarr_format"] == 3
        assert doc["chunk_grid"]["configuration"]["chunk_shape"] == doc["shape"] == [n]
        assert [c["name"] for c in doc["codecs"]] == [serializer, "gzip"]
        assert doc["attributes"]["encoding-type"] in ("array", "string-array")


def _without_gzip_time(objects: dict[str, bytes]) -> dict[str, bytes]:
    """Objects with each gzip chunk replaced by what it inflates to (one member, checksum checked).

    Two deflaters (zlib, ISA-L) make different bytes of the same data; what the format
    fixes is that a chunk is gzip of the array's bytes, and that is compared.
    """
    import zlib

    def inflated(chunk: bytes) -> bytes:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = inflater.decompress(chunk)
        assert inflater.eof and not inflater.unused_data, "one whole gzip member"
        return b"gzip:" + data

    return {k: inflated(v) if v[:2] == b"\x1f\x8b" else v for k, v in objects.items()}


ONE_PASS_VALUES = {
    "float": np.linspace(0, 1, 1000),
    "int": np.arange(7, dtype="int64"),
    "bool": np.array([True, False, True]),
    "zeros (a chunk of fill values, which zarr would leave out)": np.zeros(50),
    "big-endian": np.arange(5, dtype=">f8"),
    "float32 2-d": np.ones((20, 3), dtype="float32"),
    "strided 2-d": np.arange(40.0).reshape(10, 4)[:, ::2],
    "strings": np.array(["x", "yy", ""], dtype=object),
    "categorical": pd.Categorical(["a", None, "b", "a"]),
    "ordered categorical": pd.Categorical([3, 1, 3], ordered=True),
}
TWO_PASS_VALUES = {
    "empty": np.zeros(0),
    "strings with a missing one": np.array(["x", None], dtype=object),
    "nullable ints": pd.array([1, None], dtype="Int64"),
    "data frame": pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}, index=["r1", "r2"]),
    "dict": {"a": 1, "b": {"c": "s"}},
}


@pytest.mark.parametrize("name", [*ONE_PASS_VALUES, *TWO_PASS_VALUES])
def test_one_pass_encoding_writes_what_the_two_pass_encoding_writes(name: str) -> None:
    """Plain arrays and categoricals skip the re-chunking copy; the objects are the same."""
    from sds_jupyter.stack.write import encode

    value = ONE_PASS_VALUES.get(name, TWO_PASS_VALUES.get(name))
    one_pass = encode._encode_direct(anndata, value)
    assert (one_pass is not None) == (name in ONE_PASS_VALUES)
    expected = _without_gzip_time(encode._encode_rechunked(anndata, value))
    assert _without_gzip_time(encode.encode_element(value)) == expected
    if one_pass is not None:
        assert _without_gzip_time(one_pass) == expected


def test_a_numeric_array_is_written_where_none_is_yet_and_keeps_its_parent_group() -> None:
    """The array's documents are zarr's own, made once: a parent group already there keeps its
    attributes, and an array already at the path is refused by zarr, as before."""
    from sds_jupyter.stack.write import encode

    for _ in range(2):  # made, then reused
        held: dict[str, Any] = {}
        store = zarr.storage.MemoryStore(store_dict=held)
        group = zarr.open_group(store, mode="w", zarr_format=3).create_group("e")
        group.attrs["ordered"] = True
        encode._write_numeric(store, held, "e/codes", np.arange(4, dtype="int8"))
        assert json.loads(held["e/zarr.json"].to_bytes())["attributes"] == {"ordered": True}
        assert zarr.open_array(store, path="e/codes", mode="r")[...].tolist() == [0, 1, 2, 3]
    with pytest.raises(zarr.errors.ContainsArrayError):  # zarr's own refusal
        encode._write_numeric(store, held, "e/codes", np.arange(4, dtype="int8"))


def test_the_root_index_is_sorted_by_depth_then_path_and_complete(demo_copy: Path) -> None:
    writer = VersionWriter(demo_copy)
    writer.set_obsm("table", "deep", np.zeros((writer.n_obs("table"), 3)))
    top = writer.commit(title="t")
    root = json.loads((top / "overlay" / "zarr.json").read_text())
    paths = list(root["consolidated_metadata"]["metadata"])
    assert paths == sorted(paths, key=lambda p: (p.count("/"), p))
    assert "tables/table/obsm/deep" in paths
    group = zarr.open_group(open_stack(top), mode="r")
    assert group["tables/table/obsm/deep"].shape[1] == 3


def _index_of(version: Path) -> dict[str, object]:
    root = json.loads((version / "overlay" / "zarr.json").read_text())
    metadata: dict[str, object] = root["consolidated_metadata"]["metadata"]
    return metadata


def test_a_chain_of_commits_carries_the_index_kept_decoded_as_a_fresh_decode_would(
    demo_copy: Path, tmp_path: Path
) -> None:
    """The root index a commit writes is kept decoded for the next commit on that version: the
    chain writes, node for node, what commits decoding every root afresh write."""
    from sds_jupyter.stack.caches import StackCaches
    from sds_jupyter.stack.rootindex import ROOT_INDEX_CACHE_BYTES

    caches = StackCaches()
    kept = caches.derived("root-indexes", ROOT_INDEX_CACHE_BYTES)
    n = VersionWriter(demo_copy).n_obs("table")
    top = demo_copy
    for step in range(3):
        writer = VersionWriter(top, caches=caches)
        writer.set_obs("table", f"score_{step}", np.full(n, float(step)))
        if step == 0:
            writer.delete_obs("table", "regions")  # a node gone: the index below loses it
        else:
            writer.set_uns("table", f"note_{step}", step)
        fresh = VersionWriter(top, caches=StackCaches())
        fresh.store.staged, fresh.store.deleted_keys, fresh.store.deleted_nodes = (
            dict(writer.store.staged),
            set(writer.store.deleted_keys),
            set(writer.store.deleted_nodes),
        )
        fresh.changes = list(writer.changes)
        alone = fresh.commit(tmp_path / f"alone-{step}", title="t")
        top = writer.commit(title="t")
        assert list(_index_of(top).items()) == list(_index_of(alone).items())
        assert "tables/table/obs/regions" not in _index_of(top)
    assert kept.hits >= 2  # the second and third commits found their parent's root decoded


def test_an_open_keeps_the_root_index_for_the_save_after_it(demo_copy: Path) -> None:
    """open_anndata keeps the version's root decoded, so the first save after it decodes nothing again."""
    from sds_jupyter import save_version
    from sds_jupyter.stack.caches import StackCaches
    from sds_jupyter.stack.rootindex import ROOT_INDEX_CACHE_BYTES

    caches = StackCaches()
    adata = open_anndata(demo_copy, caches=caches)
    kept = caches.derived("root-indexes", ROOT_INDEX_CACHE_BYTES)
    assert len(kept) == 1 and kept.hits == 0
    adata.obs["score"] = np.arange(adata.n_obs, dtype=float)
    top = save_version(demo_copy, adata, title="t", caches=caches)
    assert kept.hits == 1
    assert "tables/table/obs/score" in _index_of(top)
    assert open_anndata(top).obs["score"].tolist() == adata.obs["score"].tolist()


def test_a_root_document_rewritten_on_disk_is_decoded_again(demo_copy: Path) -> None:
    """Decoded roots are kept by their bytes: a root that changed on disk is not answered from memory."""
    from sds_jupyter.stack.caches import StackCaches

    caches = StackCaches()
    n = VersionWriter(demo_copy).n_obs("table")
    writer = VersionWriter(demo_copy, caches=caches)
    writer.set_obs("table", "score", np.zeros(n))
    first = writer.commit(title="t")
    root_file = first / "overlay" / "zarr.json"
    root = json.loads(root_file.read_text())
    root["attributes"]["rewritten"] = True
    root_file.write_text(json.dumps(root))
    writer = VersionWriter(first, caches=caches)
    writer.set_uns("table", "note", 1)
    second = writer.commit(title="t")
    assert json.loads((second / "overlay" / "zarr.json").read_text())["attributes"]["rewritten"] is True


def test_deleting_and_re_adding_a_column_in_one_version(demo_copy: Path) -> None:
    writer = VersionWriter(demo_copy)
    n = writer.n_obs("table")
    writer.delete_obs("table", "clusters")
    writer.set_obs("table", "clusters", pd.Categorical(["z"] * n))
    top = writer.commit(title="t")
    manifest = read_manifest(top / "layer.json")
    assert "tables/table/obs/clusters/" in manifest.deleted
    assert any(f.key.startswith("tables/table/obs/clusters/") for f in manifest.files)
    assert list(open_anndata(top).obs["clusters"].unique()) == ["z"]
    assert check(top).ok


def test_the_new_version_lands_beside_its_parent_by_default(demo_copy: Path) -> None:
    writer = VersionWriter(demo_copy)
    writer.set_uns("table", "x", 1)
    top = writer.commit(title="t")
    assert top.parent == demo_copy.parent
    assert Stack.resolve(top).depth == Stack.resolve(demo_copy).depth + 1


def test_a_version_directly_on_a_store(demo_top: Path, tmp_path: Path) -> None:
    base = Stack.resolve(demo_top).base.path
    datasets = tmp_path / "datasets"
    shutil.copytree(base.parent, datasets / "base-1", symlinks=True)
    writer = VersionWriter(datasets / "base-1" / base.name)
    writer.set_uns("table", "note", "first")
    top = writer.commit(title="first")
    manifest = read_manifest(top / "layer.json")
    assert manifest.parent == manifest.base == f"cirro:::dataset:base-1/{base.name}"
    assert manifest.depth == 1
    assert open_anndata(top).uns["note"] == "first"


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda w: w.set_obs("table", "_index", [0]), "not a valid name"),
        (lambda w: w.set_obs("table", "__x", [0]), "not a valid name"),
        (lambda w: w.set_obs("table", "a b", [0]), "not a valid name"),
        (lambda w: w.set_obs("table", "ok", [1, 2]), "has 2 values"),
        (lambda w: w.set_obs("table", "CLUSTERS", list(range(26))), "only in case"),
        (lambda w: w.set_obs("nope", "x", [0]), "no table 'nope'"),
        (lambda w: w.delete_obs("table", "missing"), "no obs column 'missing'"),
        (lambda w: w.delete_obs("table", "region"), "region or instance key"),
        (lambda w: w.set_obsm("table", "e", np.zeros((3, 2))), "has 3 rows"),
        (lambda w: w.delete_uns("table", "missing"), "no uns entry"),
        (lambda w: w.delete_figure("table", "missing"), "no figure"),
        (lambda w: w.set_result("table", "r", {"other": pd.DataFrame()}, {}), "main table"),
        (lambda w: w.commit(), "nothing to save"),
    ],
)
def test_bad_ops_are_refused(demo_copy: Path, call, words: str) -> None:  # noqa: ANN001
    with pytest.raises(StackError, match=words):
        call(VersionWriter(demo_copy))


def test_committing_twice_is_refused(demo_copy: Path) -> None:
    writer = VersionWriter(demo_copy)
    writer.set_uns("table", "x", 1)
    writer.commit(title="t")
    with pytest.raises(WriteRefusedError, match="committed already"):
        writer.set_uns("table", "y", 1)


def test_never_writes_into_the_stack_or_an_existing_folder(demo_copy: Path) -> None:
    stack = Stack.resolve(demo_copy)
    for dest in (demo_copy, demo_copy / "new", stack.base.path / "inside", stack.versions[-1].folder / "x"):
        writer = VersionWriter(stack)
        writer.set_uns("table", "x", 1)
        with pytest.raises(WriteRefusedError):
            writer.commit(dest, title="t")
    assert not (demo_copy / "new").exists() and not (stack.base.path / "inside").exists()


def test_a_failed_commit_leaves_nothing_behind(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = VersionWriter(demo_copy)
    writer.set_uns("table", "x", 1)
    before = set(os.listdir(demo_copy.parent))

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "rename", fail)
    with pytest.raises(OSError, match="disk full"):
        writer.commit(demo_copy.parent / "new-version", title="t")
    assert set(os.listdir(demo_copy.parent)) == before


def test_a_zarr_v2_base_is_refused_clearly(tmp_path: Path) -> None:
    store = tmp_path / "datasets" / "base" / "old.zarr"
    root = zarr.open_group(store, mode="w", zarr_format=2)
    anndata.io.write_elem(root.create_group("tables"), "table", anndata.AnnData(np.zeros((2, 2))))
    with pytest.raises(WriteRefusedError, match="Zarr v2"):
        VersionWriter(store)


def test_a_parent_folder_that_is_not_a_dataset_id_is_refused(demo_top: Path, tmp_path: Path) -> None:
    datasets = tmp_path / "datasets"
    shutil.copytree(demo_top.parent, datasets, symlinks=True)
    os.rename(datasets / demo_top.name, datasets / "my version")
    writer = VersionWriter(datasets / "my version")
    writer.set_uns("table", "x", 1)
    with pytest.raises(WriteRefusedError, match="not a dataset ID"):
        writer.commit(title="t")
