"""Drawing a saved figure to SVG, PNG or PDF, on demand.

Charts go through ``vl-convert`` (the same Vega-Lite spec the browser shows);
canvas views are redrawn with matplotlib from the same CanvasPayload the
browser gets. ``print_width`` (mm, or "single"/"double" journal columns) sets
the figure's physical width.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sds_jupyter.stack.atomic import replaced_file
from sds_jupyter.studio.canvas import CanvasData
from sds_jupyter.studio.errors import FigureError

__all__ = [
    "EXPORT_FORMATS",
    "PRINT_CONFIG",
    "export_name",
    "format_of",
    "print_width_mm",
    "range_ticks",
    "render_canvas",
    "render_chart",
]

EXPORT_FORMATS = (".svg", ".png", ".pdf")
COLUMN_WIDTHS_MM = {"single": 89.0, "double": 183.0}
DEFAULT_WIDTH_MM = 89.0
MM_PER_INCH = 25.4
POINTS_PER_INCH = 72.0
PNG_DPI = 300
#: Categories a legend lists; the rest are counted (as in the browser's print legend).
MAX_LEGEND_ITEMS = 24
#: The print theme of charts, as the browser's (``js/src/app/chart.ts`` PRINT_CONFIG; the shared
#: fixture ``exports.json`` keeps the two alike): black on white, type in points below the 9 pt
#: title (8 pt axis, legend and facet titles, 7 pt labels). Vega's own sizes came out larger.
PRINT_CONFIG: dict[str, Any] = {
    "background": "#ffffff",
    "font": "sans-serif",
    "title": {"fontSize": 9, "fontWeight": 600, "anchor": "start"},
    "axis": {"labelFontSize": 7, "titleFontSize": 8, "titleFontWeight": 600},
    "legend": {"labelFontSize": 7, "titleFontSize": 8, "titleFontWeight": 600},
    "header": {"labelFontSize": 8, "titleFontSize": 8},
    "text": {"fontSize": 7},
}
#: The heading of the image channels in a canvas figure's legend (the browser's CHANNELS_HEADING).
CHANNELS_HEADING = "Image channels"
#: Anything but ASCII letters, digits, dot, dash and underscore, in an export's file name.
_UNSAFE = re.compile(r"[^\w.-]+", re.ASCII)


def export_name(depth: int, title: str | None, figure_id: str) -> str:
    """An export's file name without suffix: the version (depth and title) and the figure id.

    Why: two versions' exports of one figure never collide, and the name is safe on any file
    system. The browser's ``exportName`` makes the same name (shared cases in
    ``js/src/__tests__/fixtures/exports.json`` keep the two in step).
    """

    def clean(text: str) -> str:
        return re.sub(r"^[._]+|_+$", "", _UNSAFE.sub("_", text))

    label = f"v{depth} {title}" if title else f"v{depth}"
    return f"{clean(label)[:60] or 'version'}-{clean(figure_id)[:60] or 'figure'}"


def _is_pvalue_column(name: str) -> bool:
    letters = re.sub(r"[^a-z]", "", name.lower())
    return bool(re.fullmatch(r"[pq]", letters) or re.search(r"pval|qval|padj|fdr", letters))


def _exponential(value: float, digits: int) -> str:
    """``value`` in scientific notation as JavaScript writes it (``1.42e-5``, not ``1.42e-05``)."""
    mantissa, _, exponent = f"{value:.{digits}e}".partition("e")
    return f"{mantissa}e{'-' if exponent.startswith('-') else '+'}{int(exponent[1:])}"


def range_format(column: str, low: float, high: float) -> Callable[[float], str]:
    """One format for a colorbar over ``column`` from ``low`` to ``high``, as the browser's ``rangeFormat``.

    Integers when both ends are and they span at least 10 (counts, not a 0 to 1 score), halves
    rounded up as JavaScript does; p-/q-values in scientific notation; other numbers with the
    decimals that give the larger end four significant digits, as the column reads in a table.
    """
    if float(low).is_integer() and float(high).is_integer() and (high - low >= 10 or high == low):
        return lambda v: f"{math.floor(v + 0.5):,}"
    if _is_pvalue_column(column):
        return lambda v: "0" if v == 0 else _exponential(v, 2)
    largest = max(abs(low), abs(high))
    if not math.isfinite(largest) or largest == 0:
        return lambda v: f"{v:g}"
    magnitude = math.floor(math.log10(largest))
    if magnitude >= 7 or 3 - magnitude > 6:
        return lambda v: "0" if v == 0 else _exponential(v, 3)
    decimals = min(6, max(0, 3 - magnitude))

    def fixed(v: float) -> str:
        text = f"{v:,.{decimals}f}"
        return text[1:] if re.fullmatch(r"-0(\.0*)?", text) else text

    return fixed


def range_ticks(column: str, low: float, high: float, inner: int = 1) -> list[tuple[float, str]]:
    """A colorbar's ticks: both ends and ``inner`` evenly spaced values between, as (value, label)."""
    fmt = range_format(column, low, high)
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [(low, fmt(low))]
    values = [low + (high - low) * i / (inner + 1) for i in range(inner + 2)]
    return [(v, fmt(v)) for v in values]


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


def render_chart(
    vega_lite: Mapping[str, Any], out: Path, width_mm: float = DEFAULT_WIDTH_MM, title: str | None = None
) -> Path:
    """Write a Vega-Lite spec to ``out`` (format from its suffix) at ``width_mm``, on white.

    ``title`` heads the chart when its spec has none, as the browser's print export puts the
    figure's title above it.
    """
    import vl_convert

    fmt = format_of(out)
    spec = dict(vega_lite)
    if "facet" not in spec and "width" not in spec:
        spec["width"] = max(60, round(width_mm / MM_PER_INCH * POINTS_PER_INCH) - 60)
    if title and "title" not in spec:
        spec["title"] = title
    spec["config"] = {**PRINT_CONFIG, **(spec.get("config") or {})}
    if fmt == ".svg":
        data = vl_convert.vegalite_to_svg(spec).encode()
    elif fmt == ".png":
        data = vl_convert.vegalite_to_png(spec, ppi=PNG_DPI)
    else:
        data = vl_convert.vegalite_to_pdf(spec)
    with replaced_file(out) as new:
        new.write_bytes(data)
    return out


def render_canvas(drawn: CanvasData, out: Path, width_mm: float = DEFAULT_WIDTH_MM, title: str | None = None) -> Path:
    """Redraw a canvas view (image, then cells colored as in the browser) with matplotlib.

    The legend sits to the right of the drawing as in the browser's print export: the
    categories with their colors, or the colormap as a colorbar with its ends and middle
    formatted as the browser formats them (``range_ticks``).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fmt = format_of(out)
    payload = drawn.payload
    color = payload["color"]
    xmin, ymin, xmax, ymax = payload["bounds"]
    width_in = width_mm / MM_PER_INCH
    image = payload["image"]
    channels = [(str(c["name"]), str(c["color"])) for c in (image["channels"] if image is not None else [])]
    has_legend = color["mode"] in ("categorical", "continuous") or bool(channels)
    legend_in = min(width_in * 0.3, 110 / POINTS_PER_INCH) if has_legend else 0.0
    draw_in = width_in - legend_in
    aspect = (ymax - ymin) / (xmax - xmin) if xmax > xmin else 1.0
    height_in = max(draw_in * aspect, 0.5) + (0.3 if title else 0)
    figure = Figure(figsize=(width_in, height_in))
    top = 1 - 0.3 / height_in if title else 1.0
    axes = figure.add_axes((0, 0, draw_in / width_in, top))
    axes.set_axis_off()
    buffers = list(drawn.buffers)
    x, y = buffers[0], buffers[1]
    if payload["image"] is not None:
        image = payload["image"]
        left, top_edge, right, bottom = image["bounds"]
        axes.imshow(buffers[-1], extent=(left, right, bottom, top_edge), interpolation="nearest")
    axes.scatter(x, y, s=payload["point_size"] ** 2 / 4, c=_cell_colors(color, buffers), linewidths=0)
    axes.set_xlim(xmin, xmax)
    axes.set_ylim(ymax, ymin)  # image coordinates: y grows downwards, as in the browser
    axes.set_aspect("equal")
    if title:
        figure.suptitle(title, fontsize=9, x=0.02, ha="left", fontweight="bold")
    if legend_in:
        _legend(figure, color, channels, (draw_in / width_in, 0.05, legend_in / width_in, top - 0.1))
    # SVG text stays text (editable, searchable), as in the browser's SVG export
    with matplotlib.rc_context({"svg.fonttype": "none"}), replaced_file(out) as new:
        figure.savefig(new, format=fmt[1:], dpi=PNG_DPI if fmt == ".png" else None)
    return out


def _legend(
    figure: Any, color: Mapping[str, Any], channels: list[tuple[str, str]], box: tuple[float, float, float, float]
) -> None:
    """The categories (visible ones, at most MAX_LEGEND_ITEMS) or the colorbar, in ``box`` of ``figure``,
    then the image ``channels`` (name, color) drawn, as the browser's print legend lists them."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize

    if color["mode"] == "continuous":
        low, high = float(color["min"]), float(color["max"])
        bar = figure.add_axes((box[0] + 0.02, box[1] + box[3] * 0.35, 0.03, box[3] * 0.6))
        mappable = ScalarMappable(
            norm=Normalize(low, high), cmap=ListedColormap(color["lut"] or ["#440154", "#fde725"])
        )
        colorbar = figure.colorbar(mappable, cax=bar)
        ticks = range_ticks(str(color["column"]), low, high)
        colorbar.set_ticks([v for v, _ in ticks], labels=[label for _, label in ticks], fontsize=6)
        bar.set_title(f"{color['column']} ({color['colormap']})", fontsize=7, loc="left", fontweight="bold")
        if channels:
            _legend_list(figure, CHANNELS_HEADING, _patches(channels), (box[0], box[1] + box[3] * 0.3))
        return
    if color["mode"] != "categorical":
        if channels:
            _legend_list(figure, CHANNELS_HEADING, _patches(channels), (box[0], box[1] + box[3]))
        return
    shown = [
        (str(label), str(col))
        for label, col in zip(color["categories"], color["colors"], strict=False)
        if not re.fullmatch(r"#[0-9a-fA-F]{6}00", str(col))
    ]
    handles = _patches(shown)
    if channels:
        # one list: a second legend's place would depend on the first one's drawn height
        handles += [_heading(""), _heading(CHANNELS_HEADING)]
        handles += _patches(channels)
    _legend_list(figure, str(color["column"]), handles, (box[0], box[1] + box[3]))


def _patches(entries: list[tuple[str, str]]) -> list[Any]:
    """A swatch per (label, color), at most MAX_LEGEND_ITEMS, and how many more there are."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=col, label=_plain(label)) for label, col in entries[:MAX_LEGEND_ITEMS]]
    if len(entries) > MAX_LEGEND_ITEMS:
        handles.append(_heading(f"… and {len(entries) - MAX_LEGEND_ITEMS} more"))
    return handles


def _plain(text: str) -> str:
    """``text`` (data: a category, a channel name) as matplotlib shows it literally: ``$`` starts no math."""
    return text.replace("$", r"\$")


def _heading(text: str) -> Any:
    """A legend row of text alone (no swatch)."""
    from matplotlib.patches import Patch

    return Patch(facecolor="none", edgecolor="none", label=text)


def _legend_list(figure: Any, title: str, handles: list[Any], corner: tuple[float, float]) -> None:
    """A legend of ``handles`` under ``title``, its upper left corner at ``corner`` (figure fraction)."""
    figure.legend(
        handles=handles,
        title=_plain(title),
        loc="upper left",
        bbox_to_anchor=corner,
        fontsize=6,
        title_fontsize=7,
        frameon=False,
        handlelength=1,
        alignment="left",
    )


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
