"""Saving one changed obs column as a version vs writing that column alone with anndata.

Data: a 200,000 x 50 AnnData (dense float32 X; categorical and numeric obs
columns) written by spatialdata as the base store's ``tables/table``, with one
version on it. The table is read once; then its numeric obs column ``n_counts``
is changed.

A: ``save_version(top, adata, title=...)``: compares the whole AnnData with the
   version's table (obs, var, X, layers, obsm, obsp, uns: from the fingerprints
   ``open_anndata`` took of what it read, so only a changed element is read back),
   then writes the changed column and the root's consolidated index, and the
   manifest (a new version folder, removed after each run, outside the timing).
B: ``anndata.io.write_elem(group, "n_counts", column)`` into a new local Zarr v3
   group (anndata's defaults: zarr's default chunks and codec).
B2 (for the breakdown, no goal): the same write_elem with the format's layout,
   one chunk with gzip (at the writer's level), as a version must store its arrays.

Then the same with the column set to random float64 values (deflate's slowest case),
the gzip of that column by ISA-L and by zlib (in pieces on threads), side by side, and
(with Icechunk installed) the commit of that column alone (``VersionWriter``) against
Icechunk setting the same values into an array of that shape and committing. Goal 1.5.

Then (issue 42) the random column saved on a table of 20 obs columns 500 versions up (each
version adding an uns entry, so the root's consolidated index holds them all), against the same
write_elem: as saved after an open (which keeps the root's index decoded for it, as each save
does for the next), with that index forgotten before each save and no record of it on disk, so that
the save decodes it itself, and with it forgotten in memory but kept in this user's record on disk (what
a new process's save finds when an earlier process decoded that root). Every timed run keeps
the garbage collector on, as users run.

Goal: A / B <= 1.5, for every column. The run also checks that the version wrote only the column's
objects plus the metadata documents the format requires (here the root's index).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from _common import (
    QUICK_TABLE_SIZE,
    TABLE_SIZE,
    alternate,
    begin,
    commit_versions,
    comparison,
    emit,
    fmt_time,
    median,
    settle,
    table_base,
    workdir,
)

GOAL = 1.5
#: Issue 42: the save measured 500 versions up as well.
DEEP = 500


def build(root: Path, n_obs: int, n_vars: int) -> Path:
    """Write the base and one version on it; return the version's folder."""
    import pandas as pd

    datasets = root / "datasets"
    base, rng = table_base(datasets, n_obs, n_vars)
    leiden = pd.Categorical(rng.integers(0, 20, n_obs).astype(str))
    return commit_versions(base, datasets, [("leiden", lambda w: w.set_obs("table", "leiden", leiden))])


def deep_save(
    root: Path, rng: Any, n_obs: int, quick: bool, rounds: int, write_column: Any, fresh_group: Any
) -> list[dict[str, Any]]:
    """Issue 42: the same save on a table of 20 obs columns, 500 versions up (each adding an uns entry,
    so the root's consolidated index carries them all), against anndata's write_elem of the column."""
    import numpy as np
    import pandas as pd

    from sds_jupyter import Stack, VersionWriter, open_anndata, save_version

    depth = 50 if quick else DEEP
    base = root / "datasets" / "base-0000" / "table.sdata.zarr"
    deep = root / "datasets"  # beside the base: parents are found in the datasets folder
    writer = VersionWriter(Stack.resolve(base))
    for number in range(16):  # 4 obs columns in the base: 20 with these
        writer.set_obs("table", f"extra_{number}", pd.Series(rng.standard_normal(n_obs)))
    top = writer.commit(deep / "deep-0001", title="16 columns", created_by="bench")
    for number in range(2, depth + 1):
        writer = VersionWriter(Stack.resolve(top))
        writer.set_uns("table", f"note_{number}", np.int64(number))
        top = writer.commit(deep / f"deep-{number:04d}", title=f"note {number}", created_by="bench")
    settle()
    adata = open_anndata(top)
    assert adata.obs.shape[1] == 20 and Stack.resolve(top).depth == depth
    adata.obs["n_counts"] = rng.random(n_obs)
    saved: list[Path] = []

    def save() -> None:
        saved.append(save_version(top, adata, title="random n_counts", created_by="bench"))

    def remove_saved() -> None:
        while saved:
            shutil.rmtree(saved.pop())

    column = adata.obs["n_counts"].to_numpy()
    ta, tb = alternate(
        save,
        lambda: write_column(column),
        rounds,
        warmup=1,
        after_a=remove_saved,
        before_b=fresh_group,
        gc_during=True,
    )
    again = comparison(
        f"save one random column, 20 columns, depth {depth}",
        f"save_version at depth {depth}",
        "anndata write_elem of the column",
        ta,
        tb,
        goal=GOAL,
        unit="save",
    )
    # The saves above find the parent's root index decoded (kept by the open, and by each save
    # for the next): here it is forgotten before each save, which decodes it itself.
    from sds_jupyter.stack.caches import default_caches
    from sds_jupyter.stack.rootindex import ROOT_INDEX_CACHE_BYTES

    kept = default_caches().derived("root-indexes", ROOT_INDEX_CACHE_BYTES)
    # Decoded by the save itself: no record of it on disk either (as the first process ever to read it).
    records = os.environ.get("SDS_STACK_CACHE")
    os.environ["SDS_STACK_CACHE"] = "off"
    try:
        ta, tb = alternate(
            save,
            lambda: write_column(column),
            rounds,
            warmup=1,
            before_a=kept.clear,
            after_a=remove_saved,
            before_b=fresh_group,
            gc_during=True,
        )
    finally:
        os.environ["SDS_STACK_CACHE"] = records or str(root / "records")
    first = comparison(
        "  the same, the root index decoded by the save",
        f"save_version at depth {depth}, root index not kept",
        "anndata write_elem of the column",
        ta,
        tb,
        goal=GOAL,
        unit="save",
    )
    # Not kept in this process, but in this user's record on disk (as a new process's save finds it,
    # when an earlier process decoded that root): the record is written by the warm-up's decode.
    ta, tb = alternate(
        save,
        lambda: write_column(column),
        rounds,
        warmup=1,
        before_a=kept.clear,
        after_a=remove_saved,
        before_b=fresh_group,
        gc_during=True,
    )
    from_disk = comparison(
        "  the same, the root index from this user's record on disk",
        f"save_version at depth {depth}, root index not kept in memory",
        "anndata write_elem of the column",
        ta,
        tb,
        goal=GOAL,
        unit="save",
    )
    return [again, first, from_disk]


def main() -> None:
    args = begin(__doc__)
    import anndata
    import numpy as np
    import zarr

    from sds_jupyter import open_anndata, save_version
    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.manifest import read_manifest
    from sds_jupyter.stack.write.encode import GZIP_LEVEL
    from sds_jupyter.stack.write.save import plan_save

    n_obs, n_vars = QUICK_TABLE_SIZE if args.quick else TABLE_SIZE
    rounds = args.rounds or (3 if args.quick else 11)
    print(f"bench_save: {n_obs:,} x {n_vars} table, one changed obs column saved as a version")
    with workdir(args.keep) as root:
        # This run's records on disk (resolved stacks, decoded roots) go with its data, not to the user's folder.
        os.environ["SDS_STACK_CACHE"] = str(root / "records")
        top = build(root, n_obs, n_vars)
        adata = open_anndata(top)
        adata.obs["n_counts"] = adata.obs["n_counts"] + 1.0
        column = adata.obs["n_counts"].to_numpy()
        saved: list[Path] = []
        scratch = root / "scratch"

        def save() -> None:
            saved.append(save_version(top, adata, title="n_counts + 1", created_by="bench"))

        def remove_saved() -> None:
            while saved:
                shutil.rmtree(saved.pop())

        def fresh_group() -> None:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()

        def write_column(values: Any = None) -> None:
            group = zarr.open_group(scratch / "col.zarr", mode="w", zarr_format=3)
            anndata.io.write_elem(group, "n_counts", column if values is None else values)

        def write_column_gzip() -> None:
            group = zarr.open_group(scratch / "col.zarr", mode="w", zarr_format=3)
            anndata.io.write_elem(
                group,
                "n_counts",
                column,
                dataset_kwargs={"chunks": (len(column),), "compressors": [zarr.codecs.GzipCodec(level=GZIP_LEVEL)]},
            )

        # What a save writes: the column's objects and the root's consolidated index (the
        # column exists, so obs's column-order, the other index, is unchanged and not rewritten).
        save()
        manifest = read_manifest(saved[0] / "layer.json")
        keys = sorted(entry.key for entry in manifest.files)
        expected = {"zarr.json", "tables/table/obs/n_counts/zarr.json", "tables/table/obs/n_counts/c/0"}
        assert set(keys) == expected, keys
        assert [c["op"] for c in manifest.changes] == ["set-obs"], manifest.changes
        print(f"  the version holds {len(keys)} objects: {', '.join(keys)}")
        remove_saved()

        times_a, times_b = alternate(
            save, write_column, rounds, warmup=1, after_a=remove_saved, before_b=fresh_group, gc_during=True
        )
        result = comparison(
            "save one changed obs column",
            "save_version (diff + write + commit)",
            "anndata write_elem of the column",
            times_a,
            times_b,
            goal=GOAL,
            unit="save",
        )
        # The same with random float64 values (what deflate cannot shrink: its slowest case).
        rng = np.random.default_rng(5)
        adata.obs["n_counts"] = rng.random(n_obs)
        column = adata.obs["n_counts"].to_numpy()
        times_a, times_b = alternate(
            save, write_column, rounds, warmup=1, after_a=remove_saved, before_b=fresh_group, gc_during=True
        )
        random_result = comparison(
            "save one random float64 column",
            "save_version (diff + write + commit)",
            "anndata write_elem of the column",
            times_a,
            times_b,
            goal=GOAL,
            unit="save",
        )
        from sds_jupyter.stack.storage.gzipped import gzip_chunk

        times_fast, times_zlib = alternate(
            lambda: gzip_chunk(column.data, GZIP_LEVEL),
            lambda: gzip_chunk(column.data, GZIP_LEVEL, fast=False),
            rounds,
        )
        gzip_result = comparison(
            "  gzip of that column",
            "gzip_chunk (ISA-L when installed)",
            "gzip_chunk with zlib (pieces on threads)",
            times_fast,
            times_zlib,
            goal=None,
            unit="chunk",
        )
        extra = [gzip_result]
        import _icechunk

        if _icechunk.available():
            # The commit alone (no diff), as bench_commit times it, against Icechunk committing
            # the same values into an array of the same shape (zarr's default chunks and codec).
            from sds_jupyter import VersionWriter

            repo = _icechunk.repository(root / "icechunk")
            session = repo.writable_session("main")
            zarr.create_array(session.store, name="tables/table/obs/n_counts", shape=column.shape, dtype=column.dtype)
            session.commit("the array")
            stack = Stack.resolve(top)
            dest = root / "datasets" / "commit-bench"

            def commit_column() -> None:
                writer = VersionWriter(stack)
                writer.set_obs("table", "n_counts", column)
                writer.commit(dest, title="random n_counts", created_by="bench")

            def ice_commit() -> None:
                ice = repo.writable_session("main")
                zarr.open_group(ice.store, mode="r+")["tables/table/obs/n_counts"][:] = column
                ice.commit("random n_counts")

            ta, tb = alternate(
                commit_column,
                ice_commit,
                rounds,
                after_a=lambda: shutil.rmtree(dest, ignore_errors=True),
                gc_during=True,
            )
            extra.append(
                comparison(
                    "commit a random float64 column vs Icechunk",
                    "VersionWriter set_obs + commit",
                    "Icechunk: set the array, commit",
                    ta,
                    tb,
                    goal=GOAL,
                    unit="commit",
                )
            )
        extra += deep_save(root, rng, n_obs, args.quick, rounds, write_column, fresh_group)
        # Where A's time goes, and the column alone in the format's layout; and the diff of
        # an AnnData that open_anndata did not read (a copy): every element read back.
        stack = Stack.resolve(top)
        copied = adata.copy()
        diffs, copy_diffs = [], []
        for _ in range(max(3, rounds // 2)):
            start = time.perf_counter()
            plan_save(stack, adata)
            diffs.append(time.perf_counter() - start)
            start = time.perf_counter()
            plan_save(stack, copied)
            copy_diffs.append(time.perf_counter() - start)
        _, times_gzip = alternate(
            write_column_gzip, write_column_gzip, max(3, rounds // 2), before_a=fresh_group, before_b=fresh_group
        )
        print(f"  of which the diff (from the fingerprints taken at open): median {fmt_time(median(diffs))}")
        print(f"  the diff of a copy (the whole table read back and compared): median {fmt_time(median(copy_diffs))}")
        print(
            f"  write_elem of the column in one gzip chunk (the format's layout): median {fmt_time(median(times_gzip))}"
        )
    emit(
        "bench_save",
        [result, random_result, *extra],
        size=f"{n_obs}x{n_vars}",
        diff_s=median(diffs),
        copy_diff_s=median(copy_diffs),
        gzip_column_s=median(times_gzip),
        objects=keys,
    )
    del np


if __name__ == "__main__":
    main()
