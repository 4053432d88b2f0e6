"""The image tile grid: from a zoom into a new region to its tiles drawn, on the big demo (never fails on time).

Data: ``sds-jupyter demo`` (the Xenium-like stack: an 8,192 x 8,192 px, 3-channel
pyramid in 1,024 px chunks, 0.2125 µm per pixel); ``--quick`` builds it at 4,096 px
and 3,000 cells instead (figures then mean little).

Browser: the JupyterLab panel in headless Chromium (software WebGL), 1400 x 900 CSS
px at a device pixel ratio of 1, a canvas figure with the image. For each of
``--regions`` regions spread over the image (none overlapping another's tiles), the
camera jumps there (the stage's own ``apply``, what a wheel or a button calls) at
the zoom that wants level 0, then at one that wants level 1 (levels finer than the
2,048 px overview only: none but level 0 with ``--quick``), and the app's User
Timing measure ``sds:tiles`` is read: from the view change to the first frame
drawn with every tile of the wanted level on screen (requests, transfer, coloring,
texture upload, the draw). The median over regions is compared with the issue's
goal (<= 0.3 s).

``SDS_BENCH_NO_CELLS=1`` hides the cells first (the image layers alone); ``SDS_BENCH_DPR=2``
opens the page at a device pixel ratio of 2 (outlines then drawn as quads, not GL lines).
``SDS_BENCH_PROFILE=1`` records a CPU profile of the page (CDP ``Profiler``) around each jump
and prints where its main thread's time went, by function (self time), summed over the jumps;
``SDS_BENCH_TRACE=1`` (or a file's path, to keep it) records a Chromium trace over the jumps instead and prints, per busy
thread (the page's main thread, the GPU thread), its self time by trace event.

Service alone: ``StackService.image_tile`` for the same tiles (a warm service: the
pyramid opened and the figure parsed once), median per tile; and per region (the
tiles a region needs, asked one after another).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from _common import begin, emit, fmt_time, median, workdir

sys.path.insert(0, str(Path(__file__).parent))
import bench_canvas as canvas  # noqa: E402 - the lab server, Chromium's path and flags

GOAL_S = 0.3
VIEW = (1400, 900)
#: Where the regions sit, as fractions of the image's side (spread so their tiles differ).
SPOTS = ((0.2, 0.2), (0.7, 0.3), (0.35, 0.65), (0.8, 0.8), (0.55, 0.1), (0.1, 0.85), (0.45, 0.4), (0.9, 0.55))


def build(root: Path, quick: bool) -> Path:
    from sds_jupyter.demo.xenium import build_xenium_demo

    return build_xenium_demo(root, n_cells=3000, side=4096) if quick else build_xenium_demo(root)


def canvas_figure(top: Path) -> tuple[str, dict[str, Any]]:
    """The first canvas figure with an image, and its ``channels`` reply."""
    from sds_jupyter.service import StackService, dispatch

    service = StackService(top)
    figures = dispatch(service, "figures", {}).data["figures"]
    figure = next(f["id"] for f in figures if f["kind"] == "canvas" and (f.get("canvas") or {}).get("image"))
    return figure, dispatch(service, "channels", {"figure": figure}).data


def regions(levels: list[dict[str, Any]], overview: int, count: int) -> list[tuple[float, float, int, float]]:
    """(x, y, level, zoom) per camera jump: each spot at the zoom that wants level 0, then level 1.

    Only levels finer than the ``overview`` (its width): coarser ones are drawn by it, with no tile.
    """
    x0, y0, x1, y1 = levels[0]["bounds"]
    out = []
    for fx, fy in SPOTS[:count]:
        for level in [lv for lv in (0, 1) if levels[lv]["width"] > overview]:
            per_unit = levels[level]["width"] / (x1 - x0)  # one screen px per level px
            out.append((x0 + fx * (x1 - x0), y0 + fy * (y1 - y0), level, math.log2(per_unit)))
    return out


def tiles_of(level: dict[str, Any], x: float, y: float, zoom: float) -> list[tuple[int, int]]:
    """The tiles a VIEW-sized screen centred on (x, y) at ``zoom`` shows (as tiles.ts picks them)."""
    bx0, by0, bx1, _ = level["bounds"]
    half_w, half_h = VIEW[0] / 2 / 2**zoom, VIEW[1] / 2 / 2**zoom
    unit = (bx1 - bx0) / level["width"]
    side = level["tile"] * unit
    cols, rows = math.ceil(level["width"] / level["tile"]), math.ceil(level["height"] / level["tile"])
    tx = range(max(0, int((x - half_w - bx0) // side)), min(cols - 1, math.ceil((x + half_w - bx0) / side) - 1) + 1)
    ty = range(max(0, int((y - half_h - by0) // side)), min(rows - 1, math.ceil((y + half_h - by0) / side) - 1) + 1)
    return [(i, j) for j in ty for i in tx]


def service_side(top: Path, figure: str, levels: list[dict[str, Any]], jumps: list[Any]) -> dict[str, Any]:
    """image_tile alone: per tile and per region (its tiles one after another), on a warm service."""
    from sds_jupyter.service import StackService, dispatch

    service = StackService(top)
    dispatch(service, "image_tile", {"figure": figure, "level": len(levels) - 1, "x": 0, "y": 0})  # warm
    per_tile: list[float] = []
    per_region: list[float] = []
    for x, y, level, zoom in jumps:
        start = time.perf_counter()
        for tx, ty in tiles_of(levels[level], x, y, zoom):
            t = time.perf_counter()
            dispatch(service, "image_tile", {"figure": figure, "level": level, "x": tx, "y": ty})
            per_tile.append(time.perf_counter() - t)
        per_region.append(time.perf_counter() - start)
    return {"tile_s": median(per_tile), "region_s": median(per_region), "n_tiles": len(per_tile)}


JUMP = """([x, y, zoom]) => {
  const fig = document.querySelector('.sds-spatial').sdsSpatial;
  const before = performance.getEntriesByName('sds:tiles', 'measure').length;
  fig.stage.apply({ target: [x, y], zoom }, 'user');
  return before;
}"""

READ = """(before) => {
  const all = performance.getEntriesByName('sds:tiles', 'measure');
  if (all.length <= before) return null;
  const m = all[all.length - 1];
  // the tile requests of this jump, by resource timing: sent -> first byte -> last byte (ms after the jump)
  const requests = performance.getEntriesByType('resource')
    .filter(e => e.name.includes('/api/image_tile') && e.startTime >= m.startTime)
    .map(e => [e.startTime - m.startTime, e.responseStart - m.startTime, e.responseEnd - m.startTime].map(Math.round));
  // frames drawn during the wait (each a whole scene: what software WebGL pays for)
  const frames = performance.getEntriesByName('sds:frame', 'measure')
    .filter(f => f.startTime + f.duration > m.startTime && f.startTime + f.duration <= m.startTime + m.duration + 1).length;
  return { duration: m.duration, detail: m.detail, requests, frames };
}"""


def print_profile(profiles: list[dict[str, Any]], top: int = 25) -> None:
    """Self time by function over the jumps' CPU profiles (idle and the program's own time apart)."""
    by_name: dict[str, float] = {}
    total = 0.0
    for profile in profiles:
        nodes = {n["id"]: n for n in profile["nodes"]}
        deltas = profile.get("timeDeltas", [])
        for sample, delta in zip(profile.get("samples", []), [*deltas[1:], 0], strict=False):
            frame = nodes[sample]["callFrame"]
            url = frame.get("url", "").rsplit("/", 1)[-1]
            name = f"{frame.get('functionName') or '(anonymous)'} {url}:{frame.get('lineNumber', 0) + 1}".strip()
            by_name[name] = by_name.get(name, 0.0) + delta / 1e3
            total += delta / 1e3
    print(f"  CPU profile over the jumps: {total:.0f} ms sampled; self time by function:")
    for name, ms in sorted(by_name.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {ms:8.1f} ms {100 * ms / max(total, 1e-9):5.1f}%  {name}")


TRACE_CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "v8",
    "blink",
    "gpu",
    "cc",
    "toplevel",
    "gpu.service",
    "disabled-by-default-gpu.service",
    "disabled-by-default-gpu.decoder",
    "gpu.angle",
    "disabled-by-default-gpu.angle",
]


def print_trace(trace: dict[str, Any], top: int = 18) -> None:
    """Self time by event name on the two busiest threads (nested complete events subtract)."""
    events = trace.get("traceEvents", trace if isinstance(trace, list) else [])
    names = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    busy: dict[tuple[int, int], dict[str, float]] = {}
    for key, evs in by_thread.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        selfs: dict[str, float] = {}
        stack: list[tuple[float, str]] = []  # (end, name); a child's time leaves its parent's self
        for e in evs:
            while stack and stack[-1][0] <= e["ts"]:
                stack.pop()
            if stack:
                selfs[stack[-1][1]] = selfs.get(stack[-1][1], 0.0) - e["dur"] / 1e3
            selfs[e["name"]] = selfs.get(e["name"], 0.0) + e["dur"] / 1e3
            stack.append((e["ts"] + e["dur"], e["name"]))
        busy[key] = selfs
    ranked = sorted(busy.items(), key=lambda kv: -sum(v for v in kv[1].values() if v > 0))
    for key, selfs in ranked[:3]:
        total = sum(v for v in selfs.values() if v > 0)
        print(f"  trace, thread {names.get(key, key)}: {total:.0f} ms in events; self time by event:")
        for name, ms in sorted(selfs.items(), key=lambda kv: -kv[1])[:top]:
            print(f"    {ms:8.1f} ms {100 * ms / max(total, 1e-9):5.1f}%  {name}")


def browser_side(top: Path, root: Path, work: Path, jumps: list[Any]) -> tuple[list[dict[str, Any]], str]:
    from playwright.sync_api import sync_playwright

    server, base, _log = canvas.start_lab(work, root)
    rows: list[dict[str, Any]] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=canvas.CHROMIUM, args=canvas.CHROMIUM_ARGS)
            version = browser.version
            page = browser.new_page(
                viewport={"width": VIEW[0] + 400, "height": VIEW[1] + 300}, device_scale_factor=canvas.DPR
            )
            try:
                page.goto(f"{base}/lab/tree/datasets?token={canvas.TOKEN}&reset")
                item = page.locator(".jp-DirListing-item", has_text=top.name).first
                item.wait_for(timeout=90_000)
                page.wait_for_timeout(500)
                item.dblclick()
                page.wait_for_selector('.sds-tab[data-tab="figures"]', timeout=90_000)
                page.locator('.sds-tab[data-tab="figures"]').click()
                page.wait_for_selector(".sds-deck-stage[data-live='true'][data-tile-levels]", timeout=180_000)
                if os.environ.get("SDS_BENCH_NO_CELLS"):
                    page.evaluate(
                        "() => { const s = document.querySelector('.sds-spatial').sdsSpatial.stage; s.cellsVisible = false; s.sync(); }"
                    )
                cdp = page.context.new_cdp_session(page) if os.environ.get("SDS_BENCH_PROFILE") else None
                if cdp:
                    cdp.send("Profiler.enable")
                    cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                profiles: list[dict[str, Any]] = []
                tracing = bool(os.environ.get("SDS_BENCH_TRACE"))
                if tracing:
                    browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
                for x, y, level, zoom in jumps:
                    if cdp:
                        cdp.send("Profiler.start")
                    before = page.evaluate(JUMP, [x, y, zoom])
                    try:
                        page.wait_for_function(
                            f"() => performance.getEntriesByName('sds:tiles', 'measure').length > {before}",
                            timeout=180_000,
                            polling=50,
                        )
                    except Exception:
                        state = page.evaluate("() => ({...document.querySelector('.sds-deck-stage').dataset})")
                        raise RuntimeError(f"no sds:tiles measure after the jump to level {level}: {state}") from None
                    found = page.evaluate(READ, before)
                    if cdp:
                        profiles.append(cdp.send("Profiler.stop")["profile"])
                    rows.append(
                        {
                            "level": level,
                            "wanted": found["detail"]["level"],
                            "tiles": found["detail"]["tiles"],
                            "s": found["duration"] / 1e3,
                            "requests_ms": found["requests"],
                            "frames": found["frames"],
                        }
                    )
                    print(
                        f"  region at ({x:7.1f}, {y:7.1f}) µm, level {found['detail']['level']}: {found['detail']['tiles']} tiles in {fmt_time(rows[-1]['s'])}, {found['frames']} frames; requests (sent, first byte, done ms): {found['requests']}",
                        flush=True,
                    )
                    page.wait_for_timeout(300)
                page.screenshot(path=str(work / "tiles.png"))
                if profiles:
                    print_profile(profiles)
                if tracing:
                    raw = browser.stop_tracing()
                    if os.environ["SDS_BENCH_TRACE"] != "1":
                        Path(os.environ["SDS_BENCH_TRACE"]).write_bytes(raw)  # for chrome://tracing, Perfetto
                    print_trace(json.loads(raw))
            finally:
                page.close()
                browser.close()
    finally:
        canvas.stop_lab(server)
    return rows, version


def main() -> None:
    args = begin(__doc__)
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    reason = canvas.skip_reason()
    count = 3 if args.quick else (args.rounds or 6)
    with workdir(args.keep) as work:
        root = work / "root"
        start = time.monotonic()
        top = build(root, args.quick)
        print(f"demo built in {time.monotonic() - start:.0f} s ({'quick: 2,048 px' if args.quick else '8,192 px'})")
        figure, channels = canvas_figure(top)
        levels = channels["levels"]
        jumps = regions(levels, channels["width"], count)
        service = service_side(top, figure, levels, jumps)
        print(
            f"service image_tile ({levels[0]['tile']} px tiles, {len(channels['channels'])} channels): "
            f"{fmt_time(service['tile_s'])} per tile, {fmt_time(service['region_s'])} per region's tiles "
            f"(median of {service['n_tiles']} tiles)"
        )
        if reason:
            print(f"browser side skipped: {reason}")
            emit("tiles", [], service=service, skipped=reason)
            return
        rows, version = browser_side(top, root, work, jumps)
    summary: dict[str, Any] = {}
    for level in (0, 1):
        times = [r["s"] for r in rows if r["level"] == level]
        if times:
            summary[f"level{level}_s"] = median(times)
            print(f"zoom to new region, level {level}: median {fmt_time(median(times))} over {len(times)} regions")
    print(f"frames drawn from a jump to its tiles: median {median([r['frames'] for r in rows])}")
    every = median([r["s"] for r in rows])
    verdict = "met" if every <= GOAL_S else "MISSED"
    print(f"goal: a zoom into a new region draws its tiles in <= {GOAL_S:g} s: median {fmt_time(every)} ({verdict})")
    emit("tiles", [], chromium=version, service=service, rows=rows, median_s=every, goal_s=GOAL_S, **summary)


if __name__ == "__main__":
    main()
