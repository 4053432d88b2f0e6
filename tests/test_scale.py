"""Scale: a commit on a base without a consolidated index lists no array's chunks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sds_jupyter import Stack, open_anndata
from sds_jupyter.stack.location import LocalLocation
from sds_jupyter.stack.writer import VersionWriter

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
