"""A workspace's folders compared and mounted read-only, as Cirro mounts a dataset."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest


def workspace_layout(home: Path, demo_top: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``home/datasets`` holding the demo's datasets in folders named by title, as a Cirro workspace mounts
    them, with the folder map, the datasets folder and the versions folder (``home/sds-versions``) set
    in the environment. Returns the folders, the top version's folder and ID, and the map's JSON."""
    datasets = home / "datasets"
    datasets.mkdir(parents=True)
    folders: dict[str, str] = {}
    for source in sorted(demo_top.parent.iterdir()):
        manifest = source / "layer.json"
        title = json.loads(manifest.read_text())["title"] if manifest.exists() else f"Base {source.name[:8]}"
        folders[source.name] = title
        shutil.copytree(source, datasets / title, symlinks=True)
    folder_map = json.dumps(folders)
    monkeypatch.setenv("SDS_CIRRO_DATASETS", folder_map)
    monkeypatch.setenv("SDS_DATASETS_DIR", str(datasets))
    monkeypatch.setenv("SDS_VERSIONS_DIR", str(home / "sds-versions"))
    return {
        "home": home,
        "datasets": datasets,
        "versions": home / "sds-versions",
        "top": datasets / folders[demo_top.name],
        "top_id": demo_top.name,
        "map": folder_map,
    }


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def read_only_mount(folder: Path, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("a bind mount needs root and unshare(1)")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"unshare -m is not permitted here: {probe.stderr.decode(errors='replace').strip()}")
    quoted = " ".join(f"'{part}'" for part in command)
    script = f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && exec {quoted}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, check=False)


#: A notebook in a new interpreter: ``%load_ext sds_jupyter``, ``%sds_open TOP``, one obs column
#: (``by_magic``) changed, ``%sds_save TITLE``. argv: the top, the title, and ``line`` (each magic
#: through ``run_line_magic``: a refusal raises) or ``cell`` (through ``run_cell``, as a notebook
#: cell runs: a refusal is shown as one UsageError line).
_MAGIC_SAVE = textwrap.dedent(
    """
    import shlex, sys
    from IPython.core.interactiveshell import InteractiveShell
    top, title, how = sys.argv[1:4]
    shell = InteractiveShell.instance()

    def magic(line):
        if how == "cell":
            shell.run_cell("%" + line)
        else:
            name, _, rest = line.partition(" ")
            shell.run_line_magic(name, rest)

    magic("load_ext sds_jupyter")
    magic("sds_open " + shlex.quote(top))
    shell.user_ns["adata"].obs["by_magic"] = 2.0
    magic("sds_save " + shlex.quote(title))
    """
)


def magic_save_command(top: Path | str, title: str, *, as_cell: bool = False) -> list[str]:
    """The command that opens ``top`` with the magics, changes one column and saves it as ``title``."""
    return [sys.executable, "-c", _MAGIC_SAVE, str(top), title, "cell" if as_cell else "line"]
