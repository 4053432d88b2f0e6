"""The command line: output people read, and one-line refusals with exit status 2.

What a command does is checked through its entry function in this process (``run_cli``); each
subcommand keeps a test in a real process (``cli_process``): a refusal or a finding from a new
Python, with its exit status and no traceback, as are the pipe and the imports below.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit.command import cli_process, run_cli
from kit.stackkit import write_base, write_version


def test_describe_lists_versions_top_first_then_the_base(demo_top: Path) -> None:
    result = run_cli("describe", str(demo_top))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "4 version(s), top first:"
    titles = [line for line in lines if line.startswith("  [")]
    assert titles[0].startswith("  [4] Neighborhood enrichment  dataset ")
    assert titles[-1].startswith("  [0] base: ")
    assert "      - set-obs regions (categorical)" in lines
    assert "      - delete-obs regions" in lines
    assert any("by ben@example.org at 20" in line for line in lines)


def test_describe_json(demo_top: Path) -> None:
    result = run_cli("describe", "--json", str(demo_top))
    info = json.loads(result.stdout)
    assert [v["depth"] for v in info["versions"]] == [4, 3, 2, 1]
    assert info["versions"][0]["dataset_id"] == demo_top.name
    assert info["base"]["kind"] == "folder" and info["base"]["zarr_format"] == 3


def test_check_passes_on_the_demo(demo_top: Path) -> None:
    result = run_cli("check", str(demo_top))
    assert result.returncode == 0 and result.stdout.strip().endswith("ok")


def test_check_finds_an_inconsistent_stack(datasets: Path) -> None:
    base = write_base(datasets, "base", {"t/zarr.json": b'{"zarr_format":3,"node_type":"group","attributes":{}}'})
    write_version(datasets, "v1", base, {"t/x": b"1"}, manifest={"files": [{"key": "t/x", "size": 99}], "depth": 4})
    result = cli_process("check", str(datasets / "v1"))
    assert result.returncode == 1
    assert "t/x is 1 bytes, listed as 99" in result.stdout
    assert "says depth 4" in result.stdout
    assert "no consolidated index" in result.stdout


def test_flatten_writes_the_store(demo_top: Path, tmp_path: Path) -> None:
    result = cli_process("flatten", str(demo_top), str(tmp_path / "out.zarr"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.zarr" / "zarr.json").is_file()


def test_folders_option_takes_the_folder_map(datasets: Path, tmp_path: Path) -> None:
    write_base(datasets, "0d13", {}, name="s.zarr")
    (datasets / "0d13").rename(datasets / "Pancreas")
    write_version(datasets, "v1", "cirro:::dataset:0d13/s.zarr", {"k": b"1"})
    assert run_cli("describe", str(datasets / "v1")).returncode == 1  # the base is missing without the map
    result = run_cli("describe", "--folders", '{"0d13": "Pancreas"}', str(datasets / "v1"))
    assert result.returncode == 0, result.stderr
    assert "Pancreas (dataset 0d13))" in result.stdout.splitlines()[-1]  # named as the folder map names it
    env_result = run_cli("describe", str(datasets / "v1"), env={"SDS_CIRRO_DATASETS": '{"0d13": "Pancreas"}'})
    assert env_result.returncode == 0


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda d: write_version(d, "v1", "cirro:::dataset:gone-1234/layer.json", {"k": b"1"}), "gone-1234"),
        (
            lambda d: write_version(d, "v1", "cirro:::dataset:a/../x/layer.json", {"k": b"1"}),
            "not a plain relative path",
        ),
        (lambda d: write_version(d, "v1", "nope", {"k": b"1"}), "not a Cirro reference"),
        (
            lambda d: write_version(
                d, "v1", "cirro:::dataset:x/layer.json", {"k": b"1"}, manifest={"format_version": 3}
            ),
            "not supported",
        ),
    ],
)
def test_refusals_are_one_line_and_exit_2(datasets: Path, make, words: str) -> None:  # noqa: ANN001
    make(datasets)
    # describe lists what resolves above a missing dataset (test_describe_above_a_missing_parent...)
    commands = (["check"], ["flatten"]) if words == "gone-1234" else (["describe"], ["check"], ["flatten"])
    for command in commands:
        args = [*command, str(datasets / "v1")] + ([str(datasets.parent / "out")] if command == ["flatten"] else [])
        result = run_cli(*args)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1 and words in result.stderr
        assert result.stderr.startswith("sds-jupyter: error: ") and "Traceback" not in result.stderr


def test_describe_above_a_missing_parent_lists_what_resolves_and_names_what_is_missing(datasets: Path) -> None:
    base = write_base(datasets, "base", {})
    write_version(datasets, "v1", base, {"k": b"1"}, manifest={"title": "Clusters", "depth": 1})
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"k": b"2"}, manifest={"title": "Types"})
    write_version(datasets, "v3", "cirro:::dataset:v2/layer.json", {"k": b"3"}, manifest={"title": "Regions"})
    shutil.rmtree(datasets / "v1")
    result = run_cli("describe", str(datasets / "v3"))
    assert result.returncode == 1 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "2 version(s) resolve, top first, above a missing dataset:"
    # the versions keep their own depths (v1 counts, though missing)
    assert [line.split("  dataset ")[0] for line in lines if line.startswith("  [")] == ["  [3] Regions", "  [2] Types"]
    missing = next(line for line in lines if line.startswith("  missing: "))
    assert missing.startswith("  missing: dataset v1: dataset v1 is not in ") and "attach it" in missing
    info = json.loads(run_cli("describe", "--json", str(datasets / "v3")).stdout)
    assert [v["dataset_id"] for v in info["versions"]] == ["v3", "v2"] and info["base"] is None
    assert info["missing"]["dataset_id"] == "v1"


def test_bad_folder_map_json_is_one_line(demo_top: Path) -> None:
    result = cli_process("describe", "--folders", "{oops", str(demo_top))
    assert result.returncode == 2 and "not valid JSON" in result.stderr and "Traceback" not in result.stderr


def test_demo_builds_a_stack(tmp_path: Path) -> None:
    result = run_cli("demo", "--small", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    top = Path(result.stdout.strip())
    assert (top / "layer.json").is_file()
    assert run_cli("check", str(top)).returncode == 0


def test_demo_cells_sizes_the_xenium_demo(tmp_path: Path) -> None:
    import spatialdata

    from sds_jupyter.demo.xenium import IMAGE, SHAPES
    from sds_jupyter.stack import Stack

    result = run_cli("demo", "--cells", "800", "--side", "512", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    sdata = spatialdata.read_zarr(str(Stack.resolve(Path(result.stdout.strip())).base.path))
    assert sdata.tables["table"].n_obs == 800 and len(sdata.shapes[SHAPES]) == 800
    assert sdata.images[IMAGE]["scale0"].image.shape[1:] == (512, 512)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--cells", "0"], "cells: 0 is fewer than 100"),
        (["--cells", "many"], "cells: 'many' is not a whole number"),
        (["--side", "12"], "image side: 12 is fewer than 256"),
        (["--small", "--cells", "1000"], "--small is the 26-cell demo"),
    ],
)
def test_demo_sizes_refused_in_one_line(tmp_path: Path, args: list[str], words: str) -> None:
    result = cli_process("demo", *args, str(tmp_path / "demo"))
    assert result.returncode == 2 and words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "demo").exists()


@pytest.mark.parametrize("suffix", ["svg", "png", "pdf"])
def test_export_draws_a_saved_figure(demo_top: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"fig.{suffix}"
    result = run_cli("export", str(demo_top), "fig-nhood", str(out))
    assert result.returncode == 0, result.stderr
    head = out.read_bytes()[:8]
    assert {
        "svg": b"<svg" in out.read_bytes()[:400],
        "png": head.startswith(b"\x89PNG"),
        "pdf": head.startswith(b"%PDF"),
    }[suffix]


def test_export_of_a_missing_figure_is_one_line(demo_top: Path, tmp_path: Path) -> None:
    result = cli_process("export", "--version", "1", str(demo_top), "fig-nhood", str(tmp_path / "x.svg"))
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("suffix", ["svg", "png", "pdf"])
def test_export_draws_every_tissue_figure_of_the_demo(demo_top: Path, tmp_path: Path, suffix: str) -> None:
    """The issue's failure was a raw TypeError for the tissue (canvas) figures; each now draws."""
    for figure in ("fig-clusters", "fig-regions"):
        out = tmp_path / f"{figure}.{suffix}"
        result = run_cli("export", "--dpi", "120", "--view", "0,0,256,256", str(demo_top), figure, str(out))
        assert result.returncode == 0 and result.stdout == f"wrote {out}\n", result.stderr
        assert out.stat().st_size > 1000
    if suffix == "png":
        from PIL import Image

        with Image.open(out) as image:
            assert round(image.info["dpi"][0]) == 120


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--view", "1,2,3"], "x0,y0,x1,y1"), (["--dpi", "5"], "dpi must be"), ([], "No figure 'fig-none'")],
)
def test_export_refusals_are_one_line(demo_top: Path, tmp_path: Path, args: list[str], says: str) -> None:
    figure = "fig-none" if not args else "fig-clusters"
    result = run_cli("export", *args, str(demo_top), figure, str(tmp_path / "x.png"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("args", [("--help",), ("describe", "{top}"), ("describe", "--json", "{top}")])
def test_a_reader_that_leaves_early_gets_no_traceback(demo_top: Path, args: tuple[str, ...]) -> None:
    """``sds-jupyter … | head``: the pipe closes before the output is written (here, before the
    program starts), and the command stops quietly with the shell's code for it."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sds_jupyter", *(a.format(top=demo_top) for a in args)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141


#: What the command line imports only in a command that reads a stack (each 0.1-0.3 s of CPU).
_HEAVY = ("zarr", "numpy", "pandas", "anndata", "spatialdata", "scipy", "dask")

_IMPORTS_OF = """
import runpy, sys
sys.argv = ["sds-jupyter", *sys.argv[1:]]
try:
    runpy.run_module("sds_jupyter", run_name="__main__")
except SystemExit as exit:
    code = exit.code
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {heavy!r})
print(code, ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "status"),
    [(["--help"], 0), (["describe", "--help"], 0), (["describe", "--no-such-option"], 2), (["no-such-command"], 2)],
)
def test_help_and_a_refused_argument_import_no_data_library(args: list[str], status: int) -> None:
    """`sds-jupyter --help` or a mistyped option answers in a few hundredths of a second, not after
    importing zarr, numpy and pandas: the package and the command line load the stack on first use."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_OF.format(heavy=set(_HEAVY)), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    code, _, heavy = done.stderr.strip().splitlines()[-1].partition(" ")
    assert (code, heavy) == (str(status), ""), done.stderr
    assert "usage: sds-jupyter" in done.stdout + done.stderr


def test_the_package_names_it_loads_on_first_use_are_the_stacks() -> None:
    """`sds_jupyter.describe`, `.Stack`: the stack's own, imported when first asked for."""
    code = (
        "import sys, sds_jupyter\n"
        "before = 'sds_jupyter.stack' in sys.modules\n"
        "import sds_jupyter.stack as stack\n"
        "print(before, sds_jupyter.describe is stack.describe, sds_jupyter.Stack is stack.Stack)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True"]
