"""Points elements for the points tests: written by spatialdata, small index sizes that show every level."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from sds_jupyter.studio.pointindex import IndexSizes

#: Small sizes: every level of an index of a few thousand points, and the sort's splits, are used.
SMALL = IndexSizes(tile_points=200, full_tile_points=300, bucket_points=1_000)


def write_points(path: Path, n: int, seed: int, genes: int = 5, part_rows: int | None = None) -> Path:
    """``n`` points of ``genes`` genes, written by spatialdata as points element ``transcripts``.

    In parts of ``part_rows`` rows (dask partitions, as a Xenium conversion writes them), else two parts.
    """
    import dask.dataframe as dd
    import spatialdata
    from spatialdata.models import PointsModel

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.uniform(0, 100, n).astype(np.float32),
            "y": rng.uniform(0, 100, n).astype(np.float32),
            "gene": pd.Categorical.from_codes(rng.integers(0, genes, n), categories=[f"G{i}" for i in range(genes)]),
        }
    )
    parts = 2 if part_rows is None else n // part_rows
    points = PointsModel.parse(
        dd.from_pandas(frame, npartitions=parts), coordinates={"x": "x", "y": "y"}, feature_key="gene"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(points={"transcripts": points}).write(path, overwrite=True)
    return path
