"""The contract between the service and the browser app: payload types generated from Python.

``sds_jupyter/protocol/types.py`` is the source; ``make types`` writes the JSON Schema
and the TypeScript from it. Here: the generated files are current, the app's request
list is Python's, and real replies of every request, on a real stack, validate.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from kit.contract import reply_validator
from kit.repo import ROOT

from sds_jupyter.errors import StackError
from sds_jupyter.service import REQUESTS, WRITE_REQUESTS, StackService, dispatch
from sds_jupyter.service.contract import GENERATED, generated_files, payload_schema, reply_name

pytest_plugins = ["kit.fixtures_service"]


#: Parameters that succeed on the studio stack's top version (depth 2), per request:
#: a mapping, or a function of the service that makes one.
PARAMS: dict[str, dict[str, Any] | Callable[[StackService], dict[str, Any]]] = {
    "history": {},
    "changes": {"version": 2},
    "figures": {"version": 2},
    "canvas": {"version": 2, "figure": "fig_canvas"},
    "cells": {"version": 2, "figure": "fig_canvas"},
    # the studio stack has no embedding: the list alone (tests/service/test_embedding.py validates coordinates)
    "embedding": {"version": 2, "figure": "fig_canvas"},
    "results": {"version": 2},
    "result_page": {"version": 1, "result": "res_markers"},
    "result_csv": {"version": 1, "result": "res_markers"},
    "compare": {"a": 1, "b": 2},
    "tree": {},
    "fingerprint": {},
    "contents": {"version": 2},
    "cell": {"version": 2, "figure": "fig_canvas", "index": 0},
    "color_values": {"version": 2, "figure": "fig_canvas", "column": "region_class"},
    "genes": {"version": 2, "figure": "fig_canvas"},
    "dot_plot": lambda s: {"version": 2, "gene": str(s.table_view(2).var_names[0]).lower(), "groupby": "region_class"},
    "channels": {"version": 2, "figure": "fig_canvas"},
    "store_key": {"version": 2, "key": "tables/table/obs/zarr.json"},
    "image_region": {"version": 2, "figure": "fig_canvas", "region": "0,0,40,40"},
    "image_tile": {"version": 2, "figure": "fig_canvas", "level": 0, "x": 0, "y": 0},
    "export": {"version": 2, "figure": "fig_canvas", "format": "png", "dpi": 72},
    "labels": {"version": 2, "element": "blobs_labels"},
    "labels_tile": {"version": 2, "element": "blobs_labels", "level": 0, "x": 0, "y": 0},
    "shapes": {"version": 2, "element": "blobs_polygons"},
    "shapes_tile": lambda s: {
        "version": 2,
        "element": "blobs_circles",
        "key": dispatch(s, "shapes", {"version": 2, "element": "blobs_circles"}).data["index"]["key"],
    },
    "points": {"version": 2, "element": "blobs_points"},
    "points_tile": lambda s: {
        "version": 2,
        "element": "blobs_points",
        "key": dispatch(s, "points", {"version": 2, "element": "blobs_points"}).data["index"]["key"],
    },
    "annotate": {"column": "drawn", "regions": {"all": [[-1e6, -1e6], [1e6, -1e6], [0, 1e6]]}, "title": "Drawn"},
}


def test_the_generated_files_are_current() -> None:
    for path, text in generated_files().items():
        assert (ROOT / path).read_text(encoding="utf-8") == text, f"{path} is stale: run make types"


def test_the_app_knows_the_same_requests_as_the_service() -> None:
    source = (ROOT / "js/src/app/shared/types.ts").read_text(encoding="utf-8")
    assert re.search(r"export const REQUESTS\b[^=]*=\s*GENERATED_REQUESTS;", source), (
        "js/src/app/shared/types.ts must take its REQUESTS from payloads.gen.ts (GENERATED_REQUESTS)"
    )
    generated = (ROOT / GENERATED["typescript"]).read_text(encoding="utf-8")
    listed = re.search(r"export const GENERATED_REQUESTS = \[(.*?)\]", generated, re.S)
    assert listed is not None and re.findall(r"'([a-z_]+)'", listed.group(1)) == list(REQUESTS)


def test_no_payload_type_is_written_by_hand_in_the_app() -> None:
    """Every generated type has its one definition in payloads.gen.ts: no TS file defines that name again."""
    generated = (ROOT / GENERATED["typescript"]).read_text(encoding="utf-8")
    names = set(re.findall(r"^export (?:type|interface) (\w+)", generated, re.M))
    assert {"ChangesData", "CanvasColor", "ParamTypes"} <= names
    for path in sorted((ROOT / "js/src").rglob("*.ts")):
        if path.name == GENERATED["typescript"].name:
            continue
        text = path.read_text(encoding="utf-8")
        defined = set(re.findall(r"^\s*(?:export )?(?:type|interface) (\w+)\b", text, re.M))
        assert not defined & names, f"{path.relative_to(ROOT)} defines {sorted(defined & names)} again"


#: Requests whose replies are validated elsewhere, on a stack the studio one cannot stand for.
VALIDATED_ELSEWHERE = {
    # only a tissue of more than pieces.OUTLINES_AT_ONCE polygons has outline tiles
    "cell_outlines": "tests/service/test_outline_tiles.py::test_a_tile_is_built_once_and_named_by_the_cells_and_the_tile",
    # only a Cirro (the HTTPS stand-in and moto) answers these; that test validates each real reply
    **dict.fromkeys(
        ("cirro_projects", "cirro_plan", "cirro_upload", "cirro_fetch"),
        "tests/cirro/test_cirro.py::test_the_panel_uploads_then_a_fresh_workspace_fetches_and_opens_it",
    ),
}


@pytest.mark.parametrize("name", [name for name in REQUESTS if name not in VALIDATED_ELSEWHERE])
def test_real_replies_of_every_request_validate(name: str, studio_stack: Any, tmp_path: Path) -> None:
    assert name in PARAMS, f"give the contract test parameters that succeed for the new request {name!r}"
    top = studio_stack.v2
    if name in WRITE_REQUESTS:  # it adds a version: on a copy, never on the shared stack
        top = Path(shutil.copytree(studio_stack.datasets, tmp_path / "datasets")) / top.name
    service = StackService(top)
    params = PARAMS[name]
    reply = dispatch(service, name, params(service) if callable(params) else params)
    data = json.loads(json.dumps(reply.data, allow_nan=False))
    errors = sorted(reply_validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, f"{name} reply does not match {reply_name(name)}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
    )


def test_error_replies_validate(orphan_version: Path) -> None:
    service = StackService(orphan_version)
    for name in ("history", "figures", "results"):
        data = json.loads(json.dumps(dispatch(service, name, {}).data))
        assert not list(reply_validator(name).iter_errors(data)), name


def _subclasses(cls: type[StackError]) -> list[type[StackError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _subclasses(child))]


def test_every_error_kind_is_one_that_is_sent() -> None:
    """``ErrorKind`` (generated for the browser) is the refusals' kinds plus the three the transports add."""
    import typing

    import sds_jupyter.server.confine  # noqa: F401
    import sds_jupyter.server.handlers  # noqa: F401 - the server's own refusals
    from sds_jupyter.errors import ErrorKind

    raised = {sub.kind for sub in _subclasses(StackError)}
    added_by_transports = {"internal", "permission-denied", "http"}  # error_payload, the server's HTTPError
    assert raised | added_by_transports == set(typing.get_args(ErrorKind))


def test_a_reply_with_an_undeclared_field_is_caught() -> None:
    """The schema is strict: a field the types do not declare is drift, not noise."""
    good = {"kind": "not-found", "message": "gone"}
    schema = payload_schema()
    validator = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/ErrorInfo"})
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "extra": 1})
    assert not validator.is_valid({"kind": "x"})


def test_a_result_meta_field_of_another_type_is_left_out(studio_copy: Any) -> None:
    """Meta is written by any app: a named field of the wrong type must not reach the browser typed as it says."""
    import pandas as pd

    from sds_jupyter.stack import Stack
    from sds_jupyter.stack.write.writer import VersionWriter

    writer = VersionWriter(Stack.resolve(studio_copy.v2))
    hostile = {"kind": "clusters", "title": 5, "parameters": ["not", "a", "mapping"], "extra": {"kept": True}}
    writer.set_result("table", "res_hostile", {"table": pd.DataFrame({"x": [1.0]})}, hostile)
    top = writer.commit(studio_copy.datasets / "hostile-meta", title="Hostile meta")
    reply = dispatch(StackService(top), "results", {})
    data = json.loads(json.dumps(reply.data, allow_nan=False))
    (entry,) = [r for r in data["results"] if r["id"] == "res_hostile"]
    assert entry["meta"] == {"kind": "clusters", "extra": {"kept": True}}
    assert not list(reply_validator("results").iter_errors(data))


# ------------------------------------------------------------------ binary buffer layouts

#: The Xenium-like demo's figure with an embedding, polygons and an image.
XENIUM_FIGURE = "fig-leiden"

#: Binary requests on real stores, covering each layout's branches: (stack, request, params).
BINARY_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("studio", "canvas", {"version": 2, "figure": "fig_canvas"}),
    ("studio", "cells", {"version": 2, "figure": "fig_canvas"}),
    ("studio", "color_values", {"version": 2, "figure": "fig_canvas", "column": "region_class"}),
    ("studio", "channels", {"version": 2, "figure": "fig_canvas"}),
    ("studio", "store_key", {"version": 2, "key": "tables/table/obs/zarr.json"}),
    ("studio", "store_key", {"version": 2, "key": "tables/table/obs/no-such-key"}),
    ("studio", "image_region", {"version": 2, "figure": "fig_canvas", "region": "0,0,40,40"}),
    ("studio", "image_tile", {"version": 2, "figure": "fig_canvas", "level": 0, "x": 0, "y": 0}),
    ("studio", "export", {"version": 2, "figure": "fig_canvas", "format": "png", "dpi": 72}),
    ("studio", "labels_tile", {"version": 2, "element": "blobs_multiscale_labels", "level": 1, "style": "outline"}),
    ("xenium", "canvas", {"figure": XENIUM_FIGURE}),
    ("xenium", "cells", {"figure": XENIUM_FIGURE}),
    ("xenium", "embedding", {"figure": XENIUM_FIGURE}),
    ("xenium", "embedding", {"figure": XENIUM_FIGURE, "key": "X_pca"}),
    ("xenium", "color_values", {"figure": XENIUM_FIGURE, "gene": "<first gene>"}),
    ("xenium", "cell_outlines", {"figure": XENIUM_FIGURE, "key": "<cells key>", "column": 0, "row": 0}),
    ("xenium", "points_tile", {"element": "transcripts", "key": "<points key>", "level": 0, "x": 0, "y": 0}),
    ("xenium", "shapes_tile", {"element": "nucleus_boundaries", "key": "<shapes key>", "column": 0, "row": 0}),
    ("xenium", "points_tile", {"element": "transcripts", "key": "<points key>", "genes": "EPCAM,CD3E"}),
]


@pytest.fixture(scope="module")
def xenium_top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Xenium-like demo (polygons, an image, ``X_pca``): its top version's folder."""
    import warnings

    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("layouts"), n_cells=400, side=256)


def _filled(service: StackService, request: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the values only the store knows: its first gene, the figure's cells key."""
    if params.get("gene") == "<first gene>":
        params = {**params, "gene": str(service.table_view(None).var_names[0])}
    if params.get("key") == "<cells key>":
        params = {**params, "key": service.canvas(None, params["figure"]).data["cells_key"]}
    if params.get("key") == "<shapes key>":
        params = {**params, "key": dispatch(service, "shapes", {"element": params["element"]}).data["index"]["key"]}
    if params.get("key") == "<points key>":
        params = {**params, "key": dispatch(service, "points", {"element": params["element"]}).data["index"]["key"]}
    return params


def _declared(request: str, data: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(name, dtype, length) of each buffer the layout says ``data`` has, evaluated here from the rules."""
    from sds_jupyter.protocol.layouts import LAYOUTS

    declared: list[tuple[str, str, int | None]] = []
    for buf in LAYOUTS[request]:
        length = buf.length.of(data) if buf.length is not None else None
        declared += [(buf.name, buf.dtype_for(data), length)] * buf.copies(data)
    return declared


def test_every_binary_request_has_a_layout_and_only_those() -> None:
    from sds_jupyter.protocol.layouts import LAYOUTS
    from sds_jupyter.service import BINARY_REQUESTS

    assert set(LAYOUTS) == set(BINARY_REQUESTS)
    assert {request for _, request, _ in BINARY_CASES} == set(BINARY_REQUESTS), "give each binary request a case"


@pytest.mark.parametrize(("stack", "request_name", "params"), BINARY_CASES)
def test_real_binary_replies_match_their_layout(
    stack: str,
    request_name: str,
    params: dict[str, Any],
    studio_stack: Any,
    xenium_top: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every buffer of a real reply, as framed for the wire, has the declared element type and length."""
    import numpy as np

    from sds_jupyter.service import frame_reply, pieces, unframe_reply
    from sds_jupyter.stack.caches import default_caches

    if request_name == "cell_outlines":  # outline tiles only past OUTLINES_AT_ONCE cells: lower it for this tissue
        monkeypatch.setattr(pieces, "OUTLINES_AT_ONCE", 100)
        for cache in (
            pieces.cells_cache(default_caches()),
            pieces.outlines_cache(default_caches()),
            pieces.outline_tiles_cache(default_caches()),
        ):
            cache.clear()
    service = StackService(studio_stack.v2 if stack == "studio" else xenium_top)
    reply = dispatch(service, request_name, _filled(service, request_name, params))
    data, wire = unframe_reply(frame_reply(reply))
    declared = _declared(request_name, data)
    assert len(wire) == len(declared), f"{request_name}: {len(wire)} buffers, layout {[d[0] for d in declared]}"
    for (name, dtype, length), sent, made in zip(declared, wire, reply.buffers, strict=True):
        behind = made.obj  # the array (or bytes) the producer handed over
        kind = np.asarray(behind).dtype if isinstance(behind, np.ndarray) else np.dtype(np.uint8)
        assert kind == np.dtype(dtype), f"{request_name} buffer {name!r} holds {kind}, the layout says {dtype}"
        assert len(sent) % kind.itemsize == 0
        if length is not None:
            assert len(sent) == length * kind.itemsize, f"{request_name} buffer {name!r}: {len(sent)} bytes"
    if request_name == "cell_outlines":
        for cache in (
            pieces.cells_cache(default_caches()),
            pieces.outlines_cache(default_caches()),
            pieces.outline_tiles_cache(default_caches()),
        ):
            cache.clear()


def test_a_buffer_out_of_its_layout_is_refused_where_it_is_made() -> None:
    import numpy as np

    from sds_jupyter.protocol.buffers import LayoutError
    from sds_jupyter.protocol.layouts import reply_buffers

    data = {"keys": ["X_pca"], "key": "X_pca", "name": "n", "n_cells": 3, "columns": 2, "bounds": None}
    x = np.zeros(3, np.float32)
    assert len(reply_buffers("embedding", data, [x, x])) == 2
    with pytest.raises(LayoutError, match="1 buffers, the layout says 2"):
        reply_buffers("embedding", data, [x])
    with pytest.raises(LayoutError, match="holds float64"):
        reply_buffers("embedding", data, [x, np.zeros(3)])
    with pytest.raises(LayoutError, match="has 4 float32 values, the layout says 3"):
        reply_buffers("embedding", data, [x, np.zeros(4, np.float32)])
