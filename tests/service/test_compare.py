"""The compare request on stacks built here: every count checked against pandas itself.

The expected transitions are computed independently with ``pd.crosstab`` on the
AnnData objects read back from each version, never with the service's code.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anndata
import numpy as np
import pandas as pd
import pytest

from sds_jupyter.service import StackService, dispatch
from sds_jupyter.service.celldiff import RENAMED
from sds_jupyter.stack import Stack
from sds_jupyter.stack.open import open_anndata
from sds_jupyter.stack.write.writer import VersionWriter

pytest_plugins = ["kit.fixtures_service"]

N = 60
MISSING = "<missing>"


def _base_adata() -> anndata.AnnData:
    rng = np.random.default_rng(3)
    obs = pd.DataFrame(
        {
            "regions": pd.Categorical(
                rng.choice(["core", "margin", "stroma"], N), categories=["core", "margin", "stroma"]
            ),
            "area": rng.uniform(10, 50, N),
            "is_tumor": rng.random(N) < 0.5,
            "note": rng.choice(["ok", "check"], N).astype(object),
            "region": pd.Categorical(["cells"] * N),
            "instance_id": np.arange(N),
            "dropped": np.arange(N, dtype=float),
            "same": pd.Categorical(["x"] * N),
        },
        index=[f"cell-{i}" for i in range(N)],
    )
    obs.loc["cell-3", "regions"] = np.nan  # a missing value in A
    adata = anndata.AnnData(X=np.zeros((N, 2), dtype=np.float32), obs=obs)
    adata.obsm["spatial"] = np.column_stack([np.arange(N, dtype=float), np.zeros(N)])
    adata.uns["params"] = {"resolution": 0.5}
    adata.uns["notes"] = "first draw"
    adata.uns["spatialdata_attrs"] = {"region": "cells", "region_key": "region", "instance_key": "instance_id"}
    return adata


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A base table and one version that edits every kind of column, obsm, uns, figures and results."""
    import spatialdata

    datasets = tmp_path_factory.mktemp("compare") / "datasets"
    base = datasets / "base-1" / "cells.zarr"
    base.parent.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(tables={"table": _base_adata()}).write(base)

    writer = VersionWriter(Stack.resolve(base))
    a = _base_adata().obs
    # regions: reordered categories, some cells moved, one value made missing, the missing one filled
    regions = a["regions"].astype(object).copy()
    regions.iloc[0:7] = "stroma"
    regions.iloc[10] = np.nan
    regions.loc["cell-3"] = "core"
    writer.set_obs("table", "regions", pd.Categorical(regions, categories=["stroma", "margin", "core"]))
    area = a["area"].to_numpy().copy()
    area[:5] += np.array([1.0, -2.0, 0.5, 3.0, -0.25])
    writer.set_obs("table", "area", area)
    flags = a["is_tumor"].to_numpy().copy()
    flags[:4] = ~flags[:4]
    writer.set_obs("table", "is_tumor", flags)
    note = a["note"].to_numpy().copy()
    note[20:23] = "reviewed"
    writer.set_obs("table", "note", note)
    writer.set_obs("table", "same", pd.Categorical(["x"] * N, categories=["x", "unused"]))  # rewritten, same values
    writer.set_obs("table", "leiden", pd.Categorical(["0"] * 40 + ["1"] * 20))
    writer.delete_obs("table", "dropped")
    spatial = np.column_stack([np.arange(N, dtype=float), np.zeros(N)])
    spatial[2] = [5.0, 4.0]  # moved by 5 (3-4-5)
    writer.set_obsm("table", "spatial", spatial)
    writer.set_obsm("table", "X_umap", np.zeros((N, 2)))
    writer.set_uns("table", "notes", "Pathology review: regions redrawn")
    writer.set_uns("table", "big", list(range(100)))
    writer.set_figure("table", "fig-a", {"kind": "canvas", "title": "Clusters on the tissue", "color_by": "leiden"})
    markers = pd.DataFrame({"group": ["0", "1"], "gene": ["g1", "g2"], "score": [1.0, 2.0]})
    writer.set_result(
        "table", "markers", {"table": markers}, {"kind": "markers", "title": "Markers of leiden", "method": "wilcoxon"}
    )
    v1 = writer.commit(datasets / "v-1", title="Edit", message="edits")

    writer = VersionWriter(Stack.resolve(v1))
    writer.set_result(
        "table",
        "markers",
        {"table": markers.assign(score=[1.0, 2.5])},
        {"kind": "markers", "title": "Markers of leiden", "method": "wilcoxon"},
    )
    writer.delete_figure("table", "fig-a")
    v2 = writer.commit(datasets / "v-2", title="Rescored", message="scores")
    return v1, v2


def _json(data: Any) -> Any:
    return json.loads(json.dumps(data, allow_nan=False))


def _crosstab(a: pd.Series, b: pd.Series) -> list[dict[str, Any]]:
    """Off-diagonal cells of pandas' crosstab: the transitions, computed without the service."""
    both = pd.DataFrame({"a": a.astype(object), "b": b.astype(object)}).loc[a.index.intersection(b.index)]
    table = pd.crosstab(
        both["a"].astype(str).where(both["a"].notna(), MISSING), both["b"].astype(str).where(both["b"].notna(), MISSING)
    )
    out = []
    for value_a in table.index:
        for value_b in table.columns:
            count = int(table.loc[value_a, value_b])
            if count and value_a != value_b:
                out.append(
                    {
                        "a": None if value_a == MISSING else value_a,
                        "b": None if value_b == MISSING else value_b,
                        "count": count,
                    }
                )
    return sorted(out, key=lambda t: (-t["count"], t["a"] or "", t["b"] or ""))


def test_transitions_match_a_crosstab(edited) -> None:
    v1, _ = edited
    service = StackService(v1)
    comparison = _json(dispatch(service, "compare", {"a": 0, "b": 1}).data)
    obs_a, obs_b = open_anndata(Stack.resolve(v1).at(0)).obs, open_anndata(v1).obs
    changed = {c["column"]: c for c in comparison["obs"]["changed"]}
    assert set(changed) == {"regions", "area", "is_tumor", "note"}  # "same" was rewritten with equal values

    for column, kind in (("regions", "categorical"), ("is_tumor", "boolean"), ("note", "string")):
        expected = _crosstab(obs_a[column], obs_b[column])
        assert changed[column]["kind"] == kind
        assert changed[column]["transitions"] == expected, column
        assert changed[column]["n_changed"] == sum(t["count"] for t in expected)
        assert changed[column]["n_transitions"] == len(expected)
    # missing values count as values: a cell that lost its region and one that gained one
    regions = changed["regions"]["transitions"]
    assert any(t["b"] is None for t in regions) and any(t["a"] is None and t["b"] == "core" for t in regions)
    # reordering categories alone changes nothing: only the 9 edited cells differ
    differs = (obs_a["regions"].astype(object).fillna(MISSING) != obs_b["regions"].astype(object).fillna(MISSING)).sum()
    assert changed["regions"]["n_changed"] == differs

    area = changed["area"]
    assert area["kind"] == "numeric" and "transitions" not in area
    delta = obs_b["area"] - obs_a["area"]
    assert area["n_changed"] == int((delta != 0).sum()) == 5
    assert area["max_abs_delta"] == pytest.approx(float(delta.abs().max())) == pytest.approx(3.0)
    assert sum(area["delta_histogram"]["counts"]) == 5
    assert area["delta_histogram"]["edges"][0] == pytest.approx(-2.0)


def test_added_and_removed_columns_show_their_values(edited) -> None:
    v1, _ = edited
    obs = _json(dispatch(StackService(v1), "compare", {"a": 0, "b": 1}).data)["obs"]
    assert obs["added"] == ["leiden"] and obs["removed"] == ["dropped"]
    (leiden,) = obs["added_columns"]
    assert leiden["kind"] == "categorical" and leiden["counts"] == [
        {"value": "0", "count": 40},
        {"value": "1", "count": 20},
    ]
    (dropped,) = obs["removed_columns"]
    assert dropped["kind"] == "numeric"
    assert dropped["summary"] == {
        "min": 0.0,
        "median": pytest.approx(29.5),
        "mean": pytest.approx(29.5),
        "max": float(N - 1),
    }
    assert obs["n_cells_a"] == obs["n_cells_b"] == obs["n_common"] == N


def test_obsm_uns_figures_and_results(edited) -> None:
    _, v2 = edited
    comparison = _json(dispatch(StackService(v2), "compare", {"a": 0, "b": 1}).data)
    obsm = {entry["key"]: entry for entry in comparison["obsm_changes"]}
    assert obsm["X_umap"] == {"key": "X_umap", "change": "added", "shape_a": None, "shape_b": [N, 2]}
    assert obsm["spatial"]["n_rows_changed"] == 1 and obsm["spatial"]["max_displacement"] == pytest.approx(5.0)
    assert comparison["obsm"] == {"added": ["X_umap"], "removed": [], "changed": ["spatial"]}
    uns = {entry["key"]: entry for entry in comparison["uns_changes"]}
    assert uns["notes"] == {
        "key": "notes",
        "change": "changed",
        "a": "first draw",
        "b": "Pathology review: regions redrawn",
    }
    assert uns["big"] == {"key": "big", "change": "added"}  # too long to show
    assert "spatial_data_studio" not in comparison["uns"]["changed"] + comparison["uns"]["added"]
    assert comparison["figure_changes"] == [{"id": "fig-a", "change": "added", "title": "Clusters on the tissue"}]
    (result,) = comparison["result_changes"]
    assert result == {
        "id": "markers",
        "change": "added",
        "title": "Markers of leiden",
        "kind": "markers",
        "n_rows_b": 2,
    }

    later = _json(dispatch(StackService(v2), "compare", {"a": 1, "b": 2}).data)
    assert later["figure_changes"] == [{"id": "fig-a", "change": "removed", "title": "Clusters on the tissue"}]
    (rescored,) = later["result_changes"]
    assert rescored["change"] == "changed" and rescored["table_changed"] is True and rescored["n_rows_changed"] == 1
    assert later["obs"]["changed"] == [] and later["uns_changes"] == []


def test_the_lists_and_the_details_are_one_source(edited) -> None:
    """The old name lists are derived from the detailed entries: they can never disagree."""
    v1, _ = edited
    comparison = _json(dispatch(StackService(v1), "compare", {"a": 1, "b": 0}).data)
    for part, details, name in (
        ("obsm", "obsm_changes", "key"),
        ("uns", "uns_changes", "key"),
        ("figures", "figure_changes", "id"),
    ):
        for status in ("added", "removed", "changed"):
            assert comparison[part][status] == [d[name] for d in comparison[details] if d["change"] == status]
    # B against A is A against B mirrored
    assert comparison["obs"]["added"] == ["dropped"] and comparison["obs"]["removed"] == ["leiden"]
    regions = next(c for c in comparison["obs"]["changed"] if c["column"] == "regions")
    forward = next(
        c
        for c in _json(dispatch(StackService(v1), "compare", {"a": 0, "b": 1}).data)["obs"]["changed"]
        if c["column"] == "regions"
    )
    assert sorted((t["b"] or "", t["a"] or "", t["count"]) for t in regions["transitions"]) == sorted(
        (t["a"] or "", t["b"] or "", t["count"]) for t in forward["transitions"]
    )


def test_cells_are_matched_by_index_not_position() -> None:
    from sds_jupyter.service.celldiff import obs_change

    a = pd.Series(pd.Categorical(["x", "y", "z"]), index=["c1", "c2", "c3"])
    b = pd.Series(pd.Categorical(["z", "x", "q"], categories=["q", "x", "z"]), index=["c3", "c1", "c4"])
    assert obs_change("k", a, b) is None  # c1 and c3 hold the same values; c2 and c4 are not shared
    b2 = pd.Series([np.nan, 2.0, 5.0], index=["c3", "c1", "c2"])
    a2 = pd.Series([np.nan, 2.0, 1.0], index=["c3", "c1", "c2"])
    change = obs_change("n", a2, b2)
    assert change is not None and change["n_changed"] == 1 and change["max_abs_delta"] == 4.0


# ------------------------------------------------------------------ across branches of the tree


@pytest.fixture
def branched(studio_stack: Any, tmp_path: Path) -> Path:
    """A copy of the studio stack's datasets folder with a branch on v1 that relabels every cell."""
    import shutil

    datasets = tmp_path / "datasets"
    shutil.copytree(studio_stack.datasets, datasets, symlinks=True)
    writer = VersionWriter(Stack.resolve(datasets / "studio-1111"))
    n_obs = writer.n_obs("table")
    writer.set_obs("table", "region_class", pd.Categorical(["margin"] * n_obs))
    writer.commit(datasets / "branch-3333", title="Margins", message="a branch", created_by="c@example.org")
    return datasets


def test_compare_reaches_a_version_on_another_branch(branched: Path) -> None:
    service = StackService(branched / "edit-2222")
    assert {n["dataset_id"] for n in service.tree()["nodes"]} >= {"branch-3333", "edit-2222"}
    data = json.loads(json.dumps(dispatch(service, "compare", {"a": "branch-3333", "b": 2}).data))
    change = next(c for c in data["obs"]["changed"] if c["column"] == "region_class")
    # counted independently: the branch holds "margin" everywhere, v2 "tumor" everywhere
    branch = open_anndata(Stack.resolve(branched / "branch-3333"), table="table").obs["region_class"].astype(str)
    edit = open_anndata(Stack.resolve(branched / "edit-2222"), table="table").obs["region_class"].astype(str)
    crosstab = pd.crosstab(branch, edit)
    assert change["transitions"] == [
        {"a": a, "b": b, "count": int(crosstab.loc[a, b])} for a in crosstab.index for b in crosstab.columns if a != b
    ]
    assert change["n_changed"] == len(edit)
    # the branch's coloring against the opened version works the same way
    reply = dispatch(
        service,
        "color_values",
        {"version": 2, "figure": "fig_canvas", "column": "region_class", "against": "branch-3333"},
    )
    # every cell went from one group to one group: a renaming, no cell moved (issue 28)
    assert reply.data["categories"] == [RENAMED]


def test_compare_refuses_a_version_outside_the_datasets_folder(branched: Path, tmp_path: Path) -> None:
    import shutil

    from sds_jupyter.errors import StackError

    outside = tmp_path / "elsewhere"
    shutil.copytree(branched / "branch-3333", outside / "away-4444")
    service = StackService(branched / "edit-2222")
    with pytest.raises(StackError, match="No version 'away-4444'"):
        dispatch(service, "compare", {"a": "away-4444", "b": 2})
    # a link inside the folder that leads out of it is not followed either
    (branched / "away-4444").symlink_to(outside / "away-4444", target_is_directory=True)
    with pytest.raises(StackError, match="away-4444"):
        dispatch(service, "compare", {"a": "away-4444", "b": 2})
    with pytest.raises(StackError, match="No version '../studio-1111'"):
        dispatch(service, "compare", {"a": "../studio-1111", "b": 2})
