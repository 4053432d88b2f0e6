"""Cell shapes in the WebGL view: outlines, discs and the raster, each against what it replaced.

Why: at the zoom where the demo's cells are drawn as outlined polygons (a level-0 view of
its image: about 2,800 octagons on a 750 px canvas), the outlines were most of a frame
under software WebGL (Debian's headless Chromium, SwiftShader). deck's ``PathLayer`` draws
each edge as an instance of a mitred quad, whose vertex shader then runs on the CPU per
instance; ``CellOutlineLayer`` draws every edge as two vertices of one line list.

A bare page (``benchmarks/web/outlines.js``, bundled here with the front end's esbuild) holds
one deck canvas and the same octagons; each round draws frames with A (the line list) and
with B (the PathLayer), alternating, each frame read back (``gl.readPixels``) so the
software GPU has finished it, and takes each side's median frame. The filled polygons
alone (``SolidPolygonLayer``, drawn under the outlines in the view) and the outlines as quads
one CSS pixel wide (``CellEdgeLayer``, what a 2x screen gets) are printed beside.
The discs the view draws when few point cells are in view are timed the same way: 4,000 (the
geometry budget), 4 px in radius and outlined, as ``CellDiscLayer`` (one non-instanced draw of
six-vertex quads) against deck's ``ScatterplotLayer`` (an instance a disc).

The same page then times the raster the view paints on the CPU while many cells are in view
(``paintPoints``): 47,000 octagons 7 px across over a 1,126 px square (a level-2 view of
the demo), as each cell's polygon (A) against a disc of the same width (B, what it drew
before), alternating.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import bench_canvas as canvas
from _common import ROOT, begin, comparison, emit, fmt_time, load_average, median, workdir

JS = ROOT / "js"
ESBUILD = JS / "node_modules" / ".bin" / "esbuild"
ENTRY = Path(__file__).parent / "web" / "outlines.js"
SCENE = {"cells": 2840, "width": 750, "side": 1000.0, "radius": 6.0, "discs": 4000}
FRAMES = 8
RASTER = {"cells": 47_000, "side": 1126, "radius": 3.5, "rounds": 3}


def bundle(out: Path) -> Path:
    """The page's script: the entry and what it imports from js/src, deck.gl from js/node_modules."""
    target = out / "outlines.bundle.js"
    env = {**os.environ, "NODE_PATH": str(JS / "node_modules")}
    subprocess.run(
        [str(ESBUILD), str(ENTRY), "--bundle", "--format=iife", f"--outfile={target}", "--log-level=error"],
        check=True,
        env=env,
    )
    (out / "outlines.html").write_text(
        '<!doctype html><html><body style="margin:0"><script src="outlines.bundle.js"></script></body></html>'
    )
    return out / "outlines.html"


def alternated(page: Any, rounds: int, a: str, b: str) -> tuple[list[float], list[float]]:
    """Median frame times of layer kinds ``a`` and ``b``, a pair a round, alternating which goes first."""
    times: dict[str, list[float]] = {a: [], b: []}
    for index in range(rounds):
        for kind in (a, b) if index % 2 == 0 else (b, a):
            times[kind].append(frame_time(page, kind))
    return times[a], times[b]


def measure(page: Any, rounds: int) -> tuple[list[float], list[float], list[float], dict[str, Any]]:
    setup = page.evaluate(
        "async scene => { window.scene = await window.sdsOutlines.open(scene);"
        " return { renderer: window.scene.renderer, segments: window.scene.segments }; }",
        SCENE,
    )
    lines: list[float] = []
    paths: list[float] = []
    fills: list[float] = []
    for index in range(rounds):
        order = ["lines", "paths"] if index % 2 == 0 else ["paths", "lines"]
        for kind in order:
            (lines if kind == "lines" else paths).append(frame_time(page, kind))
        fills.append(frame_time(page, "fill"))
    return lines, paths, fills, setup


def raster_times(page: Any, rounds: int) -> tuple[list[float], list[float]]:
    """Per round, the median of a few rasters painted each way, alternating which goes first."""
    polygons: list[float] = []
    discs: list[float] = []
    for index in range(rounds):
        order = ["polygons", "discs"] if index % 2 == 0 else ["discs", "polygons"]
        for kind in order:
            painted = page.evaluate("([scene, kind]) => window.sdsOutlines.raster(scene, kind)", [RASTER, kind])
            if painted["drawn"] != RASTER["cells"]:
                raise SystemExit(f"bench_outlines: {painted['drawn']} of {RASTER['cells']} cells painted as {kind}")
            (polygons if kind == "polygons" else discs).append(float(median(painted["times"])))
    return polygons, discs


def frame_time(page: Any, kind: str) -> float:
    """The median frame drawing `kind` alone; refused if the frame shows nothing (nothing was measured)."""
    drawn = page.evaluate("([kind, n]) => window.scene.frames(kind, n)", [kind, FRAMES])
    if drawn["lit"] < 0.01:
        raise SystemExit(f"bench_outlines: the {kind} frame is blank ({drawn['lit']:.4f} of its pixels lit)")
    return float(median(drawn["times"]))


def main() -> None:
    args = begin(__doc__)
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    reason = canvas.skip_reason() or (
        None if ESBUILD.exists() else "the front end's packages are not installed (cd js && npm ci)"
    )
    if reason:
        print(f"skipped: {reason}")
        emit("outlines", [], skipped=True)
        return
    from playwright.sync_api import sync_playwright

    rounds = 2 if args.quick else (args.rounds or 5)
    with workdir(args.keep) as work, sync_playwright() as pw:
        html = bundle(work)
        browser = pw.chromium.launch(executable_path=canvas.CHROMIUM, args=canvas.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 800})
            page.goto(html.as_uri())
            lines, paths, fills, setup = measure(page, rounds)
            polygons, discs = raster_times(page, rounds)
            quads, instanced = alternated(page, rounds, "discs", "scatter")
            edges = [frame_time(page, "edges") for _ in range(rounds)]
        finally:
            browser.close()
    print(
        f"{SCENE['cells']:,} octagons ({setup['segments']:,} edges) on a {SCENE['width']} px canvas; {setup['renderer']}; {load_average()}"
    )
    result = comparison(
        "outlines",
        "outlines as one line list (CellOutlineLayer)",
        "outlines as deck's PathLayer",
        lines,
        paths,
        goal=None,
        unit="frame",
    )
    print(f"  for scale, the filled polygons alone: median {fmt_time(median(fills))} per frame")
    print(
        f"  the same outlines as quads one CSS pixel wide (CellEdgeLayer, 2x screens): median {fmt_time(median(edges))} per frame"
    )
    print(f"{SCENE['discs']:,} discs 4 px in radius, outlined")
    disc_result = comparison(
        "discs",
        "discs as one draw of quads (CellDiscLayer)",
        "discs as deck's ScatterplotLayer",
        quads,
        instanced,
        goal=None,
        unit="frame",
    )
    print(
        f"{RASTER['cells']:,} octagons {2 * RASTER['radius']:g} px across painted into a {RASTER['side']} px raster, ringed"
    )
    painted = comparison(
        "raster_polygons", "each cell's polygon", "a disc of the same width", polygons, discs, goal=None, unit="raster"
    )
    emit(
        "outlines",
        [result, disc_result, painted],
        fill_s=median(fills),
        edges_s=median(edges),
        renderer=setup["renderer"],
        **SCENE,
    )


if __name__ == "__main__":
    main()
