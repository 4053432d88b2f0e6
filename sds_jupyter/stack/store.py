"""A read-only zarr-python 3 store over a stack.

The whole reader of the format is :meth:`LayerIndex.locate`: a key is answered
by the topmost version whose ``files`` hold it, unless a whiteout in a version
above that one covers it; with no version answering, the base answers. The index
is built once when the store opens, so answering a key costs a few dictionary
look-ups however deep the stack is.
"""

from __future__ import annotations

import bisect
import os
import uuid
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, SupportsIndex

from zarr.abc.store import ByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import Buffer

from sds_jupyter.errors import BaseStoreError, StackChangedError
from sds_jupyter.stack.caches import StackCaches, default_caches
from sds_jupyter.stack.inflate import ChunkRules, ShardLayout, check_chunk, check_shard_range, check_stored_size
from sds_jupyter.stack.stack import Stack, Version
from sds_jupyter.stack.storage.location import Location, range_limits
from sds_jupyter.stack.storage.paths import ancestors
from sds_jupyter.stack.storage.rawstore import RawKeyStore
from sds_jupyter.stack.storage.sources import FolderSource, Source, open_source

__all__ = ["BASE", "HIDDEN", "LayerIndex", "StackStore", "open_stack"]

#: :meth:`LayerIndex.locate` answers for a key the base holds, or one hidden by a whiteout.
BASE: Final = -1
HIDDEN: Final = -2
_NEVER: Final = 1 << 30
#: How many answers :meth:`LayerIndex.locate` remembers before starting over.
_LOCATED_LIMIT: Final = 1 << 16


@dataclass
class LayerIndex:
    """Where each key of a stack lives, from the versions' ``files`` and ``deleted``.

    Versions are numbered from the top, 0 being the top version.
    """

    owner: dict[str, int]
    """The topmost version whose ``files`` hold each key."""
    hidden_keys: dict[str, int]
    """The topmost version whose whiteouts name each single key."""
    hidden_nodes: dict[str, int]
    """The topmost version whose whiteouts remove each node (path without the slash)."""
    whiteouts: list[str]
    """Every whiteout as a node path plus ``/`` or a key, sorted, for prefix scans."""
    _located: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    """Answers of :meth:`locate` so far (the index is never changed once built)."""
    _visible: list[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(cls, versions: Iterable[Version]) -> LayerIndex:
        owner: dict[str, int] = {}
        hidden_keys: dict[str, int] = {}
        hidden_nodes: dict[str, int] = {}
        numbered = list(enumerate(versions))
        # Lowest version first, each overwriting: the topmost holder of a key wins (all at C speed).
        for number, version in reversed(numbered):
            owner.update(dict.fromkeys(version.manifest.files.keys, number))
        for number, version in numbered:
            for whiteout in version.manifest.deleted:
                if whiteout.endswith("/"):
                    hidden_nodes.setdefault(whiteout[:-1], number)
                else:
                    hidden_keys.setdefault(whiteout, number)
        whiteouts = sorted([f"{n}/" for n in hidden_nodes] + list(hidden_keys))
        return cls(owner, hidden_keys, hidden_nodes, whiteouts)

    def hidden_from(self, key: str) -> int:
        """The topmost version whose whiteouts cover ``key`` (a large number if none)."""
        level = self.hidden_keys.get(key, _NEVER)
        nodes = self.hidden_nodes
        if nodes:
            # Each folder the key sits in, without a generator: this runs on every read.
            cut = key.find("/")
            while cut != -1:
                found = nodes.get(key[:cut], _NEVER)
                if found < level:
                    level = found
                cut = key.find("/", cut + 1)
        return level

    def locate(self, key: str) -> int:
        """The version number that answers ``key``, or :data:`BASE` or :data:`HIDDEN`."""
        known = self._located.get(key)
        if known is not None:
            return known
        number = self.owner.get(key)
        hidden = self.hidden_from(key) if (self.hidden_keys or self.hidden_nodes) else _NEVER
        if number is not None and number <= hidden:
            found = number
        else:
            found = HIDDEN if hidden != _NEVER else BASE
        if len(self._located) >= _LOCATED_LIMIT:
            self._located.clear()  # the index never changes, so answers never go stale; this bounds memory
        self._located[key] = found
        return found

    @property
    def visible(self) -> list[str]:
        """Every key the versions answer (not hidden above), sorted: built when first listed."""
        listed = self._visible
        if listed is None:
            if not self.hidden_keys and not self.hidden_nodes:
                listed = sorted(self.owner)
            else:
                listed = sorted(key for key, number in self.owner.items() if self.locate(key) == number)
            self._visible = listed
        return listed

    def node_hidden_in_base(self, node: str) -> bool:
        """Whether a whiteout removes ``node`` and everything under it from the base."""
        return node in self.hidden_nodes or any(a in self.hidden_nodes for a in ancestors(node))

    def has_whiteouts_under(self, node: str) -> bool:
        prefix = f"{node}/"
        position = bisect.bisect_left(self.whiteouts, prefix)
        return position < len(self.whiteouts) and self.whiteouts[position].startswith(prefix)


def _rules_of(stack: Stack) -> ChunkRules:
    """The chunk rules of a stack's arrays: found once per resolved stack (it never changes)."""
    rules: ChunkRules | None = stack.__dict__.get("_sds_chunk_rules")
    if rules is None:
        rules = ChunkRules()
        object.__setattr__(stack, "_sds_chunk_rules", rules)  # a frozen dataclass: derived data only
    return rules


def _index_request(shard: ShardLayout) -> ByteRequest:
    """The range of a shard that holds its index of inner chunks, as zarr asks for it."""
    return SuffixByteRequest(shard.index_bytes) if shard.index_at_end else RangeByteRequest(0, shard.index_bytes)


def _index_of(stack: Stack) -> LayerIndex:
    """The stack's layer index: built once per resolved stack.

    It follows from the manifests alone, which a :class:`Stack` never changes, so every
    store over the same stack (a reopen served by the resolved-stack cache) shares it.
    """
    cached: LayerIndex | None = stack.__dict__.get("_sds_index")
    if cached is None:
        cached = LayerIndex.build(stack.versions)
        object.__setattr__(stack, "_sds_index", cached)  # a frozen dataclass: derived data only
    return cached


class _Overlays:
    """Each version's overlay source, made when first read: an open of a deep stack makes none."""

    def __init__(self, versions: tuple[Version, ...]) -> None:
        self._versions = versions
        self._sources: list[FolderSource | None] = [None] * len(versions)

    def __getitem__(self, number: int) -> FolderSource:
        source = self._sources[number]
        if source is None:
            version = self._versions[number]
            source = FolderSource(version.overlay_dir, what=f"overlay of {version.dataset_id}")
            self._sources[number] = source
        return source


class StackStore(RawKeyStore):
    """A read-only zarr store that reads a stack as one store.

    Parameters
    ----------
    stack
        The resolved stack; its top version is the store's top.
    read_only
        Must be true (the default): a stack is changed only by saving a new version.
        Accepted so that zarr's ``Store.open(..., read_only=True)`` and its test suite
        can make one like any other store.
    caches
        Where a zip base's index is looked up and kept when the stack did not open
        the zip already (the process's caches when None); see
        :class:`~sds_jupyter.stack.caches.StackCaches`. Not kept by the store.
    """

    supports_writes: bool = False
    supports_deletes: bool = False
    supports_partial_writes: bool = False  # type: ignore[assignment]
    supports_listing: bool = True

    def __init__(self, stack: Stack, *, read_only: bool = True, caches: StackCaches | None = None) -> None:
        if not read_only:
            raise ValueError(_READ_ONLY)
        super().__init__(read_only=True)
        self.stack = stack
        self.index = _index_of(stack)
        self._overlays = _Overlays(stack.versions)
        self._base: Source = stack.base.opened or open_source(
            stack.base.path, stack.base.kind, indexes=default_caches(caches).zip_indexes
        )
        # Not yet "open", as zarr's stores are at construction: reads need no opening, and
        # zarr's ``Store.open`` classmethod (construct, then ``_open``) refuses a store already open.

    # -- identity -------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, StackStore)
            and other.stack.base.path == self.stack.base.path
            and [v.manifest_path for v in other.stack.versions] == [v.manifest_path for v in self.stack.versions]
        )

    def __hash__(self) -> int:
        return hash((StackStore, self.stack.base.path, self.stack.depth))

    def __dask_tokenize__(self) -> tuple[str, str]:
        """Dask's name for the store: the stack's fingerprint, not a pickle of every manifest."""
        return ("sds_jupyter.StackStore", self.stack.fingerprint())

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        """A local store pickles as where to open it and its fingerprint (a few hundred bytes).

        In another process (a Dask worker, a later session) unpickling opens the stack
        again and refuses one whose manifests or base root document changed meanwhile.
        In the process that pickled it, while its stack is alive, the copy shares that
        resolved stack, as :func:`copy.copy` would: Dask pickles and unpickles the
        arrays it names, and a check of every manifest there would cost more than the read.
        Sharing is safe because a :class:`Stack` never changes (``Stack.resolve`` shares it
        too): closing is per store, and a copy-on-write store pickles its staged writes by value.
        A store in object storage pickles whole, so that a worker makes no request to reopen it.
        """
        if self.stack.datasets_dir.as_local() is None:
            whole: tuple[Any, ...] = super().__reduce_ex__(protocol)  # type: ignore[assignment]
            return whole
        fingerprint = self.stack.fingerprint()
        _LIVE_STACKS[(fingerprint, id(self.stack))] = self.stack
        where = str(self.stack.opened_from)
        local = (_PROCESS, id(self.stack))
        return (_reopen, (where, dict(self.stack.folders), self.stack.depth, fingerprint, local))

    def __str__(self) -> str:
        top = self.stack.top
        return f"stack://{top.data_dir if top else self.stack.base.path}"

    def __repr__(self) -> str:
        return f"StackStore('{self}', depth={self.stack.depth})"

    def with_read_only(self, read_only: bool = False) -> StackStore:
        # docstring inherited
        if not read_only:
            raise ValueError(_READ_ONLY)
        return StackStore(self.stack)

    async def _ensure_open(self) -> None:
        """Opening has nothing to do: marked open without the check that two racing readers would trip."""
        self._is_open = True

    def close(self) -> None:
        self._base.close()
        super().close()

    # -- raw reads, synchronous: also what flatten and the writer use -------------------------

    def read_raw(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """The bytes of ``key`` as the stack composes it, or None if absent."""
        number = self.index.locate(key)
        if number == HIDDEN:
            return None
        if number == BASE:
            return self._base.read(key, byte_range)
        data = self._overlays[number].read(key, byte_range)
        if data is None:
            version = self.stack.versions[number]
            raise BaseStoreError(
                f"version {version.dataset_id} lists {key!r} but its overlay folder has no such "
                "file; re-download that version"
            )
        return data

    def read_for_zarr(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """``key``'s bytes as zarr reads them: a chunk only once checked to inflate within its bound.

        Why here: every reader of a stack (the service, the widget, ``open_anndata``, a zarr
        reader in the browser through ``store_key``) reads through this store, so one check
        holds them all to :func:`~sds_jupyter.limits.chunk_bound`; copies (``read_raw``,
        ``stream_raw``) move stored bytes without decompressing them and are not checked.
        """
        rules = _rules_of(self.stack)
        rule = rules.rule_for(key, self.read_raw)
        if rule is None:
            data = self.read_raw(key, byte_range)
            if data is not None and byte_range is None:
                rules.learn(key, data)  # an array's metadata, as zarr reads it before its chunks
            return data
        if byte_range is None:
            check_stored_size(rule, key, self._cheap_size(key))  # before it is read
        data = self.read_raw(key, byte_range)
        if data is None:
            return None
        shard = rule.shard
        if shard is not None and byte_range is not None:
            if byte_range == _index_request(shard):
                # zarr reads the index before the ranges it plans by it: kept for checking them
                rules.keep_shard_index(key, shard, data)
            if len(data) != shard.index_bytes:
                # a range of a shard: newer zarr reads neighbouring inner chunks in one range
                # only a suffix needs the object's size to say where it starts
                size = (self.size_raw(key) or 0) if isinstance(byte_range, SuffixByteRequest) else 2**63
                start = range_limits(byte_range, size)[0]
                index = rules.shard_index(key, shard, lambda: self.read_raw(key, _index_request(shard)))
                return bytes(check_shard_range(rule, key, data, start, index))
        # a chunk the check decoded whole comes back in its codec's uncompressed framing: decompressed once
        return bytes(check_chunk(rule, key, data, ranged=byte_range is not None))

    def _cheap_size(self, key: str) -> int | None:
        """The stored size of ``key`` when it costs no request (None in object storage's base)."""
        number = self.index.locate(key)
        if number == BASE and getattr(getattr(self._base, "root", None), "costly_requests", False):
            return None
        return self.size_raw(key) if number != HIDDEN else None

    def stream_raw(self, key: str) -> Iterator[bytes] | None:
        """The bytes of ``key`` in chunks, as :meth:`read_raw` composes them: copies never hold a whole object."""
        number = self.index.locate(key)
        if number == HIDDEN:
            return None
        if number == BASE:
            return self._base.open_stream(key)
        chunks = self._overlays[number].open_stream(key)
        if chunks is None:
            version = self.stack.versions[number]
            raise BaseStoreError(
                f"version {version.dataset_id} lists {key!r} but its overlay folder has no such "
                "file; re-download that version"
            )
        return chunks

    def base_problems(self) -> list[str]:
        """What is wrong with the base's members that readers refuse (a zip's bombs and overlaps)."""
        problems: dict[str, str] = getattr(self._base, "problems", {})
        return [f"base member {key!r} {reason}" for key, reason in sorted(problems.items())]

    def source_path(self, key: str) -> tuple[Path | None, int]:
        """The real file behind ``key`` (None inside a zip) and the version number or BASE."""
        number = self.index.locate(key)
        if number == HIDDEN:
            raise KeyError(key)
        source = self._base if number == BASE else self._overlays[number]
        return source.path_of(key), number

    @property
    def root_zarr_format(self) -> Literal[3] | None:
        """3 when the composed root is known to be Zarr v3 without a request, else None."""
        number = self.index.locate("zarr.json")
        if number >= 0 or (number == BASE and self.stack.base.zarr_format == 3):
            return 3
        return None

    def exists_raw(self, key: str) -> bool:
        number = self.index.locate(key)
        if number == HIDDEN:
            return False
        if number == BASE:
            return self._base.exists(key)
        return True

    def size_raw(self, key: str) -> int | None:
        number = self.index.locate(key)
        if number == HIDDEN:
            return None
        if number == BASE:
            return self._base.size(key)
        overlay = self._overlays[number]
        if not overlay.root.costly_requests:
            return overlay.size(key)
        # In object storage, the manifest's files say it without a request.
        for entry in self.stack.versions[number].manifest.files:
            if entry.key == key:
                return entry.size
        return None

    def keys_raw(self, prefix: str = "") -> Iterator[str]:
        """Every visible key starting with ``prefix``: the overlays', then the base's."""
        start = bisect.bisect_left(self.index.visible, prefix)
        for key in self.index.visible[start:]:
            if not key.startswith(prefix):
                break
            yield key
        for key in self._base.keys(prefix):
            if self.index.locate(key) == BASE:
                yield key

    def children_raw(self, prefix: str) -> list[str]:
        """Immediate child names of ``prefix`` (no trailing slash), sorted."""
        prefix = prefix.rstrip("/")
        lead = f"{prefix}/" if prefix else ""
        names: set[str] = set()
        start = bisect.bisect_left(self.index.visible, lead)
        for key in self.index.visible[start:]:
            if not key.startswith(lead):
                break
            names.add(key[len(lead) :].split("/", 1)[0])
        if prefix and self.index.node_hidden_in_base(prefix):
            return sorted(names)
        for name, is_folder in self._base.children(prefix):
            if name in names:
                continue
            full = f"{lead}{name}"
            if not is_folder:
                if self.index.locate(full) == BASE:
                    names.add(name)
            elif full in self.index.hidden_nodes:
                continue
            elif not self.index.has_whiteouts_under(full) or any(True for _ in self._visible_base_keys(f"{full}/")):
                names.add(name)
        return sorted(names)

    def _visible_base_keys(self, prefix: str) -> Iterator[str]:
        for key in self._base.keys(prefix):
            if self.index.locate(key) == BASE:
                yield key

    # -- the zarr Store API ----------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        # docstring inherited
        self._check_writable()

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        # docstring inherited
        self._check_writable()

    async def delete(self, key: str) -> None:
        # docstring inherited
        self._check_writable()

    async def delete_dir(self, prefix: str) -> None:
        # docstring inherited
        self._check_writable()


_READ_ONLY: Final = "a StackStore is read-only; save changes as a new version with VersionWriter or save_version"

#: This process, for pickles: a store unpickled where it was pickled shares its live stack.
_PROCESS: Final = uuid.uuid4().hex
_LIVE_STACKS: weakref.WeakValueDictionary[tuple[str, int], Stack] = weakref.WeakValueDictionary()


def _reopen(
    where: str,
    folders: dict[str, str],
    depth: int,
    fingerprint: str,
    local: tuple[str, int] | None = None,
) -> StackStore:
    """A pickled local store, opened again; refuses a stack that changed since it was pickled."""
    if local is not None and local[0] == _PROCESS:
        live = _LIVE_STACKS.get((fingerprint, local[1]))
        if live is not None:
            return StackStore(live)
    stack = Stack.resolve(where, folders=folders)
    if stack.depth != depth or stack.fingerprint() != fingerprint:
        raise StackChangedError(
            f"the stack at {where} changed since this store was pickled (a manifest or the base was "
            "replaced); open it again and recompute"
        )
    return StackStore(stack)


def open_stack(
    path: str | os.PathLike[str] | Location | Stack,
    folders: str | dict[str, str] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    caches: StackCaches | None = None,
) -> StackStore:
    """A read-only zarr store over the stack whose top is the version at ``path``.

    ``path``, ``folders``, ``storage_options`` and ``caches`` are as for :meth:`Stack.resolve`
    (``path`` may be an ``s3://`` or other fsspec URL); a resolved :class:`Stack`
    is taken as it is.
    """
    if isinstance(path, Stack):
        return StackStore(path, caches=caches)
    stack = Stack.resolve(path, folders=folders, storage_options=storage_options, caches=caches)
    return StackStore(stack, caches=caches)
