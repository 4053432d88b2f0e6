"""The disk store of derived arrays hands its owner a turn: it finds, the owner checks and makes, it keeps.

Why a turn: the owner (the service) checks what was kept and derives what is missing in its own
frame, so the store never calls it back (``tools/walk.py`` counts such returns). These tests hold
the turn to what the owner relies on, in a real private folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from kit.repo import ROOT

from sds_jupyter.studio.keptarrays import geometry_store

IDENTITY = "cells-disk-1\nan identity"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "geometry"
    folder.mkdir(mode=0o700)
    return folder


def test_a_turn_finds_nothing_then_what_was_filled(tmp_path: Path) -> None:
    store = geometry_store(_folder(tmp_path))
    with store.claim(IDENTITY) as turn:
        assert turn.entry is None
        kept = turn.fill({"n": 3}, {"x": np.arange(3, dtype="<f4")})
    assert kept.source == "built" and kept.folder is not None
    with store.claim(IDENTITY) as turn:
        assert turn.entry is not None and turn.entry.source == "disk"
        assert turn.entry.meta == {"n": 3} and turn.entry.arrays["x"].tolist() == [0.0, 1.0, 2.0]
    with store.claim("another identity") as turn:
        assert turn.entry is None


def test_an_entry_the_owner_refuses_is_replaced_by_what_it_fills(tmp_path: Path) -> None:
    store = geometry_store(_folder(tmp_path))
    with store.claim(IDENTITY) as turn:
        turn.fill({"version": "wrong"}, {"x": np.zeros(2, dtype="<f4")})
    with store.claim(IDENTITY) as turn:
        assert turn.entry is not None and turn.entry.meta == {"version": "wrong"}  # the owner says no: fills again
        turn.fill({"version": "right"}, {"x": np.ones(4, dtype="<f4")})
    with store.claim(IDENTITY) as turn:
        assert turn.entry is not None and turn.entry.meta == {"version": "right"} and len(turn.entry.arrays["x"]) == 4
    names = [p.name for p in store.folder.iterdir() if p.is_dir()]  # type: ignore[union-attr]
    assert len(names) == 1 and not names[0].startswith(".")  # one entry, no build or trash folder left


def test_without_a_usable_folder_the_turn_keeps_nothing_and_serves_from_memory(tmp_path: Path) -> None:
    open_to_all = tmp_path / "shared"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    store = geometry_store(open_to_all)
    with store.claim(IDENTITY) as turn:
        assert turn.entry is None
        made = turn.fill({}, {"x": np.arange(5, dtype="<f4")})
    assert made.folder is None and made.arrays["x"].tolist() == [0, 1, 2, 3, 4]
    assert list(open_to_all.iterdir()) == []  # nothing written into a folder others can write


def test_an_error_in_the_owners_frame_releases_the_turn(tmp_path: Path) -> None:
    store = geometry_store(_folder(tmp_path))
    with pytest.raises(RuntimeError, match="derivation failed"), store.claim(IDENTITY):
        raise RuntimeError("derivation failed")
    finished = threading.Event()

    def claim_again() -> None:  # another thread would wait forever on a lock left held
        with store.claim(IDENTITY) as turn:
            turn.fill({}, {"x": np.zeros(1, dtype="<f4")})
        finished.set()

    worker = threading.Thread(target=claim_again)
    worker.start()
    worker.join(timeout=60)
    assert finished.is_set()
    assert not any(p.name.startswith(".build-") for p in store.folder.iterdir())  # type: ignore[union-attr]


def test_a_second_process_waits_for_the_first_ones_turn_then_finds_its_entry(tmp_path: Path) -> None:
    """Held under the identity's lock: a process that claims while this one holds the turn finds what it filled."""
    store = geometry_store(_folder(tmp_path))
    script = (
        "import sys\n"
        "from sds_jupyter.studio.keptarrays import geometry_store\n"
        "with geometry_store(sys.argv[1]).claim(sys.argv[2]) as turn:\n"
        "    print(turn.entry.meta.get('by') if turn.entry is not None else 'nothing')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with store.claim(IDENTITY) as turn:
        other = subprocess.Popen(
            [sys.executable, "-c", script, str(store.folder), IDENTITY], stdout=subprocess.PIPE, text=True, env=env
        )
        turn.fill({"by": "first"}, {"x": np.zeros(1, dtype="<f4")})
    out, _ = other.communicate(timeout=300)
    assert other.returncode == 0 and out.strip() == "first"


@pytest.mark.parametrize("kept", [True, False], ids=["published", "too-large-to-keep"])
def test_a_build_sweeps_what_killed_builds_of_any_entry_left_but_not_a_build_under_way(
    tmp_path: Path, kept: bool
) -> None:
    """A killed build's folder (of any entry) goes before the next build, kept or not, so a disk it filled has room again."""
    import fcntl

    from sds_jupyter.studio.keptarrays import ArrayStore
    from sds_jupyter.studio.keptfolders import name_of

    folder = _folder(tmp_path)
    store = ArrayStore(lambda: None, folder, max_bytes=1 << 20 if kept else 16)
    dead_other = folder / ".build-0123abcd-dead"  # another entry's, its process killed: nobody holds its lock
    dead_same = folder / f".build-{name_of(IDENTITY)}-dead"
    alive = folder / ".build-4567ef01-alive"  # another entry's build under way: its lock is held
    for left in (dead_other, dead_same, alive):
        left.mkdir(mode=0o700)
        (left / "x.bin").write_bytes(b"\0" * 1024)
    lock = os.open(folder / "4567ef01.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # its own open file: the store's check cannot take it either
        with store.claim(IDENTITY) as turn:
            made = turn.fill({}, {"x": np.zeros(64, dtype="<f4")})
        assert (made.source == "built") and (made.folder is not None) == kept
        assert not dead_other.exists() and not dead_same.exists()
        assert alive.is_dir() and (alive / "x.bin").stat().st_size == 1024
    finally:
        os.close(lock)
