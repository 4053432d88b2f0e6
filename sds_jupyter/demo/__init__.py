"""Demo stacks, built with no download.

``build_demo(out)`` writes a Xenium-like run of 100,000 cells (an 8192 x 8192
image pyramid, cell polygons, 300 genes) and the versions an analysis of it saves;
``build_demo(out, small=True)`` writes the 26-cell blobs stack that tests and CI use.
"""

from __future__ import annotations

from pathlib import Path

from sds_jupyter.demo.ids import demo_dataset_id
from sds_jupyter.errors import needs_extra

__all__ = ["build_demo", "demo_dataset_id"]


def build_demo(out: str | Path, *, small: bool = False, n_cells: int | None = None, side: int | None = None) -> Path:
    """Build a demo under ``out`` (a new folder) and return the top version's folder.

    ``n_cells`` and ``side`` size the Xenium-like demo (defaults: 100,000 cells, 8192 px),
    so that the same builder makes the million-cell variant the view is measured on.
    """
    needs_extra("spatialdata", "the demo stacks")
    if small:
        from sds_jupyter.demo.small import build_small_demo

        return build_small_demo(out)
    from sds_jupyter.demo.xenium import build_xenium_demo

    sizes = {k: v for k, v in (("n_cells", n_cells), ("side", side)) if v is not None}
    return build_xenium_demo(Path(out), **sizes)
