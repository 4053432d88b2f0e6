"""export_figure: saved figures drawn to SVG, PNG and PDF from a stack."""

from __future__ import annotations

import pytest

from sds_jupyter.studio.errors import FigureError
from sds_jupyter.studio.export import export_figure, print_width_mm

pytest_plugins = ["fixtures_service"]

MAGIC = {".svg": b"<svg", ".png": b"\x89PNG", ".pdf": b"%PDF"}


@pytest.mark.parametrize("suffix", sorted(MAGIC))
@pytest.mark.parametrize("figure", ["fig_chart", "fig_canvas", "fig_continuous"])
def test_export_draws_every_format(studio_stack, tmp_path, figure: str, suffix: str) -> None:
    out = export_figure(studio_stack.v1, figure, tmp_path / f"{figure}{suffix}")
    head = out.read_bytes()[:200]
    assert head.startswith(MAGIC[suffix]) or (suffix == ".svg" and b"<svg" in head)


def test_export_an_older_version(studio_stack, tmp_path) -> None:
    with pytest.raises(FigureError, match="cannot be drawn: not JSON"):
        export_figure(studio_stack.v2, "fig_not_json", tmp_path / "a.svg", version=1)
    with pytest.raises(FigureError, match="No figure 'fig_not_json'"):
        export_figure(studio_stack.v2, "fig_not_json", tmp_path / "a.svg")
    assert not (tmp_path / "a.svg").exists()


def test_export_refuses_unknown_formats(studio_stack, tmp_path) -> None:
    with pytest.raises(FigureError, match="use one of .svg, .png, .pdf"):
        export_figure(studio_stack.v1, "fig_chart", tmp_path / "chart.gif")


def test_print_width() -> None:
    assert print_width_mm("double") == 183 and print_width_mm(120) == 120 and print_width_mm(None) == 89
