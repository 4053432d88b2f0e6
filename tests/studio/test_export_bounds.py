"""Issue 38, items 4 and 6: an export's size is checked before anything is drawn, and its
``channels`` parameter is read within a size and a depth, from Python, the command line and REST.

Figures with hostile print widths are saved as versions by the real writer on a copy of the
studio stack; REST goes through the real Jupyter server of tests/kit/rest.py.
"""

# ruff: noqa: F811 - the fixtures of kit.rest are imported by name, then requested
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.hostile import with_hostile_widths
from kit.rest import fetch, jp_server_config, rest_error, rest_get, root  # noqa: F401 - fixtures

from sds_jupyter.cli import main
from sds_jupyter.errors import FigureError, StackError
from sds_jupyter.limits import MAX_CHANNELS_PARAM_BYTES, MAX_EXPORT_PIXELS
from sds_jupyter.service.export import export_figure

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]


@pytest.fixture
def hostile(studio_copy) -> Path:
    return with_hostile_widths(studio_copy.v2, studio_copy.datasets / "wide-3333")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An empty folder for exports: it stays empty when an export is refused."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("figure", ["fig_wide", "fig_tiny", "fig_wide_chart", "fig_tiny_chart"])
def test_a_print_width_out_of_range_is_refused_before_drawing(hostile: Path, out: Path, figure: str) -> None:
    with pytest.raises(FigureError, match=r"print_width .* mm cannot be exported: give a width from 10 to 1200 mm"):
        export_figure(hostile, figure, out / "out.png")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("figure", ["fig_poster", "fig_poster_chart"])
@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_the_pixel_budget_counts_print_width_times_dpi_in_every_format(
    hostile: Path, out: Path, figure: str, suffix: str
) -> None:
    """1,200 mm at 1,200 dpi is 56,693 px across: refused whatever the format, charts through vl-convert too."""
    with pytest.raises(FigureError, match=rf"at 1200 dpi, more than the {MAX_EXPORT_PIXELS:,} px .*MAX_EXPORT_PIXELS"):
        export_figure(hostile, figure, out / f"out{suffix}", dpi=1200)
    assert list(out.iterdir()) == []
    # the same figure at 72 dpi is within the budget (1,200 mm is 3,402 px across)
    assert export_figure(hostile, figure, out / f"out{suffix}", dpi=72).stat().st_size > 0


def test_a_tall_region_counts_against_the_budget(studio_stack, out: Path) -> None:
    """89 mm wide over a region 10,000 times taller than wide: the page's height is what is too large."""
    with pytest.raises(FigureError, match="MAX_EXPORT_PIXELS"):
        export_figure(studio_stack.v2, "fig_canvas", out / "tall.png", view="0,0,1,10000")
    assert list(out.iterdir()) == []


def test_the_command_line_says_one_line_and_writes_nothing(hostile: Path, out: Path, capsys) -> None:
    for figure, dpi in (("fig_wide", 300), ("fig_tiny", 300), ("fig_poster_chart", 1200)):
        assert main(["export", "--dpi", str(dpi), str(hostile), figure, str(out / "out.png")]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and err.startswith("sds-jupyter: error: ")
    assert list(out.iterdir()) == []


def test_refusals_are_stack_errors(hostile: Path, out: Path) -> None:
    """What Python callers catch: a StackError (a ValueError)."""
    with pytest.raises(StackError):
        export_figure(hostile, "fig_wide_chart", out / "out.svg")
    with pytest.raises(ValueError):
        export_figure(hostile, "fig_tiny", out / "out.pdf")


# ------------------------------------------------------------------ REST


def _export_error(fetch, **params: Any) -> tuple[int, str]:
    code, error = rest_error(fetch, "export", path="datasets/edit-2222", figure="fig_canvas", format="png", **params)
    return code, error["message"]


def test_rest_refuses_an_export_over_the_budget(root: Path, fetch) -> None:
    with_hostile_widths(root / "datasets" / "edit-2222", root / "datasets" / "wide-3333")
    for figure, dpi in (("fig_wide", 300), ("fig_tiny_chart", 300), ("fig_poster", 1200)):
        code, error = rest_error(fetch, "export", path="datasets/wide-3333", figure=figure, format="png", dpi=dpi)
        assert code == 400 and ("print_width" in error["message"] or "MAX_EXPORT_PIXELS" in error["message"])
    data, buffers = rest_get(fetch, "export", path="datasets/wide-3333", figure="fig_poster", format="png", dpi=72)
    assert data["size"] == len(buffers[0]) > 0


@pytest.mark.parametrize(
    "channels",
    [
        "[" * 5000 + "]" * 5000,  # the issue's: a RecursionError, once
        json.dumps([[[[[{"name": "a"}]]]]]),  # valid JSON, too deep
    ],
)
def test_rest_reads_channels_within_a_depth(root: Path, fetch, channels: str) -> None:
    code, message = _export_error(fetch, channels=channels)
    assert code == 400 and "MAX_CHANNELS_PARAM_DEPTH" in message and len(message) < 400
    ok, _ = rest_get(fetch, "export", path="datasets/edit-2222", figure="fig_canvas", format="svg", channels="[]")
    assert ok["size"] > 0


def test_a_widget_message_reads_channels_within_a_size(studio_stack, recorded_messages) -> None:
    """A URL is cut at 64 KiB by the server; the widget's comm has no such bound, so the size is checked too."""
    from kit.widget import deliver, widget_replies

    from sds_jupyter.widget import VersionBrowser

    browser = VersionBrowser(studio_stack.v2, namespace={})
    for number, channels in enumerate(
        (json.dumps([{"name": "x" * MAX_CHANNELS_PARAM_BYTES}]), "[" * 100_000 + "]" * 100_000)
    ):
        params = {"figure": "fig_canvas", "format": "svg", "channels": channels}
        deliver(browser, {"type": "request", "id": number, "name": "export", "params": params})
    replies = widget_replies(recorded_messages)
    assert [reply["ok"] for reply in replies] == [False, False]
    for reply in replies:
        assert reply["error"]["kind"] == "bad-request" and "MAX_CHANNELS_PARAM_BYTES" in reply["error"]["message"]
