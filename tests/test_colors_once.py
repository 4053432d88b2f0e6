"""Colour data once per column and version of the same cells (issue 39): named by the stored objects read."""

from __future__ import annotations

import pandas as pd
import pytest

from sds_jupyter.service import RequestError, StackService, dispatch
from sds_jupyter.service.colorcache import colors_cache
from sds_jupyter.stack import Stack
from sds_jupyter.stack.caches import default_caches
from sds_jupyter.stack.writer import VersionWriter

COLORS = colors_cache(default_caches())

pytest_plugins = ["fixtures_service"]


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
