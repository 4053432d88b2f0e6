"""The copy-on-write store: zarr's own store conformance suite, plus the stack rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kit.stackkit import write_base, write_version
from zarr.core.buffer import Buffer, default_buffer_prototype
from zarr.core.buffer.cpu import Buffer as CpuBuffer
from zarr.testing.store import StoreTests

from sds_jupyter import Stack
from sds_jupyter.stack.write.cow import CopyOnWriteStore


def empty_stack(datasets: Path) -> Stack:
    """A stack that reads as an empty store: its one version whites out the base's only key."""
    base = write_base(datasets, "base", {})
    write_version(datasets, "v1", base, {}, deleted=["zarr.json"])
    return Stack.resolve(datasets / "v1")


class TestCopyOnWriteStoreConformance(StoreTests[CopyOnWriteStore, CpuBuffer]):
    store_cls = CopyOnWriteStore
    buffer_cls = CpuBuffer

    async def set(self, store: CopyOnWriteStore, key: str, value: Buffer) -> None:
        store.staged[key] = value.to_bytes()  # bypasses the store API, as the suite asks

    async def get(self, store: CopyOnWriteStore, key: str) -> Buffer:
        return self.buffer_cls.from_bytes(store.staged[key])

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        datasets = tmp_path / "datasets"
        datasets.mkdir()
        return {"stack": empty_stack(datasets)}

    def test_store_repr(self, store: CopyOnWriteStore) -> None:
        assert repr(store).startswith("CopyOnWriteStore('cow+stack://")

    def test_store_supports_writes(self, store: CopyOnWriteStore) -> None:
        assert store.supports_writes and store.supports_deletes

    def test_store_supports_listing(self, store: CopyOnWriteStore) -> None:
        assert store.supports_listing


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


@pytest.fixture
def cow(datasets: Path) -> CopyOnWriteStore:
    base = write_base(datasets, "base", {"g/a/c/0": b"a0", "g/a/c/1": b"a1", "g/b": b"b", "k": b"k"})
    write_version(datasets, "v1", base, {"v": b"v"})
    return CopyOnWriteStore(Stack.resolve(datasets / "v1"))


def read(store: CopyOnWriteStore, key: str) -> bytes | None:
    buffer = run(store.get(key, default_buffer_prototype()))
    return None if buffer is None else buffer.to_bytes()


def test_reads_fall_through_to_the_stack(cow: CopyOnWriteStore) -> None:
    assert read(cow, "v") == b"v" and read(cow, "g/b") == b"b"


def test_deleting_a_node_below_becomes_a_node_whiteout(cow: CopyOnWriteStore) -> None:
    run(cow.delete_dir("g/a"))
    assert cow.whiteouts == ["g/a/"]
    assert read(cow, "g/a/c/0") is None
    assert sorted(run(_collect(cow.list_dir("g")))) == ["b"]


def test_writing_after_deleting_keeps_the_whiteout_and_shows_the_new_files(cow: CopyOnWriteStore) -> None:
    run(cow.delete_dir("g/a"))
    run(cow.set("g/a/c/0", CpuBuffer.from_bytes(b"new")))
    assert read(cow, "g/a/c/0") == b"new"
    assert read(cow, "g/a/c/1") is None
    assert cow.whiteouts == ["g/a/"] and list(cow.staged) == ["g/a/c/0"]


def test_deleting_a_key_only_staged_leaves_no_whiteout(cow: CopyOnWriteStore) -> None:
    run(cow.set("fresh", CpuBuffer.from_bytes(b"x")))
    run(cow.delete("fresh"))
    assert cow.whiteouts == [] and cow.staged == {}
    run(cow.delete("k"))
    assert cow.whiteouts == ["k"]


def test_nothing_reaches_disk_before_commit(cow: CopyOnWriteStore, datasets: Path) -> None:
    before = sorted(p for p in datasets.rglob("*"))
    run(cow.set("g/new", CpuBuffer.from_bytes(b"x")))
    run(cow.delete_dir("g/a"))
    assert sorted(p for p in datasets.rglob("*")) == before


async def _collect(iterator):  # noqa: ANN001, ANN202
    return [item async for item in iterator]
