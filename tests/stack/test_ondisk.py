"""Resolved stacks kept on disk: a later process (or emptied caches) opens without a walk, never wrongly.

A record gives exactly the stack a walk gives, for every layout the walks handle; it is
used only while every file it read is proven unchanged (a manifest rewritten in place, a
hostile one swapped in, a place tried first filled: each is walked again, and refused if
it should be); and it is only read from a folder that is the user's own and closed to
others, never through a link. A new Python process really is served from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kit.stackkit import ROOT_DOC, chain, write_base, write_version
from kit.walks import CASES, walk_answer

from sds_jupyter.errors import StackError
from sds_jupyter.stack import Stack, StackStore
from sds_jupyter.stack import stack as stack_module
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.locator import RACY_FINE_SECONDS
from sds_jupyter.stack.storage import ondisk
from sds_jupyter.stack.storage.ondisk import DiskStacks


def _settle() -> None:
    """Files this new are never kept (they may still change unseen): wait out the window."""
    time.sleep(RACY_FINE_SECONDS * 2)


def _no_walk(*args: object) -> None:
    raise AssertionError("walked, where the record on disk should have answered")


def _from_disk_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack_module, "_walk", _no_walk)


@pytest.fixture
def disk(tmp_path: Path) -> DiskStacks:
    return DiskStacks(tmp_path / "records")


@pytest.mark.parametrize("name", list(CASES))
def test_a_record_gives_what_the_walk_gave(name: str, tmp_path: Path, disk: DiskStacks, monkeypatch) -> None:
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    top, folders = CASES[name][0](datasets, tmp_path / "outside")
    _settle()
    walked = walk_answer(top, folders)
    if walked[0] == "refused":  # nothing to keep: a refusal is worded by a walk each time
        with pytest.raises(StackError):
            Stack.resolve(top, folders=folders, caches=StackCaches(disk=disk))
        assert not list((tmp_path / "records").glob("*.json"))
        return
    Stack.resolve(top, folders=folders, caches=StackCaches(disk=disk))  # walks, and keeps the record
    assert len(list((tmp_path / "records").glob("*.json"))) == 1
    with monkeypatch.context() as patched:
        _from_disk_only(patched)
        fresh = StackCaches(disk=disk)
        loaded = Stack.resolve(top, folders=folders, caches=fresh)
        assert Stack.resolve(top, folders=folders, caches=fresh) is loaded  # then kept in memory too
    monkeypatch.setattr(stack_module, "_walk", _no_walk)
    versions = [
        (v.dataset_id, v.depth, str(v.folder), str(v.data_dir), str(v.overlay_dir), str(v.manifest_path), v.manifest)
        for v in loaded.versions
    ]
    base = (loaded.base.dataset_id, str(loaded.base.path), loaded.base.reference, loaded.base.kind)
    assert ("stack", versions, base, str(loaded.datasets_dir)) == walked
    assert loaded.fingerprint() == Stack.resolve(top, folders=folders, caches=StackCaches(disk=disk)).fingerprint()


def _deep(datasets: Path) -> Path:
    base = write_base(datasets, "base", {"a/zarr.json": ROOT_DOC, "a/c/0": b"base"})
    return chain(datasets, 4, base)


def test_reading_from_a_record_reads_what_the_walk_reads(tmp_path: Path, disk: DiskStacks, monkeypatch) -> None:
    top = _deep(tmp_path)
    _settle()
    walked = StackStore(Stack.resolve(top, caches=StackCaches(disk=disk)))
    _from_disk_only(monkeypatch)
    loaded = StackStore(Stack.resolve(top, caches=StackCaches(disk=disk)))
    keys = ["zarr.json", "a/zarr.json", "a/c/0", *(f"layer/{i}" for i in range(1, 5))]
    assert [loaded.read_raw(k) for k in keys] == [walked.read_raw(k) for k in keys]


def _rewrite_in_place(path: Path, change: Any) -> None:
    """Rewrite ``path`` to the same size with its mtime set back: only the ctime shows it."""
    info = path.stat()
    doc = json.loads(path.read_text())
    change(doc)
    text = json.dumps(doc)
    text = text + " " * (info.st_size - len(text))
    assert len(text) == info.st_size
    with open(path, "r+") as handle:
        handle.write(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_manifest_rewritten_in_place_is_read_again(tmp_path: Path, disk: DiskStacks) -> None:
    top = _deep(tmp_path)
    _settle()
    Stack.resolve(top, caches=StackCaches(disk=disk))
    _rewrite_in_place(tmp_path / "v2" / "layer.json", lambda doc: doc.update(title="renamed x"))
    again = Stack.resolve(top, caches=StackCaches(disk=disk))
    assert again.at(2).top.title == "renamed x"


def test_a_hostile_manifest_swapped_in_is_refused(tmp_path: Path, disk: DiskStacks) -> None:
    top = _deep(tmp_path)
    _settle()
    Stack.resolve(top, caches=StackCaches(disk=disk))
    _rewrite_in_place(tmp_path / "v1" / "layer.json", lambda doc: doc.update(overlay="../x"))
    with pytest.raises(StackError, match="overlay"):
        Stack.resolve(top, caches=StackCaches(disk=disk))


def test_a_folder_swapped_for_a_link_is_walked_again(tmp_path: Path, disk: DiskStacks) -> None:
    top = _deep(tmp_path)
    _settle()
    Stack.resolve(top, caches=StackCaches(disk=disk))
    os.rename(tmp_path / "v2", tmp_path / "v2-moved")
    os.symlink(tmp_path / "v2-moved", tmp_path / "v2")
    again = Stack.resolve(top, caches=StackCaches(disk=disk))
    assert str(again.at(2).top.folder) == str(tmp_path / "v2-moved")  # found the careful way, through the link


def test_a_place_tried_first_and_filled_since_is_walked_again(tmp_path: Path, disk: DiskStacks) -> None:
    parent = write_base(tmp_path, "base", {})
    for i in range(1, 4):
        parent = write_version(tmp_path, f"v{i}", parent, {f"k/{i}": b"x"}, under_data=True)
    _settle()
    Stack.resolve(tmp_path / "v3", caches=StackCaches(disk=disk))
    write_version(tmp_path, "v2", "cirro:::dataset:v1/layer.json", {"moved": b"1"})  # at the folder's top
    again = Stack.resolve(tmp_path / "v3", caches=StackCaches(disk=disk))
    assert StackStore(again).read_raw("moved") == b"1"


def test_the_path_opened_now_leading_elsewhere_is_walked_again(tmp_path: Path, disk: DiskStacks) -> None:
    top = _deep(tmp_path)
    os.symlink(tmp_path / "v4", tmp_path / "current")
    _settle()
    assert Stack.resolve(tmp_path / "current", caches=StackCaches(disk=disk)).depth == 4
    os.unlink(tmp_path / "current")
    os.symlink(tmp_path / "v2", tmp_path / "current")
    assert Stack.resolve(tmp_path / "current", caches=StackCaches(disk=disk)).depth == 2
    assert top.name == "v4"


def test_records_are_kept_only_in_a_private_folder_of_this_user(tmp_path: Path) -> None:
    top = _deep(tmp_path)
    _settle()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)  # whatever the umask
    Stack.resolve(top, caches=StackCaches(disk=DiskStacks(shared)))
    assert os.listdir(shared) == []  # a folder others may write to is not used
    made = tmp_path / "made" / "records"
    Stack.resolve(top, caches=StackCaches(disk=DiskStacks(made)))
    assert made.stat().st_mode & 0o777 == 0o700
    (record,) = made.glob("*.json")
    assert record.stat().st_mode & 0o777 == 0o600
    os.chmod(made, 0o750)  # opened up later: no longer believed
    assert DiskStacks(made).load(json.loads(record.read_text())["key"]) is None


def test_a_record_reached_through_a_link_is_not_read(tmp_path: Path, monkeypatch) -> None:
    top = _deep(tmp_path)
    _settle()
    disk = DiskStacks(tmp_path / "records")
    Stack.resolve(top, caches=StackCaches(disk=disk))
    (record,) = (tmp_path / "records").glob("*.json")
    key = json.loads(record.read_text())["key"]
    elsewhere = tmp_path / "elsewhere.json"
    os.rename(record, elsewhere)
    os.symlink(elsewhere, record)
    assert disk.load(key) is None
    os.unlink(record)
    os.symlink(tmp_path / "records", tmp_path / "records-link")
    os.rename(elsewhere, record)
    assert disk.load(key) is not None and DiskStacks(tmp_path / "records-link").load(key) is None


def test_a_damaged_or_foreign_record_is_walked_past(tmp_path: Path, disk: DiskStacks) -> None:
    top = _deep(tmp_path)
    _settle()
    first = Stack.resolve(top, caches=StackCaches(disk=disk))
    (record,) = (tmp_path / "records").glob("*.json")
    doc = json.loads(record.read_text())
    for damaged in (
        record.read_bytes()[:100],  # cut short
        json.dumps({**doc, "form": "sds-jupyter 0.0.1 stack record 1"}).encode(),  # another release's
        json.dumps({**doc, "key": "another key"}).encode(),  # another key's (a digest collision)
        json.dumps({**doc, "versions": [["v4"]]}).encode(),  # not of this shape
    ):
        record.write_bytes(damaged)
        assert Stack.resolve(top, caches=StackCaches(disk=disk)) == first  # walked, and kept anew


def test_records_stay_within_their_bounds(tmp_path: Path, disk: DiskStacks, monkeypatch) -> None:
    monkeypatch.setattr(ondisk, "MAX_RECORDS", 2)
    top = _deep(tmp_path)
    _settle()
    for name in ("v1", "v2", "v3", "v4"):
        Stack.resolve(tmp_path / name, caches=StackCaches(disk=disk))
    assert len(list((tmp_path / "records").glob("*.json"))) == 2
    assert not list((tmp_path / "records").glob(".*"))  # no temporary file left behind
    monkeypatch.setattr(ondisk, "MAX_RECORD_BYTES", 100)
    disk.clear()
    Stack.resolve(top, caches=StackCaches(disk=disk))
    assert not list((tmp_path / "records").glob("*.json"))


def test_off_keeps_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(ondisk.STACK_CACHE_ENV, "off")
    assert DiskStacks().folder is None
    monkeypatch.setenv(ondisk.STACK_CACHE_ENV, str(tmp_path / "mine"))
    assert DiskStacks().folder == tmp_path / "mine"
    monkeypatch.delenv(ondisk.STACK_CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert DiskStacks().folder == tmp_path / "xdg" / "sds-jupyter" / "stacks"


_OPEN_IN_A_NEW_PROCESS = """
import sys
from sds_jupyter.stack import Stack, StackStore
from sds_jupyter.stack import stack as stack_module
def no_walk(*args):
    raise AssertionError("walked")
stack_module._walk = no_walk
store = StackStore(Stack.resolve(sys.argv[1]))
print(store.stack.depth, store.read_raw("layer/4").decode())
"""


def test_a_new_process_opens_from_the_record(tmp_path: Path, monkeypatch) -> None:
    """The process's own caches keep records in the user's folder: another process is served from it."""
    monkeypatch.setenv(ondisk.STACK_CACHE_ENV, str(tmp_path / "user-records"))
    top = _deep(tmp_path)
    _settle()
    Stack.resolve(top)  # the process's own caches: the record goes to $SDS_STACK_CACHE
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_IN_A_NEW_PROCESS, str(top)], capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["4", "4"]


@pytest.mark.parametrize("under_data", [False, True], ids=["top", "data"])
@pytest.mark.parametrize("kept", ["in-memory", "on-disk"])
def test_an_overlay_swapped_for_another_folder_is_walked_again(
    tmp_path: Path, disk: DiskStacks, monkeypatch: pytest.MonkeyPatch, under_data: bool, kept: str
) -> None:
    """The overlay is proven by its data folder's identity (one lstat for both): an overlay renamed
    away and another renamed in, the data folder's mtime put back, still shows in its ctime."""
    parent = write_base(tmp_path, "base", {"a/zarr.json": ROOT_DOC})
    for i in range(1, 4):
        parent = write_version(tmp_path, f"v{i}", parent, {f"layer/{i}": b"old"}, under_data=under_data)
    top = tmp_path / "v3"
    _settle()
    caches = StackCaches(disk=disk)
    assert StackStore(Stack.resolve(top, caches=caches)).read_raw("layer/2") == b"old"
    data_dir = tmp_path / "v2" / "data" if under_data else tmp_path / "v2"
    before = data_dir.stat()
    (tmp_path / "swap" / "layer").mkdir(parents=True)
    (tmp_path / "swap" / "layer" / "2").write_bytes(b"new")  # the size the manifest lists
    os.rename(data_dir / "overlay", tmp_path / "old-overlay")
    os.rename(tmp_path / "swap", data_dir / "overlay")
    os.utime(data_dir, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (data_dir.stat().st_ino, data_dir.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    walks: list[object] = []
    real_walk = stack_module._walk

    def counted(*args: Any) -> Any:
        walks.append(args)
        return real_walk(*args)

    monkeypatch.setattr(stack_module, "_walk", counted)
    again = Stack.resolve(top, caches=caches if kept == "in-memory" else StackCaches(disk=disk))
    assert len(walks) == 1, "the kept stack was served though its overlay was swapped"
    assert StackStore(again).read_raw("layer/2") == b"new"


def test_a_deep_stack_is_proven_by_two_lstats_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm open proves each version by its manifest and its data folder (which covers the overlay)."""
    top = _deep(tmp_path)
    _settle()
    caches = StackCaches()
    Stack.resolve(top, caches=caches)
    seen: list[str] = []
    real_lstat = os.lstat

    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        seen.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(stack_module.os, "lstat", counted)
    Stack.resolve(top, caches=caches)
    assert sum(path.endswith(os.sep + "layer.json") for path in seen) == 4
    assert not [path for path in seen if path.endswith(os.sep + "overlay")], "the data folder proves its overlay"
