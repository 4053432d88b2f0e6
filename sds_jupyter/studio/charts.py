"""Vega-Lite specs: the one place charts are built.

Two entry points: :func:`chart_for_figure` draws a chart figure over one of a
result's tables, and :func:`default_chart` picks the usual chart for a result
kind (markers, comparison, morans_i, nhood_enrichment, niches, clusters).
Specs carry their data inline, trimmed to the columns and rows they draw, so
the front end and ``vl-convert`` render them without another request.

Result tables come from different tools (scanpy, squidpy, the app), so
columns are found by a short list of usual names rather than one fixed name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.errors import FigureError
from sds_jupyter.studio.jsonable import json_scalar
from sds_jupyter.studio.resultstore import MAIN_TABLE, ResultEntry

__all__ = [
    "DEFAULT_CHARTS",
    "VEGA_LITE_SCHEMA",
    "chart_for_figure",
    "chart_spec",
    "column_of",
    "default_chart",
    "field_type",
    "inline_values",
    "natural_order",
    "vega_field",
]

#: The Vega-Lite major version the front end runs (vega-lite 6 through vega-embed 7).
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
TOP_PER_GROUP = 10
TOP_FEATURES = 20
MAX_INLINE_ROWS = 20_000
#: Narrowest plot area of one facet, and the pixels per character of an axis label:
#: the front end divides the card's width by their sum to choose how many facets per row.
FACET_MIN_WIDTH = 140
LABEL_PX_PER_CHAR = 6.5

GROUP_NAMES = ("group", "groups", "cluster", "clusters", "leiden", "louvain")
FEATURE_NAMES = ("names", "name", "gene", "genes", "gene_symbols", "feature", "features", "var_names", "index")
SCORE_NAMES = ("scores", "score", "logfoldchanges", "logfoldchange", "log2fc", "lfc")
LOGFC_NAMES = ("logfoldchanges", "logfoldchange", "log2fc", "logfc", "lfc", "log2_fold_change", "fold_change")
PVALUE_NAMES = ("pvals_adj", "padj", "pval_adj", "fdr", "qval", "pvals", "pval", "p_value")
MORAN_NAMES = ("I", "morans_i", "moran_i", "moransi", "i")
NICHE_NAMES = ("niche", "niches", "niche_id")
CATEGORY_NAMES = ("cell_type", "celltype", "category", "label", "cluster", "group")
AMOUNT_NAMES = ("fraction", "proportion", "frequency", "share", "count", "counts", "n_cells", "n", "size")
COUNT_NAMES = ("n_cells", "count", "counts", "size", "n")
PAIR_NAMES = (("cluster_a", "cluster_b"), ("source", "target"), ("group_a", "group_b"), ("a", "b"), ("from", "to"))
ZSCORE_NAMES = ("zscore", "z_score", "z", "enrichment", "score")


# --------------------------------------------------------------------- basics

#: Characters Vega reads in a field name as nested access (``p.adj``, ``score[1]``) or escape.
_FIELD_SYNTAX = re.compile(r"([\\.\[\]])")


def vega_field(column: str) -> str:
    """``column`` as a Vega-Lite ``field``, escaped.

    Why: Vega reads ``.`` and ``[ ]`` in a field as nested access, so a column named
    ``p.adj`` or ``score[1]`` would draw nothing (its rows have no ``p`` holding ``adj``).
    The rows keep the column's own name; only the field refers to it escaped.
    """
    return _FIELD_SYNTAX.sub(r"\\\1", column)


def column_of(field: str) -> str:
    """The column a Vega-Lite ``field`` made by :func:`vega_field` refers to."""
    return re.sub(r"\\(.)", r"\1", field)


def _field(column: str, **extra: Any) -> dict[str, Any]:
    """An encoding of ``column``: escaped, and titled with its own name (Vega-Lite would show the escapes)."""
    field = vega_field(column)
    if field != column and "title" not in extra:
        extra["title"] = column
    return {"field": field, **extra}


def field_type(series: pd.Series) -> str:
    """The Vega-Lite type of a column: quantitative for numbers, nominal otherwise."""
    if pd.api.types.is_bool_dtype(series):
        return "nominal"
    if pd.api.types.is_numeric_dtype(series):
        return "quantitative"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "temporal"
    return "nominal"


def natural_order(values: Iterable[Any]) -> list[Any]:
    """Distinct ``values`` in reading order: numbers (or texts that are numbers) by value.

    Vega-Lite sorts nominal fields as text, so clusters "0".."11" would read
    0, 1, 10, 11, 2; an explicit order keeps 2 before 10.
    """
    distinct = [json_scalar(v) for v in dict.fromkeys(values)]
    distinct = [v for v in distinct if v is not None]

    def as_number(value: Any) -> float | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return float(str(value))
        except ValueError:
            return None

    numbers = [as_number(v) for v in distinct]
    known = [n for n in numbers if n is not None]
    if distinct and len(known) == len(numbers):
        return [v for _, v in sorted(zip(known, distinct, strict=True), key=lambda pair: pair[0])]
    return sorted(distinct, key=lambda v: (str(type(v)), str(v)))


def _all_numbers(values: list[Any]) -> bool:
    try:
        [float(str(v)) for v in values]
    except ValueError:
        return False
    return bool(values)


def _label_width(values: Iterable[Any]) -> int:
    """Pixels an axis needs for the longest of ``values`` (capped: Vega-Lite truncates at 180)."""
    longest = max((len(str(v)) for v in values), default=4)
    return int(min(180, longest * LABEL_PX_PER_CHAR) + 24)


def inline_values(frame: pd.DataFrame, columns: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``frame`` (only ``columns``) as JSON-safe dicts; NaN and inf become null."""
    chosen = list(columns) if columns is not None else list(frame.columns)
    chosen = list(dict.fromkeys(chosen))
    part = frame.loc[:, chosen].head(MAX_INLINE_ROWS)
    return [
        {str(name): json_scalar(value) for name, value in zip(chosen, row, strict=True)}
        for row in part.itertuples(index=False, name=None)
    ]


def with_index_column(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a meaningful index (gene names, cluster labels) as a column.

    A default 0..n-1 index (which anndata stores and reads back as strings) is
    dropped rather than shown as a column of row numbers.
    """
    if _is_row_numbers(frame.index):
        return frame.reset_index(drop=True)
    name = frame.index.name or "index"
    if name in frame.columns:
        return frame.reset_index(drop=True)
    return frame.rename_axis(name).reset_index()


def _is_row_numbers(index: pd.Index) -> bool:
    if isinstance(index, pd.RangeIndex):
        return bool(index.start == 0 and index.step == 1)
    if index.name is not None or len(index) > 1_000_000:
        return False
    return list(map(str, index)) == [str(i) for i in range(len(index))]


def _find(frame: pd.DataFrame, names: Sequence[str], *, numeric: bool | None = None) -> str | None:
    """The first column of ``frame`` named like one of ``names`` (case-insensitive)."""
    by_lower: dict[str, str] = {}
    for column in frame.columns:
        by_lower.setdefault(str(column).lower(), str(column))
    for name in names:
        column = str(name) if str(name) in frame.columns else by_lower.get(str(name).lower())
        if column is None:
            continue
        is_number = pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column])
        if numeric is None or numeric == is_number:
            return column
    return None


def _base(title: str | None, data: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"$schema": VEGA_LITE_SCHEMA, "data": {"values": data}}
    if title:
        spec["title"] = title
    return spec


def _channel(frame: pd.DataFrame, column: str, **extra: Any) -> dict[str, Any]:
    """An encoding channel; nominal numbers get an explicit numeric order."""
    channel = _field(column, type=field_type(frame[column]), **extra)
    if channel["type"] == "nominal" and "sort" not in channel and _all_numbers(list(frame[column].dropna().unique())):
        channel["sort"] = natural_order(frame[column])
    return channel


# ------------------------------------------------------------ chart figures


def chart_spec(
    frame: pd.DataFrame,
    *,
    mark: str,
    x: str,
    y: str,
    color: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """A Vega-Lite spec drawing ``mark`` with x/y/color from columns of ``frame``."""
    frame = with_index_column(frame)
    used = [x, y] + ([color] if color else [])
    missing = [column for column in used if column not in frame.columns]
    if missing:
        have = ", ".join(map(str, frame.columns))
        raise FigureError(f"Column {missing[0]!r} is not in the result table (columns: {have}).")
    encoding: dict[str, Any] = {"x": _channel(frame, x), "y": _channel(frame, y)}
    if mark == "bar":
        _rank_bars(frame, encoding, x, y, color)
    if mark == "rect":
        for axis, column in (("x", x), ("y", y)):
            encoding[axis]["type"] = "nominal"
            encoding[axis].setdefault("sort", natural_order(frame[column]))
    if color:
        encoding["color"] = _channel(frame, color)
        if mark == "rect" and field_type(frame[color]) == "quantitative":
            encoding["color"]["scale"] = {"scheme": "redblue", "reverse": True, "domainMid": 0}
    encoding["tooltip"] = [_channel(frame, column) for column in dict.fromkeys(used)]
    spec = _base(title, inline_values(frame, used))
    spec["mark"] = {"type": mark, "tooltip": True} if mark != "rect" else {"type": "rect"}
    spec["encoding"] = encoding
    return spec


def _rank_bars(frame: pd.DataFrame, encoding: dict[str, Any], x: str, y: str, color: str | None) -> None:
    """Bars of a score per name: ordered by the score, side by side per color, never stacked.

    Why: marker scores (and most per-group values) do not add up, so a stacked bar reads as
    a total that means nothing, and names in alphabetical order hide which rank first.
    """
    for names, values, name_column, value_column in (("x", "y", x, y), ("y", "x", y, x)):
        if field_type(frame[name_column]) == "nominal" and field_type(frame[value_column]) == "quantitative":
            # each name ranked by its best score: Vega-Lite's "-y" ranks an unaggregated field by its
            # smallest value, which put a gene with one weak group below one that is weaker everywhere
            encoding[names]["sort"] = {"field": value_column, "op": "max", "order": "descending"}
            if color:
                encoding[values]["stack"] = None
                encoding[f"{names}Offset"] = _channel(frame, color)
            return


def chart_for_figure(spec: Mapping[str, Any], result: ResultEntry, *, titled: bool = True) -> dict[str, Any]:
    """The Vega-Lite spec of a validated chart figure over ``result``.

    ``titled=False`` leaves the title to the card that shows the chart (the
    browser), so a figure shows its title once; an exported file keeps it.
    """
    frame = result.table(str(spec.get("table") or MAIN_TABLE))
    return chart_spec(
        frame,
        mark=str(spec["mark"]),
        x=str(spec["x"]),
        y=str(spec["y"]),
        color=spec.get("color") or None,
        title=(spec.get("title") or result.title) if titled else None,
    )


# ------------------------------------------------------ default result charts


def _top_rows(frame: pd.DataFrame, score: str, n: int, group: str | None) -> pd.DataFrame:
    ordered = frame.sort_values(score, ascending=False, na_position="last")
    return ordered.groupby(group, sort=False, observed=True).head(n) if group else ordered.head(n)


def _ranked_bar(frame: pd.DataFrame, feature: str, score: str, group: str | None, n: int) -> dict[str, Any]:
    """Top ``n`` features by score as bars; one facet per group, wrapped into rows by the front end.

    ``usermeta.fit`` tells the front end what one facet needs (its narrowest
    plot and its label axis), so it can pick the columns from the card width.
    """
    top = _top_rows(frame, score, n, group)
    used = [feature, score] + ([group] if group else [])
    bar: dict[str, Any] = {
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": _channel(top, score),
            "y": _field(feature, type="nominal", sort="-x", title=None),
        },
    }
    spec = _base(None, inline_values(top, used))
    if group:
        order = natural_order(top[group])
        bar["encoding"]["color"] = _field(group, type="nominal", legend=None, sort=order)
        bar["width"] = FACET_MIN_WIDTH
        bar["height"] = {"step": 14}
        spec.update(
            {
                "facet": _field(group, type="nominal", sort=order, header={"labelFontWeight": "bold"}),
                "columns": min(4, max(1, len(order))),
                "spec": bar,
                "resolve": {"scale": {"y": "independent"}},
                "usermeta": {
                    "fit": {"facets": len(order), "label": _label_width(top[feature]), "min": FACET_MIN_WIDTH}
                },
            }
        )
    else:
        spec.update(bar)
    return spec


def markers_chart(result: ResultEntry) -> dict[str, Any] | None:
    """Top markers per group as bars of their score."""
    frame = with_index_column(result.table())
    feature = _find(frame, FEATURE_NAMES, numeric=False)
    score = _find(frame, SCORE_NAMES, numeric=True)
    if feature is None or score is None:
        return None
    group = _find(frame, GROUP_NAMES)
    return _ranked_bar(frame, feature, score, group, TOP_PER_GROUP)


def _cutoff(result: ResultEntry, names: Sequence[str], default: float) -> float:
    sources = [(result.meta or {}).get("summary"), (result.meta or {}).get("parameters")]
    for source in sources:
        if isinstance(source, Mapping):
            for name in names:
                value = source.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return float(value)
    return default


def comparison_chart(result: ResultEntry) -> dict[str, Any] | None:
    """A volcano plot: fold change against -log10 adjusted p-value."""
    frame = with_index_column(result.table())
    logfc = _find(frame, LOGFC_NAMES, numeric=True)
    pvalue = _find(frame, PVALUE_NAMES, numeric=True)
    if logfc is None or pvalue is None:
        return None
    feature = _find(frame, FEATURE_NAMES, numeric=False)
    p_cut = _cutoff(result, ("pval_cutoff", "pvalue_cutoff", "alpha", "fdr"), 0.05)
    fc_cut = _cutoff(result, ("logfc_cutoff", "lfc_cutoff", "fold_change_cutoff"), 1.0)
    volcano = pd.DataFrame({logfc: frame[logfc].astype(float)})
    volcano["neg_log10_p"] = -np.log10(frame[pvalue].astype(float).clip(lower=1e-300))
    volcano["significant"] = (frame[pvalue] < p_cut) & (frame[logfc].abs() >= fc_cut)
    if feature:
        volcano[feature] = frame[feature].astype(str)
    tooltip = [_field(c, type=field_type(volcano[c])) for c in ([feature] if feature else []) + [logfc, "neg_log10_p"]]
    spec = _base(None, inline_values(volcano))
    spec["mark"] = {"type": "point", "filled": True, "size": 20}
    spec["encoding"] = {
        "x": _field(logfc, type="quantitative"),
        "y": {"field": "neg_log10_p", "type": "quantitative", "title": f"-log10 {pvalue}"},
        "color": {
            "field": "significant",
            "type": "nominal",
            "scale": {"domain": [False, True], "range": ["#bbbbbb", "#d62728"]},
        },
        "tooltip": tooltip,
    }
    return spec


def morans_i_chart(result: ResultEntry) -> dict[str, Any] | None:
    """The most spatially autocorrelated features by Moran's I."""
    frame = with_index_column(result.table())
    feature = _find(frame, FEATURE_NAMES, numeric=False)
    score = _find(frame, MORAN_NAMES, numeric=True)
    if feature is None or score is None:
        return None
    return _ranked_bar(frame, feature, score, None, TOP_FEATURES)


def _pairs_long(frame: pd.DataFrame) -> tuple[pd.DataFrame, str, str, str] | None:
    """Neighborhood enrichment as (a, b, value) rows, from long or square form."""
    for first, second in PAIR_NAMES:
        a, b = _find(frame, (first,)), _find(frame, (second,))
        value = _find(frame, ZSCORE_NAMES, numeric=True)
        if a and b and value:
            return frame, a, b, value
    numeric = frame.select_dtypes("number")
    if numeric.shape[1] >= 1 and numeric.shape[0] == numeric.shape[1]:
        square = numeric.copy()
        square.index = [str(label) for label in frame.index]
        square.columns = [str(label) for label in square.columns]
        long = (
            square.rename_axis("cluster_a")
            .reset_index()
            .melt(id_vars="cluster_a", var_name="cluster_b", value_name="zscore")
        )
        return long, "cluster_a", "cluster_b", "zscore"
    return None


def nhood_enrichment_chart(result: ResultEntry) -> dict[str, Any] | None:
    """A heatmap of enrichment z-scores between cluster pairs."""
    found = _pairs_long(result.table())
    if found is None:
        return None
    frame, a, b, value = found
    return chart_spec(frame, mark="rect", x=a, y=b, color=value)


FRACTION_NAMES = ("fraction", "proportion", "share", "frequency")


def _niche_composition(frame: pd.DataFrame, niche: str) -> tuple[pd.DataFrame, str, str] | None:
    """(rows, category column, amount column) of a niche composition, long as stored or melted.

    Long form has a category and an amount column; wide form has one numeric
    column per category and nothing else numeric. Anything else has no composition.
    """
    category = _find(frame.drop(columns=[niche]), CATEGORY_NAMES, numeric=False)
    amount = _find(frame, AMOUNT_NAMES, numeric=True)
    if category is not None and amount is not None:
        return frame, category, amount
    numeric = [str(c) for c in frame.select_dtypes("number").columns if c != niche]
    if category is None and amount is None and numeric:
        melted = frame.melt(id_vars=niche, value_vars=numeric, var_name="category", value_name="fraction")
        return melted, "category", "fraction"
    return None


def niches_chart(result: ResultEntry) -> dict[str, Any] | None:
    """Niche composition as stacked bars, or niche sizes when the table has no composition."""
    frame = with_index_column(result.table())
    niche = _find(frame, NICHE_NAMES)
    if niche is None:
        return None
    frame = frame.astype({niche: str})
    composition = _niche_composition(frame, niche)
    if composition is None:
        size = _find(frame, AMOUNT_NAMES, numeric=True)
        return chart_spec(frame, mark="bar", x=niche, y=size) if size else None
    rows, category, amount = composition
    spec = chart_spec(rows, mark="bar", x=niche, y=amount, color=category)
    spec["encoding"]["y"]["stack"] = "normalize" if amount in FRACTION_NAMES else True
    return spec


def clusters_chart(result: ResultEntry) -> dict[str, Any] | None:
    """Cluster sizes as bars (counted here when the table lists cells)."""
    frame = with_index_column(result.table())
    cluster = _find(frame, ("cluster", "clusters", "leiden", "louvain", "label", "group"))
    if cluster is None:
        return None
    size = _find(frame, COUNT_NAMES, numeric=True)
    if size is None or frame[cluster].duplicated().any():
        counts = frame[cluster].astype(str).value_counts(sort=False).rename("n_cells")
        frame, size = counts.rename_axis(cluster).reset_index(), "n_cells"
    frame = frame.astype({cluster: str})
    spec = chart_spec(frame, mark="bar", x=cluster, y=size)
    spec["encoding"]["x"]["sort"] = natural_order(frame[cluster])
    return spec


DEFAULT_CHARTS: dict[str, Callable[[ResultEntry], dict[str, Any] | None]] = {
    "markers": markers_chart,
    "comparison": comparison_chart,
    "morans_i": morans_i_chart,
    "nhood_enrichment": nhood_enrichment_chart,
    "niches": niches_chart,
    "clusters": clusters_chart,
}


def default_chart(result: ResultEntry) -> dict[str, Any] | None:
    """The usual chart for the result's kind; None when the kind or its columns are unknown.

    It carries no title: the result's card already shows one.
    """
    builder = DEFAULT_CHARTS.get(result.kind or "")
    if builder is None or MAIN_TABLE not in result.tables:
        return None
    try:
        return builder(result)
    except (KeyError, ValueError, TypeError):
        return None
