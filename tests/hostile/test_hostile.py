"""Hostile manifests and keys: only StackError escapes, and nothing outside is opened.

Manifests come from downloads. Hypothesis throws random manifests and store keys
at the reader while an audit hook records every file the process opens or lists.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kit.stackkit import write_base, write_version
from zarr.core.buffer import default_buffer_prototype

from sds_jupyter import Stack, StackError, open_stack
from sds_jupyter.stack.flatcopy import flatten
from sds_jupyter.stack.storage.ondisk import stack_cache_dir

_recording: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _recording is not None and event in ("open", "os.listdir", "os.scandir", "os.symlink", "os.rename", "os.mkdir"):
        target = args[0] if args else None
        if isinstance(target, (str, bytes, os.PathLike)):
            _recording.append(os.fsdecode(target))


sys.addaudithook(_audit)

HOSTILE_PATHS = [
    "../outside/secret.txt",
    "../../etc/passwd",
    "/etc/passwd",
    "a//b",
    "./a",
    "a/./b",
    "..",
    "a\\b",
    "",
    "escape/secret.txt",
    "link-out",
    "overlay",
    "zarr.json",
    "a/b/",
    "a\x00b",
    "C:\\x",
    "~/x",
    "%2e%2e/x",
    "a/../../b",
    "layer.json",
]
REFERENCES = [
    "cirro:::dataset:base/store.zarr",
    "cirro:::dataset:v0/layer.json",
    "cirro:::dataset:top/layer.json",
    "cirro:::dataset:../x",
    "cirro:::dataset:escape/secret.txt",
    "cirro:::dataset:base/../../x",
    "cirro:::dataset:nope/layer.json",
    "cirro::::dataset:a/b",
    "cirro:t:p:dataset:base/store.zarr",
    "file:///etc/passwd",
    "cirro:::dataset:base//store.zarr",
    "cirro:::dataset:link-out/layer.json",
]
paths = st.one_of(st.sampled_from(HOSTILE_PATHS), st.text(max_size=12))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(allow_nan=False), paths),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
files = st.lists(
    st.one_of(st.fixed_dictionaries({"key": paths, "size": st.one_of(st.integers(-1, 99), json_values)}), json_values),
    max_size=4,
)
manifests = st.fixed_dictionaries(
    {
        "format": st.one_of(st.just("spatial-data-studio.layer"), json_values),
        "format_version": st.one_of(st.just(1), json_values),
        "parent": st.one_of(st.sampled_from(REFERENCES), json_values),
    },
    optional={
        "overlay": st.one_of(paths, json_values),
        "files": st.one_of(files, json_values),
        "deleted": st.one_of(st.lists(paths, max_size=4), json_values),
        "changes": st.one_of(
            st.lists(st.dictionaries(st.sampled_from(["op", "x"]), json_values), max_size=2), json_values
        ),
        "depth": json_values,
        "title": json_values,
        "app": json_values,
    },
)
folder_maps = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["base", "v0", "nope", "bad id"]), st.one_of(paths, json_values), max_size=2),
    st.text(max_size=10),
)


@pytest.fixture(scope="module")
def arena() -> Path:
    """A datasets folder with a base, a good version, and links that lead outside it."""
    root = Path(tempfile.mkdtemp(prefix="sds-hostile-"))
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (outside / "layer.json").write_text(
        json.dumps(
            {"format": "spatial-data-studio.layer", "format_version": 1, "parent": "cirro:::dataset:base/store.zarr"}
        )
    )
    datasets = root / "datasets"
    datasets.mkdir()
    write_base(datasets, "base", {"a/b": b"ab", "tables/zarr.json": b"{}"})
    os.symlink(outside, datasets / "base" / "store.zarr" / "escape")
    os.symlink(outside, datasets / "link-out")
    write_version(datasets, "v0", "cirro:::dataset:base/store.zarr", {"a/c": b"ac"})
    os.symlink(outside / "secret.txt", datasets / "v0" / "overlay" / "link-out")
    (datasets / "top").mkdir()
    yield datasets
    shutil.rmtree(root)


#: What the records of resolved stacks open by name through their folder's descriptor (the audit
#: sees the bare name): a record, or the new file a record is written to before its rename.
_RECORD_NAME = re.compile(r"\.?[0-9a-f]{32}\.(json|tmp)")


def _allowed(path: str, datasets: Path, scratch: Path) -> bool:
    if not os.path.isabs(path) and _RECORD_NAME.fullmatch(path):
        return True
    real = os.path.realpath(path)
    roots = [datasets.resolve(), scratch.resolve()]
    records = stack_cache_dir()  # the records of resolved stacks (docs/safety.md): the test's own folder
    if records is not None:
        roots.append(records.resolve())
    return any(real == str(r) or real.startswith(str(r) + os.sep) for r in roots)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(manifest=manifests, folders=folder_maps, keys=st.lists(paths, max_size=4))
def test_random_manifests_raise_only_stack_errors_and_stay_inside(
    arena: Path, manifest: dict[str, Any], folders: Any, keys: list[str]
) -> None:
    global _recording
    (arena / "top" / "layer.json").write_text(json.dumps(manifest))
    scratch = Path(tempfile.mkdtemp(dir=arena.parent, prefix="out-"))
    _recording = []
    try:
        try:
            stack = Stack.resolve(arena / "top", folders=folders)
            store = open_stack(stack)
            for key in keys:
                asyncio.run(store.get(key, default_buffer_prototype()))
                asyncio.run(store.exists(key))
            store.children_raw("")
            list(store.keys_raw(""))
            flatten(stack, scratch / "flat", progress=False)
        except StackError:
            pass
        opened, _recording = _recording, None
    finally:
        _recording = None
        shutil.rmtree(scratch, ignore_errors=True)
    escaped = [p for p in opened if not _allowed(p, arena, scratch)]
    assert escaped == []


@settings(max_examples=200, deadline=None, database=None)
@given(key=paths)
def test_random_keys_on_a_good_stack(arena: Path, key: str) -> None:
    global _recording
    store = open_stack(arena / "v0")
    _recording = []
    try:
        try:
            asyncio.run(store.get(key, default_buffer_prototype()))
        except StackError:
            pass
        opened = _recording
    finally:
        _recording = None
    assert [p for p in opened if not _allowed(p, arena, arena)] == []
