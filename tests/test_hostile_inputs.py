"""Hostile inputs, round two: the holes found by trying the tools as an attacker would.

Each test goes through a public surface (the command line in a subprocess, so a
hang is a timeout and not a stuck suite; or the Python API) and failed before
its fix.
"""

from __future__ import annotations

import io
import json
import os
import stat
import threading
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from stackkit import write_base, write_version

from sds_jupyter import Stack, StackError
from sds_jupyter.cli import main
from sds_jupyter.stack.flatten import flatten
from sds_jupyter.stack.inspect import check, describe

#: Long enough for a slow, shared machine; a hang before the fixes never ends.
TIMEOUT = 30

MANIFEST = {
    "format": "spatial-data-studio.layer",
    "format_version": 1,
    "parent": "cirro:::dataset:base/store.zarr",
    "title": "OUTSIDE TITLE",
    "files": [],
}


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str


def cli(*args: str, fifos: Sequence[Path] = ()) -> Ran:
    """Run ``sds-jupyter`` (its ``main``) in a thread; a hang fails the test instead of the suite.

    A reader stuck on one of ``fifos`` is let go by opening its writing end, so
    even a failing run leaves nothing blocked behind.
    """
    out, err, box = io.StringIO(), io.StringIO(), {}

    def run() -> None:
        with redirect_stdout(out), redirect_stderr(err):
            box["code"] = main(list(args))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    if thread.is_alive():
        for fifo in fifos:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(TIMEOUT)
        pytest.fail(f"sds-jupyter {' '.join(args)} hung")
    return Ran(box.get("code", -1), out.getvalue(), err.getvalue())


def refused(result: Ran, *words: str) -> None:
    """A one-line refusal, exit status 2, naming ``words``; no traceback."""
    assert result.code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the datasets folder, holding a manifest and a file the stack must never read."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "layer.json").write_text(json.dumps(MANIFEST))
    (folder / "overlay").mkdir()
    (folder / "overlay" / "secret").write_text("secret")
    return folder


# -- 2. the opened version is confined like its parents ---------------------------------------


def test_top_layer_json_linked_out_is_refused(datasets: Path, outside: Path) -> None:
    write_base(datasets, "base", {"a": b"1"})
    (datasets / "top").mkdir()
    os.symlink(outside / "layer.json", datasets / "top" / "layer.json")
    with pytest.raises(StackError, match="leads outside"):
        Stack.resolve(datasets / "top")
    result = cli("describe", str(datasets / "top"))
    refused(result, "leads outside")
    assert "OUTSIDE TITLE" not in result.stdout + result.stderr


def test_top_data_folder_linked_out_is_refused(datasets: Path, outside: Path) -> None:
    write_base(datasets, "base", {"a": b"1"})
    (datasets / "top").mkdir()
    os.symlink(outside, datasets / "top" / "data")
    with pytest.raises(StackError, match="leads outside"):
        describe(datasets / "top")
    out = datasets.parent / "flat"
    refused(cli("flatten", str(datasets / "top"), str(out)), "leads outside")
    assert not out.exists()


def test_top_overlay_linked_out_is_refused(datasets: Path, outside: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, manifest={"overlay": "ov", "files": [{"key": "secret", "size": 6}]})
    os.symlink(outside / "overlay", datasets / "top" / "ov")
    with pytest.raises(StackError, match="leads outside"):
        flatten(datasets / "top", datasets.parent / "flat")


def test_a_link_inside_the_top_folder_is_still_followed(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, {"k": b"v"}, under_data=True)
    os.rename(datasets / "top" / "data", datasets / "top" / "real-data")
    os.symlink("real-data", datasets / "top" / "data")
    assert describe(datasets / "top")["versions"][0]["title"] == "version top"


# -- 3. special files are refused, never read ------------------------------------------------


def test_fifo_as_top_manifest_is_refused_without_hanging(datasets: Path) -> None:
    write_base(datasets, "base", {"a": b"1"})
    (datasets / "top").mkdir()
    os.mkfifo(datasets / "top" / "layer.json")
    for command in (["describe"], ["check"]):
        refused(cli(*command, str(datasets / "top"), fifos=[datasets / "top" / "layer.json"]), "FIFO", "not a regular file")
    with pytest.raises(StackError, match="not a regular file"):
        Stack.resolve(datasets / "top")


def test_fifo_as_parent_manifest_is_refused(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    (datasets / "mid").mkdir()
    os.mkfifo(datasets / "mid" / "layer.json")
    write_version(datasets, "top", "cirro:::dataset:mid/layer.json", {"k": b"v"})
    assert base
    refused(cli("describe", str(datasets / "top"), fifos=[datasets / "mid" / "layer.json"]), "not a regular file")


def test_fifo_as_overlay_object_is_refused_by_flatten_and_check(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, {"zarr.json": b"{}"})
    os.unlink(datasets / "top" / "overlay" / "zarr.json")
    os.mkfifo(datasets / "top" / "overlay" / "zarr.json")
    out, fifo = datasets.parent / "flat", datasets / "top" / "overlay" / "zarr.json"
    refused(cli("flatten", str(datasets / "top"), str(out), fifos=[fifo]), "not a regular file")
    assert not out.exists()
    result = cli("check", str(datasets / "top"), fifos=[fifo])
    assert result.code in (1, 2) and "Traceback" not in result.stderr
    assert "not a regular file" in result.stdout + result.stderr


def test_fifo_as_base_object_is_refused_by_flatten_copy(datasets: Path) -> None:
    base = write_base(datasets, "base", {"t/c": b"1"})
    write_version(datasets, "top", base, {"k": b"v"})
    os.unlink(datasets / "base" / "store.zarr" / "t" / "c")
    os.mkfifo(datasets / "base" / "store.zarr" / "t" / "c")
    fifo = datasets / "base" / "store.zarr" / "t" / "c"
    refused(cli("flatten", "--copy", str(datasets / "top"), str(datasets.parent / "flat"), fifos=[fifo]), "not a regular file")


def test_fifo_as_zip_base_is_refused(datasets: Path) -> None:
    (datasets / "base").mkdir()
    os.mkfifo(datasets / "base" / "store.zarr.zip")
    write_version(datasets, "top", "cirro:::dataset:base/store.zarr.zip", {"k": b"v"})
    refused(cli("describe", str(datasets / "top"), fifos=[datasets / "base" / "store.zarr.zip"]))


def test_character_device_as_manifest_is_refused(datasets: Path) -> None:
    write_base(datasets, "base", {"a": b"1"})
    (datasets / "top").mkdir()
    try:  # /dev/zero's numbers: a file that never ends
        os.mknod(datasets / "top" / "layer.json", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc}); needs root with CAP_MKNOD")
    refused(cli("describe", str(datasets / "top")), "not a regular file")


def test_local_urls_are_read_as_plain_paths(datasets: Path, outside: Path) -> None:
    """``local://`` reaches the local disk through fsspec, which confines nothing: it is a plain path."""
    write_base(datasets, "base", {"a": b"1"})
    (datasets / "top").mkdir()
    os.symlink(outside / "layer.json", datasets / "top" / "layer.json")
    with pytest.raises(StackError, match="leads outside"):
        Stack.resolve(f"local://{datasets / 'top'}")
    with pytest.raises(StackError, match="local disk"):
        Stack.resolve(f"simplecache::file://{datasets / 'top'}")
