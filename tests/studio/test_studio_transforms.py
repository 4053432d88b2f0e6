"""Canvas coordinates follow each element's transformation into the global coordinate system."""

from __future__ import annotations

import numpy as np
import pytest

from sds_jupyter.errors import ElementError
from sds_jupyter.studio.canvas import build_canvas, cell_coordinates
from sds_jupyter.studio.elements import label_centroids, shape_centroids
from sds_jupyter.studio.transforms import IDENTITY, Axial, element_transform

pytest_plugins = ["kit.fixtures_service"]

XY = {
    "input": {"axes": [{"name": "x"}, {"name": "y"}]},
    "output": {"name": "global", "axes": [{"name": "x"}, {"name": "y"}]},
}


def test_transform_kinds() -> None:
    assert element_transform(None) == IDENTITY
    assert element_transform([{"type": "identity", **XY}]) == IDENTITY
    assert element_transform([{"type": "scale", "scale": [2, 3], **XY}]) == Axial(2, 3, 0, 0)
    sequence = {
        "type": "sequence",
        **XY,
        "transformations": [
            {"type": "scale", "scale": [2, 3], **XY},
            {"type": "translation", "translation": [1, -1], **XY},
        ],
    }
    assert element_transform([sequence]) == Axial(2, 3, 1, -1)
    affine = {"type": "affine", **XY, "affine": [[2, 0, 5], [0, 4, 6], [0, 0, 1]]}
    assert element_transform([affine]) == Axial(2, 4, 5, 6)


def test_coordinate_system_is_chosen_by_name() -> None:
    other = {"type": "scale", "scale": [9, 9], "input": XY["input"], "output": {"name": "aligned"}}
    glob = {"type": "scale", "scale": [2, 2], **XY}
    assert element_transform([other, glob]) == Axial(2, 2)
    assert element_transform([other, glob], "aligned") == Axial(9, 9)
    assert element_transform([other]) == Axial(9, 9)


def test_rotations_and_unknown_types_are_refused() -> None:
    with pytest.raises(ElementError, match="Rotated"):
        element_transform([{"type": "affine", **XY, "affine": [[0, -1, 0], [1, 0, 0], [0, 0, 1]]}])
    with pytest.raises(ElementError, match="'mapAxis'"):
        element_transform([{"type": "mapAxis", **XY}])


def test_centroids_and_image_bounds_follow_transformations(blobs_root, transformed_blobs_root) -> None:
    plain = shape_centroids(blobs_root, "blobs_circles")
    scaled = shape_centroids(transformed_blobs_root, "blobs_circles")
    assert np.allclose(scaled.to_numpy(), plain.to_numpy() * 3)
    labels_plain = label_centroids(blobs_root, "blobs_labels")
    labels_half = label_centroids(transformed_blobs_root, "blobs_labels")
    assert np.allclose(labels_half.to_numpy(), labels_plain.to_numpy() / 2)
    import anndata

    table = anndata.io.read_elem(transformed_blobs_root["tables/table"])
    attrs = dict(transformed_blobs_root["tables/table"].attrs)
    x, _ = cell_coordinates(table, transformed_blobs_root, attrs)
    assert x.max() <= 256
    drawn = build_canvas({"kind": "canvas", "image": "blobs_image"}, table, transformed_blobs_root, attrs)
    assert drawn.payload["image"]["bounds"] == [10.0, 5.0, 1034.0, 1029.0]
    assert drawn.payload["bounds"][2] == 1034.0
