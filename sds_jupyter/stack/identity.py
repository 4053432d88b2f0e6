"""Which stored objects a node of a stack is made of, named without reading them.

Versions are immutable and every one records the keys it wrote and removed, so the
topmost version that wrote or removed anything at, under or above a node (else the base)
names that node's content: two stacks, or two versions of one stack, whose node has the
same identity hold the same bytes there. Caches of what is computed from a node (cell
geometry, say) key on it, so a version that leaves the node alone shares the entry and a
version that rewrites it gets a new one.
"""

from __future__ import annotations

import bisect

from sds_jupyter.stack.storage.location import Location
from sds_jupyter.stack.store import BASE, StackStore

__all__ = ["node_identity"]


def _topmost_writer(store: StackStore, node: str) -> int:
    """The number (0 the top) of the topmost version that wrote a key under ``node``, else BASE."""
    index = store.index
    keys = index.visible
    prefix = f"{node}/"
    numbers = [index.locate(node)] if node in index.owner else []
    position = bisect.bisect_left(keys, prefix)
    while position < len(keys) and keys[position].startswith(prefix):
        numbers.append(index.locate(keys[position]))
        position += 1
    found = [number for number in numbers if number >= 0]
    return min(found) if found else BASE


def _topmost_remover(store: StackStore, node: str) -> int:
    """The number of the topmost version whose whiteouts remove ``node``, a key under it or a folder above it."""
    index = store.index
    numbers = [index.hidden_from(node), index.hidden_nodes.get(node, BASE)]
    for whiteout, number in [*index.hidden_nodes.items(), *index.hidden_keys.items()]:
        if whiteout.startswith(f"{node}/"):
            numbers.append(number)
    found = [number for number in numbers if 0 <= number < len(store.stack.versions)]
    return min(found) if found else BASE


def node_identity(store: StackStore, node: str) -> str:
    """``node`` (a key or a folder of the store, no leading or trailing ``/``) and who holds it.

    The holder is the topmost version that wrote or removed anything at, under or above
    ``node``, else the base: named by its dataset ID *and* where it is stored. Why both: an
    ID is unique only by convention, and a copied folder edited by hand (or by a hostile
    writer) keeps it; a cache keyed on the ID alone would serve the original's bytes for the
    copy. The same folder reached by another route (a folder map) names the same place.
    """
    stack = store.stack
    candidates = [n for n in (_topmost_writer(store, node), _topmost_remover(store, node)) if n != BASE]
    if candidates:
        holder = stack.versions[min(candidates)]
        return f"{node}@{holder.dataset_id}:{_place(holder.folder)}"
    base = stack.base
    return f"{node}@base:{base.dataset_id or ''}:{_place(base.path)}"


def _place(where: Location) -> str:
    """Where a version or base is stored, the same text however it was reached (symbolic links resolved)."""
    local = where.as_local()
    return str(local.resolve()) if local is not None else str(where)
