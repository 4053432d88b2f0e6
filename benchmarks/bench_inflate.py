"""What checking every chunk's inflation costs a read (issue 38): a stack's store against zarr's own.

Data: a zarr v3 store written by zarr, one gzip chunk per array as a version stores them: a
float64 column of random values (incompressible: the check inflates all of it), a column of
a few repeated values (compresses ~100 times), and a text column (vlen-utf8), each of N cells.

A: each array read whole through ``StackStore`` (a version above the store as its base): every
   chunk is inflated once by the check (counted, thrown away) and once by zarr.
B: the same arrays read through zarr's ``LocalStore`` on the same folder (no check).

Goal: A / B <= 1.5 (the check's inflate runs through ISA-L, several times quicker than the zlib
zarr's gzip decodes with).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from _common import alternate, begin, comparison, emit, workdir

GOAL = 1.5


def build(root: Path, n_cells: int) -> tuple[Path, Path]:
    """The base store (written by zarr) and a version folder above it: (base folder, version folder)."""
    import numpy as np
    import zarr
    from zarr.codecs import GzipCodec

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from kit.stackkit import write_version  # type: ignore[import-not-found]

    base = root / "base-1111" / "store.zarr"
    group = zarr.open_group(base, mode="w", zarr_format=3)
    rng = np.random.default_rng(38)
    columns = {
        "random": rng.standard_normal(n_cells),
        "repeated": rng.integers(0, 8, n_cells).astype(np.float64),
        "text": np.array([f"cell-{i % 5000}" for i in range(n_cells)]),
    }
    for name, values in columns.items():
        array = group.create_array(
            name, shape=values.shape, chunks=values.shape, dtype=values.dtype, compressors=[GzipCodec(level=1)]
        )
        array[:] = values
    write_version(root, "top-2222", "cirro:::dataset:base-1111/store.zarr")
    return base, root / "top-2222"


def main() -> None:
    args = begin(__doc__)
    import numpy as np
    import zarr

    from sds_jupyter.stack import Stack, StackStore

    n_cells = 200_000 if args.quick else 2_000_000
    rounds = args.rounds or (3 if args.quick else 11)
    print(f"bench_inflate: 3 one-chunk gzip columns of {n_cells:,} cells (float64 random, float64 repeated, text)")
    with workdir(args.keep) as root:
        base, top = build(root, n_cells)
        stack = Stack.resolve(top)

        def read(store: Any) -> list[Any]:
            group = zarr.open_group(store, mode="r")
            return [np.asarray(group[name][:]) for name in ("random", "repeated", "text")]  # type: ignore[index]

        def checked() -> list[Any]:
            return read(StackStore(stack))

        def plain() -> list[Any]:
            return read(zarr.storage.LocalStore(os.fspath(base), read_only=True))

        for a, b in zip(checked(), plain(), strict=True):  # the same values, or the comparison means nothing
            assert np.array_equal(a, b)
        times_a, times_b = alternate(checked, plain, rounds, warmup=1)
        result = comparison(
            "chunk inflation check",
            "three columns through StackStore (checked)",
            "the same through zarr's LocalStore",
            times_a,
            times_b,
            goal=GOAL,
            unit="read",
        )
    emit("bench_inflate", [result], size=f"{n_cells} cells")


if __name__ == "__main__":
    main()
