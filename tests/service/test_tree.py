"""The ``tree`` and ``fingerprint`` requests and a broken chain, on stacks built by hand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.stackkit import chain, write_base, write_version

from sds_jupyter import Stack
from sds_jupyter.errors import MissingDatasetError
from sds_jupyter.service import StackService, dispatch
from sds_jupyter.stack import locator
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.listing import find_manifest, scan_versions
from sds_jupyter.stack.locator import is_version_folder
from sds_jupyter.stack.storage.location import location_of


@pytest.fixture
def datasets(tmp_path: Path) -> Path:
    """v1 ← v2 ← v3 on base-1, a branch b1 on v2, a stack on another base, an orphan pair, junk."""
    datasets = tmp_path / "datasets"
    base = write_base(datasets, "base-1", {})
    chain(datasets, 3, base)
    write_version(
        datasets,
        "b1",
        "cirro:::dataset:v2/layer.json",
        {"x/1": b"1"},
        under_data=True,
        manifest={"created_at": "2030-01-01T00:00:00Z", "created_by": "b@example.org"},
    )
    other = write_base(datasets, "base-2", {})
    write_version(datasets, "o1", other)
    write_version(
        datasets,
        "orph",
        "cirro:::dataset:gone-1/layer.json",
        {"x/1": b"1"},
        manifest={"changes": [{"op": "set-obs", "table": "table", "column": "c"}]},
    )
    write_version(datasets, "orph2", "cirro:::dataset:orph/layer.json", {"x/2": b"2"}, deleted=["x/1"])
    (datasets / "plain-folder").mkdir()
    return datasets


def _ids(tree: dict) -> set[str]:
    return {node["dataset_id"] for node in tree["nodes"]}


def test_tree_holds_both_branches_and_only_this_base(datasets: Path) -> None:
    tree = json.loads(json.dumps(dispatch(StackService(datasets / "v3"), "tree").data))
    assert tree["current"] == "v3"
    assert _ids(tree) == {"v1", "v2", "v3", "b1"}
    by_id = {node["dataset_id"]: node for node in tree["nodes"]}
    assert by_id["b1"]["parent"] == "v2" and by_id["v3"]["parent"] == "v2" and by_id["v1"]["parent"] is None
    assert [by_id[i]["depth"] for i in ("v1", "v2", "v3", "b1")] == [1, 2, 3, 3]
    assert by_id["b1"]["created_by"] == "b@example.org" and by_id["b1"]["folder"].endswith("b1")
    assert set(by_id["b1"]) == {
        "dataset_id",
        "parent",
        "depth",
        "title",
        "folder",
        "created_at",
        "created_by",
        "changes",
    }
    assert tree["base"]["dataset_id"] == "base-1" and tree["notes"] == []
    # newest first, and a child always before its parent
    order = [node["dataset_id"] for node in tree["nodes"]]
    assert order[0] == "b1" and order.index("v3") < order.index("v2") < order.index("v1")


def test_tree_from_a_branch_is_the_same_tree(datasets: Path) -> None:
    tree = StackService(datasets / "b1").tree()
    assert tree["current"] == "b1" and _ids(tree) == {"v1", "v2", "v3", "b1"}


def test_hostile_and_unreadable_manifests_are_skipped_with_a_note(datasets: Path, tmp_path: Path) -> None:
    (datasets / "bad").mkdir()
    (datasets / "bad" / "layer.json").write_text("{not json")
    write_version(datasets, "evil", "cirro:::dataset:v3/layer.json", manifest={"overlay": "../../etc"})
    write_version(datasets, "loop-a", "cirro:::dataset:loop-b/layer.json")
    write_version(datasets, "loop-b", "cirro:::dataset:loop-a/layer.json")
    outside = tmp_path / "outside"
    write_version(outside, "away", "cirro:::dataset:v3/layer.json")
    (datasets / "away").symlink_to(outside / "away", target_is_directory=True)
    tree = StackService(datasets / "v3").tree()
    assert _ids(tree) == {"v1", "v2", "v3", "b1"}
    notes = "\n".join(tree["notes"])
    for name in ("'bad'", "'evil'", "'away'", "loop"):
        assert name in notes, name
    assert all("\n" not in note for note in tree["notes"])


def test_folder_map_names_the_folders(tmp_path: Path) -> None:
    datasets = tmp_path / "datasets"
    base = write_base(datasets, "base-1", {})
    write_version(datasets, "aaa-1", base, folder_name="First")
    write_version(datasets, "bbb-2", "cirro:::dataset:aaa-1/layer.json", folder_name="My second")
    folders = {"aaa-1": "First", "bbb-2": "My second", "base-1": "base-1"}
    tree = StackService(datasets / "My second", folders=folders).tree()
    assert tree["current"] == "bbb-2"
    assert {(n["dataset_id"], n["parent"]) for n in tree["nodes"]} == {("aaa-1", None), ("bbb-2", "aaa-1")}


def test_broken_chain_history_changes_and_tree(datasets: Path) -> None:
    service = StackService(datasets / "orph2")
    history = service.history()
    # no depth in these manifests: the missing version below counts as one, so orph is v2 (issue 29)
    assert [(v["dataset_id"], v["depth"]) for v in history["versions"]] == [("orph2", 3), ("orph", 2)]
    assert history["error"]["dataset_id"] == "gone-1" and history["base"] is None
    changes = dispatch(service, "changes", {"version": 2}).data
    assert changes["added"] == [{"key": "x/1", "size": 1}] and changes["ops"][0]["op"] == "set-obs"
    assert "gone-1" in changes["note"]
    assert dispatch(service, "changes", {"version": "orph2"}).data["deleted"] == [{"entry": "x/1", "node": False}]
    for name in ("figures", "results"):
        error = dispatch(service, name).data["error"]
        assert error["kind"] == "missing-dataset" and "add it to the workspace" in error["message"]
    with pytest.raises(MissingDatasetError, match="gone-1"):
        service.adata()
    tree = service.tree()
    assert tree["current"] == "orph2" and _ids(tree) == {"orph", "orph2"} and tree["base"] is None
    assert {n["dataset_id"]: n["depth"] for n in tree["nodes"]} == {"orph2": 3, "orph": 2}


def test_the_listing_parses_through_the_one_manifest_cache(datasets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing and opening given the same caches share their parsed manifests, under their rule: a rewrite
    that keeps size and mtime is read again."""
    monkeypatch.setattr(locator, "RACY_SECONDS", 0.0)  # the files were written just now
    caches = StackCaches()
    first = {v.dataset_id: v.manifest for v in scan_versions(datasets, caches=caches).versions}
    again = {v.dataset_id: v.manifest for v in scan_versions(datasets, caches=caches).versions}
    assert all(again[k] is first[k] for k in first)  # parsed once
    assert Stack.resolve(datasets / "v2", caches=caches).top.manifest is first["v2"]  # and opening reuses the parse
    path = datasets / "v3" / "layer.json"
    before = path.stat()
    doc = json.loads(path.read_text())
    doc["title"] = doc["title"][::-1]  # same size
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime: only the ctime shows it
    after = {v.dataset_id: v.manifest for v in scan_versions(datasets, caches=caches).versions}
    assert after["v3"].title == doc["title"] and after["v2"] is first["v2"]


def test_fingerprint_changes_when_a_version_appears(datasets: Path) -> None:
    service = StackService(datasets / "v3")
    before = dispatch(service, "fingerprint").data["fingerprint"]
    assert dispatch(service, "fingerprint").data["fingerprint"] == before
    write_version(datasets, "v4", "cirro:::dataset:v3/layer.json")
    after = service.fingerprint()["fingerprint"]
    assert after != before
    assert "v4" in _ids(service.tree())


def test_find_manifest_is_the_one_rule(datasets: Path) -> None:
    """The listing's fast form answers as is_version_folder, on every folder (and file) of the fixture."""
    assert find_manifest(datasets / "v1").data_dir == str(datasets / "v1")
    assert find_manifest(datasets / "b1", plain=True).data_dir == str(datasets / "b1" / "data")
    assert find_manifest(datasets / "plain-folder") is None
    assert find_manifest(datasets / "base-1") is None
    answers = {entry.name: is_version_folder(location_of(entry)) for entry in datasets.iterdir()}
    assert answers == {entry.name: find_manifest(entry) is not None for entry in datasets.iterdir()}
    assert answers["v1"] and answers["b1"] and not answers["plain-folder"] and not answers["base-1"]
    assert is_version_folder(location_of(datasets / "b1" / "data")) and find_manifest(datasets / "b1" / "data")


def _settled_scan(datasets: Path) -> object:
    """A scan the next listing may prove unchanged (its files are past the racy window)."""
    import time

    time.sleep(locator.RACY_FINE_SECONDS * 2)
    first = scan_versions(datasets)
    assert first.proof is not None, "a plain datasets folder whose files settled is proven by lstat alone"
    assert scan_versions(datasets) is first
    return first


@pytest.mark.parametrize(
    "change",
    ["new-version", "manifest-in-plain-folder", "manifest-under-data-of-plain-folder", "top-manifest-over-data"],
)
def test_the_warm_listing_sees_every_change_that_alters_it(datasets: Path, change: str) -> None:
    """The warm listing checks about one lstat per folder; each way a version can appear or move shows."""
    first = _settled_scan(datasets)
    if change == "new-version":
        write_version(datasets, "v4", "cirro:::dataset:v3/layer.json")
    elif change == "manifest-in-plain-folder":
        write_version(datasets, "plain-folder", "cirro:::dataset:v3/layer.json")
    elif change == "manifest-under-data-of-plain-folder":
        (datasets / "plain-folder" / "data").mkdir()
        first = _settled_scan(datasets)  # a folder with an empty data/ is proven by data/ too
        write_version(datasets, "plain-folder", "cirro:::dataset:v3/layer.json", under_data=True)
    else:  # b1 keeps layer.json under data/: one at its top now wins
        write_version(datasets, "b1", "cirro:::dataset:v1/layer.json", manifest={"title": "at the top"})
    again = scan_versions(datasets)
    assert again is not first
    found = {v.dataset_id: v for v in again.versions}
    if change == "new-version":
        assert "v4" in found
    elif change == "top-manifest-over-data":
        assert found["b1"].manifest.title == "at the top"
    else:
        assert "plain-folder" in found


def test_the_warm_listing_sees_a_manifest_rewritten_in_place(datasets: Path) -> None:
    first = _settled_scan(datasets)
    path = datasets / "b1" / "data" / "layer.json"
    before = path.stat()
    doc = json.loads(path.read_text())
    doc["title"] = doc["title"][::-1]  # same size, and the mtime set back: only the ctime shows it
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = scan_versions(datasets)
    assert again is not first and {v.dataset_id: v for v in again.versions}["b1"].manifest.title == doc["title"]


def test_an_in_place_rewrite_changes_no_folder_times(datasets: Path) -> None:
    """Why the warm tree proves every manifest by its own lstat (docs/safety.md): a manifest
    rewritten in place, to the same size with its mtime put back, leaves every folder's times as
    they were, so only the file's ctime shows it; the tree shows the new title."""
    service = StackService(datasets / "v3")
    _settled_scan(datasets)
    assert {n["dataset_id"]: n["title"] for n in service.tree()["nodes"]}["v2"] == "version v2"
    path = datasets / "v2" / "layer.json"
    folders = [datasets, datasets / "v2"]
    times = [(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in folders]
    before = path.stat()
    doc = json.loads(path.read_text())
    doc["title"] = "VERSION V2"  # the same size
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(json.dumps(doc))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert [(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in folders] == times, "no folder's times moved"
    assert {n["dataset_id"]: n["title"] for n in service.tree()["nodes"]}["v2"] == "VERSION V2"


def test_a_link_among_the_entries_is_listed_in_full_every_time(datasets: Path) -> None:
    os.symlink(datasets / "v1", datasets / "v1-link")
    import time

    time.sleep(locator.RACY_FINE_SECONDS * 2)
    assert scan_versions(datasets).proof is None


def test_the_tree_names_a_missing_dataset_as_the_folder_map_does(datasets: Path) -> None:
    """The sidebar's heading over a broken chain says what to attach in the words of the workspace."""
    named = StackService(datasets / "orph2", folders={"gone-1": "Xenium breast section"}).tree()
    assert named["missing_name"] == "Xenium breast section" and _ids(named) == {"orph", "orph2"}
    assert "missing_name" not in StackService(datasets / "orph2").tree()
    assert "missing_name" not in StackService(datasets / "v3", folders={"gone-1": "Xenium breast section"}).tree()
