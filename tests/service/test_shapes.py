"""Cells drawn as what they are: polygons or circles from the shapes element the table annotates."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import zarr

from sds_jupyter.studio.canvas import build_canvas
from sds_jupyter.studio.elements import coarsest_level

pytest_plugins = ["kit.fixtures_service"]

SPEC = {"kind": "canvas", "table": "table", "color_by": None}


def _write(path: Path, geometry: list, index: list[int], table_order: list[int], radius: list[float] | None = None):
    """A spatialdata store: one shapes element (scaled x2 into global) and a table annotating it."""
    import anndata as ad
    import geopandas as gpd
    import spatialdata
    from spatialdata.models import ShapesModel, TableModel
    from spatialdata.transformations import Scale

    frame = gpd.GeoDataFrame(geometry=geometry, index=pd.Index(index, name="cell_id"))
    if radius is not None:
        frame["radius"] = radius
    shapes = ShapesModel.parse(frame, transformations={"global": Scale([2.0, 2.0], axes=("x", "y"))})
    obs = pd.DataFrame(
        {"cell_id": table_order, "region": pd.Categorical(["cells"] * len(table_order))},
        index=[f"c{i}" for i in table_order],
    )
    table = TableModel.parse(ad.AnnData(obs=obs), region="cells", region_key="region", instance_key="cell_id")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spatialdata.SpatialData(shapes={"cells": shapes}, tables={"table": table}).write(path)
    root = zarr.open_group(str(path), mode="r")
    import anndata

    return anndata.read_zarr(str(path / "tables" / "table")), root


def test_polygons_come_in_table_order_in_the_canvas_system(tmp_path: Path) -> None:
    import shapely

    square = shapely.Polygon([(0, 0), (1, 0), (1, 1), (0, 1)])
    triangle = shapely.Polygon([(5, 5), (6, 5), (5, 6)])
    big = shapely.Polygon([(20, 20), (23, 20), (23, 23), (20, 23)])
    multi = shapely.MultiPolygon([shapely.Polygon([(10, 10), (10.1, 10), (10, 10.1)]), big])
    adata, root = _write(tmp_path / "p.zarr", [square, triangle, multi], [1, 2, 3], table_order=[3, 1, 2])
    drawn = build_canvas(SPEC, adata, root)
    shapes = drawn.payload["shapes"]
    assert shapes is not None and shapes["kind"] == "polygons" and shapes["element"] == "cells"
    starts, vertices = drawn.buffers[-2], drawn.buffers[-1].reshape(-1, 2)
    assert starts.dtype == np.uint32 and vertices.dtype == np.float32
    assert list(np.diff(starts)) == [5, 5, 4]  # the multipolygon's larger square first, then square, triangle
    first = vertices[starts[0] : starts[1]]
    assert first.min(axis=0).tolist() == [40.0, 40.0] and first.max(axis=0).tolist() == [46.0, 46.0]
    assert vertices[starts[1] : starts[2]].max(axis=0).tolist() == [2.0, 2.0]  # scaled x2
    assert shapes["n_vertices"] == len(vertices) == 14


def test_circles_send_their_radius_in_canvas_units(tmp_path: Path) -> None:
    import shapely

    points = [shapely.Point(1, 1), shapely.Point(4, 4)]
    adata, root = _write(tmp_path / "c.zarr", points, [7, 8], table_order=[8, 7], radius=[0.5, 1.5])
    drawn = build_canvas(SPEC, adata, root)
    assert drawn.payload["shapes"] == {"kind": "circles", "element": "cells"}
    assert drawn.buffers[-1].tolist() == [3.0, 1.0]


def test_points_stay_points_without_shapes(studio_adata, blobs_root) -> None:
    drawn = build_canvas({**SPEC, "color_by": None}, studio_adata, blobs_root)
    assert drawn.payload["shapes"] is None


def test_the_canvas_shows_the_finest_pyramid_level_that_fits(xenium_root: zarr.Group) -> None:
    # levels 4096, 2048, 1024, ...: 2048 fits a 2048 px budget; before, the 256 px top level was shown
    assert coarsest_level(xenium_root, "images", "morphology_focus", max_side=2048).data.shape[-1] == 2048
    assert coarsest_level(xenium_root, "images", "morphology_focus").data.shape[-1] == 256


def test_plain_polygons_are_read_from_the_wkb_buffer_as_shapely_reads_them() -> None:
    """The WKB reader (no shapely geometries) gives each polygon's exterior as shapely does: holes and empties too."""
    import pyarrow as pa
    import shapely

    from sds_jupyter.studio.shapes import _polygon_exteriors, _shapely_exteriors

    polygons = [
        shapely.Polygon([(0, 0), (1, 0), (1, 1), (0, 1)]),
        shapely.Polygon([(0, 0), (9, 0), (9, 9), (0, 9)], holes=[[(2, 2), (3, 2), (3, 3)]]),
        shapely.Polygon(),
        shapely.Polygon([(5.5, 5.25), (6.125, 5), (5, 6)]),
    ]
    wkb = shapely.to_wkb(polygons, byte_order=1)
    expected = _shapely_exteriors(np.asarray(wkb, dtype=object))
    assert isinstance(expected, tuple) and expected[1].tolist() == [5, 5, 0, 4]
    for kind in (pa.binary(), pa.large_binary()):  # in two chunks, as a parquet file may hold them
        found = _polygon_exteriors(pa.chunked_array([pa.array(wkb[:2], kind), pa.array(wkb[2:], kind)]))
        assert found is not None and found[1].tolist() == expected[1].tolist()
        assert np.array_equal(found[0], expected[0])
    # anything else is left to shapely: a multipolygon, big-endian, a missing value
    multi = shapely.to_wkb([shapely.MultiPolygon([polygons[0]])], byte_order=1)
    assert _polygon_exteriors(pa.chunked_array([pa.array(multi, pa.binary())])) is None
    big = shapely.to_wkb(polygons[:1], byte_order=0)
    assert _polygon_exteriors(pa.chunked_array([pa.array(big, pa.binary())])) is None
    assert _polygon_exteriors(pa.chunked_array([pa.array([wkb[0], None], pa.binary())])) is None


def test_polygons_alone_come_in_table_order_through_the_buffer_reader(tmp_path: Path) -> None:
    import shapely

    square = shapely.Polygon([(0, 0), (1, 0), (1, 1), (0, 1)])
    triangle = shapely.Polygon([(5, 5), (6, 5), (5, 6)])
    for order in ([2, 1], [1, 2]):  # shuffled, and in the shapes' own order
        adata, root = _write(tmp_path / f"p{order[0]}.zarr", [square, triangle], [1, 2], table_order=order)
        drawn = build_canvas(SPEC, adata, root)
        starts, vertices = drawn.buffers[-2], drawn.buffers[-1].reshape(-1, 2)
        sizes = {1: 5, 2: 4}
        assert list(np.diff(starts)) == [sizes[i] for i in order]
        tops = {1: [2.0, 2.0], 2: [12.0, 12.0]}  # scaled x2
        assert [vertices[starts[k] : starts[k + 1]].max(axis=0).tolist() for k in range(2)] == [tops[i] for i in order]
