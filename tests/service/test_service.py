"""StackService: every request of the protocol, on real stacks, and every error state."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kit.repo import ROOT

from sds_jupyter.errors import FigureError, MissingDatasetError, ResultError, StackError
from sds_jupyter.protocol.reply import as_buffer
from sds_jupyter.service import (
    REQUESTS,
    RequestError,
    StackService,
    dispatch,
    error_payload,
    frame_reply,
    unframe_reply,
)
from sds_jupyter.stack import Stack
from sds_jupyter.stack.open import open_anndata
from sds_jupyter.studio import tableview as tables
from sds_jupyter.studio.canvas import build_canvas
from sds_jupyter.studio.figurespecs import read_figure
from sds_jupyter.studio.jsonable import json_scalar

pytest_plugins = ["kit.fixtures_service"]


def _json(data: object) -> object:
    """Everything the service answers must survive strict JSON."""
    return json.loads(json.dumps(data, allow_nan=False))


@pytest.fixture
def service(studio_stack) -> StackService:
    return StackService(studio_stack.v2)


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")}


# ------------------------------------------------------------------ history / changes


def test_history_lists_versions_top_first_and_the_base(service, studio_stack) -> None:
    history = _json(dispatch(service, "history").data)
    assert history["top_depth"] == 2
    assert [v["depth"] for v in history["versions"]] == [2, 1]
    top = history["versions"][0]
    assert top["dataset_id"] == "edit-2222" and top["title"] == "Edit" and top["created_by"] == "b@example.org"
    assert {c["op"] for c in top["changes"]} >= {"set-obs", "delete-obs", "set-obsm", "set-figure", "delete-figure"}
    assert top["n_files"] > 0 and top["n_deleted"] >= 2
    assert history["base"] == {
        "depth": 0,
        "dataset_id": "base-0000",
        "path": str(studio_stack.base.resolve()),
        "kind": "folder",
        "zarr_format": 3,
    }
    assert "error" not in history


def test_history_of_a_store_alone(studio_stack) -> None:
    history = StackService(studio_stack.base).history()
    assert history["top_depth"] == 0 and history["versions"] == [] and history["base"]["kind"] == "folder"


def test_history_reports_a_missing_parent_in_place(orphan_version) -> None:
    service = StackService(orphan_version)
    history = _json(dispatch(service, "history").data)
    # the version that resolves is listed, down to the break (issue 11)
    assert [v["dataset_id"] for v in history["versions"]] == ["edit-2222"] and history["base"] is None
    assert history["error"]["kind"] == "missing-dataset" and history["error"]["dataset_id"] == "studio-1111"
    assert "studio-1111" in history["error"]["message"]
    figures = dispatch(service, "figures").data["error"]
    assert figures["kind"] == "missing-dataset" and "add it to the workspace" in figures["message"]
    with pytest.raises(MissingDatasetError, match="studio-1111"):
        dispatch(service, "canvas", {"figure": "fig_canvas"})


def test_a_broken_chain_keeps_the_versions_own_numbers_and_names_its_figures(orphan_version, tmp_path) -> None:
    """Issue 29 item 5: above a missing parent, v2 stays v2 (not renumbered v1) in the history, the
    tree and changes; Figures names the figures the version saved, each saying it needs the missing dataset."""
    service = StackService(orphan_version)
    history = _json(dispatch(service, "history").data)
    assert [(v["depth"], v["dataset_id"]) for v in history["versions"]] == [(2, "edit-2222")]
    assert history["top_depth"] == 2
    [node] = _json(dispatch(service, "tree").data)["nodes"]
    assert (node["dataset_id"], node["depth"]) == ("edit-2222", 2)
    # every tree node carries its ops, so a search finds versions off the opened chain by column or op
    assert {"op": "set-obs", "table": "table", "column": "added_col", "kind": "numeric"} in node["changes"]
    assert [op["op"] for op in _json(dispatch(service, "changes", {"version": 2}).data)["ops"]][:1] == ["set-obs"]
    data = _json(dispatch(service, "figures", {"version": 2}).data)
    assert data["error"]["dataset_id"] == "studio-1111"
    # v2 saved fig_new and deleted fig_not_json: only the one it holds is named
    assert [(f["id"], f["title"], f["kind"]) for f in data["figures"]] == [("fig_new", "New", "unsupported")]
    assert "studio-1111" in data["figures"][0]["reason"] and "missing" in data["figures"][0]["reason"]
    # a manifest without its depth: the missing version below still counts as one
    copy = tmp_path / "datasets" / orphan_version.name
    shutil.copytree(orphan_version, copy)
    manifest = json.loads((copy / "layer.json").read_text())
    del manifest["depth"]
    (copy / "layer.json").write_text(json.dumps(manifest))
    assert [v["depth"] for v in StackService(copy).history()["versions"]] == [2]


def test_folder_map_from_environment(named_datasets, monkeypatch) -> None:
    datasets, folders = named_datasets
    monkeypatch.setenv("SDS_CIRRO_DATASETS", json.dumps(folders))
    history = StackService(datasets / "Edit").history()
    assert [v["dataset_id"] for v in history["versions"]] == ["edit-2222", "studio-1111"]
    assert history["base"]["dataset_id"] == "base-0000"


def test_changes_split_added_and_replaced_keys(service) -> None:
    changes = _json(dispatch(service, "changes", {"version": 2}).data)
    added = {item["key"] for item in changes["added"]}
    replaced = {item["key"] for item in changes["replaced"]}
    assert "zarr.json" in replaced and "tables/table/obs/zarr.json" in replaced
    assert any(key.startswith("tables/table/obs/added_col/") for key in added)
    assert any(key.startswith("tables/table/obsm/spatial/") for key in added)
    assert {"entry": "tables/table/obs/score/", "node": True} in changes["deleted"]
    assert [op["op"] for op in changes["ops"]][:2] == ["set-obs", "set-obs"]
    assert dispatch(service, "changes", {"version": 0}).data == {
        "ops": [],
        "details": [],
        "added": [],
        "replaced": [],
        "deleted": [],
    }


# ------------------------------------------------------------------ figures / canvas


def test_figures_are_drawable_or_say_why_not(service) -> None:
    figures = {f["id"]: f for f in _json(dispatch(service, "figures", {"version": 1}).data)["figures"]}
    assert figures["fig_canvas"]["kind"] == "canvas"
    assert figures["fig_canvas"]["canvas"] == {"table": "table", "color_by": "region_class", "image": "blobs_image"}
    assert figures["fig_canvas"]["print_width"] == 89 and figures["fig_canvas"]["caption"] == "Blobs by region"
    chart = figures["fig_chart"]
    assert chart["kind"] == "chart" and chart["vega_lite"]["mark"]["type"] == "bar"
    assert chart["spec"]["result"] == "res_markers"
    not_json = figures["fig_not_json"]
    assert not_json["kind"] == "unsupported" and not_json["reason"].startswith("not JSON")
    assert not_json["spec"] == "{this is not json"
    assert "unknown figure kind" in figures["fig_unknown_kind"]["reason"]
    assert "No result 'res_gone'" in figures["fig_missing_result"]["reason"]


def test_figures_follow_the_selected_version(service) -> None:
    top = {f["id"] for f in dispatch(service, "figures").data["figures"]}
    v1 = {f["id"] for f in dispatch(service, "figures", {"version": "1"}).data["figures"]}
    assert "fig_new" in top and "fig_not_json" not in top
    assert "fig_not_json" in v1 and "fig_new" not in v1


def test_table_without_studio_section_is_shown_in_place(service) -> None:
    for name, key in (("figures", "figures"), ("results", "results")):
        data = dispatch(service, name, {"version": 0}).data
        assert data[key] == []
        assert data["error"]["kind"] == "no-studio-data"


def test_canvas_payload_and_buffers(service) -> None:
    reply = dispatch(service, "canvas", {"version": 1, "figure": "fig_canvas"})
    payload = _json(reply.data)
    assert payload["n_cells"] == 26 and payload["color"]["mode"] == "categorical"
    assert reply.buffers == []  # cells, image and colours come apart, each by its name
    column = payload["color"]["column"]
    params = {"version": 1, "figure": "fig_canvas", "column": column, "key": payload["color_keys"][column]}
    assert [b.nbytes for b in dispatch(service, "color_values", params).buffers] == [26]  # a byte a cell
    cells = dispatch(service, "cells", {"version": 1, "figure": "fig_canvas", "key": payload["cells_key"]})
    assert [b.nbytes for b in cells.buffers] == [26 * 4, 26 * 4]
    x = np.frombuffer(cells.buffers[0], dtype="<f4")
    assert np.isfinite(x).all()


@pytest.mark.parametrize(("version", "figure"), [(1, "fig_canvas"), (None, "fig_new")])
def test_canvas_reads_one_column_yet_sends_what_the_whole_anndata_gives(service, studio_stack, version, figure) -> None:
    reply = dispatch(service, "canvas", {"figure": figure, **({"version": version} if version is not None else {})})
    view = service.table_view(version)
    assert "obs" not in view.__dict__  # neither every obs column nor the cell names were read
    stack = Stack.resolve(studio_stack.v2)
    adata = open_anndata(stack.at(service.depth(version)))
    spec = read_figure(view.studio_uns(), figure).require("canvas")
    whole = build_canvas(spec, adata, view.root, view.attrs)
    payload = _json(reply.data)
    key = payload.pop("cells_key")
    payload.pop("image_key", None)
    payload.pop("color_keys")
    if payload["image"]:
        payload["image"].pop("levels")  # the pyramid the browser picks its overview level from
        payload["image"].pop("level")
    assert payload == _json(whole.payload)
    cells = dispatch(service, "cells", {"figure": figure, "key": key, **({"version": version} if version else {})})
    column = payload["color"]["column"]
    params = {"figure": figure, "column": column, **({"version": version} if version else {})}
    colors = dispatch(service, "color_values", params)
    assert colors.data == reply.data["color"] and reply.buffers == []
    parts = [bytes(b) for b in cells.buffers[:2]] + [bytes(b) for b in colors.buffers]
    assert parts == [bytes(as_buffer(b)) for b in whole.buffers[:3]]


def test_canvas_uses_obsm_spatial_when_a_version_adds_it(service) -> None:
    reply = dispatch(service, "canvas", {"figure": "fig_new"})
    x = np.frombuffer(dispatch(service, "cells", {"figure": "fig_new"}).buffers[0], dtype="<f4")
    assert x.tolist() == list(range(26))
    assert reply.data["color"]["mode"] == "continuous"


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"version": 1, "figure": "fig_chart"}, FigureError, "not a canvas figure"),
        ({"version": 1, "figure": "fig_not_json"}, FigureError, "cannot be drawn: not JSON"),
        ({"version": 1, "figure": "nope"}, FigureError, "No figure 'nope'"),
        ({"version": 1}, RequestError, "needs a figure id"),
        ({"version": 9, "figure": "fig_canvas"}, StackError, "no version at depth 9"),
    ],
)
def test_canvas_refusals(service, params, error, message) -> None:
    with pytest.raises(error, match=message):
        dispatch(service, "canvas", params)


def test_cell_answers_one_obs_row_as_the_canvas_orders_cells(service) -> None:
    obs = service.table_view(1).obs
    row = _json(dispatch(service, "cell", {"version": 1, "figure": "fig_canvas", "index": "3"}).data)
    assert row["index"] == 3 and row["name"] == str(obs.index[3])
    assert row["columns"] == [str(c) for c in obs.columns]
    assert len(row["values"]) == len(row["columns"])
    region_class = row["values"][row["columns"].index("region_class")]
    assert region_class == str(obs["region_class"].iloc[3])


@pytest.mark.parametrize("version", [1, None])
def test_cell_reads_one_row_yet_answers_what_the_whole_obs_gives(service, version) -> None:
    obs = open_anndata(service.stack.at(service.depth(version))).obs
    view = service.table_view(version)
    for index in (0, 3, len(obs) - 1):
        params = {"figure": "fig_canvas", "index": index, **({"version": version} if version is not None else {})}
        reply = dispatch(service, "cell", params)
        whole = {
            "index": index,
            "name": str(obs.index[index]),
            "columns": [str(column) for column in obs.columns],
            "values": [json_scalar(value) for value in obs.iloc[index].tolist()],
        }
        assert json.dumps(reply.data, allow_nan=False) == json.dumps(whole, allow_nan=False)
    assert "obs" not in view.__dict__ and "obs_names" not in view.__dict__  # no whole obs, no index of names


def test_obs_row_keeps_each_encodings_value_and_dtype(tmp_path: Path) -> None:
    import anndata
    import pandas as pd
    import zarr

    from sds_jupyter.studio.tableview import TableView

    frames = {
        "mixed": pd.DataFrame(
            {
                "text": ["a", "b", "c"],
                "count": [1, 2, 3],
                "score": [0.5, np.nan, 2.0],
                "flag": [True, False, True],
                "maybe_count": pd.array([1, None, 3], dtype="Int64"),
                "maybe_flag": pd.array([True, None, False], dtype="boolean"),
                "kind": pd.Categorical(["x", None, "y"], categories=["y", "x"], ordered=True),
            },
            index=["c1", "c2", "c3"],
        ),
        "numbers": pd.DataFrame({"count": [1, 2, 3], "score": [0.5, 1.5, 2.5]}, index=["c1", "c2", "c3"]),
    }
    for name, obs in frames.items():
        path = tmp_path / f"{name}.zarr"
        anndata.AnnData(obs=obs).write_zarr(path)
        root = zarr.open_group(path, mode="r")
        view = TableView(root, root, name)
        for index in range(len(obs)):
            row = view.obs_row(index)
            expected = obs.iloc[[index]].reset_index(drop=True)
            pd.testing.assert_frame_equal(row, expected, check_index_type=False)
            assert [json_scalar(v) for v in row.iloc[0].tolist()] == [json_scalar(v) for v in obs.iloc[index].tolist()]
            assert view.obs_name(index) == obs.index[index]
        with pytest.raises(IndexError):
            view.obs_row(len(obs))
        assert "obs" not in view.__dict__


def test_obs_categories_read_what_a_palette_needs_and_agree_with_the_whole_column(tmp_path: Path, monkeypatch) -> None:
    import anndata
    import pandas as pd
    import zarr

    from sds_jupyter.studio.palette import obs_palettes, series_categories
    from sds_jupyter.studio.tableview import TableView

    obs = pd.DataFrame(
        {
            "text": ["b", "a", "b"],
            "count": [1, 2, 3],
            "score": [0.5, np.nan, 2.0],
            "flag": [True, False, True],
            "maybe_flag": pd.array([True, None, False], dtype="boolean"),
            "kind": pd.Categorical(["x", None, "y"], categories=["y", "x"], ordered=True),
        },
        index=["c1", "c2", "c3"],
    )
    path = tmp_path / "obs.zarr"
    anndata.AnnData(obs=obs).write_zarr(path)
    root = zarr.open_group(path, mode="r")
    view = TableView(root, root, "obs")
    read: list[str] = []
    real_read_elem = tables.read_elem
    monkeypatch.setattr(tables, "read_elem", lambda node: read.append(node.path) or real_read_elem(node))
    for column in obs.columns:
        assert view.obs_categories(column) == series_categories(obs[column]), column
    # a categorical's categories and a numeric array's dtype are read, not their values (nor obs whole)
    assert "obs/kind/categories" in read
    assert {"obs", "obs/kind", "obs/count", "obs/score"}.isdisjoint(read), read
    categories = {column: view.obs_categories(column) for column in view.obs_columns}
    assert obs_palettes(categories, {}) == obs_palettes(obs, {})
    with pytest.raises(KeyError):
        view.obs_categories("nope")


def test_figures_changes_and_compare_never_read_obs_whole(service) -> None:
    dispatch(service, "figures", {"version": 1})
    dispatch(service, "changes", {"version": 2})
    dispatch(service, "compare", {"a": 1, "b": 2})
    for depth in (0, 1, 2):
        assert "obs" not in service.table_view(depth).__dict__, depth


def test_color_values_against_reads_two_columns_yet_sends_what_the_whole_obs_gives(service) -> None:
    import pandas as pd

    from sds_jupyter.service.celldiff import NEW_CELL, RENAMED, UNCHANGED, transition_labels
    from sds_jupyter.service.features.cells import GREY, RENAMED_GREY
    from sds_jupyter.studio.canvas import MISSING_COLOR, cell_colors
    from sds_jupyter.studio.cells import FrameCells

    params = {"version": 2, "figure": "fig_canvas", "column": "region_class", "against": 1}
    reply = dispatch(service, "color_values", params)
    assert "obs" not in service.table_view(1).__dict__ and "obs" not in service.table_view(2).__dict__
    before, after = (open_anndata(service.stack.at(depth)).obs["region_class"] for depth in (1, 2))
    labels = transition_labels("region_class", before, after, moved_only=True)
    spec = {
        "color_by": "region_class (change)",
        "category_colors": {UNCHANGED: GREY, RENAMED: RENAMED_GREY, NEW_CELL: MISSING_COLOR},
    }
    color, buffer = cell_colors(FrameCells(pd.DataFrame({"region_class (change)": labels})), {**spec, "colormap": None})
    assert json.dumps(reply.data) == json.dumps(color)
    assert [bytes(b) for b in reply.buffers] == [bytes(as_buffer(np.ascontiguousarray(buffer)))]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"version": 1, "figure": "fig_canvas", "index": 26}, "Cell 26 does not exist; the table has 26 cells"),
        ({"version": 1, "figure": "fig_canvas", "index": -1}, "Cell -1 does not exist"),
        ({"version": 1, "index": 0}, "needs a figure id"),
    ],
)
def test_cell_refusals(service, params, message) -> None:
    with pytest.raises(RequestError, match=message):
        dispatch(service, "cell", params)


def test_color_values_by_another_obs_column_and_by_a_gene(service, blobs_store) -> None:
    import anndata
    import zarr

    reply = dispatch(service, "color_values", {"version": 1, "figure": "fig_canvas", "column": "region_class"})
    color = _json(reply.data)
    assert color["mode"] == "categorical" and color["column"] == "region_class"
    # the figure's saved color for its own column stays
    assert color["colors"][color["categories"].index("tumor")] == "#d62728"
    assert color["codes"] == "uint8"  # a byte a cell
    codes = np.frombuffer(reply.buffers[0], dtype=np.uint8)
    obs = service.table_view(1).obs
    assert [color["categories"][c] for c in codes] == obs["region_class"].astype(str).tolist()
    table = anndata.io.read_elem(zarr.open_group(blobs_store, mode="r")["tables/table"])
    gene = str(table.var_names[1])
    reply = dispatch(service, "color_values", {"version": 1, "figure": "fig_canvas", "gene": gene})
    color = _json(reply.data)
    assert color["mode"] == "continuous" and color["column"] == gene and len(color["lut"]) == 256
    values = np.frombuffer(reply.buffers[0], dtype="<f4")
    expected = np.asarray(
        table[:, gene].X.toarray() if hasattr(table.X, "toarray") else table[:, gene].X, dtype=np.float32
    ).ravel()
    np.testing.assert_array_equal(values, expected)
    assert color["min"] == float(expected.min()) and color["max"] == float(expected.max())


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"version": 1, "figure": "fig_canvas", "column": "nope"}, "No obs column 'nope'"),
        ({"version": 1, "figure": "fig_canvas", "gene": "nope"}, "Gene 'nope' is not among"),
        ({"version": 1, "figure": "fig_canvas"}, "either an obs column or a gene"),
        ({"version": 1, "figure": "fig_canvas", "column": "a", "gene": "b"}, "either an obs column or a gene"),
    ],
)
def test_color_values_refusals(service, params, message) -> None:
    with pytest.raises(RequestError, match=message):
        dispatch(service, "color_values", params)


def test_channels_answers_each_plane_with_the_figure_settings(service, blobs_root) -> None:
    reply = dispatch(service, "channels", {"version": 1, "figure": "fig_canvas"})
    data = _json(reply.data)
    from sds_jupyter.studio.elements import coarsest_level

    level = coarsest_level(blobs_root, "images", "blobs_image", max_side=2048)
    assert level.axes == ("c", "y", "x")
    image = np.asarray(level.data)
    assert [c["name"] for c in data["channels"]] == [str(i) for i in range(image.shape[0])]
    first, second = data["channels"][0], data["channels"][1]
    assert first["visible"] is True and first["color"] == "#ff0000" and first["contrast_limits"] == [0, 1]
    assert second["visible"] is False and second["color"] == "#00ff00"
    assert len(reply.buffers) == image.shape[0]
    plane = np.frombuffer(reply.buffers[0], dtype=np.uint8).reshape(data["height"], data["width"])
    low, high = first["range"]
    assert low == float(image[0].min()) and high == float(image[0].max())
    # the plane is the channel over its own range: the brightest pixel is 255, the darkest 0
    assert plane.max() == 255 and plane.min() == 0
    with pytest.raises(RequestError, match="shows no image"):
        dispatch(service, "channels", {"version": 1, "figure": "fig_continuous"})


# ------------------------------------------------------------------ results


def test_results_with_default_charts_and_missing_meta(service) -> None:
    results = {r["id"]: r for r in _json(dispatch(service, "results", {"version": 1}).data)["results"]}
    assert set(results) == {
        "res_markers",
        "res_comparison",
        "res_morans",
        "res_nhood",
        "res_niches",
        "res_clusters",
        "res_nometa",
    }
    for result_id, result in results.items():
        if result_id != "res_nometa":
            assert "chart" in result and "error" not in result, result_id
    comparison = results["res_comparison"]
    assert [t["name"] for t in comparison["tables"]] == ["table", "cells"]
    assert comparison["tables"][0]["n_rows"] == 30 and comparison["meta"]["kind"] == "comparison"
    morans_columns = [c["name"] for c in results["res_morans"]["tables"][0]["columns"]]
    assert morans_columns[0] == "gene"
    nometa = results["res_nometa"]
    assert nometa["meta"] is None and nometa["kind"] is None
    assert nometa["error"] == {
        "kind": "result",
        "message": "Result 'res_nometa' has no meta, so its kind and title are unknown.",
    }
    assert nometa["tables"][0]["n_rows"] == 3


def test_result_page_slices_and_sorts_in_python(service) -> None:
    page = _json(
        dispatch(service, "result_page", {"version": 1, "result": "res_markers", "offset": "5", "limit": "4"}).data
    )
    assert page["total"] == 30 and page["offset"] == 5 and len(page["rows"]) == 4
    names = [c["name"] for c in page["columns"]]
    assert names == ["group", "names", "scores", "logfoldchanges", "pvals_adj"]
    assert page["rows"][0][1] == "gene5"
    ranked = dispatch(
        service,
        "result_page",
        {"version": 1, "result": "res_markers", "sort": "scores", "descending": True, "limit": 30},
    ).data
    scores = [row[2] for row in ranked["rows"]]
    assert scores == sorted(scores, reverse=True)
    cells = dispatch(service, "result_page", {"version": 1, "result": "res_comparison", "table": "cells"}).data
    assert cells["total"] == 2


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"result": "nope"}, ResultError, "No result 'nope'"),
        ({"result": "res_markers", "table": "nope"}, ResultError, "no table 'nope'"),
        ({"result": "res_markers", "sort": "nope"}, RequestError, "Cannot sort by 'nope'"),
        ({"result": "res_markers", "limit": 0}, RequestError, "limit between"),
        ({"result": "res_markers", "limit": "many"}, RequestError, "must be an integer"),
        ({"result": "res_markers", "descending": "maybe"}, RequestError, "true or false"),
        ({}, RequestError, "needs a result id"),
    ],
)
def test_result_page_refusals(service, params, error, message) -> None:
    with pytest.raises(error, match=message):
        dispatch(service, "result_page", {"version": 1, **params})


# ------------------------------------------------------------------ compare


def test_compare_versions(service) -> None:
    comparison = _json(dispatch(service, "compare", {"a": "1", "b": "2"}).data)
    assert comparison["a"] == 1 and comparison["b"] == 2
    assert comparison["obs"]["added"] == ["added_col"] and comparison["obs"]["removed"] == ["score"]
    (changed,) = comparison["obs"]["changed"]
    assert changed["column"] == "region_class" and changed["kind"] == "categorical" and changed["n_changed"] == 13
    assert changed["transitions"] == [{"a": "stroma", "b": "tumor", "count": 13}]
    assert changed["counts_a"] == {"stroma": 13, "tumor": 13} and changed["counts_b"] == {"tumor": 26}
    assert comparison["obsm"] == {"added": ["spatial"], "removed": [], "changed": []}
    # the app's section is reported as figures and results, by title, not as one uns key
    assert comparison["uns"] == {"added": ["notes"], "removed": [], "changed": []}
    assert comparison["figures"] == {"added": ["fig_new"], "removed": ["fig_not_json"], "changed": []}
    assert comparison["results"] == {"added": [], "removed": [], "changed": ["res_clusters"]}


def test_compare_with_itself_is_empty(service) -> None:
    comparison = dispatch(service, "compare", {"a": 2, "b": 2}).data
    for part in ("obsm", "uns", "figures", "results"):
        assert not any(comparison[part].values()), part
    assert not comparison["obs"]["added"] and not comparison["obs"]["removed"] and not comparison["obs"]["changed"]
    assert not any(comparison[part] for part in ("obsm_changes", "uns_changes", "figure_changes", "result_changes"))


# ------------------------------------------------------------------ dispatch, errors, framing


def test_request_table_matches_the_protocol() -> None:
    """Every request the dispatcher serves is documented in the protocol's table, with its parameters, and no other."""
    import inspect
    import re

    doc = (ROOT / "docs" / "service-protocol.md").read_text()
    rows = re.findall(r"^\| `(\w+)`[^|]*\| (.*?) \|", doc, flags=re.M)
    documented = {name: set(re.findall(r"`(\w+)`", params)) for name, params in rows}
    assert set(documented) == set(REQUESTS)
    for name, method in REQUESTS.items():
        taken = set(list(inspect.signature(method).parameters)[1:])  # the first is the service (self)
        assert taken <= documented[name], (name, taken - documented[name])


def test_unknown_request_and_parameter_are_refused(service) -> None:
    with pytest.raises(RequestError, match="Unknown request 'drop'"):
        dispatch(service, "drop")
    with pytest.raises(RequestError, match="takes no parameter 'bogus'"):
        dispatch(service, "history", {"bogus": 1})
    with pytest.raises(RequestError, match="missing a parameter"):
        dispatch(service, "compare", {"a": 1})


def test_versions_by_dataset_id_and_title(service) -> None:
    assert (
        dispatch(service, "changes", {"version": "studio-1111"}).data
        == dispatch(service, "changes", {"version": 1}).data
    )
    assert dispatch(service, "changes", {"version": "Edit"}).data["ops"]


def test_error_payload_maps_once() -> None:
    assert error_payload(MissingDatasetError("gone", dataset_id="x")) == {
        "kind": "missing-dataset",
        "message": "gone",
        "dataset_id": "x",
    }
    assert error_payload(RequestError("bad")) == {"kind": "bad-request", "message": "bad"}
    assert error_payload(KeyError("k")) == {"kind": "internal", "message": "KeyError: 'k'"}


def test_framing_round_trips(service) -> None:
    reply = dispatch(service, "canvas", {"version": 1, "figure": "fig_canvas"})
    data, buffers = unframe_reply(frame_reply(reply))
    assert data == _json(reply.data)
    assert [bytes(b) for b in reply.buffers] == buffers


def test_browsing_writes_nothing(studio_stack) -> None:
    before = _mtimes(studio_stack.datasets)
    service = StackService(studio_stack.v2)
    for name, params in [
        ("history", {}),
        ("changes", {}),
        ("figures", {}),
        ("results", {}),
        ("compare", {"a": 0, "b": 2}),
        ("canvas", {"version": 1, "figure": "fig_canvas"}),
        ("result_page", {"version": 1, "result": "res_markers"}),
    ]:
        dispatch(service, name, params)
    assert _mtimes(studio_stack.datasets) == before


def test_demo_stack_answers_every_request(demo_top) -> None:
    service = StackService(demo_top)
    history = dispatch(service, "history").data
    assert history["top_depth"] == 4
    figures = dispatch(service, "figures").data["figures"]
    assert {f["kind"] for f in figures} <= {"chart", "canvas"}
    for figure in figures:
        if figure["kind"] == "canvas":
            # the canvas reply is the figure's frame (no buffers since issue 39); its cells come by `cells`
            canvas = dispatch(service, "canvas", {"figure": figure["id"]})
            assert canvas.data["n_cells"] > 0 and not canvas.buffers
            assert dispatch(service, "cells", {"figure": figure["id"]}).buffers
    results = dispatch(service, "results").data["results"]
    assert results and all("chart" in r for r in results)
    first = results[0]
    assert dispatch(service, "result_page", {"result": first["id"]}).data["total"] == first["tables"][0]["n_rows"]
    assert dispatch(service, "compare", {"a": 0, "b": 4}).data["obs"]["added"]
    assert os.fspath(demo_top)


def test_a_table_the_version_lacks_is_shown_in_place(studio_stack) -> None:
    service = StackService(studio_stack.v2, table="cells")
    for name in ("figures", "results"):
        error = dispatch(service, name).data["error"]
        assert error["kind"] == "stack" and "no table 'cells'" in error["message"]


def test_table_views_are_per_version_and_table(service) -> None:
    assert service.table_view(1) is service.table_view("studio-1111", "table")
    assert service.table_view(1) is not service.table_view(2)
    with pytest.raises(StackError, match="no table 'other'"):
        service.table_view(1, "other")
    with pytest.raises(RequestError, match="not a table name"):
        service.table_view(1, "../images/blobs_image")


def test_requests_read_only_the_results_they_need(studio_stack, monkeypatch) -> None:
    """What each request reads of the table's uns, seen at anndata's ``read_elem`` (each element once)."""
    read: list[str] = []
    real_read_elem = tables.read_elem

    def recorded(node: Any) -> Any:
        read.append(node.path)
        return real_read_elem(node)

    monkeypatch.setattr(tables, "read_elem", recorded)

    def results_read() -> set[str]:
        return {path.rsplit("/", 1)[1] for path in read if path.rsplit("/", 1)[0].endswith("/results")}

    def whole_uns_read() -> bool:
        return any(path.endswith("/uns") for path in read)

    service = StackService(studio_stack.v2)
    dispatch(service, "result_page", {"version": 1, "result": "res_niches"})
    assert results_read() == {"res_niches"} and not whole_uns_read()
    dispatch(service, "figures", {"version": 1})
    assert results_read() == {"res_niches", "res_markers"}
    dispatch(service, "canvas", {"version": 1, "figure": "fig_canvas"})
    assert results_read() == {"res_niches", "res_markers"} and not whole_uns_read()
    dispatch(service, "results", {"version": 1})
    assert len(results_read()) == 7
    results = [path for path in read if path.rsplit("/", 1)[0].endswith("/results")]
    assert len(results) == len(set(results)), f"a result read twice: {results}"


def test_a_categorical_s_categories_are_read_once(studio_stack, monkeypatch) -> None:
    """Every request that colours figures asks for each categorical column's categories (not its
    codes): the first asks anndata's ``read_elem``, the next are answered from memory."""
    read: list[str] = []
    real_read_elem = tables.read_elem
    monkeypatch.setattr(tables, "read_elem", lambda node: read.append(node.path) or real_read_elem(node))
    view = StackService(studio_stack.v2).table_view(1)
    first = {name: view.obs_categories(name) for name in view.obs_columns}
    again = {name: view.obs_categories(name) for name in view.obs_columns}
    assert first == again and first["region"]
    categories = [path for path in read if path.endswith("/categories")]
    assert categories and len(categories) == len(set(categories)), f"categories read twice: {categories}"
    assert not any(path.endswith("/codes") for path in read)


def test_mixed_type_columns_sort_by_text() -> None:
    import pandas as pd

    from sds_jupyter.service.features.results import sorted_rows

    frame = pd.DataFrame({"v": ["b", 2, None, "a"]})
    assert sorted_rows(frame, "v", False)["v"].tolist()[:3] == [2, "a", "b"]
