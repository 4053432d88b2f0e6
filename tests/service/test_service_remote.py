"""The service, the widget and export on a stack in object storage (moto's S3 server on loopback)."""

from __future__ import annotations

import json

import numpy as np

from sds_jupyter.service import StackService, dispatch
from sds_jupyter.service.export import export_figure

pytest_plugins = ["kit.fixtures_service"]


def test_every_request_on_a_stack_in_s3(s3_studio_stack, s3_options, studio_stack) -> None:
    remote = StackService(s3_studio_stack, storage_options=s3_options)
    local = StackService(studio_stack.v2)
    history = dispatch(remote, "history").data
    assert "error" not in history and history["top_depth"] == 2
    assert history["versions"][0]["folder"].startswith("s3://studio-bucket/datasets/")
    for name, params in [
        ("changes", {"version": 2}),
        ("figures", {"version": 1}),
        ("results", {"version": 1}),
        ("result_page", {"version": 1, "result": "res_markers", "sort": "scores"}),
        ("compare", {"a": 1, "b": 2}),
    ]:
        assert json.dumps(dispatch(remote, name, params).data) == json.dumps(dispatch(local, name, params).data), name
    canvas_remote = dispatch(remote, "canvas", {"version": 1, "figure": "fig_canvas"})
    canvas_local = dispatch(local, "canvas", {"version": 1, "figure": "fig_canvas"})
    # the content keys name where the objects are stored too (an ID alone can be copied), so they differ
    places = ("cells_key", "image_key", "color_keys")
    assert {k: v for k, v in canvas_remote.data.items() if k not in places} == {
        k: v for k, v in canvas_local.data.items() if k not in places
    }
    assert all(canvas_remote.data[k] != canvas_local.data[k] for k in places)
    assert canvas_remote.buffers == canvas_local.buffers == []  # the parts come by name, below
    own = {"version": 1, "figure": "fig_canvas", "column": canvas_local.data["color"]["column"]}
    for name, params in (("cells", {"version": 1, "figure": "fig_canvas"}), ("color_values", own)):
        replies = [dispatch(service, name, params) for service in (remote, local)]
        assert replies[0].buffers, name
        for a, b in zip(replies[0].buffers, replies[1].buffers, strict=True):
            assert np.array_equal(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)), name


def test_export_from_s3(s3_studio_stack, s3_options, tmp_path) -> None:
    out = export_figure(s3_studio_stack, "fig_chart", tmp_path / "chart.svg", version=1, storage_options=s3_options)
    assert b"<svg" in out.read_bytes()[:300]
