"""Server-Timing names where a reply's derived data came from (issue 39): built now, kept on disk, or in memory.

Through the real Jupyter server: a points element (written by spatialdata) and a canvas figure's
cells. ``disk`` is made real by another process (``python -c``) that builds the entry first in the
same cache folders, as a restarted server finds it; ``built`` and ``memory`` are the server's own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from kit.points import write_points
from kit.rest import fetch, jp_server_config, root  # noqa: F401 - fixtures

from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.service import unframe_reply

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]

_BUILD_ELSEWHERE = """
import sys
from sds_jupyter.service import StackService
from sds_jupyter.service.requests import dispatch
service = StackService(sys.argv[1])
if sys.argv[2] == "points":
    dispatch(service, "points", {"element": "transcripts"})
else:
    key = dispatch(service, "canvas", {"version": 1, "figure": "fig_canvas"}).data["cells_key"]
    dispatch(service, "cells", {"version": 1, "figure": "fig_canvas", "key": key})
"""


def _built_by_another_process(path: Path, what: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BUILD_ELSEWHERE, str(path), what], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _sources(fetch, name: str, **params: Any) -> tuple[dict[str, str], Any]:  # noqa: F811
    """The reply's source entries of Server-Timing (``<source>;desc="<what>"``) by what, and the reply."""
    response = fetch(NAMESPACE, "api", name, params={k: str(v) for k, v in params.items()})
    assert response.code == 200
    found = {}
    for item in response.headers["Server-Timing"].split(", "):
        name_, _, rest = item.partition(";")
        if rest.startswith("desc="):
            found[rest.removeprefix("desc=").strip('"')] = name_
        else:
            assert rest.startswith("dur=")  # the times, as before
    return found, response


def test_points_say_built_memory_or_disk(root: Path, fetch) -> None:  # noqa: F811
    write_points(root / "pts.zarr", 3_000, seed=5)
    shutil.copytree(root / "pts.zarr", root / "pts-kept.zarr")  # another element's identity: its own entry
    _built_by_another_process(root / "pts-kept.zarr", "points")
    ask = {"element": "transcripts"}
    assert _sources(fetch, "points", path="pts.zarr", **ask)[0] == {"points": "built"}
    again, response = _sources(fetch, "points", path="pts.zarr", **ask)
    assert again == {"points": "memory"}
    info = json.loads(response.body)["index"]
    tile = {"key": info["key"], "level": 0, "x": 0, "y": 0}
    assert _sources(fetch, "points_tile", path="pts.zarr", **ask, **tile)[0] == {"points": "memory"}
    assert _sources(fetch, "points", path="pts-kept.zarr", **ask)[0] == {"points": "disk"}
    # the view's first ask: the sample, made now
    write_points(root / "pts-new.zarr", 3_000, seed=6)
    first, _ = _sources(fetch, "points", path="pts-new.zarr", **ask, sample="true")
    assert first.get("points sample") == "built"


def test_cells_say_built_memory_or_disk(root: Path, fetch) -> None:  # noqa: F811
    shutil.copytree(root / "datasets", root / "kept")  # the same stack elsewhere: its own geometry entry
    _built_by_another_process(root / "kept" / "edit-2222", "cells")
    figure = {"version": 1, "figure": "fig_canvas"}
    for folder, source in [("datasets", "built"), ("datasets", "memory"), ("kept", "disk")]:
        canvas, response = _sources(fetch, "canvas", path=f"{folder}/edit-2222", **figure)
        assert canvas.get("cells") == source, (folder, canvas)  # the canvas's bounds need the cells first
        key = unframe_reply(response.body)[0]["cells_key"]
        cells, _ = _sources(fetch, "cells", path=f"{folder}/edit-2222", **figure, key=key)
        assert cells == {"cells": "memory"}  # what the canvas found, held by this server
