"""Saving in a Cirro workspace: datasets on a read-only mount, named for the dataset, with the folder map.

The demo stack (written by spatialdata and our writer) is laid out as a workspace
mounts it: each dataset in a folder named by its title, ``SDS_CIRRO_DATASETS``
mapping IDs to those names. The read-only mount is a real bind mount in a new
mount namespace (``unshare -m``); elsewhere the same rules are tested with
``into=`` and ``SDS_VERSIONS_DIR``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kit.command import run_cli
from kit.workspace import magic_save_command, read_only_mount, tree_hash, workspace_layout

from sds_jupyter import Stack, check, open_anndata, save_version
from sds_jupyter.errors import MissingDatasetError, WriteRefusedError
from sds_jupyter.stack.manifest import read_manifest


@pytest.fixture
def workspace(demo_top: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``$HOME/datasets`` with the demo's datasets in folders named by title, the map in the environment."""
    return workspace_layout(tmp_path / "home", demo_top, monkeypatch)


def _edited(top: Path) -> object:
    adata = open_anndata(top)
    adata.obs["workspace_note"] = adata.obs_names.str.len().astype("int64")
    return adata


def test_a_save_into_the_versions_folder_names_its_parent_by_cirro_id_and_reads_back(workspace: dict) -> None:
    top, versions = workspace["top"], workspace["versions"]
    before = tree_hash(workspace["datasets"])
    saved = save_version(top, _edited(top), title="Note", into=versions)
    assert saved.parent == versions
    manifest = read_manifest(saved / "layer.json")
    assert manifest.parent == f"cirro:::dataset:{workspace['top_id']}/layer.json"
    assert manifest.base == read_manifest(top / "layer.json").base  # the base's reference, as the parent names it
    stack = Stack.resolve(saved)
    assert stack.versions[1].folder.name == top.name  # found through the folder map, in the datasets folder
    assert list(open_anndata(saved).obs["workspace_note"]) == list(_edited(top).obs["workspace_note"])
    assert check(saved).ok
    assert tree_hash(workspace["datasets"]) == before


def test_a_version_on_a_saved_one_goes_beside_it_and_the_chain_resolves(workspace: dict) -> None:
    top, versions = workspace["top"], workspace["versions"]
    first = save_version(top, _edited(top), title="First", into=versions)
    adata = open_anndata(first)
    adata.obs["second"] = 1.5
    second = save_version(first, adata, title="Second")
    assert second.parent == versions
    assert read_manifest(second / "layer.json").parent == f"cirro:::dataset:{first.name}/layer.json"
    stack = Stack.resolve(second)
    assert [v.label for v in stack.versions[:2]] == ["Second", "First"]
    assert stack.depth == Stack.resolve(top).depth + 2


def test_the_reader_says_every_place_it_looked_for_a_missing_parent(workspace: dict) -> None:
    top, versions = workspace["top"], workspace["versions"]
    saved = save_version(top, _edited(top), title="Note", into=versions)
    shutil.rmtree(top)
    with pytest.raises(MissingDatasetError) as caught:
        Stack.resolve(saved)
    message = str(caught.value)
    assert str(versions) in message and str(workspace["datasets"]) in message and "\n" not in message


def test_a_save_into_a_folder_that_cannot_be_made_is_refused_in_one_line(workspace: dict, tmp_path: Path) -> None:
    top = workspace["top"]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    before = tree_hash(workspace["datasets"])
    with pytest.raises(WriteRefusedError) as caught:
        save_version(top, _edited(top), title="Note", into=blocker / "versions")
    assert "cannot save a version into" in str(caught.value) and "\n" not in str(caught.value)
    assert tree_hash(workspace["datasets"]) == before
    assert not (tmp_path / "home" / "sds-versions").exists()


def test_the_cli_describes_and_checks_a_saved_version(workspace: dict) -> None:
    top, versions = workspace["top"], workspace["versions"]
    saved = save_version(top, _edited(top), title="Note", into=versions)
    printed = {}
    for command in ("describe", "check"):
        result = run_cli(command, str(saved))
        assert result.returncode == 0, result.stderr
        printed[command] = result.stdout
    assert "Note" in printed["describe"]


# -- the read-only mount, for real ----------------------------------------------------------------

_IN_NAMESPACE = textwrap.dedent(
    """
    import json, os, sys
    from sds_jupyter import open_anndata, save_version, check
    top = sys.argv[1]
    try:
        open(os.path.join(top, "probe"), "x")
    except OSError as exc:
        mount = exc.strerror
    else:
        mount = "writable"
    adata = open_anndata(top)
    adata.obs["workspace_note"] = 1.0
    saved = save_version(top, adata, title="On a read-only mount")
    back = open_anndata(saved)
    print(json.dumps({"mount": mount, "saved": str(saved), "note": float(back.obs["workspace_note"].iloc[0]),
                      "ok": check(saved).ok}))
    """
)


def test_save_version_on_a_read_only_mount_writes_into_the_versions_folder(workspace: dict) -> None:
    datasets, versions = workspace["datasets"], workspace["versions"]
    before = tree_hash(datasets)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = read_only_mount(datasets, [sys.executable, "-c", _IN_NAMESPACE, str(workspace["top"])], env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["mount"] == "Read-only file system"
    assert Path(out["saved"]).parent == versions
    assert out["note"] == 1.0 and out["ok"]
    assert tree_hash(datasets) == before
    assert (
        read_manifest(Path(out["saved"]) / "layer.json").parent == f"cirro:::dataset:{workspace['top_id']}/layer.json"
    )


def test_a_read_only_versions_folder_is_refused_in_one_line(workspace: dict) -> None:
    """Both the mount and the chosen versions folder read-only: one line, nothing written anywhere."""
    datasets, home = workspace["datasets"], workspace["home"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "SDS_VERSIONS_DIR": str(datasets / "inside-the-mount")}
    before = tree_hash(home)
    result = read_only_mount(datasets, [sys.executable, "-c", _IN_NAMESPACE, str(workspace["top"])], env)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "WriteRefusedError: cannot save a version into" in last and "Read-only file system" in last
    assert tree_hash(home) == before


def test_sds_save_on_a_read_only_mount_says_where_the_version_went(workspace: dict) -> None:
    datasets, versions = workspace["datasets"], workspace["versions"]
    before = tree_hash(datasets)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = read_only_mount(datasets, magic_save_command(workspace["top"], "By magic"), env)
    assert result.returncode == 0, result.stderr
    [saved] = list(versions.iterdir())
    assert "“By magic”" in result.stdout and f"in {saved}" in result.stdout
    assert list(open_anndata(saved).obs["by_magic"].unique()) == [2.0]
    assert tree_hash(datasets) == before


def test_sds_save_refused_on_a_read_only_mount_is_one_line_and_writes_nothing(workspace: dict) -> None:
    """The mount and the versions folder both read-only: the cell shows one UsageError line, no traceback."""
    datasets, home = workspace["datasets"], workspace["home"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "SDS_VERSIONS_DIR": str(datasets / "inside-the-mount")}
    before = tree_hash(home)
    result = read_only_mount(datasets, magic_save_command(workspace["top"], "By magic", as_cell=True), env)
    shown = (result.stdout + result.stderr).strip().splitlines()
    refusals = [line for line in shown if line.startswith("UsageError: sds_save: cannot save a version into")]
    assert len(refusals) == 1 and "Read-only file system" in refusals[0], shown
    assert not any("Traceback" in line for line in shown)
    assert tree_hash(home) == before
