"""Finding a gene the way a person types it.

var names are case-sensitive (``Epcam`` in mouse, ``EPCAM`` in human) but a
person types ``epcam`` and means the one gene that spells so. When var's index
holds IDs (``ENSG…``), the symbols live in a var column; both are searched.
A name that finds nothing is answered with the nearest names, not a bare "no".
"""

from __future__ import annotations

import difflib

import numpy as np
import pandas as pd
from anndata.io import read_elem

from sds_jupyter.protocol.types import DotPlot, DotRow, GeneNames
from sds_jupyter.service.columns import column_kind, value_texts
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.studio.nodes import child_group
from sds_jupyter.studio.tableview import TableView

__all__ = [
    "MAX_SCORE_GENES",
    "SYMBOL_COLUMNS",
    "dot_plot",
    "gene_names",
    "gene_position",
    "nearest_genes",
    "typed_genes",
]

#: var columns that hold gene symbols when var's index holds IDs (first found is used).
SYMBOL_COLUMNS = ("gene_symbols", "gene_symbol", "symbol", "symbols", "gene_name", "gene_names", "feature_name")
#: Genes one coloring averages into a score.
MAX_SCORE_GENES = 3
#: How many nearest names a refusal offers.
N_SUGGESTIONS = 5


def symbol_column(view: TableView) -> tuple[str, pd.Index] | None:
    """The var column of gene symbols, when var has one (read alone, not var whole)."""
    if "var" not in view.group:
        return None
    var = child_group(view.group, "var")
    for name in SYMBOL_COLUMNS:
        if name in var:
            values = pd.Series(read_elem(var[name]))
            return name, pd.Index(values.astype(object).where(values.notna(), "").astype(str))
    return None


def gene_names(view: TableView) -> GeneNames:
    """The ``genes`` payload: var names and, when var has one, the symbol column, position for position."""
    symbols = symbol_column(view)
    return {
        "table": view.name,
        "names": [str(n) for n in view.var_names],
        "symbol_column": symbols[0] if symbols else None,
        "symbols": [str(s) for s in symbols[1]] if symbols else None,
    }


def gene_position(view: TableView, gene: str) -> int:
    """The var position ``gene`` names: exactly, then ignoring case; by var name, then by symbol.

    A name that matches several genes once case is ignored is refused with them listed
    (which one was meant is the person's call); one that matches nothing, with the nearest names.
    """
    columns = [view.var_names]
    symbols = symbol_column(view)
    if symbols is not None:
        columns.append(symbols[1])
    for names in columns:
        exact = np.flatnonzero(names == gene)
        if len(exact):
            return int(exact[0])
    folded = gene.casefold()
    for names in columns:
        hits = np.flatnonzero(np.array([n.casefold() == folded for n in names], dtype=bool))
        if len(hits) == 1:
            return int(hits[0])
        if len(hits) > 1:
            spelled = ", ".join(sorted({str(names[i]) for i in hits}))
            raise RequestError(f"Gene {gene!r} matches several var names when case is ignored: {spelled}.")
    near = nearest_genes(columns, gene)
    hint = f" Nearest: {', '.join(near)}." if near else ""
    raise RequestError(f"Gene {gene!r} is not among the {len(view.var_names)} var names of table {view.name!r}.{hint}")


def nearest_genes(columns: list[pd.Index], gene: str, n: int = N_SUGGESTIONS) -> list[str]:
    """The names closest to ``gene`` (case ignored): those starting with it first, then by similarity."""
    spelled = {str(name).casefold(): str(name) for names in columns for name in names if str(name)}
    folded = gene.casefold()
    starting = sorted(k for k in spelled if k.startswith(folded))[:n]
    close = difflib.get_close_matches(folded, list(spelled), n=n, cutoff=0.6)
    ordered = list(dict.fromkeys([*starting, *close]))[:n]
    return [spelled[k] for k in ordered]


#: Groups a dot plot draws at most (a column with more is not a grouping).
MAX_DOT_GROUPS = 200


def typed_genes(gene: str, limit: int = MAX_SCORE_GENES) -> list[str]:
    """The gene names in ``gene`` (commas between them), refusing none or more than ``limit``."""
    typed = [name.strip() for name in gene.split(",") if name.strip()]
    if not typed or len(typed) > limit:
        raise RequestError(f"Give one gene, or up to {limit} separated by commas (got {len(typed)}).")
    return typed


def dot_plot(view: TableView, gene: str, groupby: str, layer: str | None) -> DotPlot:
    """Per group of ``groupby`` and per gene: the fraction of cells expressing it (> 0) and its mean.

    The mean is over all the group's cells, and missing labels are left out, as
    scanpy's dot plot does by default.
    """
    if groupby not in view.obs_columns:
        raise RequestError(f"No obs column {groupby!r} in table {view.name!r} to group by.")
    labels = value_texts(view.obs_named_column(groupby)).reset_index(drop=True)
    if column_kind(view.obs_named_column(groupby)) == "numeric" or labels.nunique() > MAX_DOT_GROUPS:
        raise RequestError(f"Column {groupby!r} is not a grouping (numbers, or over {MAX_DOT_GROUPS} values).")
    positions = list(dict.fromkeys(gene_position(view, name) for name in typed_genes(gene)))
    names = [str(view.var_names[p]) for p in positions]
    frame = pd.DataFrame({name: view.matrix_column(p, layer) for name, p in zip(names, positions, strict=True)})
    frame["group"] = labels
    frame = frame.dropna(subset=["group"])
    grouped = frame.groupby("group", sort=False)
    means, fractions, sizes = (
        grouped.mean(),
        (frame[names] > 0).groupby(frame["group"], sort=False).mean(),
        grouped.size(),
    )
    groups = _group_order(view.obs_named_column(groupby), list(sizes.index))
    rows: list[DotRow] = [
        {
            "group": group,
            "gene": name,
            "fraction": float(fractions.loc[group, name]),
            "mean": float(means.loc[group, name]),
            "n_cells": int(sizes.loc[group]),
        }
        for group in groups
        for name in names
    ]
    return {"groupby": groupby, "genes": names, "groups": groups, "layer": layer, "rows": rows}


def _group_order(series: pd.Series, present: list[str]) -> list[str]:
    """A categorical's own order; otherwise by name."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        order = [str(c) for c in value_texts(pd.Series(series.cat.categories))]
        return [g for g in order if g in set(present)]
    return sorted(present)
