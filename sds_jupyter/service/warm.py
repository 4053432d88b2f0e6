"""Imports a version's first figure needs, made in the background before that figure is asked for.

Both transports warm them: the server when it loads the extension, the kernel when the first widget
is made (its first view waits on the front end's load just as long). Measured in the kernel before
this, the widget's first tissue paid about 0.45 s importing matplotlib for the palette.

Why: the service imports its heavy libraries where it first uses them (so ``import sds_jupyter``
stays light), and on a fresh server that first use is a person's first figure: the ``figures``
request read the category colours through matplotlib and paid its import (1.7 s of a 2.5 s cold
``figures`` at load 17, 2026-12-07), the ``canvas`` request pyarrow's parquet reader. The server
waits seconds for its first request anyway (JupyterLab loading in the browser), so the imports are
made then, in one daemon thread; a request that needs a module still being imported waits for it
(Python's import lock), so nothing changes but when the time is spent.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence

__all__ = ["WARM_MODULES", "warm_imports", "warm_once"]

#: What history, figures, canvas, cells, color_values and channels import on first use (measured
#: by listing ``sys.modules`` before and after them on the demo): palettes and colormaps, shapes' parquet.
WARM_MODULES = ("matplotlib", "matplotlib.colors", "pyarrow.parquet")


def warm_imports(log: logging.Logger, modules: Sequence[str] = WARM_MODULES) -> threading.Thread:
    """Import ``modules`` in a daemon thread (started, and returned); a failure is logged, never raised."""
    thread = threading.Thread(target=_import_all, args=(log, tuple(modules)), name="sds-jupyter-warm", daemon=True)
    thread.start()
    return thread


_warmed: threading.Thread | None = None
_warming = threading.Lock()


def warm_once(log: logging.Logger) -> threading.Thread:
    """``warm_imports`` the first time a process asks (every later widget finds them imported)."""
    global _warmed
    with _warming:
        if _warmed is None:
            _warmed = warm_imports(log)
        return _warmed


def _import_all(log: logging.Logger, modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - the request that needs it imports it again and says why
            log.warning("sds-jupyter: importing %s ahead of the first request failed: %s", name, exc)
