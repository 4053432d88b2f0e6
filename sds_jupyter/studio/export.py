"""Drawing a saved figure to SVG, PNG or PDF, on demand.

Charts go through ``vl-convert`` (the same Vega-Lite spec the browser shows);
canvas views are redrawn with matplotlib from the same CanvasPayload the
browser gets. ``print_width`` (mm, or "single"/"double" journal columns) sets
the figure's physical width.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sds_jupyter.studio.canvas import CanvasData
from sds_jupyter.studio.errors import FigureError

__all__ = ["EXPORT_FORMATS", "format_of", "print_width_mm", "render_canvas", "render_chart"]

EXPORT_FORMATS = (".svg", ".png", ".pdf")
COLUMN_WIDTHS_MM = {"single": 89.0, "double": 183.0}
DEFAULT_WIDTH_MM = 89.0
MM_PER_INCH = 25.4
POINTS_PER_INCH = 72.0
PNG_DPI = 300


def print_width_mm(value: Any) -> float:
    """The figure width in millimetres from a spec's ``print_width``."""
    if isinstance(value, str):
        return COLUMN_WIDTHS_MM.get(value, DEFAULT_WIDTH_MM)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_WIDTH_MM


def format_of(out: Path) -> str:
    suffix = out.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise FigureError(f"Cannot export to {out.name!r}: use one of {', '.join(EXPORT_FORMATS)}.")
    return suffix


def render_chart(vega_lite: Mapping[str, Any], out: Path, width_mm: float = DEFAULT_WIDTH_MM) -> Path:
    """Write a Vega-Lite spec to ``out`` (format from its suffix) at ``width_mm``."""
    import vl_convert

    fmt = format_of(out)
    spec = dict(vega_lite)
    if "facet" not in spec and "width" not in spec:
        spec["width"] = max(60, round(width_mm / MM_PER_INCH * POINTS_PER_INCH) - 60)
    if fmt == ".svg":
        out.write_text(vl_convert.vegalite_to_svg(spec), encoding="utf-8")
    elif fmt == ".png":
        out.write_bytes(vl_convert.vegalite_to_png(spec, ppi=PNG_DPI))
    else:
        out.write_bytes(vl_convert.vegalite_to_pdf(spec))
    return out


def render_canvas(drawn: CanvasData, out: Path, width_mm: float = DEFAULT_WIDTH_MM, title: str | None = None) -> Path:
    """Redraw a canvas view (image, then cells colored as in the browser) with matplotlib."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fmt = format_of(out)
    payload = drawn.payload
    xmin, ymin, xmax, ymax = payload["bounds"]
    width_in = width_mm / MM_PER_INCH
    aspect = (ymax - ymin) / (xmax - xmin) if xmax > xmin else 1.0
    figure = Figure(figsize=(width_in, max(width_in * aspect, 0.5) + (0.3 if title else 0)))
    axes = figure.add_axes((0, 0, 1, 0.92 if title else 1))
    axes.set_axis_off()
    buffers = list(drawn.buffers)
    x, y = buffers[0], buffers[1]
    if payload["image"] is not None:
        image = payload["image"]
        left, top, right, bottom = image["bounds"]
        axes.imshow(buffers[-1], extent=(left, right, bottom, top), interpolation="nearest")
    axes.scatter(x, y, s=payload["point_size"] ** 2 / 4, c=_cell_colors(payload["color"], buffers), linewidths=0)
    axes.set_xlim(xmin, xmax)
    axes.set_ylim(ymax, ymin)  # image coordinates: y grows downwards, as in the browser
    axes.set_aspect("equal")
    if title:
        figure.suptitle(title, fontsize=8)
    figure.savefig(out, format=fmt[1:], dpi=PNG_DPI if fmt == ".png" else None)
    return out


def _cell_colors(color: Mapping[str, Any], buffers: list[np.ndarray]) -> Any:
    """One color per cell, from the categorical palette or the continuous LUT."""
    if color["mode"] == "categorical":
        palette = np.array(color["colors"])
        return palette[buffers[2].astype(np.int64)]
    if color["mode"] == "continuous":
        values = buffers[2].astype(np.float64)
        low, high = color["min"], color["max"]
        scaled = np.clip((values - low) / (high - low if high > low else 1.0), 0, 1)
        index = np.nan_to_num(scaled * (len(color["lut"]) - 1), nan=0).astype(np.int64)
        return np.array(color["lut"])[index]
    return "#444444"
