"""pip install alone enables both halves: the prebuilt lab extension and the server extension."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sds_jupyter

JUPYTER = Path(sys.executable).with_name("jupyter")


def _jupyter(*args: str, tmp_path: Path) -> str:
    # A fresh config dir: only what the package installed into the environment counts.
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "NO_COLOR": "1"}
    result = subprocess.run([str(JUPYTER), *args], capture_output=True, text=True, env=env, check=True)
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)


@pytest.mark.skipif(not JUPYTER.exists(), reason="jupyter is not installed beside this Python")
def test_the_lab_extension_is_installed_prebuilt_and_enabled(tmp_path: Path) -> None:
    listing = _jupyter("labextension", "list", tmp_path=tmp_path)
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


def _imported_distributions() -> dict[bool, dict[str, set[str]]]:
    """The distribution of every third-party module the package imports, with the files that import it,
    under True for imports at a module's top (or in a class body) and False for those inside a function."""
    import ast
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    found: dict[bool, dict[str, set[str]]] = {True: {}, False: {}}
    for path in Path(sds_jupyter.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        lazy = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                # _typeshed and the like exist for type checkers only and belong to no distribution
                for dist in owners.get(top, []) if top not in sys.stdlib_module_names else []:
                    found[id(node) not in lazy].setdefault(_normal(dist), set()).add(path.name)
    for kind in found.values():
        kind.pop("sds-jupyter", None)
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_package_is_declared() -> None:
    """Imports at a module's top are [project] dependencies; one made inside a function (an optional
    feature: the Cirro SDK, awkward arrays a table may hold) is declared in an extra at least."""
    import tomllib

    pyproject = tomllib.loads((Path(sds_jupyter.__file__).parents[1] / "pyproject.toml").read_text("utf-8"))

    def names(specs: list[str]) -> set[str]:
        return {_normal(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}

    core = names(pyproject["project"]["dependencies"])
    extras = names([spec for specs in pyproject["project"]["optional-dependencies"].values() for spec in specs])
    imported = _imported_distributions()
    missing = {dist: sorted(files) for dist, files in imported[True].items() if dist not in core}
    assert not missing, f"imported at a module's top but not in [project] dependencies: {missing}"
    undeclared = {dist: sorted(files) for dist, files in imported[False].items() if dist not in core | extras}
    assert not undeclared, f"imported but in no dependency list nor extra: {undeclared}"
