"""The studio layer: figure parsing, result reading, chart and canvas builders."""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pandas as pd
import pytest

from sds_jupyter.errors import ElementError
from sds_jupyter.studio import (
    FigureError,
    ResultError,
    parse_figure,
    read_figure,
    read_figures,
    read_result,
    read_results,
)
from sds_jupyter.studio.canvas import build_canvas, cell_coordinates, colormap_lut
from sds_jupyter.studio.charts import DEFAULT_CHARTS, chart_for_figure, chart_spec, column_of, default_chart, vega_field
from sds_jupyter.studio.elements import coarsest_level, label_centroids, open_pyramid, shape_centroids
from sds_jupyter.studio.figurespecs import figure_schema

pytest_plugins = ["kit.fixtures_service"]


# ------------------------------------------------------------------ figures


def test_schema_is_valid_json_schema() -> None:
    jsonschema.validators.validator_for(figure_schema()).check_schema(figure_schema())


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{this is not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"kind": "map"}), "unknown figure kind 'map'"),
        (json.dumps({"kind": "chart", "result": "r", "mark": "line", "x": "a", "y": "b"}), "mark: 'line'"),
        (json.dumps({"kind": "chart", "result": "r", "mark": "bar", "x": "a"}), "'y' is a required property"),
        (json.dumps({"kind": "canvas", "print_width": "triple"}), "print_width"),
        (json.dumps({"kind": "canvas", "channels": [{"color": "red"}]}), "channels/0/color"),
        (42, "not a JSON string but int"),
    ],
)
def test_bad_figures_are_unsupported_with_one_line_reason(raw: object, reason: str) -> None:
    figure = parse_figure("f", raw)
    assert figure.kind == "unsupported"
    assert reason in figure.reason
    assert "\n" not in figure.reason
    with pytest.raises(FigureError, match="cannot be drawn"):
        figure.require("canvas")


def test_unknown_fields_are_accepted() -> None:
    figure = parse_figure("f", json.dumps({"kind": "canvas", "title": "T", "future_field": {"x": 1}}))
    assert figure.kind == "canvas"
    assert figure.title == "T"
    assert figure.require("canvas")["future_field"] == {"x": 1}
    with pytest.raises(FigureError, match="not a chart figure"):
        figure.require("chart")


def test_read_figures_keeps_stored_order(studio_adata) -> None:
    figures = read_figures(studio_adata.uns)
    assert [f.id for f in figures][:3] == ["fig_canvas", "fig_continuous", "fig_chart"]
    kinds = {f.id: f.kind for f in figures}
    assert kinds["fig_canvas"] == "canvas" and kinds["fig_chart"] == "chart"
    assert kinds["fig_not_json"] == kinds["fig_unknown_kind"] == kinds["fig_bad_mark"] == "unsupported"
    assert read_figure(studio_adata.uns, "fig_chart").print_width == "double"
    with pytest.raises(FigureError, match="No figure 'nope'"):
        read_figure(studio_adata.uns, "nope")


def test_no_studio_section_means_no_figures_or_results() -> None:
    assert read_figures({}) == [] and read_results({"spatial_data_studio": "junk"}) == []


# ------------------------------------------------------------------ results


def test_results_parse_meta_and_tables(studio_adata) -> None:
    results = {r.id: r for r in read_results(studio_adata.uns)}
    comparison = results["res_comparison"]
    assert comparison.kind == "comparison" and comparison.title == "a vs b"
    assert list(comparison.tables) == ["table", "cells"]
    assert comparison.error is None
    nometa = results["res_nometa"]
    assert nometa.meta is None and nometa.kind is None
    assert "has no meta" in nometa.error
    assert list(nometa.tables) == ["table"]


def test_result_meta_that_is_not_json_is_reported() -> None:
    uns = {"spatial_data_studio": {"results": {"r": {"table": pd.DataFrame({"a": [1]}), "meta": "{oops"}}}}
    entry = read_result(uns, "r")
    assert entry.meta is None and "not JSON" in entry.error
    with pytest.raises(ResultError, match="no table 'other'"):
        entry.table("other")
    with pytest.raises(ResultError, match="No result 'x'"):
        read_result(uns, "x")


# ------------------------------------------------------------------ charts


def test_chart_figure_builds_inline_vega_lite(studio_adata) -> None:
    spec = read_figure(studio_adata.uns, "fig_chart").require("chart")
    chart = chart_for_figure(spec, read_result(studio_adata.uns, "res_markers"))
    assert chart["mark"]["type"] == "bar"
    # scores per group do not add up: side by side, not stacked (issue 29)
    assert chart["encoding"]["x"] == {"field": "scores", "type": "quantitative", "stack": None}
    assert chart["encoding"]["y"]["type"] == "nominal"
    assert chart["encoding"]["color"]["field"] == "group"
    assert len(chart["data"]["values"]) == 30
    assert set(chart["data"]["values"][0]) == {"scores", "names", "group"}


def test_chart_over_missing_column_is_refused() -> None:
    with pytest.raises(FigureError, match="Column 'nope' is not in the result table"):
        chart_spec(pd.DataFrame({"a": [1]}), mark="point", x="a", y="nope")


def _drawn_points(svg: str) -> int:
    import re

    marks = re.search(r'class="mark-symbol role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    return marks.group(1).count("<path") if marks else 0


def test_columns_named_like_nested_access_still_draw() -> None:
    """Vega reads ``.`` and ``[ ]`` in a field as nested access: ``p.adj`` drew nothing until escaped."""
    import vl_convert

    frame = pd.DataFrame({"p.adj": [0.1, 0.2, 0.3], "score[1]": [1.0, 2.0, 3.0], "cell.type": ["a", "b", "a"]})
    chart = chart_spec(frame, mark="point", x="p.adj", y="score[1]", color="cell.type")
    assert chart["encoding"]["x"] == {"field": "p\\.adj", "type": "quantitative", "title": "p.adj"}
    assert chart["encoding"]["y"]["field"] == "score\\[1\\]"
    assert [t["field"] for t in chart["encoding"]["tooltip"]] == ["p\\.adj", "score\\[1\\]", "cell\\.type"]
    # the rows keep the columns' own names
    assert set(chart["data"]["values"][0]) == {"p.adj", "score[1]", "cell.type"}
    svg = vl_convert.vegalite_to_svg(chart)
    assert _drawn_points(svg) == 3 and "NaN" not in svg
    assert {"p.adj", "score[1]", "cell.type"} <= set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


@pytest.mark.parametrize("column", ["p.adj", "score[1]", "a\\b", "x.[y]", "plain", ""])
def test_a_field_names_its_column_again(column: str) -> None:
    assert column_of(vega_field(column)) == column


def test_chart_values_are_json_safe() -> None:
    frame = pd.DataFrame({"x": [1.0, np.nan, np.inf], "y": ["a", None, "c"]})
    chart = chart_spec(frame, mark="point", x="x", y="y")
    json.dumps(chart, allow_nan=False)
    assert chart["data"]["values"][1] == {"x": None, "y": None}


@pytest.mark.parametrize("kind", sorted(DEFAULT_CHARTS))
def test_every_result_kind_has_a_default_chart(studio_adata, kind: str) -> None:
    result = next(r for r in read_results(studio_adata.uns) if r.kind == kind)
    chart = default_chart(result)
    assert chart is not None, kind
    assert chart["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
    assert chart["data"]["values"]
    json.dumps(chart, allow_nan=False)


def test_default_charts_render_with_vl_convert(studio_adata) -> None:
    import vl_convert

    for result in read_results(studio_adata.uns):
        chart = default_chart(result)
        if chart is not None:
            assert vl_convert.vegalite_to_svg(chart).startswith("<svg")


def test_markers_chart_keeps_top_ten_per_group(studio_adata) -> None:
    chart = default_chart(read_result(studio_adata.uns, "res_markers"))
    groups = pd.DataFrame(chart["data"]["values"]).groupby("group").size()
    assert groups.to_dict() == {"a": 10, "b": 10}
    assert chart["facet"]["field"] == "group"


def test_nhood_square_matrix_becomes_a_heatmap(studio_adata) -> None:
    chart = default_chart(read_result(studio_adata.uns, "res_nhood"))
    assert chart["mark"]["type"] == "rect"
    assert len(chart["data"]["values"]) == 9


def test_unknown_kind_or_columns_have_no_default_chart(studio_adata) -> None:
    assert default_chart(read_result(studio_adata.uns, "res_nometa")) is None
    uns = {
        "spatial_data_studio": {"results": {"r": {"table": pd.DataFrame({"zzz": [1]}), "meta": '{"kind": "markers"}'}}}
    }
    assert default_chart(read_result(uns, "r")) is None


# ------------------------------------------------------------------ canvas


def test_cells_sit_at_label_centroids(studio_adata, blobs_root) -> None:
    x, y = cell_coordinates(studio_adata, blobs_root, dict(blobs_root["tables/table"].attrs))
    centroids = label_centroids(blobs_root, "blobs_labels")
    first = str(studio_adata.obs["instance_id"].iloc[0])
    assert x[0] == pytest.approx(centroids.loc[first, "x"])
    assert y[0] == pytest.approx(centroids.loc[first, "y"])
    assert np.isfinite(x).all() and (x >= 0).all() and (x <= 512).all()


def test_obsm_spatial_wins_over_centroids(studio_adata, blobs_root) -> None:
    studio_adata.obsm["spatial"] = np.column_stack([np.arange(26), np.arange(26) * 2.0])
    x, y = cell_coordinates(studio_adata, blobs_root)
    assert x.dtype == np.float32 and y[3] == 6.0


def test_shape_centroids_read_parquet_through_the_store(blobs_root) -> None:
    centroids = shape_centroids(blobs_root, "blobs_circles")
    assert len(centroids) == 5 and np.isfinite(centroids.to_numpy()).all()


def test_canvas_payload_categorical_with_image(studio_adata, blobs_root) -> None:
    spec = read_figure(studio_adata.uns, "fig_canvas").require("canvas")
    drawn = build_canvas(spec, studio_adata, blobs_root, dict(blobs_root["tables/table"].attrs))
    payload = drawn.payload
    assert payload["n_cells"] == 26
    assert payload["color"]["mode"] == "categorical"
    categories = payload["color"]["categories"]
    assert payload["color"]["colors"][categories.index("tumor")] == "#d62728"
    assert payload["point_size"] == 6 and payload["viewport"]["target"] == [256.0, 256.0]
    image = payload["image"]
    assert image["bounds"] == [0.0, 0.0, 512.0, 512.0]
    assert image["channels"] == [{"name": "0", "color": "#ff0000"}]
    x, y, codes, rgba = drawn.buffers
    assert x.dtype == y.dtype == np.float32 and codes.dtype == np.uint8 and payload["color"]["codes"] == "uint8"
    assert rgba.dtype == np.uint8 and rgba.shape == (image["height"], image["width"], 4)
    assert (rgba[..., 1] == 0).all() and (rgba[..., 3] == 255).all() and rgba[..., 0].max() > 0
    json.dumps(payload, allow_nan=False)


def test_canvas_payload_continuous(studio_adata, blobs_root) -> None:
    spec = read_figure(studio_adata.uns, "fig_continuous").require("canvas")
    drawn = build_canvas(spec, studio_adata, blobs_root, dict(blobs_root["tables/table"].attrs))
    color = drawn.payload["color"]
    assert color["mode"] == "continuous" and color["colormap"] == "magma"
    assert (color["min"], color["max"]) == (0.0, 1.0) and len(color["lut"]) == 256
    assert drawn.payload["image"] is None and len(drawn.buffers) == 3
    assert drawn.buffers[2].dtype == np.float32


def test_canvas_without_color_has_two_buffers(studio_adata, blobs_root) -> None:
    drawn = build_canvas({"kind": "canvas"}, studio_adata, blobs_root, dict(blobs_root["tables/table"].attrs))
    assert drawn.payload["color"] == {"mode": "none"} and len(drawn.buffers) == 2


def test_missing_category_values_get_a_gray_na(studio_adata, blobs_root) -> None:
    studio_adata.obs["partial"] = pd.Categorical(["a", None] * 13)
    drawn = build_canvas(
        {"kind": "canvas", "color_by": "partial"}, studio_adata, blobs_root, dict(blobs_root["tables/table"].attrs)
    )
    assert drawn.payload["color"]["categories"] == ["a", "NA"]
    assert drawn.buffers[2][1] == 1


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ({"kind": "canvas", "color_by": "nope"}, FigureError, "not an obs column"),
        ({"kind": "canvas", "color_by": "score", "colormap": "nope"}, FigureError, "Unknown colormap"),
        ({"kind": "canvas", "image": "nope"}, ElementError, "No image element 'nope'"),
        ({"kind": "canvas", "image": "blobs_image", "channels": [{"name": "9"}] * 5}, FigureError, "does not have"),
    ],
)
def test_canvas_refusals(studio_adata, blobs_root, spec, error, message) -> None:
    with pytest.raises(error, match=message):
        build_canvas(spec, studio_adata, blobs_root, dict(blobs_root["tables/table"].attrs))


def test_coarsest_level_of_multiscale_image(blobs_root) -> None:
    level = coarsest_level(blobs_root, "images", "blobs_multiscale_image")
    assert (level.width, level.height) == (128, 128)
    assert level.scale_yx == (4.0, 4.0)
    assert level.channel_names == ("0", "1", "2")


def test_colormap_lut_endpoints() -> None:
    lut = colormap_lut("gray")
    assert lut[0] == "#000000" and lut[-1] == "#ffffff"


def test_large_images_are_read_with_a_stride(blobs_root, monkeypatch) -> None:
    from sds_jupyter.studio import canvas

    monkeypatch.setattr(canvas, "MAX_IMAGE_SIDE", 100)
    level = coarsest_level(blobs_root, "images", "blobs_image", max_side=100)
    assert (level.width, level.height) == (86, 86)
    assert level.scale_yx == (6.0, 6.0) and level.extent_yx == (512.0, 512.0)
    drawn = build_canvas({"kind": "canvas", "image": "blobs_image"}, _table(blobs_root), blobs_root)
    assert drawn.payload["image"]["bounds"] == [0.0, 0.0, 512.0, 512.0]
    assert drawn.payload["image"]["width"] == 86


@pytest.mark.parametrize(("draw_px", "width"), [(None, 512), (4000, 512), (400, 256), (200, 128), (50, 43)])
def test_an_export_reads_the_image_level_its_pixels_need(blobs_root, draw_px, width) -> None:
    """The cells sit at (0, 0), inside the 512 px image: the drawing spans the image alone.

    Levels are 512, 256 and 128 px; below the coarsest, it is read every third pixel (43 px).
    """
    spec = {"kind": "canvas", "image": "blobs_multiscale_image"}
    drawn = build_canvas(spec, _table(blobs_root), blobs_root, draw_px=draw_px)
    assert drawn.payload["image"]["width"] == width
    assert drawn.payload["image"]["bounds"] == [0.0, 0.0, 512.0, 512.0]


def test_the_pyramid_fits_a_box_or_strides_its_coarsest_level(blobs_root) -> None:
    pyramid = open_pyramid(blobs_root, "blobs_multiscale_image")
    assert pyramid.fit((0, 0, 512, 512), 300) == (1, (0, 0, 256, 256), 1)
    assert pyramid.fit((100, 100, 200, 200), 64) == (1, (50, 50, 100, 100), 1)
    assert pyramid.fit((0, 0, 512, 512), 100, stride=True) == (2, (0, 0, 128, 128), 2)
    with pytest.raises(ElementError, match="larger than 100 pixels even at its coarsest level"):
        pyramid.fit((0, 0, 512, 512), 100)
    with pytest.raises(ElementError, match="does not overlap"):
        pyramid.fit((600, 600, 700, 700), 100)
    labels = open_pyramid(blobs_root, "blobs_labels", kind="labels").overview()
    assert labels.axes == ("y", "x") and labels.data.ndim == 2


def _table(root):
    import anndata

    adata = anndata.io.read_elem(root["tables/table"])
    adata.obsm["spatial"] = np.zeros((adata.n_obs, 2))
    return adata


@pytest.mark.parametrize(
    ("table", "stacked"),
    [
        (pd.DataFrame({"niche": [0, 0, 1], "cell_type": ["t", "b", "t"], "fraction": [0.5, 0.5, 1.0]}), "normalize"),
        (pd.DataFrame({"niche": [0, 1], "t_cells": [0.2, 0.7], "b_cells": [0.8, 0.3]}), "normalize"),
        (pd.DataFrame({"niche": [0, 1], "n_cells": [10, 20]}), None),
    ],
)
def test_niche_tables_long_wide_and_sizes(table: pd.DataFrame, stacked: str | None) -> None:
    from sds_jupyter.studio.resultstore import ResultEntry

    chart = default_chart(ResultEntry("r", {"kind": "niches"}, {"table": table}))
    assert chart["mark"]["type"] == "bar" and chart["encoding"]["x"]["type"] == "nominal"
    assert chart["encoding"]["y"].get("stack") == stacked
    assert ("color" in chart["encoding"]) == (stacked is not None)


def test_bars_of_a_score_per_group_are_ranked_and_side_by_side() -> None:
    """Issue 29 item 8: marker scores do not add up: no stacking, genes ordered by score (not A-Z)."""
    frame = pd.DataFrame(
        {"gene": ["CD3E", "EPCAM", "ACTB", "CD3E"], "score": [2.5, 9.0, 1.0, 4.0], "group": ["0", "0", "1", "1"]}
    )
    chart = chart_spec(frame, mark="bar", x="gene", y="score", color="group")
    encoding = chart["encoding"]
    # each gene ranked by its best score (EPCAM 9, CD3E 4, ACTB 1), not its worst (Vega-Lite's "-y")
    by_best = {"field": "score", "op": "max", "order": "descending"}
    assert encoding["x"]["sort"] == by_best
    assert encoding["y"]["stack"] is None
    assert encoding["xOffset"]["field"] == encoding["color"]["field"] == "group"
    # horizontal bars: the same, on the other axis
    across = chart_spec(frame, mark="bar", x="score", y="gene", color="group")["encoding"]
    assert across["y"]["sort"] == by_best and across["x"]["stack"] is None and across["yOffset"]["field"] == "group"
    # one series: ranked, nothing to group
    single = chart_spec(frame, mark="bar", x="gene", y="score")["encoding"]
    assert single["x"]["sort"] == by_best and "xOffset" not in single and "stack" not in single["y"]


def test_bars_drawn_rank_each_name_by_its_best_score() -> None:
    """Issue 29 item 8, as drawn (the one renderer the exports use): AAA's best score (9) ranks it
    first although one group scores it lowest of all; Vega-Lite's "-y" ranked it last (by its minimum)."""
    vl_convert = pytest.importorskip("vl_convert")
    frame = pd.DataFrame(
        {
            "gene": ["AAA", "AAA", "BBB", "BBB", "CCC", "CCC"],
            "score": [9.0, 0.5, 3.0, 2.0, 1.0, 1.0],
            "group": ["0", "1"] * 3,
        }
    )
    svg = vl_convert.vegalite_to_svg(chart_spec(frame, mark="bar", x="gene", y="score", color="group"))
    assert re.findall(r">([A-C]{3})<", svg) == ["AAA", "BBB", "CCC"]
