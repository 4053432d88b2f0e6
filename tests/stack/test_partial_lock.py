"""Issue 24, item 8: the cleanup of partial folders never removes a live run's folder, and a
commit publishes nothing it did not verify.

A second process in another PID namespace (``unshare -p -f``, as another container on the same
datasets folder) sees none of this machine's process IDs, so a rule based on host + process ID
takes every live run for a dead one. The cleanup must rest on something that namespace sees: the
run's ``flock`` on its owner file, released by the kernel when the run ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kit.stackkit import write_base

from sds_jupyter import VersionWriter
from sds_jupyter.errors import WriteRefusedError

TIMEOUT = 60

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare(1) to run a process in another PID namespace",
)

_LIVE_RUN = """
import sys, time
from pathlib import Path
from sds_jupyter.stack.storage.partial import new_partial
tmp = new_partial(Path(sys.argv[1]), "live")
(tmp / "object").write_bytes(b"written")
print(tmp, flush=True)
time.sleep(600)
"""

_CLEANER = """
import sys
from pathlib import Path
from sds_jupyter.stack.storage.partial import remove_stale_partials
print(len(remove_stale_partials(Path(sys.argv[1]))))
"""

_DELETER = """
import os, sys, time
folder = sys.argv[1]
print("ready", flush=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    for entry in os.scandir(folder):
        if ".partial-" not in entry.name or entry.name.endswith(".owner"):
            continue
        for where, _dirs, names in os.walk(os.path.join(entry.path, "overlay")):
            for name in names:
                try:
                    os.unlink(os.path.join(where, name))
                except OSError:
                    continue
                print(os.path.join(where, name), flush=True)
                sys.exit(0)
print("", flush=True)
"""


def _in_other_pid_namespace(script: str, *args: str) -> list[str]:
    return ["unshare", "-p", "-f", "--mount-proc", sys.executable, "-c", script, *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONWARNINGS": "ignore"}


def test_a_live_partial_survives_a_cleanup_from_another_pid_namespace(tmp_path: Path) -> None:
    live = subprocess.Popen(
        [sys.executable, "-c", _LIVE_RUN, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        partial = Path(live.stdout.readline().strip())  # type: ignore[union-attr]
        assert partial.is_dir()
        cleaner = subprocess.run(
            _in_other_pid_namespace(_CLEANER, str(tmp_path)),
            capture_output=True,
            text=True,
            env=_env(),
            timeout=TIMEOUT,
        )
        assert cleaner.returncode == 0, cleaner.stderr
        assert cleaner.stdout.strip() == "0"
        assert (partial / "object").read_bytes() == b"written"
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait(TIMEOUT)
    # Once the run is gone the kernel has dropped its lock: the same cleaner now removes its folder.
    cleaner = subprocess.run(
        _in_other_pid_namespace(_CLEANER, str(tmp_path)), capture_output=True, text=True, env=_env(), timeout=TIMEOUT
    )
    assert cleaner.stdout.strip() == "1", cleaner.stderr
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_commit_whose_folder_loses_an_object_publishes_nothing(datasets: Path) -> None:
    """Something deleting inside a running commit's folder (as the old cleanup did) makes it fail, not publish holes."""
    write_base(datasets, "base", {})
    writer = VersionWriter(datasets / "base" / "store.zarr")
    for i in range(3000):
        writer.store.write_raw(f"x/k{i}", b"%d" % i)
    deleter = subprocess.Popen(
        _in_other_pid_namespace(_DELETER, str(datasets)), stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert deleter.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
        before = sorted(os.listdir(datasets))
        try:
            top = writer.commit(title="loses an object")
        except WriteRefusedError as exc:
            refused: WriteRefusedError | None = exc
        else:
            refused = None
        deleted = deleter.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        deleter.kill()
        deleter.wait(TIMEOUT)
    if not deleted:
        pytest.skip("the deleting process did not get to run while the commit wrote (a busy machine)")
    assert refused is not None, f"{deleted} was deleted, yet the commit published {top}"
    assert "changed while it was written" in str(refused) and "nothing was saved" in str(refused)
    assert sorted(os.listdir(datasets)) == before
