"""Scale: a commit on a base without a consolidated index lists no array's chunks; a deep stack
in object storage fetches its manifests concurrently and resolves as the walk does."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit.s3kit import RequestLog, upload
from kit.stackkit import ROOT_DOC, write_base, write_version

from sds_jupyter import Stack, open_anndata, open_stack
from sds_jupyter.stack import prefetch
from sds_jupyter.stack.storage.location import LocalLocation
from sds_jupyter.stack.write.writer import VersionWriter

CHUNKS = 300


@pytest.fixture
def unconsolidated_base(demo_top: Path, tmp_path: Path) -> Path:
    """The demo's base store without its consolidated index, plus an array of many chunk objects."""
    base = Stack.resolve(demo_top).base.path
    copy = tmp_path / "datasets" / "base" / "store.zarr"
    shutil.copytree(base, copy)
    root = json.loads((copy / "zarr.json").read_text())
    root.pop("consolidated_metadata", None)
    (copy / "zarr.json").write_text(json.dumps(root))
    for path in copy.rglob(".zmetadata"):
        path.unlink()
    many = copy / "images" / "many"
    (many / "c").mkdir(parents=True)
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [CHUNKS, 1],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "attributes": {},
    }
    (many / "zarr.json").write_text(json.dumps(doc))
    for row in range(CHUNKS):
        (many / "c" / str(row)).mkdir()
        (many / "c" / str(row) / "0").write_bytes(bytes([row % 256]))
    return copy


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every folder the local disk is asked to list (walks count as listing everything below)."""
    calls: list[str] = []
    list_folder, walk_objects = LocalLocation.list_folder, LocalLocation.walk_objects

    def record_list(self: LocalLocation, key: str = "") -> Iterator[tuple[str, bool]]:
        calls.append(f"{self}/{key}")
        return list_folder(self, key)

    def record_walk(self: LocalLocation, key: str = "") -> Iterator[str]:
        calls.append(f"{self}/{key}/**")
        return walk_objects(self, key)

    monkeypatch.setattr(LocalLocation, "list_folder", record_list)
    monkeypatch.setattr(LocalLocation, "walk_objects", record_walk)
    yield calls


def test_a_commit_on_a_base_without_an_index_lists_groups_only(unconsolidated_base: Path, listed: list[str]) -> None:
    writer = VersionWriter(unconsolidated_base)
    writer.set_uns("table", "note", {"text": "hello"})
    listed.clear()
    top = writer.commit(unconsolidated_base.parent.parent / "v1", title="t")
    assert listed, "the groups are listed"
    assert not [call for call in listed if "images/many" in call or call.endswith("**")], listed
    index = json.loads((top / "overlay" / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    # The same nodes a listing of every key finds: each zarr.json of the base and the version's new ones.
    documents = {p.parent.relative_to(unconsolidated_base) for p in unconsolidated_base.rglob("zarr.json")}
    documents |= {p.parent.relative_to(top / "overlay") for p in (top / "overlay").rglob("zarr.json")}
    assert set(index) == {str(path) for path in documents if str(path) != "."}
    assert index["images/many"]["shape"] == [CHUNKS, 1]
    assert "tables/table/uns/note" in index
    assert index["tables/table"]["node_type"] == "group"
    assert list(index) == sorted(index, key=lambda p: (p.count("/"), p))
    assert open_anndata(top).uns["note"] == {"text": "hello"}


# -- a deep stack in object storage: manifests fetched at once -------------------------------


def _deep_remote(s3: Any, datasets: Path, depth: int) -> str:
    """A ``depth``-deep stack (every third version under ``data/``, a whiteout halfway) and an
    unrelated dataset beside it, uploaded; the top's URL."""
    parent = write_base(datasets, "base", {"b/zarr.json": ROOT_DOC, "b/k": b"base"})
    for number in range(1, depth + 1):
        deleted = ["b/k"] if number == depth // 2 else []
        parent = write_version(
            datasets,
            f"v{number}",
            parent,
            {f"layer/{number}": str(number).encode()},
            deleted,
            under_data=number % 3 == 0,
        )
    write_version(datasets, "unrelated", "cirro:::dataset:base/store.zarr", {"u": b"u"})
    return f"{upload(s3, datasets)}/v{depth}"


def _shape(stack: Stack) -> list[tuple[str, str, str, tuple[str, ...]]]:
    return [
        (v.dataset_id, str(v.manifest_path), str(v.overlay_dir), tuple(e.key for e in v.manifest.files))
        for v in stack.versions
    ]


def test_a_deep_remote_stack_fetches_its_manifests_at_once_and_resolves_the_same(
    s3: Any, storage_options: dict[str, Any], requests: RequestLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    depth = 40
    url = _deep_remote(s3, tmp_path / "datasets", depth)
    monkeypatch.setattr(prefetch, "AFTER", 10**6)  # never: the walk one manifest at a time
    requests.clear()
    sequential = Stack.resolve(url, storage_options=storage_options)
    walked = requests.counts()
    monkeypatch.setattr(prefetch, "AFTER", 8)
    requests.clear()
    concurrent = Stack.resolve(url, storage_options=storage_options)
    fetched = requests.counts()
    assert concurrent.depth == sequential.depth == depth
    assert _shape(concurrent) == _shape(sequential)
    assert str(concurrent.base.path) == str(sequential.base.path)
    assert open_stack(concurrent).read_raw("layer/7") == b"7" and open_stack(concurrent).read_raw("b/k") is None
    assert walked["LIST"] == 0 and fetched["LIST"] == 1
    # Each folder is asked at most at its two places; the walk asked the data/ ones' top place too.
    folders = depth + 2  # the versions, the base and the unrelated dataset
    assert fetched["GET"] <= walked["GET"] + 2 * 2 + 1, (fetched, walked)
    assert fetched["GET"] <= 2 * folders + 2
    manifest_gets = [p for p in requests.gets() if p.endswith("layer.json")]
    assert len(manifest_gets) == len(set(manifest_gets)), "no manifest is fetched twice"


def test_a_shallow_remote_stack_lists_nothing(
    s3: Any, storage_options: dict[str, Any], requests: RequestLog, tmp_path: Path
) -> None:
    url = _deep_remote(s3, tmp_path / "datasets", prefetch.AFTER - 1)
    requests.clear()
    assert Stack.resolve(url, storage_options=storage_options).depth == prefetch.AFTER - 1
    assert requests.counts()["LIST"] == 0
