"""The Xenium-like demo: what `sds-jupyter demo` builds, checked at a small size (the full one takes seconds more)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from kit.repo import ROOT

from sds_jupyter.demo import demo_dataset_id
from sds_jupyter.demo.xenium import IMAGE, SHAPES, build_xenium_demo
from sds_jupyter.stack.open import open_anndata
from sds_jupyter.stack.stack import Stack


@pytest.fixture(scope="module")
def xenium(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("xenium"), n_cells=3000, side=1024)


def test_six_versions_on_the_main_line_and_a_branch(xenium: Path) -> None:
    stack = Stack.resolve(xenium)
    assert [v.title for v in reversed(stack.versions)] == [
        "Leiden clusters",
        "Cluster markers",
        "Cell types",
        "Regions drawn",
        "Neighborhood enrichment",
        "Cellular niches",
    ]
    branch = Stack.resolve(xenium.parent / demo_dataset_id("xenium-Coarser clusters"))
    assert branch.versions[1].title == "Leiden clusters"
    main_leiden = open_anndata(stack.at("Leiden clusters")).obs["leiden"]
    coarse = open_anndata(branch).obs["leiden"]
    assert 1 < coarse.nunique() < main_leiden.nunique()


def test_the_clustering_version_saves_a_2d_pca_embedding(xenium: Path) -> None:
    """obsm["X_pca"] of "Leiden clusters": the first 2 PCs, as a dense SVD of the same log1p counts finds them."""
    stack = Stack.resolve(xenium)
    leiden = open_anndata(stack.at("Leiden clusters"))
    below = open_anndata(stack.at(stack.depth_of("Leiden clusters") - 1))
    embedding = leiden.obsm["X_pca"]
    assert embedding.shape == (leiden.n_obs, 2) and embedding.dtype == np.float32
    assert "X_pca" not in below.obsm
    counts = leiden.X.toarray() if hasattr(leiden.X, "toarray") else np.asarray(leiden.X)
    logged = np.log1p(counts * (1e4 / np.maximum(counts.sum(axis=1, keepdims=True), 1)))
    centred = logged - logged.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    reference = centred @ vt[:2].T
    for k in range(2):
        assert abs(np.corrcoef(embedding[:, k], reference[:, k])[0, 1]) > 0.999, k
    assert embedding[:, 0].var() >= embedding[:, 1].var()


def test_the_base_is_a_spatialdata_store_with_polygons_and_a_pyramid(xenium: Path) -> None:
    import spatialdata

    base = Stack.resolve(xenium).base.path
    sdata = spatialdata.read_zarr(str(base))
    table = sdata.tables["table"]
    assert table.n_obs == 3000 and table.n_vars == 300
    shapes = sdata.shapes[SHAPES]
    assert (shapes.geom_type == "Polygon").all() and len(shapes) == 3000
    assert table.uns["spatialdata_attrs"]["region"] == SHAPES
    levels = sdata.images[IMAGE]
    assert [levels[k].image.shape[1] for k in levels] == [1024, 512, 256, 128, 64]
    assert list(levels["scale0"].image.coords["c"].values) == ["DAPI", "Boundary stain", "Interior RNA"]


def test_coordinates_are_in_micrometres(xenium: Path) -> None:
    base = Path(str(Stack.resolve(xenium).base.path))
    meta = json.loads((base / "images" / IMAGE / "zarr.json").read_text())
    assert '"unit": "micrometer"' in json.dumps(meta)


def test_the_analysis_finds_the_tissue_structure(xenium: Path) -> None:
    adata = open_anndata(Stack.resolve(xenium))
    assert {"leiden", "cell_type", "region_annotation", "niche", "hypoxia_score"} <= set(adata.obs.columns)
    tumor = adata.obs["cell_type"] == "Tumor"
    core = adata.obs["region_annotation"] == "Tumor core"
    assert tumor[core].mean() > 0.7 > tumor[~core].mean()
    assert float(np.mean(adata.obs["hypoxia_score"][core])) > float(np.mean(adata.obs["hypoxia_score"][~core]))


def test_the_demo_builds_without_a_warning(tmp_path: Path) -> None:
    """What `sds-jupyter demo` prints is the path alone (the small-size build runs the same code)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Python hides DeprecationWarnings raised inside libraries (ome-zarr's Scaler, via spatialdata)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        build_xenium_demo(tmp_path / "quiet", n_cells=500, side=512)
    assert [str(w.message) for w in caught] == []


def test_the_binder_notebook_opens_the_demo_top_version() -> None:
    notebook = (ROOT / "binder" / "demo.ipynb").read_text()
    assert demo_dataset_id("xenium-Cellular niches") in notebook


def test_the_service_sends_the_cells_as_polygons_over_the_finest_level_that_fits(xenium: Path) -> None:
    from sds_jupyter.service import StackService

    service = StackService(xenium)
    reply = service.canvas(None, "fig-cell-types")
    cells = service.cells(None, "fig-cell-types", reply.data["cells_key"])
    assert cells.data["shapes"] == reply.data["shapes"]
    shapes = reply.data["shapes"]
    assert shapes == {"kind": "polygons", "element": "cell_boundaries", "n_vertices": 3000 * 9}
    assert reply.data["unit"] == "micrometer"
    assert reply.data["image"]["width"] == 1024  # the full-resolution level: it fits in 2048 px
    starts = np.frombuffer(bytes(cells.buffers[-2]), dtype=np.uint32)
    vertices = np.frombuffer(bytes(cells.buffers[-1]), dtype=np.float32).reshape(-1, 2)
    x = np.frombuffer(bytes(cells.buffers[0]), dtype=np.float32)
    # each cell's outline surrounds its centroid (obsm["spatial"]): the same coordinate system
    first = vertices[starts[0] : starts[1]]
    assert first[:, 0].min() < x[0] < first[:, 0].max()


def test_every_demo_result_has_its_default_chart(xenium: Path) -> None:
    """The Results tab draws a chart for each result: its kind is one the default charts know."""
    from sds_jupyter.service import StackService

    results = StackService(xenium).results(None)["results"]
    assert {r["id"] for r in results} >= {"markers-leiden", "nhood-enrichment", "niche-composition"}
    assert [r["id"] for r in results if "chart" not in r] == []


def test_every_demo_result_names_the_obs_column_its_groups_come_from(xenium: Path) -> None:
    """A click on a group, cluster or niche of a result highlights its cells: the parameters must say in which column."""
    from sds_jupyter.service import StackService

    obs = open_anndata(Stack.resolve(xenium)).obs
    keys = ("groupby", "cluster_key", "groupby_key", "niche_key", "region_key")
    for result in StackService(xenium).results(None)["results"]:
        parameters = (result.get("meta") or {}).get("parameters") or {}
        named = [parameters[k] for k in keys if isinstance(parameters.get(k), str)]
        assert named and named[0] in obs.columns, (result["id"], parameters)


def test_the_saved_views_open_on_the_tissue_at_any_demo_size(xenium: Path) -> None:
    """Built at 1,024 px, every whole-section figure's saved view is centred on the cells, not off them."""
    from sds_jupyter.service import StackService

    service = StackService(xenium)
    adata = open_anndata(Stack.resolve(xenium))
    x, y = adata.obsm["spatial"][:, 0], adata.obsm["spatial"][:, 1]
    middle = ((x.min() + x.max()) / 2, (y.min() + y.max()) / 2)
    span = max(x.max() - x.min(), y.max() - y.min())
    canvases = [f for f in service.figures(None)["figures"] if f["kind"] == "canvas"]
    assert canvases
    for figure in canvases:
        tx, ty = figure["spec"]["viewport"]["target"]
        assert abs(tx - middle[0]) < span * 0.1 and abs(ty - middle[1]) < span * 0.1, figure["id"]
