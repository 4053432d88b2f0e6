"""The ``history``, ``changes`` and ``contents`` requests: which versions a stack has and what each wrote."""

from __future__ import annotations

from typing import Any

from sds_jupyter.protocol.types import ChangesData, ContentsData, HistoryData, KeySize, VersionSummary, Whiteout
from sds_jupyter.service.errormap import RequestError, error_payload
from sds_jupyter.service.features.history.contents import read_contents
from sds_jupyter.service.features.history.opdetails import op_details
from sds_jupyter.service.session import Session, partial_depth
from sds_jupyter.stack import PartialChain, StackStore
from sds_jupyter.studio.jsonable import jsonable

__all__ = ["changes", "contents", "history"]


def _version_summary(session: Session, version: Any) -> VersionSummary:
    manifest = version.manifest
    return {
        "depth": version.depth,
        "dataset_id": version.dataset_id,
        "title": manifest.title,
        "message": manifest.message,
        "created_at": manifest.created_at,
        "created_by": manifest.created_by,
        "app": jsonable(manifest.app) if manifest.app is not None else None,
        "changes": [jsonable(change) for change in manifest.changes],
        "n_files": len(manifest.files),
        "n_deleted": len(manifest.deleted),
        "folder": session.folder_text(version.folder),
    }


def history(session: Session) -> HistoryData:
    """The versions top first and the base, or the reason the stack cannot be followed."""
    if session.resolved is None:
        assert session.error is not None  # set whenever no stack resolved
        versions = session.partial.versions if session.partial is not None else ()
        error = error_payload(session.error)
        name = session.partial.folders.name_of(error.get("dataset_id")) if session.partial is not None else None
        if name:
            error["name"] = name
        return {
            "top_depth": versions[0].depth if versions else 0,
            "versions": [_version_summary(session, version) for version in versions],
            "base": None,
            "error": error,
        }
    stack = session.resolved
    return {
        "top_depth": stack.depth,
        "versions": [_version_summary(session, version) for version in stack.versions],
        "base": session.base_summary(),
    }


def changes(session: Session, version: int | str | None = None) -> ChangesData:
    """What one version wrote: its ops, the keys it added or replaced, its whiteouts."""
    if session.resolved is None and session.partial is not None:
        return _partial_changes(session.partial, version)
    depth = session.depth(version)
    if depth == 0:
        return {"ops": [], "details": [], "added": [], "replaced": [], "deleted": []}
    stack = session.stack
    entry = stack.versions[stack.depth - depth]
    below = StackStore(stack.at(depth - 1), caches=session.caches)
    added: list[KeySize] = []
    replaced: list[KeySize] = []
    for file in entry.manifest.files:
        (replaced if below.exists_raw(file.key) else added).append({"key": file.key, "size": file.size})
    deleted: list[Whiteout] = [{"entry": item, "node": item.endswith("/")} for item in entry.manifest.deleted]
    ops = [jsonable(change) for change in entry.manifest.changes]
    return {
        "ops": ops,
        "details": op_details(
            ops, lambda table: session.table_view(depth, table), lambda table: session.table_view(depth - 1, table)
        ),
        "added": added,
        "replaced": replaced,
        "deleted": deleted,
    }


def _partial_changes(partial: PartialChain, version: int | str | None) -> ChangesData:
    """A version's changes above a missing parent: what it wrote, unsorted into added or replaced."""
    versions = {v.depth: v for v in partial.versions}
    depth = max(versions, default=None) if version is None else partial_depth(partial, version)
    entry = versions.get(depth) if depth is not None else None
    if entry is None:
        raise RequestError(f"no version {version!r} above the missing dataset {partial.missing_id}")
    manifest = entry.manifest
    return {
        "ops": [jsonable(change) for change in manifest.changes],
        "details": [],
        "added": [{"key": f.key, "size": f.size} for f in manifest.files],
        "replaced": [],
        "deleted": [{"entry": item, "node": item.endswith("/")} for item in manifest.deleted],
        "note": (
            f"Dataset {partial.missing_id} below this version is missing, so keys it replaced "
            "cannot be told from keys it added: all are listed as added."
        ),
    }


def contents(session: Session, version: int | str | None = None) -> ContentsData:
    """The version's elements and its tables' columns, marked where this version wrote them."""
    return read_contents(session.stack, session.depth(version), session.caches)
