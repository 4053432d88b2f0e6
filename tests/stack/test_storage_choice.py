"""Why the stack reads through its own locations and not zarr's stores: a tripwire.

docs/architecture.md ("Why not zarr's stores") says zarr's ``LocalStore`` reads wherever a
key leads, through symbolic links and ``..`` alike, so it cannot be the floor of a reader whose
inputs are downloaded. These tests show that on the zarr installed here, beside the same reads
through :func:`~sds_jupyter.stack.storage.location.location_of`, which refuses both. If zarr ever
confines its reads, the first test fails and says so: then building on it is worth another look.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import zarr.storage
from zarr.core.buffer import default_buffer_prototype

from sds_jupyter.errors import UnsafePathError
from sds_jupyter.stack.storage.location import location_of

ESCAPES = ["link/secret", "../outside/secret"]


@pytest.fixture
def root_with_a_way_out(tmp_path: Path) -> Path:
    """A folder holding a link to a sibling folder whose file must never be read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"not yours")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to("../outside")
    return root


@pytest.mark.parametrize("key", ESCAPES)
def test_zarrs_local_store_reads_outside_its_root(root_with_a_way_out: Path, key: str) -> None:
    store = zarr.storage.LocalStore(root_with_a_way_out, read_only=True)
    got = asyncio.run(store.get(key, default_buffer_prototype()))
    assert got is not None and got.to_bytes() == b"not yours", (
        f"zarr {zarr.__version__}'s LocalStore no longer reads {key!r} outside its root: "
        "see docs/architecture.md, 'Why not zarr's stores', before keeping location.py's own reader"
    )


@pytest.mark.parametrize("key", ESCAPES)
def test_a_location_refuses_the_same_reads(root_with_a_way_out: Path, key: str) -> None:
    with pytest.raises(UnsafePathError):
        location_of(root_with_a_way_out).read_object(key)
