"""VersionBrowser, Python side: messages in through ipywidgets, replies out through a comm."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from kit.widget import deliver, widget_replies

from sds_jupyter import widget as widget_module
from sds_jupyter.widget import VersionBrowser

pytest_plugins = ["kit.fixtures_service"]


@pytest.fixture
def browser(studio_stack, recorded_messages) -> VersionBrowser:
    return VersionBrowser(studio_stack.v2, namespace={})


def test_widget_starts_on_the_top_version(browser, studio_stack) -> None:
    assert browser.selected == 2
    assert browser.path == str(studio_stack.v2)
    assert browser._esm and browser._css


def test_the_app_is_not_state_but_sent_when_asked(studio_stack, recorded_messages) -> None:
    """JupyterLab restores a reopened notebook's widgets from one reply holding every
    widget's state, waiting 4 s for it: the 1.9 MB app is not in that state (only a hash
    naming it); the entry asks for it with an ``app`` message, answered with the file."""
    browsers = [VersionBrowser(studio_stack.v2, namespace={}) for _ in range(3)]
    source = widget_module._APP_PATH.read_bytes()
    states = [json.dumps(b.get_state()) for b in browsers]
    # the entry and the CSS (some 25 kB), not the app
    assert all(len(state) < len(source) // 20 for state in states), [len(s) for s in states]
    assert len({b._app_hash for b in browsers}) == 1 and browsers[0]._app_hash
    deliver(browsers[1], {"type": "app", "id": "app-1"})
    (reply,) = widget_replies(recorded_messages)
    assert reply["type"] == "app" and reply["id"] == "app-1" and reply["hash"] == browsers[1]._app_hash
    (sent,) = reply["buffers"]
    assert bytes(sent) == source
    # nothing about the app travels again as a state update (neither the hash nor a source)
    assert not [key for update in _state_updates(recorded_messages) for key in update if key.startswith("_app")]


def test_request_is_answered_with_the_same_id(browser, recorded_messages) -> None:
    deliver(browser, {"type": "request", "id": 7, "name": "history", "params": {}})
    (reply,) = widget_replies(recorded_messages)
    assert reply["type"] == "response" and reply["id"] == 7 and reply["ok"] is True
    assert reply["data"]["top_depth"] == 2 and reply["buffers"] == []


def test_export_reply_carries_the_file(browser, recorded_messages, tmp_path) -> None:
    """The widget's export buttons get the file the command line writes, through the kernel."""
    from sds_jupyter.service.export import export_figure

    params = {"version": 1, "figure": "fig_canvas", "format": "svg", "view": "whole"}
    deliver(browser, {"type": "request", "id": 3, "name": "export", "params": params})
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] and reply["data"]["media_type"] == "image/svg+xml"
    (sent,) = reply["buffers"]
    written = export_figure(browser.service, "fig_canvas", tmp_path, version=1, view="whole")
    assert reply["data"]["name"] == written.name and bytes(sent) == written.read_bytes()
    assert b"Regions on tissue" in bytes(sent)


def test_canvas_reply_names_its_parts_and_they_come_as_buffers(browser, recorded_messages) -> None:
    deliver(browser, {"type": "request", "id": 1, "name": "canvas", "params": {"version": 1, "figure": "fig_canvas"}})
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] and reply["buffers"] == []  # the cells come by key, the colours by color_keys
    column = reply["data"]["color"]["column"]
    params = {"version": 1, "figure": "fig_canvas", "column": column, "key": reply["data"]["color_keys"][column]}
    deliver(browser, {"type": "request", "id": 3, "name": "color_values", "params": params})
    colors = widget_replies(recorded_messages)[-1]
    assert colors["ok"] and colors["data"] == reply["data"]["color"] and len(colors["buffers"]) == 1
    key = reply["data"]["cells_key"]
    params = {"version": 1, "figure": "fig_canvas", "key": key}
    deliver(browser, {"type": "request", "id": 2, "name": "cells", "params": params})
    cells = widget_replies(recorded_messages)[-1]
    assert cells["ok"] and cells["data"]["key"] == key and len(cells["buffers"]) == 2
    x = np.frombuffer(cells["buffers"][0], dtype="<f4")
    assert x.shape == (reply["data"]["n_cells"],)


def test_image_tile_reply_carries_one_plane_per_channel(browser, recorded_messages) -> None:
    params = {"version": 1, "figure": "fig_canvas", "level": 0, "x": 0, "y": 0}
    deliver(browser, {"type": "request", "id": 3, "name": "image_tile", "params": params})
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] and len(reply["buffers"]) == reply["data"]["channels"] >= 1
    assert len(reply["buffers"][0]) == reply["data"]["width"] * reply["data"]["height"]


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ({"type": "request", "id": 2, "name": "nope", "params": {}}, "bad-request"),
        ({"type": "request", "id": 2, "name": "canvas", "params": {"figure": "missing"}}, "figure"),
        (
            {"type": "request", "id": 2, "name": "result_page", "params": {"result": "res_markers", "limit": "x"}},
            "bad-request",
        ),
        ({"type": "request", "id": 2, "name": "history", "params": [1]}, "bad-request"),
    ],
)
def test_errors_come_back_as_kind_and_message(browser, recorded_messages, content, kind) -> None:
    deliver(browser, content)
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] is False and reply["id"] == 2
    assert reply["error"]["kind"] == kind and reply["error"]["message"]


def test_open_adata_binds_the_version(studio_stack, recorded_messages) -> None:
    namespace: dict[str, Any] = {}
    browser = VersionBrowser(studio_stack.v2, name="tbl", namespace=namespace)
    deliver(browser, {"type": "open_adata", "id": 5, "version": 1})
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] and "`tbl` is the AnnData of v1 “Studio section”" in reply["data"]["message"]
    assert browser.selected == 1
    assert "score" in namespace["tbl"].obs and "added_col" not in namespace["tbl"].obs
    assert browser.adata is namespace["tbl"]


def test_open_by_title_dataset_id_or_depth(browser) -> None:
    assert "added_col" in browser.adata.obs
    assert browser.open("Studio section") is browser.adata and browser.selected == 1
    browser.open("edit-2222")
    assert browser.selected == 2
    browser.open(0)
    assert "region_class" not in browser.adata.obs


@pytest.mark.parametrize("selector", ["²", "٣", "9" * 5000])
def test_open_adata_with_a_strange_version_answers_an_error(browser, recorded_messages, selector: str) -> None:
    """Non-ASCII digits and huge numbers name no version: one readable refusal, not an internal error."""
    deliver(browser, {"type": "open_adata", "id": 11, "version": selector})
    (reply,) = widget_replies(recorded_messages)
    assert not reply["ok"]
    assert reply["error"]["kind"] != "internal" and "no version" in reply["error"]["message"]
    assert len(reply["error"]["message"]) < 400


def test_other_messages_are_ignored(browser, recorded_messages) -> None:
    deliver(browser, {"type": "something-else"})
    assert widget_replies(recorded_messages) == []


def test_missing_parent_still_shows_history(orphan_version, recorded_messages) -> None:
    browser = VersionBrowser(orphan_version, namespace={})
    deliver(browser, {"type": "request", "id": 1, "name": "history", "params": {}})
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] and reply["data"]["error"]["kind"] == "missing-dataset"


def test_unbuilt_front_end_is_a_clear_error(studio_stack, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(widget_module, "_ESM_PATH", tmp_path / "widget.js")
    with pytest.raises(RuntimeError, match="front end is not built.*build the package"):
        VersionBrowser(studio_stack.v2)


def test_open_version_moves_to_another_version_of_the_folder(
    browser, studio_stack, recorded_messages, tmp_path
) -> None:
    deliver(browser, {"type": "open_version", "id": 7, "folder": str(studio_stack.datasets / "studio-1111")})
    (reply,) = widget_replies(recorded_messages)
    assert reply["ok"] and browser.selected == 1
    assert browser.service.history()["versions"][0]["dataset_id"] == "studio-1111"
    # only version folders of the same datasets folder
    for folder in (str(tmp_path), str(studio_stack.datasets / "base-0000"), "../../etc"):
        deliver(browser, {"type": "open_version", "id": 8, "folder": folder})
    assert [r["ok"] for r in widget_replies(recorded_messages)[1:]] == [False, False, False]
    assert browser.service.history()["versions"][0]["dataset_id"] == "studio-1111"


def test_a_view_of_the_folder_left_is_answered_from_that_folder(browser, studio_stack, recorded_messages) -> None:
    """The front end moves before the new history is shown; a view of the version left asks about it by path."""
    left = browser.path
    assert browser.service.stack.depth == 2
    deliver(browser, {"type": "open_version", "id": 1, "folder": str(studio_stack.datasets / "studio-1111")})
    assert browser.service.stack.depth == 1
    recorded_messages.clear()
    # depth 2 exists only in the folder left: asked with its path it answers from there, unnamed it is refused
    deliver(browser, {"type": "request", "id": 2, "name": "changes", "params": {"version": 2}, "path": left})
    deliver(browser, {"type": "request", "id": 3, "name": "changes", "params": {"version": 2}})
    deliver(browser, {"type": "request", "id": 4, "name": "history", "params": {}, "path": browser.path})
    pinned, unnamed, current = widget_replies(recorded_messages)
    assert pinned["ok"] and pinned["data"]["ops"], pinned
    assert not unnamed["ok"] and "no version at depth 2" in unnamed["error"]["message"]
    assert current["ok"] and current["data"]["top_depth"] == 1
    # a folder never open here (or left too long ago) is not read: one line that says why
    recorded_messages.clear()
    deliver(browser, {"type": "request", "id": 5, "name": "history", "params": {}, "path": str(studio_stack.datasets)})
    (refused,) = widget_replies(recorded_messages)
    assert not refused["ok"] and "a version the browser has left" in refused["error"]["message"]
    for n in range(widget_module.LEFT_KEPT + 1):  # moving back and forth keeps only the last folders
        target = left if n % 2 == 0 else str(studio_stack.datasets / "studio-1111")
        deliver(browser, {"type": "open_version", "id": 10 + n, "folder": target})
    assert len(browser._left) <= widget_module.LEFT_KEPT


def _state_updates(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["data"]["state"] for m in messages if m["msg_type"] == "comm_msg" and m["data"].get("method") == "update"]


def test_open_marks_the_bound_version(studio_stack, recorded_messages) -> None:
    browser = VersionBrowser(studio_stack.v2, name="tbl", namespace={})
    assert browser.bound == -1 and browser.bound_name == "tbl"
    deliver(browser, {"type": "open_adata", "id": 5, "version": 1})
    assert browser.bound == 1
    assert {"bound": 1} in [{k: v for k, v in s.items() if k == "bound"} for s in _state_updates(recorded_messages)]


def test_save_moves_the_browser_onto_the_new_version(studio_copy, recorded_messages) -> None:
    namespace: dict[str, Any] = {}
    browser = VersionBrowser(studio_copy.v2, namespace=namespace)
    adata = browser.open(2)
    adata.obs["note"] = 1.5
    top = browser.save("Noted", "one column")
    assert top.parent == studio_copy.datasets and browser.path == str(top)
    assert browser.selected == browser.bound == 3
    # the front end hears the new path (it reloads the history) with the new selection
    update = _state_updates(recorded_messages)[-1]
    assert update["path"] == str(top) and update["selected"] == 3 and update["bound"] == 3
    recorded_messages.clear()
    deliver(browser, {"type": "request", "id": 9, "name": "history", "params": {}})
    (reply,) = widget_replies(recorded_messages)
    assert reply["data"]["top_depth"] == 3
    assert any(v["title"] == "Noted" and v["depth"] == 3 for v in reply["data"]["versions"])
    assert "note" in browser.adata.obs


def test_save_on_an_older_version_branches_from_it(studio_copy, recorded_messages) -> None:
    browser = VersionBrowser(studio_copy.v2, namespace={})
    adata = browser.open("Studio section")
    adata.uns["extra"] = "x"
    top = browser.save("Branch")
    assert browser.service.stack.depth == 2 and browser.service.stack.versions[1].folder == studio_copy.v1
    assert top.parent == studio_copy.datasets


def test_save_goes_onto_the_version_the_adata_was_read_from(studio_copy, recorded_messages) -> None:
    """Issue 24, item 5: selecting a sibling in the tree after binding must not move the save there."""
    sibling = VersionBrowser(studio_copy.v2, namespace={})
    branch = sibling.open("Studio section")
    branch.uns["branch"] = "b"
    sibling_top = sibling.save("Sibling")  # a second child of v1, beside v2
    namespace: dict[str, Any] = {}
    browser = VersionBrowser(studio_copy.v2, namespace=namespace)
    adata = browser.open(2)
    assert "a new version on v2" in browser.bound_message()
    adata.obs["note"] = 2.5
    deliver(browser, {"type": "open_version", "id": 7, "folder": str(sibling_top)})
    assert browser.service.stack.top.folder == sibling_top and browser.bound == -1  # v2 is not in this history
    top = browser.save("Noted")
    saved = json.loads((top / "layer.json").read_text())
    assert saved["parent"] == f"cirro:::dataset:{studio_copy.v2.name}/layer.json"
    assert [c["op"] for c in saved["changes"]] == ["set-obs"]
    assert browser.service.stack.versions[1].folder == studio_copy.v2


def test_mimebundle_has_an_escaped_text_and_html_history(studio_copy, recorded_messages) -> None:
    browser = VersionBrowser(studio_copy.v2, namespace={})
    adata = browser.open(2)
    adata.uns["x"] = 1
    browser.save('<img src=x onerror=alert(1)> & "quotes"', message="line\x1b[31m red")
    data, _metadata = browser._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html_text, plain = data["text/html"], data["text/plain"]
    assert "<img" not in html_text and "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot;" in html_text
    assert "\x1b" not in plain and "\\x1b[31m" in plain
    assert "v3" in plain and "Edit" in plain and "Studio section" in plain and "bound as adata" in plain
    assert plain.splitlines()[-1].strip().startswith("base")
