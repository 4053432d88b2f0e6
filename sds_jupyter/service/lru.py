"""A least-recently-used cache bounded by the bytes its entries hold, safe across threads.

Why bytes, not entries: one tissue's cell outlines are tens of megabytes and another
figure's a few kilobytes, so a count bound would either waste memory or keep too little.
Entries are keyed by the identity of the stored objects they were computed from
(:func:`sds_jupyter.stack.identity.node_identity`), which never changes meaning, so an
entry is never stale: it is only dropped when room is needed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ByteLRU"]

V = TypeVar("V")


class ByteLRU(Generic[V]):
    """Values by key, the least recently used dropped once their sizes pass ``max_bytes``."""

    def __init__(self, max_bytes: int, size_of: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self._size_of = size_of
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: Answers from the cache and computations, for tests and benchmarks.
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: str, value: V) -> None:
        """Keep ``value`` (one larger than the whole bound is not kept)."""
        size = self._size_of(value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def get_or_compute(self, key: str, compute: Callable[[], V]) -> V:
        """The value kept under ``key``, else ``compute()`` kept and returned.

        Two threads missing at once may both compute; the values are equal (same stored objects).
        """
        found = self.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        value = compute()
        self.put(key, value)
        return value

    def clear(self) -> None:
        """Drop every entry and zero the counts."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.hits = self.misses = 0
