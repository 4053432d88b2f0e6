"""A writable zarr store over a stack: the staging area of a new version.

Writes are held in memory as the new version's objects; deletes become its
whiteouts. Reads see the staged objects first, then the stack below, less what
was deleted, so zarr, anndata and spatialdata can read and write through it as
if it were the store itself. Nothing touches disk until
:meth:`VersionWriter.commit <sds_jupyter.stack.write.writer.VersionWriter.commit>`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from zarr.abc.store import ByteRequest
from zarr.core.buffer import Buffer

from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.storage.paths import check_relative_path
from sds_jupyter.stack.storage.rawstore import RawKeyStore
from sds_jupyter.stack.storage.sources import slice_range
from sds_jupyter.stack.store import StackStore

__all__ = ["CopyOnWriteStore"]


class CopyOnWriteStore(RawKeyStore):
    """A zarr store whose writes become a new version on top of ``stack``."""

    supports_writes: bool = True
    supports_deletes: bool = True
    supports_partial_writes: bool = False  # type: ignore[assignment]
    supports_listing: bool = True

    def __init__(self, stack: Stack | StackStore, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.below = stack if isinstance(stack, StackStore) else StackStore(stack)
        self.staged: dict[str, bytes] = {}
        self.deleted_keys: set[str] = set()
        self.deleted_nodes: set[str] = set()

    # -- identity -------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CopyOnWriteStore)
            and other.below == self.below
            and other.staged == self.staged
            and other.whiteouts == self.whiteouts
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: equal stores may change apart

    def __str__(self) -> str:
        return f"cow+{self.below}"

    def __repr__(self) -> str:
        return f"CopyOnWriteStore('{self}', staged={len(self.staged)})"

    def with_read_only(self, read_only: bool = False) -> CopyOnWriteStore:
        # docstring inherited
        view = CopyOnWriteStore(self.below, read_only=read_only)
        view.staged, view.deleted_keys, view.deleted_nodes = (
            self.staged,
            self.deleted_keys,
            self.deleted_nodes,
        )
        return view

    # -- the composed view, synchronous ---------------------------------------------------

    def _hidden_below(self, key: str) -> bool:
        if key in self.deleted_keys:
            return True
        # a key in a deleted node starts with that node's path and a slash: one C-level test
        # (a commit asks this of every node of a deep stack's index)
        return bool(self.deleted_nodes) and key.startswith(self._deleted_prefixes())

    def _deleted_prefixes(self) -> tuple[str, ...]:
        return tuple(f"{node}/" for node in self.deleted_nodes)

    def read_raw(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        if key in self.staged:
            return slice_range(self.staged[key], byte_range)
        if self._hidden_below(key):
            return None
        return self.below.read_raw(key, byte_range)

    def read_for_zarr(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Staged bytes as staged (this process wrote them); what shows from below, checked as the stack's
        store checks it, so reading through a writer holds a downloaded chunk to the same inflation bound."""
        if key in self.staged:
            return slice_range(self.staged[key], byte_range)
        if self._hidden_below(key):
            return None
        return self.below.read_for_zarr(key, byte_range)

    def exists_raw(self, key: str) -> bool:
        if key in self.staged:
            return True
        return not self._hidden_below(key) and self.below.exists_raw(key)

    def existing_raw(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` exist, as :meth:`exists_raw` says of each, with the deleted nodes' prefixes
        built once: a commit asks this of every node of a deep stack's index (540 here and there)."""
        staged, gone_keys, below = self.staged, self.deleted_keys, self.below
        prefixes = self._deleted_prefixes()
        return {
            key
            for key in keys
            if key in staged
            or (key not in gone_keys and not (prefixes and key.startswith(prefixes)) and below.exists_raw(key))
        }

    def keys_raw(self, prefix: str = "") -> Iterator[str]:
        staged = sorted(k for k in self.staged if k.startswith(prefix))
        yield from staged
        own = set(staged)
        for key in self.below.keys_raw(prefix):
            if key not in own and not self._hidden_below(key):
                yield key

    def children_raw(self, prefix: str) -> list[str]:
        prefix = prefix.rstrip("/")
        lead = f"{prefix}/" if prefix else ""
        names = {k[len(lead) :].split("/", 1)[0] for k in self.staged if k.startswith(lead)}
        if prefix and self._node_deleted(prefix):
            return sorted(names)
        for name in self.below.children_raw(prefix):
            if name in names:
                continue
            full = f"{lead}{name}"
            if full in self.deleted_nodes:
                continue
            if (
                (not self._deletions_under(full) and full not in self.deleted_keys)
                or any(True for _ in self.keys_raw(f"{full}/"))
                or self.exists_raw(full)
            ):
                names.add(name)
        return sorted(names)

    def _node_deleted(self, node: str) -> bool:
        return node in self.deleted_nodes or (bool(self.deleted_nodes) and node.startswith(self._deleted_prefixes()))

    def _deletions_under(self, node: str) -> bool:
        lead = f"{node}/"
        return any(k.startswith(lead) for k in self.deleted_keys) or any(n.startswith(lead) for n in self.deleted_nodes)

    # -- writes ---------------------------------------------------------------------------

    def write_raw(self, key: str, data: bytes) -> None:
        self._check_writable()
        check_relative_path(key, "store key")
        self.staged[key] = bytes(data)

    def delete_raw(self, key: str) -> None:
        """Remove one key: drop it from the staging area, and white it out below."""
        self._check_writable()
        self.staged.pop(key, None)
        if not self._hidden_below(key) and self.below.exists_raw(key):
            self.deleted_keys.add(key)

    def delete_node(self, node: str) -> None:
        """Remove a node and everything under it, staged or below."""
        self._check_writable()
        node = node.strip("/")
        if not node:
            raise ValueError("refusing to delete the store's root")
        lead = f"{node}/"
        for key in [k for k in self.staged if k.startswith(lead)]:
            del self.staged[key]
        if not self._node_deleted(node) and any(True for _ in self.below.keys_raw(lead)):
            self.deleted_nodes.add(node)
            self.deleted_keys = {k for k in self.deleted_keys if not k.startswith(lead)}
            self.deleted_nodes = {n for n in self.deleted_nodes if not n.startswith(lead)}

    @property
    def whiteouts(self) -> list[str]:
        """The new version's ``deleted`` list, sorted."""
        return sorted(self.deleted_keys | {f"{n}/" for n in self.deleted_nodes})

    # -- zarr's synchronous protocols -------------------------------------------------------

    def set_sync(self, key: str, value: Buffer) -> None:
        self.write_raw(key, value.to_bytes())

    def delete_sync(self, key: str) -> None:
        self.delete_raw(key)

    # -- the zarr Store API ----------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        # docstring inherited
        self._check_writable()
        if not isinstance(value, Buffer):
            raise TypeError(
                f"CopyOnWriteStore.set(): `value` must be a Buffer instance. Got an instance of {type(value)} instead."
            )
        self.write_raw(key, value.to_bytes())

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        # docstring inherited
        if not self.exists_raw(key):
            await self.set(key, value)

    async def delete(self, key: str) -> None:
        # docstring inherited
        self.delete_raw(key)

    async def delete_dir(self, prefix: str) -> None:
        # docstring inherited
        self._check_writable()
        prefix = prefix.rstrip("/")
        if prefix:
            self.delete_node(prefix)
        else:
            for key in list(self.keys_raw("")):
                self.delete_raw(key)
