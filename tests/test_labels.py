"""Segmentation masks: the demo's labels elements (spatialdata's blobs) served as RGBA tiles.

The answers are checked against the same elements read back by spatialdata, and the outlines
against scikit-image's ``find_boundaries`` (a peer's reading of "the pixels just inside a label").
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from sds_jupyter.service import StackService
from sds_jupyter.service.errors import RequestError
from sds_jupyter.service.layouts import LAYOUTS
from sds_jupyter.service.requests import dispatch
from sds_jupyter.studio.labels import FILL_ALPHA, label_colors
from sds_jupyter.studio.layouts import named_buffers

pytest_plugins = ["fixtures_service"]


@pytest.fixture
def service(demo_top: Path) -> StackService:
    return StackService(demo_top)


def _truth(service: StackService, element: str, scale: int) -> np.ndarray:
    """Level ``scale`` of labels ``element`` as spatialdata reads it from the base."""
    import spatialdata

    local = service.stack.base.path.as_local()
    assert local is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = spatialdata.read_zarr(Path(local)).labels[element]
    if hasattr(labels, "children"):  # a multiscale DataTree
        return np.asarray(labels[f"scale{scale}"]["image"].values)
    return np.asarray(labels.values)


def _mosaic(service: StackService, element: str, level: int, style: str) -> np.ndarray:
    """Every tile of ``level`` laid back into one RGBA picture, each where its payload says."""
    info = dispatch(service, "labels", {"element": element}).data
    found = info["levels"][level]
    side = found["tile"]
    picture = np.zeros((found["height"], found["width"], 4), dtype=np.uint8)
    for row in range(-(-found["height"] // side)):
        for column in range(-(-found["width"] // side)):
            params = {"element": element, "level": level, "x": column, "y": row, "style": style}
            reply = dispatch(service, "labels_tile", params)
            rgba = named_buffers("labels_tile", LAYOUTS["labels_tile"], reply.data, reply.buffers)["rgba"]
            width, height = reply.data["width"], reply.data["height"]
            tile = np.frombuffer(rgba, dtype=np.uint8).reshape(height, width, 4)
            picture[row * side : row * side + height, column * side : column * side + width] = tile
    return picture


def test_labels_lists_the_blobs_labels_and_their_pyramids(service: StackService) -> None:
    answer = dispatch(service, "labels").data
    assert answer["elements"] == ["blobs_labels", "blobs_multiscale_labels"] and answer["levels"] == []
    multi = dispatch(service, "labels", {"element": "blobs_multiscale_labels"}).data["levels"]
    for scale, level in enumerate(multi):
        truth = _truth(service, "blobs_multiscale_labels", scale)
        assert (level["height"], level["width"]) == truth.shape


@pytest.mark.parametrize(("element", "level"), [("blobs_labels", 0), ("blobs_multiscale_labels", 1)])
def test_tiles_colour_each_label_and_outline_its_edge(service: StackService, element: str, level: int) -> None:
    """Laid back together, the tiles are the mask: its ids' colours, opaque on the outline, the background clear."""
    from skimage.segmentation import find_boundaries

    truth = _truth(service, element, level)
    picture = _mosaic(service, element, level, "fill")
    inside = truth != 0
    assert inside.any() and (~inside).any()
    assert np.array_equal(picture[inside][:, :3], label_colors(truth[inside]))
    edge = find_boundaries(truth, connectivity=1, mode="inner") & inside
    assert edge.any() and (picture[..., 3][edge] == 255).all()
    assert (picture[..., 3][inside & ~edge] == FILL_ALPHA).all()
    assert (picture[..., 3][~inside] == 0).all()
    outlined = _mosaic(service, element, level, "outline")
    assert np.array_equal(outlined[..., 3] > 0, edge)


def test_bad_labels_tile_requests_are_refused_in_one_line(service: StackService) -> None:
    params = {"element": "blobs_labels", "level": 0, "x": 0, "y": 0}
    with pytest.raises(RequestError, match="style is one of fill, outline"):
        dispatch(service, "labels_tile", {**params, "style": "glow"})
    with pytest.raises(RequestError, match="No labels element 'blobs_image'"):
        dispatch(service, "labels_tile", {**params, "element": "blobs_image"})
    with pytest.raises(RequestError, match="has tiles 0 to"):
        dispatch(service, "labels_tile", {**params, "x": 99})
    with pytest.raises(RequestError, match="not a labels element name"):
        dispatch(service, "labels", {"element": "../images"})
