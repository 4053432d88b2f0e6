"""The caches that make a deep stack cheap to open again and to read, and their staleness rules.

Every cache is keyed so that a changed or replaced file is never served: a manifest
rewritten in place (even to the same size with its mtime set back), replaced by a
rename, or a folder swapped for a link. Files changed within the last
``RACY_SECONDS`` are never cached; most tests set that window to 0 so that the
files they have just written are cached, and one test checks the window itself.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kit.repo import ROOT
from kit.stackkit import chain, write_base, write_version

from sds_jupyter import Stack, StackError
from sds_jupyter.errors import StackChangedError, UnsafePathError
from sds_jupyter.stack import StackStore, locator, open_stack
from sds_jupyter.stack.caches import default_caches
from sds_jupyter.stack.storage.paths import PLAIN_RELATIVE
from sds_jupyter.stack.write.cow import CopyOnWriteStore

#: The process's caches, what every call here uses (none passes its own).
CACHES = default_caches()


@pytest.fixture(autouse=True)
def empty_caches() -> None:
    CACHES.clear()


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locator, "RACY_SECONDS", 0.0)


@pytest.fixture
def top(datasets: Path) -> Path:
    base = write_base(datasets, "base", {"a/zarr.json": b"{}", "a/c/0": b"base"})
    return chain(datasets, 3, base)


def _rewrite_keeping_size_and_mtime(path: Path, edit: dict[str, object]) -> None:
    """Rewrite ``path`` in place (same inode) to the same size, then set its mtime back."""
    before = path.stat()
    text = path.read_text()
    doc = json.loads(text)
    doc.update(edit)
    new = json.dumps(doc)
    assert len(new) == len(text), "the edit must keep the size"
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


@pytest.mark.usefixtures("no_racy_window")
def test_opening_again_reuses_the_resolved_stack(top: Path) -> None:
    first = Stack.resolve(top)
    assert Stack.resolve(top) is first
    assert Stack.resolve(top, folders={"x": "y"}) is not first, "another folder map is another key"


@pytest.mark.usefixtures("no_racy_window")
@pytest.mark.parametrize("forget_stacks", [False, True], ids=["stack-cache", "manifest-cache"])
def test_a_manifest_rewritten_to_the_same_size_and_mtime_is_read_again(
    top: Path, datasets: Path, forget_stacks: bool
) -> None:
    assert Stack.resolve(top).versions[1].title == "version v2"
    _rewrite_keeping_size_and_mtime(datasets / "v2" / "layer.json", {"title": "VERSION V2"})
    if forget_stacks:
        CACHES.stacks.clear()  # only the parsed-manifest cache is left to be stale
    assert Stack.resolve(top).versions[1].title == "VERSION V2"


@pytest.mark.usefixtures("no_racy_window")
def test_a_manifest_replaced_by_a_rename_is_read_again(top: Path, datasets: Path) -> None:
    Stack.resolve(top)
    manifest = datasets / "v1" / "layer.json"
    doc = json.loads(manifest.read_text())
    doc["title"] = "renamed in"
    (datasets / "v1" / "new.json").write_text(json.dumps(doc))
    os.replace(datasets / "v1" / "new.json", manifest)
    assert Stack.resolve(top).versions[2].title == "renamed in"


@pytest.mark.usefixtures("no_racy_window")
def test_a_version_folder_swapped_for_a_link_outside_is_refused_not_served(
    top: Path, datasets: Path, tmp_path: Path
) -> None:
    Stack.resolve(top)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(datasets / "v2", outside / "v2")  # the same manifest inode, now outside
    os.symlink(outside / "v2", datasets / "v2")
    with pytest.raises(StackError, match="outside"):
        Stack.resolve(top)


@pytest.mark.usefixtures("no_racy_window")
def test_an_overlay_swapped_for_a_link_after_the_open_does_not_lead_a_read_out(
    top: Path, datasets: Path, tmp_path: Path
) -> None:
    store = open_stack(top)
    assert store.read_raw("layer/2") == b"2"
    outside = tmp_path / "elsewhere"
    (outside / "layer").mkdir(parents=True)
    (outside / "layer" / "2").write_bytes(b"secret")
    shutil.rmtree(datasets / "v2" / "overlay")
    os.symlink(outside, datasets / "v2" / "overlay")
    with pytest.raises(UnsafePathError, match="outside"):
        store.read_raw("layer/2")
    with pytest.raises(StackError, match="outside"):
        open_stack(top)


@pytest.mark.usefixtures("no_racy_window")
def test_a_link_inside_the_overlay_still_reads(top: Path, datasets: Path) -> None:
    overlay = datasets / "v2" / "overlay"
    (overlay / "layer" / "2").rename(overlay / "real")
    os.symlink(overlay / "real", overlay / "layer" / "2")  # absolute, and inside: allowed
    assert open_stack(top).read_raw("layer/2") == b"2"


def test_files_changed_just_now_are_not_cached(top: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locator, "RACY_FINE_SECONDS", 3600.0)  # every file here changed "just now"
    first = Stack.resolve(top)
    assert Stack.resolve(top) is not first
    assert len(CACHES.manifests) == 0


@pytest.mark.usefixtures("no_racy_window")
def test_a_local_store_pickles_small_and_reopens(top: Path) -> None:
    store = open_stack(top)
    data = pickle.dumps(store)
    assert len(data) < 1000
    copy = pickle.loads(data)
    assert isinstance(copy, StackStore) and copy == store
    assert copy.read_raw("layer/1") == b"1" and copy.read_raw("a/c/0") == b"base"
    lower = StackStore(store.stack.at(1))
    assert pickle.loads(pickle.dumps(lower)).stack.depth == 1


@pytest.mark.usefixtures("no_racy_window")
def test_unpickling_into_a_changed_stack_is_refused(top: Path, datasets: Path) -> None:
    store = open_stack(top)
    data = pickle.dumps(store)
    assert pickle.loads(data).stack is store.stack, "in this process, a live stack is shared"
    del store
    CACHES.stacks.clear()
    gc.collect()  # the stack is gone: unpickling now opens it again, as a worker would
    manifest = datasets / "v1" / "layer.json"
    doc = json.loads(manifest.read_text())
    doc["title"] = "changed since"
    manifest.write_text(json.dumps(doc))
    with pytest.raises(StackChangedError, match="changed since this store was pickled"):
        pickle.loads(data)


@pytest.mark.usefixtures("no_racy_window")
def test_a_store_unpickled_in_this_process_shares_nothing_it_can_change(top: Path) -> None:
    """Sharing the live stack is safe: the stack never changes, and what a store can change is its own.

    Closing the copy leaves the original reading; a copy-on-write store pickles its
    staged writes by value, so writes to the copy never reach the original (nor back).
    """
    store = open_stack(top)
    copy = pickle.loads(pickle.dumps(store))
    assert copy.stack is store.stack and copy is not store
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.stack.versions = ()  # type: ignore[misc]
    copy.close()
    assert store.read_raw("layer/1") == b"1" and store.read_raw("a/c/0") == b"base"

    cow = CopyOnWriteStore(store)
    cow.write_raw("x/zarr.json", b"{}")
    twin = pickle.loads(pickle.dumps(cow))
    assert twin.read_raw("x/zarr.json") == b"{}" and twin.below.stack is store.stack
    twin.write_raw("y/zarr.json", b"{}")
    twin.delete_node("x")
    cow.write_raw("z/zarr.json", b"{}")
    assert cow.read_raw("x/zarr.json") == b"{}" and not cow.exists_raw("y/zarr.json")
    assert not twin.exists_raw("z/zarr.json") and not twin.exists_raw("x/zarr.json")
    assert store.read_raw("x/zarr.json") is None and store.read_raw("y/zarr.json") is None


@pytest.mark.usefixtures("no_racy_window")
def test_dask_tokenizes_by_fingerprint(top: Path, datasets: Path) -> None:
    tokenize = pytest.importorskip("dask.base").tokenize
    store = open_stack(top)
    token = tokenize(store)
    assert tokenize(open_stack(top)) == token
    assert tokenize(StackStore(store.stack.at(2))) != token
    write_version(datasets, "v4", "cirro:::dataset:v3/layer.json", {"layer/4": b"4"})
    assert tokenize(open_stack(datasets / "v4")) != token


def _segment_rule(value: str) -> bool:
    """The relative-path rule, written segment by segment (what the pattern must agree with)."""
    return (
        value != ""
        and "\\" not in value
        and "\x00" not in value
        and all(s not in ("", ".", "..") for s in value.split("/"))
    )


@given(st.text(alphabet="ab./\\\x00\n", max_size=12))
def test_the_compiled_key_rule_agrees_with_the_segment_rule(value: str) -> None:
    assert (PLAIN_RELATIVE.fullmatch(value) is not None) == _segment_rule(value)


@pytest.mark.usefixtures("no_racy_window")
def test_a_deep_extra_field_is_refused_where_the_kept_value_nests_too_deep(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    nested: object = []
    for _ in range(63):
        nested = [nested]  # 64 levels: with the manifest object around it, 65
    write_version(datasets, "top", base, {"k": b"v"}, manifest={"x-extra": nested})
    with pytest.raises(StackError, match="nests more than 64 levels"):
        Stack.resolve(datasets / "top")
    write_version(datasets, "ok", base, {"k": b"v"}, manifest={"x-extra": nested[0]})  # type: ignore[index]
    assert Stack.resolve(datasets / "ok").versions[0].manifest.extra["x-extra"] == nested[0]  # type: ignore[index]


def test_another_process_reopens_a_pickled_store_and_reads(top: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "store.pickle").write_bytes(pickle.dumps(open_stack(top)))
    code = (
        "import pickle, sys; store = pickle.loads(open(sys.argv[1], 'rb').read()); "
        "print(store.stack.depth, store.read_raw('layer/3').decode(), store.read_raw('a/c/0').decode())"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "store.pickle")], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "3", "base"]


def test_the_racy_window_follows_the_grain_of_the_timestamps() -> None:
    """Whole-second stamps may hide a change for up to two seconds; finer ones for a few ticks."""
    now = 1_700_000_000 * 10**9
    fine, whole = now - 300_000_000 + 1, now - 10**9
    assert locator.settled(fine, fine, now_ns=now), "a sub-second stamp 0.3 s old is settled"
    assert not locator.settled(whole, whole, now_ns=now), "a whole-second stamp 1 s old is not"
    assert not locator.settled(now - 1_000_000 + 1, now_ns=now), "1 ms is within a tick"
    assert not locator.settled(now + 10**9 + 1, now_ns=now), "a stamp in the future is not"


def _settle() -> None:
    """Wait out the racy window for sub-second timestamps (what this machine's disks have)."""
    import time

    time.sleep(getattr(locator, "RACY_FINE_SECONDS", 0.05) * 2)


def test_a_save_beside_a_stack_keeps_it_cached_while_its_own_manifest_change_shows(datasets: Path) -> None:
    """Freshness is proven per file the stack read, not by the datasets folder's mtime."""
    base = write_base(datasets, "base", {"a/zarr.json": b"{}", "a/c/0": b"base"})
    top = chain(datasets, 3, base)
    _settle()
    first = Stack.resolve(top)
    assert Stack.resolve(top) is first
    hits = CACHES.stacks.hits

    before = os.stat(datasets).st_mtime_ns
    write_version(datasets, "w1", "cirro:::dataset:v2/layer.json", {"layer/w": b"w"})  # another save, beside
    assert os.stat(datasets).st_mtime_ns != before, "the datasets folder changed"
    assert Stack.resolve(top) is first, "a save into the folder left this stack's cache alone"
    assert CACHES.stacks.hits == hits + 1

    manifest = datasets / "v2" / "layer.json"
    doc = json.loads(manifest.read_text())
    doc["title"] = "edited"
    manifest.write_text(json.dumps(doc))
    again = Stack.resolve(top)
    assert again is not first and again.versions[1].title == "edited"
    assert CACHES.stacks.hits == hits + 1


def test_a_manifest_appearing_where_the_walk_found_none_is_seen(datasets: Path) -> None:
    """A version found under data/ is found at the folder's top instead once a manifest appears there."""
    base = write_base(datasets, "base", {"a/zarr.json": b"{}"})
    write_version(datasets, "v1", base, {"layer/1": b"1"}, under_data=True)
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"layer/2": b"2"})
    _settle()
    first = Stack.resolve(datasets / "v2")
    assert Stack.resolve(datasets / "v2") is first
    assert first.versions[1].data_dir.name == "data"
    write_version(datasets, "v1", base, {"layer/1": b"one"}, manifest={"title": "at the top"})
    assert Stack.resolve(datasets / "v2").versions[1].title == "at the top"


def test_a_dataset_folder_swapped_for_a_link_to_itself_is_not_served_from_the_cache(datasets: Path) -> None:
    """The same manifest inode through a link: the folder's identity (not its mtime) shows the swap."""
    base = write_base(datasets, "base", {"a/zarr.json": b"{}"})
    top = chain(datasets, 2, base)
    _settle()
    first = Stack.resolve(top)
    assert Stack.resolve(top) is first
    os.rename(datasets / "v1", datasets / "v1-moved")
    os.symlink(datasets / "v1-moved", datasets / "v1")
    again = Stack.resolve(top)
    assert again is not first
    assert again.versions[1].folder.name == "v1-moved", "the walk followed the link to its real place"
