"""Exports of saved figures: the one renderer's file, for the shell, the notebook and the browser.

:func:`render_export` draws a figure of a version to the bytes of an SVG, PNG or PDF
file, named after the version and the figure. The command line and
``VersionBrowser.export`` write it with :func:`export_figure`; the panel and the
widget ask for it with the ``export`` request and save the bytes they get. It
lives here, above the studio's drawing code, so the studio never imports the service.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sds_jupyter.atomic import replaced_file
from sds_jupyter.errors import ElementError, FigureError, needs_extra, shown
from sds_jupyter.jsontext import JSONRefused, loads_bounded
from sds_jupyter.limits import MAX_CHANNELS_PARAM_BYTES, MAX_CHANNELS_PARAM_DEPTH
from sds_jupyter.protocol.layouts import LAYOUTS, reply_buffers
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.protocol.types import ExportData
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.features.cells import color_values
from sds_jupyter.service.features.figures import figure_drawing
from sds_jupyter.service.features.shapes import element_outlines
from sds_jupyter.service.session import Opened, Session, session_of
from sds_jupyter.studio.canvas import CanvasData
from sds_jupyter.studio.elements import open_pyramid
from sds_jupyter.studio.masks import ExportLabels, export_labels
from sds_jupyter.studio.pointparts import ExportPoints, export_points
from sds_jupyter.studio.render import (
    DPI_RANGE,
    MM_PER_INCH,
    PNG_DPI,
    CanvasExport,
    canvas_page,
    cells_in_region,
    check_pixels,
    export_name,
    format_of,
    print_width_mm,
    rasterizes,
    recolored,
    view_region,
)
from sds_jupyter.studio.shapes import ExportShapes, export_shapes
from sds_jupyter.studio.worker import draw_in_worker

__all__ = ["MEDIA_TYPES", "Export", "export_figure", "export_request", "render_export"]

MEDIA_TYPES = {".svg": "image/svg+xml", ".png": "image/png", ".pdf": "application/pdf"}
#: The most pixels across the whole image an export reads (a zoomed-in view at a high dpi
#: would otherwise ask for the full-resolution level of a slide: 50,000 px and more a side).
MAX_EXPORT_IMAGE_SIDE = 8192


def _value_type(color: Mapping[str, Any]) -> Any:
    """A color_values buffer's dtype, as the reply's layout picks it (uint8 or uint16 codes, float32 values)."""
    (values,) = LAYOUTS["color_values"]
    return np.dtype(values.dtype_for(color))


@dataclass
class Export:
    """One exported figure: its file name, format (".svg", ".png", ".pdf") and bytes."""

    name: str
    format: str
    data: bytes
    #: Cells in the exported region (0 for a chart).
    cells: int = 0
    #: Whether the cells were drawn as one picture inside a vector file (above VECTOR_CELL_LIMIT).
    rasterized: bool = False


def checked_dpi(dpi: int) -> int:
    """``dpi`` when it lies in DPI_RANGE, else a FigureError saying which dpi an export takes."""
    low, high = DPI_RANGE
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not low <= dpi <= high:
        raise FigureError(f"An export's dpi must be a whole number from {low} to {high}, not {dpi!r}.")
    return dpi


def render_export(
    opened: Session | Opened,
    version: int | str | None,
    figure_id: str,
    fmt: str = ".svg",
    dpi: int = PNG_DPI,
    view: str | Sequence[float] | None = None,
    coloring: Mapping[str, Any] | None = None,
    hidden: Collection[int] = (),
    channels: Sequence[Mapping[str, Any]] | None = None,
    limits: tuple[float, float] | None = None,
) -> Export:
    """Figure ``figure_id`` of a version (default: the top) drawn as ``fmt`` at ``dpi``.

    Charts go through vl-convert with the Vega-Lite spec the browser shows; canvas figures
    through matplotlib with the payload the view is sent (its palette, channels and contrast
    limits), over ``view`` (see :func:`~sds_jupyter.studio.render.view_region`). ``coloring``:
    the parameters of a ``color_values`` request the view was recolored with (a column, a gene,
    a highlight, a change against a version), so the export shows what the view shows;
    ``hidden``: the category codes the view's legend hides; ``channels``: the image channels as
    the view's controls set them (name, color, visible, contrast_limits), else the saved ones;
    ``limits``: the low and high ends of a colouring by numbers, as the view clips it.
    """
    needs_extra("export", "figure export")
    session = session_of(opened)
    fmt = format_of(Path(f"figure.{str(fmt).lstrip('.')}"))
    dpi = checked_dpi(dpi)
    depth = session.depth(version)
    title_of_version = session.stack.versions[session.stack.depth - depth].title if depth else None
    stem = export_name(depth, title_of_version, figure_id)
    name = f"{stem}-{dpi}dpi.png" if fmt == ".png" else f"{stem}{fmt}"
    parsed, drawing = figure_drawing(session, depth, figure_id, channels=channels)
    width_mm = print_width_mm(parsed.print_width)
    title = recolored_title(parsed.title or figure_id, coloring)
    if not isinstance(drawing, CanvasData):
        return Export(name, fmt, draw_in_worker("chart", drawing, fmt, width_mm, title, dpi))
    region = view_region(drawing.payload, view)
    page = canvas_page(drawing.payload, region, width_mm, title)
    check_pixels(page.width_in, page.height_in, dpi)  # before the image is read at the export's size
    if drawing.payload["image"] is not None:
        drawing = _with_image_for(session, depth, figure_id, drawing, region, width_mm, dpi, channels)
    if coloring:
        answer = color_values(session, depth, figure_id, **coloring)
        drawing = recolored(drawing, answer.data, np.frombuffer(answer.buffers[0], _value_type(answer.data)))
    if hidden:
        drawing = recolored(drawing, hidden=hidden)
    if limits is not None:
        drawing = _clipped(drawing, limits)
    points = _export_points(session, depth, figure_id, drawing, region)
    labels = _export_labels(session, depth, figure_id, drawing, region, math.ceil(page.draw_in * dpi))
    shapes = _export_shapes(session, depth, figure_id, drawing, region)
    export = CanvasExport(drawing, region, title, points, labels, shapes)
    rasterized = rasterizes(fmt, cells_in_region(export))  # decided here, where VECTOR_CELL_LIMIT is read
    data, cells = draw_in_worker("canvas", export, fmt, width_mm, dpi, rasterized)
    return Export(name, fmt, data, cells, rasterized)


def recolored_title(title: str, coloring: Mapping[str, Any] | None) -> str:
    """The export's title: the figure's, unless the view was recolored, then what it is colored by now.

    A figure titled "Cell types" exported while the view is colored by leiden must not say
    "Cell types": the title names the colouring the picture shows (the file keeps the figure's id).
    """
    if not coloring:
        return title
    what = str(coloring.get("gene") or coloring.get("column") or "")
    if not what:
        return title
    if coloring.get("gene") and "," in what:
        what = " + ".join(g.strip() for g in what.split(","))
    if coloring.get("highlight") not in (None, ""):
        what = f"{what}: {coloring['highlight']}"
    if coloring.get("against") not in (None, ""):
        what = f"{what}, changed since {coloring['against']}"
    return f"Colored by {what}"


def _export_points(
    session: Session, depth: int, figure_id: str, drawing: CanvasData, region: tuple[float, float, float, float]
) -> ExportPoints | None:
    """The transcripts the figure's spec shows (``points``), read for the export's region; None without."""
    saved = drawing.payload.get("points")
    if not saved:
        return None
    spec = session.canvas_spec(depth, figure_id)
    root = session.table_view(depth, spec.get("table")).root
    system = spec.get("coordinate_system") or None
    try:
        return export_points(root, saved["element"], saved["genes"], region, saved["radius"], system)
    except ElementError as exc:
        raise RequestError(f"Figure {figure_id!r} shows transcripts that cannot be read: {exc}") from None


def _export_labels(
    session: Session,
    depth: int,
    figure_id: str,
    drawing: CanvasData,
    region: tuple[float, float, float, float],
    draw_px: int,
) -> ExportLabels | None:
    """The labels layer the figure's spec shows (``labels``, visible), read over the export's region at
    about ``draw_px`` pixels across (bounded by MAX_EXPORT_IMAGE_SIDE); None without."""
    saved = drawing.payload.get("labels")
    if not saved or not saved["visible"]:
        return None
    spec = session.canvas_spec(depth, figure_id)
    root = session.table_view(depth, spec.get("table")).root
    system = spec.get("coordinate_system") or None
    try:
        pyramid = open_pyramid(root, saved["element"], system, kind="labels")
        return export_labels(pyramid, saved["style"], region, min(draw_px, MAX_EXPORT_IMAGE_SIDE), saved["opacity"])
    except ElementError as exc:
        raise RequestError(f"Figure {figure_id!r} shows labels that cannot be read: {exc}") from None


def _export_shapes(
    session: Session, depth: int, figure_id: str, drawing: CanvasData, region: tuple[float, float, float, float]
) -> list[ExportShapes]:
    """The shapes elements the figure's spec outlines (``shapes``, visible ones), the rings meeting the region.

    Read through the index the ``shapes_tile`` request serves from (:func:`element_outlines`), so
    an export draws each element's outlines as the view's tiles give them.
    """
    layers = [layer for layer in drawing.payload.get("shape_layers") or [] if layer["visible"]]
    if not layers:
        return []
    spec = session.canvas_spec(depth, figure_id)
    root = session.table_view(depth, spec.get("table")).root
    system = str(spec.get("coordinate_system") or "")
    drawn = []
    for layer in layers:
        try:
            rings, boxes = element_outlines(session.caches, root, layer["element"], system).in_region(list(region))
        except RequestError as exc:
            raise RequestError(f"Figure {figure_id!r} outlines shapes that cannot be read: {exc}") from None
        drawn.append(export_shapes(layer["element"], rings, boxes, region, layer["color"], layer["opacity"]))
    return drawn


def export_request(
    session: Session,
    version: int | str | None = None,
    figure: str = "",
    format: str = "svg",
    dpi: int = PNG_DPI,
    view: str | None = None,
    column: str = "",
    gene: str = "",
    layer: str | None = None,
    highlight: str | None = None,
    against: int | str | None = None,
    hidden: str = "",
    channels: str = "",
    limits: str = "",
) -> Reply[ExportData]:
    """The ``export`` request: a figure drawn to an SVG, PNG or PDF file, its name and bytes (one buffer).

    Why: the panel and the widget save exactly the file the command line writes (one
    renderer). ``view``: "saved" (default), "whole", or the region on screen as x0,y0,x1,y1.
    ``column`` ... ``against``: how the view recolored the cells, as ``color_values`` takes
    them; ``hidden``: the category codes its legend hides, as "0,3"; ``channels``: the image
    channels as its controls set them, a JSON list of {name, color, visible, contrast_limits};
    ``limits``: the colour limits of a colouring by numbers as the view clips them, "low,high".
    """
    if not figure:
        raise RequestError("The export request needs a figure id.")
    given = {"column": column, "gene": gene, "layer": layer, "highlight": highlight, "against": against}
    coloring = {key: value for key, value in given.items() if value not in (None, "")}
    made = render_export(
        session, version, figure, format, dpi, view, coloring, _codes(hidden), _channels(channels), _limits(limits)
    )
    payload: ExportData = {
        "name": made.name,
        "format": made.format,
        "media_type": MEDIA_TYPES[made.format],
        "size": len(made.data),
        "cells": made.cells,
        "rasterized": made.rasterized,
    }
    return Reply(payload, reply_buffers("export", payload, [made.data]))


def _clipped(drawing: CanvasData, limits: tuple[float, float]) -> CanvasData:
    """``drawing`` with its colour by numbers running from ``limits[0]`` to ``limits[1]`` (values beyond clip)."""
    color = drawing.payload["color"]
    if color["mode"] != "continuous":
        raise RequestError("limits apply to cells colored by numbers (a gene or a numeric column), not by categories.")
    return CanvasData({**drawing.payload, "color": {**color, "min": limits[0], "max": limits[1]}}, drawing.buffers)


def _limits(text: str) -> tuple[float, float] | None:
    """The colour limits "low,high" in ``text`` (None when empty): two finite numbers, low below high."""
    if not text:
        return None
    parts = text.split(",")
    try:
        low, high = (float(part) for part in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise RequestError(f"limits must be two finite numbers, low below high, as 'low,high'; not {shown(text)}.")
    return low, high


def _channels(text: str) -> list[Any] | None:
    """The JSON list of channel settings in ``text`` (None when empty; a RequestError when not a list).

    Read within MAX_CHANNELS_PARAM_BYTES and MAX_CHANNELS_PARAM_DEPTH: the parameter comes from
    the request, and 5,000 nested brackets would otherwise end in a RecursionError.
    """
    if not text:
        return None
    usage = "channels must be a JSON list of {name, color, visible, contrast_limits}"
    try:
        channels = loads_bounded(text, max_bytes=MAX_CHANNELS_PARAM_BYTES, max_depth=MAX_CHANNELS_PARAM_DEPTH)
    except JSONRefused as exc:
        raise RequestError(
            f"{usage}, at most {MAX_CHANNELS_PARAM_BYTES} bytes and {MAX_CHANNELS_PARAM_DEPTH} levels deep "
            f"(MAX_CHANNELS_PARAM_BYTES, MAX_CHANNELS_PARAM_DEPTH); this one is not: {exc}."
        ) from None
    if not isinstance(channels, list):
        raise RequestError(f"{usage}.")
    return channels


def _codes(hidden: str) -> list[int]:
    """The category codes in "0,3" (a RequestError when it is not a list of whole numbers)."""
    try:
        return [int(part) for part in hidden.split(",") if part.strip()]
    except ValueError:
        raise RequestError(f"hidden must list category codes as 0,3, not {shown(hidden)}.") from None


def _with_image_for(
    session: Session,
    depth: int,
    figure_id: str,
    drawing: CanvasData,
    region: tuple[float, float, float, float],
    width_mm: float,
    dpi: int,
    channels: Sequence[Mapping[str, Any]] | None = None,
) -> CanvasData:
    """The figure again with its image at the pyramid level the export's dpi needs over ``region``.

    The drawing is ``width_mm`` at ``dpi`` across the region; the whole figure would then span
    that many pixels times (its bounds' width / the region's), which is what picks the level.
    """
    x0, _, x1, _ = drawing.payload["bounds"]
    across = max(x1 - x0, 1e-9) / max(region[2] - region[0], 1e-9)
    draw_px = math.ceil(width_mm / MM_PER_INCH * dpi * across)
    _, finer = figure_drawing(session, depth, figure_id, min(draw_px, MAX_EXPORT_IMAGE_SIDE), channels)
    return finer if isinstance(finer, CanvasData) else drawing


def export_figure(
    path: str | os.PathLike[str] | Session | Opened,
    figure_id: str,
    out: str | os.PathLike[str],
    version: int | str | None = None,
    folders: str | Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    format: str = ".svg",
    dpi: int = PNG_DPI,
    view: str | Sequence[float] | None = None,
) -> Path:
    """Draw figure ``figure_id`` of a version (default: the top) to ``out`` (.svg/.png/.pdf).

    ``path`` is a version folder, anything :meth:`Stack.resolve` takes, or an open service.
    ``out`` is a file, or an existing folder: then the file in it is named as the browser
    names its exports, after the version's depth and title and the figure
    (``v3_Regions-fig_regions.svg``; a PNG ends ``-300dpi.png``), in ``format``. ``dpi``: the
    PNG's resolution, and that of cells drawn as a picture in a vector file; ``view``: "saved"
    (default), "whole" or x0,y0,x1,y1. The version is only read; nothing is written but that
    file, which must lie outside every folder of the stack, and an existing file is replaced
    whole or not at all.
    """
    target = Path(os.path.abspath(os.path.expanduser(os.fspath(out))))
    into_folder = target.is_dir()
    fmt = format_of(Path(f"figure.{format.lstrip('.')}") if into_folder else target)
    session = (
        session_of(path)
        if isinstance(path, (Session, Opened))
        else Session(path, folders=folders, storage_options=storage_options)
    )
    if session.error is not None:
        raise session.error
    export = render_export(session, version, figure_id, fmt, dpi, view)
    if into_folder:
        target = target / export.name
    session.stack.refuse_output_inside(target, "figure")
    with replaced_file(target) as new:
        new.write_bytes(export.data)
    return target
