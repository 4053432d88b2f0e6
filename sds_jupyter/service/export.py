"""``export_figure``: a saved figure of a version drawn to a file, from Python and the shell.

It reads the version through the service (the figure's data) and draws with the
studio's renderers; it lives here, above both, so the studio never imports the service.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sds_jupyter.service.service import StackService
from sds_jupyter.studio.canvas import CanvasData
from sds_jupyter.studio.export import PNG_DPI, export_name, format_of, print_width_mm, render_canvas, render_chart

__all__ = ["export_figure"]


def export_figure(
    path: str | os.PathLike[str],
    figure_id: str,
    out: str | os.PathLike[str],
    version: int | str | None = None,
    folders: str | Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    format: str = ".svg",
) -> Path:
    """Draw figure ``figure_id`` of a version (default: the top) to ``out`` (.svg/.png/.pdf).

    ``path`` is a version folder or anything :meth:`Stack.resolve` takes. ``out`` is a file,
    or an existing folder: then the file in it is named as the browser names its exports,
    after the version's depth and title and the figure (``v3_Regions-fig_regions.svg``; a PNG,
    drawn at 300 dpi, ends ``-300dpi.png``), in ``format``. The version is only read; nothing
    is written but that file, which must lie outside every folder of the stack (its
    versions, their overlays, the base).
    """
    target = Path(os.path.abspath(os.path.expanduser(os.fspath(out))))
    into_folder = target.is_dir()
    suffix = format_of(Path(f"figure.{format.lstrip('.')}") if into_folder else target)
    service = StackService(path, folders=folders, storage_options=storage_options)
    if into_folder:
        depth = service.depth(version)
        title = service.stack.versions[service.stack.depth - depth].title if depth else None
        name = export_name(depth, title, figure_id)
        target = target / (f"{name}-{PNG_DPI}dpi.png" if suffix == ".png" else f"{name}{suffix}")
    service.stack.refuse_output_inside(target, "figure")
    figure, drawing = service.export_figure(version, figure_id, dpi=PNG_DPI)
    width = print_width_mm(figure.print_width)
    if isinstance(drawing, CanvasData):
        return render_canvas(drawing, target, width, figure.title or figure_id)
    return render_chart(drawing, target, width, figure.title or figure_id)
