"""The Xenium-like demo: a 100,000-cell run and the versions an analysis of it saves.

The base store is written by spatialdata (a 3-channel image pyramid, the cell and
nucleus polygons, about 30 transcripts a cell as a points element, the table), then each step of an analysis saves one version over the
one before, and one branch is saved from an earlier version, as two analysts
sharing a dataset would.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.demo import analysis
from sds_jupyter.demo.ids import demo_dataset_id
from sds_jupyter.demo.specs import TABLE, chart_spec, result_meta
from sds_jupyter.demo.tissue import CELL_TYPES, HYPOXIA_GENES, PIXEL_SIZE_UM, Tissue, cell_frame, make_tissue
from sds_jupyter.demo.transcripts import nucleus_rings, transcript_parts
from sds_jupyter.stack import Stack, VersionWriter, no_auto_sharding
from sds_jupyter.studio.shapes import default_shape_color

__all__ = ["build_xenium_demo"]

IMAGE = "morphology_focus"
SHAPES = "cell_boundaries"
NUCLEI = "nucleus_boundaries"
POINTS = "transcripts"
CHANNELS = ("DAPI", "Boundary stain", "Interior RNA")
CHANNEL_COLORS = ("#3b6cff", "#00e060", "#ff4fd8")
CHANNEL_LIMITS = ((0.0, 230.0), (0.0, 200.0), (0.0, 180.0))
TYPE_COLORS = ("#d62728", "#8c564b", "#1f77b4", "#17becf", "#ff7f0e", "#9467bd", "#2ca02c")
PYRAMID = (2, 2, 2, 2)
NEIGHBORS = 10


@dataclass
class Run:
    """What the analysis steps share: the tissue, its neighbor graph and the labels saved so far."""

    tissue: Tissue
    neighbors: np.ndarray
    rng: np.random.Generator
    labels: dict[str, pd.Categorical] = field(default_factory=dict)


def build_xenium_demo(out: Path, *, n_cells: int = 100_000, side: int = 8192) -> Path:
    """Write the base and the versions under ``out/datasets``; return the main line's top version."""
    datasets = out / "datasets"
    datasets.mkdir(parents=True, exist_ok=False)
    tissue = make_tissue(n_cells=n_cells, side=side)
    base = datasets / demo_dataset_id("xenium-base") / "xenium.sdata.zarr"
    base.parent.mkdir()
    _write_base(tissue, base)
    run = Run(tissue, analysis.neighbor_index(tissue.x_um, tissue.y_um, NEIGHBORS), np.random.default_rng(7))
    stack = Stack.resolve(base)
    saved: dict[str, Stack] = {}
    for step in (_clusters, _markers, _cell_types, _regions, _neighborhood, _niches):
        writer = VersionWriter(stack)
        info = step(writer, run)
        top = writer.commit(datasets / demo_dataset_id("xenium-" + info["title"]), **info)
        stack = Stack.resolve(top)
        saved[info["title"]] = stack
    writer = VersionWriter(saved["Leiden clusters"])
    info = _coarser(writer, run)
    writer.commit(datasets / demo_dataset_id("xenium-" + info["title"]), **info)
    return top


# --------------------------------------------------------------------- base


def _write_base(tissue: Tissue, path: Path) -> None:
    import anndata as ad
    import spatialdata
    from spatialdata.models import Image2DModel, TableModel
    from spatialdata.transformations import Scale

    image = Image2DModel.parse(
        tissue.image,
        dims=("c", "y", "x"),
        c_coords=list(CHANNELS),
        scale_factors=list(PYRAMID),
        chunks=(1, 1024, 1024),
        transformations={"global": Scale([PIXEL_SIZE_UM, PIXEL_SIZE_UM], axes=("y", "x"))},
    )
    obs = cell_frame(tissue)
    adata = ad.AnnData(
        X=tissue.counts,
        obs=obs,
        var=pd.DataFrame(index=pd.Index(tissue.genes, name="gene")),
        obsm={"spatial": np.column_stack([tissue.x_um, tissue.y_um])},
    )
    table = TableModel.parse(adata, region=SHAPES, region_key="region", instance_key="cell_id")
    shapes = {SHAPES: _shapes(tissue, tissue.polygons), NUCLEI: _shapes(tissue, nucleus_rings(tissue))}
    sdata = spatialdata.SpatialData(
        images={IMAGE: image}, shapes=shapes, points={POINTS: _transcripts(tissue)}, tables={TABLE: table}
    )
    with no_auto_sharding():
        sdata.write(path)
    _name_the_unit(path)


def _shapes(tissue: Tissue, rings: np.ndarray) -> Any:
    """A shapes element of one polygon a cell (closed ``rings`` in µm), indexed by cell id."""
    import geopandas as gpd
    import shapely
    from spatialdata.models import ShapesModel
    from spatialdata.transformations import Identity

    frame = gpd.GeoDataFrame(geometry=shapely.polygons(rings), index=pd.Index(tissue.cell_id, name="cell_id"))
    return ShapesModel.parse(frame, transformations={"global": Identity()})


def _transcripts(tissue: Tissue) -> Any:
    """The transcripts as spatialdata's points element: dask-parquet parts of about PART_ROWS rows, made as written."""
    from spatialdata.models import PointsModel
    from spatialdata.transformations import Identity

    return PointsModel.parse(
        transcript_parts(tissue),
        coordinates={"x": "x", "y": "y"},
        feature_key="gene",
        instance_key="cell_id",
        transformations={"global": Identity()},
    )


def _name_the_unit(path: Path) -> None:
    """Say that the global coordinate system is in micrometres (spatialdata writes the placeholder "unit").

    Why: the view draws a scale bar only where coordinates are physical, and Xenium's are.
    """
    elements = ("images", IMAGE), ("shapes", SHAPES), ("shapes", NUCLEI), ("points", POINTS)
    for element in (path / kind / name for kind, name in elements):
        meta_path = element / "zarr.json"
        meta = json.loads(meta_path.read_text())
        _rename_units(meta)
        meta_path.write_text(json.dumps(meta, indent=2))
    with warnings.catch_warnings():
        # zarr says consolidated metadata is not in the v3 spec and that shapes.parquet is no zarr node:
        # both true, both as spatialdata writes every store
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))


def _rename_units(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("name") == "global" and isinstance(node.get("axes"), list):
            for axis in node["axes"]:
                if isinstance(axis, dict) and axis.get("type") == "space":
                    axis["unit"] = "micrometer"
        for value in node.values():
            _rename_units(value)
    elif isinstance(node, list):
        for value in node:
            _rename_units(value)


# ------------------------------------------------------------------ versions


def _version(title: str, message: str, by: str) -> dict[str, str]:
    return {"title": title, "message": message, "created_by": by}


def _categorical(codes: np.ndarray, names: list[str]) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=names)


def _clusters(writer: VersionWriter, run: Run) -> dict[str, str]:
    codes = analysis.leiden_like_clusters(run.rng, run.tissue.cell_type, n_clusters=len(CELL_TYPES) + 1)
    leiden = _categorical(codes, [str(i) for i in range(int(codes.max()) + 1)])
    run.labels["leiden"] = leiden
    writer.set_obs(TABLE, "leiden", leiden)
    writer.set_obs(TABLE, "hypoxia_score", _hypoxia(run.tissue))
    writer.set_obsm(TABLE, "X_pca", analysis.pca_embedding(run.tissue.counts))  # for an embedding view
    writer.set_figure(
        TABLE, "fig-leiden", _canvas(run.tissue, "Leiden clusters on the tissue", "leiden", zoom_in=False)
    )
    writer.set_figure(
        TABLE, "fig-leiden-detail", _canvas(run.tissue, "Leiden clusters, one tumor nest", "leiden", zoom_in=True)
    )
    return _version("Leiden clusters", "Resolution 0.8 on 30 PCs of log1p counts", "ana@example.org")


def _hypoxia(tissue: Tissue) -> np.ndarray:
    """Mean log1p count of the hypoxia genes per cell: a continuous column to color by."""
    columns = [tissue.genes.index(g) for g in HYPOXIA_GENES]
    block = tissue.counts[:, columns].toarray()
    score: np.ndarray = np.log1p(block).mean(axis=1).astype(np.float32).round(3)
    return score


def _markers(writer: VersionWriter, run: Run) -> dict[str, str]:
    table = analysis.marker_table(run.tissue.counts, run.tissue.genes, run.labels["leiden"])
    n_groups = len(run.labels["leiden"].categories)
    meta = result_meta("markers", "Markers per Leiden cluster", "t-test", {"groupby": "leiden"}, {"n_groups": n_groups})
    writer.set_result(TABLE, "markers-leiden", {"table": table}, meta)
    writer.set_figure(
        TABLE, "fig-markers", chart_spec("Top markers per cluster", "markers-leiden", "bar", "gene", "score", "group")
    )
    return _version("Cluster markers", "A t-test ranking of genes per Leiden cluster", "ana@example.org")


def _cell_types(writer: VersionWriter, run: Run) -> dict[str, str]:
    leiden = run.labels["leiden"]
    truth = run.tissue.cell_type
    majority = [
        np.bincount(truth[leiden.codes == c], minlength=len(CELL_TYPES)).argmax() for c in range(len(leiden.categories))
    ]
    cell_type = _categorical(np.asarray(majority)[leiden.codes], list(CELL_TYPES))
    run.labels["cell_type"] = cell_type
    writer.set_obs(TABLE, "cell_type", cell_type)
    writer.set_uns(TABLE, "cell_type_colors", np.asarray(TYPE_COLORS))
    writer.set_figure(TABLE, "fig-cell-types", _canvas(run.tissue, "Cell types", "cell_type", zoom_in=False))
    writer.set_figure(TABLE, "fig-transcripts", _transcripts_canvas(run.tissue))
    return _version(
        "Cell types", "Clusters named from their markers; two Leiden clusters are both tumor", "ben@example.org"
    )


def _regions(writer: VersionWriter, run: Run) -> dict[str, str]:
    b_cells = np.asarray(run.labels["cell_type"].codes == CELL_TYPES.index("B cell"))
    regions = analysis.region_annotation(run.tissue.nest_depth, b_cells, run.neighbors)
    run.labels["region_annotation"] = regions
    writer.set_obs(TABLE, "region_annotation", regions)
    colors = {
        "Tumor core": "#b2182b",
        "Invasive margin": "#ef8a62",
        "Lymphoid aggregate": "#2166ac",
        "Stroma": "#bababa",
    }
    writer.set_figure(
        TABLE, "fig-regions", _canvas(run.tissue, "Regions drawn by pathology", "region_annotation", colors=colors)
    )
    return _version(
        "Regions drawn", "Tumor core, invasive margin and lymphoid aggregates, by a pathologist", "ben@example.org"
    )


def _neighborhood(writer: VersionWriter, run: Run) -> dict[str, str]:
    cell_type = run.labels["cell_type"]
    zscores = analysis.neighborhood_enrichment(run.rng, cell_type, run.neighbors)
    params = {"cluster_key": "cell_type", "n_neighs": NEIGHBORS, "n_perms": 50}
    meta = result_meta(
        "nhood_enrichment",
        "Neighborhood enrichment of cell types",
        "permutation",
        params,
        {"n_groups": len(CELL_TYPES)},
    )
    writer.set_result(TABLE, "nhood-enrichment", {"table": zscores}, meta)
    writer.set_figure(
        TABLE,
        "fig-nhood",
        chart_spec("Which cell types sit together", "nhood-enrichment", "rect", "source", "target", "zscore"),
    )
    return _version("Neighborhood enrichment", "Which cell types are neighbors more than chance", "ana@example.org")


def _niches(writer: VersionWriter, run: Run) -> dict[str, str]:
    niche, composition = analysis.niches(run.rng, run.labels["cell_type"], run.neighbors)
    writer.set_obs(TABLE, "niche", niche)
    meta = result_meta(
        "niches",
        "Cell type composition of each niche",
        "k-means",
        {"niche_key": "niche", "n_neighs": NEIGHBORS, "k": 6},
        {"n_niches": 6},
    )
    writer.set_result(TABLE, "niche-composition", {"table": composition}, meta)
    writer.set_figure(TABLE, "fig-niches", _canvas(run.tissue, "Cellular niches", "niche", zoom_in=False))
    writer.set_figure(
        TABLE,
        "fig-niche-composition",
        chart_spec("What each niche is made of", "niche-composition", "bar", "niche", "fraction", "cell_type"),
    )
    writer.delete_figure(TABLE, "fig-leiden-detail")
    return _version("Cellular niches", "k-means on each cell's 10-neighbor composition", "ana@example.org")


def _coarser(writer: VersionWriter, run: Run) -> dict[str, str]:
    leiden = run.labels["leiden"]
    coarse = analysis.coarse_clusters(leiden.codes.astype(np.int64), run.tissue.cell_type.astype(np.int64))
    writer.set_obs(TABLE, "leiden", _categorical(coarse, [str(i) for i in range(int(coarse.max()) + 1)]))
    writer.set_figure(
        TABLE, "fig-leiden", _canvas(run.tissue, "Leiden clusters at resolution 0.4", "leiden", zoom_in=False)
    )
    return _version("Coarser clusters", "Resolution 0.4: a branch saved from Leiden clusters", "ben@example.org")


# ------------------------------------------------------------------- figures


#: The marker genes the demo's transcripts figure shows, one per cell type it tells apart.
TRANSCRIPT_GENES = ("EPCAM", "CD3E", "MS4A1", "PECAM1", "CD68")


def _transcripts_canvas(tissue: Tissue) -> dict[str, Any]:
    """One tumor nest at cell scale with the transcripts of five marker genes and the nuclei over the cells."""
    spec = _canvas(tissue, "Marker transcripts, one tumor nest", "cell_type", zoom_in=True)
    spec["caption"] = (
        "Transcripts of five marker genes, each in its colour, and the nuclei outlined, over the cells and the morphology image"
    )
    spec["points"] = {"element": POINTS, "genes": list(TRANSCRIPT_GENES), "radius": 1.5}
    # each cell's nucleus outlined inside it, so opening the figure (and `make bench`) loads nucleus tiles
    spec["shapes"] = [{"element": NUCLEI, "color": default_shape_color(NUCLEI), "visible": True, "opacity": 1.0}]
    return spec


def _canvas(
    tissue: Tissue, title: str, color_by: str, *, zoom_in: bool = False, colors: dict[str, str] | None = None
) -> dict[str, Any]:
    """A canvas over the morphology image; whole section, or one nest at cell scale.

    The saved view is placed from the image this demo drew (its side in pixels), so a demo
    built at another size opens on its tissue too.
    """
    side_um = tissue.image.shape[-1] * PIXEL_SIZE_UM
    viewport = (
        {"target": [side_um * 0.5, side_um * 0.5], "zoom": 1.5, "rotation": 0}
        if zoom_in
        else {"target": [side_um / 2, side_um / 2], "zoom": float(np.log2(800 / side_um)), "rotation": 0}
    )
    spec: dict[str, Any] = {
        "kind": "canvas",
        "title": title,
        "caption": f"Cells colored by {color_by}, over the morphology image",
        "print_width": 183,
        "table": TABLE,
        "color_by": color_by,
        "colormap": "viridis",
        "image": IMAGE,
        "channels": [
            {"visible": name != "Interior RNA", "name": name, "color": color, "contrast_limits": list(limits)}
            for name, color, limits in zip(CHANNELS, CHANNEL_COLORS, CHANNEL_LIMITS, strict=True)
        ],
        "viewport": viewport,
        "point_size": 2,
    }
    if colors:
        spec["category_colors"] = colors
    return spec
