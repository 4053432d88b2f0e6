"""Issue 38, item 5: exports are drawn in a worker process, so a renderer that fails is an error reply.

A real Jupyter server runs in its own process under an address-space limit of 6 GiB, as
``prlimit --as=6GiB`` sets it (and a data-size limit of 3 GiB): under it vl-convert's V8 cannot reserve its heap and aborts the
process it runs in (before, the whole server). The chart export must answer 400 saying so, a
canvas export must still be drawn, and the server must keep answering. Export bombs (item 4)
are refused there too, each before anything is drawn.
"""

from __future__ import annotations

import io
import os
import resource
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.hostile import with_hostile_widths
from kit.limited_server import REFUSAL_PEAK_BYTES, Server, running_server

from sds_jupyter.errors import FigureError
from sds_jupyter.limits import EXPORT_WORKER_DATA_BYTES
from sds_jupyter.service import unframe_reply
from sds_jupyter.studio.worker import ExportWorker

pytest_plugins = ["kit.fixtures_service"]

#: The address space of the server: prlimit --as=6GiB, the configuration issue 38 found V8 aborting under.
EXPORT_SERVER_ADDRESS_SPACE = 6 * 1024**3
#: Its data size (prlimit --data): below the worker's own bound, which then keeps to it.
EXPORT_SERVER_DATA = 3 * 1024**3


def _limit_server() -> None:
    """In the server's process before exec: the two limits; its export worker inherits both."""
    resource.setrlimit(resource.RLIMIT_AS, (EXPORT_SERVER_ADDRESS_SPACE, EXPORT_SERVER_ADDRESS_SPACE))
    resource.setrlimit(resource.RLIMIT_DATA, (EXPORT_SERVER_DATA, EXPORT_SERVER_DATA))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, studio_stack) -> Iterator[Server]:
    import shutil

    root = tmp_path_factory.mktemp("root")
    datasets = Path(shutil.copytree(studio_stack.datasets, root / "datasets", symlinks=True))
    with_hostile_widths(datasets / "edit-2222", datasets / "wide-3333")
    with running_server(root, tmp_path_factory.mktemp("home"), "wide-3333", _limit_server) as started:
        yield started


def _finite(limits: tuple[int, int]) -> list[int]:
    return [limit for limit in limits if limit != resource.RLIM_INFINITY]


def _png_size(reply: bytes) -> tuple[int, int]:
    from PIL import Image

    _, buffers = unframe_reply(reply)
    with Image.open(io.BytesIO(buffers[0])) as image:
        return image.size


def test_a_chart_whose_renderer_aborts_is_a_400_and_the_server_stays_up(server: Server) -> None:
    for _ in range(2):  # the second export starts a new worker, which fails the same way
        status, error = server.call("export", path="datasets/edit-2222", figure="fig_chart", format="png", dpi=72)
        assert (status, error["kind"]) == (400, "figure"), error
        assert "renderer process stopped" in error["message"] and "\n" not in error["message"]
        assert server.alive()
        # a canvas is drawn by matplotlib, which works within the limit: the next worker draws it
        status, reply = server.call("export", path="datasets/edit-2222", figure="fig_canvas", format="png", dpi=72)
        assert status == 200 and _png_size(reply)[0] == round(89 / 25.4 * 72)


@pytest.mark.parametrize(
    ("figure", "params", "words"),
    [
        ("fig_wide", {}, "print_width 5000 mm"),
        ("fig_tiny_chart", {}, "print_width 1e-09 mm"),
        ("fig_poster", {"dpi": 1200}, "MAX_EXPORT_PIXELS"),
        ("fig_poster", {"format": "pdf", "dpi": 1200}, "MAX_EXPORT_PIXELS"),
        ("fig_canvas", {"channels": "[" * 5000}, "MAX_CHANNELS_PARAM_DEPTH"),
    ],
)
def test_export_bombs_are_refused_before_drawing_under_the_limit(
    server: Server, figure: str, params: dict[str, object], words: str
) -> None:
    path = "datasets/edit-2222" if figure == "fig_canvas" else "datasets/wide-3333"
    query = {"format": "png", **params}
    status, error, peak = server.peak_of("export", path=path, figure=figure, **query)
    assert status == 400 and words in error["message"], error
    assert peak < REFUSAL_PEAK_BYTES, f"the server rose by {peak} bytes"
    assert server.alive()


# ------------------------------------------------------------------ the worker itself


def test_a_worker_that_died_between_exports_is_replaced(studio_stack) -> None:
    """The next drawing starts a new worker and gives the same bytes; refusals come back as FigureErrors."""
    from sds_jupyter.service import StackService
    from sds_jupyter.service.features.figures import figure_drawing

    worker = ExportWorker()
    _, drawing = figure_drawing(StackService(studio_stack.v2).session, 2, "fig_chart")
    try:
        first = worker.draw("chart", drawing, ".svg", 89.0, "Chart", 72)
        pid = worker.pid
        assert pid is not None and first.startswith(b"<svg")
        limits = Path(f"/proc/{pid}/limits").read_text()
        data = next(line.split()[3] for line in limits.splitlines() if line.startswith("Max data size"))
        assert int(data) == min([EXPORT_WORKER_DATA_BYTES, *_finite(resource.getrlimit(resource.RLIMIT_DATA))])
        os.kill(pid, signal.SIGKILL)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # until it has died, leaving it to the worker to reap
        assert worker.draw("chart", drawing, ".svg", 89.0, "Chart", 72) == first
        assert worker.pid not in (None, pid)
        with pytest.raises(FigureError, match="MAX_EXPORT_PIXELS"):
            worker.draw("chart", drawing, ".png", 89.0, "Chart", 100_000)
    finally:
        worker.close()
    assert worker.pid is None
