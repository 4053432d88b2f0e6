"""Keeping every path the server opens inside its root directory.

Requests name folders relative to the server root. A name that is absolute,
climbs with ``..``, or reaches outside through a symbolic link is refused
before anything is opened; so is a stack whose parents or base resolve
outside the root (a version at the root's top looks for its parents one
level up, which is outside).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from sds_jupyter.errors import StackError, shown
from sds_jupyter.service import StackService, parents_inside

__all__ = [
    "FolderUnreadableError",
    "OutsideRootError",
    "PathNotFoundError",
    "check_datasets_dir_inside",
    "check_stack_inside",
    "resolve_in_root",
    "within_root",
]


class OutsideRootError(StackError):
    """A path that is, or leads, outside the server root (HTTP 403)."""

    kind = "outside-root"


class PathNotFoundError(StackError):
    """A path inside the root that does not exist (HTTP 404)."""

    kind = "not-found"


class FolderUnreadableError(StackError):
    """A folder (or file) under the root that the server's user may not read (HTTP 403)."""

    kind = "permission-denied"


def within_root(message: str, root: str | os.PathLike[str]) -> str:
    """``message`` with the server root's own path taken out, so folders read as the browser names them.

    Why: the stack library names folders by their absolute paths, which on a server are the
    host's layout (and none of the user's business); the browser asks relative to the root.
    """
    prefix = os.path.realpath(root).rstrip(os.sep) + os.sep
    return message.replace(prefix, "")


def unreadable(root: str | os.PathLike[str], filename: object) -> FolderUnreadableError:
    """The refusal of a path the server was denied, named relative to ``root`` (never an outside path).

    Why: "internal" tells the user nothing; the folder's name tells them whose access to fix.
    """
    where = "a folder it needs"
    if isinstance(filename, (str, os.PathLike)):
        relative = os.path.relpath(os.fspath(filename), os.path.realpath(root))
        if relative == ".":
            where = "the server root"
        elif relative == ".." or relative.startswith(".." + os.sep):
            where = "a folder outside the server root"
        else:
            where = repr(PurePosixPath(*Path(relative).parts).as_posix())
    return FolderUnreadableError(f"Permission denied: the server cannot read {where}; ask for read access to it.")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_in_root(root: str | os.PathLike[str], relative: str) -> Path:
    """The folder or file ``relative`` names under ``root``, refusing anything outside it."""
    text = (relative or "").strip()
    if "\\" in text or "\x00" in text:
        raise OutsideRootError(f"{shown(text, 120)} is not a plain relative path")
    pure = PurePosixPath(text)
    if pure.is_absolute() or ".." in pure.parts:
        raise OutsideRootError(
            f"{shown(text, 120)} is outside the server root; give a path relative to it without '..'"
        )
    root_real = os.path.realpath(root)
    candidate = os.path.join(root_real, *pure.parts) if pure.parts else root_real
    if not _inside(os.path.realpath(candidate), root_real):
        raise OutsideRootError(f"{shown(text, 120)} leads outside the server root (through a symbolic link)")
    _check_exists(root_real, pure.parts)
    return Path(candidate)


def _check_exists(root_real: str, parts: tuple[str, ...]) -> None:
    """Refuse a missing path (404), or one behind a folder the server may not enter (403, naming that folder)."""
    folder = root_real
    for part in parts:
        step = os.path.join(folder, part)
        try:
            os.stat(step)
        except PermissionError:
            raise unreadable(root_real, folder) from None
        except OSError:
            raise _not_found() from None
        folder = step
    if not parts and not os.path.exists(root_real):
        raise _not_found()


def _not_found() -> PathNotFoundError:
    """The 404 of a missing path. It does not quote the path: that came from the request (a body of
    up to 64 KiB), and an answer must not echo what a client sent."""
    return PathNotFoundError(
        "That path does not exist under the server root; choose a version folder in the file browser."
    )


def check_stack_inside(service: StackService, root: str | os.PathLike[str]) -> None:
    """Refuse a service whose stack reads any folder (versions, overlays, base) outside ``root``."""
    name = service.stack.outside(root)  # a place in object storage is outside the root too
    if name is not None:
        raise OutsideRootError(f"the stack reads {name} from outside the server root; move its datasets under the root")


def check_datasets_dir_inside(path: Path, root: str | os.PathLike[str]) -> None:
    """Refuse a version whose parents would be looked up outside ``root``, before reading any.

    Parents are found beside the version's dataset folder, so that folder's
    parent must be inside the root: a version at the root itself is refused.
    """
    if not parents_inside(path, root):  # the library's rule, through the caches the services open with
        raise OutsideRootError(
            "this version's parents would be looked up outside the server root; open it from a folder below the root"
        )
