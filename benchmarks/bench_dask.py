"""A Dask mean of X through a 500-deep stack vs the same through plain zarr.

Data: see ``_deepstack.py`` (an AnnData table, 4,000 x 64 float32 X in chunks of
500 rows, under 500 versions).

A: ``open_anndata(stack, lazy=True).X.mean().compute()`` on the resolved stack (as a
   session holds it; opening again is ``bench_open``'s row): a store over it, anndata's
   lazy reader, Dask's default scheduler. Dask names every array by a token of its
   store; the store gives ``__dask_tokenize__`` (its stack's fingerprint) instead of
   being pickled for that, and pickles small where Dask pickles it anyway.
B: ``read_lazy(zarr.open_group(LocalStore(base))["tables/table"]).X.mean().compute()``.

Goal: A / B <= 1.1. Also printed: the store's pickled size and the time to tokenize it.
"""

from __future__ import annotations

import pickle
import time

from _common import alternate, begin, comparison, emit, fmt_time, settle, workdir
from _deepstack import build

GOAL = 1.1


def main() -> None:
    args = begin(__doc__)
    import numpy as np
    import zarr
    from anndata.experimental import read_lazy
    from dask.base import tokenize

    from sds_jupyter import open_anndata
    from sds_jupyter.stack import Stack, open_stack

    depth = 500
    rounds = args.rounds or (5 if args.quick else 15)
    print(f"bench_dask: Dask mean of X through a {depth}-deep stack vs plain zarr")
    with workdir(args.keep) as root:
        stacks = build(root, depth)
        settle()

        stack = Stack.resolve(stacks.deep_top)

        def through_stack() -> float:
            return float(open_anndata(stack, lazy=True).X.mean().compute())

        def plain() -> float:
            group = zarr.open_group(zarr.storage.LocalStore(stacks.base, read_only=True), mode="r")
            return float(read_lazy(group["tables/table"]).X.mean().compute())

        assert np.isclose(through_stack(), plain())
        store = open_stack(stacks.deep_top)
        size = len(pickle.dumps(store))
        start = time.perf_counter()
        tokenize(store)
        took = time.perf_counter() - start
        print(f"  the store pickles to {size} bytes; tokenize(store) takes {fmt_time(took)}")

        ta, tb = alternate(through_stack, plain, rounds)
        results = [
            comparison(
                "dask mean of X, 500-deep",
                f"{depth}-deep stack, lazy",
                "LocalStore, lazy",
                ta,
                tb,
                goal=GOAL,
                unit="mean",
            )
        ]
    emit("bench_dask", results, depth=depth, pickled_bytes=size, tokenize_s=took)


if __name__ == "__main__":
    main()
