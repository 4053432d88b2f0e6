"""The first commit on a base without a consolidated index, many objects in the base.

Data: a local folder base (Zarr v3): a small AnnData table at ``tables/table``
(written by anndata) and an array ``images/many`` of 1 x 1 chunks, one object
each: 100,000 objects by default, 1,000,000 with ``--full``, 10,000 with
``--quick``. Two copies of it (the chunks hard-linked, not copied): one with no
consolidated index in its root ``zarr.json``, one with zarr's.

A: ``VersionWriter(base).set_uns("table", "note", ...)`` then ``commit`` on the
   base without an index: the writer must find every node for the new version's
   root index.
B: the same commit on the base with an index (carried forward, nothing listed).
Goal A / B <= 2 (finding the nodes costs reading their documents, not listing
the chunks).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from _common import alternate, begin, comparison, emit, workdir

GOAL = 2.0
PER_FOLDER = 1000


def write_base(root: Path, objects: int) -> None:
    """The base: a table, and an array of ``objects`` chunk files in folders of 1,000."""
    import anndata
    import numpy as np
    import pandas as pd
    import zarr

    group = zarr.open_group(root, mode="w", zarr_format=3)
    cells = 200
    adata = anndata.AnnData(
        X=np.ones((cells, 5), dtype="float32"),
        obs=pd.DataFrame({"n": np.arange(cells)}, index=[f"c{i}" for i in range(cells)]),
    )
    anndata.io.write_elem(group.require_group("tables"), "table", adata)
    rows = objects // PER_FOLDER
    images = group.require_group("images")
    images.create_array("many", shape=(rows, PER_FOLDER), chunks=(1, 1), dtype="uint8", fill_value=0)
    many = root / "images" / "many" / "c"
    for row in range(rows):
        folder = many / str(row)
        folder.mkdir(parents=True)
        for column in range(PER_FOLDER):
            (folder / str(column)).write_bytes(b"\x07")


def link_copy(source: Path, target: Path) -> None:
    """A copy whose chunk objects are hard links (documents copied, so they may differ)."""
    shutil.copytree(source, target, copy_function=os.link)
    for document in target.rglob("zarr.json"):
        document.unlink()
        shutil.copyfile(source / document.relative_to(target), document)


def main() -> None:
    args = begin(__doc__)
    import zarr

    from sds_jupyter.stack.write.writer import VersionWriter

    objects = 1_000_000 if args.full else (10_000 if args.quick else 100_000)
    rounds = args.rounds or (3 if args.quick or args.full else 7)
    print(f"bench_first_commit: a commit on a base of {objects:,} objects without / with a consolidated index")
    with workdir(args.keep) as root:
        plain = root / "datasets" / "base" / "store.zarr"
        indexed = root / "datasets" / "indexed" / "store.zarr"
        start = time.perf_counter()
        write_base(plain, objects)
        link_copy(plain, indexed)
        zarr.consolidate_metadata(str(indexed))
        assert "consolidated_metadata" not in json.loads((plain / "zarr.json").read_text())
        print(f"  built in {time.perf_counter() - start:.1f} s")
        out = root / "datasets"
        made: list[Path] = []

        def commit_on(base: Path) -> None:
            writer = VersionWriter(base)
            writer.set_uns("table", "note", {"text": "hello"})
            made.append(writer.commit(out / f"v{len(made)}", title="note"))

        def clean() -> None:
            while made:
                shutil.rmtree(made.pop())

        commit_on(plain)
        index = json.loads((made[-1] / "overlay" / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
        assert "images/many" in index and "tables/table/uns/note" in index
        clean()
        ta, tb = alternate(lambda: commit_on(plain), lambda: commit_on(indexed), rounds, after_a=clean, after_b=clean)
        result = comparison(
            f"first commit, {objects:,} objects, no index",
            "commit on a base without consolidated index",
            "the same commit on the base with one",
            ta,
            tb,
            goal=GOAL,
            unit="commit",
        )
    emit("bench_first_commit", [result], objects=objects)


if __name__ == "__main__":
    main()
