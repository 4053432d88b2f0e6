"""The quick local walk and the careful one agree: same versions, same places, same refusals.

``Stack.resolve`` walks a local stack the quick way (one ``openat2`` per manifest, refusing
links) and hands anything unusual to the careful walk. Each case here is resolved both ways
on the same folders, with the caches emptied between, and the answers compared: a stack by
everything a reader uses of it, a refusal by its type and its words. The usual layouts must
not need the careful walk at all (it is made to fail there).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kit.stackkit import write_version
from kit.walks import CASES, _cirro_layout, walk_answer

from sds_jupyter import Stack, StackStore
from sds_jupyter.stack import stack as stack_module
from sds_jupyter.stack.caches import default_caches
from sds_jupyter.stack.locator import RACY_FINE_SECONDS
from sds_jupyter.stack.storage.paths import linkless_opens

pytestmark = pytest.mark.skipif(not linkless_opens(), reason="no openat2 here: every walk is the careful one")


@pytest.mark.parametrize("name", list(CASES))
def test_both_walks_give_the_same_answer(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build, quick_alone = CASES[name]
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    top, folders = build(datasets, tmp_path / "outside")
    with monkeypatch.context() as quick:
        if quick_alone:
            quick.setattr(stack_module, "_walk_chain", _the_careful_walk_is_not_needed)
        quick_answer = walk_answer(top, folders)
    monkeypatch.setattr(stack_module, "linkless_opens", lambda: False)  # every walk the careful one
    careful_answer = walk_answer(top, folders)
    assert quick_answer == careful_answer


def _the_careful_walk_is_not_needed(*args: object) -> None:
    raise AssertionError("the quick walk handed over a usual stack")


def test_a_place_tried_first_is_watched_after_a_quick_walk(tmp_path: Path) -> None:
    """Under the Cirro layout the top of each parent's folder is tried first and found empty: a
    manifest written there later is where the parent is then, so the kept stack is not used."""
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    top, _ = _cirro_layout(datasets, tmp_path)
    time.sleep(RACY_FINE_SECONDS * 2)  # files this new are never kept (they may change again unseen)
    default_caches().stacks.clear()
    first = Stack.resolve(top)
    assert str(first.versions[1].data_dir).endswith("/v2/data")
    assert Stack.resolve(top) is first  # kept while nothing changes
    write_version(datasets, "v2", "cirro:::dataset:v1/layer.json", {"moved": b"1"})
    again = Stack.resolve(top)
    assert again is not first
    assert str(again.versions[1].data_dir) == str((datasets / "v2").resolve())
    assert StackStore(again).read_raw("moved") == b"1"
