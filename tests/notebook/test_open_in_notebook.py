"""Hostile folder names never run as code: "Open in notebook" and ``%sds_open`` (issue 8, item 1).

Whoever names a dataset names its folder, and the lab extension runs the notebook
it gets. Each version here is the studio stack's top version copied under a name
that would run code, read a variable or break quoting if it reached a cell or a
magic line as text. The notebook is made by the real server and run through
IPython (an InteractiveShell, and once a real kernel); it must bind ``adata`` and
do nothing else: no sentinel file, no variable read.
"""

# ruff: noqa: F811 - the fixtures of kit.rest are imported by name, then requested
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from kit.rest import fetch, jp_server_config  # noqa: F401 - fixtures

from sds_jupyter.server.handlers import NAMESPACE
from sds_jupyter.server.notebook import notebook_for

pytest_plugins = ["pytest_jupyter.jupyter_server", "kit.fixtures_service"]

SENTINEL = "pwned"

#: Folder names that run code, read variables or break quoting if used as text in a cell.
HOSTILE = [
    f"v{{open('{SENTINEL}','w').name}}",
    "v{__import__('os').getcwd()}",
    "v$x",
    "v${x}",
    f"v$(touch {SENTINEL})",
    f"v`touch {SENTINEL}`",
    f"v;touch {SENTINEL}",
    "v\"double\" and 'single' quotes",
    "v''' triple \"\"\"",
    "v%(x)s %s {0}",
    "v\nnew line",
    "v\x1b[31m escape \u202e bidi",
    "v # not a comment",
]
#: The server refuses backslashes in request paths, so these are tried through the magic only.
MAGIC_ONLY = ["v\\back\\slash", "v\\", "v\\n"]


@pytest.fixture(scope="module")
def hostile_datasets(tmp_path_factory: pytest.TempPathFactory, studio_stack) -> Path:
    """A datasets folder: the studio stack plus its top version copied under every hostile name."""
    datasets = tmp_path_factory.mktemp("hostile") / "datasets"
    shutil.copytree(studio_stack.datasets, datasets)
    for name in HOSTILE + MAGIC_ONLY:
        shutil.copytree(studio_stack.v2, datasets / name)
    return datasets


@pytest.fixture
def shell(monkeypatch) -> Any:
    """IPython with the extension loaded, display captured, and ``x`` set (so ``$x`` would show)."""
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sds_jupyter")
    shown: list[object] = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, metadata=None, **kwargs: shown.append(data))
    shell.user_ns["x"] = "EXPANDED"
    yield shell
    for name in ("adata", "browser", "x"):
        shell.user_ns.pop(name, None)


# ------------------------------------------------------------------ %sds_open


@pytest.mark.parametrize("name", HOSTILE + MAGIC_ONLY)
def test_sds_open_takes_a_hostile_path_literally(shell, hostile_datasets, monkeypatch, tmp_path, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    shell.run_line_magic("sds_open", shlex.quote(str(hostile_datasets / name)))
    assert "added_col" in shell.user_ns["adata"].obs
    assert not (tmp_path / SENTINEL).exists()


@pytest.mark.parametrize("name", [n for n in HOSTILE + MAGIC_ONLY if "\n" not in n])
def test_sds_open_cell_is_not_expanded(shell, hostile_datasets, monkeypatch, tmp_path, name: str) -> None:
    """The whole cell, as typed: the input transformer, then the magic (where IPython expands by default)."""
    monkeypatch.chdir(tmp_path)
    result = shell.run_cell(f"%sds_open {shlex.quote(str(hostile_datasets / name))} --as tbl")
    assert result.success, result.error_in_exec or result.error_before_exec
    assert "added_col" in shell.user_ns.pop("tbl").obs
    assert not (tmp_path / SENTINEL).exists()


def test_sds_open_expands_nothing_even_unquoted(shell, hostile_datasets, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(hostile_datasets)
    result = shell.run_cell("%sds_open v$x")
    assert result.success, result.error_in_exec
    result = shell.run_cell(f"%sds_open v{{open('{SENTINEL}','w').name}}")  # shell rules drop the bare quotes
    assert "'v{open(pwned,w).name}' does not exist" in str(result.error_in_exec)
    assert not (hostile_datasets / SENTINEL).exists()
    with pytest.raises(UsageError, match=r"'v\{x\}' does not exist"):
        shell.run_line_magic("sds_open", "v{x}")


@pytest.mark.parametrize("line", ["'unclosed", '"unclosed', "path\\"])
def test_sds_open_unbalanced_quotes_are_one_line(shell, line: str) -> None:
    with pytest.raises(UsageError, match="^sds_open: ") as info:
        shell.run_line_magic("sds_open", line)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ Open in notebook


@pytest.fixture
def root(jp_root_dir: Path, hostile_datasets: Path) -> Path:
    shutil.copytree(hostile_datasets, jp_root_dir / "datasets", symlinks=True)
    (jp_root_dir / "work").mkdir()
    return jp_root_dir


def _open_in_notebook(fetch, version: str) -> str:
    response = fetch(NAMESPACE, "api", "notebook", method="POST", body=json.dumps({"path": version}))
    assert response.code == 201
    return json.loads(response.body)["notebook_path"]


def _code(notebook: dict[str, Any]) -> list[str]:
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_generated_notebooks_bind_adata_and_do_nothing_else(root, fetch, shell, monkeypatch) -> None:
    monkeypatch.setenv("SDS_WORK_DIR", str(root / "work"))
    monkeypatch.chdir(root / "work")  # a kernel starts in its notebook's folder
    made = {name: _open_in_notebook(fetch, f"datasets/{name}") for name in HOSTILE}
    assert len(set(made.values())) == len(HOSTILE)
    for name, notebook_path in made.items():
        notebook = json.loads((root / notebook_path).read_text())
        assert notebook["metadata"]["sds_jupyter"]["version"] == f"datasets/{name}"
        for source in _code(notebook):
            shell.user_ns.pop("adata", None)
            result = shell.run_cell(source)
            assert result.success, (name, result.error_before_exec or result.error_in_exec)
        assert shell.user_ns["browser"].path == f"../datasets/{name}"
        assert "added_col" in shell.user_ns["adata"].obs, name
    assert not list(root.rglob(SENTINEL))
    assert shell.user_ns["x"] == "EXPANDED"


def test_generated_notebook_runs_in_a_real_kernel(root, fetch, monkeypatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("SDS_WORK_DIR", raising=False)
    name = HOSTILE[0]
    notebook_path = root / _open_in_notebook(fetch, f"datasets/{name}")
    notebook = nbformat.reads(notebook_path.read_text(), as_version=4)
    notebook.cells.append(
        nbformat.v4.new_code_cell("print(type(adata).__name__, adata.n_obs, 'added_col' in adata.obs)")
    )
    NotebookClient(notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(root)}}).execute()
    printed = "".join(out.get("text", "") for out in notebook.cells[-1].outputs)
    assert printed.strip() == "AnnData 26 True"
    assert not list(root.rglob(SENTINEL))


def test_titles_reach_only_an_escaped_heading() -> None:
    title = "<img src=x onerror=alert(1)>\n# second heading $x$ [link](javascript:1)\x1b[31m\u202e"
    notebook = notebook_for("../datasets/v", title, "datasets/v")
    heading = notebook["cells"][0]["source"]
    assert "\n" not in heading and "\x1b" not in heading and "\u202e" not in heading
    assert heading.startswith("# \\<img") and "\\$x\\$" in heading and "\\[link\\]\\(javascript:1\\)" in heading
    assert title not in json.dumps(_code(notebook))
