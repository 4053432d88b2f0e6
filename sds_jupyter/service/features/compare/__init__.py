"""The ``compare`` request: what differs in the table between two versions, on one branch or two."""

from __future__ import annotations

from collections.abc import Callable

from sds_jupyter.protocol.types import Comparison
from sds_jupyter.service.branches import version_at
from sds_jupyter.service.features.compare.tablediff import compare_tables
from sds_jupyter.service.session import Session

__all__ = ["compare"]


def compare(session: Session, a: int | str, b: int | str) -> Comparison:
    """What differs in the table between versions ``a`` and ``b`` (b relative to a), cell by cell.

    Either may be a version on another branch of the tree (by dataset ID): then every
    node is compared, since no chain of manifests says what lies between them.
    """
    (session_a, depth_a), (session_b, depth_b) = version_at(session, a), version_at(session, b)
    touched = _touched(session_a, depth_a, depth_b) if session_a is session_b else _everything
    return compare_tables(depth_a, depth_b, session_a.table_view(depth_a), session_b.table_view(depth_b), touched)


def _touched(session: Session, depth_a: int, depth_b: int) -> Callable[[str], bool]:
    """A test whether any version between two depths wrote or deleted under a node.

    A node no version in between touched is the same object in both, so
    comparing it would only re-read identical data.
    """
    low, high = sorted((depth_a, depth_b))
    manifests = [v.manifest for v in session.stack.versions if low < v.depth <= high]

    def touched(node: str) -> bool:
        prefix = node.rstrip("/") + "/"
        for manifest in manifests:
            if any(f.key.startswith(prefix) for f in manifest.files):
                return True
            if any(entry.startswith(prefix) or prefix.startswith(entry) or entry == node for entry in manifest.deleted):
                return True
        return False

    return touched


def _everything(node: str) -> bool:
    """A ``touched`` test that reads every node (two versions on different branches)."""
    return True
