"""Committing a new version: its overlay and ``layer.json``, written beside its parent at once.

The objects and the manifest are written into a temporary folder that is then
renamed into place, so a reader sees the whole version or none of it; one left
by a killed commit is removed by the next (see :mod:`~sds_jupyter.stack.storage.partial`). Nothing of
the stack below is ever written to.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import stat
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sds_jupyter._version import __version__
from sds_jupyter.errors import StackError, WriteRefusedError
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.stack.manifest import FORMAT, MANIFEST_NAME, parse_manifest, read_manifest
from sds_jupyter.stack.stack import Stack
from sds_jupyter.stack.storage.partial import new_partial, release_partial
from sds_jupyter.stack.storage.paths import ancestors, check_dataset_id
from sds_jupyter.stack.workspace import version_destination
from sds_jupyter.stack.write.consolidate import write_root_index
from sds_jupyter.stack.write.cow import CopyOnWriteStore

__all__ = ["APP_ID", "USER_VARIABLES", "check_overlay_keys", "commit_version", "manifest_of", "manifest_text"]

APP_ID = "sds-jupyter"


def commit_version(
    stack: Stack,
    store: CopyOnWriteStore,
    changes: list[dict[str, Any]],
    dest: str | os.PathLike[str] | None = None,
    *,
    into: str | os.PathLike[str] | None = None,
    title: str | None = None,
    message: str | None = None,
    created_by: str | None = None,
    caches: StackCaches | None = None,
) -> Path:
    """Write the version staged in ``store`` over ``stack`` and return its folder.

    ``dest`` defaults to a new folder, named by a fresh dataset ID, beside the
    top version in the datasets folder, where a reader will look for its parent;
    in ``into``, or the versions folder when that folder is read-only (see
    :func:`~sds_jupyter.stack.workspace.version_destination`).
    It must not exist and must not lie inside any folder of the stack.
    ``caches`` keep the stack's root index decoded (see :mod:`~sds_jupyter.stack.write.consolidate`).
    """
    if not changes and not store.staged and not store.whiteouts:
        raise StackError("nothing to save: make a change before committing")
    beside = stack.datasets_dir.as_local()
    if beside is None:
        raise WriteRefusedError(
            f"{stack.datasets_dir} is not on this disk; versions are saved into local dataset folders"
        )
    dest_path = version_destination(beside, dest, into)
    _check_destination(stack, dest_path)
    write_root_index(store, caches)
    check_overlay_keys(store.staged)
    text = manifest_text(manifest_of(stack, store, changes, title, message, created_by))
    tmp = new_partial(dest_path.parent, dest_path.name)
    try:
        overlay = tmp / "overlay"
        for key, data in sorted(store.staged.items()):
            target = overlay / key
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as handle:
                handle.write(data)
        with open(tmp / MANIFEST_NAME, "x", encoding="utf-8") as handle:
            handle.write(text)
        verify_written(tmp)
        if dest_path.exists():
            raise WriteRefusedError(f"{dest_path} appeared while saving; choose another folder")
        os.rename(tmp, dest_path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        release_partial(tmp)
    return dest_path


def check_overlay_keys(staged: Mapping[str, bytes]) -> None:
    """Refuse a set of keys that cannot all be files of one folder: a key that is also another's folder.

    Such a version could not be written (a file where a folder must go), nor flattened,
    nor read: it is refused before anything is written.
    """
    folders = {ancestor for key in staged for ancestor in ancestors(key)}
    clashes = sorted(folders.intersection(staged))
    if clashes:
        raise WriteRefusedError(
            f"cannot save: {clashes[0]!r} would be both an object and a group holding others; "
            "rename the element that holds it"
        )


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """The ``layer.json`` text, checked by the rules a reader applies: what fails them is never written."""
    try:
        text = json.dumps(manifest, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise WriteRefusedError(f"cannot save: the version's details are not plain JSON ({exc})") from None
    try:
        parse_manifest(json.loads(text), "the new version's layer.json")
    except StackError as exc:
        raise WriteRefusedError(f"cannot save: {exc}") from None
    return text


def verify_written(tmp: Path) -> None:
    """Check a partial version folder before it is published: the manifest reads back and every
    object it lists is there, a regular file of the listed size, with nothing else in the overlay.

    Something else writing or deleting in the folder meanwhile (another program, a cleanup
    that took this save for a dead one) makes the save fail here instead of publishing a
    version with holes.
    """
    manifest = read_manifest(tmp / MANIFEST_NAME)
    overlay = tmp / manifest.overlay
    found: dict[str, int] = {}
    for folder, _dirs, names in os.walk(overlay):
        for name in names:
            path = Path(folder, name)
            info = os.lstat(path)
            key = path.relative_to(overlay).as_posix()
            found[key] = info.st_size if stat.S_ISREG(info.st_mode) else -1
    listed = {entry.key: entry.size for entry in manifest.files}
    if found != listed:
        missing = sorted(set(listed) - set(found))
        wrong = sorted(key for key in set(listed) & set(found) if found[key] != listed[key])
        extra = sorted(set(found) - set(listed))
        raise WriteRefusedError(
            f"the new version's folder changed while it was written ({len(missing)} objects missing, "
            f"{len(wrong)} of another size, {len(extra)} not listed; first: "
            f"{(missing + wrong + extra)[0]!r}); nothing was saved, save again"
        )


def manifest_of(
    stack: Stack,
    store: CopyOnWriteStore,
    changes: list[dict[str, Any]],
    title: str | None,
    message: str | None,
    created_by: str | None,
) -> dict[str, Any]:
    """The ``layer.json`` of the version staged in ``store`` over ``stack``."""
    top = stack.top
    if top is not None:
        parent_id = _dataset_id_of(top.dataset_id, "the parent version")
        parent = f"cirro:::dataset:{parent_id}/{MANIFEST_NAME}"
        base = top.manifest.base or stack.base.reference
    else:
        base_id = _dataset_id_of(stack.base.dataset_id or "", "the base store's folder")
        parent = base = f"cirro:::dataset:{base_id}/{stack.base.path.name}"
    return {
        "format": FORMAT,
        "format_version": 1,
        "parent": parent,
        "base": base or stack.base.reference,
        "depth": stack.depth + 1,
        "title": title,
        "message": message,
        "created_at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "created_by": created_by or _user(),
        "app": {"id": APP_ID, "version": __version__},
        "overlay": "overlay",
        "files": [{"key": k, "size": len(v)} for k, v in sorted(store.staged.items())],
        "deleted": store.whiteouts,
        "changes": changes,
    }


def _check_destination(stack: Stack, dest: Path) -> None:
    if dest.exists() or dest.is_symlink():
        raise WriteRefusedError(f"{dest} exists; a new version needs a new folder")
    stack.refuse_output_inside(dest, "new version in its own folder")


def _dataset_id_of(value: str, what: str) -> str:
    try:
        return check_dataset_id(value)
    except StackError:
        raise WriteRefusedError(
            f"{what} is in a folder named {value!r}, which is not a dataset ID "
            "(letters, digits, hyphens); rename it or give a folder map"
        ) from None


USER_VARIABLES = ("SDS_USER", "JUPYTERHUB_USER")
"""Environment variables naming who saves a version, first set wins; else the login name."""


def _user() -> str | None:
    for variable in USER_VARIABLES:
        if os.environ.get(variable):
            return os.environ[variable]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
