"""The Jupyter server the REST tests share: the extension enabled, a root holding the studio stack, and calls to its API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.service import unframe_reply


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"sds_jupyter.server": True}}}


@pytest.fixture
def root(jp_root_dir: Path, studio_stack, orphan_version, named_datasets, outside_datasets, tmp_path: Path) -> Path:
    """The server root: the studio stack, an orphan version, named datasets, and links out (to
    ``tmp_path/outside``, itself a link to ``outside_datasets``: a whole stack beside the root)."""
    shutil.copytree(studio_stack.datasets, jp_root_dir / "datasets")
    shutil.copytree(orphan_version.parent, jp_root_dir / "orphan")
    shutil.copytree(named_datasets[0], jp_root_dir / "named")
    outside = tmp_path / "outside"
    outside.symlink_to(outside_datasets, target_is_directory=True)
    (jp_root_dir / "link-out").symlink_to(outside / "edit-2222", target_is_directory=True)
    (jp_root_dir / "escape").mkdir()
    for name in ("edit-2222", "studio-1111"):
        (jp_root_dir / "escape" / name).symlink_to(outside / name, target_is_directory=True)
    (jp_root_dir / "escape" / "base-0000").symlink_to(outside / "base-0000", target_is_directory=True)
    return jp_root_dir


@pytest.fixture
def fetch(jp_fetch, jp_asyncio_loop) -> Any:
    """jp_fetch run to completion on the server's loop.

    Tests stay synchronous: the project runs pytest-asyncio in auto mode, which
    would run ``async def`` tests on its own loop, away from the test server's.
    """

    def run(*parts: str, **kwargs: Any) -> Any:
        return jp_asyncio_loop.run_until_complete(jp_fetch(*parts, **kwargs))

    return run


def rest_get(fetch, name: str, **params: Any) -> Any:
    response = fetch(NAMESPACE, "api", name, params={k: str(v) for k, v in params.items()})
    assert response.code == 200
    if response.headers["Content-Type"] == "application/octet-stream":
        return unframe_reply(response.body)
    return json.loads(response.body)


def rest_error(fetch, name: str, method: str = "GET", body: Any = None, **params: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(HTTPClientError) as info:
        kwargs = {"method": method, "body": json.dumps(body)} if method == "POST" else {"params": params}
        fetch(NAMESPACE, "api", name, **kwargs)
    response = info.value.response
    assert response is not None, f"{name}: refused without a reply body"
    return info.value.code, json.loads(response.body)


def with_title(root: Path, folder: str, title: str) -> str:
    """A copy of the top version under ``datasets/<folder>`` whose manifest carries ``title``."""
    target = root / "datasets" / folder
    shutil.copytree(root / "datasets" / "edit-2222", target)
    manifest = json.loads((target / "layer.json").read_text())
    manifest["title"] = title
    (target / "layer.json").write_text(json.dumps(manifest))
    return f"datasets/{folder}"
