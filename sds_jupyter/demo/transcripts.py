"""The demo's transcripts and nucleus outlines: what a Xenium run stores beside the cells.

Each cell gets about ``per_cell`` transcripts, their genes drawn from that cell's own
counts (so a gene's transcripts sit where the table says it is expressed) and their
positions scattered inside the cell's outline, denser towards the nucleus. Written by
spatialdata as a points element (dask-parquet, ``feature_key`` the gene column) in parts
of at most :data:`PART_ROWS` rows, so a reader can stream it a part at a time. The parts are
made as dask writes them (:func:`transcript_parts`), one group of cells each, so the
million-cell demo's 30 million transcripts never sit in memory together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from sds_jupyter.demo.tissue import Tissue

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = ["PART_ROWS", "TRANSCRIPTS_PER_CELL", "nucleus_rings", "transcript_frame", "transcript_parts"]

#: About how many transcripts a cell has (Xenium panels give tens to hundreds).
TRANSCRIPTS_PER_CELL = 30
#: Rows per parquet part: 30M transcripts are 15 parts a reader takes one at a time.
PART_ROWS = 2_000_000


def transcript_frame(tissue: Tissue, per_cell: int = TRANSCRIPTS_PER_CELL, seed: int = 39) -> pd.DataFrame:
    """x, y (micrometres, float32), gene (categorical over the panel) and cell_id of every transcript, in memory."""
    cells = _Cells(tissue.counts.tocsr(), tissue.x_um, tissue.y_um, tissue.cell_id, _cell_radius(tissue), tissue.genes)
    return pd.concat(
        [_part(group, i, cells, per_cell, seed) for i, group in enumerate(_cell_groups(tissue, per_cell))],
        ignore_index=True,
    )


def transcript_parts(tissue: Tissue, per_cell: int = TRANSCRIPTS_PER_CELL, seed: int = 39) -> dd.DataFrame:
    """The same transcripts as a dask frame of parts of about PART_ROWS rows, each made only when written."""
    import dask.dataframe as dd

    groups = _cell_groups(tissue, per_cell)
    cells = _Cells(tissue.counts.tocsr(), tissue.x_um, tissue.y_um, tissue.cell_id, _cell_radius(tissue), tissue.genes)
    frame: dd.DataFrame = dd.from_map(
        _part,
        groups,
        range(len(groups)),
        args=(cells, per_cell, seed),
        meta=_part(groups[0][:0], 0, cells, per_cell, seed),
        label="demo-transcripts",
    )
    return frame


def _cell_groups(tissue: Tissue, per_cell: int) -> list[np.ndarray]:
    """The cells with transcripts, in groups of about PART_ROWS transcripts (one part each)."""
    cells = np.flatnonzero(np.asarray(tissue.counts.sum(axis=1)).ravel() > 0)
    size = _group_size(per_cell)
    return [cells[start : start + size] for start in range(0, max(len(cells), 1), size)]


class _Cells(NamedTuple):
    """What drawing transcripts needs of the tissue (not its image: dask hashes a part's arguments)."""

    counts: sparse.csr_matrix
    x_um: np.ndarray
    y_um: np.ndarray
    cell_id: np.ndarray
    radius: np.ndarray
    genes: list[str]


def _group_size(per_cell: int) -> int:
    return max(1, PART_ROWS // per_cell)


def _part(cells: np.ndarray, index: int, tissue: _Cells, per_cell: int, seed: int) -> pd.DataFrame:
    """The transcripts of ``cells``: genes drawn from each cell's counts, positions inside its outline."""
    rng = np.random.default_rng([seed, index])  # each part its own stream: parts are made in any order
    counts = tissue.counts[cells]
    totals = np.asarray(counts.sum(axis=1)).ravel()
    weights = np.cumsum(counts.data, dtype=np.float64)
    before = np.concatenate([[0.0], weights])[counts.indptr]  # cumulative weight before each cell's row
    owner = np.repeat(np.arange(len(cells)), per_cell)
    draw = before[owner] + rng.uniform(0, 1, owner.size) * totals[owner]
    entry = np.minimum(np.searchsorted(weights, draw, side="right"), max(len(counts.data) - 1, 0))
    gene = counts.indices[entry] if len(counts.data) else np.zeros(0, dtype=np.int64)
    cell = cells[owner]
    distance = tissue.radius[cell] * np.sqrt(rng.uniform(0, 1, owner.size)) * rng.uniform(0.35, 1.0, owner.size)
    angle = rng.uniform(0, 2 * np.pi, owner.size)
    return pd.DataFrame(
        {
            "x": (tissue.x_um[cell] + distance * np.cos(angle)).astype(np.float32),
            "y": (tissue.y_um[cell] + distance * np.sin(angle)).astype(np.float32),
            "gene": pd.Categorical.from_codes(gene.astype(np.int16), categories=tissue.genes),
            "cell_id": tissue.cell_id[cell].astype(np.int64),
        },
        # rows numbered on from the parts before, so the whole frame's index increases as spatialdata asks
        index=pd.RangeIndex(
            index * _group_size(per_cell) * per_cell, index * _group_size(per_cell) * per_cell + len(cell)
        ),
    )


def _cell_radius(tissue: Tissue) -> np.ndarray:
    """Each cell's inner radius (µm): the nearest outline vertex, so transcripts stay inside the outline."""
    ring = tissue.polygons[:, :-1, :]
    centre = np.stack([tissue.x_um, tissue.y_um], axis=1)[:, None, :]
    nearest: np.ndarray = np.hypot(*(ring - centre).transpose(2, 0, 1)).min(axis=1) * 0.92
    return nearest


def nucleus_rings(tissue: Tissue, vertices: int = 12) -> np.ndarray:
    """(n_cells, vertices + 1, 2) closed rings (µm): each cell's nucleus, as Xenium's nucleus_boundaries."""
    angles = np.linspace(0, 2 * np.pi, vertices, endpoint=False)
    r = tissue.nucleus_radius_um[:, None]
    ring = np.empty((len(r), vertices + 1, 2))
    ring[:, :vertices, 0] = tissue.x_um[:, None] + r * np.cos(angles)[None, :]
    ring[:, :vertices, 1] = tissue.y_um[:, None] + r * np.sin(angles)[None, :]
    ring[:, vertices] = ring[:, 0]
    return ring
