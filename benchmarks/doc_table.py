"""Put a `make bench` run into the docs as a table, so the numbers quoted are the run's own.

    .venv/bin/python benchmarks/run_all.py --json benchmarks/results/<date>.json [bench_x ...]
    .venv/bin/python benchmarks/doc_table.py benchmarks/results/<date>.json docs/performance.md

A results file is kept under ``benchmarks/results/``; a Markdown file quotes it between

    <!-- bench:begin benchmarks/results/<date>.json -->
    <!-- bench:end -->

and this script writes the table there. Several runs of the same benchmarks, quoted between

    <!-- bench:repro benchmarks/results/<run 1>.json benchmarks/results/<run 2>.json -->
    <!-- bench:end -->

get the table of whether each ratio reproduced across them (``compare_runs.py``; give the
files as one argument, as the marker names them). The published figures (``benchmarks/published.json``,
which ``reproduce.py`` checks a new run against) are summarised between

    <!-- bench:published benchmarks/published.json -->
    <!-- bench:end -->

(``bench:quoted`` instead: the figures quoted, without the table of those whose runs disagree;
the README's short form). ``tests/project/test_docs.py`` fails when the table differs
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

REGION = re.compile(
    r"<!-- bench:(?P<kind>begin|repro|published|quoted) (?P<file>[^>]*?) -->\n(?P<body>.*?)<!-- bench:end -->",
    re.DOTALL,
)


def _goal(comparison: dict[str, Any]) -> str:
    if comparison.get("goal_seconds") is not None:
        goal = f"A ≤ {_time(comparison['goal_seconds'])}"
    elif comparison.get("goal") is not None:
        goal = f"≤ {comparison['goal']:g}"
    else:
        return "–"
    met = comparison.get("met")
    return goal if met is None else f"{goal}: {'met' if met else '**missed**'}"


def _load(result: dict[str, Any]) -> str:
    """The 1-minute load average when the benchmark began and ended (files written before it say none)."""
    loads = result.get("load_1min")
    return "–" if not loads else "..".join("?" if x is None else f"{x:g}" for x in loads)


def _row(comparison: dict[str, Any], load: str) -> str:
    ratio = f"**{comparison['ratio']:.2f}** ({comparison['ratio_q1']:.2f}..{comparison['ratio_q3']:.2f})"

    def measured(side: str) -> str:
        if comparison.get("measure") == "bytes":  # a ratio of bytes (bench_first_tissue's pages), not of times
            return f"{comparison[side]}: {comparison[f'bytes_{side}'] / 1e6:.3f} MB per {comparison['unit']}"
        return f"{comparison[side]}: {_time(comparison[f'median_{side}_s'])} per {comparison['unit']}"

    cells = [
        comparison["name"],
        measured("a"),
        measured("b"),
        ratio,
        f"{comparison['cpu_ratio']:.2f}" if "cpu_ratio" in comparison else "–",
        load,
        _goal(comparison),
    ]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table(run: dict[str, Any]) -> str:
    """The Markdown a results file gives: a dated line saying where it ran, then one row per comparison."""
    quick = " (`--quick`: small data, indicative only)" if run.get("quick") else ""
    lines = [
        f"Measured {run['date']} by `make bench`{quick}: {run['machine']}; {run.get('load', 'load unknown')}.",
        "Medians; A / B is the median of the rounds' own ratios (alternating rounds), quartiles in brackets;"
        " CPU A / B: the same of the process's CPU time (what a call costs, whatever else runs);"
        " load: the 1-minute load average as the benchmark began and ended.",
        "",
        "| comparison | A | B | A / B | CPU A / B | load | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [_row(c, _load(result)) for result in run["results"] for c in result["comparisons"]]
    return "\n".join(lines) + "\n"


def _run(results_file: str) -> dict[str, Any]:
    path = (ROOT / results_file).resolve()
    if not path.is_relative_to(ROOT / "benchmarks" / "results") or not path.is_file():
        raise ValueError(f"{results_file}: no results file under benchmarks/results/")
    run: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return run


def region_body(results_file: str) -> str:
    """What belongs between the markers naming ``results_file`` (a path from the repository's root)."""
    return "\n" + table(_run(results_file)) + "\n"


def repro_body(results_files: str) -> str:
    """What belongs between ``bench:repro`` markers naming several results files (space-separated):
    the comparisons they share, run beside run (see ``benchmarks/compare_runs.py``)."""
    from compare_runs import SPREAD
    from compare_runs import table as runs_table

    runs = [_run(name) for name in results_files.split()]
    dates = ", ".join(f"{run['date']} ({run.get('load', 'load unknown')} at its end)" for run in runs)
    head = (
        f"The same comparisons in {len(runs)} runs of `make bench` on {dates}: a ratio reproduces when its "
        f"largest value is at most {SPREAD:g} times its smallest (`benchmarks/compare_runs.py`)."
    )
    return f"\n{head}\n\n{runs_table(runs)}\n"


def published_body(published_file: str, ranges: bool = True) -> str:
    """What belongs between ``bench:published`` markers: each published figure, setting by setting
    (``ranges=False``, for ``bench:quoted``: only the figures whose runs agree)."""
    import reproduce

    path = (ROOT / published_file).resolve()
    if path != reproduce.PUBLISHED:
        raise ValueError(f"{published_file}: the published figures are benchmarks/published.json")
    doc = reproduce.published(path)
    head = (
        f"Each figure in at least two settings, measured {doc['date']} "
        "(`benchmarks/published.json`; its peer B timed in the same rounds, the load as its benchmark began "
        "and ended); a figure reproduces when its largest value is at most "
        f"{reproduce.SPREAD:g} times its smallest. `make bench-check` puts a new run beside each."
    )
    return f"\n{head}\n\n{reproduce.summary_table(doc, ranges=ranges)}\n"


def region(results_file: str, kind: str = "begin") -> str:
    """The whole region, markers included, as it should stand (``kind`` "repro": several files;
    "published": the published figures; "quoted": those of them whose runs agree)."""
    if kind in ("published", "quoted"):
        body = published_body(results_file, ranges=kind == "published")
    else:
        body = repro_body(results_file) if kind == "repro" else region_body(results_file)
    return f"<!-- bench:{kind} {results_file} -->\n{body}<!-- bench:end -->"


def write(results_file: str, doc: Path) -> None:
    """Put the table of ``results_file`` into each region of ``doc`` that names it."""
    text = doc.read_text(encoding="utf-8")
    new = REGION.sub(
        lambda m: region(m.group("file"), m.group("kind")) if m.group("file") == results_file else m.group(0), text
    )
    if new == text and f" {results_file} -->" not in text:
        raise SystemExit(f"{doc}: no '<!-- bench:begin {results_file} -->' region; add the two markers first")
    doc.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    write(sys.argv[1], Path(sys.argv[2]))
