"""Drawing a saved figure to SVG, PNG or PDF: the one export renderer.

Every export goes through here: the command line, ``VersionBrowser.export`` and the
panel's and widget's buttons (the ``export`` request); the browser draws only the
screen view. Charts go through ``vl-convert`` (the same Vega-Lite spec the browser
shows); canvas views are redrawn with matplotlib from the same CanvasPayload the
browser gets (its palette, LUT and composited channels). ``print_width`` (mm, or
"single"/"double" journal columns) sets the figure's physical width.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sds_jupyter.errors import FigureError, shown
from sds_jupyter.limits import MAX_EXPORT_PIXELS
from sds_jupyter.protocol.buffers import DRAWING, laid_out, named_buffers
from sds_jupyter.studio.canvas import CanvasData
from sds_jupyter.studio.masks import ExportLabels
from sds_jupyter.studio.pointparts import ExportPoints
from sds_jupyter.studio.shapes import ExportShapes

__all__ = [
    "EXPORT_FORMATS",
    "PRINT_CONFIG",
    "PRINT_WIDTH_RANGE",
    "VECTOR_CELL_LIMIT",
    "CanvasExport",
    "CanvasPage",
    "canvas_page",
    "cells_in_region",
    "check_pixels",
    "export_name",
    "format_of",
    "print_width_mm",
    "range_ticks",
    "rasterizes",
    "recolored",
    "render_canvas",
    "render_chart",
    "scale_bar",
    "view_region",
]

EXPORT_FORMATS = (".svg", ".png", ".pdf")
COLUMN_WIDTHS_MM = {"single": 89.0, "double": 183.0}
DEFAULT_WIDTH_MM = 89.0
MM_PER_INCH = 25.4
POINTS_PER_INCH = 72.0
PNG_DPI = 300
#: The dpi range an export takes: below 72 text is unreadable, above 1,200 a page-wide PNG passes 40,000 px.
DPI_RANGE = (72, 1200)
#: The print widths (mm) an export takes: 10 mm is a thumbnail's width, 1,200 mm a poster's (the long
#: side of A0). A width of 1e-9 mm would draw an empty image, one of 5,000 mm a canvas of 59,000 px.
PRINT_WIDTH_RANGE = (10.0, 1200.0)
#: Cells drawn as vector shapes in an SVG or PDF up to this many in view; above it the cells are one
#: picture at the export's dpi inside the vector frame (title, legend and scale bar stay vector).
#: Why: a cell polygon costs about 300 bytes of SVG (benchmarks/bench_export.py: 100,000 demo cells
#: made 34 MB, against 10 MB as a picture), so 50,000 cells add about 15 MB, a size editors and
#: viewers still handle; every further cell only adds weight, as at a printed figure's size a whole
#: section's cells are a dot or two each. Zoomed in on fewer cells, they stay shapes to edit.
#: (spatialdata-plot and squidpy make the same trade, rasterising large collections.)
VECTOR_CELL_LIMIT = 50_000
#: The width (CSS px) at which a saved viewport's zoom is taken literally (the browser's REFERENCE_WIDTH).
REFERENCE_WIDTH = 800
#: Cells' color when the figure colors by nothing.
NO_COLOR = "#444444"
#: Cells fewer pixels across than this in a picture are painted as whole pixels in their own colour
#: (an antialiased shape that small takes the colour of what lies under it).
FOOTPRINT_PX = 2.0
#: Short names of coordinate-system units, as the view's scale bar writes them.
_UNIT_NAMES = {
    "µm": {"micrometer", "micrometre", "micron", "um", "µm", "μm"},
    "nm": {"nanometer", "nanometre", "nm"},
    "mm": {"millimeter", "millimetre", "mm"},
}
#: Categories a legend lists; the rest are counted.
MAX_LEGEND_ITEMS = 24
#: The print theme of charts: black on white, type in points below the 9 pt title (8 pt axis,
#: legend and facet titles, 7 pt labels). Vega's own sizes came out larger than the title.
PRINT_CONFIG: dict[str, Any] = {
    "background": "#ffffff",
    "font": "sans-serif",
    "title": {"fontSize": 9, "fontWeight": 600, "anchor": "start"},
    "axis": {"labelFontSize": 7, "titleFontSize": 8, "titleFontWeight": 600},
    "legend": {"labelFontSize": 7, "titleFontSize": 8, "titleFontWeight": 600},
    "header": {"labelFontSize": 8, "titleFontSize": 8},
    "text": {"fontSize": 7},
}
#: The heading of the transcripts' genes in a canvas figure's legend.
TRANSCRIPTS_HEADING = "Transcripts"
#: The heading of the image channels in a canvas figure's legend.
CHANNELS_HEADING = "Image channels"
#: The legend's heading over the shapes elements outlined (each its outline colour).
SHAPES_HEADING = "Outlines"
#: Anything but ASCII letters, digits, dot, dash and underscore, in an export's file name.
_UNSAFE = re.compile(r"[^\w.-]+", re.ASCII)


def export_name(depth: int, title: str | None, figure_id: str) -> str:
    """An export's file name without suffix: the version (depth and title) and the figure id.

    Why: two versions' exports of one figure never collide, and the name is safe on any file
    system. The panel and the widget save their exports under this name too (the ``export``
    request's reply).
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
    """The figure width in millimetres from a spec's ``print_width``; a FigureError outside PRINT_WIDTH_RANGE."""
    if isinstance(value, str):
        return COLUMN_WIDTHS_MM.get(value, DEFAULT_WIDTH_MM)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return DEFAULT_WIDTH_MM
    low, high = PRINT_WIDTH_RANGE
    if not (math.isfinite(value) and low <= value <= high):
        raise FigureError(
            f"The figure's print_width {shown(value)} mm cannot be exported: give a width from {low:g} to "
            f"{high:g} mm (or 'single'/'double' for a journal column) in its spec."
        )
    return float(value)


def check_pixels(width_in: float, height_in: float, dpi: int) -> None:
    """Refuse (FigureError) an export that would draw more than MAX_EXPORT_PIXELS at ``dpi``.

    Why: the renderers allocate the whole canvas first (matplotlib's and vl-convert's PNG, and
    the cells a vector file holds as one picture), so the size is checked before anything is
    drawn; a tall region or a wide chart counts as much as a large print width.
    """
    wide, high = width_in * dpi, height_in * dpi
    if not math.isfinite(wide * high) or wide * high > MAX_EXPORT_PIXELS:
        raise FigureError(
            f"This export would be {wide:,.0f} x {high:,.0f} px at {dpi} dpi, more than the "
            f"{MAX_EXPORT_PIXELS:,} px an export may draw (MAX_EXPORT_PIXELS): lower the dpi or the print "
            "width, or export a less tall region."
        )
    if wide < 1 or high < 1:
        raise FigureError(f"This export would be {wide:.3g} x {high:.3g} px at {dpi} dpi, too small to draw.")


def format_of(out: Path) -> str:
    suffix = out.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise FigureError(f"Cannot export to {out.name!r}: use one of {', '.join(EXPORT_FORMATS)}.")
    return suffix


def render_chart(
    vega_lite: Mapping[str, Any],
    fmt: str,
    width_mm: float = DEFAULT_WIDTH_MM,
    title: str | None = None,
    dpi: int = PNG_DPI,
) -> bytes:
    """A Vega-Lite spec drawn as ``fmt`` (".svg", ".png", ".pdf") at ``width_mm``, on white.

    ``title`` heads the chart when its spec has none, as the figure's title heads a canvas export.
    """
    import vl_convert

    spec = dict(vega_lite)
    if "facet" not in spec and "width" not in spec:
        spec["width"] = max(60, round(width_mm / MM_PER_INCH * POINTS_PER_INCH) - 60)
    if title and "title" not in spec:
        spec["title"] = title
    spec["config"] = {**PRINT_CONFIG, **(spec.get("config") or {})}
    svg = str(vl_convert.vegalite_to_svg(spec))
    width_pt, height_pt = _svg_size(svg)
    check_pixels(width_pt / POINTS_PER_INCH, height_pt / POINTS_PER_INCH, dpi)
    if fmt == ".svg":
        return svg.encode("utf-8")
    if fmt == ".png":
        return _with_dpi(bytes(vl_convert.vegalite_to_png(spec, ppi=dpi)), dpi)
    return bytes(vl_convert.vegalite_to_pdf(spec))


def _svg_size(svg: str) -> tuple[float, float]:
    """The width and height (points: vl-convert draws 72 to the inch) of the chart ``svg`` (vl-convert's)."""
    head = re.search(r"<svg\b[^>]*>", svg)
    sizes = [re.search(rf'\s{name}="([0-9.eE+]+)"', head.group(0)) if head else None for name in ("width", "height")]
    if sizes[0] is None or sizes[1] is None:
        raise FigureError("The chart renderer gave a picture without a size; this chart cannot be exported.")
    return float(sizes[0].group(1)), float(sizes[1].group(1))


def _with_dpi(png: bytes, dpi: int) -> bytes:
    """``png`` with its resolution written in the file (a pHYs chunk), so a layout program sizes it right."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as picture:
        out = io.BytesIO()
        picture.save(out, format="PNG", dpi=(dpi, dpi))
    return out.getvalue()


def view_region(payload: Mapping[str, Any], view: str | Sequence[float] | None) -> tuple[float, float, float, float]:
    """The rectangle of the data an export shows (x0, y0, x1, y1; y grows downwards).

    ``None`` or "saved": the figure's saved view, read as the browser reads it (the region its
    viewport shows in a drawing REFERENCE_WIDTH wide, ``savedRegion`` in ``js/src/app/spatial/camera.ts``);
    "whole" (or "full"): all cells and the image; four numbers (or "x0,y0,x1,y1"): that region, e.g. the one
    on screen, which the browser sends.
    """
    bounds = [float(v) for v in payload["bounds"]]
    if view is None or view == "saved":
        return _saved_region(payload["viewport"], bounds)
    if view in ("whole", "full"):
        x0, y0, x1, y1 = bounds
        return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else (x0 - 0.5, y0 - 0.5, x0 + 0.5, y0 + 0.5)
    parts = view.split(",") if isinstance(view, str) else list(view)
    try:
        box = [float(part) for part in parts]
    except (TypeError, ValueError):
        box = []
    if len(box) != 4 or not all(math.isfinite(v) for v in box) or not (box[2] > box[0] and box[3] > box[1]):
        raise FigureError(
            f"The view {shown(view)} is not one an export can show: give 'saved', 'whole' or x0,y0,x1,y1 "
            "with x1 > x0 and y1 > y0."
        )
    return (box[0], box[1], box[2], box[3])


def _saved_region(viewport: Mapping[str, Any], bounds: list[float]) -> tuple[float, float, float, float]:
    cx, cy = (float(v) for v in viewport["target"])
    zoom = float(viewport.get("zoom", 0))
    scale = 2.0 ** (zoom if math.isfinite(zoom) else 0.0)
    height = bounds[3] - bounds[1]
    aspect = height / max(bounds[2] - bounds[0], 1e-9)
    aspect = max(0.4, min(1.5, aspect)) if math.isfinite(aspect) and aspect > 0 else 1.0
    half_w = REFERENCE_WIDTH / 2 / scale
    half_h = REFERENCE_WIDTH * aspect / 2 / scale
    return (cx - half_w, cy - half_h, cx + half_w, cy + half_h)


def scale_bar(units_per_inch: float, unit: str, max_inches: float) -> tuple[float, str] | None:
    """A scale bar's length in data units and its label, as the view's (``scaleBar`` in camera.ts).

    A round length (1, 2 or 5 times a power of ten) at most ``max_inches`` long on paper,
    labelled in ``unit`` (micrometres as µm, switching to mm from 1,000 µm).
    """
    longest = max_inches * units_per_inch
    if not (math.isfinite(longest) and longest > 0):
        return None
    power = 10.0 ** math.floor(math.log10(longest))
    length = next((m * power for m in (5, 2, 1) if m * power <= longest), power)
    value, label = length, unit_label(unit)
    if label == "µm" and value >= 1000:
        value, label = value / 1000, "mm"
    return length, f"{float(f'{value:.3g}'):g} {label}".strip()


def unit_label(unit: str) -> str:
    """The short name of a coordinate system's unit (µm for micrometer, micron, um)."""
    lowered = unit.strip().lower()
    for short, names in _UNIT_NAMES.items():
        if lowered in names:
            return short
    return unit


@dataclass
class CanvasExport:
    """What a canvas export draws: the figure's payload and buffers, and the region shown."""

    drawn: CanvasData
    region: tuple[float, float, float, float]
    title: str | None = None
    #: The transcripts the figure's spec shows over the cells (read for the region), or None.
    points: ExportPoints | None = None
    #: The labels layer the figure's spec shows over the cells (read for the region), or None.
    labels: ExportLabels | None = None
    #: The shapes elements the figure's spec outlines (visible ones, the rings meeting the region).
    shapes: Sequence[ExportShapes] = ()

    def buffer(self, name: str) -> np.ndarray | None:
        """A buffer by its name in the drawing's layout (x, y, values, image, starts, vertices, radius); None if absent."""
        named = named_buffers("a canvas drawing", DRAWING, self.drawn.payload, self.drawn.buffers)
        found: np.ndarray | None = named.get(name)
        return found


@dataclass(frozen=True)
class CanvasPage:
    """A canvas export's page (inches): its whole size, the drawing's width, the legend's and the title's."""

    width_in: float
    height_in: float
    draw_in: float
    legend_in: float
    title_in: float


def canvas_page(
    payload: Mapping[str, Any], region: tuple[float, float, float, float], width_mm: float, title: str | None
) -> CanvasPage:
    """The page a canvas export of ``region`` takes at ``width_mm``: the drawing keeps the region's aspect.

    Why apart: the page's pixels are checked (:func:`check_pixels`) before the image is read
    and anything drawn, from the payload alone.
    """
    x0, y0, x1, y1 = region
    width_in = width_mm / MM_PER_INCH
    has_legend = (
        payload["color"]["mode"] in ("categorical", "continuous")
        or bool(_channel_entries(payload))
        or bool(payload.get("points"))
        or any(layer["visible"] for layer in payload.get("shape_layers") or [])
    )
    legend_in = min(width_in * 0.3, 110 / POINTS_PER_INCH) if has_legend else 0.0
    draw_in = width_in - legend_in
    title_in = 0.3 if title else 0.0
    height_in = max(draw_in * (y1 - y0) / (x1 - x0), 0.5) + title_in
    return CanvasPage(width_in, height_in, draw_in, legend_in, title_in)


def _channel_entries(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The image channels a canvas payload draws, as (name, color)."""
    image = payload["image"]
    return [(str(c["name"]), str(c["color"])) for c in (image["channels"] if image is not None else [])]


def render_canvas(
    export: CanvasExport,
    fmt: str,
    width_mm: float = DEFAULT_WIDTH_MM,
    dpi: int = PNG_DPI,
    rasterized: bool | None = None,
) -> tuple[bytes, int]:
    """A canvas figure drawn with matplotlib as ``fmt``: image, cells, title, legend and scale bar.

    Returns the file's bytes and how many cells it drew. In SVG and PDF the cells are vector
    shapes up to VECTOR_CELL_LIMIT in the region, else one picture at ``dpi`` inside the vector
    frame (text, legend and scale bar stay vector either way); ``rasterized`` says which when
    the caller decided it already (:func:`rasterizes` over :func:`cells_in_region`).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    payload = export.drawn.payload
    color = payload["color"]
    x0, y0, x1, y1 = export.region
    page = canvas_page(payload, export.region, width_mm, export.title)
    check_pixels(page.width_in, page.height_in, dpi)
    width_in, draw_in, legend_in = page.width_in, page.draw_in, page.legend_in
    image = payload["image"]
    channels = _channel_entries(payload)
    figure = Figure(figsize=(width_in, page.height_in))
    top = 1 - page.title_in / page.height_in
    axes = figure.add_axes((0, 0, draw_in / width_in, top))
    axes.set_axis_off()
    pixels = export.buffer("image")
    if image is not None and pixels is not None:
        left, top_edge, right, bottom = image["bounds"]
        axes.imshow(pixels, extent=(left, right, bottom, top_edge), interpolation="nearest")
    shown_cells = _draw_cells(axes, export, fmt, draw_in, rasterized, dpi)
    outlined = _draw_shapes(axes, export.shapes, fmt)
    _draw_labels(axes, export.labels)
    transcripts = _draw_points(axes, export.points, fmt)
    axes.set_xlim(x0, x1)
    axes.set_ylim(y1, y0)  # image coordinates: y grows downwards, as in the browser
    axes.set_aspect("equal")
    if export.title:
        figure.suptitle(_plain(export.title), fontsize=9, x=0.02, ha="left", fontweight="bold")
    if legend_in:
        box = (draw_in / width_in, 0.05, legend_in / width_in, top - 0.1)
        _legend(figure, color, channels, box, transcripts, outlined)
    if payload.get("unit"):
        _draw_scale_bar(axes, str(payload["unit"]), (x1 - x0) / draw_in, draw_in)
    out = io.BytesIO()
    # SVG text stays text (editable, searchable); PDF fonts embedded as TrueType (editable in Illustrator)
    # and no date nor random ids: one figure exports to the same bytes from the panel, the notebook and the shell
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "sds-jupyter"}):
        figure.savefig(out, format=fmt[1:], dpi=dpi, metadata=_NO_DATE.get(fmt))
    return out.getvalue(), shown_cells


#: The outline of a shapes element in an export: one CSS pixel (1/96 in), as the view draws it, in points.
SHAPE_LINE_PT = POINTS_PER_INCH / 96


def _draw_shapes(axes: Any, shapes: Sequence[ExportShapes], fmt: str) -> list[tuple[str, str]]:
    """The shapes elements' outlines over the cells and under the labels, as the view stacks them; their legend entries.

    Many rings (over VECTOR_CELL_LIMIT) are one picture inside a vector file, as many cells are.
    """
    from matplotlib.collections import LineCollection

    entries = []
    for layer in shapes:
        entries.append((layer.element, layer.color))
        rings = layer.rings()
        if not rings:
            continue
        many = fmt == ".png" or len(rings) > VECTOR_CELL_LIMIT
        lines = LineCollection(rings, colors=layer.color, linewidths=SHAPE_LINE_PT, alpha=layer.opacity, zorder=2.3)
        lines.set_rasterized(many)
        axes.add_collection(lines, autolim=False)
    return entries


def _draw_labels(axes: Any, labels: ExportLabels | None) -> None:
    """The labels over the cells and under the transcripts, as the view stacks them: each pixel of the
    mask in its label's colour (nearest, as the view magnifies a tile), at the layer's opacity."""
    if labels is None:
        return
    x0, y0, x1, y1 = labels.bounds
    axes.imshow(labels.rgba, extent=(x0, x1, y1, y0), interpolation="nearest", alpha=labels.opacity, zorder=2.5)


def _draw_points(axes: Any, points: ExportPoints | None, fmt: str) -> list[tuple[str, str]]:
    """The transcripts over the cells, as the view draws them (a disc of their radius, CSS px); their legend entries.

    Many (over VECTOR_CELL_LIMIT) are one picture inside a vector file, as many cells are.
    """
    if points is None or not len(points.x):
        return []
    size = (2 * points.radius * POINTS_PER_INCH / 96) ** 2  # CSS px (1/96 in) to a marker's area in pt²
    many = fmt == ".png" or len(points.x) > VECTOR_CELL_LIMIT
    axes.scatter(points.x, points.y, s=size, c=points.colors, linewidths=0, rasterized=many, zorder=3)
    sampled = " (a sample)" if len(points.x) < points.total else ""
    return [(f"{name}{sampled if i == 0 else ''}", colour) for i, (name, colour) in enumerate(points.legend)]


#: savefig metadata that leaves the creation date out of vector files.
_NO_DATE: dict[str, dict[str, Any]] = {".svg": {"Date": None}, ".pdf": {"CreationDate": None}}


#: A hidden category's color: transparent, as the view makes it (no cell drawn, no legend entry).
HIDDEN_COLOR = "#00000000"


def recolored(
    drawn: CanvasData,
    color: Mapping[str, Any] | None = None,
    values: np.ndarray | None = None,
    hidden: Collection[int] = (),
) -> CanvasData:
    """``drawn`` colored by ``color`` and ``values`` (a ``color_values`` reply) and/or with ``hidden`` categories.

    Why: the view recolors its figure (another column, a gene, a highlight, categories hidden in
    its legend); an export asked for from the view shows the cells as they were on screen.
    """
    export = CanvasExport(drawn, (0.0, 0.0, 1.0, 1.0))
    if color is None:
        color, values = dict(drawn.payload["color"]), export.buffer("values")
    buffers = {buf.name: export.buffer(buf.name) for buf in DRAWING}
    buffers["values"] = values if color["mode"] != "none" else None
    if hidden and color["mode"] == "categorical":
        colors = [HIDDEN_COLOR if code in hidden else str(c) for code, c in enumerate(color["colors"])]
        color = {**color, "colors": colors}
    payload = {**drawn.payload, "color": color}
    laid = [buffers[buf.name] for buf in DRAWING if buffers[buf.name] is not None]
    return CanvasData(payload, laid_out("a recoloured drawing", DRAWING, payload, laid))  # type: ignore[arg-type]


def rasterizes(fmt: str, cells: int) -> bool:
    """Whether an export in ``fmt`` draws ``cells`` cells as one picture (see VECTOR_CELL_LIMIT)."""
    return fmt != ".png" and cells > VECTOR_CELL_LIMIT


def _in_region(export: CanvasExport) -> np.ndarray:
    """Which cells lie in the region (with a margin of the largest drawn cell), as a mask."""
    x, y = export.buffer("x"), export.buffer("y")
    assert x is not None and y is not None
    x0, y0, x1, y1 = export.region
    margin = (x1 - x0) * 0.05
    radii = export.buffer("radius")
    if radii is not None and np.isfinite(radii).any():
        margin += float(np.nanmax(radii))
    with np.errstate(invalid="ignore"):
        return (x >= x0 - margin) & (x <= x1 + margin) & (y >= y0 - margin) & (y <= y1 + margin)


def cells_in_region(export: CanvasExport) -> int:
    """How many cells an export of ``export`` draws (those in its region)."""
    return int(_in_region(export).sum())


def _draw_cells(
    axes: Any, export: CanvasExport, fmt: str, draw_in: float, rasterized: bool | None, dpi: int = PNG_DPI
) -> int:
    """The cells in the region as the view draws them (polygons, circles or points) in their colors.

    Their artist is rasterised (at the export's dpi) above VECTOR_CELL_LIMIT cells in a vector format,
    unless ``rasterized`` says otherwise. Shapes under FOOTPRINT_PX pixels across in a picture are
    painted as whole pixels in their own colours (:func:`_paint_footprint`).
    """
    from matplotlib.collections import PatchCollection, PolyCollection

    payload = export.drawn.payload
    inside = _in_region(export)
    count = int(inside.sum())
    rasterized = rasterizes(fmt, count) if rasterized is None else rasterized
    shapes = payload["shapes"]
    px_per_unit = draw_in * dpi / max(export.region[2] - export.region[0], 1e-12)
    if shapes is not None and (fmt == ".png" or rasterized) and _cell_px(export, count, px_per_unit) < FOOTPRINT_PX:
        _paint_footprint(axes, export, inside, px_per_unit)
        return count
    colors = _cell_colors(payload["color"], export.buffer("values"))
    colors = colors[inside] if isinstance(colors, np.ndarray) else colors
    starts, vertices, radii = export.buffer("starts"), export.buffer("vertices"), export.buffer("radius")
    rows = np.flatnonzero(inside)
    artist: Any
    if shapes is not None and starts is not None and vertices is not None:
        pairs = vertices.reshape(-1, 2)
        polygons = [pairs[starts[i] : starts[i + 1]] for i in rows]
        artist = PolyCollection(polygons, facecolors=colors, edgecolors="none", rasterized=rasterized)
    elif shapes is not None and radii is not None:
        from matplotlib.patches import Circle

        x, y = export.buffer("x"), export.buffer("y")
        assert x is not None and y is not None
        circles = [Circle((float(x[i]), float(y[i])), float(radii[i])) for i in rows]
        artist = PatchCollection(circles, facecolors=colors, edgecolors="none", rasterized=rasterized)
    else:
        x, y = export.buffer("x"), export.buffer("y")
        assert x is not None and y is not None
        # the view's point size is in screen pixels over a drawing about REFERENCE_WIDTH wide
        points = float(payload["point_size"]) * draw_in * POINTS_PER_INCH / REFERENCE_WIDTH
        artist = axes.scatter(x[inside], y[inside], s=points**2, c=colors, linewidths=0, rasterized=rasterized)
        return count
    axes.add_collection(artist)
    return count


def _cell_px(export: CanvasExport, count: int, px_per_unit: float) -> float:
    """How many pixels across a cell of the region is in the picture: the spacing of its cells (they tile the tissue)."""
    x0, y0, x1, y1 = export.region
    return math.sqrt(max((x1 - x0) * (y1 - y0), 0.0) / max(count, 1)) * px_per_unit


def _paint_footprint(axes: Any, export: CanvasExport, inside: np.ndarray, px_per_unit: float) -> None:
    """Cells a pixel or two across as whole pixels, each in its cell's own colour, over the image.

    Why: a shape smaller than a pixel is antialiased, mixed with what lies under it (the dark
    morphology image), so a million cells' picture drifts away from its legend's colours. Each
    cell here paints the pixel block under its centre (the last drawn wins where two meet), so
    every coloured pixel is exactly a cell's colour; a hidden category paints nothing.
    """
    x0, y0, x1, y1 = export.region
    width = max(1, round((x1 - x0) * px_per_unit))
    height = max(1, round((y1 - y0) * px_per_unit))
    x, y = export.buffer("x"), export.buffer("y")
    assert x is not None and y is not None
    rgba = _cell_rgba(export.drawn.payload["color"], export.buffer("values"), len(x))[inside]
    side = max(1, math.ceil(_cell_px(export, int(inside.sum()), px_per_unit)))
    with np.errstate(invalid="ignore"):
        cx = np.floor((x[inside] - x0) * px_per_unit - (side - 1) / 2).astype(np.int64)
        cy = np.floor((y[inside] - y0) * px_per_unit - (side - 1) / 2).astype(np.int64)
    shown = rgba[:, 3] > 0
    picture = np.zeros((height, width, 4), dtype=np.uint8)
    for dy in range(side):
        for dx in range(side):
            px, py = cx + dx, cy + dy
            ok = shown & (px >= 0) & (px < width) & (py >= 0) & (py < height)
            picture[py[ok], px[ok]] = rgba[ok]
    axes.imshow(picture, extent=(x0, x1, y1, y0), interpolation="nearest", zorder=2)


def _cell_rgba(color: Mapping[str, Any], values: np.ndarray | None, n: int) -> np.ndarray:
    """Each cell's colour as RGBA bytes, from the palette or LUT the view is sent (converted once, not per cell)."""
    from matplotlib.colors import to_rgba_array

    def table(colors: Any) -> np.ndarray:
        return np.asarray(np.round(to_rgba_array(list(colors)) * 255), dtype=np.uint8)

    if color["mode"] == "categorical" and values is not None:
        return table(color["colors"])[values.astype(np.int64)]
    if color["mode"] == "continuous" and values is not None:
        low, high = color["min"], color["max"]
        scaled = np.clip((values.astype(np.float64) - low) / (high - low if high > low else 1.0), 0, 1)
        index = np.nan_to_num(scaled * (len(color["lut"]) - 1), nan=0).astype(np.int64)
        shaded: np.ndarray = table(color["lut"])[index]
        return shaded
    return np.repeat(table([NO_COLOR]), n, axis=0)


def _draw_scale_bar(axes: Any, unit: str, units_per_inch: float, draw_in: float) -> None:
    """A scale bar in the lower right of the drawing: a white bar with a dark edge and its length above."""
    from matplotlib.patches import Rectangle

    found = scale_bar(units_per_inch, unit, min(1.0, draw_in / 3))
    if found is None:
        return
    length, label = found
    x0, x1 = axes.get_xlim()
    y_bottom, _ = axes.get_ylim()  # inverted: bottom is the larger y
    pad = (x1 - x0) * 0.04
    thick = units_per_inch * 1.5 / POINTS_PER_INCH
    left, base = x1 - pad - length, y_bottom - pad
    axes.add_patch(Rectangle((left, base - thick), length, thick, facecolor="white", edgecolor="black", lw=0.4))
    axes.text(
        left + length / 2,
        base - thick * 1.8,
        _plain(label),
        ha="center",
        va="bottom",
        fontsize=6,
        color="white",
        # a dark box, not a path effect: with one, matplotlib writes the text as outlines, not text
        bbox={"boxstyle": "square,pad=0.15", "facecolor": "black", "alpha": 0.5, "edgecolor": "none"},
    )


def _after(
    channels: list[tuple[str, str]], transcripts: list[tuple[str, str]], outlined: list[tuple[str, str]] | None = None
) -> tuple[str, list[Any]]:
    """The legend's lists after the cells' colours: the image channels, the shapes outlined, then the transcripts' genes."""
    lists = [
        (heading, entries)
        for heading, entries in (
            (CHANNELS_HEADING, channels),
            (SHAPES_HEADING, outlined or []),
            (TRANSCRIPTS_HEADING, transcripts),
        )
        if entries
    ]
    if not lists:
        return CHANNELS_HEADING, []
    handles = _patches(lists[0][1])
    for heading, entries in lists[1:]:
        handles += [_heading(""), _heading(heading), *_patches(entries)]
    return lists[0][0], handles


def _legend(
    figure: Any,
    color: Mapping[str, Any],
    channels: list[tuple[str, str]],
    box: tuple[float, float, float, float],
    transcripts: list[tuple[str, str]] | None = None,
    outlined: list[tuple[str, str]] | None = None,
) -> None:
    """The categories (visible ones, at most MAX_LEGEND_ITEMS) or the colorbar, in ``box`` of ``figure``,
    then the image ``channels`` (name, color) drawn and the ``transcripts``' genes, as the browser lists them."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize

    heading, after = _after(channels, transcripts or [], outlined)

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
        if after:
            _legend_list(figure, heading, after, (box[0], box[1] + box[3] * 0.3))
        return
    if color["mode"] != "categorical":
        if after:
            _legend_list(figure, heading, after, (box[0], box[1] + box[3]))
        return
    shown = [
        (str(label), str(col))
        for label, col in zip(color["categories"], color["colors"], strict=False)
        if not re.fullmatch(r"#[0-9a-fA-F]{6}00", str(col))
    ]
    handles = _patches(shown)
    if after:
        # one list: a second legend's place would depend on the first one's drawn height
        handles += [_heading(""), _heading(heading), *after]
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


def _cell_colors(color: Mapping[str, Any], values: np.ndarray | None) -> Any:
    """One color per cell, from the categorical palette or the continuous LUT the view is sent."""
    if color["mode"] == "categorical" and values is not None:
        palette = np.array(color["colors"])
        return palette[values.astype(np.int64)]
    if color["mode"] == "continuous" and values is not None:
        low, high = color["min"], color["max"]
        scaled = np.clip((values.astype(np.float64) - low) / (high - low if high > low else 1.0), 0, 1)
        index = np.nan_to_num(scaled * (len(color["lut"]) - 1), nan=0).astype(np.int64)
        return np.array(color["lut"])[index]
    return NO_COLOR
