"""Shared fixtures of the studio, service, widget, magics and server tests.

Loaded with ``pytest_plugins = ["tests.fixtures_service"]`` by those modules
(tests/conftest.py belongs to the stack library). Fixtures build real stores:
spatialdata's blobs dataset as a base, and versions written by the stack
library's VersionWriter carrying figures and results like the app saves.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

GENES = [f"gene{i}" for i in range(30)]


def result_tables() -> dict[str, tuple[dict[str, pd.DataFrame], dict[str, Any] | None]]:
    """One result of every kind the app makes, as (tables, meta); meta None = missing."""
    rng = np.random.default_rng(0)
    markers = pd.DataFrame(
        {
            "group": np.repeat(["a", "b"], 15),
            "names": GENES,
            "scores": rng.normal(size=30),
            "logfoldchanges": rng.normal(size=30),
            "pvals_adj": rng.uniform(size=30),
        }
    )
    comparison = markers.drop(columns="group")
    morans = pd.DataFrame({"I": rng.uniform(size=30), "pval_norm": rng.uniform(size=30)}, index=pd.Index(GENES, name="gene"))
    nhood = pd.DataFrame(rng.normal(size=(3, 3)), index=["c0", "c1", "c2"], columns=["c0", "c1", "c2"])
    niches = pd.DataFrame({"niche": ["n0", "n0", "n1", "n1"], "cell_type": ["t", "b", "t", "b"], "fraction": [0.2, 0.8, 0.6, 0.4]})
    clusters = pd.DataFrame({"cluster": ["0", "1", "2"], "n_cells": [10, 9, 7]})
    cells = pd.DataFrame({"cell": ["1", "2"], "side": ["a", "b"]})

    def meta(kind: str, title: str) -> dict[str, Any]:
        return {"kind": kind, "title": title, "method": "test", "parameters": {}, "summary": {},
                "created_by": "tester", "created_at": "2026-10-20T06:41:12Z", "app_version": "1.3.0"}

    return {
        "res_markers": ({"table": markers}, meta("markers", "Markers per region")),
        "res_comparison": ({"table": comparison, "cells": cells}, meta("comparison", "a vs b")),
        "res_morans": ({"table": morans}, meta("morans_i", "Moran's I")),
        "res_nhood": ({"table": nhood}, meta("nhood_enrichment", "Neighborhood enrichment")),
        "res_niches": ({"table": niches}, meta("niches", "Niches")),
        "res_clusters": ({"table": clusters}, meta("clusters", "Clusters")),
        "res_nometa": ({"table": clusters}, None),
    }


def figure_specs() -> dict[str, str]:
    """Figure JSON strings: drawable ones and every kind of bad input."""
    canvas = {
        "kind": "canvas", "title": "Regions on tissue", "caption": "Blobs by region", "print_width": 89,
        "table": "table", "color_by": "region_class", "category_colors": {"tumor": "#d62728"},
        "image": "blobs_image",
        "channels": [{"visible": True, "name": "0", "color": "#ff0000", "contrast_limits": [0, 1]},
                     {"visible": False, "name": "1", "color": "#00ff00", "contrast_limits": [0, 1]}],
        "viewport": {"target": [256, 256], "zoom": 0, "rotation": 0}, "point_size": 6,
    }
    chart = {"kind": "chart", "title": "Top markers", "caption": "scores", "print_width": "double",
             "result": "res_markers", "table": "table", "mark": "bar", "x": "scores", "y": "names", "color": "group"}
    return {
        "fig_canvas": json.dumps(canvas),
        "fig_continuous": json.dumps({"kind": "canvas", "title": "Score", "color_by": "score", "colormap": "magma"}),
        "fig_chart": json.dumps(chart),
        "fig_not_json": "{this is not json",
        "fig_unknown_kind": json.dumps({"kind": "map"}),
        "fig_bad_mark": json.dumps({**chart, "mark": "line"}),
        "fig_missing_result": json.dumps({**chart, "result": "res_gone"}),
    }


def studio_section() -> dict[str, Any]:
    """``uns["spatial_data_studio"]`` as an AnnData would hold it in memory."""
    results: dict[str, Any] = {}
    for result_id, (tables, meta) in result_tables().items():
        entry: dict[str, Any] = dict(tables)
        if meta is not None:
            entry["meta"] = json.dumps(meta)
        results[result_id] = entry
    return {"figures": figure_specs(), "results": results}


def add_obs_columns(adata: Any) -> None:
    """The obs columns the canvas figures color by."""
    adata.obs["region_class"] = pd.Categorical(["tumor" if i % 2 else "stroma" for i in range(adata.n_obs)])
    adata.obs["score"] = np.linspace(0, 1, adata.n_obs)


@pytest.fixture(scope="session")
def blobs_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """spatialdata's blobs dataset written as a Zarr v3 store (read-only for tests)."""
    import spatialdata

    path = tmp_path_factory.mktemp("blobs") / "blobs.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.datasets.blobs().write(path)
    return path


@pytest.fixture
def studio_adata(blobs_store: Path) -> Any:
    """The blobs table, read from the store, with obs columns and a studio section."""
    import anndata
    import zarr

    adata = anndata.io.read_elem(zarr.open_group(blobs_store, mode="r")["tables/table"])
    add_obs_columns(adata)
    adata.uns["spatial_data_studio"] = studio_section()
    return adata


@pytest.fixture
def blobs_root(blobs_store: Path) -> Any:
    """The blobs store's root group, read-only."""
    import zarr

    return zarr.open_group(blobs_store, mode="r")
