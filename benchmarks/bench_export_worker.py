"""An export drawn by the export worker process (A) against the same drawing in the caller's process (B).

Data: the tissue demo (``build_xenium_demo``, 3,000 cells; ``--quick`` 1,000) and its
``fig-cell-types`` figure, the whole section, as a 150 dpi PNG; and its ``fig-markers`` chart
as an SVG. A is what ``render_export`` does to draw (``draw_in_worker``: the drawing pickled to
the running worker and the file back); B draws the same CanvasExport or Vega-Lite spec with
``render_canvas`` or ``render_chart`` in place. The figures' data is read once, before timing. The worker is started before timing (its start, about a second of
imports, is paid once per process and printed apart).

What it shows: the cost issue 38's item 5 adds to each export for never taking the server down.
No goal on the ratio: the added milliseconds are printed.
"""

from __future__ import annotations

import time
from pathlib import Path

from _common import alternate, begin, comparison, emit, workdir


def main() -> None:
    args = begin(__doc__)
    n_cells = 1_000 if args.quick else 3_000
    rounds = args.rounds or (3 if args.quick else 7)
    from sds_jupyter.demo.xenium import build_xenium_demo
    from sds_jupyter.service import StackService
    from sds_jupyter.service.features.figures import figure_drawing
    from sds_jupyter.studio.render import CanvasExport, print_width_mm, render_canvas, render_chart, view_region
    from sds_jupyter.studio.worker import ExportWorker, draw_in_worker

    with workdir(args.keep) as work:
        top = build_xenium_demo(Path(work), n_cells=n_cells, side=2048)
        service = StackService(top)
        depth, chart = service.stack.depth, "fig-markers"
        parsed, canvas = figure_drawing(service.session, depth, "fig-cell-types")
        export = CanvasExport(canvas, view_region(canvas.payload, "whole"), parsed.title)
        width = print_width_mm(parsed.print_width)
        chart_parsed, spec = figure_drawing(service.session, depth, chart)
        chart_width = print_width_mm(chart_parsed.print_width)

        start = time.perf_counter()
        cold = ExportWorker()
        cold.draw("chart", spec, ".svg", chart_width, chart, 72)
        started = time.perf_counter() - start
        cold.close()
        draw_in_worker("chart", spec, ".svg", chart_width, chart, 72)  # this process's worker, started

        canvas_a, canvas_b = alternate(
            lambda: draw_in_worker("canvas", export, ".png", width, 150),
            lambda: render_canvas(export, ".png", width, 150),
            rounds,
        )
        chart_a, chart_b = alternate(
            lambda: draw_in_worker("chart", spec, ".svg", chart_width, chart_parsed.title or chart, 300),
            lambda: render_chart(spec, ".svg", chart_width, chart_parsed.title or chart, 300),
            rounds,
        )
        print(f"{n_cells:,} cells; a worker's first drawing (start and imports included): {started:.2f} s")
        results = [
            comparison(
                "export_canvas_png_worker_vs_in_place",
                "canvas PNG 150 dpi, drawn by the worker",
                "the same, drawn in place",
                canvas_a,
                canvas_b,
                goal=None,
            ),
            comparison(
                "export_chart_svg_worker_vs_in_place",
                "chart SVG, drawn by the worker",
                "the same, drawn in place",
                chart_a,
                chart_b,
                goal=None,
            ),
        ]
        for result in results:
            added = (result["median_a_s"] - result["median_b_s"]) * 1e3
            print(f"  {result['name']}: {added:+.1f} ms per export through the worker")
        emit("bench_export_worker", results, n_cells=n_cells, worker_start_s=started)


if __name__ == "__main__":
    main()
