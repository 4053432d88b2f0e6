"""The small demo (``--small``): 26 cells, for tests and CI, built in seconds.

The base is spatialdata's own ``blobs`` dataset, written by spatialdata. Four
versions sit on it, laid out the way a download of Cirro datasets is: one folder
per dataset, named by its ID, side by side in ``<out>/datasets``.

1. *Tumor margin regions*: a categorical ``regions`` column and cell centroids (``obsm["spatial"]``).
2. *Leiden clusters*: a ``clusters`` column, a markers result, a chart and a canvas figure.
3. *Redrawn regions*: ``regions`` deleted and written anew, a Moran's I result, a note in uns.
4. *Neighborhood enrichment*: a result and its chart; the first chart figure deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sds_jupyter.demo.ids import demo_dataset_id
from sds_jupyter.demo.specs import TABLE, chart_spec, result_meta
from sds_jupyter.stack import Stack, VersionWriter, no_auto_sharding

__all__ = ["build_small_demo"]


def build_small_demo(out: str | Path) -> Path:
    """Build the demo under ``out`` and return the top version's folder."""
    import spatialdata
    from spatialdata.datasets import blobs

    datasets = Path(out) / "datasets"
    datasets.mkdir(parents=True, exist_ok=False)
    base_folder = datasets / demo_dataset_id("base")
    base_folder.mkdir()
    sdata: spatialdata.SpatialData = blobs()
    with no_auto_sharding():
        sdata.write(base_folder / "blobs.sdata.zarr")

    stack = Stack.resolve(base_folder / "blobs.sdata.zarr")
    centroids = _label_centroids(sdata)
    chain: list[Stack] = []
    for step in (_regions, _clusters, _redrawn_regions, _neighborhood):
        writer = VersionWriter(stack)
        info = step(writer, centroids)
        top = writer.commit(datasets / demo_dataset_id(info["title"]), **info)
        stack = Stack.resolve(top)
        chain.append(stack)
    # a branch: saved from the clusters version, beside the main line (the tree shows both)
    writer = VersionWriter(chain[1])
    info = _coarser_clusters(writer, centroids)
    writer.commit(datasets / demo_dataset_id(info["title"]), **info)
    return top


def _coarser_clusters(writer: VersionWriter, cells: pd.DataFrame) -> dict[str, str]:
    coarse = pd.Categorical((cells["x"] // 256).astype(int).astype(str), categories=["0", "1"])
    writer.set_obs(TABLE, "clusters", coarse)
    return {
        "title": "Coarser clusters",
        "message": "Resolution 0.4: a branch saved from Leiden clusters",
        "created_by": "ben@example.org",
    }


def _label_centroids(sdata: Any) -> pd.DataFrame:
    """x, y of each cell of the table, from the labels element it annotates."""
    table = sdata.tables[TABLE]
    labels = np.asarray(sdata.labels["blobs_labels"].values)
    ids = table.obs["instance_id"].to_numpy()
    ys, xs = np.indices(labels.shape)
    flat = labels.ravel()
    counts = np.bincount(flat, minlength=int(ids.max()) + 1).astype(float)
    counts[counts == 0] = 1
    cx = np.bincount(flat, weights=xs.ravel(), minlength=len(counts)) / counts
    cy = np.bincount(flat, weights=ys.ravel(), minlength=len(counts)) / counts
    return pd.DataFrame({"x": cx[ids], "y": cy[ids]}, index=table.obs_names)


def _regions(writer: VersionWriter, cells: pd.DataFrame) -> dict[str, str]:
    distance = np.hypot(cells["x"] - 256, cells["y"] - 256)
    regions = pd.Categorical(
        np.where(distance < 120, "tumor", np.where(distance < 200, "margin", "stroma")),
        categories=["tumor", "margin", "stroma"],
    )
    writer.set_obs(TABLE, "regions", regions)
    writer.set_obsm(TABLE, "spatial", cells[["x", "y"]].to_numpy())
    return {
        "title": "Tumor margin regions",
        "message": "Drawn around the invasive front",
        "created_by": "ana@example.org",
    }


def _clusters(writer: VersionWriter, cells: pd.DataFrame) -> dict[str, str]:
    clusters = pd.Categorical((cells["x"] // 128).astype(int).astype(str), categories=["0", "1", "2", "3"])
    writer.set_obs(TABLE, "clusters", clusters)
    genes = ["channel_0_sum", "channel_1_sum", "channel_2_sum"]
    rng = np.random.default_rng(7)
    markers = pd.DataFrame(
        {
            "group": np.repeat(["0", "1", "2", "3"], len(genes)),
            "gene": genes * 4,
            "score": rng.normal(2, 1, 12).round(3),
            "logfoldchange": rng.normal(0, 1.5, 12).round(3),
            "pval_adj": rng.uniform(0, 0.05, 12).round(5),
        }
    )
    writer.set_result(
        TABLE,
        "markers-leiden",
        {"table": markers},
        result_meta("markers", "Markers per Leiden cluster", "wilcoxon", {"groupby": "clusters"}, {"n_groups": 4}),
    )
    writer.set_figure(
        TABLE,
        "fig-markers",
        chart_spec("Top markers", "markers-leiden", "bar", "gene", "score", "group", print_width=89),
    )
    writer.set_figure(
        TABLE,
        "fig-clusters",
        _canvas("Clusters on the tissue", "clusters", {"0": "#1f77b4", "1": "#ff7f0e", "2": "#2ca02c", "3": "#d62728"}),
    )
    return {
        "title": "Leiden clusters",
        "message": "Resolution 0.8 on the channel sums",
        "created_by": "ana@example.org",
    }


def _redrawn_regions(writer: VersionWriter, cells: pd.DataFrame) -> dict[str, str]:
    writer.delete_obs(TABLE, "regions")
    redrawn = pd.Categorical(np.where(cells["x"] < 256, "left", "right"), categories=["left", "right"])
    writer.set_obs(TABLE, "regions", redrawn)
    morans = pd.DataFrame(
        {
            "feature": ["channel_0_sum", "channel_1_sum", "channel_2_sum"],
            "I": [0.41, 0.12, -0.03],
            "pval": [0.001, 0.08, 0.6],
        }
    )
    writer.set_result(
        TABLE,
        "morans-i",
        {"table": morans},
        result_meta("morans_i", "Spatial autocorrelation", "moran", {"n_neighs": 6}, {"n_features": 3}),
    )
    writer.set_uns(TABLE, "notes", "Regions redrawn after pathology review")
    regions = _canvas("Redrawn regions", "regions", {"left": "#9467bd", "right": "#8c564b"})
    # the segmentation the regions were redrawn over, outlined on opening (the flows and exports draw it)
    regions["labels"] = {"element": "blobs_labels", "style": "outline", "visible": True, "opacity": 1.0}
    # the blobs' polygons outlined beside them (a shapes element no table annotates: flows and exports draw it)
    regions["shapes"] = [{"element": "blobs_polygons", "color": "#00e5ff", "visible": True, "opacity": 1.0}]
    writer.set_figure(TABLE, "fig-regions", regions)
    return {
        "title": "Redrawn regions",
        "message": "Pathology review: split left and right",
        "created_by": "ben@example.org",
    }


def _neighborhood(writer: VersionWriter, cells: pd.DataFrame) -> dict[str, str]:
    groups = ["0", "1", "2", "3"]
    rng = np.random.default_rng(11)
    zscores = pd.DataFrame(
        [{"source": a, "target": b, "zscore": round(float(rng.normal(0, 2)), 3)} for a in groups for b in groups]
    )
    cells_used = pd.DataFrame({"cell": cells.index[:10], "group": ["0"] * 5 + ["1"] * 5})
    writer.set_result(
        TABLE,
        "nhood-enrichment",
        {"table": zscores, "cells": cells_used},
        result_meta(
            "nhood_enrichment",
            "Neighborhood enrichment",
            "permutation",
            {"n_perms": 1000, "cluster_key": "clusters"},
            {"n_groups": 4},
        ),
    )
    writer.set_figure(
        TABLE,
        "fig-nhood",
        chart_spec("Neighborhood enrichment", "nhood-enrichment", "rect", "source", "target", "zscore", print_width=89),
    )
    writer.delete_figure(TABLE, "fig-markers")
    return {
        "title": "Neighborhood enrichment",
        "message": "Which clusters sit next to which",
        "created_by": "ben@example.org",
    }


def _canvas(title: str, color_by: str, colors: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "canvas",
        "title": title,
        "caption": f"Cells colored by {color_by}",
        "print_width": 183,
        "table": TABLE,
        "color_by": color_by,
        "category_colors": colors,
        "colormap": "viridis",
        "image": "blobs_image",
        "channels": [
            {"visible": True, "name": "0", "color": "#ff0000", "contrast_limits": [0.0, 1.0]},
            {"visible": True, "name": "1", "color": "#00ff00", "contrast_limits": [0.0, 1.0]},
            {"visible": False, "name": "2", "color": "#0000ff", "contrast_limits": [0.0, 1.0]},
        ],
        # the tissue (512 units) across the view: the zoom is read at an 800 px reference width
        "viewport": {"target": [256, 256], "zoom": 0.6, "rotation": 0},
        "point_size": 8,
    }
