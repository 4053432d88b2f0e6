"""The REST transport, through a real Jupyter server (pytest-jupyter) with a non-default base_url."""

# ruff: noqa: F811 - the fixtures of kit.rest are imported by name, then requested
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlencode

import pytest
from kit.repo import ROOT
from kit.rest import fetch, jp_server_config, rest_error, rest_get, root, with_title  # noqa: F401 - fixtures
from tornado.httpclient import HTTPClientError

from sds_jupyter.server.cache import ServiceCache
from sds_jupyter.server.confine import OutsideRootError
from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.server.notebook import notebook_name
from sds_jupyter.service import unframe_reply
from sds_jupyter.service.requests import REQUESTS

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]


# ------------------------------------------------------------------ answers


def test_history_and_changes(root, fetch) -> None:
    history = rest_get(fetch, "history", path="datasets/edit-2222")
    assert history["top_depth"] == 2
    assert history["versions"][0]["folder"] == "datasets/edit-2222"
    assert history["base"]["path"] == "datasets/base-0000/blobs.zarr"
    changes = rest_get(fetch, "changes", path="datasets/edit-2222", version=2)
    assert {"entry": "tables/table/obs/score/", "node": True} in changes["deleted"]


def test_figures_results_pages_and_compare(root, fetch) -> None:
    figures = rest_get(fetch, "figures", path="datasets/edit-2222", version=1)
    kinds = {f["id"]: f["kind"] for f in figures["figures"]}
    assert kinds["fig_chart"] == "chart" and kinds["fig_not_json"] == "unsupported"
    results = rest_get(fetch, "results", path="datasets/edit-2222", version=1)
    assert len(results["results"]) == 7
    page = rest_get(
        fetch,
        "result_page",
        path="datasets/edit-2222",
        version=1,
        result="res_markers",
        offset=10,
        limit=5,
        sort="scores",
        descending="true",
    )
    assert page["total"] == 30 and page["offset"] == 10 and len(page["rows"]) == 5
    comparison = rest_get(fetch, "compare", path="datasets/edit-2222", a=1, b=2)
    assert comparison["obs"]["added"] == ["added_col"]


def test_canvas_is_framed_binary(root, fetch) -> None:
    data, buffers = rest_get(fetch, "canvas", path="datasets/edit-2222", version=1, figure="fig_canvas")
    assert data["n_cells"] == 26
    assert buffers == []  # the figure's own part only: cells, image and colours come by their names
    column = data["color"]["column"]
    color, buffers = rest_get(
        fetch,
        "color_values",
        path="datasets/edit-2222",
        version=1,
        figure="fig_canvas",
        column=column,
        key=data["color_keys"][column],
    )
    assert color == data["color"] and [len(b) for b in buffers] == [26]  # one byte code a cell
    cells, buffers = rest_get(fetch, "cells", path="datasets/edit-2222", version=1, figure="fig_canvas")
    assert cells["key"] == data["cells_key"] and [len(b) for b in buffers] == [104, 104]


def test_image_tile_is_framed_binary(root, fetch) -> None:
    data, buffers = rest_get(
        fetch, "image_tile", path="datasets/edit-2222", version=1, figure="fig_canvas", level=0, x=0, y=0
    )
    assert len(buffers) == data["channels"] >= 1
    assert all(len(b) == data["width"] * data["height"] for b in buffers)
    code, error = rest_error(
        fetch, "image_tile", path="datasets/edit-2222", version=1, figure="fig_canvas", level=0, x=99, y=0
    )
    assert code == 400 and "not 99" in error["message"]


def test_export_sends_the_file_the_command_line_writes(root, fetch, tmp_path) -> None:
    """The panel's export buttons get the bytes of the one renderer, named as the CLI names them."""
    from PIL import Image

    from sds_jupyter.service.export import export_figure

    data, buffers = rest_get(
        fetch, "export", path="datasets/edit-2222", version=1, figure="fig_canvas", format="png", dpi=100
    )
    assert data["media_type"] == "image/png" and data["size"] == len(buffers[0]) and data["cells"] == 26
    (tmp_path / "exports").mkdir()
    written = export_figure(
        root / "datasets" / "edit-2222", "fig_canvas", tmp_path / "exports", version=1, format="png", dpi=100
    )
    assert data["name"] == written.name
    with Image.open(io.BytesIO(buffers[0])) as sent, Image.open(written) as made:
        assert sent.info["dpi"] == made.info["dpi"] and sent.size == made.size
        assert sent.tobytes() == made.tobytes()
    code, error = rest_error(fetch, "export", path="datasets/edit-2222", version=1, figure="fig_canvas", view="1,2")
    assert code == 400 and "x0,y0,x1,y1" in error["message"]


def test_demo_stack_under_the_root(jp_root_dir, demo_top, fetch) -> None:
    shutil.copytree(demo_top.parent, jp_root_dir / "demo")
    history = rest_get(fetch, "history", path=f"demo/{demo_top.name}")
    assert history["top_depth"] == 4 and "error" not in history
    figures = rest_get(fetch, "figures", path=f"demo/{demo_top.name}")
    canvas = next(f for f in figures["figures"] if f["kind"] == "canvas")
    data, buffers = rest_get(fetch, "canvas", path=f"demo/{demo_top.name}", figure=canvas["id"])
    assert buffers == []
    _cells, buffers = rest_get(fetch, "cells", path=f"demo/{demo_top.name}", figure=canvas["id"], key=data["cells_key"])
    assert len(buffers) >= 2


def test_tree_and_fingerprint(root, fetch) -> None:
    tree = rest_get(fetch, "tree", path="datasets/edit-2222")
    assert tree["current"] == "edit-2222" and tree["base"]["dataset_id"] == "base-0000"
    assert {(n["dataset_id"], n["parent"]) for n in tree["nodes"]} == {
        ("edit-2222", "studio-1111"),
        ("studio-1111", None),
    }
    assert {n["folder"] for n in tree["nodes"]} == {
        "datasets/edit-2222",
        "datasets/studio-1111",
    }  # relative to the root
    first = rest_get(fetch, "fingerprint", path="datasets/edit-2222")["fingerprint"]
    shutil.copytree(root / "datasets" / "edit-2222", root / "datasets" / "edit-3333")
    assert rest_get(fetch, "fingerprint", path="datasets/edit-2222")["fingerprint"] != first


def test_versions_of_a_listing(root, fetch) -> None:
    (root / "datasets" / "broken").mkdir()
    (root / "datasets" / "broken" / "layer.json").write_text("{")
    answer = rest_get(fetch, "versions", path="datasets")
    assert answer == {
        "path": "datasets",
        "versions": [{"name": "edit-2222", "title": "Edit"}, {"name": "studio-1111", "title": "Studio section"}],
        "unreadable": [{"name": "broken", "reason": answer["unreadable"][0]["reason"]}],
    }
    # a corrupt layer.json is named apart, in one line, without the server's absolute path
    reason = answer["unreadable"][0]["reason"]
    assert reason.startswith("layer.json is not valid JSON") and "\n" not in reason and str(root) not in reason
    assert rest_get(fetch, "versions", path="")["versions"] == []
    # a listing with links out names none of them
    assert rest_get(fetch, "versions", path="escape")["versions"] == []
    code, _ = rest_error(fetch, "versions", path="../x")
    assert code == 403


def test_notebook_of_a_broken_chain(root, fetch) -> None:
    response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": "orphan/edit-2222"}))
    assert json.loads(response.body)["notebook_path"].endswith(".ipynb")


# ------------------------------------------------------------------ refusals


def test_requests_need_a_token(root, http_server_client, jp_base_url, jp_asyncio_loop) -> None:
    query = urlencode({"path": "datasets/edit-2222"})
    for name in ("history", "canvas", "tree", "fingerprint", "versions"):
        url = f"{jp_base_url}{NAMESPACE}/api/{name}?{query}"
        response = jp_asyncio_loop.run_until_complete(http_server_client.fetch(url, raise_error=False))
        assert response.code == 403, name
    post = jp_asyncio_loop.run_until_complete(
        http_server_client.fetch(
            f"{jp_base_url}{NAMESPACE}/api/notebook",
            method="POST",
            body=json.dumps({"path": "datasets/edit-2222"}),
            raise_error=False,
        )
    )
    assert post.code == 403


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("../outside/edit-2222", 403),
        ("datasets/../../outside", 403),
        ("/etc", 403),
        ("link-out", 403),
        ("escape/edit-2222", 403),
        ("datasets/edit-2222\\..\\x", 403),
        ("datasets/nope", 404),
    ],
)
def test_paths_outside_the_root_are_refused(root, fetch, path: str, status: int) -> None:
    code, error = rest_error(fetch, "history", path=path)
    assert code == status
    assert error["kind"] == ("not-found" if status == 404 else "outside-root")


def test_a_version_at_the_root_is_refused(jp_root_dir, studio_stack, fetch) -> None:
    shutil.copy(studio_stack.v2 / "layer.json", jp_root_dir / "layer.json")
    code, error = rest_error(fetch, "history", path="")
    assert code == 403 and "outside the server root" in error["message"]


def test_missing_parent_is_named(root, fetch) -> None:
    history = rest_get(fetch, "history", path="orphan/edit-2222")
    assert history["error"]["kind"] == "missing-dataset" and "studio-1111" in history["error"]["message"]
    assert history["error"]["dataset_id"] == "studio-1111"
    assert [v["dataset_id"] for v in history["versions"]] == ["edit-2222"]
    tree = rest_get(fetch, "tree", path="orphan/edit-2222")
    assert tree["current"] == "edit-2222" and [n["parent"] for n in tree["nodes"]] == ["studio-1111"]
    code, error = rest_error(fetch, "canvas", path="orphan/edit-2222", figure="fig_canvas")
    assert code == 400 and "studio-1111" in error["message"]


def test_errors_name_folders_relative_to_the_root(root, fetch) -> None:
    """The server's own layout stays on the server: a folder that is not a version is named as the browser asked."""
    (root / "datasets" / "plain-folder").mkdir()
    history = rest_get(fetch, "history", path="datasets/plain-folder")
    message = history["error"]["message"]
    assert message.startswith("datasets/plain-folder holds no layer.json"), message
    assert str(root) not in message
    code, error = rest_error(fetch, "notebook", method="POST", body={"path": "datasets/plain-folder"})
    assert code == 400 and error["message"].startswith("datasets/plain-folder holds no layer.json"), error
    assert str(root) not in json.dumps(error)


def test_bad_requests_are_400(root, fetch) -> None:
    code, error = rest_error(fetch, "result_page", path="datasets/edit-2222", result="res_markers", limit="x")
    assert code == 400 and error["kind"] == "bad-request"
    code, error = rest_error(fetch, "canvas", path="datasets/edit-2222", figure="nope")
    assert code == 400 and error["kind"] == "figure"
    with pytest.raises(HTTPClientError) as info:
        fetch(NAMESPACE, "api", "drop_everything", params={"path": "datasets/edit-2222"})
    assert info.value.code == 404


def test_folder_map_from_sds_cirro_datasets(root, named_datasets, fetch, monkeypatch) -> None:
    monkeypatch.setenv("SDS_CIRRO_DATASETS", json.dumps(named_datasets[1]))
    history = rest_get(fetch, "history", path="named/Edit")
    assert [v["dataset_id"] for v in history["versions"]] == ["edit-2222", "studio-1111"]
    assert history["base"]["path"] == "named/Blobs base/blobs.zarr"
    monkeypatch.delenv("SDS_CIRRO_DATASETS")
    history = rest_get(fetch, "history", path="named/Edit")
    assert history["error"]["kind"] == "missing-dataset"


# ------------------------------------------------------------------ notebooks


def test_notebook_in_sds_work_dir_is_made_once_per_version(root, fetch, monkeypatch) -> None:
    """The path in the cell is relative to the notebook; asking again answers the same notebook."""
    (root / "work").mkdir()
    monkeypatch.setenv("SDS_WORK_DIR", str(root / "work"))
    answers = []
    for _ in range(2):
        response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": "datasets/edit-2222"}))
        answers.append((response.code, json.loads(response.body)))
    assert answers == [
        (201, {"notebook_path": "work/Edit.ipynb", "created": True, "run": True}),
        (200, {"notebook_path": "work/Edit.ipynb", "created": False, "run": True}),
    ]
    assert [p.name for p in (root / "work").glob("*.ipynb")] == ["Edit.ipynb"]
    notebook = json.loads((root / "work" / "Edit.ipynb").read_text())
    source = "".join(notebook["cells"][1]["source"])
    assert "VersionBrowser('../datasets/edit-2222')" in source and str(root) not in json.dumps(notebook)
    assert notebook["metadata"]["sds_jupyter"] == {"version": "datasets/edit-2222"}


def test_notebook_edited_since_is_reused_but_not_run(root, fetch, monkeypatch) -> None:
    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    body = json.dumps({"path": "datasets/edit-2222"})
    assert fetch(NAMESPACE, "api", "notebook", method="POST", body=body).code == 201
    notebook = json.loads((root / "Edit.ipynb").read_text())
    notebook["cells"].append(
        {
            "cell_type": "code",
            "id": "mine",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": "adata.obs['x'] = 1",
        }
    )
    (root / "Edit.ipynb").write_text(json.dumps(notebook))
    response = fetch(NAMESPACE, "api", "notebook", method="POST", body=body)
    assert (response.code, json.loads(response.body)) == (
        200,
        {"notebook_path": "Edit.ipynb", "created": False, "run": False},
    )
    assert len(json.loads((root / "Edit.ipynb").read_text())["cells"]) == 3


def test_notebook_of_another_version_with_the_same_title_is_kept(root, fetch, monkeypatch) -> None:
    """A same-titled notebook of another version (or a user's own) is never reused nor overwritten."""
    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    (root / "Edit.ipynb").write_text("not a notebook")
    other = with_title(root, "edit-copy", "Edit")
    paths = []
    for version in ("datasets/edit-2222", other, "datasets/edit-2222", other):
        response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": version}))
        paths.append(json.loads(response.body)["notebook_path"])
    assert paths == ["Edit-1.ipynb", "Edit-2.ipynb", "Edit-1.ipynb", "Edit-2.ipynb"]
    assert (root / "Edit.ipynb").read_text() == "not a notebook"
    assert "'datasets/edit-copy'" in "".join(json.loads((root / "Edit-2.ipynb").read_text())["cells"][1]["source"])


def test_a_huge_notebook_is_not_read_to_find_ours(root, fetch, monkeypatch) -> None:
    from sds_jupyter.server import handlers

    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    body = json.dumps({"path": "datasets/edit-2222"})
    assert (
        json.loads(fetch(NAMESPACE, "api", "notebook", method="POST", body=body).body)["notebook_path"] == "Edit.ipynb"
    )
    monkeypatch.setattr(handlers, "MAX_REUSED_NOTEBOOK_BYTES", 10)
    assert (
        json.loads(fetch(NAMESPACE, "api", "notebook", method="POST", body=body).body)["notebook_path"]
        == "Edit-1.ipynb"
    )


@pytest.mark.parametrize("work_dir", [None, "outside"])
def test_notebook_in_the_root_without_a_work_dir_under_it(root, fetch, monkeypatch, tmp_path, work_dir) -> None:
    if work_dir is None:
        monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    else:
        monkeypatch.setenv("SDS_WORK_DIR", str(tmp_path))
    response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": "datasets/studio-1111"}))
    assert json.loads(response.body) == {"notebook_path": "Studio section.ipynb", "created": True, "run": True}
    assert (root / "Studio section.ipynb").is_file()


@pytest.mark.parametrize(
    ("body", "status"),
    [({"path": "../x"}, 403), ({"path": "datasets/nope"}, 404), ({}, 400), ({"path": "orphan/nope"}, 404)],
)
def test_notebook_refusals(root, fetch, body, status) -> None:
    code, _ = rest_error(fetch, "notebook", method="POST", body=body)
    assert code == status


# ------------------------------------------------------------------ cache


def test_cache_reopens_when_a_manifest_changes(root) -> None:
    cache = ServiceCache(root)
    first = cache.service("datasets/edit-2222")
    assert cache.service("datasets/edit-2222") is first
    manifest = root / "datasets" / "edit-2222" / "layer.json"
    stat = manifest.stat()
    os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert cache.service("datasets/edit-2222") is not first


def test_cache_refuses_escapes_before_reading(root) -> None:
    with pytest.raises(OutsideRootError):
        ServiceCache(root).service("escape/edit-2222")


def test_cache_busting_timestamp_is_ignored(root, fetch) -> None:
    response = fetch(NAMESPACE, "api", "history", params={"path": "datasets/edit-2222", "1733090000000": ""})
    assert json.loads(response.body)["top_depth"] == 2


def test_extension_points_and_installed_config() -> None:
    from sds_jupyter.server import _jupyter_server_extension_points

    assert _jupyter_server_extension_points() == [{"module": "sds_jupyter.server"}]
    config = ROOT / "jupyter-config" / "jupyter_server_config.d" / "sds_jupyter.json"
    assert json.loads(config.read_text())["ServerApp"]["jpserver_extensions"] == {"sds_jupyter.server": True}


def test_result_filter_csv_and_gene_values_over_rest(root, fetch) -> None:
    page = rest_get(fetch, "result_page", path="datasets/edit-2222", version=1, result="res_markers", filter="gene1")
    assert page["total"] == 11 and page["unfiltered"] == 30
    csv = rest_get(fetch, "result_csv", path="datasets/edit-2222", version=1, result="res_markers", filter="gene1")
    assert csv["rows"] == 11 and csv["csv"].startswith("group,names,")
    data, buffers = rest_get(
        fetch, "color_values", path="datasets/edit-2222", version=1, figure="fig_canvas", gene="channel_0_sum"
    )
    assert data["mode"] == "continuous" and [len(b) for b in buffers] == [26 * 4]


# ------------------------------------------------------------------ hostile inputs (issue 8, item 10)


@contextmanager
def _read_only(folder: Path):
    """``folder`` made unwritable for this process (chattr +i as root, else chmod), restored after."""
    as_root = os.geteuid() == 0
    if as_root:
        if (
            shutil.which("chattr") is None
            or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode
        ):
            pytest.skip("running as root without chattr +i: cannot make a folder read-only")
    else:
        folder.chmod(0o555)
    try:
        try:
            (folder / "probe").touch()
        except PermissionError:
            pass
        else:
            (folder / "probe").unlink()
            pytest.skip("this file system does not refuse writes into a read-only folder")
        yield folder
    finally:
        if as_root:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def test_token_and_xsrf_query_parameters_are_accepted(
    root, http_server_client, jp_serverapp, jp_base_url, jp_asyncio_loop
) -> None:
    token = jp_serverapp.identity_provider.token
    for extra in ({"token": token}, {"token": token, "_xsrf": "2|abc|def|1"}):
        query = urlencode({"path": "datasets/edit-2222", "version": "1", **extra})
        url = f"{jp_base_url}{NAMESPACE}/api/changes?{query}"
        response = jp_asyncio_loop.run_until_complete(http_server_client.fetch(url, raise_error=False))
        assert response.code == 200, response.body
        assert "ops" in json.loads(response.body)


def test_a_wrong_token_in_the_query_is_still_refused(root, http_server_client, jp_base_url, jp_asyncio_loop) -> None:
    query = urlencode({"path": "datasets/edit-2222", "token": "not-the-token"})
    url = f"{jp_base_url}{NAMESPACE}/api/history?{query}"
    response = jp_asyncio_loop.run_until_complete(http_server_client.fetch(url, raise_error=False))
    assert response.code == 403


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("changes", {"version": "²"}),
        ("changes", {"version": "-²"}),
        ("changes", {"version": "٣"}),
        ("changes", {"version": "9" * 5000}),
        ("changes", {"version": "-" + "9" * 5000}),
        ("changes", {"version": "9" * 40}),
        ("compare", {"a": "1", "b": "9" * 5000}),
        ("result_page", {"version": "1", "result": "res_markers", "offset": "9" * 5000}),
        ("result_page", {"version": "1", "result": "res_markers", "limit": "²"}),
    ],
)
def test_bad_numbers_are_400_with_a_message(root, fetch, name: str, params: dict[str, str]) -> None:
    code, error = rest_error(fetch, name, path="datasets/edit-2222", **params)
    assert code == 400, error
    assert error["kind"] != "internal" and error["message"]
    assert len(error["message"]) < 300 and "\n" not in error["message"]


def test_notebook_body_that_is_not_json_is_400(root, fetch) -> None:
    for body in ("{not json", "", "[1, 2", '"datasets/edit-2222"'):
        with pytest.raises(HTTPClientError) as info:
            fetch(NAMESPACE, "api", "notebook", method="POST", body=body, allow_nonstandard_methods=True)
        assert info.value.code == 400, body
        error = json.loads(info.value.response.body)
        assert error["kind"] == "bad-request" and "JSON" in error["message"]


def test_notebook_in_a_read_only_root_is_refused_with_a_message(root, fetch, monkeypatch) -> None:
    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    with _read_only(root):
        code, error = rest_error(fetch, "notebook", method="POST", body={"path": "datasets/edit-2222"})
    assert code in (400, 403)
    assert error["kind"] != "internal" and "permission" in error["message"].lower()
    assert not list(root.glob("*.ipynb"))


@pytest.mark.parametrize("title", ["𠀀" * 200, "a" * 1000, "é" * 300, "\u0301" * 400 + "x"])
def test_a_long_title_makes_a_bounded_notebook_name(root, fetch, title: str) -> None:
    version = with_title(root, "long-title", title)
    (root / notebook_name(title)).write_text("someone else's file")  # the next one takes a "-1": still bounded
    response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": version}))
    assert response.code == 201
    name = PurePosixPath(json.loads(response.body)["notebook_path"]).name
    assert name.endswith("-1.ipynb")
    assert name.endswith(".ipynb") and len(name.encode()) <= 255
    assert (root / name).is_file()


def test_is_version_is_gone(root, fetch) -> None:
    """The file browser never called it, and it read manifests past the one bounded reader.

    The 404 means something only beside a registered request on the same path answering,
    and it says which name no route serves (not Jupyter's page for any missing URL).
    """
    assert "is_version" not in REQUESTS
    served = fetch(NAMESPACE, "api", "history", params={"path": "datasets/edit-2222"})
    assert served.code == 200
    with pytest.raises(HTTPClientError) as info:
        fetch(NAMESPACE, "api", "is_version", params={"path": "datasets/edit-2222"})
    assert info.value.code == 404
    error = json.loads(info.value.response.body)
    assert error["kind"] == "http" and "'is_version'" in error["message"]


def _layouts(folder: Path, manifest: bytes, outside: Path) -> None:
    """Folders that are versions, are not, or try to look like one (links in and out, files for folders)."""
    for name in ("top", "under-data", "both", "nested", "manifest-is-folder", "data-is-file", "empty"):
        (folder / name).mkdir()
    (folder / "top" / "layer.json").write_bytes(manifest)
    (folder / "under-data" / "data").mkdir()
    (folder / "under-data" / "data" / "layer.json").write_bytes(manifest)
    (folder / "both" / "data").mkdir()
    (folder / "both" / "layer.json").write_bytes(manifest)
    (folder / "both" / "data" / "layer.json").write_bytes(manifest)
    (folder / "nested" / "data" / "data").mkdir(parents=True)
    (folder / "nested" / "data" / "data" / "layer.json").write_bytes(manifest)
    (folder / "manifest-is-folder" / "layer.json").mkdir()
    (folder / "data-is-file" / "data").write_bytes(manifest)
    (folder / "a-file").write_bytes(manifest)
    (folder / "data").mkdir()
    (folder / "data" / "layer.json").write_bytes(manifest)
    (folder / "link-to-top").symlink_to(folder / "top", target_is_directory=True)
    (folder / "data-link-in").mkdir()
    (folder / "data-link-in" / "data").symlink_to(folder / "under-data" / "data", target_is_directory=True)
    (outside / "data").mkdir(parents=True)
    (outside / "data" / "layer.json").write_bytes(manifest)
    (folder / "data-link-out").mkdir()
    (folder / "data-link-out" / "data").symlink_to(outside / "data", target_is_directory=True)
    (folder / "manifest-link-out").mkdir()
    (folder / "manifest-link-out" / "layer.json").symlink_to(outside / "data" / "layer.json")


def _library_says_version(path: Path) -> bool:
    """The stack library's one rule: a version when locate_version finds its manifest (a refusal is no)."""
    from sds_jupyter.errors import StackError
    from sds_jupyter.stack import location_of
    from sds_jupyter.stack.locator import locate_version

    try:
        return locate_version(location_of(path)) is not None
    except StackError:
        return False


def test_the_versions_endpoint_answers_as_the_library_rule(root, studio_stack, fetch, tmp_path) -> None:
    """api/versions (what the file browser marks) and locate_version agree on every entry of a listing."""
    zoo = root / "zoo"
    zoo.mkdir()
    _layouts(zoo, (studio_stack.v2 / "layer.json").read_bytes(), tmp_path / "far")
    listed = {entry["name"] for entry in rest_get(fetch, "versions", path="zoo")["versions"]}
    expected = {entry.name for entry in zoo.iterdir() if _library_says_version(entry)}
    assert listed == expected
    # the rule's answer, spelled out: a manifest at the top or under data/, no link leaving the folder
    assert expected == {"top", "under-data", "both", "data", "link-to-top"}


@pytest.fixture(scope="module")
def xenium_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Xenium demo (six versions and a coarser-clusters branch), small."""
    import warnings

    from sds_jupyter.demo.xenium import build_xenium_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_xenium_demo(tmp_path_factory.mktemp("xenium"), n_cells=1200, side=1024)


def test_compare_with_a_branch_agreement_genes_and_dot_plot(jp_root_dir, xenium_demo, fetch) -> None:
    """Issue 28 over REST: the agreement of two clusterings, genes in any case, the dot plot."""
    from sds_jupyter.demo import demo_dataset_id

    shutil.copytree(xenium_demo.parent, jp_root_dir / "xenium", symlinks=True)
    path = f"xenium/{xenium_demo.name}"
    branch = demo_dataset_id("xenium-Coarser clusters")
    comparison = rest_get(fetch, "compare", path=path, a=6, b=branch)
    leiden = next(c for c in comparison["obs"]["changed"] if c["column"] == "leiden")
    scores, table = leiden["agreement"], leiden["contingency"]
    n_cells = sum(map(sum, table["counts"]))
    # the cells off the matched pairs are the ones that moved; renamed labels do not count
    assert scores["n_moved"] == n_cells - sum(p["count"] for p in scores["matched"]) > 0
    assert scores["n_moved"] < leiden["n_changed"]
    # the matched pairs on the diagonal (in the newer side's label order, not by size)
    diagonal = [
        (table["a"][i], table["b"][i], row[i]) for i, row in enumerate(table["counts"][: len(scores["matched"])])
    ]
    assert sorted(diagonal, key=str) == sorted(((p["a"], p["b"], p["count"]) for p in scores["matched"]), key=str)
    assert 0 < scores["ari"] < 1 and 0 < scores["nmi"] < 1
    genes = rest_get(fetch, "genes", path=path)
    assert "EPCAM" in genes["names"]
    figure = next(f["id"] for f in rest_get(fetch, "figures", path=path)["figures"] if f["kind"] == "canvas")
    for typed in ("Epcam", "epcam", "EPCAM"):
        data, buffers = rest_get(fetch, "color_values", path=path, figure=figure, gene=typed)
        assert data["column"] == "EPCAM" and len(buffers[0]) == 4 * n_cells
    code, error = rest_error(fetch, "color_values", path=path, figure=figure, gene="Epcm")
    assert code == 400 and "EPCAM" in error["message"] and "\n" not in error["message"]
    plot = rest_get(fetch, "dot_plot", path=path, gene="epcam,CD3E", groupby="leiden")
    assert plot["genes"] == ["EPCAM", "CD3E"]
    assert sum(r["n_cells"] for r in plot["rows"] if r["gene"] == "EPCAM") == n_cells


# ------------------------------------------------------------------ cells sent once (issue 23)


def _raw(fetch, name: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
    """The response itself (a 304 too: tornado's client raises on it)."""
    try:
        return fetch(NAMESPACE, "api", name, params={k: str(v) for k, v in params.items()}, headers=headers or {})
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.response


def test_cells_are_content_addressed_and_revalidate_to_304(root, fetch) -> None:
    canvas, _ = rest_get(fetch, "canvas", path="datasets/edit-2222", version=1, figure="fig_canvas")
    key = canvas["cells_key"]
    params = {"path": "datasets/edit-2222", "version": 1, "figure": "fig_canvas", "key": key}
    first = _raw(fetch, "cells", **params)
    assert first.code == 200 and first.headers["Etag"] == f'W/"{key}"'  # weak: the body may go gzipped
    assert "immutable" in first.headers["Cache-Control"]
    again = _raw(fetch, "cells", headers={"If-None-Match": f'"{key}"'}, **params)
    assert again.code == 304 and not again.body
    # the same version opened from its own folder: the same key, so the browser's copy serves it
    other, _ = rest_get(fetch, "canvas", path="datasets/studio-1111", figure="fig_canvas")
    assert other["cells_key"] == key
    # a version that rewrote the positions: another key, and the old one is refused for it
    top, _ = rest_get(fetch, "canvas", path="datasets/edit-2222", figure="fig_canvas")
    assert top["cells_key"] != key
    stale = _raw(fetch, "cells", **{**params, "version": 2})
    assert stale.code == 400 and "ask canvas again" in json.loads(stale.body)["message"]
    # without a key the answer is the same bytes but may change: revalidated each time, not immutable
    unnamed = _raw(fetch, "cells", path="datasets/edit-2222", version=1, figure="fig_canvas")
    assert unnamed.body == first.body and "no-cache" in unnamed.headers["Cache-Control"]


def test_colour_values_under_their_key_are_immutable_and_revalidate_to_304(root, fetch) -> None:
    canvas, _ = rest_get(fetch, "canvas", path="datasets/edit-2222", figure="fig_canvas")
    key = canvas["color_keys"]["region_class"]
    params = {"path": "datasets/edit-2222", "figure": "fig_canvas", "column": "region_class"}
    first = _raw(fetch, "color_values", **params, key=key)
    assert first.code == 200 and first.headers["Etag"] == f'W/"{key}"' and "immutable" in first.headers["Cache-Control"]
    again = _raw(fetch, "color_values", headers={"If-None-Match": f'"{key}"'}, **params, key=key)
    assert again.code == 304 and not again.body
    # without the key in the URL: the same name, but revalidated each time
    unnamed = _raw(fetch, "color_values", **params)
    assert unnamed.body == first.body and "no-cache" in unnamed.headers["Cache-Control"]
    stale = _raw(fetch, "color_values", **params, version=1, key=key)  # version 1's region_class is another column
    assert stale.code == 400 and "ask canvas again" in json.loads(stale.body)["message"]


def test_a_revisited_canvas_revalidates_to_304_and_another_version_does_not(root, fetch) -> None:
    params = {"path": "datasets/edit-2222", "version": 1, "figure": "fig_canvas"}
    first = _raw(fetch, "canvas", **params)
    etag = first.headers["Etag"]
    assert first.code == 200 and "no-cache" in first.headers["Cache-Control"] and len(etag) == 36
    again = _raw(fetch, "canvas", headers={"If-None-Match": etag}, **params)
    assert again.code == 304 and not again.body
    # version 2 colours its cells otherwise: the browser's copy of version 1 does not answer for it
    other = _raw(fetch, "canvas", headers={"If-None-Match": etag}, **{**params, "version": 2})
    assert other.code == 200 and other.headers["Etag"] != etag and other.body


def _server_timing(response: Any) -> dict[str, float]:
    """The reply's Server-Timing parts by name (ms), each checked to read as ``name;dur=<ms>``.

    Entries with a ``desc`` and no duration say where derived data came from (test_server_sources.py).
    """
    parts = {}
    for item in response.headers["Server-Timing"].split(", "):
        name, _, duration = item.partition(";dur=")
        if not duration and ';desc="' in name:
            continue
        parts[name] = float(duration)
    return parts


def test_replies_say_where_their_time_went_in_server_timing(root, fetch) -> None:
    """Each part of a request (open the service, answer, frame, code) and the total, as Chromium reads them."""
    params = {"path": "datasets/edit-2222", "version": 1, "figure": "fig_canvas"}
    canvas = _raw(fetch, "canvas", **params)
    parts = _server_timing(canvas)
    assert list(parts) == ["open", "work", "frame", "code", "total"]
    assert all(ms >= 0 for ms in parts.values())
    assert parts["total"] >= sum(ms for name, ms in parts.items() if name != "total") - 0.5  # rounded to 0.1 ms
    cells = _raw(fetch, "cells", **params, key=unframe_reply(canvas.body)[0]["cells_key"])
    assert list(_server_timing(cells)) == ["open", "work", "frame", "code", "total"]
    # a 304 ends after the work: no body framed or coded
    again = _raw(fetch, "canvas", headers={"If-None-Match": canvas.headers["Etag"]}, **params)
    assert again.code == 304 and list(_server_timing(again)) == ["open", "work", "total"]


# ------------------------------------------------------------------ content-coding (issue 39)


def _coded(fetch, name: str, accept: str | None, etag: str | None = None, **params: Any) -> Any:
    """The response as sent (tornado's client neither asks for nor undoes a coding here)."""
    headers = {"Accept-Encoding": accept} if accept is not None else {}
    if etag is not None:
        headers["If-None-Match"] = etag
    try:
        return fetch(
            NAMESPACE,
            "api",
            name,
            params={k: str(v) for k, v in params.items()},
            headers=headers,
            decompress_response=False,
        )
    except HTTPClientError as exc:
        assert exc.response is not None
        return exc.response


def test_replies_are_gzipped_only_when_the_request_accepts_it(jp_root_dir, demo_top, fetch) -> None:
    """Binary and JSON replies: identity without Accept-Encoding, gzip with it, the same bytes once decoded."""
    import gzip

    shutil.copytree(demo_top.parent, jp_root_dir / "demo")
    path = f"demo/{demo_top.name}"
    figures = rest_get(fetch, "figures", path=path)
    figure = next(f["id"] for f in figures["figures"] if f["kind"] == "canvas")
    for name, params in (
        ("channels", {"figure": figure}),  # framed binary: the image overview's planes
        ("image_tile", {"figure": figure, "level": 0, "x": 0, "y": 0}),  # framed binary, by tile
        ("figures", {}),  # JSON
    ):
        plain = _coded(fetch, name, None, path=path, **params)
        assert plain.code == 200 and "Content-Encoding" not in plain.headers
        assert "Accept-Encoding" in plain.headers["Vary"]
        zipped = _coded(fetch, name, "gzip, deflate", path=path, **params)
        assert zipped.code == 200 and zipped.headers["Content-Encoding"] == "gzip", name
        assert gzip.decompress(zipped.body) == plain.body and len(zipped.body) < len(plain.body)
        assert "Accept-Encoding" in zipped.headers["Vary"]
        refused = _coded(fetch, name, "gzip;q=0, identity", path=path, **params)
        assert "Content-Encoding" not in refused.headers and refused.body == plain.body
    # a revisit that holds the coded body still revalidates to 304 (the ETag is weak, compared weakly)
    etag = _coded(fetch, "canvas", "gzip", path=path, figure=figure).headers["Etag"]
    assert etag.startswith('W/"')
    revisit = _coded(fetch, "canvas", "gzip", etag=etag, path=path, figure=figure)
    assert revisit.code == 304 and not revisit.body


def test_brotli_when_installed_and_asked_first(jp_root_dir, demo_top, fetch) -> None:
    brotli = pytest.importorskip("brotli")
    shutil.copytree(demo_top.parent, jp_root_dir / "demo")
    path = f"demo/{demo_top.name}"
    figure = next(f["id"] for f in rest_get(fetch, "figures", path=path)["figures"] if f["kind"] == "canvas")
    plain = _coded(fetch, "figures", None, path=path)
    coded = _coded(fetch, "figures", "gzip, deflate, br", path=path)
    assert coded.headers["Content-Encoding"] == "br" and brotli.decompress(coded.body) == plain.body
    # a client that weighs gzip higher gets gzip
    assert _coded(fetch, "figures", "br;q=0.5, gzip", path=path).headers["Content-Encoding"] == "gzip"
    # a body past MAX_BROTLI_BYTES (the 786 kB image overview) goes gzip even where brotli is preferred
    assert _coded(fetch, "channels", "br, gzip", path=path, figure=figure).headers["Content-Encoding"] == "gzip"


def test_a_png_export_is_not_coded_again(root, fetch) -> None:
    """A PNG is compressed already: gzip would cost time and save nothing, so it goes as it is."""
    params = {"path": "datasets/edit-2222", "version": 1, "figure": "fig_canvas", "format": "png", "dpi": 100}
    sent = _coded(fetch, "export", "gzip, br", **params)
    assert sent.code == 200 and "Content-Encoding" not in sent.headers
    data, buffers = unframe_reply(sent.body)
    assert data["media_type"] == "image/png" and buffers[0][:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("header", "codings"),
    [
        (None, []),
        ("", []),
        ("identity", []),
        ("gzip", ["gzip"]),
        ("GZIP;q=0.5", ["gzip"]),
        ("gzip;q=0", []),
        ("*", "all"),
        ("*;q=0, gzip", ["gzip"]),
        ("deflate, gzip;q=bad", []),
        ("gzip, deflate, br", "all"),
        ("br;q=0.5, gzip", ["gzip", "br"]),
    ],
)
def test_accept_encoding_is_read_as_http_writes_it(header: str | None, codings: Any) -> None:
    from sds_jupyter.server.encoding import CODINGS, negotiate

    wanted = list(CODINGS) if codings == "all" else [c for c in codings if c in CODINGS]
    assert list(negotiate(header)) == wanted


def test_a_large_body_goes_gzip_even_where_brotli_is_preferred() -> None:
    """brotli's extra saving costs more time than it saves past MAX_BROTLI_BYTES: gzip then, when taken."""
    import gzip

    import numpy as np

    from sds_jupyter.server.encoding import MAX_BROTLI_BYTES, encode

    body = np.arange(MAX_BROTLI_BYTES // 4 + 1024, dtype="<u4").tobytes()
    sent, coding = encode(body, ("br", "gzip"))
    assert coding == "gzip" and gzip.decompress(sent) == body
    noise = np.random.default_rng(0).integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    assert encode(noise, ("gzip",)) == (noise, None)  # compresses to nothing less: sent as it is
    assert encode(b"{}", ("gzip",)) == (b"{}", None)  # too short to gain
