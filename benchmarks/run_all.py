"""Run every benchmark, each in its own process, and print a summary table.

    .venv/bin/python benchmarks/run_all.py            # or: make bench
    .venv/bin/python benchmarks/run_all.py --quick    # smoke run, small data
    .venv/bin/python benchmarks/run_all.py --full     # the million-member sizes (slow)
    .venv/bin/python benchmarks/run_all.py --transcripts-30m bench_points   # or: make bench BENCH_ARGS=...

Timing never fails the run: a missed goal is reported in the table. The exit
status is non-zero only when a benchmark crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import RESULT_PREFIX, load_average, machine  # noqa: E402
from _common import fmt_short_time as fmt  # noqa: E402

BENCHMARKS = [
    "bench_table_read.py",
    "bench_deep_get.py",
    "bench_meta_get.py",
    "bench_inflate.py",  # every chunk's inflation checked: StackStore against zarr's LocalStore
    "bench_open.py",
    "bench_commit.py",
    "bench_listing.py",  # 100,000 files; bench_listing.py --full for 1,000,000
    "bench_dask.py",
    "bench_flatten.py",
    "bench_tree.py",
    "bench_save.py",
    "bench_annotate.py",  # 1M cells labelled by three 500-point lassos, against shapely
    "bench_zip.py",
    "bench_first_commit.py",
    "bench_deep_remote.py",
    "bench_canvas_request.py",  # builds 1M and 10M-cell stacks (one to two minutes)
    "bench_cell_request.py",  # builds its own 1M and 10M-cell stacks, as the line above
    "bench_first_tissue.py",  # builds the demo (100k cells): bytes and server time per Figures step, sent once vs per figure
    "bench_tissue_disk.py",  # builds the demo and its million-cell variant (about 5 minutes): first tissue cold vs from disk
    "bench_obs_requests.py",  # builds 100k and 1M-cell stacks with 31 obs columns
    "bench_points.py",  # a 3M-transcript points element written by spatialdata: index, first view, a pan at full zoom
    "bench_shape_tiles.py",  # builds the demo (100k cells): nucleus tile bytes coded vs identity; an index past MAX_SHAPES vs geopandas
    "bench_compare_branch.py",  # builds the Xenium demo (3,000 cells); compare with its branch
    "bench_export.py",  # builds the 100,000-cell tissue demo; exports it with vector and pictured cells
    "bench_export_worker.py",  # builds the 3,000-cell tissue demo; exports drawn by the worker and in place
    "bench_canvas.py",  # needs Chromium (CHROMIUM, default /usr/bin/chromium) and playwright; skipped without
    "bench_webgl.py",  # the same needs; a ladder of sizes within a time budget, never fails on time
    "bench_tiles.py",  # the same needs; builds the big demo (about 2 minutes) and zooms into its image
    "bench_outlines.py",  # the same needs and js/node_modules (esbuild): cell outlines, line list vs PathLayer
    "bench_widget_entry.py",  # the same needs; the widget entry against the app it loads, imported in a page
]


def one_minute_load() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 1)
    except OSError:  # pragma: no cover - not on this platform
        return None


def run_one(script: str, extra: list[str]) -> tuple[dict[str, Any] | None, float, int]:
    print(f"\n=== {script} ===", flush=True)
    load_before = one_minute_load()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(HERE / script), *extra],
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE.parent,
    )
    result = None
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
        else:
            print(line, end="", flush=True)
    code = process.wait()
    if result is not None:
        # the load the benchmark ran under, at its start and its end: a ratio is read beside it
        result["load_1min"] = [load_before, one_minute_load()]
    return result, time.perf_counter() - start, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data, few rounds")
    parser.add_argument("--full", action="store_true", help="full sizes (1,000,000 zip members / files)")
    parser.add_argument(
        "--transcripts-30m",
        action="store_true",
        help="bench_points on 30,000,000 transcripts (the million-cell demo's count; minutes, GBs of disk)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--pass",
        dest="passed",
        default="",
        metavar="ARGS",
        help='arguments given to every benchmark run, e.g. --pass="--browser-only --top DIR" for bench_first_tissue',
    )
    parser.add_argument("only", nargs="*", help="run only these benchmarks (e.g. bench_open)")
    args = parser.parse_args()

    scripts = BENCHMARKS
    if args.only:
        wanted = {name.removesuffix(".py") for name in args.only}
        scripts = [s for s in BENCHMARKS if s.removesuffix(".py") in wanted]
    extra = (["--quick"] if args.quick else []) + (["--full"] if args.full else []) + args.passed.split()

    print(f"machine: {machine()}")
    total_start = time.perf_counter()
    results: list[dict[str, Any]] = []
    crashed: list[str] = []
    for script in scripts:
        heavy = ["--points", "30000000"] if args.transcripts_30m and script == "bench_points.py" else []
        result, elapsed, code = run_one(script, extra + heavy)
        if code != 0 or result is None:
            crashed.append(script)
            print(f"!!! {script} exited with status {code}", flush=True)
            continue
        result["elapsed_s"] = elapsed
        results.append(result)
    total = time.perf_counter() - total_start

    rows = [("benchmark", "A", "B", "median A", "median B", "A/B", "(quartiles)", "CPU A/B", "load", "goal", "")]
    for result in results:
        load = "..".join("?" if x is None else f"{x:g}" for x in result.get("load_1min", []))
        for c in result["comparisons"]:
            goal = "" if c["goal"] is None else f"<= {c['goal']:g}"
            if c.get("goal_seconds") is not None:
                goal = f"A <= {fmt(c['goal_seconds'])}"
            verdict = "" if c["met"] is None else ("met" if c["met"] else "MISSED")
            measured = (
                (f"{c['bytes_a'] / 1e6:.3f} MB/{c['unit']}", f"{c['bytes_b'] / 1e6:.3f} MB/{c['unit']}")
                if c.get("measure") == "bytes"  # a ratio of bytes (bench_first_tissue), not of times
                else (fmt(c["median_a_s"]) + f"/{c['unit']}", fmt(c["median_b_s"]) + f"/{c['unit']}")
            )
            rows.append(
                (
                    c["name"],
                    c["a"],
                    c["b"],
                    *measured,
                    f"{c['ratio']:.2f}",
                    f"({c['ratio_q1']:.2f}..{c['ratio_q3']:.2f})",
                    f"{c['cpu_ratio']:.2f}" if "cpu_ratio" in c else "-",
                    load,
                    goal,
                    verdict,
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print("\nSummary" + (" (--quick: small data, figures indicative only)" if args.quick else ""))
    print(f"machine: {machine()}; {load_average()}")
    for index, row in enumerate(rows):
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  " + "  ".join("-" * width for width in widths))
    missed = [c["name"] for r in results for c in r["comparisons"] if c["met"] is False]
    # Absolute goals (a time, a memory bound) are reported beside the comparisons as "met" / "*_met".
    missed += [
        f"{r['benchmark']} ({key})"
        for r in results
        for key, value in r.items()
        if key.endswith("met") and value is False
    ]
    print(f"\ngoals missed: {', '.join(missed) if missed else 'none'}")
    print(f"total time: {total:.0f} s")
    if crashed:
        print(f"crashed: {', '.join(crashed)}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "date": time.strftime("%Y-%m-%d", time.gmtime()),  # docs quote a run by its date
                    "machine": machine(),
                    "load": load_average(),
                    "quick": args.quick,
                    "results": results,
                },
                indent=2,
            )
            + "\n"
        )
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
