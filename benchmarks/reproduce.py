"""Whether the published figures reproduce here: run their benchmarks, put this run beside each figure.

    make bench-check                                      # or:
    .venv/bin/python benchmarks/reproduce.py              # runs the benchmarks the figures come from
    .venv/bin/python benchmarks/reproduce.py --results R.json   # a run_all.py --json file instead of running
    .venv/bin/python benchmarks/reproduce.py --keep benchmarks/results/<name>.json   # keep this run's results

The figures the docs publish are listed in ``benchmarks/published.json``: for each, the benchmark
and comparison it comes from, whether it is a CPU-time or a wall-time ratio, and the results files
of the runs it was measured in (each in its own setting: another Python and zarr, another number
of cores). Nothing in that file is a number: the ratios, the peer's times and the loads are read
from the results files, and the docs' summary table is written from them (``doc_table.py``; the
docs test fails when it differs). For each figure this prints the published ratio of every
setting, this run's ratio, the peer's time in this run, and whether this run lies within 25 % of
every published one (the largest of them all at most 1.25 times the smallest), with the load.

Timing never fails the check: a figure that does not reproduce is reported. ``--strict`` makes the
exit status 1 then (for a machine meant to match the published one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _common import fmt_short_time as fmt  # noqa: E402
from _common import load_average, machine  # noqa: E402

#: The list of published figures.
PUBLISHED = HERE / "published.json"
#: A figure reproduces when its largest value across settings is at most this times its smallest.
SPREAD = 1.25
#: What each measure reads from a comparison.
MEASURES = {"cpu": "cpu_ratio", "wall": "ratio"}


def published(path: Path = PUBLISHED) -> dict[str, Any]:
    """The list of published figures, checked: each names a benchmark, a comparison, a measure, runs."""
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for figure in doc["figures"]:
        missing = {"id", "what", "benchmark", "comparison", "measure", "runs"} - set(figure)
        if missing:
            raise ValueError(f"{path.name}: figure {figure.get('id')!r} lacks {', '.join(sorted(missing))}")
        if figure["measure"] not in MEASURES:
            raise ValueError(f"{path.name}: figure {figure['id']!r}: measure is one of {', '.join(MEASURES)}")
        for results in figure["runs"].values():
            _results_path(results)
    return doc


def _results_path(name: str) -> Path:
    path = (ROOT / name).resolve()
    if not path.is_relative_to(ROOT / "benchmarks" / "results") or not path.is_file():
        raise ValueError(f"{name}: no results file under benchmarks/results/")
    return path


def _load_text(result: dict[str, Any]) -> str:
    loads = result.get("load_1min") or []
    return "..".join("?" if x is None else f"{x:g}" for x in loads) or "–"


def find(run: dict[str, Any], figure: dict[str, Any]) -> dict[str, Any] | None:
    """The figure's comparison in a results file (with the load its benchmark ran under), or None."""
    for result in run["results"]:
        if result["benchmark"].removeprefix("bench_") != figure["benchmark"].removeprefix("bench_"):
            continue
        for comparison in result["comparisons"]:
            if comparison["name"].strip() == figure["comparison"]:
                return {**comparison, "load": _load_text(result), "run_load": run.get("load", "")}
    return None


def value(comparison: dict[str, Any], figure: dict[str, Any]) -> float | None:
    found = comparison.get(MEASURES[figure["measure"]])
    return None if found is None else float(found)


def peer_time(comparison: dict[str, Any], figure: dict[str, Any]) -> str:
    """The peer's (B's) median time in the figure's measure: CPU time for a CPU ratio."""
    key = "cpu_b_s" if figure["measure"] == "cpu" and "cpu_b_s" in comparison else "median_b_s"
    return fmt(comparison[key])


def spread(values: list[float]) -> float | None:
    """The largest value over the smallest (None for fewer than two or a non-positive one)."""
    if len(values) < 2 or min(values) <= 0:
        return None
    return max(values) / min(values)


def settings(figure: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(setting, comparison)`` of each run the figure was published from."""
    found = []
    for setting, name in figure["runs"].items():
        run = json.loads(_results_path(name).read_text(encoding="utf-8"))
        comparison = find(run, figure)
        if comparison is None:
            raise ValueError(f"{name}: holds no comparison {figure['comparison']!r} of {figure['benchmark']}")
        found.append((setting, comparison))
    return found


def reproduced(figure: dict[str, Any]) -> bool:
    """Whether the published runs of ``figure`` agree within 25 % (what lets the docs quote it)."""
    found = [value(c, figure) for _, c in settings(figure)]
    ratios = [x for x in found if x is not None]
    within = spread(ratios)
    return len(ratios) == len(found) and within is not None and within <= SPREAD


def check(run: dict[str, Any], doc: dict[str, Any]) -> tuple[list[str], int]:
    """The report's lines for ``run`` against every published figure, and how many did not reproduce."""
    lines = [f"this run: {run.get('machine', '?')}; {run.get('load', 'load unknown')}", ""]
    header = ("figure", "measure", "published", "this run", "peer (B) here", "load here", "within 25 %")
    rows = [header]
    failed = 0
    for figure in doc["figures"]:
        before = [(setting, value(c, figure)) for setting, c in settings(figure)]
        mine = find(run, figure)
        now = None if mine is None else value(mine, figure)
        known = [x for _, x in before if x is not None]
        if now is None:
            verdict, peer, load = "not measured in this run", "–", "–"
        else:
            within = spread([*known, now])
            ok = within is not None and within <= SPREAD
            failed += not ok
            verdict = f"{'yes' if ok else 'NO'} ({within:.2f})" if within is not None else "–"
            peer, load = peer_time(mine, figure), mine["load"]
        rows.append(
            (
                figure["id"],
                f"{figure['measure']} A/B",
                ", ".join(f"{x:.2f}" for x in known) or "–",
                "–" if now is None else f"{now:.2f}",
                peer,
                load,
                verdict,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for index, row in enumerate(rows):
        lines.append("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            lines.append("  " + "  ".join("-" * width for width in widths))
    lines += ["", "settings of the published runs:"]
    lines += [f"  {figure['id']}: " + "; ".join(figure["runs"]) for figure in doc["figures"]]
    return lines, failed


def summary_table(doc: dict[str, Any], ranges: bool = True) -> str:
    """The docs' summary of the published figures (written by ``doc_table.py``, checked by the docs test).

    A figure whose runs agree within 25 % is quoted, setting by setting; one whose runs do not is
    not quoted as a figure: a second table gives the range its runs span, each run's peer and load
    beside it (issue 42: a figure is stated only as far as its runs support it); ``ranges=False``
    leaves that table out.
    """
    header = "| what | {ratios} | peer (B) per setting | load per setting | within 25 % | goal |"
    quoted = [header.format(ratios="ratio per setting"), "|---|---|---|---|---|---|"]
    ranged = [header.format(ratios="range of the runs, then ratio per setting"), "|---|---|---|---|---|---|"]
    for figure in doc["figures"]:
        found = settings(figure)
        ratios = [value(c, figure) for _, c in found]
        known = [x for x in ratios if x is not None]
        within = spread(known) if len(known) == len(ratios) else None
        holds = within is not None and within <= SPREAD
        verdict = "–" if within is None else f"{'yes' if holds else '**no**'} ({within:.3f})"
        if figure.get("note"):
            verdict += f": {figure['note']}"
        measure = "CPU" if figure["measure"] == "cpu" else "wall"
        per_setting = "; ".join(f"{x:.2f} ({setting})" for (setting, _), x in zip(found, ratios) if x is not None)
        span = f"{min(known):.2f} to {max(known):.2f}: " if known and not holds else ""
        cells = [
            figure["what"],
            f"{span}{per_setting}; {measure} time",
            "; ".join(peer_time(c, figure) for _, c in found),
            "; ".join(c["load"] for _, c in found),
            verdict,
            "–" if figure.get("goal") is None else f"≤ {figure['goal']}",
        ]
        (quoted if holds else ranged).append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |")
    text = "\n".join(quoted) + "\n"
    if ranges and len(ranged) > 2:
        text += (
            "\nNot within 25 % across their runs, so not quoted as figures: the range the runs span, "
            "with each run's peer and load.\n\n" + "\n".join(ranged) + "\n"
        )
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", metavar="PATH", help="a run_all.py --json file to check instead of running")
    parser.add_argument("--keep", metavar="PATH", help="keep this run's results file here")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a figure does not reproduce")
    parser.add_argument("--quick", action="store_true", help="small data (figures mean little: a smoke run)")
    args = parser.parse_args()
    doc = published()
    if args.results:
        run = json.loads(Path(args.results).read_text(encoding="utf-8"))
    else:
        # a result names its benchmark as the script does, or without "bench_" (annotate)
        benchmarks = sorted({"bench_" + figure["benchmark"].removeprefix("bench_") for figure in doc["figures"]})
        with tempfile.TemporaryDirectory(prefix="sds-bench-check-") as folder:
            out = Path(args.keep) if args.keep else Path(folder) / "run.json"
            command = [sys.executable, str(HERE / "run_all.py"), "--json", str(out), *benchmarks]
            code = subprocess.run(command + (["--quick"] if args.quick else []), cwd=ROOT).returncode
            if code != 0 and not out.is_file():
                print(f"run_all.py exited with status {code}")
                return code
            run = json.loads(out.read_text(encoding="utf-8"))
    lines, failed = check(run, doc)
    print(f"\nReproduction of {len(doc['figures'])} published figures (benchmarks/published.json)")
    print(f"machine: {machine()}; {load_average()}")
    print("\n".join(lines))
    print(f"\nnot within 25 %: {failed} of {len(doc['figures'])}")
    if run.get("quick"):
        print("(--quick: small data, so these ratios are not the published ones' to compare; a smoke run)")
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
