"""The project's one least-recently-used cache, bounded by bytes and/or entries, safe across threads.

It sits at the bottom of the import layers so that every cache (``limits.BoundedCache``,
the stack's manifests, stacks and zip indexes, the server's services, the derived kinds
below) evicts the same way and is tested once.

Why bytes, not entries: one tissue's cell outlines are tens of megabytes and another
figure's a few kilobytes, so a count bound would either waste memory or keep too little.
The derived kinds' entries are keyed by the identity of the stored objects they were computed from
(:func:`sds_jupyter.stack.identity.node_identity`), which never changes meaning, so an
entry is never stale: it is only dropped when room is needed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Generic, TypeVar

__all__ = ["ByteLRU", "Turn"]

V = TypeVar("V")


def _no_size(value: object) -> int:
    return 0


class ByteLRU(Generic[V]):
    """Values by key, the least recently used dropped once their sizes pass ``max_bytes``
    (or, when ``max_entries`` is given, once there are more of them than that).

    The project's one least-recently-used map: caches bounded by entries only pass
    ``max_bytes=None``. With ``keep_newest`` the value just put is always kept, even
    alone over the byte bound (a reader that was just opened is about to be used);
    without it a value larger than the whole bound is not kept.
    """

    def __init__(
        self,
        max_bytes: int | None,
        size_of: Callable[[V], int] | None = None,
        max_entries: int | None = None,
        *,
        keep_newest: bool = False,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.keep_newest = keep_newest
        self._size_of = size_of or _no_size
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: Computations under way, by key: a second thread missing the same key waits for the first's.
        self._pending: dict[Hashable, Future[V]] = {}
        #: Answers from the cache and computations, for tests and benchmarks.
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: Hashable) -> V | None:
        """The value under ``key`` (now the most recently used), or None."""
        found = self.find(key)
        return None if found is None else found[0]

    def peek(self, key: Hashable) -> V | None:
        """The value under ``key``, or None, leaving its recency as it was.

        For callers that check an entry still holds (a file unchanged) before counting it as used.
        """
        with self._lock:
            entry = self._entries.get(key)
            return None if entry is None else entry[0]

    def find(self, key: Hashable) -> tuple[V] | None:
        """``(value,)`` when ``key`` is kept (now the most recently used), else None.

        Why a tuple: some caches keep None as a value, which :meth:`get` cannot tell from a miss.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return (entry[0],)

    def put(self, key: Hashable, value: V, nbytes: int | None = None) -> None:
        """Keep ``value`` as the most recently used, dropping the least recently used past either bound.

        ``nbytes`` is its size when the caller knows it (else ``size_of(value)``): a caller that
        passes the number is never called back to size what it just made.
        """
        size = self._size_of(value) if nbytes is None else nbytes
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if not self.keep_newest and self.max_bytes is not None and size > self.max_bytes:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            floor = 1 if self.keep_newest else 0  # the newest stays, alone if need be
            while len(self._entries) > floor and self._over():
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def _over(self) -> bool:
        """Whether the kept entries pass a bound (called under the lock)."""
        over_bytes = self.max_bytes is not None and self._bytes > self.max_bytes
        return over_bytes or (self.max_entries is not None and len(self._entries) > self.max_entries)

    def discard(self, key: Hashable) -> None:
        """Forget ``key`` if kept."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]

    def keys(self) -> list[Hashable]:
        """The keys kept, least recently used first (a snapshot)."""
        with self._lock:
            return list(self._entries)

    def claim(self, key: Hashable) -> Turn[V]:
        """The caller's turn at ``key``: the value kept (or just computed by another thread), or the duty to make it.

        Use it as ``with cache.claim(key) as turn: if turn.missing: turn.fill(make(), nbytes)``,
        then read ``turn.value``. Threads missing at once compute once: the first gets the
        turn (``missing``), the others wait here for its value (or its error, raised here).
        Why: a page opening four figures of one tissue asks for the same cells four times at
        once; four computations of a million cells' outlines on two cores made each answer
        four times as late. Why the caller makes the value in its own frame rather than
        handing this map a function to call: the cache stays a store of plain values, never
        calling back into its owner (``tools/walk.py`` counts such returns).
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return Turn(self, key, (entry[0],), None)
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = Future()
                self.misses += 1
                return Turn(self, key, None, pending)
            self.hits += 1
        return Turn(self, key, (pending.result(),), None)

    def _settle(self, key: Hashable, pending: Future[V], made: tuple[V] | None, error: BaseException | None) -> None:
        """End a computing turn: the threads waiting on ``key`` get its value, or its error (nothing kept)."""
        with self._lock:
            del self._pending[key]
        if made is not None:
            pending.set_result(made[0])
        else:
            pending.set_exception(error or LookupError(f"the turn at {key!r} ended without a value"))

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value kept under ``key``, else ``compute()`` kept and returned (:meth:`claim` with a function)."""
        with self.claim(key) as turn:
            if turn.missing:
                turn.fill(compute())
        return turn.value

    def clear(self) -> None:
        """Drop every entry and zero the counts."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.hits = self.misses = 0


class Turn(Generic[V]):
    """One caller's turn at a key of a :class:`ByteLRU` (from :meth:`ByteLRU.claim`), used as a context.

    ``missing`` says the caller is to make the value and :meth:`fill` it; on leaving the
    ``with`` block the threads waiting on the key get the value, or the error that ended the
    block (a failure is not kept: the next claim tries again).
    """

    def __init__(self, lru: ByteLRU[V], key: Hashable, found: tuple[V] | None, pending: Future[V] | None) -> None:
        self._lru = lru
        self._key = key
        self._found = found
        self._pending = pending

    @property
    def missing(self) -> bool:
        """Whether this caller is to make the value (nobody had it, nobody was making it)."""
        return self._found is None

    @property
    def value(self) -> V:
        """The value kept, waited for, or filled by this caller."""
        if self._found is None:
            raise LookupError(f"the turn at {self._key!r} has no value yet")
        return self._found[0]

    def fill(self, value: V, nbytes: int | None = None) -> None:
        """Keep ``value`` (of ``nbytes``, else as the map sizes it) as this turn's answer."""
        if self._pending is None:
            raise RuntimeError("only the turn that found the key missing fills it")
        self._found = (value,)
        self._lru.put(self._key, value, nbytes)

    def __enter__(self) -> Turn[V]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self._lru._settle(self._key, pending, self._found, error)
