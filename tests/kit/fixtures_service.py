"""Shared fixtures of the studio, service, widget, magics and server tests.

Loaded with ``pytest_plugins = ["kit.fixtures_service"]`` by those modules
(tests/conftest.py belongs to the stack library). Fixtures build real stores:
spatialdata's blobs dataset as a base, and versions written by the stack
library's VersionWriter carrying figures and results like the app saves.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
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
    morans = pd.DataFrame(
        {"I": rng.uniform(size=30), "pval_norm": rng.uniform(size=30)}, index=pd.Index(GENES, name="gene")
    )
    nhood = pd.DataFrame(rng.normal(size=(3, 3)), index=["c0", "c1", "c2"], columns=["c0", "c1", "c2"])
    niches = pd.DataFrame(
        {"niche": ["n0", "n0", "n1", "n1"], "cell_type": ["t", "b", "t", "b"], "fraction": [0.2, 0.8, 0.6, 0.4]}
    )
    clusters = pd.DataFrame({"cluster": ["0", "1", "2"], "n_cells": [10, 9, 7]})
    cells = pd.DataFrame({"cell": ["1", "2"], "side": ["a", "b"]})

    def meta(kind: str, title: str) -> dict[str, Any]:
        return {
            "kind": kind,
            "title": title,
            "method": "test",
            "parameters": {},
            "summary": {},
            "created_by": "tester",
            "created_at": "2026-10-20T06:41:12Z",
            "app_version": "1.3.0",
        }

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
        "kind": "canvas",
        "title": "Regions on tissue",
        "caption": "Blobs by region",
        "print_width": 89,
        "table": "table",
        "color_by": "region_class",
        "category_colors": {"tumor": "#d62728"},
        "image": "blobs_image",
        "channels": [
            {"visible": True, "name": "0", "color": "#ff0000", "contrast_limits": [0, 1]},
            {"visible": False, "name": "1", "color": "#00ff00", "contrast_limits": [0, 1]},
        ],
        "viewport": {"target": [256, 256], "zoom": 0, "rotation": 0},
        "point_size": 6,
    }
    chart = {
        "kind": "chart",
        "title": "Top markers",
        "caption": "scores",
        "print_width": "double",
        "result": "res_markers",
        "table": "table",
        "mark": "bar",
        "x": "scores",
        "y": "names",
        "color": "group",
    }
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


# ---------------------------------------------------------------- stacks on disk

BASE_ID = "base-0000"
STUDIO_ID = "studio-1111"
EDIT_ID = "edit-2222"


@dataclass(frozen=True)
class StudioStack:
    """A base and two versions: v1 saves a studio section, v2 edits it."""

    datasets: Path
    base: Path
    v1: Path
    v2: Path


def _build_studio_stack(datasets: Path, blobs: Path) -> StudioStack:
    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.write.writer import VersionWriter

    base_folder = datasets / BASE_ID
    base_folder.mkdir(parents=True)
    shutil.copytree(blobs, base_folder / "blobs.zarr")

    writer = VersionWriter(Stack.resolve(base_folder / "blobs.zarr"))
    n_obs = writer.n_obs("table")
    writer.set_obs("table", "region_class", pd.Categorical(["tumor" if i % 2 else "stroma" for i in range(n_obs)]))
    writer.set_obs("table", "score", np.linspace(0, 1, n_obs))
    writer.set_uns("table", "spatial_data_studio", studio_section())
    v1 = writer.commit(
        datasets / STUDIO_ID, title="Studio section", message="figures and results", created_by="a@example.org"
    )

    writer = VersionWriter(Stack.resolve(v1))
    writer.set_obs("table", "region_class", pd.Categorical(["tumor"] * n_obs))
    writer.set_obs("table", "added_col", np.arange(n_obs, dtype=float))
    writer.delete_obs("table", "score")
    writer.set_obsm("table", "spatial", np.column_stack([np.arange(n_obs), np.arange(n_obs)]).astype(float))
    writer.delete_figure("table", "fig_not_json")
    writer.set_figure("table", "fig_new", {"kind": "canvas", "title": "New", "color_by": "added_col"})
    tables, meta = result_tables()["res_clusters"]
    assert meta is not None
    writer.set_result("table", "res_clusters", {"table": tables["table"].assign(n_cells=[1, 2, 3])}, meta)
    writer.set_uns("table", "notes", "edited")
    v2 = writer.commit(datasets / EDIT_ID, title="Edit", message="edits", created_by="b@example.org")
    return StudioStack(datasets, base_folder / "blobs.zarr", v1, v2)


@pytest.fixture(scope="session")
def studio_stack(tmp_path_factory: pytest.TempPathFactory, blobs_store: Path) -> StudioStack:
    """Base (blobs) → v1 (studio section with good and bad entries) → v2 (edits). Do not modify."""
    return _build_studio_stack(tmp_path_factory.mktemp("studio") / "datasets", blobs_store)


@pytest.fixture
def studio_copy(tmp_path: Path, studio_stack: StudioStack) -> StudioStack:
    """A private copy of the studio stack, for tests that save versions into its datasets folder."""
    datasets = Path(shutil.copytree(studio_stack.datasets, tmp_path / "studio-datasets", symlinks=True))
    return StudioStack(datasets, datasets / BASE_ID / "blobs.zarr", datasets / STUDIO_ID, datasets / EDIT_ID)


@pytest.fixture(scope="session")
def demo_top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's demo stack (four versions on blobs); its top version's folder."""
    from sds_jupyter.demo import build_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_demo(tmp_path_factory.mktemp("demo"), small=True)


@pytest.fixture(scope="session")
def orphan_version(tmp_path_factory: pytest.TempPathFactory, studio_stack: StudioStack) -> Path:
    """The studio stack's top version copied alone: its parent dataset is missing."""
    datasets = tmp_path_factory.mktemp("orphan") / "datasets"
    return Path(shutil.copytree(studio_stack.v2, datasets / EDIT_ID))


@pytest.fixture(scope="session")
def outside_datasets(tmp_path_factory: pytest.TempPathFactory, studio_stack: StudioStack) -> Path:
    """A copy of the studio stack outside every server root, where the REST root's links out lead
    (read only: a link out is refused before anything is read through it). Copied once per worker."""
    return Path(shutil.copytree(studio_stack.datasets, tmp_path_factory.mktemp("outside") / "datasets"))


@pytest.fixture(scope="session")
def named_datasets(tmp_path_factory: pytest.TempPathFactory, studio_stack: StudioStack) -> tuple[Path, dict[str, str]]:
    """The studio stack with folders named for people, not IDs, and its folder map."""
    datasets = tmp_path_factory.mktemp("named") / "datasets"
    folders = {BASE_ID: "Blobs base", STUDIO_ID: "Studio section", EDIT_ID: "Edit"}
    for dataset_id, name in folders.items():
        shutil.copytree(studio_stack.datasets / dataset_id, datasets / name, symlinks=True)
    return datasets, folders


# ---------------------------------------------------------------- widget comms


class RecordingComm:
    """Stands in for a kernel's comm via comm's own hook: keeps what the widget publishes."""

    def __init__(self, **kwargs: Any) -> None:
        from comm.base_comm import BaseComm

        class _Comm(BaseComm):
            def publish_msg(
                inner, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:  # noqa: N805
                self.messages.append({"msg_type": msg_type, "data": data, "buffers": list(buffers or [])})

        self.messages: list[dict[str, Any]] = []
        self.comm = _Comm(**kwargs)


@pytest.fixture
def recorded_messages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Every message widgets created in the test publish, in order.

    The Python side is tested whether or not the front end is built (or being
    rebuilt): when ``sds_jupyter/static`` lacks the bundle, stand-in files are used.
    """
    import comm

    from sds_jupyter import widget

    for attribute, name in (("_ESM_PATH", "widget.js"), ("_APP_PATH", "widget-app.js"), ("_CSS_PATH", "widget.css")):
        if not getattr(widget, attribute).is_file():
            stand_in = tmp_path / name
            stand_in.write_text("export default { render() {} };\n" if name.endswith(".js") else "\n")
            monkeypatch.setattr(widget, attribute, stand_in)

    messages: list[dict[str, Any]] = []

    def create_comm(**kwargs: Any) -> Any:
        recorder = RecordingComm(**kwargs)
        recorder.messages = messages
        return recorder.comm

    monkeypatch.setattr(comm, "create_comm", create_comm)
    return messages


# ---------------------------------------------------------------- object storage


@pytest.fixture(scope="session")
def s3_options() -> Any:
    """fsspec options for moto's S3-compatible server on loopback (skipped without moto/s3fs)."""
    import socket

    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            patch.setenv(name, "testing")
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        try:
            yield {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}"}}
        finally:
            server.stop()


@pytest.fixture(scope="session")
def s3_studio_stack(s3_options: dict[str, Any], studio_stack: StudioStack) -> str:
    """The studio stack uploaded to a bucket; the URL of its top version."""
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    fs.mkdir("studio-bucket")
    fs.put(str(studio_stack.datasets) + "/", "studio-bucket/datasets/", recursive=True)
    fs.invalidate_cache()
    return f"s3://studio-bucket/datasets/{studio_stack.v2.name}"


@pytest.fixture(scope="session")
def transformed_blobs_root(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Blobs whose image, labels and circles carry transformations to ``global``."""
    import spatialdata
    import zarr
    from spatialdata.transformations import Scale, Sequence, Translation, set_transformation

    path = tmp_path_factory.mktemp("blobs-t") / "blobs.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdata = spatialdata.datasets.blobs()
        image_map = Sequence([Scale([2.0, 2.0], axes=("y", "x")), Translation([10.0, 5.0], axes=("x", "y"))])
        set_transformation(sdata.images["blobs_image"], image_map, to_coordinate_system="global")
        set_transformation(
            sdata.labels["blobs_labels"], Scale([0.5, 0.5], axes=("y", "x")), to_coordinate_system="global"
        )
        set_transformation(
            sdata.shapes["blobs_circles"], Scale([3.0, 3.0], axes=("x", "y")), to_coordinate_system="global"
        )
        sdata.write(path)
    return zarr.open_group(path, mode="r")
