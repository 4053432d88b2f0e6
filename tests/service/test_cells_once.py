"""Cells and image overviews sent once (issue 23): keys named by stored objects, caches bounded by bytes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sds_jupyter.lru import ByteLRU
from sds_jupyter.service import RequestError, StackService, dispatch
from sds_jupyter.service.pieces import cells_cache, overviews_cache
from sds_jupyter.stack import Stack, StackStore
from sds_jupyter.stack.caches import default_caches
from sds_jupyter.stack.identity import node_identity
from sds_jupyter.stack.write.writer import VersionWriter
from sds_jupyter.studio.canvas import build_canvas
from sds_jupyter.studio.figurespecs import read_figure

CELLS = cells_cache(default_caches())
OVERVIEWS = overviews_cache(default_caches())

pytest_plugins = ["kit.fixtures_service"]


@pytest.fixture(autouse=True)
def empty_caches():
    CELLS.clear()
    OVERVIEWS.clear()
    yield
    CELLS.clear()
    OVERVIEWS.clear()


def _cells(service: StackService, figure: str, version: int | None = None, key: str = ""):
    params = {
        "figure": figure,
        **({"version": version} if version is not None else {}),
        **({"key": key} if key else {}),
    }
    return dispatch(service, "cells", params)


def _canvas(service: StackService, figure: str, version: int | None = None):
    return dispatch(service, "canvas", {"figure": figure, **({"version": version} if version is not None else {})})


@pytest.fixture
def recolored(studio_copy) -> StackService:
    """A third version on the studio stack that only adds an obs column (the cells stay as they were)."""
    writer = VersionWriter(Stack.resolve(studio_copy.v2))
    n_obs = writer.n_obs("table")
    writer.set_obs("table", "niche", pd.Categorical(["a" if i % 3 else "b" for i in range(n_obs)]))
    top = writer.commit(studio_copy.datasets / "recolor-3333", title="Recolor")
    return StackService(top)


def test_a_version_that_only_adds_a_column_shares_the_cells_and_they_are_computed_once(studio_copy, recolored) -> None:
    below = StackService(studio_copy.v2)  # another service, as the server keeps one per version folder
    first = _canvas(below, "fig_new").data["cells_key"]
    sent = _cells(below, "fig_new", key=first)
    assert (CELLS.misses, CELLS.hits) == (1, 1)  # canvas computed them; cells found them
    again = _canvas(recolored, "fig_new").data["cells_key"]
    assert again == first
    repeat = _cells(recolored, "fig_new", key=again)
    assert CELLS.misses == 1  # the other version's figure computed nothing
    assert [bytes(b) for b in repeat.buffers] == [bytes(b) for b in sent.buffers]


def test_a_version_that_rewrites_the_positions_gets_a_new_key(studio_stack) -> None:
    service = StackService(studio_stack.v2)
    before = _canvas(service, "fig_canvas", version=1).data["cells_key"]
    after = _canvas(service, "fig_canvas", version=2).data["cells_key"]  # v2 writes obsm["spatial"]
    assert before != after
    x_before = np.frombuffer(bytes(_cells(service, "fig_canvas", 1, before).buffers[0]), dtype="<f4")
    x_after = np.frombuffer(bytes(_cells(service, "fig_canvas", 2, after).buffers[0]), dtype="<f4")
    assert x_after.tolist() == list(range(26)) and x_before.tolist() != x_after.tolist()
    with pytest.raises(RequestError, match="not the ones key"):
        _cells(service, "fig_canvas", 2, before)  # a key names content: version 1's cells are not version 2's


@pytest.mark.parametrize("version", [1, 2])
def test_canvas_and_cells_together_are_the_whole_canvas(studio_stack, version) -> None:
    service = StackService(studio_stack.v2)
    canvas = _canvas(service, "fig_canvas", version)
    cells = _cells(service, "fig_canvas", version, canvas.data["cells_key"])
    channels = dispatch(service, "channels", {"version": version, "figure": "fig_canvas"})
    view = service.table_view(version)
    whole = build_canvas(read_figure(view.studio_uns(), "fig_canvas").require("canvas"), view, view.root, view.attrs)
    payload = dict(canvas.data)
    assert payload.pop("cells_key") == cells.data["key"] and payload.pop("image_key") == channels.etag
    assert set(payload.pop("color_keys")) == set(view.obs_columns)  # the browser's names, not part of a drawing
    payload["image"] = {k: v for k, v in payload["image"].items() if k not in ("levels", "level")}  # for the browser
    assert payload == whole.payload
    x, y, value, _rgba = (bytes(b) for b in whole.buffers[:4])
    assert canvas.buffers == []  # no cells, no image, no colours: each comes once, by its own name
    column = payload["color"]["column"]
    colors = dispatch(
        service,
        "color_values",
        {"version": version, "figure": "fig_canvas", "column": column, "key": canvas.data["color_keys"][column]},
    )
    assert colors.data == payload["color"] and [bytes(b) for b in colors.buffers] == [value]
    assert [bytes(b) for b in cells.buffers] == [x, y]
    image = canvas.data["image"]
    assert (channels.data["width"], channels.data["height"]) == (image["width"], image["height"])


def test_the_overview_is_read_once_for_canvas_channels_and_tiles(studio_stack) -> None:
    service = StackService(studio_stack.v2)
    _canvas(service, "fig_canvas", 1)
    dispatch(service, "channels", {"version": 1, "figure": "fig_canvas"})
    dispatch(service, "image_tile", {"version": 1, "figure": "fig_canvas", "level": 0, "x": 0, "y": 0})
    assert OVERVIEWS.misses == 1


def test_a_key_that_is_too_long_is_refused(studio_stack) -> None:
    with pytest.raises(RequestError, match="too long"):
        _cells(StackService(studio_stack.v2), "fig_canvas", 1, "k" * 65)


def test_node_identity_names_the_topmost_writer_or_remover(studio_stack) -> None:
    store = StackStore(Stack.resolve(studio_stack.v2))
    v2, v1 = studio_stack.v2.resolve(), studio_stack.v1.resolve()
    assert node_identity(store, "tables/table/obsm/spatial") == f"tables/table/obsm/spatial@edit-2222:{v2}"
    assert node_identity(store, "tables/table/obs/score") == f"tables/table/obs/score@edit-2222:{v2}"  # deleted there
    assert "@base:base-0000:" in node_identity(store, "tables/table/obs/instance_id")
    below = StackStore(Stack.resolve(studio_stack.v1))
    assert node_identity(below, "tables/table/obs/score") == f"tables/table/obs/score@studio-1111:{v1}"


def test_a_copied_stack_with_the_same_ids_is_not_served_the_originals_cells(studio_stack, tmp_path) -> None:
    """Dataset IDs are unique by convention only: a copy edited in place must get its own cells."""
    import shutil

    import zarr

    copy = tmp_path / "datasets"
    shutil.copytree(studio_stack.v2.parent, copy, symlinks=True)
    original = StackService(studio_stack.v2)
    edited = StackService(copy / studio_stack.v2.name)
    first = original.canvas(None, "fig_canvas").data["cells_key"]
    spatial = zarr.open_array(copy / studio_stack.v2.name / "overlay" / "tables" / "table" / "obsm" / "spatial")
    spatial[:] = spatial[:] + 1000.0
    assert edited.canvas(None, "fig_canvas").data["cells_key"] != first
    moved = edited.cells(None, "fig_canvas").buffers[0]
    assert bytes(moved) != bytes(original.cells(None, "fig_canvas").buffers[0])


def test_the_byte_bound_drops_the_least_recently_used() -> None:
    cache: ByteLRU[bytes] = ByteLRU(10, len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    assert cache.get("a") == b"1234"  # a is now the most recent
    cache.put("c", b"1234")
    assert cache.get("b") is None and cache.get("a") == b"1234" and cache.nbytes == 8
    cache.put("huge", b"x" * 11)
    assert cache.get("huge") is None and len(cache) == 2


def test_entry_bounds_peek_and_keeping_the_newest() -> None:
    """What the other caches need of the one LRU: a count bound alone, a look that is not a use,
    None kept as a value, and (for readers just opened) the newest kept even alone over the bytes."""
    counted: ByteLRU[str | None] = ByteLRU(None, max_entries=2)
    counted.put("a", None)
    counted.put("b", "kept")
    assert counted.find("a") == (None,) and counted.get("a") is None  # None kept, told apart from a miss
    assert counted.peek("b") == "kept"  # not a use: b stays the least recently used
    counted.put("c", "new")
    assert counted.keys() == ["a", "c"] and counted.find("b") is None
    newest: ByteLRU[bytes] = ByteLRU(4, len, keep_newest=True)
    newest.put("a", b"12")
    newest.put("big", b"123456")
    assert newest.keys() == ["big"] and newest.nbytes == 6
    newest.discard("big")
    assert len(newest) == 0 and newest.nbytes == 0


def test_threads_missing_the_same_key_at_once_compute_it_once() -> None:
    """Four figures of one tissue asking at once: one computation, the others wait for it (and for its error)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    cache: ByteLRU[bytes] = ByteLRU(100, len)
    calls: list[str] = []
    started = threading.Event()

    def arrived(hits: int) -> None:
        """Wait (at most 5 s) until ``hits`` requests found the computation under way."""
        deadline = time.monotonic() + 5
        while cache.hits < hits and time.monotonic() < deadline:
            time.sleep(0.01)

    def slow() -> bytes:
        calls.append("computed")
        started.set()
        arrived(3)  # the others arrive while it runs
        return b"cells"

    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(cache.get_or_compute, "k", slow)
        started.wait(5)
        others = [pool.submit(cache.get_or_compute, "k", slow) for _ in range(3)]
        assert {f.result() for f in [first, *others]} == {b"cells"}
    assert calls == ["computed"] and (cache.misses, cache.hits) == (1, 3)

    def broken() -> bytes:
        started.set()
        arrived(4)
        raise RequestError("unreadable")

    started.clear()
    with ThreadPoolExecutor(2) as pool:
        failing = pool.submit(cache.get_or_compute, "bad", broken)
        started.wait(5)
        waiting = pool.submit(cache.get_or_compute, "bad", slow)
        for future in (failing, waiting):
            with pytest.raises(RequestError, match="unreadable"):
                future.result()
    assert cache.get("bad") is None and cache.get_or_compute("bad", lambda: b"ok") == b"ok"  # a failure is not kept


def test_a_claimed_turn_is_filled_by_its_caller_with_the_size_it_knows() -> None:
    """The caller makes the value in its own frame and says its size: the map never calls back to size it."""
    sized: list[bytes] = []

    def size_of(value: bytes) -> int:
        sized.append(value)
        return len(value)

    cache: ByteLRU[bytes] = ByteLRU(10, size_of)
    with cache.claim("a") as turn:
        assert turn.missing
        turn.fill(b"12", 6)  # the caller's count, not len()
    assert turn.value == b"12" and cache.nbytes == 6 and sized == []
    with cache.claim("a") as again:
        assert not again.missing and again.value == b"12"
        with pytest.raises(RuntimeError, match="only the turn"):
            again.fill(b"other")
    with cache.claim("b") as unfilled:
        assert unfilled.missing  # left without a value: nothing kept, the next claim tries again
    with pytest.raises(LookupError):
        unfilled.value  # noqa: B018 - the property raises
    assert "b" not in cache
    with cache.claim("b") as retry:
        assert retry.missing
    cache.put("c", b"1234")  # no size given: size_of as before
    assert sized == [b"1234"] and cache.nbytes == 10


def test_the_browser_overview_fits_in_overview_side_and_detail_comes_by_tile(tmp_path) -> None:
    import warnings

    from sds_jupyter.demo.xenium import build_xenium_demo
    from sds_jupyter.service.pieces import OVERVIEW_SIDE

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = build_xenium_demo(tmp_path / "demo", n_cells=300, side=2048)
    service = StackService(top)
    figure = next(f["id"] for f in service.figures()["figures"] if f["kind"] == "canvas")
    canvas = _canvas(service, figure)
    channels = dispatch(service, "channels", {"figure": figure})
    assert channels.data["levels"][0]["width"] == 2048  # the pyramid's finest level, for the tiles
    assert channels.data["width"] == canvas.data["image"]["width"] == OVERVIEW_SIDE == 1024
    assert all(b.nbytes == 1024 * 1024 for b in channels.buffers)
    assert canvas.buffers == []  # no image among the figure's bytes
    # the view asks the level its pixels need, named in the canvas reply before any image request
    levels = canvas.data["image"]["levels"]
    assert levels == channels.data["levels"] and [lv["width"] for lv in levels[:3]] == [2048, 1024, 512]
    assert canvas.data["image"]["level"] == 1  # the default overview's level: the finest within OVERVIEW_SIDE
    coarse = dispatch(service, "channels", {"figure": figure, "level": 2})
    assert (coarse.data["width"], coarse.data["height"]) == (levels[2]["width"], levels[2]["height"])
    assert all(b.nbytes == levels[2]["width"] * levels[2]["height"] for b in coarse.buffers)
    assert coarse.data["bounds"] == levels[2]["bounds"] and coarse.etag != channels.etag
    # scaled over the same value ranges as the overview and every tile: the colours agree across levels
    assert coarse.data["channels"] == channels.data["channels"]
    tile = dispatch(service, "image_tile", {"figure": figure, "level": 2, "x": 0, "y": 0})
    first = np.frombuffer(coarse.buffers[0], np.uint8).reshape(coarse.data["height"], -1)
    assert np.array_equal(
        first[: tile.data["height"], : tile.data["width"]].ravel(), np.frombuffer(tile.buffers[0], np.uint8)
    )
    by_level = dispatch(service, "channels", {"figure": figure, "level": 1})  # the default's own level
    assert by_level.etag == channels.etag and [bytes(b) for b in by_level.buffers] == [
        bytes(b) for b in channels.buffers
    ]
    with pytest.raises(RequestError, match="at most 1024 px a side"):
        dispatch(service, "channels", {"figure": figure, "level": 0})  # finer comes by tile


def test_what_is_drawn_is_kept_in_the_caches_the_session_was_given(studio_copy) -> None:
    """Two services given their own StackCaches each compute the cells once, in their own caches."""
    from sds_jupyter.stack.caches import StackCaches

    mine, yours = StackCaches(), StackCaches()
    keys = [_canvas(StackService(studio_copy.v2, caches=c), "fig_new").data["cells_key"] for c in (mine, yours)]
    assert keys[0] == keys[1]  # the same stored objects, the same name
    assert [(cells_cache(c).misses, cells_cache(c).hits) for c in (mine, yours)] == [(1, 0), (1, 0)]
    assert (CELLS.misses, CELLS.hits) == (0, 0)  # the process's caches were not asked
    _canvas(StackService(studio_copy.v2, caches=mine), "fig_new")
    assert (cells_cache(mine).misses, cells_cache(mine).hits) == (1, 1)
    mine.clear()
    assert len(cells_cache(mine)) == 0 and len(cells_cache(yours)) == 1
