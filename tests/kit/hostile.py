"""Hostile stores shared by the bounds tests of the service, the server and the REST transport: edited metadata, bombs, out-of-range figures."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import zarr
from zarr.codecs import GzipCodec

from sds_jupyter import open_anndata
from sds_jupyter.stack import Stack
from sds_jupyter.stack.write.writer import VersionWriter

FIGURE = "fig-leiden"


IMAGE = "morphology_focus"


def hostile_datasets(top: Path, dest: Path, edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> Path:
    """A copy at ``dest`` of the demo's datasets folder whose base image metadata ``edit`` changed
    (element attrs, level 0's array meta).

    spatialdata consolidates the metadata into the root's zarr.json, and every version that
    rewrote it keeps a copy in its overlay: the node's own document and every copy are edited alike.
    """
    datasets = Path(shutil.copytree(top.parent, dest, symlinks=True))
    located = Stack.resolve(datasets / top.name).base.path
    assert isinstance(located, os.PathLike), "the demo's base is a local folder"
    base = Path(located)
    element_key, level_key = f"images/{IMAGE}", f"images/{IMAGE}/s0"
    for key in (element_key, level_key):
        node = base / key / "zarr.json"
        meta = {element_key: json.loads((base / element_key / "zarr.json").read_text()), level_key: None}
        meta[level_key] = json.loads((base / level_key / "zarr.json").read_text())
        edit(meta[element_key], meta[level_key])
        node.write_text(json.dumps(meta[key]))
    for root_meta_path in [base / "zarr.json", *datasets.glob("*/overlay/zarr.json")]:
        root_meta = json.loads(root_meta_path.read_text())
        consolidated = (root_meta.get("consolidated_metadata") or {}).get("metadata") or {}
        if element_key in consolidated:
            edit(consolidated[element_key], consolidated[level_key])
            root_meta_path.write_text(json.dumps(root_meta))
    return datasets


def edit_nodes(datasets: Path, suffix: str, edit: Callable[[dict[str, Any]], Any]) -> int:
    """Apply ``edit`` to every stored metadata document of nodes whose key ends with ``suffix``
    (their own zarr.json and every consolidated copy); how many were edited."""
    edited = 0
    for path in datasets.rglob("zarr.json"):
        meta = json.loads(path.read_text())
        consolidated = (meta.get("consolidated_metadata") or {}).get("metadata") or {}
        hits = [consolidated[key] for key in consolidated if key.endswith(suffix)]
        if path.parent.as_posix().endswith(suffix):
            hits.append(meta)
        for node in hits:
            edit(node)
        if hits:
            path.write_text(json.dumps(meta))
            edited += len(hits)
    return edited


def _claims_huge(element: dict[str, Any], level: dict[str, Any]) -> None:
    level["shape"] = [3, 10**12, 10**12]


def _claims_zero(element: dict[str, Any], level: dict[str, Any]) -> None:
    level["shape"] = [3, 0, 1024]


def _huge_chunk(element: dict[str, Any], level: dict[str, Any]) -> None:
    level["shape"] = [3, 2**19, 2**19]
    level["chunk_grid"]["configuration"]["chunk_shape"] = [1, 2**19, 2**19]


def _missing_level(element: dict[str, Any], level: dict[str, Any]) -> None:
    element["attributes"]["ome"]["multiscales"][0]["datasets"][0]["path"] = "no-such-level"


def _zero_scale(element: dict[str, Any], level: dict[str, Any]) -> None:
    for dataset in element["attributes"]["ome"]["multiscales"][0]["datasets"]:
        for transform in dataset["coordinateTransformations"]:
            if transform["type"] == "scale":
                transform["scale"] = [1.0, 0.0, 0.0]


def _thousands_of_levels(element: dict[str, Any], level: dict[str, Any]) -> None:
    datasets = element["attributes"]["ome"]["multiscales"][0]["datasets"]
    datasets.extend([datasets[-1]] * 5000)


def _one_pixel_chunks(element: dict[str, Any], level: dict[str, Any]) -> None:
    level["chunk_grid"]["configuration"]["chunk_shape"] = [1, 1, 1]  # a tile: 786,432 chunk reads


HOSTILE_IMAGES = {
    "a claimed shape of 10^12": (_claims_huge, "MAX_IMAGE_AXIS"),
    "a zero height": (_claims_zero, "is empty"),
    "a chunk of 2^38 pixels": (_huge_chunk, "MAX_CHUNK_BYTES"),
    "a level that does not exist": (_missing_level, "not an image array"),
    "a scale of 0": (_zero_scale, "finite positive"),
    "5,000 levels": (_thousands_of_levels, "MAX_LEVELS"),
    "chunks of one pixel": (_one_pixel_chunks, "MAX_READ_CHUNKS"),
}


IMAGE_REQUESTS = {
    "channels": {"figure": FIGURE},
    "image_tile": {"figure": FIGURE, "level": 0, "x": 0, "y": 0},
    "image_region": {"figure": FIGURE, "region": "0,0,100,100"},
    "canvas": {"figure": FIGURE},
}


def claims_10_12_rows(meta: dict[str, Any]) -> None:
    """A stored array's metadata edited to claim 10^12 rows (its other axes kept)."""
    if "shape" in meta:
        meta["shape"] = [10**12, *meta["shape"][1:]]


@pytest.fixture(scope="module")
def hostile_versions(tmp_path_factory: pytest.TempPathFactory, studio_stack) -> tuple[Path, Path]:
    """Two versions on the studio stack's v2: a formula header, many distinct values, extreme numbers."""

    datasets = Path(shutil.copytree(studio_stack.datasets, tmp_path_factory.mktemp("hv") / "datasets"))
    writer = VersionWriter(Stack.resolve(datasets / "edit-2222"))
    n_obs = writer.n_obs("table")
    writer.set_obs("table", "name", [f"cell-a-{i}" for i in range(n_obs)])
    writer.set_obs("table", "extreme", np.where(np.arange(n_obs) % 2, -1.7e308, 1.7e308))
    table = pd.DataFrame({'=HYPERLINK("x")': ["a", "b"], "+sum": [1, 2], "@x": [0.5, 1.5], "ok": [1, 2]})
    writer.set_result("table", "res_hostile", {"table": table}, {"kind": "table", "title": "hostile"})
    big = pd.DataFrame({"value": np.arange(1000, dtype=float)})
    writer.set_result("table", "res_big", {"table": big}, {"kind": "table", "title": "claims a lot"})
    first = writer.commit(datasets / "hostile-3333", title="hostile", message="m", created_by="c@example.org")
    writer = VersionWriter(Stack.resolve(first))
    writer.set_obs("table", "name", [f"cell-b-{i}" for i in range(n_obs)])
    writer.set_obs("table", "extreme", np.zeros(n_obs))  # deltas of ±1.7e308: their span overflows
    second = writer.commit(datasets / "hostile-4444", title="after", message="m", created_by="c@example.org")
    return first, second


#: The bomb of the issue at its real scale: 4 GiB inflated from some 4 MB.
BOMB_BYTES = 4 * 1024**3


def bomb_chunk(size: int, member: int = 8 * 1024**2) -> bytes:
    """A gzip chunk inflating to ``size`` bytes of ones (float64): one member zarr writes for
    ``member`` bytes, repeated (gzip readers, numcodecs' among them, read every member)."""
    written: dict[str, Any] = {}
    store = zarr.storage.MemoryStore(written)
    array = zarr.create_array(store, shape=(member // 8,), chunks=(member // 8,), dtype="f8", compressors=[GzipCodec()])
    array[:] = 1.0
    return bytes(written["c/0"].to_bytes()) * (size // member)


def replace_chunk(top: Path, key: str, data: bytes) -> Path:
    """The version at ``top`` with its overlay object ``key`` replaced by ``data`` (its manifest says the new size)."""
    manifest_path = top / "layer.json"
    manifest = json.loads(manifest_path.read_text())
    (top / manifest["overlay"] / key).write_bytes(data)
    for entry in manifest["files"]:
        if entry["key"] == key:
            entry["size"] = len(data)
    manifest_path.write_text(json.dumps(manifest))
    return top


#: The hostile figures, each with the print width (mm) the issue tried.
WIDE = {"fig_wide": 5000, "fig_tiny": 1e-9}


def with_hostile_widths(top: Path, into: Path) -> Path:
    """A version on ``top`` holding canvas and chart figures with out-of-range print widths."""
    stack = Stack.resolve(top)
    chart = json.loads(open_anndata(top).uns["spatial_data_studio"]["figures"]["fig_chart"])
    writer = VersionWriter(stack)
    for figure, width in WIDE.items():
        writer.set_figure(
            "table", figure, {"kind": "canvas", "title": figure, "color_by": "added_col", "print_width": width}
        )
        writer.set_figure("table", f"{figure}_chart", {**chart, "print_width": width})
    writer.set_figure("table", "fig_poster", {"kind": "canvas", "title": "Poster", "print_width": 1200})
    writer.set_figure("table", "fig_poster_chart", {**chart, "print_width": 1200})
    return writer.commit(into, title="Hostile widths")
