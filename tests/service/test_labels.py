"""Segmentation masks: the demo's labels elements (spatialdata's blobs) served as RGBA tiles.

The answers are checked against the same elements read back by spatialdata, and the outlines
against scikit-image's ``find_boundaries`` (a peer's reading of "the pixels just inside a label").
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
from sds_jupyter.studio.masks import FILL_ALPHA, label_colors

pytest_plugins = ["kit.fixtures_service"]


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


def _colours(path: Path) -> dict[tuple[int, int, int], int]:
    """How many pixels of an exported PNG hold each RGB colour."""
    from PIL import Image

    rgb = np.asarray(Image.open(path).convert("RGB")).reshape(-1, 3)
    found, counts = np.unique(rgb, axis=0, return_counts=True)
    return {(int(r), int(g), int(b)): int(n) for (r, g, b), n in zip(found, counts, strict=True)}


def test_a_figure_spec_carries_its_labels_layer_to_the_view(service: StackService) -> None:
    """The demo's regions figure is saved with the blobs mask outlined; its clusters figure without."""
    regions = dispatch(service, "canvas", {"figure": "fig-regions"}).data
    assert regions["labels"] == {"element": "blobs_labels", "style": "outline", "visible": True, "opacity": 1.0}
    assert dispatch(service, "canvas", {"figure": "fig-clusters"}).data["labels"] is None


def test_an_export_draws_the_saved_labels_in_the_colours_the_tiles_are_served_in(
    service: StackService, demo_top: Path, tmp_path: Path
) -> None:
    """Every label's outline is in the exported picture in the colour its served tile gives it; the
    figure of the same tissue without the layer has none of those colours."""
    from sds_jupyter.service.export import export_figure

    served = _mosaic(service, "blobs_labels", 0, "outline")
    outline = served[..., 3] == 255
    colours = {(int(r), int(g), int(b)) for r, g, b in served[outline][:, :3]}
    assert len(colours) >= 10  # the blobs' labels, each its own colour
    # 183 mm at 100 dpi: about 720 px across the 512 px mask, so every mask pixel is a whole one
    with_labels = _colours(
        export_figure(demo_top, "fig-regions", tmp_path / "regions.png", format=".png", dpi=100, view="whole")
    )
    without = _colours(
        export_figure(demo_top, "fig-clusters", tmp_path / "clusters.png", format=".png", dpi=100, view="whole")
    )
    missing = [colour for colour in colours if with_labels.get(colour, 0) < 2]
    assert missing == [], f"labels not drawn in their served colour: {missing[:5]}"
    assert sum(without.get(colour, 0) for colour in colours) < 0.01 * sum(with_labels[c] for c in colours)


def test_an_export_region_beside_the_mask_draws_no_labels_and_a_huge_one_is_read_sparsely(
    service: StackService,
) -> None:
    """Off the mask there is nothing to draw (no error); a mask larger than the print reads every few pixels."""
    import zarr

    from sds_jupyter.stack import StackStore
    from sds_jupyter.studio.elements import open_pyramid
    from sds_jupyter.studio.masks import export_labels

    root = zarr.open_group(StackStore(service.stack.at(0)), mode="r")
    pyramid = open_pyramid(root, "blobs_labels", kind="labels")
    assert export_labels(pyramid, "fill", (5000.0, 5000.0, 6000.0, 6000.0), 512, 1.0) is None
    sparse = export_labels(pyramid, "outline", (0.0, 0.0, 512.0, 512.0), 100, 0.5)
    assert sparse is not None and max(sparse.rgba.shape[:2]) <= 100 and sparse.opacity == 0.5
    assert sparse.bounds == (0.0, 0.0, 512.0, 512.0)
