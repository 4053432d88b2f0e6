"""sds-jupyter: open, browse, flatten and save versions of SpatialData stores.

The stack library (:mod:`sds_jupyter.stack`) needs no Jupyter; the browser
widget, the ``%sds_open`` magic and the JupyterLab extension sit on top of it.
"""

from __future__ import annotations

from sds_jupyter.errors import MissingDatasetError, StackError
from sds_jupyter.stack import Stack, StackStore, open_stack
from sds_jupyter.stack.open import open_anndata, open_spatialdata

__version__ = "0.1.0"

__all__ = [
    "MissingDatasetError",
    "Stack",
    "StackError",
    "StackStore",
    "__version__",
    "open_anndata",
    "open_spatialdata",
    "open_stack",
]
