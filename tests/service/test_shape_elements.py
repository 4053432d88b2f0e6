"""Every shapes element as outlines (issue 39): the ``shapes`` and ``shapes_tile`` requests on blobs.

Checked against the same elements read back by spatialdata (geopandas' exteriors), so the tiles
together must give each shape's outline exactly once per tile it meets, in the element's order.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from sds_jupyter.protocol.buffers import named_buffers
from sds_jupyter.protocol.layouts import LAYOUTS
from sds_jupyter.service import StackService
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.requests import dispatch
from sds_jupyter.studio.shapes import CIRCLE_SIDES

pytest_plugins = ["kit.fixtures_service"]


@pytest.fixture
def service(demo_top: Path) -> StackService:
    return StackService(demo_top)


def _truth(service: StackService, element: str):  # -> geopandas.GeoDataFrame
    import spatialdata

    local = service.stack.base.path.as_local()
    assert local is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spatialdata.read_zarr(Path(local)).shapes[element]


def _tiles(service: StackService, element: str) -> tuple[dict, dict[int, np.ndarray]]:
    """The element's index and each shape's ring (x, y rows) as the tiles send it, every tile asked once."""
    index = dispatch(service, "shapes", {"element": element}).data["index"]
    grid, rings = index["grid"], {}
    for row in range(grid["rows"]):
        for column in range(grid["columns"]):
            params = {"element": element, "key": index["key"], "column": column, "row": row}
            reply = dispatch(service, "shapes_tile", params)
            named = named_buffers("shapes_tile", LAYOUTS["shapes_tile"], reply.data, reply.buffers)
            which = np.frombuffer(named["index"], dtype=np.uint32)
            starts = np.frombuffer(named["starts"], dtype=np.uint32)
            xy = np.frombuffer(named["vertices"], dtype=np.float32).reshape(-1, 2)
            for i, shape in enumerate(which):
                ring = xy[starts[i] : starts[i + 1]]
                if int(shape) in rings:  # a shape across tiles comes with each: the same ring
                    np.testing.assert_array_equal(rings[int(shape)], ring)
                rings[int(shape)] = ring
    return index, rings


def test_the_coordinate_systems_shapes_elements_are_listed(service: StackService) -> None:
    listed = dispatch(service, "shapes", {}).data
    assert listed["index"] is None
    assert {"blobs_polygons", "blobs_circles", "blobs_multipolygons"} <= set(listed["elements"])


def test_polygon_tiles_give_every_outline_as_spatialdata_reads_it(service: StackService) -> None:
    import shapely

    truth = _truth(service, "blobs_polygons")
    index, rings = _tiles(service, "blobs_polygons")
    assert index["kind"] == "polygons" and index["n_shapes"] == len(truth)
    assert sorted(rings) == list(range(len(truth)))
    for row, geometry in enumerate(truth.geometry):
        expected = shapely.get_coordinates(geometry.exterior)
        np.testing.assert_allclose(rings[row], expected, rtol=1e-6)


def test_circles_are_outlined_as_rings_of_their_radius(service: StackService) -> None:
    truth = _truth(service, "blobs_circles")
    index, rings = _tiles(service, "blobs_circles")
    assert index["kind"] == "circles" and sorted(rings) == list(range(len(truth)))
    for row, (point, radius) in enumerate(zip(truth.geometry, truth["radius"], strict=True)):
        ring = rings[row]
        assert len(ring) == CIRCLE_SIDES + 1
        distance = np.hypot(ring[:, 0] - point.x, ring[:, 1] - point.y)
        np.testing.assert_allclose(distance, radius, rtol=1e-4)


def test_the_key_names_the_element_and_a_stale_key_is_refused(service: StackService) -> None:
    first = dispatch(service, "shapes", {"element": "blobs_polygons"}).data["index"]
    again = dispatch(service, "shapes", {"element": "blobs_polygons", "version": 0}).data["index"]
    other = dispatch(service, "shapes", {"element": "blobs_circles"}).data["index"]
    assert first["key"] == again["key"] != other["key"]  # no version rewrote the element: one key, one entry
    with pytest.raises(RequestError, match="not the one key") as info:
        dispatch(service, "shapes_tile", {"element": "blobs_polygons", "key": other["key"]})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"element": "no_such"}, "No shapes element 'no_such'"),
        ({"element": "../tables"}, "is not a shapes element name"),
        ({"element": "blobs_polygons", "coordinate_system": "elsewhere"}, "in coordinate system 'elsewhere'"),
    ],
)
def test_bad_elements_get_one_line_saying_what_to_do(service: StackService, params: dict, said: str) -> None:
    with pytest.raises(RequestError, match=said) as info:
        dispatch(service, "shapes", params)
    assert "\n" not in str(info.value)


def test_a_tile_outside_the_grid_is_refused(service: StackService) -> None:
    index = dispatch(service, "shapes", {"element": "blobs_polygons"}).data["index"]
    params = {"element": "blobs_polygons", "key": index["key"], "column": index["grid"]["columns"], "row": 0}
    with pytest.raises(RequestError, match="outside the grid"):
        dispatch(service, "shapes_tile", params)


# ------------------------------------------------------------------ the figure spec's ``shapes`` and exports


def test_a_figure_spec_carries_its_shapes_layers_to_the_view(service: StackService) -> None:
    """The demo's regions figure is saved outlining the blobs' polygons; its clusters figure (an older spec) outlines none."""
    regions = dispatch(service, "canvas", {"figure": "fig-regions"}).data
    assert regions["shape_layers"] == [
        {"element": "blobs_polygons", "color": "#00e5ff", "visible": True, "opacity": 1.0}
    ]
    assert dispatch(service, "canvas", {"figure": "fig-clusters"}).data["shape_layers"] == []


def test_the_canvas_names_its_figures_coordinate_system_for_the_views_layers(service: StackService) -> None:
    """The view's shapes, labels and transcripts layers ask in the system the export draws in: the canvas says which."""
    from sds_jupyter.studio.canvas import build_canvas

    assert dispatch(service, "canvas", {"figure": "fig-regions"}).data["coordinate_system"] == ""  # unsaid: the default
    session = service.session
    spec = {**session.canvas_spec(None, "fig-regions"), "coordinate_system": "global"}
    view = session.table_view(None, spec.get("table"))
    assert build_canvas(spec, view, view.root, view.attrs).payload["coordinate_system"] == "global"


def test_a_layer_without_a_colour_gets_the_one_the_shapes_request_offers(service: StackService) -> None:
    from sds_jupyter.studio.canvas import shape_layers

    listed = dispatch(service, "shapes", {}).data
    offered = dict(zip(listed["elements"], listed["colors"], strict=True))
    saved = [{"element": name} for name in listed["elements"]] + [
        {"element": listed["elements"][0], "color": "#123456"}
    ]
    layers = shape_layers(saved)
    assert [layer["element"] for layer in layers] == listed["elements"]  # each element once, the first entry wins
    assert {layer["element"]: layer["color"] for layer in layers} == offered


def _svg_rings(svg: str, color: str) -> int:
    """How many outline paths of ``color`` an exported SVG holds (matplotlib writes a LineCollection's rings as paths)."""
    import re

    return len(re.findall(rf"<path[^>]*style=\"[^\"]*stroke: {color}", svg))


def test_an_svg_export_outlines_every_shape_the_tiles_serve(
    service: StackService, demo_top: Path, tmp_path: Path
) -> None:
    """The whole view of the regions figure: one cyan path per blobs polygon, the ones the tiles serve; none in
    the figure without the layer."""
    from sds_jupyter.service.export import export_figure

    _, rings = _tiles(service, "blobs_polygons")
    svg = export_figure(demo_top, "fig-regions", tmp_path / "regions.svg", format=".svg", view="whole").read_text()
    assert _svg_rings(svg, "#00e5ff") == len(rings) > 0
    assert "Outlines" in svg and "blobs_polygons" in svg  # the legend names the element under its heading
    plain = export_figure(demo_top, "fig-clusters", tmp_path / "clusters.svg", format=".svg", view="whole").read_text()
    assert _svg_rings(plain, "#00e5ff") == 0 and "blobs_polygons" not in plain


def test_a_png_export_zoomed_on_one_served_polygon_draws_its_outline(demo_top: Path, tmp_path: Path) -> None:
    """Zoomed on the box of one ring the tiles serve: the regions figure's export holds its outline colour,
    the clusters figure's export of the same view (no shapes layer) next to none of it."""
    from PIL import Image

    from sds_jupyter.service.export import export_figure

    _, rings = _tiles(StackService(demo_top), "blobs_polygons")
    ring = rings[0].astype(np.float64)
    (x0, y0), (x1, y1) = ring.min(axis=0) - 2, ring.max(axis=0) + 2
    view = f"{x0},{y0},{x1},{y1}"

    def cyan(figure: str) -> int:
        out = export_figure(demo_top, figure, tmp_path / f"{figure}.png", format=".png", dpi=100, view=view)
        rgb = np.asarray(Image.open(out).convert("RGB")).astype(int)
        return int((np.abs(rgb - np.array([0, 229, 255])).sum(axis=2) < 60).sum())

    drawn, plain = cyan("fig-regions"), cyan("fig-clusters")
    assert drawn > 50 and plain < drawn / 10, (drawn, plain)


# ------------------------------------------------------------------ a cells element past MAX_SHAPES


def test_cells_whose_shapes_element_is_past_max_shapes_are_drawn_as_points_with_a_line_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three polygons, a table with positions annotating them, and MAX_SHAPES lowered to two: the canvas is
    drawn (positions, no shapes) with a one-line note naming the bound and saying the outlines come by tile
    zoomed in (the element named for the view's layer), where it was refused whole before."""
    import anndata as ad
    import geopandas as gpd
    import pandas as pd
    import shapely
    import spatialdata
    import zarr
    from spatialdata.models import ShapesModel, TableModel

    from sds_jupyter.studio import elements
    from sds_jupyter.studio.canvas import build_canvas

    squares = [shapely.box(i * 10, 0, i * 10 + 5, 5) for i in range(3)]
    frame = gpd.GeoDataFrame(geometry=squares, index=pd.Index([1, 2, 3], name="cell_id"))
    obs = pd.DataFrame({"cell_id": [1, 2, 3], "region": pd.Categorical(["cells"] * 3)}, index=["a", "b", "c"])
    spatial = np.array([[2.5, 2.5], [12.5, 2.5], [22.5, 2.5]])
    table = TableModel.parse(
        ad.AnnData(obs=obs, obsm={"spatial": spatial}), region="cells", region_key="region", instance_key="cell_id"
    )
    path = tmp_path / "s.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(shapes={"cells": ShapesModel.parse(frame)}, tables={"table": table}).write(path)
    adata, root = ad.read_zarr(str(path / "tables" / "table")), zarr.open_group(str(path), mode="r")
    spec = {"kind": "canvas", "table": "table", "color_by": None}
    assert build_canvas(spec, adata, root).payload["shapes"] is not None  # under the bound: polygons
    monkeypatch.setattr(elements, "MAX_SHAPES", 2)
    drawn = build_canvas(spec, adata, root)
    assert drawn.payload["shapes"] is None and drawn.payload["n_cells"] == 3
    note = drawn.payload["shapes_note"]
    assert note is not None and "MAX_SHAPES" in note and "\n" not in note
    # the element can be indexed: zoomed in, its outlines come by tile, as the line says and the view's layer shows
    assert "zoomed in, their outlines come by tile" in note and drawn.payload["shapes_by_tile"] == "cells"
    np.testing.assert_allclose(drawn.buffers[0], spatial[:, 0])  # the cells at their positions


# ------------------------------------------------------------------ an element past MAX_SHAPES, outlined by tile


def _many_shapes_store(path: Path) -> Path:
    """400 small polygons of different sizes over a 1,000-unit square and one polygon wider than any
    tile, written by spatialdata, its parquet rewritten by pyarrow in row groups of 64 shapes."""
    import geopandas as gpd
    import pyarrow.parquet as pq
    import shapely
    import spatialdata
    from spatialdata.models import ShapesModel

    rng = np.random.default_rng(7)
    centres, sides = rng.uniform(20, 980, (400, 2)), rng.uniform(2, 12, 400)
    polygons = [
        shapely.Polygon([(x - s, y - s), (x + s, y - s), (x + s * 1.2, y + s), (x - s, y + s * 0.8)])
        for (x, y), s in zip(centres, sides, strict=True)
    ]
    polygons.append(shapely.box(100, 480, 900, 520))  # across many tiles: found from every one it meets
    frame = gpd.GeoDataFrame(geometry=polygons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(shapes={"nuclei": ShapesModel.parse(frame)}).write(path)
    parquet = path / "shapes" / "nuclei" / "shapes.parquet"
    pq.write_table(pq.read_table(parquet), parquet, row_group_size=64)
    assert pq.ParquetFile(parquet).metadata.num_row_groups == 7
    return path


def test_an_element_past_max_shapes_is_outlined_by_tile_from_an_index_built_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MAX_SHAPES lowered to 50 and tiles of about 16 shapes: the element is no longer refused; its tiles
    together give every outline as spatialdata reads it, each in every tile its polygon meets and no
    other; asked again, the same index (one build per identity)."""
    import shapely

    from sds_jupyter.service.features import shapes as feature
    from sds_jupyter.studio import elements

    store = _many_shapes_store(tmp_path / "datasets" / "base" / "many.zarr")
    service = StackService(store)
    truth = _truth(service, "nuclei")
    monkeypatch.setattr(elements, "MAX_SHAPES", 50)
    monkeypatch.setattr(feature, "OUTLINE_TILE_CELLS", 16)
    with pytest.raises(elements.ShapesOverBound):  # the whole-element reader refuses it
        elements.read_shapes_table(feature._root(service.session, None), "nuclei")
    index, rings = _tiles(service, "nuclei")
    assert index["n_shapes"] == len(truth) == 401 and index["kind"] == "polygons"
    assert index["grid"]["columns"] * index["grid"]["rows"] >= 16  # cut fine enough for ~16 shapes a tile
    assert sorted(rings) == list(range(len(truth)))
    for row, geometry in enumerate(truth.geometry):
        np.testing.assert_allclose(rings[row], shapely.get_coordinates(geometry.exterior), rtol=1e-6)
    grid = index["grid"]
    for row in range(grid["rows"]):
        for column in range(grid["columns"]):
            x0, y0 = grid["x0"] + column * grid["size"], grid["y0"] + row * grid["size"]
            expected = np.flatnonzero(
                shapely.intersects(truth.geometry.values, shapely.box(x0, y0, x0 + grid["size"], y0 + grid["size"]))
            )
            reply = dispatch(
                service, "shapes_tile", {"element": "nuclei", "key": index["key"], "column": column, "row": row}
            )
            named = named_buffers("shapes_tile", LAYOUTS["shapes_tile"], reply.data, reply.buffers)
            assert sorted(np.frombuffer(named["index"], dtype=np.uint32).tolist()) == expected.tolist(), (column, row)
    root = feature._root(service.session, None)
    first = feature.element_outlines(service.session.caches, root, "nuclei", "")
    assert isinstance(first, feature.IndexedOutlines)
    assert feature.element_outlines(service.session.caches, root, "nuclei", "") is first
    # an export of a view draws the rings whose bounds meet it, read from the same index
    view = [0.0, 0.0, 300.0, 300.0]
    rings, boxes = first.in_region(view)
    meets = [i for i, g in enumerate(truth.geometry) if shapely.intersects(shapely.box(*g.bounds), shapely.box(*view))]
    assert rings.n == len(boxes) == len(meets) > 0
    np.testing.assert_allclose(
        rings.vertices[: 2 * int(rings.starts[1])].reshape(-1, 2),
        shapely.get_coordinates(truth.geometry.iloc[meets[0]].exterior),
        rtol=1e-6,
    )


def test_the_index_lives_in_a_private_folder_removed_with_it(tmp_path: Path) -> None:
    """Its rings on disk, not in memory: a folder only this user opens, gone once the index is dropped."""
    import gc

    import zarr

    from sds_jupyter.studio.shapeindex import build_shape_index

    root = zarr.open_group(str(_many_shapes_store(tmp_path / "many.zarr")), mode="r")
    index = build_shape_index(root, "nuclei", None, 16, folder=tmp_path)
    folder = index.folder
    assert folder.parent == tmp_path and folder.stat().st_mode & 0o777 == 0o700
    assert index.n == 401 and index.nbytes < 64 * 1024  # offsets and the wide shapes' ids: the rest is mapped
    del index
    gc.collect()
    assert not folder.exists()


def test_an_element_past_max_shapes_whose_geometry_repeats_is_refused_before_a_row_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One polygon repeated 5,000 times stores as a dictionary of one: its row groups claim fewer bytes
    than their shapes' WKB takes, so the index is refused from the footer with one line naming the rule."""
    import geopandas as gpd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import shapely
    import spatialdata
    from spatialdata.models import ShapesModel

    from sds_jupyter.studio import elements

    path = tmp_path / "datasets" / "base" / "repeat.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1, 1)] * 3)
        spatialdata.SpatialData(shapes={"nuclei": ShapesModel.parse(frame)}).write(path)
    parquet = path / "shapes" / "nuclei" / "shapes.parquet"
    table = pq.read_table(parquet)
    repeated = pa.concat_tables([table.slice(0, 1)] * 5000).combine_chunks()
    pq.write_table(repeated, parquet, use_dictionary=True)
    monkeypatch.setattr(elements, "MAX_SHAPES", 50)
    with pytest.raises(RequestError, match="MAX_SHAPES") as info:
        dispatch(StackService(path), "shapes", {"element": "nuclei"})
    assert "MIN_WKB_BYTES" in str(info.value) and "\n" not in str(info.value)
