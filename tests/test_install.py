"""pip install alone enables both halves: the prebuilt lab extension and the server extension."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
    bundle = (static / "widget.js").read_text()
    assert "export" in bundle and "render" in bundle
    # offline workspaces: nothing is imported from a CDN at run time
    assert not re.search(r"""(from\s*|import\s*\(\s*)["']https?://""", bundle)
    assert (static / "widget.css").is_file()
