"""The zarr Store API on top of five synchronous primitives.

The read-only stack store and the copy-on-write store answer the same reads
from different places; both implement ``read_raw``, ``exists_raw``,
``size_raw``, ``keys_raw`` and ``children_raw``, and this base turns those into
zarr's asynchronous API (and its synchronous read protocol) once. Every one of
them may touch storage (a disk, or a round trip to object storage), so each runs
in a worker thread, never on zarr's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, default_buffer_prototype

if TYPE_CHECKING:
    from zarr.core.buffer import BufferPrototype

__all__ = ["RawKeyStore"]


class RawKeyStore(Store):
    """A zarr store whose reads are the subclass's synchronous ``*_raw`` methods."""

    supports_listing: bool = True

    # -- the primitives ------------------------------------------------------------------

    def read_raw(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """The bytes of ``key`` (or the requested range), or None if absent."""
        raise NotImplementedError

    def exists_raw(self, key: str) -> bool:
        raise NotImplementedError

    def size_raw(self, key: str) -> int | None:
        data = self.read_raw(key)
        return None if data is None else len(data)

    def keys_raw(self, prefix: str = "") -> Iterator[str]:
        """Every key starting with ``prefix``."""
        raise NotImplementedError

    def children_raw(self, prefix: str) -> list[str]:
        """Immediate child names of ``prefix``, sorted, without trailing slashes."""
        raise NotImplementedError

    def read_for_zarr(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """What zarr is handed for ``key``: :meth:`read_raw`, unless a subclass checks it first
        (the stack's store checks every chunk's inflation, :mod:`sds_jupyter.stack.inflate`)."""
        return self.read_raw(key, byte_range)

    # -- zarr's synchronous read protocol --------------------------------------------------

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        data = self.read_for_zarr(key, byte_range)
        return None if data is None else (prototype or default_buffer_prototype()).buffer.from_bytes(data)

    # -- the zarr Store API ----------------------------------------------------------------

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        # docstring inherited
        data = await asyncio.to_thread(self.read_for_zarr, key, byte_range)
        return None if data is None else (prototype or default_buffer_prototype()).buffer.from_bytes(data)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        # docstring inherited
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        # docstring inherited
        return await asyncio.to_thread(self.exists_raw, key)

    async def getsize(self, key: str) -> int:
        # docstring inherited
        size = await asyncio.to_thread(self.size_raw, key)
        if size is None:
            raise FileNotFoundError(key)
        return size

    async def list(self) -> AsyncIterator[str]:
        # docstring inherited
        for key in await asyncio.to_thread(_collect, self.keys_raw, ""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        # docstring inherited
        for key in await asyncio.to_thread(_collect, self.keys_raw, prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        # docstring inherited
        for name in await asyncio.to_thread(self.children_raw, prefix):
            yield name


def _collect(keys: Callable[[str], Iterable[str]], prefix: str) -> list[str]:
    """Run a listing to its end (in a worker thread: a listing may be a LIST request)."""
    return list(keys(prefix))
