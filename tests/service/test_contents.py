"""The contents request and the values behind the changes ops, on stacks built here."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import anndata
import numpy as np
import pandas as pd
import pytest

from sds_jupyter.service import StackService, dispatch
from sds_jupyter.stack import Stack
from sds_jupyter.stack.open import open_anndata
from sds_jupyter.stack.write.writer import VersionWriter

pytest_plugins = ["kit.fixtures_service"]


def _json(data: Any) -> Any:
    return json.loads(json.dumps(data, allow_nan=False))


@pytest.fixture(scope="module")
def demo_service(demo_top: Path) -> StackService:
    return StackService(demo_top)


def test_contents_lists_every_element_of_the_demo(demo_service, blobs_store) -> None:
    import spatialdata

    contents = _json(dispatch(demo_service, "contents", {"version": 4}).data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdata = spatialdata.read_zarr(blobs_store)
    by_name = {(e["kind"], e["name"]): e for e in contents["elements"]}
    expected = {
        (kind, name) for kind in ("images", "labels", "shapes", "points", "tables") for name in getattr(sdata, kind)
    }
    assert set(by_name) == expected
    image = by_name[("images", "blobs_multiscale_image")]
    assert image["levels"] == 3 and image["shape"] == [3, 512, 512] and image["channels"] == ["0", "1", "2"]
    for name, shapes in sdata.shapes.items():
        assert by_name[("shapes", name)]["n"] == len(shapes)
        assert by_name[("shapes", name)]["geometry"] == sorted(set(shapes.geometry.geom_type))
    assert by_name[("points", "blobs_points")]["n"] == len(sdata.points["blobs_points"])
    table = by_name[("tables", "table")]
    assert (table["n_obs"], table["n_vars"]) == sdata.tables["table"].shape
    assert table["annotates"] == ["blobs_labels"]


def test_contents_marks_what_the_version_wrote(demo_service) -> None:
    v1 = _json(dispatch(demo_service, "contents", {"version": 1}).data)
    (table,) = v1["tables"]
    columns = {c["column"]: c for c in table["obs"]}
    assert columns["regions"]["status"] == "added" and "status" not in columns["instance_id"]
    assert {k["key"]: k.get("status") for k in table["obsm"]}["spatial"] == "added"
    counts = {c["value"]: c["count"] for c in columns["regions"]["counts"]}
    assert sum(counts.values()) == table["n_obs"] and list(counts) == ["tumor", "margin", "stroma"]
    assert columns["instance_id"]["summary"]["min"] <= columns["instance_id"]["summary"]["median"]
    # v3 rewrote "regions": changed, not added; the base marks nothing
    v3 = _json(dispatch(demo_service, "contents", {"version": 3}).data)
    assert next(c for c in v3["tables"][0]["obs"] if c["column"] == "regions")["status"] == "changed"
    base = _json(dispatch(demo_service, "contents", {"version": 0}).data)
    assert not any("status" in e for e in base["elements"])


def test_changes_come_with_their_values(demo_service) -> None:
    v3 = _json(dispatch(demo_service, "changes", {"version": 3}).data)
    assert len(v3["details"]) == len(v3["ops"])
    by_op = list(zip(v3["ops"], v3["details"], strict=True))
    regions = next(d for op, d in by_op if op["op"] == "set-obs")
    assert regions["column"]["counts"] == [{"value": "left", "count": 16}, {"value": "right", "count": 10}]
    notes = next(d for op, d in by_op if op.get("key") == "notes")
    assert notes == {"value": "Regions redrawn after pathology review"}
    result = next(d for op, d in by_op if op.get("result") == "morans-i")
    assert result == {
        "title": "Spatial autocorrelation",
        "kind": "morans_i",
        "method": "moran",
        "n_rows": 3,
        "existed": False,
    }
    figure = next(d for op, d in by_op if op["op"] == "set-figure")
    assert figure == {"title": "Redrawn regions", "kind": "canvas", "existed": False}
    assert next(d for op, d in by_op if op["op"] == "delete-obs") == {}
    # a deleted figure is named by the title it had in the version below
    v4 = _json(dispatch(demo_service, "changes", {"version": 4}).data)
    deleted = next(d for op, d in zip(v4["ops"], v4["details"], strict=True) if op["op"] == "delete-figure")
    assert deleted == {"title": "Top markers"}


def test_a_replaced_figure_or_result_is_not_added(studio_stack) -> None:
    changes = _json(dispatch(StackService(studio_stack.v2), "changes", {"version": 2}).data)
    by_op = list(zip(changes["ops"], changes["details"], strict=True))
    assert next(d for op, d in by_op if op.get("result") == "res_clusters")["existed"] is True
    assert next(d for op, d in by_op if op.get("figure") == "fig_new")["existed"] is False


@pytest.fixture(scope="module")
def big_version(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 100,000-cell table on a base, and a version that adds two columns."""
    import spatialdata

    n = 100_000
    rng = np.random.default_rng(0)
    obs = pd.DataFrame(
        {
            "region": pd.Categorical(["cells"] * n),
            "instance_id": np.arange(n),
            "cell_type": pd.Categorical(rng.choice([f"type_{i}" for i in range(30)], n)),
            "area": rng.uniform(10, 100, n),
            "qc_pass": rng.random(n) < 0.9,
        },
        index=[f"cell-{i}" for i in range(n)],
    )
    adata = anndata.AnnData(X=np.zeros((n, 5), dtype=np.float32), obs=obs)
    adata.obsm["spatial"] = rng.uniform(0, 5000, (n, 2))
    adata.uns["spatialdata_attrs"] = {"region": "cells", "region_key": "region", "instance_key": "instance_id"}
    datasets = tmp_path_factory.mktemp("big") / "datasets"
    base = datasets / "base-big" / "cells.zarr"
    base.parent.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(tables={"table": adata}).write(base)
    writer = VersionWriter(Stack.resolve(base))
    writer.set_obs("table", "leiden", pd.Categorical(rng.integers(0, 12, n).astype(str)))
    writer.set_obs("table", "score", rng.normal(0, 1, n))
    return writer.commit(datasets / "v-big", title="Leiden")


def test_contents_of_100k_cells(big_version) -> None:
    """Correct on a large table; how long it takes is printed, never asserted (tests do not fail on timing)."""
    service = StackService(big_version)  # a fresh service: nothing cached
    start = time.perf_counter()
    contents = dispatch(service, "contents", {}).data
    print(f"contents of a 100,000-cell version: {time.perf_counter() - start:.3f} s")
    (table,) = contents["tables"]
    assert table["n_obs"] == 100_000 and table["n_vars"] == 5
    assert {c["column"]: c.get("status") for c in table["obs"]} == {
        "region": None,
        "instance_id": None,
        "cell_type": None,
        "area": None,
        "qc_pass": None,
        "leiden": "added",
        "score": "added",
    }


def test_a_clustering_set_again_reads_against_the_one_below(big_version: Path) -> None:
    """Issue 40, item 8: a renaming is told as one (no cell moved), moved cells are counted."""
    leiden = open_anndata(Stack.resolve(big_version)).obs["leiden"]
    renamed = leiden.cat.rename_categories({"0": "T cells", "1": "B cells"})
    writer = VersionWriter(Stack.resolve(big_version))
    writer.set_obs("table", "leiden", pd.Categorical(renamed))
    v_renamed = writer.commit(big_version.parent / "v-renamed", title="Named")
    moved = renamed.astype(str).to_numpy(dtype=object)
    t_cells = np.flatnonzero(moved == "T cells")[:99]
    moved[t_cells] = "B cells"
    writer = VersionWriter(Stack.resolve(v_renamed))
    writer.set_obs("table", "leiden", pd.Categorical(moved))
    v_moved = writer.commit(big_version.parent / "v-moved", title="Moved")

    detail = _json(dispatch(StackService(v_renamed), "changes", {}).data)["details"][0]
    assert detail["agreement"]["n_moved"] == 0
    pairs = {(p["a"], p["b"]) for p in detail["agreement"]["matched"] if p["a"] != p["b"]}
    assert pairs == {("0", "T cells"), ("1", "B cells")}
    detail = _json(dispatch(StackService(v_moved), "changes", {}).data)["details"][0]
    assert detail["agreement"]["n_moved"] == 99 and detail["agreement"]["ari"] < 1
