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
        │   └── InflationError                          a chunk would inflate past what its array declares
        ├── WriteRefusedError       kind "write-refused"  a save would touch something it must not
        ├── CirroError              kind "cirro"        the Cirro SDK failed (connecting, uploading, fetching)
        ├── MissingExtraError       kind "missing-extra"  a feature's libraries are not installed (also an ImportError)
        ├── FigureError             kind "figure"       a figure spec in uns cannot be drawn
        ├── ResultError             kind "result"       a result entry in uns is missing or unreadable
        ├── ElementError            kind "element"      a spatial element a figure names is missing or unreadable
        └── NoStudioDataError       kind "no-studio-data"  the table keeps no spatial_data_studio section

Messages are one line that says what is wrong and what to do about it.
"""

from __future__ import annotations

import sys
from typing import Literal

__all__ = [
    "EXTRA_MODULES",
    "BaseStoreError",
    "CirroError",
    "ElementError",
    "ErrorKind",
    "FigureError",
    "InflationError",
    "ManifestError",
    "MissingDatasetError",
    "MissingExtraError",
    "NoStudioDataError",
    "ReferenceError_",
    "ResultError",
    "SpecialFileError",
    "StackChangedError",
    "StackCycleError",
    "StackError",
    "StackTooDeepError",
    "UnsafePathError",
    "WriteRefusedError",
    "needs_extra",
    "shown",
]


def shown(value: object, limit: int = 60) -> str:
    """``value`` as a one-line message shows it: its repr, cut to ``limit`` characters.

    Why: what a message quotes came from a request or a file, and can be megabytes.
    """
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


#: Every kind of refusal the service or the server answers with (``{kind, message}``): the one list.
#: Each StackError subclass names one of these (mypy holds them to it); ``make types`` gives the
#: browser the same union, so a kind the front end tests for cannot drift from what is sent.
ErrorKind = Literal[
    "stack",
    "manifest",
    "unsafe-path",
    "reference",
    "missing-dataset",
    "cycle",
    "changed",
    "too-deep",
    "base",
    "write-refused",
    "cirro",
    "missing-extra",
    "bad-request",
    "figure",
    "result",
    "element",
    "no-studio-data",
    "outside-root",
    "not-found",
    "permission-denied",
    "too-large",
    "not-writable",
    "internal",
    "http",
]


class StackError(ValueError):
    """A stack, manifest or path was refused."""

    kind: ErrorKind = "stack"


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


class InflationError(BaseStoreError):
    """A stored chunk would inflate past what its array declares (a decompression bomb), or cannot
    be bounded before it is decompressed; refused before zarr decompresses it."""


class WriteRefusedError(StackError):
    kind = "write-refused"


class CirroError(StackError):
    """A call through the ``cirro`` SDK failed; the message says which step, in one line."""

    kind = "cirro"


class MissingExtraError(StackError, ImportError):
    """A feature needs libraries that an extra of the package brings, and they are not installed.

    An ``ImportError``, as Python readers expect of a missing library, and a
    :class:`StackError`, so that every transport (the command line first) shows it
    as one line like any other refusal. ``extra`` names what to install; ``name``
    the first library found missing.
    """

    kind = "missing-extra"

    def __init__(self, message: str, extra: str, missing: str) -> None:
        super().__init__(message)
        self.extra = extra
        self.name = missing


# What the app keeps in uns (figures, results) and the elements its figures draw.


class FigureError(StackError):
    kind = "figure"


class ResultError(StackError):
    kind = "result"


class ElementError(StackError):
    kind = "element"


class NoStudioDataError(StackError):
    """The table was never saved by the app, so it has no figures or results to show."""

    kind = "no-studio-data"


#: The modules each extra of pyproject.toml brings that the package imports (tests/project/test_install.py
#: keeps this equal to the extras there). The browser draws and exports figures, so
#: ``jupyter`` includes ``export``.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "export": ("jsonschema", "matplotlib", "vl_convert", "PIL", "shapely", "pyarrow"),
    "spatialdata": ("spatialdata", "geopandas", "shapely"),
    "cirro": ("cirro", "cirro_api_client"),
    "lazy": ("dask", "xarray"),
}
EXTRA_MODULES["jupyter"] = (
    "anywidget",
    "traitlets",
    "IPython",
    "jupyter_server",
    "jupyter_core",
    "tornado",
    *EXTRA_MODULES["export"],
)


def needs_extra(extra: str, feature: str) -> None:
    """Refuse ``feature`` with one line naming ``extra`` unless the libraries that extra brings are installed.

    Called before a feature imports them (at a module's top, or in the function
    that imports them lazily), so that a core install (``pip install sds-jupyter``)
    reads stacks and says what to install for the rest, instead of a bare
    ``ModuleNotFoundError`` from deep inside. Looks for the modules without importing them.
    """
    import importlib.util

    for module in EXTRA_MODULES[extra]:
        if sys.modules.get(module) is not None:
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(
                f"{feature} needs {module}, which is not installed: pip install 'sds-jupyter[{extra}]'",
                extra,
                module,
            )


def sole_refusal(exc: BaseException) -> BaseException:
    """The refusal inside ``exc`` when it is an exception group of refusals only, else ``exc``.

    zarr 3.2+ reads part of a shard in a task group, so a refusal our store raises there (a chunk
    that would inflate past its array's size) reaches the caller wrapped in an ExceptionGroup. The
    user should still read the one-line refusal, and transports answer it as the refusal it is
    (400, not 500). A group holding anything else is a failure of its own and stays as it is.
    """
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(reversed(current.exceptions))
        else:
            leaves.append(current)
    if leaves and all(isinstance(leaf, StackError) for leaf in leaves):
        return leaves[0]
    return exc
