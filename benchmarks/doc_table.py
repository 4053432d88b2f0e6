"""Put a `make bench` run into the docs as a table, so the numbers quoted are the run's own.

    .venv/bin/python benchmarks/run_all.py --json benchmarks/results/<date>.json [bench_x ...]
    .venv/bin/python benchmarks/doc_table.py benchmarks/results/<date>.json docs/performance.md

A results file is kept under ``benchmarks/results/``; a Markdown file quotes it between

    <!-- bench:begin benchmarks/results/<date>.json -->
    <!-- bench:end -->

and this script writes the table there. ``tests/test_docs.py`` fails when the table differs
from what its file gives, so nobody edits a figure by hand (see docs/contributing.md).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import fmt_short_time as _time  # noqa: E402

REGION = re.compile(r"<!-- bench:begin (?P<file>\S+) -->\n(?P<body>.*?)<!-- bench:end -->", re.DOTALL)


def _goal(comparison: dict[str, Any]) -> str:
    if comparison.get("goal_seconds") is not None:
        goal = f"A ≤ {_time(comparison['goal_seconds'])}"
    elif comparison.get("goal") is not None:
        goal = f"≤ {comparison['goal']:g}"
    else:
        return "–"
    met = comparison.get("met")
    return goal if met is None else f"{goal}: {'met' if met else '**missed**'}"


def _row(comparison: dict[str, Any]) -> str:
    ratio = f"**{comparison['ratio']:.2f}** ({comparison['ratio_q1']:.2f}..{comparison['ratio_q3']:.2f})"
    cells = [
        comparison["name"],
        f"{comparison['a']}: {_time(comparison['median_a_s'])} per {comparison['unit']}",
        f"{comparison['b']}: {_time(comparison['median_b_s'])} per {comparison['unit']}",
        ratio,
        _goal(comparison),
    ]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table(run: dict[str, Any]) -> str:
    """The Markdown a results file gives: a dated line saying where it ran, then one row per comparison."""
    quick = " (`--quick`: small data, indicative only)" if run.get("quick") else ""
    lines = [
        f"Measured {run['date']} by `make bench`{quick}: {run['machine']}; {run.get('load', 'load unknown')}.",
        "Medians; A / B is the median of the rounds' own ratios (alternating rounds), quartiles in brackets.",
        "",
        "| comparison | A | B | A / B | goal |",
        "|---|---|---|---|---|",
    ]
    lines += [_row(c) for result in run["results"] for c in result["comparisons"]]
    return "\n".join(lines) + "\n"


def region_body(results_file: str) -> str:
    """What belongs between the markers naming ``results_file`` (a path from the repository's root)."""
    path = (ROOT / results_file).resolve()
    if not path.is_relative_to(ROOT / "benchmarks" / "results") or not path.is_file():
        raise ValueError(f"{results_file}: no results file under benchmarks/results/")
    return "\n" + table(json.loads(path.read_text(encoding="utf-8"))) + "\n"


def region(results_file: str) -> str:
    """The whole region, markers included, as it should stand."""
    return f"<!-- bench:begin {results_file} -->\n{region_body(results_file)}<!-- bench:end -->"


def write(results_file: str, doc: Path) -> None:
    """Put the table of ``results_file`` into each region of ``doc`` that names it."""
    text = doc.read_text(encoding="utf-8")
    new = REGION.sub(lambda m: region(m.group("file")) if m.group("file") == results_file else m.group(0), text)
    if new == text and f"bench:begin {results_file}" not in text:
        raise SystemExit(f"{doc}: no '<!-- bench:begin {results_file} -->' region; add the two markers first")
    doc.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    write(sys.argv[1], Path(sys.argv[2]))
