"""A synthetic tissue in the spirit of a Xenium run, drawn with numpy only (no download).

Cells sit on a jittered grid inside a wobbly tissue outline; tumor nests, an
immune margin around them, lymphoid aggregates, vessels and stroma decide each
cell's type, so clusters, regions and niches have a real spatial structure to
find. Every cell has a polygon boundary and a nucleus; the morphology image is
drawn from those same polygons (DAPI nuclei, a boundary stain, interior RNA), so
cells and image line up at every zoom. Counts are Poisson over a gene panel with
marker genes per type. Everything is seeded: the same call gives the same data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

__all__ = ["CELL_TYPES", "PIXEL_SIZE_UM", "Tissue", "make_tissue"]

PIXEL_SIZE_UM = 0.2125
"""Xenium's morphology image pixel size, in micrometres."""

CELL_TYPES = ("Tumor", "Fibroblast", "T cell", "B cell", "Macrophage", "Endothelial", "Epithelial")

MARKERS: dict[str, tuple[str, ...]] = {
    "Tumor": ("EPCAM", "KRT8", "KRT18", "ERBB2", "MKI67", "TOP2A", "CEACAM6", "MUC1", "FOXA1", "ESR1"),
    "Fibroblast": ("COL1A1", "COL1A2", "COL3A1", "DCN", "LUM", "PDGFRA", "FAP", "POSTN", "SFRP4", "MMP2"),
    "T cell": ("CD3E", "CD3D", "CD2", "CD8A", "CD4", "TRAC", "IL7R", "GZMK", "CCL5", "CXCR4"),
    "B cell": ("MS4A1", "CD79A", "CD79B", "CD19", "PAX5", "BANK1", "CR2", "FCER2", "IGHM", "TCL1A"),
    "Macrophage": ("CD68", "CD163", "LYZ", "C1QA", "C1QB", "APOE", "MRC1", "FCGR3A", "ITGAX", "CSF1R"),
    "Endothelial": ("PECAM1", "VWF", "CDH5", "KDR", "CLDN5", "EMCN", "PLVAP", "ACKR1", "RAMP2", "AQP1"),
    "Epithelial": ("KRT5", "KRT14", "KRT17", "ACTA2", "MYH11", "OXTR", "TP63", "SFRP1", "KIT", "ELF5"),
}
HYPOXIA_GENES = ("VEGFA", "CA9", "SLC2A1", "LDHA", "BNIP3")
"""Rise towards the centre of each tumor nest: a continuous gene to color by."""


@dataclass
class Tissue:
    """The synthetic run: cells (table fields), polygons and the morphology image."""

    cell_id: np.ndarray
    """Instance ids (int64, from 1), as the shapes element indexes them."""
    x_um: np.ndarray
    y_um: np.ndarray
    cell_type: np.ndarray
    """Index into CELL_TYPES per cell: the truth the demo's analysis recovers."""
    nest_depth: np.ndarray
    """Signed distance (µm) into the nearest tumor nest: > 0 inside."""
    polygons: np.ndarray
    """(n_cells, n_vertices + 1, 2) closed rings in micrometres."""
    nucleus_radius_um: np.ndarray
    counts: sparse.csr_matrix
    genes: list[str]
    image: np.ndarray
    """(3, side, side) uint8: DAPI, boundary stain, interior RNA."""


def make_tissue(n_cells: int = 100_000, side: int = 8192, seed: int = 20261020) -> Tissue:
    """Draw a tissue of about ``n_cells`` cells on a ``side`` x ``side`` pixel image."""
    rng = np.random.default_rng(seed)
    x, y = _cell_centres(rng, n_cells, side)
    spacing = side / np.sqrt(n_cells / _tissue_fraction())
    nests = _nests(rng, side)
    depth = _nest_depth(x, y, nests)
    kinds = _cell_types(rng, x, y, depth, side, spacing)
    polygons = _polygons(rng, x, y, spacing)
    nucleus = spacing * rng.uniform(0.16, 0.24, len(x))
    counts, genes = _counts(rng, kinds, depth, spacing)
    image = _image(rng, x, y, polygons, nucleus, np.asarray(counts.sum(axis=1)).ravel(), side)
    scale = PIXEL_SIZE_UM
    return Tissue(
        cell_id=np.arange(1, len(x) + 1, dtype=np.int64),
        x_um=x * scale,
        y_um=y * scale,
        cell_type=kinds,
        nest_depth=depth * scale,
        polygons=polygons * scale,
        nucleus_radius_um=nucleus * scale,
        counts=counts,
        genes=genes,
        image=image,
    )


# ------------------------------------------------------------------- layout


def _tissue_fraction() -> float:
    return 0.72


def _inside_tissue(x: np.ndarray, y: np.ndarray, side: int) -> np.ndarray:
    """A wobbly ellipse: the outline of a section, not a square."""
    cx, cy = side / 2, side / 2
    angle = np.arctan2(y - cy, x - cx)
    radius = side * (0.47 + 0.025 * np.sin(3 * angle) + 0.015 * np.cos(7 * angle + 1.0))
    inside: np.ndarray = np.hypot(x - cx, (y - cy) / 0.93) < radius
    return inside


def _cell_centres(rng: np.random.Generator, n_cells: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    """Jittered hexagonal grid points inside the tissue, exactly ``n_cells`` of them."""
    spacing = side / np.sqrt(n_cells / _tissue_fraction()) * 0.97
    rows = np.arange(spacing / 2, side - spacing / 2, spacing * 0.866)
    cols = np.arange(spacing / 2, side - spacing / 2, spacing)
    gx, gy = np.meshgrid(cols, rows)
    gx = gx + (np.arange(len(rows))[:, None] % 2) * spacing / 2
    x, y = gx.ravel(), gy.ravel()
    x = x + rng.uniform(-0.18, 0.18, x.size) * spacing
    y = y + rng.uniform(-0.18, 0.18, y.size) * spacing
    keep = _inside_tissue(x, y, side) & (x > spacing) & (x < side - spacing) & (y > spacing) & (y < side - spacing)
    x, y = x[keep], y[keep]
    if x.size > n_cells:
        chosen = np.sort(rng.choice(x.size, n_cells, replace=False))
        x, y = x[chosen], y[chosen]
    return x, y


def _nests(rng: np.random.Generator, side: int) -> np.ndarray:
    """(n, 3): centre x, centre y and radius (pixels) of each tumor nest."""
    count = 14
    centres = rng.uniform(0.2, 0.8, (count, 2)) * side
    radii = rng.uniform(0.045, 0.1, count) * side
    return np.column_stack([centres, radii])


def _nest_depth(x: np.ndarray, y: np.ndarray, nests: np.ndarray) -> np.ndarray:
    """Signed distance (pixels) into the nearest nest, its edge made irregular."""
    best = np.full(x.shape, -np.inf)
    for cx, cy, radius in nests:
        angle = np.arctan2(y - cy, x - cx)
        wobble = 1 + 0.12 * np.sin(5 * angle + cx) + 0.07 * np.cos(9 * angle + cy)
        best = np.maximum(best, radius * wobble - np.hypot(x - cx, y - cy))
    return best


def _cell_types(
    rng: np.random.Generator, x: np.ndarray, y: np.ndarray, depth: np.ndarray, side: int, spacing: float
) -> np.ndarray:
    """A type per cell, drawn from probabilities that follow the tissue's anatomy."""
    n = x.size
    weights = np.zeros((n, len(CELL_TYPES)))
    margin = np.exp(-((depth + 6 * spacing) ** 2) / (2 * (5 * spacing) ** 2))
    inside = 1 / (1 + np.exp(-depth / spacing))
    weights[:, 0] = 6 * inside
    weights[:, 1] = 1.2 * (1 - inside)
    weights[:, 2] = 2.5 * margin + 0.08
    weights[:, 4] = 1.5 * margin + 0.15 * inside + 0.05
    aggregates = rng.uniform(0.15, 0.85, (5, 2)) * side
    follicle = np.zeros(n)
    for ax, ay in aggregates:
        follicle = np.maximum(follicle, np.exp(-(np.hypot(x - ax, y - ay) ** 2) / (2 * (9 * spacing) ** 2)))
    weights[:, 3] = 6 * follicle * (1 - inside)
    weights[:, 2] += 2 * follicle * (1 - inside)
    vessel = np.zeros(n)
    for k in range(6):
        phase, freq, offset = k * 1.7, 2 + k % 3, (0.15 + 0.13 * k) * side
        line = offset + 0.05 * side * np.sin(freq * np.pi * x / side + phase)
        vessel = np.maximum(vessel, np.exp(-((y - line) ** 2) / (2 * (1.5 * spacing) ** 2)))
    weights[:, 5] = 4 * vessel * (1 - inside) + 0.03
    duct = np.exp(-(np.hypot(x - 0.22 * side, y - 0.78 * side) ** 2) / (2 * (0.06 * side) ** 2))
    weights[:, 6] = 7 * duct * (1 - inside)
    weights /= weights.sum(axis=1, keepdims=True)
    cumulative = weights.cumsum(axis=1)
    draws = rng.uniform(0, 1, (n, 1))
    kinds: np.ndarray = np.minimum((draws > cumulative).sum(axis=1), len(CELL_TYPES) - 1).astype(np.int8)
    return kinds


def _polygons(rng: np.random.Generator, x: np.ndarray, y: np.ndarray, spacing: float) -> np.ndarray:
    """An irregular octagon around each centre, closed (first vertex repeated)."""
    vertices = 8
    angles = np.linspace(0, 2 * np.pi, vertices, endpoint=False)[None, :] + rng.uniform(0, np.pi / 4, (x.size, 1))
    radii = spacing * 0.5 * rng.uniform(0.78, 0.98, (x.size, vertices))
    ring = np.empty((x.size, vertices + 1, 2))
    ring[:, :vertices, 0] = x[:, None] + radii * np.cos(angles)
    ring[:, :vertices, 1] = y[:, None] + radii * np.sin(angles)
    ring[:, vertices] = ring[:, 0]
    return ring


# ------------------------------------------------------------------ counts


def _gene_panel() -> list[str]:
    named = [gene for markers in MARKERS.values() for gene in markers] + list(HYPOXIA_GENES)
    filler = [f"PANEL{i:03d}" for i in range(1, 300 - len(named) + 1)]
    return named + filler


def _counts(
    rng: np.random.Generator, kinds: np.ndarray, depth: np.ndarray, spacing: float
) -> tuple[sparse.csr_matrix, list[str]]:
    """Poisson counts: a low background on every gene, markers high in their type."""
    genes = _gene_panel()
    n, g = kinds.size, len(genes)
    background = rng.poisson(0.06 * n * g)
    rows: list[np.ndarray] = [rng.integers(0, n, background)]
    cols: list[np.ndarray] = [rng.integers(0, g, background)]
    values: list[np.ndarray] = [np.ones(background)]
    per_type = len(next(iter(MARKERS.values())))
    for t in range(len(CELL_TYPES)):
        cells = np.flatnonzero(kinds == t)
        rate = rng.uniform(1.5, 6.0, per_type)
        counts = rng.poisson(rate[None, :], (cells.size, per_type))
        r, c = np.nonzero(counts)
        rows.append(cells[r])
        cols.append(t * per_type + c)
        values.append(counts[r, c])
    hypoxic = np.flatnonzero(depth > 4 * spacing)
    first = len(CELL_TYPES) * per_type
    level = np.clip(depth[hypoxic] / (25 * spacing), 0, 1)
    hcounts = rng.poisson(4 * level[:, None], (hypoxic.size, len(HYPOXIA_GENES)))
    r, c = np.nonzero(hcounts)
    rows.append(hypoxic[r])
    cols.append(first + c)
    values.append(hcounts[r, c])
    matrix = sparse.coo_matrix(
        (np.concatenate(values).astype(np.float32), (np.concatenate(rows), np.concatenate(cols))), shape=(n, g)
    ).tocsr()
    matrix.sum_duplicates()
    return matrix, genes


# ------------------------------------------------------------------- image


def _disc(radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets (dy, dx) of a disc and a soft falloff weight for each."""
    r = int(np.ceil(radius))
    dy, dx = np.mgrid[-r : r + 1, -r : r + 1]
    distance = np.hypot(dy, dx)
    keep = distance <= radius
    weight = np.clip(1.15 - (distance[keep] / radius) ** 2, 0, 1)
    return dy[keep], dx[keep], weight


def _stamp(plane: np.ndarray, x: np.ndarray, y: np.ndarray, radius: float, level: np.ndarray) -> None:
    """Draw a soft disc of ``radius`` and brightness ``level`` at each (x, y); the brighter wins."""
    dy, dx, weight = _disc(radius)
    side = plane.shape[0]
    for start in range(0, x.size, 20_000):
        xs = np.round(x[start : start + 20_000]).astype(np.int64)
        ys = np.round(y[start : start + 20_000]).astype(np.int64)
        px = np.clip(xs[:, None] + dx[None, :], 0, side - 1).ravel()
        py = np.clip(ys[:, None] + dy[None, :], 0, side - 1).ravel()
        value = (level[start : start + 20_000, None] * weight[None, :]).ravel().astype(np.uint8)
        flat = py * side + px
        view = plane.reshape(-1)
        view[flat] = np.maximum(view[flat], value)


def _outline(plane: np.ndarray, polygons: np.ndarray, level: np.ndarray) -> None:
    """Trace each polygon's edges into ``plane`` (a membrane stain)."""
    steps = np.linspace(0, 1, 7, endpoint=False)
    start, end = polygons[:, :-1, :], polygons[:, 1:, :]
    side = plane.shape[0]
    for first in range(0, polygons.shape[0], 20_000):
        a, b = start[first : first + 20_000], end[first : first + 20_000]
        points = a[:, :, None, :] + (b - a)[:, :, None, :] * steps[None, None, :, None]
        px = np.clip(np.round(points[..., 0]).astype(np.int64), 0, side - 1).reshape(len(a), -1)
        py = np.clip(np.round(points[..., 1]).astype(np.int64), 0, side - 1).reshape(len(a), -1)
        value = np.broadcast_to(level[first : first + 20_000, None], px.shape).astype(np.uint8)
        plane.reshape(-1)[(py * side + px).ravel()] = value.ravel()


def _image(
    rng: np.random.Generator,
    x: np.ndarray,
    y: np.ndarray,
    polygons: np.ndarray,
    nucleus: np.ndarray,
    totals: np.ndarray,
    side: int,
) -> np.ndarray:
    """DAPI (nuclei), boundary stain (cell outlines) and interior RNA (cell bodies), uint8."""
    image = np.zeros((3, side, side), dtype=np.uint8)
    dapi = rng.uniform(150, 250, x.size)
    for radius in np.unique(np.round(nucleus).astype(int)):
        chosen = np.round(nucleus).astype(int) == radius
        _stamp(image[0], x[chosen], y[chosen], float(radius), dapi[chosen])
    _outline(image[1], polygons, rng.uniform(120, 220, x.size))
    body = 40 + 140 * np.clip(totals / max(float(np.percentile(totals, 99)), 1.0), 0, 1)
    spacing = float(np.median(np.hypot(*(polygons[:, 0, :] - polygons[:, 4, :]).T)))
    _stamp(image[2], x, y, 0.38 * spacing, body)
    return image


def cell_frame(tissue: Tissue) -> pd.DataFrame:
    """obs of the base table: what the instrument reports per cell (no analysis yet)."""
    totals = np.asarray(tissue.counts.sum(axis=1)).ravel()
    ring = tissue.polygons
    area = 0.5 * np.abs(
        np.sum(ring[:, :-1, 0] * ring[:, 1:, 1] - ring[:, 1:, 0] * ring[:, :-1, 1], axis=1),
    )
    return pd.DataFrame(
        {
            "cell_id": tissue.cell_id,
            "region": pd.Categorical(["cell_boundaries"] * tissue.cell_id.size),
            "transcript_counts": totals.astype(np.int32),
            "cell_area": area.round(2),
            "nucleus_area": (np.pi * tissue.nucleus_radius_um**2).round(2),
        },
        index=pd.Index([f"cell-{i:06d}" for i in tissue.cell_id], name="cell"),
    )
