"""Whether a figure reproduces: the same comparisons in two or more results files, side by side.

    .venv/bin/python benchmarks/compare_runs.py benchmarks/results/<run 1>.json benchmarks/results/<run 2>.json

For each comparison found in every file it prints a Markdown row: the wall-time ratio A / B of
each run, the CPU-time ratio of each run (where recorded), the load each ran under, and whether
each ratio stayed within 25 % across the runs (the largest over the smallest, at most 1.25).
A figure the docs quote should be one that does; the others are reported as not reproducing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: A figure reproduces when its largest value across runs is at most this times its smallest.
SPREAD = 1.25


def _rows(run: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
    """Each comparison of a run by name, with the load its benchmark ran under."""
    found = {}
    for result in run["results"]:
        loads = result.get("load_1min") or []
        load = "..".join("?" if x is None else f"{x:g}" for x in loads) or "–"
        for comparison in result["comparisons"]:
            found[comparison["name"].strip()] = (comparison, load)
    return found


def _verdict(values: list[float]) -> str:
    if len(values) < 2 or min(values) <= 0:
        return "–"
    spread = max(values) / min(values)
    return f"{'yes' if spread <= SPREAD else '**no**'} ({spread:.2f})"


def table(runs: list[dict[str, Any]]) -> str:
    """The Markdown table of the comparisons every run holds."""
    found = [_rows(run) for run in runs]
    names = [name for name in found[0] if all(name in rows for rows in found[1:])]
    lines = [
        "| comparison | wall A / B per run | within 25 % | CPU A / B per run | within 25 % | load per run |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        picked = [rows[name] for rows in found]
        wall = [c["ratio"] for c, _ in picked]
        cpu = [c["cpu_ratio"] for c, _ in picked if "cpu_ratio" in c]
        cpu = cpu if len(cpu) == len(picked) else []
        cells = [
            name,
            ", ".join(f"{x:.2f}" for x in wall),
            _verdict(wall),
            ", ".join(f"{x:.2f}" for x in cpu) or "–",
            _verdict(cpu),
            ", ".join(load for _, load in picked),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    print(table([json.loads(Path(path).read_text(encoding="utf-8")) for path in sys.argv[1:]]), end="")
