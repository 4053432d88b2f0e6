"""Level of detail (issue 23): a large tissue's first figure sends circles; outlines come by tile."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from kit.rest import jp_server_config  # noqa: F401 - fixture
from tornado.httpclient import HTTPClientError

from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.service import RequestError, StackService, dispatch, pieces, unframe_reply
from sds_jupyter.service.contract import payload_schema
from sds_jupyter.stack.caches import default_caches

pytest_plugins = ["pytest_jupyter.jupyter_server"]

FIGURE = "fig-cell-types"
N_CELLS = 6000  # above pieces.OUTLINES_AT_ONCE, so the outlines go by tile


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("lod"), n_cells=N_CELLS, side=512)


@pytest.fixture(autouse=True)
def empty_caches():
    for cache in (
        pieces.cells_cache(default_caches()),
        pieces.outlines_cache(default_caches()),
        pieces.outline_tiles_cache(default_caches()),
    ):
        cache.clear()
    yield


def _stored_polygons(version: Path) -> Any:
    """The stored shapes in the figure's system, in table order (spatialdata reads them, not the service)."""
    import spatialdata

    from sds_jupyter.demo.xenium import SHAPES
    from sds_jupyter.stack.open import open_anndata
    from sds_jupyter.stack.stack import Stack

    stack = Stack.resolve(version)
    shapes = spatialdata.read_zarr(str(stack.base.path)).shapes[SHAPES]
    shapes = spatialdata.transform(shapes, to_coordinate_system="global")
    table = open_anndata(stack)
    instance = table.obs[table.uns["spatialdata_attrs"]["instance_key"]].astype(str).to_numpy()
    return shapes.geometry.set_axis(shapes.index.astype(str)).loc[instance].to_numpy()


def _first(service: StackService) -> tuple[str, dict[str, Any], Any]:
    canvas = service.canvas(None, FIGURE)
    cells = service.cells(None, FIGURE, canvas.data["cells_key"])
    assert cells.data["shapes"] == canvas.data["shapes"]
    return canvas.data["cells_key"], cells.data["shapes"], cells


def test_the_first_figure_sends_circles_of_each_cells_area_and_no_outline(large: Path) -> None:
    import shapely

    _, shapes, cells = _first(StackService(large))
    assert shapes["kind"] == "circles" and shapes["outlines"]["n_vertices"] > N_CELLS * 4
    assert [b.nbytes for b in cells.buffers] == [2 * N_CELLS] * 3  # x, y, radius as uint16 codes: no vertex sent
    step = cells.data["quantum"]["radius_step"]
    radius = np.frombuffer(bytes(cells.buffers[2]), dtype="<u2") * step
    expected = np.sqrt(shapely.area(_stored_polygons(large)) / np.pi)  # the demo's polygons have no holes
    np.testing.assert_allclose(radius, expected, rtol=1e-3, atol=step / 2)


def test_a_large_tissues_positions_go_as_codes_within_half_a_step(large: Path) -> None:
    """uint16 codes of the quantum read back to the float32 positions within half a step; NaN stays NaN."""
    from sds_jupyter.service.pieces import NO_POSITION, quantized
    from sds_jupyter.studio.canvas import build_canvas
    from sds_jupyter.studio.figurespecs import read_figure

    service = StackService(large)
    _, _, cells = _first(service)
    quantum = cells.data["quantum"]
    view = service.table_view(None)
    drawn = build_canvas(read_figure(view.studio_uns(), FIGURE).require("canvas"), view, view.root, view.attrs)
    x, y = (np.asarray(b, dtype=np.float64) for b in drawn.buffers[:2])
    # x and y go as differences modulo 2^16: the running sum gives the codes back
    codes = [np.cumsum(np.frombuffer(bytes(b), dtype="<u2"), dtype=np.uint16) for b in cells.buffers[:2]]
    for exact, code, origin in ((x, codes[0], quantum["x0"]), (y, codes[1], quantum["y0"])):
        back = origin + code.astype(np.float64) * quantum["step"]
        assert np.max(np.abs(back - exact)) <= quantum["step"] / 2 * 1.001
    assert quantum["step"] <= max(np.ptp(x), np.ptp(y)) / 65_000
    # a cell without a position or shape: NO_POSITION, read back as NaN
    holes = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    got, (cx, _cy, cr) = quantized(holes, holes, holes)
    assert np.cumsum(cx, dtype=np.uint16).tolist() == [0, NO_POSITION, 65534]
    assert cr[1] == NO_POSITION and got["step"] == 2 / 65534


def test_each_tile_holds_exactly_the_cells_whose_polygon_meets_it(large: Path) -> None:
    import shapely

    service = StackService(large)
    key, shapes, _ = _first(service)
    grid = shapes["outlines"]
    assert grid["columns"] * grid["rows"] > 1
    stored = _stored_polygons(large)
    seen: set[int] = set()
    for column in range(grid["columns"]):
        for row in range(grid["rows"]):
            reply = dispatch(service, "cell_outlines", {"figure": FIGURE, "key": key, "column": column, "row": row})
            index, starts, vertices = (bytes(b) for b in reply.buffers)
            index = np.frombuffer(index, dtype=np.uint32)
            starts = np.frombuffer(starts, dtype=np.uint32)
            xy = np.frombuffer(vertices, dtype=np.float32).reshape(-1, 2)
            box = shapely.box(*reply.data["box"])
            assert index.tolist() == np.flatnonzero(shapely.intersects(stored, box)).tolist()
            assert len(starts) == len(index) + 1 and starts[-1] == len(xy) == reply.data["n_vertices"]
            for i, cell in enumerate(index[:50]):
                ring = shapely.get_coordinates(shapely.get_exterior_ring(stored[cell]))
                np.testing.assert_allclose(xy[starts[i] : starts[i + 1]], ring, rtol=1e-5)
            seen.update(index.tolist())
    assert seen == set(range(N_CELLS))  # every outline is in some tile


def test_a_tile_is_built_once_and_named_by_the_cells_and_the_tile(large: Path) -> None:
    service = StackService(large)
    key, _, _ = _first(service)
    first = service.cell_outlines(None, FIGURE, key, 0, 0)
    again = StackService(large).cell_outlines(None, FIGURE, key, 0, 0)
    other = service.cell_outlines(None, FIGURE, key, 1, 0)
    assert (pieces.outline_tiles_cache(default_caches()).misses, pieces.outline_tiles_cache(default_caches()).hits) == (
        2,
        1,
    )
    assert first.etag == again.etag != other.etag and first.addressed
    schema = payload_schema()
    validator = jsonschema.Draft202012Validator({"$defs": schema["$defs"], **schema["requests"]["cell_outlines"]})
    assert not list(validator.iter_errors(json.loads(json.dumps(first.data))))


def test_bad_tile_requests_are_refused_in_one_line(large: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = StackService(large)
    key, shapes, _ = _first(service)
    columns = shapes["outlines"]["columns"]
    with pytest.raises(RequestError, match=r"outside the grid of \d+ x \d+ tiles"):
        service.cell_outlines(None, FIGURE, key, columns, 0)
    with pytest.raises(RequestError, match="outside the grid"):
        service.cell_outlines(None, FIGURE, key, -1, 0)
    with pytest.raises(RequestError, match="ask canvas again"):
        service.cell_outlines(None, FIGURE, "0" * 32, 0, 0)
    with pytest.raises(RequestError, match="needs a figure id and its cells key"):
        service.cell_outlines(None, FIGURE, "", 0, 0)
    monkeypatch.setattr(pieces, "MAX_OUTLINE_TILE_CELLS", 10)  # a tile of a pile of cells
    with pytest.raises(RequestError, match=r"meets \d+ cells, more than 10") as info:
        service.cell_outlines(None, FIGURE, key, 0, 0)
    assert "\n" not in str(info.value)


def test_a_small_tissue_sends_its_outlines_at_once_and_has_no_tiles(large: Path, monkeypatch) -> None:
    monkeypatch.setattr(pieces, "OUTLINES_AT_ONCE", N_CELLS)
    service = StackService(large)
    key, shapes, cells = _first(service)
    assert shapes["kind"] == "polygons" and "outlines" not in shapes and len(cells.buffers) == 4
    with pytest.raises(RequestError, match="no outline tiles"):
        service.cell_outlines(None, FIGURE, key, 0, 0)


# ------------------------------------------------------------------ over REST


def _raw(jp_fetch, jp_asyncio_loop, name: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
    query = {k: str(v) for k, v in params.items()}
    try:
        return jp_asyncio_loop.run_until_complete(jp_fetch(NAMESPACE, "api", name, params=query, headers=headers or {}))
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.response


def test_outline_tiles_over_rest_are_immutable_and_revalidate_to_304(
    large: Path, jp_root_dir: Path, jp_fetch, jp_asyncio_loop
) -> None:
    shutil.copytree(large.parent, jp_root_dir / "lod", symlinks=True)
    path = f"lod/{large.name}"
    canvas = _raw(jp_fetch, jp_asyncio_loop, "canvas", path=path, figure=FIGURE)
    key = unframe_reply(canvas.body)[0]["cells_key"]
    params = {"path": path, "figure": FIGURE, "key": key, "column": 0, "row": 0}
    first = _raw(jp_fetch, jp_asyncio_loop, "cell_outlines", **params)
    assert first.code == 200 and "immutable" in first.headers["Cache-Control"]
    data, buffers = unframe_reply(first.body)
    assert data["n_cells"] == len(buffers[0]) // 4 > 0
    etag = first.headers["Etag"]
    again = _raw(jp_fetch, jp_asyncio_loop, "cell_outlines", headers={"If-None-Match": etag}, **params)
    assert again.code == 304 and not again.body
    other = _raw(jp_fetch, jp_asyncio_loop, "cell_outlines", headers={"If-None-Match": etag}, **{**params, "row": 1})
    assert other.code == 200 and other.headers["Etag"] != etag
    refused = _raw(jp_fetch, jp_asyncio_loop, "cell_outlines", **{**params, "column": 99})
    assert refused.code == 400 and "outside the grid" in json.loads(refused.body)["message"]
