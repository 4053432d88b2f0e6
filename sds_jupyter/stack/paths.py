"""Path rules for anything a manifest names.

Manifests arrive with downloaded data, so every key, overlay folder, reference
path and zip member name is checked here, in one place, before it is joined to
a folder. Containment is checked again on the real path when a file is opened,
so a symbolic link cannot lead a read out of the folder it belongs to: that is
:meth:`sds_jupyter.stack.location.Location.join`'s job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from sds_jupyter.errors import UnsafePathError

__all__ = [
    "check_dataset_id",
    "check_relative_path",
    "ancestors",
    "check_whiteout",
    "is_within",
]

_DATASET_ID = re.compile(r"[A-Za-z0-9-]+")


def check_relative_path(value: object, what: str) -> str:
    """Return ``value`` if it is a safe relative POSIX path, else raise.

    Safe means: a non-empty string, not absolute, no empty, ``.`` or ``..``
    segment, no backslash and no NUL. ``what`` names the field for the message.
    """
    if not isinstance(value, str):
        raise UnsafePathError(f"{what} must be a string, got {type(value).__name__}")
    if value == "":
        raise UnsafePathError(f"{what} is empty; it must be a relative path")
    if "\\" in value or "\x00" in value:
        raise UnsafePathError(
            f"{what} {value!r} holds a backslash or NUL; use '/'-separated relative paths"
        )
    for segment in value.split("/"):
        if segment in ("", ".", ".."):
            raise UnsafePathError(
                f"{what} {value!r} is not a plain relative path "
                "(it is absolute or has an empty, '.' or '..' segment)"
            )
    return value


def check_whiteout(value: object) -> str:
    """Check a ``deleted`` entry: a key, or a node prefix ending in one ``/``."""
    if isinstance(value, str) and value.endswith("/"):
        check_relative_path(value[:-1], "deleted entry")
        return value
    return check_relative_path(value, "deleted entry")


def check_dataset_id(value: object) -> str:
    """Dataset IDs name folders, so only letters, digits and hyphens pass."""
    if not isinstance(value, str) or not _DATASET_ID.fullmatch(value):
        raise UnsafePathError(
            f"dataset ID {value!r} may hold only letters, digits and hyphens"
        )
    return value


def ancestors(key: str) -> Iterator[str]:
    """The nodes a key sits in: ``a`` and ``a/b`` for ``a/b/c``."""
    index = key.find("/")
    while index != -1:
        yield key[:index]
        index = key.find("/", index + 1)


def is_within(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``root`` or below it, both taken as given (no resolving)."""
    path_s, root_s = os.fspath(path), os.fspath(root)
    return path_s == root_s or path_s.startswith(root_s.rstrip(os.sep) + os.sep)
