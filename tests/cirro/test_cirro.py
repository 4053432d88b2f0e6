"""Upload to and fetch from Cirro through the real ``cirro`` SDK, against the stand-in of ``cirro_standin.py``.

The SDK is not mocked: it talks HTTPS to the stand-in's endpoints and S3 to its moto server. The
command line runs in this process (``run_cli``) where what it does is checked; upload and fetch each
keep tests in a real process (a refusal in one line, a killed fetch, the read-only mount).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cirro", reason="the cirro extra is not installed")
pytest.importorskip("boto3")
pytest.importorskip("jwt")
pytest.importorskip("moto")
from kit.cirro_standin import PROJECT, StandIn, running  # noqa: E402
from kit.cirro_standin import download_as_a_colleague as _download_as_a_colleague  # noqa: E402
from kit.command import cli_process, run_cli  # noqa: E402
from kit.rest import jp_server_config  # noqa: F401 - fixture

from sds_jupyter import open_anndata, save_version  # noqa: E402
from sds_jupyter.errors import CirroError, StackError, UnsafePathError  # noqa: E402
from sds_jupyter.stack.exchange import fetch_missing, upload_version  # noqa: E402
from sds_jupyter.stack.manifest import read_manifest  # noqa: E402
from sds_jupyter.stack.refs import CirroRef  # noqa: E402

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]


@pytest.fixture
def cirro(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    """The stand-in Cirro and S3, with the environment the SDK reads pointing at them."""
    with running(tmp_path) as (state, env):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield state


@pytest.fixture
def workspace(demo_top: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``datasets/`` named by title with the folder map, and a versions folder: a Cirro workspace's layout."""
    return _layout(tmp_path / "home", demo_top, monkeypatch)


def _layout(home: Path, demo_top: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The workspace's layout (:func:`kit.workspace.workspace_layout`) with its Cirro download cache in ``home``."""
    from kit.workspace import workspace_layout

    monkeypatch.setenv("SDS_CIRRO_CACHE", str(home / "cache"))
    return workspace_layout(home, demo_top, monkeypatch)


def _save(on: Path, column: str, title: str, into: Path) -> Path:
    adata = open_anndata(on)
    adata.obs[column] = adata.obs_names.str.len().astype("int64")
    return save_version(on, adata, title=title, into=into)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_cli_uploads_a_saved_version_as_a_cirro_dataset(cirro: StandIn, workspace: dict) -> None:
    saved = _save(workspace["top"], "note", "Margins reviewed", workspace["versions"])
    result = run_cli("upload", str(saved))
    assert result.returncode == 0, result.stderr
    [dataset_id] = cirro.datasets
    assert result.stdout.strip() == f"uploaded {saved} as Cirro dataset {dataset_id}"
    created = cirro.datasets[dataset_id]
    assert created["name"] == "Margins reviewed" and created["processId"] == "spatialdata-version"
    local = _files(saved)
    assert sorted(created["expectedFiles"]) == sorted(local)
    for name, content in local.items():  # the layer.json names the mounted parent by its Cirro ID: sent unchanged
        assert cirro.uploaded(dataset_id, name) == content
    assert json.loads(cirro.uploaded(dataset_id, "layer.json"))["parent"] == (
        f"cirro:::dataset:{workspace['top_id']}/layer.json"
    )

    again = run_cli("upload", str(saved))  # recorded: a second upload is refused, in one line
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "already in Cirro" in again.stderr
    assert len(cirro.datasets) == 1


def test_a_version_on_a_not_yet_uploaded_one_resolves_once_both_are_in_cirro(
    cirro: StandIn, workspace: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _save(workspace["top"], "first", "First", workspace["versions"])
    second = _save(first, "second", "Second", workspace["versions"])
    assert read_manifest(second / "layer.json").parent == f"cirro:::dataset:{first.name}/layer.json"
    second_before = _files(second)

    with pytest.raises(StackError, match=rf"version {first.name} .* is not in Cirro yet: upload .* first"):
        upload_version(second)
    assert cirro.datasets == {}

    first_id = upload_version(first)
    second_id = upload_version(second)
    assert json.loads(cirro.uploaded(second_id, "layer.json"))["parent"] == f"cirro:::dataset:{first_id}/layer.json"
    assert _files(second) == second_before  # the local version is never rewritten

    # A colleague's workspace: the original datasets mounted, the second version downloaded by its
    # Cirro ID; its parent (Cirro's ID for "First") is fetched on request, and the chain reads back.
    colleague = tmp_path / "colleague"
    _download_as_a_colleague(cirro, second_id, colleague / second_id)
    monkeypatch.setenv("SDS_VERSIONS_DIR", str(tmp_path / "colleague-versions"))
    result = run_cli("fetch", str(colleague / second_id))
    assert result.returncode == 0, result.stderr
    cache = Path(os.environ["SDS_CIRRO_CACHE"])
    assert f"fetched {cache / first_id}" in result.stdout
    assert sorted(p.name for p in cache.iterdir()) == [first_id]  # no partial folder left behind
    mine, theirs = open_anndata(second), open_anndata(colleague / second_id)
    assert list(theirs.obs["first"]) == list(mine.obs["first"]) and list(theirs.obs["second"]) == list(
        mine.obs["second"]
    )
    assert run_cli("fetch", str(colleague / second_id)).stdout.strip() == "nothing missing"


def test_browser_upload_sends_the_selected_version(cirro: StandIn, workspace: dict) -> None:
    from sds_jupyter.widget import VersionBrowser

    saved = _save(workspace["top"], "widget", "From the panel", workspace["versions"])
    browser = VersionBrowser(saved, namespace={})
    before = _tree_node(browser.service, saved.name)
    dataset_id = browser.upload()
    assert cirro.datasets[dataset_id]["name"] == "From the panel"
    assert cirro.uploaded(dataset_id, "layer.json") == (saved / "layer.json").read_bytes()
    # the panel's tree stops marking it once the upload is recorded
    assert before.get("not_in_cirro") is True and "not_in_cirro" not in _tree_node(browser.service, saved.name)


def _tree_node(service: Any, dataset_id: str) -> dict[str, Any]:
    from sds_jupyter.service import dispatch

    reply = dispatch(service, "tree", {})
    tree = json.loads(reply.data) if isinstance(reply.data, (bytes, str)) else reply.data
    [node] = [n for n in tree["nodes"] if n["dataset_id"] == dataset_id]
    return node


def test_a_listing_that_climbs_out_of_the_cache_is_refused_and_nothing_is_written(
    cirro: StandIn, workspace: dict, tmp_path: Path
) -> None:
    first = _save(workspace["top"], "first", "First", workspace["versions"])
    first_id = upload_version(first)
    second = _save(first, "second", "Second", workspace["versions"])
    second_id = upload_version(second)
    colleague = tmp_path / "colleague" / second_id
    colleague.mkdir(parents=True)
    (colleague / "layer.json").write_bytes(cirro.uploaded(second_id, "layer.json"))
    cirro.listed_extra = [{"path": "../../escaped.txt", "size": 3}]
    with pytest.raises(UnsafePathError, match=f"file of dataset {first_id}"):
        fetch_missing(colleague)
    cache = Path(os.environ["SDS_CIRRO_CACHE"])
    assert list(cache.iterdir()) == [] and not list(tmp_path.rglob("escaped.txt"))


def test_a_fetch_folder_inside_the_mounted_datasets_is_refused(
    cirro: StandIn, workspace: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orphan = tmp_path / "elsewhere" / "orphan"
    shutil.copytree(_save(workspace["top"], "x", "X", workspace["versions"]), orphan)
    (orphan / "layer.json").write_text(
        (orphan / "layer.json").read_text().replace(workspace["top_id"], "0000-not-attached")
    )
    monkeypatch.setenv("SDS_CIRRO_CACHE", str(workspace["datasets"] / "cache"))
    result = run_cli("fetch", str(orphan))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "inside the datasets folder" in result.stderr and not (workspace["datasets"] / "cache").exists()


def test_an_unreachable_cirro_is_one_line_in_the_users_words(
    cirro: StandIn, workspace: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = _save(workspace["top"], "note", "Note", workspace["versions"])
    monkeypatch.setenv("CIRRO_BASE_URL", "localhost:9")  # the discard port: nothing listens
    result = cli_process("upload", str(saved))  # the upload's test in a real process (and fetch's below)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(
        "sds-jupyter: error: connecting to Cirro failed: Cirro at localhost:9 cannot be reached; "
        "check that address (CIRRO_BASE_URL) and the network, then try again"
    ), result.stderr
    assert "Failed connecting" not in result.stderr and "Error:" not in result.stderr
    with pytest.raises(CirroError, match="cannot be reached"):
        upload_version(saved)


def test_a_bad_token_says_to_sign_in_again(cirro: StandIn, workspace: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41, item 2: not "DecodeError: Not enough segments"."""
    saved = _save(workspace["top"], "note", "Note", workspace["versions"])
    monkeypatch.setenv("CIRRO_ACCESS_TOKEN", "not-a-token")
    result = run_cli("upload", str(saved))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "Cirro did not accept your sign-in" in result.stderr and "CIRRO_ACCESS_TOKEN" in result.stderr
    assert "DecodeError" not in result.stderr and "segments" not in result.stderr
    assert cirro.datasets == {}


def test_no_project_chosen_is_said_with_what_to_do(
    cirro: StandIn, workspace: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = _save(workspace["top"], "note", "Note", workspace["versions"])
    monkeypatch.delenv("CIRRO_PROJECT_ID")
    result = run_cli("upload", str(saved))
    assert result.returncode == 2
    assert (
        result.stderr
        == "sds-jupyter: error: no Cirro project chosen: pass --project (project=) or set CIRRO_PROJECT_ID\n"
    )
    # a project Cirro does not know: said so, with what to do, and nothing recorded
    with pytest.raises(CirroError, match=r"creating the Cirro dataset failed: .*; choose another project$"):
        upload_version(saved, project="proj-nope")
    assert cirro.datasets == {} and not (workspace["versions"] / ".sds-uploaded").exists()


def test_sds_save_on_a_read_only_mount_then_upload(cirro: StandIn, workspace: dict) -> None:
    """The issue's whole path: %sds_save with the datasets mounted read-only, the panel's tree, the upload."""
    from kit.workspace import magic_save_command, read_only_mount, tree_hash

    from sds_jupyter.service import StackService

    datasets, versions = workspace["datasets"], workspace["versions"]
    before = tree_hash(datasets)
    service = StackService(workspace["top"])
    listed = _fingerprint(service)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = read_only_mount(datasets, magic_save_command(workspace["top"], "Saved on the mount"), env)
    assert result.returncode == 0, result.stderr
    [saved] = [p for p in versions.iterdir() if not p.name.startswith(".")]
    assert list(open_anndata(saved).obs["by_magic"].unique()) == [2.0]
    assert _fingerprint(service) != listed and _tree_node(service, saved.name)["not_in_cirro"] is True

    upload = read_only_mount(datasets, [sys.executable, "-m", "sds_jupyter", "upload", str(saved)], env)
    assert upload.returncode == 0, upload.stderr
    [dataset_id] = cirro.datasets
    assert cirro.datasets[dataset_id]["name"] == "Saved on the mount"
    assert "not_in_cirro" not in _tree_node(service, saved.name)

    # A colleague with the same mount gets a version saved on it from Cirro; its parent, not attached,
    # is fetched (under the read-only mount) into the fetch folder.
    on_top = upload_version(_save(saved, "on_top", "On top", versions))
    colleague = workspace["datasets"].parent / "colleague" / on_top
    _download_as_a_colleague(cirro, on_top, colleague)
    env["SDS_VERSIONS_DIR"] = str(workspace["datasets"].parent / "colleague-versions")
    fetch = read_only_mount(datasets, [sys.executable, "-m", "sds_jupyter", "fetch", str(colleague)], env)
    assert fetch.returncode == 0, fetch.stderr
    assert f"fetched {Path(os.environ['SDS_CIRRO_CACHE']) / dataset_id}" in fetch.stdout
    assert tree_hash(datasets) == before


def _fingerprint(service: Any) -> str:
    from sds_jupyter.service import dispatch

    reply = dispatch(service, "fingerprint", {})
    return str((json.loads(reply.data) if isinstance(reply.data, (bytes, str)) else reply.data)["fingerprint"])


# -- the panel's "Fetch from Cirro": POST api/fetch on a real Jupyter server -----------------------


def test_the_panel_uploads_then_a_fresh_workspace_fetches_and_opens_it(
    cirro: StandIn, demo_top: Path, jp_root_dir: Path, jp_fetch, jp_asyncio_loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41, the workspace flow over the REST transport: upload -> the tag changes -> fetch elsewhere -> it opens."""
    from kit.contract import reply_validator
    from tornado.httpclient import HTTPClientError

    from sds_jupyter.server.handlers import NAMESPACE

    def call(name: str, **kwargs: Any) -> Any:
        response = jp_asyncio_loop.run_until_complete(jp_fetch(NAMESPACE, "api", name, **kwargs))
        answer = json.loads(response.body)
        assert not list(reply_validator(name).iter_errors(answer)), f"{name} reply does not match its type: {answer}"
        return answer

    def post(name: str, **body: Any) -> Any:
        return call(name, method="POST", body=json.dumps(body))

    def tag(path: str, dataset_id: str) -> bool:
        [node] = [n for n in call("tree", params={"path": path})["nodes"] if n["dataset_id"] == dataset_id]
        return bool(node.get("not_in_cirro"))

    layout = _layout(jp_root_dir / "home", demo_top, monkeypatch)
    first = _save(layout["top"], "first", "First", layout["versions"])
    second = _save(first, "second", "Second", layout["versions"])
    path_2 = f"home/sds-versions/{second.name}"

    # the projects to pick from, the workspace's own to preselect
    projects = call("cirro_projects", params={"path": path_2})
    assert projects == {
        "projects": [{"id": "proj-0", "name": "A pilot"}, {"id": PROJECT, "name": "Breast atlas"}],
        "default": PROJECT,
    }
    # the parent chain is checked first: "Second" cannot go up before "First", and nothing is made
    with pytest.raises(HTTPClientError) as refused:
        call("cirro_plan", params={"path": path_2})
    assert refused.value.code == 400
    message = json.loads(refused.value.response.body)["message"]
    assert f"version {first.name} in" in message and message.endswith(": it is “First”")
    with pytest.raises(HTTPClientError):
        post("cirro_upload", path=path_2, project=PROJECT)
    assert cirro.datasets == {}
    # an upload is a write: never a GET
    with pytest.raises(HTTPClientError) as by_get:
        call("cirro_upload", params={"path": path_2, "project": PROJECT})
    assert by_get.value.code in (404, 405)

    path_1 = f"home/sds-versions/{first.name}"
    plan = call("cirro_plan", params={"path": path_1})
    assert plan["name"] == "First" and plan["n_files"] == len(_files(first)) and plan["n_bytes"] > 0
    assert tag(path_1, first.name)
    first_id = post("cirro_upload", path=path_1, project=PROJECT)["dataset_id"]
    assert not tag(path_1, first.name)  # the ID is recorded: the tag goes
    second_id = post("cirro_upload", path=path_2, project=PROJECT, version=second.name)["dataset_id"]
    assert cirro.datasets[second_id]["name"] == "Second" and not tag(path_2, second.name)

    # a fresh workspace that has only "Second": its missing parent is fetched, and the version opens whole
    _download_as_a_colleague(cirro, second_id, jp_root_dir / "fresh" / second_id)
    monkeypatch.setenv("SDS_CIRRO_CACHE", str(jp_root_dir / "fresh-cache"))
    fresh = f"fresh/{second_id}"
    broken = call("history", params={"path": fresh})
    assert broken["error"]["dataset_id"] == first_id
    assert post("cirro_fetch", path=fresh, project=PROJECT) == {"fetched": [first_id]}
    history = call("history", params={"path": fresh})
    assert not history.get("error") and [v["title"] for v in history["versions"]][:2] == ["Second", "First"]
    assert history["base"]["dataset_id"] is not None
    assert list(open_anndata(jp_root_dir / "fresh" / second_id).obs["second"]) == list(
        open_anndata(second).obs["second"]
    )


def test_the_panel_says_a_cirro_failure_in_the_users_words(
    cirro: StandIn, demo_top: Path, jp_root_dir: Path, jp_fetch, jp_asyncio_loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tornado.httpclient import HTTPClientError

    from sds_jupyter.server.handlers import NAMESPACE

    layout = _layout(jp_root_dir / "home", demo_top, monkeypatch)
    saved = _save(layout["top"], "note", "Note", layout["versions"])
    monkeypatch.setenv("CIRRO_ACCESS_TOKEN", "not-a-token")
    with pytest.raises(HTTPClientError) as failed:
        jp_asyncio_loop.run_until_complete(
            jp_fetch(NAMESPACE, "api", "cirro_projects", params={"path": f"home/sds-versions/{saved.name}"})
        )
    answer = json.loads(failed.value.response.body)
    assert failed.value.code == 400 and answer["kind"] == "cirro"
    assert answer["message"].startswith("connecting to Cirro failed: Cirro did not accept your sign-in")


def test_a_failed_upload_removes_the_half_made_dataset_and_records_nothing(cirro: StandIn, workspace: dict) -> None:
    saved = _save(workspace["top"], "note", "Note", workspace["versions"])
    cirro.bucket = "a-bucket-that-does-not-exist"
    # A real process: in this one the SDK's S3 calls meet moto's hooks (imported for the stand-in), and
    # it retries each failed file ten times, waiting up to a minute between (about 4 min in all).
    result = cli_process("upload", str(saved))
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("sds-jupyter: error: uploading the overlay failed") and "Traceback" not in result.stderr
    assert "bucket does not exist" in last, last  # why it failed (S3's reason, after the paths), not only that it did
    assert cirro.datasets == {} and len(cirro.deleted) == 1
    assert not (workspace["versions"] / ".sds-uploaded").exists()


def test_a_mounted_dataset_is_not_uploaded_again(cirro: StandIn, workspace: dict) -> None:
    with pytest.raises(StackError, match="is a mounted Cirro dataset already; nothing to upload"):
        upload_version(workspace["top"])
    assert cirro.datasets == {}


def test_an_overlay_holding_a_symbolic_link_is_not_uploaded(cirro: StandIn, workspace: dict, tmp_path: Path) -> None:
    saved = _save(workspace["top"], "note", "Note", workspace["versions"])
    secret = tmp_path / "secret.txt"
    secret.write_text("not for Cirro")
    overlay = saved / read_manifest(saved / "layer.json").overlay
    victim = next(p for p in sorted(overlay.rglob("*")) if p.is_file())
    victim.unlink()
    victim.symlink_to(secret)
    with pytest.raises(UnsafePathError, match="is a symbolic link or special file; upload refused"):
        upload_version(saved)
    assert cirro.datasets == {}


def test_the_widget_uploads_and_fetches_through_its_comm(
    cirro: StandIn, workspace: dict, tmp_path: Path, recorded_messages: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41, item 1 in a notebook: the widget's app sends the same requests as the panel, over the comm."""
    from kit.widget import deliver, widget_replies

    from sds_jupyter.widget import VersionBrowser

    saved = _save(workspace["top"], "widget", "From the widget", workspace["versions"])
    browser = VersionBrowser(saved, namespace={})
    deliver(browser, {"type": "request", "id": 1, "name": "cirro_projects", "params": {}})
    deliver(browser, {"type": "request", "id": 2, "name": "cirro_plan", "params": {}})
    deliver(browser, {"type": "request", "id": 3, "name": "cirro_upload", "params": {"project": PROJECT}})
    projects, plan, uploaded = widget_replies(recorded_messages)
    assert projects["ok"] and projects["data"]["default"] == PROJECT
    assert plan["ok"] and plan["data"]["name"] == "From the widget"
    assert uploaded["ok"] and uploaded["data"]["dataset_id"] in cirro.datasets
    assert "not_in_cirro" not in _tree_node(browser.service, saved.name)

    # a colleague's notebook: the version as downloaded, its parent fetched through the widget's comm
    on_top = upload_version(_save(saved, "on_top", "On top", workspace["versions"]))
    _download_as_a_colleague(cirro, on_top, tmp_path / "colleague" / on_top)
    monkeypatch.setenv("SDS_VERSIONS_DIR", str(tmp_path / "colleague-versions"))
    colleague = VersionBrowser(tmp_path / "colleague" / on_top, namespace={})
    recorded_messages.clear()
    deliver(colleague, {"type": "request", "id": 4, "name": "cirro_fetch", "params": {"project": PROJECT}})
    (fetched,) = widget_replies(recorded_messages)
    assert fetched["ok"] and fetched["data"] == {"fetched": [uploaded["data"]["dataset_id"]]}


# -- issue 38 item 9: a fetch of a huge listing is bounded, tells its progress, and cleans up when killed


def _colleague_of(cirro: StandIn, workspace: dict, tmp_path: Path, pad: int = 0) -> tuple[Path, str]:
    """A version downloaded by a colleague whose parent ("First", with ``pad`` small files more) is only in Cirro."""
    first = _save(workspace["top"], "first", "First", workspace["versions"])
    first_id = upload_version(first)
    for number in range(pad):
        cirro.s3.put_object(Bucket=cirro.bucket, Key=f"datasets/{first_id}/data/pad/{number}", Body=b"x")
    second_id = upload_version(_save(first, "second", "Second", workspace["versions"]))
    colleague = tmp_path / "colleague" / second_id
    colleague.mkdir(parents=True)
    (colleague / "layer.json").write_bytes(cirro.uploaded(second_id, "layer.json"))
    return colleague, first_id


def test_a_listing_past_the_bound_is_refused_before_a_file_is_fetched(
    cirro: StandIn, workspace: dict, tmp_path: Path
) -> None:
    from sds_jupyter.limits import MAX_FETCH_FILES

    colleague, first_id = _colleague_of(cirro, workspace, tmp_path)
    cirro.listed_extra = [{"path": f"data/pad/{number}", "size": 1} for number in range(MAX_FETCH_FILES)]
    with pytest.raises(
        StackError, match=rf"dataset {first_id} lists 100,0\d\d files; at most 100,000 \(MAX_FETCH_FILES\)"
    ):
        fetch_missing(colleague)
    assert list(Path(os.environ["SDS_CIRRO_CACHE"]).iterdir()) == []


def test_the_cli_fetch_tells_its_progress_and_a_killed_one_leaves_nothing(
    cirro: StandIn, workspace: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    # 300 files more: about five batches of FETCH_BATCH (64), so the kill after the first lands with four to come
    colleague, first_id = _colleague_of(cirro, workspace, tmp_path, pad=300)
    monkeypatch.setenv("SDS_VERSIONS_DIR", str(tmp_path / "colleague-versions"))
    cache = Path(os.environ["SDS_CIRRO_CACHE"])
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    command = [sys.executable, "-m", "sds_jupyter", "fetch", str(colleague)]
    killed = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert killed.stderr is not None
    before = []
    for line in iter(killed.stderr.readline, ""):  # until the first batch is in: the download is under way
        if line.startswith("fetching"):
            break
        before.append(line)
    assert line.startswith(f"fetching {first_id}: 64 of "), (line, before)
    killed.send_signal(signal.SIGTERM)
    _, rest = killed.communicate(timeout=120)
    assert killed.returncode == 130 and "interrupted" in rest, rest
    assert list(cache.iterdir()) == [], "the hidden partial folder is removed"

    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("fetching")]
    assert lines[0].startswith(f"fetching {first_id}: 64 of ") and lines[-1].endswith(" files")
    total = lines[-1].split(" of ")[1].removesuffix(" files")
    assert lines[-1] == f"fetching {first_id}: {total} of {total} files" and len(lines) <= 12
    assert "\r" not in done.stderr and "\x1b" not in done.stderr  # not a terminal: no control sequences
    assert sorted(p.name for p in cache.iterdir()) == [first_id]


# -- issue 41: a local copy of a Cirro dataset is not uploaded as if it were new


def _plan_over_the_comm(browser: Any, messages: list) -> dict[str, Any]:
    from kit.widget import deliver, widget_replies

    messages.clear()
    deliver(browser, {"type": "request", "id": 1, "name": "cirro_plan", "params": {}})
    (reply,) = widget_replies(messages)
    return reply


def test_a_hand_downloaded_copy_of_a_cirro_version_is_not_offered_as_new(
    cirro: StandIn, workspace: dict, tmp_path: Path, recorded_messages: list
) -> None:
    """A version downloaded by hand (named by its Cirro ID, outside the folder map): Cirro says it has it."""
    from sds_jupyter.widget import VersionBrowser

    first_id = upload_version(_save(workspace["top"], "first", "First", workspace["versions"]))
    copy = tmp_path / "home" / "work" / first_id
    _download_as_a_colleague(cirro, first_id, copy)
    browser = VersionBrowser(copy, namespace={})
    assert _tree_node(browser.service, first_id).get("not_in_cirro") is True  # the folder alone cannot tell

    reply = _plan_over_the_comm(browser, recorded_messages)
    assert (
        reply["ok"]
        and reply["data"]["copy_of"] == first_id
        and reply["data"]["said"]
        == (
            f"“First” is in Cirro already: this folder is a copy of Cirro dataset {first_id}; "
            "nothing to upload (a version saved on it can be uploaded)"
        )
    )
    with pytest.raises(StackError, match=f"version {first_id} is already in Cirro; nothing to upload"):
        upload_version(copy, project=PROJECT)  # recorded: the CLI's upload refuses it too
    elsewhere = tmp_path / "elsewhere" / first_id  # another copy, not recorded: the CLI asks Cirro too
    _download_as_a_colleague(cirro, first_id, elsewhere)
    with pytest.raises(
        StackError, match=f"“First” is in Cirro already: this folder is a copy of Cirro dataset {first_id}"
    ):
        upload_version(elsewhere, project=PROJECT)
    assert list(cirro.datasets) == [first_id]  # nothing made
    assert "not_in_cirro" not in _tree_node(browser.service, first_id)  # Cirro's answer is recorded: the tag goes

    # a version saved on the copy names Cirro's ID for it, and goes up as it is
    on_copy = _save(copy, "more", "More", workspace["versions"])
    on_copy_id = upload_version(on_copy)
    assert json.loads(cirro.uploaded(on_copy_id, "layer.json"))["parent"] == f"cirro:::dataset:{first_id}/layer.json"


def test_a_version_on_a_store_copied_by_hand_is_refused_saying_what_to_do(
    cirro: StandIn, workspace: dict, recorded_messages: list
) -> None:
    """Its layer.json would name the copy's folder, a dataset Cirro does not know: it would never open there."""
    from sds_jupyter.widget import VersionBrowser

    base_id = CirroRef.parse(read_manifest(workspace["top"] / "layer.json").base or "").dataset_id
    mounted_base = workspace["datasets"] / json.loads(os.environ["SDS_CIRRO_DATASETS"])[base_id]
    copy = workspace["datasets"].parent / "work" / "xenium-copy"
    shutil.copytree(mounted_base, copy)
    [store] = [p for p in copy.iterdir() if ".zarr" in p.name]
    saved = _save(store, "mine", "Mine", copy.parent)
    assert read_manifest(saved / "layer.json").parent == f"cirro:::dataset:xenium-copy/{store.name}"
    browser = VersionBrowser(saved, namespace={})
    assert _tree_node(browser.service, saved.name)["not_in_cirro"] is True

    reply = _plan_over_the_comm(browser, recorded_messages)
    assert not reply["ok"] and reply["error"]["message"] == (
        f"this version sits on the copy in {copy}, which Cirro does not know as dataset xenium-copy, so it would "
        "not open in Cirro; nothing was sent. Open the dataset from Cirro instead (attach it to the workspace, or "
        "fetch it by its Cirro ID), save your change on it, and upload that version"
    )
    with pytest.raises(StackError, match="which Cirro does not know as dataset xenium-copy"):
        upload_version(saved, project=PROJECT)
    assert cirro.datasets == {} and not (copy.parent / ".sds-uploaded").exists()


def test_a_version_fetched_from_cirro_is_in_cirro(cirro: StandIn, workspace: dict, tmp_path: Path) -> None:
    """A version in the fetch folder came from Cirro by its ID: no "not yet in Cirro" tag, and no upload."""
    from sds_jupyter.widget import VersionBrowser

    colleague, first_id = _colleague_of(cirro, workspace, tmp_path)
    assert fetch_missing(colleague, project=PROJECT) == [Path(os.environ["SDS_CIRRO_CACHE"]) / first_id]
    fetched = Path(os.environ["SDS_CIRRO_CACHE"]) / first_id
    browser = VersionBrowser(fetched, namespace={})
    assert "not_in_cirro" not in _tree_node(browser.service, first_id)
    with pytest.raises(StackError, match=rf"was fetched from Cirro: it is Cirro dataset {first_id} already"):
        upload_version(fetched, project=PROJECT)
