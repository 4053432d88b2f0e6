"""Issue 24, item 16: zarr's own store conformance suite run on the read-only stack store.

The suite's backend writes go into the stack's base folder, bypassing the store, and every read
goes through the store. Only the suite's tests that write through the store are replaced: a
stack store refuses every write (a stack changes only by a new version), so each of those now
checks the refusal instead. The other replacements say why where they stand.
"""

from __future__ import annotations

import pickle
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from kit.stackkit import ROOT_DOC, write_base, write_version
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import Buffer, default_buffer_prototype
from zarr.core.buffer.cpu import Buffer as CpuBuffer
from zarr.testing.store import StoreTests

from sds_jupyter import Stack, StackStore

READ_ONLY = "store was opened in read-only mode and does not support writing"


def _base_folder(store: StackStore) -> Path:
    return Path(str(store.stack.base.path))


def _refused(store: StackStore) -> AbstractContextManager[Any]:
    assert store.read_only
    return pytest.raises(ValueError, match=READ_ONLY)


class TestStackStoreConformance(StoreTests[StackStore, CpuBuffer]):
    store_cls = StackStore
    buffer_cls = CpuBuffer

    async def set(self, store: StackStore, key: str, value: Buffer) -> None:
        path = _base_folder(store) / key  # the base's folder: the store only reads it
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value.to_bytes())

    async def get(self, store: StackStore, key: str) -> Buffer:
        return self.buffer_cls.from_bytes((_base_folder(store) / key).read_bytes())

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        datasets = tmp_path / "datasets"
        datasets.mkdir()
        base = write_base(datasets, "base", {})
        write_version(datasets, "v1", base, {"layer/zarr.json": ROOT_DOC})
        return {"stack": Stack.resolve(datasets / "v1"), "read_only": True}

    def test_store_repr(self, store: StackStore) -> None:
        assert repr(store).startswith("StackStore('stack://") and repr(store).endswith("depth=1)")

    def test_store_supports_writes(self, store: StackStore) -> None:
        assert not store.supports_writes and not store.supports_deletes

    def test_store_supports_listing(self, store: StackStore) -> None:
        assert store.supports_listing

    # -- newer zarr's sync reads: the object goes in through the base folder, not the store ----

    @pytest.mark.parametrize(
        "byte_range",
        [None, RangeByteRequest(1, 4), OffsetByteRequest(1), SuffixByteRequest(1), RangeByteRequest(10, 20)],
        ids=["none", "range", "offset", "suffix", "range-past-eof"],
    )
    async def test_get_sync_byte_range_parity(self, store: StackStore, byte_range: Any) -> None:
        """Replaced (zarr 3.2+ asks for it): the suite writes through the store, which a stack refuses."""
        if not callable(getattr(store, "get_sync", None)):
            pytest.skip("this zarr's stores have no get_sync")
        await self.set(store, "parity_byte_range", self.buffer_cls.from_bytes(b"\x01\x02\x03\x04"))
        in_sync = store.get_sync("parity_byte_range", byte_range=byte_range)  # type: ignore[attr-defined]
        awaited = await store.get("parity_byte_range", prototype=default_buffer_prototype(), byte_range=byte_range)
        if awaited is None:
            assert in_sync is None
        else:
            assert in_sync is not None and in_sync.to_bytes() == awaited.to_bytes()

    # -- read-only: replaced, as the suite assumes a store opened writable ----------------------

    def test_store_read_only(self, store: StackStore) -> None:
        assert store.read_only
        with pytest.raises(AttributeError):
            store.read_only = False  # type: ignore[misc]

    @pytest.mark.parametrize("read_only", [True, False])
    async def test_store_open_read_only(self, open_kwargs: dict[str, Any], read_only: bool) -> None:
        if not read_only:
            with pytest.raises(ValueError, match="a StackStore is read-only; save changes"):
                await self.store_cls.open(**{**open_kwargs, "read_only": False})
            return
        store = await self.store_cls.open(**open_kwargs)
        assert store._is_open and store.read_only

    async def test_with_read_only_store(self, open_kwargs: dict[str, Any]) -> None:
        store = await self.store_cls.open(**open_kwargs)
        with pytest.raises(ValueError, match="a StackStore is read-only; save changes"):
            store.with_read_only(read_only=False)
        reader = store.with_read_only(read_only=True)
        assert reader == store and reader.read_only
        with _refused(reader):
            await reader.set("foo", self.buffer_cls.from_bytes(b"bar"))
        with _refused(reader):
            await reader.delete("foo")

    async def test_serializable_store(self, store: StackStore) -> None:
        """As the suite's, with the key written through the backend (the store refuses writes)."""
        new_store: StackStore = pickle.loads(pickle.dumps(store))
        assert new_store == store and new_store.read_only
        await self.set(store, "foo", self.buffer_cls.from_bytes(b"\x01\x02\x03\x04"))
        observed = await new_store.get("foo", prototype=default_buffer_prototype())
        assert observed is not None and observed.to_bytes() == b"\x01\x02\x03\x04"

    async def test_is_empty(self, store: StackStore) -> None:
        """As the suite's, but a stack's base always holds its root ``zarr.json``: the root is never empty."""
        assert not await store.is_empty("")
        await self.set(store, "foo/bar", self.buffer_cls.from_bytes(b"something"))
        assert await store.is_empty("fo")
        assert not await store.is_empty("foo/")
        assert not await store.is_empty("foo")
        assert await store.is_empty("spam/")

    # -- writes through the store: refused ---------------------------------------------------

    async def _assert_writes_refused(self, store: StackStore) -> None:
        data = self.buffer_cls.from_bytes(b"bar")
        with _refused(store):
            await store.set("foo/zarr.json", data)
        with _refused(store):
            await store.set_if_not_exists("k2", data)
        with _refused(store):
            await store._set_many([("c/0", data)])
        with _refused(store):
            await store.delete("zarr.json")
        with _refused(store):
            await store.delete_dir("layer")
        assert not (_base_folder(store) / "foo").exists() and not (_base_folder(store) / "c").exists()
        assert await store.exists("zarr.json") and await store.exists("layer/zarr.json")

    async def test_set(self, store: StackStore) -> None:  # type: ignore[override]
        await self._assert_writes_refused(store)

    async def test_set_not_open(self, store_not_open: StackStore) -> None:
        assert not store_not_open._is_open
        await self._assert_writes_refused(store_not_open)

    async def test_set_many(self, store: StackStore) -> None:
        await self._assert_writes_refused(store)

    async def test_set_if_not_exists(self, store: StackStore) -> None:
        await self._assert_writes_refused(store)

    async def test_exists(self, store: StackStore) -> None:
        assert not await store.exists("foo/zarr.json")
        await self._assert_writes_refused(store)
        await self.set(store, "foo/zarr.json", self.buffer_cls.from_bytes(b"bar"))
        assert await store.exists("foo/zarr.json")

    async def test_clear(self, store: StackStore) -> None:
        with pytest.raises(NotImplementedError):  # zarr's answer for a store without deletes
            await store.clear()
        assert await store.exists("zarr.json")

    # -- listings: the suite fills the store through its own writes; here through the backend --

    async def test_getsize_prefix(self, store: StackStore) -> None:
        data = self.buffer_cls.from_bytes(b"\x01\x02\x03\x04")
        for key in ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]:
            await self.set(store, key, data)
        assert await store.getsize_prefix("c") == 16

    async def test_list(self, store: StackStore) -> None:
        before = sorted([key async for key in store.list()])
        assert before == ["layer/zarr.json", "zarr.json"]
        added = ["foo/zarr.json", *(f"foo/c/{i}" for i in range(10))]
        for key in added:
            await self.set(store, key, self.buffer_cls.from_bytes(b""))
        assert sorted([key async for key in store.list()]) == sorted(before + added)

    async def test_list_prefix(self, store: StackStore) -> None:
        for prefix in ("a/", "a/b/", "a/b/c/"):
            await self.set(store, f"{prefix}zarr.json", self.buffer_cls.from_bytes(b""))
        everything = ["a/b/c/zarr.json", "a/b/zarr.json", "a/zarr.json", "layer/zarr.json", "zarr.json"]
        for prefix in ("", "a/", "a/b/", "a/b/c/"):
            observed = sorted([key async for key in store.list_prefix(prefix)])
            assert observed == [key for key in everything if key.startswith(prefix)]

    async def test_list_empty_path(self, store: StackStore) -> None:
        added = ["foo/bar/zarr.json", "foo/bar/c/1", "foo/baz/c/0"]
        for key in added:
            await self.set(store, key, self.buffer_cls.from_bytes(b""))
        everything = sorted([*added, "layer/zarr.json", "zarr.json"])
        assert sorted([key async for key in store.list()]) == everything
        assert sorted([key async for key in store.list_prefix("")]) == everything
        assert sorted([key async for key in store.list_prefix("foo/bar/")]) == ["foo/bar/c/1", "foo/bar/zarr.json"]

    async def test_list_dir(self, store: StackStore) -> None:
        assert sorted([name async for name in store.list_dir("")]) == ["layer", "zarr.json"]
        for key in ["foo/zarr.json", "foo/c/1", "foo/bar/first", "foo/bar/second/zarr.json"]:
            await self.set(store, key, self.buffer_cls.from_bytes(b"1"))
        for root, expected in (("foo", ["bar", "c", "zarr.json"]), ("foo/bar", ["first", "second"])):
            assert sorted([name async for name in store.list_dir(root)]) == expected
            assert sorted([name async for name in store.list_dir(root + "/")]) == expected
