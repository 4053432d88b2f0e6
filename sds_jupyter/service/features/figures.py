"""The ``figures`` request, and what draws a figure for an export or a notebook."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sds_jupyter.errors import StackError
from sds_jupyter.protocol.types import FiguresData, FigureSummary
from sds_jupyter.service.errormap import error_payload
from sds_jupyter.service.session import Session, partial_depth
from sds_jupyter.stack import PartialChain
from sds_jupyter.studio.canvas import build_canvas
from sds_jupyter.studio.charts import chart_for_figure
from sds_jupyter.studio.figurespecs import ParsedFigure, declared_fields, parse_figure, read_figure, read_figures
from sds_jupyter.studio.jsonable import jsonable
from sds_jupyter.studio.palette import recolor_chart
from sds_jupyter.studio.resultstore import read_result

__all__ = ["figure_drawing", "figure_table", "figures"]


def _figure_summary(
    session: Session,
    figure: ParsedFigure,
    uns: Mapping[str, Any],
    palettes: Callable[[], Mapping[str, Mapping[str, str]]],
) -> FigureSummary:
    summary: FigureSummary = {
        "id": figure.id,
        "title": figure.title,
        "caption": figure.caption,
        "print_width": figure.print_width,
        "kind": figure.kind,
        # a drawable spec as far as this reader declares it; an unreadable one is shown as text
        "spec": jsonable(declared_fields(figure.spec) if figure.kind != "unsupported" else figure.spec),
    }
    if figure.kind == "chart":
        try:
            result = read_result(uns, str(figure.spec["result"]))
            summary["vega_lite"] = recolor_chart(
                chart_for_figure(figure.spec, result, titled=False), palettes(), result.meta
            )
        except StackError as exc:
            summary["kind"] = "unsupported"
            summary["reason"] = str(exc)
    elif figure.kind == "canvas":
        summary["canvas"] = {
            "table": str(figure.spec.get("table") or session.table_name),
            "color_by": figure.spec.get("color_by"),
            "image": figure.spec.get("image"),
        }
    else:
        summary["reason"] = figure.reason or "cannot be drawn"
    return summary


def figures(session: Session, version: int | str | None = None) -> FiguresData:
    """Every saved figure, drawable or with the reason it is not."""
    try:
        parsed = read_figures(session.studio_uns(version))
        charted = [str(f.spec.get("result")) for f in parsed if f.kind == "chart"]
        uns = session.studio_uns(version, charted)
    except StackError as exc:
        return {"figures": _figures_named_above_missing(session.partial, version), "error": error_payload(exc)}
    palettes = session.lazy_palettes(version, parsed)
    return {"figures": [_figure_summary(session, figure, uns, palettes) for figure in parsed]}


def _figures_named_above_missing(partial: PartialChain | None, version: int | str | None) -> list[FigureSummary]:
    """The figures the readable versions up to ``version`` saved, each saying it needs the missing dataset.

    Why: above a missing parent no figure can be drawn, yet the user should see which figures
    the version holds (by their manifests' ops) rather than "no figures". Figures saved in the
    missing versions themselves cannot be named; the error beside the list says what is missing.
    """
    if partial is None:
        return []
    top = max((v.depth for v in partial.versions), default=0)
    depth = top if version is None else partial_depth(partial, version)
    named: dict[str, str | None] = {}
    for entry in sorted(partial.versions, key=lambda v: v.depth):
        if entry.depth > depth:
            break
        for op in entry.manifest.changes:
            figure = op.get("figure") if isinstance(op, Mapping) else None
            if not isinstance(figure, str):
                continue
            if op.get("op") == "set-figure":
                title = op.get("title")
                named[figure] = title if isinstance(title, str) else None
            elif op.get("op") == "delete-figure":
                named.pop(figure, None)
    reason = (
        f"needs dataset {partial.missing_id}, which is missing, to draw; add it to the workspace to see this figure"
    )
    return [
        {
            "id": figure,
            "title": title,
            "caption": None,
            "print_width": None,
            "kind": "unsupported",
            "reason": reason,
            "spec": None,
        }
        for figure, title in named.items()
    ]


def figure_table(session: Session, version: int | str | None, figure: str) -> str:
    """The table a canvas figure draws (its spec's, else the one the session opens)."""
    return str(session.canvas_spec(version, figure).get("table") or session.table_name)


def figure_drawing(
    session: Session, version: int | str | None, figure: str, draw_px: int | None = None, channels: Any = None
) -> tuple[ParsedFigure, Any]:
    """A figure and what draws it: a Vega-Lite spec (charts) or CanvasData (canvas).

    ``draw_px``: the pixels a canvas's whole drawing spans in an export, so its image is read
    at the level that many pixels need (see ``build_canvas``), not the browser's overview.
    ``channels``: the image channels as a view set them (name, color, visible, contrast
    limits), checked as a saved figure's channels are, in place of the saved ones.
    """
    parsed = read_figure(session.studio_uns(version), figure)
    if parsed.kind == "chart":
        spec = parsed.require("chart")
        uns = session.studio_uns(version, [str(spec["result"])])
        result = read_result(uns, str(spec["result"]))
        palettes = session.palettes(version, read_figures(uns))
        return parsed, recolor_chart(chart_for_figure(spec, result), palettes, result.meta)
    spec = parsed.require("canvas")
    if channels is not None:
        spec = parse_figure(figure, {**spec, "channels": channels}).require("canvas")
    column = spec.get("color_by")
    if isinstance(column, str) and column:  # the colours its view is sent (Session.category_colors), not its own alone
        spec = {**spec, "category_colors": session.category_colors(version, spec, [column])[column]}
    view = session.table_view(version, spec.get("table"))
    return parsed, build_canvas(spec, view, view.root, view.attrs, draw_px)
