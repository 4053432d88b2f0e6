"""The analysis steps of the Xenium-like demo: what each saved version computes.

Each step is real arithmetic on the synthetic run (neighbor graphs from a k-d
tree, marker statistics from the counts, permutation z-scores, k-means niches),
cheap enough to run on 100,000 cells in seconds. They stand in for scanpy and
squidpy so the demo needs neither; the results are laid out as those tools lay
theirs out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.spatial import cKDTree

__all__ = [
    "coarse_clusters",
    "leiden_like_clusters",
    "marker_table",
    "neighbor_index",
    "neighborhood_enrichment",
    "niches",
    "pca_embedding",
    "region_annotation",
]


def leiden_like_clusters(rng: np.random.Generator, truth: np.ndarray, n_clusters: int) -> np.ndarray:
    """Cluster numbers that mostly follow the cell types, with the errors a clustering makes.

    The largest type is split in two along a random half (as Leiden at a fine
    resolution does), and 3 % of the cells land in a neighboring cluster.
    """
    labels = truth.astype(np.int64).copy()
    biggest = int(np.bincount(labels).argmax())
    split = (labels == biggest) & (rng.uniform(0, 1, labels.size) < 0.4)
    labels[split] = labels.max() + 1
    noisy = rng.uniform(0, 1, labels.size) < 0.03
    labels[noisy] = rng.integers(0, labels.max() + 1, int(noisy.sum()))
    sizes = np.bincount(labels, minlength=n_clusters)
    order = np.argsort(-sizes, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[labels]


def pca_embedding(counts: sparse.csr_matrix, n_components: int = 2) -> np.ndarray:
    """The first principal components of log1p counts per 10,000 (cells × ``n_components``, float32).

    What an analysis keeps beside its clusters (``obsm["X_pca"]``) for an embedding view.
    From the genes × genes covariance, so the sparse counts are never made dense.
    """
    totals = np.asarray(counts.sum(axis=1)).ravel()
    scale = sparse.diags(1e4 / np.maximum(totals, 1))
    logged = (scale @ counts).tocsr()
    logged.data = np.log1p(logged.data)
    n = logged.shape[0]
    mean = np.asarray(logged.mean(axis=0)).ravel()
    covariance = np.asarray((logged.T @ logged).todense()) / n - np.outer(mean, mean)
    values, vectors = np.linalg.eigh(covariance)
    top = vectors[:, np.argsort(values)[::-1][:n_components]]
    top *= np.sign(top[np.argmax(np.abs(top), axis=0), range(n_components)])  # a fixed sign per component
    embedding: np.ndarray = (logged @ top - mean @ top).astype(np.float32)
    return embedding


def coarse_clusters(fine: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """A lower resolution: fine clusters that share a majority type merge."""
    majority = np.array(
        [np.bincount(truth[fine == c]).argmax() if (fine == c).any() else 0 for c in range(fine.max() + 1)]
    )
    merged = {t: i for i, t in enumerate(dict.fromkeys(majority.tolist()))}
    coarse: np.ndarray = np.array([merged[t] for t in majority])[fine]
    return coarse


def marker_table(counts: sparse.csr_matrix, genes: list[str], groups: pd.Categorical, top: int = 5) -> pd.DataFrame:
    """Top genes per group by log fold change of mean log1p counts, with a t-like score."""
    logged = counts.copy()
    logged.data = np.log1p(logged.data)
    squared = logged.multiply(logged).tocsr()
    total_sum = np.asarray(logged.sum(axis=0)).ravel()
    total_sq = np.asarray(squared.sum(axis=0)).ravel()
    n = counts.shape[0]
    rows: list[dict[str, Any]] = []
    for code, group in enumerate(groups.categories):
        mask = groups.codes == code
        k = int(mask.sum())
        if k == 0 or k == n:
            continue
        inside = np.asarray(logged[mask].sum(axis=0)).ravel()
        inside_sq = np.asarray(squared[mask].sum(axis=0)).ravel()
        mean_in, mean_out = inside / k, (total_sum - inside) / (n - k)
        var_in = inside_sq / k - mean_in**2
        var_out = (total_sq - inside_sq) / (n - k) - mean_out**2
        score = (mean_in - mean_out) / np.sqrt(var_in / k + var_out / (n - k) + 1e-12)
        lfc = np.log2((np.expm1(mean_in) + 1e-9) / (np.expm1(mean_out) + 1e-9))
        rows.extend(
            {
                "group": str(group),
                "gene": genes[index],
                "score": round(float(score[index]), 3),
                "logfoldchange": round(float(lfc[index]), 3),
                "pct_in_group": round(float((counts[mask][:, index].toarray() > 0).mean()), 3),
            }
            for index in np.argsort(-score)[:top]
        )
    return pd.DataFrame(rows)


def neighbor_index(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """(n, k) indices of each cell's k nearest other cells."""
    tree = cKDTree(np.column_stack([x, y]))
    _, index = tree.query(np.column_stack([x, y]), k=k + 1)
    return np.asarray(index[:, 1:], dtype=np.int64)


def _pair_counts(labels: np.ndarray, neighbors: np.ndarray, n_groups: int) -> np.ndarray:
    source = np.repeat(labels, neighbors.shape[1])
    target = labels[neighbors.ravel()]
    return np.bincount(source * n_groups + target, minlength=n_groups * n_groups).reshape(n_groups, n_groups)


def neighborhood_enrichment(
    rng: np.random.Generator, groups: pd.Categorical, neighbors: np.ndarray, n_perms: int = 50
) -> pd.DataFrame:
    """z-scores of how often each pair of groups are neighbors, against shuffled labels (squidpy's method)."""
    labels = groups.codes.astype(np.int64)
    n_groups = len(groups.categories)
    observed = _pair_counts(labels, neighbors, n_groups)
    shuffled = np.stack([_pair_counts(rng.permutation(labels), neighbors, n_groups) for _ in range(n_perms)])
    z = (observed - shuffled.mean(axis=0)) / (shuffled.std(axis=0) + 1e-9)
    names = [str(c) for c in groups.categories]
    return pd.DataFrame(
        [
            {"source": names[a], "target": names[b], "zscore": round(float(z[a, b]), 3)}
            for a in range(n_groups)
            for b in range(n_groups)
        ]
    )


def region_annotation(depth_um: np.ndarray, is_b_cell: np.ndarray, neighbors: np.ndarray) -> pd.Categorical:
    """Regions a pathologist would draw: tumor core, invasive margin, lymphoid aggregate, stroma.

    Why from depth and B-cell density: a pathologist draws the nest edge and the follicles they see.
    """
    names = ["Tumor core", "Invasive margin", "Lymphoid aggregate", "Stroma"]
    follicle = is_b_cell[neighbors].mean(axis=1) > 0.25
    region = np.where(depth_um > 15, 0, np.where(depth_um > -40, 1, np.where(follicle, 2, 3)))
    return pd.Categorical.from_codes(region, categories=names)


def niches(
    rng: np.random.Generator, groups: pd.Categorical, neighbors: np.ndarray, n_niches: int = 6
) -> tuple[pd.Categorical, pd.DataFrame]:
    """Cellular niches: k-means on each cell's neighborhood composition; and each niche's composition."""
    labels = groups.codes.astype(np.int64)
    n_groups = len(groups.categories)
    composition = np.zeros((labels.size, n_groups))
    for column in range(neighbors.shape[1]):
        composition[np.arange(labels.size), labels[neighbors[:, column]]] += 1
    composition /= neighbors.shape[1]
    centres = composition[rng.choice(labels.size, n_niches, replace=False)]
    for _ in range(15):
        distance = ((composition[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        assigned = distance.argmin(axis=1)
        for niche in range(n_niches):
            members = composition[assigned == niche]
            if len(members):
                centres[niche] = members.mean(axis=0)
    order = np.argsort(-np.bincount(assigned, minlength=n_niches), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(n_niches)
    names = [f"Niche {i + 1}" for i in range(n_niches)]
    niche = pd.Categorical.from_codes(rank[assigned], categories=names)
    table = pd.DataFrame(
        [
            {
                "niche": names[rank[n]],
                "cell_type": str(groups.categories[g]),
                "fraction": round(float(centres[n, g]), 4),
            }
            for n in range(n_niches)
            for g in range(n_groups)
        ]
    )
    return niche, table


def describe(values: Any) -> dict[str, int]:
    """Counts per category: the summary a result records."""
    series = pd.Series(values)
    return {str(k): int(v) for k, v in series.value_counts(sort=False).items()}
