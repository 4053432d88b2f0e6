"""The REST replies' coding beside tornado's own ``compress_response``: never coded twice."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.service import unframe_reply

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """The server as a deployment that turned tornado's gzip on would run it."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"sds_jupyter.server": True},
            "tornado_settings": {"compress_response": True},
        }
    }


def test_tornado_compress_response_and_ours_code_a_reply_once(
    jp_root_dir: Path, demo_top: Path, jp_fetch, jp_asyncio_loop
) -> None:
    shutil.copytree(demo_top.parent, jp_root_dir / "demo")
    path = f"demo/{demo_top.name}"

    def get(name: str, **params: str) -> Any:
        return jp_asyncio_loop.run_until_complete(
            jp_fetch(
                NAMESPACE,
                "api",
                name,
                params={"path": path, **params},
                headers={"Accept-Encoding": "gzip"},
                decompress_response=False,
            )
        )

    figures = get("figures")
    assert figures.headers["Content-Encoding"] == "gzip"
    listed = json.loads(gzip.decompress(figures.body))  # one layer of gzip, then the JSON itself
    figure = next(f["id"] for f in listed["figures"] if f["kind"] == "canvas")
    planes = get("channels", figure=figure)
    assert planes.headers["Content-Encoding"] == "gzip"
    data, buffers = unframe_reply(gzip.decompress(planes.body))
    assert len(buffers) == len(data["channels"]) >= 1
