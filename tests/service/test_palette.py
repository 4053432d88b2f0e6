"""One palette per obs column: saved category colors, else uns colors, else the fixed palette; charts follow."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from sds_jupyter.studio.canvas import cell_colors
from sds_jupyter.studio.charts import chart_spec
from sds_jupyter.studio.palette import (
    column_palette,
    fixed_palette,
    obs_palettes,
    recolor_chart,
    saved_category_colors,
)


def test_palette_resolution_order() -> None:
    cats = ["a", "b", "c"]
    assert column_palette("x", cats, {}) == fixed_palette(3)
    assert fixed_palette(3) == ["#1f77b4", "#ff7f0e", "#2ca02c"]
    uns = {"x_colors": np.array(["#111111", "#222222ff", "#333333"])}
    assert column_palette("x", cats, uns) == ["#111111", "#222222", "#333333"]
    assert column_palette("x", cats, uns, {"b": "#abcdef"}) == ["#111111", "#abcdef", "#333333"]
    # uns colors of the wrong length are not used: categories would shift
    assert column_palette("x", cats, {"x_colors": ["#111111"]}) == fixed_palette(3)
    assert len(fixed_palette(12)) == 12 and fixed_palette(12) != fixed_palette(12)[:10] + fixed_palette(2)


def test_saved_colors_come_from_canvas_figures_first_wins() -> None:
    specs = [
        {"kind": "canvas", "color_by": "clusters", "category_colors": {"0": "#000001"}},
        {"kind": "canvas", "color_by": "clusters", "category_colors": {"0": "#000002", "1": "#000003"}},
        {"kind": "chart", "color_by": "clusters", "category_colors": {"2": "#999999"}},
        {"kind": "canvas", "color_by": None},
    ]
    assert saved_category_colors(specs) == {"clusters": {"0": "#000001", "1": "#000003"}}


def _obs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "clusters": pd.Categorical(["1", "0", "2", "1"], categories=["0", "1", "2"]),
            "label": ["x", "y", "x", "y"],
            "score": [0.1, 0.2, 0.3, 0.4],
        }
    )


def test_obs_palettes_cover_categorical_and_text_columns_only() -> None:
    palettes = obs_palettes(
        _obs(), {"clusters_colors": ["#aa0000", "#00aa00", "#0000aa"]}, {"clusters": {"2": "#123456"}}
    )
    assert palettes == {
        "clusters": {"0": "#aa0000", "1": "#00aa00", "2": "#123456"},
        "label": {"x": "#1f77b4", "y": "#ff7f0e"},
    }


def test_canvas_and_chart_give_a_category_the_same_color() -> None:
    import anndata

    obs = _obs()
    adata = anndata.AnnData(obs=obs.set_index(pd.Index([f"c{i}" for i in range(4)])))
    adata.uns["clusters_colors"] = np.array(["#aa0000", "#00aa00", "#0000aa"])
    spec = {"color_by": "clusters", "category_colors": {"2": "#123456"}}
    info, _codes = cell_colors(adata, spec)
    canvas = dict(zip(info["categories"], info["colors"], strict=True))
    palettes = obs_palettes(adata.obs, adata.uns, saved_category_colors([{"kind": "canvas", **spec}]))
    # a markers chart: its "group" field holds cluster names, the result groups by "clusters"
    frame = pd.DataFrame({"group": ["2", "0", "2"], "gene": ["g1", "g2", "g3"], "score": [1.0, 2.0, 3.0]})
    chart = recolor_chart(
        chart_spec(frame, mark="bar", x="score", y="gene", color="group"),
        palettes,
        {"parameters": {"groupby": "clusters"}},
    )
    scale = chart["encoding"]["color"]["scale"]
    assert scale == {"domain": ["0", "2"], "range": [canvas["0"], canvas["2"]]}
    assert canvas["2"] == "#123456" and canvas["0"] == "#aa0000"


def test_recolor_leaves_other_channels_alone() -> None:
    palettes = {"clusters": {"0": "#aa0000", "1": "#00aa00"}}
    frame = pd.DataFrame({"group": ["0", "9"], "v": [1.0, 2.0], "n": ["a", "b"]})
    # a value outside the column's categories: not that column's grouping
    spec = chart_spec(frame, mark="bar", x="v", y="n", color="group")
    before = copy.deepcopy(spec)
    assert recolor_chart(spec, palettes, {"parameters": {"groupby": "clusters"}}) == before
    # no grouping named and the field is no obs column
    spec = chart_spec(frame.iloc[:1], mark="bar", x="v", y="n", color="group")
    before = copy.deepcopy(spec)
    assert recolor_chart(spec, palettes, {"parameters": {}}) == before
    # the field is the obs column itself
    spec = chart_spec(frame.iloc[:1].rename(columns={"group": "clusters"}), mark="bar", x="v", y="n", color="clusters")
    assert recolor_chart(spec, palettes, None)["encoding"]["color"]["scale"] == {"domain": ["0"], "range": ["#aa0000"]}


def test_a_column_named_with_a_dot_keeps_its_palette() -> None:
    """The chart's field is escaped (``leiden\\.res``); the palette and the rows know ``leiden.res``."""
    palettes = {"leiden.res": {"0": "#aa0000", "1": "#00aa00"}}
    frame = pd.DataFrame({"leiden.res": ["1", "0"], "v": [1.0, 2.0], "n": ["a", "b"]})
    spec = recolor_chart(chart_spec(frame, mark="bar", x="v", y="n", color="leiden.res"), palettes, None)
    assert spec["encoding"]["color"]["field"] == "leiden\\.res"
    assert spec["encoding"]["color"]["scale"] == {"domain": ["0", "1"], "range": ["#aa0000", "#00aa00"]}
