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
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from kit.stackkit import write_base, write_version

from sds_jupyter import Stack, StackError
from sds_jupyter.cli import main
from sds_jupyter.stack.flatcopy import flatten
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
        refused(
            cli(*command, str(datasets / "top"), fifos=[datasets / "top" / "layer.json"]), "FIFO", "not a regular file"
        )
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
    refused(
        cli("flatten", "--copy", str(datasets / "top"), str(datasets.parent / "flat"), fifos=[fifo]),
        "not a regular file",
    )


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


# -- 5. deeply nested JSON is refused where it is parsed -------------------------------------


def _nested(levels: int) -> object:
    value: object = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_deeply_nested_changes_are_refused_not_a_recursion_error(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "v1", base, {"k": b"v"}, manifest={"changes": [{"op": "set-obs", "x": _nested(600)}]})
    write_version(datasets, "top", "cirro:::dataset:v1/layer.json", {"k2": b"v"})
    with pytest.raises(StackError, match="nests more than 64 levels"):
        Stack.resolve(datasets / "top")
    refused(cli("describe", "--json", str(datasets / "top")), "nests more than 64 levels")


def test_service_history_of_a_deep_manifest_reports_the_refusal(datasets: Path) -> None:
    from sds_jupyter.service import StackService

    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, {"k": b"v"}, manifest={"changes": [{"op": "x", "y": _nested(600)}]})
    service = StackService(datasets / "top")
    history = service.history()
    assert history["versions"] == [] and "nests more than 64 levels" in history["error"]["message"]
    json.dumps(history)
    with pytest.raises(StackError, match="nests more than"):
        service.changes()


def test_manifest_at_the_depth_limit_still_reads(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    # The manifest object, the changes list and the change are three levels.
    write_version(datasets, "top", base, {"k": b"v"}, manifest={"changes": [{"op": "x", "y": _nested(61)}]})
    assert len(describe(datasets / "top")["versions"][0]["changes"]) == 1


@pytest.mark.parametrize("levels", [600, 100_000])
def test_deeply_nested_folder_maps_are_refused_in_one_line(
    datasets: Path, monkeypatch: pytest.MonkeyPatch, levels: int
) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, {"k": b"v"})
    deep = "[" * levels + "]" * levels
    refused(cli("describe", "--folders", deep, str(datasets / "top")), "folder map")
    monkeypatch.setenv("SDS_CIRRO_DATASETS", '{"a": ' + deep + "}")
    refused(cli("describe", str(datasets / "top")), "folder map")


# -- 7. nothing from data reaches the terminal as a control sequence -------------------------

HOSTILE_TEXT = "t\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\u2066\nfake line\r\x00"


def _no_controls(text: str) -> None:
    for char in "\x1b\x07\x9b\u202e\u2066\r\x00":
        assert char not in text, repr(text)


def test_describe_escapes_control_characters(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(
        datasets,
        "top",
        base,
        {"k": b"v"},
        manifest={
            "title": HOSTILE_TEXT,
            "message": HOSTILE_TEXT,
            "created_by": HOSTILE_TEXT,
            "changes": [{"op": HOSTILE_TEXT, "column": HOSTILE_TEXT, "kind": HOSTILE_TEXT}],
        },
    )
    result = cli("describe", str(datasets / "top"))
    assert result.code == 0, result.stderr
    _no_controls(result.stdout)
    assert "\\x1b]0;pwned\\x07" in result.stdout and "\\u202eevil" in result.stdout
    assert not any(line.startswith("fake line") for line in result.stdout.splitlines())
    _no_controls(cli("describe", "--json", str(datasets / "top")).stdout)


def test_errors_and_check_escape_control_characters(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    name = "v\x1b[31mred\u202e"
    write_version(
        datasets,
        "top",
        base,
        {"k": b"v"},
        manifest={"files": [{"key": f"k{HOSTILE_TEXT.replace(chr(0), '')}", "size": 1}]},
    )
    checked = cli("check", str(datasets / "top"))
    assert checked.code == 1
    _no_controls(checked.stdout)
    missing = cli("describe", str(datasets / name))
    refused(missing, "does not exist")
    _no_controls(missing.stderr)
    assert "\\x1b[31mred\\u202e" in missing.stderr
    bad_map = cli("describe", "--folders", '{"a\x1b": "b\x07"}', str(datasets / "top"))
    refused(bad_map)
    _no_controls(bad_map.stderr)


def test_argparse_messages_are_escaped() -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit):
        main(["nonsense\x1b[2J\u202e"])
    _no_controls(err.getvalue())
    assert "\\x1b[2J" in err.getvalue()


# -- 8. describe --json is strict JSON ---------------------------------------------------------


def _strict_loads(text: str) -> object:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_describe_json_never_prints_infinity_or_nan(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, {"k": b"v"})
    manifest = (datasets / "top" / "layer.json").read_text()
    (datasets / "top" / "layer.json").write_text(manifest[:-1] + ', "app": {"id": "x", "scale": 1e999, "low": -1e999}}')
    result = cli("describe", "--json", str(datasets / "top"))
    if result.code == 0:
        _strict_loads(result.stdout)
    else:
        refused(result, "out of range")
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout


def test_strict_json_writes_non_finite_numbers_as_strings() -> None:
    from sds_jupyter.cli import strict_json

    doc = _strict_loads(strict_json({"a": [float("inf"), float("nan"), 1.5], "b": {"c": -float("inf")}}))
    assert doc == {"a": ["inf", "nan", 1.5], "b": {"c": "-inf"}}


# -- 4. memory stays bounded whatever the sizes ------------------------------------------------

MIB = 1024 * 1024


def _write_zip_base(datasets: Path, members: dict[str, bytes | int], *, name: str = "store.zarr.zip") -> Path:
    """A zip base; an int member is that many zero bytes, deflated as it is written (a bomb)."""
    import zipfile

    folder = datasets / "base"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, data in members.items():
            if isinstance(data, int):
                info = zipfile.ZipInfo(key)
                info.compress_type = zipfile.ZIP_DEFLATED
                with archive.open(info, "w") as handle:
                    block = bytes(MIB)
                    for _ in range(data // MIB):
                        handle.write(block)
            else:
                archive.writestr(key, data)
    return path


def _peak(call: Callable[[], object]) -> int:
    """The most memory Python held at once while ``call`` ran, in bytes."""
    import tracemalloc

    tracemalloc.start()
    try:
        call()
    except StackError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_zip_bomb_is_reported_and_refused_in_bounded_memory(datasets: Path) -> None:
    from kit.stackkit import ROOT_DOC

    bomb = _write_zip_base(datasets, {"zarr.json": ROOT_DOC, "t/zarr.json": 200 * MIB, "t/c/0": 200 * MIB})
    assert bomb.stat().st_size < 2 * MIB
    write_version(datasets, "top", "cirro:::dataset:base/store.zarr.zip", {"k": b"v"})
    report: list[object] = []
    assert _peak(lambda: report.append(check(datasets / "top"))) < 32 * MIB
    problems = "\n".join(report[0].problems)  # type: ignore[attr-defined]
    assert "base member 't/c/0' inflates" in problems and "zip bomb" in problems
    out = datasets.parent / "flat"
    assert _peak(lambda: flatten(datasets / "top", out, link=False, progress=False)) < 32 * MIB
    assert not out.exists()
    refused(cli("flatten", "--copy", str(datasets / "top"), str(out)), "zip bomb")
    result = cli("check", str(datasets / "top"))
    assert result.code == 1 and "zip bomb" in result.stdout and "Traceback" not in result.stderr


def test_flatten_copies_a_large_object_in_chunks(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "top", base, {"big": b"x"}, manifest={"files": [{"key": "big", "size": 64 * MIB}]})
    with open(datasets / "top" / "overlay" / "big", "r+b") as handle:
        handle.truncate(64 * MIB)  # sparse: costs no disk to make
    out = datasets.parent / "flat"
    assert _peak(lambda: flatten(datasets / "top", out, progress=False)) < 16 * MIB
    assert (out / "big").stat().st_size == 64 * MIB


def test_the_manifests_of_a_stack_are_capped_in_total(datasets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sds_jupyter.stack.stack as stack_module

    monkeypatch.setattr(stack_module, "MAX_STACK_MANIFEST_BYTES", 10_000)
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(datasets, "v1", base, {"k": b"v"}, manifest={"message": "m" * 6000})
    write_version(datasets, "top", "cirro:::dataset:v1/layer.json", {"k": b"v"}, manifest={"message": "m" * 6000})
    assert describe(datasets / "v1")["depth"] == 1
    with pytest.raises(StackError, match="add up to more than 10000 bytes"):
        describe(datasets / "top")


# -- 6. check reports what is wrong instead of raising ----------------------------------------


@pytest.mark.parametrize(
    ("document", "problem"), [(b"{not json", "is not valid JSON"), (b"[1, 2]", "is not a JSON object")]
)
def test_check_reports_a_bad_overlay_document(datasets: Path, document: bytes, problem: str) -> None:
    group = b'{"zarr_format": 3, "node_type": "group"}'
    base = write_base(datasets, "base", {"tables/zarr.json": group, "tables/t/zarr.json": group})
    write_version(datasets, "top", base, {"tables/t/obs/zarr.json": document, "zarr.json": document})
    result = cli("check", str(datasets / "top"))
    assert result.code == 1, result.stderr
    assert f"problem: tables/t/obs/zarr.json {problem}" in result.stdout
    assert f"problem: zarr.json {problem}" in result.stdout


def test_check_reports_duplicate_zip_members(datasets: Path) -> None:
    import warnings

    from kit.stackkit import ROOT_DOC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        _write_zip_base(datasets, {"zarr.json": ROOT_DOC, "t/0": b"first"})
        import zipfile

        with zipfile.ZipFile(datasets / "base" / "store.zarr.zip", "a") as archive:
            archive.writestr("t/0", b"second")
    write_version(datasets, "top", "cirro:::dataset:base/store.zarr.zip", {"k": b"v"})
    result = cli("check", str(datasets / "top"))
    assert result.code == 1 and "Traceback" not in result.stderr
    assert "base member 't/0' appears more than once" in result.stdout
    refused(cli("flatten", "--copy", str(datasets / "top"), str(datasets.parent / "flat")), "more than once")


def test_check_reports_overlapping_zip_members(datasets: Path) -> None:
    import struct

    from kit.stackkit import ROOT_DOC

    path = _write_zip_base(datasets, {"zarr.json": ROOT_DOC, "t/0": b"a" * 100, "t/1": b"b" * 100})
    raw = bytearray(path.read_bytes())
    # Point t/1's central directory entry at t/0's local header: two names, one set of bytes.
    entries = [i for i in range(len(raw)) if raw[i : i + 4] == b"PK\x01\x02"]
    offset_of = {bytes(raw[i + 46 : i + 46 + struct.unpack_from("<H", raw, i + 28)[0]]): i for i in entries}
    t0 = struct.unpack_from("<I", raw, offset_of[b"t/0"] + 42)[0]
    struct.pack_into("<I", raw, offset_of[b"t/1"] + 42, t0)
    path.write_bytes(bytes(raw))
    write_version(datasets, "top", "cirro:::dataset:base/store.zarr.zip", {"k": b"v"})
    result = cli("check", str(datasets / "top"))
    assert result.code == 1 and "Traceback" not in result.stderr
    assert "base member 't/0' overlaps member 't/1'" in result.stdout


def test_check_does_not_follow_an_overlay_link_out(datasets: Path, outside: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1"})
    write_version(
        datasets, "top", base, {"k": b"v"}, manifest={"files": [{"key": "k", "size": 1}, {"key": "s", "size": 6}]}
    )
    os.symlink(outside / "overlay" / "secret", datasets / "top" / "overlay" / "s")
    result = cli("check", str(datasets / "top"))
    assert result.code == 1
    assert "problem: version top: s leads outside the overlay folder" in result.stdout


# -- 11. a killed commit or flatten leaves nothing behind for long ------------------------------

_KILLED_RUN = """
import sys, time
from pathlib import Path
import sds_jupyter.stack.{module} as module

def hang(*args, **kwargs):
    print("writing", flush=True)
    time.sleep(600)

{patch}
{run}
"""


def _killed_midway(module: str, patch: str, run: str) -> None:
    """Run a commit or flatten in a child process and SIGKILL it while it writes."""
    import signal
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN.format(module=module, patch=patch, run=run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        line = child.stdout.readline()  # type: ignore[union-attr]
        assert line.strip() == "writing", child.stderr.read()  # type: ignore[union-attr]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(TIMEOUT)


def _partials(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if ".partial-" in name)


def test_a_killed_flatten_is_cleaned_up_by_the_next(datasets: Path) -> None:
    base = write_base(datasets, "base", {"a": b"1", "b": b"2"})
    write_version(datasets, "top", base, {"k": b"v"})
    outs = datasets.parent / "outs"
    _killed_midway(
        "flatcopy",
        "module._write_one = hang",
        f"module.flatten({str(datasets / 'top')!r}, {str(outs / 'first')!r}, progress=False)",
    )
    left = _partials(outs)
    assert len(left) == 2 and left[1] == left[0] + ".owner"  # the folder and its owner file
    # Someone else's partial folder (no owner file) and a live run's are left alone.
    (outs / ".other.partial-0123abcd").mkdir()
    live = outs / ".live.partial-89abcdef"
    live.mkdir()
    (outs / ".live.partial-89abcdef.owner").write_text(
        json.dumps({"host": os.uname().nodename, "pid": os.getpid(), "started": None})
    )
    assert main(["flatten", str(datasets / "top"), str(outs / "second")]) == 0
    assert _partials(outs) == [".live.partial-89abcdef", ".live.partial-89abcdef.owner", ".other.partial-0123abcd"]
    assert (outs / "second" / "k").read_bytes() == b"v"


def test_a_killed_commit_is_cleaned_up_by_the_next(datasets: Path) -> None:
    from sds_jupyter.stack.write.writer import VersionWriter

    write_base(datasets, "base", {})
    store = datasets / "base" / "store.zarr"
    _killed_midway(
        "write.writer",
        "import sds_jupyter.stack.write.commit as c; c.verify_written = hang  # after every object, before the rename",
        f"w = module.VersionWriter({str(store)!r}); w.store.write_raw('x/zarr.json', b'{{}}'); w.commit(title='killed')",
    )
    assert len(_partials(datasets)) == 2
    writer = VersionWriter(store)
    writer.store.write_raw("y", b"1")
    top = writer.commit(title="next")
    assert _partials(datasets) == []
    assert not any(name.endswith(".owner") for name in os.listdir(top))
