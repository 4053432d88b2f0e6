"""The tree of versions on the opened version's base, and reaching a version on another branch.

The ``tree`` and ``fingerprint`` requests answer from here; so does every request that
names a version off the opened chain (the B of a side-by-side, a compare against a
branch): :func:`serving` finds that version's session by its dataset ID among the tree's
nodes. It is the one module the feature modules share for that, so they need not
import each other.
"""

from __future__ import annotations

from typing import Any

from sds_jupyter.errors import StackError
from sds_jupyter.protocol.types import Fingerprint, TreeData, TreeNode
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.session import Session
from sds_jupyter.service.tree import build_tree, chain_end
from sds_jupyter.stack import listed_beside, listing_fingerprint
from sds_jupyter.studio.jsonable import jsonable

__all__ = ["fingerprint", "serving", "tree", "version_at"]


def tree(session: Session) -> TreeData:
    """Every version in the datasets folder whose chain ends where this one's does.

    In object storage nothing is listed: the tree is the opened chain.
    """
    versions, local, folders = session.chain()
    current = versions[0].dataset_id if versions else None
    if session.resolved is not None:
        end = chain_end(session.resolved.base.reference)
        base = session.base_summary() if session.resolved.base.reference is not None else None
    else:
        assert session.partial is not None
        end, base = chain_end(None, session.partial.missing_id), None
    if local is None or not versions:  # object storage: nothing is listed
        nodes = [_tree_node(session, v, versions) for v in versions]
        note = ["object storage is not listed: only the opened chain is shown"] if versions else []
        reply: TreeData = {"current": current, "nodes": nodes, "base": base, "notes": note}
    else:
        reply = build_tree(
            local, folders, current or "", end, base, session.folder_text, listed_beside(local), session.caches
        )
    missing_name = folders.name_of(session.partial.missing_id) if session.resolved is None and session.partial else None
    if missing_name:  # the heading names what to attach as the folder map does, not by its ID alone
        reply["missing_name"] = missing_name
    return reply


def _tree_node(session: Session, version: Any, versions: tuple[Any, ...]) -> TreeNode:
    below = [v for v in versions if v.depth == version.depth - 1]
    return {
        "dataset_id": version.dataset_id,
        "parent": below[0].dataset_id if below else None,
        "depth": version.depth,
        "title": version.manifest.title,
        "folder": session.folder_text(version.folder),
        "created_at": version.manifest.created_at,
        "created_by": version.manifest.created_by,
        "changes": [jsonable(change) for change in version.manifest.changes],
    }


def fingerprint(session: Session) -> Fingerprint:
    """A hash of the datasets folder's version folders and their manifests' mtimes.

    The browser asks for it every few seconds and reloads the tree when it changes.
    """
    _, local, folders = session.chain()
    if local is None:  # object storage is not listed
        return {"fingerprint": ""}
    listed = [local, *listed_beside(local)]
    return {"fingerprint": "+".join(listing_fingerprint(folder, folders, caches=session.caches) for folder in listed)}


def _tree_folders(session: Session) -> dict[str, str]:
    """Each tree version's folder by dataset ID, built again only when the listing's fingerprint changes.

    Building the tree settles every version's parent; the fingerprint only
    stats the manifests, so a compare against a branch costs what one inside the chain does.
    """
    key = fingerprint(session)["fingerprint"]
    if session.branch_folders is None or session.branch_folders[0] != key:
        session.branch_folders = (key, {n["dataset_id"]: n["folder"] for n in tree(session)["nodes"]})
    return session.branch_folders[1]


def _branch(session: Session, folder: str) -> tuple[Session, int]:
    other = session.branches.get(folder, lambda: session.sibling(folder))
    return other, other.stack.depth


def version_at(session: Session, selector: int | str) -> tuple[Session, int]:
    """The session and depth of a version: in the opened chain, or on another branch of the tree.

    A version off the chain is found only among the ``tree`` request's nodes (the
    datasets folder's versions on this base) by its dataset ID, and opened through
    :meth:`Session.sibling`, which keeps it inside the datasets folder.
    """
    try:
        return session, session.depth(selector)
    except StackError:
        if not isinstance(selector, str) or session.resolved is None:
            raise
    folder = _tree_folders(session).get(selector)
    if folder is None:
        raise RequestError(
            f"No version {selector[:60]!r} in this stack or on another branch of its base; "
            "give a depth, or the dataset ID of a version in the tree."
        )
    return _branch(session, folder)


def serving(session: Session, version: int | str | None) -> tuple[Session, int | str | None]:
    """The session that reads ``version``, and the version as that session names it.

    A version of the opened chain is this session's. A dataset ID found only on another
    branch of the tree (the B of a side-by-side, a compare against a branch) is that
    branch's session at its depth, so every per-version request reads other branches
    the way ``compare`` does. Anything else stays here, to be refused as before.
    """
    if not isinstance(version, str) or session.resolved is None:
        return session, version
    try:
        session.depth(version)
        return session, version
    except StackError:
        pass
    try:
        folder = _tree_folders(session).get(version)
    except StackError:
        return session, version
    if folder is None:
        return session, version
    return _branch(session, folder)
