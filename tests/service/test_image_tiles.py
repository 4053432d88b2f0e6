"""The image tile grid: one tile of one pyramid level, read from the chunks it covers alone."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

from sds_jupyter.errors import ElementError, StackError
from sds_jupyter.service import StackService
from sds_jupyter.service.requests import dispatch
from sds_jupyter.stack import Stack
from sds_jupyter.studio.elements import open_pyramid

pytest_plugins = ["kit.fixtures_service"]

FIGURE = "fig-leiden"
IMAGE = "morphology_focus"


@pytest.fixture(scope="module")
def service(xenium_top: Path) -> StackService:
    return StackService(xenium_top)


def _json(data: object) -> Any:
    return json.loads(json.dumps(data))


def _level_array(top: Path, level: int) -> zarr.Array:
    """Level ``level`` of the base's image, opened straight from its zarr store (not through the service)."""
    root = zarr.open_group(str(Stack.resolve(top).base.path), mode="r")
    element = root[f"images/{IMAGE}"]
    attrs = element.attrs.asdict()
    path = attrs.get("ome", attrs)["multiscales"][0]["datasets"][level]["path"]
    array = element[path]
    assert isinstance(array, zarr.Array)
    return array


def _scaled(raw: np.ndarray, low: float, high: float) -> bytes:
    """A raw plane as the protocol's uint8 over [low, high] (what the overview's planes use)."""
    span = high - low if high > low else 1.0
    return np.round(np.clip((raw.astype(np.float32) - low) / span, 0.0, 1.0) * 255).astype(np.uint8).tobytes()


def test_channels_describe_the_pyramid(service) -> None:
    data = _json(dispatch(service, "channels", {"figure": FIGURE}).data)
    levels = data["levels"]
    assert [(lv["width"], lv["height"]) for lv in levels] == [
        (2048, 2048),
        (1024, 1024),
        (512, 512),
        (256, 256),
        (128, 128),
    ]
    # 512 px tiles: two to a 1,024 px chunk, so a tile never straddles two chunks
    assert [lv["tile"] for lv in levels] == [512, 512, 512, 256, 512]
    # every level covers the same region of the coordinate system as the overview
    for level in levels:
        assert level["bounds"] == pytest.approx(data["bounds"])
    assert [c["name"] for c in data["channels"]] == ["DAPI", "Boundary stain", "Interior RNA"]


@pytest.mark.parametrize(("level", "x", "y"), [(0, 0, 0), (0, 3, 3), (0, 1, 2), (1, 1, 0), (3, 0, 0), (4, 0, 0)])
def test_a_tile_is_a_direct_read_of_its_level(service, xenium_top, level, x, y) -> None:
    channels = _json(dispatch(service, "channels", {"figure": FIGURE}).data)
    tile = channels["levels"][level]["tile"]
    reply = dispatch(service, "image_tile", {"figure": FIGURE, "level": level, "x": x, "y": y})
    data = _json(reply.data)
    array = _level_array(xenium_top, level)
    x0, y0 = x * tile, y * tile
    x1, y1 = min(array.shape[2], x0 + tile), min(array.shape[1], y0 + tile)
    assert (data["level"], data["x"], data["y"]) == (level, x, y)
    assert (data["width"], data["height"]) == (x1 - x0, y1 - y0)
    assert data["channels"] == len(reply.buffers) == 3
    raw = np.asarray(array[:, y0:y1, x0:x1])
    for k, (buffer, info) in enumerate(zip(reply.buffers, channels["channels"], strict=True)):
        assert bytes(buffer) == _scaled(raw[k], *info["range"]), f"channel {k}"
    # where the tile sits: its pixels in micrometres (the level's bounds cut at the tile's edges)
    bx0, by0, bx1, by1 = channels["levels"][level]["bounds"]
    per_x, per_y = (bx1 - bx0) / array.shape[2], (by1 - by0) / array.shape[1]
    assert data["bounds"] == pytest.approx([bx0 + x0 * per_x, by0 + y0 * per_y, bx0 + x1 * per_x, by0 + y1 * per_y])


def test_ranges_choose_what_0_and_255_stand_for(service, xenium_top) -> None:
    reply = dispatch(service, "image_tile", {"figure": FIGURE, "level": 1, "x": 0, "y": 0, "ranges": "0,100;0,1;5,6"})
    raw = np.asarray(_level_array(xenium_top, 1)[:, 0:512, 0:512])
    assert bytes(reply.buffers[0]) == _scaled(raw[0], 0, 100)
    assert bytes(reply.buffers[2]) == _scaled(raw[2], 5, 6)


def test_tiles_meet_without_gaps_and_cover_the_level(xenium_root: zarr.Group) -> None:
    pyramid = open_pyramid(xenium_root, IMAGE)
    for index, level in enumerate(pyramid.levels):
        columns, rows = -(-level.width // level.tile), -(-level.height // level.tile)
        boxes = [pyramid.tile_box(index, tx, 0) for tx in range(columns)]
        assert boxes[0][0] == 0 and boxes[-1][2] == level.width
        assert all(a[2] == b[0] for a, b in itertools.pairwise(boxes))
        last = pyramid.tile_box(index, columns - 1, rows - 1)
        assert last[2:] == (level.width, level.height)
        left = pyramid.bounds(index, *boxes[0])
        if len(boxes) > 1:
            assert left[2] == pyramid.bounds(index, *boxes[1])[0]  # one edge, no seam


def test_an_edge_tile_is_clipped_to_the_level(xenium_top: Path) -> None:
    pyramid = open_pyramid(zarr.open_group(str(Stack.resolve(xenium_top).base.path), mode="r"), IMAGE)
    coarsest = len(pyramid.levels) - 1
    level = pyramid.levels[coarsest]
    assert level.tile > level.width  # one tile larger than the level: the level, not the tile side
    assert pyramid.tile_box(coarsest, 0, 0) == (0, 0, level.width, level.height)
    assert pyramid.read(coarsest, 0, 0, level.width, level.height).data.shape == (3, level.height, level.width)


def test_reads_outside_a_level_are_refused(xenium_root: zarr.Group) -> None:
    pyramid = open_pyramid(xenium_root, IMAGE)
    for box in [(-1, 0, 10, 10), (0, 0, 4097, 10), (5, 0, 5, 10), (0, 10, 10, 4)]:
        with pytest.raises(ElementError, match="not inside level 0"):
            pyramid.read(0, *box)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"level": 5}, "has levels 0 to 4, not 5"),
        ({"level": -1}, "has levels 0 to 4, not -1"),
        ({"x": 4}, "tiles 0 to 3 along x, not 4"),
        ({"y": -1}, "tiles 0 to 3 along y, not -1"),
        ({"level": 4, "x": 1}, "tiles 0 to 0 along x, not 1"),
        ({"x": "1e3"}, "must be an integer"),
        ({"y": "9" * 40}, "out of range"),
        ({"level": "0x1"}, "must be an integer"),
        ({"ranges": "0,1;2"}, "2 finite numbers"),
        ({"ranges": "0,inf"}, "2 finite numbers"),
        ({"ranges": "0,1;" * 2000}, "too long"),
        ({"figure": ""}, "needs a figure id"),
        ({"figure": "fig-markers"}, "is a chart|not a canvas|canvas"),
        ({"figure": "../../etc"}, "etc"),
        ({"region": "0,0,1,1"}, "takes no parameter 'region'"),
    ],
)
def test_image_tile_refusals(service, params, message) -> None:
    with pytest.raises(StackError, match=message):
        dispatch(service, "image_tile", {"figure": FIGURE, "level": 0, "x": 0, "y": 0, **params})


def test_image_region_reads_through_the_same_pyramid(service, xenium_top) -> None:
    # a level-0 region over tile (1, 0): the same bytes as the tile
    tile = _json(dispatch(service, "image_tile", {"figure": FIGURE, "level": 0, "x": 1, "y": 0}).data)
    region = ",".join(str(v) for v in tile["bounds"])
    reply = dispatch(service, "image_region", {"figure": FIGURE, "region": region, "max_side": 2048})
    assert _json(reply.data)["level"] == 0
    tiled = dispatch(service, "image_tile", {"figure": FIGURE, "level": 0, "x": 1, "y": 0})
    assert [bytes(b) for b in reply.buffers] == [bytes(b) for b in tiled.buffers]
