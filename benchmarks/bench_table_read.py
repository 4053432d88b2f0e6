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
    alternate,
    commit_versions,
    comparison,
    emit,
    parse_args,
    quiet_warnings,
    workdir,
)

GOAL = 1.1


def build(root: Path, n_obs: int, n_vars: int) -> tuple[Path, Path]:
    """Write the base and three versions; flatten the top. Returns (top, flattened)."""
    import anndata
    import numpy as np
    import pandas as pd
    import spatialdata

    from sds_jupyter.stack.flatten import flatten

    rng = np.random.default_rng(0)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(12)], n_obs)),
            "sample": pd.Categorical(rng.choice(["s1", "s2", "s3"], n_obs)),
            "n_counts": rng.poisson(200, n_obs).astype(np.float64),
            "area": rng.integers(10, 500, n_obs),
        },
        index=[f"cell-{i}" for i in range(n_obs)],
    )
    var = pd.DataFrame(index=[f"gene-{j}" for j in range(n_vars)])
    x = rng.standard_normal((n_obs, n_vars), dtype=np.float32)
    adata = anndata.AnnData(X=x, obs=obs, var=var)

    datasets = root / "datasets"
    base_folder = datasets / "base-0000"
    base_folder.mkdir(parents=True)
    base = base_folder / "table.sdata.zarr"
    spatialdata.SpatialData(tables={"table": adata}).write(base)

    steps = [
        ("leiden", lambda w: w.set_obs("table", "leiden", pd.Categorical(rng.integers(0, 20, n_obs).astype(str)))),
        ("umap", lambda w: w.set_obsm("table", "X_umap", rng.standard_normal((n_obs, 2)).astype(np.float32))),
        ("score", lambda w: w.set_obs("table", "score", rng.random(n_obs))),
    ]
    top = commit_versions(base, datasets, steps)
    flat = flatten(top, root / "flat.zarr", progress=False)
    return top, flat


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    quiet_warnings()
    import anndata
    import zarr

    from sds_jupyter.stack import open_stack

    n_obs = 20_000 if args.quick else 200_000
    n_vars = 50
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
