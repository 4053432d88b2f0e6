"""The README and docs/ stay true: links resolve, measurements are dated, limits match the code.

The rules themselves are in ``tests/kit/docs_check.py`` (runnable without pytest); these tests run
them on the real files, and on small files written here to show each rule catches what it names.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from kit import docs_check as dc

import sds_jupyter.limits as limits

#: A picture in docs/images/ stays under this many bytes, so the README loads fast (docs/contributing.md).
MAX_IMAGE_BYTES = 150_000


def test_every_relative_link_resolves_to_a_file_and_heading() -> None:
    broken = [line for path in dc.doc_files() for line in dc.broken_links(path)]
    assert broken == []


def test_every_measurement_is_dated_or_a_named_constant() -> None:
    unmarked = [line for block in dc.all_blocks() for line in dc.unmarked_measurements(block)]
    assert unmarked == []


def test_every_quoted_constant_has_the_value_the_docs_give() -> None:
    wrong = [line for block in dc.all_blocks() for line in dc.constant_mismatches(block)]
    assert wrong == []


def test_the_python_api_list_is_what_the_code_says() -> None:
    assert dc.documented_api_block() == dc.api_block(), "run: python tests/kit/docs_check.py --write-api"


def test_the_api_list_names_every_public_name() -> None:
    import sds_jupyter

    listed = dc.documented_api_block()
    callables = [name for name in sds_jupyter.__all__ if callable(getattr(sds_jupyter, name))]
    assert callables
    assert [name for name in callables if not re.search(rf"^{name}[(\s]", listed, re.MULTILINE)] == []


def test_safety_names_every_limit_of_limits_py() -> None:
    """Each bound in sds_jupyter/limits.py appears in docs/safety.md with its value (checked above)."""
    names = [n for n, v in vars(limits).items() if n.isupper() and isinstance(v, int | float)]
    assert len(names) > 20
    safety = (dc.ROOT / "docs" / "safety.md").read_text(encoding="utf-8")
    quoted = {m.group("name") for m in dc.CONSTANT_REF.finditer(safety)}
    assert sorted(set(names) - quoted) == []


def test_architecture_names_every_import_contract() -> None:
    """A contract added to pyproject.toml is explained in docs/architecture.md (by its name)."""
    import tomllib

    config = tomllib.loads((dc.ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = [c["name"] for c in config["tool"]["importlinter"]["contracts"]]
    assert names
    architecture = (dc.ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [name for name in names if f'"{name}"' not in architecture] == []


def test_the_readme_keeps_the_two_set_up_commands() -> None:
    readme = (dc.ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^make demo\b", readme, re.MULTILINE)
    assert re.search(r"^make test\b", readme, re.MULTILINE)
    assert len(readme.splitlines()) <= 150


def test_the_readme_shows_an_exported_figure() -> None:
    """Issue 25's "the README shows one exported figure": a picture the export renderer drew."""
    readme = (dc.ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"!\[[^\]]*\]\((docs/images/export-[\w-]+\.png)\)", readme)
    assert shown and all((dc.ROOT / path).is_file() for path in shown)


def test_the_readme_pictures_are_small(tmp_path: Path) -> None:
    images = sorted((dc.ROOT / "docs" / "images").glob("*.png"))
    assert images
    assert [p.name for p in images if p.stat().st_size >= MAX_IMAGE_BYTES] == []


# --- each rule catches what it names, on files written here --------------------------------------


def _blocks(tmp_path: Path, text: str) -> list[dc.Block]:
    path = tmp_path / "probe.md"
    path.write_text(text, encoding="utf-8")
    return list(dc.blocks(path))


@pytest.mark.parametrize(
    "text",
    [
        "Opening takes 42 ms.",
        "- a list item: 4.35 MB over the wire",
        "| row | 0.98× |",
        "## Numbers\n\nIt was 2.9x Icechunk's.",
        "Measured 2026-12-04.\n\nA later paragraph: 3 s.",  # a date dates its own paragraph (or its section) only
    ],
)
def test_an_undated_measurement_is_caught(tmp_path: Path, text: str) -> None:
    found = [line for block in _blocks(tmp_path, text) for line in dc.unmarked_measurements(block)]
    assert len(found) == 1


@pytest.mark.parametrize(
    "text",
    [
        "Opening takes 42 ms (measured 2026-12-04, 2-core VM).",
        "## Speed (measured 2026-12-04)\n\nIt takes 42 ms.\n\n- and 3 s",
        "## Speed\n\nMeasured 2026-12-04 on the VM.\n\nIt takes 42 ms.",
        "Measured 2026-12-04:\n\n| what | time |\n|---|---|\n| open | 42 ms |",
        "The view asks every 4 s (`POLL_INTERVAL`).",
        "An image of 8192 × 8192 pixels, `--dpi 72` and `0.5 s` in code.",
        "```\nmake bench   # 42 ms\n```",
    ],
)
def test_a_dated_or_named_number_passes(tmp_path: Path, text: str) -> None:
    assert [line for block in _blocks(tmp_path, text) for line in dc.unmarked_measurements(block)] == []


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("The view asks every 4 s (`POLL_INTERVAL`).", 0),
        ("The view asks every 5 s (`POLL_INTERVAL`).", 1),
        ("One manifest: 64 MiB (`MAX_MANIFEST_BYTES`); a chain 500 versions deep (`MAX_DEPTH`).", 0),
        ("One manifest: 64 MB (`MAX_MANIFEST_BYTES`).", 1),  # MB is not MiB
        ("Integers within ±2⁵³−1 (`MAX_SAFE_INTEGER`), sides up to 2²⁰ (`MAX_IMAGE_AXIS`).", 0),
        ("At most 7 (`NO_SUCH_CONSTANT_ANYWHERE`).", 1),
    ],
)
def test_a_quoted_constant_is_checked_against_the_code(tmp_path: Path, text: str, wrong: int) -> None:
    assert len([line for block in _blocks(tmp_path, text) for line in dc.constant_mismatches(block)]) == wrong


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Read me\n", encoding="utf-8")
    (tmp_path / "docs" / "safety.md").write_text("# Safety\n\n## What `check` reports\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Outside\n", encoding="utf-8")
    path = tmp_path / "docs" / "probe.md"
    path.write_text(
        "# Here\n\n[ok](../README.md) [ok](#here) [ok](safety.md#what-check-reports) [gone](nowhere.md) "
        "[no anchor](safety.md#nowhere) [web](https://example.org/x.md)\n",
        encoding="utf-8",
    )
    found = [line.split(": ")[1] for line in dc.broken_links(path, root=tmp_path / "docs")]
    assert found == ["../README.md", "nowhere.md", "safety.md#nowhere"]  # ../README.md is outside root


def test_every_bench_table_is_what_its_results_file_gives() -> None:
    stale = [line for path in dc.doc_files() for line in dc.stale_bench_tables(path)]
    assert stale == []


def test_a_reproduction_table_is_what_its_runs_give(tmp_path: Path) -> None:
    """A bench:repro region lists each shared comparison's ratio per run and whether it stayed within 25 %;
    a figure edited by hand there is caught too."""
    issue42 = "benchmarks/results/2026-12-06-issue42.json"
    names = f"{issue42} {issue42}"
    region = dc.bench_tables().region(names, "repro")
    assert "| open 500-deep, cold | 0.93, 0.93 | yes (1.00) |" in region  # one run twice: no spread
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Runs\n\n{region}\n", encoding="utf-8")
    assert list(dc.stale_bench_tables(doc)) == []
    doc.write_text(f"# Runs\n\n{region.replace('0.93, 0.93', '0.93, 0.94', 1)}\n", encoding="utf-8")
    assert len(list(dc.stale_bench_tables(doc))) == 1


def test_a_hand_edited_bench_table_is_caught(tmp_path: Path) -> None:
    """A figure changed by hand inside a bench region, or a region naming no results file, is caught."""
    results = sorted((dc.ROOT / "benchmarks" / "results").glob("*.json"))
    assert results, "benchmarks/results/ keeps at least one make bench run that the docs quote"
    name = str(results[-1].relative_to(dc.ROOT))
    region = dc.bench_tables().region(name)
    assert re.search(r"Measured \d{4}-\d{2}-\d{2} by `make bench`", region)
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Run\n\n{region}\n", encoding="utf-8")
    assert list(dc.stale_bench_tables(doc)) == []
    edited = re.sub(r"\*\*(\d+)\.(\d+)\*\*", lambda m: f"**{int(m.group(1)) + 1}.{m.group(2)}**", region, count=1)
    assert edited != region
    doc.write_text(f"# Run\n\n{edited}\n", encoding="utf-8")
    assert len(list(dc.stale_bench_tables(doc))) == 1
    doc.write_text("<!-- bench:begin benchmarks/results/none.json -->\n<!-- bench:end -->\n", encoding="utf-8")
    assert len(list(dc.stale_bench_tables(doc))) == 1


def test_the_published_figures_are_summarised_from_their_runs(tmp_path: Path) -> None:
    """benchmarks/published.json names each figure's runs; the README and docs/performance.md carry its
    table (written by doc_table.py, so no ratio there is typed by hand), and reproduce.py puts a run beside it."""
    for doc, kind in ((dc.ROOT / "README.md", "quoted"), (dc.ROOT / "docs" / "performance.md", "published")):
        marker = f"<!-- bench:{kind} benchmarks/published.json -->"
        assert marker in doc.read_text(encoding="utf-8"), f"{doc.name} summarises the published figures"
    spec = importlib.util.spec_from_file_location("reproduce", dc.ROOT / "benchmarks" / "reproduce.py")
    assert spec is not None and spec.loader is not None
    reproduce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reproduce)
    published = reproduce.published()
    assert published["figures"] and all(len(figure["runs"]) >= 2 for figure in published["figures"])
    figure = published["figures"][0]
    first = dc.ROOT / next(iter(figure["runs"].values()))
    lines, _ = reproduce.check(json.loads(first.read_text(encoding="utf-8")), published)
    row = next(line for line in lines if line.strip().startswith(figure["id"] + " "))
    assert "not measured" not in row  # the run a figure came from holds it
    region = dc.bench_tables().region("benchmarks/published.json", "published")
    # a figure is quoted only when all its runs agree; the others stand apart, as ranges
    quoted, _, ranged = region.partition("Not within 25 %")
    assert "**no**" not in quoted and "| yes (" not in ranged
    assert "Not within 25 %" not in dc.bench_tables().region("benchmarks/published.json", "quoted")
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Figures\n\n{region}\n", encoding="utf-8")
    assert list(dc.stale_bench_tables(doc)) == []
    doc.write_text(f"# Figures\n\n{region.replace('| yes (', '| no (', 1)}\n", encoding="utf-8")
    assert len(list(dc.stale_bench_tables(doc))) == 1
