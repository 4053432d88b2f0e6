"""Errors raised by sds_jupyter.

Every refusal the package makes about a stack is a :class:`StackError`, a
``ValueError``, so callers can catch one type. Subclasses narrow the cause and
carry a stable ``kind`` code that transports (the widget, the REST API, the
command line) hand to the front end unchanged::

    ValueError
    └── StackError                  kind "stack"
        ├── ManifestError           kind "manifest"     a layer.json is malformed or unsupported
        ├── UnsafePathError         kind "unsafe-path"  a key, path or folder escapes where it may point
        │   └── SpecialFileError                        a file to read is a FIFO, socket or device
        ├── ReferenceError_         kind "reference"    a parent/base reference cannot be parsed
        ├── MissingDatasetError     kind "missing-dataset"  a referenced dataset is not present
        ├── StackCycleError         kind "cycle"        a parent chain loops back on itself
        ├── StackChangedError       kind "changed"      a pickled store's stack changed before it was unpickled
        ├── StackTooDeepError       kind "too-deep"     a parent chain is longer than allowed
        ├── BaseStoreError          kind "base"         the store at the bottom cannot be read
        ├── WriteRefusedError       kind "write-refused"  a save would touch something it must not
        ├── CirroError              kind "cirro"        the Cirro SDK failed (connecting, uploading, fetching)
        └── (figure, result, element, no-studio-data: see sds_jupyter.studio.errors)

Messages are one line that says what is wrong and what to do about it.
"""

from __future__ import annotations

__all__ = [
    "BaseStoreError",
    "CirroError",
    "ManifestError",
    "MissingDatasetError",
    "ReferenceError_",
    "SpecialFileError",
    "StackChangedError",
    "StackCycleError",
    "StackError",
    "StackTooDeepError",
    "UnsafePathError",
    "WriteRefusedError",
    "shown",
]


def shown(value: object, limit: int = 60) -> str:
    """``value`` as a one-line message shows it: its repr, cut to ``limit`` characters.

    Why: what a message quotes came from a request or a file, and can be megabytes.
    """
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


class StackError(ValueError):
    """A stack, manifest or path was refused."""

    kind: str = "stack"


class ManifestError(StackError):
    kind = "manifest"


class UnsafePathError(StackError):
    kind = "unsafe-path"


class SpecialFileError(UnsafePathError):
    """A file a stack names is a FIFO, socket or device, which could block or never end."""


class ReferenceError_(StackError):  # noqa: N801 - the builtin name is taken
    kind = "reference"


class MissingDatasetError(StackError):
    """A dataset named by a reference is not in the datasets folder.

    ``dataset_id`` names it, so a UI can tell the user which dataset to attach.
    """

    kind = "missing-dataset"

    def __init__(self, message: str, dataset_id: str) -> None:
        super().__init__(message)
        self.dataset_id = dataset_id


class StackCycleError(StackError):
    kind = "cycle"


class StackChangedError(StackError):
    """A pickled store was opened again on a stack that changed since it was pickled."""

    kind = "changed"


class StackTooDeepError(StackError):
    kind = "too-deep"


class BaseStoreError(StackError):
    kind = "base"


class WriteRefusedError(StackError):
    kind = "write-refused"


class CirroError(StackError):
    """A call through the ``cirro`` SDK failed; the message says which step, in one line."""

    kind = "cirro"
