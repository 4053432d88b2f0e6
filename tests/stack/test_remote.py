"""Stacks in object storage, read through a real S3-compatible server on loopback.

moto's server mode runs in this process on 127.0.0.1 with a free port; s3fs talks
to it over HTTP exactly as it would to S3. Requests are counted by the server
(a WSGI layer in front of moto), never by patching the client.
"""

from __future__ import annotations

import json
import pickle
import shutil
import warnings
import zipfile
from pathlib import Path
from typing import Any

import anndata
import numpy as np
import pytest
import scipy.sparse as sp
from kit.s3kit import BUCKET, RequestLog, upload
from kit.stackkit import ROOT_DOC, write_base, write_version

from sds_jupyter import Stack, StackStore, open_anndata, open_stack
from sds_jupyter.errors import (
    BaseStoreError,
    ManifestError,
    ReferenceError_,
    StackError,
    UnsafePathError,
)
from sds_jupyter.stack.flatcopy import flatten
from sds_jupyter.stack.inspect import check, describe
from sds_jupyter.stack.storage.location import RemotePath, is_url
from sds_jupyter.stack.storage.sources import FolderSource, ZipSource

pytest.importorskip("moto.server")
s3fs = pytest.importorskip("s3fs")

# -- the demo stack, local and in the bucket ----------------------------------------------


@pytest.fixture(scope="session")
def demo_url(s3: Any, demo_top: Path) -> str:
    """The demo stack's top version, uploaded as it is laid out on disk."""
    datasets = upload(s3, demo_top.parent, "demo")
    return f"{datasets}/{demo_top.name}"


@pytest.fixture(scope="session")
def zipped_demo(tmp_path_factory: pytest.TempPathFactory, s3: Any, demo_top: Path) -> tuple[Path, str]:
    """The demo with its base as a ``.zarr.zip`` (stored), local top and uploaded top URL."""
    datasets = tmp_path_factory.mktemp("zipped") / "datasets"
    shutil.copytree(demo_top.parent, datasets, symlinks=True)
    stack = Stack.resolve(datasets / demo_top.name)
    base = Path(stack.base.path)
    with zipfile.ZipFile(base.parent / f"{base.name}.zip", "w", zipfile.ZIP_STORED) as archive:
        for path in sorted(base.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(base).as_posix())
    shutil.rmtree(base)
    for manifest in datasets.glob("*/layer.json"):
        text = manifest.read_text().replace(f'/{base.name}"', f'/{base.name}.zip"')
        manifest.write_text(text)
    url = upload(s3, datasets, "zipped")
    return datasets / demo_top.name, f"{url}/{demo_top.name}"


def dense(x: Any) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def assert_same_table(a: anndata.AnnData, b: anndata.AnnData) -> None:
    assert a.shape == b.shape
    np.testing.assert_array_equal(dense(a.X), dense(b.X))
    assert list(a.obs.columns) == list(b.obs.columns)
    for column in a.obs.columns:
        assert list(a.obs[column]) == list(b.obs[column]), column
    assert sorted(a.obsm) == sorted(b.obsm)
    assert sorted(a.uns) == sorted(b.uns)


# -- opening a stack ---------------------------------------------------------------------


def test_urls_are_told_from_local_paths() -> None:
    assert is_url("s3://b/p") and is_url("gs://b/p") and is_url("memory://x")
    assert not is_url("file:///tmp/x") and not is_url("/tmp/x") and not is_url(Path("/tmp"))


def test_a_remote_stack_resolves_like_the_local_one(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    local = Stack.resolve(demo_top)
    remote = Stack.resolve(demo_url, storage_options=storage_options)
    assert [v.dataset_id for v in remote.versions] == [v.dataset_id for v in local.versions]
    assert [v.manifest for v in remote.versions] == [v.manifest for v in local.versions]
    assert (remote.base.kind, remote.base.zarr_format) == (local.base.kind, local.base.zarr_format)
    assert isinstance(remote.base.path, RemotePath)
    # what only the local disk offers is asked of the location, never of its class
    assert remote.base.path.as_local() is None and remote.datasets_dir.as_local() is None
    assert local.base.path.as_local() == local.base.path and local.datasets_dir.as_local() == local.datasets_dir
    assert str(remote.base.path) == f"{demo_url.rsplit('/', 1)[0]}/{local.base.dataset_id}/{local.base.path.name}"
    # Each manifest fetched once, the base's root document probed once, nothing listed.
    gets = requests.gets()
    assert requests.counts() == {"GET": remote.depth + 1, "HEAD": 0, "LIST": 0}
    assert all(n == 1 for n in gets.values())
    assert sum(1 for p in gets if p.endswith("/layer.json")) == remote.depth


def test_describe_names_urls(demo_url: str, storage_options: dict[str, Any]) -> None:
    info = describe(demo_url, storage_options=storage_options)
    assert info["depth"] == 4
    assert info["base"]["path"].startswith("s3://") and info["base"]["kind"] == "folder"
    assert all(v["folder"].startswith(f"s3://{BUCKET}/demo/datasets/") for v in info["versions"])
    assert info["versions"][0]["title"] == "Neighborhood enrichment"


def test_check_passes_on_the_uploaded_demo(demo_url: str, storage_options: dict[str, Any]) -> None:
    report = check(demo_url, storage_options=storage_options)
    assert report.ok, report.problems


def test_the_manifest_url_and_a_layer_under_data(
    s3: Any, datasets: Path, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    base = write_base(datasets, "base", {"a/zarr.json": ROOT_DOC, "a/x": b"base-x"})
    v1 = write_version(datasets, "v1", base, {"a/y": b"v1-y"}, under_data=True)
    write_version(datasets, "v2", v1, {"a/z": b"v2-z"})
    url = upload(s3, datasets)
    for top in (f"{url}/v2", f"{url}/v2/layer.json"):
        stack = Stack.resolve(top, storage_options=storage_options)
        assert [v.dataset_id for v in stack.versions] == ["v2", "v1"]
        assert str(stack.versions[1].data_dir) == f"{url}/v1/data"
    store = open_stack(f"{url}/v2", storage_options=storage_options)
    assert [store.read_raw(k) for k in ("a/x", "a/y", "a/z")] == [b"base-x", b"v1-y", b"v2-z"]
    assert requests.counts()["LIST"] == 0


def test_a_store_alone_is_a_stack_of_no_versions(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any]
) -> None:
    local = Stack.resolve(demo_top)
    url = f"{demo_url.rsplit('/', 1)[0]}/{local.base.dataset_id}/{local.base.path.name}"
    stack = Stack.resolve(url, storage_options=storage_options)
    assert stack.depth == 0 and stack.base.dataset_id == local.base.dataset_id
    adata = open_anndata(stack)
    assert adata.n_obs == anndata.read_zarr(local.base.path / "tables" / "table").n_obs


# -- reading tables ----------------------------------------------------------------------


def test_a_table_reads_eagerly_with_no_list_and_one_get_per_key(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    stack = Stack.resolve(demo_url, storage_options=storage_options)
    requests.clear()
    remote = open_anndata(stack)
    counts = requests.counts()
    assert counts["LIST"] == 0 and counts["HEAD"] == 0
    assert max(requests.gets().values()) == 1, "a key was fetched more than once"
    assert_same_table(remote, open_anndata(demo_top))


def test_a_table_reads_lazily_and_reduces_on_a_local_cluster(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    distributed = pytest.importorskip("distributed")
    lazy = open_anndata(demo_url, lazy=True, storage_options=storage_options)
    assert requests.counts()["LIST"] == 0
    import dask.array as da

    assert isinstance(lazy.X, da.Array)
    eager = open_anndata(demo_top)
    expected = np.asarray(dense(eager.X).mean(axis=0)).ravel()
    to_dense = lazy.X.map_blocks(dense, dtype=lazy.X.dtype, meta=np.empty((0, 0), lazy.X.dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with (
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            requests.clear()
            means = client.compute(to_dense.mean(axis=0)).result()
    np.testing.assert_allclose(np.asarray(means).ravel(), expected)
    assert requests.counts()["GET"] >= 1, "the workers read X's chunks from the server"
    assert requests.counts()["LIST"] == 0
    # Process-based workers get the graph, store and all, by pickle.
    shipped = pickle.loads(pickle.dumps(to_dense.mean(axis=0)))
    np.testing.assert_allclose(np.asarray(shipped.compute(scheduler="sync")).ravel(), expected)


def test_the_store_pickles_and_reads_the_same_after(demo_url: str, storage_options: dict[str, Any]) -> None:
    store = open_stack(demo_url, storage_options=storage_options)
    copy = pickle.loads(pickle.dumps(store))
    assert isinstance(copy, StackStore) and copy == store
    for key in ("zarr.json", "tables/table/obs/zarr.json", "tables/table/X/indptr/c/0"):
        assert copy.read_raw(key) == store.read_raw(key)


def test_byte_ranges_from_object_storage(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    local = open_stack(demo_top)
    remote = open_stack(demo_url, storage_options=storage_options)
    key = "tables/table/obs/instance_id/zarr.json"
    requests.clear()
    for byte_range in (
        None,
        RangeByteRequest(3, 40),
        RangeByteRequest(10, 10),
        OffsetByteRequest(7),
        OffsetByteRequest(10_000),
        SuffixByteRequest(12),
        SuffixByteRequest(10_000),
    ):
        assert remote.read_raw(key, byte_range) == local.read_raw(key, byte_range), byte_range
    assert remote.read_raw("tables/table/obs/nope/zarr.json") is None
    assert requests.counts()["LIST"] == 0


def test_an_empty_object_reads_as_empty(s3: Any, storage_options: dict[str, Any]) -> None:
    s3.pipe(f"{BUCKET}/empty/store/zarr.json", ROOT_DOC)
    s3.pipe(f"{BUCKET}/empty/store/k", b"")
    source = FolderSource(RemotePath.from_url(f"s3://{BUCKET}/empty/store", storage_options))
    assert source.read("k") == b"" and source.exists("k")
    assert source.read("missing") is None and not source.exists("missing")


def test_exists_on_the_base_uses_its_consolidated_index(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    stack = Stack.resolve(demo_url, storage_options=storage_options)
    source = FolderSource(stack.base.path)
    requests.clear()
    assert source.exists("tables/table/obs/zarr.json")
    assert not source.exists("tables/table/obs/nothing-here/zarr.json")
    assert source.exists("zarr.json")
    assert requests.counts() == {"GET": 1, "HEAD": 0, "LIST": 0}  # the root document, once


def test_a_zip_base_reads_by_range_requests(
    zipped_demo: tuple[Path, str], storage_options: dict[str, Any], requests: RequestLog
) -> None:
    local_top, url = zipped_demo
    stack = Stack.resolve(url, storage_options=storage_options)
    assert stack.base.kind == "zip" and str(stack.base.path).endswith(".zarr.zip")
    store = StackStore(stack)
    assert isinstance(store._base, ZipSource)
    size = s3fs.S3FileSystem(**storage_options).size(stack.base.path.path)
    requests.clear()
    remote = open_anndata(stack)
    assert_same_table(remote, open_anndata(local_top))
    assert requests.counts()["LIST"] == 0
    ranged = [r for m, p, _, r in requests.entries if p.endswith(".zip") and m == "GET"]
    assert ranged and all(r is not None for r in ranged), "every read of the zip is a range request"
    fetched = sum(_range_length(r, size) for r in ranged)
    assert fetched < size, "reading one table must not download the whole zip"
    # The zip the resolve opened is shared: a new store reads no central directory,
    # and each member read is one GET.
    requests.clear()
    zip_store = StackStore(stack)
    assert requests.entries == []
    for key in ("tables/table/X/data/c/0", "tables/table/X/indices/c/0", "tables/table/var/zarr.json"):
        assert zip_store.read_raw(key) == open_stack(local_top).read_raw(key)
    assert requests.counts() == {"GET": 3, "HEAD": 0, "LIST": 0}


def _range_length(header: str, size: int) -> int:
    spec = header.removeprefix("bytes=")
    first, _, last = spec.partition("-")
    if not first:
        return min(int(last), size)
    end = int(last) if last else size - 1
    return min(end, size - 1) - int(first) + 1


def test_a_zip_source_pickles_without_rereading_its_directory(
    zipped_demo: tuple[Path, str], storage_options: dict[str, Any], requests: RequestLog
) -> None:
    stack = Stack.resolve(zipped_demo[1], storage_options=storage_options)
    source = ZipSource(stack.base.path)
    requests.clear()
    copy = pickle.loads(pickle.dumps(source))
    assert requests.entries == []
    assert copy.read("zarr.json") == source.read("zarr.json")


# -- flatten -----------------------------------------------------------------------------


def test_flatten_from_object_storage_copies_everything_with_progress(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], tmp_path: Path
) -> None:
    seen: list[tuple[int, int]] = []
    out = flatten(
        demo_url,
        tmp_path / "flat.zarr",
        storage_options=storage_options,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen and seen[-1][0] == seen[-1][1] > 0
    local = flatten(demo_top, tmp_path / "local.zarr", link=False, progress=False)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    assert not any(p.is_symlink() for p in out.rglob("*"))
    for name in files:
        assert (out / name).read_bytes() == (local / name).read_bytes(), name
    assert_same_table(anndata.read_zarr(out / "tables" / "table"), open_anndata(demo_top))
    import spatialdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdata = spatialdata.read_zarr(out)
    assert "table" in sdata.tables


def test_open_spatialdata_from_object_storage(demo_url: str, storage_options: dict[str, Any], tmp_path: Path) -> None:
    from sds_jupyter.stack.open import open_spatialdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdata = open_spatialdata(demo_url, cache=tmp_path / "cache", storage_options=storage_options)
        again = open_spatialdata(demo_url, cache=tmp_path / "cache", storage_options=storage_options)
    assert "table" in sdata.tables and "table" in again.tables
    assert len(list((tmp_path / "cache").iterdir())) == 1, "the flattened copy is reused"


# -- refusals ----------------------------------------------------------------------------


def _hostile(datasets: Path, manifest: dict[str, Any], dataset_id: str = "v1") -> None:
    write_base(datasets, "base", {})
    write_version(datasets, dataset_id, "cirro:::dataset:base/store.zarr", {"k": b"1"}, manifest=manifest)


@pytest.mark.parametrize(
    ("manifest", "error"),
    [
        ({"parent": "cirro:::dataset:base/../secret/store.zarr"}, UnsafePathError),
        ({"parent": "cirro:::dataset:../x/layer.json"}, StackError),
        ({"parent": "s3://elsewhere/store.zarr"}, ReferenceError_),
        ({"overlay": "../../secret"}, UnsafePathError),
        ({"files": [{"key": "../../../secret/credentials.json", "size": 1}]}, UnsafePathError),
        ({"deleted": ["a/../../b"]}, UnsafePathError),
        ({"format_version": 99}, ManifestError),
    ],
)
def test_hostile_manifests_are_refused_before_any_url_is_built(
    s3: Any,
    datasets: Path,
    storage_options: dict[str, Any],
    requests: RequestLog,
    manifest: dict[str, Any],
    error: type[Exception],
) -> None:
    _hostile(datasets, manifest)
    url = upload(s3, datasets)
    requests.clear()
    with pytest.raises(error):
        Stack.resolve(f"{url}/v1", storage_options=storage_options)
    assert all(p.startswith(f"/{url.removeprefix('s3://')}/") for p in requests.paths())


def test_a_folder_map_leaving_the_datasets_prefix_is_refused(
    s3: Any, datasets: Path, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    _hostile(datasets, {})
    url = upload(s3, datasets)
    for folder in ("../secret", "..", "a/../../secret"):
        with pytest.raises(UnsafePathError):
            Stack.resolve(f"{url}/v1", folders={"base": folder}, storage_options=storage_options)
    for folder in ("base?versionId=1", "base#frag", "other?x"):
        with pytest.raises(UnsafePathError, match="'\\?' or '#'"):
            Stack.resolve(f"{url}/v1", folders={"base": folder}, storage_options=storage_options)


def test_a_reference_path_with_url_characters_is_refused(
    s3: Any, datasets: Path, storage_options: dict[str, Any]
) -> None:
    _hostile(datasets, {"parent": "cirro:::dataset:base/store.zarr?versionId=1"})
    url = upload(s3, datasets)
    with pytest.raises(UnsafePathError):
        Stack.resolve(f"{url}/v1", storage_options=storage_options)


def test_store_keys_cannot_escape_their_prefix(
    demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    store = open_stack(demo_url, storage_options=storage_options)
    requests.clear()
    for key in ("../../../secret/credentials.json", "a/../../x", "/abs", "a//b", "a\\b", "x?versionId=1"):
        with pytest.raises(UnsafePathError):
            store.read_raw(key)
    assert requests.entries == []


def test_not_a_stack_nor_a_store_and_a_bare_bucket(s3: Any, storage_options: dict[str, Any]) -> None:
    s3.pipe(f"{BUCKET}/junk/datasets/x/readme.txt", b"hello")
    with pytest.raises(StackError, match="not a Zarr store"):
        Stack.resolve(f"s3://{BUCKET}/junk/datasets/x", storage_options=storage_options)
    with pytest.raises(StackError):
        Stack.resolve(f"s3://{BUCKET}", storage_options=storage_options)


def test_a_zip_base_with_an_escaping_member_is_refused(
    s3: Any, datasets: Path, storage_options: dict[str, Any]
) -> None:
    (datasets / "base").mkdir()
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w") as archive:
        archive.writestr("zarr.json", ROOT_DOC)
        archive.writestr("../evil", b"x")
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"k": b"1"})
    url = upload(s3, datasets)
    with pytest.raises(StackError):
        open_stack(f"{url}/v1", storage_options=storage_options)


def test_saving_a_version_onto_a_stack_in_object_storage_is_refused(
    demo_url: str, storage_options: dict[str, Any]
) -> None:
    from sds_jupyter.errors import WriteRefusedError
    from sds_jupyter.stack.write.writer import VersionWriter

    stack = Stack.resolve(demo_url, storage_options=storage_options)
    with pytest.raises(WriteRefusedError, match="object storage"):
        VersionWriter(stack)


def test_the_command_line_reads_a_url_with_the_environment_s_endpoint(
    demo_url: str,
    s3_server: tuple[str, RequestLog],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from sds_jupyter.cli import main

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server[0])
    s3fs.S3FileSystem.clear_instance_cache()
    assert main(["describe", "--json", demo_url]) == 0
    assert json.loads(capsys.readouterr().out)["depth"] == 4
    assert main(["flatten", demo_url, str(tmp_path / "out.zarr")]) == 0
    assert (tmp_path / "out.zarr" / "zarr.json").is_file()
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.mark.parametrize(
    "base",
    [
        "cirro:::dataset:base/../../secret/credentials.json",
        "cirro:::dataset:../secret/x.zarr",
        "s3://sds-stacks/secret/credentials.json",
        "cirro:::dataset:other/elsewhere.zarr",
    ],
)
def test_the_base_field_is_only_a_hint_and_never_leads_outside(
    s3: Any, datasets: Path, storage_options: dict[str, Any], requests: RequestLog, base: str
) -> None:
    _hostile(datasets, {"base": base})
    url = upload(s3, datasets)
    requests.clear()
    stack = Stack.resolve(f"{url}/v1", storage_options=storage_options)
    assert str(stack.base.path) == f"{url}/base/store.zarr"
    assert all(p.startswith(f"/{url.removeprefix('s3://')}/") for p in requests.paths())


def test_a_deflated_zip_base_reads_and_a_corrupt_member_is_refused(
    s3: Any, datasets: Path, storage_options: dict[str, Any]
) -> None:
    (datasets / "base").mkdir()
    payload = b"chunk " * 1000
    with zipfile.ZipFile(datasets / "base" / "s.zarr.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zarr.json", ROOT_DOC)
        archive.writestr("a/c/0", payload)
    write_version(datasets, "v1", "cirro:::dataset:base/s.zarr.zip", {"k": b"1"})
    url = upload(s3, datasets)
    store = open_stack(f"{url}/v1", storage_options=storage_options)
    assert store.read_raw("a/c/0") == payload
    from zarr.abc.store import RangeByteRequest

    assert store.read_raw("a/c/0", RangeByteRequest(6, 12)) == payload[6:12]
    # Flip bytes inside the member's data: the CRC check refuses it.
    raw = bytearray((datasets / "base" / "s.zarr.zip").read_bytes())
    info = zipfile.ZipFile(datasets / "base" / "s.zarr.zip").getinfo("a/c/0")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start + 2 : start + 6] = b"\x00\x00\x00\x00"
    s3.pipe(f"{url.removeprefix('s3://')}/base/s.zarr.zip", bytes(raw))
    store = open_stack(f"{url}/v1", storage_options=storage_options)
    with pytest.raises(BaseStoreError):
        store.read_raw("a/c/0")


def test_a_file_url_is_a_local_path(demo_top: Path) -> None:
    stack = Stack.resolve(f"file://{demo_top}")
    assert stack.depth == 4 and isinstance(stack.base.path, Path)


def test_sizes_of_overlay_objects_come_from_the_manifests(
    demo_top: Path, demo_url: str, storage_options: dict[str, Any], requests: RequestLog
) -> None:
    local = open_stack(demo_top)
    remote = open_stack(demo_url, storage_options=storage_options)
    keys = [e.key for e in remote.stack.top.manifest.files][:5]
    requests.clear()
    assert [remote.size_raw(k) for k in keys] == [local.size_raw(k) for k in keys]
    assert requests.entries == []
