"""A tissue figure exported to SVG with its cells as vector shapes (A) and as one picture (B).

Data: the tissue demo (``build_xenium_demo``: polygons, an image pyramid, micrometres)
at N cells (100,000; ``--quick`` 10,000), its ``fig-cell-types`` figure, the whole
section in view. A draws every cell as a vector polygon (the vector cell limit raised
above N); B draws them as one 300 dpi picture inside the vector file (the limit below
N), which the export does above VECTOR_CELL_LIMIT cells. Both go through
``render_export`` on one warm service, so the figure's data is read once.

Besides the times, the file sizes are printed (and the bytes of A's cell group per cell): the reason the
export stops drawing cells as vectors at a count is the size and the weight of the
file in an editor, not the time to write it.

No goal on the ratio: the numbers back the stated limit in studio/render.py.
"""

from __future__ import annotations

from pathlib import Path

from _common import alternate, begin, comparison, emit, workdir


def main() -> None:
    args = begin(__doc__)
    n_cells = 10_000 if args.quick else 100_000
    rounds = args.rounds or (2 if args.quick else 3)
    from sds_jupyter.demo.xenium import build_xenium_demo
    from sds_jupyter.service import StackService
    from sds_jupyter.service.export import render_export
    from sds_jupyter.studio import render as studio_export

    with workdir(args.keep) as work:
        top = build_xenium_demo(Path(work), n_cells=n_cells, side=2048 if args.quick else 8192)
        service = StackService(top)
        sizes: dict[str, int] = {}
        limit = studio_export.VECTOR_CELL_LIMIT

        def draw(label: str, vector_limit: int) -> None:
            studio_export.VECTOR_CELL_LIMIT = vector_limit
            try:
                made = render_export(service, None, "fig-cell-types", ".svg", 300, "whole")
            finally:
                studio_export.VECTOR_CELL_LIMIT = limit
            sizes[label] = len(made.data)
            sizes[f"{label}_cells"] = made.cells
            start = made.data.find(b'<g id="PolyCollection_1">')
            if start >= 0:  # the cells' own bytes: their group in the SVG
                sizes["cell_bytes"] = made.data.find(b"\n   </g>\n", start) - start

        times_a, times_b = alternate(lambda: draw("vector", n_cells * 2), lambda: draw("raster", 0), rounds, warmup=0)
        print(f"{n_cells:,} cells, fig-cell-types, whole section, SVG at 300 dpi")
        result = comparison(
            "export_svg_vector_vs_raster",
            f"cells as vector polygons ({sizes['vector_cells']:,})",
            "cells as one 300 dpi picture",
            times_a,
            times_b,
            goal=None,
        )
        per_cell = sizes.get("cell_bytes", 0) / max(sizes["vector_cells"], 1)
        print(
            f"  file size: vector {sizes['vector'] / 1e6:.1f} MB ({per_cell:.0f} bytes per cell), "
            f"picture {sizes['raster'] / 1e6:.1f} MB; ratio {sizes['vector'] / sizes['raster']:.2f}"
        )
        emit(
            "bench_export",
            [result],
            n_cells=n_cells,
            vector_bytes=sizes["vector"],
            raster_bytes=sizes["raster"],
            bytes_per_cell=per_cell,
        )


if __name__ == "__main__":
    main()
