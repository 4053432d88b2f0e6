"""Stack layouts, usual and hostile, and everything a reader uses of what each resolves to: the two walks (quick and careful) and the on-disk records must give the same answers."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit.stackkit import ROOT_DOC, chain, write_base, write_version
from sds_jupyter import Stack
from sds_jupyter.errors import StackError
from sds_jupyter.stack.caches import StackCaches

Case = Callable[[Path, Path], tuple[Path, dict[str, str] | None]]


def _plain(datasets: Path, outside: Path) -> tuple[Path, None]:
    return chain(datasets, 6, write_base(datasets, "base", {"a/zarr.json": ROOT_DOC})), None


def _cirro_layout(datasets: Path, outside: Path) -> tuple[Path, None]:
    """As Cirro downloads them: each manifest under ``data/`` (the folder's top is tried first)."""
    parent = write_base(datasets, "base", {})
    for i in range(1, 4):
        parent = write_version(datasets, f"v{i}", parent, {f"k/{i}": b"x"}, under_data=True)
    return datasets / "v3", None


def _folder_map(datasets: Path, outside: Path) -> tuple[Path, dict[str, str]]:
    base = write_base(datasets, "0d13", {}, name="p.zarr")
    os.rename(datasets / "0d13", datasets / "Pancreas results")
    v1 = write_version(datasets, "5f1c", base, {"k": b"1"}, folder_name="Tumor margin regions")
    write_version(datasets, "77aa", v1, {"j": b"2"})
    write_version(datasets, "top", "cirro:::dataset:77aa/layer.json", {"i": b"3"})
    # 77aa is mapped to a folder that is not there: its own ID's folder holds it
    folders = {"0d13": "Pancreas results", "5f1c": "Tumor margin regions", "77aa": "gone"}
    return datasets / "top", folders


def _parent_through_a_link(datasets: Path, outside: Path) -> tuple[Path, None]:
    """A parent's folder is a link to another folder of the datasets folder: allowed, the careful way."""
    base = write_base(datasets, "base", {})
    write_version(datasets, "v1-real", base, {"k": b"1"})
    os.symlink(datasets / "v1-real", datasets / "v1")
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"j": b"2"})
    return datasets / "v2", None


def _missing_parent(datasets: Path, outside: Path) -> tuple[Path, None]:
    base = write_base(datasets, "base", {})
    v1 = write_version(datasets, "v1", base, {"k": b"1"}, manifest={"depth": 4})
    write_version(datasets, "v2", v1, {"j": b"2"})
    write_version(datasets, "v1-parent-of-nothing", base, {})
    # v1's parent is gone: the chain resolves down to v1 and names what is missing
    manifest = json.loads((datasets / "v1" / "layer.json").read_text())
    manifest["parent"] = "cirro:::dataset:3e9a-missing/layer.json"
    (datasets / "v1" / "layer.json").write_text(json.dumps(manifest))
    return datasets / "v2", None


def _cycle(datasets: Path, outside: Path) -> tuple[Path, None]:
    write_version(datasets, "a", "cirro:::dataset:b/layer.json", {"k": b"1"})
    write_version(datasets, "b", "cirro:::dataset:c/layer.json", {"k": b"2"})
    write_version(datasets, "c", "cirro:::dataset:a/layer.json", {"k": b"3"})
    return datasets / "a", None


def _bad_parent_manifest(datasets: Path, outside: Path) -> tuple[Path, None]:
    v1 = write_version(datasets, "v1", write_base(datasets, "base", {}), {"k": b"1"}, manifest={"format_version": 99})
    write_version(datasets, "v2", v1, {"j": b"1"})
    return datasets / "v2", None


def _parent_manifest_is_a_folder(datasets: Path, outside: Path) -> tuple[Path, None]:
    (datasets / "v1" / "layer.json").mkdir(parents=True)
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"j": b"1"})
    return datasets / "v2", None


def _parent_manifest_links_outside(datasets: Path, outside: Path) -> tuple[Path, None]:
    write_version(outside, "v1", write_base(outside, "base", {}), {"k": b"1"})
    (datasets / "v1").mkdir()
    os.symlink(outside / "v1" / "layer.json", datasets / "v1" / "layer.json")
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"j": b"1"})
    return datasets / "v2", None


def _overlay_links_outside(datasets: Path, outside: Path) -> tuple[Path, None]:
    (outside / "secret").mkdir(parents=True)
    v1 = write_version(datasets, "v1", write_base(datasets, "base", {}), {}, overlay="ov")
    os.symlink(outside / "secret", datasets / "v1" / "ov")
    write_version(datasets, "v2", v1, {"j": b"1"})
    return datasets / "v2", None


def _base_missing(datasets: Path, outside: Path) -> tuple[Path, None]:
    write_version(datasets, "v1", "cirro:::dataset:base/store.zarr", {"k": b"1"})
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"j": b"1"})
    return datasets / "v2", None


#: name -> (build, the quick walk takes it alone)
CASES: dict[str, tuple[Case, bool]] = {
    "plain": (_plain, True),
    "cirro layout": (_cirro_layout, True),
    "folder map": (_folder_map, True),
    "parent through a link": (_parent_through_a_link, False),
    "missing parent": (_missing_parent, False),
    "cycle": (_cycle, False),
    "bad parent manifest": (_bad_parent_manifest, False),
    "parent manifest is a folder": (_parent_manifest_is_a_folder, False),
    "parent manifest links outside": (_parent_manifest_links_outside, False),
    "overlay links outside": (_overlay_links_outside, False),
    "base missing": (_base_missing, False),
}


def walk_answer(top: Path, folders: dict[str, str] | None) -> tuple[Any, ...]:
    """Everything a reader uses of the stack ``top`` resolves to, or the refusal's type and words."""
    try:
        stack = Stack.resolve(top, folders=folders, caches=StackCaches())  # nothing remembered from before
    except StackError as exc:
        partial = getattr(exc, "partial", None)
        kept = None if partial is None else [(v.dataset_id, v.depth, str(v.manifest_path)) for v in partial.versions]
        return ("refused", type(exc).__name__, str(exc), kept)
    versions = [
        (v.dataset_id, v.depth, str(v.folder), str(v.data_dir), str(v.overlay_dir), str(v.manifest_path), v.manifest)
        for v in stack.versions
    ]
    base = (stack.base.dataset_id, str(stack.base.path), stack.base.reference, stack.base.kind)
    return ("stack", versions, base, str(stack.datasets_dir))
