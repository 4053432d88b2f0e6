"""Reading an AnnData table through a stack vs from a flattened copy of it.

Data: a 200,000 x 50 AnnData (dense float32 X; categorical and numeric obs
columns) written by spatialdata as the base store's ``tables/table``, and three
versions on it saved with VersionWriter (a categorical obs column, an embedding
in obsm, a numeric obs column). The stack is then flattened once.

A: ``anndata.read_zarr(zarr.open_group(open_stack(top), mode="r")["tables/table"])``
B: the same read of the flattened copy, opened as a read-only LocalStore.

Goal: A / B <= 1.1.
"""

from __future__ import annotations

import os
from pathlib import Path

from _common import (
    QUICK_TABLE_SIZE,
    TABLE_SIZE,
    alternate,
    begin,
    commit_versions,
    comparison,
    emit,
    table_base,
    workdir,
)

GOAL = 1.1


def build(root: Path, n_obs: int, n_vars: int) -> tuple[Path, Path]:
    """Write the base and three versions; flatten the top. Returns (top, flattened)."""
    import numpy as np
    import pandas as pd

    from sds_jupyter.stack.flatcopy import flatten

    datasets = root / "datasets"
    base, rng = table_base(datasets, n_obs, n_vars)

    steps = [
        ("leiden", lambda w: w.set_obs("table", "leiden", pd.Categorical(rng.integers(0, 20, n_obs).astype(str)))),
        ("umap", lambda w: w.set_obsm("table", "X_umap", rng.standard_normal((n_obs, 2)).astype(np.float32))),
        ("score", lambda w: w.set_obs("table", "score", rng.random(n_obs))),
    ]
    top = commit_versions(base, datasets, steps)
    flat = flatten(top, root / "flat.zarr", progress=False)
    return top, flat


def main() -> None:
    args = begin(__doc__)
    import anndata
    import zarr

    from sds_jupyter.stack import open_stack

    n_obs, n_vars = QUICK_TABLE_SIZE if args.quick else TABLE_SIZE
    rounds = args.rounds or (3 if args.quick else 15)
    print(f"bench_table_read: {n_obs:,} x {n_vars} table, 3 versions on a spatialdata store")
    with workdir(args.keep) as root:
        top, flat = build(root, n_obs, n_vars)

        def through_stack() -> anndata.AnnData:
            return anndata.read_zarr(zarr.open_group(open_stack(top), mode="r")["tables/table"])

        def flattened() -> anndata.AnnData:
            store = zarr.storage.LocalStore(os.fspath(flat), read_only=True)
            return anndata.read_zarr(zarr.open_group(store, mode="r")["tables/table"])

        # Both routes must read the same table, or the comparison means nothing.
        a, b = through_stack(), flattened()
        assert a.shape == b.shape == (n_obs, n_vars), (a.shape, b.shape)
        assert list(a.obs.columns) == list(b.obs.columns), (a.obs.columns, b.obs.columns)
        assert "leiden" in a.obs and "score" in a.obs and "X_umap" in a.obsm
        assert (a.X == b.X).all()
        del a, b

        times_a, times_b = alternate(through_stack, flattened, rounds, warmup=1)
        result = comparison(
            "table read",
            "read_zarr through open_stack(top)",
            "read_zarr of flatten(top) (LocalStore)",
            times_a,
            times_b,
            goal=GOAL,
            unit="read",
        )
    emit("bench_table_read", [result], size=f"{n_obs}x{n_vars}")


if __name__ == "__main__":
    main()
