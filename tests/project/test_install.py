"""What pip installs: both halves of the extension with the jupyter extra, the core alone without extras,
and a dependency list equal to what the package imports."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import sds_jupyter
from sds_jupyter.errors import EXTRA_MODULES, MissingExtraError

JUPYTER = Path(sys.executable).with_name("jupyter")


def _jupyter(*args: str, tmp_path: Path) -> str:
    # A fresh config dir: only what the package installed into the environment counts.
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "NO_COLOR": "1"}
    result = subprocess.run([str(JUPYTER), *args], capture_output=True, text=True, env=env, check=True)
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)


@pytest.mark.skipif(not JUPYTER.exists(), reason="jupyter is not installed beside this Python")
def test_the_lab_extension_is_installed_prebuilt_and_enabled(tmp_path: Path) -> None:
    listing = _jupyter("labextension", "list", tmp_path=tmp_path)
    linked = Path(sys.prefix, "share", "jupyter", "labextensions", "sds-jupyter")
    if linked.is_symlink() and linked.resolve() == Path(sds_jupyter.__file__).parent / "labextension":
        # a working copy after `jupyter labextension develop` (docs/contributing.md): its link to this
        # package's own build stands where pip put the same files, and lab lists it without the package
        assert re.search(r"sds-jupyter v[\d.]+ enabled\s+OK", listing), listing
        return
    assert re.search(r"sds-jupyter v[\d.]+ enabled\s+OK \(python, sds-jupyter\)", listing), listing


@pytest.mark.skipif(not JUPYTER.exists(), reason="jupyter is not installed beside this Python")
def test_the_server_extension_is_enabled(tmp_path: Path) -> None:
    listing = _jupyter("server", "extension", "list", tmp_path=tmp_path)
    assert re.search(r"sds_jupyter\.server\s+enabled", listing), listing
    assert re.search(r"sds_jupyter\.server\s+OK", listing), listing


def test_the_widget_bundle_ships_inside_the_package() -> None:
    static = Path(__import__("sds_jupyter").__file__).parent / "static"
    entry, app = ((static / name).read_text() for name in ("widget.js", "widget-app.js"))
    for bundle in (entry, app):
        assert "export" in bundle and "render" in bundle
        # offline workspaces: nothing is imported from a CDN at run time
        assert not re.search(r"""(from\s*|import\s*\(\s*)["']https?://""", bundle)
    # the anywidget entry stays small (anywidget gives it 2 s); deck.gl and vega are in the app
    assert len(entry) < 20_000 < len(app), (len(entry), len(app))
    assert "vega" not in entry and "vega" in app
    assert (static / "widget.css").is_file()


class _Imports(ast.NodeVisitor):
    """Each third-party import of one file, with where it happens: ``core`` at the module's top,
    an extra's name under a ``needs_extra(extra, ...)`` guard (the ``except ImportError`` of a
    ``try`` at the top, or a call in the importing function), ``lazy`` in any other function.
    Imports under ``if TYPE_CHECKING:`` are for type checkers and are skipped."""

    def __init__(self) -> None:
        self.where = ["core"]
        self.found: list[tuple[str, str]] = []

    def _inside(self, where: str, nodes: list[ast.stmt]) -> None:
        self.where.append(where)
        for node in nodes:
            self.visit(node)
        self.where.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._inside(_guarded_extra(node.body) or "lazy", node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            self._inside(self.where[-1], node.body)
        self._inside(self.where[-1], node.orelse)

    def visit_Try(self, node: ast.Try) -> None:
        extra = _guarded_extra([stmt for handler in node.handlers for stmt in handler.body])
        self._inside(extra if extra and self.where[-1] == "core" else self.where[-1], node.body)
        for rest in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(rest)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.extend((self.where[-1], alias.name) for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.found.append((self.where[-1], node.module))


def _guarded_extra(body: list[ast.stmt]) -> str | None:
    """The extra named by a ``needs_extra("<extra>", ...)`` statement among ``body``, if any."""
    for stmt in body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "needs_extra":
            first = call.args[0] if call.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return first.value
    return None


def _imported_distributions() -> dict[str, dict[str, set[str]]]:
    """The distribution of every third-party module the package imports, with the files that import it,
    keyed by where the import happens (see :class:`_Imports`)."""
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    found: dict[str, dict[str, set[str]]] = {}
    for path in Path(sds_jupyter.__file__).parent.rglob("*.py"):
        imports = _Imports()
        imports.visit(ast.parse(path.read_text("utf-8")))
        for where, module in imports.found:
            top = module.split(".")[0]
            # _typeshed and the like exist for type checkers only and belong to no distribution
            for dist in owners.get(top, []) if top not in sys.stdlib_module_names else []:
                found.setdefault(where, {}).setdefault(_normal(dist), set()).add(path.name)
    for kind in found.values():
        kind.pop("sds-jupyter", None)
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    """pyproject.toml's [project] dependencies, and each extra's distributions with the extras it names
    (``sds-jupyter[export]``) expanded."""
    import tomllib

    project = tomllib.loads((Path(sds_jupyter.__file__).parents[1] / "pyproject.toml").read_text("utf-8"))["project"]

    def names(specs: list[str]) -> set[str]:
        return {_normal(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}

    raw = project["optional-dependencies"]

    def closure(extra: str) -> set[str]:
        own = {spec for spec in raw[extra] if not spec.startswith("sds-jupyter[")}
        inner = [name for spec in raw[extra] if spec.startswith("sds-jupyter[") for name in spec[12:-1].split(",")]
        return names(own).union(*(closure(name) for name in inner))

    return names(project["dependencies"]), {extra: closure(extra) for extra in raw}


def test_every_imported_package_is_declared() -> None:
    """Imports at a module's top are [project] dependencies; one under a ``needs_extra`` guard is in
    the extra it names; one made inside a function (an optional feature: awkward arrays a table may
    hold) is declared in an extra at least."""
    core, extras = _declared()
    imported = _imported_distributions()
    missing = {dist: sorted(files) for dist, files in imported.pop("core", {}).items() if dist not in core}
    assert not missing, f"imported at a module's top but not in [project] dependencies: {missing}"
    anywhere = core.union(*extras.values())
    undeclared = {dist: sorted(files) for dist, files in imported.pop("lazy", {}).items() if dist not in anywhere}
    assert not undeclared, f"imported but in no dependency list nor extra: {undeclared}"
    for extra, dists in imported.items():
        assert extra in extras, f"needs_extra({extra!r}) names no extra of pyproject.toml"
        outside = {dist: sorted(files) for dist, files in dists.items() if dist not in extras[extra] | core}
        assert not outside, f"imported under needs_extra({extra!r}) but not in that extra: {outside}"


def test_the_modules_needs_extra_looks_for_are_what_each_extra_installs() -> None:
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    core, extras = _declared()
    for extra, modules in EXTRA_MODULES.items():
        assert extra in extras, extra
        brought = {module: {_normal(dist) for dist in owners.get(module, [])} for module in modules}
        strays = {module: dists for module, dists in brought.items() if not dists & extras[extra]}
        assert not strays, f"{extra}: these modules come from no distribution of the extra: {strays}"
    # the core needs no extra: none of its distributions is one needs_extra looks for
    assert not core & {_normal(d) for m in EXTRA_MODULES["jupyter"] for d in owners.get(m, [])}


@pytest.mark.parametrize(
    ("blocked", "feature", "extra"),
    [
        ("anywidget", lambda: importlib.import_module("sds_jupyter.widget"), "jupyter"),
        ("IPython", lambda: sds_jupyter.load_ipython_extension(None), "jupyter"),
        ("tornado", lambda: importlib.import_module("sds_jupyter.server.handlers"), "jupyter"),
        ("jsonschema", lambda: importlib.import_module("sds_jupyter.studio.figurespecs"), "export"),
    ],
)
def test_a_feature_without_its_extra_is_one_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, blocked: str, feature: Callable[[], object], extra: str
) -> None:
    """A library set to None in sys.modules is one Python cannot import: the extra is as good as
    uninstalled for this process. The feature's modules are imported afresh."""
    # its submodules too: one imported earlier in this process would be found without its parent
    for name in [name for name in sys.modules if name.startswith(f"{blocked}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, blocked, None)
    for name in [name for name in sys.modules if name.startswith(("sds_jupyter.widget", "sds_jupyter.magics"))]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("sds_jupyter.server.handlers", "sds_jupyter.studio.figurespecs"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(MissingExtraError) as raised:
        feature()
    assert raised.value.extra == extra and raised.value.name == blocked
    assert str(raised.value).endswith(f"{blocked}, which is not installed: pip install 'sds-jupyter[{extra}]'")
    assert isinstance(raised.value, ImportError) and "\n" not in str(raised.value)


@pytest.mark.parametrize("blocked", ["dask", "xarray"])
def test_a_lazy_open_without_its_extra_names_it(demo_top: Path, monkeypatch: pytest.MonkeyPatch, blocked: str) -> None:
    """anndata's lazy reader needs dask and xarray, which a core install lacks: one line names the
    ``lazy`` extra before anything is read, and the eager open still works."""
    from sds_jupyter import open_anndata

    monkeypatch.setitem(sys.modules, blocked, None)
    with pytest.raises(MissingExtraError) as raised:
        open_anndata(demo_top, lazy=True)
    assert raised.value.extra == "lazy" and raised.value.name == blocked
    assert str(raised.value) == (
        f"open_anndata(lazy=True) needs {blocked}, which is not installed: pip install 'sds-jupyter[lazy]'"
    )
    assert open_anndata(demo_top).n_obs > 0


def test_the_command_line_names_the_extra_in_one_line(
    demo_top: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sds_jupyter.cli import EXIT_REFUSED, main

    monkeypatch.setitem(sys.modules, "vl_convert", None)
    assert main(["export", str(demo_top), "fig-nhood", str(tmp_path / "x.svg")]) == EXIT_REFUSED
    assert capsys.readouterr().err == (
        "sds-jupyter: error: figure export needs vl_convert, which is not installed: pip install 'sds-jupyter[export]'\n"
    )
    assert not (tmp_path / "x.svg").exists()
    monkeypatch.setitem(sys.modules, "spatialdata", None)
    assert main(["demo", "--small", str(tmp_path / "demo")]) == EXIT_REFUSED
    assert "the demo stacks needs spatialdata" in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()


# Run in the fresh venv: the core reads the stack, and each feature beyond it names its extra.
_CORE_READS = """
import importlib.util, json, sys
import sds_jupyter
from sds_jupyter import check, describe, flatten, open_anndata, open_stack
from sds_jupyter.errors import MissingExtraError

top, out = sys.argv[1], sys.argv[2]
adata = open_anndata(top)
answer = {
    "depth": describe(top)["depth"],
    "versions": len(open_stack(top).stack.versions),
    "ok": check(top).ok,
    "flat": flatten(top, out).name,
    "adata": [adata.n_obs, adata.n_vars, sorted(adata.obs.columns)],
    "installed": [m for m in ("anywidget", "IPython", "jupyter_server", "matplotlib", "spatialdata", "jsonschema")
                  if importlib.util.find_spec(m)],
    "refused": {},
}
features = {
    "VersionBrowser": lambda: sds_jupyter.VersionBrowser,
    "export_figure": lambda: sds_jupyter.export_figure,
    "%load_ext": lambda: sds_jupyter.load_ipython_extension(None),
    "open_spatialdata": lambda: sds_jupyter.open_spatialdata(top),
}
for name, feature in features.items():
    try:
        feature()
    except MissingExtraError as exc:
        answer["refused"][name] = [exc.extra, str(exc)]
print(json.dumps(answer))
"""


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True)
    return where / "bin" / "python"


def _pip(python: Path, *args: str) -> None:
    """``pip`` of the venv; an install writes no bytecode (``--no-compile``): the same files installed,
    and only the modules the test imports compiled, on import, not every one of numpy, pandas, zarr
    and anndata (the test took 24.5 s and 29.4 s, then 18.8 s and 22.8 s, load 1.3-3.1)."""
    if args[0] == "install":
        args = ("install", "--no-compile", *args[1:])
    result = subprocess.run([str(python), "-m", "pip", "--quiet", *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.install
def test_pip_install_without_extras_reads_a_stack(demo_top: Path, tmp_path: Path) -> None:
    """The wheel, built from this tree, installed with no extras into a fresh venv from the package
    index: it reads a stack spatialdata and our writer made, with a version on top written by hand,
    and every feature beyond the core refuses in one line naming its extra."""
    import shutil

    from kit.stackkit import write_version

    datasets = tmp_path / "datasets"
    shutil.copytree(demo_top.parent, datasets, symlinks=True)
    write_version(datasets, "core-1", f"cirro:::dataset:{demo_top.name}/layer.json")
    top = datasets / "core-1"
    # The build needs hatchling only: the front end in the tree is built already (make setup).
    builder = _venv(tmp_path / "build-venv")
    _pip(builder, "install", "hatchling>=1.21", "hatch-jupyter-builder>=0.8")
    root = Path(sds_jupyter.__file__).parents[1]
    _pip(builder, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(tmp_path / "dist"), str(root))
    (wheel,) = (tmp_path / "dist").glob("sds_jupyter-*.whl")
    python = _venv(tmp_path / "venv")
    _pip(python, "install", str(wheel))

    run = subprocess.run(
        [str(python), "-c", _CORE_READS, str(top), str(tmp_path / "flat.zarr")],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the source tree: the installed package is the one imported
        env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": ""},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    answer = json.loads(run.stdout)
    here = sds_jupyter.open_anndata(top)
    assert answer["installed"] == []
    assert answer["depth"] == answer["versions"] == 5 and answer["ok"] and answer["flat"] == "flat.zarr"
    assert answer["adata"] == [here.n_obs, here.n_vars, sorted(here.obs.columns)]
    assert {name: extra for name, (extra, _) in answer["refused"].items()} == {
        "VersionBrowser": "jupyter",
        "export_figure": "export",
        "%load_ext": "jupyter",
        "open_spatialdata": "spatialdata",
    }
    cli = subprocess.run(
        [str(python.with_name("sds-jupyter")), "export", str(top), "fig-nhood", str(tmp_path / "x.svg")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert cli.returncode == 2 and cli.stdout == ""
    assert cli.stderr.endswith("which is not installed: pip install 'sds-jupyter[export]'\n")
    assert cli.stderr.count("\n") == 1
