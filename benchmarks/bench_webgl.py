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

Both render tiers, side by side on the same data (``--tiers``, default both): the
"software" tier (the view's own layers, a CPU raster of the cells beyond a few thousand in
view) and the "gpu" tier (deck.gl's stock ScatterplotLayer over every cell, GPU picking),
forced with the page's ``?sds-tier=``. Here both run on SwiftShader: the gpu tier's figures
are what that tier costs under a software renderer, not what it costs on a hardware GPU.

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
TIERS = ("software", "gpu")
GOAL_DRAW_S = 0.5
GOAL_FRAME_S = 0.033
GOAL_BYTES_PER_CELL = 24


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1500.0, help="seconds for the whole ladder (default 1500)")
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES), help="comma-separated cell counts")
    parser.add_argument("--quick", action="store_true", help="100k only, 180 s budget")
    parser.add_argument(
        "--tiers", default=",".join(TIERS), help="comma-separated render tiers, each measured on every size"
    )
    parser.add_argument("--profile", action="store_true", help="print a CPU profile's heaviest functions per drive")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    return parser.parse_args()


def measure(
    browser: Any,
    base: str,
    folder: str,
    n_cells: int,
    timeout_s: float,
    profile: bool = False,
    tier: str = "software",
) -> dict[str, Any]:
    """Open one version in a fresh page drawn by ``tier``; first draw, request, pan frames and heap, within ``timeout_s``."""
    page = browser.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=canvas.DPR)
    page.set_default_timeout(max(1_000, int(timeout_s * 1000)))
    try:
        page.goto(f"{base}/lab/tree/datasets?token={canvas.TOKEN}&reset&sds-tier={tier}")
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
        load = os.getloadavg()[0]
        floor = median(page.evaluate(FLOOR, {"steps": 60, "gl": False}))
        floor_gl = median(page.evaluate(FLOOR, {"steps": 60, "gl": True}))
        pan = drive(page, "pan", profile=profile)
        zoom = drive(page, "zoom", profile=profile)
        parts = page.evaluate(PARTS)
        renderer = found["draw"][0]["detail"].get("renderer", "2d")
        drawn_by = page.locator(".sds-deck-stage").first.get_attribute("data-tier") if renderer == "webgl" else None
    finally:
        page.close()
    return {
        "n_cells": n_cells,
        "tier": drawn_by or "2d",
        "renderer": renderer,
        "draw_s": found["draw"][0]["duration"] / 1e3,
        "request_s": found["request"][0]["duration"] / 1e3,
        "end_to_end_s": (found["painted"] - found["click"]) / 1e3,
        "index_s": parts["index"],
        "raster_s": parts["raster"],
        "raster_px": parts["raster_px"],
        "frame_s": median(pan["frames"]) if pan["frames"] else None,
        "n_frames": len(pan["frames"]),
        "pan_work_s": median(pan["work"]) if pan["work"] else None,
        "pan_task_s": pan["task_per_frame"],
        "pan_moved": pan["moved"],
        "zoom_frame_s": median(zoom["frames"]) if zoom["frames"] else None,
        "n_zoom_frames": len(zoom["frames"]),
        "zoom_work_s": median(zoom["work"]) if zoom["work"] else None,
        "zoom_task_s": zoom["task_per_frame"],
        "zoom_moved": zoom["moved"],
        "load": load,
        "floor_s": floor,
        "floor_gl_s": floor_gl,
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


DRIVE = """async ({ kind, steps }) => {
  // One synthetic pointer or wheel event a frame, dispatched on deck's canvas at the start of
  // each animation frame (as a 60 Hz pointer delivers them), never awaited from outside.
  const canvas = document.querySelector('.sds-deck-canvas');
  const box = canvas.getBoundingClientRect();
  const cx = box.left + box.width / 2;
  const cy = box.top + box.height / 2;
  const raf = () => new Promise(r => requestAnimationFrame(r));
  const pointer = (type, x, y, buttons) => canvas.dispatchEvent(new PointerEvent(type, {
    bubbles: true, cancelable: true, composed: true, clientX: x, clientY: y, pointerId: 1,
    pointerType: 'mouse', isPrimary: true, button: 0, buttons }));
  await raf();
  await raf();
  performance.clearMeasures('sds:frame');
  performance.clearMeasures('sds:frame-work');
  const zoom0 = canvas.parentElement.dataset.zoom;
  const target0 = canvas.parentElement.dataset.target;
  if (kind === 'pan') {
    pointer('pointermove', cx, cy, 0);
    pointer('pointerdown', cx, cy, 1);
  }
  const t0 = performance.now();
  let moved = false;
  for (let k = 0; k < steps; k++) {
    await raf();
    const state = canvas.parentElement.dataset;
    moved ||= kind === 'pan' ? state.target !== target0 : state.zoom !== zoom0;
    if (kind === 'pan') {
      // a zig-zag drag, 4 px a frame
      const s = k % 40 < 20 ? k % 20 : 20 - (k % 20);
      pointer('pointermove', cx + s * 4 - 40, cy + s * 2 - 20, 1);
    } else {
      canvas.dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true, clientX: cx, clientY: cy,
        deltaMode: 0, deltaY: k < steps / 2 ? -40 : 40 }));
    }
  }
  await raf();
  await raf();
  const t1 = performance.now();
  if (kind === 'pan') {
    pointer('pointerup', cx, cy, 0);
  }
  const read = name => performance.getEntriesByName(name, 'measure').filter(e => e.startTime >= t0 && e.startTime + e.duration <= t1);
  return {
    frames: read('sds:frame').map(e => e.duration / 1e3),
    work: read('sds:frame-work').map(e => e.duration / 1e3),
    span: (t1 - t0) / 1e3,
    moved,
  };
}"""


FLOOR = """async ({ steps, gl }) => {
  // The floor under a frame in this browser and on this machine now: the interval of a bare
  // requestAnimationFrame loop (gl false), or of one that clears a WebGL2 canvas of the view's
  // size each frame (gl true: what any WebGL frame costs here, before a single layer is drawn).
  const stage = document.querySelector('.sds-deck-canvas');
  const box = stage.getBoundingClientRect();
  let canvas = null;
  let ctx = null;
  if (gl) {
    canvas = document.createElement('canvas');
    canvas.width = Math.round(box.width * devicePixelRatio);
    canvas.height = Math.round(box.height * devicePixelRatio);
    Object.assign(canvas.style, { position: 'fixed', left: `${box.left}px`, top: `${box.top}px`,
      width: `${box.width}px`, height: `${box.height}px`, zIndex: 1000, pointerEvents: 'none' });
    document.body.append(canvas);
    ctx = canvas.getContext('webgl2', { preserveDrawingBuffer: true });
  }
  const raf = () => new Promise(r => requestAnimationFrame(r));
  await raf();
  const times = [];
  for (let k = 0; k <= steps; k++) {
    const t = await raf();
    if (ctx) {
      ctx.clearColor((k % 10) / 10, 0.5, 0.5, 1);
      ctx.clear(ctx.COLOR_BUFFER_BIT);
    }
    times.push(t);
  }
  if (canvas) {
    ctx.getExtension('WEBGL_lose_context')?.loseContext();
    canvas.remove();
  }
  return times.slice(1).map((t, i) => (t - times[i]) / 1e3);
}"""


def drive(page: Any, kind: str, steps: int = 60, profile: bool = False) -> dict[str, Any]:
    """Drag (``pan``) or wheel (``zoom``, half in, half out) for ``steps`` frames from inside the page.

    Why inside: a Playwright step per frame (input, then a round trip to wait for a frame)
    measures the round trips, not the page. Returns the frame intervals (``sds:frame``), deck's
    own render per frame (``sds:frame-work``) and the main thread's busy time over the drive
    (CDP ``Performance.getMetrics``: TaskDuration, ScriptDuration), per frame drawn.
    """
    if not page.locator(".sds-deck-canvas").count():
        return {"frames": [], "work": [], "task_per_frame": None, "script_per_frame": None, "moved": False}
    page.wait_for_timeout(300)
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("Performance.enable")
        if profile:
            page.context.browser.start_tracing(
                page=page,
                categories=[
                    "devtools.timeline",
                    "disabled-by-default-devtools.timeline",
                    "gpu",
                    "viz",
                    "cc",
                    "toplevel",
                ],
            )
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            cdp.send("Profiler.start")
        before = metrics(cdp)
        got = page.evaluate(DRIVE, {"kind": kind, "steps": steps})
        after = metrics(cdp)
        if profile:
            print(f"  {kind}: main thread by function (self time, CPU profile over the drive):")
            for line in profile_shares(cdp.send("Profiler.stop")["profile"]):
                print(f"    {line}")
            print(f"  {kind}: main thread by trace event (inclusive, nested events counted in each):")
            for line in trace_shares(page.context.browser.stop_tracing()):
                print(f"    {line}")
    finally:
        cdp.detach()
    drawn = max(1, len(got["frames"]))
    got["task_per_frame"] = (after["TaskDuration"] - before["TaskDuration"]) / drawn
    got["script_per_frame"] = (after["ScriptDuration"] - before["ScriptDuration"]) / drawn
    page.wait_for_timeout(400)  # the raster is made again once the camera rests
    return got


def profile_shares(profile: dict[str, Any], top: int = 14) -> list[str]:
    """The heaviest functions of a CDP CPU profile by self time, and their share of it."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    deltas = profile.get("timeDeltas", [])
    self_us: dict[str, float] = {}
    for sample, delta in zip(profile.get("samples", []), [*deltas[1:], 0], strict=False):
        frame = nodes[sample]["callFrame"]
        name = frame["functionName"] or "(anonymous)"
        where = frame["url"].rsplit("/", 1)[-1]
        key = f"{name} {where}:{frame['lineNumber'] + 1}" if where else name
        self_us[key] = self_us.get(key, 0.0) + delta
    total = sum(self_us.values()) or 1.0
    heaviest = sorted(self_us.items(), key=lambda kv: -kv[1])[:top]
    return [f"{us / 1e3:8.1f} ms {100 * us / total:5.1f} %  {key[:110]}" for key, us in heaviest]


def trace_shares(trace: bytes, top: int = 8) -> list[str]:
    """Per busy thread (renderer main, compositor, GPU): trace events by name, summed duration (inclusive)."""
    import json

    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {
        (e["pid"], e["tid"]): e["args"].get("name", "?")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    per: dict[str, dict[str, float]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("dur"):
            thread = names.get((e["pid"], e["tid"]), "?")
            slot = per.setdefault(thread, {})
            slot[e["name"]] = slot.get(e["name"], 0.0) + e["dur"]
    lines = []
    busiest = sorted(per.items(), key=lambda kv: -max(kv[1].values()))[:5]
    for thread, totals in busiest:
        heaviest = sorted(totals.items(), key=lambda kv: -kv[1])[:top]
        lines.append(f"{thread}: " + ", ".join(f"{name} {us / 1e3:.0f} ms" for name, us in heaviest))
    return lines


def metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: float(m["value"]) for m in cdp.send("Performance.getMetrics")["metrics"]}


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
        f"{row['n_cells']:>11,} cells ({row['renderer']}, {row['tier']} tier): first draw {fmt_time(row['draw_s'])}{parts}, "
        f"request {fmt_time(row['request_s'])}, end to end {fmt_time(row['end_to_end_s'])}, "
        f"pan frame {fmt_time(frame) if frame else '-'} ({row['n_frames']} frames{'' if row['pan_moved'] else ', VIEW DID NOT MOVE'}; "
        f"deck render {fmt_opt(row['pan_work_s'])}, main thread {fmt_opt(row['pan_task_s'])} a frame), "
        f"empty frame {fmt_time(row['floor_s'])}, empty WebGL frame {fmt_time(row['floor_gl_s'])}, "
        f"zoom frame {fmt_time(zoom) if zoom else '-'} ({row['n_zoom_frames']} frames{'' if row['zoom_moved'] else ', VIEW DID NOT MOVE'}; "
        f"deck render {fmt_opt(row['zoom_work_s'])}, main thread {fmt_opt(row['zoom_task_s'])} a frame), "
        f"memory {(row['heap_bytes'] + row['buffer_bytes']) / 1e6:.0f} MB = JS heap {row['heap_bytes'] / 1e6:.0f} MB "
        f"+ ArrayBuffers {row['buffer_bytes'] / 1e6:.0f} MB ({row['heap_per_cell']:.1f} B/cell) "
        f"[load average {row['load']:.1f}]"
    )


def fmt_opt(seconds: float | None) -> str:
    return fmt_time(seconds) if seconds is not None else "-"


def side_by_side(rows: list[dict[str, Any]]) -> list[str]:
    """Per size measured in both tiers: the gpu tier's first draw and frames as a ratio of the software tier's."""
    lines = []
    for n in sorted({row["n_cells"] for row in rows}):
        by = {row["tier"]: row for row in rows if row["n_cells"] == n}
        soft, gpu = by.get("software"), by.get("gpu")
        if not soft or not gpu:
            continue
        parts = []
        for key, label in (("draw_s", "first draw"), ("frame_s", "pan frame"), ("zoom_frame_s", "zoom frame")):
            if soft[key] and gpu[key]:
                parts.append(f"{label} {fmt_time(gpu[key])} vs {fmt_time(soft[key])} (x{gpu[key] / soft[key]:.2f})")
        lines.append(f"{n:,} cells, gpu tier vs software tier, both on this renderer: " + ", ".join(parts))
    return lines


def goals(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        if row["n_cells"] == 1_000_000:
            lines.append(
                f"[{row['tier']} tier] goal 1M first draw <= {GOAL_DRAW_S:g} s: {fmt_time(row['draw_s'])} "
                + ("met" if row["draw_s"] <= GOAL_DRAW_S else "MISSED")
            )
            lines.extend(
                f"[{row['tier']} tier] goal 1M {'pan' if what == 'frame_s' else 'zoom'} frame <= 33 ms: {fmt_time(row[what])} "
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


def run_ladder(
    sizes: list[int], budget: float, keep: bool, profile: bool = False, tiers: tuple[str, ...] = TIERS
) -> tuple[list[dict[str, Any]], str | None, str]:
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
                            for tier in tiers:
                                row = measure(browser, base, top.name, n, deadline - time.monotonic(), profile, tier)
                                row["build_s"] = built
                                rows.append(row)
                                print(report(row), f"[data built in {built:.1f} s]", flush=True)
                        except Exception as exc:  # a timeout or a failure ends the ladder, reported
                            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                            stopped = f"{n:,} cells: did not finish within the budget ({first[:160]})"
                            break
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
    tiers = tuple(t for t in args.tiers.split(",") if t.strip())
    unknown = sorted(set(tiers) - set(TIERS))
    if unknown:
        raise SystemExit(f"bench_webgl: unknown tier {', '.join(unknown)} (known: {', '.join(TIERS)})")
    rows, stopped, version = run_ladder(sizes, budget, args.keep, args.profile, tiers)
    if stopped:
        print(f"stopped at {stopped}")
    for line in side_by_side(rows) + goals(rows):
        print(line)
    emit("webgl", [], chromium=version, sizes=rows, stopped=stopped, budget_s=budget)


if __name__ == "__main__":
    main()
