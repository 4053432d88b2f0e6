"""A 500-deep stack and a 1-deep stack over one base, manifests written directly.

Laid out as a download of Cirro datasets: one folder per dataset, named by its
ID, side by side in ``<root>/datasets``::

    datasets/base-0000/base.zarr          the base store (zarr v3, consolidated)
    datasets/v-0001 ... v-0500            the deep stack, v-0001 directly on the base
    datasets/shallow-0001                 the 1-deep stack

Every version's manifest looks like one the writer saves: the root ``zarr.json``
rewritten (the consolidated index), an object of its own under
``tables/table/uns/v<n>/``, a ``changes`` entry, and in every other version a
whiteout removing an earlier version's node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BASE_ID = "base-0000"
BASE_NAME = "base.zarr"
#: A chunk of the base's X: what the get benchmarks read.
BASE_KEY = "tables/table/X/c/3/0"
BASE_DOC_KEY = "tables/table/X/zarr.json"


@dataclass
class DeepStacks:
    datasets: Path
    base: Path
    deep_top: Path
    shallow_top: Path
    deep_manifests: list[Path]
    """Every manifest of the deep stack, top first."""
    depth: int

    @staticmethod
    def own_key(number: int) -> str:
        """The object version ``number`` adds (its ``uns`` entry's only chunk)."""
        return f"tables/table/uns/v{number}/c"


def _write_base(path: Path) -> bytes:
    """An AnnData table written by anndata (so readers and writers find what they expect),
    with X re-chunked into blocks of 500 rows so that a chunk key is one small file."""
    import anndata
    import pandas as pd
    import zarr

    n_obs, n_vars = 4000, 64
    x = np.random.default_rng(1).standard_normal((n_obs, n_vars), dtype=np.float32)
    adata = anndata.AnnData(
        X=x,
        obs=pd.DataFrame({"n": np.arange(n_obs)}, index=[f"cell-{i}" for i in range(n_obs)]),
        var=pd.DataFrame(index=[f"gene-{j}" for j in range(n_vars)]),
    )
    root = zarr.open_group(zarr.storage.LocalStore(path), mode="w", zarr_format=3)
    anndata.io.write_elem(root.create_group("tables"), "table", adata)
    table = root["tables/table"]
    attributes = dict(table["X"].attrs)
    rechunked = table.create_array(
        "X", shape=x.shape, chunks=(500, n_vars), dtype="float32", overwrite=True, attributes=attributes
    )
    rechunked[...] = x
    zarr.consolidate_metadata(zarr.storage.LocalStore(path))
    return (path / "zarr.json").read_bytes()


def version_objects(number: int, root_doc: bytes) -> dict[str, bytes]:
    """The objects version ``number`` writes: the root index and its own scalar array."""
    own = DeepStacks.own_key(number)
    own_doc = own.rsplit("/", 1)[0] + "/zarr.json"
    return {
        "zarr.json": root_doc,
        own_doc: json.dumps(
            {
                "zarr_format": 3,
                "node_type": "array",
                "shape": [],
                "data_type": "int64",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": 0,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "attributes": {"encoding-type": "numeric-scalar", "encoding-version": "0.2.0"},
            }
        ).encode(),
        own: np.int64(number).tobytes(),
    }


def _write_version(
    folder: Path,
    parent: str,
    depth: int,
    number: int,
    root_doc: bytes,
    deleted: list[str],
) -> Path:
    overlay = folder / "overlay"
    objects = version_objects(number, root_doc)
    for key, data in objects.items():
        target = overlay / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    manifest = {
        "format": "spatial-data-studio.layer",
        "format_version": 1,
        "parent": parent,
        "base": f"cirro:::dataset:{BASE_ID}/{BASE_NAME}",
        "depth": depth,
        "title": f"Version {number}",
        "message": "written by the benchmark",
        "created_at": "2026-10-20T06:41:12.008Z",
        "created_by": "bench@example.org",
        "app": {"id": "sds-jupyter-bench", "version": "0"},
        "overlay": "overlay",
        "files": [{"key": k, "size": len(v)} for k, v in sorted(objects.items())],
        "deleted": deleted,
        "changes": [{"op": "set-uns", "table": "table", "key": f"v{number}"}]
        + [{"op": "delete-uns", "table": "table", "key": d.rstrip("/").rsplit("/", 1)[-1]} for d in deleted],
    }
    (folder / "layer.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return folder / "layer.json"


def icechunk_repository(stacks: DeepStacks, path: Path, depth: int) -> object:
    """The same data as an Icechunk repository: the base, then ``depth`` commits of the versions' objects."""
    import _icechunk

    repo = _icechunk.repository(path)
    _icechunk.copy_store(stacks.base, repo)
    root_doc = (stacks.base / "zarr.json").read_bytes()
    for number in range(1, depth + 1):
        _icechunk.commit_objects(repo, version_objects(number, root_doc), f"version {number}")
    return repo


def build(root: Path, depth: int = 500) -> DeepStacks:
    datasets = root / "datasets"
    base = datasets / BASE_ID / BASE_NAME
    base.parent.mkdir(parents=True)
    root_doc = _write_base(base)
    base_ref = f"cirro:::dataset:{BASE_ID}/{BASE_NAME}"

    manifests: list[Path] = []
    parent = base_ref
    for number in range(1, depth + 1):
        folder = datasets / f"v-{number:04d}"
        # Every other version deletes the node an earlier version added (never version 1's).
        deleted = [f"tables/table/uns/v{number - 3}/"] if number % 2 == 0 and number > 4 else []
        manifests.append(_write_version(folder, parent, number, number, root_doc, deleted))
        parent = f"cirro:::dataset:v-{number:04d}/layer.json"
    deep_top = datasets / f"v-{depth:04d}"

    shallow_top = datasets / "shallow-0001"
    _write_version(shallow_top, base_ref, 1, 1, root_doc, ["tables/table/uns/gone/"])
    return DeepStacks(
        datasets=datasets,
        base=base,
        deep_top=deep_top,
        shallow_top=shallow_top,
        deep_manifests=manifests[::-1],
        depth=depth,
    )
