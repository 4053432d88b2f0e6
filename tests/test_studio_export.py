"""export_figure: saved figures drawn to SVG, PNG and PDF from a stack."""

from __future__ import annotations

import pytest

from sds_jupyter.service.export import export_figure
from sds_jupyter.studio.errors import FigureError
from sds_jupyter.studio.export import print_width_mm

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


def _snapshot(folder) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize(
    "where",
    ["v1/overlay", "v1", "base", "base/tables", "v2/overlay/tables", "link-into-overlay"],
)
def test_export_refuses_any_output_inside_the_stack(studio_stack, tmp_path, where: str) -> None:
    """Issue 8, item 9: an export writes only outside the stack, as flatten and commit do."""
    import os

    from sds_jupyter import StackError
    from sds_jupyter.cli import main

    folders = {"v1": studio_stack.v1, "v2": studio_stack.v2, "base": studio_stack.base}
    if where == "link-into-overlay":
        os.symlink(studio_stack.v1 / "overlay", tmp_path / "looks-outside")
        out = tmp_path / "looks-outside" / "chart.svg"
    else:
        head, _, rest = where.partition("/")
        out = folders[head] / rest / "chart.svg" if rest else folders[head] / "chart.svg"
    before = _snapshot(studio_stack.datasets)
    with pytest.raises(StackError, match="part of the stack"):
        export_figure(studio_stack.v2, "fig_chart", out, version=1)
    assert main(["export", "--version", "1", str(studio_stack.v2), "fig_chart", str(out)]) == 2
    assert not out.exists()
    assert _snapshot(studio_stack.datasets) == before
