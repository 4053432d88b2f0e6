"""The first visit to a transcripts element: a sample at once while its index builds, then the whole index.

The element is the Xenium-like demo's (written by spatialdata). The build runs in the
background; these tests hold it at a gate (an Event its point stream waits on) so the order
"sample first, whole after" is certain, and wait for the build's thread to end, never a time.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sds_jupyter.errors import ElementError
from sds_jupyter.protocol.buffers import named_buffers
from sds_jupyter.protocol.layouts import LAYOUTS
from sds_jupyter.service import StackService
from sds_jupyter.service.errormap import RequestError
from sds_jupyter.service.features import points as feature
from sds_jupyter.service.requests import dispatch
from sds_jupyter.stack.caches import StackCaches
from sds_jupyter.studio import pointparts
from sds_jupyter.studio.pointparts import PointBatch

ELEMENT = "transcripts"
#: The element's real point stream, taken before any test wraps it (a wrapper wraps this, never another wrapper).
_REAL_BATCHES = feature.point_batches


@pytest.fixture(autouse=True)
def small_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample of about 2,000 of the demo's 45,000 transcripts (all read: one row group, spatially ordered)."""
    monkeypatch.setattr(pointparts, "SAMPLE_POINTS", 2_000)


def _fresh(top: Path) -> StackService:
    """A service with caches of its own, as a fresh server process has (the test's own points cache folder too)."""
    return StackService(top, caches=StackCaches())


def _ask(service: StackService) -> dict[str, Any]:
    index: dict[str, Any] = dispatch(service, "points", {"element": ELEMENT, "sample": True}).data["index"]
    return index


def _tile(service: StackService, info: dict[str, Any], level: int, x: int = 0, y: int = 0) -> dict[str, Any]:
    params = {"element": ELEMENT, "key": info["key"], "level": level, "x": x, "y": y}
    data: dict[str, Any] = dispatch(service, "points_tile", params).data
    return data


def _builds() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("sds-points-")]


def _build_ended() -> None:
    """Wait for the background build to end (its thread's end is the condition)."""
    for thread in _builds():
        thread.join(timeout=300)
        assert not thread.is_alive()


def _gated(gate: threading.Event, fail_after: int | None = None) -> Any:
    """The element's point stream, held until ``gate`` is set; failing after ``fail_after`` batches if given."""

    def batches(*args: Any, **kwargs: Any) -> Iterator[PointBatch]:
        assert gate.wait(timeout=300)
        for count, batch in enumerate(_REAL_BATCHES(*args, **kwargs, rows=5_000)):
            if fail_after is not None and count >= fail_after:
                raise ElementError("A part of these points cannot be read; write the element again.")
            yield batch

    return batches


def test_the_first_ask_answers_a_sample_then_the_whole_index(xenium_top: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Coarse first: a partial index and partial tiles at once; when the build ends, the whole, never sampled at full zoom."""
    gate = threading.Event()
    monkeypatch.setattr(feature, "point_batches", _gated(gate))
    service = _fresh(xenium_top)
    first = _ask(service)
    assert first["partial"] and first["key"].startswith("sample-")
    assert first["rows"] == 45_000 and 1_500 <= first["n_points"] <= 2_500
    for level in (0, first["finest_level"]):
        tile = _tile(service, first, level)
        assert tile["partial"] and tile["sampled"] and tile["n"] > 0
    assert _tile(service, first, 0)["n"] == first["n_points"]  # a sample this small is sent whole, marked so
    again = _ask(service)  # still building: the same sample, one build
    assert again == first and len(_builds()) == 1

    gate.set()
    _build_ended()
    whole = _ask(service)
    assert not whole["partial"] and whole["key"] == first["key"].removeprefix("sample-")
    assert whole["n_points"] == whole["rows"] == 45_000
    assert feature._builds(service.session).keys() == []  # the ended build is forgotten: the index cache alone keeps it
    side = 1 << whole["finest_level"]
    finest = [_tile(service, whole, whole["finest_level"], x, y) for x in range(side) for y in range(side)]
    assert not any(t["partial"] or t["sampled"] for t in finest)
    assert sum(t["n"] for t in finest) == 45_000
    # the sample's tiles still answer under their own key (a view that has not asked again yet)
    assert _tile(service, first, 0)["partial"]


def test_a_sample_holding_every_point_is_the_whole_index_and_builds_nothing(
    xenium_top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An element under the sample's size: the sample read every point, so it is not called a sample and no build starts."""
    monkeypatch.setattr(pointparts, "SAMPLE_POINTS", 65_536)  # the default: above the demo's 45,000
    started: list[str] = []
    monkeypatch.setattr(feature, "point_batches", lambda *a, **k: started.append("build") or _REAL_BATCHES(*a, **k))
    service = _fresh(xenium_top)
    info = _ask(service)
    assert not info["partial"] and "partial_reason" not in info
    assert info["n_points"] == info["rows"] == 45_000
    assert _builds() == [] and started == [] and feature._builds(service.session).keys() == []
    side = 1 << info["finest_level"]
    finest = [_tile(service, info, info["finest_level"], x, y) for x in range(side) for y in range(side)]
    assert not any(t["partial"] or t["sampled"] for t in finest)
    assert sum(t["n"] for t in finest) == 45_000
    assert _ask(service) == info  # asked again: the same answer, still nothing built


def test_the_sample_covers_the_tissue(xenium_top: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample is strided over the element: each quarter of the tissue holds about its share of it."""
    gate = threading.Event()
    monkeypatch.setattr(feature, "point_batches", _gated(gate))
    service = _fresh(xenium_top)
    try:
        sample = _ask(service)
        params = {"element": ELEMENT, "key": sample["key"], "level": 0, "x": 0, "y": 0}
        reply = dispatch(service, "points_tile", params)
        gate.set()
        _build_ended()
        whole = _ask(service)
        truth = [_tile(service, whole, 1, x, y)["total"] for x in (0, 1) for y in (0, 1)]
    finally:
        gate.set()
    steps = named_buffers("points_tile", LAYOUTS["points_tile"], reply.data, reply.buffers)
    x0, y0, x1, y1 = reply.data["bounds"]
    x = x0 + np.frombuffer(steps["x"], dtype="<u2") / 65535 * (x1 - x0)
    y = y0 + np.frombuffer(steps["y"], dtype="<u2") / 65535 * (y1 - y0)
    wx0, wy0, wx1, wy1 = whole["bounds"]
    right, low = x >= (wx0 + wx1) / 2, y >= (wy0 + wy1) / 2
    drawn = [int(((right == bool(i)) & (low == bool(j))).sum()) for i in (0, 1) for j in (0, 1)]
    shares = np.asarray([drawn, truth], dtype=float)
    shares /= shares.sum(axis=1, keepdims=True)
    assert len(x) == sample["n_points"] and np.abs(shares[0] - shares[1]).max() < 0.05, shares


def test_a_failed_build_is_said_once_and_leaves_no_index_behind(
    xenium_top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that fails midway: the next ask says why; nothing is kept (no cache serves a half index); the ask after builds again."""
    cache = Path(os.environ["SDS_POINTS_CACHE"])
    gate = threading.Event()
    monkeypatch.setattr(feature, "point_batches", _gated(gate, fail_after=3))
    service = _fresh(xenium_top)
    assert _ask(service)["partial"]
    gate.set()
    _build_ended()
    with pytest.raises(RequestError, match="cannot be read"):
        _ask(service)
    assert [p.name for p in cache.iterdir() if p.is_dir()] == []  # no index, no build folder
    # The stream again without the failure (not monkeypatch.undo(): that would also undo the
    # conftest's cache folders, and the index would go to, or come from, the user's own cache).
    gate = threading.Event()
    monkeypatch.setattr(feature, "point_batches", _gated(gate))
    assert _ask(service)["partial"]  # asked again: built again, from the start
    gate.set()
    _build_ended()
    whole = _ask(service)
    assert not whole["partial"] and whole["n_points"] == 45_000


def test_a_tile_of_an_index_dropped_here_and_on_disk_answers_the_sample_while_it_builds_again(
    xenium_top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole index was served, then evicted from memory and the disk: its next tile starts a build in the
    background and answers the sample in that tile (``building``, never kept), not the index built inside the request."""
    cache = Path(os.environ["SDS_POINTS_CACHE"])
    service = _fresh(xenium_top)
    whole = dispatch(service, "points", {"element": ELEMENT}).data["index"]
    level, side = whole["finest_level"], 1 << whole["finest_level"]
    kept = [_tile(service, whole, level, x, y) for x in range(side) for y in range(side)]
    for entry in cache.iterdir():  # another process's eviction, then this one's
        if entry.is_dir():
            shutil.rmtree(entry)
    feature._indexes(service.session).clear()
    gate = threading.Event()
    monkeypatch.setattr(feature, "point_batches", _gated(gate))
    try:
        params = {"element": ELEMENT, "key": whole["key"], "level": level, "x": 0, "y": 0}
        stand_in = dispatch(service, "points_tile", params)
        assert len(_builds()) == 1  # the build runs behind the reply, held at the gate
        assert stand_in.data["partial"] and stand_in.data["partial_reason"] == "building"
        assert "refused" not in stand_in.data and not stand_in.addressed
        assert stand_in.data["key"] == whole["key"] and stand_in.data["n"] <= kept[0]["n"]
        info = _ask(service)  # the view asks again, as the partial tile tells it to: the sample, one build
        assert info["partial"] and info["partial_reason"] == "building" and len(_builds()) == 1
    finally:
        gate.set()
    _build_ended()
    assert _ask(service) == whole
    again = [_tile(service, whole, level, x, y) for x in range(side) for y in range(side)]
    assert again == kept and not any(t["partial"] for t in again)


def test_without_sample_the_ask_waits_for_the_whole_index(xenium_top: Path) -> None:
    """The request as the Python API and exports use it: no sample, the whole index in the reply."""
    info = dispatch(_fresh(xenium_top), "points", {"element": ELEMENT}).data["index"]
    assert not info["partial"] and info["n_points"] == info["rows"] == 45_000
