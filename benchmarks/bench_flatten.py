"""Flattening a stack over a folder base vs copying that base with ``cp -r``.

Data: spatialdata's ``blobs`` (1024 x 1024 image and labels, the single-scale
ones in 64 x 64 chunks, with their multiscale pyramids, points, shapes) plus a
200,000 x 50 AnnData table, written by spatialdata as the base folder store, and
two versions on it saved with VersionWriter.

A: ``flatten(top, out)``: the base's data files become symbolic links, metadata
   documents and every version's objects are copied.
B: ``cp -r <base> <out>`` in a subprocess: copies every byte of the base (and
   does not apply the versions, so it is only a yardstick).

No goal; the ratio is reported. More lines time, against the same ``cp -r``:
``flatten(top, link=False)`` (every object copied, as an Analysis Workspace
wants: a store that stands on its own), and ``flatten`` of the base alone (a
stack of no versions).
"""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
from pathlib import Path

from _common import alternate, begin, commit_versions, comparison, emit, workdir


def build(root: Path, n_obs: int, length: int) -> tuple[Path, Path]:
    """Write the base and two versions; return (base store, top version)."""
    import anndata
    import numpy as np
    import pandas as pd
    import spatialdata
    from spatialdata.datasets import blobs

    rng = np.random.default_rng(0)
    sdata = blobs(length=length)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(12)], n_obs)),
            "n_counts": rng.poisson(200, n_obs).astype(np.float64),
        },
        index=[f"cell-{i}" for i in range(n_obs)],
    )
    table = anndata.AnnData(X=rng.standard_normal((n_obs, 50), dtype=np.float32), obs=obs)
    # Small chunks on the single-scale image and labels, so the base holds many
    # small files as well as the table's large ones (as a real store does).
    images = dict(sdata.images)
    labels = dict(sdata.labels)
    images["blobs_image"] = images["blobs_image"].chunk({"y": 64, "x": 64})
    labels["blobs_labels"] = labels["blobs_labels"].chunk({"y": 64, "x": 64})
    full = spatialdata.SpatialData(
        images=images,
        labels=labels,
        points=dict(sdata.points),
        shapes=dict(sdata.shapes),
        tables={"table": table},
    )

    datasets = root / "datasets"
    base_folder = datasets / "base-0000"
    base_folder.mkdir(parents=True)
    base = base_folder / "blobs.sdata.zarr"
    full.write(base)

    steps = [
        ("leiden", lambda w: w.set_obs("table", "leiden", pd.Categorical(rng.integers(0, 20, n_obs).astype(str)))),
        ("umap", lambda w: w.set_obsm("table", "X_umap", rng.standard_normal((n_obs, 2)).astype(np.float32))),
    ]
    top = commit_versions(base, datasets, steps)
    return base, top


def tree_stats(path: Path) -> tuple[int, int]:
    files = size = 0
    for folder, _, names in os.walk(path):
        for name in names:
            files += 1
            size += os.lstat(os.path.join(folder, name)).st_size
    return files, size


def main() -> None:
    args = begin(__doc__)
    from sds_jupyter.stack.flatcopy import flatten

    n_obs = 20_000 if args.quick else 200_000
    length = 512 if args.quick else 1024
    rounds = args.rounds or (3 if args.quick else 11)
    cp = shutil.which("cp")
    if cp is None:
        print("bench_flatten: no cp on PATH; skipped")
        emit("bench_flatten", [])
        return
    with workdir(args.keep) as root:
        base, top = build(root, n_obs, length)
        files, size = tree_stats(base)
        print(
            f"bench_flatten: base of {files} files, {size / 2**20:.1f} MiB "
            f"(blobs {length}x{length} + {n_obs:,} x 50 table), 2 versions"
        )
        out_flat = root / "out-flatten.zarr"
        out_cp = root / "out-cp.zarr"

        def clear(path: Path):  # type: ignore[no-untyped-def]
            return lambda: shutil.rmtree(path, ignore_errors=True)

        def run_flatten(source: Path, **options: object):  # type: ignore[no-untyped-def]
            return lambda: flatten(source, out_flat, progress=False, **options)

        def run_cp() -> None:
            subprocess.run([cp, "-r", os.fspath(base), os.fspath(out_cp)], check=True)

        # flatten's output must hold every key of the composed store.
        flatten(top, out_flat, progress=False)
        flat_files, _ = tree_stats(out_flat)
        shutil.rmtree(out_flat)
        print(f"  flattened store: {flat_files} entries")

        results = []
        ta, tb = alternate(
            run_flatten(top),
            run_cp,
            rounds,
            before_a=clear(out_flat),
            before_b=clear(out_cp),
        )
        results.append(
            comparison(
                "flatten (2 versions)",
                "flatten(top) over a folder base",
                "cp -r <base>",
                ta,
                tb,
                goal=None,
                unit="copy",
            )
        )
        if "link" in inspect.signature(flatten).parameters:
            ta, tb = alternate(
                run_flatten(top, link=False),
                run_cp,
                rounds,
                before_a=clear(out_flat),
                before_b=clear(out_cp),
            )
            results.append(
                comparison(
                    "flatten, copies (link=False)",
                    "flatten(top, link=False)",
                    "cp -r <base>",
                    ta,
                    tb,
                    goal=None,
                    unit="copy",
                )
            )
        ta, tb = alternate(
            run_flatten(base),
            run_cp,
            rounds,
            before_a=clear(out_flat),
            before_b=clear(out_cp),
        )
        results.append(
            comparison("flatten (base only)", "flatten(<base store>)", "cp -r <base>", ta, tb, goal=None, unit="copy")
        )
    emit("bench_flatten", results, files=files, bytes=size)


if __name__ == "__main__":
    main()
