"""One palette per obs column, the same in canvas views and in charts.

A category's color is, in this order: the color a canvas figure saved for it
(``category_colors``), else scanpy's ``uns["<column>_colors"]`` (when it has one
color per category), else one fixed palette taken by category order. Canvas
figures color their cells with it and charts over results that group by the
column (the column itself, or the result's ``groupby``/``cluster_key``
parameter) color those groups with it, so a cluster has one color everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from sds_jupyter.studio.charts import column_of

__all__ = [
    "GROUP_PARAMETERS",
    "column_palette",
    "fixed_palette",
    "obs_palettes",
    "recolor_chart",
    "saved_category_colors",
    "series_categories",
]

#: Result meta parameters that name the obs column a result groups by.
GROUP_PARAMETERS = ("groupby", "cluster_key", "group_key", "groups_key")


def _hex(rgba: Sequence[float]) -> str:
    return "#" + "".join(f"{round(float(v) * 255):02x}" for v in rgba[:3])


def fixed_palette(n: int) -> list[str]:
    """``n`` colors of the one fixed palette (matplotlib's tab10, tab20 past ten categories)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab20" if n > 10 else "tab10"]
    return [_hex(cmap(i % cmap.N)) for i in range(n)]


def _uns_colors(uns: Mapping[str, Any], column: str, n: int) -> list[str] | None:
    """scanpy's ``<column>_colors`` as ``#rrggbb``; None when absent, of another length, or not all colors.

    They are the dataset's text and reach a chart's scale and the canvas, so
    each one is read as a color (matplotlib's rules) and written back as hex.
    """
    from matplotlib.colors import to_hex

    colors = uns.get(f"{column}_colors")
    if colors is None or not hasattr(colors, "__len__") or len(colors) != n:
        return None
    try:
        return [to_hex(str(color)) for color in colors]
    except ValueError:
        return None


def column_palette(
    column: str, categories: Sequence[str], uns: Mapping[str, Any], saved: Mapping[str, str] | None = None
) -> list[str]:
    """The color of each category of ``column``, in category order (see the module doc)."""
    base = _uns_colors(uns, column, len(categories)) or fixed_palette(len(categories))
    chosen = saved or {}
    return [str(chosen.get(category, color)) for category, color in zip(categories, base, strict=True)]


def saved_category_colors(specs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Category colors the canvas figures saved, by the column they color by (the first figure wins a conflict)."""
    found: dict[str, dict[str, str]] = {}
    for spec in specs:
        column = spec.get("color_by")
        colors = spec.get("category_colors")
        if spec.get("kind") != "canvas" or not isinstance(column, str) or not isinstance(colors, Mapping):
            continue
        mine = found.setdefault(column, {})
        for category, color in colors.items():
            if isinstance(color, str):
                mine.setdefault(str(category), color)
    return found


def series_categories(series: pd.Series) -> list[str] | None:
    """A column's categories when it is categorical (or text/boolean), else None."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return [str(c) for c in series.cat.categories]
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return None
    return [str(c) for c in series.astype("category").cat.categories]


def obs_palettes(
    obs: pd.DataFrame | Mapping[str, Sequence[str] | None],
    uns: Mapping[str, Any],
    saved: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, dict[str, str]]:
    """category → color for every categorical obs column.

    ``obs``: the frame, or each column's categories (None for a numeric one) when they were
    read without the columns' values (a table view reads a categorical's categories alone).
    """
    categories_of = (
        {str(column): series_categories(obs[column]) for column in obs.columns}
        if isinstance(obs, pd.DataFrame)
        else obs
    )
    palettes: dict[str, dict[str, str]] = {}
    for column, categories in categories_of.items():
        if categories is None or len(categories) > 1000:
            continue
        colors = column_palette(str(column), categories, uns, (saved or {}).get(str(column)))
        palettes[str(column)] = dict(zip(categories, colors, strict=True))
    return palettes


def _group_column(meta: Mapping[str, Any] | None) -> str | None:
    parameters = (meta or {}).get("parameters")
    if not isinstance(parameters, Mapping):
        return None
    for key in GROUP_PARAMETERS:
        value = parameters.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _values(spec: Mapping[str, Any], field: str) -> list[str]:
    data = spec.get("data")
    rows = data.get("values") if isinstance(data, Mapping) else None
    if not isinstance(rows, list):
        return []
    seen: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping) and row.get(field) is not None:
            seen.setdefault(str(row[field]), None)
    return list(seen)


def _recolor(node: Any, palettes: Mapping[str, Mapping[str, str]], group: str | None, root: Mapping[str, Any]) -> None:
    if isinstance(node, list):
        for item in node:
            _recolor(item, palettes, group, root)
        return
    if not isinstance(node, dict):
        return
    encoding = node.get("encoding")
    color = encoding.get("color") if isinstance(encoding, dict) else None
    if (
        isinstance(color, dict)
        and color.get("type") == "nominal"
        and "scale" not in color
        and isinstance(color.get("field"), str)
    ):
        field = column_of(color["field"])  # the rows and the palettes know the column by its own name
        palette = palettes.get(field) or (palettes.get(group) if group else None)
        values = _values(node if "data" in node else root, field)
        if palette and values and all(value in palette for value in values):
            domain = [category for category in palette if category in set(values)]
            color["scale"] = {"domain": domain, "range": [palette[category] for category in domain]}
    for key in ("layer", "concat", "hconcat", "vconcat", "spec"):
        if key in node:
            _recolor(node[key], palettes, group, root)


def recolor_chart(
    spec: dict[str, Any], palettes: Mapping[str, Mapping[str, str]], meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``spec`` with each nominal color channel over an obs column's categories in that column's palette.

    A channel is recolored when its field is an obs column, or the result groups by
    one (``meta["parameters"]["groupby"]`` and the like) and every value of the
    field is a category of it. Channels with their own scale keep it.
    """
    _recolor(spec, palettes, _group_column(meta), spec)
    return spec
