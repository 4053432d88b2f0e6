"""The demo's transcripts and nucleus outlines: what a Xenium run stores beside the cells.

Each cell gets about ``per_cell`` transcripts, their genes drawn from that cell's own
counts (so a gene's transcripts sit where the table says it is expressed) and their
positions scattered inside the cell's outline, denser towards the nucleus. Written by
spatialdata as a points element (dask-parquet, ``feature_key`` the gene column) in parts
of at most :data:`PART_ROWS` rows, so a reader can stream it a part at a time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sds_jupyter.demo.tissue import Tissue

__all__ = ["PART_ROWS", "TRANSCRIPTS_PER_CELL", "nucleus_rings", "transcript_frame"]

#: About how many transcripts a cell has (Xenium panels give tens to hundreds).
TRANSCRIPTS_PER_CELL = 30
#: Rows per parquet part: 30M transcripts are 15 parts a reader takes one at a time.
PART_ROWS = 2_000_000
#: Cells whose transcripts are drawn at once (bounds the builder's temporaries at a million cells).
_BATCH_CELLS = 100_000


def transcript_frame(tissue: Tissue, per_cell: int = TRANSCRIPTS_PER_CELL, seed: int = 39) -> pd.DataFrame:
    """x, y (micrometres, float32), gene (categorical over the panel) and cell_id of every transcript."""
    rng = np.random.default_rng(seed)
    counts = tissue.counts.tocsr()
    totals = np.asarray(counts.sum(axis=1)).ravel()
    weights = np.cumsum(counts.data, dtype=np.float64)
    before = np.concatenate([[0.0], weights])[counts.indptr]  # cumulative weight before each cell's row
    radius = _cell_radius(tissue)
    parts = []
    for start in range(0, len(totals), _BATCH_CELLS):
        cells = np.arange(start, min(start + _BATCH_CELLS, len(totals)))
        cells = cells[totals[cells] > 0]
        owner = np.repeat(cells, per_cell)
        draw = before[owner] + rng.uniform(0, 1, owner.size) * totals[owner]
        entry = np.minimum(np.searchsorted(weights, draw, side="right"), len(counts.data) - 1)
        gene = counts.indices[entry]
        distance = radius[owner] * np.sqrt(rng.uniform(0, 1, owner.size)) * rng.uniform(0.35, 1.0, owner.size)
        angle = rng.uniform(0, 2 * np.pi, owner.size)
        parts.append(
            pd.DataFrame(
                {
                    "x": (tissue.x_um[owner] + distance * np.cos(angle)).astype(np.float32),
                    "y": (tissue.y_um[owner] + distance * np.sin(angle)).astype(np.float32),
                    "gene": pd.Categorical.from_codes(gene.astype(np.int16), categories=tissue.genes),
                    "cell_id": tissue.cell_id[owner].astype(np.int64),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


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
