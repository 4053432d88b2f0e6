"""Colour data once per column and version of the same cells (issue 39): named by the stored objects read."""

from __future__ import annotations

import pandas as pd
import pytest

from sds_jupyter.service import RequestError, StackService, dispatch
from sds_jupyter.service.features.cells.colorcache import colors_cache
from sds_jupyter.stack import Stack
from sds_jupyter.stack.caches import default_caches
from sds_jupyter.stack.write.writer import VersionWriter

COLORS = colors_cache(default_caches())

pytest_plugins = ["kit.fixtures_service"]


@pytest.fixture(autouse=True)
def empty_cache():
    COLORS.clear()
    yield
    COLORS.clear()


def _colors(service: StackService, figure: str, version: int | None = None, **params: str):
    return dispatch(service, "color_values", {"figure": figure, **({"version": version} if version else {}), **params})


@pytest.fixture
def recolored(studio_copy) -> StackService:
    """A third version on the studio stack that only adds an obs column (region_class stays as v2 wrote it)."""
    writer = VersionWriter(Stack.resolve(studio_copy.v2))
    n_obs = writer.n_obs("table")
    writer.set_obs("table", "niche", pd.Categorical(["a" if i % 3 else "b" for i in range(n_obs)]))
    return StackService(writer.commit(studio_copy.datasets / "recolor-3333", title="Recolor"))


def test_two_figures_and_a_version_that_leaves_the_column_alone_compute_its_colours_once(studio_copy, recolored):
    below = StackService(studio_copy.v2)  # another service, as the server keeps one per version folder
    first = _colors(below, "fig_new", column="region_class")
    assert (COLORS.misses, COLORS.hits) == (1, 0)
    other_figure = _colors(below, "fig_continuous", column="region_class")
    same_in_next_version = _colors(recolored, "fig_new", column="region_class")
    assert (COLORS.misses, COLORS.hits) == (1, 2)
    assert first.etag and first.etag == other_figure.etag == same_in_next_version.etag
    assert [bytes(b) for b in same_in_next_version.buffers] == [bytes(b) for b in first.buffers]
    assert same_in_next_version.data == first.data


def test_a_rewritten_column_or_another_setting_gets_another_key(studio_copy):
    service = StackService(studio_copy.v2)
    before = _colors(service, "fig_canvas", version=1, column="region_class")  # v2 rewrites region_class
    after = _colors(service, "fig_canvas", version=2, column="region_class")
    assert before.etag != after.etag and COLORS.misses == 2
    assert bytes(before.buffers[0]) != bytes(after.buffers[0])
    assert (before.data["mode"], after.data["mode"]) == ("categorical", "categorical")
    highlighted = _colors(service, "fig_canvas", version=2, column="region_class", highlight="tumor")
    assert highlighted.etag != after.etag  # a highlight is not the plain column's colours (and is not kept)


def test_a_gene_read_from_the_same_matrix_is_computed_once_and_a_layer_is_another_key(studio_copy):
    service = StackService(studio_copy.v2)
    gene = dispatch(service, "genes", {"figure": "fig_canvas"}).data["names"][0]
    first = _colors(service, "fig_canvas", version=1, gene=gene)
    again = _colors(service, "fig_canvas", version=2, gene=gene)  # v2 leaves X and var alone
    assert (COLORS.misses, COLORS.hits) == (1, 1) and first.etag == again.etag
    other = dispatch(service, "genes", {"figure": "fig_canvas"}).data["names"][1]
    assert _colors(service, "fig_canvas", version=2, gene=other).etag != first.etag and COLORS.misses == 2


def test_the_canvas_names_each_columns_colours_and_a_key_addresses_them(studio_copy, recolored):
    below = StackService(studio_copy.v2)
    named = dispatch(below, "canvas", {"figure": "fig_new"}).data["color_keys"]
    assert (
        dispatch(recolored, "canvas", {"figure": "fig_new"}).data["color_keys"]["region_class"] == named["region_class"]
    )
    first = _colors(below, "fig_new", column="region_class", key=named["region_class"])
    assert first.etag == named["region_class"]  # the key the browser keeps it under is the one the server computed
    v1 = dispatch(below, "canvas", {"figure": "fig_canvas", "version": 1}).data["color_keys"]
    assert v1["region_class"] != named["region_class"]  # v2 rewrote the column
    with pytest.raises(RequestError, match="ask canvas again"):
        _colors(below, "fig_new", column="region_class", key=v1["region_class"])
    with pytest.raises(RequestError, match="plain obs column"):
        _colors(below, "fig_new", column="region_class", highlight="tumor", key=named["region_class"])


def test_the_canvas_sends_no_colours_and_its_own_are_the_named_column_computed_once(studio_copy, recolored):
    below = StackService(studio_copy.v2)
    canvas = dispatch(below, "canvas", {"figure": "fig_new"})
    assert canvas.buffers == []  # the figure's colour column comes by color_values, under its name
    column = canvas.data["color"]["column"]
    assert COLORS.misses == 1  # described from the kept colours, which the request below finds
    own = _colors(below, "fig_new", column=column, key=canvas.data["color_keys"][column])
    assert (COLORS.misses, COLORS.hits) == (1, 1) and own.data == canvas.data["color"]
    assert len(own.buffers) == 1 and own.buffers[0].nbytes == 4 * canvas.data["n_cells"]  # float32 values
    again = dispatch(recolored, "canvas", {"figure": "fig_new"})  # the next version leaves the column alone
    assert again.data["color_keys"][column] == own.etag and COLORS.misses == 1


def test_a_figures_view_and_its_export_colour_each_category_alike(studio_copy, tmp_path):
    """fig_canvas saves a colour for "tumor" only; another figure saves "stroma"'s: view and SVG use both."""
    import re

    from sds_jupyter.service.export import export_figure
    from sds_jupyter.studio.palette import fixed_palette

    writer = VersionWriter(Stack.resolve(studio_copy.v1))  # v1's region_class: tumor and stroma
    other = {"kind": "canvas", "title": "Other", "color_by": "region_class", "category_colors": {"stroma": "#0a7e3c"}}
    writer.set_figure("table", "fig_other", other)
    service = StackService(writer.commit(studio_copy.datasets / "palette-4444", title="Palette"))
    color = dispatch(service, "canvas", {"figure": "fig_canvas"}).data["color"]
    shown = dict(zip(color["categories"], color["colors"], strict=True))
    assert shown["tumor"] == "#d62728" and shown["stroma"] == "#0a7e3c"
    values = _colors(service, "fig_canvas", column="region_class", key="").data
    assert dict(zip(values["categories"], values["colors"], strict=True)) == shown
    svg = export_figure(service, "fig_canvas", tmp_path / "fig.svg", view="whole").read_text()
    drawn = {c.lower() for c in re.findall(r"fill:\s*(#[0-9a-fA-F]{6})", svg)}
    assert {shown["tumor"], shown["stroma"]} <= drawn
    assert not set(fixed_palette(2)) - set(shown.values()) & drawn  # the palette's own stroma colour is not drawn
