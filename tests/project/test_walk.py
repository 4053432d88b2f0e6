"""The walk (``tools/walk.py``, issue 43) stays short: what it counted when caches stopped calling their owners back.

A return is a call into a room already on the call chain (A -> B -> A): two rooms that each
need the other to finish one job. The counts below are a ratchet: a change may lower them, and
one that raises them says so here (and in docs/architecture.md's table) rather than by accident.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kit.repo import ROOT

#: Distinct returns of the ``cells`` request on 2026-12-07: the feature room calling back into the
#: service room that dispatched it (its session and readers). The geometry kept on disk (issue 39)
#: added none once its store took a turn (claim, then fill with plain arrays) instead of callbacks.
CELLS_RETURNS = 3


def _counts(output: str, walk: str) -> tuple[int, int]:
    """(returns, of them through the LRU's callbacks) that walk.py printed for ``walk``."""
    found = re.search(rf"^{walk}: (\d+) returns .*?, of (\d+) traced\); (\d+) of them into or out of", output, re.M)
    assert found, output
    assert int(found[2]) > 10_000, output  # the walk did trace the work (its calls are counted)
    return int(found[1]), int(found[3])


def test_the_cells_request_and_a_save_return_to_rooms_no_more_than_counted(demo_top: Path) -> None:
    env = {**os.environ, "SDS_STACK_CACHE": "off", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "walk.py"), "--top", str(demo_top)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    cells, cells_through_lru = _counts(result.stdout, "cells request")
    save, save_through_lru = _counts(result.stdout, "save")
    assert cells_through_lru == 0 and save_through_lru == 0  # no cache calls its owner back
    assert save == 0
    assert cells <= CELLS_RETURNS
