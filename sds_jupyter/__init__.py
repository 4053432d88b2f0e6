"""sds-jupyter: open, browse, flatten and save versions of SpatialData stores.

The stack library (:mod:`sds_jupyter.stack`) needs no Jupyter, and is all that
``pip install sds-jupyter`` installs; the browser widget, the ``%sds_open`` magic
and the JupyterLab extension sit on top of it, in the ``jupyter`` extra. Their names
load on first use and, without their extra, raise ``MissingExtraError`` naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sds_jupyter._version import __version__
from sds_jupyter.errors import MissingDatasetError, StackError

if TYPE_CHECKING:
    from sds_jupyter.service.export import export_figure
    from sds_jupyter.stack import (
        Stack,
        StackCaches,
        StackStore,
        VersionWriter,
        check,
        describe,
        flatten,
        open_anndata,
        open_spatialdata,
        open_stack,
        save_version,
    )
    from sds_jupyter.widget import VersionBrowser


__all__ = [
    "MissingDatasetError",
    "Stack",
    "StackCaches",
    "StackError",
    "StackStore",
    "VersionBrowser",
    "VersionWriter",
    "__version__",
    "check",
    "describe",
    "export_figure",
    "flatten",
    "open_anndata",
    "open_spatialdata",
    "open_stack",
    "save_version",
]

# Every name but the errors and the version loads on first use. The Jupyter-side ones so that
# importing the package needs only the core install; the stack's so that what imports the package
# for something else pays nothing for zarr, numpy and pandas (0.7 s of CPU): the command line
# (`sds-jupyter --help`, a refused argument) imports the stack only in a command that reads one.
_STACK_NAMES = (
    "Stack",
    "StackCaches",
    "StackStore",
    "VersionWriter",
    "check",
    "describe",
    "flatten",
    "open_anndata",
    "open_spatialdata",
    "open_stack",
    "save_version",
)
_LAZY = {
    **dict.fromkeys(_STACK_NAMES, "sds_jupyter.stack"),
    "VersionBrowser": "sds_jupyter.widget",
    "export_figure": "sds_jupyter.service.export",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # asked once: later reads find it without this function
        return value
    raise AttributeError(f"module 'sds_jupyter' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension is (``jupyter labextension develop`` reads it)."""
    return [{"src": "labextension", "dest": "sds-jupyter"}]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext sds_jupyter``: register ``%sds_open`` (IPython is imported only now)."""
    from sds_jupyter.magics import load_ipython_extension as load_magics

    load_magics(ipython)
