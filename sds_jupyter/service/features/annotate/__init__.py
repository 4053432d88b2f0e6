"""The ``annotate`` request, the one that writes: regions drawn on the tissue saved as an obs column of a new version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sds_jupyter.errors import NoStudioDataError
from sds_jupyter.protocol.types import AnnotateData
from sds_jupyter.service.embedding import embedding_positions
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.features.annotate.regions import (
    REGIONS_KEY,
    annotated_column,
    annotation_message,
    checked_regions,
    region_codes,
    regions_record,
)
from sds_jupyter.service.pieces import cached_geometry
from sds_jupyter.service.session import Session
from sds_jupyter.studio.canvas import region_attrs
from sds_jupyter.studio.figurespecs import read_figures
from sds_jupyter.studio.tableview import TableView

if TYPE_CHECKING:
    from sds_jupyter.stack import SavePlan

__all__ = ["annotate"]


def annotate(
    session: Session,
    column: str,
    regions: Mapping[str, list[list[float]] | Mapping[str, Any]],
    *,
    title: str,
    message: str | None = None,
    figure: str = "",
    version: int | str | None = None,
) -> AnnotateData:
    """Save regions drawn on the tissue as obs ``column`` of a new version on ``version`` (default: the top).

    ``regions`` maps each label to a polygon ``[[x, y], ...]`` in the coordinates canvas
    ``figure`` draws its cells at (default: the version's first canvas figure), to
    ``{"embedding": key, "polygon": [...]}`` (a polygon on obsm ``key``, as ``embedding``
    sends it) or to ``{"cells": [index, ...]}``; a cell takes the label of the last region
    containing it. A new column is missing elsewhere; an
    existing one must be categorical and keeps its other values. One ``set-obs``, written
    by the same path as :func:`~sds_jupyter.stack.write.save.save_version` (so a read-only
    datasets folder sends it to the versions folder). The message defaults to what was
    annotated, so the version's Changes say it.
    """
    from sds_jupyter.stack import commit_plan, obs_column_plan

    if not isinstance(column, str) or not column.strip():
        raise RequestError("Parameter 'column' must name an obs column (a new or a categorical one).")
    if not isinstance(title, str) or not title.strip():
        raise RequestError("Parameter 'title' must be the new version's title (some text).")
    checked = checked_regions(regions)
    spec = _annotated_figure(session, version, figure)
    table = str(spec.get("table") or session.table_name)
    view = session.table_view(version, table)
    keys = region_attrs(view, view.attrs)
    if column in (keys.get("region_key"), keys.get("instance_key")):
        raise RequestError(
            f"obs column {column[:80]!r} ties the table to its spatial elements; annotate into another column."
        )
    _, geometry = cached_geometry(view, spec)
    codes = region_codes(geometry.x, geometry.y, checked, embedding_positions(view))
    labels = [region.label for region in checked]
    existing = view.obs_column(column) if column in view.obs_columns else None
    values = annotated_column(existing, codes, labels, column)
    plan = obs_column_plan(table, column, values, existed=existing is not None)
    _keep_regions(
        plan, view, table, column, regions_record(checked, str(spec.get("coordinate_system") or "global"), figure)
    )
    stack = session.stack.at(session.depth(version))
    text = message if isinstance(message, str) and message.strip() else annotation_message(column, labels, codes)
    folder = commit_plan(stack, plan, title=title, message=text, caches=session.caches)
    return {"folder": session.folder_text(folder), "dataset_id": folder.name}


def _keep_regions(plan: SavePlan, view: TableView, table: str, column: str, record: dict[str, Any]) -> None:
    """Add to ``plan`` the drawn regions, kept in ``uns[REGIONS_KEY][column]`` beside the other columns' (one set-uns)."""
    from sds_jupyter.stack import VersionWriter

    below = view.uns.get(REGIONS_KEY)  # uns is read within MAX_UNS_BYTES
    kept: dict[str, Any] = dict(below) if isinstance(below, Mapping) else {}
    kept[column] = record
    plan.add(
        f"uns {REGIONS_KEY!r}: the regions of {column!r}",
        lambda writer: VersionWriter.set_uns(writer, table, REGIONS_KEY, kept),
    )


def _annotated_figure(session: Session, version: int | str | None, figure: str) -> dict[str, Any]:
    """The canvas figure whose drawn positions regions are in: ``figure``, else the first canvas one, else none."""
    if figure:
        return session.canvas_spec(version, figure)
    try:
        figures = read_figures(session.studio_uns(version))
    except NoStudioDataError:
        return {}
    return next((dict(f.spec) for f in figures if f.kind == "canvas" and isinstance(f.spec, Mapping)), {})
