"""A canvas figure's cells: ``canvas``, ``cells``, ``cell_outlines``, ``embedding``, ``cell``,
``color_values``, ``genes`` and ``dot_plot``.

Why together: each reads the table a canvas figure draws and answers in the cells' order
(the order of the ``cells`` buffers), so the browser can join them cell by cell.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.protocol.layouts import reply_buffers
from sds_jupyter.protocol.payloads import CanvasColor, CanvasPayload
from sds_jupyter.protocol.reply import Reply
from sds_jupyter.protocol.types import CellOutlinesData, CellRow, CellsData, DotPlot, EmbeddingData, GeneNames
from sds_jupyter.service.branches import version_at
from sds_jupyter.service.celldiff import NEW_CELL, RENAMED, UNCHANGED, transition_labels
from sds_jupyter.service.embedding import cached_embedding, embedding_keys
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.features.cells.colorcache import ColorColumn, cached_colors, column_color_key, gene_color_key
from sds_jupyter.service.features.cells.genes import dot_plot as plot_dots
from sds_jupyter.service.features.cells.genes import gene_names, gene_position, typed_genes
from sds_jupyter.service.pieces import (
    cached_geometry,
    cached_outline_tile,
    cached_outlines,
    cached_overview,
    cells_sent,
)
from sds_jupyter.service.session import Session
from sds_jupyter.studio.canvas import MISSING_COLOR, canvas_payload, cell_colors
from sds_jupyter.studio.cells import CellTable, FrameCells
from sds_jupyter.studio.jsonable import json_scalar
from sds_jupyter.studio.tableview import TableView

__all__ = [
    "GREY",
    "RENAMED_GREY",
    "canvas",
    "cell",
    "cell_outlines",
    "cell_row",
    "cells",
    "color_values",
    "dot_plot",
    "embedding",
    "genes",
]

#: Cells a recoloring leaves out (unchanged, not highlighted).
GREY = "#c8c8c8"
#: Cells of a clustering renamed with their group: a darker grey than unchanged ones, still quiet.
RENAMED_GREY = "#8c8c8c"


def _needs_figure(request: str, figure: str) -> None:
    if not figure:
        raise RequestError(f"The {request} request needs a figure id.")


def _checked_key(key: str) -> None:
    if len(key) > 64:
        raise RequestError("Parameter 'key' is too long (a cells key has 32 characters).")


def canvas(session: Session, version: int | str | None = None, figure: str = "") -> Reply[CanvasPayload]:
    """A canvas figure's payload: what it draws, and the names of the parts it shares, no buffers.

    Why no buffers: the cells' positions and shapes are the element's (``cells``, named by
    ``cells_key``), the image's pixels come through ``channels`` and ``image_tile``
    (``image_key``), and the figure's own colours are its column's plain ``color_values``
    (named in ``color_keys``), so each is sent once and kept by the browser, whatever figure
    or version asks. The colour description stays here (the legend's few bytes); its values
    are computed once and kept, so the ``color_values`` request that follows finds them.
    """
    _needs_figure("canvas", figure)
    spec = session.canvas_spec(version, figure)
    view = session.table_view(version, spec.get("table"))
    key, geometry = cached_geometry(view, spec)
    color = _figure_colors(session, version, spec, view)
    image, unit, shown = None, None, None
    if spec.get("image"):
        shown, overview = cached_overview(view, spec)
        image, unit = overview.canvas_image(), overview.unit
    payload = canvas_payload(spec, view, geometry.box, color, image, unit, geometry.shapes, geometry.note)
    payload["cells_key"] = key
    payload["color_keys"] = _color_keys(session, version, spec, view, payload.get("obs_columns") or [])
    if shown is not None:
        payload["image_key"] = shown
    return Reply(payload, reply_buffers("canvas", payload, [])).named_by_content()


def _figure_colors(
    session: Session, version: int | str | None, spec: Mapping[str, Any], view: TableView
) -> CanvasColor:
    """How the figure colours its cells: its column's plain colours, as ``color_values`` answers them.

    Why the same: the browser asks ``color_values`` for the values, so the description here must
    be the one those values follow (the figure's category colours by
    :meth:`~sds_jupyter.service.session.Session.category_colors`, as its export draws them). Nothing coloured, or a column the version lacks (the figure's own
    error, naming it), are the figure's alone.
    """
    column = spec.get("color_by")
    if not column or column not in view.obs_columns:
        return cell_colors(view, spec)[0]
    colors = session.category_colors(version, spec, [column])[column]
    return _plain_colors(session, spec, view, column, colors)[0].color


def cells(session: Session, version: int | str | None = None, figure: str = "", key: str = "") -> Reply[CellsData]:
    """The positions and shapes of a canvas figure's cells: x, y, then polygons or radii.

    A tissue past OUTLINES_AT_ONCE cells gets radii (circles of each polygon's area) and the
    grid its outlines come by (``cell_outlines``): its fit view cannot show them anyway. Its
    x, y and radii go as uint16 codes read back by ``quantum`` (half the bytes of float32).

    ``key`` (the canvas reply's ``cells_key``) makes the request content-addressed: it is
    refused when the figure's cells are no longer the ones it names, so an answer under a
    key never changes and may be kept forever. Equal keys in two versions, equal cells.
    """
    _needs_figure("cells", figure)
    _checked_key(key)
    spec = session.canvas_spec(version, figure)
    view = session.table_view(version, spec.get("table"))
    current, geometry, quantum, buffers = cells_sent(view, spec)
    if key and key != current:
        raise RequestError(f"The cells of figure {figure!r} are not the ones key {key!r} names; ask canvas again.")
    payload: CellsData = {
        "key": current,
        "n_cells": int(view.n_obs),
        "bounds": geometry.box,
        "shapes": geometry.shapes[0] if geometry.shapes is not None else None,
        "quantum": quantum,
    }
    return Reply(payload, reply_buffers("cells", payload, buffers), etag=current)


def cell_outlines(
    session: Session, version: int | str | None = None, figure: str = "", key: str = "", column: int = 0, row: int = 0
) -> Reply[CellOutlinesData]:
    """The outlines of the cells that meet one tile of a large tissue's grid (``shapes.outlines``).

    Why by tile: the fit view draws circles; only a zoomed-in view, which sees a few tiles,
    needs outlines. ``key`` is the ``cells`` reply's: the answer is named by it and the tile,
    so it never changes and the browser keeps it.
    """
    if not figure or not key:
        raise RequestError("The cell_outlines request needs a figure id and its cells key.")
    _checked_key(key)
    spec = session.canvas_spec(version, figure)
    current, outlines = cached_outlines(session.table_view(version, spec.get("table")), spec)
    if key != current:
        raise RequestError(f"The cells of figure {figure!r} are not the ones key {key!r} names; ask canvas again.")
    if outlines is None:
        raise RequestError(f"Figure {figure!r} sends its outlines with its cells; there are no outline tiles.")
    name, tile = cached_outline_tile(session.caches, outlines, key, column, row)
    payload: CellOutlinesData = {
        "key": key,
        "column": column,
        "row": row,
        "box": tile.box,
        "n_cells": len(tile.index),
        "n_vertices": len(tile.vertices) // 2,
    }
    return Reply(payload, reply_buffers("cell_outlines", payload, tile.buffers), etag=name, addressed=True)


def embedding(
    session: Session, version: int | str | None = None, figure: str = "", key: str = ""
) -> Reply[EmbeddingData]:
    """The embeddings of a canvas figure's table and, for ``key``, its first two columns (x, y).

    Why beside the figure: the view links the embedding to the tissue cell by cell, so the
    coordinates come in the order the ``cells`` buffers have (table order). Without ``key``
    only the list is answered (no buffers), so a view learns whether to offer the panel for
    a few bytes. The answer is named by the stored entry (cached like cells), so it is sent
    once per entry and version.
    """
    _needs_figure("embedding", figure)
    if len(key) > 256:
        raise RequestError("Parameter 'key' is too long for an obsm entry's name (at most 256 characters).")
    spec = session.canvas_spec(version, figure)
    view = session.table_view(version, spec.get("table"))
    payload: EmbeddingData = {
        "keys": embedding_keys(view),
        "key": None,
        "name": None,
        "n_cells": int(view.n_obs),
        "columns": 0,
        "bounds": None,
    }
    if not key:
        return Reply(payload).named_by_content()
    name, found = cached_embedding(view, key)
    payload = {**payload, "key": key, "name": name, "columns": found.columns, "bounds": found.bounds}
    # the buffers are named by the entry's identity: no need to hash their bytes for the ETag
    etag = hashlib.blake2b(json.dumps(payload, sort_keys=True).encode(), digest_size=16).hexdigest()
    return Reply(payload, reply_buffers("embedding", payload, [found.x, found.y]), etag=etag)


def cell_row(table: CellTable, index: int) -> CellRow:
    """Cell ``index``'s name and obs row, read at that position alone (no whole obs, no index of names)."""
    count = table.n_obs
    if not 0 <= index < count:
        raise RequestError(f"Cell {index} does not exist; the table has {count} cells (0 to {count - 1}).")
    return {
        "index": index,
        "name": table.obs_name(index),
        "columns": table.obs_columns,
        "values": [json_scalar(value) for value in table.obs_row(index).iloc[0].tolist()],
    }


def cell(session: Session, version: int | str | None = None, figure: str = "", index: int = 0) -> CellRow:
    """One cell's obs row (its ID and every column), for the canvas view's hover and pin.

    ``index`` is the cell's position in the table, as the canvas buffers order cells.
    """
    _needs_figure("cell", figure)
    spec = session.canvas_spec(version, figure)
    return cell_row(session.table_view(version, spec.get("table")), index)


def color_values(
    session: Session,
    version: int | str | None = None,
    figure: str = "",
    column: str = "",
    gene: str = "",
    layer: str | None = None,
    highlight: str | None = None,
    against: int | str | None = None,
    key: str = "",
) -> Reply[CanvasColor]:
    """A canvas figure's cells colored another way, in the order of the canvas buffers.

    By an obs ``column``; by a ``gene``'s expression (from X, or ``layer``); the cells
    whose ``column`` is ``highlight`` against grey (a cluster, a group, a niche); or by
    how ``column`` went from version ``against`` to this one (unchanged cells grey). ``key``
    (the canvas reply's ``color_keys`` entry of a plain column) makes the request content-addressed,
    refused when the column's colours are no longer the ones it names.
    Answers the ``color`` part of a CanvasPayload and one buffer (uint8 or uint16 category codes
    or float32 values).
    """
    _needs_figure("color_values", figure)
    _checked_key(key)
    if key and (gene or highlight is not None or against is not None):
        raise RequestError("A colour key goes with a plain obs column (no gene, highlight or against).")
    if bool(column) == bool(gene):
        raise RequestError("Give either an obs column or a gene to color by.")
    if gene and (highlight is not None or against is not None):
        raise RequestError("highlight and against go with an obs column, not a gene.")
    spec = session.canvas_spec(version, figure)
    view = session.table_view(version, spec.get("table"))
    table: CellTable = view
    colors = session.category_colors(version, spec, [column])[column]
    if gene:
        settings = {"colors": colors, "color_by": spec.get("color_by"), "colormap": spec.get("colormap")}
        named = gene_color_key(view, gene, layer, settings)
        found = cached_colors(session.caches, named, lambda: _gene_colors(view, spec, gene, layer, colors))
        return _color_reply(found, named)
    if column not in view.obs_columns:
        raise RequestError(f"No obs column {column!r} in this version's table.")
    elif against is not None:
        other, depth = version_at(session, against)
        before = other.table_view(depth, view.name)
        if column not in before.obs_columns:
            raise RequestError(f"Version {against!r} has no obs column {column!r} to compare with.")
        labels = transition_labels(
            column, before.obs_named_column(column), view.obs_named_column(column), moved_only=True
        )
        column = f"{column} (change)"
        table = FrameCells(pd.DataFrame({column: labels}))
        colors = {UNCHANGED: GREY, RENAMED: RENAMED_GREY, NEW_CELL: MISSING_COLOR}
    elif highlight is not None:
        table, colors, column = _highlighted(view, column, highlight, colors)
    else:  # a plain obs column: the same stored column, palette and settings colour alike in every figure and version
        found, current = _plain_colors(session, spec, view, column, colors)
        if key and key != current:
            raise RequestError(f"The colours of {column!r} are not the ones key {key!r} names; ask canvas again.")
        return _color_reply(found, current)
    color, buffer = cell_colors(table, _color_spec(spec, column, colors))
    return Reply(color, reply_buffers("color_values", color, [buffer] if buffer is not None else []))


def _plain_colors(
    session: Session, spec: Mapping[str, Any], view: TableView, column: str, colors: dict[str, str]
) -> tuple[ColorColumn, str | None]:
    """An obs column's plain colours (``colors``: its palette) and their name (None off a stack), kept by name."""
    plain = _color_spec(spec, column, colors)
    current = column_color_key(view, column, plain)
    return cached_colors(session.caches, current, lambda: ColorColumn(*cell_colors(view, plain))), current


def _color_keys(
    session: Session, version: int | str | None, spec: Mapping[str, Any], view: TableView, columns: list[str]
) -> dict[str, str]:
    """The name of each obs column's plain colours (as ``color_values`` names them), so the browser can share them."""
    palettes = session.category_colors(version, spec, columns)
    keys = {column: column_color_key(view, column, _color_spec(spec, column, palettes[column])) for column in columns}
    return {column: key for column, key in keys.items() if key is not None}


def _color_spec(spec: Mapping[str, Any], column: str, colors: dict[str, str]) -> dict[str, Any]:
    """How ``column`` is coloured: its palette, and the figure's colormap when the figure colours by it too."""
    return {
        "color_by": column,
        "category_colors": colors,
        "colormap": spec.get("colormap") if spec.get("color_by") == column else None,
    }


def _gene_colors(
    view: TableView, spec: Mapping[str, Any], gene: str, layer: str | None, colors: dict[str, str]
) -> ColorColumn:
    """A gene's (or a score's) colours, read from X or ``layer``."""
    name, values = _gene_values(view, gene, layer)
    return ColorColumn(*cell_colors(FrameCells(pd.DataFrame({name: values})), _color_spec(spec, name, colors)))


def _color_reply(found: ColorColumn, key: str | None) -> Reply[CanvasColor]:
    """The reply of a cached colour column, its key (the stored objects' identity) as its ETag."""
    buffers = [found.values] if found.values is not None else []
    reply = Reply(found.color, reply_buffers("color_values", found.color, buffers), etag=key)
    return reply if key is not None else reply.named_by_content()


def _highlighted(
    view: TableView, column: str, highlight: str, colors: dict[str, str]
) -> tuple[CellTable, dict[str, str], str]:
    """The cells whose ``column`` is ``highlight`` in its colour, the others grey: table, colours, column name."""
    values = view.obs_column(column)
    chosen = (values.astype(str) == highlight).to_numpy() & values.notna().to_numpy()
    if not chosen.any():
        raise RequestError(f"No cell has {column} = {highlight!r} in this version.")
    color = colors.get(highlight) or "#d62728"
    other = "other cells"
    name = f"{column} = {highlight}"
    categories = pd.Categorical(np.where(chosen, highlight, other), categories=[highlight, other])
    return FrameCells(pd.DataFrame({name: categories})), {highlight: color, other: GREY}, name


def _gene_values(view: TableView, gene: str, layer: str | None) -> tuple[str, np.ndarray]:
    """What the cells are colored by for ``gene``, and its value for every cell, from X or ``layer``.

    ``gene`` names one gene, or up to ``MAX_SCORE_GENES`` (3) separated by commas
    (colored by their mean, a score). Each is found as a person types it (any case,
    or its symbol); a one-line refusal names the nearest genes, or the layers.
    """
    if layer is not None and layer not in view.layer_names():
        have = ", ".join(view.layer_names()) or "none"
        raise RequestError(f"Table {view.name!r} has no layer {layer!r} (layers: {have}).")
    typed = typed_genes(gene)
    positions = list(dict.fromkeys(gene_position(view, name) for name in typed))
    names = [str(view.var_names[p]) for p in positions]
    if len(positions) == 1:
        return names[0], view.matrix_column(positions[0], layer)
    columns = np.stack([view.matrix_column(p, layer) for p in positions])
    return f"mean of {', '.join(names)}", columns.mean(axis=0, dtype=np.float64).astype(np.float32)


def _figure_table_view(session: Session, version: int | str | None, figure: str) -> TableView:
    """The table a canvas figure draws, or without a figure the session's."""
    table = session.canvas_spec(version, figure).get("table") if figure else None
    return session.table_view(version, table)


def dot_plot(
    session: Session,
    version: int | str | None = None,
    figure: str = "",
    gene: str = "",
    groupby: str = "",
    layer: str | None = None,
) -> DotPlot:
    """Per group of an obs column, the fraction of cells expressing each gene (up to 3, commas) and its mean."""
    view = _figure_table_view(session, version, figure)
    if layer is not None and layer not in view.layer_names():
        raise RequestError(f"Table {view.name!r} has no layer {layer!r}.")
    return plot_dots(view, gene, groupby, layer)


def genes(session: Session, version: int | str | None = None, figure: str = "") -> GeneNames:
    """The var names (and gene symbols, when var's index holds IDs) of a canvas figure's table, for the gene box.

    Without a figure, of the session's table.
    """
    return gene_names(_figure_table_view(session, version, figure))
