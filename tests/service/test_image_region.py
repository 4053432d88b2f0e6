"""Image detail on demand: a pyramid level's pixels over the region a zoomed-in view shows."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from sds_jupyter.errors import ElementError, StackError
from sds_jupyter.service import StackService
from sds_jupyter.service.requests import dispatch
from sds_jupyter.studio.elements import coarsest_level, region_level

pytest_plugins = ["kit.fixtures_service"]

#: The demo image's pixel size: level-0 pixels to the global system (µm).
PIXEL = 0.2125


def test_the_finest_level_that_fits_is_read_for_the_region_alone(xenium_root: zarr.Group) -> None:
    # the whole image in 2,048 px: level 1, as the overview
    whole = region_level(xenium_root, "morphology_focus", [0, 0, 4096 * PIXEL, 4096 * PIXEL], 2048)
    assert (whole.index, whole.levels) == (1, 5) and whole.level.data.shape == (3, 2048, 2048)
    # a quarter of it fits at full resolution: level 0, only those pixels
    region = [1024 * PIXEL, 512 * PIXEL, 2048 * PIXEL, 1536 * PIXEL]
    found = region_level(xenium_root, "morphology_focus", region, 2048)
    assert found.index == 0 and found.level.data.shape == (3, 1024, 1024)
    assert found.bounds == pytest.approx(region)
    element = xenium_root["images/morphology_focus"]
    attrs = element.attrs.asdict()
    path = attrs.get("ome", attrs)["multiscales"][0]["datasets"][0]["path"]
    level0 = element[path]
    assert np.array_equal(found.level.data, np.asarray(level0[:, 512:1536, 1024:2048]))
    # a smaller budget moves to the next level: 512 px of level 1 for the same region
    coarser = region_level(xenium_root, "morphology_focus", region, 600)
    assert coarser.index == 1 and coarser.level.data.shape == (3, 512, 512)
    assert coarser.bounds == pytest.approx(region)


def test_the_region_is_clipped_to_the_image_and_snapped_to_whole_pixels(xenium_root: zarr.Group) -> None:
    side = 4096 * PIXEL
    found = region_level(xenium_root, "morphology_focus", [side - 10.01, -50, side + 100, 10.1], 2048)
    assert found.index == 0
    x0, y0, x1, y1 = found.bounds
    assert x1 == pytest.approx(side) and y0 == 0.0
    assert x0 <= side - 10.01 and y1 >= 10.1  # whole pixels cover the region asked
    assert found.level.data.shape[1:] == (round(y1 / PIXEL), round((x1 - x0) / PIXEL))


def test_regions_off_the_image_or_too_large_are_refused(xenium_root: zarr.Group) -> None:
    with pytest.raises(ElementError, match="does not overlap"):
        region_level(xenium_root, "morphology_focus", [-100, -100, -1, -1], 2048)
    with pytest.raises(ElementError, match="zoom in further"):
        region_level(xenium_root, "morphology_focus", [0, 0, 10_000, 10_000], 100)
    with pytest.raises(ElementError, match="No image element"):
        region_level(xenium_root, "images", [0, 0, 1, 1], 100)


@pytest.fixture
def service(studio_stack) -> StackService:
    return StackService(studio_stack.v2)


def _json(data: object) -> dict:
    return json.loads(json.dumps(data))


def test_the_request_matches_the_overview_planes(service, blobs_root) -> None:
    channels = _json(dispatch(service, "channels", {"version": 1, "figure": "fig_canvas"}).data)
    x0, y0, x1, y1 = channels["bounds"]
    ranges = ";".join(f"{c['range'][0]},{c['range'][1]}" for c in channels["channels"])
    reply = dispatch(
        service,
        "image_region",
        {"version": 1, "figure": "fig_canvas", "region": f"{x0},{y0},{x1},{y1}", "max_side": 2048, "ranges": ranges},
    )
    data = _json(reply.data)
    assert data["bounds"] == pytest.approx(channels["bounds"])
    assert (data["width"], data["height"]) == (channels["width"], channels["height"])
    assert data["channels"] == len(reply.buffers) == len(channels["channels"])
    overview = dispatch(service, "channels", {"version": 1, "figure": "fig_canvas"})
    # the same pixels scaled with the same ranges: byte for byte the overview's planes
    for detail, plane in zip(reply.buffers, overview.buffers, strict=True):
        assert bytes(detail) == bytes(plane)
    # without ranges, the overview's own are used
    same = dispatch(service, "image_region", {"version": 1, "figure": "fig_canvas", "region": f"{x0},{y0},{x1},{y1}"})
    assert [bytes(b) for b in same.buffers] == [bytes(b) for b in reply.buffers]
    level = coarsest_level(blobs_root, "images", "blobs_image", max_side=2048)
    assert data["width"] == level.width


def test_a_region_inside_is_its_pixels_only(service) -> None:
    channels = _json(dispatch(service, "channels", {"version": 1, "figure": "fig_canvas"}).data)
    x0, y0, x1, y1 = channels["bounds"]
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    reply = dispatch(service, "image_region", {"version": 1, "figure": "fig_canvas", "region": f"{x0},{y0},{mx},{my}"})
    data = _json(reply.data)
    assert data["bounds"][0] == pytest.approx(x0) and data["bounds"][2] >= mx
    assert data["width"] == pytest.approx(channels["width"] / 2, abs=1)
    assert len(bytes(reply.buffers[0])) == data["width"] * data["height"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"region": "0,0,10,10"}, "needs a figure id"),
        ({"figure": "fig_canvas", "region": "0,0,10"}, "4 finite numbers"),
        ({"figure": "fig_canvas", "region": "0,0,nan,10"}, "4 finite numbers"),
        ({"figure": "fig_canvas", "region": "a,b,c,d"}, "4 finite numbers"),
        ({"figure": "fig_canvas", "region": "10,0,0,10"}, "is empty"),
        ({"figure": "fig_canvas", "region": "0,0,10,10", "max_side": 100_000}, "max_side must be between"),
        ({"figure": "fig_canvas", "region": "0,0,10,10", "ranges": "0,1;2"}, "2 finite numbers"),
        ({"figure": "fig_canvas", "region": "-900,-900,-800,-800"}, "does not overlap"),
        ({"figure": "fig_continuous", "region": "0,0,10,10"}, "shows no image"),
        ({"figure": "fig_canvas", "region": "0,0,10,10", "key": "x"}, "takes no parameter"),
    ],
)
def test_image_region_refusals(service, params, message) -> None:
    # refusals of the request (RequestError) and of the image (ElementError): both one-line StackErrors
    with pytest.raises(StackError, match=message):
        dispatch(service, "image_region", {"version": 1, **params})
