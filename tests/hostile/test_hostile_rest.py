"""Issue 24, items 10, 11, 14 and 15 over REST, through the real Jupyter server of tests/kit/rest.py.

The hostile stores are the ones tests/kit/hostile.py builds at the service level
(versions saved by the VersionWriter): here they are put under the server root and asked
for as the browser asks.
"""

# ruff: noqa: F811 - the fixtures of kit.rest and kit.hostile are imported by name, then requested
from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

from kit.hostile import edit_nodes, hostile_versions  # noqa: F401 - fixture
from kit.rest import fetch, jp_server_config, rest_error, rest_get, root, with_title  # noqa: F401 - fixtures

from sds_jupyter.limits import MAX_TITLE_MANIFEST_BYTES
from sds_jupyter.server.handlers import NAMESPACE

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]


def _post_notebook(fetch, path: str) -> tuple[int, dict]:
    response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": path}))
    return response.code, json.loads(response.body)


def test_a_notebook_linked_out_of_the_root_is_never_reused(root, fetch, monkeypatch, tmp_path) -> None:
    """Item 15: a link under the generated name, to a notebook made for this very version, is passed over."""
    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    assert _post_notebook(fetch, "datasets/edit-2222") == (
        201,
        {"notebook_path": "Edit.ipynb", "created": True, "run": True},
    )
    outside = tmp_path / "elsewhere.ipynb"
    shutil.move(root / "Edit.ipynb", outside)
    (root / "Edit.ipynb").symlink_to(outside)
    before = outside.read_bytes()
    code, answer = _post_notebook(fetch, "datasets/edit-2222")
    assert (code, answer["notebook_path"], answer["created"]) == (201, "Edit-1.ipynb", True)
    assert (root / "Edit-1.ipynb").is_file() and not (root / "Edit-1.ipynb").is_symlink()
    assert outside.read_bytes() == before and (root / "Edit.ipynb").is_symlink()


def test_a_notebook_linked_inside_the_root_is_not_reused_either(root, fetch, monkeypatch) -> None:
    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    assert _post_notebook(fetch, "datasets/edit-2222")[0] == 201
    (root / "kept").mkdir()
    shutil.move(root / "Edit.ipynb", root / "kept" / "Edit.ipynb")
    (root / "Edit.ipynb").symlink_to(root / "kept" / "Edit.ipynb")
    assert _post_notebook(fetch, "datasets/edit-2222")[1]["notebook_path"] == "Edit-1.ipynb"


def test_a_dangling_link_under_the_name_is_never_written_through(root, fetch, monkeypatch, tmp_path) -> None:
    """A link to a file that does not exist yet: writing "a new notebook" there would create it outside."""
    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    target = tmp_path / "planted.ipynb"
    (root / "Edit.ipynb").symlink_to(target)
    code, answer = _post_notebook(fetch, "datasets/edit-2222")
    assert (code, answer["notebook_path"]) == (201, "Edit-1.ipynb")
    assert not target.exists()


def test_a_listing_reads_no_title_from_a_huge_manifest(root, fetch) -> None:
    """Item 10: a manifest over MAX_TITLE_MANIFEST_BYTES is listed by name, without being parsed."""
    relative = with_title(root, "huge-title", "Huge")
    manifest_path = root / relative / "layer.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["message"] = "m" * (MAX_TITLE_MANIFEST_BYTES + 1)
    manifest_path.write_text(json.dumps(manifest))
    listed = {entry["name"]: entry["title"] for entry in rest_get(fetch, "versions", path="datasets")["versions"]}
    assert listed["huge-title"] is None and listed["edit-2222"] == "Edit"


def _under_root(root: Path, hostile_versions) -> str:
    shutil.copytree(hostile_versions[0].parent, root / "hostile")
    return "hostile"


def test_csv_headers_are_defused_over_rest(root, fetch, hostile_versions) -> None:
    """Item 14: a column header starting like a formula goes out as text."""
    folder = _under_root(root, hostile_versions)
    answer = rest_get(fetch, "result_csv", path=f"{folder}/hostile-3333", result="res_hostile")
    header = next(csv.reader(io.StringIO(answer["csv"])))
    assert header[-4:] == ['\'=HYPERLINK("x")', "'+sum", "'@x", "ok"]


def test_a_result_claiming_a_huge_size_answers_400(root, fetch, hostile_versions) -> None:
    """Item 11: refused from its metadata, before anndata allocates what it claims."""
    folder = _under_root(root, hostile_versions)
    assert edit_nodes(root / folder, "res_big/table/value", lambda meta: meta.update(shape=[10**12]))
    code, error = rest_error(fetch, "result_page", path=f"{folder}/hostile-3333", result="res_big")
    assert code == 400 and "MAX_RESULT_BYTES" in error["message"], error
    code, error = rest_error(fetch, "result_csv", path=f"{folder}/hostile-3333", result="res_big")
    assert code == 400 and "MAX_RESULT_BYTES" in error["message"], error


def test_compare_of_many_distinct_values_over_rest_is_small(root, fetch, hostile_versions, monkeypatch) -> None:
    """Item 11: a compare of two columns of unique names sends MAX_COUNTS of them, not every one.

    The stack has 26 cells, so the bound is lowered to 10 to be crossed (the server runs in this process).
    """
    from sds_jupyter.service import celldiff as compare

    monkeypatch.setattr(compare, "MAX_COUNTS", 10)
    folder = _under_root(root, hostile_versions)
    comparison = rest_get(fetch, "compare", path=f"{folder}/hostile-4444", a=3, b=4)
    names = {change["column"]: change for change in comparison["obs"]["changed"]}["name"]
    assert len(names["counts_a"]) == 10 < names["n_changed"]
    assert names["counts_other_a"] == names["n_changed"] - 10


def test_the_server_keeps_the_services_used_last(root) -> None:
    """A full service cache drops the least recently used service, not the first opened."""
    from sds_jupyter.server.cache import ServiceCache

    cache = ServiceCache(root, max_entries=2)
    first = cache.service("datasets/edit-2222")
    cache.service("datasets/studio-1111")
    assert cache.service("datasets/edit-2222") is first  # used again: now the most recent
    cache.service(with_title(root, "third", "Third"))
    assert cache.service("datasets/edit-2222") is first
    assert len(cache._entries) == 2
