"""How far two clusterings of the same cells agree, as a biologist reads it.

Counting the cells whose label text differs calls a renumbered clustering
entirely changed. What matters is whether the cells stay grouped together:
labels are paired one-to-one so that the pairs share as many cells as possible
(an assignment problem on the contingency table), and the cells off those pairs
are the ones that moved. The adjusted Rand index and the normalised mutual
information (arithmetic mean of the entropies, scikit-learn's defaults) are
computed from the same table, so one pass over the cells serves all three.
A missing value is a group of its own: the cell is still there.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from sds_jupyter.protocol.types import Agreement, Contingency, MatchedPair

__all__ = ["MAX_LABELS", "Crosstab", "agreement", "contingency_payload", "crosstab", "moved_cells", "natural_key"]

#: Columns with more distinct values than this on either side get no agreement (an ID column, say).
MAX_LABELS = 1000


class Crosstab:
    """Cells per (label in A, label in B); labels in first-seen order, None for missing.

    ``codes`` keeps each cell's (row, column) of the table, so the cells of a pair can be found.
    """

    def __init__(
        self,
        labels_a: list[str | None],
        labels_b: list[str | None],
        counts: np.ndarray,
        codes: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.labels_a = labels_a
        self.labels_b = labels_b
        self.counts = counts
        self.codes = codes


def crosstab(texts_a: np.ndarray, texts_b: np.ndarray) -> Crosstab | None:
    """The contingency table of two aligned label arrays; None past :data:`MAX_LABELS`."""
    codes_a, uniques_a = pd.factorize(pd.Series(texts_a, dtype=object), use_na_sentinel=False)
    codes_b, uniques_b = pd.factorize(pd.Series(texts_b, dtype=object), use_na_sentinel=False)
    k, m = len(uniques_a), len(uniques_b)
    if k > MAX_LABELS or m > MAX_LABELS:
        return None
    counts = np.bincount(codes_a.astype(np.int64) * m + codes_b, minlength=k * m).reshape(k, m)
    labels_a, labels_b = [_label(x) for x in uniques_a], [_label(x) for x in uniques_b]
    return Crosstab(labels_a, labels_b, counts, (codes_a, codes_b))


def moved_cells(texts_a: np.ndarray, texts_b: np.ndarray) -> np.ndarray | None:
    """Whether each cell is off the matched label pairs: the cells ``n_moved`` counts (None past MAX_LABELS)."""
    table = crosstab(texts_a, texts_b)
    if table is None or table.codes is None:
        return None
    on_pair = np.zeros(table.counts.shape, dtype=bool)
    for r, c, _ in _matching(table.counts):
        on_pair[r, c] = True
    codes_a, codes_b = table.codes
    moved: np.ndarray = ~on_pair[codes_a, codes_b]
    return moved


def _label(value: object) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _matching(counts: np.ndarray) -> list[tuple[int, int, int]]:
    """(row, column, cells) of the one-to-one pairing sharing the most cells, largest first; empty pairs dropped."""
    rows, cols = linear_sum_assignment(counts, maximize=True)
    pairs = [(int(r), int(c), int(counts[r, c])) for r, c in zip(rows, cols, strict=True) if counts[r, c] > 0]
    return sorted(pairs, key=lambda p: -p[2])


def agreement(table: Crosstab) -> Agreement:
    """ARI, NMI, the matched label pairs and the cells not on them."""
    pairs = _matching(table.counts)
    matched: list[MatchedPair] = [{"a": table.labels_a[r], "b": table.labels_b[c], "count": n} for r, c, n in pairs]
    n_cells = int(table.counts.sum())
    return {
        "ari": adjusted_rand_index(table.counts),
        "nmi": normalized_mutual_info(table.counts),
        "matched": matched,
        "n_moved": n_cells - sum(n for _, _, n in pairs),
    }


def adjusted_rand_index(counts: np.ndarray) -> float:
    """The adjusted Rand index from pair counts (exact integers: products pass 2**63 at 10⁵ cells)."""
    n = int(counts.sum())
    sum_squares = int((counts.astype(np.int64) ** 2).sum())
    rows = counts.sum(axis=1).astype(np.int64)
    cols = counts.sum(axis=0).astype(np.int64)
    # pairs of cells together in both, in A only, in B only, in neither
    together_both = sum_squares - n
    together_a_only = int((rows**2).sum()) - sum_squares
    together_b_only = int((cols**2).sum()) - sum_squares
    apart_both = n * n - together_a_only - together_b_only - sum_squares
    if together_a_only == 0 and together_b_only == 0:
        return 1.0
    numerator = 2 * (together_both * apart_both - together_a_only * together_b_only)
    denominator = (together_both + together_a_only) * (together_a_only + apart_both) + (
        together_both + together_b_only
    ) * (together_b_only + apart_both)
    return numerator / denominator


def _entropy(sizes: np.ndarray) -> float:
    p = sizes[sizes > 0] / sizes.sum()
    return float(-(p * np.log(p)).sum())


def normalized_mutual_info(counts: np.ndarray) -> float:
    """Mutual information over the arithmetic mean of the two entropies (1 for the same partition)."""
    rows, cols = counts.sum(axis=1), counts.sum(axis=0)
    nonzero = counts > 0
    if (nonzero.sum(axis=0) <= 1).all() and (nonzero.sum(axis=1) <= 1).all():
        return 1.0  # the same partition renamed (or unsplit on both sides): exactly 1, not 1 - 2e-16
    n = counts.sum()
    r, c = np.nonzero(counts)
    joint = counts[r, c].astype(float)
    mutual = float((joint / n * (np.log(joint * n) - np.log(rows[r] * cols[c].astype(float)))).sum())
    if mutual <= 0:
        return 0.0
    return min(1.0, mutual / ((_entropy(rows) + _entropy(cols)) / 2))


def contingency_payload(table: Crosstab) -> Contingency:
    """The whole table for the heatmap, matched labels first so the pairs sit on the diagonal.

    The newer side's (``b``'s) matched labels run in their natural order (1, 2, 10, then text), the
    order its legend reads, and ``a``'s follow them through the matching; the unmatched labels of
    each side come after, in natural order too. So a clustering with a few moved cells reads 0, 1,
    2, … down both axes, and a renaming shows which old name each new one took.
    """
    pairs = sorted(_matching(table.counts), key=lambda p: natural_key(table.labels_b[p[1]]))
    order_a = [r for r, _, _ in pairs] + _rest(table.labels_a, {r for r, _, _ in pairs})
    order_b = [c for _, c, _ in pairs] + _rest(table.labels_b, {c for _, c, _ in pairs})
    return {
        "a": [table.labels_a[i] for i in order_a],
        "b": [table.labels_b[j] for j in order_b],
        "counts": table.counts[np.ix_(order_a, order_b)].tolist(),
    }


def natural_key(label: str | None) -> tuple[int, list[tuple[int, int | str]]]:
    """Sorts labels as a person reads them: numbers by value ("2" before "10"), missing last."""
    if label is None:
        return (1, [])
    parts = re.split(r"(\d+)", label)
    return (0, [(0, int(p)) if p.isdigit() else (1, p.casefold()) for p in parts if p])


def _rest(labels: list[str | None], taken: set[int]) -> list[int]:
    """The unmatched labels, in natural order."""
    return sorted((i for i in range(len(labels)) if i not in taken), key=lambda i: natural_key(labels[i]))
