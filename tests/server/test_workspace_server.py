"""The panel's tree in a Cirro workspace, through a real Jupyter server: saved versions beside the mounted ones."""

# ruff: noqa: F811 - the fixtures of kit.rest are imported by name, then requested
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kit.rest import fetch, jp_server_config, rest_get  # noqa: F401 - fixtures

from sds_jupyter import open_anndata, save_version

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]


@pytest.fixture
def workspace(jp_root_dir: Path, named_datasets, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server root as a workspace's home: ``datasets/`` named by title, the map set, ``sds-versions/``."""
    shutil.copytree(named_datasets[0], jp_root_dir / "datasets", symlinks=True)
    monkeypatch.setenv("SDS_CIRRO_DATASETS", json.dumps(named_datasets[1]))
    monkeypatch.setenv("SDS_DATASETS_DIR", str(jp_root_dir / "datasets"))
    monkeypatch.setenv("SDS_VERSIONS_DIR", str(jp_root_dir / "sds-versions"))
    return jp_root_dir


def _save(top: Path, into: Path, title: str, column: str) -> Path:
    adata = open_anndata(top)
    adata.obs[column] = 1.0
    return save_version(top, adata, title=title, into=into)


def test_the_tree_lists_saved_versions_beside_the_mounted_ones_marked_not_in_cirro(workspace: Path, fetch) -> None:
    mounted = workspace / "datasets" / "Edit"
    before = rest_get(fetch, "fingerprint", path="datasets/Edit")["fingerprint"]
    saved = _save(mounted, workspace / "sds-versions", "Saved here", "here")

    tree = rest_get(fetch, "tree", path="datasets/Edit")
    by_id = {node["dataset_id"]: node for node in tree["nodes"]}
    assert by_id[saved.name]["folder"] == f"sds-versions/{saved.name}"
    assert by_id[saved.name]["parent"] == "edit-2222" and by_id[saved.name]["not_in_cirro"] is True
    assert "not_in_cirro" not in by_id["edit-2222"]
    assert rest_get(fetch, "fingerprint", path="datasets/Edit")["fingerprint"] != before  # the panel reloads

    # opened from the versions folder: its history reaches the mounted parents, its tree the same versions
    history = rest_get(fetch, "history", path=f"sds-versions/{saved.name}")
    assert [v["dataset_id"] for v in history["versions"]] == [saved.name, "edit-2222", "studio-1111"]
    assert {n["dataset_id"] for n in rest_get(fetch, "tree", path=f"sds-versions/{saved.name}")["nodes"]} == set(by_id)


def test_outside_a_workspace_nothing_is_marked(jp_root_dir: Path, studio_stack, fetch) -> None:
    shutil.copytree(studio_stack.datasets, jp_root_dir / "datasets", symlinks=True)
    saved = _save(jp_root_dir / "datasets" / "edit-2222", jp_root_dir / "datasets", "Beside", "beside")
    tree = rest_get(fetch, "tree", path="datasets/edit-2222")
    assert saved.name in {node["dataset_id"] for node in tree["nodes"]}
    assert all("not_in_cirro" not in node for node in tree["nodes"])


def test_a_dataset_is_named_by_the_folder_map_wherever_it_is_named(workspace: Path, fetch) -> None:
    """Issue 41, item 3: the base and a missing dataset carry the folder map's name, not only their UUID."""
    history = rest_get(fetch, "history", path="datasets/Edit")
    assert history["base"]["name"] == "Blobs base" and history["base"]["dataset_id"] == "base-0000"
    assert rest_get(fetch, "tree", path="datasets/Edit")["base"]["name"] == "Blobs base"
    # the same base missing (its mount gone, the map still naming it): the missing dataset is named too
    shutil.rmtree(workspace / "datasets" / "Blobs base")
    broken = rest_get(fetch, "history", path="datasets/Edit")
    assert broken["error"]["dataset_id"] == "base-0000" and broken["error"]["name"] == "Blobs base"
    assert [v["dataset_id"] for v in broken["versions"]] == ["edit-2222", "studio-1111"]


def test_outside_a_workspace_a_dataset_has_no_name_but_its_id(jp_root_dir: Path, studio_stack, fetch) -> None:
    shutil.copytree(studio_stack.datasets, jp_root_dir / "datasets", symlinks=True)
    assert "name" not in rest_get(fetch, "history", path="datasets/edit-2222")["base"]
