"""The widget's anywidget entry against the app it loads: import time from a blob URL in Chromium.

Why: anywidget gives a model 2 s to import its ``_esm`` (from a blob URL) and run
``initialize``; past that it rejects the model and drops its comm messages. The entry
(``static/widget.js``) is what that limit times now; the app (``static/widget-app.js``,
deck.gl and vega) was, before, and is imported in ``render`` instead. Each round imports
one of them in a fresh page, alternating, and reads the time inside the page
(``performance.now()`` around ``import()``), so the harness's round trips are left out.
The machine's load average is printed beside the figures (a shared 2-core machine).
"""

from __future__ import annotations

import os
from typing import Any

import bench_canvas as canvas
from _common import ROOT, begin, comparison, emit, fmt_time

STATIC = ROOT / "sds_jupyter" / "static"
ANYWIDGET_LIMIT_S = 2.0

IMPORT = """async source => {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  const start = performance.now();
  const mod = await import(url);
  const took = performance.now() - start;
  URL.revokeObjectURL(url);
  return [took / 1000, typeof mod.default?.render];
}"""


def import_time(browser: Any, source: str) -> float:
    page = browser.new_page()
    try:
        took, render = page.evaluate(IMPORT, source)
        assert render == "function", "the module exports no default render"
        return float(took)
    finally:
        page.close()


def main() -> None:
    args = begin(__doc__)
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    reason = canvas.skip_reason()
    entry, app = (STATIC / "widget.js", STATIC / "widget-app.js")
    if reason or not (entry.is_file() and app.is_file()):
        print(f"skipped: {reason or 'the front end is not built (cd js && npm run build)'}")
        emit("widget_entry", [], skipped=True)
        return
    from playwright.sync_api import sync_playwright

    rounds = 3 if args.quick else (args.rounds or 8)
    sources = (entry.read_text("utf-8"), app.read_text("utf-8"))
    times: tuple[list[float], list[float]] = ([], [])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=canvas.CHROMIUM, args=canvas.CHROMIUM_ARGS)
        try:
            for index in range(rounds):
                order = (0, 1) if index % 2 == 0 else (1, 0)
                for which in order:
                    times[which].append(import_time(browser, sources[which]))
        finally:
            browser.close()
    print(
        f"load average {os.getloadavg()[0]:.1f} (2 shared cores); sizes {len(sources[0]):,} B and {len(sources[1]):,} B"
    )
    result = comparison(
        "import from a blob URL, in the page",
        f"entry widget.js ({len(sources[0]) / 1024:.1f} KiB)",
        f"app widget-app.js ({len(sources[1]) / 2**20:.1f} MiB)",
        times[0],
        times[1],
        goal=None,
    )
    print(
        f"  anywidget's limit on _esm + initialize: {fmt_time(ANYWIDGET_LIMIT_S)}; slowest app import {fmt_time(max(times[1]))}"
    )
    emit("widget_entry", [result], load_average=os.getloadavg()[0])


if __name__ == "__main__":
    main()
