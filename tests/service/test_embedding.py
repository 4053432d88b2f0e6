"""The ``embedding`` request and annotating from it (issue 27's embedding beside the tissue).

On the Xenium-like demo, whose "Leiden clusters" version saves ``obsm["X_pca"]``: the reply's
coordinates are obsm's first two columns, cached by the stored entry, refused with one line
for a key the table lacks; a polygon drawn on the embedding (or a list of cells) is saved
by ``annotate`` as the cells a shapely point-in-polygon count finds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import shapely
from kit.rest import jp_server_config  # noqa: F401 - fixture
from tornado.httpclient import HTTPClientError

import sds_jupyter as sds
from sds_jupyter.errors import StackError
from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.service import StackService, dispatch, unframe_reply
from sds_jupyter.service.contract import payload_schema
from sds_jupyter.service.embedding import embeddings_cache
from sds_jupyter.stack.caches import default_caches

pytest_plugins = ["pytest_jupyter.jupyter_server"]

FIGURE = "fig-leiden"
LEIDEN = "Leiden clusters"


@pytest.fixture
def demo(tmp_path: Path, xenium_top: Path) -> Path:
    """A private copy of the demo's datasets folder (annotating writes into it); its top version."""
    shutil.copytree(xenium_top.parent, tmp_path / "datasets")
    return tmp_path / "datasets" / xenium_top.name


def _pca(top: Path) -> np.ndarray:
    return np.asarray(sds.open_anndata(sds.Stack.resolve(top)).obsm["X_pca"])


def _coordinates(service: StackService, **params: Any) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    reply = dispatch(service, "embedding", {"figure": FIGURE, "key": "X_pca", **params})
    x, y = (np.frombuffer(buffer, np.float32) for buffer in reply.buffers)
    return reply.data, x, y


def test_the_list_comes_alone_and_the_coordinates_are_obsm_first_two_columns(xenium_top: Path) -> None:
    service = StackService(xenium_top)
    listed = dispatch(service, "embedding", {"figure": FIGURE})
    assert listed.buffers == [] and listed.data["keys"] == ["X_pca"] and listed.data["key"] is None
    data, x, y = _coordinates(service)
    pca = _pca(xenium_top)
    assert data["key"] == "X_pca" and data["n_cells"] == len(pca) == len(x) and data["columns"] == pca.shape[1]
    np.testing.assert_array_equal(x, pca[:, 0].astype(np.float32))
    np.testing.assert_array_equal(y, pca[:, 1].astype(np.float32))
    assert data["bounds"] == pytest.approx([pca[:, 0].min(), pca[:, 1].min(), pca[:, 0].max(), pca[:, 1].max()])
    schema = payload_schema()
    jsonschema.validate(data, {"$defs": schema["$defs"], **schema["requests"]["embedding"]})


def test_coordinates_are_read_once_per_stored_entry_across_versions(xenium_top: Path) -> None:
    """The Leiden version wrote X_pca; the versions above leave it alone: one name, one read."""
    service = StackService(xenium_top)
    leiden = service.stack.depth_of(LEIDEN)
    top, _, _ = _coordinates(service)
    embeddings = embeddings_cache(default_caches())
    misses = embeddings.misses
    below, _, _ = _coordinates(service, version=leiden)
    assert below["name"] == top["name"] and embeddings.misses == misses


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"figure": FIGURE, "key": "spatial"}, "no embedding 'spatial'"),
        ({"figure": FIGURE, "key": "X_umap"}, "spatial aside: X_pca"),
        ({"figure": FIGURE, "key": "obsm/../X_pca"}, "no embedding"),
        ({"figure": FIGURE, "key": "k" * 300}, "too long"),
        ({"key": "X_pca"}, "needs a figure id"),
        ({"figure": "fig-nope", "key": "X_pca"}, "fig-nope"),
    ],
)
def test_refusals_are_one_line(xenium_top: Path, params: dict[str, Any], says: str) -> None:
    with pytest.raises(StackError) as info:
        dispatch(StackService(xenium_top), "embedding", params)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_text_valued_obsm_entries_are_not_offered(demo: Path) -> None:
    """Issue 38 item 10: an obsm data frame of text (or text in its first two columns) is no embedding;
    a numeric data frame beside it is listed and drawn."""
    import pandas as pd

    adata = sds.open_anndata(demo)
    n = adata.n_obs
    adata.obsm["X_text"] = pd.DataFrame({"a": [f"t{i}" for i in range(n)], "b": ["u"] * n}, index=adata.obs_names)
    adata.obsm["X_half"] = pd.DataFrame(
        {"a": np.arange(n, dtype=float), "b": pd.Categorical(["u"] * n)}, index=adata.obs_names
    )
    adata.obsm["X_frame"] = pd.DataFrame({"a": np.arange(n, dtype=float), "b": np.ones(n)}, index=adata.obs_names)
    saved = sds.save_version(demo, adata, title="Text in obsm")
    service = StackService(saved)
    listed = dispatch(service, "embedding", {"figure": FIGURE}).data["keys"]
    assert listed == ["X_frame", "X_pca"]
    data, x, _ = _coordinates(service, key="X_frame")
    assert data["columns"] == 2 and x.tolist() == list(range(n))
    with pytest.raises(StackError, match="no embedding 'X_text'"):
        dispatch(service, "embedding", {"figure": FIGURE, "key": "X_text"})


def test_a_table_without_embeddings_lists_none(demo_top: Path) -> None:
    reply = dispatch(StackService(demo_top), "embedding", {"figure": "fig-clusters"})
    assert reply.data["keys"] == [] and reply.buffers == []


# ------------------------------------------------------------------ annotate from the embedding


def _hull_of_cluster(service: StackService, x: np.ndarray, y: np.ndarray) -> tuple[str, list[list[float]]]:
    """The leiden cluster with most cells and the convex hull of its cells in PCA space, widened a little."""
    leiden = service.adata().obs["leiden"].astype(str).to_numpy()
    cluster = str(max(set(leiden), key=lambda c: int((leiden == c).sum())))
    hull = shapely.MultiPoint(np.column_stack([x, y])[leiden == cluster].astype(float)).convex_hull.buffer(1e-3)
    return cluster, [[float(px), float(py)] for px, py in hull.exterior.coords[:-1]]


def test_a_polygon_on_the_embedding_saves_the_cells_shapely_finds(demo: Path) -> None:
    service = StackService(demo)
    _, x, y = _coordinates(service)
    _, polygon = _hull_of_cluster(service, x, y)
    inside = shapely.contains(shapely.Polygon(polygon), shapely.points(x.astype(float), y.astype(float)))
    listed = np.flatnonzero(~inside)[:7].tolist()
    regions = {"hull": {"embedding": "X_pca", "polygon": polygon}, "picked": {"cells": listed}}
    saved = service.annotate("from_pca", regions, title="From the PCA")
    column = StackService(demo.parent / saved["dataset_id"]).adata().obs["from_pca"]
    assert column.value_counts().to_dict() == {"hull": int(inside.sum()), "picked": len(listed)}
    assert (np.flatnonzero(column.astype(str).to_numpy() == "picked") == listed).all()
    history = StackService(demo.parent / saved["dataset_id"]).history()
    assert f"hull ({int(inside.sum()):,} cells)" in history["versions"][0]["message"]


@pytest.mark.parametrize(
    ("regions", "says"),
    [
        ({"a": {"embedding": "X_umap", "polygon": [[0, 0], [1, 0], [1, 1]]}}, "no embedding 'X_umap'"),
        ({"a": {"embedding": 3, "polygon": [[0, 0], [1, 0], [1, 1]]}}, "give the obsm key as text"),
        ({"a": {"embedding": "X_pca", "polygon": [[0, 0], [1, 0]]}}, "at least 3"),
        ({"a": {"embedding": "X_pca"}}, "a mapping with keys ['embedding']"),
        ({"a": {"cells": [0, 10**9]}}, "lists cell 1000000000"),
        ({"a": {"cells": [-1]}}, "lists cell -1"),
        ({"a": {"cells": [True]}}, "not a cell's position"),
        ({"a": {"cells": "0,1"}}, "must list its cells"),
        ({"a": {"cells": [0], "polygon": []}}, "a mapping with keys"),
    ],
)
def test_annotate_refuses_bad_embedding_and_cell_regions(demo: Path, regions: Any, says: str) -> None:
    with pytest.raises(StackError) as info:
        StackService(demo).annotate("x", regions, title="refused")
    assert says in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------ REST


def _fetch(jp_fetch, jp_asyncio_loop, name: str, **kwargs: Any) -> Any:
    try:
        return jp_asyncio_loop.run_until_complete(jp_fetch(NAMESPACE, "api", name, **kwargs))
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.response


def test_rest_embedding_is_framed_binary_then_annotates(
    xenium_top: Path, jp_root_dir: Path, jp_fetch, jp_asyncio_loop
) -> None:
    shutil.copytree(xenium_top.parent, jp_root_dir / "xenium_top")
    path = f"xenium_top/{xenium_top.name}"
    reply = _fetch(jp_fetch, jp_asyncio_loop, "embedding", params={"path": path, "figure": FIGURE, "key": "X_pca"})
    assert reply.code == 200 and reply.headers["Content-Type"].startswith("application/octet-stream")
    data, buffers = unframe_reply(reply.body)
    pca = _pca(xenium_top)
    np.testing.assert_array_equal(np.frombuffer(buffers[0], np.float32), pca[:, 0].astype(np.float32))
    again = _fetch(
        jp_fetch,
        jp_asyncio_loop,
        "embedding",
        params={"path": path, "figure": FIGURE, "key": "X_pca"},
        headers={"If-None-Match": reply.headers["Etag"]},
    )
    assert again.code == 304
    refused = _fetch(jp_fetch, jp_asyncio_loop, "embedding", params={"path": path, "figure": FIGURE, "key": "nope"})
    assert refused.code == 400 and "no embedding 'nope'" in json.loads(refused.body)["message"]
    x0, y0, x1, y1 = data["bounds"]
    whole = [[x0 - 1, y0 - 1], [x1 + 1, y0 - 1], [x1 + 1, y1 + 1], [x0 - 1, y1 + 1]]
    body = {"path": path, "column": "all", "title": "All", "regions": {"all": {"embedding": "X_pca", "polygon": whole}}}
    saved = _fetch(jp_fetch, jp_asyncio_loop, "annotate", method="POST", body=json.dumps(body))
    assert saved.code == 201
    folder = jp_root_dir / json.loads(saved.body)["folder"]
    assert StackService(folder).adata().obs["all"].value_counts().to_dict() == {"all": len(pca)}
    bad = {**body, "regions": {"a": {"embedding": "X_pca", "polygon": [[0, 0], [float("inf"), 0], [1, 1]]}}}
    refused = _fetch(jp_fetch, jp_asyncio_loop, "annotate", method="POST", body=json.dumps(bad))
    assert refused.code == 400 and "not a finite number" in json.loads(refused.body)["message"]


def test_an_obsm_array_claiming_gigabytes_is_refused_before_reading(tmp_path: Path, xenium_top: Path) -> None:
    """Issue 38 item 1: X_pca edited to claim 10^6 columns in one chunk (gigabytes): the widget's
    path (StackService.embedding) and the request refuse it by name from its metadata."""
    from kit.hostile import edit_nodes

    datasets = Path(shutil.copytree(xenium_top.parent, tmp_path / "datasets", symlinks=True))

    def wide(meta: dict[str, Any]) -> None:
        meta["shape"] = [meta["shape"][0], 10**6]
        meta["chunk_grid"]["configuration"]["chunk_shape"] = [meta["shape"][0], 10**6]

    assert edit_nodes(datasets, "obsm/X_pca", wide)
    service = StackService(datasets / xenium_top.name)
    with pytest.raises(StackError, match=r"'X_pca'.*MAX_COLUMN_BYTES") as info:
        dispatch(service, "embedding", {"figure": FIGURE, "key": "X_pca"})
    assert info.value.kind == "element" and "\n" not in str(info.value)
