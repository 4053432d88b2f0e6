"""Issue 27: regions drawn on the tissue saved as a version (``annotate``), in the service and over REST.

The expected labels come from shapely, cell by cell, at the positions the view draws
(the ``cells`` request's x and y), so the service's own containment test is checked
against an independent one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import shapely
from kit.rest import jp_server_config  # noqa: F401 - fixture
from tornado.httpclient import HTTPClientError

from sds_jupyter.errors import StackError
from sds_jupyter.limits import MAX_ANNOTATE_BODY_BYTES
from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.service import RequestError, StackService, dispatch
from sds_jupyter.stack.write.save import save_version

pytest_plugins = ["pytest_jupyter.jupyter_server"]

FIGURE = "fig-clusters"


@pytest.fixture
def demo(tmp_path: Path, demo_top: Path) -> Path:
    """A private copy of the demo's datasets folder; its top version's folder."""
    shutil.copytree(demo_top.parent, tmp_path / "datasets")
    return tmp_path / "datasets" / demo_top.name


def _drawn(service: StackService) -> tuple[np.ndarray, np.ndarray]:
    """x and y of every cell as the canvas view receives them."""
    reply = dispatch(service, "cells", {"figure": FIGURE})
    return np.frombuffer(reply.buffers[0], np.float32), np.frombuffer(reply.buffers[1], np.float32)


def _two_regions(x: np.ndarray, y: np.ndarray) -> dict[str, list[list[float]]]:
    """A rectangle over the left half, then a triangle over the middle that overlaps it (drawn last)."""
    x0, x1, y0, y1 = float(np.nanmin(x)), float(np.nanmax(x)), float(np.nanmin(y)), float(np.nanmax(y))
    mx, my, w, h = (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0
    return {
        "left": [[x0 - 1, y0 - 1], [mx, y0 - 1], [mx, y1 + 1], [x0 - 1, y1 + 1]],
        "centre": [[mx - w / 4, my - h / 3], [mx + w / 4, my - h / 3], [mx, my + h / 3]],
    }


def _expected(x: np.ndarray, y: np.ndarray, regions: dict[str, list[list[float]]]) -> pd.Series:
    """Per cell, the last region whose polygon contains it (shapely), else NaN."""
    points = shapely.points(x.astype(float), y.astype(float))
    labels = pd.Series([np.nan] * len(x), dtype=object)
    for label, polygon in regions.items():
        labels[shapely.contains(shapely.Polygon(polygon), points)] = label
    return labels


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# ------------------------------------------------------------------ the service


def test_two_regions_are_saved_with_shapely_counts_and_nothing_else_changes(demo: Path) -> None:
    service = StackService(demo)
    x, y = _drawn(service)
    regions = _two_regions(x, y)
    expected = _expected(x, y, regions)
    assert expected.notna().sum() > 0 and expected.isna().sum() > 0  # the regions cut the tissue
    assert (expected == "centre").sum() > 0 and (expected == "left").sum() > 0
    before = _files(demo.parent)

    saved = service.annotate("my_regions", regions, title="My regions")

    new = demo.parent / saved["dataset_id"]
    assert saved["folder"] == str(new) and new.is_dir()
    assert {k: v for k, v in _files(demo.parent).items() if not k.startswith(saved["dataset_id"])} == before
    back = StackService(new)
    column = back.adata().obs["my_regions"]
    assert isinstance(column.dtype, pd.CategoricalDtype) and list(column.cat.categories) == ["left", "centre"]
    got = column.astype(object).where(column.notna(), np.nan).reset_index(drop=True)
    pd.testing.assert_series_equal(got, expected, check_names=False)
    counts = expected.value_counts()
    top = back.history()["versions"][0]
    assert top["title"] == "My regions" and top["depth"] == service.history()["top_depth"] + 1
    assert f"left ({counts['left']} cells)" in top["message"] and f"centre ({counts['centre']} cells)" in top["message"]
    changes = back.changes()
    assert [op["op"] for op in changes["ops"]] == ["set-obs", "set-uns"] and changes["ops"][0]["column"] == "my_regions"
    summary = changes["details"][0]["column"]
    assert {c["value"]: c["count"] for c in summary["counts"]} == counts.to_dict()
    assert summary["n_missing"] == int(expected.isna().sum())
    # issue 40, item 3: the regions are kept with the column, in the figure's coordinates, to be shown and redrawn
    assert changes["ops"][1]["key"] == "sds_regions"
    kept = back.adata().uns["sds_regions"]["my_regions"]
    assert list(kept["labels"]) == ["left", "centre"] and list(kept["spaces"]) == ["global", "global"]
    offsets = list(kept["offsets"])
    for i, polygon in enumerate(regions.values()):
        np.testing.assert_array_equal(kept["vertices"][offsets[i] : offsets[i + 1]], np.asarray(polygon, dtype=float))
    # the regions redrawn from what was kept select the same cells
    redrawn = {
        str(label): kept["vertices"][offsets[i] : offsets[i + 1]].tolist() for i, label in enumerate(kept["labels"])
    }
    pd.testing.assert_series_equal(_expected(x, y, redrawn), expected)


def test_an_existing_categorical_column_keeps_its_other_values(demo: Path) -> None:
    service = StackService(demo)
    x, y = _drawn(service)
    regions = _two_regions(x, y)
    expected = _expected(x, y, regions)
    clusters = service.adata().obs["clusters"].reset_index(drop=True)

    saved = service.annotate("clusters", regions, title="Clusters corrected", message="by hand")

    column = StackService(demo.parent / saved["dataset_id"]).adata().obs["clusters"].reset_index(drop=True)
    assert list(column.cat.categories) == [*clusters.cat.categories, "left", "centre"]
    outside = expected.isna().to_numpy()
    assert (column[outside].astype(str) == clusters[outside].astype(str)).all()
    assert (column[~outside].astype(str) == expected[~outside]).all()
    assert StackService(demo.parent / saved["dataset_id"]).history()["versions"][0]["message"] == "by hand"


def test_a_cell_in_no_region_and_a_region_holding_no_cell(demo: Path) -> None:
    """Far from the tissue: a category with no cell, every cell missing."""
    saved = StackService(demo).annotate(
        "empty", {"nowhere": [[-9e6, -9e6], [-9e6 + 1, -9e6], [-9e6, -9e6 + 1]]}, title="t"
    )
    column = StackService(demo.parent / saved["dataset_id"]).adata().obs["empty"]
    assert list(column.cat.categories) == ["nowhere"] and column.isna().all()


def test_the_containment_rule_agrees_with_shapely_on_many_cells_and_concave_outlines() -> None:
    """Beyond the demo's few cells: 20,000 random positions (some NaN) and star-shaped, self-overlapping lassos."""
    from sds_jupyter.service.features.annotate.regions import checked_regions, region_codes

    rng = np.random.default_rng(27)
    x, y = rng.uniform(0, 100, 20_000).astype(np.float32), rng.uniform(0, 100, 20_000).astype(np.float32)
    x[:50] = np.nan
    regions = {}
    for k in range(4):
        angles = np.sort(rng.uniform(0, 2 * np.pi, 40))
        radii = rng.uniform(5, 40, 40)
        cx, cy = rng.uniform(20, 80, 2)
        regions[f"r{k}"] = np.c_[cx + radii * np.cos(angles), cy + radii * np.sin(angles)].tolist()
    codes = region_codes(x, y, checked_regions(regions))
    labels = np.array(list(regions))
    got = pd.Series(np.where(codes >= 0, labels[np.maximum(codes, 0)], None), dtype=object)
    pd.testing.assert_series_equal(got.fillna(np.nan), _expected(x, y, regions), check_names=False)


SQUARE = [[0, 0], [1, 0], [1, 1]]


@pytest.mark.parametrize(
    ("column", "regions", "says"),
    [
        ("instance_id", {"a": SQUARE}, "ties the table"),
        ("new", {}, "is empty"),
        ("new", {"a": [[0, 0], [1, 1]]}, "at least 3"),
        ("new", {"a": [[0, 0], [1, float("nan")], [1, 1]]}, "not a finite number"),
        ("new", {"a": [[0, 0], [float("inf"), 0], [1, 1]]}, "not a finite number"),
        ("new", {1: SQUARE}, "is not a string"),
        ("new", {"a": "0,0 1,0 1,1"}, "list of [x, y] points"),
        ("new", {"a": [[0, 0], [1, 0], [1, "1"]]}, "not two numbers"),
        ("new", [["a", SQUARE]], "mapping from label"),
        ("region", {"a": SQUARE}, "ties the table"),
        ("", {"a": SQUARE}, "must name an obs column"),
        ("a/b", {"a": SQUARE}, "is not a valid name"),
        ("c" * 256, {"a": SQUARE}, "is 256 bytes long; a name is stored as a file name"),
        ("é" * 128, {"a": SQUARE}, "at most 255 bytes (MAX_NAME_BYTES)"),  # 128 characters, 256 bytes
        ("new", {"a": {"cells": [2**70]}}, "no table has a cell there"),  # not an OverflowError
        ("new", {"a": {"cells": [0, -(2**64)]}}, "no table has a cell there"),
    ],
)
def test_refusals_are_one_line_and_write_nothing(demo: Path, column: str, regions: Any, says: str) -> None:
    before = _files(demo.parent)
    with pytest.raises(StackError) as info:
        StackService(demo).annotate(column, regions, title="refused")
    assert says in str(info.value) and "\n" not in str(info.value)
    assert _files(demo.parent) == before


def test_a_numeric_column_is_refused(demo: Path) -> None:
    adata = StackService(demo).adata().copy()
    adata.obs["score"] = np.arange(adata.n_obs, dtype=float)
    scored = save_version(demo, adata, title="Scored")
    before = _files(demo.parent)
    with pytest.raises(RequestError, match=r"'score' is numeric, not categorical; annotate into a categorical"):
        StackService(scored).annotate("score", {"a": SQUARE}, title="refused")
    assert _files(demo.parent) == before


def test_an_earlier_version_gets_a_branch(demo: Path) -> None:
    """Annotating version 2 puts the new version on it; the versions above it are left alone."""
    service = StackService(demo)
    x, y = _drawn(service)
    saved = service.annotate("my_regions", _two_regions(x, y), title="On v2", version=2)
    back = StackService(demo.parent / saved["dataset_id"])
    assert back.history()["top_depth"] == 3
    assert back.history()["versions"][1]["dataset_id"] == service.history()["versions"][-2]["dataset_id"]


_ON_READ_ONLY_MOUNT = textwrap.dedent(
    """
    import json, sys
    from sds_jupyter.service import StackService
    saved = StackService(sys.argv[1]).annotate("my_regions", {"all": [[-1e9, -1e9], [1e9, -1e9], [0, 1e9]]}, title="ro")
    print(json.dumps(saved))
    """
)


def test_a_read_only_datasets_folder_sends_the_version_to_the_versions_folder(demo: Path, tmp_path: Path) -> None:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("a bind mount needs root and unshare(1)")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    folder, before = demo.parent, _files(demo.parent)
    command = " ".join(f"'{p}'" for p in (sys.executable, "-c", _ON_READ_ONLY_MOUNT, str(demo)))
    script = f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && exec {command}"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    saved = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(saved["folder"]).parent == Path(os.environ["SDS_VERSIONS_DIR"])
    assert _files(folder) == before


# ------------------------------------------------------------------ REST


@pytest.fixture
def served(jp_root_dir: Path, demo_top: Path) -> str:
    """The demo under the server root; its top version's path as the panel names it."""
    shutil.copytree(demo_top.parent, jp_root_dir / "demo")
    return f"demo/{demo_top.name}"


@pytest.fixture
def post(jp_fetch, jp_asyncio_loop) -> Any:
    def run(body: Any, raw: bytes | None = None) -> Any:
        data = raw if raw is not None else json.dumps(body)
        return jp_asyncio_loop.run_until_complete(jp_fetch(NAMESPACE, "api", "annotate", method="POST", body=data))

    return run


def test_rest_annotate_saves_the_version_the_panel_then_opens(
    served: str, jp_root_dir: Path, post, jp_fetch, jp_asyncio_loop
) -> None:
    service = StackService(jp_root_dir / served)
    x, y = _drawn(service)
    regions = _two_regions(x, y)
    response = post({"path": served, "column": "my_regions", "regions": regions, "title": "Drawn"})
    assert response.code == 201
    saved = json.loads(response.body)
    assert saved["folder"] == f"demo/{saved['dataset_id']}"
    history = jp_asyncio_loop.run_until_complete(
        jp_fetch(NAMESPACE, "api", "history", params={"path": saved["folder"]})
    )
    top = json.loads(history.body)["versions"][0]
    assert top["title"] == "Drawn" and top["changes"][0]["column"] == "my_regions"
    counts = _expected(x, y, regions).value_counts()
    column = StackService(jp_root_dir / saved["folder"]).adata().obs["my_regions"]
    assert column.value_counts().to_dict() == counts.to_dict()


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"path": "PATH", "column": "x", "regions": {}, "title": "t"}, 400, "is empty"),
        ({"path": "PATH", "column": "x", "regions": {"a": [[0, 0], [1, 1]]}, "title": "t"}, 400, "at least 3"),
        (
            {"path": "PATH", "column": "clusters", "regions": {"a": [[0, 0], [1, 0], [1, 1]]}},
            400,
            "missing a parameter",
        ),
        ({"path": "PATH", "column": "instance_id", "regions": {"a": SQUARE}, "title": "t"}, 400, "ties the table"),
        ({"column": "x", "regions": {"a": SQUARE}, "title": "t"}, 400, "names no path"),
        ({"path": "../outside", "column": "x", "regions": {"a": SQUARE}, "title": "t"}, 403, ""),
        (
            {"path": "PATH", "column": "x", "regions": {"a": SQUARE}, "title": "t", "evil": 1},
            400,
            "no parameter 'evil'",
        ),
        ([1, 2], 400, "not a JSON object"),
        ({"path": "PATH", "column": "c" * 300, "regions": {"a": SQUARE}, "title": "t"}, 400, "MAX_NAME_BYTES"),
        ({"path": "PATH", "column": "x", "regions": {"a": {"cells": [2**70]}}, "title": "t"}, 400, "out of range"),
    ],
)
def test_rest_refusals(served: str, jp_root_dir: Path, post, body: Any, status: int, says: str) -> None:
    if isinstance(body, dict) and body.get("path") == "PATH":
        body = {**body, "path": served}
    before = _files(jp_root_dir / "demo")
    with pytest.raises(HTTPClientError) as info:
        post(body)
    error = json.loads(info.value.response.body)
    assert info.value.code == status and says in error["message"] and "\n" not in error["message"]
    assert _files(jp_root_dir / "demo") == before


def test_rest_nan_and_repeated_labels_are_named(served: str, post) -> None:
    nan = b'{"path": "%s", "column": "x", "title": "t", "regions": {"a": [[0, 0], [NaN, 0], [1, 1]]}}' % served.encode()
    with pytest.raises(HTTPClientError) as info:
        post(None, raw=nan)
    assert info.value.code == 400 and "not a finite number" in json.loads(info.value.response.body)["message"]
    twice = (
        b'{"path": "%s", "column": "x", "title": "t", "regions": {"a": [[0,0],[1,0],[1,1]], "a": [[0,0],[1,0],[1,1]]}}'
    )
    with pytest.raises(HTTPClientError) as info:
        post(None, raw=twice % served.encode())
    assert info.value.code == 400


def test_rest_body_over_the_bound_is_413(served: str, post) -> None:
    with pytest.raises(HTTPClientError) as info:
        post(None, raw=b" " * (MAX_ANNOTATE_BODY_BYTES + 1))
    assert info.value.code == 413


def test_rest_annotate_is_never_a_get_and_needs_a_token(
    served: str, jp_fetch, jp_asyncio_loop, http_server_client, jp_base_url
) -> None:
    with pytest.raises(HTTPClientError) as info:
        jp_asyncio_loop.run_until_complete(
            jp_fetch(NAMESPACE, "api", "annotate", params={"path": served, "column": "x", "title": "t"})
        )
    assert info.value.code in (404, 405)
    body = json.dumps({"path": served, "column": "x", "regions": {"a": SQUARE}, "title": "t"})
    url = f"{jp_base_url}{NAMESPACE}/api/annotate"
    response = jp_asyncio_loop.run_until_complete(
        http_server_client.fetch(url, method="POST", body=body, raise_error=False)
    )
    assert response.code == 403


# ------------------------------------------------------------------ the widget


def test_widget_annotates_and_opens_the_new_version(demo: Path) -> None:
    """The widget transport: the same request, then the front end's open_version on the folder it answered."""
    from sds_jupyter.widget import VersionBrowser

    browser = VersionBrowser(demo, namespace={})
    x, y = _drawn(browser.service)
    regions = _two_regions(x, y)
    reply = browser.answer(
        {"type": "request", "name": "annotate", "params": {"column": "my_regions", "regions": regions, "title": "W"}}
    )
    browser.answer({"type": "open_version", "folder": reply.data["folder"]})
    assert browser.service.history()["versions"][0]["title"] == "W"
    assert browser.selected == browser.service.stack.depth
    column = browser.service.adata().obs["my_regions"]
    assert column.value_counts().to_dict() == _expected(x, y, regions).value_counts().to_dict()


def test_widget_selection_is_a_boolean_mask_over_the_table(demo: Path) -> None:
    from sds_jupyter.widget import VersionBrowser

    browser = VersionBrowser(demo, namespace={})
    assert not browser.selection.any() and len(browser.selection) == browser.adata.n_obs
    x, y = _drawn(browser.service)
    inside = np.flatnonzero(_expected(x, y, _two_regions(x, y)).notna().to_numpy())
    browser.selected_cells = {"version": 2, "figure": FIGURE, "cells": inside.tolist()}
    mask = browser.selection
    assert mask.dtype == bool and np.flatnonzero(mask).tolist() == inside.tolist()
    assert browser.selection_version == 2
    picked = browser.service.adata(2)[mask]
    assert picked.n_obs == len(inside)
    browser.selected_cells = {"version": 2, "figure": FIGURE, "cells": [10**6]}
    with pytest.raises(RequestError, match="outside the table"):
        _ = browser.selection
