"""The WebGL spatial view at growing cell counts, within a time budget (never fails on time).

Why a ladder and a budget: under software WebGL (SwiftShader, Debian's headless
chromium on a shared 2-core machine) a big size can take longer than a person
waits for a benchmark. This one climbs (100k, 1M and 10M cells by default) until
the budget (``--budget`` seconds, default 1500) is spent or a size does not
finish in what is left; it reports every size it reached and names the first it
did not.

Each size: a stack built as ``bench_canvas.py`` builds one (a spatialdata table,
one version adding ``obsm["spatial"]``, a 12-category column and a canvas figure
of points; no polygons, so the 10M stack builds in minutes), opened in the
JupyterLab panel in a fresh page. Read per size:

* first draw: ``sds:canvas-draw``, from the data's arrival (the view made, its cell
  index built) to deck.gl's first frame; the index and the first raster are also
  reported on their own (``sds:cell-index``, ``sds:cell-raster``);
* request: ``sds:canvas-request`` (the service, transfer and decoding of the buffers);
* pan frame: the median of ``sds:frame`` (the interval between two frames drawn)
  over 60 drag steps, one animation frame each; zoom frame: the same over 60 wheel
  steps (in, then out); both include the harness's own round trip per step;
* memory: after a garbage collection, the page's JS heap and its ArrayBuffers'
  backing stores (Chrome's ``Runtime.getHeapUsage``), per cell. WebGL buffers and
  textures live in the GPU process and are not in it.

The issue's goals (1M cells: first draw <= 0.5 s, frame <= 33 ms; 10M: <= 24 bytes
per cell) are printed next to the figures where a size reached them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from _common import emit, fmt_time, median, quiet_warnings, workdir

sys.path.insert(0, str(Path(__file__).parent))
import bench_canvas as canvas  # noqa: E402 - the stack builder, the server and the page reads

SIZES = (100_000, 1_000_000, 10_000_000)
GOAL_DRAW_S = 0.5
GOAL_FRAME_S = 0.033
GOAL_BYTES_PER_CELL = 24


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1500.0, help="seconds for the whole ladder (default 1500)")
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES), help="comma-separated cell counts")
    parser.add_argument("--quick", action="store_true", help="100k only, 180 s budget")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    return parser.parse_args()


def measure(browser: Any, base: str, folder: str, n_cells: int, timeout_s: float) -> dict[str, Any]:
    """Open one version in a fresh page; first draw, request, pan frames and heap, within ``timeout_s``."""
    page = browser.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=canvas.DPR)
    page.set_default_timeout(max(1_000, int(timeout_s * 1000)))
    try:
        page.goto(f"{base}/lab/tree/datasets?token={canvas.TOKEN}&reset")
        page.wait_for_selector(".jp-DirListing-item")
        item = page.locator(".jp-DirListing-item", has_text=folder).first
        item.wait_for()
        page.wait_for_timeout(500)
        item.dblclick()
        page.wait_for_selector('.sds-tab[data-tab="figures"]')
        page.evaluate(canvas.ARM)
        page.locator('.sds-tab[data-tab="figures"]').click()
        page.wait_for_function(
            "() => window.__sdsBench.painted !== null || document.querySelector('.sds-figures .sds-error')",
            polling=100,
        )
        found = page.evaluate(canvas.READ)
        if not found["draw"] or not found["request"]:
            raise RuntimeError(page.locator(".sds-figures").inner_text()[:300])
        page.wait_for_timeout(500)  # the settled raster, if any, is made
        heap = heap_usage(page)
        end = time.monotonic() + max(5.0, timeout_s - 5.0)
        frames = pan_frames(page, end)
        zooms = zoom_frames(page, end)
        parts = page.evaluate(PARTS)
        renderer = found["draw"][0]["detail"].get("renderer", "2d")
    finally:
        page.close()
    return {
        "n_cells": n_cells,
        "renderer": renderer,
        "draw_s": found["draw"][0]["duration"] / 1e3,
        "request_s": found["request"][0]["duration"] / 1e3,
        "end_to_end_s": (found["painted"] - found["click"]) / 1e3,
        "index_s": parts["index"],
        "raster_s": parts["raster"],
        "raster_px": parts["raster_px"],
        "frame_s": median(frames) if frames else None,
        "n_frames": len(frames),
        "zoom_frame_s": median(zooms) if zooms else None,
        "n_zoom_frames": len(zooms),
        "heap_bytes": heap["js"],
        "buffer_bytes": heap["buffers"],
        "heap_per_cell": (heap["js"] + heap["buffers"]) / n_cells,
    }


PARTS = """() => {
  const last = name => performance.getEntriesByName(name, 'measure');
  const index = last('sds:cell-index');
  const raster = last('sds:cell-raster');
  return {
    index: index.length ? index[0].duration / 1e3 : null,
    raster: raster.length ? raster[0].duration / 1e3 : null,
    raster_px: raster.length ? `${raster[0].detail.width}x${raster[0].detail.height}` : null,
  };
}"""


def heap_usage(page: Any) -> dict[str, float]:
    """The page's JS heap and ArrayBuffer backing stores after a full garbage collection (Chrome DevTools)."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("HeapProfiler.collectGarbage")
        usage = cdp.send("Runtime.getHeapUsage")
    finally:
        cdp.detach()
    return {"js": float(usage["usedSize"]), "buffers": float(usage.get("backingStorageSize", 0))}


def zoom_frames(page: Any, deadline: float, most: int = 60, least: int = 5) -> list[float]:
    """Wheel in then out over the view's centre, one frame per step; the frame intervals."""
    stage = page.locator(".sds-deck-stage").first
    if not stage.count():
        return []
    page.wait_for_timeout(300)
    page.evaluate("() => performance.clearMeasures('sds:frame')")
    box = stage.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for step in range(most):
        if step >= least and time.monotonic() > deadline:
            break
        page.mouse.wheel(0, -60 if step < most // 2 else 60)
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
    page.wait_for_timeout(200)
    return page.evaluate("() => performance.getEntriesByName('sds:frame', 'measure').map(e => e.duration / 1e3)")


def pan_frames(page: Any, deadline: float, most: int = 60, least: int = 5) -> list[float]:
    """Drag across the view one frame per step, up to ``most`` frames or until ``deadline`` (after ``least``)."""
    stage = page.locator(".sds-deck-stage").first
    if not stage.count():
        return []
    page.evaluate("() => performance.clearMeasures('sds:frame')")
    box = stage.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    for step in range(most):
        if step >= least and time.monotonic() > deadline:
            break
        page.mouse.move(x + (step % 20) * 4 - 40, y + (step % 20) * 2 - 20)
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
    page.mouse.up()
    page.wait_for_timeout(200)
    return page.evaluate("() => performance.getEntriesByName('sds:frame', 'measure').map(e => e.duration / 1e3)")


def report(row: dict[str, Any]) -> str:
    frame = row["frame_s"]
    zoom = row["zoom_frame_s"]
    parts = (
        f" (index {fmt_time(row['index_s'])}"
        + (f", raster {fmt_time(row['raster_s'])} of {row['raster_px']} px" if row["raster_s"] else "")
        + ")"
        if row["index_s"] is not None
        else ""
    )
    return (
        f"{row['n_cells']:>11,} cells ({row['renderer']}): first draw {fmt_time(row['draw_s'])}{parts}, "
        f"request {fmt_time(row['request_s'])}, end to end {fmt_time(row['end_to_end_s'])}, "
        f"pan frame {fmt_time(frame) if frame else '-'} ({row['n_frames']} frames), "
        f"zoom frame {fmt_time(zoom) if zoom else '-'} ({row['n_zoom_frames']} frames), "
        f"memory {(row['heap_bytes'] + row['buffer_bytes']) / 1e6:.0f} MB = JS heap {row['heap_bytes'] / 1e6:.0f} MB "
        f"+ ArrayBuffers {row['buffer_bytes'] / 1e6:.0f} MB ({row['heap_per_cell']:.1f} B/cell)"
    )


def goals(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        if row["n_cells"] == 1_000_000:
            lines.append(
                f"goal 1M first draw <= {GOAL_DRAW_S:g} s: {fmt_time(row['draw_s'])} "
                + ("met" if row["draw_s"] <= GOAL_DRAW_S else "MISSED")
            )
            lines.extend(
                f"goal 1M {'pan' if what == 'frame_s' else 'zoom'} frame <= 33 ms: {fmt_time(row[what])} "
                + ("met" if row[what] <= GOAL_FRAME_S else "MISSED")
                for what in ("frame_s", "zoom_frame_s")
                if row[what]
            )
        if row["n_cells"] == 10_000_000 and row["heap_per_cell"]:
            lines.append(
                f"goal 10M <= {GOAL_BYTES_PER_CELL} B/cell (JS heap and ArrayBuffers): {row['heap_per_cell']:.1f} "
                + ("met" if row["heap_per_cell"] <= GOAL_BYTES_PER_CELL else "MISSED")
            )
    return lines


def least_frames(n: int, last: dict[str, Any]) -> float:
    """Seconds for five frames at ``n`` cells, guessed from the last size's (frame time grows with cells)."""
    return 5 * (last["frame_s"] or 0.0) * n / last["n_cells"]


def run_ladder(sizes: list[int], budget: float, keep: bool) -> tuple[list[dict[str, Any]], str | None, str]:
    from playwright.sync_api import sync_playwright

    deadline = time.monotonic() + budget
    rows: list[dict[str, Any]] = []
    stopped: str | None = None
    version = ""
    with workdir(keep) as work:
        root = work / "root"
        (root / "datasets").mkdir(parents=True)
        server, base, _log = canvas.start_lab(work, root)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=canvas.CHROMIUM, args=canvas.CHROMIUM_ARGS)
                version = browser.version
                try:
                    for n in sizes:
                        left = deadline - time.monotonic()
                        if left < 5:
                            stopped = f"{n:,} cells: not tried, the budget ({budget:g} s) was spent"
                            break
                        start = time.monotonic()
                        guess = least_frames(n, rows[-1]) if rows else 0.0
                        if guess > left:
                            stopped = (
                                f"{n:,} cells: not tried, five frames would take about {guess:.0f} s, past the budget"
                            )
                            break
                        try:
                            top = canvas.build(root, f"cells-{n}", n)
                            built = time.monotonic() - start
                            row = measure(browser, base, top.name, n, deadline - time.monotonic())
                        except Exception as exc:  # a timeout or a failure ends the ladder, reported
                            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                            stopped = f"{n:,} cells: did not finish within the budget ({first[:160]})"
                            break
                        row["build_s"] = built
                        rows.append(row)
                        print(report(row), f"[data built in {built:.1f} s]", flush=True)
                finally:
                    browser.close()
        finally:
            canvas.stop_lab(server)
    return rows, stopped, version


def main() -> None:
    args = parse_args()
    quiet_warnings()
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    reason = canvas.skip_reason()
    if reason:
        print(f"skipped: {reason}")
        emit("webgl", [], skipped=reason)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    budget = args.budget
    if args.quick:
        sizes, budget = [n for n in sizes if n <= 100_000], min(budget, 180.0)
    print(
        f"WebGL view ladder {', '.join(f'{n:,}' for n in sizes)} cells, budget {budget:g} s "
        f"(1400x900 page, device pixel ratio {canvas.DPR:g}):"
    )
    rows, stopped, version = run_ladder(sizes, budget, args.keep)
    if stopped:
        print(f"stopped at {stopped}")
    for line in goals(rows):
        print(line)
    emit("webgl", [], chromium=version, sizes=rows, stopped=stopped, budget_s=budget)


if __name__ == "__main__":
    main()
